/* Pseudo-images of JIT code as ELF files: see dcpi/jitimage.h. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/jitimage.h"
#include "jitimage_priv.h"

#if defined(__x86_64__)
#define JIT_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define JIT_MACHINE EM_AARCH64
#else
#define JIT_MACHINE EM_NONE
#endif

#define MAX_SECTIONS 0xfe00u
#define SHSTRTAB "\0.note.gnu.build-id\0.text\0.jit.nocode\0.symtab\0.strtab\0.shstrtab" \
		 "\0.debug_abbrev\0.debug_info\0.debug_line" /* below SHN_LORESERVE: no extended numbering */
#define NOTE_OFF (sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr))
#define NOTE_LEN (sizeof(Elf64_Nhdr) + 4 + DCPI_SHA1_LEN)

uint64_t dcpi_jitimage_place(uint64_t end)
{
	if (end < DCPI_JITIMAGE_TEXT)
		return DCPI_JITIMAGE_TEXT;
	return (end + DCPI_JITIMAGE_ALIGN - 1) & ~(uint64_t)(DCPI_JITIMAGE_ALIGN - 1);
}

/* A run of consecutive functions that all have code, or all lack it. */
struct run {
	size_t first, n;
	uint64_t start, end;
	int code;
};

struct layout {
	uint64_t *at;           /* per function */
	struct run *runs;
	size_t nruns;
	uint64_t text_end, symtab, strtab, strsz, shstrtab, shstrsz, shdrs;
	unsigned nsec;
	/* DWARF, when some function has lines: .debug_abbrev, _info, _line */
	struct dcpi_buf dw[3];
	uint64_t dw_off[3];
	int has_lines;
};

static int check_funcs(const struct dcpi_jit_func *f, size_t n)
{
	uint64_t end = DCPI_JITIMAGE_TEXT;

	if (n > DCPI_JITIMAGE_MAX_FUNCS)
		return dcpi_error(EINVAL, "pseudo-image of %zu functions (over %u)", n,
				  DCPI_JITIMAGE_MAX_FUNCS);
	for (size_t i = 0; i < n; i++) {
		size_t len = f[i].name ? strnlen(f[i].name, DCPI_JITIMAGE_NAME_MAX + 1) : 0;

		if (len == 0 || len > DCPI_JITIMAGE_NAME_MAX)
			return dcpi_error(EINVAL, "pseudo-image function %zu: name empty or over %u "
					  "bytes", i, DCPI_JITIMAGE_NAME_MAX);
		if (f[i].size == 0 || f[i].size > DCPI_JITIMAGE_MAX_TEXT ||
		    dcpi_jitimage_place(end) - DCPI_JITIMAGE_TEXT >
			    DCPI_JITIMAGE_MAX_TEXT - f[i].size)
			return dcpi_error(EINVAL, "pseudo-image function %s: size %llu is zero or "
					  "the code passes %llu bytes", f[i].name,
					  (unsigned long long)f[i].size,
					  (unsigned long long)DCPI_JITIMAGE_MAX_TEXT);
		end = dcpi_jitimage_place(end) + f[i].size;
	}
	return 0;
}

static uint64_t align8(uint64_t x)
{
	return (x + 7) & ~(uint64_t)7;
}

static int plan(const struct dcpi_jit_func *f, size_t n, struct layout *L)
{
	uint64_t end = DCPI_JITIMAGE_TEXT;

	memset(L, 0, sizeof(*L));
	L->at = calloc(n ? n : 1, sizeof(*L->at));
	L->runs = calloc(n ? n : 1, sizeof(*L->runs));
	if (!L->at || !L->runs)
		return dcpi_error(ENOMEM, "out of memory for a pseudo-image");
	L->strsz = 1;
	for (size_t i = 0; i < n; i++) {
		int code = f[i].code != NULL;

		L->at[i] = dcpi_jitimage_place(end);
		if (!L->nruns || L->runs[L->nruns - 1].code != code)
			L->runs[L->nruns++] = (struct run){ i, 0, L->at[i], L->at[i], code };
		end = L->at[i] + f[i].size;
		L->runs[L->nruns - 1].n++;
		L->runs[L->nruns - 1].end = end;
		L->strsz += strlen(f[i].name) + 1;
	}
	/* null, note, runs, .symtab, .strtab, .shstrtab (+ 3 DWARF sections) */
	if (L->nruns + 8 > MAX_SECTIONS)
		return dcpi_error(EINVAL, "pseudo-image with %zu code runs (over %u)", L->nruns,
				  MAX_SECTIONS - 8);
	L->text_end = end;
	if (dcpi_jitimage_dwarf(f, n, L->at, end, L->dw, &L->has_lines))
		return dcpi_error(ENOMEM, "out of memory for a pseudo-image's lines");
	L->nsec = (unsigned)L->nruns + 5 + (L->has_lines ? 3 : 0);
	L->symtab = align8(end);
	L->strtab = L->symtab + (uint64_t)(n + 1) * sizeof(Elf64_Sym);
	L->shstrtab = L->strtab + L->strsz;
	L->shstrsz = sizeof(SHSTRTAB);
	L->dw_off[0] = L->shstrtab + L->shstrsz;
	for (int k = 1; k < 3; k++)
		L->dw_off[k] = L->dw_off[k - 1] + L->dw[k - 1].len;
	L->shdrs = align8(L->dw_off[2] + L->dw[2].len);
	return 0;
}

