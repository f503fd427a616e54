#!/usr/bin/env bash
# End to end: a small JIT written for the tests (tests/workloads/jitc.c)
# generates x86-64 loops at run time and registers them through the
# dcpi_dyn API; dcpi record names them, with the 3:1 split of their work,
# and dcpilist disassembles them after the process and its file are gone.
# The API writes nothing when DCPI_DYN=0, and reports errors as -errno.
. "$DCPI_ROOT/tests/tap.sh"

[ "$(uname -m)" = x86_64 ] || { skip "the test JIT emits x86-64 code only"; done_testing; }
cc -g -O1 -I"$DCPI_ROOT/dyn" -o "$T/jitc" "$DCPI_ROOT/tests/workloads/jitc.c" \
	"$DCPI_ROOT/dyn/dcpi_dyn.c" || { fail "build the test JIT"; done_testing; }
REC=$DCPI_BIN/dcpi-record
out=$("$REC" -quiet -db "$T/probe" -- true 2>&1) ||
	{ skip "perf_event_open is not available here: $out"; done_testing; }

mkdir "$T/dyn"
DCPI_DYN_DIR=$T/dyn "$REC" -quiet -db "$T/db" -- "$T/jitc" 1500 >"$T/out" 2>&1 &&
	pass "dcpi record -- the test JIT" || fail "dcpi record -- the test JIT" "$(cat "$T/out")"
f=$(ls "$T"/dyn/jit-*.dump 2>/dev/null)
[ -n "$f" ] && [ "$(stat -c %a "$f")" = 600 ] && pass "the API wrote $(basename "$f"), mode 600" ||
	fail "the API wrote its file, mode 600" "$(ls -l "$T/dyn")"
rm -f "$T"/dyn/*
csv=$("$DCPI_BIN/dcpiprof" -db "$T/db" -i -csv 2>/dev/null)
hot=$(awk -F, '$2 == "jit_hot" { s += $NF } END { print s + 0 }' <<<"$csv")
cold=$(awk -F, '$2 == "jit_cold" { s += $NF } END { print s + 0 }' <<<"$csv")
echo "# jit_hot $hot, jit_cold $cold samples"
[ "$hot" -gt 0 ] && [ "$cold" -gt 0 ] && pass "dcpiprof names jit_hot and jit_cold" ||
	fail "dcpiprof names jit_hot and jit_cold" "$csv"
share=$((hot * 100 / (hot + cold > 0 ? hot + cold : 1)))
# three times the iterations: most of the samples, whatever the exact share
# (it moves with the CPU and the load: 75% on a quiet VM, 88% beside two
# CPU hogs); that the samples are the code's is what is checked
[ "$hot" -gt "$cold" ] && pass "jit_hot, with three times the iterations, has most of their samples ($share%)" ||
	fail "jit_hot has most of their samples" "$share%"
img=$(basename "$(ls "$T"/db/*/*/jit-*.dump-*.prof | head -1)" | sed 's/-[0-9a-f]*_.*//')
list=$("$DCPI_BIN/dcpilist" -db "$T/db" -asm jit_hot "$img" 2>&1)
# the loop is decl; jne: its samples may land on either (where a timer
# sample skids is the machine's business, not dcpi's)
loop=$(awk '/decl +%ecx|jne/ && $1 ~ /^[0-9]+$/ { s += $1 } END { print s + 0 }' <<<"$list")
grep -qE 'decl +%ecx' <<<"$list" && grep -q 'jne' <<<"$list" && [ "$loop" -gt 0 ] &&
	pass "dcpilist disassembles jit_hot, $loop samples on its loop" ||
	fail "dcpilist disassembles jit_hot" "$list"

src=$("$DCPI_BIN/dcpilist" -db "$T/db" -source jit_hot "$img" 2>&1)
grep -q '^-- jit.src' <<<"$src" && grep -qE '^ *[1-9][0-9]* .* 11 ' <<<"$src" &&
	pass "dcpilist shows the source lines given to dcpi_dyn_add, samples on line 11" ||
	fail "dcpilist shows the source lines given to dcpi_dyn_add" "$src"

DCPI_DYN=0 DCPI_DYN_DIR=$T/dyn "$T/jitc" 10 && [ -z "$(ls "$T/dyn")" ] &&
	pass "DCPI_DYN=0: nothing written" || fail "DCPI_DYN=0: nothing written" "$(ls "$T/dyn")"
out=$(DCPI_DYN_DIR=$T/nonexistent "$T/jitc" 10 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "No such file" <<<"$out" && pass "a missing directory is an error, reported" ||
	fail "a missing directory is an error" "rc=$rc $out"
done_testing
