/* The loadmap's private parts, shared by lib/loadmap*.c only.
 *
 * Invariants:
 *  - a process's maps are sorted by start and never overlap; only
 *    executable mappings that belong to an image are kept (anonymous
 *    executable memory is a hole: resolve() says DCPI_NO_IMAGE there);
 *  - images[] entries are individually allocated, so pointers handed out by
 *    dcpi_loadmap_image() stay valid until dcpi_loadmap_forget(), which
 *    frees the images nothing maps and renumbers the rest;
 *  - kernel modules are kept as the mappings of a pseudo-process (pid -1),
 *    with pgoff 0 so that offset = ip - module base.
 */
#ifndef DCPI_LOADMAP_PRIV_H
#define DCPI_LOADMAP_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/loadmap.h"

/* Caps: far above any real system, low enough that hostile input cannot
 * make us allocate without bound. */
#define LM_IMAGES_MAX (1u << 20)
#define LM_MAPS_MAX (1u << 20)      /* per process; the kernel's default is 65530 */
#define LM_PROCS_MAX (1u << 22)     /* pid_max's ceiling */
#define LM_MODULES_MAX (1u << 14)   /* in the modules file */

/* Addresses at or above this are the kernel's half on 64-bit machines. */
#define LM_KERNEL_HALF 0xffff800000000000ull

struct lm_map {
	uint64_t start, end;
	uint64_t pgoff;         /* file offset of start; 0 for special images */
	int32_t image;
};

struct lm_proc {
	struct lm_proc *next;   /* hash chain */
	int32_t pid;
	uint8_t dead;           /* exited, or unknown: freed at the next reap */
	uint8_t unknown;        /* its lazy lookup failed; not counted as tracked */
	struct lm_map *maps;
	size_t nmaps, cap;
};

/* An open-addressing set of indices (stored as index + 1; 0 is empty),
 * with each entry's hash kept so growth needs no callback. */
struct lm_slot {
	uint64_t hash;
	uint32_t idx1;
};

struct lm_set {
	struct lm_slot *slots;
	size_t cap;             /* a power of two, or 0 */
	size_t n;
};

/* A file already identified: (dev, ino, size, mtime) at a path → image. */
struct lm_ident {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	int32_t image;
};

/* A file mapping's identity lately checked by opening the file: a mapping
 * of the same inode at the same path within LM_TRUST_NS is taken to be
 * the same image without opening it again (process churn maps the same
 * libraries hundreds of times a second).  Direct-mapped, LM_SIGHTINGS. */
struct lm_sighting {
	uint64_t dev, ino, path_hash, checked_ns;
	int32_t image;          /* -1: empty */
};
#define LM_SIGHTINGS 1024
#define LM_TRUST_NS 1000000000ull

struct dcpi_loadmap {
	char *procroot;
	char *sysfs;

	struct dcpi_image **images;
	size_t nimages, images_cap;
	struct lm_set image_set;

	struct lm_ident *idents;
	size_t nidents, idents_cap;
	struct lm_set ident_set;
	struct lm_sighting *sightings; /* NULL until the first */

	struct lm_proc **buckets;
	size_t nbuckets, nprocs;
	struct lm_proc *last;   /* the most recent lookup; NULL after a reap */

	int32_t kernel_image;   /* DCPI_NO_IMAGE until load_kernel */
	struct lm_proc kmods;   /* modules; never in the pid table */

	uint64_t scan_failed, id_failed, lazy_scans, forgotten;
};

/* Where a file mapping came from, for identifying its file. */
struct lm_src {
	int32_t pid;
	const char *path;       /* as reported; may end in " (deleted)" */
	unsigned maj, min;
	uint64_t ino;
	uint64_t start, end;
	const uint8_t *build_id;
	uint32_t build_id_len;
};

uint64_t dcpi_lm_hash(uint64_t h, const void *p, size_t n);
#define LM_HASH_INIT 0xcbf29ce484222325ull

/* Find in set: eq(ctx, idx) says whether entry idx is the one. -1 if none. */
int64_t dcpi_lm_set_find(const struct lm_set *s, uint64_t hash,
			 int (*eq)(const void *ctx, size_t idx), const void *ctx);
int dcpi_lm_set_add(struct lm_set *s, uint64_t hash, size_t idx);
void dcpi_lm_set_free(struct lm_set *s);

/* Index of the image with tmpl's identity, or -1. */
int dcpi_lm_image_find(const struct dcpi_loadmap *lm, const struct dcpi_image *tmpl);

/* The image of a file mapping (identity via build-id, or the file opened
 * through procroot); an index, or -errno only on allocation failure. */
int dcpi_lm_file_image(struct dcpi_loadmap *lm, const struct lm_src *src);
void dcpi_lm_idents_free(struct dcpi_loadmap *lm);
/* After images moved: entry of image i now names map[i], or is dropped
 * when map[i] < 0.  lm->images must already be the new array. */
int dcpi_lm_idents_remap(struct dcpi_loadmap *lm, const int32_t *map);

struct lm_proc *dcpi_lm_proc_find(struct dcpi_loadmap *lm, int32_t pid);
/* A new empty process; the caller knows pid is not in the table.  NULL
 * (message set) when out of memory or over the cap. */
struct lm_proc *dcpi_lm_proc_add(struct dcpi_loadmap *lm, int32_t pid);
/* Replace p's mappings with what procroot/PID/maps says now; on failure p
 * is unchanged and scan_failed counted. */
int dcpi_lm_scan_into(struct dcpi_loadmap *lm, struct lm_proc *p);

/* Map [start, end) to image in p (image < 0: only clear the range),
 * splitting or trimming what it overlaps. */
int dcpi_lm_place(struct lm_proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		  int32_t image);
/* The mapping holding ip, or NULL. */
const struct lm_map *dcpi_lm_lookup(const struct lm_proc *p, uint64_t ip);

/* The image of an executable mapping named path (file, special, none). */
int dcpi_lm_mapping_image(struct dcpi_loadmap *lm, const struct lm_src *src,
			  uint64_t *pgoff);

int dcpi_lm_kernel_resolve(const struct dcpi_loadmap *lm, uint64_t ip, uint64_t *offset);
int dcpi_lm_kernel_mmap(struct dcpi_loadmap *lm, const struct dcpi_mmap_event *ev);

#endif
