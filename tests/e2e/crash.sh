#!/usr/bin/env bash
# What a killed dcpid leaves behind (issue 10, items 5 and 6): temporary
# files are removed at the next start, and an epoch.stats that fell behind
# its profiles (killed between a merge's profiles and its stats) is
# recounted.  The kill is simulated exactly: the stats file of before the
# last merge is put back, as a kill between the two writes leaves it.
. "$DCPI_ROOT/tests/tap.sh"

require_root
HOST=$(dcpi_host)
DB=$T/db
build_workload spin || fail "build spin"
# Samples of the first event: in epoch.stats, and summed over the profiles.
stats_samples() { sed -n 's/^event [^ ]* period [0-9]* samples \([0-9]*\).*/\1/p' "$1/epoch.stats" | head -1; }
profiles_samples() {
	local f s=0
	for f in "$1"/*.prof; do s=$((s + $(profile_samples "$f"))); done
	echo $s
}

start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }
"$T/spin" 200
check "first flush" "$DCPI_BIN/dcpictl" -db "$DB" flush
P=$(echo "$DB"/2*/"$HOST")
cp "$P/epoch.stats" "$T/stats.before"
"$T/spin" 300
check "second flush" "$DCPI_BIN/dcpictl" -db "$DB" flush
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null
cp "$T/stats.before" "$P/epoch.stats"
echo junk >"$P/spin-0000000000000000.prof.tmp.99999"
echo junk >"$P/epoch.stats.tmp.12345"
behind=$(stats_samples "$P") want=$(profiles_samples "$P")
[ "$behind" -lt "$want" ] && pass "the simulated crash left the stats behind ($behind < $want)" ||
	fail "the simulated crash left the stats behind" "$behind vs $want"

sleep 1 # a new epoch, in another second
start_dcpid "$DB" -merge 3600 || fail "dcpid starts again"
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null
left=$(ls "$P" | grep -c '\.tmp\.')
[ "$left" -eq 0 ] && pass "temporary files left by the crash are removed at start" ||
	fail "temporary files left by the crash are removed at start" "$(ls "$P")"
got=$(stats_samples "$P")
[ "$got" -ge "$want" ] && pass "epoch.stats recounted: $got >= $want in the profiles" ||
	fail "epoch.stats recounted" "stats $got, profiles $want"
grep -q "recounted from the profiles" "$DB/dcpid-$HOST.log" && pass "the log says so" ||
	fail "the log says so" "$(tail -5 "$DB/dcpid-$HOST.log")"
done_testing
