#!/usr/bin/env bash
# Bounded memory under churn (issue 10, item 4): short processes, each
# mapping a file never seen before.  After each merge the daemon forgets
# the images no live process maps, so what it keeps follows what runs now:
# the images in memory stay few, the descriptors constant, and RSS under a
# stated bound (32 MB; about 9 MB is measured here on 2 CPUs, flat after
# the first thousand processes), and every process has its profile.
. "$DCPI_ROOT/tests/tap.sh"

require_root
HOST=$(dcpi_host)
DB=$T/db
# tiny runs 3 ms of CPU time, however much CPU it gets: at one sample
# every 500 us on each CPU it is sampled whatever else runs, so each of
# them has a profile (the check is of what dcpid keeps, not of the load)
build_workload cputime "$T/tiny" || fail "build tiny"
# churn N TAG: N processes, each a fresh copy of tiny at a new path
churn() {
	local i
	for i in $(seq "$1"); do
		cp "$T/tiny" "$T/t.$2.$i" && "$T/t.$2.$i" 3
		rm -f "$T/t.$2.$i"
	done
}
in_memory() { "$DCPI_BIN/dcpictl" -db "$DB" status | sed -n 's/^images in memory: \([0-9]*\).*/\1/p'; }

start_dcpid "$DB" -merge 1 || { fail "dcpid starts"; done_testing; }
pid=$(cat "$DB/.dcpid-$HOST.lock")
churn 500 a
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null
rss1=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
fd1=$(ls "/proc/$pid/fd" | wc -l)
churn 1500 b
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null
rss2=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
fd2=$(ls "/proc/$pid/fd" | wc -l)
n=$(in_memory)
echo "# RSS $rss1 kB after 500 processes, $rss2 kB after 2000; $fd1 -> $fd2 descriptors; $n images in memory"
[ -n "$n" ] && [ "$n" -lt 300 ] && pass "images in memory stay few after 2000 new files ($n)" ||
	fail "images in memory stay few after 2000 new files" "got '$n'"
[ "$fd2" -le $((fd1 + 2)) ] && pass "descriptors constant ($fd1 -> $fd2)" ||
	fail "descriptors constant" "$fd1 -> $fd2"
if grep -q __asan_init "$DCPI_BIN/dcpi"; then
	skip "RSS bound: ASan keeps freed memory in quarantine ($rss2 kB)"
else
	[ "$rss2" -lt 32768 ] && pass "RSS under 32 MB ($rss2 kB)" || fail "RSS under 32 MB" "$rss2 kB"
fi
np=$(ls "$DB"/2*/"$HOST" | grep -c '^t\.')
[ "$np" -ge 1980 ] && pass "the profiles are all there: $np of 2000 processes" ||
	fail "the profiles are all there (at least 1980 of 2000)" "$np"
done_testing
