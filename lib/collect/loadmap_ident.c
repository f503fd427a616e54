/* Image identity of file mappings.  See dcpi/loadmap.h.
 *
 * A file is found the way the process sees it: PROCROOT/PID/root/PATH
 * (right for containers), checked against the mapping's inode; else the
 * mapped file itself through PROCROOT/PID/map_files/START-END; else, for a
 * process already gone, PATH in our own namespace, but only when its
 * device and inode are the mapping's.  Once opened, (dev, ino, size,
 * mtime) at that path is remembered, so each image's ELF is read once, not
 * once per mmap; and a mapping of an inode at a path checked so within the
 * last second (LM_TRUST_NS) is not opened at all.  The window is what
 * lets a rewrite in place of a file mapped a moment ago (same inode, new
 * contents) go unseen: a replacement (a new inode) never does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/loadmap.h"
#include "internal.h"
#include "loadmap_priv.h"

#define DELETED_SUFFIX " (deleted)"

/* Open a regular file for reading, never a FIFO or a device that a
 * hostile path names (a symlink to /dev/watchdog renamed over a mapped
 * file): nothing but a regular file is ever opened. */
static int open_regular(const char *path, struct stat *st)
{
	int fd = dcpi_file_open_regular(AT_FDCWD, path, 0, st);

	return fd < 0 ? -1 : fd;
}

static int open_map_file(const struct dcpi_loadmap *lm, const struct lm_src *src,
			 struct stat *st)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%d/map_files/%llx-%llx", lm->procroot, (int)src->pid,
		 (unsigned long long)src->start, (unsigned long long)src->end);
	return open_regular(p, st);
}

static int open_in_root(const struct dcpi_loadmap *lm, const struct lm_src *src,
			const char *path, struct stat *st)
{
	char p[PATH_MAX];
	int n = snprintf(p, sizeof(p), "%s/%d/root%s", lm->procroot, (int)src->pid, path);

	if (n < 0 || (size_t)n >= sizeof(p))
		return -1;
	return open_regular(p, st);
}

static int same_file(const struct lm_src *src, const struct stat *st)
{
	return st->st_ino == src->ino && st->st_dev == makedev(src->maj, src->min);
}

/* The mapped file opened, or -1.  A file at the path with another inode
 * is not the one mapped (replaced since, as by a package update) and is
 * never used: a wrong build-id would be worse than none. */
