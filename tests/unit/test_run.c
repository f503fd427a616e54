/* The collection run, without perf: a replay sampler (replay.h) behind it.
 * Epoch set-up, statistics that continue an epoch or start afresh, event
 * times per epoch and per process tree, merges into the epoch, the
 * kernel fallback, and warnings through the callback. */
#include <errno.h>
#include <stdlib.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/run.h"
#include "fixture.h"
#include "replay.h"
#include "dcpi/vprof.h"
#include "tap.h"

static char procroot[PATH_MAX];
static struct dcpi_eventlist ev;
static char warned[8][1500];
static int nwarned;

static void on_warning(void *arg, const char *msg)
{
	(void)arg;
	if (nwarned < 8)
		snprintf(warned[nwarned++], sizeof(warned[0]), "%s", msg);
}

/* Options of a run of the replay sampler on database db: system-wide
 * (pid -1) or one process, user mode only unless kernel. */
static struct dcpi_run_opts opts(const char *db, int pid, int kernel)
{
	struct dcpi_run_opts o = {
		.db = db, .host = "testhost", .events = &ev, .sampler = &replay_ops,
		.sampling = { .pid = pid, .exclude_kernel = !kernel, .mmap_build_id = 1 },
		.procroot = procroot, .on_warning = on_warning,
	};

	return o;
}

static struct dcpi_run *open_run(const struct dcpi_run_opts *o)
{
	struct dcpi_run *r = NULL;

	if (dcpi_db_init(o->db, 0700) || dcpi_run_new(o, &r) || dcpi_run_open(r)) {
		printf("# %s\n", dcpi_errmsg());
		dcpi_run_free(r);
		return NULL;
	}
	return r;
}

static void set_times(struct dcpi_run *r, uint64_t enabled, uint64_t running)
{
	replay_of(dcpi_run_sampler(r))->enabled_ns = enabled;
	replay_of(dcpi_run_sampler(r))->running_ns = running;
}

static void put_samples(struct dcpi_run *r, int n)
{
	uint8_t b[512];
	uint64_t t = now_ns() - 100000000;

	replay_put(dcpi_run_sampler(r), 1, b, raw_mmap2(b, 700, 0x700000, 0x1000,
							"/opt/fake/r.out", t));
	for (int i = 0; i < n; i++)
		replay_put(dcpi_run_sampler(r), 0, b, raw_sample(b, REPLAY_ID, 0x700040, 700,
								 t + 1000 + i));
}

static int read_stats(const struct dcpi_run *r, struct dcpi_epoch_stats *st)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/epoch.stats", dcpi_run_platdir(r));
	memset(st, 0, sizeof(*st));
	return dcpi_stats_read(path, st);
}

static void test_epoch_and_merge(void)
{
	char db[300], want[400];
	struct dcpi_run_opts o;
	struct dcpi_run *r;
	struct dcpi_epoch_stats st;

	snprintf(db, sizeof(db), "%s", fx_path("db1"));
	o = opts(db, -1, 0);
	r = open_run(&o);
	T_OK(r != NULL, "a run of the replay sampler opens");
	if (!r)
		return;
	T_OK(!dcpi_run_kernel(r), "user mode only: no kernel samples");
	T_STREQ(dcpi_run_epoch(r), "", "no epoch yet");
	T_EQ(dcpi_run_merge(r), -EINVAL, "no merge without an epoch: %s", dcpi_errmsg());
	T_EQ(dcpi_run_new_epoch(r), 0, "new epoch");
	T_OK(dcpi_db_is_epoch_name(dcpi_run_epoch(r)), "named like an epoch: %s",
	     dcpi_run_epoch(r));
	snprintf(want, sizeof(want), "%s/%s/testhost", db, dcpi_run_epoch(r));
	T_STREQ(dcpi_run_platdir(r), want, "its platform directory");
	T_STREQ(dcpi_run_stats(r)->epoch, dcpi_run_epoch(r), "statistics name the epoch");
	T_EQ(dcpi_run_stats(r)->ncpus, REPLAY_CPUS, "and the sampler's CPUs");
	T_EQ(dcpi_run_start(r), 0, "start");
	T_OK(replay_of(dcpi_run_sampler(r))->enabled, "start enables the sampler");
	put_samples(r, 5);
	T_EQ(dcpi_run_drain(r, 1), 0, "drain");
	set_times(r, 4000, 1000);
	T_EQ(dcpi_run_merge(r), 0, "merge");
	T_EQ(read_stats(r, &st), 0, "epoch.stats written");
	T_EQ(st.samples, 5, "epoch.stats: samples");
	T_EQ(st.ncpus, REPLAY_CPUS, "epoch.stats: cpus");
	T_EQ(st.ev[0].time_enabled, 4000, "system-wide: enabled is the counters' sum");
	T_EQ(st.ev[0].time_running, 1000, "running");
	T_EQ(st.images, 1, "one profile");
	put_samples(r, 2);
	T_EQ(dcpi_run_stop(r), 0, "stop drains everything");
	T_OK(!replay_of(dcpi_run_sampler(r))->enabled, "stop disables the sampler");
	T_EQ(dcpi_run_stats(r)->samples, 7, "what stop read is counted");
	T_EQ(nwarned, 0, "nothing to warn about");
	dcpi_run_free(r);
}

