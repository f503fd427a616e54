#!/usr/bin/env bash
# dcpiwhatcg against expected output on the golden database (cycles and
# instructions sampled: cycles, absolute): where prog's cycles went, as
# text and JSON, -stall p and w (the procedures losing most to them),
# every image (the kernel and a missing library: not analysed), and bad
# input: a bad -stall, no such image.  The tally follows from the samples
# in fixture.bash through calc.h and stall.h: check by hand after
# GOLDEN_UPDATE=1 (execution + static + dynamic - gain = total sampled).
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
W="$DCPI_BIN/dcpiwhatcg -db $DB"

# shellcheck disable=SC2086
golden whatcg-prog.txt $W prog
golden whatcg-json.txt $W -json -stall p prog
golden whatcg-stall.txt $W -stall w -n 2 prog
golden whatcg-all.txt $W
# shellcheck disable=SC2086
{
golden whatcg-bad-stall.txt $W -stall x prog
golden whatcg-bad-stall2.txt $W -stall dd prog
golden whatcg-no-image.txt $W nosuchimage
}
done_testing
