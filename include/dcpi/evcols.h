/* Which of a profile set's events is what: the one policy the reports,
 * the calc engine and the benchmarks share.  An event counts only when
 * every profile sampled it at one period (dcpi_profset periods > 0).
 *   cycles   "cycles", else "cpu-cycles" (a PMU's)
 *   time     cycles, else "cpu-clock", else "task-clock" (software clocks,
 *            the only events a VM without a PMU has)
 *   retired  "instructions"
 * Each returns the set's column, or -1. */
#ifndef DCPI_EVCOLS_H
#define DCPI_EVCOLS_H

struct dcpi_profset;

int dcpi_evcols_cycles(const struct dcpi_profset *s);
int dcpi_evcols_time(const struct dcpi_profset *s);
int dcpi_evcols_retired(const struct dcpi_profset *s);
/* Cycles one sample of column time stands for: its period when it is a
 * cycles event; a clock event's period (ns) at the clock rate the
 * collector measured; 0 when not known (no rate measured, or no column). */
double dcpi_evcols_cycles_per_sample(const struct dcpi_profset *s, int time);

#endif
