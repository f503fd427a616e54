/* Profile files: one image's aggregated samples in one epoch on one host.
 *
 * The on-disk format is documented in man/dcpiformat.5.  In short: magic
 * "DCPIPROF", a version, a header of varint/string fields (identity of the
 * image, epoch, platform, events), then rows of (offset delta, one count
 * per event) as LEB128 varints in ascending offset order, then a CRC-32 of
 * everything before it.
 *
 * Ownership: a struct dcpi_profile owns all its strings and arrays;
 * dcpi_profile_free() releases them and leaves a zeroed struct.
 * Invariants: rows are sorted by offset, offsets are unique, and counts has
 * nrows * nevents entries (row r, event e at counts[r * nevents + e]).
 */
#ifndef DCPI_PROFILE_H
#define DCPI_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"

#define DCPI_PROFILE_MAGIC "DCPIPROF"
#define DCPI_PROFILE_VERSION 2    /* the newest written and read; 1 has no label */
#define DCPI_MAX_EVENTS 16
#define DCPI_BUILD_ID_MAX 64
#define DCPI_PROFILE_STR_MAX 4096 /* longest path/name field accepted */

/* What kind of image a profile describes: how offsets are to be read. */
enum dcpi_image_kind {
	DCPI_IMAGE_FILE = 0,   /* an ELF file; offset = file offset in it */
	DCPI_IMAGE_KERNEL = 1, /* vmlinux; offset = kernel virtual address */
	DCPI_IMAGE_MODULE = 2, /* a kernel module; offset = address - base (text_start) */
	DCPI_IMAGE_ANON = 3,   /* anonymous/JIT memory; offset from mapping start */
	DCPI_IMAGE_UNKNOWN = 4,/* samples attributable to no image; offset = address */
};

struct dcpi_profile_event {
	char *name;             /* "cycles", "cpu-clock", "r01c2", ... */
	uint64_t period;        /* events per sample (ns for clock events) */
	uint64_t total;         /* samples of this event in this profile */
	uint32_t monitored_ppm; /* fraction of the epoch's time the event was
				   counting, in parts per million (multiplexing) */
};

struct dcpi_profile {
	char *path;             /* the image's path as the process saw it */
	uint8_t build_id[DCPI_BUILD_ID_MAX];
	uint32_t build_id_len;  /* 0: none known; then size + mtime identify */
	uint64_t size;          /* image file size, 0 if unknown */
	int64_t mtime;          /* image mtime, seconds since the epoch */
	char *epoch;            /* epoch name, e.g. "20261122T101500Z" */
	char *platform;         /* host name */
	uint32_t kind;          /* enum dcpi_image_kind */
	int64_t pid;            /* -1, or the process of a -bypid/-unknown profile */
	char *label;            /* NULL, or the label values of a labelled profile
				   (dcpid -label): "comm=xz,uid=1000" */
	uint64_t text_start;    /* where the executable text starts (kind-specific) */
	uint64_t text_size;

	uint32_t nevents;
	struct dcpi_profile_event events[DCPI_MAX_EVENTS];

	size_t nrows;
	uint64_t *offsets;      /* nrows, ascending */
	uint64_t *counts;       /* nrows * nevents */
};

void dcpi_profile_init(struct dcpi_profile *p);
/* The value of key in a label "comm=xz,uid=1000" (without "KEY="), into
 * buf: 0, or -ENOENT when the label (NULL too) has no such key. */
int dcpi_profile_label_value(const char *label, const char *key, char *buf, size_t len);
void dcpi_profile_free(struct dcpi_profile *p);

/* Serialise to bytes (appended to out).  A profile that breaks the
 * invariants above (or has totals other than its column sums, more than
 * DCPI_MAX_EVENTS events, an unknown kind, monitored_ppm > 1000000, or a
 * string over DCPI_PROFILE_STR_MAX) is refused with -EINVAL and nothing is
 * appended: what we write, we can read back.  NULL strings encode as "". */
int dcpi_profile_encode(const struct dcpi_profile *p, struct dcpi_buf *out);
/* Parse bytes.  Anything but a complete, well-formed profile is rejected
 * with -EBADMSG and a message saying what and where (byte offset); p is
 * left initialised-empty on failure. */
int dcpi_profile_decode(const uint8_t *data, size_t len, struct dcpi_profile *p);

/* Read a file; the error message names the file. */
int dcpi_profile_read(const char *path, struct dcpi_profile *p);
/* Write atomically (temporary file in the same directory, fsync, rename,
 * fsync of the directory), with the given mode. */
int dcpi_profile_write(const char *path, const struct dcpi_profile *p, unsigned mode);

/* Add src's counts into dst.  Events are matched by name; an event of src
 * that dst lacks is appended (-E2BIG past DCPI_MAX_EVENTS).  Event totals
 * add up; monitored_ppm takes src's value (the newer one).  Identity fields
 * of dst are kept.  Same-named events with different periods are refused
 * with -EINVAL: their counts measure different things.  O(n + m); on any
 * error dst is unchanged.  src may be dst. */
int dcpi_profile_merge(struct dcpi_profile *dst, const struct dcpi_profile *src);

/* Set rows from unsorted (offset, counts[nevents]) input: sorts, merges
 * duplicates, and recomputes event totals.  offsets/counts are copied. */
int dcpi_profile_set_rows(struct dcpi_profile *p, size_t n, const uint64_t *offsets,
			  const uint64_t *counts);

/* Whether two profiles are of one image identity: kind, path and
 * build-id, or size when neither has a build-id.  What the tools sum
 * across epochs, hosts and processes. */
int dcpi_profile_same_image(const struct dcpi_profile *a, const struct dcpi_profile *b);

/* The image's name in labels: "kernel" for the kernel, what stands in
 * brackets for "[vdso]" or a module "[ext4]", else the path's last
 * component.  Always NUL-terminates buf (len > 0). */
void dcpi_profile_short_name(const struct dcpi_profile *p, char *buf, size_t len);

/* Index of the event named name, or -1. */
int dcpi_profile_event_index(const struct dcpi_profile *p, const char *name);

#endif
