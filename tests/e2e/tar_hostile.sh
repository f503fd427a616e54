#!/usr/bin/env bash
# dcpitar run by root on what an ordinary user controls (issue 24).
# Lever 1: root unpacks alice.tar in alice's directory; alice renames the
# new directory and plants a symlink to a root-owned directory (a stand-in
# for /etc/cron.d) at its name; the archive is a FIFO she feeds, so the
# swap happens after mkdir and before the first entry, every time.  Also:
# sparse entries, the total size cap, and a refused entry leaving nothing.
# The attacker is `nobody`.
. "$DCPI_ROOT/tests/tap.sh"

require_root "needs root to play root and another user (CI runs as root)"
TAR=$DCPI_BIN/dcpitar
A=$T/alice
CROND=$T/crond
mkdir "$A" "$CROND" && chown nobody:nogroup "$A" && chmod 755 "$A" "$CROND"

# make NAME ENTRY:CONTENT...: a plain tar at $T/NAME.tar, readable by all
# (CONTENT @FILE: that file's bytes)
make() {
	python3 - "$T/$1.tar" "${@:2}" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as tf:
    for arg in sys.argv[2:]:
        name, data = arg.split(":", 1)
        data = (open(data[1:], "rb").read() if data.startswith("@") else
                data.encode().replace(b"\\n", b"\n"))
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
EOF
	chmod 644 "$T/$1.tar"
}

# --- lever 1: the new directory exchanged for a symlink ---------------------
make cron "20240101T000000Z/h/epoch.stats:x" 'hosts:* * * * * root touch /pwned\n'
as_nobody mkfifo -m 644 "$A/alice.tar"
"$TAR" -x "$A/alice.tar" "$A/alice" >"$T/x.out" 2>&1 & xpid=$!
for i in $(seq 100); do [ -d "$A/alice" ] && break; sleep 0.1; done
as_nobody mv "$A/alice" "$A/alice.old"
as_nobody ln -s "$CROND" "$A/alice"
timeout 30 setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	sh -c 'cat "$0" >"$1"' "$T/cron.tar" "$A/alice.tar"
wait $xpid; rc=$?
[ -z "$(ls -A "$CROND")" ] &&
	pass "nothing lands in the symlink's target (rc $rc: $(cat "$T/x.out"))" ||
	fail "nothing lands in the symlink's target" "rc $rc: $(cat "$T/x.out"); $(ls -lR "$CROND")"
if [ -e "$A/alice.old/hosts" ]; then
	[ "$(stat -c %U:%a "$A/alice.old")" = root:700 ] &&
		pass "the entries are in the directory dcpitar made, private" ||
		fail "the entries are in the directory dcpitar made, private" "$(ls -ld "$A/alice.old")"
else
	pass "the entries are in the directory dcpitar made, or nowhere"
fi

