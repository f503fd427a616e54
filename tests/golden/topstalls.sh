#!/usr/bin/env bash
# dcpitopstalls against expected output on the golden database (cycles
# and instructions sampled: stall in cycles, counts absolute): the stalled
# instructions of prog as text and JSON, of one procedure (-proc), the kernel (no code: warned, not
# explained), and bad input: no such image, a bad -n, an empty database.
# The stalls follow from the samples in fixture.bash through calc.h; the
# culprits from stall.h's rules on prog's code: check them by hand after
# GOLDEN_UPDATE=1.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
S="$DCPI_BIN/dcpitopstalls -db $DB"

# shellcheck disable=SC2086
golden topstalls-prog.txt $S -n 8 prog
golden topstalls-json.txt $S -n 3 -json prog
golden topstalls-all.txt $S -n 4
golden topstalls-proc.txt $S -proc warm prog
golden topstalls-proc-none.txt $S -proc nosuchproc prog
# shellcheck disable=SC2086
{
golden topstalls-kernel.txt $S kernel
golden topstalls-no-image.txt $S nosuchimage
golden topstalls-bad-n.txt $S -n -3
}
done_testing
