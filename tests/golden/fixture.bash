# The golden tests' fixture (sourced by the tests/golden scripts after tap.sh):
# a small program, committed as built (prog, from prog.c by build-prog, so
# that its code is the same whatever compiler is here) and a database written by
# $DCPI_BUILD/tests/mkdb with samples placed on its instructions, a kernel
# with a made-up kallsyms snapshot, a module, unknown samples, a
# per-process profile and an image whose path needs escaping.  No root, no
# daemon.  Every count below is chosen, so every number in the reports can
# be worked out by hand: the expected outputs in expected/ were.
#
#   golden_setup                 build prog and the database in $T/db
#   golden NAME CMD...           run CMD; its output, normalised, must equal
#                                expected/NAME (stdout, then "[stderr]" and
#                                stderr if any, then "[exit N]" if not 0)
# GOLDEN_UPDATE=1 writes the expected files instead of comparing: check
# every number in them by hand before committing them.
: "${DCPI_BUILD:?}" "${DCPI_ROOT:?}"
G=$DCPI_ROOT/tests/golden
EXP=$G/expected
DB=$T/db
PROG=$T/prog
# fixed: the reports must not depend on the caller's environment
export LC_ALL=C TZ=UTC
unset DCPIDB DEBUGINFOD_URLS DCPI_DEBUG_PATH
export DCPI_VMLINUX=/nonexistent/vmlinux

