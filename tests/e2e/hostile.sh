#!/usr/bin/env bash
# The root daemon in hostile places (issue 10): a database another user
# owns or can write, symlinks planted at the lock, the log, an epoch or the
# image cache; a FIFO at a profile's name; set-id programs with -shared
# -imagecache; dcpicat on a FIFO or /dev/zero.  The attacker is `nobody`,
# working in a directory under $T it owns.
. "$DCPI_ROOT/tests/tap.sh"

require_root "needs root to play the root daemon and another user (CI runs as root)"
HOST=$(dcpi_host)
build_workload spin || fail "build spin"
# a root daemon that hangs must not hang the suite
kill_holder() { local p; p=$(dcpid_pid "$1") && kill -9 "$p"; }
# dcpid DB OPTIONS... must refuse to start: in the foreground, so one that
# starts after all is ours to stop.  Sets out and rc (rc 0: it started).
start_refused() {
	local pid i
	"$DCPI_BIN/dcpid" -nodaemon "$@" >"$T/out" 2>&1 & pid=$!
	for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	if kill -0 $pid 2>/dev/null; then
		kill -9 $pid; wait $pid 2>/dev/null; rc=0
	else
		wait $pid; rc=$?
	fi
	out=$(cat "$T/out")
}

# --- 1. a database directory the attacker owns -----------------------------
EVIL=$T/evil
mkdir "$EVIL" && chown nobody:nogroup "$EVIL" && chmod 755 "$EVIL"
echo "precious" >"$T/victim"
as_nobody ln -s "$T/victim" "$EVIL/.dcpid-$HOST.lock"
as_nobody ln -s "$T/victim" "$EVIL/dcpid-$HOST.log"
start_refused -db "$EVIL"
[ $rc -ne 0 ] && grep -q "owned by uid" <<<"$out" &&
	pass "a database owned by another user is refused" ||
	fail "a database owned by another user is refused" "rc=$rc $out"
[ "$(cat "$T/victim")" = precious ] && [ "$(stat -c %a "$T/victim")" = 644 ] &&
	pass "the symlinked lock's and log's target is untouched" ||
	fail "the symlinked lock's and log's target is untouched" "$(ls -l "$T/victim"; cat "$T/victim")"

OPEN=$T/open
mkdir -m 1777 "$OPEN"
start_refused -db "$OPEN"
[ $rc -ne 0 ] && grep -q "writable by group or others" <<<"$out" &&
	pass "a world-writable database is refused" ||
	fail "a world-writable database is refused" "rc=$rc $out"
start_refused -db "$EVIL/sub"
[ $rc -ne 0 ] && grep -q "owned by uid" <<<"$out" &&
	pass "so is one inside a directory the attacker owns" ||
	fail "so is one inside a directory the attacker owns" "rc=$rc $out"

# the attacker's epoch, dated 2999, in a database that was shared with it
DB=$T/db
mkdir -m 700 "$DB"
mkdir "$DB/29990101T000000Z" && chown nobody "$DB/29990101T000000Z"
as_nobody ln -s "$T/loot" "$DB/29990101T000000Z/$HOST" 2>/dev/null
mkdir -m 777 "$T/loot"
at_exit "kill_holder '$DB'"
start_refused -db "$DB" -epoch
[ $rc -ne 0 ] && grep -q "owned by uid" <<<"$out" &&
	pass "-epoch refuses an epoch directory another user owns" ||
	fail "-epoch refuses an epoch directory another user owns" "rc=$rc $out"
[ -z "$(ls -A "$T/loot")" ] && pass "nothing written through its symlinked host directory" ||
	fail "nothing written through its symlinked host directory" "$(ls -A "$T/loot")"
rm -rf "$DB/29990101T000000Z"

# a .build-id another user owns, with a symlink where a cache directory goes
bid=$(readelf -n "$T/spin" | sed -n 's/.*Build ID: //p')
mkdir "$DB/.build-id" && chown nobody "$DB/.build-id"
as_nobody ln -s "$T/loot" "$DB/.build-id/${bid:0:2}"
start_dcpid "$DB" -merge 3600 -imagecache || fail "dcpid starts on a private database"
"$T/spin" 300
check "flush with a hostile .build-id" "$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 flush
[ -z "$(ls -A "$T/loot")" ] && pass "no hard link of a binary lands through a planted symlink" ||
	fail "no hard link of a binary lands through a planted symlink" "$(ls -l "$T/loot")"
grep -q "image cache: .*owned by uid" "$DB/dcpid-$HOST.log" &&
	pass "the log says why the image was not cached" ||
	fail "the log says why the image was not cached" "$(tail -5 "$DB/dcpid-$HOST.log")"

# --- 2. a FIFO at a profile's name ------------------------------------------
prof=$(profile_of "$DB" "$T/spin")
if [ -z "$prof" ]; then
	fail "spin has a profile to replace with a FIFO"
else
	rm -f "$prof" && mkfifo "$prof"
	"$T/spin" 300
	check "flush answers with a FIFO at a profile's name" \
		"$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 flush
	[ -f "$prof" ] && [ -p "$prof.corrupt" ] &&
		pass "the FIFO is set aside, the profile written anew" ||
		fail "the FIFO is set aside, the profile written anew" "$(ls -l "$prof"*)"
	check "status still answers" "$DCPI_BIN/dcpictl" -db "$DB" -timeout 5 status
fi
"$DCPI_BIN/dcpictl" -db "$DB" -timeout 5 quit >/dev/null 2>&1
kill_holder "$DB"

mkfifo "$T/fifo"
for f in "$T/fifo" /dev/zero; do
	out=$(timeout 5 "$DCPI_BIN/dcpicat" "$f" 2>&1); rc=$?
	[ $rc -eq 1 ] && grep -q "not a regular file" <<<"$out" &&
		pass "dcpicat $f: refused at once" || fail "dcpicat $f: refused at once" "rc=$rc $out"
done

# --- 3. -shared -imagecache and a setuid program ----------------------------
SH=$T/shared
cp "$T/spin" "$T/suid" && chmod 4755 "$T/suid"
sbid=$(readelf -n "$T/suid" | sed -n 's/.*Build ID: //p')
at_exit "kill_holder '$SH'"
start_dcpid "$SH" -merge 3600 -shared -imagecache || fail "dcpid -shared -imagecache starts"
"$T/suid" 300
check "flush" "$DCPI_BIN/dcpictl" -db "$SH" -timeout 10 flush
c="$SH/.build-id/${sbid:0:2}/${sbid:2}"
if [ -f "$c" ]; then
	[ "$(stat -c %i "$c")" != "$(stat -c %i "$T/suid")" ] && ! [ -u "$c" ] && ! [ -g "$c" ] &&
		pass "a setuid image is cached as a plain copy, not a setuid link" ||
		fail "a setuid image is cached as a plain copy, not a setuid link" "$(ls -li "$c" "$T/suid")"
else
	pass "a setuid image is not cached"
fi
"$DCPI_BIN/dcpictl" -db "$SH" -timeout 5 quit >/dev/null 2>&1
done_testing
