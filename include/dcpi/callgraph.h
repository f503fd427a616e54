/* Who called it: the stacks of a profile set (the epoch.stacks files of
 * its epochs and hosts, dcpi/stacks.h) by procedure, for dcpiprof's
 * -callers, -callees and -inclusive.
 *
 * Each frame is named as the flat reports name a sample at that offset
 * (dcpi_procs_name: a symbol, or the section or 64 KiB region of code no
 * symbol covers); a frame of no image is "[unknown]" of image "unknown".
 * A procedure's self count is the samples whose leaf it is; its inclusive
 * count the samples whose stack holds it at least once (a recursive
 * procedure counts once a stack).  Its callers are read at its outermost
 * occurrence in each stack (so they add up to its inclusive count): the
 * next frame out, or DCPI_CG_ROOT where the walk reached the outermost
 * frame there, or DCPI_CG_STOPPED where it stopped short (the copy ran
 * out, no unwind rule, a frame refused, the cap); its callees at the same
 * occurrence: the next frame in, or DCPI_CG_SELF where it is the leaf.
 *
 * A tail call leaves no frame: where a caller frame's direct call went to
 * a procedure other than the one the next frame in is in, that procedure
 * jumped on, and its frame is put back between them (in the graph only;
 * the file keeps what the walk found), with those of a chain of such jumps
 * when its direct jumps lead there by exactly one shortest path.  Counted
 * in tail.
 *
 * Counts are by the set's event columns (profset.h); events a stacks file
 * has that the set lacks are left out.  Ownership: the graph owns all.
 */
#ifndef DCPI_CALLGRAPH_H
#define DCPI_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/obj.h"
#include "dcpi/profset.h"
#include "dcpi/stacks.h"

/* Pseudo-procedures of callers and callees lists. */
#define DCPI_CG_ROOT ((size_t)-1)     /* no caller: the outermost frame */
#define DCPI_CG_STOPPED ((size_t)-2)  /* the walk stopped before a caller */
#define DCPI_CG_SELF ((size_t)-3)     /* no callee: the procedure's own samples */

struct dcpi_cg_proc {
	char *image;            /* the profiled path, or "unknown" */
	char *proc;
	int64_t pid;            /* with bypid, the process of its stacks kept per
				   process; else (and for the others) -1 */
	uint64_t self[DCPI_MAX_EVENTS], incl[DCPI_MAX_EVENTS];
};

struct dcpi_cg_stack {
	size_t first;           /* its procedures: frames[first .. first + n), leaf first */
	uint32_t n;
	uint8_t end;            /* enum dcpi_stack_end */
	uint64_t c[DCPI_MAX_EVENTS];
};

struct dcpi_callgraph {
	unsigned nevents;       /* the set's columns */
	struct dcpi_cg_proc *procs;
	size_t nprocs, procs_cap;
	struct dcpi_cg_stack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *frames;
	size_t nframes, frames_cap;
	uint64_t total[DCPI_MAX_EVENTS];        /* samples with a stack */
	uint64_t ends[DCPI_STACK_END_N][DCPI_MAX_EVENTS]; /* of them, by how the walk ended */
	uint64_t tail[DCPI_MAX_EVENTS]; /* of them, with a tail call's frame restored */
	size_t nfiles;          /* stacks files read */
	size_t nbad;            /* stacks files refused (corrupt, unreadable) */
	char *first_bad;        /* the first one's message, naming it */
	void *index;            /* private */
};

/* Which stacks, and how procedures are told apart. */
struct dcpi_cg_opts {
	const char *label_spec; /* labels that have every KEY=VALUE of it; NULL: all */
	int64_t pid;            /* >= 0: only that process's stacks (those kept per
				   process, dcpid -bypid); -1: every stack */
	int bypid;              /* a procedure per process for the stacks kept per
				   process (pid in dcpi_cg_proc) */
};

/* The stacks of set's epochs and hosts that o chooses (NULL: every one,
 * processes together), named with symbols from objs.  No stacks file at
 * all is not an error (nfiles 0).  0 or -ENOMEM. */
int dcpi_callgraph_build(struct dcpi_callgraph *g, const struct dcpi_profset *set,
			 const struct dcpi_cg_opts *o, struct dcpi_objcache *objs);
void dcpi_callgraph_free(struct dcpi_callgraph *g);
/* Call cb for each stacks file of set's epochs and hosts (platdir: the
 * directory it is in).  Files that cannot be read are counted in *nbad,
 * the first one's message in *first_bad (malloc'd; NULL when none).  A
 * non-zero return of cb stops the walk and is returned. */
typedef int (*dcpi_callgraph_file_cb)(void *arg, const struct dcpi_stackset *s, const char *platdir);
int dcpi_callgraph_files(const struct dcpi_profset *set, dcpi_callgraph_file_cb cb, void *arg,
			 size_t *nbad, char **first_bad);
/* Whether a stack of label belongs to a report of label_spec (K=V pairs;
 * NULL: every label). */
int dcpi_callgraph_label_kept(const char *label, const char *spec);

/* Whether set's platform directories hold a stacks file at all (names
 * only: nothing is read). */
int dcpi_callgraph_present(const struct dcpi_profset *set);

/* The procedures named proc in an image image names (its path as
 * profiled, its file name, or "kernel"; NULL: any), into idx (at most
 * max); how many there are. */
size_t dcpi_callgraph_find(const struct dcpi_callgraph *g, const char *proc, const char *image,
			   size_t *idx, size_t max);

struct dcpi_cg_edge {
	size_t proc;            /* a procedure, or DCPI_CG_ROOT/STOPPED/SELF */
	uint64_t c[DCPI_MAX_EVENTS];
};

/* The callers of the chain path[0] (a procedure), path[1] (one of its
 * callers), ... path[n-1]: in the stacks where the chain runs outward from
 * path[0]'s outermost occurrence, the frame past path[n-1]; most first by
 * column col.  *out is malloc'd.  0 or -ENOMEM. */
int dcpi_callgraph_callers(const struct dcpi_callgraph *g, const size_t *path, size_t n,
			   unsigned col, struct dcpi_cg_edge **out, size_t *nout);
/* The callees of procedure p: in the stacks that hold it, the frame in
 * from its outermost occurrence (DCPI_CG_SELF: none). */
int dcpi_callgraph_callees(const struct dcpi_callgraph *g, size_t p, unsigned col,
			   struct dcpi_cg_edge **out, size_t *nout);

/* A procedure's (or pseudo-procedure's) name, and image ("" for pseudo). */
const char *dcpi_callgraph_name(const struct dcpi_callgraph *g, size_t p);
const char *dcpi_callgraph_image(const struct dcpi_callgraph *g, size_t p);

#endif
