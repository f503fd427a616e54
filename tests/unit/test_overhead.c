/* The overhead arithmetic on hand-worked numbers, and the calibration on
 * this machine: a cpu-clock sample costs something, not nothing and not
 * a millisecond; an event that never fires cannot be calibrated. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/overhead.h"
#include "tap.h"

int main(void)
{
	struct dcpi_event_spec ev;
	double ns = 0;
	int err;

	/* 2,000 samples/s per CPU x 15.5 us = 3.1%; plus 0.02 CPU-s/s over 2 CPUs = 1% */
	T_OK(fabs(dcpi_overhead_share(2000, 15500, 0, 2) - 0.031) < 1e-12, "2000/s x 15.5 us: 3.1%%");
	T_OK(fabs(dcpi_overhead_share(2000, 15500, 0.02, 2) - 0.041) < 1e-12,
	     "plus the daemon's 0.02 CPU-s/s on 2 CPUs: 4.1%%");
	/* 1% with 20 us a sample: 500 samples/s, every 2 ms */
	T_EQ(dcpi_overhead_period_for(0.01, 20000), 2000000, "1%% at 20 us: 2,000,000 ns");
	T_EQ(dcpi_overhead_period_for(0.5, 1000), 10000, "never below 10 us");
	T_EQ(dcpi_overhead_period_for(0, 1000), 10000, "no budget: the floor");

	dcpi_event_lookup("cpu-clock", &ev);
	err = dcpi_overhead_calibrate(&ev, &ns);
	if (err == -EACCES || err == -EPERM) {
		T_SKIP("perf_event_open refused here (%s)", dcpi_errmsg());
	} else {
		T_EQ(err, 0, "cpu-clock calibrates: %s", err ? dcpi_errmsg() : "");
		T_OK(ns > 100 && ns < 1e6, "one sample costs %.1f us (between 0.1 us and 1 ms)",
		     ns / 1000);
	}
	dcpi_event_lookup("major-faults", &ev);
	err = dcpi_overhead_calibrate(&ev, &ns);
	T_OK(err == -ENODATA || err == -EACCES || err == -EPERM,
	     "an event the loop never fires: no calibration (%s)", dcpi_errmsg());
	return t_done();
}
