/* Fixture for the inline-chain tests: an always_inline function called
 * from two places (lines marked CALLSITE1 and CALLSITE2), whose body line
 * is marked INLBODY, and a second level of inlining (mix() inlined into
 * scramble(), itself inlined into main, marked NESTBODY / NESTCALL /
 * NESTOUTER).  Built -g -O2 by the tests. */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long square_add(unsigned long a, unsigned long b)
{
	return a * a + b * 7; /* INLBODY */
}

static inline __attribute__((always_inline)) unsigned long mix(unsigned long v)
{
	return (v ^ (v >> 13)) * 0x9e3779b97f4a7c15ul; /* NESTBODY */
}

static inline __attribute__((always_inline)) unsigned long scramble(unsigned long v)
{
	sink = v;
	return mix(v + sink) + 1; /* NESTCALL */
}

__attribute__((noinline)) unsigned long first(unsigned long x)
{
	sink = x;
	return square_add(x, sink); /* CALLSITE1 */
}

__attribute__((noinline)) unsigned long second(unsigned long y)
{
	sink = y + 1;
	return square_add(sink, y) + 3; /* CALLSITE2 */
}

int main(int argc, char **argv)
{
	unsigned long v = argc > 1 ? strtoul(argv[1], NULL, 0) : 5;

	v = first(v) + second(v);
	v = scramble(v); /* NESTOUTER */
	printf("%lu\n", v);
	return 0;
}
