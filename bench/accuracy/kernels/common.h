/* Shared by the accuracy kernels: a deterministic generator and a sink
 * the compiler cannot drop.  Each kernel runs kernel() REPS times on data
 * made from a fixed seed, so a run under dcpid and one under callgrind
 * execute exactly the same instructions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 88172645463325252ull;
static inline uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
volatile uint64_t sink;
