/* Pseudo-images: JIT code written as an ELF file the tools read like any
 * other image (DCPI's on-disk pseudo-images for DBG$DYN code).
 *
 * Layout: one PT_LOAD (read + execute) at file offset and address
 * DCPI_JITIMAGE_TEXT, holding the functions back to back in the order
 * given, each at a 16-byte aligned offset (dcpi_jitimage_place says
 * where).  A run of functions with code bytes is a .text section; a run of
 * functions whose bytes are not known (perf maps) is a .jit.nocode
 * section of type SHT_NOBITS, so disassemblers say there is no code
 * rather than show zeros.  Symbols are global functions with their sizes;
 * a .note.gnu.build-id holds the SHA-1 of the content (names, sizes and
 * code), so identical code from many processes gets one name and the same
 * bytes.  File offsets equal addresses: profile offsets are file offsets;
 * the no-code ranges are zeros in the buffer, which the database writes
 * as holes (no disk space).
 * Source lines, when any function has some, are a DWARF 4 line table
 * (.debug_line) with one compile unit covering the text (.debug_info,
 * .debug_abbrev), so the tools' line reader needs nothing special; lines
 * out of order or past their function are dropped.
 */
#ifndef DCPI_JITIMAGE_H
#define DCPI_JITIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"
#include "dcpi/sha1.h"

#define DCPI_JITIMAGE_TEXT 0x1000u
#define DCPI_JITIMAGE_ALIGN 16u
#define DCPI_JITIMAGE_MAX_FUNCS (1u << 20)
#define DCPI_JITIMAGE_MAX_TEXT ((uint64_t)1 << 30)  /* bytes of code in one image */
#define DCPI_JITIMAGE_NAME_MAX 4096
#define DCPI_JITIMAGE_MAX_FILES 65536 /* distinct source files in one image */

struct dcpi_jit_line {
	uint64_t offset;        /* in the function, < its size */
	uint32_t line;          /* > 0 */
	const char *file;       /* NUL-terminated, not empty */
};

struct dcpi_jit_func {
	const char *name;       /* NUL-terminated, at most DCPI_JITIMAGE_NAME_MAX */
	uint64_t size;          /* > 0 */
	const uint8_t *code;    /* size bytes, or NULL: not known */
	const struct dcpi_jit_line *lines; /* by ascending offset; NULL or nlines */
	size_t nlines;
};

/* Where function i of n lands: the offset (= address) following a
 * function that ended at end.  Callers placing functions one by one use
 * this to know offsets before the image is built. */
uint64_t dcpi_jitimage_place(uint64_t end);

/* Append the ELF image of funcs[0..n) to out and set id to its build-id.
 * -EINVAL (message) for an empty name, a zero size, or more than the
 * caps; out is unchanged on error. */
int dcpi_jitimage_build(const struct dcpi_jit_func *funcs, size_t n, struct dcpi_buf *out,
			uint8_t id[DCPI_SHA1_LEN]);
/* The same under a build-id given (a grown image keeps its process's id:
 * dcpi_jitmap_image_next). */
int dcpi_jitimage_build_as(const struct dcpi_jit_func *funcs, size_t n, struct dcpi_buf *out,
			   const uint8_t id[DCPI_SHA1_LEN]);

#endif
