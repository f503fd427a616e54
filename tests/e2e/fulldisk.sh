#!/usr/bin/env bash
# A full disk loses nothing: merges fail with a clear error, the daemon
# keeps the samples in memory, and once there is room they all land.
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "needs root (dcpid samples system-wide, and the test mounts a small tmpfs)"
	done_testing
fi
mkdir -p "$T/fs"
if ! mount -t tmpfs -o size=16m tmpfs "$T/fs" 2>/dev/null; then
	skip "cannot mount a tmpfs here"
	done_testing
fi
at_exit "umount -l '$T/fs'"
DB=$T/fs/db
build_workload spin || fail "build spin"

start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }
pass "dcpid starts on a small file system"
# the log ends 20 bytes short of a page: the next line dcpid writes will
# not fit once the disk is full (a part of it would, on the old daemon)
LOG=$DB/dcpid-$(dcpi_host).log
size=$(stat -c %s "$LOG")
pad=$(( (size / 4096 + 2) * 4096 - 20 - size - 1 ))
{ printf 'pad '; head -c $((pad - 4)) /dev/zero | tr '\0' x; echo; } >>"$LOG"
# fill it up
dd if=/dev/zero of="$T/fs/filler" bs=64k 2>/dev/null
avail=$(df --output=avail "$T/fs" | tail -1 | tr -d ' ')
[ "$avail" -eq 0 ] && pass "file system full" || fail "file system full" "$avail KiB left"

"$T/spin" 600
out=$("$DCPI_BIN/dcpictl" -db "$DB" flush 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qi "no space left" <<<"$out" && pass "flush on a full disk fails, saying why" ||
	fail "flush on a full disk fails, saying why" "rc=$rc $out"
st=$("$DCPI_BIN/dcpictl" -db "$DB" status 2>&1)
pending=$(sed -n 's/^pending: //p' <<<"$st")
[ "${pending:-0}" -gt 0 ] && pass "samples kept in memory ($pending pending)" ||
	fail "samples kept in memory" "$st"
ls "$DB"/*/*/*.tmp.* >/dev/null 2>&1 && fail "no temporary files left behind" "$(ls "$DB"/*/*)" ||
	pass "no temporary files left behind"

out=$("$DCPI_BIN/dcpictl" -db "$DB" quit 2>&1); rc=$?
[ $rc -eq 1 ] && "$DCPI_BIN/dcpictl" -db "$DB" status >/dev/null 2>&1 &&
	pass "quit on a full disk refuses to stop and lose samples" ||
	fail "quit on a full disk refuses to stop and lose samples" "rc=$rc $out"

# no line of the log cut in two: what did not fit went to syslog instead
bad=$(grep -cvE '^([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} dcpid\[[0-9]+\]: |pad x)' "$LOG")
[ "$bad" -eq 0 ] && [ "$(tail -c 1 "$LOG" | od -An -c | tr -d ' ')" = '\n' ] &&
	pass "no log line cut in two on the full disk" ||
	fail "no log line cut in two on the full disk" "$(grep -vE '^([0-9]{4}-|pad x)' "$LOG" | head -3)"
rm -f "$T/fs/filler"
check "flush succeeds once there is room" "$DCPI_BIN/dcpictl" -db "$DB" flush
prof=$(profile_of "$DB" "$T/spin")
period=$(sed -n 's/^event: [^ ]* period \([0-9]*\).*/\1/p' <<<"$st" | head -1)
if [ -n "$prof" ] && [ -n "$period" ]; then
	n=$(profile_samples "$prof")
	want=$((660 * 1000000 / period))
	echo "# spin: $n samples after the disk filled and emptied, $want expected"
	[ "$n" -ge $((want * 6 / 10)) ] && pass "the samples taken while the disk was full landed ($n of $want)" ||
		fail "the samples taken while the disk was full landed" "$n of $want"
else
	fail "spin's profile exists after the disk emptied" "$(ls -R "$DB")"
fi
check "every profile readable" "$DCPI_BIN/dcpicat" -header "$DB"/*/*/*.prof
"$DCPI_BIN/dcpictl" -db "$DB" quit >/dev/null 2>&1
done_testing
