/* The collector's life and attribution: a sample to an image, offset and
 * label.  See dcpi/collector.h; ordering is collector_order.c, the merge
 * collector_merge.c. */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "collector_priv.h"
#include "internal.h"

#define REGION_SHIFT 20             /* -unknown groups by 1 MB regions */

/* JIT bins share one placeholder image; the merge writes each bin's own
 * pseudo-image and names the profile after it. */
static int new_jit(struct dcpi_collector *c, const struct dcpi_collector_opts *o)
{
	struct dcpi_jitmap_opts jo = { .procroot = o->procroot, .on_warning = o->on_warning,
				       .arg = o->arg, .budget = o->jit_budget,
				       .budget_per_uid = o->jit_budget_per_uid,
				       .own_children = o->jit_own_children };
	struct dcpi_image jit = { .path = "[jit]", .kind = DCPI_IMAGE_FILE };
	int err;

	c->db = strdup(o->db);
	if (!c->db)
		return dcpi_error(ENOMEM, "out of memory");
	err = dcpi_jitmap_new(&jo, &c->jm);
	if (err)
		return err;
	c->jit_image = dcpi_loadmap_intern(c->lm, &jit);
	return c->jit_image < 0 ? c->jit_image : 0;
}

int dcpi_collector_new(const struct dcpi_collector_opts *o, struct dcpi_collector **out)
{
	struct dcpi_collector *c = calloc(1, sizeof(*c));
	struct dcpi_image unk = { .path = "[unknown]", .kind = DCPI_IMAGE_UNKNOWN };
	int err;

	if (!c)
		return dcpi_error(ENOMEM, "out of memory");
	c->o = *o;
	c->o.bypid = NULL; /* the caller's array need not outlive this call */
	c->events = *o->events;
	c->bypid = calloc(o->nbypid + 1, sizeof(*c->bypid));
	for (size_t i = 0; c->bypid && i < o->nbypid; i++) {
		c->bypid_labels |= o->bypid[i] && strchr(o->bypid[i], '=') != NULL;
		if (!(c->bypid[i] = strdup(o->bypid[i]))) {
			err = dcpi_error(ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (!c->bypid) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto fail;
	}
	c->lm = dcpi_loadmap_new(o->procroot ? o->procroot : "/proc");
	c->agg = dcpi_agg_new(c->events.n);
	if (!c->lm || !c->agg) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto fail;
	}
	if (o->label_keys &&
	    (err = dcpi_labeler_new(o->label_keys, o->procroot, o->label_cap, &c->lab)))
		goto fail;
	dcpi_label_keys_str(o->label_keys, c->stats.labels, sizeof(c->stats.labels));
	c->unknown_image = dcpi_loadmap_intern(c->lm, &unk);
	if (c->unknown_image < 0) {
		err = c->unknown_image;
		goto fail;
	}
	c->jit_image = DCPI_NO_IMAGE;
	if (o->db) {
		err = new_jit(c, o);
		if (err)
			goto fail;
	}
	c->stats.nevents = c->events.n;
	for (unsigned i = 0; i < c->events.n; i++) {
		snprintf(c->stats.ev[i].name, sizeof(c->stats.ev[i].name), "%s", c->events.ev[i].name);
		c->stats.ev[i].period = c->events.ev[i].period;
	}
	snprintf(c->stats.platform, sizeof(c->stats.platform), "%s", o->host ? o->host : "");
	*out = c;
	return 0;
fail:
	dcpi_collector_free(c);
	return err;
}

void dcpi_collector_free(struct dcpi_collector *c)
{
	if (!c)
		return;
	if (c->lm)
		dcpi_loadmap_free(c->lm);
	dcpi_agg_free(c->agg);
	dcpi_labeler_free(c->lab);
	dcpi_col_stacks_free(c);
	dcpi_col_vprof_free(c);
	dcpi_jitmap_free(c->jm);
	free(c->db);
	dcpi_buf_release(&c->arena);
	dcpi_buf_release(&c->spare);
	free(c->q);
	free(c->fs);
	free(c->pidset);
	free(c->raw);
	free(c->raw_used);
	free(c->bypid_cache);
	for (size_t i = 0; c->bypid && i < c->o.nbypid; i++)
		free(c->bypid[i]);
	free(c->bypid);
	free(c);
}

int dcpi_collector_sample_layout(struct dcpi_collector *c, int stacks, int cgroup)
{
	c->sample_cgroup = cgroup;
	if (stacks && !c->stk)
		return dcpi_col_stacks_new(c);
	if (!stacks)
		dcpi_col_stacks_free(c);
	return 0;
}

int dcpi_collector_sample_mem(struct dcpi_collector *c, int mem)
{
	if (mem && c->stk)
		return dcpi_error(EINVAL, "precise memory samples (ldlat) and call stacks together "
				  "are not supported yet");
	c->mem = mem;
	if (mem && !c->vp)
		return dcpi_col_vprof_new(c);
	if (!mem)
		dcpi_col_vprof_free(c);
	return 0;
}

struct dcpi_loadmap *dcpi_collector_loadmap(struct dcpi_collector *c)
{
	return c->lm;
}

struct dcpi_epoch_stats *dcpi_collector_stats(struct dcpi_collector *c)
{
	return &c->stats;
}

uint64_t dcpi_collector_pending(const struct dcpi_collector *c)
{
	return c->pending;
}

int dcpi_collector_jit_stats(const struct dcpi_collector *c, struct dcpi_jitmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!c->jm)
		return -ENOENT;
	dcpi_jitmap_stats(c->jm, st);
	return 0;
}

