#!/usr/bin/env bash
# dcpilist and dcpitopcounts on real profiles: the daemon samples a
# workload built here with -g -O2 whose time is known to go to one marked
# source line; the listing must say so, agree with objdump, and add up.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
	done_testing
fi

DB=$T/db
L="$DCPI_BIN/dcpilist"
TC="$DCPI_BIN/dcpitopcounts"
mkdir -p "$T/src"
cp "$DCPI_ROOT/tests/workloads/listloop.c" "$T/src/listloop.c"
hot=$(grep -n -F '/* HOTLOOP */' "$T/src/listloop.c" | cut -d: -f1)
(cd "$T/src" && cc -g -O2 -o "$T/listloop" listloop.c) || fail "build listloop"
# the same program again, from a source that will be moved, one that will
# be deleted, and one stripped with its debug info in a build-id tree
for v in moved gone; do
	mkdir -p "$T/$v-src"
	sed "s/divide_chain/divide_$v/" "$T/src/listloop.c" >"$T/$v-src/listloop.c"
	(cd "$T/$v-src" && cc -g -O2 -o "$T/$v" listloop.c) || fail "build $v"
done
sed "s/divide_chain/divide_stripped/" "$T/src/listloop.c" >"$T/src/stripped.c"
(cd "$T/src" && cc -g -O2 -o "$T/stripped" stripped.c) || fail "build stripped"
objcopy --only-keep-debug "$T/stripped" "$T/stripped.debug"
strip --strip-all "$T/stripped"
bid=$(readelf -n "$T/stripped" | sed -n 's/.*Build ID: //p')
mkdir -p "$T/debug/.build-id/${bid:0:2}"
mv "$T/stripped.debug" "$T/debug/.build-id/${bid:0:2}/${bid:2}.debug"
sed "s/divide_chain/divide_corrupt/" "$T/src/listloop.c" >"$T/src/corrupt.c"
(cd "$T/src" && cc -g -O2 -o "$T/corrupt" corrupt.c) || fail "build corrupt"

# non-PIE, no unwind tables, stripped: code no symbol and no FDE covers
(cd "$T/src" && cc -O2 -no-pie -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-o "$T/nofde" listloop.c && strip --strip-all "$T/nofde") || fail "build nofde"

start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }
for w in listloop moved gone stripped corrupt nofde; do "$T/$w" 20 >/dev/null; done
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null || fail "quit"
export DCPIDB=$DB

mv "$T/moved-src" "$T/moved-here"
rm -r "$T/gone-src"
# corrupt the DWARF of one image in place (its build-id note is intact)
read -r off size < <(readelf -SW "$T/corrupt" | awk '$2 == ".debug_info" { print $5, $6 }')
if [ -n "${off:-}" ]; then
	printf '\377%.0s' $(seq 64) | dd of="$T/corrupt" bs=1 seek=$((0x$off + 4)) conv=notrunc 2>/dev/null
fi

# Rows of a listing (after the ===== rule and the column heads).
rows() { awk '/^=+$/ { t = 1; getline; next } t' <<<"$1"; }

# --- -source: the marked line is the hottest ------------------------------------
out=$("$L" -source divide_chain "$T/listloop" 2>&1); rc=$?
[ $rc -eq 0 ] && pass "dcpilist -source runs" || fail "dcpilist -source runs" "$out"
top=$(rows "$out" | awk '$3 ~ /^[0-9]+$/ && $1 > max { max = $1; line = $3 } END { print line }')
[ -n "$hot" ] && [ "$top" = "$hot" ] && pass "hottest source line is the HOTLOOP line ($hot)" ||
	fail "hottest source line is the HOTLOOP line ($hot)" "top: $top
$out"
grep -qF "HOTLOOP" <<<"$(rows "$out" | awk -v h="$hot" '$3 == h')" &&
	pass "source text shown next to its counts" || fail "source text shown" "$out"

