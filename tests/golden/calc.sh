#!/usr/bin/env bash
# dcpicalc against expected output on the golden database (events cycles
# and instructions, so mode 'retired' with absolute counts and cpi): the
# hot loop of prog.c as text and JSON, the same by time alone (-mode time,
# from a cycles event: absolute), a -cutoff that leaves blocks out, and
# bad input: no such procedure, a procedure without code (the kernel, no
# vmlinux), a bad -cutoff and -mode, and -exact without exact counts;
# the graph as DOT (whole, and with a -cutoff's stubs), drawn as SVG (one
# node per block, parsed) and PDF, and -svg without Graphviz.
# (Code that does not decode and a graph too large: tests/unit/test_calc.c.)
# Every count in the listings follows from the samples in fixture.bash
# through calc.h's rules: check them by hand after GOLDEN_UPDATE=1.
. "$DCPI_ROOT/tests/tap.sh"
. "$DCPI_ROOT/tests/golden/fixture.bash"
golden_setup || done_testing
C="$DCPI_BIN/dcpicalc -db $DB"

# shellcheck disable=SC2086
golden calc-hot.txt $C hot prog
golden calc-json.txt $C -json hot prog
golden calc-time.txt $C -mode time hot "$PROG"
golden calc-cutoff.txt $C -cutoff 50 warm prog
golden calc-dot.txt $C -dot hot prog
golden calc-dot-cutoff.txt $C -dot -cutoff 50 hot prog
# shellcheck disable=SC2086
{
golden calc-no-proc.txt $C nosuch prog
golden calc-no-code.txt $C do_syscall_64 kernel
golden calc-bad-cutoff.txt $C -cutoff 101 hot prog
golden calc-bad-mode.txt $C -mode fast hot prog
golden calc-exact-none.txt $C -exact hot prog
golden calc-no-image.txt $C hot nosuchimage
golden calc-dot-json.txt $C -dot -json hot prog
golden calc-svg-no-dot.txt env PATH=/nonexistent "$DCPI_BIN/dcpicalc" -db "$DB" -svg "$T/x.svg" hot prog
}
# the SVG has one node per block (its <g class="node"> groups, parsed)
if command -v dot >/dev/null; then
	blocks=$($C -json hot prog | grep -c '"id": ')
	$C -svg "$T/hot.svg" hot prog 2>"$T/svg.err"; rc=$?
	nodes=$(grep -c '<g id="node[0-9]*" class="node">' "$T/hot.svg" 2>/dev/null)
	titles=$(grep -A1 'class="node"' "$T/hot.svg" | grep -o '<title>B[0-9]*</title>' | sort -u | wc -l)
	[ $rc -eq 0 ] && [ "$nodes" = "$blocks" ] && [ "$titles" = "$blocks" ] &&
		pass "-svg: one node per block ($nodes)" ||
		fail "-svg: one node per block" "rc=$rc nodes=$nodes titles=$titles blocks=$blocks $(cat "$T/svg.err")"
	$C -pdf "$T/hot.pdf" hot prog 2>"$T/pdf.err"; rc=$?
	[ $rc -eq 0 ] && head -c 5 "$T/hot.pdf" | grep -q '%PDF-' && pass "-pdf: a PDF" ||
		fail "-pdf: a PDF" "rc=$rc $(cat "$T/pdf.err")"
	out=$($C -svg "$T/no/such/dir.svg" hot prog 2>&1); rc=$?
	[ $rc -eq 1 ] && grep -q "dot failed" <<<"$out" && pass "-svg into a missing directory: dot's error" ||
		fail "-svg into a missing directory: dot's error" "rc=$rc $out"
else
	skip "graphviz's dot not installed (scripts/install-deps): -svg not drawn"
fi

done_testing
