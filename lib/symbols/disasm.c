/* Disassembly of ELF code with Capstone: see dcpi/disasm.h. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include "dcpi/buildid.h"
#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "internal.h"

struct dcpi_disasm {
	char *path;
	int fd;
	const uint8_t *want_id;  /* while opening: the build-id fd must have */
	size_t want_len;
	Elf *elf;
	const uint8_t *file;     /* the whole file, mapped by libelf */
	size_t file_size;
	csh cs;
	cs_insn *ci;             /* Capstone's scratch instruction (with detail) */
	cs_arch arch;
	const char *arch_name;
	unsigned min_step;       /* bytes skipped over an undecodable instruction */
	/* a live kernel's memory (dcpi_disasm_open_kcore): read, not mapped */
	struct kseg *ksegs;      /* its PT_LOAD segments; NULL for ELF files */
	size_t nksegs;
	uint8_t *kbuf;           /* the bytes of the last range read */
	const uint8_t *mem;      /* dcpi_disasm_open_mem: the code, at mem_vaddr */
	size_t mem_len;
	uint64_t mem_vaddr;
};

struct kseg {
	uint64_t vaddr, size, offset;
};

/* The bytes of one range: where they are in the file. */
struct span {
	const uint8_t *p;
	uint64_t lo, hi;
};

static int map_machine(struct dcpi_disasm *d, const GElf_Ehdr *eh, cs_mode *mode)
{
	switch (eh->e_machine) {
	case EM_X86_64:
		d->arch = CS_ARCH_X86;
		*mode = CS_MODE_64;
		d->arch_name = "x86-64";
		d->min_step = 1;
		return 0;
	case EM_386:
		d->arch = CS_ARCH_X86;
		*mode = CS_MODE_32;
		d->arch_name = "i386";
		d->min_step = 1;
		return 0;
	case EM_AARCH64:
		d->arch = CS_ARCH_ARM64;
		*mode = eh->e_ident[EI_DATA] == ELFDATA2MSB ? CS_MODE_BIG_ENDIAN
							    : CS_MODE_LITTLE_ENDIAN;
		d->arch_name = "aarch64";
		d->min_step = 4;
		return 0;
	}
	return dcpi_error(ENOTSUP, "%s: cannot disassemble machine %u (e_machine): only "
			  "x86-64, i386 and aarch64 are supported", d->path, eh->e_machine);
}

