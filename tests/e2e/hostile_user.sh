#!/usr/bin/env bash
# An ordinary user against root's dcpid (issue 24): each section is one of
# the user's levers, played by `nobody` (with user namespaces where the
# lever needs them) in a directory of its own, against a root daemon on a
# private database.  Where the harm would be root opening a device, the
# stand-in is a FIFO of the attacker's: every open of it by the test's
# daemon is counted (fanotify), and none may happen.
. "$DCPI_ROOT/tests/tap.sh"

require_root "needs root to play the root daemon and another user (CI runs as root)"
HOST=$(dcpi_host)
N=$T/nobody
mkdir "$N" && chown nobody:nogroup "$N" && chmod 755 "$N"
cc -g -O1 -o "$N/prog" "$DCPI_ROOT/tests/workloads/spin.c" || fail "build prog"
cc -g -O2 -o "$N/prog3" "$DCPI_ROOT/tests/workloads/spin.c" || fail "build prog3"
chown nobody:nogroup "$N/prog" "$N/prog3"
as_nobody mkfifo -m 644 "$N/fifo"
kill_holder() { local p; p=$(dcpid_pid "$1") && kill -9 "$p"; }
# flooded LOG: the daemon (system-wide) held back warnings, perhaps those
# of other processes on the machine: a line of ours may be among them
flooded() { grep -q "more warnings\{0,1\} (refused files and the like) not logged" "$1"; }
# flush DB: the daemon merges (and caches images) now
flush() { "$DCPI_BIN/dcpictl" -db "$1" -timeout 10 flush; }
# start DB OPTIONS...: a root dcpid, answering (a function openers_during can run)
start() {
	local db=$1 i; shift
	"$DCPI_BIN/dcpid" -db "$db" "$@" || return 1
	for i in $(seq 50); do "$DCPI_BIN/dcpictl" -db "$db" status && return 0; sleep 0.1; done
	return 1
}
export -f start flush
export DCPI_BIN

DB=$T/db
at_exit "'$DCPI_BIN/dcpictl' -db '$DB' -timeout 5 quit; kill_holder '$DB'"
start "$DB" -merge 3600 -imagecache >/dev/null 2>&1 || fail "dcpid -imagecache starts"

# --- lever 2: a symlink to a device renamed over a mapped file ---------------
# prog ran and exited; then its path names the FIFO.  Identifying the
# mapping (by path, the process gone) and caching the image (by path) both
# looked at that path with open(), checking for a regular file afterwards.
as_nobody "$N/prog" 300
as_nobody mv "$N/prog" "$N/prog.real"
as_nobody ln -s "$N/fifo" "$N/prog"
dpid=$(cat "$DB/.dcpid-$HOST.lock")
openers_during "$N/fifo" bash -c "flush '$DB'" >"$T/openers"
n=$(grep -cx "$dpid" "$T/openers")
[ "$n" = 0 ] && pass "root never opens what a mapped file's path was renamed to" ||
	fail "root never opens what a mapped file's path was renamed to" \
		"$n opens of the FIFO by the daemon (pid $dpid); openers: $(echo $(cat "$T/openers"))"

