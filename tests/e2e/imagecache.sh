#!/usr/bin/env bash
# dcpid -imagecache keeps the code that ran: after the program is rebuilt
# in place, the reports still name its procedures, from the cached copy,
# and say so.  Without the cache they refuse to guess.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
	done_testing
fi
DB=$T/db
build_workload spin || fail "build spin"
bid=$(readelf -n "$T/spin" | sed -n 's/.*Build ID: //p')

start_dcpid "$DB" -merge 3600 -imagecache || { fail "dcpid -imagecache starts"; done_testing; }
"$T/spin" 400
check "flush" "$DCPI_BIN/dcpictl" -db "$DB" flush
f="$DB/.build-id/${bid:0:2}/${bid:2}"
[ -f "$f" ] && cmp -s "$f" "$T/spin" && pass "spin cached by build-id in DB/.build-id" ||
	fail "spin cached by build-id in DB/.build-id" "$(ls -R "$DB/.build-id" 2>&1 | head)"
[ "$(stat -c %a "$DB/.build-id")" = 700 ] && pass "the cache is private" || fail "the cache is private"
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null

# rebuild in place: another build-id at the same path
sed 's/spin_hot/spin_hqt/' "$DCPI_ROOT/tests/workloads/spin.c" >"$T/spin2.c"
cc -g -O1 -o "$T/spin" "$T/spin2.c"
out=$("$DCPI_BIN/dcpiprof" -db "$DB" "$T/spin" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q " spin_hot " <<<"$out" && ! grep -q spin_hqt <<<"$out" &&
	pass "after a rebuild, dcpiprof names the procedures of the code that ran" ||
	fail "after a rebuild, dcpiprof names the procedures of the code that ran" "rc=$rc $out"
grep -q "warning: .*copy" <<<"$out" && pass "and says it used the cached copy" ||
	fail "and says it used the cached copy" "$out"
out=$("$DCPI_BIN/dcpilist" -db "$DB" -asm spin_hot "$T/spin" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^ +[0-9]+ .*0x[0-9a-f]+ " <<<"$out" &&
	pass "dcpilist lists the cached code" || fail "dcpilist lists the cached code" "rc=$rc $out"

rm -rf "$DB/.build-id"
out=$("$DCPI_BIN/dcpiprof" -db "$DB" "$T/spin" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qiE "rebuilt|changed|build-id" <<<"$out" &&
	pass "without the cache, the rebuilt image is refused, not misread" ||
	fail "without the cache, the rebuilt image is refused" "rc=$rc $out"
done_testing
