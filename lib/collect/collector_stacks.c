/* The collector's stacks: each sample's call stack walked as it is
 * counted (the loadmap is then the state of the sample's time), interned
 * into the epoch's stack set, and merged into epoch.stacks beside the
 * profiles.  See dcpi/collector.h, dcpi/stacks.h and dcpi/unwind.h.
 *
 * The kernel's part of a stack is its own call chain (ORC-unwound).  The
 * user part is walked from the sampled registers and stack copy with each
 * image's unwind table, opened when a walk first meets the image and
 * compiled from its CFI an FDE at a time as walks reach them
 * (dcpi_unwind_table_open_fd), and kept while the loadmap keeps the
 * image.  An image's file is opened as the loadmap identified it: a
 * regular file (never a FIFO or a device a hostile path names), whose
 * build-id (or, without one, size and mtime) is the mapped image's; any
 * other file is not read, and walks stop at that image (or go on by its
 * frame pointers).  A frame of a caller is its return address less one:
 * inside the call instruction, so in the calling procedure and line. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/stacks.h"
#include "dcpi/stacktops.h"
#include "dcpi/unwind.h"
#include "collector_priv.h"
#include "internal.h"

enum { T_UNTRIED, T_BUILT, T_NONE };

struct col_stacks {
	struct dcpi_stackset set;
	struct dcpi_unwind_table *tables;   /* by loadmap image index */
	uint8_t *tstate;
	uint32_t *img;                      /* loadmap index -> set image + 1 */
	size_t ntables;
	uint32_t *lab;                      /* labeler id -> set label + 1 */
	size_t nlab;
	struct jit_slot {                   /* JIT code (dcpi_jitmap keys) -> set image + 1 */
		int64_t key;
		uint32_t img;
		int pending;                /* the stand-in of frames to resolve */
	} *jit;
	size_t jit_cap, njit;               /* a power of 2, or 0 */
};

/* A frame in JIT code is kept, until the merge, in a stand-in image of
 * its jitmap key: this path, kind anon, a build-id of JIT_MAGIC and the
 * key.  The merge gives each the identity of the key's pseudo-image, as
 * its profiles carry it; a key no longer known keeps the stand-in (its
 * frames are then "JIT code" by address).  A frame the runtime's map does
 * not name yet (node writes it through a buffer) of a process whose map
 * may name it later is kept in a stand-in of the process (JIT_PENDING and
 * its jitmap key: this run of the process, whatever its pid is later; the
 * frame's offset the address) and resolved at the merge, once the maps
 * were read on, as the flat profile's deferred samples are; these
 * stand-ins are never written. */
#define JIT_PATH "[anon: JIT code]"
#define JIT_MAGIC "dcpi-jit"
#define JIT_PENDING "dcpi-jip"

int dcpi_col_stacks_new(struct dcpi_collector *c)
{
	const char *names[DCPI_MAX_EVENTS];
	uint64_t periods[DCPI_MAX_EVENTS];
	int err;

	if (!(c->stk = calloc(1, sizeof(*c->stk))))
		return dcpi_error(ENOMEM, "out of memory");
	for (unsigned e = 0; e < c->events.n; e++) {
		names[e] = c->events.ev[e].name;
		periods[e] = c->events.ev[e].period;
	}
	if ((err = dcpi_stackset_init(&c->stk->set, c->events.n, names, periods))) {
		free(c->stk);
		c->stk = NULL;
	}
	return err;
}

static void drop_tables(struct col_stacks *k)
{
	for (size_t i = 0; i < k->ntables; i++)
		if (k->tstate[i] == T_BUILT)
			dcpi_unwind_table_free(&k->tables[i]);
	free(k->tables);
	free(k->tstate);
	free(k->img);
	k->tables = NULL;
	k->tstate = NULL;
	k->img = NULL;
	k->ntables = 0;
}