static int open_capstone(struct dcpi_disasm *d, cs_mode mode)
{
	cs_err e = cs_open(d->arch, mode, &d->cs);

	if (e != CS_ERR_OK) {
		d->cs = 0;
		return dcpi_error(ENOTSUP, "%s: capstone: %s", d->path, cs_strerror(e));
	}
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (d->arch == CS_ARCH_X86)
		cs_option(d->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	d->ci = cs_malloc(d->cs);
	if (!d->ci)
		return dcpi_error(ENOMEM, "%s: capstone: out of memory", d->path);
	return 0;
}

/* d->path as d->fd, a regular file, never blocking on a FIFO. */
static int open_regular(struct dcpi_disasm *d, int flags)
{
	struct stat st;

	d->fd = dcpi_file_open_regular(AT_FDCWD, d->path, flags, &st);
	if (d->fd < 0)
		return d->fd;
	if (!dcpi_buildid_fd_is(d->fd, d->want_id, d->want_len))
		return dcpi_error(ESTALE, "%s: not the image profiled any more (another build-id)",
				  d->path);
	return 0;
}

static int open_elf(struct dcpi_disasm *d)
{
	GElf_Ehdr eh;
	cs_mode mode = CS_MODE_LITTLE_ENDIAN;
	int err;

	if ((err = open_regular(d, 0)))
		return err;
	elf_version(EV_CURRENT);
	/* ELF_C_READ, not mmap: the file is read into memory (elf_rawfile
	   below), so one its owner truncates or rewrites while we decode
	   cannot SIGBUS the tool (root's, listing a user's program) */
	d->elf = elf_begin(d->fd, ELF_C_READ, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF)
		return dcpi_error(ENOEXEC, "%s: not an ELF file", d->path);
	if (!gelf_getehdr(d->elf, &eh))
		return dcpi_error(EBADMSG, "%s: bad ELF header: %s", d->path, elf_errmsg(-1));
	d->file = (const uint8_t *)elf_rawfile(d->elf, &d->file_size);
	if (!d->file)
		return dcpi_error(EBADMSG, "%s: cannot read: %s", d->path, elf_errmsg(-1));
	err = map_machine(d, &eh, &mode);
	if (err)
		return err;
	return open_capstone(d, mode);
}

static int open_kcore(struct dcpi_disasm *d);

/* A handle for path, filled by opener; freed again if that fails. */
static int open_with(const char *path, const uint8_t *id, size_t idlen,
		     int (*opener)(struct dcpi_disasm *), struct dcpi_disasm **out)
{
	struct dcpi_disasm *d;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return dcpi_error(ENOMEM, "%s: out of memory", path);
	d->fd = -1;
	d->want_id = id;
	d->want_len = idlen;
	d->path = strdup(path);
	err = d->path ? opener(d) : dcpi_error(ENOMEM, "%s: out of memory", path);
	d->want_id = NULL;
	if (err) {
		dcpi_disasm_close(d);
		return err;
	}
	*out = d;
	return 0;
}

int dcpi_disasm_open(const char *elf_path, struct dcpi_disasm **out)
{
	return open_with(elf_path, NULL, 0, open_elf, out);
}

int dcpi_disasm_open_image(const char *elf_path, const uint8_t *id, size_t idlen,
			   struct dcpi_disasm **out)
{
	return open_with(elf_path, id, idlen, open_elf, out);
}

int dcpi_disasm_open_kcore(const char *path, struct dcpi_disasm **out)
{
	return open_with(path, NULL, 0, open_kcore, out);
}

int dcpi_disasm_open_mem(const char *arch, const void *code, size_t len, uint64_t vaddr,
			 struct dcpi_disasm **out)
{
	struct dcpi_disasm *d;
	cs_mode mode;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup("(memory)"))) {
		free(d);
		return dcpi_error(ENOMEM, "out of memory");
	}
	d->fd = -1;
	d->mem = code;
	d->mem_len = len;
	d->mem_vaddr = vaddr;
	if (!strcmp(arch, "x86-64")) {
		d->arch = CS_ARCH_X86, mode = CS_MODE_64, d->arch_name = "x86-64", d->min_step = 1;
	} else if (!strcmp(arch, "aarch64")) {
		d->arch = CS_ARCH_ARM64, mode = CS_MODE_LITTLE_ENDIAN, d->arch_name = "aarch64";
		d->min_step = 4;
	} else {
		dcpi_disasm_close(d);
		return dcpi_error(ENOTSUP, "cannot disassemble architecture '%s': only x86-64 "
				  "and aarch64", arch);
	}
	err = open_capstone(d, mode);
	if (err) {
		dcpi_disasm_close(d);
		return err;
	}
	*out = d;
	return 0;
}

void dcpi_disasm_close(struct dcpi_disasm *d)
{
	if (!d)
		return;
	if (d->ci)
		cs_free(d->ci, 1);
	if (d->cs)
		cs_close(&d->cs);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d->ksegs);
	free(d->kbuf);
	free(d->path);
	free(d);
}

/* ---- kernel memory ------------------------------------------------------- */

static int kcore_read(struct dcpi_disasm *d, void *buf, size_t len, uint64_t off,
		      const char *what)
{
	ssize_t got = pread(d->fd, buf, len, (off_t)off);

	if (got == (ssize_t)len)
		return 0;
	return dcpi_error(got < 0 ? errno : EBADMSG, "%s: cannot read the %s: %s", d->path,
			  what, got < 0 ? strerror(errno) : "file too short");
}

/* The ELF core header and PT_LOAD segments of /proc/kcore, by hand: libelf
 * would read or map the whole "file", which is the kernel's address space. */
