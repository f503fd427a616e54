/* The nightly job of the 3 AM story (dcpid(8), EXAMPLES): its usual work,
 * MS milliseconds of CPU time, and on a bad night (a second argument,
 * "slow") four times as much more in slow_path.  nightly MS [slow] */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

__attribute__((noinline)) static long usual_work(long until)
{
	volatile long x = 0;

	while (cpu_ms() < until)
		for (long i = 0; i < 10000; i++)
			x += i;
	return x;
}

__attribute__((noinline)) static long slow_path(long until)
{
	volatile long x = 1;

	while (cpu_ms() < until)
		for (long i = 0; i < 10000; i++)
			x ^= x << 1 | i;
	return x;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 300;

	usual_work(ms);
	if (argc > 2 && !strcmp(argv[2], "slow"))
		slow_path(cpu_ms() + 4 * ms);
	return 0;
}