static void content_id(const struct dcpi_jit_func *f, size_t n, uint8_t id[DCPI_SHA1_LEN])
{
	struct dcpi_sha1 s;

	dcpi_sha1_init(&s);
	dcpi_sha1_update(&s, "dcpi-jit-1", 10);
	for (size_t i = 0; i < n; i++) {
		uint8_t hdr[9];

		for (int b = 0; b < 8; b++)
			hdr[b] = (uint8_t)(f[i].size >> (8 * b));
		hdr[8] = f[i].code != NULL;
		dcpi_sha1_update(&s, hdr, sizeof(hdr));
		dcpi_sha1_update(&s, f[i].name, strlen(f[i].name) + 1);
		if (f[i].code)
			dcpi_sha1_update(&s, f[i].code, f[i].size);
		for (size_t l = 0; l < f[i].nlines; l++) {
			uint8_t lv[12];

			for (int b = 0; b < 8; b++)
				lv[b] = (uint8_t)(f[i].lines[l].offset >> (8 * b));
			for (int b = 0; b < 4; b++)
				lv[8 + b] = (uint8_t)(f[i].lines[l].line >> (8 * b));
			dcpi_sha1_update(&s, lv, sizeof(lv));
			dcpi_sha1_update(&s, f[i].lines[l].file, strlen(f[i].lines[l].file) + 1);
		}
	}
	dcpi_sha1_final(&s, id);
}

static void put_headers(uint8_t *img, const struct layout *L, const uint8_t *id)
{
	Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = JIT_MACHINE, .e_version = EV_CURRENT,
			  .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = L->shdrs,
			  .e_ehsize = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phnum = 2, .e_shentsize = sizeof(Elf64_Shdr),
			  .e_shnum = (Elf64_Half)L->nsec, .e_shstrndx = (Elf64_Half)(L->nruns + 4) };
	Elf64_Phdr ph[2] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = DCPI_JITIMAGE_TEXT,
		  .p_vaddr = DCPI_JITIMAGE_TEXT, .p_paddr = DCPI_JITIMAGE_TEXT,
		  .p_filesz = L->text_end - DCPI_JITIMAGE_TEXT,
		  .p_memsz = L->text_end - DCPI_JITIMAGE_TEXT, .p_align = 0x1000 },
		{ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF, .p_vaddr = NOTE_OFF,
		  .p_paddr = NOTE_OFF, .p_filesz = NOTE_LEN, .p_memsz = NOTE_LEN, .p_align = 4 },
	};
	Elf64_Nhdr nh = { 4, DCPI_SHA1_LEN, NT_GNU_BUILD_ID };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sizeof(eh), ph, sizeof(ph));
	memcpy(img + NOTE_OFF, &nh, sizeof(nh));
	memcpy(img + NOTE_OFF + sizeof(nh), "GNU", 4);
	memcpy(img + NOTE_OFF + sizeof(nh) + 4, id, DCPI_SHA1_LEN);
}

/* Section name offsets in the .shstrtab written by plan's literal. */
enum { SN_NOTE = 1, SN_TEXT = 20, SN_NOCODE = 26, SN_SYMTAB = 38, SN_STRTAB = 46,
       SN_SHSTRTAB = 54, SN_DEBUG = 64 /* then +14, +26: _abbrev, _info, _line */ };

