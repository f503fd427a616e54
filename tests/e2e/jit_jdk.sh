#!/usr/bin/env bash
# End to end: the JDK's perf map, written at exit (-XX:+DumpPerfMapAtExit):
# the samples taken while no map existed yet are kept and named once the
# map appears, and stay named after it is deleted.
. "$DCPI_ROOT/tests/tap.sh"

command -v java >/dev/null && command -v javac >/dev/null ||
	{ skip "no JDK (java and javac) installed"; done_testing; }
REC=$DCPI_BIN/dcpi-record
out=$("$REC" -quiet -db "$T/probe" -- true 2>&1) ||
	{ skip "perf_event_open is not available here: $out"; done_testing; }
cat >"$T/Hot.java" <<'JAVA'
public class Hot {
    static long churn(long n) { long s = 0; for (long i = 0; i < n; i++) { s = (s * 31 + i) % 1000003; } return s; }
    public static void main(String[] a) {
        long t = System.currentTimeMillis(), x = 0;
        while (System.currentTimeMillis() - t < 2000) x += churn(200000);
        System.out.println(x > 0);
    }
}
JAVA
javac -d "$T" "$T/Hot.java" || { fail "javac"; done_testing; }
"$REC" -quiet -db "$T/db" -- java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
	-cp "$T" Hot >"$T/out" 2>&1 && pass "dcpi record -- java -XX:+DumpPerfMapAtExit" ||
	fail "dcpi record -- java" "$(cat "$T/out")"
prof=$(ls "$T"/db/*/*/perf-*.map-*.prof 2>/dev/null | head -1)
pid=$(basename "$prof" | sed -n 's/^perf-\([0-9]*\)\.map.*/\1/p')
at_exit "rm -f /tmp/perf-$pid.map"
rm -f "/tmp/perf-$pid.map"
csv=$("$DCPI_BIN/dcpiprof" -db "$T/db" -i -csv 2>/dev/null)
churn=$(awk -F, '$1 ~ /perf-[0-9]+\.map$/ && $2 ~ /Hot::churn|Hot\.churn/ { s += $NF } END { print s + 0 }' <<<"$csv")
jit=$(awk -F, '$1 ~ /perf-[0-9]+\.map$/ { s += $NF } END { print s + 0 }' <<<"$csv")
unk=$(awk -F, '$1 ~ /unknown/ { s += $NF } END { print s + 0 }' <<<"$csv")
echo "# JIT code $jit samples ($churn in Hot.churn), unknown $unk"
[ "$churn" -gt 0 ] && pass "Hot.churn named from the map written at exit, after it is deleted" ||
	fail "Hot.churn named from the map written at exit" "$(head -20 <<<"$csv")"
[ "$unk" -le $((jit / 10)) ] && pass "unknown at most a tenth of the JIT samples ($unk)" ||
	fail "unknown at most a tenth of the JIT samples" "$unk vs $jit"

# call stacks through HotSpot's compiled code: named from the map the JDK
# writes at exit (frames kept to resolve at the merge), walked on by the
# frame pointers -XX:+PreserveFramePointer keeps
"$REC" -quiet -stacks -db "$T/s" -- java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
	-XX:+PreserveFramePointer -cp "$T" Hot >"$T/out2" 2>&1 || fail "dcpi record -stacks -- java" "$(cat "$T/out2")"
prof=$(ls "$T"/s/*/*/perf-*.map-*.prof 2>/dev/null | head -1)
pid2=$(basename "$prof" | sed -n 's/^perf-\([0-9]*\)\.map.*/\1/p')
at_exit "rm -f /tmp/perf-$pid2.map"
flat=$("$DCPI_BIN/dcpiprof" -db "$T/s" -i -csv 2>/dev/null | awk -F, '$1 ~ /perf-[0-9]+\.map$/ && $2 ~ /Hot::churn|Hot\.churn/ { s += $NF } END { print s + 0 }')
"$DCPI_BIN/dcpiprof" -db "$T/s" -inclusive -json -keep 100000 >"$T/incl.json" 2>/dev/null
python3 - "$T/incl.json" "$flat" <<'EOF' && pass "stacks name Hot.churn as the flat profile does ($flat samples), and walk on past it" ||
import json, re, sys
d = json.load(open(sys.argv[1]))
flat = int(sys.argv[2])
rows = [r for r in d["rows"] if re.search(r"Hot[.:]+churn", r["procedure"]) and re.search(r"perf-\d+\.map$", r["image"])]
self_ = sum(r["self"]["counts"][0] for r in rows)
assert flat > 0 and abs(self_ - flat) <= 0.01 * flat, (self_, flat)
# the thread's start, in libjvm, holds nine samples of churn's in ten
start = [r for r in d["rows"] if r["procedure"].startswith("JavaCalls::call_helper")]
assert start and start[0]["inclusive"]["counts"][0] >= 0.9 * flat, start[:1]
EOF
	fail "stacks name Hot.churn as the flat profile does, and walk on" "flat $flat $(head -c 1200 "$T/incl.json")"
done_testing
