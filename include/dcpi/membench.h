/* This machine's load latencies, measured (dcpi bins, issue 26): a
 * dependent pointer chase (each load's address is the last load's value)
 * over working sets from 4 KiB to max_bytes, timed with the time-stamp
 * counter; the latency curve is cut into levels where it steps (a run of
 * working sets whose latencies stay within DCPI_MEMBENCH_STEP of the run's
 * first is one level, and so are two such runs less than a step apart:
 * L1, L2, ..., the last "memory"), and the levels into latency bins
 * (dcpi/bins.h).  x86-64 only (-ENOTSUP elsewhere). */
#ifndef DCPI_MEMBENCH_H
#define DCPI_MEMBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/bins.h"

#define DCPI_MEMBENCH_MAX_POINTS 40
#define DCPI_MEMBENCH_MAX_LEVELS 8
#define DCPI_MEMBENCH_STEP 1.5
#define DCPI_MEMBENCH_DEFAULT_BYTES (512ull << 20)

struct dcpi_mem_point {
	uint64_t bytes;         /* the working set */
	double cycles;          /* TSC cycles a load, the least of 5 timings */
};

struct dcpi_mem_level {
	char name[16];          /* "L1", "L2", ..., "memory" */
	uint64_t lo, hi;        /* the working sets it covers */
	double cycles;          /* its median latency */
};

struct dcpi_membench {
	size_t npoints;
	struct dcpi_mem_point pt[DCPI_MEMBENCH_MAX_POINTS];
	size_t nlevels;
	struct dcpi_mem_level lv[DCPI_MEMBENCH_MAX_LEVELS];
	uint64_t loads;         /* timed at each point */
};

struct dcpi_membench_opts {
	uint64_t max_bytes;     /* 0: DCPI_MEMBENCH_DEFAULT_BYTES; at least 64 KiB */
	uint64_t loads;         /* a point; 0: 1,000,000 */
};

/* Measure: 0, -ENOMEM, -EINVAL (max_bytes), -ENOTSUP (not x86-64), or
 * -ERANGE when the curve shows fewer than two levels. */
int dcpi_membench_run(const struct dcpi_membench_opts *o, struct dcpi_membench *m);
/* The levels' bins: each level's representative its latency (rounded),
 * its range from halfway (the geometric mean) to the level below to
 * halfway to the level above; the first from 0, the last to 2^64 - 1. */
int dcpi_membench_bins(const struct dcpi_membench *m, struct dcpi_bins *b);

#endif
