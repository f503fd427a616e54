#!/usr/bin/env bash
# End to end: JIT code named from node's perf map (--perf-basic-prof), under
# dcpi record and under the daemon.  The shares of the two hot JS functions
# must match perf report's on the same run, the procedures must still be
# named after the map file is deleted, and the pseudo-image must be in the
# database.  A hostile map (a symlink) of a running process is refused with
# a log line.
. "$DCPI_ROOT/tests/tap.sh"

command -v node >/dev/null || { skip "node is not installed"; done_testing; }
REC=$(cd "$DCPI_BIN" && pwd)/dcpi-record
out=$("$REC" -quiet -db "$T/probe" -- true 2>&1) ||
	{ skip "perf_event_open is not available here: $out"; done_testing; }

cat >"$T/hot.js" <<'JS'
function churn(n) { let s = 0; for (let i = 0; i < n; i++) { s = (s * 31 + i) % 1000003; } return s; }
function mix(n) { let s = 1.5; for (let i = 0; i < n; i++) { s = Math.sqrt(s * s + i) % 977.3; } return s; }
let t = Date.now(), x = 0;
while (Date.now() - t < (+process.argv[2] || 2000)) { x += churn(200000); x += mix(60000); }
console.log(x > 0);
JS

# Samples of procedures matching RE in a dcpiprof -csv report.
csv_sum() { awk -F, -v re="$2" 'NR > 1 && $2 ~ re { s += $NF } END { print s + 0 }' <<<"$1"; }
# Percent (integer) of a in a + b.
pct() { echo $(( $1 * 100 / ($1 + $2 > 0 ? $1 + $2 : 1) )); }

# --- dcpi record, perf record on the same run -----------------------------------
cd "$T" || exit 1 # node may write logs (isolate-*.log) where it runs: here, not the tree
DB=$T/db
have_perf=0
if command -v perf >/dev/null && perf record -q -e cpu-clock -o "$T/p0" -- true >/dev/null 2>&1; then
	have_perf=1
	# in $T: node writes its isolate-*-v8.log into the current directory
	(cd "$T" && "$REC" -quiet -db "$DB" -- perf record -q -e cpu-clock -F 2000 \
		-o "$T/perf.data" -- node --perf-basic-prof "$T/hot.js" >"$T/out" 2>"$T/err")
else
	(cd "$T" && "$REC" -quiet -db "$DB" -- node --perf-basic-prof "$T/hot.js" >"$T/out" 2>"$T/err")
fi
rc=$?
[ $rc -eq 0 ] && pass "dcpi record -- node --perf-basic-prof" || fail "dcpi record -- node" "rc=$rc $(cat "$T/err")"
map=$(grep -l 'JS:\*churn' /tmp/perf-*.map 2>/dev/null | xargs -r ls -t | head -1)
at_exit "rm -f $map"
csv=$("$DCPI_BIN/dcpiprof" -db "$DB" -i -csv 2>/dev/null)
jit=$(csv_sum "$csv" '^JS:')
node_all=$(awk -F, 'NR > 1 && ($1 ~ /perf-[0-9]+\.map$/ || $1 ~ /\/node$/) { s += $NF } END { print s + 0 }' <<<"$csv")
churn=$(csv_sum "$csv" '^JS:.churn ')
mix=$(csv_sum "$csv" '^JS:.mix ')
echo "# dcpi: JS $jit of node's $node_all samples; churn $churn, mix $mix"
[ "$churn" -gt 0 ] && [ "$mix" -gt 0 ] && pass "dcpiprof names JS:*churn and JS:*mix" ||
	fail "dcpiprof names JS:*churn and JS:*mix" "$csv"
[ "$node_all" -gt 0 ] && [ $((jit * 100 / node_all)) -ge 80 ] &&
	pass "at least 80% of node's samples are in named JS code ($jit of $node_all)" ||
	fail "at least 80% of node's samples are in named JS code" "$jit of $node_all"
unk=$(awk -F, 'NR > 1 && $1 ~ /unknown/ { s += $NF } END { print s + 0 }' <<<"$csv")
[ "$unk" -le $((node_all / 20)) ] && pass "unknown samples under 5% ($unk)" ||
	fail "unknown samples under 5%" "$unk of $node_all"

if [ $have_perf -eq 1 ]; then
	rep=$(perf report -i "$T/perf.data" --comm node --sort sym --stdio 2>/dev/null)
	p_churn=$(awk '$3 ~ /^JS:.churn$/ { gsub("%", "", $1); s += $1 } END { printf "%d", s * 100 }' <<<"$rep")
	p_mix=$(awk '$3 ~ /^JS:.mix$/ { gsub("%", "", $1); s += $1 } END { printf "%d", s * 100 }' <<<"$rep")
	a=$(pct "$churn" "$mix") b=$(pct "$p_churn" "$p_mix")
	echo "# churn/(churn+mix): dcpi $a%, perf report $b% (perf: churn ${p_churn}, mix ${p_mix} in 1/100 %)"
	d=$((a > b ? a - b : b - a))
	[ "$p_churn" -gt 0 ] && [ $d -le 5 ] && pass "same shares as perf report on the same run (within 5 points)" ||
		fail "same shares as perf report on the same run" "dcpi $a% perf $b%"
