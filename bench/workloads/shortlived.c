/* A short-lived process for the burst benchmark: a fixed number of steps
 * (a few milliseconds), then exit.  Linked statically by bench/run so its
 * user time is spent in this image only, not in ld.so or libc.so.
 *   shortlived [THOUSANDS]     (default 3000: 3 million steps) */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long short_work(unsigned long n, unsigned long x)
{
	for (unsigned long i = 0; i < n; i++)
		x = (x * 6364136223846793005ul + 1442695040888963407ul) ^ (x >> 29);
	return x;
}

int main(int argc, char **argv)
{
	unsigned long n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 3000) * 1000ul;

	sink = short_work(n, (unsigned long)argc);
	return 0;
}
