#!/usr/bin/env bash
# Value profiles in the reports: an epoch recorded for real, given an
# epoch.vprof whose numbers the test wrote (loads at the real offsets of the
# program's instructions), and dcpilist -vtrace and dcpicat against those
# numbers, field by field; the refusals (no value profiles, a corrupt one).
. "$DCPI_ROOT/tests/tap.sh"
unset DCPI_VTRACE_PERIOD # the library's default period is checked below

REC="$DCPI_BIN/dcpi-record"
L="$DCPI_BIN/dcpilist"
command -v python3 >/dev/null || { skip "python3 not installed: cannot read -json"; done_testing; }
cc -O2 -g -o "$T/callers" "$DCPI_ROOT/tests/workloads/callers.c" || { fail "build callers"; done_testing; }
"$REC" -db "$T/db" -quiet -- "$T/callers" ratio 1 2>/dev/null || { fail "dcpi record"; done_testing; }
plat=$(dirname "$(ls "$T"/db/*/*/epoch.stats)")
id=$(readelf -n "$T/callers" | awk '/Build ID/ { print $3 }')

out=$("$L" -db "$T/db" -vtrace leaf callers 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'no value profiles in the epochs chosen' <<<"$out" &&
	pass "-vtrace without value profiles: an error that says so" || fail "-vtrace without value profiles" "rc=$rc $out"

# two loads of leaf's: its first instruction with a memory operand and its last
read -r o1 o2 < <("$L" -db "$T/db" -asm -json leaf callers | python3 -c '
import json, sys
ins = json.load(sys.stdin)["instructions"]
print(ins[0]["offset"][2:], ins[-1]["offset"][2:])')
cat >"$plat/epoch.vprof" <<EOF
dcpi-vprof 1
kind ldlatency
processes 2
tsc_hz 3800000000
timing 30
period 500000
signals 1000
skipped noload 12
bin 0 0 6 3 L1
bin 1 7 36 11 L2
bin 2 37 18446744073709551615 475 memory
image 0 $id $T/callers
image 1 - /usr/bin/other
load 0 $o1 100 2000 0 80 0 20
value 0 $o1 2a 60
value 0 $o1 7 40
source 0 $o1 L1 80
source 0 $o1 RAM 20
load 0 $o2 10 4750 1 0 0 9
load 1 $o1 5 5 0 5 0 0
end
EOF
js=$("$L" -db "$T/db" -asm -vtrace -json leaf callers 2>"$T/err")
printf '%s' "$js" >"$T/list.json"
python3 - "$o1" "$o2" "$T/list.json" <<'EOF' && pass "dcpilist -vtrace -json: each load's samples, cycles, mean, latency by bin name and hot values as the file has them; other instructions none" ||
import json, sys
d = json.load(open(sys.argv[3]))
o1, o2 = "0x" + sys.argv[1], "0x" + sys.argv[2]
v = d["vtrace"]
assert v["kind"] == "ldlatency" and v["processes"] == 2 and v["image_profiled"], v
assert [b["name"] for b in v["bins"]] == ["L1", "L2", "memory"] and v["bins"][2]["max"] == 2**64 - 1, v
by = {i["offset"]: i for i in d["instructions"]}
a, b = by[o1], by[o2]
assert a["vtrace"] == {"samples": 100, "cycles": 2000, "mean_cycles": 20.0}, a["vtrace"]
assert a["latency"] == {"L1": 80, "L2": 0, "memory": 20}, a["latency"]
assert a["values"] == [{"value": "0x2a", "count": 60, "share": 0.6, "approximate": False, "share_min": 0.6, "share_max": 0.6},
                       {"value": "0x7", "count": 40, "share": 0.4, "approximate": False, "share_min": 0.4, "share_max": 0.4}], a["values"]
assert b["vtrace"]["mean_cycles"] == 475.0 and b["latency"] == {"L1": 0, "L2": 0, "memory": 9, "": 1}, b
assert b["values"] == [] and b["sources"] == {}, b
assert a["sources"] == {"L1": 80, "RAM": 20}, a["sources"]
others = [i for i in d["instructions"] if i["offset"] not in (o1, o2)]
assert others and not any("vtrace" in i or "latency" in i for i in others)
EOF
	fail "dcpilist -vtrace -json: the file's numbers" "$js $(cat "$T/err")"

txt=$("$L" -db "$T/db" -asm -vtrace leaf callers 2>&1)
grep -qE '^  vtrace: 100 samples, mean 20\.0 cycles: L1 80 memory 20 \| values: 0x2a 60\.0%, 0x7 40\.0% \| from: L1 80, RAM 20$' <<<"$txt" &&
	grep -qE '^  vtrace: 10 samples, mean 475\.0 cycles: memory 9 \(in no bin\) 1$' <<<"$txt" &&
	grep -q 'L1 0-6, L2 7-36, memory 37+' <<<"$txt" &&
	pass "dcpilist -vtrace: a line under each load, the bins named in the header" ||
	fail "dcpilist -vtrace: the text lines" "$txt"
txt2=$("$L" -db "$T/db" -asm leaf callers 2>&1)
! grep -q vtrace <<<"$txt2" && pass "without -vtrace, no value profile in the listing" ||
	fail "without -vtrace, no value profile" "$txt2"

# dcpi report: the procedure page's listing carries the latency and hot
# values, as rendered by a real browser
BROWSER=$(command -v chromium || command -v chromium-browser)
if [ -n "$BROWSER" ]; then
	"$DCPI_BIN/dcpi" report -db "$T/db" -o "$T/r" -n 1 >/dev/null 2>"$T/err" || fail "dcpi report" "$(cat "$T/err")"
	timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/chrome" --virtual-time-budget=5000 --dump-dom "file://$T/r/p/0.html" \
		>"$T/p0.dom" 2>/dev/null
	python3 - "$T/p0.dom" "$o1" "$o2" <<'EOF' &&
import re, sys, html
d = open(sys.argv[1]).read()
def row(off):
    m = re.search(r'<tr class="insn" id="i0x%s"[^>]*>(.*?)</tr>' % off, d, re.S)
    assert m, off
    return [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.S)]
a, b = row(sys.argv[2]), row(sys.argv[3])
assert a[-2:] == ["20.0 (100, L1 80.00%)", "0x2a 60.00%, 0x7 40.00%"], a
assert b[-2:] == ["475.0 (10, memory 90.00%)", ""], b
assert ">latency<" in d and "hot values" in d and "measured latency of the sampled loads" in d
EOF
		pass "dcpi report: the listing's latency and hot-value cells in Chromium's DOM" ||
		fail "dcpi report's value profile cells" "$(grep -o 'vlat[^<]*<' "$T/p0.dom" | head)"
else
	skip "Chromium is not installed: the report's value-profile cells not rendered"
fi

js=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -vtrace -json 2>"$T/err")
printf '%s' "$js" >"$T/top.json"
python3 - "$o1" "$o2" "$T/top.json" <<'EOF' && grep -q '1 value-profiled loads in images not listed here' <<<"$js" &&
import json, sys
d = json.load(open(sys.argv[3]))
o1, o2 = int(sys.argv[1], 16), int(sys.argv[2], 16)
rows = d["loads"]
assert d["processes"] == 2 and d["cycles"] == 6750, d
assert [int(r["address"], 16) for r in rows] == [o2, o1], rows  # 4750 cycles, then 2000
assert [(r["samples"], r["cycles"], r["mean_cycles"], r["bin"], r["bin_samples"]) for r in rows] == \
    [(10, 4750, 475.0, "memory", 9), (100, 2000, 20.0, "L1", 80)], rows
