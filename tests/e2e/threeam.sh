#!/usr/bin/env bash
# The 3 AM story (issue 28, item 2; dcpid(8) EXAMPLES): a nightly job, run
# again and again under a daemon that rotates its epochs by the clock, is
# slow in 1 run of 5.  Afterwards, with the commands a user types and no
# dcpictl around any run: which run was slow (its process, by its
# samples), and what was slow in it (slow_path, in that run only).
. "$DCPI_ROOT/tests/tap.sh"
require_root
DB=$T/db
build_workload nightly "$T/nightly" || { fail "build nightly"; done_testing; }
start_dcpid "$DB" -rotate 2s -bypid nightly -merge 3600 || { fail "dcpid starts"; done_testing; }
pids=()
for i in 1 2 3 4 5; do
	if [ $i -eq 3 ]; then "$T/nightly" 300 slow & else "$T/nightly" 300 & fi
	pids+=($!)
	wait $!
done
slow=${pids[2]}
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush"
echo "# runs: ${pids[*]} (the slow one: $slow)"

# 1. which run: the job's samples per process (its procedures, a row per
# process), over the last hour's epochs
by_pid=$("$DCPI_BIN/dcpiprof" -db "$DB" -epoch last-1h -pid -csv nightly 2>/dev/null)
echo "$by_pid" | sed 's/^/#   /'
top=$(awk -F, 'NR > 1 && $3 != "" { s[$3] += $NF } END { for (p in s) print s[p], p }' <<<"$by_pid" |
	sort -rn | head -1 | cut -d' ' -f2)
[ "$top" = "$slow" ] && pass "dcpiprof -epoch last-1h -pid nightly: the slow run ($slow) stands out" ||
	fail "the slow run found by its samples" "top pid '$top', slow $slow"
n_slow=$(awk -F, -v p="$slow" 'NR > 1 && $3 == p { s += $NF } END { print s + 0 }' <<<"$by_pid")
n_other=$(awk -F, -v p="$slow" 'NR > 1 && $3 != "" && $3 != p { s += $NF; if (!seen[$3]++) n++ }
	END { print n ? int(s / n) : 0 }' <<<"$by_pid")
[ "$n_slow" -ge $((3 * n_other)) ] && [ "$n_other" -gt 0 ] &&
	pass "its samples are 5 times a usual run's, as its CPU time ($n_slow against $n_other on average)" ||
	fail "the slow run has about 5 times the samples" "$n_slow against $n_other"

# 2. what was slow in it, and only in it
procs=$by_pid
in_slow=$(awk -F, -v p="$slow" 'NR > 1 && $3 == p && $2 == "slow_path" { s += $NF } END { print s + 0 }' <<<"$procs")
elsewhere=$(awk -F, -v p="$slow" 'NR > 1 && $3 != p && $2 == "slow_path" { s += $NF } END { print s + 0 }' <<<"$procs")
[ "$in_slow" -gt 0 ] && [ "$elsewhere" -eq 0 ] &&
	pass "dcpiprof -pid -i nightly: slow_path ($in_slow samples) in the slow run, in no other" ||
	fail "slow_path in the slow run only" "$in_slow in it, $elsewhere elsewhere"

# 3. the slow run against a usual one, procedure by procedure
fast=${pids[1]}
# (its warnings, such as samples of no image when the machine is busy, go to
# stderr: the CSV is standard output alone)
d=$("$DCPI_BIN/dcpidiff" -db "$DB" -csv "last-1h/pid=$fast" "last-1h/pid=$slow" nightly 2>"$T/diff.err")
echo "$d" | head -5 | sed 's/^/#   /'
sp=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i } NR > 1 && $col["procedure"] == "slow_path" { print $col["significant"] }' <<<"$d")
uw=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i } NR > 1 && $col["procedure"] == "usual_work" { print $col["significant"] }' <<<"$d")
# (usual_work's own test is left alone: at 95%, one run in twenty calls
# equal work different)
[ "$sp" = yes ] &&
	pass "dcpidiff last-1h/pid=$fast last-1h/pid=$slow nightly: slow_path a significant change (usual_work: $uw)" ||
	fail "dcpidiff between two runs" "$d $(cat "$T/diff.err")"
done_testing
