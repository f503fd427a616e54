#!/usr/bin/env bash
# dcpi bins: the bins file it writes holds its own rules (ranges from 0 up,
# meeting, each representative inside its range, L1 first and memory
# last, levels slower one after another), what it writes with -o is what
# it prints, and its refusals.  Latencies themselves are the machine's:
# bench/bins compares them with a measurement apart.
. "$DCPI_ROOT/tests/tap.sh"
B=$DCPI_BIN/dcpi-bins

case $(uname -m) in
x86_64) ;;
*) skip "dcpi bins times loads with the x86-64 time-stamp counter"; done_testing ;;
esac
"$B" -max-mib 64 -o "$T/bins" 2>"$T/err" && pass "dcpi bins -max-mib 64 -o FILE" ||
	fail "dcpi bins -max-mib 64 -o FILE" "$(cat "$T/err")"
grep -q "bins written to $T/bins" "$T/err" && pass "says where it wrote" || fail "says where it wrote" "$(cat "$T/err")"
python3 - "$T/bins" <<'PY' && pass "the bins: from 0 to 2^64 - 1 without a gap, each REP in its range, L1 first, memory last, each slower" ||
import sys
rows = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].split()
    if line:
        lo, hi, rep, name = int(line[0]), int(line[1]), int(line[2]), line[3]
        rows.append((lo, hi, rep, name))
assert len(rows) >= 2, rows
assert rows[0][0] == 0 and rows[-1][1] == 2**64 - 1, rows
assert all(a[1] + 1 == b[0] for a, b in zip(rows, rows[1:])), rows
assert all(lo <= rep <= hi for lo, hi, rep, _ in rows), rows
assert all(a[2] < b[2] for a, b in zip(rows, rows[1:])), rows
assert rows[0][3] == "L1" and rows[-1][3] == "memory", rows
assert [r[3] for r in rows[1:-1]] == ["L%d" % i for i in range(2, len(rows))], rows
PY
	fail "the bins hold their rules" "$(cat "$T/bins")"
grep -qE '^#  +4 KiB +[0-9.]+$' "$T/bins" && grep -q '^# level L1 ' "$T/bins" &&
	pass "the curve and the levels as comments" || fail "the curve and the levels as comments" "$(cat "$T/bins")"
"$B" -max-mib 64 -json >"$T/j" 2>"$T/err"
python3 - "$T/j" <<'PY' && pass "-json: points from 4 KiB to 64 MiB, levels, bins" ||
import json, sys
d = json.load(open(sys.argv[1]))
assert [p["bytes"] for p in d["points"]] == [4096 << i for i in range(15)], d["points"]
assert d["loads"] == 1000000 and len(d["bins"]) == len(d["levels"]) >= 2, d
assert all(b["name"] == l["name"] for b, l in zip(d["bins"], d["levels"])), d
PY
	fail "-json" "$(head -c 600 "$T/j") $(cat "$T/err")"

# refusals: usage errors before measuring, a file that cannot be written
out=$("$B" -max-mib 0 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q -- '-max-mib' <<<"$out" && pass "-max-mib 0: usage error" || fail "-max-mib 0" "rc=$rc $out"
out=$("$B" -max-mib lots 2>&1); rc=$?
[ $rc -eq 2 ] && pass "-max-mib lots: usage error" || fail "-max-mib lots" "rc=$rc $out"
out=$("$B" extra 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "unexpected argument" <<<"$out" && pass "an operand: usage error" || fail "an operand" "rc=$rc $out"
mkdir "$T/dir"
out=$("$B" -max-mib 1 -o "$T/dir" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "$T/dir" <<<"$out" && [ -d "$T/dir" ] && pass "-o a directory: an error naming it, the directory untouched" ||
	fail "-o a directory" "rc=$rc $out"
out=$("$B" -max-mib 1 -o "$T/nonexistent/b" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "nonexistent" <<<"$out" && pass "-o in a missing directory: an error naming it" ||
	fail "-o in a missing directory" "rc=$rc $out"
done_testing
