#!/usr/bin/env bash
# Two procedures of one name (static functions in two files; a JIT's
# recompiled function is the same case): dcpiprof keeps them apart as
# NAME@0xADDR, its JSON gives each row's address, and dcpilist takes that
# name where the bare name is ambiguous.  The addresses are nm's.
. "$DCPI_ROOT/tests/tap.sh"
cc -g -O1 -o "$T/twins" "$DCPI_ROOT/tests/workloads/twins_a.c" \
	"$DCPI_ROOT/tests/workloads/twins_b.c" || { fail "build twins"; done_testing; }
mapfile -t addrs < <(nm "$T/twins" | awk '$3 == "twin" { print $1 }' | sed 's/^0*/0x/' | sort)
[ ${#addrs[@]} -eq 2 ] || { fail "nm finds two twins" "${addrs[*]}"; done_testing; }
DB=$T/db
"$DCPI_BIN/dcpi-record" -db "$DB" -quiet -- "$T/twins" 100 >/dev/null 2>"$T/rec.err" ||
	{ fail "dcpi record twins" "$(cat "$T/rec.err")"; done_testing; }

rows=$("$DCPI_BIN/dcpiprof" -db "$DB" -i "$T/twins" 2>/dev/null | awk '$4 ~ /^twin/ { print $4 }' | sort)
want=$(printf 'twin@%s\n' "${addrs[@]}" | sort)
[ "$rows" = "$want" ] && pass "dcpiprof -i: two rows, twin@${addrs[0]} and twin@${addrs[1]}" ||
	fail "dcpiprof -i: two twin rows named by nm's addresses" "got: $rows; want: $want"
json=$("$DCPI_BIN/dcpiprof" -db "$DB" -i -json "$T/twins" 2>/dev/null |
	python3 -c 'import json, sys
print("\n".join(sorted(r["address"] for r in json.load(sys.stdin)["rows"] if r["procedure"].startswith("twin@"))))')
[ "$json" = "$(printf '%s\n' "${addrs[@]}")" ] && pass "-json: each row's address is its symbol's" ||
	fail "-json: addresses" "$json"
out=$("$DCPI_BIN/dcpilist" -db "$DB" twin "$T/twins" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "ambiguous" <<<"$out" && grep -q "^  twin@${addrs[1]} " <<<"$out" &&
	pass "dcpilist twin: ambiguous, the candidates named twin@0xADDR" ||
	fail "dcpilist twin: ambiguous with candidates" "rc=$rc $out"
for a in "${addrs[@]}"; do
	out=$("$DCPI_BIN/dcpilist" -db "$DB" "twin@$a" "$T/twins" 2>&1); rc=$?
	[ $rc -eq 0 ] && grep -qE "^ *[0-9]+ .*0x${a#0x} " <<<"$out" &&
		pass "dcpilist twin@$a lists that twin, from its first instruction" ||
		fail "dcpilist twin@$a" "rc=$rc $(head -20 <<<"$out")"
done
out=$("$DCPI_BIN/dcpilist" -db "$DB" "twin@0x1" "$T/twins" 2>&1); rc=$?
[ $rc -eq 1 ] && pass "dcpilist twin@0x1: no such twin, an error" || fail "twin@0x1 refused" "rc=$rc $out"
done_testing
