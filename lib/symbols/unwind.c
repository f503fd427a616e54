/* Unwind tables compiled from CFI, and the step that uses them: see
 * dcpi/unwind.h.
 *
 * Building: every FDE's start comes from .eh_frame_hdr's sorted table
 * (dcpi_eh_frame_hdr_table); from each start, libdw gives the frame state
 * of an address and the range [start, end) it holds for
 * (dwarf_cfi_addrframe, dwarf_frame_info), so the FDE is walked row by
 * row, each row read once.  A table opened for lookups
 * (dcpi_unwind_table_open_fd) compiles an FDE only when a lookup first
 * falls in it: a run's samples reach a few dozen of libc's 3,700 FDEs,
 * and the whole table (7 ms for libc, 18 for libpython here) would be
 * built while the profiled program runs.  The rules taken are the ones
 * compilers emit for x86-64 code: the CFA as rsp or rbp plus an offset
 * (DW_OP_bregN), the return address saved at CFA - 8, rbp saved at CFA + N
 * or untouched, and the PLT's expression (rsp + 8, + 8 past the entry's
 * push).  Any other rule makes a row of kind NONE, counted: the walk stops
 * there rather than guess. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/unwind.h"
#include "symtab_int.h"

#define REG_BP 6
#define REG_SP 7
#define REG_RA 16
#define MAX_ROWS (1u << 24)
/* libdw computes the row at an address by running its FDE's instructions
 * from the start, so an FDE's rows cost the square of their number (an
 * 800 KB program of one 200,000-row FDE held the daemon 36 s; libdw runs
 * some 2 ns an instruction).  Rows past FDE_MAX_ROWS of one FDE, and past
 * TABLE_MAX_STEPS instructions run for one image, are not compiled:
 * nothing is known there (a NONE row), and stacks stop. */
#define FDE_MAX_ROWS 2048u
#define TABLE_MAX_STEPS ((uint64_t)256 << 20)
#define USER_TOP 0x800000000000ull   /* x86-64 user addresses lie below */

/* What a table opened for lookups keeps: the image's CFI (libdw's, over
 * the sections read into memory) and, per FDE, where its rows are. */
struct dcpi_unwind_lazy {
	Elf *elf;
	Dwarf_CFI *cfi;
	uint64_t *fde;          /* dcpi_eh_frame_hdr_table's pairs: [2i] the start */
	size_t nfde;
	uint32_t *at, *cnt;     /* FDE i's rows: rows[at[i]], cnt[i] of them */
	uint8_t *done;          /* FDE i compiled */
	size_t cap;             /* rows allocated */
	uint64_t steps;         /* CFI instructions run so far (rows x their index) */
};

struct build {
	struct dcpi_unwind_table *t;
	size_t cap;
	size_t floor;           /* rows below it are another FDE's: kept as they are */
	uint64_t steps;         /* as dcpi_unwind_lazy's */
};

static int push(struct build *b, const struct dcpi_unwind_row *r)
{
	struct dcpi_unwind_table *t = b->t;

	if (t->n > b->floor && t->rows[t->n - 1].start == r->start) { /* an empty row before: replaced */
		t->rows[t->n - 1] = *r;
		goto merge;
	}
	if (t->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct dcpi_unwind_row *v;

		if (cap > MAX_ROWS || !(v = realloc(t->rows, cap * sizeof(*v))))
			return dcpi_error(ENOMEM, "unwind table: out of memory (%zu rows)", t->n);
		t->rows = v;
		b->cap = cap;
	}
	t->rows[t->n++] = *r;
merge:	/* the same rule as the row before: one row */
	if (t->n >= b->floor + 2) {
		struct dcpi_unwind_row *p = &t->rows[t->n - 2], *q = &t->rows[t->n - 1];

		if (p->kind == q->kind && p->cfa_off == q->cfa_off && p->bp_off == q->bp_off)
			t->n--;
	}
	return 0;
}

/* The location of a register as "CFA + off": 1 and *off, or 0 (not that
 * shape).  libdw writes an offset rule as DW_OP_call_frame_cfa, then
 * nothing, DW_OP_plus_uconst N, or DW_OP_consts N; DW_OP_plus. */
