/* Value profiles (issue 26; DCPI's value profiler): per sampled load, the
 * latency it was measured to take, binned, and its hot values.
 *
 * Written by libdcpivp.so, one file per process (libdcpivp(7)), and merged
 * by dcpi record into its epoch's epoch.vprof; the format is text, one
 * record a line, and is documented in dcpiformat(5), VALUE PROFILES:
 *
 *   dcpi-vprof 1
 *   kind ldlatency
 *   pid PID | processes N          (a process's file | a merged one)
 *   comm NAME                      (a process's file, optional)
 *   tsc_hz HZ / timing CYCLES / period NS / signals N
 *   skipped REASON N               (any number, each reason once)
 *   bin I MIN MAX REP NAME         (I = 0, 1, ...: the bins applied)
 *   image I BUILDID|- PATH         (I = 0, 1, ...; PATH escaped: \\ \n)
 *   load I OFF SAMPLES CYCLES OUTSIDE C0 .. Cn-1    (OFF hex, a file offset)
 *   value I OFF VALUE COUNT        (hex VALUE; after its load, at most 16)
 *   bound I OFF ERR                (after its values: each count is within
 *                                   ERR of the truth; default: the least
 *                                   count of a full list, else 0)
 *   source I OFF LEVEL COUNT       (after its load: where the data came from,
 *                                   precise hardware samples; LEVEL one of
 *                                   dcpi_vprof_source_names, each once)
 *   end
 *
 * '#' lines and blank lines are skipped.  Parsing is strict: anything
 * else is -EBADMSG with "line N: what".  Ownership: a struct dcpi_vprof
 * owns everything in it; dcpi_vprof_free() frees it. */
#ifndef DCPI_VPROF_H
#define DCPI_VPROF_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/bins.h"
#include "dcpi/buf.h"
#include "dcpi/profile.h"

#define DCPI_VPROF_VALUES 16             /* a load's hot list, as DCPI's */
#define DCPI_VPROF_FILE_MAX (32u << 20)
#define DCPI_VPROF_LINE_MAX 16384
#define DCPI_VPROF_IMAGES_MAX 65536
#define DCPI_VPROF_LOADS_MAX (1u << 18)           /* ~170 MiB in memory at most */
#define DCPI_VPROF_COUNT_MAX ((uint64_t)1 << 62)   /* a load's samples: sums never wrap */
#define DCPI_VPROF_REASONS_MAX 16
#define DCPI_VPROF_NAME_MAX 31           /* kind, reason, comm */

/* Where a load's data came from (precise samples' data source), by level. */
enum dcpi_vprof_source {
	DCPI_SRC_L1, DCPI_SRC_LFB, DCPI_SRC_L2, DCPI_SRC_L3, DCPI_SRC_L4, DCPI_SRC_RAM,
	DCPI_SRC_REMOTE_RAM, DCPI_SRC_REMOTE_CACHE, DCPI_SRC_PMEM, DCPI_SRC_CXL, DCPI_SRC_IO,
	DCPI_SRC_UNCACHED, DCPI_SRC_OTHER, DCPI_SRC_N
};
/* "L1", "LFB", "L2", "L3", "L4", "RAM", "remote-RAM", "remote-cache", "PMEM",
 * "CXL", "IO", "uncached", "other" */
extern const char *const dcpi_vprof_source_names[DCPI_SRC_N];

struct dcpi_vprof_value {
	uint64_t value, count;
};

struct dcpi_vprof_load {
	uint32_t image;
	uint64_t off;                     /* of the load instruction in the file */
	uint64_t samples, cycles, outside;
	uint64_t bins[DCPI_BINS_MAX];     /* per bin of the file's bins */
	unsigned nvalues;
	struct dcpi_vprof_value values[DCPI_VPROF_VALUES]; /* most frequent first */
	uint64_t verr;                    /* each value's count is within verr of the
					     truth: Space-Saving's least count where
					     the list is full, summed over merges */
	uint64_t sources[DCPI_SRC_N];     /* samples by data source (precise samples) */
};

struct dcpi_vprof_image {
	char *path;
	uint8_t build_id[DCPI_BUILD_ID_MAX];
	uint32_t build_id_len;            /* 0: none */
};

struct dcpi_vprof_reason {
	char name[DCPI_VPROF_NAME_MAX + 1];
	uint64_t n;
};

struct dcpi_vprof {
	char kind[DCPI_VPROF_NAME_MAX + 1];
	int64_t pid;                      /* -1: a merged file */
	char comm[DCPI_VPROF_NAME_MAX + 1];
	uint64_t processes;               /* whose files it holds (1 for a process's) */
	uint64_t tsc_hz, timing, period;  /* 0 where merged files disagreed */
	uint64_t signals;
	struct dcpi_vprof_reason skipped[DCPI_VPROF_REASONS_MAX];
	size_t nskipped;
	struct dcpi_bins bins;
	struct dcpi_vprof_image *images;
	size_t nimages, images_cap;
	struct dcpi_vprof_load *loads;
	size_t nloads, loads_cap;
	void *index;                      /* private: (image, off) -> load */
};

