#!/usr/bin/env bash
# Options are never guessed: DCPI's one-letter forms and abbreviations
# that getopt_long_only would have completed into other options (dcpid -i
# into -imagecache, -m into -merge, -d into -db) are refused with one
# usage error (exit 2, one message line plus the --help hint), nothing on
# standard output, nothing created.  Spelled-out options still work.
. "$DCPI_ROOT/tests/tap.sh"
cd "$T" || exit 1

refused() { # CMD ARGS...: refused as a usage error, said once
	local out rc
	out=$("$DCPI_BIN/$@" 2>"$T/err"); rc=$?
	if [ $rc -eq 2 ] && [ -z "$out" ] && [ "$(wc -l <"$T/err")" -eq 2 ] &&
		grep -qE "^$1: (unknown option|option .* needs a value)" "$T/err" &&
		[ -z "$(ls "$T" | grep -v '^err$')" ]; then
		pass "$*: refused once ($(head -1 "$T/err"))"
	else
		fail "$*: refused once" "rc=$rc out=$out err=$(cat "$T/err") files=$(ls "$T")"
	fi
	rm -rf "${T:?}"/* 2>/dev/null
}

while read -r line; do
	[ -n "$line" ] || continue
	# shellcheck disable=SC2086
	refused $line
done <<'EOF2'
dcpid -i python3 db
dcpid -hash 3 db
dcpid -d db
dcpid -m 5 db
dcpid -imagecach db
dcpid -eve cycles db
dcpid --merg 5 db
dcpid -db
dcpictl -d db status
dcpictl -time 3 status
dcpiprof -e latest
dcpiprof -sor cycles
dcpiprof -k 3
dcpilist -so main prog
dcpitopcounts -epo all
dcpicat -j x.prof
dcpi-record -d db -- true
dcpi-record -imagecach -- true
dcpidiff -ev cycles A B
dcpistats -jso A -- B
dcpicalc -cut 5 hot prog
dcpicalc -ex hot prog
dcpix -d db -- true
dcpix -qui -- true
EOF2

# Every one-letter option of every command, DCPI's included: a letter its
# -help lists does what it says there; every other letter is refused as
# above, never taken for the start of a longer option.
for c in dcpid dcpictl dcpicat dcpiprof dcpilist dcpicalc dcpix dcpitopcounts dcpitopstalls dcpiwhatcg dcpicoverage dcpidiff dcpistats \
	 dcpilabel dcpitar dcpi-record dcpi-report; do
	help=$("$DCPI_BIN/$c" -help 2>&1)
	documented="" nrefused=0 bad=""
	for l in {a..z} {A..Z}; do
		if grep -qE "^  (-[a-zA-Z-]+[^,]*, )*-$l( |,|\$)" <<<"$help"; then
			documented+=$l
			continue
		fi
		out=$(env -u DCPIDB "$DCPI_BIN/$c" "-$l" x y -- true 2>"$T/err"); rc=$?
		if [ $rc -eq 2 ] && [ -z "$out" ] && [ "$(wc -l <"$T/err")" -eq 2 ] &&
			grep -q "^$c: unknown option '-$l'" "$T/err"; then
			nrefused=$((nrefused + 1))
		else
			bad+=" -$l(rc=$rc: $(head -1 "$T/err"))"
		fi
		rm -rf "${T:?}"/* 2>/dev/null
	done
	[ -z "$bad" ] && [ $nrefused -eq $((52 - ${#documented})) ] &&
		pass "$c: $nrefused one-letter options refused, documented: ${documented:-none}" ||
		fail "$c: undocumented one-letter options refused" "$bad"
done

# -version and --version, on every command, wherever they stand before --
want=$(cat "$DCPI_ROOT/VERSION")
for c in dcpid dcpictl dcpicat dcpiprof dcpilist dcpicalc dcpix dcpitopcounts dcpitopstalls dcpiwhatcg dcpicoverage dcpidiff dcpistats \
	 dcpilabel dcpitar dcpi-record dcpi-report; do
	out=$("$DCPI_BIN/$c" -version 2>&1); rc=$?
	out2=$("$DCPI_BIN/$c" --version 2>&1)
	[ $rc -eq 0 ] && [ "$out" = "$c (dcpi) $want" ] && [ "$out2" = "$out" ] &&
		pass "$c -version: $out" || fail "$c -version" "rc=$rc '$out' '$out2'"
done

# spelled out, the same options still parse (here: up to a missing database)
out=$(env -u DCPIDB "$DCPI_BIN/dcpiprof" -sort cycles -keep 3 -epoch latest 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no database" <<<"$out" && pass "spelled-out options still parse" ||
	fail "spelled-out options still parse" "rc=$rc $out"
out=$("$DCPI_BIN/dcpitopcounts" -n3 -help 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^usage:" <<<"$out" && pass "short options with attached values" ||
	fail "short options with attached values" "rc=$rc $out"
out=$("$DCPI_BIN/dcpi-record" -help -- sh -c 'exit 0' 2>&1); rc=$?
[ $rc -eq 0 ] && pass "-help before --" || fail "-help before --" "rc=$rc $out"
# dcpi --version and -V (dcpi(1) promises them) print the VERSION file's
for v in --version -version -V; do
	out=$("$DCPI_BIN/dcpi" $v 2>&1); rc=$?
	[ $rc -eq 0 ] && [ "$out" = "dcpi $(cat "$DCPI_ROOT/VERSION")" ] && pass "dcpi $v: $out" ||
		fail "dcpi $v prints the version" "rc=$rc $out"
done
# --help and the man pages agree: every option -help lists is documented
for cmd in dcpid dcpictl dcpicat dcpiprof dcpilist dcpicalc dcpix dcpitopcounts dcpitopstalls dcpiwhatcg dcpicoverage dcpidiff dcpistats \
	 dcpilabel dcpitar dcpi-record dcpi-report; do
	man=$DCPI_ROOT/man/$cmd.1
	[ -f "$man" ] || man=$DCPI_ROOT/man/$cmd.8
	missing=
	opts=$("$DCPI_BIN/$cmd" -help 2>&1 | grep -oE '^  -[a-z-]+' | tr -d ' ')
	for o in $opts; do
		o=${o#-}
		grep -qE "^\.(B|BI|BR) \\\\-${o//-/\\\\-}( |\$)" "$man" || missing="$missing -$o"
	done
	[ -n "$opts" ] && [ -z "$missing" ] && pass "every -help option of $cmd is in its man page" ||
		fail "every -help option of $cmd is in its man page" "missing:$missing"
done
done_testing