static int cfa_plus(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	if (n == 1) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	if (n == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
	    ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* "register + offset": DW_OP_bregN, or DW_OP_bregx (libdw writes a
 * DW_CFA_def_cfa rule so: the register, then the offset). */
static int breg(const Dwarf_Op *o, int *reg, int64_t *off)
{
	if (o->atom >= DW_OP_breg0 && o->atom <= DW_OP_breg31) {
		*reg = o->atom - DW_OP_breg0;
		*off = (int64_t)o->number;
		return 1;
	}
	if (o->atom == DW_OP_bregx && o->number < 128) {
		*reg = (int)o->number;
		*off = (int64_t)o->number2;
		return 1;
	}
	return 0;
}

/* The PLT's CFA expression, as binutils writes it for .plt and .plt.sec:
 * DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus.  N, or -1. */
static int plt_threshold(const Dwarf_Op *o, size_t n)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 ||
	    o[1].atom != DW_OP_breg16 || o[1].number != 0 || o[2].atom != DW_OP_lit15 ||
	    o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 ||
	    o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl ||
	    o[8].atom != DW_OP_plus)
		return -1;
	return o[4].atom - DW_OP_lit0;
}

/* The row of one frame state. */
static void row_of(Dwarf_Frame *fr, uint64_t start, struct dcpi_unwind_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;
	int plt, reg;

	memset(r, 0, sizeof(*r));
	r->start = start;
	r->kind = DCPI_UW_NONE;
	r->bp_off = DCPI_UW_SAME;
	/* the return address: saved at CFA - 8, or undefined (outermost) */
	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &n) != 0)
		return;
	if (n == 0 && ops == mem) {
		r->kind = DCPI_UW_END;
		return;
	}
	if (!cfa_plus(ops, n, &off) || off != -8)
		return;
	if (dwarf_frame_cfa(fr, &ops, &n) != 0 || n == 0)
		return;
	if (n == 1 && breg(&ops[0], &reg, &off) && (reg == REG_SP || reg == REG_BP) &&
	    off >= INT32_MIN && off <= INT32_MAX) {
		r->kind = reg == REG_SP ? DCPI_UW_SP : DCPI_UW_BP;
		r->cfa_off = (int32_t)off;
	} else if ((plt = plt_threshold(ops, n)) >= 0) {
		r->kind = DCPI_UW_PLT;
		r->cfa_off = plt;
	} else {
		return;
	}
	/* rbp: untouched, or saved at CFA + off */
	if (dwarf_frame_register(fr, REG_BP, mem, &ops, &n) != 0) {
		r->kind = DCPI_UW_NONE;
		return;
	}
	if (n == 0 && !ops)
		return; /* same value */
	if (n && cfa_plus(ops, n, &off) && off > INT16_MIN && off <= INT16_MAX) {
		r->bp_off = (int16_t)off;
		return;
	}
	if (n == 0) /* undefined: the caller's rbp is lost; frames above need no rbp rule */
		return;
	r->kind = DCPI_UW_NONE;
}

/* The rows of the FDE that starts at lo, up to hi at most. */
static int walk_fde(struct build *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi)
{
	uint64_t a = lo;
	unsigned rows = 0;
	int err = 0;

	while (a < hi && !err) {
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr s, e;
		struct dcpi_unwind_row r;

		if (rows >= FDE_MAX_ROWS || b->steps >= TABLE_MAX_STEPS) {
			b->t->unsupported++;
			break; /* the rest of it: the NONE row below */
		}
		b->steps += ++rows;
		if (dwarf_cfi_addrframe(cfi, a, &fr) != 0 || !fr)
			break; /* no FDE here after all: what follows is the next's */
		if (dwarf_frame_info(fr, &s, &e, NULL) < 0 || e <= a) {
			free(fr);
			break;
		}
		row_of(fr, a, &r);
		b->t->unsupported += r.kind == DCPI_UW_NONE;
		free(fr);
		err = push(b, &r);
		a = e;
	}
	/* past the FDE: nothing known until the next one */
	if (!err && a < hi)
		err = push(b, &(struct dcpi_unwind_row){ .start = a, .kind = DCPI_UW_NONE,
							 .bp_off = DCPI_UW_SAME });
	return err;
}

/* Whether section sh is .eh_frame (its name read after its table's data,
 * see section's note on elf_strptr). */
