/* Value profiles from precise memory samples (issue 26): each sample of a
 * precise load-latency event (dcpi-events(7) ldlat) adds its load's
 * measured latency, binned, and its data source to the epoch's value
 * profile, kept in memory and merged into the epoch's epoch.vprof with the
 * profiles (dcpiformat(5), VALUE PROFILES).  The latency is the PMU's, in
 * core cycles: the profile's kind is "ldlat" (libdcpivp's, in time-stamp
 * counter cycles, is "ldlatency"). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector_priv.h"
#include "dcpi/error.h"
#include "dcpi/record.h"
#include "dcpi/vprof.h"

#define VPROF_KIND "ldlat"

void dcpi_col_vprof_free(struct dcpi_collector *c)
{
	dcpi_vprof_free(c->vp);
	c->vp = NULL;
}

int dcpi_col_vprof_new(struct dcpi_collector *c)
{
	struct dcpi_vprof *v;
	int err;

	if ((err = dcpi_vprof_new(&v)))
		return err;
	snprintf(v->kind, sizeof(v->kind), "%s", VPROF_KIND);
	if (c->o.vbins)
		v->bins = *c->o.vbins;
	else
		dcpi_bins_default(&v->bins);
	for (unsigned e = 0; e < c->events.n; e++)
		if (c->events.ev[e].mem)
			v->period = c->events.ev[e].period;
	dcpi_col_vprof_free(c);
	c->vp = v;
	return 0;
}

int dcpi_col_mem_count(struct dcpi_collector *c, const struct dcpi_sample *s,
		       const struct dcpi_mem_sample *m)
{
	const struct dcpi_image *img;
	uint64_t off;
	int idx, err;

	if (!c->vp)
		return 0;
	c->vp->signals++;
	if (!m->latency) {
		union perf_mem_data_src d = { .val = m->data_src };

		/* AMD IBS times only the loads that miss L1: its L1 hits are
		   counted apart, so that its latencies are known to be misses' */
		if ((d.mem_op & PERF_MEM_OP_LOAD) && dcpi_mem_source(m->data_src) == DCPI_SRC_L1)
			dcpi_vprof_skip(c->vp, "l1_untimed", 1);
		else /* not a load the PMU timed: a store, an op that was no load */
			dcpi_vprof_skip(c->vp, "nolatency", 1);
		return 0;
	}
	idx = dcpi_loadmap_resolve(c->lm, s->pid, s->ip, (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
				   PERF_RECORD_MISC_KERNEL, &off);
	if (idx < 0 || idx == c->unknown_image || !(img = dcpi_loadmap_image(c->lm, idx)) ||
	    img->kind != DCPI_IMAGE_FILE || !img->path || img->path[0] != '/') {
		dcpi_vprof_skip(c->vp, "noimage", 1);
		return 0;
	}
	err = dcpi_vprof_add(c->vp, img->path, img->build_id, img->build_id_len, off, m->latency,
			     0, 0, dcpi_mem_source(m->data_src));
	if (err == -EFBIG) {
		dcpi_vprof_skip(c->vp, "full", 1);
		return 0;
	}
	return err;
}

/* The epoch's value profile merged into its file.  Never fails the merge
 * of the profiles: a file that is not one is kept aside (as stacks files
 * are); what cannot be written now is kept for the next merge when the
 * trouble may pass (memory, I/O, space), else dropped; each said. */
int dcpi_col_vprof_merge(struct dcpi_collector *c, const char *platdir)
{
	char path[4200], msg[700];
	int err, keep;

	if (!c->vp || (!c->vp->nloads && !c->vp->signals))
		return 0;
	err = dcpi_vprof_path(path, sizeof(path), platdir, c->stats.platform);
	if (!err)
		err = dcpi_vprof_merge_file(path, c->vp, c->o.filemode ? c->o.filemode : 0600);
	keep = err == -ENOMEM || err == -EIO || err == -ENOSPC || err == -EDQUOT ||
	       err == -EMFILE || err == -ENFILE;
	if (err && c->o.on_warning) {
		snprintf(msg, sizeof(msg), "value profile %s: %s", keep ? "not merged, kept for the "
			 "next merge" : "dropped", dcpi_errmsg());
		c->o.on_warning(c->o.arg, msg);
	}
	if (!keep) /* merged, or dropped: what comes starts again */
		dcpi_vprof_clear(c->vp);
	return 0;
}
