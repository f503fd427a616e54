/* A collection run: one sampler, one collector, and the epoch of the
 * database they fill.  dcpid and dcpi record are loops around one run.
 *
 *   dcpi_run_new      the collector; nothing opened yet
 *   dcpi_run_open     the sampler (disabled; with drain_thread, behind a
 *                     thread that reads its rings) and the kernel's images
 *   dcpi_run_scan     the processes that run already (/proc)
 *   dcpi_run_new_epoch / dcpi_run_enter_epoch
 *                     the epoch directory, its statistics, the kallsyms
 *                     snapshot; before or after dcpi_run_start, and again
 *                     for each later epoch (dcpi_run_prepare_epoch makes
 *                     its snapshot ahead)
 *   dcpi_run_start    sampling on
 *   dcpi_run_drain, dcpi_run_update_times, dcpi_run_merge   repeatedly
 *   dcpi_run_stop     sampling off, everything read
 *   dcpi_run_free
 *
 * Ownership: the run owns its sampler and collector (the accessors lend
 * them; never close or free them) and copies every option it keeps (db,
 * host, procroot, events, bypid): the caller's need not outlive
 * dcpi_run_new.  Callbacks get the opts' arg.
 *
 * Invariants: the sampler is NULL until dcpi_run_open succeeds, and the
 * epoch name and platform directory are empty strings until an epoch was
 * entered; a failed dcpi_run_enter_epoch leaves the previous epoch in
 * place.  The run never prints or exits: it returns negative errno with a
 * dcpi_error() message, and what goes wrong without stopping it (no
 * kernel symbols, no snapshot) goes to on_warning.
 */
#ifndef DCPI_RUN_H
#define DCPI_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dcpi/collector.h"
#include "dcpi/event.h"
#include "dcpi/loadmap.h"
#include "dcpi/sampler.h"
#include "dcpi/stats.h"

struct dcpi_run_opts {
	const char *db;                /* the database root (dcpi_db_init'ed) */
	const char *host;              /* this host's name */
	const char *platform;          /* the platform directory's name; NULL: host
					  (see "Hosts and platforms", dcpi/db.h) */
	const struct dcpi_eventlist *events;
	const struct dcpi_sampler_ops *sampler; /* NULL: dcpi_sampler_perf */
	struct dcpi_sampler_opts sampling;      /* pid -1: system-wide */
	/* one process: when the kernel refuses kernel-mode samples (EACCES,
	   EPERM: perf_event_paranoid), sample user space only */
	int kernel_fallback;
	const char *procroot;          /* NULL: "/proc" */
	const char *const *bypid;      /* dcpi_collector_opts */
	size_t nbypid;
	int unknown_per_pid;
	unsigned label_keys;           /* dcpi_collector_opts */
	size_t label_cap;
	uint64_t jit_budget_per_uid;   /* dcpi_collector_opts */
	uint64_t jit_budget;
	unsigned dirmode, filemode;    /* 0: 0700, 0600 */
	uint64_t clock_khz;            /* the CPU clock (dcpi/cpuclock.h), into each
					  epoch's statistics; 0: not measured (a
					  continued epoch keeps the one it has) */
	uint64_t sample_cost_ns;       /* one sample's interrupt cost, measured
					  (dcpi/overhead.h), into each epoch's
					  statistics; 0: not measured */
	/* read the rings in a thread of their own (dcpi_sampler_thread_new),
	   so that attribution, perf maps, pseudo-images and merges never keep
	   them from being read: what dcpid and dcpi record do */
	int drain_thread;
	size_t stage_max;              /* its memory for records; 0: 256 MiB */
	/* a complete one-line message: something failed, the run goes on */
	void (*on_warning)(void *arg, const char *msg);
	void (*on_commit)(void *arg, size_t nfiles); /* dcpi_collector_opts */
	void (*on_unknown)(void *arg, int32_t pid, uint64_t ip, int kernel);
	void (*on_merged)(void *arg, int index, const struct dcpi_image *img);
	void *arg;
};

struct dcpi_run;

/* Counts of the whole run, every epoch it entered: what the epochs'
 * statistics counted while this run had them (a continued epoch's earlier
 * counts are not the run's). */
