/* Symbols of an image: which procedure a profile offset falls in.
 *
 * A symtab answers lookups in the offsets profiles store (profile.h):
 *  - an ELF file (DCPI_IMAGE_FILE): the file offset; it is converted to the
 *    ELF virtual address through the PT_LOAD segment that holds it;
 *  - the kernel (DCPI_IMAGE_KERNEL): the runtime virtual address;
 *  - a module (DCPI_IMAGE_MODULE): address - module base.
 * Symbol addresses (struct dcpi_sym.vaddr) are always virtual addresses:
 * ELF vaddrs for files, runtime addresses for the kernel and modules.
 *
 * Identity: a profile names the image by path and build-id.  Opening checks
 * that the file at the path still is that image; when it is not (rebuilt,
 * upgraded, deleted), a copy with the right build-id is searched for, and
 * when none is found the open fails with -ESTALE rather than attribute
 * samples to other code.  What happened is kept in the symtab (status and
 * message) for the tools to show.
 *
 * Ownership: a struct dcpi_symtab owns every string and symbol it hands
 * out; they stay valid until dcpi_symtab_close().  Functions taking a const
 * symtab do not modify it and may be called from several threads at once.
 *
 * Invariants: symbols are sorted by vaddr, at most one per vaddr (aliases
 * at the same address are kept apart, see dcpi_symtab_find), name is
 * never NULL, and a symbol whose size the image did not give covers up to
 * the next symbol (capped at the end of its section).
 *
 * Names are demangled lazily, by dcpi_sym_demangled(): a report prints a
 * few thousand of the hundreds of thousands of symbols its images hold,
 * and demangling whole tables was most of the time of dcpiprof -i.
 */
#ifndef DCPI_SYMTAB_H
#define DCPI_SYMTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DCPI_SYMTAB_MAX_SYMS (1u << 24)  /* symbols kept from one image */
#define DCPI_KALLSYMS_LINE_MAX 1024      /* longer kallsyms lines are skipped */

/* Binding, as ELF says (kallsyms: T = global, t = local, W/w = weak). */
enum dcpi_sym_bind {
	DCPI_SYM_GLOBAL = 0,
	DCPI_SYM_WEAK = 1,
	DCPI_SYM_LOCAL = 2,
};

struct dcpi_sym {
	uint64_t vaddr;          /* start (see the top of this file) */
	uint64_t size;           /* bytes covered; 0 only when nothing bounds it */
	const char *name;        /* raw, as in the symbol table */
	char *dem;               /* private: dcpi_sym_demangled()'s cache */
	unsigned char bind;      /* enum dcpi_sym_bind */
	unsigned char is_alias;  /* set on dcpi_symtab_find() results only */
};

/* How the symtab relates to the image the profile describes. */
enum dcpi_symtab_status {
	DCPI_SYMTAB_OK = 0,         /* the file at the path, build-id matched */
	DCPI_SYMTAB_UNVERIFIED = 1, /* no build-id to compare (profile or file lacks one) */
	DCPI_SYMTAB_COPY = 2,       /* the file at the path changed or is gone; a copy
				       with the profiled build-id is used instead */
	DCPI_SYMTAB_DEBUG_ONLY = 3, /* no copy of the image, only a debug file that
				       kept the file layout (an unstripped build
				       shipped as .debug): symbols are right, the
				       code may be absent */
};

/* Where the symbols came from. */
enum dcpi_symtab_source {
	DCPI_SYMSRC_NONE = 0,       /* no symbols at all (every lookup misses) */
	DCPI_SYMSRC_SYMTAB = 1,     /* .symtab (of the image or its debug file) */
	DCPI_SYMSRC_DYNSYM = 2,     /* .dynsym only: exported names */
	DCPI_SYMSRC_KALLSYMS = 3,
};

/* Options of dcpi_symtab_open; a NULL pointer means all defaults. */
struct dcpi_symtab_opts {
	const char *debug_path;     /* colon-separated debug directories; NULL:
				       $DCPI_DEBUG_PATH (unset: none) */
	const char *root;           /* prefix for the image path, e.g.
				       "/proc/PID/root" for a container; NULL: none */
	const char *buildid_cache;  /* directory of image copies named
				       DIR/xx/yyyy... (hex build-id split after
				       two digits); NULL: none */
	const char *sys_debug_dir;  /* NULL: "/usr/lib/debug" */
	int no_debuginfod;          /* nonzero: never ask debuginfod.  Otherwise
				       it is asked only when $DEBUGINFOD_URLS is
				       set and non-empty. */
};

