/* Runs MS milliseconds of CPU time, however much CPU it gets: with a
 * cpu-clock sample every 500 us on each CPU, a process that runs a few
 * milliseconds is sampled whatever else runs, so tests can check what
 * dcpid keeps of it, not how busy the machine was.  cputime MS */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 3;
	struct timespec t;
	volatile long x = 0;

	do {
		for (long i = 0; i < 10000; i++)
			x += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while (t.tv_sec * 1000 + t.tv_nsec / 1000000 < ms);
	return 0;
}
