#!/usr/bin/env bash
# dcpitar: an epoch recorded here is packed with its code, the program it
# profiled is deleted, and the unpacked database still names its
# procedures and lists its instructions and source lines.  Archives that
# try to write elsewhere (.., absolute paths, links) or are no archives
# are refused, and nothing is written outside the new directory.
. "$DCPI_ROOT/tests/tap.sh"

TAR=$DCPI_BIN/dcpitar
mkdir -p "$T/src" "$T/bin"
cp "$DCPI_ROOT/tests/workloads/spin.c" "$T/src/tarspin.c"
(cd "$T/src" && cc -g -O1 -o "$T/bin/tarspin" tarspin.c) || { fail "build tarspin"; done_testing; }
"$DCPI_BIN/dcpi-record" -db "$T/db" -quiet -- "$T/bin/tarspin" 300 2>/dev/null ||
	{ fail "dcpi record"; done_testing; }
out=$("$TAR" -db "$T/db" "$T/e.tar" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "[1-9][0-9]* images" <<<"$out" && [ -s "$T/e.tar" ] &&
	pass "packed: $out" || fail "dcpitar packs the epoch" "rc $rc: $out"
bid=$(readelf -n "$T/bin/tarspin" | sed -n 's/.*Build ID: //p')
tar tf "$T/e.tar" | grep -qx ".build-id/${bid:0:2}/${bid:2}" &&
	pass "the profiled program is in the archive by its build-id" ||
	fail "the profiled program is in the archive by its build-id" "$(tar tf "$T/e.tar" | head)"
out=$("$TAR" -db "$T/db" "$T/e.tar" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "File exists" <<<"$out" && pass "an existing archive is not overwritten" ||
	fail "an existing archive is not overwritten" "rc $rc: $out"

# the binary and its source gone: the unpacked database still has the code
rm -rf "$T/bin" "$T/src"
(cd "$T" && "$TAR" -x e.tar) >"$T/x.out" 2>&1; rc=$?
[ $rc -eq 0 ] && [ -d "$T/e/.build-id" ] && [ "$(stat -c %a "$T/e")" = 700 ] &&
	pass "unpacked into ./e (0700)" || fail "unpacked into ./e" "rc $rc: $(cat "$T/x.out")"
prof=$("$DCPI_BIN/dcpiprof" -db "$T/e" -i -csv 2>/dev/null | grep ",spin_hot,")
[ -n "$prof" ] && pass "procedures named after the binary is gone: $prof" ||
	fail "procedures named after the binary is gone" "$("$DCPI_BIN/dcpiprof" -db "$T/e" -i 2>&1 | tail)"
list=$(env -u DCPI_DEBUG_PATH "$DCPI_BIN/dcpilist" -db "$T/e" spin_hot tarspin 2>&1)
grep -q "^Range: " <<<"$list" && grep -qE "^ +[0-9]+ +[0-9.]+% +0x[0-9a-f]+ +[a-z]" <<<"$list" &&
	grep -q "tarspin.c" <<<"$list" &&
	pass "dcpilist shows instructions and source lines from the packed image" ||
	fail "dcpilist from the packed image" "$(head -30 <<<"$list")"

# bad archives: refused, nothing written outside the new directory
python3 - "$T" <<'EOF'
import io, sys, tarfile
t = sys.argv[1]
def make(name, entries):
    with tarfile.open(f"{t}/{name}.tar", "w") as tf:
        for n, kind in entries:
            ti = tarfile.TarInfo(n)
            if kind == "sym":
                ti.type, ti.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tf.addfile(ti)
            else:
                data = b"x" * 10
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
make("dotdot", [("20240101T000000Z/h/../../../escaped", "file")])
make("abs", [(f"{t}/absolute-escape", "file")])
make("link", [("20240101T000000Z/h/link.prof", "sym")])
make("other", [("etc/passwd", "file")])
EOF
for b in dotdot abs link other; do
	out=$("$TAR" -x "$T/$b.tar" "$T/out-$b" 2>&1); rc=$?
	if [ $rc -eq 1 ] && grep -q "refused" <<<"$out" && [ ! -e "$T/escaped" ] &&
		[ ! -e "$T/absolute-escape" ] && [ -z "$(find "$T/out-$b" -type l)" ]; then
		pass "$b archive refused: $out"
	else
		fail "$b archive refused" "rc $rc: $out"
	fi
done
echo "not a tar" >"$T/junk.tar"
out=$("$TAR" -x "$T/junk.tar" "$T/out-junk" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "junk.tar" <<<"$out" && pass "not an archive: $out" ||
	fail "not an archive: a clear error" "rc $rc: $out"
out=$("$TAR" -x "$T/e.tar" "$T/e" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "already exists" <<<"$out" && pass "unpacking into an existing directory is refused" ||
	fail "unpacking into an existing directory is refused" "rc $rc: $out"
out=$("$TAR" 2>&1); rc=$?
[ $rc -eq 2 ] && pass "no archive named: usage error" || fail "no archive named: usage error" "rc $rc: $out"
done_testing
