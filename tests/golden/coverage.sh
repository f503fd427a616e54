#!/usr/bin/env bash
# dcpicoverage against expected output on the golden database: prog's hot
# loop in detail (blocks and lines, text and JSON), every procedure of
# prog in summary (text and JSON), and bad input: no such procedure or
# image, -exact without exact counts, a procedure without code, the
# kernel as an image (no code: an error saying why), too
# many arguments.  Which blocks ran follows from calc.h's counts and
# coverage.h's rules (the entry, single predecessors and successors):
# check by hand after GOLDEN_UPDATE=1.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
V="$DCPI_BIN/dcpicoverage -db $DB"

# shellcheck disable=SC2086
golden coverage-hot.txt $V hot prog
golden coverage-hot-json.txt $V -json hot prog
golden coverage-image.txt $V prog
golden coverage-image-json.txt $V -json prog
# shellcheck disable=SC2086
{
golden coverage-no-proc.txt $V nosuch prog
golden coverage-no-image.txt $V nosuchimage
golden coverage-exact-none.txt $V -exact hot prog
golden coverage-no-code.txt $V do_syscall_64 kernel
golden coverage-usage.txt $V a b c
golden coverage-kernel.txt $V kernel
}
done_testing
