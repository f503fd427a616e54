/* A hot loop whose time is spent in libc: rand() called N times, as in
 * DCPI's own example.  randloop [MILLIONS] (default 20) */
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long n = (argc > 1 ? strtoul(argv[1], NULL, 10) : 20) * 1000000ul, s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += (unsigned long)rand();
	return (int)(s & 1) * 0;
}