static int is_eh_frame(Elf *elf, const GElf_Ehdr *eh, const GElf_Shdr *sh)
{
	Elf_Scn *str = elf_getscn(elf, eh->e_shstrndx);
	const char *n;

	if (!str || !elf_getdata(str, NULL))
		return 0;
	n = elf_strptr(elf, eh->e_shstrndx, sh->sh_name);
	return n && !strcmp(n, ".eh_frame");
}

/* ---- CFI checked before libdw runs it ------------------------------------------- */

/* libdw's CFI interpreter grows its register array to the largest register
 * number an instruction names (0.188: a DW_CFA_offset_extended of register
 * 500,000,000 asked for 2 GB, found by fuzz_unwind_table), and an image
 * is its user's to write.  So every CIE's and FDE's instructions are read
 * here first: each register they name must be a machine register (below
 * 128), each opcode one of DWARF's, each operand inside the entry; an
 * image whose CFI fails is not unwound. */

#define MAX_REG 127

struct cfi_rd {
	const uint8_t *p, *end;
};

static int rd_uleb(struct cfi_rd *r, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
		uint8_t b = *r->p++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static int rd_skip(struct cfi_rd *r, uint64_t n)
{
	if (n > (uint64_t)(r->end - r->p))
		return -1;
	r->p += n;
	return 0;
}

/* A register operand: read and below MAX_REG. */
static int rd_reg(struct cfi_rd *r)
{
	uint64_t reg;

	return rd_uleb(r, &reg) || reg > MAX_REG ? -1 : 0;
}

/* The instructions [p, end): 0 when every one is known and names machine
 * registers only; addr_size is the FDE pointer size DW_CFA_set_loc takes. */
static int check_insns(const uint8_t *p, const uint8_t *end, unsigned addr_size)
{
	struct cfi_rd r = { p, end };
	uint64_t v;

	while (r.p < r.end) {
		uint8_t op = *r.p++;
		int err = 0;

		switch (op >> 6) {
		case 1: continue;                                       /* advance_loc */
		case 2: err = rd_uleb(&r, &v); break;                   /* offset: reg in op */
		case 3: continue;                                       /* restore */
		}
		if (op >> 6) {
			if (err)
				return -1;
			continue;
		}
		switch (op) {
		case DW_CFA_nop: case DW_CFA_remember_state: case DW_CFA_restore_state:
			break;
		case DW_CFA_set_loc: err = rd_skip(&r, addr_size); break;
		case DW_CFA_advance_loc1: err = rd_skip(&r, 1); break;
		case DW_CFA_advance_loc2: err = rd_skip(&r, 2); break;
		case DW_CFA_advance_loc4: err = rd_skip(&r, 4); break;
		case DW_CFA_def_cfa_offset: case DW_CFA_def_cfa_offset_sf: case DW_CFA_GNU_args_size:
			err = rd_uleb(&r, &v);
			break;
		case DW_CFA_restore_extended: case DW_CFA_undefined: case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			err = rd_reg(&r);
			break;
		case DW_CFA_offset_extended: case DW_CFA_def_cfa: case DW_CFA_offset_extended_sf:
		case DW_CFA_def_cfa_sf: case DW_CFA_val_offset: case DW_CFA_val_offset_sf:
		case DW_CFA_GNU_negative_offset_extended:
			err = rd_reg(&r) || rd_uleb(&r, &v);
			break;
		case DW_CFA_register:
			err = rd_reg(&r) || rd_reg(&r);
			break;
		case DW_CFA_def_cfa_expression:
			err = rd_uleb(&r, &v) || rd_skip(&r, v);
			break;
		case DW_CFA_expression: case DW_CFA_val_expression:
			err = rd_reg(&r) || rd_uleb(&r, &v) || rd_skip(&r, v);
			break;
		default:
			return -1; /* not an opcode of DWARF's */
		}
		if (err)
			return -1;
	}
	return 0;
}

struct cie_enc {
	uint64_t off;
	uint8_t enc;            /* the FDEs' pointer encoding ('R'), 0: absolute */
	uint8_t z;              /* augmentation data sized ('z') */
};

/* The CIE's FDE pointer encoding from its augmentation ("zR", "zPLR"):
 * 0, or -1 for one not taken. */
static int cie_encoding(const Dwarf_CIE *c, struct cie_enc *ce)
{
	const char *a = c->augmentation;
	struct cfi_rd r = { c->augmentation_data, c->augmentation_data + c->augmentation_data_size };

	ce->enc = 0;
	ce->z = a && a[0] == 'z';
	if (!a || !*a)
		return 0;
	if (!ce->z)
		return -1;
	for (a++; *a; a++) {
		if (*a == 'R') {
			if (r.p >= r.end)
				return -1;
			ce->enc = *r.p++;
		} else if (*a == 'L') {
			if (rd_skip(&r, 1))
				return -1;
		} else if (*a == 'P') {
			uint8_t e;

			if (r.p >= r.end)
				return -1;
			e = *r.p++;
			if (rd_skip(&r, (e & 0x0f) == 0x0b || (e & 0x0f) == 0x03 ? 4 : 8))
				return -1;
		} else if (*a != 'S') {
			return -1;
		}
	}
	return 0;
}

static int check_cfi(Elf *elf, const char *name)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	struct cie_enc *cies = NULL;
	size_t ncies = 0, cap = 0, nent = 0, nsec = 0;
	int err = 0;

	if (!gelf_getehdr(elf, &eh))
		return -1;
	while ((scn = elf_nextscn(elf, scn)) && !err) {
		GElf_Shdr sh;
		Elf_Data *d;
		Dwarf_Off off = 0, next;
		Dwarf_CFI_Entry e;

		/* .eh_frame by type: unwind sections are PROGBITS (or X86_64_UNWIND) */
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND) ||
		    !(sh.sh_flags & SHF_ALLOC) || !is_eh_frame(elf, &eh, &sh))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		nsec++;
		while (!err) {
			/* an entry libdw cannot read (a length past the section) is
			   refused too: the header's table may still point into it,
			   and libdw would run what lies past the section's data */
			int rc = dwarf_next_cfi(eh.e_ident, d, true, off, &next, &e);

			if (rc) {
				err = rc < 0 ? -1 : 0;
				break;
			}
			if (++nent > 4u << 20) {
				err = -1;
				break;
			}
			if (dwarf_cfi_cie_p(&e)) {
				struct cie_enc ce = { off, 0, 0 };

				if (e.cie.return_address_register > MAX_REG || cie_encoding(&e.cie, &ce) ||
				    check_insns(e.cie.initial_instructions, e.cie.initial_instructions_end, 8)) {
					err = -1;
					break;
				}
				if (ncies == cap) {
					struct cie_enc *v = realloc(cies, (cap = cap ? cap * 2 : 16) * sizeof(*v));

					if (!v) {
						err = -ENOMEM;
						break;
					}
					cies = v;
				}
				cies[ncies++] = ce;
			} else {
				const struct cie_enc *ce = NULL;
				unsigned psz;
				struct cfi_rd r = { e.fde.start, e.fde.end };
				uint64_t alen;

				for (size_t i = ncies; i-- > 0;)
					if (cies[i].off == e.fde.CIE_pointer) {
						ce = &cies[i];
						break;
					}
				/* the pointer size of its encoding: 4 (sdata4, udata4) or 8 */
				psz = !ce ? 0 : (ce->enc & 0x0f) == 0x0b || (ce->enc & 0x0f) == 0x03 ? 4
					: (ce->enc & 0x0f) == 0x0c || (ce->enc & 0x0f) == 0x04 || !ce->enc ? 8 : 0;
				if (!psz || rd_skip(&r, 2 * psz) || (ce->z && (rd_uleb(&r, &alen) ||
									rd_skip(&r, alen))) ||
				    check_insns(r.p, r.end, psz)) {
					err = -1;
					break;
				}
			}
			if (next <= off)
				break;
			off = next;
		}
	}
	free(cies);
	if (!err && !nsec) /* libdw would look for it elsewhere (the program
			     headers): only a .eh_frame read here is handed over */
		return dcpi_error(ENOENT, "%s: no .eh_frame section to unwind with", name);
	if (err == -ENOMEM)
		return dcpi_error(ENOMEM, "out of memory");
	if (err)
		return dcpi_error(EBADMSG, "%s: its call-frame information has an instruction or "
				  "register no compiler writes: not unwound", name);
	return 0;
}

