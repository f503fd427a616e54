/* PLT entries named SYM@plt: see dcpi_symelf_load_plt in symtab_int.h.
 *
 * A call to a shared library's function goes through a stub in .plt (or
 * .plt.sec with IBT, .plt.got for functions whose address is also taken)
 * that jumps through the function's GOT slot: "jmp *DISP(%rip)", opcode
 * ff 25 and a 32-bit displacement, after an endbr64 (f3 0f 1e fa) or with
 * a bnd prefix (f2).  The dynamic relocation that fills that slot
 * (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn) names
 * the function.  So each stub is named by decoding its jump, not by
 * counting entries (which breaks on .plt.sec, .plt.got and lazy-binding
 * headers alike).  objdump and perf name the stubs the same way.
 *
 * x86-64 only: other machines' stubs are other instruction sequences, and
 * their entries stay what they were (the section's name).  Everything is
 * read from the file through libelf and bounds-checked: a stub whose jump
 * does not land in a relocated slot gives no name. */
#include <errno.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "internal.h"
#include "symtab_int.h"

#define PLT_MAX_SLOTS (1u << 20)   /* relocations read per image */

struct slot {
	uint64_t got;                  /* the GOT slot's address */
	const char *name;              /* in the ELF's string table */
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static int slot_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct slot *)a)->got, y = ((const struct slot *)b)->got;

	return x < y ? -1 : x > y;
}

/* The function-pointer relocations of one SHT_RELA section. */
static int read_relas(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct slots *s)
{
	Elf_Data *data = elf_getdata(scn, NULL), *syms;
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr symsh;
	size_t n;
	int err;

	if (!data || !symscn || !gelf_getshdr(symscn, &symsh) || symsh.sh_type != SHT_DYNSYM ||
	    !(syms = elf_getdata(symscn, NULL)) || !sh->sh_entsize)
		return 0;
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n && s->n < PLT_MAX_SLOTS; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		unsigned type;

		if (!gelf_getrela(data, (int)i, &r))
			break;
		type = (unsigned)GELF_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(elf, symsh.sh_link, sym.st_name)) || !*name)
			continue;
		if ((err = DCPI_GROW(s->v, s->cap, s->n + 1, PLT_MAX_SLOTS, "PLT slots")))
			return err;
		s->v[s->n++] = (struct slot){ (uint64_t)r.r_offset, name };
	}
	return 0;
}

static const char *slot_name(const struct slots *s, uint64_t got)
{
	struct slot key = { got, NULL };
	const struct slot *hit = s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), slot_cmp) : NULL;

	return hit ? hit->name : NULL;
}

/* The GOT slot the stub at addr (its bytes p[0..n)) jumps through. */
static int stub_target(const uint8_t *p, size_t n, uint64_t addr, uint64_t *got)
{
	for (size_t i = 0; i + 6 <= n; i++) {
		int32_t disp;

		if (p[i] != 0xff || p[i + 1] != 0x25)
			continue;
		/* at the stub's start, after endbr64, or after a bnd prefix */
		if (i != 0 && !(i == 4 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4)) &&
		    !(p[i - 1] == 0xf2 && (i == 1 || (i == 5 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4)))))
			continue;
		memcpy(&disp, p + i + 2, 4);
		*got = addr + i + 6 + (uint64_t)(int64_t)disp;
		return 1;
	}
	return 0;
}

static int is_plt(const char *name)
{
	return name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
			!strcmp(name, ".plt.got"));
}

static int name_stubs(struct dcpi_symtab *st, Elf_Scn *scn, const GElf_Shdr *sh,
		      const struct slots *s, int *added)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	uint64_t step = sh->sh_entsize >= 8 && sh->sh_entsize <= 64 ? sh->sh_entsize : 16;
	char buf[512];
	int err;

	if (!data || sh->sh_type != SHT_PROGBITS || data->d_size < step)
		return 0;
	for (uint64_t off = 0; off + step <= data->d_size; off += step) {
		struct symtab_in in = { 0 };
		const char *name;
		uint64_t got;

		if (!stub_target((const uint8_t *)data->d_buf + off, step, sh->sh_addr + off, &got) ||
		    !(name = slot_name(s, got)))
			continue;
		snprintf(buf, sizeof(buf), "%s@plt", name);
		if (!(in.s.name = dcpi_symtab_intern(st, buf, strlen(buf))))
			return -ENOMEM;
		in.s.vaddr = sh->sh_addr + off;
		in.s.size = step;
		in.s.bind = DCPI_SYM_LOCAL;
		in.is_func = 1;
		in.limit = sh->sh_addr + data->d_size;
		if ((err = dcpi_symtab_add(st, &in)))
			return err;
		(*added)++;
	}
	return 0;
}

int dcpi_symelf_load_plt(struct dcpi_symtab *st, const struct symelf *f)
{
	struct slots s = { 0 };
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	size_t shstr;
	int err = 0, added = 0;

	if (!f->elf || !gelf_getehdr(f->elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(f->elf, &shstr))
		return 0;
	while (!err && (scn = elf_nextscn(f->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = read_relas(f->elf, scn, &sh, &s);
	if (!err && s.n) {
		qsort(s.v, s.n, sizeof(*s.v), slot_cmp);
		while (!err && (scn = elf_nextscn(f->elf, scn)))
			if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
			    is_plt(elf_strptr(f->elf, shstr, sh.sh_name)))
				err = name_stubs(st, scn, &sh, &s, &added);
	}
	free(s.v);
	return err ? err : added;
}