assert all(r["procedure"] == "leaf" and r["image"].endswith("/callers") for r in rows), rows
EOF
	pass "dcpitopcounts -vtrace: loads by measured cycles, their bin, procedure; the unlisted image's load said" ||
	fail "dcpitopcounts -vtrace" "$js $(cat "$T/err")"
plain=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -json 2>/dev/null)
python3 - "$T/top.json" <<EOF "$plain" && pass "dcpitopcounts -vtrace: the header's event totals are the plain report's" ||
import json, sys
v, p = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
assert v["events"] == p["events"] and v["samples"] == p["samples"], (v["events"], p["events"])
assert p["events"][0]["total"] > 0, p["events"]
EOF
	fail "dcpitopcounts -vtrace: the header's event totals are the plain report's" "$(head -c 600 "$T/top.json")"
txt=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -vtrace 2>/dev/null)
grep -qE '^ +4750 +70\.37% +10 +475\.0 memory 90% +leaf ' <<<"$txt" &&
	pass "dcpitopcounts -vtrace: the text row (cycles, share, samples, mean, bin)" ||
	fail "dcpitopcounts -vtrace text" "$txt"

# -invariant: of three loads of leaf's, the one whose 12 samples all loaded
# 0xff; not the one 11 of whose 12 did, nor one of 7 samples
o3=$("$L" -db "$T/db" -asm -json leaf callers | python3 -c '
import json, sys
print(json.load(sys.stdin)["instructions"][1]["offset"][2:])')
txt=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -invariant 2>/dev/null)
grep -q '^(none)$' <<<"$txt" && pass "-invariant: none in the first file (two values; none)" ||
	fail "-invariant on the first file" "$txt"
