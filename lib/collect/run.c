/* A collection run: sampler, collector and epoch together.  See
 * dcpi/run.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/label.h"
#include "dcpi/run.h"
#include "dcpi/snapshot.h"
#include "dcpi/stacktops.h"

struct dcpi_run {
	struct dcpi_run_opts o;      /* pointer options cleared: the copies below */
	struct dcpi_eventlist events;
	char *db, *procroot;
	char host[DCPI_HOST_MAX];
	char platform[DCPI_HOST_MAX]; /* the platform directory: host, or DB/hosts' */
	char epoch[DCPI_EPOCH_NAME_MAX];
	char platdir[4096];
	struct dcpi_sampler *sampler; /* NULL until dcpi_run_open */
	struct dcpi_collector *col;
	struct dcpi_stack_tops *tops; /* with stacks: shared by the two */
	struct dcpi_bins vbins;      /* DB/bins, for precise memory samples */
	int has_vbins;
	int kernel;                  /* kernel-mode samples are taken */
	unsigned nepochs;            /* entered so far */
	uint64_t cpu_ns;             /* dcpi_run_set_cpu_time; 0: not known */
	uint64_t self_base;          /* our CPU time when the epoch was entered */
	uint64_t self_carried;       /* the continued epoch's collector_cpu_ns */
	int randomized;              /* some event has an R period */
	uint64_t rerandomized_ns;    /* CLOCK_MONOTONIC of the last fresh periods */
	/* the counters' times when the epoch began */
	uint64_t base_enabled[DCPI_MAX_EVENTS], base_running[DCPI_MAX_EVENTS];
	struct dcpi_buf kallsyms;    /* read at open, kept for the first snapshot */
	struct dcpi_buf ksnap;       /* the epoch's whole snapshot, cut when it closes */
	struct dcpi_buf pre_text, pre_gz; /* the next epoch's, made ahead (prepare_epoch) */
	struct dcpi_run_totals done; /* of the epochs left */
	struct dcpi_run_totals base; /* the epoch's counts when it was entered */
};

static void warn(struct dcpi_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct dcpi_run *r, const char *fmt, ...)
{
	char msg[1400];
	va_list ap;

	if (!r->o.on_warning)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->o.on_warning(r->o.arg, msg);
}

/* The latency bins of precise memory samples: the database's bins file
 * (dcpi bins, dcpi record -vtrace make it) where there is one and the
 * run samples such an event; a bad one is said, and the default used. */
static void load_vbins(struct dcpi_run *r)
{
	char path[4200];
	int mem = 0;

	for (unsigned e = 0; e < r->events.n; e++)
		mem |= r->events.ev[e].mem != 0;
	snprintf(path, sizeof(path), "%s/bins", r->db);
	if (!mem || access(path, F_OK))
		return;
	if (dcpi_bins_read(path, &r->vbins))
		warn(r, "%s; precise samples' latencies are binned by powers of two", dcpi_errmsg());
	else
		r->has_vbins = 1;
}

static int new_collector(struct dcpi_run *r, const struct dcpi_run_opts *o)
{
	struct dcpi_collector_opts co = {
		.events = &r->events, .procroot = r->procroot, .host = r->host,
		.bypid = o->bypid, .nbypid = o->nbypid, .unknown_per_pid = o->unknown_per_pid,
		.filemode = r->o.filemode, .mmap_build_id = o->sampling.mmap_build_id,
		.label_keys = o->label_keys, .label_cap = o->label_cap,
		.jit_budget = o->jit_budget, .jit_budget_per_uid = o->jit_budget_per_uid,
		/* one command and its children (dcpi record): ours */
		.jit_own_children = o->sampling.pid != -1,
		.on_unknown = o->on_unknown, .on_merged = o->on_merged, .arg = o->arg,
		.db = r->db, .dirmode = r->o.dirmode ? r->o.dirmode : 0700,
		.on_warning = o->on_warning, .on_commit = o->on_commit,
	};

	load_vbins(r);
	co.vbins = r->has_vbins ? &r->vbins : NULL;
	if (o->sampling.stack_bytes && !(r->tops = dcpi_stack_tops_new()))
		return dcpi_error(ENOMEM, "out of memory");
	co.stack_tops = r->tops;
	return dcpi_collector_new(&co, &r->col);
}

