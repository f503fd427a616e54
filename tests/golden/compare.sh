#!/usr/bin/env bash
# dcpidiff and dcpistats against expected output, and the exports of
# dcpiprof (-pprof decoded by protoc, -folded).
#  - dcpidiff on fixture.bash's two epochs: shares, points, ratios, new and
#    gone rows, within one procedure by line, instruction and block;
#  - dcpistats on a second database written here: three epochs before and
#    three after a change that moves hot's samples from 600 to 400 and leaves
#    cold's at 100 (so one procedure must come out significant and one not),
#    and one epoch per side (no significance, the sampling error instead);
#  - amounts, not shares: a third database where work_a (hot) is made 3x
#    cheaper and work_b, work_c (warm, cold) take exactly the same samples:
#    only work_a may come out changed, from dcpidiff and dcpistats alike;
#    -shares shows what a share comparison says of them; -rate second
#    when the epochs' lengths differ;
#  - bad input: a missing epoch, an event one side lacks, an empty group.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
D="$DCPI_BIN/dcpidiff -db $DB"
S="$DCPI_BIN/dcpistats -db $T/sdb"
OLD=20240101T000000Z
NEW=20240102T030405Z

# shellcheck disable=SC2086
{
golden diff-images.txt $D $OLD $NEW
golden diff-procs.txt $D -i $OLD $NEW
golden diff-instructions.txt $D -event instructions -i $OLD $NEW prog
golden diff-json.txt $D -json -i $OLD $NEW
golden diff-csv.txt $D -csv -i -keep 4 $OLD $NEW
golden diff-same.txt $D -i $NEW $NEW prog
golden diff-bad-epoch.txt $D $OLD 20990101T000000Z
golden diff-bad-event.txt $D -event branches $OLD $NEW
golden diff-usage.txt $D $OLD
}
# shellcheck disable=SC2086
{
golden diff-source.txt $D -source $OLD $NEW hot prog
golden diff-asm.txt $D -asm $OLD $NEW hot prog
golden diff-blocks.txt $D -blocks $OLD $NEW hot prog
golden prof-folded.txt "$DCPI_BIN/dcpiprof" -db "$DB" -folded
}

# The folded stacks add up to the report's total, whatever the compiler.
tot=$("$DCPI_BIN/dcpiprof" -db "$DB" -folded 2>/dev/null | awk '{ s += $NF } END { print s }')
[ "$tot" = 1325 ] && pass "-folded: the stacks add up to the 1325 cycles" ||
	fail "-folded: the stacks add up to the 1325 cycles" "got $tot"

# ---- pprof, decoded by protoc against the published schema ---------------------
if command -v protoc >/dev/null; then
	"$DCPI_BIN/dcpiprof" -db "$DB" -pprof "$T/p.pb.gz" 2>"$T/pp.err" &&
		zcat "$T/p.pb.gz" | protoc --decode perftools.profiles.Profile \
			-I "$DCPI_ROOT/tests/data" "$DCPI_ROOT/tests/data/profile.proto" >"$T/p.txt" 2>>"$T/pp.err"
	if [ -s "$T/p.txt" ]; then
		pass "-pprof: protoc decodes the file as perftools.profiles.Profile"
		# the values of each sample type, summed: cycles then instructions
		sums=$(awk '/^sample \{/ { s = 1; k = 0 } s && /value:/ { v[k++] += $2 }
			/^}/ { s = 0 } END { print v[0], v[1] }' "$T/p.txt")
		[ "$sums" = "1325 1865" ] && pass "-pprof: totals equal the report's (1325 cycles, 1865 instructions)" ||
			fail "-pprof: totals equal the report's" "got $sums"
		strs=$(sed -n 's/^string_table: //p' "$T/p.txt")
		[ "$(head -1 <<<"$strs")" = '""' ] && pass "-pprof: string 0 is empty" ||
			fail "-pprof: string 0 is empty" "$(head -3 <<<"$strs")"
		grep -qx "\"$BID\"" <<<"$strs" && grep -qx "\"$PROG\"" <<<"$strs" &&
			pass "-pprof: prog's mapping names its path and build-id" ||
			fail "-pprof: prog's mapping names its path and build-id" "$strs"
		for w in '"cycles"' '"instructions"' '"host"' '"golden"' '"pid"' '"hot"' '"do_syscall_64"'; do
			grep -qx "$w" <<<"$strs" || { fail "-pprof: string $w present" "$strs"; continue 2; }
		done
		pass "-pprof: event, label, host and function names present"
		grep -q "num: 4242" "$T/p.txt" && pass "-pprof: the per-process profile carries pid 4242" ||
			fail "-pprof: pid label"
		# every mapping has a range (prog's: from its first PT_LOAD to the end
		# of the executable one, as readelf shows them: one delta in prog),
		# every location's address is inside its mapping's
		read -r seg_off seg_va < <(readelf -lW "$PROG" | awk '$1 == "LOAD" { print $2, $3; exit }')
		read -r x_va x_msz < <(readelf -lW "$PROG" |
			awk '$1 == "LOAD" && ($7 ~ /E/ || $8 ~ /E/) { print $3, $6; exit }')
		if python3 - "$T/p.txt" "$((seg_va))" "$((x_va + x_msz))" "$((seg_off))" "$PROG" <<'PY' 2>"$T/py"
