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
golden list-both.txt $L hot prog
golden list-source.txt $L -source hot "$PROG"
golden list-asm.txt $L -asm warm prog
golden list-json.txt $L -json cold prog
golden list-epoch-all.txt $L -epoch all -source hot prog
# shellcheck disable=SC2086
{
golden list-kernel.txt $L do_syscall_64 kernel
golden list-kernel-epoch-all.txt $L -epoch all do_syscall_64 kernel
golden list-module.txt $L ext4_map_blocks '[ext4]'
golden list-no-proc.txt $L nosuch prog
}

# Every procedure dcpiprof prints is one dcpilist takes, as printed (the
# 64 KiB label of kernel code no symbol covers included); the rows of
# images no tool can read are refused with a message, never a crash.
n=0 bad=""
while IFS=, read -r image proc pid rest; do
	case "$image" in image|\"*|"") continue ;; esac
	out=$($L "$proc" "$image" 2>&1); rc=$?
	case "$image" in
	unknown|"[unknown "*)
		[ $rc -eq 1 ] && grep -q "^dcpilist: " <<<"$out" || bad+=" [$proc $image: rc $rc]" ;;
	*)
		[ $rc -eq 0 ] && grep -q "^Range: " <<<"$out" || bad+=" [$proc $image: rc $rc $(tail -1 <<<"$out")]" ;;
	esac
	n=$((n + 1))
done < <("$DCPI_BIN/dcpiprof" -db "$DB" -i -pid -csv 2>/dev/null)
[ $n -ge 10 ] && [ -z "$bad" ] && pass "dcpilist takes each of the $n procedures dcpiprof prints" ||
	fail "dcpilist takes each procedure dcpiprof prints ($n)" "$bad"
# ... and dcpitopcounts each image it prints, per-process regions included
n=0 bad=""
while IFS=, read -r image pid rest; do
	case "$image" in image|\"*|"") continue ;; esac
	"$DCPI_BIN/dcpitopcounts" -db "$DB" -n 1 "$image" >/dev/null 2>&1 || bad+=" [$image]"
	n=$((n + 1))
done < <("$DCPI_BIN/dcpiprof" -db "$DB" -pid -csv 2>/dev/null)
[ $n -ge 6 ] && [ -z "$bad" ] && pass "dcpitopcounts takes each of the $n images dcpiprof -pid prints" ||
	fail "dcpitopcounts takes each image dcpiprof -pid prints ($n)" "$bad"

# Another user's image: its DWARF names prog.c, which root can read and
# that user cannot (root's, 0600): root's dcpilist does not show it, and
# says why; a world-readable prog.c is shown.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	nobody=$(id -u nobody)
	chown nobody "$T/prog" && chmod 0600 "$T/prog.c"
	out=$(cd "$T" && "$DCPI_BIN/dcpilist" -db "$DB" -source hot prog 2>&1)
	! grep -qF 'sink = x' <<<"$out" &&
		grep -qF "source not read: prog.c is not readable by the image's owner uid $nobody" <<<"$out" &&
		pass "root's dcpilist shows no source of nobody's image that nobody cannot read" ||
		fail "root's dcpilist shows no source of nobody's image that nobody cannot read" "$out"
	chmod 0644 "$T/prog.c"
	out=$(cd "$T" && "$DCPI_BIN/dcpilist" -db "$DB" -source hot prog 2>&1)
	grep -qF 'sink = x' <<<"$out" && ! grep -qF 'source not read' <<<"$out" &&
		pass "a world-readable source of nobody's image is shown" ||
		fail "a world-readable source of nobody's image is shown" "$out"
	chown root "$T/prog"
else
	skip "not root (or no user nobody): the source-owner rule needs chown"
fi
done_testing
