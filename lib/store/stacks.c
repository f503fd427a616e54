/* Call stacks, aggregated, and their file.  See dcpi/stacks.h; the file
 * format is in dcpiformat(5). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/stacks.h"
#include "internal.h"

#define MAGIC "DCPISTKS"
#define VERSION 2       /* 1: no pid (every stack -1), still read */
#define FILE_MAX ((size_t)1 << 30)
#define STR_MAX 4096

static const char *const end_names[DCPI_STACK_END_N] = {
	"whole", "copy ran out", "no unwind rule", "refused", "cut", "kernel thread",
	"past the cap",
};

const char *dcpi_stack_end_name(unsigned end)
{
	return end < DCPI_STACK_END_N ? end_names[end] : "?";
}

/* ---- the index: three open-addressing tables of (entry + 1) ----------------- */

enum { IX_STACK, IX_IMAGE, IX_LABEL, IX_N };

struct ix {
	uint32_t *slot;
	size_t cap;             /* a power of 2, or 0 */
};

static uint64_t hash_stack(uint32_t label, int64_t pid, unsigned end,
			   const struct dcpi_stack_frame *f, size_t nf)
{
	uint64_t h = dcpi_hash64(((uint64_t)label << 8 | end) + 0x9e3779b97f4a7c15ull);

	h = dcpi_mix64(h ^ (uint64_t)pid);

	for (size_t i = 0; i < nf; i++)
		h = dcpi_mix64(h ^ ((uint64_t)f[i].image << 40) ^ f[i].off) + i;
	return h;
}

static uint64_t hash_image(const struct dcpi_profile *p)
{
	uint64_t h = dcpi_fnv1a(dcpi_hash_bytes(p->path, strlen(p->path)), p->build_id,
				p->build_id_len);

	return dcpi_hash64(h ^ p->size ^ (uint64_t)p->mtime * 31 ^ p->kind ^ p->text_start << 3 ^
			  p->text_size);
}

static uint64_t hash_label(const char *s)
{
	return dcpi_hash64(dcpi_hash_bytes(s, strlen(s)));
}

static int same_image(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	return !strcmp(a->path, b->path) && a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) && a->size == b->size &&
	       a->mtime == b->mtime && a->kind == b->kind && a->text_start == b->text_start &&
	       a->text_size == b->text_size;
}

static uint64_t hash_of(const struct dcpi_stackset *s, int k, uint32_t e)
{
	const struct dcpi_stack *st;

	switch (k) {
	case IX_STACK:
		st = &s->stacks[e];
		return hash_stack(st->label, st->pid, st->end, s->frames + st->first, st->nframes);
	case IX_IMAGE:
		return hash_image(&s->images[e]);
	default:
		return hash_label(s->labels[e]);
	}
}

/* Room for n entries of kind k at most half full. */
static int ix_reserve(struct dcpi_stackset *s, int k, size_t n)
{
	struct ix *x = &((struct ix *)s->index)[k];
	size_t cap = x->cap ? x->cap : 64;
	uint32_t *t;

	while (cap < 2 * n)
		cap *= 2;
	if (cap == x->cap)
		return 0;
	if (!(t = calloc(cap, sizeof(*t))))
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < x->cap; i++) {
		size_t h;

		if (!x->slot[i])
			continue;
		for (h = hash_of(s, k, x->slot[i] - 1) & (cap - 1); t[h]; h = (h + 1) & (cap - 1))
			;
		t[h] = x->slot[i];
	}
	free(x->slot);
	x->slot = t;
	x->cap = cap;
	return 0;
}

static void ix_put(struct dcpi_stackset *s, int k, uint64_t h, uint32_t e)
{
	struct ix *x = &((struct ix *)s->index)[k];

	for (h &= x->cap - 1; x->slot[h]; h = (h + 1) & (x->cap - 1))
		;
	x->slot[h] = e + 1;
}

/* ---- the set ---------------------------------------------------------------- */

