/* The collector on synthetic streams: attribution through mmap, fork,
 * exec and exit; time ordering of records read out of order; per-process
 * and unknown profiles; merges that add up, survive a failed write, and
 * never double count; draining through the sampler interface (a replay
 * sampler, no perf). */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/collector.h"
#include "dcpi/error.h"
#include "dcpi/record.h"
#include "replay.h"
#include "tap.h"

static char tmp[256];
static const uint8_t id_a[20] = { 0xaa, 1, 2, 3 }, id_b[20] = { 0xbb, 4, 5, 6 };

static struct dcpi_eventlist events(void)
{
	struct dcpi_eventlist l;

	memset(&l, 0, sizeof(l));
	if (dcpi_event_parse(&l, "cpu-clock:F500000"))
		abort();
	return l;
}

static struct dcpi_collector *new_collector(const struct dcpi_eventlist *ev, const char *bypid)
{
	const char *const bp[1] = { bypid };
	char procroot[300];
	struct dcpi_collector_opts o = { .events = ev, .procroot = procroot, .host = "testhost",
					 .bypid = bp, .nbypid = bypid ? 1 : 0, .mmap_build_id = 1 };
	struct dcpi_collector *c = NULL;

	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	mkdir(procroot, 0700);
	if (dcpi_collector_new(&o, &c))
		printf("# %s\n", dcpi_errmsg());
	snprintf(dcpi_collector_stats(c)->epoch, DCPI_EPOCH_NAME_MAX, "20261122T000000Z");
	return c;
}

/* A platform directory of the test's temp dir, made. */
static void plat_dir(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "%s/%s", tmp, name);
	mkdir(dir, 0700);
}

static struct dcpi_record mmap_rec(int pid, uint64_t start, uint64_t len, uint64_t pgoff,
				   const char *path, const uint8_t *id)
{
	struct dcpi_record r = { .type = PERF_RECORD_MMAP2, .pid = pid, .tid = pid };

	r.mmap = (struct dcpi_mmap_event){ .pid = pid, .tid = pid, .start = start, .len = len,
					   .pgoff = pgoff, .prot = PROT_READ | PROT_EXEC,
					   .build_id = id, .build_id_len = 20, .path = path };
	return r;
}

static int sample(struct dcpi_collector *c, int pid, uint64_t ip)
{
	struct dcpi_record r = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
				 .pid = pid, .tid = pid, .ip = ip };

	return dcpi_collector_feed(c, &r, 0);
}

static int task(struct dcpi_collector *c, uint32_t type, int pid, int ppid)
{
	struct dcpi_record r = { .type = type, .pid = pid, .tid = pid, .ppid = ppid, .ptid = ppid };

	return dcpi_collector_feed(c, &r, -1);
}

/* Count at offset in the profile of image path (per-process: pid) in dir. */
static long long count_at(const char *dir, const char *path, long long pid, uint64_t off)
{
	char **files;
	size_t n;
	long long found = -1;

	if (dcpi_db_profiles(dir, &files, &n))
		return -2;
	for (size_t i = 0; i < n; i++) {
		struct dcpi_profile p;

		dcpi_profile_init(&p);
		if (dcpi_profile_read(files[i], &p))
			continue;
		if (!strcmp(p.path, path) && p.pid == pid) {
			found = 0;
			for (size_t r = 0; r < p.nrows; r++)
				if (p.offsets[r] == off)
					found = (long long)p.counts[r * p.nevents];
		}
		dcpi_profile_free(&p);
	}
	dcpi_db_names_free(files, n);
	return found;
}