/* .eh_frame_hdr as the program headers locate it (PT_GNU_EH_FRAME, as
 * the dynamic linker's unwinder finds it): no section name is read. */
static const uint8_t *eh_frame_hdr(Elf *elf, uint64_t fsize, uint64_t *vaddr, size_t *len)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		/* within the file: libelf would allocate what the header claims */
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME || !ph.p_filesz ||
		    ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)
			continue;
		if (!(d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE)) ||
		    !d->d_buf || d->d_size != ph.p_filesz)
			return NULL;
		*vaddr = ph.p_vaddr;
		*len = d->d_size;
		return d->d_buf;
	}
	return NULL;
}

/* The executable PT_LOAD segments, in the file. */
static void exec_segments(Elf *elf, uint64_t fsize, struct dcpi_unwind_table *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && t->nsegs < DCPI_UNWIND_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset ||
		    ph.p_vaddr > UINT64_MAX - ph.p_filesz)
			continue;
		t->segs[t->nsegs++] = (struct dcpi_unwind_seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
}

static void lazy_free(struct dcpi_unwind_lazy *z)
{
	if (!z)
		return;
	if (z->cfi)
		dwarf_cfi_end(z->cfi);
	if (z->elf)
		elf_end(z->elf);
	free(z->fde);
	free(z->at);
	free(z->cnt);
	free(z->done);
	free(z);
}

