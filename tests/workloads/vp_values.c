/* Workload for e2e/vtrace_lib (libdcpivp(7)): loads whose values are
 * known by construction.
 *   vp_values [SECONDS]
 * sum_values() reads, in order and over and over, a table of 15 * 2^16
 * 32-bit values in which 0x1111, 0x2222, 0x3333 and 0x4444 occur 8:4:2:1,
 * shuffled (so a sample taken at any time reads each with that
 * probability, and no period of the sampling can meet a period of the
 * table), for SECONDS (default 1) of the process's CPU time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vp_loads.h"

#define N (15u << 16)

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n a multiple of 8; eight loads a turn (vp_loads.h), each reading the
 * table's values with the same shares */
__attribute__((noinline)) uint64_t sum_values(const volatile uint32_t *tab, size_t n)
{
	uint64_t s = 0;

	for (const volatile uint32_t *p = tab; p < tab + n; p += 8)
		VP_ADD8(s, p);
	return s;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1, t;
	uint32_t *tab = malloc(N * sizeof(*tab));
	uint64_t rng = 0x2545f4914f6cdd1dull, s = 0;

	if (!tab)
		return 1;
	for (uint32_t i = 0; i < N; i++) /* 8/15, 4/15, 2/15, 1/15 */
		tab[i] = i < 8 * (N / 15) ? 0x1111 : i < 12 * (N / 15) ? 0x2222 :
			 i < 14 * (N / 15) ? 0x3333 : 0x4444;
	for (uint32_t i = N - 1; i > 0; i--) {
		uint32_t j, v;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		j = (uint32_t)(rng % (i + 1));
		v = tab[i];
		tab[i] = tab[j];
		tab[j] = v;
	}
	for (t = cpu_seconds(); cpu_seconds() - t < secs;)
		s += sum_values(tab, N);
	printf("%llu\n", (unsigned long long)s);
	return 0;
}
