#!/usr/bin/env bash
# dcpicalc against expected output on the golden database (events cycles
# and instructions, so mode 'retired' with absolute counts and cpi): the
# hot loop of prog.c as text and JSON, the same by time alone (-mode time,
# from a cycles event: absolute), a -cutoff that leaves blocks out, and
# bad input: no such procedure, a procedure without code (the kernel, no
# vmlinux), a bad -cutoff and -mode, and -exact without exact counts.
# (Code that does not decode and a graph too large: tests/unit/test_calc.c.)
# Every count in the listings follows from the samples in fixture.bash
# through calc.h's rules: check them by hand after GOLDEN_UPDATE=1.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
C="$DCPI_BIN/dcpicalc -db $DB"

# shellcheck disable=SC2086
if needs_same_code; then
	golden calc-hot.txt $C hot prog
	golden calc-json.txt $C -json hot prog
	golden calc-time.txt $C -mode time hot "$PROG"
	golden calc-cutoff.txt $C -cutoff 50 warm prog
else
	skip "prog.c compiles to other code here than in expected/prog.code: listings not compared"
fi
# shellcheck disable=SC2086
{
golden calc-no-proc.txt $C nosuch prog
golden calc-no-code.txt $C do_syscall_64 kernel
golden calc-bad-cutoff.txt $C -cutoff 101 hot prog
golden calc-bad-mode.txt $C -mode fast hot prog
golden calc-exact-none.txt $C -exact hot prog
golden calc-no-image.txt $C hot nosuchimage
}
done_testing
