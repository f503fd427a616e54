/* Functions of stripped code from call-frame information: see
 * dcpi_symelf_load_cfi in symtab_int.h.
 *
 * Stripped images (most of a distribution's libraries and programs) keep
 * .eh_frame, because exceptions and stack unwinding need it, and with it
 * .eh_frame_hdr: a table, sorted by address, of the first instruction of
 * every FDE, which the unwinder binary-searches.  One FDE covers one
 * function, so the table's entries are the functions' starts; its end is
 * the FDE's own, its initial location plus its address range, read from
 * the FDE the table points to (never past the next start or its section's
 * end).  Only the encoding every Linux toolchain writes for FDEs is taken
 * (the location PC-relative sdata4, the range 4 bytes), and only when the
 * location read back is the table's: an FDE that does not check out gives
 * no function.  Code between FDEs (functions built without unwind
 * tables) is left to the caller's last resort, never given to the FDE
 * before it.  An FDE libdw cannot read gives no function.
 *
 * The table is read here, bounds-checked against the section: the format
 * (LSB "Linux Standard Base Core", .eh_frame_hdr) is a 4-byte header of
 * encodings, an encoded pointer to .eh_frame, an encoded count, then the
 * pairs.  Only the encodings every Linux toolchain writes for the table
 * (4-byte signed, relative to the section: DW_EH_PE_datarel|sdata4) are
 * taken; an image with another is left as it was. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "internal.h"
#include "symtab_int.h"

#define EH_PE_OMIT 0xff
#define EH_PE_UDATA4 0x03
#define EH_PE_SDATA4 0x0b
#define EH_PE_DATAREL_SDATA4 0x3b
#define MAX_FDES (1u << 22)

struct exec_sec {
	uint64_t lo, hi;
};

struct scan {
	struct dcpi_symtab *st;
	struct dcpi_kv *starts;  /* symbols' starts (keys), sorted */
	size_t nstarts;
	struct exec_sec *secs;   /* executable sections */
	size_t nsecs;
	size_t added;
	const uint8_t *ehf;      /* .eh_frame's bytes, at ehf_vaddr; NULL: none */
	size_t ehf_len;
	uint64_t ehf_vaddr;
};

/* Whether a symbol starts in [lo, hi). */
static int named_within(const struct scan *sc, uint64_t lo, uint64_t hi)
{
	size_t l = 0, h = sc->nstarts;

	while (l < h) {
		size_t m = l + (h - l) / 2;

		if (sc->starts[m].key < lo)
			l = m + 1;
		else
			h = m;
	}
	return l < sc->nstarts && sc->starts[l].key < hi;
}

/* The end of the executable section holding a, or 0 when none does. */
static uint64_t section_end(const struct scan *sc, uint64_t a)
{
	for (size_t i = 0; i < sc->nsecs; i++)
		if (a >= sc->secs[i].lo && a < sc->secs[i].hi)
			return sc->secs[i].hi;
	return 0;
}

/* "IMAGE@0xADDR" into name (len bytes; the label cut to fit), as
 * snprintf("%s@0x%" PRIx64) would write it: tens of thousands of calls on
 * a large stripped image, where snprintf was a tenth of the load.
 * Returns the length. */
static size_t cfi_name(const char *label, uint64_t lo, char *name, size_t len)
{
	char hex[16];
	size_t nl = strlen(label), nh = 0;

	do {
		hex[nh++] = "0123456789abcdef"[lo & 0xf];
		lo >>= 4;
	} while (lo);
	if (nl > len - 1)
		nl = len - 1;
	memcpy(name, label, nl);
	for (const char *p = "@0x"; *p && nl < len - 1; p++)
		name[nl++] = *p;
	while (nh && nl < len - 1)
		name[nl++] = hex[--nh];
	name[nl] = '\0';
	return nl;
}

static int add_function(struct scan *sc, uint64_t lo, uint64_t hi)
{
	struct symtab_in in = { 0 };
	char name[300];
	size_t n;

	if (named_within(sc, lo, hi))
		return 0;
	n = cfi_name(dcpi_symtab_label(sc->st), lo, name, sizeof(name));
	in.s.name = dcpi_symtab_intern(sc->st, name, n);
	if (!in.s.name)
		return -ENOMEM;
	in.s.vaddr = lo;
	in.s.size = hi - lo;
	in.s.bind = DCPI_SYM_LOCAL;
	in.is_func = 1;
	in.limit = hi;
	sc->added++;
	return dcpi_symtab_add(sc->st, &in);
}

static int32_t get_s32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

