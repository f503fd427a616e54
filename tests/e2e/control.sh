#!/usr/bin/env bash
# The control plane under a flood (issue 10, item 7): silent clients must
# not hold up a legitimate request, and dcpictl -timeout bounds the whole
# exchange, connecting included (a socket nobody accepts on).
. "$DCPI_ROOT/tests/tap.sh"

require_root
if ! command -v python3 >/dev/null; then
	skip "python3 needed to hold silent connections"
	done_testing
fi
HOST=$(dcpi_host)
DB=$T/db
start_dcpid "$DB" -merge 3600 || { fail "dcpid starts"; done_testing; }

# hold SOCKET N [listen]: N connections to SOCKET that send nothing, held
# 30 s; with "listen", first listen on SOCKET (backlog 0) and accept none.
hold() {
	python3 - "$@" <<'PY'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
if sys.argv[3:] == ["listen"]:
    l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    l.bind(path); l.listen(0)
held = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(path)
    except (BlockingIOError, InterruptedError):
        pass
    held.append(s)
print("held", flush=True)
time.sleep(30)
PY
}

hold "$DB/.dcpid-$HOST.sock" 200 >"$T/held" 2>&1 & holder=$!
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
hold "$FAKE/.dcpid-$HOST.sock" 8 listen >"$T/fake.out" 2>&1 & fake=$!
at_exit "kill $fake"
for i in $(seq 50); do grep -q held "$T/fake.out" && break; sleep 0.1; done
start=$(date +%s%N)
out=$(timeout 20 "$DCPI_BIN/dcpictl" -db "$FAKE" -timeout 2 status 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 1 ] && [ $ms -lt 4000 ] && grep -q "within 2 s" <<<"$out" &&
	pass "-timeout 2 covers connecting: gave up after ${ms} ms" ||
	fail "-timeout 2 covers connecting" "rc=$rc ${ms} ms: $out"
done_testing
