#!/usr/bin/env bash
# Several hosts, one database: three daemons, each in its own UTS and
# network namespace with its own host name, write one database at once.
# DB/hosts pools hostA and hostB into platform "pool"; hostC writes its own
# directory.  An epoch started on hostA is adopted by the others at their
# next merge; each host's files stay its own; -host all sums them and a
# pooled host can still be asked for alone.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide and unshare needs root (CI runs as root)"
	done_testing
fi
if ! unshare -u -n true 2>/dev/null; then
	skip "unshare -u -n does not work here: no UTS or network namespaces"
	done_testing
fi

DB=$T/db
build_workload spin || { fail "build spin"; done_testing; }
mkdir -p "$DB" && chmod 700 "$DB"
printf '# host platform\nhostA pool\nhostB pool   # same machines\n' >"$DB/hosts"

# on HOST CMD...: CMD in a new UTS and network namespace named HOST
on() {
	local h=$1; shift
	unshare -u -n sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

for h in hostA hostB hostC; do
	on $h "$DCPI_BIN/dcpid" -db "$DB" -merge 1 -event cpu-clock 2>/dev/null ||
		{ fail "dcpid starts as $h"; done_testing; }
	at_exit "unshare -u -n sh -c 'hostname $h && exec \"$DCPI_BIN/dcpictl\" -db \"$DB\" -timeout 10 quit' >/dev/null 2>&1"
done
st=$(on hostB "$DCPI_BIN/dcpictl" -db "$DB" status 2>&1)
grep -q '^platform: pool$' <<<"$st" && grep -q '^host: hostB$' <<<"$st" &&
	pass "hostB writes as platform pool (DB/hosts)" || fail "hostB writes as platform pool" "$st"
e1=$(sed -n 's/^epoch: //p' <<<"$st")

# a new epoch on hostA: hostB and hostC adopt it within a merge or two
sleep 1.1
on hostA "$DCPI_BIN/dcpictl" -db "$DB" epoch >/dev/null || fail "dcpictl epoch on hostA"
e2=$(on hostA "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
adopted=
for i in $(seq 50); do
	b=$(on hostB "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
	c=$(on hostC "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^epoch: //p')
	[ "$b" = "$e2" ] && [ "$c" = "$e2" ] && adopted=1 && break
	sleep 0.2
done
[ -n "$adopted" ] && [ "$e2" \> "$e1" ] &&
	pass "hostB and hostC adopt the epoch hostA started ($e1 -> $e2)" ||
	fail "hostB and hostC adopt hostA's epoch" "A $e2, B $b, C $c (was $e1)"
grep -q "epoch $e2 was started by another host: adopting it" "$DB/dcpid-hostC.log" &&
	pass "hostC's log says it adopted the epoch" ||
	fail "hostC's log says it adopted the epoch" "$(tail -5 "$DB/dcpid-hostC.log")"

"$T/spin" 400
for h in hostA hostB hostC; do
	on $h "$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush $h"
done

# each host its own files: pool/ has hostA's and hostB's, hostC/ its own
ls "$DB/$e2" >"$T/dirs"
[ "$(cat "$T/dirs" | tr '\n' ' ')" = "hostC pool " ] && pass "platform directories: hostC and pool" ||
	fail "platform directories: hostC and pool" "$(cat "$T/dirs")"
na=$(ls "$DB/$e2/pool" | grep -c '@hostA\.prof$')
nb=$(ls "$DB/$e2/pool" | grep -c '@hostB\.prof$')
[ -f "$DB/$e2/pool/epoch@hostA.stats" ] && [ -f "$DB/$e2/pool/epoch@hostB.stats" ] &&
	[ -f "$DB/$e2/hostC/epoch.stats" ] && [ "$na" -ge 1 ] && [ "$nb" -ge 1 ] &&
	[ -z "$(ls "$DB/$e2/pool" | grep '\.prof$' | grep -v '@host[AB]\.prof$' | grep -v '^unknown@host[AB]')" ] &&
	pass "pooled files are named per host ($na of hostA, $nb of hostB), stats per host" ||
	fail "pooled files are named per host" "$(ls "$DB/$e2/pool")"

# spin ran once, and every host sampled it: all three see it; -host all sums
n_of() { "$DCPI_BIN/dcpiprof" -db "$DB" -epoch "$e2" -csv "$@" 2>/dev/null | grep "^$T/spin," | cut -d, -f3; }
na=$(n_of -host hostA) nb=$(n_of -host hostB) nc=$(n_of -host hostC) nall=$(n_of -host all)
echo "# spin: hostA $na, hostB $nb, hostC $nc, all $nall"
[ -n "$na" ] && [ -n "$nb" ] && [ -n "$nc" ] && [ "$nall" = $((na + nb + nc)) ] &&
	[ "$na" -ge 400 ] && [ "$nb" -ge 400 ] && [ "$nc" -ge 400 ] &&
	pass "-host all sums the three hosts; a pooled host alone is its own ($na + $nb + $nc)" ||
	fail "-host all sums the three hosts" "A $na B $nb C $nc all $nall"
h=$("$DCPI_BIN/dcpiprof" -db "$DB" -epoch "$e2" -host all -json | grep -o '"hosts": \[[^]]*\]')
[ "$h" = '"hosts": ["hostC", "pool"]' ] && pass "the report names the platform directories: $h" ||
	fail "the report names the platform directories" "$h"

if command -v sshfs >/dev/null && [ -e /dev/fuse ]; then
	skip "sshfs is here, but the run through an sshfs mount needs an ssh server: not done"
else
	skip "no sshfs (FUSE): the same run on a shared file system is not tested here"
fi

# a malformed hosts file: the daemon refuses to start, naming the line
for h in hostA hostB hostC; do
	on $h "$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 quit >/dev/null 2>&1
done
printf 'hostA pool\nhostB\n' >"$DB/hosts"
out=$(on hostB "$DCPI_BIN/dcpid" -db "$DB" -nodaemon -log - 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "hosts:2: want 'HOST PLATFORM'" <<<"$out" &&
	pass "a malformed hosts file is refused, naming its line" ||
	fail "a malformed hosts file is refused" "rc $rc: $out"
done_testing