/* A continued epoch keeps counting; a later epoch of the same run counts
 * times from its own start. */
static void test_continue_epoch(void)
{
	char db[300], bad[400], name[DCPI_EPOCH_NAME_MAX];
	struct dcpi_run_opts o;
	struct dcpi_run *r;
	struct dcpi_eventlist other;

	snprintf(db, sizeof(db), "%s", fx_path("db2"));
	o = opts(db, -1, 0);
	if (!(r = open_run(&o)))
		return;
	dcpi_run_new_epoch(r);
	snprintf(name, sizeof(name), "%s", dcpi_run_epoch(r));
	put_samples(r, 3);
	dcpi_run_drain(r, 1);
	dcpi_run_merge(r);
	dcpi_run_free(r);

	if (!(r = open_run(&o)))
		return;
	T_EQ(dcpi_run_enter_epoch(r, name), 0, "enter the epoch again");
	T_EQ(dcpi_run_stats(r)->samples, 3, "its statistics continue");
	set_times(r, 1000, 800);
	T_EQ(dcpi_run_new_epoch(r) == 0 && strcmp(dcpi_run_epoch(r), name), 1,
	     "a later epoch: %s", dcpi_run_epoch(r));
	T_EQ(dcpi_run_stats(r)->samples, 0, "counts start afresh");
	set_times(r, 1500, 1100);
	dcpi_run_update_times(r);
	T_EQ(dcpi_run_stats(r)->ev[0].time_enabled, 500, "enabled time since the epoch began");
	T_EQ(dcpi_run_stats(r)->ev[0].time_running, 300, "running time since the epoch began");
	snprintf(bad, sizeof(bad), "%s/20990101T000000Z", db);
	fclose(fopen(bad, "w")); /* a file where the epoch's directory would be */
	snprintf(name, sizeof(name), "%s", dcpi_run_epoch(r));
	T_OK(dcpi_run_enter_epoch(r, "20990101T000000Z") < 0, "entering fails: %s", dcpi_errmsg());
	T_STREQ(dcpi_run_epoch(r), name, "and the run stays in its epoch");
	dcpi_run_free(r);

	memset(&other, 0, sizeof(other));
	if (dcpi_event_parse(&other, "cpu-clock:F1000000"))
		abort();
	o.events = &other;
	if (!(r = open_run(&o)))
		return;
	T_EQ(dcpi_run_enter_epoch(r, name), 0, "enter it counting another event");
	T_EQ(dcpi_run_stats(r)->samples, 0, "other events: statistics start afresh");
	dcpi_run_free(r);
}