# The file offset of the INDEX-th instruction (from 0) of procedure FUNC
# of $PROG, plus DELTA bytes: objdump's address, through readelf's PT_LOAD.
insn_off() {
	local func=$1 index=$2 delta=${3:-0} addr
	addr=$(objdump -d --no-show-raw-insn "$PROG" |
		awk -v f="<$func>:" -v i="$index" '$2 == f { on = 1; n = 0; next }
			on && /^$/ { exit } on && n++ == i { sub(":", "", $1); print $1; exit }')
	[ -n "$addr" ] || return 1
	local a=$((0x$addr + delta)) type off va fsz
	while read -r type off va _ fsz _; do
		[ "$type" = LOAD ] || continue
		if [ $a -ge $((va)) ] && [ $a -lt $((va + fsz)) ]; then
			printf '0x%x\n' $((a - va + off))
			return 0
		fi
	done < <(readelf -lW "$PROG")
	return 1
}

# The kernel's symbols as /proc/kallsyms shows them (a module's tagged),
# into directory DIR, the kernel SHIFT bytes higher (another boot: KASLR).
write_kallsyms() {
	local dir=$1 shift=$2
	mkdir -p "$dir"
	{
		printf '%x T _text\n' $((0xffffffff81000000 + shift))
		printf '%x T do_syscall_64\n' $((0xffffffff81001000 + shift))
		printf '%x t clear_page_erms\n' $((0xffffffff81001200 + shift))
		printf '%x T schedule\n' $((0xffffffff81001300 + shift))
		printf '%x T _etext\n' $((0xffffffff81001400 + shift))
		printf '%x D jiffies\n' $((0xffffffff82000000 + shift))
		printf 'ffffffffc0100000 t ext4_file_read_iter\t[ext4]\n'
		printf 'ffffffffc0100100 t ext4_map_blocks\t[ext4]\n'
		printf 'ffffffffc0100400 d ext4_data\t[ext4]\n'
	} >"$dir/kallsyms"
	echo 'ext4 1000000 1 - Live 0xffffffffc0100000' >"$dir/modules"
}

# Two epochs of host "golden".  The latest (20240102T030405Z), by event
# (cycles, instructions; periods 100000 and 200000):
#   prog        hot 400/900 100/200 150/300 50/0 5/0 (a stray byte),
#               warm 120/60, cold 30/30, main 0/10     = 855/1500
#   prog pid 4242: hot 80/160, warm 20/10               = 100/170
#   kernel      do_syscall_64 200/50, clear_page_erms 60/20,
#               schedule 0/30, no symbol 10/0           = 270/100
#   [ext4]      ext4_map_blocks 25/5
#   unknown     40/20 (10/5 of them pid 4343's, dcpid -unknown, in the 1 MB
#               region at 0x7f00dea00000)
#   WEIRD       35/70 (a path with " \ , bytes 0x01, ESC, CR and BEL, U+009B (CSI) and a lone 0x9b; no such file)
#   total                                               = 1325/1865
#   stats: samples 3190 (= 1325 + 1865), lost 120, throttled 3,
#          unknown 60, kernel 400 (= 270 + 100 + 25 + 5)
# The older epoch (20240101T000000Z), another boot with the kernel 2 MB
# higher: prog hot 10/20, kernel do_syscall_64 7/3; samples 40, lost 6,
# throttled 1, kernel 10.
WEIRD=$(printf '/opt/we"ird\\dir,v2/lib\001x\302\233\233\033[7m\r\a.so')
golden_spec() {
	local hot6 hot7 hot8 hot10 stray warm4 cold0 main5
	hot6=$(insn_off hot 6) && hot7=$(insn_off hot 7) && hot8=$(insn_off hot 8) &&
		hot10=$(insn_off hot 10) && stray=$(insn_off hot 4 1) &&
		warm4=$(insn_off warm 4) && cold0=$(insn_off cold 0) && main5=$(insn_off main 5) ||
		return 1
	cat <<EOF
db $DB
epoch 20240101T000000Z golden
kallsyms $T/proc0
stats samples 40 lost 6 throttled 1 unknown 0 kernel 10 images 2 cpus 2 start 1704067200 updated 1704070800
stats-event cycles 100000 17 3600000000000 3600000000000
stats-event instructions 200000 23 3600000000000 1800000000000
profile file
path $PROG
image $PROG
mtime 1700000000
text 0x1000 0x1000
event cycles 100000 1000000
event instructions 200000 500000
row $hot6 10 20
end
profile kernel
path [kernel.kallsyms]
text 0xffffffff81200000 0x1000000
event cycles 100000 1000000
event instructions 200000 500000
row 0xffffffff81201010 7 3
end
stack-image 1 $PROG file 1700000000 0x1000 0x1000
stack-image 2 [kernel.kallsyms] kernel 0 0xffffffff81200000 0x1000000
stack whole - 6,12 1:$hot6 1:$main5
stack whole - 4,8 1:$hot6 1:$warm4 1:$main5
stack whole - 7,3 2:0xffffffff81201010 1:$hot8 1:$main5

epoch 20240102T030405Z golden
kallsyms $T/proc1
stats samples 3190 lost 120 throttled 3 unknown 60 kernel 400 images 6 cpus 2 start 1704164645 updated 1704168245
stats-event cycles 100000 1325 7200000000000 7200000000000
stats-event instructions 200000 1865 7200000000000 3600000000000
profile file
path $PROG
image $PROG
mtime 1700000000
text 0x1000 0x1000
event cycles 100000 1000000
event instructions 200000 500000
row $hot6 400 900
row $hot7 100 200
row $hot8 150 300
row $hot10 50 0
row $stray 5 0
row $warm4 120 60
row $cold0 30 30
row $main5 0 10
end
profile file
path $PROG
image $PROG
mtime 1700000000
pid 4242
text 0x1000 0x1000
event cycles 100000 1000000
event instructions 200000 500000
row $hot6 80 160
row $warm4 20 10
end
profile kernel
path [kernel.kallsyms]
text 0xffffffff81000000 0x1000000
event cycles 100000 1000000
event instructions 200000 500000
row 0xffffffff81001010 200 50
row 0xffffffff81001208 60 20
row 0xffffffff81001300 0 30
row 0xffffffff80000010 10 0
end
profile module
path [ext4]
text 0xffffffffc0100000 0x1000
event cycles 100000 1000000
event instructions 200000 500000
row 0x120 25 5
end
profile unknown
path [unknown]
event cycles 100000 1000000
event instructions 200000 500000
row 0x7f00dead1000 30 15
end
profile unknown
path [unknown 0x7f00dea00000]
pid 4343
text 0x7f00dea00000 0x100000
event cycles 100000 1000000
event instructions 200000 500000
row 0xd1000 10 5
end
profile file
path $WEIRD
size 4096
mtime 1600000000
event cycles 100000 1000000
event instructions 200000 500000
row 0x1000 35 70
end
EOF
}

golden_setup() {
	cp "$G/prog.c" "$T/prog.c" && cp "$G/prog" "$T/prog" || { fail "copy prog"; return 1; }
	write_kallsyms "$T/proc0" 0x200000
	write_kallsyms "$T/proc1" 0
	golden_spec >"$T/spec" || { fail "find prog's instructions with objdump"; return 1; }
	"$DCPI_BUILD/tests/mkdb" "$T/spec" >"$T/names" 2>"$T/mkdb.err" ||
		{ fail "mkdb writes the database" "$(cat "$T/mkdb.err")"; return 1; }
	BID=$(readelf -n "$PROG" | sed -n 's/.*Build ID: //p')
}

# What varies from run to run or machine to machine, made constant; bytes
# that are not printable made visible (cat -v).
normalise() {
	local s
	s="s|$T|@TMP@|g; s|$(uname -r)|@RELEASE@|g; s|\.tmp\.[0-9][0-9]*|.tmp.@PID@|g"
	[ -n "${BID:-}" ] && s="$s; s|$BID|@BUILDID@|g"
	sed -e "$s" | cat -v
}

golden() {
	local name=$1 rc; shift
	# in $T: prog's DWARF names its source ./prog.c
	(cd "$T" && "$@") >"$T/out" 2>"$T/err"; rc=$?
	{
		normalise <"$T/out"
		if [ -s "$T/err" ]; then echo "[stderr]"; normalise <"$T/err"; fi
		if [ $rc -ne 0 ]; then echo "[exit $rc]"; fi
	} >"$T/got"
	if [ -n "${GOLDEN_UPDATE:-}" ]; then
		cp "$T/got" "$EXP/$name"
		pass "$name (written to expected/$name: check it by hand)"
	elif diff -u "$EXP/$name" "$T/got" >"$T/diff" 2>&1; then
		pass "$name"
	else
		fail "$name: output differs from expected/$name" "$(cat "$T/diff")"
	fi
}