int dcpi_stackset_init(struct dcpi_stackset *s, unsigned nevents, const char *const *names,
		       const uint64_t *periods)
{
	uint32_t none;

	memset(s, 0, sizeof(*s));
	if (nevents > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "more than %d events", DCPI_MAX_EVENTS);
	if (!(s->index = calloc(IX_N, sizeof(struct ix))))
		return dcpi_error(ENOMEM, "out of memory");
	for (unsigned e = 0; e < nevents; e++) {
		if (!(s->events[e] = strdup(names[e]))) {
			dcpi_stackset_free(s);
			return dcpi_error(ENOMEM, "out of memory");
		}
		s->periods[e] = periods ? periods[e] : 0;
		s->nevents++;
	}
	if (dcpi_stackset_label(s, "", &none)) { /* label 0: unlabelled */
		dcpi_stackset_free(s);
		return dcpi_error(ENOMEM, "out of memory");
	}
	return 0;
}

static void free_images(struct dcpi_stackset *s)
{
	for (size_t i = 0; i < s->nimages; i++)
		dcpi_profile_free(&s->images[i]);
	s->nimages = 0;
}

void dcpi_stackset_clear(struct dcpi_stackset *s)
{
	struct ix *x = s->index;

	free_images(s);
	for (size_t i = 1; i < s->nlabels; i++)
		free(s->labels[i]);
	s->nstacks = s->nframes = 0;
	for (int k = 0; x && k < IX_N; k++)
		if (x[k].slot)
			memset(x[k].slot, 0, x[k].cap * sizeof(*x[k].slot));
	if (s->nlabels) { /* label 0, unlabelled, stays */
		s->nlabels = 1;
		ix_put(s, IX_LABEL, hash_label(""), 0);
	}
}

void dcpi_stackset_free(struct dcpi_stackset *s)
{
	struct ix *x = s->index;

	free_images(s);
	for (size_t i = 0; i < s->nlabels; i++)
		free(s->labels[i]);
	for (int k = 0; x && k < IX_N; k++)
		free(x[k].slot);
	free(s->index);
	for (unsigned e = 0; e < s->nevents; e++)
		free(s->events[e]);
	free(s->images);
	free(s->labels);
	free(s->stacks);
	free(s->counts);
	free(s->frames);
	free(s->epoch);
	free(s->platform);
	memset(s, 0, sizeof(*s));
}

static int copy_identity(struct dcpi_profile *d, const struct dcpi_profile *p)
{
	dcpi_profile_init(d);
	if (!(d->path = strdup(p->path ? p->path : "")))
		return dcpi_error(ENOMEM, "out of memory");
	if (p->build_id_len > sizeof(d->build_id))
		return dcpi_error(EINVAL, "a build-id of %u bytes", p->build_id_len);
	memcpy(d->build_id, p->build_id, p->build_id_len);
	d->build_id_len = p->build_id_len;
	d->size = p->size;
	d->mtime = p->mtime;
	d->kind = p->kind;
	d->pid = -1;
	d->text_start = p->text_start;
	d->text_size = p->text_size;
	return 0;
}

int dcpi_stackset_image(struct dcpi_stackset *s, const struct dcpi_profile *id, uint32_t *idx)
{
	struct ix *x = &((struct ix *)s->index)[IX_IMAGE];
	struct dcpi_profile key = *id;
	uint64_t h;
	int err;

	if (!key.path)
		key.path = "";
	if (strlen(key.path) > STR_MAX) /* the file could not be read back */
		return dcpi_error(EINVAL, "an image path of more than %d bytes", STR_MAX);
	if (key.kind > DCPI_IMAGE_UNKNOWN || key.build_id_len > sizeof(key.build_id))
		return dcpi_error(EINVAL, "an image of no such kind, or a build-id too long");
	if (x->cap) {
		h = hash_image(&key);
		for (size_t i = h & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1))
			if (same_image(&s->images[x->slot[i] - 1], &key)) {
				*idx = x->slot[i] - 1;
				return 0;
			}
	}
	if (s->nimages >= DCPI_STACK_IMAGES_MAX)
		return dcpi_error(ENOSPC, "more than %u images in a stacks file",
				  DCPI_STACK_IMAGES_MAX);
	if ((err = ix_reserve(s, IX_IMAGE, s->nimages + 1)) ||
	    (err = DCPI_GROW(s->images, s->images_cap, s->nimages + 1, SIZE_MAX, "images")))
		return err;
	if ((err = copy_identity(&s->images[s->nimages], &key))) {
		dcpi_profile_free(&s->images[s->nimages]);
		return err;
	}
	ix_put(s, IX_IMAGE, hash_image(&key), (uint32_t)s->nimages);
	*idx = (uint32_t)s->nimages++;
	return 0;
}

