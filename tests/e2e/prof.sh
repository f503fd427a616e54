#!/usr/bin/env bash
# dcpiprof on real profiles: the daemon samples workloads built here with
# -g, and the report must say what their code is known to do.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
	done_testing
fi

DB=$T/db
P="$DCPI_BIN/dcpiprof"
for w in fractions randloop spin; do build_workload "$w" || fail "build $w"; done
c++ -g -O1 -o "$T/cxxwork" "$DCPI_ROOT/tests/workloads/cxxwork.cc" || fail "build cxxwork"
# a stripped copy whose symbols live only in a separate debug file, by build-id
cp "$T/fractions" "$T/stripped"
objcopy --only-keep-debug "$T/stripped" "$T/stripped.debug"
strip --strip-all "$T/stripped"
bid=$(readelf -n "$T/stripped" | sed -n 's/.*Build ID: //p')
mkdir -p "$T/debug/.build-id/${bid:0:2}"
mv "$T/stripped.debug" "$T/debug/.build-id/${bid:0:2}/${bid:2}.debug"
# images that will be gone, rebuilt or corrupt by report time
for v in gone rebuilt corrupt; do cp "$T/spin" "$T/$v"; done

# per-process libc and randloop profiles: the rand() check looks at the
# randloop process alone, whatever else runs libc meanwhile
start_dcpid "$DB" -merge 3600 -bypid libc.so.6 -bypid "$T/randloop" ||
	{ fail "dcpid starts"; done_testing; }
"$T/fractions" 60
"$T/randloop" 40 &
rpid=$!
wait $rpid
"$T/cxxwork" 400
"$T/stripped" 30
for v in gone rebuilt corrupt; do "$T/$v" 150; done
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null || fail "quit"

rm "$T/gone"
sed 's/spin_hot/spin_hqt/' "$DCPI_ROOT/tests/workloads/spin.c" >"$T/rebuilt.c"
cc -g -O1 -o "$T/rebuilt" "$T/rebuilt.c"
head -c 300 "$T/spin" >"$T/corrupt"

export DCPIDB=$DB

# --- by image ----------------------------------------------------------------
out=$("$P" 2>&1); rc=$?
[ $rc -eq 0 ] && pass "dcpiprof by image runs" || fail "dcpiprof by image runs" "$out"
grep -q "^Column" <<<"$out" && grep -qE "^cpu-clock|^cycles" <<<"$out" &&
	pass "header lists events with totals and periods" || fail "header lists events" "$out"
grep -qF " $T/fractions" <<<"$out" && grep -q "kernel.kallsyms" <<<"$out" &&
	pass "images named by their paths, the kernel by name" || fail "images named" "$out"
sum=$(awk '/^=+$/ { t = 1; next } t && NF >= 4 { s += $2 } END { printf "%.0f", s }' <<<"$out")
[ "$sum" -ge 99 ] && [ "$sum" -le 101 ] && pass "image shares add up to 100% ($sum)" ||
	fail "image shares add up to 100%" "$sum"

# --- by procedure: known fractions --------------------------------------------
out=$("$P" "$T/fractions")
share() { # share of procedure $2 among work_a/b/c in report $1, in percent
	awk -v want="$2" '$4 ~ /^work_[abc]$/ { n[$4] = $1; t += $1 }
		END { if (t) printf "%.1f", 100 * n[want] / t; else print 0 }' <<<"$1"
}
a=$(share "$out" work_a) b=$(share "$out" work_b) c=$(share "$out" work_c)
echo "# work_a $a% (60), work_b $b% (30), work_c $c% (10)"
near() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x - y <= 5 && y - x <= 5) }'; }
near "$a" 60 && near "$b" 30 && near "$c" 10 && pass "procedure shares within 5 points of 60/30/10" ||
	fail "procedure shares within 5 points of 60/30/10" "$out"
top=$(awk '/^=+$/ { getline; getline; print $4; exit }' <<<"$out")
[ "$top" = work_a ] && pass "hottest procedure first" || fail "hottest procedure first" "$top"

