/* Event specifications: what dcpid samples, in DCPI's spelling.
 *
 *   -event TYPE[:[F|R]PERIOD[K|M]]      one event, its own set
 *   -event a:F64K+b+c                   one multiplex set of three events
 *
 * TYPE is a DCPI name (cycles, imiss, dmiss, branchmp, issues, retires,
 * itbmiss, dtbmiss), a perf generic or cache event name (instructions,
 * L1-dcache-load-misses, ...), a software event (cpu-clock, task-clock,
 * page-faults, ...), a raw code rNNNN (hex), or PMU/NAME from
 * /sys/bus/event_source/devices/PMU/events/NAME.  PERIOD is events per
 * sample (nanoseconds for cpu-clock and task-clock); F fixes it, R asks
 * that it be randomised around PERIOD (as DCPI did, to avoid lock-step
 * with periodic code).  Events of one set are one perf group (counted
 * together); separate sets are multiplexed by the kernel.
 */
#ifndef DCPI_EVENT_H
#define DCPI_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h" /* DCPI_MAX_EVENTS */

#define DCPI_EVENT_NAME_MAX 64

struct dcpi_event_spec {
	char name[DCPI_EVENT_NAME_MAX]; /* the name profiles record: perf's
					   canonical name ("cycles", "cpu-clock",
					   "L1-icache-load-misses", "r01c2") */
	uint32_t type;                  /* perf_event_attr.type */
	uint64_t config;                /* perf_event_attr.config */
	uint64_t period;                /* sample period */
	int randomize;                  /* 1: R was given */
	unsigned set;                   /* index of its multiplex set */
};

struct dcpi_eventlist {
	struct dcpi_event_spec ev[DCPI_MAX_EVENTS];
	unsigned n;     /* events */
	unsigned nsets; /* sets; ev[] is ordered by set */
};

/* Parse one -event argument and append it as a new set.  Errors
 * (-EINVAL, unknown name, bad period, -E2BIG too many events) carry a
 * message quoting the offending part. */
int dcpi_event_parse(struct dcpi_eventlist *l, const char *arg);

/* The defaults: cycles + instructions (two sets) where the CPU has a PMU
 * that can sample them, else cpu-clock.  why receives a sentence for the
 * log saying what was chosen and why ("no hardware PMU: cycles cannot be
 * sampled (perf_event_open: No such file or directory); using cpu-clock"). */
int dcpi_event_defaults(struct dcpi_eventlist *l, char *why, size_t whylen);

/* Resolve a single event name (no period) to type/config and its default
 * period.  Returns 0, or -ENOENT with a message. */
int dcpi_event_lookup(const char *name, struct dcpi_event_spec *out);

/* Whether the kernel accepts sampling this event system-wide on CPU 0:
 * 0, or the negative errno of perf_event_open. */
int dcpi_event_probe(const struct dcpi_event_spec *ev);

#endif