int dcpi_stackset_label(struct dcpi_stackset *s, const char *label, uint32_t *idx)
{
	struct ix *x = &((struct ix *)s->index)[IX_LABEL];
	uint64_t h;
	char *c;
	int err;

	if (!label)
		label = "";
	if (strlen(label) > STR_MAX)
		return dcpi_error(EINVAL, "a label of more than %d bytes", STR_MAX);
	h = hash_label(label);
	if (x->cap)
		for (size_t i = h & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1))
			if (!strcmp(s->labels[x->slot[i] - 1], label)) {
				*idx = x->slot[i] - 1;
				return 0;
			}
	if (s->nlabels >= DCPI_STACK_LABELS_MAX)
		return dcpi_error(ENOSPC, "more than %u labels in a stacks file",
				  DCPI_STACK_LABELS_MAX);
	if ((err = ix_reserve(s, IX_LABEL, s->nlabels + 1)) ||
	    (err = DCPI_GROW(s->labels, s->labels_cap, s->nlabels + 1, SIZE_MAX, "labels")))
		return err;
	if (!(c = strdup(label)))
		return dcpi_error(ENOMEM, "out of memory");
	s->labels[s->nlabels] = c;
	ix_put(s, IX_LABEL, h, (uint32_t)s->nlabels);
	*idx = (uint32_t)s->nlabels++;
	return 0;
}

static int add_count(uint64_t *c, uint64_t n)
{
	if (*c > UINT64_MAX - n)
		return dcpi_error(EOVERFLOW, "a stack's count passes 2^64");
	*c += n;
	return 0;
}

/* Field by field: a frame's padding is not its value. */
static int frames_eq(const struct dcpi_stack_frame *a, const struct dcpi_stack_frame *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].image != b[i].image || a[i].off != b[i].off)
			return 0;
	return 1;
}

/* The index of the stack, made when new while the set has fewer than
 * limit stacks (else -ENOSPC). */
static int find_or_add(struct dcpi_stackset *s, uint32_t label, int64_t pid, unsigned end,
		       const struct dcpi_stack_frame *f, size_t nf, size_t limit, size_t *out)
{
	struct ix *x = &((struct ix *)s->index)[IX_STACK];
	uint64_t h = hash_stack(label, pid, end, f, nf);
	struct dcpi_stack *st;
	size_t cap;
	int err;

	if (x->cap)
		for (size_t i = h & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1)) {
			st = &s->stacks[x->slot[i] - 1];
			if (st->label == label && st->pid == pid && st->end == end && st->nframes == nf &&
			    frames_eq(s->frames + st->first, f, nf)) {
				*out = x->slot[i] - 1;
				return 0;
			}
		}
	if (s->nstacks >= limit || (nf > 1 && s->nframes + nf > DCPI_STACK_FRAMES_MAX))
		return -ENOSPC; /* (a leaf alone is bounded by the stacks' caps) */
	cap = s->stacks_cap;
	if ((err = ix_reserve(s, IX_STACK, s->nstacks + 1)) ||
	    (err = DCPI_GROW(s->frames, s->frames_cap, s->nframes + nf, SIZE_MAX, "frames")) ||
	    (err = DCPI_GROW(s->stacks, s->stacks_cap, s->nstacks + 1, SIZE_MAX, "stacks")))
		return err;
	if (s->stacks_cap != cap) { /* the counts follow the stacks' capacity */
		uint64_t *c = realloc(s->counts, s->stacks_cap * (s->nevents ? s->nevents : 1) *
							 sizeof(*c));

		if (!c) {
			s->stacks_cap = cap;
			return dcpi_error(ENOMEM, "out of memory");
		}
		s->counts = c;
	}
	for (size_t k = 0; k < nf; k++) /* padding zeroed: files and tests compare bytes */
		s->frames[s->nframes + k] = (struct dcpi_stack_frame){ f[k].image, f[k].off };
	s->stacks[s->nstacks] = (struct dcpi_stack){ label, pid, (uint8_t)end, (uint32_t)nf,
						     s->nframes };
	memset(s->counts + s->nstacks * s->nevents, 0, s->nevents * sizeof(*s->counts));
	s->nframes += nf;
	ix_put(s, IX_STACK, h, (uint32_t)s->nstacks);
	*out = s->nstacks++;
	return 0;
}

