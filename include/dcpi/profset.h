/* A set of profiles chosen from the database: the epochs and hosts a
 * report covers, every profile in them, and their statistics summed.
 * What every analysis tool starts from.
 *
 * Ownership: the set owns every string and profile; dcpi_profset_free()
 * releases all.  events[] is the union of the profiles' events in order of
 * first appearance; a profile's event e is set column col[e] of that.
 */
#ifndef DCPI_PROFSET_H
#define DCPI_PROFSET_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dcpi/db.h"
#include "dcpi/profile.h"
#include "dcpi/stats.h"

struct dcpi_profset_entry {
	char *file;             /* full path of the profile file */
	char *platdir;          /* its epoch/host directory (for kallsyms) */
	struct dcpi_profile prof;
	unsigned col[DCPI_MAX_EVENTS]; /* the set's column of each event */
};

struct dcpi_profset {
	struct dcpi_profset_entry *v;
	size_t n, cap;           /* entries, capacity */
	char **epochs;          /* chosen epochs, oldest first */
	size_t nepochs;
	char **hosts;           /* hosts seen, sorted, unique */
	size_t nhosts, hosts_cap;
	unsigned nevents;
	char *events[DCPI_MAX_EVENTS];
	uint64_t periods[DCPI_MAX_EVENTS]; /* 0 when profiles disagree */
	struct dcpi_epoch_stats stats;     /* summed over epochs and hosts; start is
					      the earliest, updated the latest;
					      ev[] summed by event name */
	double seconds;         /* wall time the epochs cover: per epoch, from
				   its statistics' earliest start to their
				   latest merge (whole seconds), summed over
				   epochs; 0 when unknown */
	size_t nstats;          /* statistics files read */
	uint64_t cost_samples;  /* samples of the statistics that give a
				   sample_cost_ns (stats.sample_cost_ns is their
				   samples-weighted mean) */
	/* stats.clock_khz: the clock every statistics file read measured (their
	   mean), or 0 when one has none or two disagree by more than
	   DCPI_PROFSET_CLOCK_SPREAD: samples of unknown or mixed clocks are
	   not converted to cycles */
	int clock_mixed;
	size_t nbad;            /* profiles that could not be read, or whose
				   counts would carry a column's sum past 2^64 */
	char *first_bad;        /* the first one's error message, naming its file */
	char **bad;             /* each one's error message, "FILE: what is wrong"
				   (nbad of them, fewer when memory ran out) */
	size_t nbad_kept, bad_cap;
	size_t nbad_stats;      /* statistics files refused: unreadable, impossible
				   (dcpi_stats_parse) or adding past 2^64 */
	char *first_bad_stats;  /* the first one's error message, naming its file */
	uint64_t sum[DCPI_MAX_EVENTS]; /* each column's samples over all profiles:
					  no sum of the set's counts overflows */
};

#define DCPI_PROFSET_CLOCK_SPREAD 0.05

/* Load profiles of db: epoch is a name, "latest" (or NULL), "all", or a
 * time or range (dcpi_profset_time_range);
 * "latest" is the newest epoch the host has a directory in (a daemon
 * adopts an epoch another host started only at its next merge), the
 * newest of all for host "all" or a host found in none;
 * host is a name, "all" (or NULL: this host, else all when there is only
 * another).  Unreadable profiles, and those whose counts would carry a
 * column's sum past 2^64, are counted in nbad, not fatal; refused
 * statistics files likewise in nbad_stats (the set's statistics then
 * leave them out, so every sum and share of the set is in range); no
 * epoch, or no such epoch/host, is -ENOENT with a message. */
/* -epoch by time: "last-N{s,m,h,d}" (the last N units until now); a time
 * "YYYY-MM-DD[THH[:MM[:SS]]]" or "HH:MM[:SS]" (today), local time, which
 * stands for the span of its precision (2026-11-25T03: that hour); a range
 * "FROM..TO" of two such times, TO excluded.  Into [*from, *to); -EINVAL
 * with a message for anything else.  dcpi_profset_load takes every epoch
 * that overlaps it (an epoch lasts until the next starts: with dcpid
 * -rotate, on the clock's boundaries). */
int dcpi_profset_time_range(const char *spec, time_t now, time_t *from, time_t *to);
int dcpi_profset_load(const char *db, const char *epoch, const char *host,
		      struct dcpi_profset *out);
void dcpi_profset_free(struct dcpi_profset *s);

/* Whether label ("comm=xz,uid=0") has every KEY=VALUE of spec (as
 * dcpi_profset_keep_label takes it); a spec that is not KEY=VALUE pairs
 * matches nothing. */
int dcpi_profset_label_has(const char *label, const char *spec);

/* Keep only the labelled profiles (dcpid -label) whose label has every
 * KEY=VALUE of spec ("comm=xz", "uid=0,comm=sshd"); the rest are freed.
 * -EINVAL for a malformed spec (the set is then unchanged).  The
 * statistics stay the epoch's. */
int dcpi_profset_keep_label(struct dcpi_profset *s, const char *spec);
/* Keep only the per-process profiles of process pid (dcpid -bypid, dcpi
 * record's); the rest are freed.  Always 0. */
int dcpi_profset_keep_pid(struct dcpi_profset *s, int64_t pid);

/* The error message of an unreadable profile (see bad) whose file is named
 * for image (a path or a file name: its base name, NAME-HASH.prof), or
 * NULL: what to say instead of "no profile of image". */
const char *dcpi_profset_bad_of(const struct dcpi_profset *s, const char *image);

/* Column of the event named name, or -1. */
int dcpi_profset_event(const struct dcpi_profset *s, const char *name);

/* The CPU time, in seconds, the set's statistics say event column col was
 * monitored (time enabled, summed over CPUs, hosts and epochs: a whole
 * system's CPUs x wall time, or for dcpi record the command's CPU time);
 * 0 when no statistics name the event. */
double dcpi_profset_cpu_seconds(const struct dcpi_profset *s, unsigned col);

#endif