/* One process tree: its enabled time lies between running and the sum. */
static void test_process_times(void)
{
	char db[300];
	struct dcpi_run_opts o;
	struct dcpi_run *r;
	const struct dcpi_stats_event *se;

	snprintf(db, sizeof(db), "%s", fx_path("db3"));
	o = opts(db, (int)getpid(), 0);
	if (!(r = open_run(&o)))
		return;
	se = &dcpi_run_stats(r)->ev[0];
	set_times(r, 4000, 1000);
	dcpi_run_update_times(r);
	T_EQ(se->time_enabled, 4000 / REPLAY_CPUS, "CPU time unknown: the sum over the CPUs");
	dcpi_run_set_cpu_time(r, 3000);
	dcpi_run_update_times(r);
	T_EQ(se->time_enabled, 3000, "CPU time known: that");
	dcpi_run_set_cpu_time(r, 500);
	dcpi_run_update_times(r);
	T_EQ(se->time_enabled, 1000, "never less than running");
	dcpi_run_set_cpu_time(r, 9000);
	dcpi_run_update_times(r);
	T_EQ(se->time_enabled, 4000, "never more than the sum");
	dcpi_run_free(r);
}

static void test_kernel(void)
{
	char db[300];
	struct dcpi_run_opts o;
	struct dcpi_run *r = NULL;

	snprintf(db, sizeof(db), "%s", fx_path("db4"));
	replay_refuse_kernel = 1;
	o = opts(db, -1, 1);
	T_EQ(dcpi_run_new(&o, &r), 0, "system-wide run");
	T_EQ(dcpi_run_open(r), -EACCES, "kernel refused system-wide: an error");
	dcpi_run_free(r);
	o = opts(db, 1234, 1);
	o.kernel_fallback = 1;
	r = open_run(&o);
	T_OK(r && !dcpi_run_kernel(r), "one process: falls back to user space");
	dcpi_run_free(r);
	replay_refuse_kernel = 0;

	o = opts(db, -1, 1);
	r = open_run(&o); /* procroot has no kallsyms */
	T_OK(r && dcpi_run_kernel(r), "kernel samples taken");
	T_OK(nwarned == 1 && !strncmp(warned[0], "kernel images: ", 15) &&
	     strstr(warned[0], "(kernel samples will be unknown)"), "warned: %s", warned[0]);
	T_EQ(r ? dcpi_run_new_epoch(r) : -1, 0, "an epoch without a kernel snapshot");
	T_OK(nwarned == 2 && !strncmp(warned[1], "kernel symbol snapshot: ", 24),
	     "warned: %s", warned[1]);
	dcpi_run_free(r);
}

/* A snapshot file of the run's epoch, uncompressed, into b. */
static int read_gz(const struct dcpi_run *r, char *b, int n)
{
	char path[4200];
	gzFile z;
	int got;

	snprintf(path, sizeof(path), "%s/kallsyms.gz", dcpi_run_platdir(r));
	if (!(z = gzopen(path, "rb")))
		return -1;
	got = gzread(z, b, (unsigned)n - 1);
	gzclose(z);
	b[got > 0 ? got : 0] = 0;
	return got;
}

/* dcpi_run_prepare_epoch makes the snapshot ahead (dcpi record, before its
 * command starts): the next epoch writes what was made then, once, and
 * the epoch after it reads the kernel's again. */