struct dcpi_run_totals {
	uint64_t samples, lost, throttled, unknown;
};

int dcpi_run_new(const struct dcpi_run_opts *o, struct dcpi_run **out);
/* Close the sampler (without a last drain or merge), free everything. */
void dcpi_run_free(struct dcpi_run *r);

/* Open the sampler, disabled, then read the kernel's images when kernel
 * samples are taken.  Fails as dcpi_sampler_open does (after the user-space
 * retry of kernel_fallback, if any). */
int dcpi_run_open(struct dcpi_run *r);
/* Whether kernel-mode samples are taken (after dcpi_run_open). */
int dcpi_run_kernel(const struct dcpi_run *r);

/* Read the mappings of what runs already: every process, or the one
 * sampled.  The result of dcpi_loadmap_scan (< 0: error). */
int dcpi_run_scan(struct dcpi_run *r);

int dcpi_run_start(struct dcpi_run *r);
/* Whether some event has a randomised (R) period. */
int dcpi_run_randomized(const struct dcpi_run *r);
/* Draw fresh R periods (dcpi_sampler_rerandomize), unless that was done
 * less than 10 ms ago; dcpi_run_drain calls it after each drain.  A loop
 * that may not drain for long should call it about once a second. */
void dcpi_run_rerandomize(struct dcpi_run *r);
/* Disable sampling and drain everything: what the collector holds is then
 * complete.  The first error; the drain happens anyway. */
int dcpi_run_stop(struct dcpi_run *r);

/* Create an epoch named by the time now, and enter it. */
int dcpi_run_new_epoch(struct dcpi_run *r);
/* The same, named by time t (dcpid -rotate: the boundary it starts at). */
int dcpi_run_new_epoch_at(struct dcpi_run *r, time_t t);
/* Enter epoch name (created if missing): its platform directory, and
 * statistics that continue its epoch.stats when that counts the same
 * events, else start afresh; the kallsyms snapshot when kernel samples are
 * taken.  Event times count from here, except in a run's first epoch,
 * which counts from the sampler's opening. */
int dcpi_run_enter_epoch(struct dcpi_run *r, const char *name);
/* Make ahead what entering the next epoch would: its kallsyms snapshot,
 * read and compressed in memory (tens of milliseconds of CPU), so that
 * the next dcpi_run_new_epoch or dcpi_run_enter_epoch only writes it.
 * dcpi record calls it before its command starts, so that this work does
 * not compete with the command.  0 when kernel samples are not taken. */
int dcpi_run_prepare_epoch(struct dcpi_run *r);
/* The epoch closes: its kallsyms.gz cut down to the kernel procedures its
 * files sampled (dcpi_snapshot_prune; entering another epoch does it for
 * the one left).  Kept whole while samples wait unmerged.  Call it after
 * the last merge. */
int dcpi_run_close_epoch(struct dcpi_run *r);

/* dcpi_collector_drain of the run's sampler (after dcpi_run_open). */
int dcpi_run_drain(struct dcpi_run *r, int all);
/* The statistics' enabled and running time of each event.  System-wide,
 * the counters' sums; for one process tree see dcpi_run_set_cpu_time. */
void dcpi_run_update_times(struct dcpi_run *r);
/* The CPU time of the sampled process tree, once known (wait4): what its
 * enabled time is, clamped between running and the counters' sum. */
void dcpi_run_set_cpu_time(struct dcpi_run *r, uint64_t ns);
/* Update the times, merge everything collected into the epoch's platform
 * directory, forget exited processes.  Drain first for a complete merge.
 * A failed merge keeps the samples for the next. */
int dcpi_run_merge(struct dcpi_run *r);

void dcpi_run_totals(const struct dcpi_run *r, struct dcpi_run_totals *t);

/* The sampler the run reads: with drain_thread, the thread's (whose
 * pollfds and losses are what a loop wants), else the one opened. */
struct dcpi_sampler *dcpi_run_sampler(struct dcpi_run *r);
struct dcpi_collector *dcpi_run_collector(struct dcpi_run *r);
struct dcpi_epoch_stats *dcpi_run_stats(struct dcpi_run *r);
const char *dcpi_run_epoch(const struct dcpi_run *r);
const char *dcpi_run_platdir(const struct dcpi_run *r);

#endif
