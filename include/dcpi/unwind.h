/* Unwinding user stacks without frame pointers: an image's call-frame
 * information (.eh_frame, the CFI every x86-64 Linux image keeps for
 * exceptions) compiled once into a compact table, and the step that walks
 * one frame up a sampled stack with it.
 *
 * The table (the OpenTelemetry eBPF profiler's "stack deltas", done in user
 * space) is sorted rows, each covering the image's virtual addresses from
 * its start to the next row's: how to find the Canonical Frame Address
 * (CFA = rsp or rbp + an offset), where the return address is (CFA - 8 on
 * x86-64), and where the caller's rbp was saved (CFA + an offset, or not
 * saved: unchanged).  libdw evaluates the CFI (dwarf_cfi_addrframe) once
 * per row when the table is built; the walk never interprets CFI.  What
 * the table cannot say is a row of kind NONE (no FDE covers the address,
 * or its rule is an expression other than the PLT's) or END (the return
 * address is undefined: the outermost frame, _start).
 *
 * The step reads only the sampled copy of the stack (PERF_SAMPLE_STACK_USER:
 * bytes from the sample's rsp up): a frame whose return address or saved
 * rbp lies outside the copy ends the walk as TRUNCATED; the CFA must rise
 * with every frame (a hostile stack cannot loop), addresses must be user
 * addresses, and nothing is read but the copy.
 *
 * x86-64 only: an image of another machine gives -ENOTSUP.
 */
#ifndef DCPI_UNWIND_H
#define DCPI_UNWIND_H

#include <stddef.h>
#include <stdint.h>

enum dcpi_unwind_kind {
	DCPI_UW_SP,             /* CFA = rsp + cfa_off */
	DCPI_UW_BP,             /* CFA = rbp + cfa_off */
	DCPI_UW_PLT,            /* a PLT entry: CFA = rsp + 8, + 8 more when
				   (ip & 15) >= cfa_off (past its push) */
	DCPI_UW_END,            /* the outermost frame: no caller */
	DCPI_UW_NONE,           /* no rule known here */
};

#define DCPI_UW_SAME INT16_MIN  /* bp_off: rbp is the caller's */

struct dcpi_unwind_row {
	uint64_t start;         /* the first vaddr it covers */
	int32_t cfa_off;
	int16_t bp_off;         /* the caller's rbp at CFA + bp_off, or DCPI_UW_SAME */
	uint8_t kind;           /* enum dcpi_unwind_kind */
	uint8_t pad;
};

/* An executable PT_LOAD segment: file offsets [off, off + len) are at
 * virtual addresses from vaddr (profiles count in file offsets). */
struct dcpi_unwind_seg {
	uint64_t off, len, vaddr;
};
#define DCPI_UNWIND_MAX_SEGS 8

struct dcpi_unwind_table {
	struct dcpi_unwind_row *rows;   /* sorted by start; adjacent rows differ */
	size_t n;
	struct dcpi_unwind_seg segs[DCPI_UNWIND_MAX_SEGS];
	size_t nsegs;
	uint64_t entry;                 /* e_entry: the process's (or ld.so's) first
					   code, whose caller is no one */
	size_t fdes;                    /* FDEs read (so far, when opened) */
	size_t unsupported;             /* rows of rules not taken (kind NONE) */
	struct dcpi_unwind_lazy *lazy;  /* opened: the FDEs not compiled yet */
};

/* Compile the table of the ELF file at path (its .eh_frame, or
 * .debug_frame when it has no .eh_frame).  0, -ENOENT (no CFI at all: an
 * empty table), -ENOTSUP (not x86-64), -EBADMSG (CFI libdw refuses),
 * -ENOMEM; with a message naming the file. */
int dcpi_unwind_table_build(const char *path, struct dcpi_unwind_table *t);
/* The same from an open descriptor (read only, not closed). */
int dcpi_unwind_table_build_fd(int fd, const char *name, struct dcpi_unwind_table *t);
/* The table for lookups: the same checks and errors as building it, but
 * each FDE's rows are compiled when a lookup first falls in it (a table
 * being built costs about 2 us an FDE; a program's samples reach a few of
 * them).  What is read of the file is read here: fd may be closed once
 * this returns.  Lookups then add rows: a row a lookup returned lasts
 * until the next lookup of the same table, and one table is not to be
 * looked up in from two threads at once. */
int dcpi_unwind_table_open_fd(int fd, const char *name, struct dcpi_unwind_table *t);
void dcpi_unwind_table_free(struct dcpi_unwind_table *t);

/* The row covering vaddr, or NULL (before the first row).  The entry
 * point's first 64 bytes, where no FDE covers them (ld.so's _dl_start_user
 * is assembly without CFI), are the outermost frame (an END row). */
const struct dcpi_unwind_row *dcpi_unwind_lookup(struct dcpi_unwind_table *t, uint64_t vaddr);

/* The row covering file offset off (an offset as the loadmap and the
 * profiles give it), through the executable segments; NULL when no
 * executable segment holds it or no row covers it. */
const struct dcpi_unwind_row *dcpi_unwind_lookup_off(struct dcpi_unwind_table *t, uint64_t off);

/* A frame's registers. */
struct dcpi_unwind_regs {
	uint64_t ip, sp, bp;
};

/* The sampled stack: len bytes copied from address base (the sample's rsp)
 * up.  reach, when set, is raised to the end of every read the steps make
 * (the address below which a walk read: dcpi/stacktops.h). */
struct dcpi_unwind_stack {
	const uint8_t *data;
	size_t len;
	uint64_t base;
	uint64_t *reach;
};

enum dcpi_unwind_step_result {
	DCPI_UW_OK,             /* r is now the caller's frame */
	DCPI_UW_STOP_END,       /* the outermost frame: the stack is whole */
	DCPI_UW_STOP_TRUNCATED, /* the caller's frame lies past the copy */
	DCPI_UW_STOP_NORULE,    /* no row, or a row of kind NONE */
	DCPI_UW_STOP_BAD,       /* a CFA that does not rise, a return address
				   outside user space: a stack not to trust */
};

/* One frame up from r with row (NULL: none; the frame-pointer chain is
 * then tried when fp_fallback is set: return address at rbp + 8, caller's
 * rbp at rbp, caller's rsp rbp + 16).  r->ip is the frame's pc as looked up
 * (for a caller, its return address - 1 is what the caller should look
 * up: dcpi_unwind_step leaves the return address in r->ip). */
enum dcpi_unwind_step_result dcpi_unwind_step(const struct dcpi_unwind_row *row,
					      struct dcpi_unwind_regs *r,
					      const struct dcpi_unwind_stack *s, int fp_fallback);

#endif