# --- -asm: addresses and mnemonics as objdump has them -------------------------------
out=$("$L" -asm divide_chain "$T/listloop" 2>&1)
rows "$out" | awk '$3 ~ /^0x/ { print $3, $4 }' >"$T/ours"
read -r lo size < <(nm -S "$T/listloop" | awk '$4 == "divide_chain" { print $1, $2 }')
objdump -d --no-show-raw-insn --start-address=0x$lo --stop-address=$(printf '0x%x' $((0x$lo + 0x$size))) \
	"$T/listloop" | awk '/^ +[0-9a-f]+:/ { sub(":", "", $1); print "0x" $1, $2 }' >"$T/theirs"
n=$(wc -l <"$T/ours")
# Capstone's AT&T mnemonics carry the size suffix objdump leaves out (movq/mov)
bad=$(paste -d' ' "$T/ours" "$T/theirs" | awk '{ if ($1 != $3) { print; next }
	if ($2 != $4 && substr($2, 1, length($2) - 1) != $4 && substr($4, 1, length($4) - 1) != $2) print }')
[ "$n" -gt 5 ] && [ "$n" -eq "$(wc -l <"$T/theirs")" ] && [ -z "$bad" ] &&
	pass "-asm: $n addresses and mnemonics match objdump -d" ||
	fail "-asm matches objdump -d" "ours $n, objdump $(wc -l <"$T/theirs"); differ: $bad"