# --- libc on top ------------------------------------------------------------------
# the randloop process's procedures, in its own image and in libc
out=$("$P" -pid "$T/randloop" libc.so.6)
top=$(awk -v p="(pid $rpid)" '/^=+$/ { t = 1; getline; next }
	t && substr($0, length($0) - length(p) + 1) == p { print $4, $5; exit }' <<<"$out")
grep -qE '^(__)?rand(om)?(_r)? .*libc' <<<"$top" && pass "rand() loop: libc's random on top ($top)" ||
	fail "rand() loop: libc's random on top" "$out"

# --- C++ names ------------------------------------------------------------------------
out=$("$P" "$T/cxxwork")
grep -qF "work::Mixer::churn(unsigned long)" <<<"$out" && pass "C++ names demangled" ||
	fail "C++ names demangled" "$out"

# --- stripped, with separate debug info by build-id ------------------------------
out=$(DCPI_DEBUG_PATH= "$P" "$T/stripped" 2>&1)
! grep -q " work_a " <<<"$out" && grep -qE " stripped@0x[0-9a-f]+ " <<<"$out" &&
	! grep -q "\[stripped+0x" <<<"$out" &&
	pass "stripped image without debug info: its functions named from .eh_frame, no lumps" ||
	fail "stripped image without debug info: functions from .eh_frame" "$out"
out=$(DCPI_DEBUG_PATH=$T/debug "$P" "$T/stripped" 2>&1)
grep -q " work_a " <<<"$out" && pass "stripped image: symbols from the build-id debug file" ||
	fail "stripped image: symbols from the build-id debug file" "$out"

# --- kernel ---------------------------------------------------------------------------
out=$("$P" -i kernel 2>&1)
awk '/^=+$/ { t = 1; getline; next } t && $4 !~ /^\[/ { found = 1 } END { exit !found }' <<<"$out" &&
	pass "kernel procedures named from the epoch's kallsyms" || fail "kernel procedures named" "$out"

# --- formats and options ------------------------------------------------------------------
out=$("$P" -json -keep 5)
if command -v python3 >/dev/null; then
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["mode"]=="images"; assert len(d["rows"])==5; assert d["events"][0]["total"]>0' <<<"$out" &&
		pass "-json is valid JSON with the documented keys" || fail "-json is valid JSON" "$out"
else
	skip "python3 not installed: cannot parse -json"
fi
out=$("$P" -csv -i -keep 3)
head -1 <<<"$out" | grep -qE '^image,procedure,pid,' && [ "$(wc -l <<<"$out")" -eq 4 ] &&
	pass "-csv: header and 3 rows" || fail "-csv: header and 3 rows" "$out"
# fractions' procedures have 60, 30 and 10% (checked above, within 5 points)
rows=$("$P" -cutoff 20 "$T/fractions" | awk '/^=+$/ { t = 1; getline; next } t { printf "%s ", $4 }')
m=$("$P" "$T/fractions" | awk '/^=+$/ { t = 1; getline; next } t' | wc -l)
[ "$rows" = "work_a work_b " ] && [ "$m" -gt 2 ] && pass "-cutoff 20 keeps work_a and work_b of $m rows" ||
	fail "-cutoff 20 keeps work_a and work_b" "rows: $rows of $m"
out=$("$P" -epoch all 2>&1) && pass "-epoch all" || fail "-epoch all" "$out"

# --- bad input ------------------------------------------------------------------------
expect() { # expect RC PATTERN NAME -- command...
	local want=$1 pat=$2 name=$3; shift 4
	local out rc
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq "$want" ] && grep -qiE "$pat" <<<"$out"; then pass "$name"; else fail "$name" "rc=$rc: $out"; fi
}
mkdir "$T/empty"
expect 1 "no epochs" "a database with no epochs" -- "$P" -db "$T/empty"
expect 1 "no profile of image 'nosuch'" "an unknown image" -- "$P" nosuch
expect 1 "gone|no such file" "an image that is gone" -- "$P" "$T/gone"
expect 1 "rebuilt|changed|build-id" "an image rebuilt since profiling" -- "$P" "$T/rebuilt"
expect 1 "corrupt|ELF|truncated|not" "a corrupt image" -- "$P" "$T/corrupt"
expect 1 "no epoch '1999" "an unknown epoch" -- "$P" -epoch 19990101T000000Z
expect 1 "no event 'bogus'" "-sort of an event not sampled" -- "$P" -sort bogus
expect 2 "keep" "-keep x" -- "$P" -keep x
expect 2 "" "an unknown option" -- "$P" -bogus
out=$("$P" -i 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "warning: $T/rebuilt" <<<"$out" && pass "-i reports, warning about the rebuilt image" ||
	fail "-i reports, warning about the rebuilt image" "rc=$rc"
done_testing
