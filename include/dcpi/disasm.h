/* Disassembly of an ELF image's code, by virtual address (Capstone).
 *
 * Addresses here are ELF virtual addresses (what nm and objdump print);
 * profiles store file offsets, which symtab.h converts
 * (dcpi_symtab_off2vaddr).  Bytes come from the file itself: the
 * allocated section holding the range, else the PT_LOAD segment whose
 * file image holds it.  A separate debug file (objcopy --only-keep-debug)
 * keeps the section headers but not the code (SHT_NOBITS): disassembling
 * it fails with -ENODATA, as does any range in .bss-like memory.
 *
 * Architectures: x86-64 (and i386), AArch64.  Others fail to open with
 * -ENOTSUP naming the machine.  x86 is printed in AT&T syntax by default,
 * as objdump -d does; dcpi_disasm_set_syntax() switches to Intel.
 *
 * Ownership: a struct dcpi_disasm owns the open file and the Capstone
 * handle until dcpi_disasm_close().  Not thread-safe: one thread per
 * handle (Capstone's handle keeps state).  struct dcpi_insn is a plain
 * value; everything in it is copied, nothing points into the handle.
 *
 * Bounds: a range is at most DCPI_DISASM_MAX_RANGE bytes (a hostile or
 * garbage symbol size is refused with -EFBIG, not walked), and
 * dcpi_disasm_collect() returns at most DCPI_DISASM_MAX_INSNS entries.
 */
#ifndef DCPI_DISASM_H
#define DCPI_DISASM_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_DISASM_MAX_RANGE ((uint64_t)16 << 20)
#define DCPI_DISASM_MAX_INSNS ((size_t)1 << 22)
#define DCPI_INSN_MAX_BYTES 16

/* What an instruction does to control flow (bits of dcpi_insn.flags). */
enum dcpi_insn_flag {
	DCPI_INSN_JUMP = 1 << 0,       /* a jump, conditional or not */
	DCPI_INSN_COND = 1 << 1,       /* ... conditional: may fall through */
	DCPI_INSN_CALL = 1 << 2,
	DCPI_INSN_RET = 1 << 3,
	DCPI_INSN_DIRECT = 1 << 4,     /* target holds the branch/call target */
	DCPI_INSN_INDIRECT = 1 << 5,   /* target in a register or memory */
	DCPI_INSN_BAD = 1 << 6,        /* bytes that do not decode: mnemonic is
					  "(bad)" and size is the minimum step
					  (1 on x86, 4 on AArch64) */
	DCPI_INSN_TRAP = 1 << 7,       /* never falls through (ud2, hlt, brk) */
	DCPI_INSN_LOAD = 1 << 8,       /* reads a memory operand */
	DCPI_INSN_STORE = 1 << 9,      /* writes a memory operand */
};

#define DCPI_INSN_MAX_REGS 8

/* Any control transfer: DCPI_INSN_JUMP|CALL|RET. */
#define DCPI_INSN_BRANCH (DCPI_INSN_JUMP | DCPI_INSN_CALL | DCPI_INSN_RET)

struct dcpi_insn {
	uint64_t vaddr;
	uint64_t target;                 /* valid when flags & DCPI_INSN_DIRECT */
	uint8_t size;                    /* 1..DCPI_INSN_MAX_BYTES */
	uint8_t bytes[DCPI_INSN_MAX_BYTES];
	uint16_t flags;                  /* enum dcpi_insn_flag bits */
	char mnemonic[32];               /* NUL-terminated, cut if longer */
	char operands[160];              /* NUL-terminated, cut if longer */
	unsigned id;                     /* Capstone's instruction id (x86_insn or
					    arm64_insn by dcpi_disasm_arch); 0 bad */
	/* Registers read and written, explicit and implicit (flags included),
	 * each named by its widest form (%eax and %al are %rax; %ymm0 is
	 * %xmm0): Capstone register ids.  At most DCPI_INSN_MAX_REGS each;
	 * further ones are left out (a dependency chain through them is then
	 * not seen: the chains found are a lower bound). */
	uint16_t regs_read[DCPI_INSN_MAX_REGS], regs_write[DCPI_INSN_MAX_REGS];
	uint8_t nregs_read, nregs_write;
};

