#!/usr/bin/env bash
# A long-lived JIT under the daemon (issue 24: "a new, larger image each
# merge"): node compiling new functions all the time, merged every second.
# Its pseudo-images are its first (named by content) and one grown image
# replaced at each merge, not one per merge; their no-code ranges (a perf
# map gives no bytes) are holes, not zeros on disk; and every merge's
# profile still names its procedures in the image it names.
. "$DCPI_ROOT/tests/tap.sh"
require_root
command -v node >/dev/null || { skip "node is not installed"; done_testing; }

cat >"$T/grow.js" <<'JS'
// new functions all the time (each a distinct source, so each compiled)
const dur = +process.argv[2] || 4000;
let t0 = Date.now(), k = 0, x = 0;
while (Date.now() - t0 < dur) {
  for (let j = 0; j < 10; j++, k++) {
    const f = new Function('n', `let s = ${k}; for (let i = 0; i < n; i++) s = (s * ${k % 97 + 3} + i) % 1000033; return s;`);
    for (let r = 0; r < 2000; r++) x += f(40);
  }
}
console.log(k, x > 0);
JS
DB=$T/db
start_dcpid "$DB" -merge 1 || { fail "dcpid starts"; done_testing; }
(cd "$T" && exec node --perf-basic-prof "$T/grow.js" 5000 >/dev/null) & npid=$!
at_exit "rm -f /tmp/perf-$npid.map"
wait $npid
"$DCPI_BIN/dcpictl" -db "$DB" flush >/dev/null || fail "flush"
profs=$(ls "$DB"/*/*/perf-"$npid".map-*.prof 2>/dev/null)
nprof=$(wc -w <<<"$profs")
ids=$(for p in $profs; do "$DCPI_BIN/dcpicat" -header "$p" | sed -n 's/^build-id: //p'; done | sort -u)
nids=$(wc -w <<<"$ids")
merges=$(grep -c "merged" "$DB"/dcpid-*.log 2>/dev/null)
echo "# node $npid: $nprof profiles naming $nids pseudo-images"
[ "$nids" -ge 1 ] && [ "$nids" -le 2 ] &&
	pass "one pseudo-image by content and one grown, replaced at each merge ($nids)" ||
	fail "at most two pseudo-images for one process" "$nids: $ids"
alloc=0 apparent=0
for id in $ids; do
	f="$DB/.build-id/${id:0:2}/${id:2}"
	alloc=$((alloc + $(stat -c '%b * %B' "$f")))
	apparent=$((apparent + $(stat -c '%s' "$f")))
done
echo "# pseudo-images: $apparent bytes, $alloc on disk"
[ "$apparent" -gt 0 ] && [ $((alloc * 2)) -lt "$apparent" ] &&
	pass "the no-code ranges are holes: $alloc bytes on disk of $apparent" ||
	fail "the no-code ranges are holes" "$alloc on disk of $apparent"
# every sample in the map's images named (a profile whose image lost the
# procedures at its offsets would show them unnamed)
csv=$("$DCPI_BIN/dcpiprof" -db "$DB" -i -csv 2>"$T/prof.err")
all=$(awk -F, -v m="/tmp/perf-$npid.map" 'NR > 1 && $1 == m { s += $NF } END { print s + 0 }' <<<"$csv")
named=$(awk -F, -v m="/tmp/perf-$npid.map" 'NR > 1 && $1 == m && $2 ~ /^JS:/ { s += $NF } END { print s + 0 }' <<<"$csv")
echo "# $named of the map's $all samples named"
[ "$all" -gt 0 ] && [ "$named" -eq "$all" ] &&
	pass "every sample of the $nprof profiles named in the image its profile names ($named)" ||
	fail "every sample of the map's profiles named" "$named of $all; $(grep "perf-$npid" <<<"$csv" | grep -v ',JS:' | head -3)"
done_testing
