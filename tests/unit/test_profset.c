/* The epoch statistics a profile set sums over epochs and hosts: every
 * counter, the kernel samples too, which no report prints, so the golden
 * tests (tests/golden) cannot see a wrong sum of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/profset.h"
#include "dcpi/stats.h"
#include "tap.h"

static char root[] = "/tmp/dcpi-test-profset.XXXXXX";

/* An epoch/host with statistics (n, 2n, ... for each counter) and one profile. */
static int add(const char *epoch, const char *host, uint64_t n)
{
	struct dcpi_epoch_stats st;
	struct dcpi_profile p;
	char dir[512], path[600];
	uint64_t off = 0x1000, count = n;
	int err;

	if (dcpi_db_path(dir, sizeof(dir), root, epoch, host, NULL) || dcpi_db_init(dir, 0700))
		return -1;
	memset(&st, 0, sizeof(st));
	snprintf(st.epoch, sizeof(st.epoch), "%s", epoch);
	snprintf(st.platform, sizeof(st.platform), "%s", host);
	st.samples = n;
	st.lost = 2 * n;
	st.throttled = 3 * n;
	st.unknown = 4 * n;
	st.kernel = 5 * n;
	st.images = 6 * n;
	st.start = 1000;
	st.updated = 1000 + (int64_t)n;
	st.nevents = 1;
	snprintf(st.ev[0].name, sizeof(st.ev[0].name), "cycles");
	st.ev[0].period = 1000;
	st.ev[0].samples = n;
	st.ev[0].time_enabled = n * 1000000000ull;
	st.ev[0].time_running = n * 500000000ull;
	snprintf(path, sizeof(path), "%s/epoch.stats", dir);
	if (dcpi_stats_write(path, &st, 0600))
		return -1;
	dcpi_profile_init(&p);
	p.path = strdup("/bin/true");
	p.epoch = strdup(epoch);
	p.platform = strdup(host);
	p.pid = -1;
	p.nevents = 1;
	p.events[0].name = strdup("cycles");
	p.events[0].period = 1000;
	err = dcpi_profile_set_rows(&p, 1, &off, &count);
	if (!err)
		err = dcpi_db_merge_profile(dir, &p, 0600);
	dcpi_profile_free(&p);
	return err;
}

static void check(const char *epoch, const char *host, uint64_t n, size_t nstats)
{
	struct dcpi_profset s;
	int err = dcpi_profset_load(root, epoch, host, &s);

	T_EQ(err, 0, "load epoch %s host %s%s%s", epoch, host, err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err)
		return;
	T_EQ(s.nstats, nstats, "%s/%s: %zu statistics files read", epoch, host, nstats);
	T_EQ(s.stats.samples, n, "%s/%s: samples summed", epoch, host);
	T_EQ(s.stats.lost, 2 * n, "%s/%s: lost summed", epoch, host);
	T_EQ(s.stats.throttled, 3 * n, "%s/%s: throttled summed", epoch, host);
	T_EQ(s.stats.unknown, 4 * n, "%s/%s: unknown summed", epoch, host);
	T_EQ(s.stats.kernel, 5 * n, "%s/%s: kernel samples summed", epoch, host);
	T_EQ(s.stats.images, 6 * n, "%s/%s: images summed", epoch, host);
	T_OK(s.stats.nevents == 1 && s.stats.ev[0].samples == n &&
	     s.stats.ev[0].time_running == n * 500000000ull,
	     "%s/%s: the statistics' events summed by name", epoch, host);
	T_OK(dcpi_profset_cpu_seconds(&s, 0) == (double)n, "%s/%s: %g CPU-seconds monitored", epoch,
	     host, dcpi_profset_cpu_seconds(&s, 0));
	dcpi_profset_free(&s);
}

/* The latest epoch of a host is the latest it has a directory in: another
 * host may have started a newer one this host has not adopted yet. */
static void check_latest(const char *host, const char *want, double seconds)
{
	struct dcpi_profset s;
	int err = dcpi_profset_load(root, "latest", host, &s);

	T_EQ(err, 0, "latest of host %s%s%s", host, err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err)
		return;
	T_STREQ(s.nepochs == 1 ? s.epochs[0] : "", want, "host %s: its latest epoch", host);
	T_OK(s.seconds == seconds, "host %s: %g s of epoch (want %g)", host, s.seconds, seconds);
	dcpi_profset_free(&s);
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	T_EQ(add("20240101T000000Z", "a", 1), 0, "epoch 1 host a written");
	T_EQ(add("20240101T000000Z", "b", 10), 0, "epoch 1 host b written");
	T_EQ(add("20240102T000000Z", "a", 100), 0, "epoch 2 host a written");
	check("20240101T000000Z", "a", 1, 1);
	check("20240101T000000Z", "all", 11, 2);
	check("all", "a", 101, 2);
	check("all", "all", 111, 3);
	check_latest("a", "20240102T000000Z", 100);
	check_latest("b", "20240101T000000Z", 10);
	check_latest("all", "20240102T000000Z", 100);
	if (!getenv("DCPI_TEST_KEEP")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd))
			printf("# could not remove %s\n", root);
	}
	return t_done();
}