static void test_attribution(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	struct dcpi_record r;
	char dir[300];

	plat_dir(dir, sizeof(dir), "plat1");
	r = mmap_rec(100, 0x400000, 0x10000, 0x1000, "/opt/fake/a.out", id_a);
	T_EQ(dcpi_collector_feed(c, &r, -1), 0, "mmap accepted");
	for (int i = 0; i < 3; i++)
		sample(c, 100, 0x401234);
	task(c, PERF_RECORD_FORK, 101, 100);
	sample(c, 101, 0x402000);                     /* the child runs the parent's code */
	r = (struct dcpi_record){ .type = PERF_RECORD_COMM, .pid = 101, .tid = 101, .exec = 1,
				  .comm = "b" };
	dcpi_collector_feed(c, &r, -1);
	sample(c, 101, 0x402000);                     /* after exec: nothing mapped yet */
	r = mmap_rec(101, 0x500000, 0x8000, 0, "/opt/fake/b.out", id_b);
	dcpi_collector_feed(c, &r, -1);
	sample(c, 101, 0x500010);
	task(c, PERF_RECORD_EXIT, 100, 1);
	sample(c, 100, 0x401234);                     /* read late from another CPU */
	dcpi_loadmap_reap(dcpi_collector_loadmap(c));
	sample(c, 100, 0x401234);                     /* after reap: gone */
	r = (struct dcpi_record){ .type = PERF_RECORD_LOST, .lost = 42 };
	dcpi_collector_feed(c, &r, -1);

	T_EQ(dcpi_collector_stats(c)->samples, 8, "8 samples counted");
	T_EQ(dcpi_collector_stats(c)->unknown, 2, "2 unknown (after exec, after reap)");
	T_EQ(dcpi_collector_stats(c)->lost, 42, "lost records counted");
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	/* file offset = ip - start + pgoff */
	T_EQ(count_at(dir, "/opt/fake/a.out", -1, 0x2234), 4, "a.out: 3 + 1 late sample at 0x2234");
	T_EQ(count_at(dir, "/opt/fake/a.out", -1, 0x3000), 1, "forked child attributed to a.out");
	T_EQ(count_at(dir, "/opt/fake/b.out", -1, 0x10), 1, "exec'd image b.out");
	T_EQ(count_at(dir, "[unknown]", -1, 0x401234), 1, "unknown profile holds the raw address");
	T_EQ(count_at(dir, "[unknown]", -1, 0x402000), 1, "unknown after exec");

	/* a second merge adds */
	sample(c, 101, 0x500010);
	T_EQ(dcpi_collector_merge(c, dir), 0, "second merge");
	T_EQ(count_at(dir, "/opt/fake/b.out", -1, 0x10), 2, "counts add across merges");
	dcpi_collector_free(c);
}

static void test_failed_merge_keeps_samples(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	struct dcpi_record r = mmap_rec(200, 0x400000, 0x1000, 0, "/opt/fake/c.out", id_a);
	char dir[300];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/plat2", tmp);
	f = fopen(dir, "w"); /* a file where the directory should be: writes fail */
	fclose(f);
	dcpi_collector_feed(c, &r, -1);
	for (int i = 0; i < 5; i++)
		sample(c, 200, 0x400010);
	T_OK(dcpi_collector_merge(c, dir) < 0, "merge into a non-directory fails");
	T_OK(strstr(dcpi_errmsg(), "plat2") != NULL, "and the message names it: %s", dcpi_errmsg());
	unlink(dir);
	mkdir(dir, 0700);
	sample(c, 200, 0x400010);
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge succeeds once the directory is there");
	T_EQ(count_at(dir, "/opt/fake/c.out", -1, 0x10), 6, "nothing lost, nothing counted twice");
	dcpi_collector_free(c);
}

static void test_bypid(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, "d.out");
	struct dcpi_record r;
	char dir[300];

	plat_dir(dir, sizeof(dir), "plat3");
	for (int pid = 300; pid < 302; pid++) {
		r = mmap_rec(pid, 0x400000, 0x1000, 0, "/opt/fake/d.out", id_a);
		dcpi_collector_feed(c, &r, -1);
		r = mmap_rec(pid, 0x600000, 0x1000, 0, "/opt/fake/e.out", id_b);
		dcpi_collector_feed(c, &r, -1);
		for (int i = 0; i <= pid - 300; i++) {
			sample(c, pid, 0x400020);
			sample(c, pid, 0x600020);
		}
	}
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	T_EQ(count_at(dir, "/opt/fake/d.out", 300, 0x20), 1, "-bypid: pid 300's own profile");
	T_EQ(count_at(dir, "/opt/fake/d.out", 301, 0x20), 2, "-bypid: pid 301's own profile");
	T_EQ(count_at(dir, "/opt/fake/d.out", -1, 0x20), -1, "no shared profile for a -bypid image");
	T_EQ(count_at(dir, "/opt/fake/e.out", -1, 0x20), 3, "other images stay shared");
	dcpi_collector_free(c);
}

static void test_unknown_per_pid(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	char dir[300], name[400];
	FILE *f;

	plat_dir(dir, sizeof(dir), "plat5");
	dcpi_collector_free(c);
	{
		char procroot[300];
		struct dcpi_collector_opts o = { .events = &ev, .procroot = procroot,
						 .host = "testhost", .unknown_per_pid = 1 };

		snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
		T_EQ(dcpi_collector_new(&o, &c), 0, "collector with -unknown");
	}
	snprintf(dcpi_collector_stats(c)->epoch, DCPI_EPOCH_NAME_MAX, "20261122T000000Z");
	sample(c, 500, 0x7f0000123456);
	sample(c, 500, 0x7f0000123456);
	sample(c, 500, 0x7f0000200010);               /* another 1 MB region */
	sample(c, 501, 0x7f0000123456);               /* another process */
	T_EQ(dcpi_collector_stats(c)->unknown, 4, "4 unknown samples");
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	snprintf(name, sizeof(name), "%s/testhost500@0x7f0000100000.prof", dir);
	T_OK((f = fopen(name, "r")) != NULL, "per-process region profile %s", name);
	if (f)
		fclose(f);
	T_EQ(count_at(dir, "[unknown 0x7f0000100000]", 500, 0x23456), 2,
	     "offset within the 1 MB region");
	T_EQ(count_at(dir, "[unknown 0x7f0000200000]", 500, 0x10), 1, "second region apart");
	T_EQ(count_at(dir, "[unknown 0x7f0000100000]", 501, 0x23456), 1, "second process apart");
	dcpi_collector_free(c);
}