enum dcpi_disasm_syntax {
	DCPI_SYNTAX_ATT = 0,             /* default; x86 only (objdump -d) */
	DCPI_SYNTAX_INTEL = 1,           /* x86 only (objdump -M intel) */
};

struct dcpi_disasm;

/* Open the ELF file at elf_path for disassembly.  Returns 0 and *out, or
 * -ENOENT/-EACCES/... (open), -ENOEXEC (not ELF), -EBADMSG (corrupt
 * headers), -ENOTSUP (an architecture not mapped); the message names the
 * file. */
int dcpi_disasm_open(const char *elf_path, struct dcpi_disasm **out);
/* The same for the image with build-id id (idlen 0: unchecked), checked
 * on the descriptor that is read: a path swapped for another file since
 * the symbols were read is -ESTALE, never disassembled. */
int dcpi_disasm_open_image(const char *elf_path, const uint8_t *id, size_t idlen,
			   struct dcpi_disasm **out);

/* Open a running kernel's memory for disassembly: /proc/kcore, an ELF
 * core file whose PT_LOAD segments are the kernel's virtual addresses.
 * Its headers are read and checked by hand (its size is the address
 * space's), and each range is read with pread when asked for, so the
 * code is what runs now, patched as it is (alternatives, static keys,
 * ftrace).  Needs CAP_SYS_RAWIO (root).  Errors as dcpi_disasm_open, and
 * -ERANGE from the walks for addresses no segment holds. */
int dcpi_disasm_open_kcore(const char *path, struct dcpi_disasm **out);

/* A handle over code in memory (len bytes at virtual address vaddr, not
 * copied: they must live until close) for arch "x86-64" or "aarch64":
 * for code that is not in a file (the fuzz targets, JIT buffers).
 * -ENOTSUP for another arch. */
int dcpi_disasm_open_mem(const char *arch, const void *code, size_t len, uint64_t vaddr,
			 struct dcpi_disasm **out);

/* Free everything; NULL is fine. */
void dcpi_disasm_close(struct dcpi_disasm *d);

/* -ENOTSUP on architectures without a syntax choice (AArch64) when
 * Intel is asked for; ATT is accepted everywhere. */
int dcpi_disasm_set_syntax(struct dcpi_disasm *d, enum dcpi_disasm_syntax syntax);

/* "x86-64", "i386" or "aarch64". */
const char *dcpi_disasm_arch(const struct dcpi_disasm *d);

/* Called once per instruction, in address order.  A nonzero return stops
 * the walk and is what dcpi_disasm_range() returns. */
typedef int (*dcpi_insn_fn)(const struct dcpi_insn *insn, void *arg);

/* Disassemble [vaddr_lo, vaddr_hi).  The walk steps over undecodable
 * bytes (DCPI_INSN_BAD) rather than stopping, so every byte of the range
 * is covered; an instruction that would run past vaddr_hi is reported
 * as bad.  Returns 0, the callback's nonzero value, or: -EINVAL (lo >
 * hi), -EFBIG (range larger than DCPI_DISASM_MAX_RANGE), -ERANGE (no
 * section or segment of the file holds the range), -ENODATA (the range
 * is in the image's memory but not in this file, e.g. a debug-only
 * file).  An empty range calls nothing and returns 0.  fn NULL: only
 * check that the range can be disassembled. */
int dcpi_disasm_range(struct dcpi_disasm *d, uint64_t vaddr_lo, uint64_t vaddr_hi,
		      dcpi_insn_fn fn, void *arg);

/* Copy len bytes of the image at vaddr (any allocated section or
 * loadable segment held in the file: code, read-only data such as jump
 * tables).  0, or the errors of dcpi_disasm_range. */
int dcpi_disasm_read(struct dcpi_disasm *d, uint64_t vaddr, void *buf, size_t len);

/* The same walk into a malloc'd array the caller frees (NULL when *n is
 * 0).  -EFBIG when more than DCPI_DISASM_MAX_INSNS instructions. */
int dcpi_disasm_collect(struct dcpi_disasm *d, uint64_t vaddr_lo, uint64_t vaddr_hi,
			struct dcpi_insn **insns, size_t *n);

#endif
