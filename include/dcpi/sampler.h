/* Samplers: where the collector's records come from, behind one interface.
 *
 * A sampler is a table of operations (struct dcpi_sampler_ops) and a handle
 * whose first member is struct dcpi_sampler.  The collector, the collection
 * run and the commands see only the handle and the dcpi_sampler_* calls
 * below, so a new source of records (an in-kernel aggregating BPF path,
 * dynamic code, a hardware-specific sampler, a replay in tests) plugs in
 * beside the perf ring-buffer sampler without touching them.
 *
 * What every sampler delivers: raw records in the perf_events ring format
 * (struct perf_event_header first), laid out as the perf sampler asks the
 * kernel for them (dcpi/record.h decodes them): samples of IDENTIFIER | IP |
 * TID | TIME, side-band MMAP2/COMM/FORK/EXIT/LOST/THROTTLE records with the
 * sample_id_all trailer, timestamps from CLOCK_MONOTONIC.  event_of maps a
 * sample's identifier to its index in the event list the sampler was
 * opened with.
 *
 * Ownership: dcpi_sampler_open() hands the caller the handle;
 * dcpi_sampler_close() releases it and everything it holds (fds, rings).
 * The event list is copied.  A record given to a drain callback is valid
 * only during the call.
 */
#ifndef DCPI_SAMPLER_H
#define DCPI_SAMPLER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "dcpi/event.h"
#include "dcpi/record.h"

/* How to sample; a sampler ignores what does not apply to it. */
struct dcpi_sampler_opts {
	int pid;                /* -1: every process (system-wide); else one
				   process and, with inherit, its children */
	int inherit;
	int exclude_kernel;     /* sample user mode only */
	unsigned ring_pages;    /* data pages per CPU ring, a power of 2; 0: 128,
				   512 with stack_bytes */
	int sideband;           /* ask for mmap/comm/fork/exit records */
	int mmap_build_id;      /* ask for build-ids in MMAP2 records (see
				   dcpi_record_decode_flags for the cost) */
	int cgroup;             /* ask for each sample's cgroup id
				   (PERF_SAMPLE_CGROUP, Linux 5.7+) and, with
				   sideband, CGROUP records; dropped where the
				   kernel refuses it */
	unsigned stack_bytes;   /* nonzero: samples carry the kernel's call chain
				   and the user registers and stack, this many
				   bytes of it (a multiple of 8, at most
				   DCPI_STACK_MAX_COPY): dcpi/record.h's
				   dcpi_record_decode_stack_sample layout */
	int mem;                /* samples carry the data address, latency and
				   data source (a precise memory event, ldlat):
				   dcpi_record_decode_mem_sample's layout, for
				   every event; not with stack_bytes */
};

/* Each raw record of a drain; a non-zero return stops the drain. */
typedef int (*dcpi_record_cb)(void *arg, const void *raw, size_t len);

/* Samples the kernel reported lost (PERF_RECORD_LOST, LOST_SAMPLES) on one
 * CPU's ring (cpu -1: not known). */
struct dcpi_sampler_loss {
	int cpu;
	uint64_t lost;
};

struct dcpi_sampler;

/* The operations of one kind of sampler.  open, close, drain and event_of
 * are required; a NULL optional one behaves as documented beside it. */
struct dcpi_sampler_ops {
	const char *name;       /* "perf": for messages and a future -sampler */
	/* Open (disabled); *out's ops is set by dcpi_sampler_open. */
	int (*open)(const struct dcpi_eventlist *l, const struct dcpi_sampler_opts *o,
		    struct dcpi_sampler **out);
	void (*close)(struct dcpi_sampler *s);
	int (*enable)(struct dcpi_sampler *s);          /* NULL: always on */
	int (*disable)(struct dcpi_sampler *s);         /* NULL: nothing to do */
	size_t (*pollfds)(const struct dcpi_sampler *s, struct pollfd *fds,
			  size_t max);                   /* NULL: none, poll by time */
	unsigned (*ncpus)(const struct dcpi_sampler *s); /* NULL: 0, unknown */
	int (*drain)(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg);
	int (*drain_split)(struct dcpi_sampler *s, dcpi_record_cb side, int (*mid)(void *arg),
			   dcpi_record_cb samples, void *arg); /* NULL: -EOPNOTSUPP */
	int (*event_of)(const struct dcpi_sampler *s, uint64_t id);
	int (*times)(const struct dcpi_sampler *s, unsigned ev, uint64_t *enabled,
		     uint64_t *running);                 /* NULL: -EOPNOTSUPP */
	void (*rerandomize)(struct dcpi_sampler *s);    /* NULL: nothing to do */
	/* One ring only (ring < ncpus), with its CPU in *cpu; what drain does
	   for each ring in turn.  NULL: the rings cannot be read one by one. */
	int (*drain_ring)(struct dcpi_sampler *s, unsigned ring, int *cpu, dcpi_record_cb cb,
			  void *arg);
	/* The losses seen since the last call, per CPU: up to max entries,
	   returns how many.  NULL: 0, not tallied (the records still say). */
	size_t (*losses)(struct dcpi_sampler *s, struct dcpi_sampler_loss *out, size_t max);
};

/* The handle every sampler begins with.  ops is never NULL. */
struct dcpi_sampler {
	const struct dcpi_sampler_ops *ops;
};