static int open_mapped(const struct dcpi_loadmap *lm, const struct lm_src *src,
		       const char *path, int deleted, struct stat *st)
{
	int fd = -1;

	if (!deleted) {
		fd = open_in_root(lm, src, path, st);
		if (fd >= 0 && (src->ino == 0 || st->st_ino == src->ino))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	fd = open_map_file(lm, src, st);
	if (fd >= 0 || deleted)
		return fd;
	fd = open_regular(path, st);
	if (fd >= 0 && !same_file(src, st)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* ---- the identity cache ---------------------------------------------------- */

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

struct ident_key {
	const struct dcpi_loadmap *lm;
	const struct lm_ident *id;
	const char *path;
};

static uint64_t ident_hash(const struct lm_ident *id, const char *path)
{
	uint64_t h = dcpi_lm_hash(LM_HASH_INIT, &id->dev, sizeof(id->dev));

	h = dcpi_lm_hash(h, &id->ino, sizeof(id->ino));
	h = dcpi_lm_hash(h, &id->size, sizeof(id->size));
	h = dcpi_lm_hash(h, &id->mtime_ns, sizeof(id->mtime_ns));
	return dcpi_lm_hash(h, path, strlen(path));
}

static int ident_eq(const void *ctx, size_t idx)
{
	const struct ident_key *k = ctx;
	const struct lm_ident *a = k->id, *b = &k->lm->idents[idx];

	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && !strcmp(k->path, k->lm->images[b->image]->path);
}

static int ident_add(struct dcpi_loadmap *lm, const struct lm_ident *id, const char *path)
{
	if (lm->nidents >= LM_IMAGES_MAX)
		return 0; /* only a cache: stop growing it */
	if (DCPI_GROW(lm->idents, lm->idents_cap, lm->nidents + 1, LM_IMAGES_MAX,
		      "identity cache entries"))
		return -ENOMEM;
	if (dcpi_lm_set_add(&lm->ident_set, ident_hash(id, path), lm->nidents) < 0)
		return dcpi_error(ENOMEM, "out of memory for the identity cache");
	lm->idents[lm->nidents++] = *id;
	return 0;
}

/* ---- recent sightings ------------------------------------------------------ */

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct lm_sighting *sighting_slot(struct dcpi_loadmap *lm, uint64_t dev, uint64_t ino,
					 uint64_t path_hash)
{
	uint64_t h = dcpi_lm_hash(path_hash, &dev, sizeof(dev));

	h = dcpi_lm_hash(h, &ino, sizeof(ino));
	if (!lm->sightings) {
		lm->sightings = malloc(LM_SIGHTINGS * sizeof(*lm->sightings));
		if (!lm->sightings)
			return NULL; /* only a cache */
		for (size_t i = 0; i < LM_SIGHTINGS; i++)
			lm->sightings[i].image = -1;
	}
	return &lm->sightings[h % LM_SIGHTINGS];
}

/* The image of a mapping of src's inode at path checked lately, or -1. */
static int sighted(struct dcpi_loadmap *lm, const struct lm_src *src, const char *path,
		   uint64_t path_hash, uint64_t now)
{
	uint64_t dev = makedev(src->maj, src->min);
	const struct lm_sighting *s = sighting_slot(lm, dev, src->ino, path_hash);

	if (!s || s->image < 0 || (size_t)s->image >= lm->nimages || s->ino != src->ino ||
	    s->dev != dev || s->path_hash != path_hash || now - s->checked_ns >= LM_TRUST_NS ||
	    strcmp(lm->images[s->image]->path, path))
		return -1;
	return s->image;
}

static void sight(struct dcpi_loadmap *lm, const struct lm_src *src, uint64_t path_hash,
		  uint64_t now, int image)
{
	uint64_t dev = makedev(src->maj, src->min);
	struct lm_sighting *s = sighting_slot(lm, dev, src->ino, path_hash);

	if (s)
		*s = (struct lm_sighting){ dev, src->ino, path_hash, now, image };
}

/* ---- the identity cache, continued ----------------------------------------- */

int dcpi_lm_idents_remap(struct dcpi_loadmap *lm, const int32_t *map)
{
	size_t k = 0;
	int err = 0;

	free(lm->sightings); /* they name images by index */
	lm->sightings = NULL;
	dcpi_lm_set_free(&lm->ident_set);
	for (size_t i = 0; i < lm->nidents; i++) {
		struct lm_ident id = lm->idents[i];

		if (map[id.image] < 0)
			continue;
		id.image = map[id.image];
		/* on failure the entry is only not found: it is read again */
		if (!err && dcpi_lm_set_add(&lm->ident_set,
					    ident_hash(&id, lm->images[id.image]->path), k) < 0)
			err = dcpi_error(ENOMEM, "out of memory for the identity cache");
		lm->idents[k++] = id;
	}
	lm->nidents = k;
	if (err) { /* an entry missing from the set must not be left found by index */
		dcpi_lm_set_free(&lm->ident_set);
		lm->nidents = 0;
	}
	return err;
}

void dcpi_lm_idents_free(struct dcpi_loadmap *lm)
{
	free(lm->sightings);
	lm->sightings = NULL;
	free(lm->idents);
	lm->idents = NULL;
	lm->nidents = lm->idents_cap = 0;
	dcpi_lm_set_free(&lm->ident_set);
}

/* ---- identities ------------------------------------------------------------ */

static int intern_path_alone(struct dcpi_loadmap *lm, char *path)
{
	struct dcpi_image tmpl = { .path = path, .kind = DCPI_IMAGE_FILE };
	size_t before = lm->nimages;
	int idx = dcpi_loadmap_intern(lm, &tmpl);

	if (idx >= 0 && (size_t)idx == before)
		lm->id_failed++; /* counted once per image, not per mapping */
	return idx;
}

/* The record carried the build-id: only size and mtime are left to find,
 * and only for an identity not seen before. */
static int image_with_id(struct dcpi_loadmap *lm, const struct lm_src *src, char *path,
			 int deleted)
{
	struct dcpi_image tmpl = { .path = path, .kind = DCPI_IMAGE_FILE };
	struct stat st;
	int idx, fd;

	memcpy(tmpl.build_id, src->build_id, src->build_id_len);
	tmpl.build_id_len = src->build_id_len;
	idx = dcpi_lm_image_find(lm, &tmpl);
	if (idx >= 0)
		return idx;
	fd = open_mapped(lm, src, path, deleted, &st);
	if (fd >= 0) {
		tmpl.size = (uint64_t)st.st_size;
		tmpl.mtime = st.st_mtim.tv_sec;
		close(fd);
	}
	return dcpi_loadmap_intern(lm, &tmpl);
}

static int image_from_fd(struct dcpi_loadmap *lm, int fd, const struct stat *st, char *path)
{
	struct dcpi_image tmpl = { .path = path, .kind = DCPI_IMAGE_FILE };
	struct lm_ident id = { (uint64_t)st->st_dev, (uint64_t)st->st_ino,
			       (uint64_t)st->st_size, mtime_ns(st), 0 };
	struct ident_key k = { lm, &id, path };
	int64_t found;
	int rc, idx;

	found = dcpi_lm_set_find(&lm->ident_set, ident_hash(&id, path), ident_eq, &k);
	if (found >= 0)
		return lm->idents[found].image;
	tmpl.size = id.size;
	tmpl.mtime = st->st_mtim.tv_sec;
	rc = dcpi_buildid_elf_fd(fd, tmpl.build_id, sizeof(tmpl.build_id));
	/* Not ELF, or no note: size and mtime identify it. */
	tmpl.build_id_len = rc > 0 ? (uint32_t)rc : 0;
	idx = dcpi_loadmap_intern(lm, &tmpl);
	if (idx < 0)
		return idx;
	id.image = idx;
	rc = ident_add(lm, &id, path);
	return rc < 0 ? rc : idx;
}

/* The path without the kernel's " (deleted)" suffix, malloc'd. */
static char *strip_deleted(const char *raw, int *deleted)
{
	size_t n = strlen(raw), sn = strlen(DELETED_SUFFIX);

	*deleted = n > sn && !strcmp(raw + n - sn, DELETED_SUFFIX);
	return strndup(raw, *deleted ? n - sn : n);
}

int dcpi_lm_file_image(struct dcpi_loadmap *lm, const struct lm_src *src)
{
	struct stat st;
	char *path;
	int deleted, fd, idx, trust;
	uint64_t ph = 0, now = 0;

	path = strip_deleted(src->path, &deleted);
	if (!path)
		return dcpi_error(ENOMEM, "out of memory");
	if (src->build_id_len > 0) {
		idx = image_with_id(lm, src, path, deleted);
		goto out;
	}
	trust = !deleted && src->ino != 0;
	if (trust) {
		ph = dcpi_lm_hash(LM_HASH_INIT, path, strlen(path));
		now = coarse_ns();
		if ((idx = sighted(lm, src, path, ph, now)) >= 0)
			goto out;
	}
	fd = open_mapped(lm, src, path, deleted, &st);
	if (fd < 0) {
		idx = intern_path_alone(lm, path);
		goto out;
	}
	idx = image_from_fd(lm, fd, &st, path);
	if (trust && idx >= 0 && same_file(src, &st))
		sight(lm, src, ph, now, idx);
	close(fd);
out:
	free(path);
	return idx;
}