/* Keep o, with copies of what it points to (the collector copies bypid). */
static int copy_opts(struct dcpi_run *r, const struct dcpi_run_opts *o)
{
	r->o = *o;
	r->o.db = r->o.host = r->o.platform = r->o.procroot = NULL;
	r->o.events = NULL;
	r->o.bypid = NULL;
	r->o.sampler = o->sampler ? o->sampler : &dcpi_sampler_perf;
	r->o.dirmode = o->dirmode ? o->dirmode : 0700;
	r->o.filemode = o->filemode ? o->filemode : 0600;
	r->events = *o->events;
	for (unsigned e = 0; e < r->events.n; e++)
		r->randomized |= r->events.ev[e].randomize;
	snprintf(r->host, sizeof(r->host), "%s", o->host);
	snprintf(r->platform, sizeof(r->platform), "%s", o->platform ? o->platform : o->host);
	r->db = strdup(o->db);
	r->procroot = strdup(o->procroot ? o->procroot : "/proc");
	return r->db && r->procroot ? 0 : dcpi_error(ENOMEM, "out of memory");
}

int dcpi_run_new(const struct dcpi_run_opts *o, struct dcpi_run **out)
{
	struct dcpi_run *r;
	int err;

	if (o->events->n == 0 || o->events->n > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "no events to sample");
	r = calloc(1, sizeof(*r));
	if (!r)
		return dcpi_error(ENOMEM, "out of memory");
	err = copy_opts(r, o);
	if (!err)
		err = new_collector(r, o);
	if (err) {
		dcpi_run_free(r);
		return err;
	}
	*out = r;
	return 0;
}

void dcpi_run_free(struct dcpi_run *r)
{
	if (!r)
		return;
	dcpi_sampler_close(r->sampler);
	dcpi_collector_free(r->col);
	dcpi_stack_tops_free(r->tops);
	dcpi_buf_release(&r->kallsyms);
	dcpi_buf_release(&r->pre_text);
	dcpi_buf_release(&r->pre_gz);
	dcpi_buf_release(&r->ksnap);
	free(r->db);
	free(r->procroot);
	free(r);
}

/* ---- sampling ----------------------------------------------------------- */

static int open_sampler(struct dcpi_run *r, const struct dcpi_sampler_opts *so)
{
	struct dcpi_sampler_thread_opts to = { .max_bytes = r->o.stage_max,
					       .stacks = so->stack_bytes != 0, .cgroup = so->cgroup,
					       .tops = r->tops };
	struct dcpi_sampler *s;
	int err = dcpi_sampler_open(r->o.sampler, &r->events, so, &r->sampler);

	if (err || !r->o.drain_thread)
		return err;
	err = dcpi_sampler_thread_new(r->sampler, &to, &s);
	if (err) {
		dcpi_sampler_close(r->sampler);
		r->sampler = NULL;
		return err;
	}
	r->sampler = s;
	return 0;
}

/* Kernel samples where allowed: for one process, fall back to user space
 * only when the kernel refuses (perf_event_paranoid 2 lets unprivileged
 * users profile their own processes in user mode). */
static int open_sampling(struct dcpi_run *r)
{
	struct dcpi_sampler_opts so = r->o.sampling;
	int err;

	/* cgroup labels: each sample's own cgroup, where it is the v2 one */
	so.cgroup = (r->o.label_keys & DCPI_LABEL_CGROUP) && dcpi_label_cgroup_samples(r->procroot);
	/* a precise memory event: every sample of the memory layout */
	for (unsigned e = 0; e < r->events.n; e++)
		so.mem |= r->events.ev[e].mem != 0;
	if (so.mem && so.stack_bytes)
		return dcpi_error(EINVAL, "precise memory samples (ldlat) and call stacks together "
				  "are not supported yet");
	err = open_sampler(r, &so);

	if ((err == -EACCES || err == -EPERM) && r->o.kernel_fallback && so.pid != -1 &&
	    !so.exclude_kernel) {
		so.exclude_kernel = 1;
		err = open_sampler(r, &so);
	}
	r->kernel = !err && !so.exclude_kernel;
	if (!err)
		err = dcpi_collector_sample_layout(r->col, so.stack_bytes != 0, so.cgroup);
	if (!err)
		err = dcpi_collector_sample_mem(r->col, so.mem);
	return err;
}

