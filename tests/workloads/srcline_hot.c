/* Fixture for the source-line and disassembly tests: a hot loop on a line
 * marked HOTLOOP (the tests find its number with grep), some branches and
 * calls for the disassembler to classify.  Built -g -O2 by the tests. */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot_loop(unsigned long n)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++)
		acc += (i * 2654435761u) ^ (acc >> 3); /* HOTLOOP */
	return acc;
}

__attribute__((noinline)) int pick(int x)
{
	switch (x & 3) {
	case 0:
		return x * 3;
	case 1:
		return x - 7;
	default:
		return x > 100 ? x / 5 : x + 11;
	}
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	int i, p = 0;

	for (i = 0; i < argc; i++)
		p += pick(i + (int)n);
	sink = hot_loop(n) + (unsigned long)p;
	printf("%lu\n", sink);
	return 0;
}