# --- a refused entry leaves nothing ------------------------------------------
make partial "hosts:h p\n" "20240101T000000Z/h/a.prof:x" "etc/passwd:x"
out=$("$TAR" -x "$T/partial.tar" "$T/out-partial" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "etc/passwd.*refused" <<<"$out" && [ ! -e "$T/out-partial" ] &&
	pass "a refused entry leaves nothing unpacked: $out" ||
	fail "a refused entry leaves nothing unpacked" "rc $rc: $out; $(ls -R "$T/out-partial" 2>&1)"

# --- sparse entries -----------------------------------------------------------
mkdir -p "$T/sp/20240101T000000Z/h"
truncate -s 64M "$T/sp/20240101T000000Z/h/a.prof"
tar -C "$T/sp" --sparse -cf "$T/sparse.tar" 20240101T000000Z/h/a.prof
out=$("$TAR" -x "$T/sparse.tar" "$T/out-sparse" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "sparse" <<<"$out" && [ ! -e "$T/out-sparse" ] &&
	pass "a sparse entry is refused: $out" ||
	fail "a sparse entry is refused" "rc $rc: $out"

# --- the total cap ------------------------------------------------------------
head -c 600000 /dev/zero | tr '\0' x >"$T/big"
make big "20240101T000000Z/h/a.prof:@$T/big" "20240101T000000Z/h/b.prof:@$T/big"
gzip -9 "$T/big.tar"
out=$("$TAR" -x -max-size 1M "$T/big.tar.gz" "$T/out-big" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "more than 1048576 bytes" <<<"$out" && [ ! -e "$T/out-big" ] &&
	pass "an archive unpacking to more than -max-size is refused: $out" ||
	fail "an archive unpacking to more than -max-size is refused" "rc $rc: $out"
out=$("$TAR" -x -max-size 2M "$T/big.tar.gz" "$T/out-big2" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(stat -c %s "$T/out-big2/20240101T000000Z/h/b.prof")" = 600000 ] &&
	pass "and unpacked within it" || fail "and unpacked within it" "rc $rc: $out"

# --- lever 4: packing (and listing) a file the image's path was swapped for -
# The symbol search checks the image's build-id by path; the pack, and the
# listing tools' disassembler, opened the path again.  The user's program
# without DWARF makes the search ask debuginfod for its debug file, and
# the user's debuginfod swaps the path for a symlink to a root-only file
# (TARGET) before it answers: the swap lands between the check and the
# reading, every time.
N=$T/nobody
mkdir "$N" && chown nobody:nogroup "$N" && chmod 755 "$N"
cc -O1 -o "$N/prog" "$DCPI_ROOT/tests/workloads/spin.c" && chown nobody "$N/prog" ||
	fail "build prog"
echo ROOTSECRET >"$T/secret" && chmod 600 "$T/secret"
cp /bin/true "$T/rootonly" && chmod 600 "$T/rootonly"
"$DCPI_BIN/dcpi-record" -db "$T/db" -quiet -- "$N/prog" 200 >/dev/null 2>&1 ||
	fail "dcpi record of the user's program"
# as_root_with_swapper TARGET CMD...: CMD (root's) with DEBUGINFOD_URLS at
# the user's server, which swaps $N/prog for a symlink to TARGET on the
# first request; $N/asked says it did.  Output in $T/swap.out.
as_root_with_swapper() {
	local target=$1 spid i; shift
	[ -L "$N/prog" ] && rm "$N/prog" && mv "$N/prog.real" "$N/prog"
	rm -f "$N/asked" "$N/port"
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 -c '
import http.server, os, sys
n, target = sys.argv[1:]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if not os.path.exists(n + "/asked"):
            os.rename(n + "/prog", n + "/prog.real")
            os.symlink(target, n + "/prog")
            open(n + "/asked", "w").close()
        self.send_error(404)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(n + "/port.tmp", "w").write(str(s.server_address[1]))
os.rename(n + "/port.tmp", n + "/port")
s.serve_forever()' "$N" "$target" >/dev/null 2>&1 & spid=$!
	for i in $(seq 100); do [ -e "$N/port" ] && break; sleep 0.1; done
	rm -rf "$T/dcache"
	DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$N/port") DEBUGINFOD_CACHE_PATH=$T/dcache \
		"$@" >"$T/swap.out" 2>&1
	rc=$?
	kill $spid
	wait $spid 2>/dev/null
	[ -e "$N/asked" ]
}
if ! as_root_with_swapper "$T/secret" "$TAR" -db "$T/db" "$T/p.tar"; then
	fail "the swap happened between the check and the packing" "rc $rc: $(cat "$T/swap.out")"
elif tar -xOf "$T/p.tar" 2>/dev/null | grep -q ROOTSECRET; then
	fail "a root-only file swapped in for the image is not packed" \
		"rc $rc: $(cat "$T/swap.out"); $(tar tvf "$T/p.tar")"
else
	pass "a root-only file swapped in for the image is not packed: $(cat "$T/swap.out")"
fi
if ! as_root_with_swapper "$T/rootonly" "$DCPI_BIN/dcpilist" -db "$T/db" spin_hot "$N/prog"; then
	fail "the swap happened between the check and the listing" "rc $rc: $(cat "$T/swap.out")"
elif grep -q "instructions are not shown: .*not the image profiled" "$T/swap.out"; then
	pass "dcpilist does not disassemble a root-only file swapped in for the image"
else
	fail "dcpilist does not disassemble a root-only file swapped in for the image" \
		"rc $rc: $(head -20 "$T/swap.out")"
fi
done_testing
