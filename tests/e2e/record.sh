#!/usr/bin/env bash
# End to end: dcpi record runs a workload built here, profiles it into a new
# epoch of a temporary database, and prints the dcpiprof report.
. "$DCPI_ROOT/tests/tap.sh"

REC=$DCPI_BIN/dcpi-record
build_workload spin || { fail "build spin"; done_testing; }

# The profile of image PATH in one epoch directory (EPOCHDIR/HOST/*.prof).
prof_in() {
	local f
	for f in "$1"/*/*.prof; do
		[ -e "$f" ] || continue
		"$DCPI_BIN/dcpicat" -header "$f" 2>/dev/null | grep -qxF "path: $2" && echo "$f"
	done
}
epochs() { ls -d "$1"/2*/ 2>/dev/null | wc -l; }
latest() { ls -d "$1"/2*/ | tail -1; }
# "EVENT PERIOD" of the report's first event: the line after the "------" rule.
report_event() { awk '/^------/ { getline; print $1, $3; exit }' <<<"$1"; }
# Whether N samples are 60-130% of MS milliseconds of CPU at PERIOD ns.
near_cpu_time() {
	local n=$1 ms=$2 period=$3 want=$(($2 * 1000000 / $3))
	echo "# $n samples, $want expected for $ms ms at $period ns"
	[ "$n" -ge $((want * 6 / 10)) ] && [ "$n" -le $((want * 13 / 10)) ]
}

