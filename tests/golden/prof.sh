#!/usr/bin/env bash
# dcpiprof against expected output: images and procedures, text, -json and
# -csv, -ratio, -sort, -keep, -cutoff, -pid, -epoch, IMAGE arguments, the
# header's totals, losses and warnings.  The database is made by fixture.bash;
# every expected number was worked out by hand from the counts there.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
P="$DCPI_BIN/dcpiprof -db $DB"
# CMD with prog's procedure addresses in its JSON as "@NAME@" (nm's: the
# compiler places them), so the expected file holds on any compiler; that
# they are nm's is the point checked.
named_addrs() {
	local s="" a n
	while read -r a _ n; do
		s="$s; s|\"address\": \"0x$a\"|\"address\": \"@$n@\"|g"
	done < <(nm "$PROG" | awk '$2 ~ /^[Tt]$/ && $3 ~ /^(hot|warm|cold|main)$/' |
		sed 's/^0*//')
	"$@" | sed -e "${s#; }"
	return "${PIPESTATUS[0]}"
}

# shellcheck disable=SC2086
{
golden prof-images.txt $P
golden prof-procs.txt $P -i
golden prof-ratio.txt $P -i -ratio instructions/cycles
golden prof-ratio-images.txt $P -ratio cycles/instructions
golden prof-sort-keep.txt $P -i -sort instructions -keep 4
golden prof-cutoff.txt $P -i -cutoff 4
golden prof-pid.txt $P -pid
golden prof-pid-procs.txt $P -pid prog
golden prof-named.txt $P prog kernel '[ext4]'
golden prof-json.txt $P -json
golden prof-json-procs.txt named_addrs $P -json -i -pid -keep 6
golden prof-csv.txt $P -csv
golden prof-csv-procs.txt $P -csv -i -pid
golden prof-epoch-all.txt $P -epoch all
golden prof-epoch-old.txt $P -epoch 20240101T000000Z -i
golden prof-epoch-all-kernel.txt $P -epoch all kernel
golden prof-bad-sort.txt $P -sort branches
golden prof-bad-ratio.txt $P -ratio cycles/branches
golden prof-no-image.txt $P nosuch
# the call stacks of the first epoch (fixture.bash: 17 cycles, 23 instructions,
# every one with a stack: hot <- main 6/12, hot <- warm <- main 4/8,
# do_syscall_64 <- hot <- main 7/3)
E1="-epoch 20240101T000000Z"
golden prof-callers.txt $P $E1 -callers hot
golden prof-callers-depth.txt $P $E1 -callers hot -depth 2
golden prof-callers-csv.txt $P $E1 -callers hot -csv
golden prof-callees.txt $P $E1 -callees main prog
golden prof-inclusive.txt $P $E1 -inclusive
golden prof-stacks.txt $P $E1 -stacks
golden prof-stacks-json.txt $P $E1 -stacks -json -sort instructions
golden prof-folded-stacks.txt $P $E1 -folded
golden prof-no-stacks.txt $P -callers hot
}
if command -v python3 >/dev/null; then
	for args in "-json" "-json -i -pid"; do
		# shellcheck disable=SC2086
		$P $args | python3 -c 'import json, sys; json.load(sys.stdin)' 2>"$T/py" &&
			pass "dcpiprof $args is valid JSON" || fail "dcpiprof $args is valid JSON" "$(cat "$T/py")"
	done
else
	skip "python3 not installed: JSON not parsed"
fi

# Warnings go to standard error, one line per kind: three images that are
# gone are one line with their count; -v lists each.
{
	echo "db $T/wdb"
	echo "epoch 20240301T000000Z golden"
	echo "stats samples 6 lost 0 throttled 0 unknown 0 kernel 0 images 3 cpus 1 start 1709251200 updated 1709254800"
	for g in one two three; do
		printf '%s\n' "profile file" "path /nonexistent/$g" "size 4096" \
			"event cycles 100000 1000000" "row 0x1000 2" "end"
	done
} >"$T/wspec"
"$DCPI_BUILD/tests/mkdb" "$T/wspec" >/dev/null 2>"$T/wmkdb.err" || fail "mkdb" "$(cat "$T/wmkdb.err")"
# shellcheck disable=SC2086
{
golden prof-warnings.txt "$DCPI_BIN/dcpiprof" -db "$T/wdb" -i
golden prof-warnings-v.txt "$DCPI_BIN/dcpiprof" -db "$T/wdb" -i -v
}

# Counts no collector writes: a clock of 2^64-1 kHz (UBSan aborted every
# reader on it), unknown samples beyond the samples (5,807% was printed),
# two profiles whose totals add past 2^64 (2.3x10^20% was printed).  Each
# is left out with a warning naming its file; no share is above 100%.
{
	echo "db $T/ndb"
	echo "epoch 20240401T000000Z golden"
	echo "stats samples 10 lost 0 throttled 0 unknown 0 kernel 0 images 2 cpus 1 clock_khz 18446744073709551615"
	for g in one two; do
		printf '%s\n' "profile file" "path /nonexistent/$g" "size 4096" \
			"event cycles 100000 1000000" "row 0x1000 9223372036854775808" "end"
	done
	echo "epoch 20240401T000000Z other"
	echo "stats samples 1000 lost 0 throttled 0 unknown 58070 kernel 0 images 1 cpus 1"
	printf '%s\n' "profile file" "path /nonexistent/three" "size 4096" \
		"event cycles 100000 1000000" "row 0x1000 4" "end"
} >"$T/nspec"
"$DCPI_BUILD/tests/mkdb" "$T/nspec" >/dev/null 2>"$T/nmkdb.err" || fail "mkdb" "$(cat "$T/nmkdb.err")"
golden prof-impossible.txt "$DCPI_BIN/dcpiprof" -db "$T/ndb" -host all -v

# A corrupt profile is named with what is wrong, not reported as "no
# profile of image" (dcpicalc, dcpilist and dcpicoverage said that).
{
	echo "db $T/cdb"
	echo "epoch 20240501T000000Z golden"
	for g in true false; do
		printf '%s\n' "profile file" "path /nonexistent/$g" "size 4096" "mtime 1600000000" \
			"event cycles 100000 1000000" "row 0x1000 5" "end"
	done
} >"$T/cspec"
"$DCPI_BUILD/tests/mkdb" "$T/cspec" >/dev/null 2>"$T/cmkdb.err" || fail "mkdb" "$(cat "$T/cmkdb.err")"
for f in "$T"/cdb/*/golden/true-*.prof; do printf 'X' | dd of="$f" bs=1 seek=20 conv=notrunc 2>/dev/null; done
for c in dcpiprof dcpicalc dcpilist dcpicoverage; do
	golden "prof-corrupt-$c.txt" "$DCPI_BIN/$c" -db "$T/cdb" main /nonexistent/true
done
done_testing