static int open_kcore(struct dcpi_disasm *d)
{
	Elf64_Ehdr eh;
	GElf_Ehdr geh;
	cs_mode mode = CS_MODE_LITTLE_ENDIAN;
	int err;

	if ((err = open_regular(d, O_NOFOLLOW)))
		return err;
	if ((err = kcore_read(d, &eh, sizeof(eh), 0, "ELF header")))
		return err;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_CORE)
		return dcpi_error(ENOEXEC, "%s: not a 64-bit little-endian ELF core file", d->path);
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
		return dcpi_error(EBADMSG, "%s: bad program headers (%u of %u bytes)", d->path,
				  eh.e_phnum, eh.e_phentsize);
	memset(&geh, 0, sizeof(geh));
	memcpy(geh.e_ident, eh.e_ident, EI_NIDENT);
	geh.e_machine = eh.e_machine;
	if ((err = map_machine(d, &geh, &mode)))
		return err;
	d->ksegs = calloc(eh.e_phnum, sizeof(*d->ksegs));
	if (!d->ksegs)
		return dcpi_error(ENOMEM, "%s: out of memory", d->path);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if ((err = kcore_read(d, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * sizeof(ph),
				      "program headers")))
			return err;
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0 || ph.p_vaddr + ph.p_filesz < ph.p_vaddr ||
		    ph.p_offset + ph.p_filesz < ph.p_offset || ph.p_offset > (uint64_t)INT64_MAX)
			continue;
		d->ksegs[d->nksegs++] = (struct kseg){ ph.p_vaddr, ph.p_filesz, ph.p_offset };
	}
	if (!d->nksegs)
		return dcpi_error(EBADMSG, "%s: no loadable segment", d->path);
	return open_capstone(d, mode);
}


int dcpi_disasm_set_syntax(struct dcpi_disasm *d, enum dcpi_disasm_syntax syntax)
{
	size_t v;

	if (syntax != DCPI_SYNTAX_ATT && syntax != DCPI_SYNTAX_INTEL)
		return dcpi_error(EINVAL, "unknown disassembly syntax %d", (int)syntax);
	if (d->arch != CS_ARCH_X86)
		return syntax == DCPI_SYNTAX_ATT ? 0
		       : dcpi_error(ENOTSUP, "%s: %s has no Intel syntax", d->path, d->arch_name);
	v = syntax == DCPI_SYNTAX_ATT ? CS_OPT_SYNTAX_ATT : CS_OPT_SYNTAX_INTEL;
	if (cs_option(d->cs, CS_OPT_SYNTAX, v) != CS_ERR_OK)
		return dcpi_error(ENOTSUP, "%s: capstone: %s", d->path,
				  cs_strerror(cs_errno(d->cs)));
	return 0;
}

const char *dcpi_disasm_arch(const struct dcpi_disasm *d)
{
	return d->arch_name;
}

/* ---- where the bytes are ------------------------------------------------ */

/* True when [lo, hi) overlaps [a, a + n). */
static bool overlaps(uint64_t lo, uint64_t hi, uint64_t a, uint64_t n)
{
	return lo < a + n && a < hi && n > 0 && a + n > a;
}

static int file_bytes(struct dcpi_disasm *d, uint64_t off, uint64_t len, struct span *sp)
{
	if (off > d->file_size || len > d->file_size - off)
		return dcpi_error(EBADMSG, "%s: code at file offset 0x%" PRIx64 " runs past the "
				  "end of the file (%zu bytes)", d->path, off, d->file_size);
	sp->p = d->file + off;
	return 0;
}

/* A section holding the whole range.  1: found (sp set); 0: none; <0:
 * error.  An allocated SHT_NOBITS section anywhere in the range means the
 * code is not in this file: a debug-only file, or .bss. */
static int from_sections(struct dcpi_disasm *d, struct span *sp)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int found = 0;
	size_t strndx = 0;

	elf_getshdrstrndx(d->elf, &strndx);
	while ((scn = elf_nextscn(d->elf, scn)) != NULL) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    (sh.sh_flags & SHF_TLS) || !overlaps(sp->lo, sp->hi, sh.sh_addr, sh.sh_size))
			continue;
		if (sh.sh_type == SHT_NOBITS) {
			name = elf_strptr(d->elf, strndx, sh.sh_name);
			return dcpi_error(ENODATA, "%s: 0x%" PRIx64 "-0x%" PRIx64 " is in %s, which "
					  "has no bytes in this file (a separate debug file holds "
					  "no code)", d->path, sp->lo, sp->hi, name ? name : "a section");
		}
		if (!found && sp->lo >= sh.sh_addr && sp->hi - sh.sh_addr <= sh.sh_size) {
			int err = file_bytes(d, sh.sh_offset + (sp->lo - sh.sh_addr),
					     sp->hi - sp->lo, sp);

			if (err)
				return err;
			found = 1;
		}
	}
	return found;
}

