/* Workload for e2e/vtrace_lib (libdcpivp(7)): loads whose latency is
 * known by construction.
 *   vp_latency [MIB] [SECONDS]
 * chase(): a dependent pointer chase over MIB (default 512) MiB of one
 * shuffled cycle, one node per 64-byte line, so that every load misses
 * every cache (MIB small enough to fit one instead: that cache's latency);
 * array_sum(): a loop over a 16 KiB array, which stays in L1, eight loads a
 * turn (vp_loads.h).  Each runs
 * for SECONDS (default 1) of the process's CPU time, whatever else the
 * machine runs.  The chase is unrolled eight times: a sample taken after
 * one of its loads finds the next one at its PC (a sample after the last
 * finds the loop's branch, and no load). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vp_loads.h"

#define LINE 64

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define STEP p = *(void **)p
__attribute__((noinline)) void *chase(void *p, long n)
{
	while (n--) {
		STEP; STEP; STEP; STEP; STEP; STEP; STEP; STEP;
	}
	return p;
}

/* n a multiple of 8; eight loads a turn (vp_loads.h) */
__attribute__((noinline)) long array_sum(const volatile long *a, long n, long reps)
{
	long s = 0;

	while (reps--)
		for (const volatile long *p = a; p < a + n; p += 8)
			VP_ADD8(s, p);
	return s;
}

/* One cycle through all n nodes (Sattolo's shuffle), each node's first
 * word the address of the next. */
static void *make_cycle(size_t mib)
{
	size_t n = mib * 1024 * 1024 / LINE;
	uint32_t *perm = malloc(n * sizeof(*perm));
	char *nodes = aligned_alloc(1 << 21, n * LINE);

	if (!perm || !nodes) {
		perror("vp_latency: malloc");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = next_random() % i;
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(nodes + (size_t)i * LINE) = nodes + (size_t)perm[i] * LINE;
	free(perm);
	return nodes;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
	double secs = argc > 2 ? atof(argv[2]) : 1, t;
	static volatile long arr[16384 / sizeof(long)];
	void *p = make_cycle(mib ? mib : 1);
	long s = 0;

	for (size_t i = 0; i < sizeof(arr) / sizeof(arr[0]); i++)
		arr[i] = (long)i;
	for (t = cpu_seconds(); cpu_seconds() - t < secs;)
		p = chase(p, 1000);
	for (t = cpu_seconds(); cpu_seconds() - t < secs;)
		s += array_sum(arr, sizeof(arr) / sizeof(arr[0]), 50);
	printf("%p %ld\n", p, s);
	return 0;
}