int dcpi_stackset_add(struct dcpi_stackset *s, uint32_t label, int64_t pid, unsigned end,
		      const struct dcpi_stack_frame *f, size_t nf, unsigned ev, uint64_t n)
{
	static const struct dcpi_stack_frame nowhere = { DCPI_FRAME_UNKNOWN, 0 };
	size_t i;
	int err;

	if (ev >= s->nevents || end >= DCPI_STACK_END_N || label >= s->nlabels || !nf ||
	    pid < -1 || pid > INT32_MAX)
		return dcpi_error(EINVAL, "a stack of no frames, or of no such event, end, label "
				  "or process");
	for (size_t k = 0; k < nf; k++)
		if (f[k].image != DCPI_FRAME_UNKNOWN && f[k].image >= s->nimages)
			return dcpi_error(EINVAL, "a frame of no image of the set");
	if (nf > DCPI_STACK_MAX_FRAMES) {
		nf = DCPI_STACK_MAX_FRAMES;
		end = DCPI_STACK_END_CUT;
	}
	/* past the cap, a stack is counted by its leaf (a quarter more room
	   for those); past that, as "no frame known", one per label and for
	   every process */
	err = find_or_add(s, label, pid, end, f, nf, DCPI_STACKS_MAX, &i);
	if (err == -ENOSPC)
		err = find_or_add(s, label, pid, DCPI_STACK_END_OVERFLOW, f, 1,
				  DCPI_STACKS_MAX + DCPI_STACKS_MAX / 4, &i);
	if (err == -ENOSPC)
		err = find_or_add(s, label, -1, DCPI_STACK_END_OVERFLOW, &nowhere, 1, SIZE_MAX, &i);
	if (err)
		return err;
	return add_count(&s->counts[i * s->nevents + ev], n);
}

/* The event of src's e in dst, added when dst lacks it. */
static int event_in(struct dcpi_stackset *dst, const char *name, uint64_t period, unsigned *out)
{
	for (unsigned e = 0; e < dst->nevents; e++)
		if (!strcmp(dst->events[e], name)) {
			if (dst->periods[e] != period)
				return dcpi_error(EINVAL, "event %s: period %" PRIu64 " here, %" PRIu64
						  " there", name, dst->periods[e], period);
			*out = e;
			return 0;
		}
	if (dst->nevents >= DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "more than %d events", DCPI_MAX_EVENTS);
	if (dst->nstacks) { /* widen the counts: a column of zeros */
		uint64_t *c = calloc(dst->stacks_cap, (dst->nevents + 1) * sizeof(*c));

		if (!c)
			return dcpi_error(ENOMEM, "out of memory");
		for (size_t i = 0; i < dst->nstacks; i++)
			memcpy(c + i * (dst->nevents + 1), dst->counts + i * dst->nevents,
			       dst->nevents * sizeof(*c));
		free(dst->counts);
		dst->counts = c;
	} else if (dst->stacks_cap) {
		uint64_t *c = realloc(dst->counts, dst->stacks_cap * (dst->nevents + 1) * sizeof(*c));

		if (!c)
			return dcpi_error(ENOMEM, "out of memory");
		dst->counts = c;
	}
	if (!(dst->events[dst->nevents] = strdup(name)))
		return dcpi_error(ENOMEM, "out of memory");
	dst->periods[dst->nevents] = period;
	*out = dst->nevents++;
	return 0;
}

