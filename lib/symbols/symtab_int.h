/* Private to the symbol layer (symtab.c, symtab_elf.c, symtab_kallsyms.c,
 * debuginfo.c, demangle.c): the symtab's representation and the builder
 * the loaders feed.  Not part of libdcpi's public API.
 *
 * Building: dcpi_symtab_new(), then any number of dcpi_symtab_add*()
 * calls, then one dcpi_symtab_finish(), which sorts, picks one symbol per
 * address, fills sizes and demangles.  Lookups are valid only after it.
 */
#ifndef DCPI_SYMTAB_INT_H
#define DCPI_SYMTAB_INT_H

#include <gelf.h>
#include <stdint.h>

#include "dcpi/buf.h"
#include "dcpi/profile.h"
#include "dcpi/symtab.h"

#define SYMTAB_MAX_SEGS 256       /* PT_LOADs kept; real images have < 10 */
#define SYMTAB_MAX_SECS 4096      /* allocated sections kept for describe() */
#define SYMTAB_POOL_MAX ((size_t)1 << 30) /* bytes of names per symtab */

struct symtab_pool_chunk;

/* One PT_LOAD: file range [off, off + filesz) maps at vaddr. */
struct symtab_seg {
	uint64_t off, vaddr, filesz, memsz;
	int exec;
};

/* One allocated section, for naming addresses no symbol covers. */
struct symtab_sec {
	uint64_t addr, size;
	const char *name;         /* in the pool */
};

/* A symbol while building: limit bounds how far a size-less symbol may
 * be extended (end of its section; UINT64_MAX: unknown). */
struct symtab_in {
	struct dcpi_sym s;
	uint64_t limit;
	unsigned char is_func;    /* STT_FUNC/IFUNC over NOTYPE when choosing */
};

struct dcpi_symtab {
	enum dcpi_image_kind kind;
	char *path;               /* as asked */
	char *image_file;         /* as read; NULL: none */
	char *debug_file;         /* where the symbols came from */
	uid_t owner;              /* see dcpi_symtab_owner(); 0: none */
	char *label;              /* IMAGE in describe(): basename, "kernel", module */
	struct dcpi_buf msg;      /* NUL-terminated once non-empty */
	enum dcpi_symtab_status status;
	enum dcpi_symtab_source source;
	uint8_t build_id[DCPI_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t base;            /* module base; 0 otherwise */
	size_t skipped;

	struct symtab_seg *segs;
	size_t nsegs, capsegs;
	struct symtab_sec *secs;  /* sorted by addr after finish */
	size_t nsecs, capsecs;
	struct dcpi_sym *syms;    /* primaries, sorted by vaddr */
	size_t nsyms;
	struct dcpi_sym *aliases; /* other names at a primary's vaddr */
	size_t naliases;

	struct symtab_in *in;     /* staging; freed by finish */
	size_t nin, capin;
	struct symtab_pool_chunk *pool;
	size_t pool_bytes;
};

/* An ELF file opened for reading symbols; id is its GNU build-id. */
struct symelf {
	int fd;
	Elf *elf;
	char *path;
	uint8_t id[DCPI_BUILD_ID_MAX];
	size_t idlen;
	uid_t uid;              /* the file's owner, as opened */
	nlink_t nlink;          /* its links, as opened */
};

/* symtab.c: the builder. */
struct dcpi_symtab *dcpi_symtab_new(enum dcpi_image_kind kind, const char *path);
/* Record uid, the owner of an image or debug file read, when it is
 * neither root nor the caller (the last such wins: the debug file, whose
 * DWARF names the sources, is read after the image). */
void dcpi_symtab_set_owner(struct dcpi_symtab *st, uid_t uid);
const char *dcpi_symtab_intern(struct dcpi_symtab *st, const char *s, size_t len);
int dcpi_symtab_add(struct dcpi_symtab *st, const struct symtab_in *sym);
int dcpi_symtab_add_seg(struct dcpi_symtab *st, const struct symtab_seg *seg);
int dcpi_symtab_add_sec(struct dcpi_symtab *st, uint64_t addr, uint64_t size, const char *name);
int dcpi_symtab_finish(struct dcpi_symtab *st);
/* IMAGE in names: the label set for kernels and modules, else the
 * path's last component. */
const char *dcpi_symtab_label(const struct dcpi_symtab *st);
/* Append a note to the message ("; " between notes). */
int dcpi_symtab_note(struct dcpi_symtab *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dcpi_symtab_set_str(char **dst, const char *src);

/* symtab_elf.c: reading one ELF file. */
int dcpi_symelf_open(const char *path, struct symelf *f);
void dcpi_symelf_close(struct symelf *f);
/* Nonzero when f has a non-empty section of type (SHT_SYMTAB ...). */
int dcpi_symelf_has_section(const struct symelf *f, unsigned type);
/* Nonzero when f carries DWARF (.debug_info with contents). */
int dcpi_symelf_has_dwarf(const struct symelf *f);
/* Nonzero when f's executable PT_LOADs map file offsets (objcopy
 * --only-keep-debug zeroes their p_filesz, so such a debug file cannot
 * convert profile offsets). */
int dcpi_symelf_has_layout(const struct symelf *f);
int dcpi_symelf_load_syms(struct dcpi_symtab *st, const struct symelf *f, unsigned type);
/* symtab_cfi.c: functions no symbol names, from the image's call-frame
 * information (.eh_frame, .debug_frame): every FDE range in executable
 * sections that holds no symbol's start becomes a local symbol named
 * "IMAGE@0xVADDR".  Returns how many were added, or -ENOMEM. */
int dcpi_symelf_load_cfi(struct dcpi_symtab *st, const struct symelf *f);
/* .eh_frame_hdr's table at d (len bytes, the section at hdr_vaddr): its
 * pairs as (*out)[2i] an FDE's start and (*out)[2i+1] the FDE's own
 * address, sorted by start (the format requires it; a table out of order,
 * or of encodings other than every Linux toolchain's, is taken as none).
 * The number of pairs (0: none; *out malloc'd otherwise). */
size_t dcpi_eh_frame_hdr_table(const uint8_t *d, size_t len, uint64_t hdr_vaddr, uint64_t **out);
/* symtab_plt.c: x86-64 PLT stubs (.plt, .plt.sec, .plt.got) named
 * "SYM@plt" after the relocation of the GOT slot each jumps through, as
 * objdump and perf name them.  Returns how many were named, or -ENOMEM. */
int dcpi_symelf_load_plt(struct dcpi_symtab *st, const struct symelf *f);
int dcpi_symelf_load_layout(struct dcpi_symtab *st, const struct symelf *f);

/* debuginfo.c: finding the right files. */
/* The image to read: the file at root+path when its build-id matches,
 * else a copy.  Returns 0 with *img open, 1 with only *dbg open
 * (DEBUG_ONLY), or -errno.  Sets st's status and message. */
int dcpi_debuginfo_find_image(struct dcpi_symtab *st, const char *path, const uint8_t *id,
			      size_t idlen, const struct dcpi_symtab_opts *opts,
			      struct symelf *img, struct symelf *dbg);
/* Separate debug info for img (found for root+path): 0 with *dbg open,
 * -ENOENT when none is found. */
int dcpi_debuginfo_find_debug(const struct symelf *img, const char *path,
			      const struct dcpi_symtab_opts *opts, struct symelf *dbg);
/* "xx/yyyy..." of a build-id into out (2 * len + 2 bytes). */
void dcpi_debuginfo_id_path(const uint8_t *id, size_t len, char *out);

#endif