struct dcpi_symtab;

/* Open the symbols of the ELF image at path (under opts->root).  build_id
 * (may be NULL / 0 long) is what the profile recorded.
 *
 * Search order for the image, when the file at path is missing or has
 * another build-id: buildid_cache/xx/yyyy, then each debug directory's
 * .build-id/xx/yyyy (distributions link the executable there), then
 * debuginfod's executable; last, a debug file by build-id alone
 * (DCPI_SYMTAB_DEBUG_ONLY), if its PT_LOADs still map file offsets (those
 * of objcopy --only-keep-debug do not: then the open fails, saying so).
 *
 * Separate debug info is searched when the image lacks .symtab or
 * .debug_info: SYSDEBUG/.build-id/xx/yyyy.debug; the .gnu_debuglink name
 * (CRC checked) in the image's directory, its .debug/ subdirectory and
 * SYSDEBUG/<dir>/; each debug_path directory (build-id layout, then the
 * debuglink name); debuginfod.
 *
 * Returns 0 and *out, or: -ENOENT (image gone, no copy found), -ESTALE
 * (image changed, no copy with the profiled build-id found), -ENOEXEC
 * (not ELF), -EBADMSG (corrupt ELF), other -errno; the message names the
 * file and says what is wrong. */
int dcpi_symtab_open(const char *path, const uint8_t *build_id, size_t build_id_len,
		     const struct dcpi_symtab_opts *opts, struct dcpi_symtab **out);

/* Kernel symbols from a kallsyms snapshot ("ADDR TYPE NAME [module]"
 * lines, as /proc/kallsyms).  module NULL: vmlinux (untagged lines), and
 * offsets are addresses; else the lines tagged [module], and offsets are
 * address - base.  Only text symbols (types t T w W) are kept; a symbol's
 * size runs to the next one's address.  Malformed lines (bad hex, missing
 * fields, too long) are skipped and counted (dcpi_symtab_skipped).  Fails
 * with -EBADMSG when nothing parsed, -EACCES when every address is zero
 * (kptr_restrict hid them), -ENOENT when the module has no symbols. */
int dcpi_symtab_open_kallsyms(const char *kallsyms_path, const char *module, uint64_t base,
			      struct dcpi_symtab **out);

/* Free everything; NULL is fine. */
void dcpi_symtab_close(struct dcpi_symtab *st);

/* The symbol containing the profile offset, or NULL.  O(log n). */
const struct dcpi_sym *dcpi_symtab_lookup(const struct dcpi_symtab *st, uint64_t offset);
/* The symbol containing the virtual address, or NULL. */
const struct dcpi_sym *dcpi_symtab_lookup_vaddr(const struct dcpi_symtab *st, uint64_t vaddr);

/* s's name demangled (C++, Rust), or s->name when it is not mangled or
 * cannot be demangled (out of memory).  Never NULL.  Demangled on the
 * first call and kept in s until dcpi_symtab_close(); safe to call from
 * several threads at once (the first result stored wins). */
const char *dcpi_sym_demangled(const struct dcpi_sym *s);

/* Symbols whose raw name, demangled name, or demangled name without its
 * parameter list ("ns::f" for "ns::f(int)") equals name: stores up to max
 * of them in out (primaries and aliases; aliases have is_alias set and
 * point at a copy with the primary's vaddr and size) and returns how many
 * match in all, so count > max or count > 1 tells a caller the name is
 * ambiguous.  O(n), and the first call demangles every name. */
size_t dcpi_symtab_find(const struct dcpi_symtab *st, const char *name,
			const struct dcpi_sym **out, size_t max);

/* Iteration in address order: for (i = 0; i < dcpi_symtab_count(st); i++)
 * dcpi_symtab_sym(st, i).  Aliases are not iterated. */
