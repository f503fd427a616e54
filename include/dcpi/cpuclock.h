/* The CPU's clock rate, measured where the samples are taken, so that time
 * samples (cpu-clock, task-clock: a period in ns) convert to cycles.  A
 * chain of dependent integer adds retires one add per cycle on every
 * x86-64 and aarch64 core (latency 1: Agner Fog's instruction tables,
 * "ADD r,r"; Arm's Cortex and Neoverse optimization guides, "ADD
 * (register)"), whatever the width of the machine, so a loop of such
 * chains timed with CLOCK_MONOTONIC gives cycles per ns.  See dcpid(8). */
#ifndef DCPI_CPUCLOCK_H
#define DCPI_CPUCLOCK_H

struct dcpi_cpuclock {
	double cycles_per_ns;   /* the median round's: the rate a program gets
				   here.  Not the best round's: on a VM the same
				   loop was measured at 2.1, 2.9 and 4.1 GHz in
				   one minute (the host shares the core), and
				   samples of time count the slow rounds too */
	double best;            /* the fastest round's: what the core does when
				   nothing else runs (preemption and interrupts
				   only lengthen a round) */
	int rounds;             /* rounds timed */
	double cpuinfo_mhz;     /* /proc/cpuinfo's "cpu MHz" of the CPU the loop
				   ran on (the first listed if not found); 0:
				   none.  A sanity check, not the answer: it is
				   the nominal or last-sampled rate */
};

/* Time the add chain in rounds (~0.3 ms each at 3 GHz, 15 of them: about 5 ms) on the
 * calling thread, pinned to the CPU it is on.  procroot: "/proc", or
 * NULL for it.  0, or -ENOTSUP (no known chain for this architecture) or
 * -ERANGE (no round gave a rate between 0.1 and 10 cycles per ns: the
 * clock or the CPU is not what this assumes) with a message. */
int dcpi_cpuclock_measure(const char *procroot, struct dcpi_cpuclock *out);

#endif
