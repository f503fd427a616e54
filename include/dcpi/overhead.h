/* What sampling costs the machine, measured where it runs: the time one
 * sampling interrupt takes from the task it interrupts (calibrated by a
 * fixed loop timed with and without sampling), and from it the estimated
 * overhead of a collection and the period that keeps it within a budget.
 * The daemon's own CPU time is measured, not estimated (its caller reads
 * it).  See dcpid(8), OVERHEAD. */
#ifndef DCPI_OVERHEAD_H
#define DCPI_OVERHEAD_H

#include <stdint.h>

#include "dcpi/event.h"

/* The cost in ns of one sample of ev on this CPU: the same busy loop timed
 * (wall clock, pinned to one CPU) with and without a counter of ev on this
 * thread sampling every period_ns-ish, rounds alternating, the median of
 * the differences per sample taken.  About 0.3 s.  0, or -errno with a
 * message (perf_event_open refused; no sample taken). */
int dcpi_overhead_calibrate(const struct dcpi_event_spec *ev, double *ns_per_sample);

/* The share of all CPUs' time sampling takes: rate samples/s per CPU, each
 * ns_per_sample; plus the collector's own CPU seconds per second spread
 * over ncpus.  A fraction (0.031 is 3.1%). */
double dcpi_overhead_share(double rate_per_cpu, double ns_per_sample, double daemon_cpu_per_s,
			   unsigned ncpus);

/* The clock-event period (ns) that keeps the sampling interrupts within
 * budget (a fraction) at ns_per_sample each: at least 10,000 ns. */
uint64_t dcpi_overhead_period_for(double budget, double ns_per_sample);

#endif