void dcpi_col_stacks_free(struct dcpi_collector *c)
{
	if (!c->stk)
		return;
	drop_tables(c->stk);
	free(c->stk->lab);
	free(c->stk->jit);
	dcpi_stackset_free(&c->stk->set);
	free(c->stk);
	c->stk = NULL;
}

void dcpi_col_stacks_forget(struct dcpi_collector *c)
{
	if (c->stk)
		drop_tables(c->stk); /* indices moved */
}

/* Room for loadmap image index idx in the per-image arrays. */
static int reserve_image(struct col_stacks *k, size_t idx)
{
	size_t n = k->ntables ? k->ntables : 64;
	struct dcpi_unwind_table *t;
	uint8_t *s;
	uint32_t *m;

	if (idx < k->ntables)
		return 0;
	while (n <= idx)
		n *= 2;
	if (!(t = realloc(k->tables, n * sizeof(*t))))
		return -ENOMEM;
	k->tables = t;
	if (!(s = realloc(k->tstate, n)))
		return -ENOMEM;
	k->tstate = s;
	if (!(m = realloc(k->img, n * sizeof(*m))))
		return -ENOMEM;
	k->img = m;
	memset(k->tstate + k->ntables, T_UNTRIED, n - k->ntables);
	memset(k->img + k->ntables, 0, (n - k->ntables) * sizeof(*m));
	k->ntables = n;
	return 0;
}

/* Whether fd is the file the loadmap identified as img. */
static int is_image(int fd, const struct stat *st, const struct dcpi_image *img)
{
	if (img->build_id_len)
		return dcpi_buildid_fd_is(fd, img->build_id, img->build_id_len) == 1;
	return (uint64_t)st->st_size == img->size && st->st_mtime == img->mtime;
}

/* Image idx's unwind table, built when first asked; NULL when it has none
 * we may read. */
static struct dcpi_unwind_table *table_of(struct dcpi_collector *c, int idx)
{
	struct col_stacks *k = c->stk;
	const struct dcpi_image *img = idx < 0 ? NULL : dcpi_loadmap_image(c->lm, idx);
	struct stat st;
	int fd;

	if (!img || reserve_image(k, (size_t)idx))
		return NULL; /* (JIT code: no image; its frame pointers) */
	if (k->tstate[idx] == T_UNTRIED) {
		k->tstate[idx] = T_NONE;
		if (img->kind != DCPI_IMAGE_FILE || !img->path || img->path[0] != '/')
			return NULL;
		fd = dcpi_file_open_regular(AT_FDCWD, img->path, 0, &st);
		if (fd < 0)
			return NULL;
		if (is_image(fd, &st, img) &&
		    !dcpi_unwind_table_open_fd(fd, img->path, &k->tables[idx]))
			k->tstate[idx] = T_BUILT;
		close(fd);
	}
	return k->tstate[idx] == T_BUILT ? &k->tables[idx] : NULL;
}

/* The set's image of loadmap image idx (added when new). */
static int set_image(struct dcpi_collector *c, int idx, uint32_t *out)
{
	struct col_stacks *k = c->stk;
	const struct dcpi_image *img = dcpi_loadmap_image(c->lm, idx);
	struct dcpi_profile id;
	int err;

	if (!img)
		return -ENOENT;
	if ((err = reserve_image(k, (size_t)idx)))
		return dcpi_error(err, "out of memory");
	if (k->img[idx]) {
		*out = k->img[idx] - 1;
		return 0;
	}
	dcpi_profile_init(&id);
	id.path = img->path;
	memcpy(id.build_id, img->build_id, img->build_id_len);
	id.build_id_len = img->build_id_len;
	id.size = img->size;
	id.mtime = img->mtime;
	id.kind = img->kind;
	id.text_start = img->text_start;
	id.text_size = img->text_size;
	if ((err = dcpi_stackset_image(&k->set, &id, out)))
		return err;
	k->img[idx] = *out + 1;
	return 0;
}

/* The set's stand-in image of JIT key (see JIT_PATH; pending: of the
 * process of key's frames to resolve at the merge), added when new. */
