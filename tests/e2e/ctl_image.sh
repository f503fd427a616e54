#!/usr/bin/env bash
# End to end: dcpictl image tells the daemon about an image a program
# loaded itself (copied into anonymous memory): samples there are then
# attributed to the file and named from its symbols.
. "$DCPI_ROOT/tests/tap.sh"
require_root

cat >"$T/spin.c" <<'C'
long spin_loaded(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
C
cc -O1 -shared -fPIC -o "$T/spin.so" "$T/spin.c" &&
	cc -O1 -o "$T/selfload" "$DCPI_ROOT/tests/workloads/selfload.c" ||
	{ fail "build the self-loading workload"; done_testing; }
off=$(nm "$T/spin.so" | awk '$3 == "spin_loaded" { print $1 }')
# the executable PT_LOAD maps file offset = address in such a small object
seg=$(readelf -lW "$T/spin.so" | awk '$1 == "LOAD" && $7 ~ /E/ { print $2, $3; exit }')
[ -n "$off" ] && [ "$(cut -d' ' -f1 <<<"$seg")" = "$(cut -d' ' -f2 <<<"$seg")" ] ||
	{ skip "spin.so's code is not at its file offset here ($seg)"; done_testing; }

DB=$T/db
# not through check: its subshell would lose start_dcpid's at_exit quit
start_dcpid "$DB" -merge 3600 && pass "dcpid starts" || { fail "dcpid starts"; done_testing; }
"$T/selfload" "$T/spin.so" "$off" "$T/ready" 700 1500 & spid=$!
for i in $(seq 50); do [ -s "$T/ready" ] && break; sleep 0.1; done
read -r pid base <"$T/ready"
out=$("$DCPI_BIN/dcpictl" -db "$DB" image "$pid" "$base" "$T/spin.so" 2>&1) &&
	pass "dcpictl image $pid $base spin.so" || fail "dcpictl image" "$out"
wait $spid
out=$("$DCPI_BIN/dcpictl" -db "$DB" image "$pid" 0x1000 relative/path 2>&1); rc=$?
[ $rc -ne 0 ] && pass "a bad image request is refused" || fail "a bad image request is refused" "$out"
out=$("$DCPI_BIN/dcpictl" -db "$DB" image 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "PID START PATH" <<<"$out" && pass "image without arguments: usage error" ||
	fail "image without arguments: usage error" "rc=$rc $out"
check "dcpiflush" "$DCPI_BIN/dcpiflush" -db "$DB"
csv=$("$DCPI_BIN/dcpiprof" -db "$DB" -i -csv 2>/dev/null)
n=$(awk -F, -v img="$T/spin.so" '$1 == img && $2 == "spin_loaded" { s += $NF } END { print s + 0 }' <<<"$csv")
echo "# spin_loaded: $n samples"
[ "$n" -gt 100 ] && pass "samples in the self-loaded code are spin_loaded in spin.so" ||
	fail "samples in the self-loaded code are named" "$(grep -i spin <<<"$csv")"
grep -q "image $T/spin.so in process $pid" "$DB"/dcpid-*.log && pass "the daemon logs the image" ||
	fail "the daemon logs the image" "$(tail -5 "$DB"/dcpid-*.log)"
done_testing
