/* Where the time went, by image or by procedure: the table dcpiprof
 * prints and `dcpi record` reports.
 *
 * Rows are keyed by (image, procedure, pid): the image is the profiled
 * path ("unknown" for samples of no image), so the profiles of one path
 * in every chosen epoch and host are summed; pid is -1 unless per-process
 * profiles are kept apart.  Counts are by set column (profset.h).
 *
 * Code no symbol covers is never dropped, and keeps its place: named by
 * its section when it is not the main text ("[libc.so.6 .plt]"), else by
 * the 64 KiB of virtual addresses it fell in, cut to its section
 * ("[prog@0x401040-0x40ffff .text]", a range dcpilist takes as printed),
 * so a stripped library still shows where its time went; anonymous
 * memory is "[NAME]", samples of no image "[unknown]".  An image whose
 * symbols cannot be read is one row "[NAME]" and a note that says why.
 *
 * Ownership: the table owns its rows and notes.  Not thread-safe.
 */
#ifndef DCPI_PROCS_H
#define DCPI_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/obj.h"
#include "dcpi/profset.h"

#define DCPI_PROCS_REGION 0x10000     /* unnamed code is grouped by 64 KiB */
#define DCPI_PROCS_MAX_NOTES 4096

struct dcpi_proc_row {
	char *image;            /* the profiled path, or "unknown" */
	char *proc;             /* NULL in image mode */
	int64_t pid;            /* -1 unless by process */
	char *group;            /* NULL unless by label: the value of opts.by
				   ("xz"), "-" for an unlabelled profile */
	uint64_t c[DCPI_MAX_EVENTS];
	uint64_t addr;          /* procedure mode: the symbol's start, when
				   has_addr (every symbol summed into the row
				   starts there; not for labels of code no
				   symbol covers) */
	int has_addr, addr_set;
};

struct dcpi_procs_opts {
	int procs;              /* by procedure (else by image) */
	int bypid;              /* keep per-process profiles apart */
	struct dcpi_objcache *objs;  /* symbols come from here (procedure mode) */
	const char *by;         /* a label key (comm, uid, cgroup): rows are kept
				   apart by its value; NULL: not */
};

struct dcpi_procs {
	struct dcpi_proc_row **rows;  /* after dcpi_procs_sort: the report order */
	size_t n, cap;
	uint64_t total[DCPI_MAX_EVENTS];   /* of every row */
	char **notes;           /* sentences: images whose symbols had a problem */
	size_t nnotes, notes_cap;
	int failed_chosen;      /* symbols of an image in chosen_strict failed */
	void *index;            /* private */
};

/* Build the table from the entries of set with chosen[i] set (NULL: all).
 * An image whose symbols fail sets failed_chosen when strict is nonzero
 * (the caller named it).  0, or -ENOMEM. */
int dcpi_procs_build(struct dcpi_procs *t, const struct dcpi_profset *set,
		     const unsigned char *chosen, int strict, const struct dcpi_procs_opts *o);
void dcpi_procs_free(struct dcpi_procs *t);

/* Order rows by column col, most first; ties by image, procedure, pid. */
void dcpi_procs_sort(struct dcpi_procs *t, int col);
/* How many rows (from the top) a report shows: at most keep, and only
 * while a row has at least cutoff percent of column col's total. */
size_t dcpi_procs_shown(const struct dcpi_procs *t, int col, uint64_t keep, double cutoff);

/* The procedure name of profile offset off (see the top of this file);
 * st may be NULL (symbols unreadable). */
void dcpi_procs_name(const struct dcpi_profile *p, const struct dcpi_symtab *st, uint64_t off,
		     char *buf, size_t len);

/* The same into *buf, grown (realloc) to hold the whole name however long
 * (a C++ name passes 4 KiB): 0, or -ENOMEM. */
int dcpi_procs_name_grow(const struct dcpi_profile *p, const struct dcpi_symtab *st,
			 uint64_t off, char **buf, size_t *cap);

#endif