static int jit_image_of(struct dcpi_collector *c, int64_t key, int pending, uint32_t *out)
{
	struct col_stacks *k = c->stk;
	struct dcpi_profile id;
	size_t i;
	int err;

	if (k->jit_cap)
		for (i = dcpi_hash64((uint64_t)key) & (k->jit_cap - 1); k->jit[i].img;
		     i = (i + 1) & (k->jit_cap - 1))
			if (k->jit[i].key == key && k->jit[i].pending == pending) {
				*out = k->jit[i].img - 1;
				return 0;
			}
	if (2 * (k->njit + 1) > k->jit_cap) {
		size_t cap = k->jit_cap ? 2 * k->jit_cap : 16;
		struct jit_slot *t = calloc(cap, sizeof(*t));

		if (!t)
			return dcpi_error(ENOMEM, "out of memory");
		for (size_t m = 0; m < k->jit_cap; m++) {
			if (!k->jit[m].img)
				continue;
			for (i = dcpi_hash64((uint64_t)k->jit[m].key) & (cap - 1); t[i].img;
			     i = (i + 1) & (cap - 1))
				;
			t[i] = k->jit[m];
		}
		free(k->jit);
		k->jit = t;
		k->jit_cap = cap;
	}
	dcpi_profile_init(&id);
	id.path = (char *)JIT_PATH;
	memcpy(id.build_id, pending ? JIT_PENDING : JIT_MAGIC, 8);
	memcpy(id.build_id + 8, &key, sizeof(key));
	id.build_id_len = 16;
	id.kind = DCPI_IMAGE_ANON;
	if ((err = dcpi_stackset_image(&k->set, &id, out)))
		return err;
	for (i = dcpi_hash64((uint64_t)key) & (k->jit_cap - 1); k->jit[i].img;
	     i = (i + 1) & (k->jit_cap - 1))
		;
	k->jit[i] = (struct jit_slot){ key, *out + 1, pending };
	k->njit++;
	return 0;
}

/* The frame of pc in sample s's process: its image and offset (JIT code:
 * of its key's stand-in image, when the runtime's map names it at the
 * sample's time), or unknown. */
static int frame_of(struct dcpi_collector *c, const struct dcpi_sample *s, uint64_t pc,
		    int kernel, struct dcpi_stack_frame *f, int *idx)
{
	uint64_t off;
	int64_t key;
	int err;

	*idx = dcpi_loadmap_resolve(c->lm, s->pid, pc, kernel, &off);
	f->image = DCPI_FRAME_UNKNOWN;
	f->off = 0;
	if (*idx < 0 && !kernel && c->jm) {
		if ((err = dcpi_jitmap_resolve(c->jm, s->pid, pc, s->time, &key, &off)) < 0)
			return err;
		if (err == 1 && (err = jit_image_of(c, key, 0, &f->image)) == 0) {
			f->off = off;
			return 0;
		}
		if (err == 0 && dcpi_jitmap_pending(c->jm, s->pid, &key) &&
		    (err = jit_image_of(c, key, 1, &f->image)) == 0) {
			f->off = pc; /* resolved at the merge */
			return 0;
		}
		f->image = DCPI_FRAME_UNKNOWN; /* past the set's images: no image known */
		return err == -ENOSPC || err == -EINVAL || err == 0 ? 0 : err;
	}
	if (*idx < 0 || *idx == c->unknown_image)
		return 0;
	if ((err = set_image(c, *idx, &f->image)) == -ENOENT || err == -EINVAL || err == -ENOSPC) {
		f->image = DCPI_FRAME_UNKNOWN; /* an image the set cannot keep: no image known */
		return 0;
	}
	f->off = off;
	return err;
}

