/* The process's hash seed: see lib/internal.h. */
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static uint64_t seed;

uint64_t dcpi_hash_seed(void)
{
	uint64_t s = __atomic_load_n(&seed, __ATOMIC_ACQUIRE), r = 0;

	if (s)
		return s;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* No entropy yet (early boot): the clock and the pid, which a
		 * user cannot read before this process starts. */
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		r = dcpi_mix64((uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 32 ^
			       (uint64_t)getpid() << 20 ^ (uint64_t)(uintptr_t)&t);
	}
	r |= 1; /* 0 means "not yet" */
	{
		uint64_t expect = 0;

		/* The first thread to set it wins; every thread then uses that one. */
		if (!__atomic_compare_exchange_n(&seed, &expect, r, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			return expect;
	}
	return r;
}