size_t dcpi_symtab_count(const struct dcpi_symtab *st);
const struct dcpi_sym *dcpi_symtab_sym(const struct dcpi_symtab *st, size_t i);

/* Offset <-> vaddr through the PT_LOAD segments (files), identity (kernel)
 * or the module base.  -ERANGE when no segment holds it. */
int dcpi_symtab_off2vaddr(const struct dcpi_symtab *st, uint64_t off, uint64_t *vaddr);
int dcpi_symtab_vaddr2off(const struct dcpi_symtab *st, uint64_t vaddr, uint64_t *off);

/* The PT_LOAD segment of a file image that holds file offset off (the
 * executable one where two share a page), as the loader maps it: its
 * vaddr, file offset and size in memory, extended down over the segments
 * below it mapped at the same address-to-offset delta (the headers and
 * read-only data before the code: one range of the file at one base, as
 * pprof merges such mappings).  -ERANGE when none holds it, or the image
 * is not a file. */
struct dcpi_symtab_segment {
	uint64_t vaddr, off, memsz;
};
int dcpi_symtab_segment(const struct dcpi_symtab *st, uint64_t off,
			struct dcpi_symtab_segment *seg);

/* A name for an offset no symbol covers, so callers never drop it, in
 * the address space dcpilist takes (the virtual address, '@'):
 *   "[IMAGE@0xVADDR SECTION]"  when a section holds it, e.g.
 *                              "[libfoo.so@0x1030 .plt]"
 *   "[IMAGE@0xVADDR]"          otherwise;
 *   "[IMAGE+0xOFF]"            an offset no segment maps (the profile's);
 * IMAGE is the basename of the profiled path, "kernel" for vmlinux, the
 * module name for a module.  Always NUL-terminates buf (len > 0),
 * truncating; returns the untruncated length. */
size_t dcpi_symtab_describe(const struct dcpi_symtab *st, uint64_t offset, char *buf,
			    size_t len);
/* The name of the allocated ELF section holding offset (".plt", ".text"),
 * or NULL (also for kernel symtabs): lets callers group unnamed samples. */
const char *dcpi_symtab_section(const struct dcpi_symtab *st, uint64_t offset);
/* The same by virtual address, with the section's bounds [*lo, *hi) when
 * lo and hi are not NULL. */
const char *dcpi_symtab_section_at(const struct dcpi_symtab *st, uint64_t vaddr, uint64_t *lo,
				   uint64_t *hi);

/* The path the caller asked for (never NULL). */
const char *dcpi_symtab_path(const struct dcpi_symtab *st);
/* The image file actually read: the path (under the root) or the copy
 * found; NULL with DCPI_SYMTAB_DEBUG_ONLY and for kallsyms. */
const char *dcpi_symtab_image_file(const struct dcpi_symtab *st);
/* The file the symbols came from and where DWARF is to be read: the
 * separate debug file when one was found, else the image file; the
 * kallsyms file for the kernel. */
const char *dcpi_symtab_debug_file(const struct dcpi_symtab *st);
/* The owner of the image or debug file read when it is neither root nor
 * the caller's euid (the debug file's when both are such), else 0: the
 * user whose DWARF names the source files (dcpi_source_opts.image_uid).
 * DCPI_UID_UNKNOWN (dcpi/source.h) for a copy of one link in the
 * database's image cache (opts.buildid_cache): the daemon's copy, made
 * whoever the image's owner was. */
uid_t dcpi_symtab_owner(const struct dcpi_symtab *st);
enum dcpi_symtab_status dcpi_symtab_status(const struct dcpi_symtab *st);
enum dcpi_symtab_source dcpi_symtab_source(const struct dcpi_symtab *st);
/* What the open noticed, for the tools' headers ("file rebuilt since
 * profiling; using copy from ...", "symbols from .dynsym only"); "" when
 * nothing is worth saying.  Never NULL. */
const char *dcpi_symtab_message(const struct dcpi_symtab *st);
/* Build-id of the image the symbols describe (len 0: none known). */
const uint8_t *dcpi_symtab_build_id(const struct dcpi_symtab *st, size_t *len);
/* Lines of a kallsyms file skipped as malformed; 0 for ELF. */
size_t dcpi_symtab_skipped(const struct dcpi_symtab *st);


#endif