cp "$plat/epoch.vprof" "$T/first.vprof"
sed -i '/^end$/d; /^load /d; /^value /d; /^source /d' "$plat/epoch.vprof"
cat >>"$plat/epoch.vprof" <<EOF
load 0 $o1 12 120 0 12 0 0
value 0 $o1 ff 12
load 0 $o2 12 120 0 12 0 0
value 0 $o2 ff 11
load 0 $o3 7 70 0 7 0 0
value 0 $o3 5 7
end
EOF
js=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -invariant -json 2>"$T/err")
printf '%s' "$js" >"$T/inv.json"
[ "$o3" != "$o1" ] && [ "$o3" != "$o2" ] || fail "three distinct loads in leaf" "$o1 $o2 $o3"
python3 - "$o1" "$T/inv.json" <<'EOF' &&
import json, sys
d = json.load(open(sys.argv[2]))
assert d["invariant"] is True, d
rows = [(int(r["address"], 16), r["samples"], r["value"], r["procedure"]) for r in d["loads"]]
assert rows == [(int(sys.argv[1], 16), 12, "0xff", "leaf")], rows
EOF
	pass "dcpitopcounts -invariant -json: the load that always loaded 0xff, alone" ||
	fail "dcpitopcounts -invariant -json" "$js $(cat "$T/err")"
txt=$("$DCPI_BIN/dcpitopcounts" -db "$T/db" -invariant 2>/dev/null)
grep -qE '^ +12 0xff +leaf ' <<<"$txt" && ! grep -q '^(none)$' <<<"$txt" &&
	pass "dcpitopcounts -invariant: the text row (samples, value, procedure)" ||
	fail "dcpitopcounts -invariant text" "$txt"
cp "$T/first.vprof" "$plat/epoch.vprof"