/* The PT_LOAD segment holding the whole range in its file image. */
static int from_segments(struct dcpi_disasm *d, struct span *sp)
{
	size_t i, n = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(d->elf, &n) < 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(d->elf, i, &ph) || ph.p_type != PT_LOAD ||
		    sp->lo < ph.p_vaddr || sp->hi - ph.p_vaddr > ph.p_memsz)
			continue;
		if (sp->hi - ph.p_vaddr > ph.p_filesz)
			return dcpi_error(ENODATA, "%s: 0x%" PRIx64 "-0x%" PRIx64 " is memory the "
					  "loader zero-fills, not code in the file", d->path,
					  sp->lo, sp->hi);
		return file_bytes(d, ph.p_offset + (sp->lo - ph.p_vaddr), sp->hi - sp->lo, sp) ?: 1;
	}
	return 0;
}

/* The range from kernel memory: the segment holding it, read with pread
 * (a kcore file claims the whole address space as its size). */
static int from_kcore(struct dcpi_disasm *d, struct span *sp)
{
	size_t len = (size_t)(sp->hi - sp->lo);
	ssize_t got;
	uint8_t *buf;

	for (size_t i = 0; i < d->nksegs; i++) {
		const struct kseg *k = &d->ksegs[i];

		if (sp->lo < k->vaddr || sp->hi - k->vaddr > k->size)
			continue;
		buf = realloc(d->kbuf, len ? len : 1);
		if (!buf)
			return dcpi_error(ENOMEM, "%s: out of memory", d->path);
		d->kbuf = buf;
		got = pread(d->fd, buf, len, (off_t)(k->offset + (sp->lo - k->vaddr)));
		if (got != (ssize_t)len)
			return dcpi_error(got < 0 ? errno : EIO, "%s: reading 0x%" PRIx64 "-0x%"
					  PRIx64 ": %s", d->path, sp->lo, sp->hi,
					  got < 0 ? strerror(errno) : "short read");
		sp->p = buf;
		return 1;
	}
	return 0;
}

static int find_span(struct dcpi_disasm *d, uint64_t lo, uint64_t hi, struct span *sp)
{
	int r;

	if (lo > hi)
		return dcpi_error(EINVAL, "%s: empty range 0x%" PRIx64 "-0x%" PRIx64, d->path, lo, hi);
	if (hi - lo > DCPI_DISASM_MAX_RANGE)
		return dcpi_error(EFBIG, "%s: range 0x%" PRIx64 "-0x%" PRIx64 " is larger than "
				  "the %" PRIu64 " MiB limit", d->path, lo, hi,
				  DCPI_DISASM_MAX_RANGE >> 20);
	sp->lo = lo;
	sp->hi = hi;
	if (d->ksegs)
		return from_kcore(d, sp) == 1 ? 0 : dcpi_error(ERANGE, "%s: 0x%" PRIx64 "-0x%"
			PRIx64 " is in no segment of kernel memory", d->path, lo, hi);
	if (d->mem) {
		if (lo < d->mem_vaddr || hi - d->mem_vaddr > d->mem_len)
			return dcpi_error(ERANGE, "0x%" PRIx64 "-0x%" PRIx64 " is outside the "
					  "code in memory", lo, hi);
		sp->p = d->mem + (lo - d->mem_vaddr);
		return 0;
	}
	r = from_sections(d, sp);
	if (r == 0)
		r = from_segments(d, sp);
	if (r == 0)
		return dcpi_error(ERANGE, "%s: 0x%" PRIx64 "-0x%" PRIx64 " is outside every "
				  "section and loadable segment of the file", d->path, lo, hi);
	return r < 0 ? r : 0;
}

/* ---- classification ----------------------------------------------------- */

static void x86_target(const cs_x86 *x, struct dcpi_insn *in)
{
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		in->flags |= DCPI_INSN_DIRECT;
		in->target = (uint64_t)x->operands[0].imm;
	} else {
		in->flags |= DCPI_INSN_INDIRECT;
	}
}

static void classify_x86(struct dcpi_disasm *d, const cs_insn *ci, struct dcpi_insn *in)
{
	unsigned id = ci->id;

	if (cs_insn_group(d->cs, ci, CS_GRP_RET) || cs_insn_group(d->cs, ci, CS_GRP_IRET))
		in->flags |= DCPI_INSN_RET;
	else if (cs_insn_group(d->cs, ci, CS_GRP_CALL))
		in->flags |= DCPI_INSN_CALL;
	else if (cs_insn_group(d->cs, ci, CS_GRP_JUMP))
		in->flags |= DCPI_INSN_JUMP |
			     (id == X86_INS_JMP || id == X86_INS_LJMP ? 0 : DCPI_INSN_COND);
	else if (id == X86_INS_UD2 || id == X86_INS_UD2B || id == X86_INS_UD0 ||
		 id == X86_INS_HLT)
		in->flags |= DCPI_INSN_TRAP;
	if (in->flags & (DCPI_INSN_CALL | DCPI_INSN_JUMP))
		x86_target(&ci->detail->x86, in);
}

