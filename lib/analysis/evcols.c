/* Which event is what: see dcpi/evcols.h. */
#include <stddef.h>

#include "dcpi/evcols.h"
#include "dcpi/profset.h"

/* The first of names the set has with one period, or -1. */
static int first_of(const struct dcpi_profset *s, const char *const *names)
{
	for (; *names; names++) {
		int c = dcpi_profset_event(s, *names);

		if (c >= 0 && s->periods[c] > 0)
			return c;
	}
	return -1;
}

int dcpi_evcols_cycles(const struct dcpi_profset *s)
{
	static const char *const names[] = { "cycles", "cpu-cycles", NULL };

	return first_of(s, names);
}

int dcpi_evcols_time(const struct dcpi_profset *s)
{
	static const char *const clocks[] = { "cpu-clock", "task-clock", NULL };
	int cy = dcpi_evcols_cycles(s);

	return cy >= 0 ? cy : first_of(s, clocks);
}

int dcpi_evcols_retired(const struct dcpi_profset *s)
{
	static const char *const names[] = { "instructions", NULL };

	return first_of(s, names);
}

double dcpi_evcols_cycles_per_sample(const struct dcpi_profset *s, int time)
{
	if (time < 0)
		return 0;
	if (time == dcpi_evcols_cycles(s))
		return (double)s->periods[time];
	/* a time event's period (ns) at the clock dcpid measured (kHz) */
	return s->stats.clock_khz ? (double)s->periods[time] * (double)s->stats.clock_khz / 1e6 : 0;
}
