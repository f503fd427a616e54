#!/usr/bin/env bash
# Who called it: dcpi record -stacks on programs built without frame
# pointers, and dcpiprof -callers/-callees/-inclusive against what the
# program does by construction (tests/workloads/callers.c): a leaf called
# from three procedures with work 6:3:1, and DCPI's looper, whose rand()
# calls (in Debian's stripped libc) all come from get_next_random.
. "$DCPI_ROOT/tests/tap.sh"

REC="$DCPI_BIN/dcpi-record"
P="$DCPI_BIN/dcpiprof"
command -v python3 >/dev/null || { skip "python3 not installed: cannot read -json"; done_testing; }
cc -O2 -fomit-frame-pointer -o "$T/callers" "$DCPI_ROOT/tests/workloads/callers.c" ||
	{ fail "build callers"; done_testing; }

# shares of the JSON rows, by procedure: "six 59.9 three 30.1 ..."
shares() { python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s %.2f" % (r["procedure"], r["percent"][0]) for r in d["rows"] if r["depth"] == 1))'; }

# near "NAME PCT ..." "NAME=WANT ..." [POINTS]: the same names, each within
# POINTS (3)
near() { python3 - "$1" "$2" "${3:-3}" <<'EOF'
import sys
v = sys.argv[1].split()
got = dict(zip(v[0::2], map(float, v[1::2])))
want = {k: eval(x, {"__builtins__": {}}) for k, x in (w.split("=") for w in sys.argv[2].split())}
tol = float(sys.argv[3])
sys.exit(0 if set(got) == set(want) and all(abs(got[k] - want[k]) <= tol for k in want) else 1)
EOF
}

# The runs are long enough in CPU time, not in rounds: 18 rounds were about
# 1,450 samples on one host and 750 on a faster one, where a share's
# binomial spread alone (1.8 points) failed "within 3" one run in ten.  So
# the program goes on, in whole rounds, to 1.5 s of CPU (3,000 samples at
# 2,000 a second: a spread of 0.9 point).  At 6 rounds (500 samples) the
# machine's speed changing under load had also moved a share by up to 4.5
# points beside two CPU hogs; rounds cut in slices (callers.c) and the
# longer runs keep that small.  The tail, chain and thread runs below,
# likewise
"$REC" -db "$T/db" -stacks -label comm -quiet -- "$T/callers" ratio 18 1.5 2>"$T/rec.err" ||
	{ fail "dcpi record -stacks runs" "$(cat "$T/rec.err")"; done_testing; }
ls "$T"/db/*/*/epoch.stacks >/dev/null 2>&1 && pass "the epoch has its epoch.stacks" ||
	fail "the epoch has its epoch.stacks" "$(ls -R "$T/db")"

# 1. the 6:3:1 callers of leaf, within 3 points
out=$("$P" -db "$T/db" -callers leaf callers -json 2>"$T/err")
s=$(shares <<<"$out")
near "$s" "six=60 three=30 one=10" && pass "-callers leaf: six, three, one at 60/30/10% within 3 points ($s)" ||
	fail "-callers leaf: six, three, one at 60/30/10% within 3 points" "$s $(cat "$T/err")"

# 2. their callers: main, alone (-depth 2)
out=$("$P" -db "$T/db" -callers leaf -depth 2 -json 2>&1)
python3 -c '
import json, sys
d = json.load(sys.stdin)
deep = [r for r in d["rows"] if r["depth"] == 2]
assert [r["procedure"] for r in deep] == ["main"] * 3, deep
assert all(a["counts"] == b["counts"] for a, b in zip([r for r in d["rows"] if r["depth"] == 1], deep))
' <<<"$out" && pass "-depth 2: each caller's caller is main, with all its samples" ||
	fail "-depth 2: each caller's caller is main, with all its samples" "$out"

# 3. callees of main: the same split, and they add up to main's inclusive count
out=$("$P" -db "$T/db" -callees main -json 2>&1)
python3 -c '
import json, sys
d = json.load(sys.stdin)
got = {r["procedure"]: r["percent"][0] for r in d["rows"]}
assert abs(got["six"] - 60) <= 3 and abs(got["three"] - 30) <= 3 and abs(got["one"] - 10) <= 3, got
assert sum(r["counts"][0] for r in d["rows"]) == d["inclusive"]["counts"][0]
' <<<"$out" && pass "-callees main: the same split, adding up to main's inclusive samples" ||
	fail "-callees main: the same split, adding up to main's inclusive samples" "$out"

# 4. whole stacks, and flat profiles unchanged: each procedure's self count
#    from the stacks is its count in the flat report
out=$("$P" -db "$T/db" 2>&1 -inclusive)
whole=$(sed -n 's/^Stacks: .*whole \([0-9.]*\)%.*/\1/p' <<<"$out")
python3 -c "import sys; sys.exit(0 if float('${whole:-0}') >= 95 else 1)" &&
	pass "stacks walked whole to _start: $whole% (>= 95%)" ||
	fail "stacks walked whole to _start: >= 95%" "$out"
incl=$("$P" -db "$T/db" -inclusive -json 2>/dev/null)
flat=$("$P" -db "$T/db" -i -json 2>/dev/null)
python3 - <(echo "$incl") <(echo "$flat") <<'EOF' && pass "self samples from the stacks = the flat profile's, procedure by procedure" ||
import json, sys
incl = json.load(open(sys.argv[1]))
flat = json.load(open(sys.argv[2]))
f = {(r["image"], r["procedure"]): r["counts"][0] for r in flat["rows"]}
s = {(r["image"], r["procedure"]): r["self"]["counts"][0] for r in incl["rows"] if r["self"]["counts"][0]}
bad = [(k, f.get(k), v) for k, v in s.items() if f.get(k) != v]
sys.exit(1 if bad or sum(s.values()) != flat["samples"] else 0)
EOF
	fail "self samples from the stacks = the flat profile's, procedure by procedure" "$incl"
python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
# main runs 18 calls of its own: a timer sample may still land on one (one
# of 1,878 did beside two CPU hogs), so "almost none", not "none"
assert r["main"]["inclusive"]["percent"][0] >= 95 and r["main"]["self"]["percent"][0] <= 1
assert r["leaf"]["self"]["counts"][0] > 0
' <<<"$incl" && pass "-inclusive: main holds >= 95% of the samples, almost none its own" ||
	fail "-inclusive: main holds >= 95% of the samples, almost none its own" "$incl"

# 5. labels: the process's own label keeps them all; another has none
out=$("$P" -db "$T/db" -callers leaf -label comm=callers -json 2>&1)
s2=$(shares <<<"$out")
[ "$s2" = "$s" ] && pass "-label comm=callers: the same callers" ||
	fail "-label comm=callers: the same callers" "$s / $s2"
out=$("$P" -db "$T/db" -callers leaf -label comm=nosuch 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q 'comm=nosuch' <<<"$out" && pass "-label of no profile: an error naming it" ||
	fail "-label of no profile: an error naming it" "rc=$rc $out"

# 6. the looper on Debian's stripped libc: rand's callers
"$REC" -db "$T/loop" -stacks -quiet -- "$T/callers" looper 60 2>/dev/null
out=$("$P" -db "$T/loop" -callers rand libc.so.6 -json 2>&1)
python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x["percent"][0] for x in d["rows"]}
assert r.get("get_next_random", 0) >= 95, r
assert d["inclusive"]["counts"][0] >= 100, d["inclusive"]
' <<<"$out" && pass "the looper: >= 95% of rand's samples (stripped libc) under get_next_random" ||
	fail "the looper: >= 95% of rand's samples (stripped libc) under get_next_random" "$out"
out=$("$P" -db "$T/loop" -callers rand 2>&1)
grep -q 'get_next_random' <<<"$out" && grep -q '^Stacks: ' <<<"$out" &&
	pass "the looper question in one command, as text" ||
	fail "the looper question in one command, as text" "$out"

# the looper's epoch elsewhere: dcpitar carries epoch.stacks and the code
# of every image its frames name, and the callers are named from it
"$DCPI_BIN/dcpitar" -db "$T/loop" "$T/loop.tar" >/dev/null 2>&1 &&
	(cd "$T" && "$DCPI_BIN/dcpitar" -x loop.tar unpacked >/dev/null 2>&1)
mv "$T/callers" "$T/callers.away"
out=$("$P" -db "$T/unpacked" -callers rand libc.so.6 2>&1)
mv "$T/callers.away" "$T/callers"
grep -qE '^ +[0-9]+ +(9[5-9]|100)\.[0-9]+%  get_next_random ' <<<"$out" &&
	pass "dcpitar carries the stacks: unpacked, with the program gone, rand's caller is named" ||
	fail "dcpitar carries the stacks: unpacked, with the program gone, rand's caller is named" "$out"

# folded: real stacks, root first, adding up to every sample
out=$("$P" -db "$T/db" -folded 2>"$T/ferr")
total=$("$P" -db "$T/db" -json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
sum=$(awk '{n += $NF} END {print n}' <<<"$out")
grep -q '^callers`_start;.*;callers`main;callers`six;callers`leaf [0-9]*$' <<<"$out" &&
	[ "$sum" = "$total" ] && grep -q 'folded call stacks' "$T/ferr" &&
	pass "-folded: whole stacks, _start to leaf, adding up to all $total samples" ||
	fail "-folded: whole stacks, _start to leaf, adding up to all samples" "sum $sum of $total; $(head -3 <<<"$out")"
# pprof: the stacks as samples of many locations; Google's pprof itself
# reads them and finds leaf's callers in the same shares
"$P" -db "$T/db" -pprof "$T/s.pb.gz" 2>"$T/perr"
if command -v protoc >/dev/null; then
	zcat "$T/s.pb.gz" | protoc --decode=perftools.profiles.Profile -I "$DCPI_ROOT/tests/data" \
		"$DCPI_ROOT/tests/data/profile.proto" >"$T/s.txt" 2>&1
	n=$(awk '/^sample {/ { s = 1; n = 0 } s && /location_id:/ { n++ } /^}/ && s { if (n > m) m = n; s = 0 } END { print m + 0 }' "$T/s.txt")
	grep -q 'call stacks' "$T/perr" && [ "$n" -ge 6 ] &&
		pass "-pprof with stacks: samples of up to $n locations (leaf first), protoc decodes it" ||
		fail "-pprof with stacks: samples of many locations" "max $n; $(cat "$T/perr"); $(head -20 "$T/s.txt")"
else
	skip "protoc not installed (scripts/install-deps installs protobuf-compiler)"
fi
if PPROF=$(pprof_tool); then
	out=$("$PPROF" -peek '^leaf$' "$T/s.pb.gz" 2>/dev/null)
	python3 - <<EOF "$out" && pass "Google's pprof reads the stacks: leaf's callers six, three, one at 60/30/10% within 3" ||
import re, sys
got = {m.group(2): float(m.group(1)) for m in re.finditer(r'^ +\d+ +([\d.]+)% \| +(six|three|one)\s*$', sys.argv[1], re.M)}
want = {"six": 60, "three": 30, "one": 10}
sys.exit(0 if set(got) == set(want) and all(abs(got[k] - want[k]) <= 3 for k in want) else 1)
EOF
		fail "Google's pprof reads the stacks: leaf's callers at 60/30/10%" "$out"
else
	skip "Go or pprof's Debian source not installed: pprof not run (scripts/install-deps installs them)"
fi

# dcpicat prints the stacks file raw; its counts add up too
f=$(ls "$T"/db/*/*/epoch.stacks)
out=$("$DCPI_BIN/dcpicat" "$f" 2>&1)
sum=$(awk '/ label [0-9]+, / {n += $1} END {print n}' <<<"$out")
grep -q '^stacks file$' <<<"$out" && [ "$sum" = "$total" ] &&
	pass "dcpicat epoch.stacks: one line per stack, $total samples" ||
	fail "dcpicat epoch.stacks: one line per stack" "sum $sum of $total; $(head -12 <<<"$out")"

# dcpidiff -inclusive: the ratio epoch against the looper's, in one database
"$REC" -db "$T/two" -stacks -quiet -- "$T/callers" ratio 12 1.0 2>/dev/null
sleep 1
"$REC" -db "$T/two" -stacks -quiet -- "$T/callers" looper 40 2>/dev/null
set -- $(ls "$T/two" | grep '^2' | sort)
out=$("$DCPI_BIN/dcpidiff" -db "$T/two" -inclusive -json "$1" "$2" 2>&1)
python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
assert d["mode"] == "inclusive"
assert r["six"]["a"] > 0 and r["six"]["b"] == 0 and abs(r["six"]["share_a"] - 60) <= 3, r["six"]
assert r["get_next_random"]["a"] == 0 and r["get_next_random"]["share_b"] >= 95, r["get_next_random"]
assert r["main"]["share_a"] >= 95 and r["main"]["share_b"] >= 95, r["main"]
' <<<"$out" && pass "dcpidiff -inclusive: six at 60% of A gone, get_next_random at >= 95% of B new" ||
	fail "dcpidiff -inclusive: six at 60% of A gone, get_next_random at >= 95% of B new" "$out"
# dcpistats -inclusive: each epoch's value of each procedure is dcpiprof -inclusive's count
st=$("$DCPI_BIN/dcpistats" -db "$T/two" -inclusive -json "$1" -- "$2" 2>&1)
i1=$("$P" -db "$T/two" -epoch "$1" -inclusive -json -keep 100000 2>&1)
i2=$("$P" -db "$T/two" -epoch "$2" -inclusive -json -keep 100000 2>&1)
python3 -c '
import json, sys
st, i1, i2 = (json.loads(x) for x in sys.argv[1:4])
assert st["mode"] == "inclusive" and st["measure"] == "samples"
want = [{(r["image"], r["procedure"]): r["inclusive"]["counts"][0] for r in i["rows"]} for i in (i1, i2)]
got = [{(r["image"], r["procedure"]): r[g]["values"][0] for r in st["rows"]} for g in ("a", "b")]
for w, g in zip(want, got):
    assert {k: v for k, v in g.items() if v} == {k: v for k, v in w.items() if v}, (w, g)
assert any(p == "get_next_random" for _, p in got[1]), got[1]
' "$st" "$i1" "$i2" && pass "dcpistats -inclusive: every procedure of both epochs at dcpiprof -inclusive's count" ||
	fail "dcpistats -inclusive: every procedure of both epochs at dcpiprof -inclusive's count" "$st"
out=$("$DCPI_BIN/dcpistats" -db "$T/two" -inclusive "$1/pid=1" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'pid 1' <<<"$out" && pass "dcpistats -inclusive EPOCH/pid=N: error (no such process)" ||
	fail "dcpistats -inclusive EPOCH/pid=N: error" "rc=$rc $out"

# 6b. a tail call: jumper() ends in a jump to leaf(), leaving no frame; the
# call in two() went to jumper(), so its frame is put back (2:1 by construction)
if objdump -d --no-show-raw-insn "$T/callers" | awk '/<jumper>:/,/^$/' | grep -qE 'jmp +[0-9a-f]+ <leaf>'; then
	"$REC" -db "$T/tail" -stacks -quiet -- "$T/callers" tail 9 1.2 2>/dev/null
	out=$("$P" -db "$T/tail" -callers leaf callers -json 2>&1)
	s2=$(shares <<<"$out")
	out2=$("$P" -db "$T/tail" -callers jumper callers 2>&1)
	near "$s2" "jumper=200/3 direct=100/3" && grep -qE '^ +[0-9]+ 100\.00%  two ' <<<"$out2" &&
		grep -q "a tail call's frame put back" <<<"$out2" &&
		pass "a tail call's frame put back: leaf's callers jumper and direct 2:1 within 3 points ($s2), jumper's two" ||
		fail "a tail call's frame put back: leaf's callers 2:1, jumper's two" "$s2 $out2"
else
	skip "this compiler did not make jumper()'s call a jump (no tail call to restore)"
fi

# 6c. a chain of tail calls: chain() calls hop1(), which jumps to hop2(),
# which jumps to leaf(): both frames are put back (the one path from hop1 to
# leaf); forker() jumps to forkb() or forkc(), both jumping to leaf(): two
# ways, so forker alone is put back (2:1 by construction)
dis=$(objdump -d --no-show-raw-insn "$T/callers")
if awk '/<hop1>:/,/^$/' <<<"$dis" | grep -qE 'jmp +[0-9a-f]+ <hop2>' &&
	awk '/<hop2>:/,/^$/' <<<"$dis" | grep -qE 'jmp +[0-9a-f]+ <leaf>' &&
	awk '/<forker>:/,/^$/' <<<"$dis" | grep -qE 'j[a-z]+ +[0-9a-f]+ <forkb>' &&
	awk '/<forker>:/,/^$/' <<<"$dis" | grep -qE 'j[a-z]+ +[0-9a-f]+ <forkc>'; then
	"$REC" -db "$T/chain" -stacks -quiet -- "$T/callers" chain 12 1.2 2>/dev/null
	s2=$("$P" -db "$T/chain" -callers leaf callers -json 2>&1 | shares)
	h1=$("$P" -db "$T/chain" -callers hop2 callers 2>&1)
	h0=$("$P" -db "$T/chain" -callers hop1 callers 2>&1)
	fk=$("$P" -db "$T/chain" -callers forker callers 2>&1)
	near "$s2" "hop2=200/3 forker=100/3" && grep -qE '^ +[0-9]+ 100\.00%  hop1 ' <<<"$h1" &&
		grep -qE '^ +[0-9]+ 100\.00%  chain ' <<<"$h0" &&
		grep -qE '^ +[0-9]+ 100\.00%  forked ' <<<"$fk" &&
		pass "a chain of tail calls put back: leaf's callers hop2 and forker 2:1 within 3 points ($s2), hop2's hop1, hop1's chain; the fork's forker alone" ||
		fail "a chain of tail calls put back: leaf's callers hop2 and forker 2:1, hop2's hop1, hop1's chain" "$s2 | $h1 | $h0 | $fk"
else
	skip "this compiler did not make hop1's, hop2's and forker's calls jumps (no chain to restore)"
fi

# 6d. threads: the 6:3:1 work in two threads at once.  A thread's stack
# lies below other mappings, so its every copy would run the whole 16 KiB;
# dcpi cuts a thread's copies where its whole walks end their reads
# (dcpi/stacktops.h).  The cut copies still walk whole, and the shares hold.
"$REC" -db "$T/thr" -stacks -quiet -- "$T/callers" threads 9 0.8 2>"$T/thr.err" ||
	fail "dcpi record -stacks runs the threads" "$(cat "$T/thr.err")"
s2=$("$P" -db "$T/thr" -callers leaf callers -json 2>&1 | shares)
near "$s2" "six=60 three=30 one=10" &&
	pass "threads: leaf's callers six, three, one at 60/30/10% within 3 points ($s2)" ||
	fail "threads: leaf's callers six, three, one at 60/30/10% within 3 points" "$s2"
out=$("$P" -db "$T/thr" -stacks -json -keep 100000000 2>&1)
w=$(python3 -c '
import json, sys
d = json.load(sys.stdin)
tot = d["events"][0]["total"]
P = [p["procedure"] for p in d["procedures"]]
# leaf s samples: whole when the stack holds the thread s entry and runner
leaf = [r for r in d["rows"] if P[r["frames"][-1]] == "leaf"]
n = sum(r["counts"][0] for r in leaf)
w = sum(r["counts"][0] for r in leaf if {"clone3", "start_thread", "runner"} <= {P[i] for i in r["frames"]})
print(n, w, tot)' <<<"$out")
read -r nleaf wleaf tot <<<"$w"
cut=$(sed -n 's/^stack_copies_cut \([0-9]*\)$/\1/p' "$T"/thr/*/*/epoch.stats)
smp=$(sed -n 's/^samples \([0-9]*\)$/\1/p' "$T"/thr/*/*/epoch.stats)
[ "${nleaf:-0}" -ge 500 ] && [ $((wleaf * 1000)) -ge $((nleaf * 995)) ] &&
	pass "threads: $wleaf of $nleaf leaf samples walked whole through runner and start_thread to clone3" ||
	fail "threads: leaf samples walked whole through runner and start_thread to clone3 (99.5%)" "$w"
[ -n "$cut" ] && [ -n "$smp" ] && [ $((cut * 10)) -ge $((smp * 8)) ] && [ "$cut" -le "$smp" ] &&
	pass "threads: $cut of $smp samples' copies cut at their thread's stack top (epoch.stats)" ||
	fail "threads: most copies cut at their thread's stack top (epoch.stats stack_copies_cut)" \
		"cut '$cut' of '$smp'"

# 7. CSV
# (warnings, such as samples of no image on a busy machine, go to stderr)
out=$("$P" -db "$T/db" -callers leaf -csv 2>"$T/csv.err")
head -1 <<<"$out" | grep -qx 'depth,caller,image,cpu-clock' && [ "$(grep -c '^1,' <<<"$out")" -eq 3 ] &&
	pass "-callers -csv: a header and the three callers" ||
	fail "-callers -csv: a header and the three callers" "$out $(cat "$T/csv.err")"

# 8. refusals
out=$("$P" -db "$T/db" -callers nosuch 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "no procedure 'nosuch'" <<<"$out" && pass "-callers of no such procedure: error" ||
	fail "-callers of no such procedure: error" "rc=$rc $out"
out=$("$P" -db "$T/db" -depth 2 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q -- '-depth goes with -callers' <<<"$out" && pass "-depth alone: usage error" ||
	fail "-depth alone: usage error" "rc=$rc $out"
# -pid where no stack is kept per process: one section, of every process
out=$("$P" -db "$T/db" -callers leaf callers -pid -json 2>&1)
python3 -c '
import json, sys
d = json.load(sys.stdin)
p = d["procedures"]
assert len(p) == 1 and "pid" not in p[0] and p[0]["procedure"] == "leaf", p
' <<<"$out" && pass "-callers -pid, no stack kept per process: one section, no pid" ||
	fail "-callers -pid, no stack kept per process: one section, no pid" "$out"
out=$("$P" -db "$T/db" -inclusive -by comm 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'not by -by' <<<"$out" && pass "-inclusive -by: usage error" ||
	fail "-inclusive -by: usage error" "rc=$rc $out"
out=$("$P" -db "$T/db" -inclusive libc.so.6 2>&1); rc=$?
[ $rc -eq 2 ] && pass "-inclusive IMAGE: usage error" || fail "-inclusive IMAGE: usage error" "rc=$rc $out"
out=$("$P" -db "$T/db" -callers leaf -callees leaf 2>&1); rc=$?
[ $rc -eq 2 ] && pass "-callers with -callees: usage error" || fail "-callers with -callees: usage error" "rc=$rc $out"
out=$("$REC" -db "$T/u" -stack-bytes 100 -- true 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'multiple of 8' <<<"$out" && [ ! -e "$T/u" ] &&
	pass "-stack-bytes 100: usage error before the run" ||
	fail "-stack-bytes 100: usage error before the run" "rc=$rc $out"
"$REC" -db "$T/flat" -quiet -- "$T/callers" ratio 1 2>/dev/null
out=$("$P" -db "$T/flat" -callers leaf 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'no call stacks' <<<"$out" && pass "an epoch recorded without -stacks: says so" ||
	fail "an epoch recorded without -stacks: says so" "rc=$rc $out"
# a corrupt stacks file: a warning naming it, left out
cp -R "$T/db" "$T/bad"
f=$(ls "$T"/bad/*/*/epoch.stacks)
printf 'DCPISTKSgarbage' >"$f"
out=$("$P" -db "$T/bad" -callers leaf 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'could not be read' <<<"$out" && grep -q 'no call stacks' <<<"$out" &&
	pass "a corrupt epoch.stacks: a warning, left out, nothing made up" ||
	fail "a corrupt epoch.stacks: a warning, left out, nothing made up" "rc=$rc $out"

# 9. hostile stacks (a user controls its stack): a fake stack that loops
#    into the same code, one of kernel addresses, garbage, a recursion
#    deeper than any copy.  Every sample is counted flat as ever; the walks
#    end where they must, bounded, and no user walk yields a kernel frame.
cc -O2 -o "$T/hostile" "$DCPI_ROOT/tests/workloads/hostile_stack.c" || fail "build hostile_stack"
for m in loop:cut,copy\ ran\ out kernel:refused garbage:refused,no\ unwind\ rule deep:cut,copy\ ran\ out \
	unmapped:copy\ ran\ out,refused,no\ unwind\ rule; do
	mode=${m%%:*} want=${m#*:}
	"$REC" -db "$T/h.$mode" -stacks -quiet -- "$T/hostile" "$mode" 150 2>/dev/null
	"$P" -db "$T/h.$mode" -stacks -json -keep 100000 >"$T/h.json" 2>/dev/null
	python3 - "$T/h.json" "$want" <<'EOF' && pass "hostile stack ($mode): every sample kept, walks end as they must ($want)" ||
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2].split(",")
P = d["procedures"]
tot = d["events"][0]["total"]
got = sum(r["counts"][0] for r in d["rows"]) + d["other"]["counts"][0]
assert got == tot == d["samples"] > 50, (got, tot, d["samples"])
spin = [r for r in d["rows"] if any(P[i]["procedure"] in ("spin_on", "deep") for i in r["frames"])]
n = sum(r["counts"][0] for r in spin if r["end"] in want)
assert n >= 0.8 * tot, (n, tot, [(r["end"], r["counts"]) for r in spin][:5])
# the rest: samples before the fake stack was in place (a real, whole stack)
assert all(r["end"] in want + ["whole"] for r in spin), [(r["end"], r["counts"]) for r in spin][:5]
for r in spin:
    kinds = [P[i]["image"].startswith("[kernel") for i in r["frames"]]  # outermost first
    assert kinds == sorted(kinds), r   # kernel frames only at the sampled end
    assert len(r["frames"]) <= 128
EOF
		fail "hostile stack ($mode): every sample kept, walks end as they must ($want)" "$(head -c 2000 "$T/h.json")"
done

# 10. the daemon: dcpid -stacks, system-wide, the same question
if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
else
	# -bypid callers: the callers processes' stacks are kept per process too
	start_dcpid "$T/d" -stacks -bypid callers -merge 3600 || fail "dcpid -stacks starts"
	# an ordinary user's hostile stacks beside it, all the while
	chmod 755 "$T" "$T/hostile"
	for m in loop kernel garbage deep unmapped; do as_nobody "$T/hostile" "$m" 400 & done
	"$T/callers" ratio 18 1.5 "$T/ratio.times" & pa=$!
	"$T/callers" looper 20 & pb=$!
	wait
	"$DCPI_BIN/dcpictl" -db "$T/d" -timeout 60 flush >/dev/null 2>&1
	# The truth is the CPU time the program measured in each caller (a
	# timer's samples measure time, not work), within 5 points: nine
	# programs share the two CPUs (and, in CI, two CPU hogs), and
	# system-wide timer samples fall on whichever runs when the timer
	# fires.  Six runs of this section beside two hogs (2026-11-30) put
	# the measured shares within 0.4 point of the work's 60/30/10 and
	# dcpid's within 0.5 to 1.9 points of them; against the work, earlier
	# hand runs put six at 56.6 to 61.7% and one at 8.5 to 13.3%, and one
	# CI run six at 65.5% and one at 6.6% (its CPU times not kept: cause
	# not found).  dcpi record's runs above keep 3.
	want=$(python3 -c '
import sys
v = open(sys.argv[1]).read().split()
d = dict(zip(v[0::2], map(float, v[1::2])))
print(" ".join("%s=%.2f" % (k, 100 * x / sum(d.values())) for k, x in d.items()))' "$T/ratio.times")
	out=$("$P" -db "$T/d" -callers leaf "$T/callers" -json 2>&1)
	s3=$(shares <<<"$out")
	near "$s3" "$want" 5 && pass "dcpid -stacks: six, three, one at their CPU time's shares within 5 points ($s3; $want)" ||
		fail "dcpid -stacks: six, three, one at their CPU time's shares within 5 points" "$s3; $want; $out"
	# per process: -pid keeps them apart, EPOCH/pid=N chooses one
	out=$("$P" -db "$T/d" -callers leaf "$T/callers" -pid -json 2>&1)
	printf '%s' "$out" >"$T/pid.json"
	python3 - "$pa" "$T/pid.json" "$want" <<'EOF2' && pass "-callers leaf -pid: one section, the ratio process's, at its CPU time's shares within 5 points" ||
import json, sys
d = json.load(open(sys.argv[2]))
p = d["procedures"]
assert len(p) == 1 and p[0]["pid"] == int(sys.argv[1]), [(x.get("pid"), x["procedure"]) for x in p]
got = {r["procedure"]: r["percent"][0] for r in p[0]["rows"] if r["depth"] == 1}
want = {k: float(v) for k, v in (w.split("=") for w in sys.argv[3].split())}
assert set(got) == set(want) and all(abs(got[k] - want[k]) <= 5 for k in want), (got, want)
EOF2
		fail "-callers leaf -pid: one section, the ratio process's" "$out"
	"$P" -db "$T/d" -inclusive -json -keep 100000 >"$T/all.json" 2>&1
	"$P" -db "$T/d" -inclusive -pid -json -keep 100000 >"$T/byp.json" 2>&1
	python3 - "$pa" "$pb" "$T/all.json" "$T/byp.json" "$T/callers" <<'EOF2' && pass "-inclusive -pid: main of each process, adding up to main's count; get_next_random in the looper's alone" ||
import json, sys
pa, pb = int(sys.argv[1]), int(sys.argv[2])
a, b = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
# this test's own program (another run of it may sample beside it: system-wide)
main = [r for r in b["rows"] if r["procedure"] == "main" and r["image"] == sys.argv[5]]
assert sorted(r["pid"] for r in main) == sorted([pa, pb]), main
want = [r for r in a["rows"] if r["procedure"] == "main" and r["image"] == sys.argv[5]][0]
assert sum(r["inclusive"]["counts"][0] for r in main) == want["inclusive"]["counts"][0]
gnr = [r for r in b["rows"] if r["procedure"] == "get_next_random" and r["image"] == sys.argv[5]]
assert [r["pid"] for r in gnr] == [pb], gnr
EOF2
		fail "-inclusive -pid: main of each process, adding up to main's count" "$(head -c 3000 "$T/byp.json")"
	e=$(ls "$T/d" | grep '^2' | sort | tail -1)
	out=$("$DCPI_BIN/dcpidiff" -db "$T/d" -inclusive -json "$e/pid=$pa" "$e/pid=$pb" 2>&1)
	six=$(sed 's/.*six=\([0-9.]*\).*/\1/' <<<"$want")
	# six's share of process A: its CPU time's share of the three callers'
	# (the process does little else)
	python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
assert abs(r["six"]["share_a"] - float(sys.argv[1])) <= 5 and r["six"]["b"] == 0, r["six"]
assert r["get_next_random"]["a"] == 0 and r["get_next_random"]["share_b"] >= 95, r["get_next_random"]
' "$six" <<<"$out" && pass "dcpidiff -inclusive EPOCH/pid=A EPOCH/pid=B: each process's own stacks" ||
		fail "dcpidiff -inclusive EPOCH/pid=A EPOCH/pid=B: each process's own stacks" "$out"
	out=$("$DCPI_BIN/dcpistats" -db "$T/d" -inclusive -json "$e/pid=$pb" 2>&1)
	python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
assert "six" not in r and r["get_next_random"]["a"]["values"][0] > 0, sorted(r)
' <<<"$out" && pass "dcpistats -inclusive EPOCH/pid=N: that process's stacks alone" ||
		fail "dcpistats -inclusive EPOCH/pid=N: that process's stacks alone" "$out"
	"$DCPI_BIN/dcpictl" -db "$T/d" status >/dev/null 2>&1 &&
		pass "dcpid -stacks answers after five hostile stacks of user nobody" ||
		fail "dcpid -stacks answers after five hostile stacks of user nobody"
	"$DCPI_BIN/dcpictl" -db "$T/d" -timeout 10 quit >/dev/null 2>&1
fi

done_testing