import re, sys
text = open(sys.argv[1]).read()
va, lim, off, prog = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
def blocks(name):
    return [dict((k, int(v)) for k, v in re.findall(r'^  (\w+): (\d+)$', b, re.M))
            for b in re.findall(r'^%s \{\n(.*?)^\}' % name, text, re.M | re.S)]
maps = {m["id"]: m for m in blocks("mapping")}
assert maps and all(m.get("memory_limit", 0) > m.get("memory_start", 0) for m in maps.values()), maps
mine = [m for m in maps.values() if strings[m["filename"]] == prog]
assert len(mine) == 1, mine
m = mine[0]
assert (m["memory_start"], m["memory_limit"], m.get("file_offset", 0)) == (va, lim, off), (m, va, lim, off)
for l in blocks("location"):
    m = maps[l["mapping_id"]]
    assert m["memory_start"] <= l["address"] < m["memory_limit"], (l, m)
m = re.search(r'^default_sample_type: (\d+)$', text, re.M)
assert m and strings[int(m.group(1))] == "cycles", "default_sample_type"
PY
		then
			pass "-pprof: mappings carry prog's executable segment; every location is inside its mapping; cycles shown first"
		else
			fail "-pprof: mapping ranges" "$(cat "$T/py")"
		fi
		nloc=$(grep -c '^location {' "$T/p.txt")
		# 16: pid 4343's unknown sample (dcpid -unknown) is a location of its own
		[ "$nloc" -eq 16 ] && pass "-pprof: one location per distinct sampled address of the latest epoch (16)" ||
			fail "-pprof: 16 locations" "got $nloc"
	else
		fail "-pprof: protoc decodes the file" "$(cat "$T/pp.err")"
	fi
else
	skip "protoc not installed (scripts/install-deps installs protobuf-compiler): pprof not decoded"
fi
# ---- pprof itself (built from Debian's source package) reads the file ---------
PPROF=$(pprof_tool) || { [ -s "$T/gob.err" ] &&
	fail "build pprof from /usr/share/gocode" "$(tail -5 "$T/gob.err")"; }
if [ -x "$PPROF" ] && [ -s "$T/p.pb.gz" ]; then
	# prog's profile alone: pprof (2021) picks the binaries of a profile of
	# many images in map order, and misses some of them now and then
	"$DCPI_BIN/dcpiprof" -db "$DB" -pprof "$T/prog.pb.gz" prog 2>/dev/null
	# -disasm: hot's instructions with their samples, by prog's own code
	"$PPROF" -disasm hot "$T/prog.pb.gz" >"$T/disasm" 2>"$T/disasm.err"
	flat=$(awk '/^ROUTINE/ { on = 1; next } on && /^ +[0-9]+ +[0-9.]+ +[0-9a-f]+:/ { s += $1 } END { print s + 0 }' "$T/disasm")
	top=$("$PPROF" -top "$T/prog.pb.gz" 2>/dev/null | awk '$NF == "hot" { print $1 }')
	if grep -q '^ROUTINE =* hot' "$T/disasm" && [ "$flat" -gt 0 ] && [ "$flat" = "$top" ]; then
		pass "pprof -disasm hot: its instructions, $flat samples, as pprof -top counts hot"
	else
		fail "pprof -disasm hot" "flat=$flat top=$top $(head -5 "$T/disasm") $(cat "$T/disasm.err")"
	fi
	# -weblist: the listing, and no mapping of [0, 0] (what every mapping was)
	if "$PPROF" -weblist hot -output "$T/web.html" "$T/prog.pb.gz" >/dev/null 2>"$T/web.err" &&
		grep -q 'hot' "$T/web.html" && ! grep -q 'mapping range \[0, 0\]' "$T/web.err"; then
		pass "pprof -weblist hot writes its listing"
	else
		fail "pprof -weblist hot" "$(cat "$T/web.err")"
	fi