# --- usage errors: before anything is created --------------------------------
out=$("$REC" -db "$T/u" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no command" <<<"$out" && pass "no command: usage error, exit 2" ||
	fail "no command: usage error, exit 2" "rc=$rc $out"
out=$("$REC" -db "$T/u" -bogus -- true 2>&1); rc=$?
[ $rc -eq 2 ] && pass "unknown option: exit 2" || fail "unknown option: exit 2" "rc=$rc $out"
out=$("$REC" -db "$T/u" -event cylces -- true 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q cylces <<<"$out" && pass "bad event named in a usage error" ||
	fail "bad event named in a usage error" "rc=$rc $out"
out=$("$REC" -db "$T/u" -sort nosuchevent -- true 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q nosuchevent <<<"$out" && [ ! -e "$T/u" ] &&
	pass "-sort by an event not sampled: usage error before the run" ||
	fail "-sort by an event not sampled: usage error before the run" "rc=$rc $out"
"$REC" -help >"$T/help" 2>&1 || fail "-help exits 0"
opts=$(grep -oE '^  -[a-z-]+' "$T/help" | tr -d ' ')
missing=
for o in $opts; do
	name=${o#-}
	grep -qE "^\.(B|BI|BR) \\\\-${name//-/\\\\-}( |\$)" "$DCPI_ROOT/man/dcpi-record.1" ||
		missing="$missing $o"
done
[ -n "$opts" ] && [ -z "$missing" ] && pass "every -help option is in dcpi-record(1)" ||
	fail "every -help option is in dcpi-record(1)" "missing:$missing"

# --- can this machine sample at all? -------------------------------------------
out=$("$REC" -quiet -db "$T/probe" -- true 2>&1); rc=$?
if [ $rc -ne 0 ]; then
	skip "perf_event_open is not available here: $out"
	done_testing
fi

# --- one spinning program -------------------------------------------------------
DB=$T/db
"$REC" -db "$DB" -- "$T/spin" 800 >"$T/out" 2>"$T/err1"; rc=$?
rep=$(cat "$T/out")
[ $rc -eq 0 ] && pass "record spin: exit 0" || fail "record spin: exit 0" "rc=$rc $(cat "$T/err1")"
awk '/^====/ { t = 1; next } t && $NF == p { found = 1 } END { exit !found }' p="$T/spin" <<<"$rep" &&
	pass "the report's image table names $T/spin" || fail "the report's image table names $T/spin" "$rep"
[ "$(epochs "$DB")" -eq 1 ] && pass "exactly one epoch" || fail "exactly one epoch" "$(ls "$DB")"
[ "$(stat -c %a "$DB")" = 700 ] && pass "database created 0700" || fail "database created 0700"
ep=$(latest "$DB"); epname=$(basename "$ep")
sum=$(grep '^dcpi record: ' "$T/err1")
n_sum=$(sed -n 's/^dcpi record: \([0-9]*\) samples (lost \([0-9]*\), unknown \([0-9]*\)) in \(.*\) of \(.*\)$/\1/p' <<<"$sum")
n_rep=$(sed -n 's/^Samples: \([0-9]*\),.*/\1/p' <<<"$rep")
grep -qF " in $epname of $DB" <<<"$sum" && [ -n "$n_sum" ] && [ "$n_sum" = "$n_rep" ] &&
	pass "summary line names the epoch and agrees with the report ($n_sum samples)" ||
	fail "summary line names the epoch and agrees with the report" "$sum | report: $n_rep"
grep -q "^Epoch: $epname\$" <<<"$rep" && pass "the report is of the new epoch" ||
	fail "the report is of the new epoch" "$rep"
read -r event period <<<"$(report_event "$rep")"
echo "# sampling $event every $period"
prof=$(prof_in "$ep" "$T/spin")
if [ -n "$prof" ]; then
	n=$("$DCPI_BIN/dcpicat" -header "$prof" | sed -n 's/^event [^:]*: period [0-9]*, samples \([0-9]*\),.*/\1/p' | head -1)
	if [ "$event" = cpu-clock ] || [ "$event" = task-clock ]; then
		near_cpu_time "$n" 880 "$period" && pass "spin's samples match 0.88 s of CPU ($n)" ||
			fail "spin's samples match 0.88 s of CPU" "$n samples"
		# one event, no multiplexing: monitored all the time the process ran
		mon=$("$DCPI_BIN/dcpicat" -header "$prof" | sed -n 's/.*monitored \([0-9]*\)\..*/\1/p' | head -1)
		[ "${mon:-0}" -ge 95 ] && pass "fraction monitored is the process's ($mon%)" ||
			fail "fraction monitored is the process's" "$mon%"
	else
		[ "$n" -gt 100 ] && pass "spin got samples ($n)" || fail "spin got samples" "$n"
	fi
	[ "$(stat -c %a "$prof")" = 600 ] && pass "profile file is 0600" || fail "profile file is 0600"
else
	fail "spin has a profile in the new epoch" "$(ls -R "$DB")"
fi
stats=$(ls "$ep"/*/epoch.stats 2>/dev/null | head -1)
[ -n "$stats" ] && grep -q "^samples $n_sum\$" "$stats" && pass "epoch.stats written with the samples" ||
	fail "epoch.stats written with the samples" "$(cat "$stats" 2>/dev/null)"

# --- children are followed; a second record is a second epoch -------------------
"$REC" -quiet -db "$DB" -- sh -c "$T/spin 300; $T/spin 300" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/out" ] && pass "-quiet: exit 0, no report" ||
	fail "-quiet: exit 0, no report" "rc=$rc $(cat "$T/out" "$T/err")"
[ "$(epochs "$DB")" -eq 2 ] && pass "a second record makes a second epoch" ||
	fail "a second record makes a second epoch" "$(ls "$DB")"
prof=$(prof_in "$(latest "$DB")" "$T/spin")
if [ -n "$prof" ]; then
	n=$("$DCPI_BIN/dcpicat" -header "$prof" | sed -n 's/^event [^:]*: period [0-9]*, samples \([0-9]*\),.*/\1/p' | head -1)
	if [ "$event" = cpu-clock ] || [ "$event" = task-clock ]; then
		near_cpu_time "$n" 660 "$period" && pass "children of sh followed: 0.66 s of spin ($n)" ||
			fail "children of sh followed: 0.66 s of spin" "$n samples"
	else
		[ "$n" -gt 100 ] && pass "children of sh followed ($n)" || fail "children of sh followed" "$n"
	fi
else
	fail "children of sh followed: spin has a profile" "$(ls -R "$(latest "$DB")")"
fi

# --- exit status, missing commands ---------------------------------------------
"$REC" -quiet -db "$T/st" -- sh -c 'exit 3' >/dev/null 2>&1; rc=$?
[ $rc -eq 3 ] && pass "the command's exit status propagates (3)" || fail "the command's exit status propagates" "rc=$rc"
"$REC" -quiet -db "$T/st" -- sh -c 'kill -9 $$' >/dev/null 2>&1; rc=$?
[ $rc -eq 137 ] && pass "killed by SIGKILL: exit 137" || fail "killed by SIGKILL: exit 137" "rc=$rc"
before=$(epochs "$T/st")
out=$("$REC" -db "$T/st" -- "$T/no-such-command" 2>&1); rc=$?
[ $rc -eq 127 ] && grep -qxF "dcpi-record: error: cannot run '$T/no-such-command': No such file or directory" <<<"$out" &&
	pass "missing command: exit 127 with the message" || fail "missing command: exit 127 with the message" "rc=$rc $out"
[ "$(epochs "$T/st")" -eq "$before" ] && pass "missing command: no epoch made" ||
	fail "missing command: no epoch made" "$(ls "$T/st")"
touch "$T/notexec"; chmod 644 "$T/notexec"
out=$("$REC" -db "$T/st" -- "$T/notexec" 2>&1); rc=$?
[ $rc -eq 126 ] && grep -q "cannot run '$T/notexec'" <<<"$out" && pass "non-executable command: exit 126" ||
	fail "non-executable command: exit 126" "rc=$rc $out"

# --- the multi-call name, -o, database defaults ----------------------------------
"$DCPI_BIN/dcpi" record -db "$T/mc" -o "$T/report.txt" -keep 1 -i -- "$T/spin" 100 >"$T/out" 2>/dev/null; rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/out" ] && grep -q "spin_hot" "$T/report.txt" &&
	pass "'dcpi record -o FILE -i': the procedure report goes to FILE" ||
	fail "'dcpi record -o FILE -i': the procedure report goes to FILE" "rc=$rc $(head -20 "$T/report.txt")"
rows=$(awk '/^====/ { getline; t = 1; next } t && NF' "$T/report.txt" | wc -l)
[ "$rows" -eq 1 ] && pass "-keep 1 passed through to the report" || fail "-keep 1 passed through" "$rows rows"
mkdir "$T/cwd"
(cd "$T/cwd" && env -u DCPIDB "$REC" -quiet -- true >/dev/null 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(epochs "$T/cwd/dcpidb")" -eq 1 ] && pass "default database ./dcpidb" ||
	fail "default database ./dcpidb" "rc=$rc $(ls "$T/cwd")"
grep -qx "writer dcpi $(cat "$DCPI_ROOT/VERSION")" "$T"/cwd/dcpidb/*/*/epoch.stats &&
	pass "epoch.stats names the version that wrote it" ||
	fail "epoch.stats names the version that wrote it" "$(head -3 "$T"/cwd/dcpidb/*/*/epoch.stats)"
out=$(cd "$T/cwd" && env -u DCPIDB "$DCPI_BIN/dcpiprof" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^Database: ./dcpidb" <<<"$out" &&
	pass "dcpiprof in the same directory reads ./dcpidb" ||
	fail "dcpiprof in the same directory reads ./dcpidb" "rc=$rc $out"
out=$(cd "$T" && env -u DCPIDB "$DCPI_BIN/dcpiprof" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no database" <<<"$out" &&
	pass "without -db, DCPIDB or ./dcpidb: a usage error" ||
	fail "without -db, DCPIDB or ./dcpidb: a usage error" "rc=$rc $out"
(cd "$T/cwd" && DCPIDB=$T/envdb "$REC" -quiet -- true >/dev/null 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(epochs "$T/envdb")" -eq 1 ] && pass "\$DCPIDB is the database when set" ||
	fail "\$DCPIDB is the database when set" "rc=$rc"

# --- signals: TERM is passed on, and what ran is still written --------------------
"$REC" -quiet -db "$T/sig" -- sh -c "$T/spin 200; exec sleep 30" >/dev/null 2>"$T/err" &
pid=$!
for i in $(seq 100); do pgrep -P $pid -x sleep >/dev/null && break; sleep 0.1; done
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] && pass "SIGTERM is forwarded; exit 128+15" || fail "SIGTERM is forwarded; exit 128+15" "rc=$rc $(cat "$T/err")"
[ -n "$(prof_in "$(latest "$T/sig")" "$T/spin")" ] && pass "after SIGTERM the profiles are written" ||
	fail "after SIGTERM the profiles are written" "$(ls -R "$T/sig")"

# --- kernel samples, -a: as root ---------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
	ep=$(ls -d "$DB"/2*/ | head -1)
	[ -s "$(ls "$ep"/*/kallsyms.gz 2>/dev/null | head -1)" ] && pass "root: kallsyms snapshot in the epoch" ||
		fail "root: kallsyms snapshot in the epoch"
	grep -q "user-space only" "$T/err1" && fail "root: kernel included (no user-space note)" ||
		pass "root: kernel included (no user-space note)"
	# the epoch's snapshot is cut down when it closes to the kernel
	# procedures its profiles and stacks sampled: the reports name every
	# kernel sample as the whole snapshot does, in a file a fraction its size
	"$REC" -quiet -stacks -db "$T/kcut" -- sh -c 'for i in $(seq 200); do ls -R /usr/share/doc >/dev/null; done' 2>/dev/null
	kp=$(dirname "$(ls "$T"/kcut/2*/*/epoch.stats)")
	kr() { "$DCPI_BIN/dcpiprof" -db "$T/kcut" -i -json -keep 100000 "[kernel.kallsyms]" 2>/dev/null
	       "$DCPI_BIN/dcpiprof" -db "$T/kcut" -folded 2>/dev/null | grep -F 'kernel' | sort; }
	cut=$(kr); cutsize=$(stat -c %s "$kp/kallsyms.gz")
	grep -v ' __pfx_' /proc/kallsyms | gzip -1 >"$kp/kallsyms.gz"
	whole=$(kr); wholesize=$(stat -c %s "$kp/kallsyms.gz")
	n=$(grep -c '"procedure"' <<<"$cut")
	[ "$cut" = "$whole" ] && [ "$n" -ge 5 ] && [ $((cutsize * 20)) -lt "$wholesize" ] &&
		pass "the kallsyms snapshot cut down at the epoch's close: $n kernel procedures and their stacks named as by the whole one; $cutsize bytes for $wholesize" ||
		fail "the kallsyms snapshot cut down at the epoch's close" "n=$n $cutsize/$wholesize $(diff <(echo "$cut") <(echo "$whole") | head -20)"
	out=$("$REC" -a -db "$T/all" -- "$T/spin" 200 2>"$T/err"); rc=$?
	[ $rc -eq 0 ] && grep -qE " $T/spin\$" <<<"$out" && pass "-a as root: the report names spin" ||
		fail "-a as root: the report names spin" "rc=$rc $(cat "$T/err")"
else
	skip "kernel samples and -a: not root"
fi

# --- as another user: what perf_event_paranoid allows ------------------------------
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	skip "non-root run: needs root and setpriv to switch users"
else
	U=$(mktemp -d); chown 65534:65534 "$U"; at_exit "rm -rf '$U'"
	asuser() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	out=$(asuser "$REC" -db "$U/db" -- "$T/spin" 200 2>&1); rc=$?
	echo "# perf_event_paranoid $paranoid"
	case $paranoid in
	-1|0|1)
		[ $rc -eq 0 ] && ! grep -q "user-space only" <<<"$out" &&
			pass "non-root, paranoid $paranoid: works, kernel included" ||
			fail "non-root, paranoid $paranoid: works, kernel included" "rc=$rc $out" ;;
	2)
		[ $rc -eq 0 ] && grep -q "note: user-space only (not root; see perf_event_paranoid)" <<<"$out" &&
			grep -qE " $T/spin\$" <<<"$out" && pass "non-root, paranoid 2: user-space only, says so" ||
			fail "non-root, paranoid 2: user-space only, says so" "rc=$rc $out"
		p=$(prof_in "$(latest "$U/db")" "[kernel.kallsyms]")
		[ -z "$p" ] && pass "non-root, paranoid 2: no kernel profile" ||
			fail "non-root, paranoid 2: no kernel profile" "$p" ;;
	*)
		[ $rc -eq 1 ] && grep -q "perf_event_paranoid" <<<"$out" &&
			pass "non-root, paranoid $paranoid: refused, naming perf_event_paranoid" ||
			fail "non-root, paranoid $paranoid: refused, naming perf_event_paranoid" "rc=$rc $out" ;;
	esac
	if [ "$paranoid" != -1 ] && [ "$paranoid" != 0 ]; then
		out=$(asuser "$REC" -a -db "$U/dba" -- true 2>&1); rc=$?
		[ $rc -eq 1 ] && grep -q -- "-a.*root" <<<"$out" && pass "non-root -a: a clear error" ||
			fail "non-root -a: a clear error" "rc=$rc $out"
	fi
fi

# --- labelled profiles: one pipeline, each program apart ------------------
# spin runs twice under two command names (a copy named spin2), 400 and
# 200 ms; the time each got must be told apart by comm, and add up.
cp "$T/spin" "$T/spin2"
LDB=$T/labelled
"$REC" -db "$LDB" -label comm,uid -quiet -- sh -c "'$T/spin' 400; '$T/spin2' 200" 2>"$T/lerr"; rc=$?
by=$("$DCPI_BIN/dcpilabel" -db "$LDB" -by comm -json 2>&1)
n1=$(grep -o '"comm": "spin", "profiles": [0-9]*, "counts": \[[0-9]*' <<<"$by" | sed 's/.*\[//')
n2=$(grep -o '"comm": "spin2", "profiles": [0-9]*, "counts": \[[0-9]*' <<<"$by" | sed 's/.*\[//')
period=$("$DCPI_BIN/dcpiprof" -db "$LDB" | awk '/^------/ { getline; print $3; exit }')
if [ $rc -eq 0 ] && [ -n "$n1" ] && [ -n "$n2" ] && near_cpu_time "$n1" 440 "$period" &&
	near_cpu_time "$n2" 220 "$period"; then
	pass "-label comm: spin and spin2 apart ($n1 and $n2 samples)"
else
	fail "-label comm: spin and spin2 apart" "rc $rc $(cat "$T/lerr") $by"
fi
row=$("$DCPI_BIN/dcpiprof" -db "$LDB" -by comm -label uid=$(id -u) -csv "$T/spin2" 2>/dev/null |
	grep "^$T/spin2,spin_hot,,spin2,")
[ -n "$row" ] && pass "dcpiprof -by comm -label uid=$(id -u): spin2's spin_hot under comm spin2" ||
	fail "dcpiprof -by comm -label: spin2's spin_hot" "$("$DCPI_BIN/dcpiprof" -db "$LDB" -by comm -csv "$T/spin2" 2>&1)"
# A path that is not UTF-8 (Linux names are bytes): the JSON reports carry
# it with U+FFFD for the bad byte, and a strict parser takes them.
odd="$T/sp$(printf '\377')in"
cp "$T/spin" "$odd"
"$REC" -db "$T/odd" -quiet -- "$odd" 200 2>/dev/null
for args in "-json" "-i -json"; do
	# shellcheck disable=SC2086
	"$DCPI_BIN/dcpiprof" -db "$T/odd" $args >"$T/odd.json" 2>/dev/null
	python3 - "$T/odd.json" "$T/sp" <<'EOF2' && pass "dcpiprof $args: a path not UTF-8 comes out as U+FFFD, strict JSON" ||
import json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw.decode("utf-8", errors="strict"))
want = sys.argv[2] + "\ufffdin"
assert any(r["image"] == want for r in d["rows"]), raw[:400]
EOF2
		fail "dcpiprof $args: a path not UTF-8 comes out as U+FFFD, strict JSON" "$(head -c 600 "$T/odd.json")"
done
done_testing