int dcpi_stackset_merge(struct dcpi_stackset *dst, const struct dcpi_stackset *src)
{
	struct dcpi_stack_frame f[DCPI_STACK_MAX_FRAMES];
	unsigned ev[DCPI_MAX_EVENTS];
	uint32_t *img = NULL, *lab = NULL;
	int err = 0;

	for (unsigned e = 0; e < src->nevents && !err; e++)
		err = event_in(dst, src->events[e], src->periods[e], &ev[e]);
	if (!err && (!(img = malloc((src->nimages + 1) * sizeof(*img))) ||
		     !(lab = malloc((src->nlabels + 1) * sizeof(*lab)))))
		err = dcpi_error(ENOMEM, "out of memory");
	/* an image or label past dst's caps (or not storable) is not an error:
	   its frames become "no image known", its stacks unlabelled */
	for (size_t i = 0; i < src->nimages && !err; i++)
		if ((err = dcpi_stackset_image(dst, &src->images[i], &img[i])) == -ENOSPC ||
		    err == -EINVAL) {
			img[i] = DCPI_FRAME_UNKNOWN;
			err = 0;
		}
	for (size_t i = 0; i < src->nlabels && !err; i++)
		if ((err = dcpi_stackset_label(dst, src->labels[i], &lab[i])) == -ENOSPC ||
		    err == -EINVAL) {
			lab[i] = 0;
			err = 0;
		}
	for (size_t i = 0; i < src->nstacks && !err; i++) {
		const struct dcpi_stack *st = &src->stacks[i];
		size_t nf = st->nframes < DCPI_STACK_MAX_FRAMES ? st->nframes : DCPI_STACK_MAX_FRAMES;

		for (size_t k = 0; k < nf; k++) {
			f[k] = src->frames[st->first + k];
			if (f[k].image != DCPI_FRAME_UNKNOWN)
				f[k].image = img[f[k].image];
			if (f[k].image == DCPI_FRAME_UNKNOWN)
				f[k].off = 0;
		}
		for (unsigned e = 0; e < src->nevents && !err; e++) {
			uint64_t n = src->counts[i * src->nevents + e];

			if (n)
				err = dcpi_stackset_add(dst, lab[st->label], st->pid, st->end, f, nf,
							ev[e], n);
		}
	}
	free(img);
	free(lab);
	return err;
}

/* ---- the file ----------------------------------------------------------------- */