else
	skip "no pprof (scripts/install-deps installs golang-go and golang-github-google-pprof-dev)"
fi
golden prof-pprof-bad.txt "$DCPI_BIN/dcpiprof" -db "$DB" -pprof /nonexistent/dir/p.pb.gz

# ---- dcpistats: a database with known variation ------------------------------------
stats_spec() {
	local hot6 warm4 cold0 e=0
	hot6=$(insn_off hot 6) && warm4=$(insn_off warm 4) && cold0=$(insn_off cold 0) || return 1
	echo "db $T/sdb"
	# epoch: hot warm cold samples (each epoch 1000)
	while read -r hot warm cold; do
		e=$((e + 1))
		cat <<EOF
epoch 2024020${e}T000000Z golden
stats samples 1000 lost 0 throttled 0 unknown 0 kernel 0 images 1 cpus 1 start 1706745600 updated 1706749200
stats-event cycles 100000 1000 3600000000000 3600000000000
profile file
path $PROG
image $PROG
event cycles 100000 1000000
row $hot6 $hot
row $warm4 $warm
row $cold0 $cold
end
EOF
	done <<EOF
600 300 100
610 290 100
590 310 100
400 500 100
410 490 100
390 510 100
EOF
}
stats_spec >"$T/sspec" && "$DCPI_BUILD/tests/mkdb" "$T/sspec" >/dev/null 2>"$T/smkdb.err" ||
	fail "mkdb writes the stats database" "$(cat "$T/smkdb.err")"
A3="20240201T000000Z 20240202T000000Z 20240203T000000Z"
B3="20240204T000000Z 20240205T000000Z 20240206T000000Z"
# shellcheck disable=SC2086
{
golden stats-one.txt $S -i $A3
golden stats-two.txt $S -i $A3 -- $B3
golden stats-json.txt $S -json -i $A3 -- $B3
golden stats-single.txt $S -i 20240201T000000Z -- 20240204T000000Z
golden stats-empty-group.txt $S -i $A3 --
golden stats-bad-epoch.txt $S 20240201T000000Z -- 20990101T000000Z
}
if command -v python3 >/dev/null; then
	# shellcheck disable=SC2086
	$S -json -i $A3 -- $B3 | python3 -c '
import json, sys
r = {x["procedure"]: x for x in json.load(sys.stdin)["rows"]}
assert r["hot"]["significant"] is True and r["warm"]["significant"] is True, r
assert r["cold"]["significant"] is False, r["cold"]
assert abs(r["hot"]["diff"] + 200) < 1e-9 and r["hot"]["ci95"][1] < 0
assert r["cold"]["ci95"][0] < 0 < r["cold"]["ci95"][1]
' 2>"$T/py" && pass "dcpistats: hot and warm changed significantly, cold did not" ||
		fail "dcpistats: significance as constructed" "$(cat "$T/py")"
	# shellcheck disable=SC2086
	$S -json -shares -i $A3 -- $B3 | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
assert d["measure"] == "shares", d["measure"]
assert abs(r["hot"]["diff"] + 20) < 1e-9 and r["hot"]["significant"] is True
assert r["cold"]["significant"] is False
' 2>"$T/py" && pass "dcpistats -shares: hot -20 points, significant; cold not" ||
		fail "dcpistats -shares" "$(cat "$T/py")"
	# shellcheck disable=SC2086
	$S -json -i 20240201T000000Z -- 20240204T000000Z | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["test"] == "poisson-sampling-error-95", d["test"]
assert all(x["significant"] is None for x in d["rows"])
' 2>"$T/py" && pass "dcpistats: one epoch a side computes no significance" ||
		fail "dcpistats: one epoch a side" "$(cat "$T/py")"
else
	skip "python3 not installed: JSON not parsed"
fi

