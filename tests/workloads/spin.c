/* A deterministic CPU-bound workload for the tests: spin MILLIS of CPU
 * time in spin_hot(), and a tenth of that in spin_cold(), then exit.
 *   spin [MILLIS]        (default 1000) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

volatile unsigned long sink;

__attribute__((noinline)) void spin_hot(double ms)
{
	double end = cpu_ms() + ms;

	while (cpu_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void spin_cold(double ms)
{
	double end = cpu_ms() + ms;

	while (cpu_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink ^= (unsigned long)i * 40503u;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 1000;

	spin_hot(ms);
	spin_cold(ms / 10);
	return 0;
}