int dcpi_stackset_encode(const struct dcpi_stackset *s, struct dcpi_buf *out)
{
	size_t start = out->len;
	int err = dcpi_buf_put(out, MAGIC, 8);

	err = err ? err : dcpi_buf_put_varint(out, VERSION);
	err = err ? err : dcpi_buf_put_str(out, s->epoch ? s->epoch : "");
	err = err ? err : dcpi_buf_put_str(out, s->platform ? s->platform : "");
	err = err ? err : dcpi_buf_put_varint(out, s->nevents);
	for (unsigned e = 0; e < s->nevents && !err; e++) {
		err = dcpi_buf_put_str(out, s->events[e]);
		err = err ? err : dcpi_buf_put_varint(out, s->periods[e]);
	}
	err = err ? err : dcpi_buf_put_varint(out, s->nlabels);
	for (size_t i = 0; i < s->nlabels && !err; i++)
		err = dcpi_buf_put_str(out, s->labels[i]);
	err = err ? err : dcpi_buf_put_varint(out, s->nimages);
	for (size_t i = 0; i < s->nimages && !err; i++) {
		const struct dcpi_profile *p = &s->images[i];

		err = dcpi_buf_put_str(out, p->path);
		err = err ? err : dcpi_buf_put_varint(out, p->build_id_len);
		err = err ? err : dcpi_buf_put(out, p->build_id, p->build_id_len);
		err = err ? err : dcpi_buf_put_varint(out, p->size);
		err = err ? err : dcpi_buf_put_varint(out, ((uint64_t)p->mtime << 1) ^
							   (uint64_t)(p->mtime >> 63));
		err = err ? err : dcpi_buf_put_varint(out, p->kind);
		err = err ? err : dcpi_buf_put_varint(out, p->text_start);
		err = err ? err : dcpi_buf_put_varint(out, p->text_size);
	}
	err = err ? err : dcpi_buf_put_varint(out, s->nstacks);
	for (size_t i = 0; i < s->nstacks && !err; i++) {
		const struct dcpi_stack *st = &s->stacks[i];

		err = dcpi_buf_put_varint(out, st->label);
		err = err ? err : dcpi_buf_put_varint(out, ((uint64_t)st->pid << 1) ^
							   (uint64_t)(st->pid >> 63));
		err = err ? err : dcpi_buf_put_varint(out, st->end);
		err = err ? err : dcpi_buf_put_varint(out, st->nframes);
		for (size_t k = 0; k < st->nframes && !err; k++) {
			const struct dcpi_stack_frame *f = &s->frames[st->first + k];

			err = dcpi_buf_put_varint(out, f->image == DCPI_FRAME_UNKNOWN
							  ? 0 : (uint64_t)f->image + 1);
			err = err ? err : dcpi_buf_put_varint(out, f->off);
		}
		for (unsigned e = 0; e < s->nevents && !err; e++)
			err = dcpi_buf_put_varint(out, s->counts[i * s->nevents + e]);
	}
	if (!err)
		err = dcpi_buf_put_u32le(out, (uint32_t)crc32(crc32(0L, NULL, 0), out->data + start,
							     (uInt)(out->len - start)));
	if (err)
		out->len = start;
	return err;
}

/* A decode error: what, at byte pos. */
static int bad(const struct dcpi_cursor *c, const char *what)
{
	return dcpi_error(EBADMSG, "%s at byte %zu", what, c->pos);
}

static int get_max(struct dcpi_cursor *c, const char *what, uint64_t max, uint64_t *v)
{
	size_t at = c->pos;

	if (dcpi_buf_get_varint(c, v))
		return bad(c, "truncated");
	if (*v > max) {
		c->pos = at;
		return dcpi_error(EBADMSG, "%s %" PRIu64 " (at most %" PRIu64 ") at byte %zu", what,
				  *v, max, at);
	}
	return 0;
}

static int get_string(struct dcpi_cursor *c, char **out)
{
	int err = dcpi_buf_get_str(c, out, STR_MAX);

	if (err == -ENOMEM)
		return err; /* not the file's fault: it must not be set aside */
	return err ? bad(c, "truncated or invalid string") : 0;
}

static int get_image(struct dcpi_cursor *c, struct dcpi_stackset *s)
{
	struct dcpi_profile p;
	const uint8_t *id;
	uint64_t n, v;
	uint32_t idx;
	int err;

	dcpi_profile_init(&p);
	if ((err = get_string(c, &p.path)) || (err = get_max(c, "build-id length",
							     sizeof(p.build_id), &n)))
		goto out;
	if (dcpi_buf_get_bytes(c, &id, n)) {
		err = bad(c, "truncated");
		goto out;
	}
	memcpy(p.build_id, id, n);
	p.build_id_len = (uint32_t)n;
	if ((err = get_max(c, "size", UINT64_MAX, &p.size)) ||
	    (err = get_max(c, "mtime", UINT64_MAX, &v)))
		goto out;
	p.mtime = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	if ((err = get_max(c, "image kind", DCPI_IMAGE_UNKNOWN, &n)))
		goto out;
	p.kind = (uint32_t)n;
	if ((err = get_max(c, "text start", UINT64_MAX, &p.text_start)) ||
	    (err = get_max(c, "text size", UINT64_MAX, &p.text_size)))
		goto out;
	if ((err = dcpi_stackset_image(s, &p, &idx)) == 0 && idx != s->nimages - 1)
		err = bad(c, "an image twice");
out:
	dcpi_profile_free(&p);
	return err;
}

