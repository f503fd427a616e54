/* Sampling's cost, calibrated: see dcpi/overhead.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/overhead.h"

#define ROUNDS 5
#define LOOP_ITERS 1000000u       /* ~2-5 ms of arithmetic */
#define CAL_PERIOD_NS 50000u      /* 20,000 samples/s while calibrating */
#define CLOCK_MIN_NS 10000ull

/* The loop's time on two clocks: the thread's CPU time, which holds the
 * interrupts it suffered unless the kernel accounts IRQ time apart
 * (CONFIG_IRQ_TIME_ACCOUNTING), and the wall clock, which holds them
 * always but also whatever else ran on the CPU. */
struct times {
	uint64_t cpu, wall;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct times spin(void)
{
	volatile uint64_t x = 1;
	struct times t = { clock_ns(CLOCK_THREAD_CPUTIME_ID), clock_ns(CLOCK_MONOTONIC) };

	for (unsigned i = 0; i < LOOP_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	t.cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t.cpu;
	t.wall = clock_ns(CLOCK_MONOTONIC) - t.wall;
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int dcpi_overhead_calibrate(const struct dcpi_event_spec *ev, double *ns_per_sample)
{
	struct perf_event_attr a;
	cpu_set_t old, one;
	double cpu[ROUNDS], wall[ROUNDS];
	int n = 0, fd;

	*ns_per_sample = 0;
	dcpi_event_attr(ev, &a);
	a.disabled = 1;
	a.exclude_hv = 1;
	/* clock events at 20,000/s; others at a tenth of their period, which
	   is as often as they would interrupt at ten times the rate */
	a.sample_period = ev->type == PERF_TYPE_SOFTWARE &&
			  (ev->config == PERF_COUNT_SW_CPU_CLOCK || ev->config == PERF_COUNT_SW_TASK_CLOCK)
			  ? CAL_PERIOD_NS : (ev->period / 10 ? ev->period / 10 : 1);
	a.sample_type = PERF_SAMPLE_IP;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return dcpi_error(errno, "calibrating %s: perf_event_open: %s", ev->name,
				  strerror(errno));
	/* one CPU, so both loops run on the same core */
	if (sched_getaffinity(0, sizeof(old), &old) == 0) {
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	spin(); /* warm up */
	for (int r = 0; r < ROUNDS; r++) {
		struct times off = spin(), on;
		uint64_t before = 0, after = 0;
		double samples;

		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		if (read(fd, &before, sizeof(before)) != sizeof(before))
			before = 0;
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		on = spin();
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (read(fd, &after, sizeof(after)) != sizeof(after) || after <= before ||
		    after - before < a.sample_period)
			continue;
		samples = (double)(after - before) / a.sample_period;
		cpu[n] = ((double)on.cpu - (double)off.cpu) / samples;
		wall[n++] = ((double)on.wall - (double)off.wall) / samples;
	}
	sched_setaffinity(0, sizeof(old), &old);
	close(fd);
	if (n == 0)
		return dcpi_error(ENODATA, "calibrating %s: no sample was taken", ev->name);
	qsort(cpu, (size_t)n, sizeof(cpu[0]), cmp_d);
	qsort(wall, (size_t)n, sizeof(wall[0]), cmp_d);
	/* the CPU clock unless it does not see interrupts at all */
	*ns_per_sample = cpu[n / 2] >= 100 ? cpu[n / 2] : wall[n / 2] > 0 ? wall[n / 2] : 0;
	return 0;
}

double dcpi_overhead_share(double rate_per_cpu, double ns_per_sample, double daemon_cpu_per_s,
			   unsigned ncpus)
{
	double share = rate_per_cpu * ns_per_sample * 1e-9;

	if (ncpus)
		share += daemon_cpu_per_s / ncpus;
	return share;
}

uint64_t dcpi_overhead_period_for(double budget, double ns_per_sample)
{
	double period;

	if (budget <= 0 || ns_per_sample <= 0)
		return CLOCK_MIN_NS;
	period = ns_per_sample / budget;
	return period < CLOCK_MIN_NS ? CLOCK_MIN_NS : period > 1e12 ? (uint64_t)1e12 : (uint64_t)period;
}
