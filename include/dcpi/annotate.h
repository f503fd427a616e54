/* Samples on instructions and source lines: what dcpilist and
 * dcpitopcounts print.
 *
 * An annotated image (struct dcpi_annot_image) is one image identity
 * chosen from a profile set: the profiles of it in every chosen epoch,
 * host and process are summed into one table of sampled virtual addresses
 * (ELF vaddrs for files; runtime addresses for the kernel and modules, see
 * symtab.h).  Kernel profiles of other boots (another kallsyms snapshot,
 * another KASLR slide) are moved to the first one's addresses through
 * their symbols: a sample at f+0x10 in one boot is f+0x10 in the other.
 *
 * An annotation (struct dcpi_annotation) is one procedure, a vaddr range
 * [lo, hi), of that image: one row per instruction with its counts (one
 * per set column, profset.h) and its source line, and one row per source
 * line with the sum of its instructions.  Counts go to the instruction
 * that starts at the sampled address; samples that fall inside an
 * instruction, or where no instruction could be decoded, are kept as
 * strays, never dropped (they are in the totals too).
 *
 * What cannot be had is said, not guessed: no code (a kernel without a
 * readable vmlinux, a debug-only image) gives one row per sampled address
 * and a note; no DWARF gives instructions without lines; a source file
 * that cannot be found gives lines without text.  Notes are sentences for
 * the tools to print.
 *
 * Ownership: an image owns its sources, and its obj (symtab, disassembler,
 * DWARF: obj.h) unless the obj came from the caller's objcache;
 * an annotation owns its rows and notes but borrows strings (file and
 * function names) from its image, so close the image last.  The set must
 * outlive the image.  Neither is thread-safe.
 *
 * Bounds: a procedure is at most DCPI_ANNOT_MAX_RANGE bytes and
 * DCPI_DISASM_MAX_INSNS instructions (disasm.h); at most
 * DCPI_ANNOT_MAX_NOTES notes are kept (the last says how many were cut).
 */
#ifndef DCPI_ANNOTATE_H
#define DCPI_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/disasm.h"
#include "dcpi/obj.h"
#include "dcpi/profset.h"
#include "dcpi/source.h"
#include "dcpi/srcline.h"
#include "dcpi/symtab.h"

#define DCPI_ANNOT_MAX_RANGE ((uint64_t)4 << 20)
#define DCPI_ANNOT_MAX_NOTES 32

/* The image keeps the pointers given here: what they point to must live
 * until dcpi_annot_image_close(). */
struct dcpi_annot_opts {
	const struct dcpi_symtab_opts *sym;    /* NULL: defaults */
	const struct dcpi_source_opts *src;    /* NULL: paths as DWARF gives them */
	const char *vmlinux;   /* kernel image to disassemble; NULL: $DCPI_VMLINUX,
				  then /usr/lib/debug/boot/vmlinux-RELEASE and
				  /boot/vmlinux-RELEASE (build-id must match) */
	int no_source;         /* nonzero: do not read source files */
	struct dcpi_objcache *objs; /* images are asked of it (and sym, vmlinux
				       are its options); NULL: opened here */
};

/* One sampled address of the image, counts summed over its profiles. */
struct dcpi_annot_sample {
	uint64_t vaddr;
	uint64_t counts[DCPI_MAX_EVENTS];      /* by set column */
};

struct dcpi_annot_image;

/* Open the image of the profiles set->v[idx[0..n-1]] (the command chose
 * them, e.g. by image name).  The identity with the most samples is
 * taken; profiles of another identity (a rebuilt binary) are left out
 * with a note.  Errors: -EINVAL (n == 0, or an anonymous/unknown-image
 * profile: no code to annotate), symtab errors (-ENOENT, -ESTALE,
 * -ENOEXEC, -EBADMSG) with their messages. */
int dcpi_annot_image_open(const struct dcpi_profset *set, const size_t *idx, size_t n,
			  const struct dcpi_annot_opts *o, struct dcpi_annot_image **out);
void dcpi_annot_image_close(struct dcpi_annot_image *img);

const struct dcpi_symtab *dcpi_annot_image_symtab(const struct dcpi_annot_image *img);
const struct dcpi_profile *dcpi_annot_image_profile(const struct dcpi_annot_image *img);
/* 1 when instructions can be shown, 0 when not (see the notes). */
int dcpi_annot_image_has_code(const struct dcpi_annot_image *img);
/* Sampled addresses in ascending order (valid until close). */
const struct dcpi_annot_sample *dcpi_annot_image_samples(const struct dcpi_annot_image *img,
							 size_t *n);
size_t dcpi_annot_image_nnotes(const struct dcpi_annot_image *img);
const char *dcpi_annot_image_note(const struct dcpi_annot_image *img, size_t i);

/* The one instruction starting at vaddr, decoded from the start of the
 * procedure holding it (so the middle of an instruction is never read as
 * one).  -EDOM when vaddr is inside an instruction: then *insn is that
 * instruction.  -ENODATA when the image has no code or nothing decodes
 * there, disasm errors otherwise. */
int dcpi_annot_image_insn(struct dcpi_annot_image *img, uint64_t vaddr, struct dcpi_insn *insn);
/* Bytes of the image at vaddr (jump tables, constants): 0, -ENODATA
 * when the image has no code, disasm errors otherwise. */
