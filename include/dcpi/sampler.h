/* perf_events sampling: one counter per (CPU, event), one mmap'd ring per
 * CPU that all that CPU's events write to, and decoding of the records.
 *
 * Every event samples IDENTIFIER | IP | TID | TIME and carries the same
 * fields in its side-band records (sample_id_all), timestamps from
 * CLOCK_MONOTONIC so records of different CPUs can be put in order.  The
 * first event of each CPU also asks for mmap2 (with build-ids), comm,
 * fork and exit records.
 */
#ifndef DCPI_SAMPLER_H
#define DCPI_SAMPLER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "dcpi/event.h"
#include "dcpi/record.h"

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

struct dcpi_sampler;

/* Open (disabled) counters on every online CPU.  Failure to open an event
 * is -errno with a message naming the event, the CPU and what the kernel
 * said (and what to do for EACCES: perf_event_paranoid). */
int dcpi_sampler_open(const struct dcpi_eventlist *l, const struct dcpi_sampler_opts *o,
		      struct dcpi_sampler **out);
void dcpi_sampler_close(struct dcpi_sampler *s);
int dcpi_sampler_enable(struct dcpi_sampler *s);
int dcpi_sampler_disable(struct dcpi_sampler *s);

/* The ring fds, for poll(): fills up to max entries, returns how many. */
size_t dcpi_sampler_pollfds(const struct dcpi_sampler *s, struct pollfd *fds, size_t max);
unsigned dcpi_sampler_ncpus(const struct dcpi_sampler *s);

/* Read every ring up to its current head; cb gets each raw record (a
 * contiguous copy when it wrapped around the ring).  A non-zero return
 * from cb stops the drain and is returned. */
typedef int (*dcpi_record_cb)(void *arg, const void *raw, size_t len);
int dcpi_sampler_drain(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg);

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
