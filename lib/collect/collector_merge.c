/* The collector's merge: the aggregate into profiles, JIT code into
 * pseudo-images, one sync a merge.  See dcpi/collector.h and
 * collector_priv.h. */
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

/* ---- merge -------------------------------------------------------------- */

static void set_identity(struct dcpi_collector *c, const struct dcpi_image *img, int64_t pid,
			 uint32_t label, struct dcpi_profile *p)
{
	p->path = strdup(img->path);
	p->label = c->lab ? strdup(dcpi_labeler_label(c->lab, label)) : NULL;
	memcpy(p->build_id, img->build_id, img->build_id_len);
	p->build_id_len = img->build_id_len;
	p->size = img->size;
	p->mtime = img->mtime;
	p->epoch = strdup(c->stats.epoch);
	p->platform = strdup(c->stats.platform);
	p->kind = img->kind;
	p->pid = pid;
	p->text_start = img->text_start;
	p->text_size = img->text_size;
	p->nevents = c->events.n;
	for (unsigned e = 0; e < c->events.n; e++) {
		const struct dcpi_stats_event *se = &c->stats.ev[e];

		p->events[e].name = strdup(c->events.ev[e].name);
		p->events[e].period = c->events.ev[e].period;
		p->events[e].monitored_ppm = se->time_enabled
			? (uint32_t)((double)se->time_running / se->time_enabled * 1e6 + 0.5)
			: 1000000;
	}
}

/* A JIT bin (pid holds the jitmap key): its pseudo-image stored in the
 * database (by content, or replacing its process's grown image: see
 * dcpi_jitmap_image_next), the profile named after it, per process. */
static int jit_identity(struct dcpi_collector *c, int64_t key, struct dcpi_profile *p,
			struct dcpi_file_batch *fb)
{
	struct dcpi_buf elf = DCPI_BUF_INIT;
	uint8_t id[DCPI_SHA1_LEN];
	char path[128];
	int32_t pid;
	uint64_t size = 0;
	int replace = 0;
	int err = dcpi_jitmap_image_next(c->jm, key, &elf, id, path, sizeof(path), &pid, &size,
					 &replace);
	unsigned dmode = c->o.dirmode ? c->o.dirmode : 0700;
	unsigned fmode = c->o.filemode ? c->o.filemode : 0600;

	if (err == 0 && replace)
		err = dcpi_db_replace_image_batch(c->db, id, sizeof(id), elf.data, elf.len, dmode,
						  fmode, fb);
	else if (err == 0)
		err = dcpi_db_put_image_batch(c->db, id, sizeof(id), elf.data, elf.len, dmode,
					      fmode, fb);
	else if (err == 1) /* stored already, whole */
		err = 0;
	if (!err) {
		free(p->path);
		p->path = strdup(path);
		memcpy(p->build_id, id, sizeof(id));
		p->build_id_len = sizeof(id);
		p->size = size;
		p->pid = pid;
		if (!p->path)
			err = dcpi_error(ENOMEM, "out of memory");
	}
	dcpi_buf_release(&elf);
	return err;
}

int dcpi_col_jit_identity(struct dcpi_collector *c, int64_t key, struct dcpi_profile *p)
{
	const struct dcpi_image *img = c->jm ? dcpi_loadmap_image(c->lm, c->jit_image) : NULL;
	struct dcpi_file_batch fb;
	size_t done = 0;
	int err;

	dcpi_profile_init(p);
	if (!img)
		return -ENOENT;
	set_identity(c, img, key, 0, p);
	dcpi_file_batch_init(&fb);
	err = jit_identity(c, key, p, &fb);
	if (!err && dcpi_file_batch_pending(&fb) &&
	    !(err = dcpi_file_batch_commit(&fb, &done)))
		dcpi_jitmap_image_stored(c->jm, key);
	dcpi_file_batch_release(&fb);
	if (err)
		dcpi_profile_free(p);
	return err;
}

static int count_profiles(const char *platdir, uint64_t *n)
{
	char **v;
	size_t k;
	int err = dcpi_db_profiles(platdir, &v, &k);

	if (err)
		return err;
	dcpi_db_names_free(v, k);
	*n = k;
	return 0;
}

/* A JIT sample kept for later (dcpi_jitmap_defer), now named or not. */
static int settled(void *arg, int32_t pid, uint64_t ip, unsigned ev, int hit, int64_t key,
		   uint64_t off)
{
	struct dcpi_collector *c = arg;

	/* (a deferred sample's cgroup is not kept: its process's is used) */
	return hit ? dcpi_col_agg_add(c, c->jit_image, key, pid, 0, off, ev, 1) :
		     dcpi_col_count_unknown(c, pid, 0, ip, 0, ev);
}

/* The bins whose profiles wait in the batch, and the batch. */
struct pending {
	struct dcpi_file_batch fb;
	struct written {
		size_t bin;
		int idx;
		size_t file;         /* its profile's place in the batch (which
					also holds pseudo-images) */
	} *w;
	size_t n, cap;
};

/* Commit the batch; the bins now on disk are cleared (and on_merged told),
 * the others keep their samples for the next merge. */