int dcpi_annot_image_read(struct dcpi_annot_image *img, uint64_t vaddr, void *buf, size_t len);
/* dcpi_disasm_arch() of its code, or NULL when it has none. */
const char *dcpi_annot_image_arch(const struct dcpi_annot_image *img);
/* Source line of vaddr: 0, or -ENOENT (no DWARF for it, or none at all). */
int dcpi_annot_image_srcloc(struct dcpi_annot_image *img, uint64_t vaddr,
			    struct dcpi_srcloc *loc);

/* A procedure named on the command line: a symbol name (raw, demangled,
 * or demangled without parameters; IMAGE@0xVADDR for functions found in
 * .eh_frame), NAME@0xADDR (the symbol of that name starting at ADDR, as
 * dcpiprof names one of several of one name), "0xADDR" (the symbol
 * holding it), "0xLO-0xHI" (that range),
 * or a label dcpiprof prints for code no symbol covers,
 * "[IMAGE@0xLO-0xHI SECTION]" (that range, HI included) or
 * "[IMAGE@0xADDR SECTION]" (the symbol holding it).  0 and *lo, *hi, *name (a symbol's name, or
 * NULL for a bare range), or: -ENOENT (no such procedure), -EEXIST
 * (ambiguous), -EINVAL (a malformed or empty range).  On -ENOENT and
 * -EEXIST, cands gets up to max candidates (same-named symbols, else
 * those whose name contains spec) and *ncands how many there are. */
int dcpi_annot_resolve(const struct dcpi_symtab *st, const char *spec, uint64_t *lo,
		       uint64_t *hi, const char **name, const struct dcpi_sym **cands,
		       size_t max, size_t *ncands);

struct dcpi_annot_insn {
	struct dcpi_insn insn;       /* vaddr, bytes, mnemonic, operands; size 0
				        and mnemonic "" when there is no code */
	uint64_t offset;             /* profile offset of vaddr */
	uint64_t counts[DCPI_MAX_EVENTS];
	const char *file;            /* "??" when unknown; owned by the image */
	unsigned line;               /* 0: no line */
	const char *function;        /* innermost function ("??": unknown) */
	const char *inlined_into;    /* NULL, or the function it was inlined in */
	const char *call_file;       /* of the innermost inline site, or NULL */
	unsigned call_line;
	size_t line_index;           /* its row in dcpi_annotation.lines */
};

struct dcpi_annot_line {
	const char *file;            /* "??" for code of no known line */
	unsigned line;
	const char *text;            /* NULL: no source text; owned by the image */
	uint64_t counts[DCPI_MAX_EVENTS];  /* sum of its instructions */
	size_t ninsns;
	size_t first_insn;           /* lowest-address instruction of the line */
};

/* A sample that starts no instruction: inside one (containing_vaddr is
 * that instruction) or outside every decoded one (containing_vaddr 0). */
struct dcpi_annot_stray {
	uint64_t vaddr;
	uint64_t containing_vaddr;
	uint64_t counts[DCPI_MAX_EVENTS];
};

struct dcpi_annotation {
	uint64_t lo, hi;
	unsigned ncols;              /* the set's nevents */
	uint64_t total[DCPI_MAX_EVENTS];   /* instructions + strays */
	struct dcpi_annot_insn *insns;     /* address order */
	size_t ninsns;
	struct dcpi_annot_line *lines;     /* per file (first seen), then line */
	size_t nlines;
	struct dcpi_annot_stray *strays;
	size_t nstrays;
	int has_code;                /* 0: insns are sampled addresses only */
	int has_lines;               /* 0: no DWARF for this range */
	char *notes[DCPI_ANNOT_MAX_NOTES];  /* sentences to show with the listing */
	size_t nnotes, notes_cut;
};

/* Annotate [lo, hi).  Errors: -EINVAL (lo >= hi), -EFBIG (over
 * DCPI_ANNOT_MAX_RANGE), -ENOMEM; problems with code, DWARF or sources
 * are notes, not errors.  out is zeroed on failure. */
int dcpi_annotate(struct dcpi_annot_image *img, uint64_t lo, uint64_t hi,
		  struct dcpi_annotation *out);
void dcpi_annotation_free(struct dcpi_annotation *a);
/* The index of the instruction starting at vaddr, else of the first one
 * after it (ninsns when none is).  O(log n). */
size_t dcpi_annot_insn_at(const struct dcpi_annotation *a, uint64_t vaddr);

/* DCPI's derived columns.  cpi: cycles per instruction retired; freq:
 * estimated executions (instructions retired at the PC).  Both need a
 * cycles event ("cycles" or "cpu-cycles") and an "instructions" event in
 * the set, each with one period; a count of instructions of 0 gives no
 * cpi.  Returns 1 with *cpi / *freq set, 0 when they cannot be computed
 * (then nothing is written): never an invented number. */
int dcpi_annot_derived_cols(const struct dcpi_profset *set, int *cycles_col,
			    int *insns_col);
int dcpi_annot_cpi(const struct dcpi_profset *set, const uint64_t *counts, double *cpi,
		   double *freq);

#endif