static void test_prepared_snapshot(void)
{
	char db[300], ks[4200], got[4096];
	const char *v1 = "ffffffff81000000 T _stext\nffffffff81000000 t __pfx_foo\n"
			 "ffffffff81000010 T foo\nffffffff81100000 T _etext\n";
	const char *v2 = "ffffffff81000000 T _stext\nffffffff81000020 T bar\n"
			 "ffffffff81100000 T _etext\n";
	struct dcpi_run_opts o;
	struct dcpi_run *r;

	snprintf(db, sizeof(db), "%s", fx_path("db5"));
	snprintf(ks, sizeof(ks), "%s/kallsyms", procroot);
	fx_sh("printf '%%s' '%s' >'%s'", v1, ks);
	nwarned = 0;
	o = opts(db, -1, 1);
	r = open_run(&o);
	T_OK(r && dcpi_run_kernel(r), "kernel samples taken");
	if (!r)
		return;
	T_EQ(dcpi_run_prepare_epoch(r), 0, "snapshot made ahead");
	fx_sh("printf '%%s' '%s' >'%s'", v2, ks); /* the kernel's changes after */
	T_EQ(dcpi_run_new_epoch(r), 0, "first epoch");
	T_OK(read_gz(r, got, sizeof(got)) > 0 &&
	     !strcmp(got, "ffffffff81000000 T _stext\nffffffff81000010 T foo\n"
			  "ffffffff81100000 T _etext\n"),
	     "the first epoch's snapshot is the one made ahead, padding left out: %s", got);
	T_EQ(nwarned, 0, "no warning");
	T_EQ(dcpi_run_enter_epoch(r, "20300101T000000Z"), 0, "second epoch");
	T_OK(read_gz(r, got, sizeof(got)) > 0 && !strcmp(got, v2),
	     "the next epoch's is read afresh, not the one made ahead again: %s", got);
	unlink(ks);
	T_EQ(dcpi_run_prepare_epoch(r), -ENOENT, "no kallsyms: prepare says so");
	T_EQ(dcpi_run_enter_epoch(r, "20300102T000000Z"), 0, "an epoch all the same");
	T_OK(nwarned == 1 && !strncmp(warned[0], "kernel symbol snapshot: ", 24),
	     "and entering it warns once: %s", nwarned ? warned[0] : "");
	dcpi_run_free(r);

	/* made ahead, never used: freed with the run (ASan) */
	fx_sh("printf '%%s' '%s' >'%s'", v1, ks);
	r = open_run(&o);
	T_EQ(r ? dcpi_run_prepare_epoch(r) : -1, 0, "made ahead, then the run ends");
	dcpi_run_free(r);
	unlink(ks);
}

/* R periods are redrawn after drains, at most every 10 ms, in any run (dcpid
 * and dcpi record alike); F periods never. */
static int redrawn;

static void count_redraw(struct dcpi_sampler *s)
{
	(void)s;
	redrawn++;
}

static void test_rerandomize(void)
{
	struct dcpi_sampler_ops ops = replay_ops;
	struct dcpi_eventlist evr = { 0 };
	struct dcpi_run_opts o = opts(fx_path("db-r"), -1, 0);
	struct dcpi_run *r;
	struct timespec pause = { 0, 15000000 };
	uint64_t t0, took;
	int base;

	ops.rerandomize = count_redraw;
	o.sampler = &ops;
	o.events = &ev;
	redrawn = 0;
	r = open_run(&o);
	for (int i = 0; r && i < 3; i++)
		dcpi_run_drain(r, 0);
	T_EQ(redrawn, 0, "F periods: never redrawn");
	T_EQ(r ? dcpi_run_randomized(r) : -1, 0, "F periods: not randomised");
	dcpi_run_free(r);

	if (dcpi_event_parse(&evr, "cpu-clock:R500000"))
		printf("# %s\n", dcpi_errmsg());
	o.events = &evr;
	r = open_run(&o);
	T_EQ(r ? dcpi_run_randomized(r) : -1, 1, "R period: randomised");
	t0 = now_ns();
	for (int i = 0; r && i < 3; i++)
		dcpi_run_drain(r, 0);
	took = now_ns() - t0;
	/* three drains take microseconds, unless this test was preempted
	   between them (a busy machine): then once per 10 ms begun */
	if (took < 10000000)
		T_EQ(redrawn, 1, "R period: redrawn once for three drains within 10 ms");
	else
		T_OK(redrawn >= 1 && (uint64_t)redrawn <= 1 + took / 10000000,
		     "R period: redrawn at most once per 10 ms (%d for three drains in %.1f ms: "
		     "preempted)", redrawn, (double)took / 1e6);
	base = redrawn;
	nanosleep(&pause, NULL);
	if (r)
		dcpi_run_drain(r, 0);
	T_EQ(redrawn, base + 1, "R period: redrawn again at the next drain 15 ms later");
	nanosleep(&pause, NULL);
	if (r)
		dcpi_run_rerandomize(r);
	T_EQ(redrawn, base + 2, "R period: redrawn by the loop's own call without a drain");
	dcpi_run_free(r);
}