# dcpitopstalls: a 'd' culprit whose load has a value profile shows its
# measured latency, and is marked measured when it missed the first bin
cc -O2 -g -o "$T/list" "$DCPI_ROOT/bench/accuracy/kernels/list.c" || fail "build the list kernel"
"$REC" -db "$T/db2" -quiet -- "$T/list" 2>/dev/null || fail "dcpi record list"
plat2=$(dirname "$(ls "$T"/db2/*/*/epoch.stats)")
id2=$(readelf -n "$T/list" | awk '/Build ID/ { print $3 }')
"$DCPI_BIN/dcpitopstalls" -db "$T/db2" -n 50 -json list >"$T/ts0.json" 2>/dev/null
# the loads 'd' culprits blame, as file offsets (readelf's PT_LOADs)
read -r a1 o1 a2 o2 < <(python3 - "$T/ts0.json" "$T/list" <<'EOF'
import json, subprocess, sys
rows = json.load(open(sys.argv[1]))["rows"]
segs = [l.split() for l in subprocess.run(["readelf", "-lW", sys.argv[2]], capture_output=True,
        text=True).stdout.splitlines() if l.split()[:1] == ["LOAD"]]
def off(va):
    for s in segs:
        o, v, fs = int(s[1], 16), int(s[2], 16), int(s[4], 16)
        if v <= va < v + fs:
            return va - v + o
at = []
for r in rows:
    for c in r["culprits"]:
        if c["code"] == "d" and c["at"] and c["at"] not in at:
            at.append(c["at"])
at = (at + [at[0]])[:2] if at else []
print(" ".join("%s %x" % (a, off(int(a, 16))) for a in at))
EOF
)
if [ -n "${a1:-}" ]; then
	{ printf '%s\n' "dcpi-vprof 1" "kind ldlatency" "processes 1" "tsc_hz 0" "timing 30" \
		"period 500000" "signals 100" "bin 0 0 6 3 L1" "bin 1 7 36 11 L2" \
		"bin 2 37 18446744073709551615 475 memory" "image 0 $id2 $T/list" \
		"load 0 $o1 90 42000 0 2 8 80"
	  [ "$o2" = "$o1" ] || printf '%s\n' "load 0 $o2 50 150 0 50 0 0"
	  echo end; } >"$plat2/epoch.vprof"
	"$DCPI_BIN/dcpitopstalls" -db "$T/db2" -n 50 -json list >"$T/ts1.json" 2>"$T/err"
	txt=$("$DCPI_BIN/dcpitopstalls" -db "$T/db2" -n 50 list 2>/dev/null)
	python3 - "$T/ts1.json" "$a1" "$a2" <<'EOF' && grep -qE 'd\*.*\[d: 466\.7 cycles memory\]' <<<"$txt" &&
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
a1, a2 = sys.argv[2], sys.argv[3]
seen = set()
for r in rows:
    for c in r["culprits"]:
        if c["code"] != "d" or c["at"] not in (a1, a2):
            assert "latency" not in c, c
            continue
        seen.add(c["at"])
        if c["at"] == a1:
            assert c["latency"] == {"samples": 90, "mean_cycles": 466.7, "bin": "memory"}, c
            assert c["measured"] is True, c
        else:
            assert c["latency"] == {"samples": 50, "mean_cycles": 3.0, "bin": "L1"}, c
            assert c["measured"] is False, c
assert a1 in seen, seen
EOF
		pass "dcpitopstalls: a 'd' culprit's load measured (memory: marked measured; L1: not), its latency shown" ||
		fail "dcpitopstalls with value profiles" "$(cat "$T/ts1.json") $txt"
else
	fail "dcpitopstalls blames a load for the list kernel's stalls" "$(cat "$T/ts0.json")"
fi

# dcpi record -vtrace with the real library: the database's bins measured
# once (dcpi bins), the pointer chase's loads measured past L2
cc -O2 -g -o "$T/vp_latency" "$DCPI_ROOT/tests/workloads/vp_latency.c" || fail "build vp_latency"
"$REC" -db "$T/dbr" -vtrace ldlatency -quiet -- "$T/vp_latency" 256 1 >/dev/null 2>"$T/rec.err"; rc=$?
[ $rc -eq 0 ] && [ -f "$T/dbr/bins" ] && grep -q "measuring this machine's load latencies" "$T/rec.err" &&
	grep -qE '^dcpi record: value profile: [0-9]+ load samples of [0-9]+ loads from 1 process ' "$T/rec.err" &&
	ls "$T"/dbr/*/*/epoch.vprof >/dev/null 2>&1 &&
	pass "dcpi record -vtrace: DB/bins measured, the value profile in the epoch, said" ||
	fail "dcpi record -vtrace" "rc=$rc $(cat "$T/rec.err")"