/* Everything but the rows: the segments, the entry, the FDEs' starts, the
 * CFI checked and handed to libdw.  z takes elf. */
static int prepare(Elf *elf, uint64_t fsize, const char *name, struct dcpi_unwind_table *t,
		   struct dcpi_unwind_lazy *z)
{
	GElf_Ehdr eh;
	const uint8_t *hdr;
	uint64_t hdr_vaddr = 0;
	size_t hdr_len = 0;
	int err;

	z->elf = elf;
	if (!gelf_getehdr(elf, &eh))
		return dcpi_error(EBADMSG, "%s: not an ELF file", name);
	if (eh.e_machine != EM_X86_64)
		return dcpi_error(ENOTSUP, "%s: unwinding is for x86-64 code only", name);
	exec_segments(elf, fsize, t);
	t->entry = eh.e_entry;
	if (!(hdr = eh_frame_hdr(elf, fsize, &hdr_vaddr, &hdr_len)) ||
	    !(z->nfde = dcpi_eh_frame_hdr_table(hdr, hdr_len, hdr_vaddr, &z->fde)))
		return dcpi_error(ENOENT, "%s: no .eh_frame_hdr table to unwind with", name);
	if ((err = check_cfi(elf, name)))
		return err;
	if (!(z->cfi = dwarf_getcfi_elf(elf)))
		return dcpi_error(EBADMSG, "%s: .eh_frame: %s", name, dwarf_errmsg(-1));
	return 0;
}

/* FDE i's rows, from its start up to the next FDE's. */
static int walk_nth(struct build *b, const struct dcpi_unwind_lazy *z, size_t i)
{
	b->t->fdes++;
	return walk_fde(b, z->cfi, z->fde[2 * i], i + 1 < z->nfde ? z->fde[2 * i + 2] : UINT64_MAX);
}

/* Every FDE's rows, in order: the whole table. */
static int build_all(struct dcpi_unwind_table *t, struct dcpi_unwind_lazy *z)
{
	struct build b = { t, 0, 0, 0 };
	int err = 0;

	for (size_t i = 0; i < z->nfde && !err; i++)
		err = walk_nth(&b, z, i);
	return err;
}

/* FDE i's rows, after the rows already there (a lookup's first visit). */
static void compile_fde(struct dcpi_unwind_table *t, size_t i)
{
	struct dcpi_unwind_lazy *z = t->lazy;
	struct build b = { t, z->cap, t->n, z->steps };

	/* out of memory or rows: the rows made so far, and none past them */
	(void)walk_nth(&b, z, i);
	z->cap = b.cap;
	z->steps = b.steps;
	z->at[i] = (uint32_t)b.floor;
	z->cnt[i] = (uint32_t)(t->n - b.floor);
	z->done[i] = 1;
}

/* Whether the ELF header's program and section header tables lie in the
 * file (size bytes): libelf allocates what a header claims before it
 * reads, so a corrupt count costs gigabytes of zeroed memory (found by
 * fuzz_unwind_table: 18 s and 14 s of page faults for an 8 KiB file). */
