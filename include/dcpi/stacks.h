/* Call stacks, aggregated: the set of distinct stacks of an epoch's
 * samples on one host, with a count per event, and its file (epoch.stacks
 * beside the profiles; format in dcpiformat(5)).
 *
 * A frame is (image, offset): an image of the set's own table (the
 * identity a profile's header carries: path, build-id, size, mtime, kind,
 * text) and the file offset of the pc in it, as profiles count; a frame
 * of code no image describes is DCPI_FRAME_UNKNOWN.  A stack is its
 * frames, the sampled pc (the leaf) first, outermost last, with how its
 * walk ended, its label, and its process where it is kept per process
 * (dcpid -bypid; else -1).  Interned: adding a stack already in the set
 * adds to its counts.
 *
 * Bounded: at most DCPI_STACK_MAX_FRAMES frames a stack (the outer ones
 * past it are cut: DCPI_STACK_END_CUT), DCPI_STACKS_MAX distinct stacks
 * and DCPI_STACK_FRAMES_MAX frames in all a set.  A new stack past those
 * caps is counted as its leaf alone, ended DCPI_STACK_END_OVERFLOW: its
 * samples keep their place in flat terms and are never dropped silently.
 * Merging into a set that has DCPI_STACK_IMAGES_MAX images or
 * DCPI_STACK_LABELS_MAX labels already keeps the stacks, their frames of
 * images past the cap as "no image known", their labels past it as none.
 *
 * Ownership: the set owns everything in it.  Not thread-safe.
 */
#ifndef DCPI_STACKS_H
#define DCPI_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"
#include "dcpi/profile.h"

#define DCPI_STACK_MAX_FRAMES 128
#define DCPI_STACKS_MAX (1u << 18)
#define DCPI_STACK_IMAGES_MAX (1u << 16)
#define DCPI_STACK_LABELS_MAX (1u << 16)
#define DCPI_STACK_FRAMES_MAX (1u << 22)   /* frames of all stacks: 64 MiB */
#define DCPI_FRAME_UNKNOWN UINT32_MAX

/* How a stack's walk ended. */
enum dcpi_stack_end {
	DCPI_STACK_END_WHOLE,   /* at the outermost frame (_start, a thread's
				   start): the stack is whole */
	DCPI_STACK_END_COPY,    /* the stack copy ran out before it */
	DCPI_STACK_END_NORULE,  /* code whose unwind rule is not known (no
				   image, no CFI, JIT code without frame
				   pointers) */
	DCPI_STACK_END_BAD,     /* a frame not to trust (a CFA that does not
				   rise, a return address outside user space) */
	DCPI_STACK_END_CUT,     /* past DCPI_STACK_MAX_FRAMES */
	DCPI_STACK_END_KERNEL,  /* a kernel thread's: no user part */
	DCPI_STACK_END_OVERFLOW,/* past DCPI_STACKS_MAX: the leaf alone */
	DCPI_STACK_END_N
};

/* Its name in reports: "whole", "copy ran out", ... */
const char *dcpi_stack_end_name(unsigned end);

struct dcpi_stack_frame {
	uint32_t image;         /* index into images, or DCPI_FRAME_UNKNOWN */
	uint64_t off;
};

struct dcpi_stack {
	uint32_t label;         /* index into labels */
	int64_t pid;            /* its process, or -1: kept for every process */
	uint8_t end;            /* enum dcpi_stack_end */
	uint32_t nframes;
	size_t first;           /* its frames: frames[first .. first + nframes) */
};

struct dcpi_stackset {
	char *epoch, *platform;          /* NULL in a set being built */
	unsigned nevents;
	char *events[DCPI_MAX_EVENTS];
	uint64_t periods[DCPI_MAX_EVENTS];
	struct dcpi_profile *images;     /* identities only: no events, no rows */
	size_t nimages, images_cap;
	char **labels;                   /* labels[0] is "": unlabelled */
	size_t nlabels, labels_cap;
	struct dcpi_stack *stacks;
	size_t nstacks, stacks_cap;
	uint64_t *counts;                /* nstacks x nevents */
	struct dcpi_stack_frame *frames;
	size_t nframes, frames_cap;
	void *index;                     /* private */
};

/* An empty set of these events (names copied). */
int dcpi_stackset_init(struct dcpi_stackset *s, unsigned nevents, const char *const *names,
		       const uint64_t *periods);
void dcpi_stackset_free(struct dcpi_stackset *s);
/* Forget every stack, image and label (the events stay). */
void dcpi_stackset_clear(struct dcpi_stackset *s);

/* The index of image id (its identity fields: path, build-id, size, mtime,
 * kind, text start and size; copied), added when new.  -ENOSPC past
 * DCPI_STACK_IMAGES_MAX; -EINVAL for an identity the file cannot hold (a
 * path past 4 KiB, a kind past DCPI_IMAGE_UNKNOWN). */
int dcpi_stackset_image(struct dcpi_stackset *s, const struct dcpi_profile *id, uint32_t *idx);
/* The index of label ("" or NULL: unlabelled), added when new. */
int dcpi_stackset_label(struct dcpi_stackset *s, const char *label, uint32_t *idx);

/* Count n samples of event ev at the stack f[0..nf) (leaf first) of
 * process pid (-1: not kept per process). */
int dcpi_stackset_add(struct dcpi_stackset *s, uint32_t label, int64_t pid, unsigned end,
		      const struct dcpi_stack_frame *f, size_t nf, unsigned ev, uint64_t n);

/* Add every stack of src to dst, their events matched by name (an event
 * dst lacks is added; one whose period differs is -EINVAL). */
int dcpi_stackset_merge(struct dcpi_stackset *dst, const struct dcpi_stackset *src);

/* The file's bytes (epoch and platform from the set: set them first). */
int dcpi_stackset_encode(const struct dcpi_stackset *s, struct dcpi_buf *out);
/* A set from a file's bytes; -EBADMSG naming what is wrong and where. */
int dcpi_stackset_decode(const uint8_t *data, size_t len, struct dcpi_stackset *s);
int dcpi_stackset_read(const char *path, struct dcpi_stackset *s);

/* Merge s into the stacks file at path (made when missing), atomically:
 * a reader sees the old file or the new one, never a mixture.  A corrupt
 * file is kept aside as PATH.corrupt and a fresh one written. */
int dcpi_stackset_merge_file(const char *path, const struct dcpi_stackset *s, unsigned mode);

/* The stacks file of host's samples in a platform directory:
 * epoch.stacks, or epoch@HOST.stacks where hosts share it (as
 * dcpi_db_stats_path). */
int dcpi_stacks_path(char *out, size_t len, const char *platdir, const char *host);

#endif
