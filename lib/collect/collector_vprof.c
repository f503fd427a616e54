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
#include <unistd.h>

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

/* A reason a sample gave no measurement, counted. */
static void skip(struct dcpi_collector *c, const char *why)
{
	size_t i;

	for (i = 0; i < c->vp->nskipped && strcmp(c->vp->skipped[i].name, why); i++)
		;
	if (i == c->vp->nskipped) {
		if (i == DCPI_VPROF_REASONS_MAX)
			return;
		snprintf(c->vp->skipped[i].name, sizeof(c->vp->skipped[i].name), "%s", why);
		c->vp->nskipped++;
	}
	c->vp->skipped[i].n++;
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
		skip(c, "nolatency"); /* not a load the PMU timed (a store, IBS's non-load op) */
		return 0;
	}
	idx = dcpi_loadmap_resolve(c->lm, s->pid, s->ip, (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
				   PERF_RECORD_MISC_KERNEL, &off);
	if (idx < 0 || idx == c->unknown_image || !(img = dcpi_loadmap_image(c->lm, idx)) ||
	    img->kind != DCPI_IMAGE_FILE || !img->path || img->path[0] != '/') {
		skip(c, "noimage");
		return 0;
	}
	err = dcpi_vprof_add(c->vp, img->path, img->build_id, img->build_id_len, off, m->latency,
			     0, 0, dcpi_mem_source(m->data_src));
	if (err == -EFBIG) {
		skip(c, "full");
		return 0;
	}
	return err;
}

int dcpi_col_vprof_merge(struct dcpi_collector *c, const char *platdir)
{
	struct dcpi_vprof *all = NULL, *old = NULL;
	char path[4200];
	int err;

	if (!c->vp || (!c->vp->nloads && !c->vp->signals))
		return 0;
	snprintf(path, sizeof(path), "%s/epoch.vprof", platdir);
	if ((err = dcpi_vprof_new(&all)))
		return err;
	if (!access(path, F_OK) && (err = dcpi_vprof_read(path, &old)) == 0)
		err = dcpi_vprof_merge(all, old);
	if (err && err != -ENOMEM) /* a file we cannot add to: said, never overwritten */
		err = dcpi_error_prefix(-err, "value profile not merged");
	if (!err && !(err = dcpi_vprof_merge(all, c->vp)))
		err = dcpi_vprof_write(path, all, c->o.filemode ? c->o.filemode : 0600);
	if (!err)
		err = dcpi_col_vprof_new(c); /* what is merged starts again */
	dcpi_vprof_free(old);
	dcpi_vprof_free(all);
	return err;
}