size_t dcpi_collector_jit_users(const struct dcpi_collector *c, struct dcpi_jitmap_user *out,
				size_t max)
{
	return c->jm ? dcpi_jitmap_users(c->jm, out, max) : 0;
}

/* ---- attribution -------------------------------------------------------- */

static int path_matches(const char *path, const char *want)
{
	const char *base = strrchr(path, '/');

	return !strcmp(path, want) || (base && !strcmp(base + 1, want));
}

/* Whether label has every KEY=VALUE pair of spec ("comm=job,uid=0"). */
static int label_has_all(const char *label, const char *spec)
{
	while (*spec) {
		size_t n = strcspn(spec, ",");
		const char *p = label;
		int found = 0;

		for (; *p && !found; p += strcspn(p, ","), p += *p == ',')
			found = !strncmp(p, spec, n) && (p[n] == ',' || !p[n]);
		if (!found)
			return 0;
		spec += n + (spec[n] == ',');
	}
	return 1;
}

/* Whether process rpid's label matches a -bypid K=V[,K=V] (all its
 * images are then profiled per process). */
static int label_bypid(struct dcpi_collector *c, int32_t rpid)
{
	uint32_t id;
	const char *label;

	if (!c->lab || rpid <= 0 || dcpi_labeler_get(c->lab, rpid, &id) || id == 0)
		return 0;
	label = dcpi_labeler_label(c->lab, id);
	for (size_t i = 0; i < c->o.nbypid; i++)
		if (strchr(c->bypid[i], '=') && label_has_all(label, c->bypid[i]))
			return 1;
	return 0;
}

/* Whether image idx, sampled in process rpid, is one the user asked to
 * profile per process: by its path, or by the process's label. */
int dcpi_col_is_bypid(struct dcpi_collector *c, int idx, int32_t rpid)
{
	const struct dcpi_image *img;
	int yes = 0;

	if (c->o.nbypid == 0 || idx < 0)
		return 0;
	if (c->bypid_labels && label_bypid(c, rpid))
		return 1;
	if ((size_t)idx >= c->bypid_cache_len) {
		size_t old = c->bypid_cache_len;

		if (DCPI_GROW(c->bypid_cache, c->bypid_cache_len, (size_t)idx + 1, SIZE_MAX,
			      "images"))
			return 0; /* only a cache: answer without it */
		for (size_t i = old; i < c->bypid_cache_len; i++)
			c->bypid_cache[i] = -1; /* not yet known */
	}
	if (c->bypid_cache[idx] >= 0)
		return c->bypid_cache[idx];
	img = dcpi_loadmap_image(c->lm, idx);
	for (size_t i = 0; img && i < c->o.nbypid && !yes; i++)
		yes = path_matches(img->path, c->bypid[i]);
	c->bypid_cache[idx] = yes;
	return yes;
}

static int unknown_region_image(struct dcpi_collector *c, uint64_t ip)
{
	char path[64];
	uint64_t region = ip >> REGION_SHIFT << REGION_SHIFT;
	struct dcpi_image t = { .path = path, .kind = DCPI_IMAGE_UNKNOWN, .text_start = region,
				.text_size = 1u << REGION_SHIFT };

	snprintf(path, sizeof(path), "[unknown 0x%" PRIx64 "]", region);
	return dcpi_loadmap_intern(c->lm, &t);
}

/* Count n samples of process rpid (in cgroup cg, 0 when the samples did
 * not say) at (idx, pid, off), under rpid's label when profiles are
 * labelled. */
int dcpi_col_agg_add(struct dcpi_collector *c, int idx, int64_t pid, int32_t rpid, uint64_t cg,
		   uint64_t off, unsigned ev, uint64_t n)
{
	uint32_t label = 0;
	int err;

	if (c->lab) {
		if ((err = dcpi_labeler_get_cgroup(c->lab, rpid, cg, &label)))
			return err;
		if (label == 0)
			c->stats.label_other += n; /* past the cap: counted, and said */
	}
	err = dcpi_agg_add(c->agg, idx, pid, label, off, ev, n);

	if (err == -ENOSPC) {
		c->stats.lost += n; /* counted, never silent */
		return 0;
	}
	if (!err)
		c->pending += n;
	return err;
}

static int anon_region_image(struct dcpi_collector *c, const char *comm, uint64_t ip)
{
	char path[96];
	uint64_t region = ip >> REGION_SHIFT << REGION_SHIFT;
	struct dcpi_image t = { .path = path, .kind = DCPI_IMAGE_ANON, .text_start = region,
				.text_size = 1u << REGION_SHIFT };

	snprintf(path, sizeof(path), "[anon:%s@0x%" PRIx64 "]", comm, region);
	return dcpi_loadmap_intern(c->lm, &t);
}

