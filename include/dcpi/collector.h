/* The collector: the daemon's engine, without the daemon.  It takes raw
 * perf records (or decoded ones, in tests), puts them in time order,
 * attributes samples to images through the loadmap, aggregates them, and
 * merges the aggregate into a platform directory of the database.
 *
 * Records of different CPUs reach us out of order (each CPU has its own
 * ring), and a process's exit read from one ring may precede its last
 * samples read from another.  So records are taken in timestamp order up
 * to a horizon the caller gives (the time it started draining, minus a
 * little): everything before it is already in the rings, so nothing read
 * later can precede it.  Only the samples whose meaning can change need
 * the order: those of a process with side-band records queued.  The rest
 * are counted by distinct (pid, address, event, mode) key as they come,
 * each key attributed once per pass (dcpi_collector_drain with a sampler
 * that drains side-band first does it without copying them).
 */
#ifndef DCPI_COLLECTOR_H
#define DCPI_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/db.h"
#include "dcpi/bins.h"
#include "dcpi/event.h"
#include "dcpi/loadmap.h"
#include "dcpi/record.h"
#include "dcpi/sampler.h"
#include "dcpi/stats.h"

struct dcpi_collector_opts {
	const struct dcpi_eventlist *events;
	const char *procroot;          /* "/proc" */
	const char *host;              /* platform name */
	const char *const *bypid;      /* images profiled per process (copied) */
	size_t nbypid;
	int unknown_per_pid;           /* -unknown */
	unsigned filemode;             /* of profile files: 0600 */
	int mmap_build_id;             /* the sampler asked for MMAP2 build-ids */
	unsigned label_keys;           /* dcpi/label.h keys; 0: profiles unlabelled */
	size_t label_cap;              /* distinct labels kept; 0: DCPI_LABEL_MAX */
	/* (pid, ip) of every sample; for a debugging log (-logmaps) */
	void (*on_unknown)(void *arg, int32_t pid, uint64_t ip, int kernel);
	/* each image whose profile a merge wrote (e.g. to cache its file) */
	void (*on_merged)(void *arg, int index, const struct dcpi_image *img);
	/* JIT code (dcpi/jitmap.h): with db set, samples in memory no image
	   describes are looked up in the process's perf map, and each merge
	   stores the pseudo-images they name in db (dcpi_db_put_image, with
	   dirmode) */
	const char *db;
	unsigned dirmode;
	uint64_t jit_budget_per_uid;   /* dcpi_jitmap_opts; 0: their defaults */
	uint64_t jit_budget;
	int jit_own_children;          /* dcpi_jitmap_opts.own_children */
	/* a complete one-line message: something was refused or skipped */
	void (*on_warning)(void *arg, const char *msg);
	/* a merge is about to commit nfiles profiles (dcpi_file_batch_commit:
	   its slow part); for logs, and for tests that slow a merge down */
	void (*on_commit)(void *arg, size_t nfiles);
	void *arg;
	/* the latency bins of precise memory samples' value profiles (read at
	   each epoch's start: must outlive the collector); NULL:
	   dcpi_bins_default's */
	const struct dcpi_bins *vbins;
	/* with stacks: each thread's top is set after a whole walk and dropped
	   after one that ran out of copy (dcpi/stacktops.h), for the sampler
	   to cut copies by; NULL: not kept.  Must outlive the collector. */
	struct dcpi_stack_tops *stack_tops;
};

struct dcpi_stack_tops;
struct dcpi_collector;

int dcpi_collector_new(const struct dcpi_collector_opts *o, struct dcpi_collector **out);
void dcpi_collector_free(struct dcpi_collector *c);
struct dcpi_loadmap *dcpi_collector_loadmap(struct dcpi_collector *c);

/* The samples' layout, as the sampler was opened: with stacks (samples of
 * dcpi_record_decode_stack_sample's layout, whose call stacks are walked
 * and kept in the epoch's epoch.stacks, dcpi/stacks.h), with the cgroup
 * field.  Without stacks (the default) the cgroup field is told by the
 * record's length. */
int dcpi_collector_sample_layout(struct dcpi_collector *c, int stacks, int cgroup);

/* Samples of the memory layout (dcpi_record_decode_mem_sample: the
 * sampler has a precise memory event, dcpi_event_spec.mem): each such
 * event's samples also feed the epoch's value profile, merged into
 * epoch.vprof with the profiles.  Not with stacks (-EINVAL). */
int dcpi_collector_sample_mem(struct dcpi_collector *c, int mem);

/* Queue a raw record (copied). */
int dcpi_collector_queue(struct dcpi_collector *c, const void *raw, size_t len);
/* Process queued records with time <= horizon, oldest first.  event_of
 * maps a record id to an event index (the sampler's). */
int dcpi_collector_process(struct dcpi_collector *c, uint64_t horizon,
			   int (*event_of)(const void *arg, uint64_t id), const void *arg);
/* Records this recent may still be being written to another CPU's ring. */
#define DCPI_HORIZON_SLACK_NS 2000000ull

/* Drain sampler s (of any kind: dcpi/sampler.h) into the queue, then
 * process what is certainly in order: records older than the moment
 * draining began, less DCPI_HORIZON_SLACK_NS; with all, everything (flush,
 * exit).  Returns the first error; the rest is still processed. */
int dcpi_collector_drain(struct dcpi_collector *c, struct dcpi_sampler *s, int all);

/* Process one decoded record now (tests feed synthetic streams here); ev
 * is the event index of a sample. */
int dcpi_collector_feed(struct dcpi_collector *c, const struct dcpi_record *r, int ev);

/* The running statistics of the current epoch (writable: the daemon sets
 * epoch, start, times; the collector counts samples and losses). */
struct dcpi_epoch_stats *dcpi_collector_stats(struct dcpi_collector *c);
/* Samples aggregated in memory, not yet merged. */
uint64_t dcpi_collector_pending(const struct dcpi_collector *c);
/* What the JIT code maps hold (dcpi/jitmap.h): 0 and *st, or -ENOENT
 * (zeros) when there are none (no database given). */
struct dcpi_jitmap_stats;
struct dcpi_jitmap_user;
int dcpi_collector_jit_stats(const struct dcpi_collector *c, struct dcpi_jitmap_stats *st);
/* Each user's share of it (dcpi_jitmap_users); 0 without JIT tracking. */
size_t dcpi_collector_jit_users(const struct dcpi_collector *c, struct dcpi_jitmap_user *out,
				size_t max);

/* Merge everything aggregated into platdir (profiles, epoch.stats), then
 * clear the aggregate.  A corrupt existing profile is kept aside as
 * NAME.prof.corrupt and a fresh one written: nothing is silently lost. */
int dcpi_collector_merge(struct dcpi_collector *c, const char *platdir);
/* After a merge that emptied the aggregate (and a reap): forget the images
 * no live process maps (dcpi_loadmap_forget), so memory follows what runs
 * now.  Image indices given out before (on_merged's) mean nothing after
 * it; dcpi_loadmap_stats' forgotten count says when that happened. */
int dcpi_collector_forget(struct dcpi_collector *c);

#endif