/* Parse len bytes of text: 0 and *out (free with dcpi_vprof_free), or
 * -EBADMSG "line N: what", -EFBIG, -ENOMEM. */
int dcpi_vprof_parse(const char *text, size_t len, struct dcpi_vprof **out);
/* The same from a regular file of at most DCPI_VPROF_FILE_MAX bytes; the
 * errors name the path. */
int dcpi_vprof_read(const char *path, struct dcpi_vprof **out);
void dcpi_vprof_free(struct dcpi_vprof *v);

/* An empty merged profile (pid -1, no processes) to merge into. */
int dcpi_vprof_new(struct dcpi_vprof **out);
/* Add from's processes, signals, skips, images and loads to into: loads of
 * one (image path and build-id, offset) summed, their hot lists joined
 * (counts of a value summed, the 16 largest kept).  The first file merged
 * sets kind and bins; a later one of another kind or other bins is
 * -EINVAL, one whose loads would pass DCPI_VPROF_COUNT_MAX samples or
 * DCPI_VPROF_LOADS_MAX loads -EOVERFLOW or -EFBIG: into unchanged.  (Out
 * of memory half way, -ENOMEM, may leave part of from in into.) */
int dcpi_vprof_merge(struct dcpi_vprof *into, const struct dcpi_vprof *from);
/* Every process's file in dir (named vp.*.vprof, regular, as libdcpivp
 * writes them) merged into into: *nfiles merged, *nbad refused (unreadable,
 * corrupt, other bins), the first refusal's message in *first_bad
 * (malloc'd, or NULL).  0, or -ENOMEM / the error of opening dir. */
int dcpi_vprof_merge_dir(const char *dir, struct dcpi_vprof *into, size_t *nfiles, size_t *nbad,
			 char **first_bad);
/* The value profiles of a set's epochs and hosts (each epoch.vprof of its
 * directories) merged: 0 and *out (an empty profile when there are none:
 * *nfiles 0), with *nbad refused as dcpi_vprof_merge_dir says. */
struct dcpi_profset;
int dcpi_vprof_of_set(const struct dcpi_profset *set, struct dcpi_vprof **out, size_t *nfiles,
		      size_t *nbad, char **first_bad);
/* Merge v into the value-profile file at path (made when missing),
 * atomically.  A file that is not one (corrupt, too large, not a regular
 * file) or of another kind or bins is kept aside as PATH.corrupt and a
 * fresh one written.  -EFBIG when the result would pass
 * DCPI_VPROF_FILE_MAX (the file unchanged); else the read's transient
 * errors (EIO, EMFILE, ENOMEM) or the write's. */
int dcpi_vprof_merge_file(const char *path, const struct dcpi_vprof *v, unsigned mode);
/* The value-profile file of host's samples in a platform directory:
 * epoch.vprof, or epoch@HOST.vprof where hosts share it (as
 * dcpi_stacks_path). */
int dcpi_vprof_path(char *out, size_t len, const char *platdir, const char *host);
/* A signal that gave no measurement, counted under reason (a lower-case
 * word; the 17th reason and later counted as "other"). */
void dcpi_vprof_skip(struct dcpi_vprof *v, const char *reason, uint64_t n);
/* The bin most of load l's samples fell in (the largest count), or -1. */
int dcpi_vprof_top_bin(const struct dcpi_vprof *v, const struct dcpi_vprof_load *l);
/* Loads that always load the same value (DCPI's dcpivarg listed them as
 * candidates for specialisation): every one of at least
 * DCPI_VPROF_INVARIANT_MIN samples loaded one value, counted exactly (a
 * hot list never full, so no count is a Space-Saving estimate).  1 and
 * *value, or 0. */
#define DCPI_VPROF_INVARIANT_MIN 8
int dcpi_vprof_invariant(const struct dcpi_vprof_load *l, uint64_t *value);
/* Empty v's images and loads (kind, bins and period kept), without
 * allocating. */
void dcpi_vprof_clear(struct dcpi_vprof *v);
/* v as a file's text, appended to out. */
int dcpi_vprof_format(const struct dcpi_vprof *v, struct dcpi_buf *out);
/* Written atomically (dcpi_file_write_atomic) with mode. */
int dcpi_vprof_write(const char *path, const struct dcpi_vprof *v, unsigned mode);

/* One measured sample of the load at off of the image (path, build-id)
 * added: its latency binned by v's bins, its value (when has_value) to the
 * hot list (Space-Saving), its data source (src < DCPI_SRC_N) counted.
 * -EFBIG/-ENOMEM past the caps. */
int dcpi_vprof_add(struct dcpi_vprof *v, const char *path, const uint8_t *id, size_t len,
		   uint64_t off, uint64_t cycles, int has_value, uint64_t value, int src);

/* The image of v with this path and build-id (len 0: none), or -1. */
long dcpi_vprof_image(const struct dcpi_vprof *v, const char *path, const uint8_t *id,
		      size_t len);
/* The load of image index img at offset off, or NULL. */
const struct dcpi_vprof_load *dcpi_vprof_load(const struct dcpi_vprof *v, uint32_t img,
					      uint64_t off);

#endif