/* perf_events: one counter per (CPU, event), one mmap'd ring per CPU that
 * all that CPU's events write to.  Every event samples IDENTIFIER | IP |
 * TID | TIME and carries the same fields in its side-band records
 * (sample_id_all); the first event of each CPU also asks for mmap2 (with
 * build-ids), comm, fork and exit records.  Failure to open an event is
 * -errno with a message naming the event, the CPU and what the kernel said
 * (and what to do for EACCES: perf_event_paranoid). */
extern const struct dcpi_sampler_ops dcpi_sampler_perf;

/* Open a sampler of kind be (disabled). */
int dcpi_sampler_open(const struct dcpi_sampler_ops *be, const struct dcpi_eventlist *l,
		      const struct dcpi_sampler_opts *o, struct dcpi_sampler **out);
void dcpi_sampler_close(struct dcpi_sampler *s);
int dcpi_sampler_enable(struct dcpi_sampler *s);
int dcpi_sampler_disable(struct dcpi_sampler *s);

/* The fds to poll() for records: fills up to max entries, returns how many. */
size_t dcpi_sampler_pollfds(const struct dcpi_sampler *s, struct pollfd *fds, size_t max);
unsigned dcpi_sampler_ncpus(const struct dcpi_sampler *s);

/* Read every record available now (the perf sampler: every ring up to its
 * current head; a record that wrapped around the ring comes as a
 * contiguous copy).  A non-zero return from cb stops the drain and is
 * returned. */
int dcpi_sampler_drain(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg);

/* The same records in two passes: every side-band record (all but
 * samples) to side, then mid(arg), then every sample to samples; nothing
 * written after the drain began is handed out.  A failing side or mid
 * consumes nothing (all comes again), a failing samples stops there.
 * -EOPNOTSUPP when the sampler cannot (then use dcpi_sampler_drain). */
int dcpi_sampler_drain_split(struct dcpi_sampler *s, dcpi_record_cb side, int (*mid)(void *arg),
			     dcpi_record_cb samples, void *arg);

/* The event index (into the eventlist) of a record's id, or -1. */
int dcpi_sampler_event_of(const struct dcpi_sampler *s, uint64_t id);

/* Time enabled / running of event ev, summed over CPUs (ns). */
int dcpi_sampler_times(const struct dcpi_sampler *s, unsigned ev, uint64_t *enabled,
		       uint64_t *running);

/* Give events with a randomised period (R) a fresh period, uniformly
 * within +-1/8 of the asked one.  Cheap: one ioctl per (CPU, event). */
void dcpi_sampler_rerandomize(struct dcpi_sampler *s);

/* The losses the kernel reported since the last call, per CPU (see the
 * losses operation): at most max entries, only CPUs with losses. */
size_t dcpi_sampler_losses(struct dcpi_sampler *s, struct dcpi_sampler_loss *out, size_t max);

/* A sampler whose rings a thread of its own keeps reading.
 *
 * Why: the rings hold a fraction of a second at high rates, and the
 * thread that reads them also attributes samples (reading perf maps and
 * jitdumps a user can make as large as the caps allow), writes JIT
 * pseudo-images and merges profiles into the database, which can take
 * seconds.  Rings not read meanwhile overflow and the kernel drops
 * samples.  This thread does nothing but copy the inner sampler's records
 * out of the rings into memory (the way perf record's main thread only
 * copies them to a file), so no work of the caller's can hold the rings
 * up: when woken by a ring half full (the watermark), and every
 * interval_ms.  The caller's drains then hand out what was copied, after
 * one more copy of what is in the rings now (so a drain still returns
 * everything written before it began, and its horizon stays true).
 *
 * Memory: at most max_bytes of records wait in memory; past that the
 * thread stops copying and the rings fill, and what the kernel then drops
 * it reports as lost, as it would without the thread (losses are counted,
 * per CPU: the losses operation).
 *
 * Ownership and threads: the wrapper owns inner (closing it closes inner).
 * The rings (and inner's scratch state for reading them) are read only
 * under the wrapper's ring lock, by the thread or by a drain; the copied
 * records, the loss tallies and the thread's last error are shared under
 * a second lock; everything else of inner (enable, disable, times,
 * rerandomize, event_of) is used by the caller's thread only, and only
 * through file descriptors and state the copying thread never touches.
 * pollfds gives one fd, readable when the thread copied records after a
 * ring's wake-up (drain then).  One caller thread. */
struct dcpi_sampler_thread_opts {
	size_t max_bytes;       /* 0: 256 MiB */
	unsigned interval_ms;   /* 0: 100 */
	int stacks, cgroup;     /* the samples carry stacks (and cgroup), as the
				   inner sampler was opened: each is copied with
				   its stack copy cut to the part the stack used
				   (dcpi_record_compact_stack) */
	/* with stacks: where each thread's walks stop (dcpi/stacktops.h), to
	   cut its copies there; NULL: not cut.  Read only here; it must
	   outlive the sampler. */
	const struct dcpi_stack_tops *tops;
};

int dcpi_sampler_thread_new(struct dcpi_sampler *inner, const struct dcpi_sampler_thread_opts *o,
			    struct dcpi_sampler **out);
/* Bytes of records copied and not yet drained, and the most there ever
 * were (for tests and status); 0 and 0 for a sampler of another kind. */
void dcpi_sampler_thread_staged(struct dcpi_sampler *s, size_t *now, size_t *peak);

/* The online CPUs from /sys/devices/system/cpu/online. */
int dcpi_sampler_online_cpus(int *cpus, unsigned max, unsigned *n);

#endif