static void put_sections(uint8_t *img, const struct layout *L, size_t nfuncs)
{
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + L->shdrs);
	size_t k = 1;

	sh[k++] = (Elf64_Shdr){ .sh_name = SN_NOTE, .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
				.sh_addr = NOTE_OFF, .sh_offset = NOTE_OFF, .sh_size = NOTE_LEN,
				.sh_addralign = 4 };
	for (size_t r = 0; r < L->nruns; r++)
		sh[k++] = (Elf64_Shdr){ .sh_name = L->runs[r].code ? SN_TEXT : SN_NOCODE,
					.sh_type = L->runs[r].code ? SHT_PROGBITS : SHT_NOBITS,
					.sh_flags = SHF_ALLOC | SHF_EXECINSTR,
					.sh_addr = L->runs[r].start, .sh_offset = L->runs[r].start,
					.sh_size = L->runs[r].end - L->runs[r].start,
					.sh_addralign = DCPI_JITIMAGE_ALIGN };
	sh[k] = (Elf64_Shdr){ .sh_name = SN_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = L->symtab,
			      .sh_size = (nfuncs + 1) * sizeof(Elf64_Sym), .sh_link = (Elf64_Word)k + 1,
			      .sh_info = 1, .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	k++;
	sh[k++] = (Elf64_Shdr){ .sh_name = SN_STRTAB, .sh_type = SHT_STRTAB,
				.sh_offset = L->strtab, .sh_size = L->strsz, .sh_addralign = 1 };
	sh[k++] = (Elf64_Shdr){ .sh_name = SN_SHSTRTAB, .sh_type = SHT_STRTAB,
				.sh_offset = L->shstrtab, .sh_size = L->shstrsz, .sh_addralign = 1 };
	for (int d = 0; L->has_lines && d < 3; d++)
		sh[k++] = (Elf64_Shdr){ .sh_name = SN_DEBUG + (d == 0 ? 0 : d == 1 ? 14 : 26),
					.sh_type = SHT_PROGBITS, .sh_offset = L->dw_off[d],
					.sh_size = L->dw[d].len, .sh_addralign = 1 };
}

static void put_body(uint8_t *img, const struct layout *L, const struct dcpi_jit_func *f,
		     size_t n)
{
	Elf64_Sym *sym = (Elf64_Sym *)(img + L->symtab);
	uint64_t str = 1;
	size_t r = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(f[i].name);

		while (i >= L->runs[r].first + L->runs[r].n)
			r++;
		if (f[i].code)
			memcpy(img + L->at[i], f[i].code, f[i].size);
		sym[i + 1] = (Elf64_Sym){ .st_name = (Elf64_Word)str,
					  .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
					  .st_shndx = (Elf64_Section)(2 + r), .st_value = L->at[i],
					  .st_size = f[i].size };
		memcpy(img + L->strtab + str, f[i].name, len + 1);
		str += len + 1;
	}
	memcpy(img + L->shstrtab, SHSTRTAB, L->shstrsz);
	for (int d = 0; d < 3; d++)
		if (L->dw[d].len)
			memcpy(img + L->dw_off[d], L->dw[d].data, L->dw[d].len);
}

static int build(const struct dcpi_jit_func *funcs, size_t n, struct dcpi_buf *out,
		 uint8_t id[DCPI_SHA1_LEN], int given)
{
	struct layout L;
	uint64_t total;
	uint8_t *img;
	int err = check_funcs(funcs, n);

	if (err)
		return err;
	err = plan(funcs, n, &L);
	if (err)
		goto out;
	total = L.shdrs + (uint64_t)L.nsec * sizeof(Elf64_Shdr);
	err = dcpi_buf_grow(out, total);
	if (err)
		goto out;
	img = out->data + out->len;
	memset(img, 0, total);
	if (!given)
		content_id(funcs, n, id);
	put_headers(img, &L, id);
	put_sections(img, &L, n);
	put_body(img, &L, funcs, n);
	out->len += total;
out:
	free(L.at);
	free(L.runs);
	for (int d = 0; d < 3; d++)
		dcpi_buf_release(&L.dw[d]);
	return err;
}

int dcpi_jitimage_build(const struct dcpi_jit_func *funcs, size_t n, struct dcpi_buf *out,
			uint8_t id[DCPI_SHA1_LEN])
{
	return build(funcs, n, out, id, 0);
}

int dcpi_jitimage_build_as(const struct dcpi_jit_func *funcs, size_t n, struct dcpi_buf *out,
			   const uint8_t id[DCPI_SHA1_LEN])
{
	uint8_t v[DCPI_SHA1_LEN];

	memcpy(v, id, sizeof(v));
	return build(funcs, n, out, v, 1);
}
