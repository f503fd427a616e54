#!/usr/bin/env bash
# dcpid -gc: at start the daemon removes the epochs that ended more than
# DAYS ago, keeping the 3 latest, says so in its log, and dcpictl status
# says how much the database holds.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
	done_testing
fi
DB=$T/db
host=$(dcpi_host)
mkdir -p "$DB" && chmod 700 "$DB"
for e in 20200101T000000Z 20200102T000000Z 20200103T000000Z 20200104T000000Z; do
	mkdir -p "$DB/$e/$host" && chmod -R 700 "$DB/$e"
	printf 'epoch %s\nplatform %s\nsamples 0\n' "$e" "$host" >"$DB/$e/$host/epoch.stats"
done
start_dcpid "$DB" -merge 3600 -gc 7 || { fail "dcpid -gc 7 starts"; done_testing; }
for i in $(seq 50); do
	grep -q "gc: removed" "$DB/dcpid-$host.log" && break
	sleep 0.1
done
log=$(grep "gc: removed" "$DB/dcpid-$host.log")
[ ! -e "$DB/20200101T000000Z" ] && [ ! -e "$DB/20200102T000000Z" ] &&
	[ -d "$DB/20200103T000000Z" ] && [ -d "$DB/20200104T000000Z" ] &&
	grep -q "removed 2 epochs older than 7 days" <<<"$log" &&
	pass "gc: the two epochs that ended long ago removed, the 3 latest kept ($log)" ||
	fail "gc removes old epochs" "$(ls "$DB") / $log"
st=$("$DCPI_BIN/dcpictl" -db "$DB" status)
grep -qE '^database size: [0-9.]+ MiB in 3 epochs$' <<<"$st" && grep -q '^retention: 7 days' <<<"$st" &&
	pass "status says what the database holds" || fail "status says what the database holds" "$st"
out=$("$DCPI_BIN/dcpid" -db "$T/x" -gc 0 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "gc wants" <<<"$out" && pass "-gc 0 refused" || fail "-gc 0 refused" "rc $rc $out"
done_testing