/* A user or kernel sample no image describes. */
int dcpi_col_count_unknown(struct dcpi_collector *c, int32_t rpid, uint64_t cg, uint64_t ip,
			 int kernel, unsigned ev)
{
	char comm[32];

	c->stats.unknown++;
	if (c->o.on_unknown)
		c->o.on_unknown(c->o.arg, rpid, ip, kernel);
	if (!kernel && rpid > 0 && c->jm && dcpi_jitmap_comm(c->jm, rpid, comm, sizeof(comm))) {
		/* anonymous code nothing describes: kept per process and region,
		   under its command */
		int idx = anon_region_image(c, comm, ip);

		if (idx < 0)
			return idx;
		return dcpi_col_agg_add(c, idx, rpid, rpid, cg,
					ip - (ip >> REGION_SHIFT << REGION_SHIFT), ev, 1);
	}
	if (c->o.unknown_per_pid && rpid > 0) {
		int idx = unknown_region_image(c, ip);

		if (idx < 0)
			return idx;
		return dcpi_col_agg_add(c, idx, rpid, rpid, cg,
					ip - (ip >> REGION_SHIFT << REGION_SHIFT), ev, 1);
	}
	return dcpi_col_agg_add(c, c->unknown_image, -1, rpid, cg, ip, ev, 1);
}

int dcpi_col_count_sample(struct dcpi_collector *c, const struct dcpi_record *r, int ev)
{
	int kernel = (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	uint64_t off;
	int64_t pid = -1;
	int idx, err;

	if (ev < 0 || (unsigned)ev >= c->events.n)
		return 0; /* not one of ours: cannot happen with our own rings */
	c->stats.samples++;
	c->stats.ev[ev].samples++;
	if (kernel)
		c->stats.kernel++;
	idx = dcpi_loadmap_resolve(c->lm, r->pid, r->ip, kernel, &off);
	if (idx < 0 && !kernel && c->jm) {
		err = dcpi_jitmap_resolve(c->jm, r->pid, r->ip, r->time, &pid, &off);
		if (err < 0)
			return err;
		if (err == 1)
			idx = c->jit_image;
		else if (dcpi_jitmap_defer(c->jm, r->pid, r->ip, r->time, (unsigned)ev))
			return 0; /* named or counted unknown at the next merge */
	}
	if (idx < 0)
		return dcpi_col_count_unknown(c, r->pid, r->cgroup, r->ip, kernel, (unsigned)ev);
	if (idx != c->jit_image && dcpi_col_is_bypid(c, idx, r->pid))
		pid = r->pid;
	return dcpi_col_agg_add(c, idx, pid, r->pid, r->cgroup, off, (unsigned)ev, 1);
}

int dcpi_collector_feed(struct dcpi_collector *c, const struct dcpi_record *r, int ev)
{
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		return dcpi_col_count_sample(c, r, ev);
	case PERF_RECORD_MMAP2:
		return dcpi_loadmap_mmap(c->lm, &r->mmap);
	case PERF_RECORD_COMM:
		if (c->lab && r->pid == r->tid)
			dcpi_labeler_comm(c->lab, r->pid, r->comm, r->exec);
		if (r->exec && c->jm)
			dcpi_jitmap_exec(c->jm, r->pid, r->time);
		return r->exec ? dcpi_loadmap_exec(c->lm, r->pid) : 0;
	case PERF_RECORD_FORK:
		if (c->lab && r->pid == r->tid)
			dcpi_labeler_fork(c->lab, r->pid, r->ppid);
		return dcpi_loadmap_fork(c->lm, r->pid, r->ppid);
	case PERF_RECORD_EXIT:
		if (r->pid != r->tid)
			return 0;
		if (c->lab)
			dcpi_labeler_exit(c->lab, r->pid);
		if (c->jm)
			dcpi_jitmap_exit(c->jm, r->pid);
		return dcpi_loadmap_exit(c->lm, r->pid);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		c->stats.lost += r->lost;
		return 0;
	case PERF_RECORD_THROTTLE:
		c->stats.throttled++;
		return 0;
	case PERF_RECORD_CGROUP:
		if (c->lab)
			dcpi_labeler_cgroup(c->lab, r->cgroup, r->cgroup_path);
		return 0;
	default:
		return 0;
	}
}

int dcpi_collector_forget(struct dcpi_collector *c)
{
	int32_t pin[2] = { c->unknown_image, c->jit_image };
	size_t n;
	int err;

	if (dcpi_agg_nbins(c->agg))
		return 0; /* the aggregate still names images: not now */
	err = dcpi_loadmap_forget(c->lm, pin, 2, &n);
	c->unknown_image = pin[0];
	c->jit_image = pin[1];
	if (n) { /* indices moved: test again when met */
		dcpi_col_stacks_forget(c);
		free(c->bypid_cache);
		c->bypid_cache = NULL;
		c->bypid_cache_len = 0;
	}
	return err;
}
