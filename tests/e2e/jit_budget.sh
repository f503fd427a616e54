#!/usr/bin/env bash
# Issue 24, lever 7: an ordinary user's JIT maps cannot make root's dcpid
# grow without bound.  `nobody` runs two JITs with 4 MiB perf maps each
# against a daemon whose budget is 1 MiB per user (-jitmem 1): what the
# maps say is kept up to the budget, the rest skipped and logged, and the
# processes' share is given back once they are gone and merged.
. "$DCPI_ROOT/tests/tap.sh"

require_root
[ "$(uname -m)" = x86_64 ] || { skip "the workload's JIT code is x86-64"; done_testing; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
HOST=$(dcpi_host)
NOBODY=$(id -u nobody)
build_workload jitmapbig || { fail "build jitmapbig"; done_testing; }
chmod 755 "$T/jitmapbig"
DB=$T/db
start_dcpid "$DB" -merge 3600 -jitmem 1 || { fail "dcpid -jitmem 1 starts"; done_testing; }

as_nobody "$T/jitmapbig" 4 3 >"$T/p1" 2>&1 & j1=$!
as_nobody "$T/jitmapbig" 4 3 >"$T/p2" 2>&1 & j2=$!
at_exit "kill $j1 $j2"
wait $j1 $j2
st=$("$DCPI_BIN/dcpictl" -db "$DB" status 2>&1) # drains: both exits are read
log=$DB/dcpid-$HOST.log
# nobody's share, not the total: other JITs may run on the machine
re="JIT maps: [0-9.]+ MiB \\(budget 1 MiB per user, 4 MiB in all; ([0-9]+) entries skipped over it\\)"
ure="JIT maps of uid $NOBODY: ([0-9.]+) MiB"
if [[ $st =~ $re ]] && skipped=${BASH_REMATCH[1]} && [[ $st =~ $ure ]]; then
	mib=${BASH_REMATCH[1]}
	awk -v m="$mib" 'BEGIN { exit !(m > 0.5 && m <= 1.0) }' && [ "$skipped" -gt 0 ] &&
		pass "nobody's two 4 MiB maps: $mib MiB kept, $skipped entries skipped" ||
		fail "nobody's maps kept within 1 MiB" "$mib MiB, $skipped skipped"
else
	fail "status says what the JIT maps hold" "$st"
fi
# this test's two processes only (each prints its pid): other JITs of
# nobody's may run beside
p1=$(head -1 "$T/p1") p2=$(head -1 "$T/p2")
n1=$(grep -c "JIT code of process $p1: over the memory budget (1.0 MiB for user $NOBODY, 4.0 MiB for all)" "$log")
n2=$(grep -c "JIT code of process $p2: over the memory budget (1.0 MiB for user $NOBODY, 4.0 MiB for all)" "$log")
n=$((n1 + n2))
[ "$n1" -le 1 ] && [ "$n2" -le 1 ] && [ "$n" -ge 1 ] && pass "logged once per process over the budget ($n)" ||
	fail "logged once per process over the budget" "$n lines: $(grep budget "$log")"
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush"
st=$("$DCPI_BIN/dcpictl" -db "$DB" status 2>&1)
if grep -q "^JIT maps of uid $NOBODY: " <<<"$st"; then
	fail "merged and reaped: nobody's share given back" "$(grep 'JIT maps' <<<"$st")"
else
	pass "merged and reaped: nobody's share given back"
fi

done_testing