static int event_of(const void *arg, uint64_t id)
{
	(void)arg;
	return id == REPLAY_ID ? 0 : -1;
}

static void queue_mmap(struct dcpi_collector *c, uint32_t pid, const char *path, uint64_t time)
{
	uint8_t b[512];
	size_t n = raw_mmap2(b, pid, 0x700000, 0x1000, path, time);

	dcpi_collector_queue(c, b, n);
}

static void queue_sample(struct dcpi_collector *c, uint64_t ip, uint32_t pid, uint64_t time)
{
	uint8_t b[64];
	size_t n = raw_sample(b, REPLAY_ID, ip, pid, time);

	dcpi_collector_queue(c, b, n);
}

static void test_ordering(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	uint8_t b[512];
	char dir[300];
	size_t n;

	plat_dir(dir, sizeof(dir), "plat4");
	/* CPU 1's ring is read first: its sample (t=200) precedes, in reading
	 * order, the mmap on CPU 0 (t=100) that makes it attributable. */
	queue_sample(c, 0x700100, 400, 200);
	queue_sample(c, 0x700200, 400, 5000); /* past the horizon: waits */
	queue_mmap(c, 400, "/opt/fake/f.out", 100);
	T_EQ(dcpi_collector_process(c, 1000, event_of, NULL), 0, "process up to t=1000");
	T_EQ(dcpi_collector_stats(c)->samples, 1, "only the sample before the horizon counted");
	T_EQ(dcpi_collector_stats(c)->unknown, 0, "out-of-order sample still attributed");
	T_EQ(dcpi_collector_process(c, UINT64_MAX, event_of, NULL), 0, "process the rest");
	T_EQ(dcpi_collector_stats(c)->samples, 2, "held-back sample counted later");
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	T_EQ(count_at(dir, "/opt/fake/f.out", -1, 0x100), 1, "first sample at its offset");
	T_EQ(count_at(dir, "/opt/fake/f.out", -1, 0x200), 1, "second sample at its offset");
	n = raw_sample(b, REPLAY_ID, 0x700100, 400, 6000);
	b[6] = 0xff; /* header size disagrees with the length: dropped, not a crash */
	dcpi_collector_queue(c, b, n);
	T_EQ(dcpi_collector_process(c, UINT64_MAX, event_of, NULL), 0, "malformed record skipped");
	dcpi_collector_free(c);
}

/* Samples of a process with no side-band record queued are counted as
 * they come, in any order; those of a process whose mappings change in
 * the same drain wait for the change, in time order, whichever ring
 * each came from. */
static void test_fast_path(void)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	uint8_t b[512];
	char dir[300];
	size_t n;

	plat_dir(dir, sizeof(dir), "plat7");
	queue_mmap(c, 401, "/opt/fake/f.out", 10);
	T_EQ(dcpi_collector_process(c, 100, event_of, NULL), 0, "first mapping");
	/* one ring: after the exec, then before it; another: the exec and
	   the new image at the same address */
	queue_sample(c, 0x700100, 401, 300);
	queue_sample(c, 0x700100, 401, 150);
	queue_sample(c, 0x700300, 403, 900); /* nothing queued for 403 */
	queue_sample(c, 0x700300, 403, 2000); /* past the horizon */
	n = raw_comm(b, 401, "g.out", 1, 200);
	dcpi_collector_queue(c, b, n);
	queue_mmap(c, 401, "/opt/fake/g.out", 250);
	T_EQ(dcpi_collector_process(c, 1000, event_of, NULL), 0, "process up to t=1000");
	T_EQ(dcpi_collector_stats(c)->samples, 3, "the sample past the horizon waits");
	T_EQ(dcpi_collector_process(c, UINT64_MAX, event_of, NULL), 0, "process the rest");
	T_EQ(dcpi_collector_stats(c)->samples, 4, "and is counted then");
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	T_EQ(count_at(dir, "/opt/fake/f.out", -1, 0x100), 1,
	     "sample before the exec: old image (the one after the exec not with it)");
	T_EQ(count_at(dir, "/opt/fake/g.out", -1, 0x100), 1, "sample after the exec: new image");
	T_EQ(dcpi_collector_stats(c)->unknown, 2, "the process nothing maps: unknown, twice");
	dcpi_collector_free(c);
}