/* The set's label of process pid's samples. */
static int label_of(struct dcpi_collector *c, int32_t pid, uint32_t *out)
{
	struct col_stacks *k = c->stk;
	uint32_t id;
	int err;

	*out = 0;
	if (!c->lab || dcpi_labeler_get(c->lab, pid, &id))
		return 0;
	if (id >= k->nlab) {
		size_t n = k->nlab ? k->nlab : 64;
		uint32_t *m;

		while (n <= id)
			n *= 2;
		if (!(m = realloc(k->lab, n * sizeof(*m))))
			return dcpi_error(ENOMEM, "out of memory");
		memset(m + k->nlab, 0, (n - k->nlab) * sizeof(*m));
		k->lab = m;
		k->nlab = n;
	}
	if (!k->lab[id]) {
		err = dcpi_stackset_label(&k->set, dcpi_labeler_label(c->lab, id), out);
		if (err == -ENOSPC || err == -EINVAL)
			return 0; /* past the set's labels: unlabelled */
		if (err)
			return err;
		k->lab[id] = *out + 1;
	}
	*out = k->lab[id] - 1;
	return 0;
}

static unsigned end_of(enum dcpi_unwind_step_result r)
{
	switch (r) {
	case DCPI_UW_STOP_END:
		return DCPI_STACK_END_WHOLE;
	case DCPI_UW_STOP_TRUNCATED:
		return DCPI_STACK_END_COPY;
	case DCPI_UW_STOP_BAD:
		return DCPI_STACK_END_BAD;
	default:
		return DCPI_STACK_END_NORULE;
	}
}

