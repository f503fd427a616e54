/* dcpi_symtab_open(): picks the files (debuginfo.c), checks them and
 * loads them (symtab_elf.c, symtab_plt.c, symtab_cfi.c).  Apart from
 * symtab_elf.c so that reading one ELF file and finding the files do not
 * depend on each other: symtab_elf.c <- debuginfo.c <- symtab_open.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "symtab_int.h"

/* Every PT_LOAD and section with contents must lie inside the file: a
 * truncated file reads as one whose headers libelf may quietly drop. */
static int check_extents(const struct symelf *f, uint64_t fsize)
{
	Elf_Scn *scn = NULL;
	GElf_Phdr ph;
	GElf_Shdr sh;
	size_t i, n;

	if (elf_getphdrnum(f->elf, &n))
		return dcpi_error(EBADMSG, "%s: program headers unreadable: %s", f->path,
				  elf_errmsg(-1));
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(f->elf, i, &ph))
			return dcpi_error(EBADMSG, "%s: program header %zu unreadable", f->path, i);
		if (ph.p_type == PT_LOAD && (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset))
			return dcpi_error(EBADMSG, "%s: PT_LOAD %zu ends past the end of the file "
					  "(truncated?)", f->path, i);
	}
	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return dcpi_error(EBADMSG, "%s: section header unreadable", f->path);
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > fsize || sh.sh_size > fsize - sh.sh_offset))
			return dcpi_error(EBADMSG, "%s: section %zu ends past the end of the file "
					  "(truncated?)", f->path, elf_ndxscn(scn));
	}
	return 0;
}

/* A file whose headers cannot be read whole is corrupt, whatever part of
 * it we would have used: say so at open rather than show an empty profile. */
static int check_headers(const struct symelf *f)
{
	GElf_Ehdr eh;
	struct stat sb;
	uint64_t tab;
	size_t n;

	if (!gelf_getehdr(f->elf, &eh))
		return dcpi_error(EBADMSG, "%s: bad ELF header: %s", f->path, elf_errmsg(-1));
	if (fstat(f->fd, &sb))
		return dcpi_error(errno, "%s: %s", f->path, strerror(errno));
	if (elf_getshdrnum(f->elf, &n))
		return dcpi_error(EBADMSG, "%s: section headers unreadable: %s", f->path,
				  elf_errmsg(-1));
	if (n < eh.e_shnum)
		n = eh.e_shnum; /* libelf reports 0 when the table lies past the end */
	tab = (uint64_t)n * eh.e_shentsize;
	if (n && (eh.e_shoff > (uint64_t)sb.st_size || tab > (uint64_t)sb.st_size - eh.e_shoff))
		return dcpi_error(EBADMSG, "%s: section headers at 0x%llx past the end of the file "
				  "(%lld bytes; truncated or corrupt)", f->path,
				  (unsigned long long)eh.e_shoff, (long long)sb.st_size);
	tab = (uint64_t)eh.e_phnum * eh.e_phentsize;
	if (eh.e_phoff > (uint64_t)sb.st_size || tab > (uint64_t)sb.st_size - eh.e_phoff)
		return dcpi_error(EBADMSG, "%s: program headers past the end of the file", f->path);
	return check_extents(f, sb.st_size);
}

/* Pick the file the symbols come from: a .symtab wins over a .dynsym,
 * the debug file's over the image's. */
static int load_symbols(struct dcpi_symtab *st, const struct symelf *img,
			const struct symelf *dbg)
{
	const struct symelf *src = NULL;
	unsigned type = SHT_SYMTAB;

	if (dbg->elf && dcpi_symelf_has_section(dbg, SHT_SYMTAB))
		src = dbg;
	else if (img->elf && dcpi_symelf_has_section(img, SHT_SYMTAB))
		src = img;
	else if (img->elf && dcpi_symelf_has_section(img, SHT_DYNSYM))
		src = img, type = SHT_DYNSYM;
	else if (dbg->elf && dcpi_symelf_has_section(dbg, SHT_DYNSYM))
		src = dbg, type = SHT_DYNSYM;
	if (!src) {
		st->source = DCPI_SYMSRC_NONE;
		return dcpi_symtab_note(st, "no symbol table: every address is unnamed");
	}
	st->source = type == SHT_SYMTAB ? DCPI_SYMSRC_SYMTAB : DCPI_SYMSRC_DYNSYM;
	if (type == SHT_DYNSYM)
		dcpi_symtab_note(st, "symbols from .dynsym only (no debug file found)");
	if (dcpi_symtab_set_str(&st->debug_file, src->path))
		return -ENOMEM;
	dcpi_symtab_set_owner(st, src->uid);
	return dcpi_symelf_load_syms(st, src, type);
}

/* Stripped code: its functions from .eh_frame, said once in the message. */
static int name_from_cfi(struct dcpi_symtab *st, const struct symelf *img)
{
	int n = dcpi_symelf_load_cfi(st, img);

	if (n > 0)
		dcpi_symtab_note(st, "%d functions without symbols named from .eh_frame (%s@0xADDR)",
				 n, dcpi_symtab_label(st));
	return n < 0 ? n : 0;
}

static int open_files(struct dcpi_symtab *st, const char *path, const uint8_t *id,
		      size_t idlen, const struct dcpi_symtab_opts *opts, struct symelf *img,
		      struct symelf *dbg)
{
	int err = dcpi_debuginfo_find_image(st, path, id, idlen, opts, img, dbg);

	if (err < 0)
		return err;
	if (err == 0) {
		err = check_headers(img);
		if (err)
			return err;
		if (dcpi_symelf_has_section(img, SHT_SYMTAB) && dcpi_symelf_has_dwarf(img))
			return 0;
		err = dcpi_debuginfo_find_debug(img, path, opts, dbg);
		if (err == -ENOENT)
			return 0;
		return err;
	}
	return check_headers(dbg);
}

int dcpi_symtab_open(const char *path, const uint8_t *build_id, size_t build_id_len,
		     const struct dcpi_symtab_opts *opts, struct dcpi_symtab **out)
{
	struct symelf img = { .fd = -1 }, dbg = { .fd = -1 };
	struct dcpi_symtab *st;
	int err;

	*out = NULL;
	if (build_id_len > DCPI_BUILD_ID_MAX)
		return dcpi_error(EINVAL, "%s: build-id of %zu bytes is too long", path,
				  build_id_len);
	st = dcpi_symtab_new(DCPI_IMAGE_FILE, path);
	if (!st)
		return -ENOMEM;
	err = open_files(st, path, build_id, build_id_len, opts, &img, &dbg);
	if (err)
		goto out;
	err = dcpi_symelf_load_layout(st, img.elf ? &img : &dbg);
	if (!err)
		err = load_symbols(st, &img, &dbg);
	if (!err && img.elf) { /* the stubs no symbol table names; before the
				  CFI's names, which they would otherwise take */
		int n = dcpi_symelf_load_plt(st, &img);

		err = n < 0 ? n : 0;
	}
	if (!err && st->source != DCPI_SYMSRC_SYMTAB)
		err = name_from_cfi(st, &img);
	if (!err)
		err = dcpi_symtab_finish(st);
out:
	dcpi_symelf_close(&img);
	dcpi_symelf_close(&dbg);
	if (err) {
		dcpi_symtab_close(st);
		return err;
	}
	*out = st;
	return 0;
}
