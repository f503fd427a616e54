/* collbench: the collector's user-space cost per sample, on its own.
 * Synthetic rings of raw records (laid out as the perf sampler asks the
 * kernel for them) go through dcpi_collector_queue and _process as a
 * drain hands them over: no kernel, no interrupts, no other process, so
 * what each change to the per-sample path buys shows without the noise of
 * a shared machine.  bench/run's steady-state section measures the whole
 * daemon against perf record.
 *
 *   collbench [-keys N] [-drains N] [-per N]
 *     -keys N    distinct addresses sampled (default 200)
 *     -drains N  drains timed (default 200)
 *     -per N     samples per drain (default 13000: two half-full 512 KiB rings)
 * Prints the median CPU ns per sample over 5 repetitions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/collector.h"
#include "dcpi/error.h"
#include "replay.h"

static int event_of(const void *arg, uint64_t id)
{
	(void)arg;
	return id == REPLAY_ID ? 0 : -1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned keys = 200, drains = 200, per = 13000;
	char tmp[] = "/tmp/collbench.XXXXXX", procroot[64];
	struct dcpi_eventlist ev;
	double med[5];
	uint8_t *ring, b[512];
	size_t rlen = 0, n;
	uint64_t rng = 88172645463325252ull, t = 1000;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-keys"))
			keys = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-drains"))
			drains = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-per"))
			per = (unsigned)atoi(argv[i + 1]);
	}
	if (!keys || !drains || !per || !mkdtemp(tmp)) {
		fprintf(stderr, "collbench: bad options or no temp dir\n");
		return 2;
	}
	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	mkdir(procroot, 0700);
	memset(&ev, 0, sizeof(ev));
	if (dcpi_event_parse(&ev, "cpu-clock:F500000"))
		return 1;
	ring = malloc((size_t)per * 40);
	for (int rep = 0; rep < 5; rep++) {
		struct dcpi_collector_opts o = { .events = &ev, .procroot = procroot,
						 .host = "bench" };
		struct dcpi_collector *c;
		struct timespec a, z;

		if (dcpi_collector_new(&o, &c)) {
			fprintf(stderr, "collbench: %s\n", dcpi_errmsg());
			return 1;
		}
		n = raw_mmap2(b, 400, 0x400000, 0x100000, "/opt/bench/a.out", t++);
		dcpi_collector_queue(c, b, n);
		dcpi_collector_process(c, UINT64_MAX, event_of, NULL);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
		for (unsigned d = 0; d < drains; d++) {
			rlen = 0;
			for (unsigned i = 0; i < per; i++) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				rlen += raw_sample(ring + rlen, REPLAY_ID,
						   0x400000 + (rng % keys) * 16, 400, t++);
			}
			for (size_t off = 0; off < rlen; off += 40)
				dcpi_collector_queue(c, ring + off, 40);
			dcpi_collector_process(c, t - 100, event_of, NULL);
		}
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &z);
		med[rep] = ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) /
			   ((double)drains * per);
		dcpi_collector_free(c);
	}
	qsort(med, 5, sizeof(*med), cmp_d);
	printf("collector: %.1f ns per sample (median of 5; %u keys, %u drains of %u; "
	       "incl. generating the records)\n", med[2], keys, drains, per);
	rmdir(procroot);
	rmdir(tmp);
	return 0;
}