/* A merge held up in its slow part (on_commit, before the profiles are
 * committed): the samples written to the rings meanwhile must be read out
 * of them by the run's ring-reading thread, not wait for the merge. */
static int during_merge_put, during_merge_read;

static void put_n(struct dcpi_sampler *s, unsigned cpu, uint32_t pid, uint64_t ip, int n)
{
	uint8_t b[64];
	uint64_t t = now_ns() - 100000000;

	for (int i = 0; i < n; i++)
		replay_put(s, cpu, b, raw_sample(b, REPLAY_ID, ip, pid, t + (uint64_t)i));
}

static void slow_commit(void *arg, size_t nfiles)
{
	(void)arg, (void)nfiles;
	if (during_merge_put++)
		return; /* the first merge only */
	put_n(&replay_last->base, 0, 700, 0x700040, 300);
	put_n(&replay_last->base, 1, 700, 0x700080, 200);
	/* the merge goes on only once the thread has read the rings (or,
	   failing, after 30 s): nothing but that thread drains them now */
	during_merge_read = replay_wait_empty(replay_last, 30);
}

static void test_drain_during_merge(void)
{
	char db[300];
	struct dcpi_run_opts o;
	struct dcpi_run_totals t;
	struct dcpi_sampler_loss l[4];
	struct dcpi_run *r;
	struct dcpi_epoch_stats st;
	uint8_t b[512];
	size_t n, now, peak;

	snprintf(db, sizeof(db), "%s", fx_path("db_thread"));
	o = opts(db, -1, 0);
	o.drain_thread = 1;
	o.on_commit = slow_commit;
	r = open_run(&o);
	T_OK(r != NULL && replay_last, "a run with a ring-reading thread opens");
	if (!r || !replay_last)
		return;
	T_STREQ(dcpi_run_sampler(r)->ops->name, "thread", "the run reads the thread's sampler");
	T_EQ(dcpi_run_new_epoch(r), 0, "new epoch");
	T_EQ(dcpi_run_start(r), 0, "start");
	T_OK(replay_last->enabled, "start enables the sampler behind the thread");
	replay_put(&replay_last->base, 1, b, raw_mmap2(b, 700, 0x700000, 0x1000, "/opt/fake/r.out",
						       now_ns() - 200000000));
	put_n(&replay_last->base, 0, 700, 0x700040, 5);
	replay_put(&replay_last->base, 1, b, raw_lost(b, 7, now_ns() - 100000000));
	T_EQ(dcpi_run_drain(r, 1), 0, "drain");
	T_EQ(dcpi_run_merge(r), 0, "a merge, held up until the rings were read");
	T_OK(during_merge_read, "the thread read the rings while the merge was held up");
	T_EQ(read_stats(r, &st), 0, "epoch.stats written");
	T_EQ(st.samples, 5, "that merge wrote the samples drained before it");
	dcpi_sampler_thread_staged(dcpi_run_sampler(r), &now, &peak);
	T_EQ(now, 500 * 40, "the 500 samples read meanwhile wait in memory");
	T_EQ(dcpi_run_drain(r, 1), 0, "the next drain");
	T_EQ(dcpi_run_merge(r), 0, "the next merge");
	T_EQ(read_stats(r, &st), 0, "epoch.stats written");
	T_EQ(st.samples, 505, "every sample counted, those of the merge's time too");
	T_EQ(st.lost, 7, "the kernel's loss counted");
	n = dcpi_sampler_losses(dcpi_run_sampler(r), l, 4);
	T_EQ(n, 1, "one CPU lost samples");
	T_OK(n == 1 && l[0].cpu == 1 && l[0].lost == 7, "CPU 1's ring: 7");
	T_EQ(dcpi_sampler_losses(dcpi_run_sampler(r), l, 4), 0, "told once");
	/* a second epoch: the run's totals add both */
	T_EQ(dcpi_run_new_epoch(r), 0, "a second epoch");
	put_n(&replay_last->base, 0, 700, 0x700040, 3);
	T_EQ(dcpi_run_stop(r), 0, "stop");
	T_EQ(dcpi_run_stats(r)->samples, 3, "the epoch's samples");
	dcpi_run_totals(r, &t);
	T_EQ(t.samples, 508, "the run's samples: both epochs");
	T_EQ(t.lost, 7, "the run's losses");
	dcpi_run_free(r);
}

