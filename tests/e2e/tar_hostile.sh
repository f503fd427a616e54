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
done_testing
