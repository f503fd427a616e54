/* libFuzzer target for the epoch statistics parser (epoch.stats).
 * Whatever the input, parsing must not crash; what parses must be written
 * by dcpi_stats_write and read back by dcpi_stats_read to the same
 * statistics, field by field.  Where that cannot hold, the writer (or the
 * parser) is what must refuse, not this check that must bend: the writer
 * refuses names with line breaks, event names with spaces, negative times
 * and too many events, none of which the parser ever yields. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char stats_path[256];

/* One scratch file per fuzzing process; tmpfs when there is one, since
 * every write is fsync'd. */
static const char *scratch(void)
{
	char dir[128];

	if (stats_path[0])
		return stats_path;
	snprintf(dir, sizeof(dir), "%s/dcpi-fuzz-stats.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(stats_path, sizeof(stats_path), "%s/epoch.stats", dir);
	return stats_path;
}

static void cleanup(void)
{
	char *slash;

	if (!stats_path[0])
		return;
	unlink(stats_path);
	slash = strrchr(stats_path, '/');
	*slash = 0;
	rmdir(stats_path);
}

static int same_event(const struct dcpi_stats_event *a, const struct dcpi_stats_event *b)
{
	return !strcmp(a->name, b->name) && a->period == b->period && a->samples == b->samples &&
	       a->time_enabled == b->time_enabled && a->time_running == b->time_running;
}

static int same_stats(const struct dcpi_epoch_stats *a, const struct dcpi_epoch_stats *b)
{
	if (strcmp(a->epoch, b->epoch) || strcmp(a->platform, b->platform) ||
	    a->start != b->start || a->updated != b->updated || a->samples != b->samples ||
	    a->lost != b->lost || a->throttled != b->throttled || a->unknown != b->unknown ||
	    a->kernel != b->kernel || a->images != b->images || a->ncpus != b->ncpus ||
	    a->nevents != b->nevents)
		return 0;
	for (uint32_t e = 0; e < a->nevents; e++)
		if (!same_event(&a->ev[e], &b->ev[e]))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dcpi_epoch_stats a, b; /* ~6 KB each: off the stack */
	const char *path = scratch();

	if (dcpi_stats_parse((const char *)data, size, &a) != 0)
		return 0;
	if (a.nevents > DCPI_MAX_EVENTS)
		abort(); /* the parser overran its own array */
	/* The writer refuses (-EINVAL) only what the parser never yields. */
	if (dcpi_stats_write(path, &a, 0600) != 0)
		abort();
	if (dcpi_stats_read(path, &b) != 0)
		abort(); /* written, but not readable */
	if (!same_stats(&a, &b))
		abort(); /* the round trip changed something */
	return 0;
}

__attribute__((destructor)) static void fuzz_stats_fini(void)
{
	cleanup();
}