# --- -both: each line's total is the sum of its instructions ---------------------------
out=$("$L" -both divide_chain "$T/listloop" 2>&1)
bad=$(rows "$out" | awk '
	function close_line() { if (have && sum != total) { print "line " line ": " total " != " sum; } }
	$3 ~ /^0x/ { sum += $1; n++; next }
	$3 ~ /^([0-9]+|\?\?)$/ && $2 ~ /%$/ { close_line(); have = 1; total = $1; line = $3; sum = 0 }
	END { close_line(); if (!have) print "no lines" }')
[ -z "$bad" ] && pass "-both: per-line totals equal the sum of their instructions" ||
	fail "-both: per-line totals equal the sum of their instructions" "$bad
$out"
proc_total=$(awk '$1 == "cpu-clock" || $1 == "cycles" { print $2; exit }' <<<"$out")
all=$(rows "$out" | awk '$3 ~ /^0x/ { s += $1 } END { print s + 0 }')
[ -n "$proc_total" ] && [ "$all" = "$proc_total" ] &&
	pass "instructions add up to the procedure's total ($all)" ||
	fail "instructions add up to the procedure's total" "$all vs $proc_total"

# --- addresses and ranges ----------------------------------------------------------------
out=$("$L" -asm "0x$lo" "$T/listloop" 2>&1) && grep -q "^Procedure: divide_chain" <<<"$out" &&
	pass "PROCEDURE as an address" || fail "PROCEDURE as an address" "$out"
r=$(printf '0x%x-0x%x' $((0x$lo)) $((0x$lo + 8)))
inrange() { # every instruction row of listing $1 within [$2, $3)
	local a n=0
	for a in $(rows "$1" | awk '$3 ~ /^0x/ { print $3 }'); do
		[ $((a)) -ge $(($2)) ] && [ $((a)) -lt $(($3)) ] || return 1
		n=$((n + 1))
	done
	[ $n -ge 1 ]
}
out=$("$L" -asm "$r" listloop 2>&1) && inrange "$out" 0x$lo $((0x$lo + 8)) &&
	pass "PROCEDURE as a range, IMAGE as a file name" || fail "PROCEDURE as a range" "$out"

# --- stripped, with debug info by build-id ------------------------------------------------
out=$(DCPI_DEBUG_PATH=$T/debug "$L" -source divide_stripped "$T/stripped" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "HOTLOOP" <<<"$out" &&
	pass "stripped image: lines and source through the build-id debug file" ||
	fail "stripped image with separate debug info" "$out"

# --- sources moved and gone --------------------------------------------------------------
out=$("$L" divide_moved "$T/moved" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "source file not found" <<<"$out" && ! grep -qF "HOTLOOP" <<<"$out" &&
	pass "moved source: a note, no text" || fail "moved source: a note" "$out"
out=$("$L" -remap "$T/moved-src=$T/moved-here" divide_moved "$T/moved" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "HOTLOOP" <<<"$out" && pass "moved source found with -remap" ||
	fail "moved source found with -remap" "$out"
out=$("$L" -I "$T/moved-here" divide_moved "$T/moved" 2>&1)
grep -qF "HOTLOOP" <<<"$out" && pass "moved source found with -I" || fail "-I" "$out"
out=$("$L" -both divide_gone "$T/gone" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "source file not found" <<<"$out" &&
	[ "$(rows "$out" | awk '$3 ~ /^0x/' | wc -l)" -gt 5 ] &&
	pass "missing source: instructions listed with a note, exit 0" ||
	fail "missing source: instructions with a note" "rc=$rc $out"

# --- JSON ---------------------------------------------------------------------------------
if command -v python3 >/dev/null; then
	out=$("$L" -json divide_chain "$T/listloop")
	python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["procedure"] == "divide_chain" and d["has_code"] and d["has_lines"]
for l_i, l in enumerate(d["lines"]):
    s = sum(i["counts"][0] for i in d["instructions"] if i["line_index"] == l_i)
    assert s == l["counts"][0], (l, s)
assert sum(l["counts"][0] for l in d["lines"]) + sum(s["counts"][0] for s in d["strays"]) == d["events"][0]["total"]
hot = max(d["lines"], key=lambda l: l["counts"][0])
assert hot["line"] == int(sys.argv[1]), hot
' "$hot" <<<"$out" && pass "-json: documented keys, sums, hottest line" || fail "-json" "$out"
else
	skip "python3 not installed: cannot parse -json"
fi

# --- dcpitopcounts --------------------------------------------------------------------------
out=$("$TC" -n 3 "$T/listloop" 2>&1); rc=$?
first=$(rows "$out" | head -1)
[ $rc -eq 0 ] && grep -q " divide_chain " <<<"$first" && grep -q "listloop.c:$hot\$" <<<"$first" &&
	pass "dcpitopcounts: top instruction in the hot loop, at the HOTLOOP line" ||
	fail "dcpitopcounts: top instruction at the HOTLOOP line" "$out"
# listloop's samples fall on few instructions (three or four on a VM's
# cpu-clock): -n N shows N of them, or all when there are fewer
nall=$(rows "$("$TC" -n 1000 "$T/listloop" 2>&1)" | wc -l)
[ "$nall" -ge 2 ] && [ "$(rows "$out" | wc -l)" -eq $((nall < 3 ? nall : 3)) ] &&
	pass "dcpitopcounts -n 3: min(3, $nall) rows" || fail "-n 3 of $nall" "$out"
addr=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^0x/) { print $i; exit } }' <<<"$first")
mn=$(awk -v a="${addr#0x}" '$1 == a":" { print $2 }' < <(objdump -d --no-show-raw-insn "$T/listloop"))
grep -qE " ${mn}[bwlq]? " <<<"$first" && pass "dcpitopcounts: instruction text as objdump ($mn)" ||
	fail "dcpitopcounts: instruction text" "$addr $mn: $first"
out=$("$TC" -n 3 2>&1) && [ "$(rows "$out" | wc -l)" -eq 3 ] && pass "dcpitopcounts over all images" ||
	fail "dcpitopcounts over all images" "$out"
if command -v python3 >/dev/null; then
	# as many rows as the text report has (the workload may sample fewer
	# than 4 distinct instructions), ordered, with the documented keys
	ntext=$(rows "$("$TC" -n 4 listloop 2>/dev/null)" | wc -l)
	"$TC" -json -n 4 listloop | python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["rows"]; n=int(sys.argv[1]); assert n >= 1 and len(r)==n, (n, len(r)); assert all("instruction" in x and "file" in x for x in r); assert all(r[i]["counts"][0] >= r[i+1]["counts"][0] for i in range(len(r)-1))' "$ntext" &&
		pass "dcpitopcounts -json" || fail "dcpitopcounts -json" "text rows: $ntext"
fi

# --- kernel ---------------------------------------------------------------------------------
kp=$("$DCPI_BIN/dcpiprof" -keep 20 kernel 2>/dev/null | awk '/^=+$/ { t = 1; getline; next } t && $4 !~ /^\[/ { print $4 }')
ok=
for p in $kp; do
	out=$("$L" -asm "$p" kernel 2>&1) || continue
	grep -q "^Procedure: $p" <<<"$out" && grep -qiE "kernel instructions are not shown|^ +[0-9]+ +[0-9.]+% +0xf" <<<"$out" && ok=$p && break
done
[ -n "$ok" ] && pass "a kernel procedure lists from the kallsyms snapshot ($ok)" ||
	fail "a kernel procedure lists" "candidates: $kp; last: $out"

# --- bad input ------------------------------------------------------------------------------
expect() { # expect RC PATTERN NAME -- command...
	local want=$1 pat=$2 name=$3; shift 4
	local out rc
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq "$want" ] && grep -qiE "$pat" <<<"$out"; then pass "$name"; else fail "$name" "rc=$rc: $out"; fi
}
expect 1 "no procedure 'nosuch'" "unknown procedure" -- "$L" nosuch "$T/listloop"
expect 1 "^  0x[0-9a-f]+ +[0-9]+ +divide_chain$" "unknown name lists candidates" -- "$L" divide "$T/listloop"
expect 1 "no profile of image 'nosuch'" "wrong image" -- "$L" divide_chain nosuch
expect 1 "no profile of image" "an image not profiled" -- "$L" divide_chain /bin/true
expect 1 "no procedure holds" "an address in no procedure" -- "$L" 0x1 "$T/listloop"
expect 2 "want PROCEDURE and IMAGE" "missing arguments" -- "$L" divide_chain
expect 2 "remap" "a bad -remap" -- "$L" -remap nonsense divide_chain listloop
expect 1 "no profile of image 'nosuch'" "dcpitopcounts: wrong image" -- "$TC" nosuch
out=$("$L" divide_corrupt "$T/corrupt" 2>&1); rc=$?
echo "# corrupt DWARF: $(grep -iE 'note|error' <<<"$out" | head -3)"
[ $rc -le 1 ] && grep -qiE "note: no source lines|source lines|error:|dwarf" <<<"$out" &&
	pass "corrupt DWARF: a clear message, no crash (rc $rc)" || fail "corrupt DWARF" "rc=$rc $out"
# The label dcpiprof gives code no symbol or FDE covers is in the address
# space dcpilist takes (virtual addresses of a non-PIE program, not file
# offsets): listed as printed, the same range, the same samples.
row=$("$DCPI_BIN/dcpiprof" -i -csv "$T/nofde" 2>/dev/null | grep "^$T/nofde,\[nofde@0x" | sort -t, -k4 -nr | head -1)
label=$(cut -d, -f2 <<<"$row") n=$(cut -d, -f4 <<<"$row")
lo=$(sed -n 's/^\[nofde@\(0x[0-9a-f]*\)-\(0x[0-9a-f]*\) .*/\1/p' <<<"$label")
hi=$(sed -n 's/^\[nofde@\(0x[0-9a-f]*\)-\(0x[0-9a-f]*\) .*/\2/p' <<<"$label")
out=$($L "$label" "$T/nofde" 2>&1); rc=$?
total=$(awk '/^ *[0-9]+ +[0-9.]+% +0x[0-9a-f]+ /{s += $1} END {print s + 0}' <<<"$out")
if [ -n "$lo" ] && [ $((lo)) -ge $((0x400000)) ] && [ $rc -eq 0 ] &&
	grep -q "^Range: $lo-$(printf '0x%x' $((hi + 1))) " <<<"$out" && [ "$total" = "$n" ]; then
	pass "non-PIE code no symbol covers: dcpilist takes '$label' ($n samples)"
else
	fail "non-PIE code no symbol covers: dcpilist takes the label" "row '$row' rc $rc total $total: $(head -20 <<<"$out")"
fi
done_testing
