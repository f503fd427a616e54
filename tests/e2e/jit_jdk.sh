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
done_testing
