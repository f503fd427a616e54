/* Symbols of ELF images: reading one file with libelf (dcpi_symtab_open,
 * which picks the files and loads them, is symtab_open.c).  Every ELF is hostile: libelf bounds-checks the headers and section data
 * against the file, and we check every index it does not. */
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

int dcpi_symelf_open(const char *path, struct symelf *f)
{
	const void *id = NULL;
	struct stat sb;
	ssize_t n;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	elf_version(EV_CURRENT);
	/* a search candidate (a profile's path) may name a FIFO or a
	 * device: only a regular file is opened */
	f->fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &sb);
	if (f->fd < 0) {
		err = f->fd;
		goto fail;
	}
	f->uid = sb.st_uid;
	f->nlink = sb.st_nlink;
	/* ELF_C_READ, not mmap: a file rewritten under us must not SIGBUS. */
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		err = dcpi_error(ENOEXEC, "%s: not an ELF file", path);
		goto fail;
	}
	f->path = strdup(path);
	if (!f->path) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto fail;
	}
	n = dwelf_elf_gnu_build_id(f->elf, &id);
	if (n > 0 && (size_t)n <= sizeof(f->id)) {
		memcpy(f->id, id, n);
		f->idlen = n;
	}
	return 0;
fail:
	dcpi_symelf_close(f);
	return err;
}

void dcpi_symelf_close(struct symelf *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static Elf_Scn *find_section(Elf *elf, unsigned type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_size)
			return scn;
	return NULL;
}

int dcpi_symelf_has_section(const struct symelf *f, unsigned type)
{
	return f->elf && find_section(f->elf, type) != NULL;
}

int dcpi_symelf_has_dwarf(const struct symelf *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;

	if (!f->elf || elf_getshdrstrndx(f->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return 1;
	}
	return 0;
}

/* Section facts a symbol needs: is it code, where does it end. */
struct sec_info {
	GElf_Shdr *sh;
	size_t n;
};

static int load_sec_info(const struct symelf *f, struct sec_info *si)
{
	Elf_Scn *scn = NULL;
	size_t n;

	if (elf_getshdrnum(f->elf, &n))
		return dcpi_error(EBADMSG, "%s: unreadable section headers: %s", f->path,
				  elf_errmsg(-1));
	si->n = n;
	si->sh = calloc(n ? n : 1, sizeof(*si->sh));
	if (!si->sh)
		return dcpi_error(ENOMEM, "out of memory");
	while ((scn = elf_nextscn(f->elf, scn))) {
		size_t i = elf_ndxscn(scn);

		if (i < n && !gelf_getshdr(scn, &si->sh[i]))
			return dcpi_error(EBADMSG, "%s: section %zu: bad header: %s", f->path, i,
					  elf_errmsg(-1));
	}
	return 0;
}

/* Keep functions, and untyped labels in code (hand-written assembly);
 * skip undefined imports and ARM-style mapping symbols ("$x", "$d"). */
static int want_sym(const GElf_Sym *sym, const struct sec_info *si, const char *name)
{
	unsigned type = GELF_ST_TYPE(sym->st_info);
	const GElf_Shdr *sh;

	if (!name || !*name || name[0] == '$')
		return 0;
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= si->n)
		return 0;
	sh = &si->sh[sym->st_shndx];
	if (!(sh->sh_flags & SHF_ALLOC))
		return 0;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return 1;
	/* Linker-defined markers (_etext, __bss_start) are untyped too, and
	 * sit at or past their section's end: only labels inside code count. */
	return type == STT_NOTYPE && (sh->sh_flags & SHF_EXECINSTR) &&
	       sym->st_value >= sh->sh_addr && sym->st_value - sh->sh_addr < sh->sh_size;
}

static unsigned char bind_of(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return DCPI_SYM_GLOBAL;
	case STB_WEAK:
	case STB_GNU_UNIQUE:
		return DCPI_SYM_WEAK;
	default:
		return DCPI_SYM_LOCAL;
	}
}

