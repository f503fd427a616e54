/* Epoch statistics (epoch.stats): what the tools show in their headers. */
#ifndef DCPI_STATS_H
#define DCPI_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/db.h"
#include "dcpi/profile.h"

/* Epoch statistics: what the tools show in their headers. */
struct dcpi_stats_event {
	char name[64];
	uint64_t period;
	uint64_t samples;
	uint64_t time_enabled;  /* ns, summed over CPUs */
	uint64_t time_running;
};

struct dcpi_epoch_stats {
	char epoch[DCPI_EPOCH_NAME_MAX];
	char platform[DCPI_HOST_MAX];
	int64_t start;          /* unix time the epoch began */
	int64_t updated;        /* unix time of the last merge */
	uint64_t samples;       /* samples read from the kernel */
	uint64_t lost;          /* samples the kernel dropped (ring full) */
	uint64_t throttled;     /* throttle events (kernel slowed sampling) */
	uint64_t unknown;       /* samples attributable to no image */
	uint64_t kernel;        /* samples in kernel mode */
	uint64_t images;        /* profiles written */
	char labels[32];        /* the label keys (dcpid -label): "comm,uid"; "" none */
	uint64_t label_values;  /* label values kept apart */
	uint64_t label_other;   /* samples whose value was past the cap: "other" */
	uint64_t clock_khz;     /* the CPU clock the collector measured at start
				   (dcpi/cpuclock.h), kHz; 0: not measured (and
				   in files older writers wrote).  Converts time
				   samples to cycles */
	uint64_t collector_cpu_ns;  /* the collector's own CPU time (user + system,
				   every thread) in this epoch, measured; 0:
				   not known (older writers) */
	uint64_t sample_cost_ns;    /* what one sample's interrupt costs the task
				   it interrupts, as the collector measured it
				   (dcpi/overhead.h); 0: not measured */
	uint64_t stack_copies_cut;  /* samples whose stack copy was cut at their
				   thread's stack top (dcpi/stacktops.h); 0
				   also when not written */
	uint32_t ncpus;
	uint32_t nevents;
	struct dcpi_stats_event ev[DCPI_MAX_EVENTS];
};

/* The highest clock_khz a reader accepts: 100 GHz, ten times any CPU's. */
#define DCPI_STATS_CLOCK_KHZ_MAX 100000000ull
/* The highest sample_cost_ns a reader accepts: 1 ms. */
#define DCPI_STATS_SAMPLE_COST_MAX 1000000ull

/* What collecting cost, from st: the collector's CPU time (measured) and
 * the sampling interrupts' (samples times sample_cost_ns, an estimate)
 * as a share of the CPU time monitored (the first event's enabled time).
 * 0, or -ENOENT when st does not say (collector_cpu_ns or the enabled
 * time is 0). */
int dcpi_stats_overhead(const struct dcpi_epoch_stats *st, double *percent,
			double *interrupt_seconds);

int dcpi_stats_write(const char *path, const struct dcpi_epoch_stats *st, unsigned mode);
/* Parse; unknown keys are ignored (newer writers), malformed lines are
 * -EBADMSG naming the line.  Statistics no collector writes are -EBADMSG
 * too, saying which values disagree: unknown or kernel samples beyond
 * samples, samples + lost past 2^64, clock_khz above
 * DCPI_STATS_CLOCK_KHZ_MAX. */
int dcpi_stats_read(const char *path, struct dcpi_epoch_stats *st);
int dcpi_stats_parse(const char *text, size_t len, struct dcpi_epoch_stats *st);
/* Make host's statistics in platdir (epoch.stats, or epoch@HOST.stats in
 * a pooled directory, dcpi_db_stats_path) count at least what its profiles
 * hold: a
 * writer killed between a merge's profiles and its epoch.stats leaves the
 * stats behind (each profile is written atomically, the set is not).  The
 * next writer calls this before it continues or leaves the epoch; *added is
 * how many samples the stats gained.  No epoch.stats: nothing to do. */
int dcpi_stats_recount(const char *platdir, const char *host, unsigned mode, uint64_t *added);
/* After taking the lock, undo what a killed writer of host left in its
 * platform directories: remove its temporary files in every epoch (in a
 * pooled directory only those named for host; *removed counts them), and
 * make the latest epoch's statistics of host count what its profiles hold
 * (dcpi_stats_recount; *added samples).  Here, not in db.h: it
 * recounts statistics, which are read and written with db.h's paths. */
int dcpi_stats_recover(const char *root, const char *host, const char *platform, unsigned mode,
		    size_t *removed, uint64_t *added);


#endif
