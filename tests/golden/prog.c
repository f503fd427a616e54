/* The image of the golden tests (the scripts in tests/golden).  It is
 * compiled, never run: the tests place made-up samples on its procedures,
 * so only its symbols, line table and code matter.  Keep it small and
 * stable: the expected listings name its lines and instructions. */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot(unsigned long n)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
	return x;
}

__attribute__((noinline)) unsigned long warm(unsigned long n)
{
	return hot(n / 2) ^ n;
}

__attribute__((noinline)) static unsigned long cold(unsigned long n)
{
	return warm(n) + 1;
}

int main(int argc, char **argv)
{
	return (int)cold(argc > 1 ? strtoul(argv[1], NULL, 10) : 10) & 1;
}