else
	skip "perf record does not work here: no share comparison"
fi

# --- after the map file is gone --------------------------------------------------
rm -f "$map"
csv2=$("$DCPI_BIN/dcpiprof" -db "$DB" -i -csv 2>/dev/null)
[ "$(csv_sum "$csv2" '^JS:.churn ')" = "$churn" ] &&
	pass "still named after the map file is deleted" || fail "still named after the map is deleted" "$csv2"
prof=$(ls "$DB"/*/*/perf-*.map-*.prof | head -1)
id=$("$DCPI_BIN/dcpicat" -header "$prof" | sed -n 's/^build-id: //p')
[ -n "$id" ] && [ -f "$DB/.build-id/${id:0:2}/${id:2}" ] &&
	pass "the pseudo-image is in the database by its build-id" ||
	fail "the pseudo-image is in the database" "id=$id $(ls -R "$DB/.build-id" 2>&1)"
img=$(basename "$prof" | sed 's/-[0-9a-f]*_.*//')
addr=$("$DCPI_BIN/dcpilist" -db "$DB" "JS:*churn" "$img" 2>&1 | awk '$1 ~ /^0x/ { print $1; exit }')
list=$("$DCPI_BIN/dcpilist" -db "$DB" "$addr" "$img" 2>&1)
grep -q "no bytes" <<<"$list" && pass "dcpilist says a perf map gives no code" ||
	fail "dcpilist says a perf map gives no code" "addr=$addr $list"

# --- jitdump (node --perf-prof): code bytes, so dcpilist disassembles --------------
DB3=$T/db3
(cd "$T" && "$REC" -quiet -db "$DB3" -- node --perf-prof "$T/hot.js" 1500 >/dev/null 2>"$T/err3")
dump=$(ls "$T"/jit-*.dump 2>/dev/null | head -1)
[ -n "$dump" ] && pass "node --perf-prof wrote $(basename "$dump")" || fail "node --perf-prof wrote a jitdump"
rm -f "$dump" "$T"/*.log
csv=$("$DCPI_BIN/dcpiprof" -db "$DB3" -i -csv 2>/dev/null)
churn=$(awk -F, '$1 ~ /jit-[0-9]+\.dump$/ && $2 ~ /^JS:.churn / { s += $NF } END { print s + 0 }' <<<"$csv")
# Of the samples in JIT code (named from the dump, or not named: unknown
# or anonymous memory), the named share.  node's own code (V8's compiler,
# GC, start-up) is left out: the script runs 1.5 s of wall time, so on a
# busy machine its JS gets fewer samples beside the same start-up (73% of
# node's samples were JS beside two CPU hogs, 80% or more when idle).
all=$(awk -F, 'NR > 1 && ($1 ~ /jit-[0-9]+\.dump$/ || $1 ~ /unknown|anon/) { s += $NF } END { print s + 0 }' <<<"$csv")
named=$(awk -F, '$1 ~ /jit-[0-9]+\.dump$/ { s += $NF } END { print s + 0 }' <<<"$csv")
echo "# jitdump: $named of $all samples in JIT code named from the dump, $churn in churn"
[ "$churn" -gt 0 ] && [ $((named * 100 / (all > 0 ? all : 1))) -ge 90 ] &&
	pass "samples named from the jitdump after it is deleted ($named of $all)" ||
	fail "samples named from the jitdump" "$csv"
img=$(basename "$(ls "$DB3"/*/*/jit-*.dump-*.prof | head -1)" | sed 's/-[0-9a-f]*_.*//')
addrs=$("$DCPI_BIN/dcpilist" -db "$DB3" "JS:*churn" "$img" 2>&1 | awk '$1 ~ /^0x/ { print $1 }')
best=0 bestaddr=
for a in $addrs; do
	out=$("$DCPI_BIN/dcpilist" -db "$DB3" -asm "$a" "$img" 2>&1)
	n=$(awk '$3 ~ /^0x/ && $1 > 0 { s += $1 } END { print s + 0 }' <<<"$out")
	[ "$n" -gt "$best" ] && best=$n bestaddr=$a list=$out
