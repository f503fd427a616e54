/* Three procedures doing the same work in the ratio 6 : 3 : 1, so a
 * profiler must give them 60%, 30% and 10% of the program's samples.
 *   fractions [MILLIONS]     (default 30: 300 million steps in all) */
#include <stdlib.h>

volatile unsigned long sink;

static inline unsigned long churn(unsigned long n, unsigned long x)
{
	for (unsigned long i = 0; i < n; i++)
		x = (x * 6364136223846793005ul + 1442695040888963407ul) ^ (x >> 29);
	return x;
}

__attribute__((noinline)) unsigned long work_a(unsigned long n, unsigned long x)
{
	return churn(6 * n, x);
}

__attribute__((noinline)) unsigned long work_b(unsigned long n, unsigned long x)
{
	return churn(3 * n, x);
}

__attribute__((noinline)) unsigned long work_c(unsigned long n, unsigned long x)
{
	return churn(n, x);
}

int main(int argc, char **argv)
{
	unsigned long n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 30) * 100000ul;

	/* interleaved in slices, so a change in machine speed hits all three alike */
	for (int slice = 0; slice < 10; slice++) {
		sink += work_a(n, sink);
		sink += work_b(n, sink);
		sink += work_c(n, sink);
	}
	return 0;
}