/* The kernel's images, from kallsyms read once: the text is kept for the
 * first epoch's snapshot. */
static void load_kernel(struct dcpi_run *r)
{
	char kallsyms[4200], modules[4200];
	int err;

	snprintf(kallsyms, sizeof(kallsyms), "%s/kallsyms", r->procroot);
	snprintf(modules, sizeof(modules), "%s/modules", r->procroot);
	dcpi_buf_release(&r->kallsyms);
	err = dcpi_snapshot_read(r->procroot, "kallsyms", &r->kallsyms);
	if (!err)
		err = dcpi_loadmap_load_kernel_text(dcpi_collector_loadmap(r->col),
						    (const char *)r->kallsyms.data, r->kallsyms.len,
						    kallsyms, modules);
	if (err) {
		warn(r, "kernel images: %s (kernel samples will be unknown)", dcpi_errmsg());
		dcpi_buf_release(&r->kallsyms);
	}
}

int dcpi_run_open(struct dcpi_run *r)
{
	int err;

	if (r->sampler)
		return dcpi_error(EBUSY, "the %s sampler is open already", r->o.sampler->name);
	err = open_sampling(r);
	if (err)
		return err;
	if (r->kernel)
		load_kernel(r);
	return 0;
}

int dcpi_run_kernel(const struct dcpi_run *r)
{
	return r->kernel;
}

int dcpi_run_scan(struct dcpi_run *r)
{
	struct dcpi_loadmap *lm = dcpi_collector_loadmap(r->col);

	if (r->o.sampling.pid == -1)
		return dcpi_loadmap_scan(lm);
	return dcpi_loadmap_scan_pid(lm, r->o.sampling.pid);
}

static int need_sampler(const struct dcpi_run *r)
{
	return r->sampler ? 0 : dcpi_error(EINVAL, "no sampler open");
}

int dcpi_run_start(struct dcpi_run *r)
{
	int err = need_sampler(r);

	return err ? err : dcpi_sampler_enable(r->sampler);
}

/* The kernel keeps a counter's period until told another, so an R period
 * is redrawn here, as often as the daemon reads the rings but at most
 * every RERANDOMIZE_NS (one ioctl per CPU and event each time). */
#define RERANDOMIZE_NS 10000000ull

void dcpi_run_rerandomize(struct dcpi_run *r)
{
	struct timespec ts;
	uint64_t now;

	if (!r->sampler || !r->randomized)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (r->rerandomized_ns && now - r->rerandomized_ns < RERANDOMIZE_NS)
		return;
	r->rerandomized_ns = now;
	dcpi_sampler_rerandomize(r->sampler);
}

int dcpi_run_randomized(const struct dcpi_run *r)
{
	return r->randomized;
}

int dcpi_run_drain(struct dcpi_run *r, int all)
{
	int err = need_sampler(r);

	if (err)
		return err;
	err = dcpi_collector_drain(r->col, r->sampler, all);
	dcpi_run_rerandomize(r);
	return err;
}

int dcpi_run_stop(struct dcpi_run *r)
{
	int err = need_sampler(r), derr;

	if (err)
		return err;
	err = dcpi_sampler_disable(r->sampler);
	derr = dcpi_collector_drain(r->col, r->sampler, 1);
	return err ? err : derr;
}

/* ---- epochs ------------------------------------------------------------- */

/* Whether a continued epoch's statistics count the same events. */
static int same_events(const struct dcpi_epoch_stats *a, const struct dcpi_epoch_stats *b)
{
	if (a->nevents != b->nevents)
		return 0;
	for (unsigned e = 0; e < a->nevents; e++)
		if (strcmp(a->ev[e].name, b->ev[e].name) || a->ev[e].period != b->ev[e].period)
			return 0;
	return 1;
}

/* This process's CPU time, every thread, user and system (ns). */
static uint64_t self_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* The counts of the epoch's statistics: those of its epoch.stats when it
 * counts the same events (a continued epoch), else zeros from now. */
