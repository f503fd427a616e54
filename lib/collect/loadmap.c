/* The loadmap: images, processes and their executable mappings, and the
 * per-sample resolve().  See dcpi/loadmap.h and loadmap_priv.h.
 *
 * resolve() runs for every sample, so it costs a cached pointer compare
 * (or one hash-chain walk) plus a binary search over one process's
 * executable mappings; nothing on that path allocates once a pid is known.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dcpi/error.h"
#include "dcpi/loadmap.h"
#include "internal.h"
#include "loadmap_priv.h"

/* ---- hashing and the index set ----------------------------------------- */

uint64_t dcpi_lm_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int64_t dcpi_lm_set_find(const struct lm_set *s, uint64_t hash,
			 int (*eq)(const void *ctx, size_t idx), const void *ctx)
{
	size_t mask = s->cap - 1, i;

	if (s->cap == 0)
		return -1;
	for (i = hash & mask; s->slots[i].idx1 != 0; i = (i + 1) & mask)
		if (s->slots[i].hash == hash && eq(ctx, s->slots[i].idx1 - 1))
			return (int64_t)s->slots[i].idx1 - 1;
	return -1;
}

static void set_put(struct lm_slot *slots, size_t cap, uint64_t hash, uint32_t idx1)
{
	size_t mask = cap - 1, i;

	for (i = hash & mask; slots[i].idx1 != 0; i = (i + 1) & mask)
		;
	slots[i].hash = hash;
	slots[i].idx1 = idx1;
}