static int add_elf_sym(struct dcpi_symtab *st, const GElf_Sym *sym, const char *name,
		       const struct sec_info *si)
{
	const GElf_Shdr *sh = &si->sh[sym->st_shndx];
	struct symtab_in in = { 0 };
	unsigned type = GELF_ST_TYPE(sym->st_info);

	in.s.name = dcpi_symtab_intern(st, name, strlen(name));
	if (!in.s.name)
		return -ENOMEM;
	in.s.vaddr = sym->st_value;
	in.s.size = sym->st_size;
	in.s.bind = bind_of(sym);
	in.is_func = type == STT_FUNC || type == STT_GNU_IFUNC;
	in.limit = UINT64_MAX;
	if (sh->sh_size <= UINT64_MAX - sh->sh_addr && sym->st_value - sh->sh_addr < sh->sh_size)
		in.limit = sh->sh_addr + sh->sh_size;
	return dcpi_symtab_add(st, &in);
}

static int load_table(struct dcpi_symtab *st, const struct symelf *f, Elf_Scn *scn,
		      const struct sec_info *si)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Shdr sh;
	GElf_Sym sym;
	size_t i, n;
	int err;

	if (!data || !gelf_getshdr(scn, &sh))
		return dcpi_error(EBADMSG, "%s: unreadable symbol table: %s", f->path,
				  elf_errmsg(-1));
	if (!sh.sh_entsize || sh.sh_link >= si->n)
		return dcpi_error(EBADMSG, "%s: malformed symbol table header", f->path);
	n = data->d_size / gelf_fsize(f->elf, ELF_T_SYM, 1, EV_CURRENT);
	for (i = 1; i < n; i++) {
		const char *name;

		if (!gelf_getsym(data, i, &sym))
			break;
		name = elf_strptr(f->elf, sh.sh_link, sym.st_name);
		if (!want_sym(&sym, si, name))
			continue;
		err = add_elf_sym(st, &sym, name, si);
		if (err)
			return err;
	}
	return 0;
}

int dcpi_symelf_load_syms(struct dcpi_symtab *st, const struct symelf *f, unsigned type)
{
	struct sec_info si = { 0 };
	Elf_Scn *scn = find_section(f->elf, type);
	int err = 0;

	if (!scn)
		goto out;
	err = load_sec_info(f, &si);
	if (err)
		goto out;
	err = load_table(st, f, scn, &si);
out:
	free(si.sh);
	return err;
}

int dcpi_symelf_has_layout(const struct symelf *f)
{
	GElf_Phdr ph;
	size_t i, n;
	int code = 0;

	if (!f->elf || elf_getphdrnum(f->elf, &n))
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (!ph.p_filesz)
			return 0;
		code = 1;
	}
	return code;
}

static int load_segments(struct dcpi_symtab *st, const struct symelf *f)
{
	GElf_Phdr ph;
	size_t i, n;
	int err;

	if (elf_getphdrnum(f->elf, &n))
		return dcpi_error(EBADMSG, "%s: unreadable program headers: %s", f->path,
				  elf_errmsg(-1));
	for (i = 0; i < n; i++) {
		struct symtab_seg g;

		if (!gelf_getphdr(f->elf, i, &ph))
			return dcpi_error(EBADMSG, "%s: program header %zu unreadable: %s",
					  f->path, i, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_filesz > UINT64_MAX - ph.p_offset || ph.p_filesz > UINT64_MAX - ph.p_vaddr)
			return dcpi_error(EBADMSG, "%s: PT_LOAD %zu wraps around", f->path, i);
		g = (struct symtab_seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz,
					 !!(ph.p_flags & PF_X) };
		err = dcpi_symtab_add_seg(st, &g);
		if (err)
			return err;
	}
	return 0;
}

static int load_sections(struct dcpi_symtab *st, const struct symelf *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;
	int err;

	if (elf_getshdrstrndx(f->elf, &shstrndx))
		return 0; /* no section names: describe() falls back to offsets */
	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		name = elf_strptr(f->elf, shstrndx, sh.sh_name);
		if (!name || !*name)
			continue;
		err = dcpi_symtab_add_sec(st, sh.sh_addr, sh.sh_size, name);
		if (err)
			return err;
	}
	return 0;
}

int dcpi_symelf_load_layout(struct dcpi_symtab *st, const struct symelf *f)
{
	int err = load_segments(st, f);

	if (!err)
		err = load_sections(st, f);
	return err;
}