static void begin_stats(struct dcpi_run *r)
{
	struct dcpi_epoch_stats *st = dcpi_collector_stats(r->col), old;
	char spath[4200];

	dcpi_db_stats_path(spath, sizeof(spath), r->platdir, r->host);
	memset(&old, 0, sizeof(old));
	if (dcpi_stats_read(spath, &old) || !same_events(&old, st)) {
		memset(&old, 0, sizeof(old));
		old.start = (int64_t)time(NULL);
	}
	st->samples = old.samples;
	st->lost = old.lost;
	st->throttled = old.throttled;
	st->unknown = old.unknown;
	st->kernel = old.kernel;
	st->label_other = old.label_other;
	st->stack_copies_cut = old.stack_copies_cut;
	st->start = old.start;
	st->clock_khz = r->o.clock_khz ? r->o.clock_khz : old.clock_khz;
	st->sample_cost_ns = r->o.sample_cost_ns ? r->o.sample_cost_ns : old.sample_cost_ns;
	r->self_carried = old.collector_cpu_ns;
	r->self_base = self_cpu_ns();
	st->collector_cpu_ns = r->self_carried;
	for (unsigned e = 0; e < st->nevents; e++)
		st->ev[e].samples = old.ev[e].samples;
	snprintf(st->epoch, sizeof(st->epoch), "%s", r->epoch);
	st->ncpus = r->sampler ? dcpi_sampler_ncpus(r->sampler) : 0;
}

/* Event times count from the epoch's start; the first epoch's from the
 * sampler's opening (it may be entered after sampling began). */
static void base_times(struct dcpi_run *r)
{
	memset(r->base_enabled, 0, sizeof(r->base_enabled));
	memset(r->base_running, 0, sizeof(r->base_running));
	if (!r->sampler || r->nepochs++ == 0)
		return;
	for (unsigned e = 0; e < r->events.n; e++)
		dcpi_sampler_times(r->sampler, e, &r->base_enabled[e], &r->base_running[e]);
}

static void totals_of(const struct dcpi_epoch_stats *st, struct dcpi_run_totals *t)
{
	*t = (struct dcpi_run_totals){ st->samples, st->lost, st->throttled, st->unknown };
}

void dcpi_run_totals(const struct dcpi_run *r, struct dcpi_run_totals *t)
{
	struct dcpi_run_totals now;

	*t = r->done;
	if (!r->epoch[0])
		return;
	totals_of(dcpi_collector_stats(r->col), &now);
	t->samples += now.samples - r->base.samples;
	t->lost += now.lost - r->base.lost;
	t->throttled += now.throttled - r->base.throttled;
	t->unknown += now.unknown - r->base.unknown;
}

int dcpi_run_close_epoch(struct dcpi_run *r)
{
	int err = 0;

	/* samples not merged (a write that failed) keep the whole snapshot */
	if (r->ksnap.len && r->platdir[0] && !dcpi_collector_pending(r->col))
		err = dcpi_snapshot_prune(r->platdir, &r->ksnap, r->o.filemode);
	dcpi_buf_release(&r->ksnap);
	return err;
}

int dcpi_run_enter_epoch(struct dcpi_run *r, const char *name)
{
	char platdir[sizeof(r->platdir)];
	int err = dcpi_db_path(platdir, sizeof(platdir), r->db, name, r->platform, NULL);

	if (!err)
		err = dcpi_db_init(platdir, r->o.dirmode);
	if (err)
		return err;
	if (dcpi_run_close_epoch(r))
		warn(r, "kernel symbol snapshot of epoch %s not cut down: %s", r->epoch,
		     dcpi_errmsg());
	dcpi_run_totals(r, &r->done); /* the epoch left adds what it counted */
	snprintf(r->epoch, sizeof(r->epoch), "%s", name);
	memcpy(r->platdir, platdir, sizeof(platdir));
	begin_stats(r);
	totals_of(dcpi_collector_stats(r->col), &r->base);
	base_times(r);
	/* without kernel samples its addresses would be zeros anyway */
	if (r->kernel && r->pre_gz.len) { /* made ahead: written only */
		dcpi_buf_release(&r->ksnap);
		r->ksnap = r->pre_text;
		r->pre_text = (struct dcpi_buf)DCPI_BUF_INIT;
		if (dcpi_snapshot_kernel_write(r->platdir, &r->pre_gz, r->procroot,
					       r->o.filemode))
			warn(r, "kernel symbol snapshot: %s", dcpi_errmsg());
	} else if (r->kernel && !r->kallsyms.len &&
		   dcpi_snapshot_read(r->procroot, "kallsyms", &r->kallsyms))
		warn(r, "kernel symbol snapshot: %s", dcpi_errmsg());
	else if (r->kernel && dcpi_snapshot_kernel_keep(r->platdir, &r->kallsyms, r->procroot,
							r->o.filemode, &r->ksnap))
		warn(r, "kernel symbol snapshot: %s", dcpi_errmsg());
	dcpi_buf_release(&r->pre_gz);
	dcpi_buf_release(&r->kallsyms); /* later epochs read the kernel's again */
	return 0;
}

