#!/usr/bin/env bash
# dcpicat against expected output on the profiles fixture.bash writes: headers
# (identity, kind, pid, events with their monitored share), rows by offset
# and by count, escaped names, several files at once.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
C=$DCPI_BIN/dcpicat
D=$DB/20240102T030405Z/golden
f() { echo "$D/$(grep -m1 "$1" "$T/names")"; }   # a profile file by its name

golden cat-kernel.txt "$C" "$(f '^kernel')"
golden cat-module-unknown.txt "$C" "$(f '^ext4')" "$D/unknown@golden.prof"
golden cat-weird.txt "$C" -sort count "$(f '^lib_x')"
if needs_same_code; then
	golden cat-prog.txt "$C" "$(f '^prog-')"
	golden cat-prog-count.txt "$C" -sort count -keep 3 "$(f '^prog-')"
	golden cat-prog-pid.txt "$C" -header "$(f '_golden4242')"
else
	skip "prog.c compiles to other code here than in expected/prog.code: its offsets not compared"
fi
done_testing
