#!/usr/bin/env bash
# dcpicat end to end: a profile written by the unit test's generator
# (test_profile --write, which also describes what it wrote) is printed by
# dcpicat; the expected header and rows are computed here from that
# description.  Then damaged copies and bad options.
set -u
: "${DCPI_BIN:?}" "${DCPI_BUILD:?}" "${DCPI_ROOT:?}"
CAT=$DCPI_BIN/dcpicat
GEN=$DCPI_BUILD/tests/test_profile
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }
# diff, showing the difference as TAP comments when it fails
same() { diff -u "$1" "$2" >"$T/diff" && return 0; sed 's/^/# /' "$T/diff"; return 1; }

T=$(mktemp -d /tmp/dcpi-cat.XXXXXX)
trap 'rm -rf "$T"' EXIT
P=$T/app.prof

if ! "$GEN" --write "$P" >"$T/desc" 2>"$T/gen.err"; then
	nok "generate a profile with $GEN"; sed 's/^/# /' "$T/gen.err"; echo "1..$n"; exit 1
fi
ok "generate a profile"
field() { awk -v k="$1" '$1 == k { print $2 }' "$T/desc"; }

# ---- the expected output, from the generator's description ----
awk '$1 == "row"' "$T/desc" | sort -k2,2n >"$T/rows"
{
	echo "path: $(field path)"
	echo "build-id: $(field build-id)"
	echo "size: $(field size)"
	echo "mtime: $(field mtime) ($(date -u -d "@$(field mtime)" +%Y-%m-%dT%H:%M:%SZ))"
	echo "epoch: $(field epoch)"
	echo "platform: $(field platform)"
	echo "kind: $(field kind)"
	echo "pid: $(field pid)"
	printf 'text start: 0x%x\n' "$(field text-start)"
	printf 'text size: 0x%x\n' "$(field text-size)"
	i=0
	while read -r _ name period ppm; do
		i=$((i + 1))
		total=$(awk -v c=$((i + 2)) '{ s += $c } END { print s + 0 }' "$T/rows")
		printf 'event %s: period %s, samples %s, monitored %d.%04d%%\n' \
			"$name" "$period" "$total" $((ppm / 10000)) $((ppm % 10000))
	done < <(awk '$1 == "event"' "$T/desc")
	echo "rows: $(wc -l <"$T/rows")"
} >"$T/want.header"
names=$(awk '$1 == "event" { printf " %s", $2 }' "$T/desc")
hexrows() { while read -r _ off c1 c2; do printf '0x%x %s %s\n' "$off" "$c1" "$c2"; done; }
hexrows <"$T/rows" >"$T/want.rows"
sort -k3,3nr -k4,4nr -k2,2n "$T/rows" | hexrows >"$T/want.bycount"

# ---- a good file ----
"$CAT" "$P" >"$T/out" 2>"$T/err"
check "dcpicat exits 0 on a good profile" [ $? -eq 0 ]
check "and prints nothing on stderr" [ ! -s "$T/err" ]
sed -n '1,/^rows: /p' "$T/out" >"$T/got.header"
check "header fields are the generator's, totals are the rows' sums" same "$T/want.header" "$T/got.header"
check "a blank line, then the column header" \
	[ "$(sed -n '/^rows: /{n;p;n;p}' "$T/out" | awk '{ $1 = $1 } 1')" = "$(printf '\noffset%s' "$names")" ]
sed '1,/^offset /d' "$T/out" | awk '{ $1 = $1 } 1' >"$T/got.rows"
check "one row per offset, ascending, counts per event" same "$T/want.rows" "$T/got.rows"

"$CAT" -sort count "$P" | sed '1,/^offset /d' | awk '{ $1 = $1 } 1' >"$T/got.bycount"
check "-sort count orders by the first event's count" same "$T/want.bycount" "$T/got.bycount"
"$CAT" --sort=count -keep 3 "$P" | sed '1,/^offset /d' | awk '{ $1 = $1 } 1' >"$T/got.keep"
head -3 "$T/want.bycount" >"$T/want.keep"
check "-keep 3 keeps the top three (--sort= form accepted)" same "$T/want.keep" "$T/got.keep"
"$CAT" -header "$P" >"$T/got.only"
check "-header prints the header only" same "$T/want.header" "$T/got.only"

cp "$P" "$T/second.prof"
"$CAT" -header "$P" "$T/second.prof" >"$T/two"
{ echo "==> $P <=="; cat "$T/want.header"; echo; echo "==> $T/second.prof <=="
  cat "$T/want.header"; } >"$T/want.two"
check "several files: '==> FILE <==' before each, a blank line between" same "$T/want.two" "$T/two"

# ---- damaged files ----
size=$(stat -c %s "$P")
flip() { # flip all bits of byte $2 of file $1
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf %03o $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
for cut in 8 64 $((size * 3 / 4)) flip; do
	bad=$T/bad-$cut.prof
	if [ "$cut" = flip ]; then cp "$P" "$bad"; flip "$bad" $((size / 2)); what="a flipped byte"
	else head -c "$cut" "$P" >"$bad"; what="cut at $cut of $size bytes"; fi
	"$CAT" "$bad" >/dev/null 2>"$T/err"
	rc=$?
	check "$what: exit 1 (got $rc)" [ $rc -eq 1 ]
	check "$what: one error line naming the file" \
		[ "$(wc -l <"$T/err")" -eq 1 -a "$(grep -c "^dcpicat: error: $bad: ." "$T/err")" -eq 1 ]
	sed 's/^/# /' "$T/err"
done
"$CAT" "$T/bad-8.prof" "$P" >"$T/out" 2>"$T/err"
rc=$?
check "a bad file among good ones: exit 1, the good one still printed" \
	[ $rc -eq 1 -a "$(grep -c '^==> ' "$T/out")" -eq 1 -a "$(grep -c '^0x' "$T/out")" -eq "$(wc -l <"$T/rows")" ]
"$CAT" "$T" >/dev/null 2>"$T/err"
check "a directory: exit 1 with an error" [ $? -eq 1 -a -s "$T/err" ]

# ---- usage ----
for args in "-bogus $P" "-sort size $P" "-keep -1 $P" "-keep" ""; do
	# shellcheck disable=SC2086
	"$CAT" $args >/dev/null 2>"$T/err"
	rc=$?
	check "usage error for '$args': exit 2 (got $rc)" [ $rc -eq 2 -a -s "$T/err" ]
done
"$CAT" --help >"$T/help"
check "--help exits 0" [ $? -eq 0 ]
missing=
for opt in $(grep -oE '^  -[a-z]+' "$T/help"); do
	# the man page introduces each option as ".B \-name", ".BI \-name ARG" or ".BR \-name ..."
	grep -qE "^\.B[IR]? \\\\-${opt#-}( |$)" "$DCPI_ROOT/man/dcpicat.1" 2>/dev/null ||
		missing="$missing $opt"
done
check "every --help option is in dcpicat(1)${missing:+ (missing:$missing)}" [ -z "$missing" ]
echo "1..$n"