done
insns=$(awk '$3 ~ /^0x/ && $4 ~ /^[a-z]/' <<<"$list" | wc -l)
echo "# dcpilist $bestaddr: $insns instructions, $best samples on them"
[ "$insns" -gt 5 ] && [ "$best" -gt 0 ] &&
	pass "dcpilist disassembles JS:*churn from the pseudo-image with samples on its instructions" ||
	fail "dcpilist disassembles JIT code" "$list"
src=$("$DCPI_BIN/dcpilist" -db "$DB3" -source "$bestaddr" "$img" 2>&1)
grep -q "^-- $T/hot.js" <<<"$src" && grep -qE '^ *[1-9][0-9]* .* 1  function churn' <<<"$src" &&
	pass "dcpilist shows JS:*churn's source line, from the dump's DEBUG_INFO" ||
	fail "dcpilist shows JS:*churn's source line" "$src"

# --- call stacks through JIT code (dcpi record -stacks) ------------------------------
# each JIT frame named from the map as the flat profile names the sample (a
# stand-in until the merge gives it the pseudo-image; one the map did not
# name yet, node writing it through a buffer, resolved at the merge as the
# flat profile's deferred samples are), and walked on through V8's frame
# pointers to node's own code
DB4=$T/db4
(cd "$T" && "$REC" -quiet -stacks -db "$DB4" -- node --perf-basic-prof "$T/hot.js" 1500 >/dev/null 2>"$T/err4")
map4=$(grep -l 'JS:\*churn' /tmp/perf-*.map 2>/dev/null | xargs -r ls -t | head -1)
[ -n "$map4" ] && at_exit "rm -f $map4"
flat=$(csv_sum "$("$DCPI_BIN/dcpiprof" -db "$DB4" -i -csv 2>/dev/null)" '^JS:.churn ')
"$DCPI_BIN/dcpiprof" -db "$DB4" -inclusive -json -keep 100000 >"$T/incl4.json" 2>/dev/null
python3 - "$T/incl4.json" "$flat" <<'EOF' && pass "stacks name JS:*churn as the flat profile does (self within 1% of its $flat samples), walked on to node's main" ||
import json, re, sys
d = json.load(open(sys.argv[1]))
flat = int(sys.argv[2])
rows = [r for r in d["rows"] if re.match(r"JS:.churn ", r["procedure"]) and re.search(r"perf-\d+\.map$", r["image"])]
self_ = sum(r["self"]["counts"][0] for r in rows)
assert flat > 0 and abs(self_ - flat) <= 0.01 * flat, (self_, flat)
main = [r for r in d["rows"] if r["procedure"] == "node::Start(int, char**)"]
# nine samples in ten reach node::Start: walks go on through the JIT frames
assert not any(r["image"] == "[anon: JIT code]" for r in d["rows"]), "stand-ins left"
assert main and main[0]["inclusive"]["counts"][0] >= 0.9 * d["events"][0]["total"], main
EOF
	fail "stacks name JS:*churn as the flat profile does, walked on to node's main" "flat $flat $(head -c 1500 "$T/incl4.json") $(cat "$T/err4")"

# --- the daemon --------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root"
	done_testing
fi
DB2=$T/db2
# not through check: its subshell would lose start_dcpid's at_exit quit
start_dcpid "$DB2" -merge 3600 && pass "dcpid starts" || { fail "dcpid starts"; done_testing; }
(cd "$T" && exec node --perf-basic-prof "$T/hot.js" 2500 >/dev/null) & npid=$!
# a process whose map is a symlink to a file it could not read
(cd "$T" && exec sh -c 'ln -s /etc/shadow /tmp/perf-$$.map; exec node --perf-basic-prof -e "let t=Date.now(); while (Date.now()-t < 2500) {}"') & spid=$!
at_exit "rm -f /tmp/perf-$npid.map /tmp/perf-$spid.map"
wait $npid $spid
rm -f "/tmp/perf-$npid.map" "/tmp/perf-$spid.map"
check "dcpiflush" "$DCPI_BIN/dcpiflush" -db "$DB2"
csv=$("$DCPI_BIN/dcpiprof" -db "$DB2" -i -csv -pid 2>/dev/null)
n=$(awk -F, -v p="$npid" 'NR > 1 && $3 == p && $2 ~ /^JS:.churn / { s += $NF } END { print s + 0 }' <<<"$csv")
[ "$n" -gt 0 ] && pass "dcpid names the JIT code of a running node ($n samples in churn)" ||
	fail "dcpid names the JIT code of a running node" "$(grep -E "perf-|,$npid," <<<"$csv" | head)"
log=$(cat "$DB2"/dcpid-*.log)
grep -q "perf map /tmp/perf-$spid.map of process $spid: a symbolic link: not read" <<<"$log" &&
	pass "a symlinked map is refused with a log line" ||
	fail "a symlinked map is refused with a log line" "$(grep -i 'perf map' <<<"$log")"
done_testing
