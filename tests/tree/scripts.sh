#!/usr/bin/env bash
# The test scripts' own rules.  No command is given a here-document and a
# here-string (or another redirection of its standard input) at once: only
# the last one is its standard input, and `python3 - <<'EOF' <<<"$json"`
# runs the JSON as the program (a dict literal: exit 0, every assert
# skipped), a check that passes on nothing.  And no CSV report is captured
# with its standard error (`x=$(tool -csv ... 2>&1)`): a warning that only a
# busy machine prints (samples of no image) then comes first and the parse
# fails, a test of the machine.
. "$(dirname "$0")/../tap.sh"
root=$DCPI_ROOT

# two redirections of standard input on one line: a here-document with a
# here-string or a '<' file after it, or before it
bad_lines() {
	grep -nE "<<-?[\"']?[A-Za-z0-9_]+[\"']?([^<|&;]|<\()*(<<<|[^<(]< *[\"$/A-Za-z])|<<< *(\"[^\"]*\"|[^ ]+)[^|&;]*<<-?[\"']?[A-Za-z]" "$@" 2>/dev/null
}

out=$(cd "$root" && bad_lines tests/e2e/*.sh tests/golden/*.sh tests/tree/*.sh bench/* scripts/* | grep -v '^tests/tree/scripts.sh:')
check "no test feeds one command two standard inputs${out:+: $out}" test -z "$out"

csv_lines() {
	grep -nE '=\$\([^)]*-csv[^)]*2>&1\)' "$@" 2>/dev/null
}
out=$(cd "$root" && csv_lines tests/e2e/*.sh tests/golden/*.sh bench/*)
check "no CSV report is captured with its standard error${out:+: $out}" test -z "$out"
printf '%s\n' 'd=$("$DCPI_BIN/dcpidiff" -db "$DB" -csv A B nightly 2>&1)' >"$T/e.sh"
printf '%s\n' 'd=$("$DCPI_BIN/dcpidiff" -db "$DB" -csv A B 2>"$T/err")' >"$T/f.sh"
check "a CSV captured with its standard error is found when planted" test -n "$(csv_lines "$T/e.sh")"
check "one whose standard error goes to a file is fine" test -z "$(csv_lines "$T/f.sh")"

# the check finds each form when planted
printf '%s\n' "python3 - \"\$x\" <<'EOF' <<<\"\$json\" && pass ok" >"$T/a.sh"
printf '%s\n' "python3 - <<EOF2 < \"\$T/file.json\"" >"$T/b.sh"
printf '%s\n' "python3 - \"\$x\" <<<\"\$json\" <<'EOF'" >"$T/c.sh"
printf '%s\n' "python3 - \"\$x\" \"\$T/j\" <<'EOF' && pass ok" "grep -q x <<<\"\$out\" && pass y" >"$T/d.sh"
for f in a b c; do
	check "a planted double standard input ($f) is found" test -n "$(bad_lines "$T/$f.sh")"
done
check "a here-document and a here-string on separate commands are fine" test -z "$(bad_lines "$T/d.sh")"
done_testing
