#!/usr/bin/env bash
# End to end: four workloads built here, each stalling one way, are
# profiled with dcpi record (cpu-clock: no PMU is needed), and
# dcpitopstalls must put the top stall where the stall is, with the
# culprit among its reasons: a pointer chase through 64 MB (d, on the
# chasing load or its consumer), a divide chain (f), a data-dependent
# branch on random bytes (p), a locked increment (s).  dcpiwhatcg must
# put the divide loop's dynamic stall on f, and dcpicoverage see the
# branch loop's blocks run.
. "$DCPI_ROOT/tests/tap.sh"

S=$DCPI_BIN/dcpitopstalls

out=$("$S" -db "$T/none" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "$T/none" <<<"$out" && pass "no database: an error naming it" ||
	fail "no database: an error naming it" "rc=$rc $out"
out=$("$S" -n x 2>&1); rc=$?
[ $rc -eq 2 ] && pass "bad -n: usage error" || fail "bad -n: usage error" "rc=$rc $out"

require_root "dcpi record's cpu-clock sampling: needs root here (CI runs as root)"
cat >"$T/wl.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
volatile uint64_t sink;
__attribute__((noinline)) uint64_t st_chase(void **p, long n)
{
	while (n-- > 0)
		p = (void **)*p;
	return (uint64_t)(uintptr_t)p;
}
__attribute__((noinline)) uint64_t st_divide(uint64_t x, uint64_t d, long n)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++) {
		s += x / d;
		x += s | 1;
		__asm__ volatile("" : "+r"(d));
	}
	return s;
}
__attribute__((noinline)) uint64_t st_branch(const unsigned char *b, long len, long rounds)
{
	uint64_t s = 0;
	for (long r = 0; r < rounds; r++)
		for (long i = 0; i < len; i++) {
			if (b[i] & 1)
				s += b[i] * 3;
			else
				s ^= b[i];
		}
	return s;
}
__attribute__((noinline)) uint64_t st_locked(uint64_t *c, long n)
{
	for (long i = 0; i < n; i++)
		__atomic_fetch_add(c, 1, __ATOMIC_SEQ_CST);
	return *c;
}
static uint64_t rnd(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}
int main(int argc, char **argv)
{
	const char *w = argv[1];
	uint64_t r = 88172645463325252ull;

	if (!strcmp(w, "chase")) { /* one random cycle through 64 MB */
		long n = (64L << 20) / sizeof(void *), *perm = malloc(n * sizeof(long));
		void **buf = malloc(n * sizeof(void *));
		for (long i = 0; i < n; i++)
			perm[i] = i;
		for (long i = n - 1; i > 0; i--) {
			long j = rnd(&r) % (i + 1), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		for (long i = 0; i < n; i++)
			buf[perm[i]] = &buf[perm[(i + 1) % n]];
		sink = st_chase(buf, 40000000L);
	} else if (!strcmp(w, "divide")) {
		sink = st_divide(123456789123ull, argc > 2 ? 7 : 13, 150000000L);
	} else if (!strcmp(w, "branch")) {
		long len = 1 << 16;
		unsigned char *b = malloc(len);
		for (long i = 0; i < len; i++)
			b[i] = (unsigned char)rnd(&r);
		sink = st_branch(b, len, 6000);
	} else {
		static uint64_t c;
		sink = st_locked(&c, 200000000L);
	}
	return 0;
}
C
cc -O2 -g -o "$T/wl" "$T/wl.c" || { fail "build the workloads"; done_testing; }

# the top row of workload $1 in procedure $2 must list culprit $3
check() {
	local w=$1 proc=$2 code=$3 out top rc
	"$DCPI_BIN/dcpi-record" -db "$T/db-$w" -quiet -event cpu-clock:100000 -- "$T/wl" "$w" \
		2>"$T/rec-$w.err" || { fail "$w: recorded" "$(cat "$T/rec-$w.err")"; return; }
	out=$("$S" -db "$T/db-$w" -n 3 -json wl 2>&1); rc=$?
	top=$(awk '/"procedure"/ { print; exit }' <<<"$out")
	grep -q "\"procedure\": \"$proc\"" <<<"$top" &&
		grep -q "\"code\": \"$code\"" <<<"$top" &&
		pass "$w: the top stall is in $proc, '$code' among its culprits" ||
		fail "$w: the top stall is in $proc, '$code' among its culprits" "rc=$rc $out"
	echo "$top" | grep -o '"instruction": "[^"]*"\|"culprits": \[[^]]*\]' | sed 's/^/# /'
}
check chase st_chase d
check divide st_divide f
check branch st_branch p
check locked st_locked s

# the chase's top stall sits on the load or on what consumes it
out=$("$S" -db "$T/db-chase" -n 1 wl 2>&1)
row=$(grep -E '^ *[0-9.]+%' <<<"$out" | head -1)
grep -qE 'st_chase +(mov|sub|test|add|cmp|dec)' <<<"$row" &&
	pass "chase: the top row is the load or its consumer" ||
	fail "chase: the top row is the load or its consumer" "$out"
# ... and 'd' blames the chasing load itself (an instruction reading memory)
at=$("$S" -db "$T/db-chase" -n 1 -json wl | grep -o '"code": "d"[^}]*' | grep -o '"at": "0x[0-9a-f]*"' |
	grep -o '0x[0-9a-f]*')
insn=$(objdump -d --no-show-raw-insn "$T/wl" | grep -E "^ +${at#0x}:")
[ -n "$at" ] && grep -qE 'mov +\(%' <<<"$insn" && pass "chase: 'd' blames the load ($insn)" ||
	fail "chase: 'd' blames the load" "at=$at insn=$insn"
# text output: possible, never certain
grep -q "POSSIBLE reasons" <<<"$out" && pass "time samples alone: culprits said to be possible" ||
	fail "time samples alone: culprits said to be possible" "$out"
# dcpiwhatcg: the divide loop's dynamic stall is f's; -stall f names it
out=$("$DCPI_BIN/dcpiwhatcg" -db "$T/db-divide" -stall f -n 1 wl 2>&1); rc=$?
frow=$(grep -E '^ +functional unit \(f\)' <<<"$out")
[ $rc -eq 0 ] && [ -n "$frow" ] && grep -qE '^ +[0-9.]+[kMGT]?\.\.[0-9.]+[kMGT]? .* st_divide ' <<<"$out" &&
	pass "dcpiwhatcg: the divide's stall is f, st_divide loses most to it" ||
	fail "dcpiwhatcg: the divide's stall is f, st_divide loses most to it" "rc=$rc $out"
echo "$frow" | sed 's/^/# /'
# dcpicoverage: the branch loop's blocks ran, its exit did not show
out=$("$DCPI_BIN/dcpicoverage" -db "$T/db-branch" -json st_branch wl 2>&1); rc=$?
ran=$(grep -c '"ran": true' <<<"$out")
[ $rc -eq 0 ] && [ "$ran" -ge 3 ] && pass "dcpicoverage: the branch loop ran ($ran blocks and lines)" ||
	fail "dcpicoverage: the branch loop ran" "rc=$rc $out"
out=$("$S" -db "$T/db-chase" nosuchimage 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "nosuchimage" <<<"$out" && pass "an unknown image: error naming it" ||
	fail "an unknown image: error naming it" "rc=$rc $out"
done_testing
