#!/usr/bin/env bash
# The control plane under a flood (issue 10, item 7): silent clients must
# not hold up a legitimate request, and dcpictl -timeout bounds the whole
# exchange, connecting included (a socket nobody accepts on).
. "$DCPI_ROOT/tests/tap.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "dcpid samples system-wide: needs root (CI runs as root)"
	done_testing
fi
if ! command -v python3 >/dev/null; then
	skip "python3 needed to hold silent connections"
	done_testing
fi
HOST=$(hostname)
HOST=${HOST//\//_}
DB=$T/db
start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }

# 200 connections that send nothing, held for 20 s (then the holder exits)
python3 - "$DB/.dcpid-$HOST.sock" >"$T/held" 2>&1 <<'PY' & holder=$!
import socket, sys, time
held = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except (BlockingIOError, InterruptedError):
        pass
    held.append(s)
print("held", len(held), flush=True)
time.sleep(20)
PY
at_exit "kill $holder"
for i in $(seq 50); do grep -q held "$T/held" && break; sleep 0.1; done
start=$(date +%s%N)
out=$("$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 status 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 0 ] && [ $ms -lt 3000 ] && pass "status answers within 3 s under 200 silent clients (${ms} ms)" ||
	fail "status answers within 3 s under 200 silent clients" "rc=$rc ${ms} ms: $out"
kill $holder 2>/dev/null; wait $holder 2>/dev/null
"$DCPI_BIN/dcpictl" -db "$DB" -timeout 10 quit >/dev/null

# a socket that listens and never accepts: its backlog fills, connect waits
FAKE=$T/fake
mkdir -m 700 "$FAKE"
python3 - "$FAKE/.dcpid-$HOST.sock" >"$T/fake.out" 2>&1 <<'PY' & fake=$!
import socket, sys, time
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(sys.argv[1]); l.listen(0)
fill = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except (BlockingIOError, InterruptedError):
        pass
    fill.append(s)
print("listening", flush=True)
time.sleep(30)
PY
at_exit "kill $fake"
for i in $(seq 50); do grep -q listening "$T/fake.out" && break; sleep 0.1; done
start=$(date +%s%N)
out=$(timeout 20 "$DCPI_BIN/dcpictl" -db "$FAKE" -timeout 2 status 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 1 ] && [ $ms -lt 4000 ] && grep -q "within 2 s" <<<"$out" &&
	pass "-timeout 2 covers connecting: gave up after ${ms} ms" ||
	fail "-timeout 2 covers connecting" "rc=$rc ${ms} ms: $out"
done_testing