static int get_stack(struct dcpi_cursor *c, struct dcpi_stackset *s, uint64_t version)
{
	struct dcpi_stack_frame f[DCPI_STACK_MAX_FRAMES];
	uint64_t label, end, nf, v, n[DCPI_MAX_EVENTS], any = 0, zpid = 1; /* -1 */
	int err;

	if ((err = get_max(c, "label", s->nlabels - 1, &label)) ||
	    (version >= 2 && (err = get_max(c, "pid", (uint64_t)INT32_MAX << 1, &zpid))))
		return err;
	if (zpid & 1 && zpid != 1) /* negative: -1 alone */
		return bad(c, "a pid below -1");
	if ((err = get_max(c, "stack end", DCPI_STACK_END_N - 1, &end)) ||
	    (err = get_max(c, "frames", DCPI_STACK_MAX_FRAMES, &nf)))
		return err;
	if (!nf)
		return bad(c, "a stack of no frames");
	for (size_t k = 0; k < nf; k++) {
		if ((err = get_max(c, "frame image", s->nimages, &v)))
			return err;
		f[k].image = v ? (uint32_t)(v - 1) : DCPI_FRAME_UNKNOWN;
		if ((err = get_max(c, "offset", UINT64_MAX, &f[k].off)))
			return err;
	}
	for (unsigned e = 0; e < s->nevents; e++) {
		if ((err = get_max(c, "count", UINT64_MAX, &n[e])))
			return err;
		any |= n[e];
	}
	if (!any)
		return bad(c, "a stack of no samples");
	for (unsigned e = 0; e < s->nevents && !err; e++)
		if (n[e])
			err = dcpi_stackset_add(s, (uint32_t)label,
						zpid == 1 ? -1 : (int64_t)(zpid >> 1), (unsigned)end,
						f, nf, e, n[e]);
	return err == -EOVERFLOW ? bad(c, "a count past 2^64") : err;
}

