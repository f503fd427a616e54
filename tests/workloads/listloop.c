/* Workload for dcpilist/dcpitopcounts tests: nearly all time goes to one
 * source line, marked HOTLOOP (the tests find its number with grep), a
 * chain of dependent divisions by a divisor the compiler cannot know, so
 * its instructions dominate the loop's control.  Built -g -O2.
 *   listloop [MILLIONS] (default 50) */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long divide_chain(unsigned long n, unsigned long d)
{
	unsigned long acc = n | 1;

	for (unsigned long i = 0; i < n; i++)
		acc = (acc / d + i) * 7 / d + (acc | 0x10000); /* HOTLOOP */
	return acc;
}

__attribute__((noinline)) unsigned long cold_sum(unsigned long n)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += i ^ (s >> 5);
	return s;
}

int main(int argc, char **argv)
{
	unsigned long n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 50) * 1000000ul;
	unsigned long d = argc > 2 ? strtoul(argv[2], NULL, 10) : 3;

	sink = cold_sum(n / 50) + divide_chain(n, d ? d : 3);
	printf("%lu\n", sink);
	return 0;
}
