/* Event specifications: what dcpid samples, in DCPI's spelling.
 *
 *   -event TYPE[:[F|R]PERIOD[K|M]]      one event, its own set
 *   -event a:F64K+b+c                   one set (a perf group) of three events
 *
 * TYPE is a DCPI name (cycles, imiss, dmiss, branchmp, issues, retires,
 * itbmiss, dtbmiss; ldlat, a precise load-latency event: Intel PEBS load
 * latency, cpu/mem-loads, or AMD IBS op, where the PMU has one), a perf generic or cache event name (instructions,
 * L1-dcache-load-misses, ...), a software event (cpu-clock, task-clock,
 * page-faults, ...), a raw code rNNNN (hex), or PMU/NAME from
 * /sys/bus/event_source/devices/PMU/events/NAME.  PERIOD is events per
 * sample (nanoseconds for cpu-clock and task-clock); F fixes it, R asks
 * that it be randomised around PERIOD (as DCPI did, to avoid lock-step
 * with periodic code).  Events of one set are one perf group: counted at
 * the same time, all on the PMU or none.  Separate sets are separate
 * groups, which the kernel time-multiplexes when the PMU has too few
 * counters for all of them (DCPI's -mux time-multiplexed the events of a
 * set on one counter instead; dcpi_event_mux gives that effect).  An
 * event may be given once: repeating one in a set (DCPI's imiss+imiss,
 * a weight) is refused with a message saying why.
 *
 * K is 1024 and M is 1024*1024, as in DCPI.  PERIOD is at least 1 and at
 * most INT64_MAX (the kernel refuses periods with bit 63 set); cpu-clock
 * and task-clock periods are at least 10000 ns.  A tracepoint is named
 * SUBSYS:EVENT; a trailing colon part is a period only when it starts
 * with F, R or a digit.  man/dcpi-events.7 lists every name and default
 * period.
 *
 * Thread safety: everything here may be called from any thread, except
 * dcpi_event_sysroot(), which must be called before any other thread
 * looks events up.
 */
#ifndef DCPI_EVENT_H
#define DCPI_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h" /* DCPI_MAX_EVENTS */

#define DCPI_EVENT_NAME_MAX 64

struct perf_event_attr; /* <linux/perf_event.h> */

struct dcpi_event_spec {
	char name[DCPI_EVENT_NAME_MAX]; /* the name profiles record: perf's
					   canonical name ("cycles", "cpu-clock",
					   "L1-icache-load-misses", "r01c2") */
	uint32_t type;                  /* perf_event_attr.type */
	uint64_t config;                /* perf_event_attr.config */
	uint64_t config1;               /* perf_event_attr.config1 and config2: */
	uint64_t config2;               /*   only PMU events whose sysfs format
					     uses them set these; else 0 */
	uint64_t period;                /* sample period */
	int randomize;                  /* 1: R was given */
	unsigned set;                   /* index of its set (perf group) */
	uint8_t mem;                    /* a precise memory event (ldlat): its
					   samples carry the data address, the
					   load's latency and the data source
					   (DCPI_EVENT_MEM_PEBS or _IBS) */
};

#define DCPI_EVENT_MEM_PEBS 1           /* Intel PEBS load latency (precise_ip) */
#define DCPI_EVENT_MEM_IBS 2            /* AMD IBS op */

/* Invariants: n <= DCPI_MAX_EVENTS; ev[0..n) is ordered by set, sets are
 * numbered 0..nsets-1 without gaps and none is empty; no two events have
 * the same name or the same type/config/config1/config2 (profiles key
 * counts by name).  Start from a zeroed list: struct dcpi_eventlist l = {0}. */
struct dcpi_eventlist {
	struct dcpi_event_spec ev[DCPI_MAX_EVENTS];
	unsigned n;     /* events */
	unsigned nsets; /* sets; ev[] is ordered by set */
};

/* Parse one -event argument and append it as a new set.  Errors
 * (-EINVAL bad syntax or period, -ENOENT unknown name, -E2BIG too many
 * events, -EEXIST an event given twice) carry a message quoting the
 * offending part; on error l is left unchanged. */
int dcpi_event_parse(struct dcpi_eventlist *l, const char *arg);

/* Make every event its own set (dcpid -mux): each is then a group of its
 * own, and the kernel rotates them over the counters when there are more
 * events than counters, recording for each the fraction of time it was
 * counted (profiles keep it; analysis scales by it). */
void dcpi_event_mux(struct dcpi_eventlist *l);

/* The defaults: cycles + instructions (two sets) where the CPU has a PMU
 * that can sample them, else cpu-clock.  why receives a sentence for the
 * log saying what was chosen and why ("no hardware PMU: cycles cannot be
 * sampled (perf_event_open: No such file or directory); using cpu-clock").
 * l is overwritten; why may be NULL when whylen is 0.  Returns 0. */
int dcpi_event_defaults(struct dcpi_eventlist *l, char *why, size_t whylen);

/* Resolve a single event name (no period) to type/config and its default
 * period; out->set is 0 and out->randomize 0.  Returns 0, -ENOENT with a
 * message for a name that is unknown here, or -EINVAL for a sysfs PMU
 * event whose definition cannot be encoded. */
int dcpi_event_lookup(const char *name, struct dcpi_event_spec *out);

/* Whether the kernel accepts sampling this event system-wide on CPU 0:
 * 0, or the negative errno of perf_event_open (with a message). */
int dcpi_event_probe(const struct dcpi_event_spec *ev);

/* Fill attr for ev: zeroes it, then sets size, type, config, config1,
 * config2 and sample_period.  Sampling flags (sample_type, disabled,
 * read_format, group leader) are the caller's to set afterwards. */
void dcpi_event_attr(const struct dcpi_event_spec *ev, struct perf_event_attr *attr);

/* Read sysfs and tracefs under root instead of "/" (root "/tmp/x" reads
 * /tmp/x/sys/bus/event_source/devices/...): for tests with fixture trees
 * and for resolving names against a captured tree.  NULL or "" restores
 * "/".  Returns 0, or -ENAMETOOLONG.  Not thread-safe (see above). */
int dcpi_event_sysroot(const char *root);

#endif