int dcpi_stackset_decode(const uint8_t *data, size_t len, struct dcpi_stackset *s)
{
	struct dcpi_cursor c = { data, len, 0 };
	const uint8_t *m;
	char *names[DCPI_MAX_EVENTS] = { NULL };
	uint64_t periods[DCPI_MAX_EVENTS], nev = 0, n, v;
	uint32_t crc, idx;
	int err;

	memset(s, 0, sizeof(*s));
	if (len < 12 || memcmp(data, MAGIC, 8))
		return dcpi_error(EBADMSG, "not a dcpi stacks file");
	crc = (uint32_t)crc32(crc32(0L, NULL, 0), data, (uInt)(len - 4));
	c.pos = len - 4;
	dcpi_buf_get_u32le(&c, &idx);
	if (idx != crc)
		return dcpi_error(EBADMSG, "checksum mismatch");
	c.len = len - 4;
	c.pos = 0;
	dcpi_buf_get_bytes(&c, &m, 8);
	if ((err = get_max(&c, "version", VERSION, &v)))
		return err;
	if (v < 1)
		return bad(&c, "not version 1 or 2");
	char *epoch = NULL, *plat = NULL;

	if ((err = get_string(&c, &epoch)) || (err = get_string(&c, &plat)) ||
	    (err = get_max(&c, "events", DCPI_MAX_EVENTS, &nev)))
		goto out;
	for (unsigned e = 0; e < nev; e++) {
		if ((err = get_string(&c, &names[e])) ||
		    (err = get_max(&c, "period", UINT64_MAX, &periods[e])))
			goto out;
		for (unsigned k = 0; k < e; k++)
			if (!strcmp(names[k], names[e])) {
				err = bad(&c, "an event twice");
				goto out;
			}
	}
	if ((err = dcpi_stackset_init(s, (unsigned)nev, (const char *const *)names, periods)))
		goto out;
	s->epoch = epoch;
	s->platform = plat;
	epoch = plat = NULL;
	if ((err = get_max(&c, "labels", DCPI_STACK_LABELS_MAX, &n)))
		goto out;
	for (uint64_t i = 0; i < n; i++) {
		char *l;

		if ((err = get_string(&c, &l)))
			goto out;
		err = i == 0 && l[0] ? bad(&c, "a first label that is not the empty one")
				     : dcpi_stackset_label(s, l, &idx);
		free(l);
		if (!err && idx != i)
			err = bad(&c, "a label twice");
		if (err)
			goto out;
	}
	if (n == 0) {
		err = bad(&c, "no labels (the first is the empty one)");
		goto out;
	}
	if ((err = get_max(&c, "images", DCPI_STACK_IMAGES_MAX, &n)))
		goto out;
	for (uint64_t i = 0; i < n; i++)
		if ((err = get_image(&c, s)))
			goto out;
	if ((err = get_max(&c, "stacks", DCPI_STACKS_MAX + DCPI_STACKS_MAX / 4 +
					      DCPI_STACK_LABELS_MAX, &n)))
		goto out;
	for (uint64_t i = 0; i < n; i++)
		if ((err = get_stack(&c, s, v)))
			goto out;
	if (c.pos != c.len)
		err = bad(&c, "trailing bytes before the checksum");
out:
	free(epoch);
	free(plat);
	for (unsigned e = 0; e < DCPI_MAX_EVENTS; e++)
		free(names[e]);
	if (err)
		dcpi_stackset_free(s);
	return err;
}

int dcpi_stackset_read(const char *path, struct dcpi_stackset *s)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int err = dcpi_file_read(path, FILE_MAX, &data, &len);

	if (err)
		return err;
	err = dcpi_stackset_decode(data, len, s);
	free(data);
	if (err)
		return dcpi_error_prefix(err, "%s", path);
	return 0;
}

int dcpi_stackset_merge_file(const char *path, const struct dcpi_stackset *s, unsigned mode)
{
	struct dcpi_stackset old;
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct stat st;
	char aside[4200];
	int err;

	if (!lstat(path, &st) && !S_ISREG(st.st_mode))
		err = -EBADMSG; /* not a file of ours: kept aside, as a corrupt one */
	else
		err = dcpi_stackset_read(path, &old);
	if (err == -EBADMSG || err == -EFBIG) { /* kept for a human; a fresh file */
		snprintf(aside, sizeof(aside), "%s.corrupt", path);
		rename(path, aside);
		err = -EBADMSG;
	}
	if (err == -ENOENT || err == -EBADMSG)
		err = dcpi_stackset_init(&old, 0, NULL, NULL);
	else if (err)
		return err; /* unreadable for now (EMFILE, EIO): the next merge retries */
	if (!err && !old.epoch && s->epoch && !(old.epoch = strdup(s->epoch)))
		err = dcpi_error(ENOMEM, "out of memory");
	if (!err && !old.platform && s->platform && !(old.platform = strdup(s->platform)))
		err = dcpi_error(ENOMEM, "out of memory");
	if (!err)
		err = dcpi_stackset_merge(&old, s);
	if (!err)
		err = dcpi_stackset_encode(&old, &b);
	if (!err && b.len > FILE_MAX)
		err = dcpi_error(EFBIG, "%s: would pass %zu bytes", path, FILE_MAX);
	if (!err)
		err = dcpi_file_write_atomic(path, b.data, b.len, mode);
	dcpi_buf_release(&b);
	dcpi_stackset_free(&old);
	return err;
}

int dcpi_stacks_path(char *out, size_t len, const char *platdir, const char *host)
{
	return dcpi_db_epoch_file(out, len, platdir, host, "stacks");
}
