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
	unsigned ring_pages;    /* data pages per CPU ring, a power of 2 */
	int sideband;           /* ask for mmap/comm/fork/exit records */
	int mmap_build_id;      /* ask for build-ids in MMAP2 records (see
				   dcpi_record_decode_flags for the cost) */
};

/* Each raw record of a drain; a non-zero return stops the drain. */
typedef int (*dcpi_record_cb)(void *arg, const void *raw, size_t len);

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

/* The online CPUs from /sys/devices/system/cpu/online. */
int dcpi_sampler_online_cpus(int *cpus, unsigned max, unsigned *n);

#endif
