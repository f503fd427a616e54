#!/usr/bin/env bash
# dcpid -rotate (issue 28, item 2): epochs start on the clock's boundaries
# and are named by them, no sample is lost between them, and the report
# commands find them by time (-epoch FROM..TO, last-N).
. "$DCPI_ROOT/tests/tap.sh"
require_root
DB=$T/db
build_workload cputime "$T/spin" || { fail "build spin"; done_testing; }
start_dcpid "$DB" -rotate 2s -merge 3600 || { fail "dcpid -rotate 2s starts"; done_testing; }
"$T/spin" 1500
# three boundaries at least, however much CPU the spin got
for _ in $(seq 100); do [ "$(ls -d "$DB"/2*/ | wc -l)" -ge 4 ] && break; sleep 0.1; done
st=$("$DCPI_BIN/dcpictl" -db "$DB" status)
grep -q '^rotation: every 2 s, the next epoch at ' <<<"$st" && pass "status says the rotation" ||
	fail "status says the rotation" "$st"
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush"
mapfile -t epochs < <(ls "$DB" | grep -E '^[0-9]{8}T[0-9]{6}Z')
echo "# epochs: ${epochs[*]}"
odd=0
for e in "${epochs[@]:1}"; do
	s=${e:13:2}
	[ $((10#$s % 2)) -eq 0 ] || odd=1
done
[ "${#epochs[@]}" -ge 4 ] && [ $odd -eq 0 ] &&
	pass "every epoch after the first starts on an even second (${#epochs[@]} epochs)" ||
	fail "epochs named by their 2 s boundaries" "${epochs[*]}"
# every sample of the run is in some epoch: the daemon stopped (its last
# merge done), its run total against the epochs' statistics
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null || fail "quit"
for _ in $(seq 100); do grep -q ' stopped: samples ' "$DB"/dcpid-*.log && break; sleep 0.1; done
run=$(sed -n 's/.* stopped: samples \([0-9]*\) .*/\1/p' "$DB"/dcpid-*.log | tail -1)
all=$(cat "$DB"/2*/*/epoch.stats | awk '$1 == "samples" { s += $2 } END { print s + 0 }')
[ -n "$run" ] && [ "$all" -eq "$run" ] && pass "the epochs hold all $run samples of the run" ||
	fail "no sample lost across rotations" "run $run, epochs $all"
mapfile -t epochs < <(ls "$DB" | grep -E '^[0-9]{8}T[0-9]{6}Z')
# by time: one boundary's range selects exactly that epoch
e=${epochs[2]}
from=$(TZ=UTC0 date -d "${e:0:4}-${e:4:2}-${e:6:2} ${e:9:2}:${e:11:2}:${e:13:2}" +%s)
r="$(date -d "@$from" +%Y-%m-%dT%H:%M:%S)..$(date -d "@$((from + 2))" +%Y-%m-%dT%H:%M:%S)"
got=$("$DCPI_BIN/dcpiprof" -db "$DB" -epoch "$r" 2>&1 | sed -n 's/^Epoch: //p')
[ "$got" = "$e" ] && pass "-epoch $r: that epoch alone" || fail "-epoch FROM..TO selects one epoch" "got '$got', want $e"
got=$("$DCPI_BIN/dcpiprof" -db "$DB" -epoch last-1h 2>&1 | sed -n 's/^Epochs: //p')
[ "$got" = "${epochs[*]}" ] && pass "-epoch last-1h: all of them" || fail "-epoch last-1h" "$got"
done_testing
