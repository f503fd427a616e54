/* The epoch statistics a profile set sums over epochs and hosts: every
 * counter, the kernel samples too, which no report prints, so the golden
 * tests (tests/golden) cannot see a wrong sum of them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/profset.h"
#include "dcpi/stats.h"
#include "dbprof.h"
#include "tap.h"

static char root[] = "/tmp/dcpi-test-profset.XXXXXX";

/* One profile of path in dir, of count samples of cycles. */
static int add_profile(const char *dir, const char *epoch, const char *host, const char *path,
		       uint64_t count)
{
	return fx_cycles_profile(dir, epoch, host, path, NULL, count);
}

/* An epoch/host with statistics (7n samples, 2n lost, 3n throttled, 4n
 * unknown, 5n kernel, 6n images) and one profile. */
static int add(const char *epoch, const char *host, uint64_t n)
{
	struct dcpi_epoch_stats st;
	char dir[512], path[600];

	if (dcpi_db_path(dir, sizeof(dir), root, epoch, host, NULL) || dcpi_db_init(dir, 0700))
		return -1;
	memset(&st, 0, sizeof(st));
	snprintf(st.epoch, sizeof(st.epoch), "%s", epoch);
	snprintf(st.platform, sizeof(st.platform), "%s", host);
	st.samples = 7 * n;
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
	return add_profile(dir, epoch, host, "/bin/true", n);
}

static void check(const char *epoch, const char *host, uint64_t n, size_t nstats)
{
	struct dcpi_profset s;
	int err = dcpi_profset_load(root, epoch, host, &s);

	T_EQ(err, 0, "load epoch %s host %s%s%s", epoch, host, err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err)
		return;
	T_EQ(s.nstats, nstats, "%s/%s: %zu statistics files read", epoch, host, nstats);
	T_EQ(s.stats.samples, 7 * n, "%s/%s: samples summed", epoch, host);
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

/* Statistics no collector writes are refused, each with what is wrong. */
static void check_parse_refusals(void)
{
	static const struct { const char *text, *says; } bad[] = {
		{ "samples 10\nclock_khz 18446744073709551615\n", "clock_khz 18446744073709551615" },
		{ "samples 10\nclock_khz 100000001\n", "above 100000000 (100 GHz)" },
		{ "samples 10\nunknown 11\n", "unknown 11 exceeds samples 10" },
		{ "samples 10\nkernel 11\n", "kernel 11 exceeds samples 10" },
		{ "samples 10\nstack_copies_cut 11\n", "stack_copies_cut 11 exceeds samples 10" },
		{ "samples 10\nlost 18446744073709551606\n", "add past 2^64" },
	};
	struct dcpi_epoch_stats st;
	const char *ok = "samples 10\nunknown 10\nkernel 10\nlost 18446744073709551605\n"
			 "clock_khz 100000000\nstack_copies_cut 10\n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = dcpi_stats_parse(bad[i].text, strlen(bad[i].text), &st);

		T_EQ(err, -EBADMSG, "refused: %s", bad[i].says);
		T_OK(err && strstr(dcpi_errmsg(), bad[i].says), "the message says '%s': %s",
		     bad[i].says, err ? dcpi_errmsg() : "(none)");
	}
	T_EQ(dcpi_stats_parse(ok, strlen(ok), &st), 0, "the limits themselves are accepted");
	T_EQ(st.stack_copies_cut, 10, "stack_copies_cut read");
}

