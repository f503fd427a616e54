#!/usr/bin/env bash
# dcpilist against expected output: one procedure by source line and by
# instruction (-both, -source, -asm, -json), samples of two profiles of
# the image added up, a byte that starts no instruction, and a kernel
# procedure from the kallsyms snapshot.  The addresses and instructions
# are those of prog.c as this toolchain compiles it: when it compiles it
# otherwise, the listings are skipped, saying so.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
L="$DCPI_BIN/dcpilist -db $DB"

# shellcheck disable=SC2086
if needs_same_code; then
	golden list-both.txt $L hot prog
	golden list-source.txt $L -source hot "$PROG"
	golden list-asm.txt $L -asm warm prog
	golden list-json.txt $L -json cold prog
	golden list-epoch-all.txt $L -epoch all -source hot prog
else
	skip "prog.c compiles to other code here than in expected/prog.code: listings not compared"
	diff -u "$EXP/prog.code" "$T/code" | sed 's/^/# /'
fi
# shellcheck disable=SC2086
{
golden list-kernel.txt $L do_syscall_64 kernel
golden list-kernel-epoch-all.txt $L -epoch all do_syscall_64 kernel
golden list-module.txt $L ext4_map_blocks '[ext4]'
golden list-no-proc.txt $L nosuch prog
}
done_testing
