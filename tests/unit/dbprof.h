/* A one-row profile merged into a database directory, for unit tests of
 * what reads databases:
 *   fx_cycles_profile(dir, epoch, host, path, label, count)
 * merges a profile of path (label NULL: unlabelled) with count samples of
 * "cycles" (period 1000) at offset 0x1000 into dir
 * (dcpi_db_merge_profile).  0, or the merge's error. */
#ifndef DCPI_TEST_DBPROF_H
#define DCPI_TEST_DBPROF_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dcpi/db.h"
#include "dcpi/profile.h"

static inline int fx_cycles_profile(const char *dir, const char *epoch, const char *host,
				    const char *path, const char *label, uint64_t count)
{
	struct dcpi_profile p;
	uint64_t off = 0x1000;
	int err;

	dcpi_profile_init(&p);
	p.path = strdup(path);
	p.epoch = strdup(epoch);
	p.platform = strdup(host);
	p.label = label ? strdup(label) : NULL;
	p.nevents = 1;
	p.events[0].name = strdup("cycles");
	p.events[0].period = 1000;
	err = dcpi_profile_set_rows(&p, 1, &off, &count);
	if (!err)
		err = dcpi_db_merge_profile(dir, &p, 0600);
	dcpi_profile_free(&p);
	return err;
}
#endif
