#!/usr/bin/env bash
# Lost and taken samples of the whole run, not only of the current epoch
# (issue 22, item 3): dcpictl status and dcpid's last log line give both,
# and the run's figures are the sums of its epochs' epoch.stats.  Exact
# sums, whatever the machine's load: no figure here depends on timing.
. "$DCPI_ROOT/tests/tap.sh"

require_root
HOST=$(dcpi_host)
DB=$T/db
start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }
sleep 1 # cpu-clock samples idle CPUs too: the first epoch takes some
"$DCPI_BIN/dcpictl" -db "$DB" epoch >/dev/null || fail "dcpictl epoch"
sleep 0.5
st=$("$DCPI_BIN/dcpictl" -db "$DB" status 2>&1)
epoch_samples=$(sed -n 's/^samples: //p' <<<"$st")
run_samples=$(sed -n 's/^run samples: //p' <<<"$st")
run_lost=$(sed -n 's/^run lost: //p' <<<"$st")
[ -n "$run_samples" ] && [ -n "$run_lost" ] && grep -q '^run throttled: ' <<<"$st" &&
	grep -q '^run unknown: ' <<<"$st" && pass "status: the run's samples, lost, throttled, unknown" ||
	fail "status: the run's samples, lost, throttled, unknown" "$st"
[ -n "$run_samples" ] && [ -n "$epoch_samples" ] && [ "$run_samples" -gt "$epoch_samples" ] &&
	pass "status: the run ($run_samples) counts more than its second epoch ($epoch_samples)" ||
	fail "status: the run counts more than its second epoch" "$st"
grep -qE '^records waiting: [0-9.]+ MiB \(at most [0-9.]+ MiB so far\)$' <<<"$st" &&
	pass "status: the records waiting for the collector" ||
	fail "status: the records waiting for the collector" "$st"
grep -qE '^JIT maps: [0-9.]+ MiB \(budget 128 MiB per user, 512 MiB in all; [0-9]+ entries skipped over it\)$' <<<"$st" &&
	pass "status: the JIT maps' memory and its budgets" ||
	fail "status: the JIT maps' memory and its budgets" "$st"
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null || fail "dcpictl quit"
for _ in $(seq 100); do grep -q 'stopped: ' "$DB/dcpid-$HOST.log" && break; sleep 0.1; done

line=$(grep 'stopped: ' "$DB/dcpid-$HOST.log" | tail -1)
re='stopped: samples ([0-9]+) lost ([0-9]+) throttled ([0-9]+) unknown ([0-9]+) in this run; epoch ([0-9TZ]+): samples ([0-9]+) lost ([0-9]+)'
if [[ $line =~ $re ]]; then
	s=${BASH_REMATCH[1]} l=${BASH_REMATCH[2]} es=${BASH_REMATCH[6]} ep=${BASH_REMATCH[5]}
	pass "the stop line gives the run's and the epoch's counts"
else
	fail "the stop line gives the run's and the epoch's counts" "$line"
	done_testing
fi
sum() { cat "$DB"/*/"$HOST"/epoch.stats | awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }'; }
n=$(ls -d "$DB"/*/"$HOST" | wc -l)
[ "$n" = 2 ] && pass "two epochs" || fail "two epochs" "$n"
[ "$s" = "$(sum samples)" ] && pass "run samples $s: the sum of the epochs' epoch.stats" ||
	fail "run samples: the sum of the epochs' epoch.stats" "$s vs $(sum samples): $line"
[ "$l" = "$(sum lost)" ] && pass "run lost $l: the sum of the epochs' epoch.stats" ||
	fail "run lost: the sum of the epochs' epoch.stats" "$l vs $(sum lost)"
last=$(sed -n 's/^samples //p' "$DB/$ep/$HOST/epoch.stats")
[ "$es" = "$last" ] && [ "$s" -gt "$es" ] &&
	pass "the epoch's count is its epoch.stats' ($es), less than the run's" ||
	fail "the epoch's count is its epoch.stats', less than the run's" "$es vs $last, run $s"
done_testing