/* Keep the load at most 1/2 so probe runs stay short. */
static int set_grow(struct lm_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i;
	struct lm_slot *slots;

	if (cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->slots[i].idx1)
			set_put(slots, cap, s->slots[i].hash, s->slots[i].idx1);
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int dcpi_lm_set_add(struct lm_set *s, uint64_t hash, size_t idx)
{
	if (idx >= UINT32_MAX)
		return -ENOSPC;
	if ((s->n + 1) * 2 > s->cap && set_grow(s) < 0)
		return -ENOMEM;
	set_put(s->slots, s->cap, hash, (uint32_t)idx + 1);
	s->n++;
	return 0;
}

void dcpi_lm_set_free(struct lm_set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* ---- images ------------------------------------------------------------ */

static uint64_t image_hash(const struct dcpi_image *im)
{
	uint64_t h = dcpi_lm_hash(LM_HASH_INIT, &im->kind, sizeof(im->kind));

	h = dcpi_lm_hash(h, im->path, strlen(im->path));
	if (im->build_id_len > 0)
		return dcpi_lm_hash(h, im->build_id, im->build_id_len);
	h = dcpi_lm_hash(h, &im->size, sizeof(im->size));
	return dcpi_lm_hash(h, &im->mtime, sizeof(im->mtime));
}

struct image_key {
	const struct dcpi_loadmap *lm;
	const struct dcpi_image *tmpl;
};

static int image_eq(const void *ctx, size_t idx)
{
	const struct image_key *k = ctx;
	const struct dcpi_image *a = k->tmpl, *b = k->lm->images[idx];

	if (a->kind != b->kind || a->build_id_len != b->build_id_len || strcmp(a->path, b->path))
		return 0;
	if (a->build_id_len > 0)
		return memcmp(a->build_id, b->build_id, a->build_id_len) == 0;
	return a->size == b->size && a->mtime == b->mtime;
}

int dcpi_lm_image_find(const struct dcpi_loadmap *lm, const struct dcpi_image *tmpl)
{
	struct image_key k = { lm, tmpl };

	return (int)dcpi_lm_set_find(&lm->image_set, image_hash(tmpl), image_eq, &k);
}

static int images_reserve(struct dcpi_loadmap *lm)
{
	if (lm->nimages >= LM_IMAGES_MAX)
		return dcpi_error(ENOSPC, "more than %u images", LM_IMAGES_MAX);
	return DCPI_GROW(lm->images, lm->images_cap, lm->nimages + 1, LM_IMAGES_MAX, "images");
}

static struct dcpi_image *image_copy(const struct dcpi_image *tmpl)
{
	struct dcpi_image *im = malloc(sizeof(*im));

	if (!im)
		return NULL;
	*im = *tmpl;
	im->path = strdup(tmpl->path);
	if (!im->path) {
		free(im);
		return NULL;
	}
	return im;
}

int dcpi_loadmap_intern(struct dcpi_loadmap *lm, const struct dcpi_image *tmpl)
{
	struct dcpi_image *im;
	int idx, rc;

	if (!tmpl->path || tmpl->build_id_len > DCPI_BUILD_ID_MAX)
		return dcpi_error(EINVAL, "image without path or with an over-long build-id");
	idx = dcpi_lm_image_find(lm, tmpl);
	if (idx >= 0)
		return idx;
	rc = images_reserve(lm);
	if (rc < 0)
		return rc;
	im = image_copy(tmpl);
	if (!im)
		return dcpi_error(ENOMEM, "out of memory for image %s", tmpl->path);
	if (dcpi_lm_set_add(&lm->image_set, image_hash(im), lm->nimages) < 0) {
		free(im->path);
		free(im);
		return dcpi_error(ENOMEM, "out of memory for image %s", tmpl->path);
	}
	lm->images[lm->nimages] = im;
	return (int)lm->nimages++;
}

const struct dcpi_image *dcpi_loadmap_image(const struct dcpi_loadmap *lm, int index)
{
	if (index < 0 || (size_t)index >= lm->nimages)
		return NULL;
	return lm->images[index];
}

size_t dcpi_loadmap_nimages(const struct dcpi_loadmap *lm)
{
	return lm->nimages;
}

/* ---- lifecycle ----------------------------------------------------------- */

struct dcpi_loadmap *dcpi_loadmap_new(const char *procroot)
{
	struct dcpi_loadmap *lm = calloc(1, sizeof(*lm));

	if (!lm)
		return NULL;
	lm->procroot = strdup(procroot ? procroot : "/proc");
	lm->sysfs = strdup("/sys");
	lm->kernel_image = DCPI_NO_IMAGE;
	lm->kmods.pid = -1;
	if (!lm->procroot || !lm->sysfs) {
		dcpi_loadmap_free(lm);
		return NULL;
	}
	return lm;
}

int dcpi_loadmap_set_sysfs(struct dcpi_loadmap *lm, const char *sysfs)
{
	char *s = strdup(sysfs);

	if (!s)
		return dcpi_error(ENOMEM, "out of memory");
	free(lm->sysfs);
	lm->sysfs = s;
	return 0;
}

static void proc_free(struct lm_proc *p)
{
	free(p->maps);
	free(p);
}

void dcpi_loadmap_free(struct dcpi_loadmap *lm)
{
	size_t i;

	if (!lm)
		return;
	for (i = 0; i < lm->nbuckets; i++) {
		struct lm_proc *p = lm->buckets[i], *next;
		for (; p; p = next) {
			next = p->next;
			proc_free(p);
		}
	}
	for (i = 0; i < lm->nimages; i++) {
		free(lm->images[i]->path);
		free(lm->images[i]);
	}
	free(lm->images);
	dcpi_lm_set_free(&lm->image_set);
	dcpi_lm_idents_free(lm);
	free(lm->buckets);
	free(lm->kmods.maps);
	free(lm->procroot);
	free(lm->sysfs);
	free(lm);
}

/* ---- processes ------------------------------------------------------------ */

static size_t pid_bucket(const struct dcpi_loadmap *lm, int32_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (lm->nbuckets - 1);
}

struct lm_proc *dcpi_lm_proc_find(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p;

	if (lm->last && lm->last->pid == pid)
		return lm->last;
	if (lm->nbuckets == 0)
		return NULL;
	for (p = lm->buckets[pid_bucket(lm, pid)]; p; p = p->next)
		if (p->pid == pid)
			return lm->last = p;
	return NULL;
}

static int buckets_grow(struct dcpi_loadmap *lm)
{
	size_t n = lm->nbuckets ? lm->nbuckets * 2 : 256, i, old = lm->nbuckets;
	struct lm_proc **b = calloc(n, sizeof(*b)), **oldb = lm->buckets;

	if (!b)
		return -ENOMEM;
	lm->buckets = b;
	lm->nbuckets = n;
	for (i = 0; i < old; i++) {
		struct lm_proc *p = oldb[i], *next;
		for (; p; p = next) {
			size_t h = pid_bucket(lm, p->pid);
			next = p->next;
			p->next = b[h];
			b[h] = p;
		}
	}
	free(oldb);
	return 0;
}

/* A new empty process; the caller knows pid is not in the table. */
struct lm_proc *dcpi_lm_proc_add(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p;
	size_t h;

	if (lm->nprocs >= LM_PROCS_MAX) {
		dcpi_error(ENOSPC, "more than %u processes", LM_PROCS_MAX);
		return NULL;
	}
	if (lm->nprocs >= lm->nbuckets && buckets_grow(lm) < 0) {
		dcpi_error(ENOMEM, "out of memory for processes");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		dcpi_error(ENOMEM, "out of memory for process %d", (int)pid);
		return NULL;
	}
	p->pid = pid;
	h = pid_bucket(lm, pid);
	p->next = lm->buckets[h];
	lm->buckets[h] = p;
	lm->nprocs++;
	return lm->last = p;
}

static struct lm_proc *proc_get(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p = dcpi_lm_proc_find(lm, pid);

	return p ? p : dcpi_lm_proc_add(lm, pid);
}

/* The process, looked up in procroot the first time it is met. */
static struct lm_proc *proc_get_lazy(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p = dcpi_lm_proc_find(lm, pid);

	if (p)
		return p;
	p = dcpi_lm_proc_add(lm, pid);
	if (!p)
		return NULL;
	lm->lazy_scans++;
	if (dcpi_lm_scan_into(lm, p) < 0)
		p->dead = p->unknown = 1;
	return p;
}

void dcpi_loadmap_reap(struct dcpi_loadmap *lm)
{
	size_t i;

	for (i = 0; i < lm->nbuckets; i++) {
		struct lm_proc **pp = &lm->buckets[i], *p;
		while ((p = *pp) != NULL) {
			if (!p->dead) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			proc_free(p);
			lm->nprocs--;
		}
	}
	lm->last = NULL;
}

/* ---- forgetting images ---------------------------------------------------- */

static void maps_mark(const struct lm_proc *p, int32_t *map)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].image >= 0)
			map[p->maps[i].image] = 0;
}