/* An epoch.stats of text in root2's epoch/host directory. */
static int plant_stats(const char *r, const char *epoch, const char *host, const char *text)
{
	char dir[512], path[600];
	FILE *f;

	if (dcpi_db_path(dir, sizeof(dir), r, epoch, host, NULL) || dcpi_db_init(dir, 0700))
		return -1;
	snprintf(path, sizeof(path), "%s/epoch.stats", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* What collecting cost, over hosts: the collectors' CPU times add up; the
 * cost of a sample is the mean over the samples of those that measured
 * it (a host that did not measure it does not weigh). */
static void check_overhead_sums(void)
{
	char r[] = "/tmp/dcpi-test-profset3.XXXXXX", cmd[600];
	const char *ep = "20240101T000000Z";
	struct dcpi_profset s;
	double pct, irq;

	if (!mkdtemp(r))
		return;
	T_EQ(plant_stats(r, ep, "a", "samples 100\ncollector_cpu_ns 1000\nsample_cost_ns 1000\n"
			 "event e period 1 enabled 1000000\n"), 0, "host a: 100 samples at 1 us");
	T_EQ(plant_stats(r, ep, "b", "samples 300\ncollector_cpu_ns 2000\nsample_cost_ns 3000\n"
			 "event e period 1 enabled 1000000\n"), 0, "host b: 300 samples at 3 us");
	T_EQ(plant_stats(r, ep, "c", "samples 600\ncollector_cpu_ns 4000\n"
			 "event e period 1 enabled 1000000\n"), 0, "host c: 600, cost not measured");
	if (dcpi_profset_load(r, ep, "all", &s) == 0) {
		T_EQ(s.stats.collector_cpu_ns, 7000, "the collectors' CPU times summed");
		T_EQ(s.stats.sample_cost_ns, 2500, "the cost: (100 x 1000 + 300 x 3000) / 400");
		T_OK(dcpi_stats_overhead(&s.stats, &pct, &irq) == 0 &&
		     fabs(irq - 1000 * 2500e-9) < 1e-12 &&
		     fabs(pct - 100.0 * (7000 + 1000 * 2500.0) / 3000000) < 1e-9,
		     "the overhead: %.4f%% (interrupts %.6f s)", pct, irq);
		dcpi_profset_free(&s);
	} else {
		T_OK(0, "the set loads: %s", dcpi_errmsg());
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r);
	if (system(cmd)) {
	}
}

/* A set never holds a sum that wrapped: impossible statistics and the
 * files that would carry a sum past 2^64 are left out, counted and named. */
static void check_set_refusals(void)
{
	char r[] = "/tmp/dcpi-test-profset2.XXXXXX", dir[512], cmd[600];
	const char *ep = "20240101T000000Z";
	struct dcpi_profset s;
	int err;

	if (!mkdtemp(r))
		return;
	/* host a: a clock no reader may convert with (UBSan aborted on it) */
	T_EQ(plant_stats(r, ep, "a", "samples 10\nclock_khz 18446744073709551615\n"), 0,
	     "statistics with clock_khz 2^64-1 planted");
	/* hosts b and c: samples that add past 2^64 */
	T_EQ(plant_stats(r, ep, "b", "samples 9223372036854775808\n"), 0, "host b: 2^63 samples");
	T_EQ(plant_stats(r, ep, "c", "samples 9223372036854775808\n"), 0, "host c: 2^63 samples");
	/* two profiles whose totals add past 2^64 */
	dcpi_db_path(dir, sizeof(dir), r, ep, "a", NULL);
	T_EQ(add_profile(dir, ep, "a", "/bin/one", UINT64_C(1) << 63), 0, "a profile of 2^63");
	T_EQ(add_profile(dir, ep, "a", "/bin/two", UINT64_C(1) << 63), 0, "another of 2^63");
	err = dcpi_profset_load(r, ep, "all", &s);
	T_EQ(err, 0, "the set loads%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	if (!err) {
		T_EQ(s.nbad_stats, 2, "two statistics files refused");
		T_OK(s.first_bad_stats && strstr(s.first_bad_stats, "/a/epoch.stats: clock_khz"),
		     "the first named, with its clock: %s", s.first_bad_stats ? s.first_bad_stats : "");
		T_EQ(s.nstats, 1, "one statistics file read");
		T_EQ(s.stats.samples, UINT64_C(1) << 63, "its samples, not a wrapped sum");
		T_EQ(s.stats.clock_khz, 0, "no clock");
		T_EQ(s.n, 1, "one profile kept");
		T_EQ(s.nbad, 1, "the other refused");
		T_OK(s.first_bad && strstr(s.first_bad, ".prof: its samples and those of the "
					     "profiles read before add past 2^64"),
		     "and named: %s", s.first_bad ? s.first_bad : "");
		T_EQ(s.sum[0], UINT64_C(1) << 63, "the column's sum is the kept profile's");
		T_OK(s.nbad_kept == 1 && dcpi_profset_bad_of(&s, "/bin/two") == s.bad[0] &&
		     dcpi_profset_bad_of(&s, "two") == s.bad[0],
		     "the refused profile is found by its image's path and name");
		T_OK(!dcpi_profset_bad_of(&s, "/bin/one") && !dcpi_profset_bad_of(&s, "tw") &&
		     !dcpi_profset_bad_of(&s, "/bin/two-"),
		     "and only by them");
		dcpi_profset_free(&s);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r);
	if (system(cmd))
		printf("# could not remove %s\n", r);
}

/* -epoch by time: the forms, their spans, the refusals; then the epochs
 * chosen by overlap (the fixture's: 2024-01-01 and 2024-01-02, UTC, the
 * second lasting until now). */
static void check_times(void)
{
	time_t from = 0, to = 0, now = 1704196800; /* 2024-01-02T12:00:00 UTC */
	struct dcpi_profset s;
	static const char *const bad[] = { "last-0h", "last-5x", "last-h", "2024-13-01", "abc",
					   "12:00..11:00", "2024-01-01T25", "", "..", NULL };

	T_EQ(dcpi_profset_time_range("2024-01-01", now, &from, &to), 0, "a day");
	T_OK(from == 1704067200 && to == from + 86400, "2024-01-01: that day (%ld..%ld)",
	     (long)from, (long)to);
	T_EQ(dcpi_profset_time_range("2024-01-01T03", now, &from, &to), 0, "an hour");
	T_OK(from == 1704067200 + 3 * 3600 && to == from + 3600, "2024-01-01T03: that hour");
	T_EQ(dcpi_profset_time_range("2024-01-01T03:30", now, &from, &to), 0, "a minute");
	T_OK(to - from == 60, "a minute's span");
	T_EQ(dcpi_profset_time_range("03:00..04:30", now, &from, &to), 0, "a range today");
	T_OK(from == 1704153600 + 3 * 3600 && to == 1704153600 + 4 * 3600 + 1800,
	     "03:00..04:30: today's, the end excluded");
	T_EQ(dcpi_profset_time_range("last-90m", now, &from, &to), 0, "last-90m");
	T_OK(from == now - 5400 && to == now + 1, "the last 90 minutes until now");
	for (size_t i = 0; bad[i]; i++)
		T_EQ(dcpi_profset_time_range(bad[i], now, &from, &to), -EINVAL, "'%s' refused: %s",
		     bad[i], dcpi_errmsg());
	check("2024-01-01", "all", 11, 2);
	check("2024-01-01T12..2024-01-02T01", "all", 111, 3);
	check("2024-01-02T05", "a", 100, 1);
	check("last-1h", "a", 100, 1);
	T_EQ(dcpi_profset_load(root, "2023-12-31", "all", &s), -ENOENT, "a day before every "
	     "epoch: none (%s)", dcpi_errmsg());
	T_OK(strstr(dcpi_errmsg(), "no epoch between") != NULL, "said so");
}

int main(void)
{
	setenv("TZ", "UTC", 1); /* the times below are the epochs' UTC names' */
	tzset();
	if (!mkdtemp(root))
		return 1;
	check_parse_refusals();
	check_set_refusals();
	check_overhead_sums();
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
	check_times();
	if (!getenv("DCPI_TEST_KEEP")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd))
			printf("# could not remove %s\n", root);
	}
	return t_done();
}