int dcpi_run_prepare_epoch(struct dcpi_run *r)
{
	int err = 0;

	if (!r->kernel)
		return 0;
	if (!r->kallsyms.len)
		err = dcpi_snapshot_read(r->procroot, "kallsyms", &r->kallsyms);
	if (!err)
		err = dcpi_snapshot_kernel_make(&r->kallsyms, &r->pre_text, &r->pre_gz);
	return err;
}

int dcpi_run_new_epoch_at(struct dcpi_run *r, time_t t)
{
	char name[DCPI_EPOCH_NAME_MAX];
	int err = dcpi_db_epoch_create(r->db, t, r->o.dirmode, name);

	return err ? err : dcpi_run_enter_epoch(r, name);
}

int dcpi_run_new_epoch(struct dcpi_run *r)
{
	return dcpi_run_new_epoch_at(r, time(NULL));
}

/* ---- times and merges --------------------------------------------------- */

/* What the epoch's "fraction monitored" divides by.  System-wide: the
 * counters' enabled time.  For one process tree the per-CPU sums say
 * little: a counter on a CPU the process never visited may or may not have
 * been "enabled" (it varies with the kernel), so the sum lies between one
 * and ncpus times the tree's CPU time.  Once the command has ended, that
 * CPU time is known (wait4); before, ncpus is the guess.  The result stays
 * between running (no multiplexing: 100%) and the sum. */
static uint64_t enabled_time(const struct dcpi_run *r, uint64_t en, uint64_t run)
{
	unsigned ncpus = dcpi_sampler_ncpus(r->sampler);
	uint64_t t;

	if (r->o.sampling.pid == -1)
		return en;
	t = r->cpu_ns ? r->cpu_ns : en / (ncpus ? ncpus : 1);
	return t < run ? run : t > en ? en : t;
}

void dcpi_run_update_times(struct dcpi_run *r)
{
	struct dcpi_epoch_stats *st = dcpi_collector_stats(r->col);

	for (unsigned e = 0; r->sampler && e < r->events.n; e++) {
		uint64_t en, run;

		if (dcpi_sampler_times(r->sampler, e, &en, &run))
			continue;
		en -= r->base_enabled[e];
		run -= r->base_running[e];
		st->ev[e].time_enabled = enabled_time(r, en, run);
		st->ev[e].time_running = run;
	}
}

void dcpi_run_set_cpu_time(struct dcpi_run *r, uint64_t ns)
{
	r->cpu_ns = ns;
}

int dcpi_run_merge(struct dcpi_run *r)
{
	int err;

	if (!r->platdir[0])
		return dcpi_error(EINVAL, "no epoch to merge into");
	dcpi_run_update_times(r);
	{ /* what collecting this epoch has cost us so far */
		uint64_t now = self_cpu_ns();

		dcpi_collector_stats(r->col)->collector_cpu_ns =
			r->self_carried + (now > r->self_base ? now - r->self_base : 0);
	}
	err = dcpi_collector_merge(r->col, r->platdir);
	dcpi_loadmap_reap(dcpi_collector_loadmap(r->col));
	if (!err)
		err = dcpi_collector_forget(r->col);
	return err;
}

/* ---- accessors ---------------------------------------------------------- */

struct dcpi_sampler *dcpi_run_sampler(struct dcpi_run *r)
{
	return r->sampler;
}

struct dcpi_collector *dcpi_run_collector(struct dcpi_run *r)
{
	return r->col;
}

struct dcpi_epoch_stats *dcpi_run_stats(struct dcpi_run *r)
{
	return dcpi_collector_stats(r->col);
}

const char *dcpi_run_epoch(const struct dcpi_run *r)
{
	return r->epoch;
}

const char *dcpi_run_platdir(const struct dcpi_run *r)
{
	return r->platdir;
}