static void maps_remap(struct lm_proc *p, const int32_t *map)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].image >= 0)
			p->maps[i].image = map[p->maps[i].image];
}

static int32_t remap_one(int32_t idx, const int32_t *map)
{
	return idx >= 0 ? map[idx] : idx;
}

int dcpi_loadmap_forget(struct dcpi_loadmap *lm, int32_t *pinned, size_t npinned,
			size_t *forgotten)
{
	int32_t *map = malloc((lm->nimages ? lm->nimages : 1) * sizeof(*map));
	size_t k = 0, n = lm->nimages;
	int err;

	*forgotten = 0;
	if (!map)
		return dcpi_error(ENOMEM, "out of memory forgetting images");
	/* mark: -1 unused, 0 used; then the new indices, in the old order */
	for (size_t i = 0; i < n; i++)
		map[i] = -1;
	for (size_t b = 0; b < lm->nbuckets; b++)
		for (const struct lm_proc *p = lm->buckets[b]; p; p = p->next)
			maps_mark(p, map);
	maps_mark(&lm->kmods, map);
	if (lm->kernel_image >= 0)
		map[lm->kernel_image] = 0;
	for (size_t i = 0; i < npinned; i++)
		if (pinned[i] >= 0)
			map[pinned[i]] = 0;
	for (size_t i = 0; i < n; i++) {
		if (map[i] < 0) {
			free(lm->images[i]->path);
			free(lm->images[i]);
			continue;
		}
		map[i] = (int32_t)k;
		lm->images[k++] = lm->images[i];
	}
	lm->nimages = k;
	*forgotten = n - k;
	lm->forgotten += n - k;
	for (size_t b = 0; b < lm->nbuckets; b++)
		for (struct lm_proc *p = lm->buckets[b]; p; p = p->next)
			maps_remap(p, map);
	maps_remap(&lm->kmods, map);
	lm->kernel_image = remap_one(lm->kernel_image, map);
	for (size_t i = 0; i < npinned; i++)
		pinned[i] = remap_one(pinned[i], map);
	lm->last = NULL;
	err = dcpi_lm_idents_remap(lm, map);
	dcpi_lm_set_free(&lm->image_set);
	for (size_t i = 0; i < k && !err; i++)
		if (dcpi_lm_set_add(&lm->image_set, image_hash(lm->images[i]), i) < 0)
			err = dcpi_error(ENOMEM, "out of memory for the image set");
	free(map);
	return err;
}

/* ---- mappings ------------------------------------------------------------- */

/* The first mapping whose end is above addr (ends are sorted too, since
 * mappings are sorted and disjoint). */