int dcpi_col_stack_count(struct dcpi_collector *c, const struct dcpi_sample *s,
			 const struct dcpi_stack_sample *st, unsigned ev)
{
	struct dcpi_stack_frame f[DCPI_STACK_MAX_FRAMES + 1];
	size_t n = 0;
	int kernel = (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	unsigned end = DCPI_STACK_END_CUT;
	uint32_t label;
	int idx, err, bypid = 0;

	if (!c->stk || ev >= c->events.n)
		return 0;
	c->stats.stack_copies_cut += (s->misc & DCPI_MISC_STACK_CUT) != 0;
	if ((err = label_of(c, s->pid, &label)))
		return err;
	if (kernel) { /* the kernel's chain, its context markers left out */
		for (uint64_t i = 0; i < st->nchain && n < DCPI_STACK_MAX_FRAMES; i++) {
			uint64_t pc = dcpi_stack_chain_ip(st, i);

			if (pc >= (uint64_t)-4095) /* PERF_CONTEXT_* */
				continue;
			/* after the sampled pc, return addresses: less one, the call */
			if ((err = frame_of(c, s, n ? pc - 1 : pc, 1, &f[n], &idx)))
				return err;
			bypid |= dcpi_col_is_bypid(c, idx, s->pid);
			n++;
		}
		if (!n && (err = frame_of(c, s, s->ip, 1, &f[n++], &idx)))
			return err;
	}
	if (st->abi == PERF_SAMPLE_REGS_ABI_NONE) {
		end = DCPI_STACK_END_KERNEL; /* a kernel thread: no user part */
		if (!n && (err = frame_of(c, s, s->ip, kernel, &f[n++], &idx)))
			return err;
	} else {
		struct dcpi_unwind_regs r = { st->ip, st->sp, st->bp };
		uint64_t reach = 0;
		struct dcpi_unwind_stack stk = { st->stack, st->stack_len, st->sp, &reach };

		for (int depth = 0; n < DCPI_STACK_MAX_FRAMES; depth++) {
			struct dcpi_unwind_table *t;
			const struct dcpi_unwind_row *row = NULL;
			/* a caller's pc is its return address less one */
			uint64_t pc = depth ? r.ip - 1 : r.ip;
			enum dcpi_unwind_step_result res;

			if ((err = frame_of(c, s, pc, 0, &f[n], &idx)))
				return err;
			bypid |= dcpi_col_is_bypid(c, idx, s->pid);
			if (f[n].image != DCPI_FRAME_UNKNOWN && (t = table_of(c, idx)))
				row = dcpi_unwind_lookup_off(t, f[n].off);
			n++;
			if ((res = dcpi_unwind_step(row, &r, &stk, 1)) != DCPI_UW_OK) {
				end = end_of(res);
				break;
			}
		}
		/* where this thread's walks stop, for cutting its next copies;
		   a walk that ran out of a copy so cut (at a top another thread
		   of the same id left, say) undoes it */
		if (end == DCPI_STACK_END_WHOLE)
			dcpi_stack_tops_set(c->o.stack_tops, s->tid, reach > r.sp ? reach : r.sp);
		else if (end == DCPI_STACK_END_COPY && (s->misc & DCPI_MISC_STACK_CUT))
			dcpi_stack_tops_drop(c->o.stack_tops, s->tid);
	}
	/* kept per process when an image of it is (dcpid -bypid IMAGE), or the
	   process's label is (-bypid K=V): the processes that ran the image */
	err = dcpi_stackset_add(&c->stk->set, label, bypid ? s->pid : -1, end, f, n, ev, 1);
	if (err == -ENOSPC || err == -EOVERFLOW || err == -EINVAL)
		err = 0; /* counted flat; the stack alone is not kept */
	return err;
}

/* A merge's stacks that could not be written: kept for the next merge
 * when the reason may pass (memory, a full or failing disk), else dropped;
 * said either way.  The profiles' merge goes on regardless. */
static void not_merged(struct dcpi_collector *c, int err)
{
	int keep = err == -ENOMEM || err == -EIO || err == -ENOSPC || err == -EDQUOT ||
		   err == -EMFILE || err == -ENFILE;
	char msg[700];

	snprintf(msg, sizeof(msg), "call stacks %s: %s", keep ? "not merged, kept for the next "
		 "merge" : "dropped", dcpi_errmsg());
	if (c->o.on_warning)
		c->o.on_warning(c->o.arg, msg);
	if (!keep) {
		dcpi_stackset_clear(&c->stk->set);
		if (c->stk->img)
			memset(c->stk->img, 0, c->stk->ntables * sizeof(*c->stk->img));
		if (c->stk->jit)
			memset(c->stk->jit, 0, c->stk->jit_cap * sizeof(*c->stk->jit));
		c->stk->njit = 0;
	}
}

/* Whether set image i is a JIT stand-in (1: of a key; 2: of the frames of
 * the process of the key to resolve), and its key. */
static int jit_stand_in(const struct dcpi_stackset *s, size_t i, int64_t *key)
{
	const struct dcpi_profile *p = &s->images[i];

	if (p->kind != DCPI_IMAGE_ANON || p->build_id_len != 16 || strcmp(p->path, JIT_PATH))
		return 0;
	memcpy(key, p->build_id + 8, sizeof(*key));
	return !memcmp(p->build_id, JIT_MAGIC, 8) ? 1 : !memcmp(p->build_id, JIT_PENDING, 8) ? 2 : 0;
}

/* Each frame kept to resolve at the merge, resolved now (the maps read on
 * by the merge's settle): into its key's stand-in, or no image known. */
static int jit_resolve_pending(struct dcpi_collector *c)
{
	struct dcpi_stackset *s = &c->stk->set;
	size_t nimages = s->nimages;
	unsigned char *pend = calloc(nimages + 1, 1);
	int any = 0, err = 0;
	int64_t key;

	if (!pend)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < nimages; i++)
		any |= pend[i] = jit_stand_in(s, i, &key) == 2;
	for (size_t i = 0; any && !err && i < s->nframes; i++) {
		struct dcpi_stack_frame *f = &s->frames[i];
		uint64_t off;
		uint32_t img;
		int hit;

		if (f->image == DCPI_FRAME_UNKNOWN || f->image >= nimages || !pend[f->image])
			continue;
		jit_stand_in(s, f->image, &key);
		/* the code its map says is there now, the map read to its end */
		hit = dcpi_jitmap_resolve_key(c->jm, key, f->off, &key, &off);
		if (hit < 0)
			err = hit;
		else if (hit == 1 && !(err = jit_image_of(c, key, 0, &img)))
			*f = (struct dcpi_stack_frame){ img, off };
		else if (!err || err == -ENOSPC || err == -EINVAL)
			*f = (struct dcpi_stack_frame){ DCPI_FRAME_UNKNOWN, 0 }, err = 0;
	}
	free(pend);
	return err;
}

