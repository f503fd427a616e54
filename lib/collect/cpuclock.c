/* The CPU's clock rate from a chain of dependent adds: see dcpi/cpuclock.h. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/cpuclock.h"
#include "dcpi/error.h"

#define ROUNDS 15
#define CHAIN 64                 /* adds per loop iteration: .rept below */
#define ITERS 16384u             /* 1M cycles a round: ~0.3 ms at 3 GHz */
#define MAX_CPUINFO_LINES 100000 /* /proc/cpuinfo of a 1,000-CPU machine */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ITERS x CHAIN dependent adds; the loop's counter and branch run beside
 * the chain (another register, a predicted branch), so the round takes
 * ITERS x CHAIN cycles plus a few.  Returns 0 where there is no chain. */
static int chain(void)
{
	uint64_t x = 0, one = 1, n = ITERS;

#if defined(__x86_64__)
	__asm__ volatile("1:\n\t"
			 ".rept 64\n\tadd %[one], %[x]\n\t.endr\n\t"
			 "dec %[n]\n\tjnz 1b"
			 : [x] "+r"(x), [n] "+r"(n) : [one] "r"(one) : "cc");
#elif defined(__aarch64__)
	__asm__ volatile("1:\n\t"
			 ".rept 64\n\tadd %[x], %[x], %[one]\n\t.endr\n\t"
			 "subs %[n], %[n], #1\n\tb.ne 1b"
			 : [x] "+r"(x), [n] "+r"(n) : [one] "r"(one) : "cc");
#else
	(void)one, (void)n;
	return 0;
#endif
	return x == (uint64_t)ITERS * CHAIN;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* "cpu MHz" of processor cpu in procroot/cpuinfo, else of the first one
 * listed; 0 when there is none.  Lines are read with fgets into a fixed
 * buffer: a longer one is read in pieces, none of which matches. */
static double cpuinfo_mhz(const char *procroot, int cpu)
{
	char path[4200], line[256];
	double first = 0, mine = 0, v;
	int cur = -1, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpuinfo", procroot ? procroot : "/proc");
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f) && n++ < MAX_CPUINFO_LINES) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		if (!strncmp(line, "processor", 9))
			cur = atoi(colon + 1);
		else if (!strncmp(line, "cpu MHz", 7) && sscanf(colon + 1, "%lf", &v) == 1 &&
			 v > 0 && v < 1e6) {
			if (first == 0)
				first = v;
			if (cur == cpu)
				mine = v;
		}
	}
	fclose(f);
	return mine > 0 ? mine : first;
}

int dcpi_cpuclock_measure(const char *procroot, struct dcpi_cpuclock *out)
{
	double rate[ROUNDS];
	cpu_set_t old, one;
	int n = 0, cpu = sched_getcpu(), pinned = 0;

	memset(out, 0, sizeof(*out));
	if (!chain())
		return dcpi_error(ENOTSUP, "measuring the clock rate: no add chain for this "
				  "architecture");
	if (cpu >= 0 && sched_getaffinity(0, sizeof(old), &old) == 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	for (int w = 0; w < 3; w++) /* warm up: let the clock ramp up */
		chain();
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = mono_ns(), t;

		chain();
		t = mono_ns() - t0;
		if (t > 0 && (double)ITERS * CHAIN / (double)t >= 0.1 &&
		    (double)ITERS * CHAIN / (double)t <= 10)
			rate[n++] = (double)ITERS * CHAIN / (double)t;
	}
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	if (n == 0)
		return dcpi_error(ERANGE, "measuring the clock rate: no round gave between 0.1 "
				  "and 10 cycles per ns");
	qsort(rate, (size_t)n, sizeof(rate[0]), cmp_d);
	out->cycles_per_ns = rate[n / 2];
	out->best = rate[n - 1];
	out->rounds = n;
	out->cpuinfo_mhz = cpuinfo_mhz(procroot, cpu);
	return 0;
}