static void arm64_target(const cs_arm64 *a, struct dcpi_insn *in)
{
	if (a->op_count > 0 && a->operands[a->op_count - 1].type == ARM64_OP_IMM) {
		in->flags |= DCPI_INSN_DIRECT;
		in->target = (uint64_t)a->operands[a->op_count - 1].imm;
	} else {
		in->flags |= DCPI_INSN_INDIRECT;
	}
}

/* By instruction id: Capstone 4 does not put every AArch64 branch in a
 * group (BL is not in CS_GRP_CALL). */
static void classify_arm64(const cs_insn *ci, struct dcpi_insn *in)
{
	const cs_arm64 *a = &ci->detail->arm64;

	switch (ci->id) {
	case ARM64_INS_BL:
	case ARM64_INS_BLR:
		in->flags |= DCPI_INSN_CALL;
		break;
	case ARM64_INS_RET:
		in->flags |= DCPI_INSN_RET;
		return;
	case ARM64_INS_B:
		in->flags |= DCPI_INSN_JUMP;
		if (a->cc != ARM64_CC_INVALID && a->cc != ARM64_CC_AL)
			in->flags |= DCPI_INSN_COND;
		break;
	case ARM64_INS_BR:
		in->flags |= DCPI_INSN_JUMP;
		break;
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ:
		in->flags |= DCPI_INSN_JUMP | DCPI_INSN_COND;
		break;
	case ARM64_INS_BRK:
	case ARM64_INS_HLT:
		in->flags |= DCPI_INSN_TRAP;
		return;
	default:
		return;
	}
	arm64_target(a, in);
}

/* ---- memory operands and registers -------------------------------------- */

static void x86_mem(const cs_x86 *x, struct dcpi_insn *in)
{
	for (unsigned i = 0; i < x->op_count && i < 8; i++) {
		if (x->operands[i].type != X86_OP_MEM)
			continue;
		/* lea and nop name a memory operand without touching memory */
		if (in->id == X86_INS_LEA || in->id == X86_INS_NOP)
			continue;
		if (x->operands[i].access & CS_AC_READ)
			in->flags |= DCPI_INSN_LOAD;
		if (x->operands[i].access & CS_AC_WRITE)
			in->flags |= DCPI_INSN_STORE;
	}
	if (in->id == X86_INS_PUSH || in->id == X86_INS_CALL)
		in->flags |= DCPI_INSN_STORE;
	if (in->id == X86_INS_POP || in->id == X86_INS_RET)
		in->flags |= DCPI_INSN_LOAD;
}

static void arm64_mem(const cs_insn *ci, struct dcpi_insn *in)
{
	const char *m = ci->mnemonic;

	if (!strncmp(m, "ld", 2))
		in->flags |= DCPI_INSN_LOAD;
	else if (!strncmp(m, "st", 2))
		in->flags |= DCPI_INSN_STORE;
}

/* The widest register of the same storage: dependencies through %eax and
 * %rax are one chain.  Capstone 4 has no such map; the general-purpose
 * and vector registers are the ones chains run through. */
static unsigned x86_full_reg(unsigned r)
{
	static const uint16_t fam[][5] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 0 },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 0 },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 0 },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 0 },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0 },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0 },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0 },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0 },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 0 },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 0 },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 0 },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 0 },
	};

	if (r >= X86_REG_YMM0 && r <= X86_REG_YMM31)
		return X86_REG_XMM0 + (r - X86_REG_YMM0);
	if (r >= X86_REG_ZMM0 && r <= X86_REG_ZMM31)
		return X86_REG_XMM0 + (r - X86_REG_ZMM0);
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		for (size_t k = 0; k < 5; k++)
			if (fam[i][k] && fam[i][k] == r)
				return fam[i][0];
	return r;
}

static void add_reg(uint16_t *v, uint8_t *n, unsigned r)
{
	for (unsigned i = 0; i < *n; i++)
		if (v[i] == r)
			return;
	if (*n < DCPI_INSN_MAX_REGS)
		v[(*n)++] = (uint16_t)r;
}