size_t dcpi_eh_frame_hdr_table(const uint8_t *d, size_t len, uint64_t hdr_vaddr, uint64_t **out)
{
	size_t n, off = 8;
	uint64_t *v;

	*out = NULL;
	/* version 1, eh_frame_ptr as a 4-byte value, count as udata4 */
	if (len < 12 || d[0] != 1 || (d[1] & 0x0f) != EH_PE_SDATA4 ||
	    d[2] != EH_PE_UDATA4 || d[3] != EH_PE_DATAREL_SDATA4)
		return 0;
	n = (uint32_t)get_s32(d + off);
	off += 4;
	if (n == 0 || n > MAX_FDES || n > (len - off) / 8 || !(v = calloc(2 * n, sizeof(*v))))
		return 0;
	for (size_t i = 0; i < n; i++, off += 8) {
		v[2 * i] = hdr_vaddr + (uint64_t)(int64_t)get_s32(d + off);
		v[2 * i + 1] = hdr_vaddr + (uint64_t)(int64_t)get_s32(d + off + 4);
		if (i && v[2 * i] <= v[2 * i - 2]) {
			free(v);
			return 0;
		}
	}
	*out = v;
	return n;
}

/* The end of the function of the FDE at address fde whose table entry
 * says it starts at start: 0 when the FDE is not in .eh_frame, does not
 * use the usual encoding or does not start there. */
static uint64_t fde_end(const struct scan *sc, uint64_t start, uint64_t fde)
{
	uint64_t off = fde - sc->ehf_vaddr, len, begin, range;

	if (!sc->ehf || fde < sc->ehf_vaddr || off > sc->ehf_len || sc->ehf_len - off < 16)
		return 0;
	len = (uint32_t)get_s32(sc->ehf + off);
	if (len < 12 || len == 0xffffffffu || len > sc->ehf_len - off - 4 ||
	    get_s32(sc->ehf + off + 4) == 0) /* a CIE, not an FDE */
		return 0;
	begin = fde + 8 + (uint64_t)(int64_t)get_s32(sc->ehf + off + 8); /* pcrel sdata4 */
	range = (uint32_t)get_s32(sc->ehf + off + 12);
	if (begin != start || range == 0 || start + range < start)
		return 0;
	return start + range;
}

static int add_from_table(struct scan *sc, const uint64_t *v, size_t n)
{
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		uint64_t start = v[2 * i], end = section_end(sc, start), fend;

		if (!end)
			continue; /* not in code we know of */
		if (i + 1 < n && v[2 * i + 2] < end)
			end = v[2 * i + 2];
		fend = fde_end(sc, start, v[2 * i + 1]);
		if (!fend)
			continue;
		err = add_function(sc, start, fend < end ? fend : end);
	}
	return err;
}

static int collect(struct scan *sc, Elf *elf, Elf_Scn **hdr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nsec = 0;
	GElf_Shdr sh;

	*hdr = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &nsec))
		return 0;
	sc->secs = calloc(nsec ? nsec : 1, sizeof(*sc->secs));
	sc->starts = malloc((sc->st->nin ? sc->st->nin : 1) * sizeof(*sc->starts));
	if (!sc->secs || !sc->starts)
		return dcpi_error(ENOMEM, "out of memory");
	while ((scn = elf_nextscn(elf, scn)) && sc->nsecs < nsec) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame_hdr") && sh.sh_type == SHT_PROGBITS)
			*hdr = scn;
		if (name && !strcmp(name, ".eh_frame") && sh.sh_type == SHT_PROGBITS) {
			Elf_Data *data = elf_getdata(scn, NULL);

			if (data && data->d_buf && data->d_size <= sh.sh_size) {
				sc->ehf = data->d_buf;
				sc->ehf_len = data->d_size;
				sc->ehf_vaddr = sh.sh_addr;
			}
		}
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) &&
		    sh.sh_size <= UINT64_MAX - sh.sh_addr)
			sc->secs[sc->nsecs++] = (struct exec_sec){ sh.sh_addr, sh.sh_addr + sh.sh_size };
	}
	for (size_t i = 0; i < sc->st->nin; i++)
		sc->starts[sc->nstarts++] = (struct dcpi_kv){ sc->st->in[i].s.vaddr, 0 };
	return dcpi_sort_kv(sc->starts, sc->nstarts);
}

int dcpi_symelf_load_cfi(struct dcpi_symtab *st, const struct symelf *f)
{
	struct scan sc = { st, NULL, 0, NULL, 0, 0, NULL, 0, 0 };
	Elf_Scn *hdr = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	uint64_t *v = NULL;
	size_t n = 0;
	int err;

	if (!f->elf)
		return 0;
	err = collect(&sc, f->elf, &hdr);
	if (!err && hdr && gelf_getshdr(hdr, &sh) && (data = elf_getdata(hdr, NULL)) &&
	    data->d_buf && data->d_size <= sh.sh_size)
		n = dcpi_eh_frame_hdr_table(data->d_buf, data->d_size, sh.sh_addr, &v);
	if (!err && n)
		err = add_from_table(&sc, v, n);
	free(v);
	free(sc.secs);
	free(sc.starts);
	return err ? err : (int)(sc.added > INT32_MAX ? INT32_MAX : sc.added);
}
