/* Two static functions named twin, one in each of twins_a.c and twins_b.c,
 * each doing the same work: a profiler must keep them apart (dcpiprof
 * names them twin@0xADDR).  twins [MILLIONS]   (default 20) */
#include <stdlib.h>

volatile unsigned long sink;
unsigned long twin_b_entry(unsigned long n);

__attribute__((noinline)) static unsigned long twin(unsigned long n)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 20) * 1000000ul;

	sink += twin(n);
	sink += twin_b_entry(n);
	return 0;
}