# the same through /proc/PID/root: in its own user and mount namespaces, a
# process maps an ELF file, then bind-mounts the FIFO over its path; a
# daemon starting now finds the mapping in /proc/PID/maps.
if unshare -Urm true 2>/dev/null; then
	cp "$N/prog3" "$N/lib" && chown nobody "$N/lib"
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- unshare -Urm /usr/bin/python3 -c '
import mmap, subprocess, sys, time
lib, fifo, ready = sys.argv[1:]
f = open(lib, "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)
subprocess.run(["mount", "--bind", fifo, lib], check=True)
open(ready, "w").close()
time.sleep(600)' "$N/lib" "$N/fifo" "$N/ready" >/dev/null 2>&1 & upid=$!
	at_exit "kill $upid"
	for i in $(seq 100); do [ -e "$N/ready" ] && break; sleep 0.1; done
	DB2=$T/db2
	at_exit "'$DCPI_BIN/dcpictl' -db '$DB2' -timeout 5 quit; kill_holder '$DB2'"
	openers_during "$N/fifo" bash -c "start '$DB2' -merge 3600 && flush '$DB2'" >"$T/openers"
	n=$(grep -cx "$(cat "$DB2/.dcpid-$HOST.lock")" "$T/openers")
	[ -e "$N/ready" ] && [ "$n" = 0 ] &&
		pass "nor what a mapped file's path names in the process's mount namespace" ||
		fail "nor what a mapped file's path names in the process's mount namespace" \
			"$n opens of the FIFO; ready: $(ls "$N/ready" 2>&1)"
	kill $upid 2>/dev/null
	"$DCPI_BIN/dcpictl" -db "$DB2" -timeout 5 quit >/dev/null 2>&1
else
	skip "unshare -Urm does not work here: no unprivileged user namespaces"
fi

# --- lever 3: the image cache and the user's own file -------------------------
# A hard link of the user's inode in DB/.build-id lets the user rewrite
# "the code that ran" afterwards: a file root does not own is copied.
as_nobody "$N/prog3" 300
flush "$DB" >/dev/null 2>&1
bid=$(readelf -n "$N/prog3" | sed -n 's/.*Build ID: //p')
c=$DB/.build-id/${bid:0:2}/${bid:2}
if [ -f "$c" ] && [ "$(stat -c %i "$c")" != "$(stat -c %i "$N/prog3")" ] &&
	[ "$(stat -c %u "$c")" = 0 ] && cmp -s "$c" "$N/prog3"; then
	pass "another user's image is cached as a copy of root's"
else
	fail "another user's image is cached as a copy of root's" \
		"$(ls -li "$c" "$N/prog3" 2>&1; grep "image cache" "$DB/dcpid-$HOST.log")"
fi
as_nobody sh -c "echo rewritten >'$N/prog3'" 2>/dev/null
[ "$(head -c 4 "$c" | od -An -c | tr -d ' ')" = "177ELF" ] &&
	pass "rewriting the file afterwards leaves the cached code as it ran" ||
	fail "rewriting the file afterwards leaves the cached code as it ran" "$(head -c 20 "$c")"
"$DCPI_BIN/dcpictl" -db "$DB" -timeout 5 quit >/dev/null 2>&1
# --- lever 5: a root-owned file as one's perf map ------------------------------
# In its own user and mount namespaces a process bind-mounts a root-owned
# file (a stand-in for a log root appends to) over its /tmp/perf-PID.map
# and maps anonymous executable memory: the daemon would read the file as
# root, on and on, and publish its lines in the pseudo-image.
if unshare -Urm true 2>/dev/null; then
	printf '1000 10 root_only_line\n' >"$T/rootfile" && chmod 644 "$T/rootfile"
	rm -f "$N/ready"
	DB5=$T/db5
	at_exit "'$DCPI_BIN/dcpictl' -db '$DB5' -timeout 5 quit; kill_holder '$DB5'"
	start "$DB5" -merge 3600 >/dev/null 2>&1 || fail "dcpid starts"
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- unshare -Urm /usr/bin/python3 -c '
import mmap, os, subprocess, sys, time
rootfile, ready = sys.argv[1:]
m = "/tmp/perf-%d.map" % os.getpid()
open(m, "w").close()
subprocess.run(["mount", "--bind", rootfile, m], check=True)
x = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
open(ready, "w").write(str(os.getpid()))
time.sleep(600)' "$T/rootfile" "$N/ready" >/dev/null 2>&1 & mpid=$!
	at_exit "kill $mpid; rm -f /tmp/perf-$mpid.map"
	for i in $(seq 100); do [ -s "$N/ready" ] && break; sleep 0.1; done
	flush "$DB5" >/dev/null 2>&1
	"$DCPI_BIN/dcpictl" -db "$DB5" -timeout 5 quit >/dev/null 2>&1
	if grep -q "perf map /tmp/perf-$mpid.map of process $mpid: owned by root, and the process is uid [0-9]*'s: not read" \
		"$DB5/dcpid-$HOST.log"; then
		pass "a root-owned perf map of a user's process is refused"
	elif flooded "$DB5/dcpid-$HOST.log"; then
		skip "other processes flooded the daemon's warnings: the refusal may be among those held back"
	else
		fail "a root-owned perf map of a user's process is refused" \
			"pid $mpid: $(tail -5 "$DB5/dcpid-$HOST.log"; ls -l /tmp/perf-$mpid.map)"
	fi
	kill $mpid 2>/dev/null
else
	skip "unshare -Urm does not work here: no unprivileged user namespaces"
fi
# --- lever 10: a symlink at the database's own name ----------------------------
# In a sticky directory (as /tmp) the user plants a symlink where root's
# database will be, to a root-owned directory: the lock, log, socket and
# epochs would go there, and its hosts file be read.
mkdir -m 1777 "$T/sticky"
mkdir -m 700 "$T/rootdir"
as_nobody ln -s "$T/rootdir" "$T/sticky/db"
at_exit "'$DCPI_BIN/dcpictl' -db '$T/rootdir' -timeout 5 quit; kill_holder '$T/rootdir'"
out=$("$DCPI_BIN/dcpid" -db "$T/sticky/db" -merge 3600 2>&1); rc=$?
"$DCPI_BIN/dcpictl" -db "$T/rootdir" -timeout 5 quit >/dev/null 2>&1
[ $rc -ne 0 ] && grep -q "symbolic link owned by uid" <<<"$out" && [ -z "$(ls -A "$T/rootdir")" ] &&
	pass "a symlink another user planted at the database's name is refused: $out" ||
	fail "a symlink another user planted at the database's name is refused" \
		"rc $rc: $out; $(ls -A "$T/rootdir")"
# --- lever 8: the log -------------------------------------------------------------
# A newline in a jitdump's directory name forged a log line; and refusals
# (one a process: here 300 processes, each with a symlink as its perf map)
# were logged without limit.  Now control bytes are escaped and warnings
# limited, the rest counted: the lines and the count add up to 300.
DB8=$T/db8
at_exit "'$DCPI_BIN/dcpictl' -db '$DB8' -timeout 5 quit; kill_holder '$DB8'"
start "$DB8" -merge 3600 >/dev/null 2>&1 || fail "dcpid starts"
rm -f "$N/ready"
setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 -c '
import ctypes, mmap, os, signal, sys, time
n, ready = sys.argv[1:]
# a SIGTERM runs the finally below, which kills the children; and each
# child dies with its parent however the parent ends (PR_SET_PDEATHSIG):
# none is left behind, pausing forever, when the test ends
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
prctl = ctypes.CDLL(None, use_errno=True).prctl
d = n + "/x\n2000-01-01 00:00:00 dcpid[1]: forged"
os.mkdir(d)
f = open("%s/jit-%d.dump" % (d, os.getpid()), "wb+")
f.write(b"not a jitdump header" * 8)
f.flush()
dump = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
open(ready + "1", "w").close()
while not os.path.exists(ready + "go"):  # the jitdump looked at first, alone
    time.sleep(0.05)
kids = []
for i in range(300):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:     # the parent already gone
            os._exit(0)
        m = "/tmp/perf-%d.map" % os.getpid()
        try:  # a map some earlier, killed run left at this pid
            os.unlink(m)
        except OSError:
            pass
        try:
            os.symlink("/etc/passwd", m)
            x = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                          prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        finally:
            os.write(w, b"x")  # whatever happened: the parent never waits forever
        signal.pause()
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    kids.append(pid)
open(ready, "w").write(" ".join(map(str, kids)))
try:
    time.sleep(600)
finally:
    for k in kids:
        os.kill(k, signal.SIGKILL)
' "$N" "$N/ready" >/dev/null 2>&1 & kpid=$!
at_exit "kill $kpid; for k in \$(cat '$N/ready'); do kill -9 \$k; rm -f /tmp/perf-\$k.map; done 2>/dev/null"
for i in $(seq 100); do [ -e "$N/ready1" ] && break; sleep 0.1; done
flush "$DB8" >/dev/null 2>&1
touch "$N/readygo"
for i in $(seq 300); do [ -s "$N/ready" ] && break; sleep 0.1; done
kids=$(cat "$N/ready")
flush "$DB8" >/dev/null 2>&1
"$DCPI_BIN/dcpictl" -db "$DB8" -timeout 10 quit >/dev/null 2>&1
kill $kpid 2>/dev/null; wait $kpid 2>/dev/null
for k in $kids; do kill -9 "$k" 2>/dev/null; rm -f "/tmp/perf-$k.map"; done
log=$DB8/dcpid-$HOST.log
if grep -q "^2000-01-01 00:00:00 dcpid\[1\]: forged" "$log"; then
	fail "a newline in a jitdump's path forges no log line" "$(grep -B1 forged "$log")"
elif grep -q 'jitdump .*x\\x0a2000-01-01 00:00:00 dcpid\[1\]: forged' "$log"; then
	pass "a newline in a jitdump's path forges no log line (escaped \\x0a)"
elif flooded "$log"; then
	skip "other processes flooded the daemon's warnings: the jitdump's line may be held back"
else
	fail "a newline in a jitdump's path forges no log line" "no jitdump line: $(tail -3 "$log")"
fi
lines=0
for k in $kids; do grep -q "perf map /tmp/perf-$k.map of process $k: a symbolic link" "$log" && lines=$((lines + 1)); done
supp=$(sed -n 's/.*: \([0-9]*\) more warnings\{0,1\} (refused files and the like) not logged.*/\1/p' "$log" |
	awk '{s += $1} END {print s + 0}')
[ -n "$kids" ] && [ "$lines" -lt 100 ] && [ $((lines + supp)) -ge 300 ] &&
	pass "300 refusals: $lines lines, $supp more counted" ||
	fail "refusals are rate-limited and counted" "$lines lines, $supp counted; kids: $(wc -w <<<"$kids")"
done_testing
