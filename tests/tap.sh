# Shell TAP helpers for tests/e2e/*.sh (sourced).
#   ok COND_CMD... -- "name"   is awkward in bash; use:
#   check "name" test-command args...    one test point: passes if the command succeeds
#   pass "name" / fail "name" [detail]   explicit points
#   skip "reason"                        a skipped point
#   done_testing                         prints the plan; exit status = failures
# $T is a fresh temp dir removed at exit; cleanup hooks run first.
set -u
: "${DCPI_BIN:?DCPI_BIN must name the directory of the built commands}"
_t_n=0
_t_failed=0
_t_cleanups=()
T=$(mktemp -d /tmp/dcpi-e2e.XXXXXX)
chmod 755 "$T"

pass() { _t_n=$((_t_n + 1)); echo "ok $_t_n - $1"; }
fail() {
	_t_n=$((_t_n + 1)); _t_failed=$((_t_failed + 1))
	echo "not ok $_t_n - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/#   /'
	return 0
}
skip() { _t_n=$((_t_n + 1)); echo "ok $_t_n # SKIP $1"; }
check() {
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "command: $* | $out"; fi
}
at_exit() { _t_cleanups+=("$1"); }
_t_cleanup() {
	local c
	for c in "${_t_cleanups[@]}"; do eval "$c" >/dev/null 2>&1; done
	rm -rf "$T"
}
trap _t_cleanup EXIT
done_testing() {
	echo "1..$_t_n"
	[ "$_t_failed" -eq 0 ]
	exit $?
}

# Build a workload from tests/workloads/NAME.c into $T/NAME (or OUT).
build_workload() {
	local name=$1 out=${2:-$T/$1}
	cc -g -O1 -o "$out" "$DCPI_ROOT/tests/workloads/$name.c"
}

# The profile file in DB's latest epoch whose header path is PATH.
profile_of() {
	local db=$1 path=$2 f
	for f in "$db"/*/*/*.prof; do
		[ -e "$f" ] || continue
		if "$DCPI_BIN/dcpicat" -header "$f" 2>/dev/null | grep -qxF "path: $path"; then
			echo "$f"
		fi
	done
}

# Total samples of the first event in a profile file.
profile_samples() {
	"$DCPI_BIN/dcpicat" -header "$1" | sed -n 's/^event [^:]*: period [0-9]*, samples \([0-9]*\),.*/\1/p' | head -1
}

# Google's pprof, built once from Debian's source package into the build
# directory (golang-go, golang-github-google-pprof-dev); its path on
# stdout, or nothing (and status 1) where it cannot be built.
pprof_tool() {
	local bin=$DCPI_BUILD/tools/pprof
	if [ ! -x "$bin" ] && command -v go >/dev/null &&
		[ -d /usr/share/gocode/src/github.com/google/pprof ]; then
		mkdir -p "$DCPI_BUILD/tools"
		GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$DCPI_BUILD/tools/gocache GOFLAGS= \
			go build -o "$bin" github.com/google/pprof >"$T/gob.err" 2>&1 || return 1
	fi
	[ -x "$bin" ] && echo "$bin"
}

# Start dcpid on DB (extra options follow); waits until it answers.
start_dcpid() {
	local db=$1; shift
	"$DCPI_BIN/dcpid" -db "$db" "$@" || return 1
	at_exit "stop_dcpid '$db'"
	local i
	for i in $(seq 50); do
		"$DCPI_BIN/dcpictl" -db "$db" status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# stop_dcpid DB: ask DB's daemon to quit, and wait (10 s at most) until it
# has exited.  Its last write (the epoch's kernel symbol snapshot, cut down)
# comes after quit's answer: removing $T under it left that file, and so $T,
# behind.
stop_dcpid() {
	local db=$1 pid i
	pid=$(dcpid_pid "$db")
	"$DCPI_BIN/dcpictl" -db "$db" -timeout 10 quit
	[ -n "$pid" ] || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
}

# The daemon's name for this machine's platform directory (dcpi_db_host).
dcpi_host() { local h; h=$(hostname); echo "${h//\//_}"; }

# dcpid_pid DB: the pid in DB's writer lock (this machine's daemon);
# fails, printing nothing, when there is none.
dcpid_pid() {
	local p
	p=$(cat "$1/.dcpid-$(dcpi_host).lock" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && echo "$p"
}

# Run a command as the unprivileged user nobody (the attacker of the
# hardening tests); with root's environment, no supplementary groups.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# openers_during FILE CMD...: the pid of each process that opened FILE's
# inode while CMD ran, one a line (fanotify FAN_OPEN: an O_PATH lookup
# opens nothing and does not count).  Others' daemons sample the whole
# machine too: compare the pids with the test's own.  CMD's output is
# dropped.  Needs root.
openers_during() {
	python3 - "$@" <<'EOF'
import ctypes, os, struct, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int,
                               ctypes.c_char_p]
# FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_REPORT_FID: events of FIFOs and devices too
fd = libc.fanotify_init(0x2 | 0x200, os.O_RDONLY | os.O_NONBLOCK)
if fd < 0 or libc.fanotify_mark(fd, 0x1, 0x20, -100, sys.argv[1].encode()) < 0:
    sys.exit("fanotify: " + os.strerror(ctypes.get_errno()))  # FAN_MARK_ADD, FAN_OPEN
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    while True:
        buf = os.read(fd, 65536)
        while buf:
            n, _, _, _, _, efd, pid = struct.unpack_from("IBBHQii", buf)
            if efd >= 0:
                os.close(efd)
            print(pid)
            buf = buf[n:]
except BlockingIOError:
    pass
EOF
}

# End the script with one skip unless root (the daemon samples system-wide).
require_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	skip "${1:-dcpid samples system-wide: needs root (CI runs as root)}"
	done_testing
}