/* A precise memory event's samples (replayed as the kernel lays them out):
 * counted flat as any, and into the epoch's value profile: each load's
 * latency binned (the default bins), its data source counted; samples the
 * PMU did not time, and those of no image, counted as skipped. */
static void test_mem_samples(void)
{
	struct dcpi_eventlist mev = ev;
	struct dcpi_run_opts o;
	struct dcpi_run *r;
	struct dcpi_vprof *v = NULL;
	const struct dcpi_vprof_load *l;
	char db[300], path[4300];
	uint8_t b[512];
	uint64_t t = now_ns() - 100000000;
	union perf_mem_data_src l1 = { .val = 0 }, ram = { .val = 0 };

	l1.mem_lvl_num = PERF_MEM_LVLNUM_L1;
	ram.mem_lvl_num = PERF_MEM_LVLNUM_RAM;
	ram.mem_remote = 1;
	mev.ev[0].mem = DCPI_EVENT_MEM_PEBS;
	snprintf(db, sizeof(db), "%s", fx_path("dbmem"));
	o = opts(db, -1, 0);
	o.events = &mev;
	r = open_run(&o);
	T_OK(r != NULL, "a run with a precise memory event opens");
	if (!r)
		return;
	T_EQ(dcpi_run_new_epoch(r), 0, "new epoch");
	T_EQ(dcpi_run_start(r), 0, "start");
	replay_put(dcpi_run_sampler(r), 1, b, raw_mmap2(b, 700, 0x700000, 0x1000,
							"/opt/fake/r.out", t));
	for (int i = 0; i < 10; i++) /* 0x700040: 6 at 3 cycles from L1, 4 at 300 from remote RAM */
		replay_put(dcpi_run_sampler(r), 0, b,
			   raw_mem_sample(b, REPLAY_ID, 0x700040, 700, t + 1000 + i, 0x1000 + i,
					  i < 6 ? 3 : 300, i < 6 ? l1.val : ram.val));
	replay_put(dcpi_run_sampler(r), 0, b, raw_mem_sample(b, REPLAY_ID, 0x700080, 700, t + 2000,
							     0, 0, 0)); /* not timed */
	replay_put(dcpi_run_sampler(r), 0, b, raw_mem_sample(b, REPLAY_ID, 0x900000, 700, t + 2001,
							     8, 50, l1.val)); /* in no image */
	T_EQ(dcpi_run_drain(r, 1), 0, "drain");
	T_EQ(dcpi_run_merge(r), 0, "merge: %s", dcpi_errmsg());
	T_EQ(dcpi_run_stats(r)->samples, 12, "every sample counted flat");
	snprintf(path, sizeof(path), "%s/epoch.vprof", dcpi_run_platdir(r));
	T_EQ(dcpi_vprof_read(path, &v), 0, "epoch.vprof written: %s", dcpi_errmsg());
	if (v) {
		int skipped_ok = 0;

		T_STREQ(v->kind, "ldlat", "its kind: the PMU's latency");
		T_OK(v->nimages == 1 && !strcmp(v->images[0].path, "/opt/fake/r.out") &&
		     v->images[0].build_id_len == 20 && v->processes == 0, "its one image, with the "
		     "mmap's build-id; no processes (the sampler's own)");
		l = dcpi_vprof_load(v, 0, 0x40);
		T_OK(l && l->samples == 10 && l->cycles == 6 * 3 + 4 * 300, "the load: samples, cycles");
		T_OK(l && l->bins[0] == 6 && l->bins[dcpi_bins_find(&v->bins, 300)] == 4,
		     "binned: 6 in c0-3, 4 in %s", v->bins.v[dcpi_bins_find(&v->bins, 300)].name);
		T_OK(l && l->sources[DCPI_SRC_L1] == 6 && l->sources[DCPI_SRC_REMOTE_RAM] == 4,
		     "sources: L1 6, remote-RAM 4");
		T_OK(v->nloads == 1 && v->signals == 12, "one load; 12 samples seen");
		for (size_t i = 0; i < v->nskipped; i++)
			skipped_ok += (!strcmp(v->skipped[i].name, "nolatency") && v->skipped[i].n == 1) +
				      (!strcmp(v->skipped[i].name, "noimage") && v->skipped[i].n == 1);
		T_EQ(skipped_ok, 2, "skipped: one not timed, one of no image");
		dcpi_vprof_free(v);
		v = NULL;
	}
	/* a second merge adds to the file */
	replay_put(dcpi_run_sampler(r), 0, b, raw_mem_sample(b, REPLAY_ID, 0x700040, 700,
							     now_ns() - 50000000, 1, 3, l1.val));
	T_EQ(dcpi_run_drain(r, 1), 0, "drain again");
	T_EQ(dcpi_run_merge(r), 0, "merge again");
	T_EQ(dcpi_vprof_read(path, &v), 0, "read again");
	if (v) {
		l = dcpi_vprof_load(v, 0, 0x40);
		T_OK(l && l->samples == 11 && l->sources[DCPI_SRC_L1] == 7 && v->signals == 13,
		     "the second merge added to the first");
		dcpi_vprof_free(v);
	}
	dcpi_run_free(r);
}