# ---- amounts, not shares: work_a 3x cheaper, work_b and work_c untouched ----------
# Epochs C1..C3 (before) and D1..D3 (after): hot (work_a) 525 +- 10 -> 175 +- 5,
# warm (work_b) and cold (work_c) 175 in every epoch.  The "after" epochs
# last 1200 s where the "before" ones last 3600 s (the program got faster),
# so per second warm and cold ran 3x as often: -rate second says so.
amount_spec() {
	local hot6 warm4 cold0 e=0 len
	hot6=$(insn_off hot 6) && warm4=$(insn_off warm 4) && cold0=$(insn_off cold 0) || return 1
	echo "db $T/adb"
	for hot in 525 535 515 175 180 170; do
		e=$((e + 1))
		len=$([ $e -le 3 ] && echo 3600 || echo 1200)
		printf '%s\n' "epoch 2024030${e}T000000Z golden" \
			"stats samples $((hot + 350)) lost 0 throttled 0 unknown 0 kernel 0 images 1 cpus 1 start 1709251200 updated $((1709251200 + len))" \
			"stats-event cycles 100000 $((hot + 350)) ${len}000000000 ${len}000000000" \
			"profile file" "path $PROG" "image $PROG" "event cycles 100000 1000000" \
			"row $hot6 $hot" "row $warm4 175" "row $cold0 175" "end"
	done
}
amount_spec >"$T/aspec" && "$DCPI_BUILD/tests/mkdb" "$T/aspec" >/dev/null 2>"$T/amkdb.err" ||
	fail "mkdb writes the amounts database" "$(cat "$T/amkdb.err")"
C1=20240301T000000Z D1=20240304T000000Z
C3="$C1 20240302T000000Z 20240303T000000Z"
D3="$D1 20240305T000000Z 20240306T000000Z"
AD="$DCPI_BIN/dcpidiff -db $T/adb"
AS="$DCPI_BIN/dcpistats -db $T/adb"
# shellcheck disable=SC2086
{
golden diff-amounts.txt $AD -i $C1 $D1
golden diff-amounts-image.txt $AD $C1 $D1 prog
golden diff-amounts-shares.txt $AD -shares -i $C1 $D1
golden diff-amounts-rate.txt $AD -rate second -i $C1 $D1
golden diff-amounts-csv.txt $AD -csv -i $C1 $D1
golden diff-rate-shares.txt $AD -rate second -shares $C1 $D1
golden diff-rate-bad.txt $AD -rate minute $C1 $D1
golden stats-amounts.txt $AS -i $C3 -- $D3
golden stats-amounts-rate.txt $AS -rate second -i $C3 -- $D3
}
if command -v python3 >/dev/null; then
	# shellcheck disable=SC2086
	if $AD -json -i $C1 $D1 >"$T/ad.json" && $AS -json -i $C3 -- $D3 >"$T/as.json" &&
		python3 - "$T/ad.json" "$T/as.json" >/dev/null 2>"$T/py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
assert d["compare"] == "samples" and d["test"] == "poisson-exact-95", d
r = {x["procedure"]: x for x in d["rows"]}
assert r["hot"]["delta"] == -350 and r["hot"]["significant"] is True, r["hot"]
for p in ("warm", "cold"):
    assert r[p]["a"] == r[p]["b"] == 175 and r[p]["delta"] == 0, r[p]
    assert r[p]["significant"] is False and abs(r[p]["p"] - 1) < 1e-6, r[p]
assert abs(r["warm"]["delta_pp"] - (100 * 175 / 525 - 100 * 175 / 875)) < 1e-3
r = {x["procedure"]: x for x in s["rows"]}
assert s["measure"] == "samples", s["measure"]
assert r["hot"]["significant"] is True and r["hot"]["diff"] < -300, r["hot"]
assert r["warm"]["significant"] is False and r["cold"]["significant"] is False, r
assert r["warm"]["diff"] == 0 and r["cold"]["diff"] == 0
PY
	then
		pass "amounts: work_a a significant decrease; work_b and work_c (175 -> 175) not, in dcpidiff and dcpistats"
	else
		fail "amounts: only work_a changed" "$(cat "$T/py")"
	fi
	# shellcheck disable=SC2086
	$AD -json -rate second -i $C1 $D1 | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["procedure"]: x for x in d["rows"]}
assert d["compare"] == "per-second" and d["a"]["seconds"] == 3600 and d["b"]["seconds"] == 1200
assert abs(r["warm"]["rate_a"] - 175 / 3600) < 1e-4 and abs(r["warm"]["rate_b"] - 175 / 1200) < 1e-4
assert r["warm"]["significant"] is True and abs(r["warm"]["ratio"] - 3) < 1e-9
' 2>"$T/py" && pass "-rate second: per second of epoch, warm ran 3x as often" ||
		fail "-rate second" "$(cat "$T/py")"
else
	skip "python3 not installed: JSON not parsed"
fi
done_testing