"$L" -db "$T/dbr" -asm -vtrace -json chase vp_latency >"$T/chase.json" 2>"$T/err"
python3 - "$T/chase.json" <<'EOF' &&
import json, sys
d = json.load(open(sys.argv[1]))
bins = [b["name"] for b in d["vtrace"]["bins"]]
assert bins[:2] == ["L1", "L2"], bins
loads = [i for i in d["instructions"] if "vtrace" in i]
n = sum(i["vtrace"]["samples"] for i in loads)
far = sum(i["latency"].get(b, 0) for i in loads for b in bins[2:])
print("# chase: %d load samples, %d past L2" % (n, far))
assert n >= 50 and far >= 0.9 * n, (n, far)
EOF
	pass "dcpilist -vtrace: 90% or more of the pointer chase's load samples past L2" ||
	fail "the chase's loads past L2" "$(cat "$T/err") $(head -c 2000 "$T/chase.json")"
"$REC" -db "$T/dbr" -vtrace ldlatency -quiet -- "$T/vp_latency" 1 0 >/dev/null 2>"$T/rec2.err"
! grep -q "measuring" "$T/rec2.err" && pass "a second -vtrace run uses DB/bins as it is" ||
	fail "DB/bins reused" "$(cat "$T/rec2.err")"
# the period each process sampled at: 2 ms of CPU by default (libdcpivp(7)
# OVERHEAD), DCPI_VTRACE_PERIOD from dcpi record's environment
DCPI_VTRACE_PERIOD=500000 "$REC" -db "$T/dbp" -vtrace ldlatency:"$T/dbr/bins" -quiet -- \
	"$T/vp_latency" 1 0.2 >/dev/null 2>"$T/rec3.err"
p1=$(grep -h '^period ' "$T"/dbr/*/*/epoch.vprof | sort -u | tr '\n' ' ')
p2=$(grep -h '^period ' "$T"/dbp/*/*/epoch.vprof | tr '\n' ' ')
[ "$p1" = "period 2000000 " ] && [ "$p2" = "period 500000 " ] &&
	pass "-vtrace samples every 2 ms of CPU by default, DCPI_VTRACE_PERIOD's period when set" ||
	fail "the value profiles' period" "default: '$p1' set: '$p2' $(cat "$T/rec3.err")"
out=$("$REC" -db "$T/dbr" -vtrace ldlatency:/nonexistent -- true 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "/nonexistent" <<<"$out" && pass "-vtrace with a bins file that is not there: an error naming it" ||
	fail "-vtrace with a missing bins file" "rc=$rc $out"
out=$("$REC" -db "$T/dbr" -vtrace ldlat -- true 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "ldlatency or ldlatency:BINSFILE wanted" <<<"$out" && pass "-vtrace of another kind: a usage error" ||
	fail "-vtrace nonsense" "rc=$rc $out"

out=$("$DCPI_BIN/dcpicat" "$plat/epoch.vprof" 2>&1)
cmp -s <(printf '%s\n' "$out") "$plat/epoch.vprof" &&
	pass "dcpicat prints a value profile raw (as written)" || fail "dcpicat prints a value profile" "$out"

# a corrupt one: said, naming the file and line, and nothing made up
sed -i 's/^load 0 \([0-9a-f]*\) 10 4750 1 0 0 9$/load 0 \1 10 4750 1 0 0 8/' "$plat/epoch.vprof"
out=$("$L" -db "$T/db" -vtrace leaf callers 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "epoch.vprof: line 19: OUTSIDE and the bins' counts do not add up to SAMPLES" <<<"$out" &&
	grep -q 'no value profiles in the epochs chosen' <<<"$out" &&
	pass "a corrupt epoch.vprof: refused with its file and line" || fail "a corrupt epoch.vprof refused" "rc=$rc $out"
out=$("$DCPI_BIN/dcpicat" "$plat/epoch.vprof" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q 'line 19' <<<"$out" && pass "dcpicat refuses it too" ||
	fail "dcpicat refuses a corrupt value profile" "rc=$rc $out"

done_testing
