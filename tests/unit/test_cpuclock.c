/* The clock-rate measurement on this machine: a rate in a sane range
 * (0.2-7 GHz: no CPU that runs this is outside it, even one shared by
 * other jobs), the fastest round at least the median, two calls in a row
 * within 15% of each other, and the fastest round within a factor of three
 * of /proc/cpuinfo's figure, where there is one (turbo and VMs make them
 * differ, not by that much).  A procroot without cpuinfo leaves only the
 * sanity figure out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "dcpi/cpuclock.h"
#include "dcpi/error.h"
#include "tap.h"

int main(void)
{
	struct dcpi_cpuclock a, b;
	int err = dcpi_cpuclock_measure(NULL, &a);

	if (err == -ENOTSUP) {
		T_SKIP("no add chain for this architecture: %s", dcpi_errmsg());
		return t_done();
	}
	T_EQ(err, 0, "the clock rate is measured: %s", err ? dcpi_errmsg() : "");
	T_OK(a.cycles_per_ns > 0.2 && a.cycles_per_ns < 7, "%.3f GHz: between 0.2 and 7",
	     a.cycles_per_ns);
	T_OK(a.rounds >= 5 && a.best >= a.cycles_per_ns,
	     "%d rounds; fastest %.3f >= median %.3f", a.rounds, a.best, a.cycles_per_ns);
	/* a shared machine (other jobs, a VM's host) moves the median between
	   calls: repeatable means two calls in a row agree, within 4 tries */
	{
		double prev = a.cycles_per_ns;
		int same = 0;

		for (int t = 0; t < 4 && !same; t++) {
			T_EQ(dcpi_cpuclock_measure("/nonexistent", &b), 0,
			     "again, with no cpuinfo to read");
			same = fabs(prev - b.cycles_per_ns) <= 0.15 * prev;
			prev = b.cycles_per_ns;
		}
		T_OK(same, "repeatable within 15%%: last two %.3f and %.3f GHz", prev,
		     b.cycles_per_ns);
	}
	T_EQ(b.cpuinfo_mhz, 0, "no cpuinfo: no sanity figure");
	if (a.cpuinfo_mhz > 0)
		T_OK(a.best * 1000 < 3 * a.cpuinfo_mhz && a.best * 1000 > a.cpuinfo_mhz / 3,
		     "fastest round %.0f MHz, /proc/cpuinfo %.0f MHz: within a factor of 3",
		     a.best * 1000, a.cpuinfo_mhz);
	else
		T_SKIP("no 'cpu MHz' in /proc/cpuinfo here");
	return t_done();
}