static size_t maps_first_end_above(const struct lm_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int maps_reserve(struct lm_proc *p, size_t extra)
{
	if (extra > LM_MAPS_MAX || p->nmaps > LM_MAPS_MAX - extra)
		return dcpi_error(ENOSPC, "process %d: more than %u mappings", (int)p->pid,
				  LM_MAPS_MAX);
	return DCPI_GROW(p->maps, p->cap, p->nmaps + extra, LM_MAPS_MAX, "mappings");
}

/* Replace maps[i, j) with the k entries of repl. */
static int maps_splice(struct lm_proc *p, size_t i, size_t j, const struct lm_map *repl,
		       size_t k)
{
	int rc;

	if (k == 0 && i == j)
		return 0; /* nothing to do, and maps may still be NULL */
	if (k > j - i) {
		rc = maps_reserve(p, k - (j - i));
		if (rc < 0)
			return rc;
	}
	memmove(p->maps + i + k, p->maps + j, (p->nmaps - j) * sizeof(*p->maps));
	memcpy(p->maps + i, repl, k * sizeof(*repl));
	p->nmaps = p->nmaps - (j - i) + k;
	return 0;
}

int dcpi_lm_place(struct lm_proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		  int32_t image)
{
	size_t i = maps_first_end_above(p, start), j = i, k = 0;
	struct lm_map repl[3];

	while (j < p->nmaps && p->maps[j].start < end)
		j++;
	if (i < j && p->maps[i].start < start) {
		repl[k] = p->maps[i];
		repl[k++].end = start;
	}
	if (image >= 0)
		repl[k++] = (struct lm_map){ start, end, pgoff, image };
	if (i < j && p->maps[j - 1].end > end) {
		repl[k] = p->maps[j - 1];
		repl[k].pgoff += end - repl[k].start;
		repl[k++].start = end;
	}
	return maps_splice(p, i, j, repl, k);
}

const struct lm_map *dcpi_lm_lookup(const struct lm_proc *p, uint64_t ip)
{
	size_t i = maps_first_end_above(p, ip);

	if (i < p->nmaps && p->maps[i].start <= ip)
		return &p->maps[i];
	return NULL;
}

/* ---- what a mapping's name says ------------------------------------------- */

enum lm_name_kind { NAME_NONE, NAME_SPECIAL, NAME_FILE };

/* "" and perf's "//anon" (also "//enomem", "//toolong") are anonymous
 * memory; "[heap]", "[stack]" and named anonymous memory ("[anon:...]")
 * are too.  Other bracketed names ([vdso], [vsyscall], [uprobes]) are
 * kernel-provided code: images of their own. */
static enum lm_name_kind name_kind(const char *path)
{
	static const char *const anon[] = { "[heap]", "[stack", "[anon:", "[anon_shmem:" };
	size_t i;

	if (path[0] == '/')
		return path[1] == '/' ? NAME_NONE : NAME_FILE;
	if (path[0] != '[')
		return NAME_NONE;
	for (i = 0; i < sizeof(anon) / sizeof(anon[0]); i++)
		if (strncmp(path, anon[i], strlen(anon[i])) == 0)
			return NAME_NONE;
	return NAME_SPECIAL;
}

/* A file image's text: the first executable mapping seen of it (its file
 * offset and length), what dcpiformat(5) calls text start and size. */
static int with_text(struct dcpi_loadmap *lm, int idx, const struct lm_src *src, uint64_t pgoff)
{
	struct dcpi_image *img;

	if (idx < 0 || (size_t)idx >= lm->nimages)
		return idx;
	img = lm->images[idx];
	if (img->text_size == 0 && src->end > src->start) {
		img->text_start = pgoff;
		img->text_size = src->end - src->start;
	}
	return idx;
}

int dcpi_lm_mapping_image(struct dcpi_loadmap *lm, const struct lm_src *src, uint64_t *pgoff)
{
	struct dcpi_image tmpl;

	switch (name_kind(src->path)) {
	case NAME_FILE:
		return with_text(lm, dcpi_lm_file_image(lm, src), src, *pgoff);
	case NAME_SPECIAL:
		memset(&tmpl, 0, sizeof(tmpl));
		tmpl.path = (char *)src->path;
		tmpl.kind = DCPI_IMAGE_ANON;
		*pgoff = 0;
		return dcpi_loadmap_intern(lm, &tmpl);
	default:
		return DCPI_NO_IMAGE;
	}
}

/* ---- side-band records ------------------------------------------------------- */

static int mmap_checked(const struct dcpi_mmap_event *ev)
{
	if (!ev->path)
		return dcpi_error(EINVAL, "mmap record without a path");
	if (ev->len > UINT64_MAX - ev->start)
		return dcpi_error(EINVAL, "mmap record %#llx+%#llx wraps around",
				  (unsigned long long)ev->start, (unsigned long long)ev->len);
	if (ev->build_id_len > DCPI_BUILD_ID_MAX || (ev->build_id_len && !ev->build_id))
		return dcpi_error(EINVAL, "mmap record with a bad build-id length %u",
				  ev->build_id_len);
	return 0;
}

int dcpi_loadmap_mmap(struct dcpi_loadmap *lm, const struct dcpi_mmap_event *ev)
{
	struct lm_src src;
	struct lm_proc *p;
	uint64_t pgoff = ev->pgoff;
	int image, rc;

	rc = mmap_checked(ev);
	if (rc < 0 || ev->len == 0)
		return rc;
	if (ev->pid == -1)
		return dcpi_lm_kernel_mmap(lm, ev);
	if (ev->pid <= 0)
		return dcpi_error(EINVAL, "mmap record for pid %d", (int)ev->pid);
	p = proc_get_lazy(lm, ev->pid);
	if (!p)
		return -ENOMEM;
	p->dead = p->unknown = 0;
	if (!(ev->prot & PROT_EXEC))
		return dcpi_lm_place(p, ev->start, ev->start + ev->len, 0, DCPI_NO_IMAGE);
	src = (struct lm_src){ ev->pid, ev->path, ev->maj, ev->min, ev->ino, ev->start,
			       ev->start + ev->len, ev->build_id, ev->build_id_len };
	image = dcpi_lm_mapping_image(lm, &src, &pgoff);
	if (image < DCPI_NO_IMAGE)
		return image;
	return dcpi_lm_place(p, src.start, src.end, pgoff, image);
}

int dcpi_loadmap_exec(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p = proc_get(lm, pid);

	if (!p)
		return -ENOMEM;
	p->nmaps = 0;
	p->dead = p->unknown = 0;
	return 0;
}

/* Copy parent's mappings into child. */
static int maps_copy(struct lm_proc *child, const struct lm_proc *parent)
{
	int rc = maps_reserve(child, parent->nmaps);

	if (rc < 0)
		return rc;
	if (parent->nmaps > 0)
		memcpy(child->maps, parent->maps, parent->nmaps * sizeof(*parent->maps));
	child->nmaps = parent->nmaps;
	return 0;
}

int dcpi_loadmap_fork(struct dcpi_loadmap *lm, int32_t pid, int32_t ppid)
{
	struct lm_proc *parent = NULL, *child;

	if (pid == ppid || pid <= 0)
		return 0;
	/* ppid 0: children of the idle task (init, kthreadd) have no parent
	 * to copy. */
	if (ppid > 0) {
		parent = proc_get_lazy(lm, ppid);
		if (!parent)
			return -ENOMEM;
	}
	child = proc_get(lm, pid);
	if (!child)
		return -ENOMEM;
	child->nmaps = 0;
	child->dead = child->unknown = 0;
	if (parent && !parent->unknown)
		return maps_copy(child, parent);
	/* An unknown parent tells nothing: look the child itself up. */
	if (dcpi_lm_scan_into(lm, child) < 0)
		child->dead = child->unknown = 1;
	return 0;
}

int dcpi_loadmap_exit(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p = dcpi_lm_proc_find(lm, pid);

	if (p)
		p->dead = 1;
	return 0;
}

/* ---- samples --------------------------------------------------------------- */

int dcpi_loadmap_resolve(struct dcpi_loadmap *lm, int32_t pid, uint64_t ip, int kernel,
			 uint64_t *offset)
{
	const struct lm_map *m;
	struct lm_proc *p;

	*offset = ip;
	if (kernel || ip >= LM_KERNEL_HALF)
		return dcpi_lm_kernel_resolve(lm, ip, offset);
	if (pid <= 0)
		return DCPI_NO_IMAGE;
	p = proc_get_lazy(lm, pid);
	if (!p)
		return DCPI_NO_IMAGE;
	m = dcpi_lm_lookup(p, ip);
	if (!m)
		return DCPI_NO_IMAGE;
	*offset = ip - m->start + m->pgoff;
	return m->image;
}

void dcpi_loadmap_stats(const struct dcpi_loadmap *lm, struct dcpi_loadmap_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < lm->nbuckets; i++) {
		const struct lm_proc *p;
		for (p = lm->buckets[i]; p; p = p->next) {
			st->processes += !p->dead;
			st->mappings += p->nmaps;
		}
	}
	st->scan_failed = lm->scan_failed;
	st->id_failed = lm->id_failed;
	st->lazy_scans = lm->lazy_scans;
	st->images = lm->nimages;
	st->forgotten = lm->forgotten;
}