static int commit(struct dcpi_collector *c, struct pending *pd)
{
	size_t done = 0;
	int err;

	if (!dcpi_file_batch_pending(&pd->fb))
		return 0;
	if (c->o.on_commit)
		c->o.on_commit(c->o.arg, dcpi_file_batch_pending(&pd->fb));
	err = dcpi_file_batch_commit(&pd->fb, &done);
	for (size_t i = 0; i < pd->n; i++) {
		const struct written *w = &pd->w[i];

		if (w->file >= done)
			continue; /* not in place: kept for the next merge */
		if (w->idx == c->jit_image) { /* its pseudo-image, before it, too */
			int idx;
			int64_t key;
			uint32_t label;

			dcpi_agg_bin_key(c->agg, w->bin, &idx, &key, &label);
			dcpi_jitmap_image_stored(c->jm, key);
		}
		dcpi_agg_bin_clear(c->agg, w->bin);
		if (c->o.on_merged && w->idx != c->jit_image)
			c->o.on_merged(c->o.arg, w->idx, dcpi_loadmap_image(c->lm, w->idx));
	}
	pd->n = 0;
	return err;
}

/* A JIT pseudo-image that cannot be stored (a full disk, a .build-id we
 * may not write): its samples are counted as unknown, the merge goes on. */
static void jit_not_stored(struct dcpi_collector *c, size_t b, struct dcpi_profile *p)
{
	char msg[600];

	snprintf(msg, sizeof(msg), "a JIT pseudo-image was not stored, its samples "
		 "are counted as unknown: %s", dcpi_errmsg());
	if (!dcpi_agg_bin_rows(c->agg, b, p))
		for (uint32_t e = 0; e < p->nevents; e++)
			c->stats.unknown += p->events[e].total;
	if (c->o.on_warning)
		c->o.on_warning(c->o.arg, msg);
	dcpi_agg_bin_clear(c->agg, b);
}

/* Bin b's profile into the batch (committing first if its file is
 * pending there already). */
static int merge_bin(struct dcpi_collector *c, const char *platdir, size_t b, struct pending *pd)
{
	unsigned mode = c->o.filemode ? c->o.filemode : 0600;
	struct dcpi_profile p;
	const struct dcpi_image *img;
	int idx, err = 0;
	int64_t pid;
	uint32_t label;

	dcpi_agg_bin_key(c->agg, b, &idx, &pid, &label);
	img = dcpi_loadmap_image(c->lm, idx);
	if (!img || dcpi_agg_bin_nrows(c->agg, b) == 0)
		return 0;
	dcpi_profile_init(&p);
	set_identity(c, img, pid, label, &p);
	if (idx == c->jit_image)
		err = jit_identity(c, pid, &p, &pd->fb);
	if (err == -ENOENT) { /* cannot happen: keys live until a full merge */
		c->stats.lost += dcpi_agg_bin_nrows(c->agg, b);
		dcpi_agg_bin_clear(c->agg, b);
		err = 0;
	} else if (err && err != -ENOMEM && idx == c->jit_image) {
		jit_not_stored(c, b, &p);
		err = 0;
	} else if (!err && !(err = dcpi_agg_bin_rows(c->agg, b, &p)) &&
		   !(err = DCPI_GROW(pd->w, pd->cap, pd->n + 1, SIZE_MAX, "profiles"))) {
		err = dcpi_db_merge_profile_batch(platdir, &p, mode, &pd->fb);
		if (err == -EAGAIN && !(err = commit(c, pd)))
			err = dcpi_db_merge_profile_batch(platdir, &p, mode, &pd->fb);
		if (!err)
			pd->w[pd->n++] = (struct written){ b, idx,
							   dcpi_file_batch_pending(&pd->fb) - 1 };
	}
	dcpi_profile_free(&p);
	return err;
}

int dcpi_collector_merge(struct dcpi_collector *c, const char *platdir)
{
	unsigned mode = c->o.filemode ? c->o.filemode : 0600;
	struct pending pd = { .w = NULL };
	char spath[4096];
	int err = c->jm ? dcpi_jitmap_settle(c->jm, settled, c) : 0, cerr;

	/* The profiles (and the JIT pseudo-images they name, each added
	 * before its profile) are written unsynced, then committed together:
	 * one sync for the merge, each file renamed into place only once its
	 * data is on disk (dcpi_file_batch_commit).  Each bin is cleared once
	 * its file is in place, so a merge that fails half way (a full disk)
	 * neither loses nor double-counts: the next retries what is left. */
	dcpi_file_batch_init(&pd.fb);
	for (size_t b = 0; b < dcpi_agg_nbins(c->agg) && !err; b++)
		err = merge_bin(c, platdir, b, &pd);
	cerr = commit(c, &pd); /* what was written before a failure, too */
	if (!err)
		err = cerr;
	dcpi_file_batch_release(&pd.fb);
	free(pd.w);
	if (!err) /* after the profiles: a crash between loses only stacks; a
		     failure is said and never blocks the profiles' merge */
		err = dcpi_col_stacks_merge(c, platdir);
	if (!err) /* the same for the value profile */
		err = dcpi_col_vprof_merge(c, platdir);
	if (err)
		return err; /* keep the aggregate: the next merge retries */
	dcpi_agg_clear(c->agg);
	if (c->jm)
		dcpi_jitmap_reap(c->jm); /* no bin names an exited process's key now */
	if (c->lab) { /* nor one of its labels; the live ones read again */
		dcpi_labeler_reap(c->lab);
		dcpi_labeler_refresh(c->lab);
	}
	c->pending = 0;
	c->stats.updated = (int64_t)time(NULL);
	if (c->lab)
		c->stats.label_values = dcpi_labeler_count(c->lab);
	count_profiles(platdir, &c->stats.images);
	if ((err = dcpi_db_stats_path(spath, sizeof(spath), platdir, c->stats.platform)))
		return err;
	/* after the profiles: a crash in between leaves epoch.stats behind
	 * them, which dcpid's recovery recounts (dcpi_stats_recover) */
	return dcpi_stats_write(spath, &c->stats, mode);
}

