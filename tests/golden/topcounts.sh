#!/usr/bin/env bash
# dcpitopcounts against expected output: the hottest instructions of all
# images and of named ones, -sort, -n, -json; images without code (the
# unknown samples) are warned about and left out; an image whose file is
# gone is warned about and its samples shown by file offset.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
TC="$DCPI_BIN/dcpitopcounts -db $DB"

# shellcheck disable=SC2086
# -n 10: the 11th row is a sample inside an instruction, see below
golden top-all.txt $TC -n 10
golden top-prog.txt $TC -n 3 prog
golden top-sort.txt $TC -sort instructions -n 5
golden top-json.txt $TC -json -n 4
# hot's 5 samples at the second byte of its movabs are inside an
# instruction: dcpilist shows them apart; here no instruction may be
# decoded from the middle of another.
row=$($TC prog | grep ' 0x401136 ')
case $row in
*"(inside 0x401135)"*) pass "a sample inside an instruction: named as inside the one at 0x401135" ;;
*) fail "a sample inside an instruction: no instruction made up" "$(tr -s " " <<<"$row")" ;;
esac
# an unreadable image's samples are still there, by file offset
rows=$($TC -n 100 2>/dev/null | grep -F '(image unreadable: file offset)')
[ "$(grep -c . <<<"$rows")" -ge 1 ] && grep -qF 'lib\x01x\xc2\x9b\x9b\x1b[7m\x0d\x07.so' <<<"$rows" &&
	pass "a gone image's samples are shown by file offset" ||
	fail "a gone image's samples are shown by file offset" "$($TC -n 100 2>&1 | tail -5)"
# shellcheck disable=SC2086
{
golden top-kernel.txt $TC kernel
golden top-epoch-all-kernel.txt $TC -epoch all kernel
}
done_testing