static void fill_regs(struct dcpi_disasm *d, const cs_insn *ci, struct dcpi_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	if (cs_regs_access(d->cs, ci, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return;
	for (unsigned i = 0; i < nrd; i++)
		add_reg(in->regs_read, &in->nregs_read,
			d->arch == CS_ARCH_X86 ? x86_full_reg(rd[i]) : rd[i]);
	for (unsigned i = 0; i < nwr; i++)
		add_reg(in->regs_write, &in->nregs_write,
			d->arch == CS_ARCH_X86 ? x86_full_reg(wr[i]) : wr[i]);
}

/* ---- the walk ----------------------------------------------------------- */

static void fill_insn(struct dcpi_disasm *d, const cs_insn *ci, struct dcpi_insn *in)
{
	in->size = ci->size > DCPI_INSN_MAX_BYTES ? DCPI_INSN_MAX_BYTES : (uint8_t)ci->size;
	memcpy(in->bytes, ci->bytes, in->size);
	snprintf(in->mnemonic, sizeof(in->mnemonic), "%s", ci->mnemonic);
	snprintf(in->operands, sizeof(in->operands), "%s", ci->op_str);
	in->id = ci->id;
	if (!ci->detail)
		return;
	if (d->arch == CS_ARCH_X86) {
		classify_x86(d, ci, in);
		x86_mem(&ci->detail->x86, in);
	} else {
		classify_arm64(ci, in);
		arm64_mem(ci, in);
	}
	fill_regs(d, ci, in);
}

static void fill_bad(struct dcpi_disasm *d, const uint8_t *p, size_t left, struct dcpi_insn *in)
{
	in->size = (uint8_t)(left < d->min_step ? left : d->min_step);
	memcpy(in->bytes, p, in->size);
	in->flags = DCPI_INSN_BAD;
	snprintf(in->mnemonic, sizeof(in->mnemonic), "(bad)");
}

int dcpi_disasm_range(struct dcpi_disasm *d, uint64_t vaddr_lo, uint64_t vaddr_hi,
		      dcpi_insn_fn fn, void *arg)
{
	struct span sp = { NULL, 0, 0 };
	uint64_t addr;
	size_t left;
	int err;

	err = find_span(d, vaddr_lo, vaddr_hi, &sp);
	if (err || !fn)
		return err;
	addr = vaddr_lo;
	left = (size_t)(vaddr_hi - vaddr_lo);
	while (left > 0) {
		const uint8_t *code = sp.p + (addr - vaddr_lo);
		size_t n = left;
		uint64_t a = addr;
		struct dcpi_insn in;

		memset(&in, 0, sizeof(in));
		in.vaddr = addr;
		if (cs_disasm_iter(d->cs, &code, &n, &a, d->ci) && d->ci->size > 0 &&
		    d->ci->size <= left)
			fill_insn(d, d->ci, &in);
		else
			fill_bad(d, sp.p + (addr - vaddr_lo), left, &in);
		addr += in.size;
		left -= in.size;
		err = fn(&in, arg);
		if (err)
			return err;
	}
	return 0;
}

int dcpi_disasm_read(struct dcpi_disasm *d, uint64_t vaddr, void *buf, size_t len)
{
	struct span sp = { NULL, 0, 0 };
	int err;

	if (vaddr + len < vaddr)
		return dcpi_error(EINVAL, "0x%" PRIx64 "+%zu wraps around", vaddr, len);
	err = find_span(d, vaddr, vaddr + len, &sp);
	if (err)
		return err;
	memcpy(buf, sp.p, len);
	return 0;
}

struct collect {
	struct dcpi_insn *v;
	size_t n, cap;
	int err;
};

static int collect_one(const struct dcpi_insn *in, void *arg)
{
	struct collect *c = arg;

	c->err = DCPI_GROW(c->v, c->cap, c->n + 1, DCPI_DISASM_MAX_INSNS,
			   "instructions in one range");
	if (c->err)
		return c->err;
	c->v[c->n++] = *in;
	return 0;
}

int dcpi_disasm_collect(struct dcpi_disasm *d, uint64_t vaddr_lo, uint64_t vaddr_hi,
			struct dcpi_insn **insns, size_t *n)
{
	struct collect c = { NULL, 0, 0, 0 };
	int err;

	*insns = NULL;
	*n = 0;
	err = dcpi_disasm_range(d, vaddr_lo, vaddr_hi, collect_one, &c);
	if (err) {
		free(c.v);
		return err;
	}
	*insns = c.v;
	*n = c.n;
	return 0;
}
