/* Source lines of code addresses (DWARF, through libdw), and reading the
 * source files they name.
 *
 * Addresses are ELF virtual addresses of the image (symtab.h converts the
 * file offsets profiles store).  The DWARF may be in the image itself or
 * in its separate debug file (dcpi_symtab_debug_file()); both give the
 * same vaddrs.
 *
 * A lookup answers what addr2line -i answers: the line-table row holding
 * the address, which for inlined code is the line in the inlined callee's
 * own source, plus the chain of inline call sites from the innermost
 * inlined function out to the real function, so a tool can say "square()
 * inlined at x.c:12 in f()".
 *
 * Ownership: a struct dcpi_srclines owns every string it hands out (file
 * names, function names); they stay valid until dcpi_srcline_close(), so
 * callers may keep and compare the pointers (equal names from one
 * srclines are one pointer).  Not thread-safe: lookups intern strings.
 *
 * Invariants: file names are full paths when the DWARF allows it (a
 * relative name is joined with its unit's DW_AT_comp_dir); file and
 * function are never NULL ("??" when unknown); line 0 means the compiler
 * attributed the code to no line.
 *
 * Hostile input: corrupt DWARF gives an error (-EBADMSG with libdw's
 * message) or partial answers, never a crash; every count is capped.
 */
#ifndef DCPI_SRCLINE_H
#define DCPI_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_SRCLINE_MAX_INLINE 16           /* deeper inline chains are cut */
#define DCPI_SRCLINE_MAX_UNITS (1u << 20)    /* address ranges of CUs indexed */
#define DCPI_SRCLINE_MAX_STRINGS ((size_t)64 << 20)  /* interned bytes */

/* One inline call site: callee was inlined at call_file:call_line into
 * the function named by the next entry (or dcpi_srcloc.outer). */
struct dcpi_inline_site {
	const char *callee;
	const char *call_file;
	unsigned call_line;
	unsigned call_column;
};

struct dcpi_srcloc {
	uint64_t row_vaddr;          /* address of the line-table row used */
	const char *file;
	unsigned line;
	unsigned column;             /* 0: not given */
	const char *function;        /* innermost: the inlined callee if inlined */
	const char *outer;           /* the real (out-of-line) function */
	size_t ninline;              /* entries in inl, innermost first */
	int inline_cut;              /* nonzero: the chain was deeper than kept */
	struct dcpi_inline_site inl[DCPI_SRCLINE_MAX_INLINE];
};

/* One line-table row, for walking a range in address order. */
struct dcpi_srcrow {
	uint64_t vaddr;
	const char *file;
	unsigned line;
	unsigned column;
	unsigned char is_stmt;       /* a recommended breakpoint location */
};

struct dcpi_srclines;

/* Open the DWARF of debug_file (an image with debug info, or its
 * separate debug file).  Returns 0 and *out, or -ENOENT/-EACCES (open),
 * -ENOEXEC (not ELF), -ENODATA (no DWARF in the file), -EBADMSG (DWARF
 * libdw refuses); the message names the file. */
int dcpi_srcline_open(const char *debug_file, struct dcpi_srclines **out);
/* The same for the debug file of the image with build-id id (idlen 0:
 * unchecked), checked on the descriptor that is read: -ESTALE when the
 * path names another file now. */
int dcpi_srcline_open_image(const char *debug_file, const uint8_t *id, size_t idlen,
			    struct dcpi_srclines **out);

/* Free everything; NULL is fine. */
void dcpi_srcline_close(struct dcpi_srclines *s);

/* Where vaddr came from.  0 and *loc filled; -ENOENT when no unit or
 * line row covers vaddr (code without debug info: a message is set but
 * callers will usually just print "??"); -EBADMSG when the unit's DWARF
 * is corrupt.  When the line is found but the scopes are not, loc has
 * the line and no inline chain (function "??"). */
int dcpi_srcline_lookup(struct dcpi_srclines *s, uint64_t vaddr, struct dcpi_srcloc *loc);

/* Called per row; nonzero stops the walk and is returned. */
typedef int (*dcpi_srcrow_fn)(const struct dcpi_srcrow *row, void *arg);

/* Every line-table row with lo <= vaddr < hi, end-of-sequence markers
 * left out: unit by unit (in the order of their lowest address), each
 * unit's rows in address order, rows at one address in table order.  A
 * function's range lies in one unit, so its rows come out sorted.
 * Returns 0, the callback's value, -EINVAL (lo > hi) or -EBADMSG (a
 * unit's line table is corrupt; rows before it were delivered). */
int dcpi_srcline_range(struct dcpi_srclines *s, uint64_t lo, uint64_t hi,
		       dcpi_srcrow_fn fn, void *arg);

#endif