static int headers_fit(int fd, uint64_t size, const char *name)
{
	Elf64_Ehdr h;

	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h.e_ident, ELFMAG, SELFMAG) ||
	    h.e_ident[EI_CLASS] != ELFCLASS64)
		return dcpi_error(EBADMSG, "%s: not a 64-bit ELF file", name);
	if (h.e_phoff > size || (uint64_t)h.e_phnum * h.e_phentsize > size - h.e_phoff ||
	    (h.e_phnum && h.e_phentsize != sizeof(Elf64_Phdr)))
		return dcpi_error(EBADMSG, "%s: its program headers lie past its end", name);
	if (h.e_shoff > size || (uint64_t)h.e_shnum * h.e_shentsize > size - h.e_shoff ||
	    (h.e_shoff && h.e_shentsize != sizeof(Elf64_Shdr)))
		return dcpi_error(EBADMSG, "%s: its section headers lie past its end", name);
	return 0;
}

/* The table of the image on fd with everything but its rows (z kept). */
static int open_fd(int fd, const char *name, struct dcpi_unwind_table *t,
		   struct dcpi_unwind_lazy **out)
{
	struct stat st;
	struct dcpi_unwind_lazy *z;
	Elf *elf;
	int err;

	memset(t, 0, sizeof(*t));
	*out = NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return dcpi_error(EINVAL, "%s: not a regular file", name);
	if ((err = headers_fit(fd, (uint64_t)st.st_size, name)))
		return err;
	if (!(z = calloc(1, sizeof(*z))))
		return dcpi_error(ENOMEM, "out of memory");
	elf_version(EV_CURRENT);
	if (!(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		free(z);
		return dcpi_error(EBADMSG, "%s: %s", name, elf_errmsg(-1));
	}
	if ((err = prepare(elf, (uint64_t)st.st_size, name, t, z))) {
		lazy_free(z);
		memset(t, 0, sizeof(*t));
		return err;
	}
	*out = z;
	return 0;
}

int dcpi_unwind_table_build_fd(int fd, const char *name, struct dcpi_unwind_table *t)
{
	struct dcpi_unwind_lazy *z;
	int err = open_fd(fd, name, t, &z);

	if (err)
		return err;
	err = build_all(t, z);
	lazy_free(z);
	if (err)
		dcpi_unwind_table_free(t);
	return err;
}

int dcpi_unwind_table_open_fd(int fd, const char *name, struct dcpi_unwind_table *t)
{
	struct dcpi_unwind_lazy *z;
	int err = open_fd(fd, name, t, &z);

	if (err)
		return err;
	if (!(z->at = calloc(z->nfde, sizeof(*z->at))) ||
	    !(z->cnt = calloc(z->nfde, sizeof(*z->cnt))) ||
	    !(z->done = calloc(z->nfde, 1))) {
		lazy_free(z);
		memset(t, 0, sizeof(*t));
		return dcpi_error(ENOMEM, "out of memory");
	}
	/* what libdw needs of the file was read by now (the sections'
	   data, the header's table): the descriptor is the caller's again */
	elf_cntl(z->elf, ELF_C_FDDONE);
	t->lazy = z;
	return 0;
}

int dcpi_unwind_table_build(const char *path, struct dcpi_unwind_table *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	err = dcpi_unwind_table_build_fd(fd, path, t);
	close(fd);
	return err;
}

void dcpi_unwind_table_free(struct dcpi_unwind_table *t)
{
	lazy_free(t->lazy);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

/* The last of rows [lo, hi) that starts at or before vaddr, or NULL. */
static const struct dcpi_unwind_row *last_row(const struct dcpi_unwind_table *t, size_t lo,
					      size_t hi, uint64_t vaddr)
{
	size_t l = lo, h = hi;

	while (l < h) { /* the first row starting past vaddr */
		size_t m = l + (h - l) / 2;

		if (t->rows[m].start <= vaddr)
			l = m + 1;
		else
			h = m;
	}
	return l > lo ? &t->rows[l - 1] : NULL;
}

/* A table opened for lookups: the rows of the FDE vaddr falls in,
 * compiled on the first visit. */
static const struct dcpi_unwind_row *lookup_lazy(struct dcpi_unwind_table *t, uint64_t vaddr)
{
	struct dcpi_unwind_lazy *z = t->lazy;
	size_t l = 0, h = z->nfde, i;

	while (l < h) { /* the first FDE starting past vaddr */
		size_t m = l + (h - l) / 2;

		if (z->fde[2 * m] <= vaddr)
			l = m + 1;
		else
			h = m;
	}
	if (!l)
		return NULL;
	i = l - 1;
	if (!z->done[i])
		compile_fde(t, i);
	return last_row(t, z->at[i], (size_t)z->at[i] + z->cnt[i], vaddr);
}

const struct dcpi_unwind_row *dcpi_unwind_lookup(struct dcpi_unwind_table *t, uint64_t vaddr)
{
	const struct dcpi_unwind_row *row = t->lazy ? lookup_lazy(t, vaddr)
						    : last_row(t, 0, t->n, vaddr);

	if (t->entry && vaddr - t->entry < 64 && (!row || row->kind == DCPI_UW_NONE)) {
		static const struct dcpi_unwind_row outermost = { 0, 0, DCPI_UW_SAME, DCPI_UW_END, 0 };

		return &outermost;
	}
	return row;
}

const struct dcpi_unwind_row *dcpi_unwind_lookup_off(struct dcpi_unwind_table *t, uint64_t off)
{
	for (size_t i = 0; i < t->nsegs; i++)
		if (off >= t->segs[i].off && off - t->segs[i].off < t->segs[i].len)
			return dcpi_unwind_lookup(t, off - t->segs[i].off + t->segs[i].vaddr);
	return NULL;
}

/* The 8 bytes at address a of the copy: 0, or -1 when they lie outside. */
static int read64(const struct dcpi_unwind_stack *s, uint64_t a, uint64_t *v)
{
	if (a < s->base || a - s->base > s->len || s->len - (a - s->base) < 8)
		return -1;
	memcpy(v, s->data + (a - s->base), 8);
	if (s->reach && *s->reach < a + 8)
		*s->reach = a + 8;
	return 0;
}

enum dcpi_unwind_step_result dcpi_unwind_step(const struct dcpi_unwind_row *row,
					      struct dcpi_unwind_regs *r,
					      const struct dcpi_unwind_stack *s, int fp_fallback)
{
	uint64_t cfa, ra, bp = r->bp;

	if (!row || row->kind == DCPI_UW_NONE) {
		if (!fp_fallback || !r->bp)
			return DCPI_UW_STOP_NORULE;
		if (r->bp < r->sp) /* a chain that goes down: a loop, or no chain */
			return DCPI_UW_STOP_BAD;
		/* the frame-pointer chain: push rbp; mov rsp, rbp */
		cfa = r->bp + 16;
		if (cfa < r->bp)
			return DCPI_UW_STOP_BAD;
		if (read64(s, r->bp + 8, &ra) || read64(s, r->bp, &bp))
			return DCPI_UW_STOP_TRUNCATED;
	} else if (row->kind == DCPI_UW_END) {
		return DCPI_UW_STOP_END;
	} else {
		uint64_t base = row->kind == DCPI_UW_BP ? r->bp : r->sp;

		if (row->kind == DCPI_UW_PLT)
			cfa = r->sp + 8 + ((r->ip & 15) >= (uint64_t)row->cfa_off ? 8 : 0);
		else
			cfa = base + (uint64_t)(int64_t)row->cfa_off;
		if (read64(s, cfa - 8, &ra))
			return cfa - 8 < s->base ? DCPI_UW_STOP_BAD : DCPI_UW_STOP_TRUNCATED;
		/* rbp's save slot below the stack pointer has been popped: an
		 * epilogue after its "pop %rbp", where GCC's CFI still says
		 * rbp is saved at CFA - N (its rule is not restored until the
		 * ret); rbp then already holds the caller's value */
		if (row->bp_off != DCPI_UW_SAME) {
			uint64_t slot = cfa + (uint64_t)(int64_t)row->bp_off;

			if (slot >= r->sp && read64(s, slot, &bp))
				return DCPI_UW_STOP_TRUNCATED;
		}
	}
	/* a caller's frame lies above its callee's; code is in user space */
	if (cfa <= r->sp || cfa >= USER_TOP)
		return DCPI_UW_STOP_BAD;
	if (ra == 0)
		return DCPI_UW_STOP_END;
	if (ra >= USER_TOP)
		return DCPI_UW_STOP_BAD;
	r->ip = ra;
	r->sp = cfa;
	r->bp = bp;
	return DCPI_UW_OK;
}