/* The database's bins file, where there is one, bins precise samples. */
static void test_mem_bins(void)
{
	struct dcpi_eventlist mev = ev;
	struct dcpi_run_opts o;
	struct dcpi_run *r;
	struct dcpi_vprof *v = NULL;
	char db[300], path[4300];
	uint8_t b[512];
	uint64_t t = now_ns() - 100000000;
	FILE *f;

	mev.ev[0].mem = DCPI_EVENT_MEM_IBS;
	snprintf(db, sizeof(db), "%s", fx_path("dbbins"));
	dcpi_db_init(db, 0700);
	snprintf(path, sizeof(path), "%s/bins", db);
	if ((f = fopen(path, "w"))) {
		fputs("0 10 5 near\n11 18446744073709551615 300 far\n", f);
		fclose(f);
	}
	o = opts(db, -1, 0);
	o.events = &mev;
	if (!(r = open_run(&o))) {
		T_OK(0, "a run with the database's bins opens");
		return;
	}
	T_OK(!dcpi_run_new_epoch(r) && !dcpi_run_start(r), "an epoch started");
	replay_put(dcpi_run_sampler(r), 1, b, raw_mmap2(b, 700, 0x700000, 0x1000, "/opt/fake/r.out", t));
	replay_put(dcpi_run_sampler(r), 0, b, raw_mem_sample(b, REPLAY_ID, 0x700040, 700, t + 5, 1, 40, 0));
	dcpi_run_drain(r, 1);
	T_EQ(dcpi_run_merge(r), 0, "merge");
	snprintf(path, sizeof(path), "%s/epoch.vprof", dcpi_run_platdir(r));
	T_EQ(dcpi_vprof_read(path, &v), 0, "read");
	T_OK(v && v->bins.n == 2 && !strcmp(v->bins.v[1].name, "far") && v->nloads == 1 &&
	     v->loads[0].bins[1] == 1 && v->loads[0].sources[DCPI_SRC_OTHER] == 1,
	     "binned by DB/bins (40 cycles: far); no data source said: other");
	dcpi_vprof_free(v);
	dcpi_run_free(r);
}

int main(void)
{
	if (fx_setup("run") || dcpi_event_parse(&ev, "cpu-clock:F500000"))
		return 1;
	snprintf(procroot, sizeof(procroot), "%s", fx_path("proc"));
	mkdir(procroot, 0700);
	test_epoch_and_merge();
	test_continue_epoch();
	test_process_times();
	test_kernel();
	test_prepared_snapshot();
	test_rerandomize();
	test_drain_during_merge();
	test_mem_samples();
	test_mem_bins();
	fx_cleanup();
	return t_done();
}