/* A kernel that leaks PERF_RECORD_MISC_MMAP_BUILD_ID into the records of
 * listeners that did not ask for build-ids: the payload is maj/min/ino,
 * and reading it as a build-id would lose the mapping. */
static void test_leaked_buildid_flag(void)
{
	uint8_t b[512];
	size_t n = raw_mmap2(b, 400, 0x700000, 0x1000, "/opt/fake/g.out", 100);
	uint32_t maj = 253, min = 3;
	uint64_t ino = 123456;
	struct dcpi_record r;

	memcpy(b + 40, &maj, 4); /* overwrite the build-id area with maj/min/ino */
	memcpy(b + 44, &min, 4);
	memcpy(b + 48, &ino, 8);
	T_EQ(dcpi_record_decode_flags(b, n, 0, &r), 0, "leaked flag: decodes");
	T_EQ(r.mmap.maj, 253, "leaked flag: maj read as maj");
	T_EQ(r.mmap.ino, 123456, "leaked flag: ino read as ino");
	T_OK(r.mmap.build_id == NULL, "leaked flag: no build-id invented");
	T_STREQ(r.mmap.path, "/opt/fake/g.out", "leaked flag: path intact");
	T_OK(dcpi_record_decode_flags(b, n, DCPI_RECORD_WANT_BUILD_ID, &r) != 0 ||
	     r.mmap.build_id != NULL, "trusting the flag reads the bytes as a build-id");
}

/* The collector drains any sampler: a replay one, its records read out of
 * time order across its rings, and a drain that fails half way. */
static void test_sampler_interface(int split, const char *plat)
{
	struct dcpi_eventlist ev = events();
	struct dcpi_collector *c = new_collector(&ev, NULL);
	struct dcpi_sampler_opts so = { .pid = -1 };
	struct dcpi_sampler *s = NULL;
	struct pollfd fds[4];
	uint64_t t = now_ns();
	uint8_t b[512];
	char dir[300];

	printf("# %s drain\n", split ? "split" : "plain");
	plat_dir(dir, sizeof(dir), plat);
	T_EQ(dcpi_sampler_open(&replay_ops, &ev, &so, &s), 0, "replay sampler opens");
	T_OK(s && s->ops == &replay_ops, "open sets the handle's operations");
	if (s)
		replay_of(s)->nosplit = !split;
	T_EQ(dcpi_sampler_enable(s), 0, "enable");
	T_EQ(dcpi_sampler_pollfds(s, fds, 4), 0, "no pollfds operation: no fds");
	dcpi_sampler_rerandomize(s); /* no operation: nothing happens */
	/* ring 0 is read first; its sample needs ring 1's older mmap */
	replay_put(s, 0, b, raw_sample(b, REPLAY_ID, 0x700100, 600, t - 5000000));
	replay_put(s, 0, b, raw_sample(b, REPLAY_ID, 0x700200, 600, t + 10000000000ull));
	replay_put(s, 1, b, raw_mmap2(b, 600, 0x700000, 0x1000, "/opt/fake/h.out", t - 10000000));
	T_EQ(dcpi_collector_drain(c, s, 0), 0, "drain through the interface");
	T_EQ(dcpi_collector_stats(c)->samples, 1, "the sample from the future waits");
	T_EQ(dcpi_collector_stats(c)->unknown, 0, "the sample read before its mmap is attributed");
	replay_put(s, 1, b, raw_sample(b, REPLAY_ID, 0x700300, 600, t + 20000000000ull));
	replay_of(s)->fail = 1;
	T_OK(dcpi_collector_drain(c, s, 1) < 0, "a failed drain is reported: %s", dcpi_errmsg());
	T_EQ(dcpi_collector_stats(c)->samples, 3, "and what was read is still processed");
	T_EQ(dcpi_collector_merge(c, dir), 0, "merge");
	T_EQ(count_at(dir, "/opt/fake/h.out", -1, 0x200), 1, "replayed sample at its offset");
	dcpi_sampler_close(s);
	dcpi_collector_free(c);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/dcpi-test-collector.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	test_attribution();
	test_failed_merge_keeps_samples();
	test_bypid();
	test_unknown_per_pid();
	test_ordering();
	test_fast_path();
	test_leaked_buildid_flag();
	test_sampler_interface(0, "plat6");
	/* side-band first, samples counted as they are read */
	test_sampler_interface(1, "plat8");
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd))
			printf("# could not remove %s\n", tmp);
	}
	return t_done();
}
