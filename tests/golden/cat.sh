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
golden cat-prog.txt "$C" "$(f '^prog-')"
golden cat-prog-count.txt "$C" -sort count -keep 3 "$(f '^prog-')"
golden cat-prog-pid.txt "$C" -header "$(f '_golden4242')"
done_testing