/* The set, each JIT stand-in image given its key's pseudo-image identity,
 * into out (made here).  A key no longer known keeps its stand-in. */
static int jit_named(struct dcpi_collector *c, struct dcpi_stackset *out)
{
	const struct dcpi_stackset *s = &c->stk->set;
	struct dcpi_stackset tmp = *s;
	struct dcpi_profile *ids = malloc((s->nimages + 1) * sizeof(*ids));
	unsigned char *own = calloc(s->nimages + 1, 1);
	int err = ids && own ? 0 : dcpi_error(ENOMEM, "out of memory");

	for (size_t i = 0; !err && i < s->nimages; i++) {
		int64_t key;

		ids[i] = s->images[i];
		if (jit_stand_in(s, i, &key) == 2)
			ids[i].kind = DCPI_IMAGE_UNKNOWN + 1; /* refused: not written (no frame
								  names it now) */
		else if (jit_stand_in(s, i, &key) == 1) {
			struct dcpi_profile p;

			if (!(err = dcpi_col_jit_identity(c, key, &p))) {
				ids[i] = p;
				own[i] = 1;
			} else if (err != -ENOMEM) {
				err = 0; /* gone, or not stored: JIT code by address */
			}
		}
	}
	tmp.images = ids;
	if (!err)
		err = dcpi_stackset_init(out, s->nevents, (const char *const *)s->events, s->periods);
	if (!err && (err = dcpi_stackset_merge(out, &tmp)))
		dcpi_stackset_free(out);
	for (size_t i = 0; ids && own && i < s->nimages; i++)
		if (own[i])
			dcpi_profile_free(&ids[i]);
	free(ids);
	free(own);
	return err;
}

int dcpi_col_stacks_merge(struct dcpi_collector *c, const char *platdir)
{
	struct col_stacks *k = c->stk;
	struct dcpi_stackset named;
	char path[4200];
	int err;

	if (!k)
		return 0;
	if (k->lab) /* the labeler may renumber at its reap, after a merge */
		memset(k->lab, 0, k->nlab * sizeof(*k->lab));
	if (!k->set.nstacks)
		return 0;
	free(k->set.epoch);
	free(k->set.platform);
	k->set.epoch = strdup(c->stats.epoch);
	k->set.platform = strdup(c->stats.platform);
	if (!k->set.epoch || !k->set.platform)
		err = dcpi_error(ENOMEM, "out of memory");
	else if (!(err = dcpi_stacks_path(path, sizeof(path), platdir, c->stats.platform))) {
		if (k->njit && !(err = jit_resolve_pending(c)) && !(err = jit_named(c, &named))) {
			named.epoch = k->set.epoch;
			named.platform = k->set.platform;
			err = dcpi_stackset_merge_file(path, &named, c->o.filemode ? c->o.filemode
										 : 0600);
			named.epoch = named.platform = NULL;
			dcpi_stackset_free(&named);
		} else if (!k->njit) {
			err = dcpi_stackset_merge_file(path, &k->set, c->o.filemode ? c->o.filemode
										   : 0600);
		}
	}
	if (err) {
		not_merged(c, err);
		return 0;
	}
	dcpi_stackset_clear(&k->set);
	if (k->img)
		memset(k->img, 0, k->ntables * sizeof(*k->img));
	if (k->jit) /* the stand-ins went with the set */
		memset(k->jit, 0, k->jit_cap * sizeof(*k->jit));
	k->njit = 0;
	return 0;
}
