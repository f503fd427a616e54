/* From the interrupted PC to the load it is about to make: decode forward
 * (Capstone, detail on) at most VP_WINDOW instructions, stopping after any
 * control transfer, to the first instruction that reads memory through an
 * explicit operand whose address the saved registers give:
 *   - a read operand (not lea, nop, prefetch, cache flush, pure store);
 *   - base and index general registers (or RIP: the next instruction's
 *     address) not written by an instruction between the PC and it;
 *   - no segment but FS (its base read at %fs:0, which the x86-64 TLS ABI
 *     makes the thread pointer itself) or the flat ones (CS DS ES SS);
 *   - no vector index (gathers).
 * Loads the registers do not give are passed over, not taken: the first
 * one after them may still be.  What is found (struct vp_op) depends on
 * the code bytes alone, not on the registers' values: vp_dcache.c keeps
 * it by PC, and vp_op_address() applies it to a sample's registers.
 *
 * Signal safety: cs_disasm_iter() with a handle and a cs_insn of this
 * thread made beforehand allocates nothing, except that Capstone builds a
 * handle's instruction-id cache on its first decode; vp_decode_open()
 * makes that first decode.  Its printer does allocate for some
 * instructions (an alias such as cvtsd2si from memory: cs_strdup, then
 * cs_mem_free): Capstone's allocator is this file's (CS_OPT_MEM, set
 * before any handle is opened), which while a handler decodes takes from
 * the thread's arena (allocated with its handle) and otherwise is libc's,
 * so that a program that uses Capstone itself is unaffected.  A handle is never shared by threads (its
 * printer keeps state in it) and a thread's handler never runs inside
 * itself (its own signal is blocked while it runs). */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ucontext.h>

#include "dcpi/error.h"

#include "vp.h"


#ifndef VP_CAPSTONE
#define VP_CAPSTONE "libcapstone.so.4"
#endif

/* Capstone, opened when the library starts to sample (a program that
 * preloads the library without DCPI_VTRACE loads nothing more), named by
 * the soname of the version whose headers this was compiled with. */
static struct {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
	__typeof__(cs_disasm_iter) *disasm_iter;
	__typeof__(cs_insn_group) *insn_group;
	__typeof__(cs_regs_access) *regs_access;
} cs;

/* ---- Capstone's allocator ----
 * The arena: a bump allocator reset at each decode, each block after a
 * header giving its size; free of the last block gives its room back. */
#define VP_ARENA 8192
#define VP_ARENA_HDR 16

static int in_arena(const void *p)
{
	const struct vp_thread *t = &vp_self;

	return t->arena && (const unsigned char *)p >= t->arena &&
	       (const unsigned char *)p < t->arena + VP_ARENA;
}

static void *arena_alloc(size_t size)
{
	struct vp_thread *t = &vp_self;
	size_t need = VP_ARENA_HDR + ((size + 15) & ~(size_t)15);
	unsigned char *p;

	if (size > VP_ARENA || need > VP_ARENA - t->arena_used)
		return NULL; /* (Capstone's printer then fails the decode) */
	p = t->arena + t->arena_used;
	memcpy(p, &size, sizeof(size));
	t->arena_used += need;
	return p + VP_ARENA_HDR;
}

static void *mem_malloc(size_t size)
{
	if (vp_self.decoding && vp_self.arena)
		return arena_alloc(size);
	return malloc(size);
}

static void *mem_calloc(size_t n, size_t size)
{
	void *p;

	if (!(vp_self.decoding && vp_self.arena))
		return calloc(n, size);
	if (size && n > SIZE_MAX / size)
		return NULL;
	if ((p = arena_alloc(n * size)))
		memset(p, 0, n * size);
	return p;
}

static void mem_free(void *p)
{
	struct vp_thread *t = &vp_self;

	if (!p)
		return;
	if (in_arena(p)) {
		unsigned char *b = (unsigned char *)p - VP_ARENA_HDR;
		size_t size;

		memcpy(&size, b, sizeof(size));
		if (b + VP_ARENA_HDR + ((size + 15) & ~(size_t)15) == t->arena + t->arena_used)
			t->arena_used = (size_t)(b - t->arena);
		return;
	}
	free(p);
}

static void *mem_realloc(void *p, size_t size)
{
	void *q;
	size_t old;

	if (!p)
		return mem_malloc(size);
	if (!in_arena(p))
		return realloc(p, size);
	memcpy(&old, (unsigned char *)p - VP_ARENA_HDR, sizeof(old));
	if (!(q = arena_alloc(size)))
		return NULL;
	memcpy(q, p, old < size ? old : size);
	return q;
}

__attribute__((format(printf, 3, 0)))
static int mem_vsnprintf(char *s, size_t n, const char *fmt, va_list ap)
{
	return vsnprintf(s, n, fmt, ap);
}

int vp_decode_load(void)
{
	static cs_opt_mem mem = { mem_malloc, mem_calloc, mem_realloc, mem_free, mem_vsnprintf };
	void *h = dlopen(VP_CAPSTONE, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return dcpi_error(ENOENT, "%s", dlerror());
	if (!(cs.open = (__typeof__(cs.open))dlsym(h, "cs_open")) ||
	    !(cs.option = (__typeof__(cs.option))dlsym(h, "cs_option")) ||
	    !(cs.malloc = (__typeof__(cs.malloc))dlsym(h, "cs_malloc")) ||
	    !(cs.free = (__typeof__(cs.free))dlsym(h, "cs_free")) ||
	    !(cs.close = (__typeof__(cs.close))dlsym(h, "cs_close")) ||
	    !(cs.disasm_iter = (__typeof__(cs.disasm_iter))dlsym(h, "cs_disasm_iter")) ||
	    !(cs.insn_group = (__typeof__(cs.insn_group))dlsym(h, "cs_insn_group")) ||
	    !(cs.regs_access = (__typeof__(cs.regs_access))dlsym(h, "cs_regs_access")))
		return dcpi_error(ENOENT, "%s: not the Capstone it was built with", VP_CAPSTONE);
	if (cs.option(0, CS_OPT_MEM, (size_t)&mem) != CS_ERR_OK)
		return dcpi_error(EINVAL, "%s: its allocator cannot be set", VP_CAPSTONE);
	return 0;
}

/* The general-register family (0-15: greg index order below) of r and
 * its width in bytes; -1 when r is not a general register or RIP. */
static int family(x86_reg r, unsigned *width)
{
	static const struct { x86_reg r[4]; } fam[16] = {
		{ { X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL } },
		{ { X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL } },
		{ { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL } },
		{ { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL } },
		{ { X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL } },
		{ { X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL } },
		{ { X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL } },
		{ { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL } },
		{ { X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B } },
		{ { X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B } },
		{ { X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B } },
		{ { X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B } },
		{ { X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B } },
		{ { X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B } },
		{ { X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B } },
		{ { X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B } },
	};
	static const unsigned widths[4] = { 8, 4, 2, 1 };

	if (r == X86_REG_RIP || r == X86_REG_EIP) {
		*width = r == X86_REG_RIP ? 8 : 4;
		return VP_RIP;
	}
	if (r == X86_REG_AH || r == X86_REG_CH || r == X86_REG_DH || r == X86_REG_BH) {
		*width = 1;
		return r == X86_REG_AH ? 0 : r == X86_REG_CH ? 1 : r == X86_REG_DH ? 2 : 3;
	}
	for (int f = 0; f < 16; f++)
		for (int w = 0; w < 4; w++)
			if (fam[f].r[w] == r) {
				*width = widths[w];
				return f;
			}
	return -1;
}

/* The saved value of family f (0-15) in the order family() numbers them. */
static uint64_t saved(const ucontext_t *uc, int f)
{
	static const int greg[16] = { REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
				      REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
				      REG_R12, REG_R13, REG_R14, REG_R15 };

	return (uint64_t)uc->uc_mcontext.gregs[greg[f]];
}

/* Instructions with a memory operand that reads nothing, or nothing of
 * the program's data worth timing. */
static int not_a_load(unsigned id)
{
	switch (id) {
	case X86_INS_LEA:
	case X86_INS_NOP:
	case X86_INS_PREFETCH:
	case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1:
	case X86_INS_PREFETCHT2:
	case X86_INS_PREFETCHW:
	case X86_INS_CLFLUSH:
	case X86_INS_CLFLUSHOPT:
	case X86_INS_CLWB:
	case X86_INS_INVLPG:
	case X86_INS_MONITOR:
		return 1;
	default:
		return 0;
	}
}

/* Execution may not go on to the next instruction. */
static int transfer(csh h, const cs_insn *in)
{
	switch (in->id) {
	case X86_INS_HLT:
	case X86_INS_UD0:
	case X86_INS_UD2:
	case X86_INS_UD2B:
	case X86_INS_XBEGIN:
	case X86_INS_XABORT:
	case X86_INS_LOOP: /* (Capstone 4 puts these branches in no group) */
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
	case X86_INS_JCXZ:
	case X86_INS_JECXZ:
	case X86_INS_JRCXZ:
		return 1;
	default:
		return cs.insn_group(h, in, CS_GRP_JUMP) || cs.insn_group(h, in, CS_GRP_CALL) ||
		       cs.insn_group(h, in, CS_GRP_RET) || cs.insn_group(h, in, CS_GRP_INT) ||
		       cs.insn_group(h, in, CS_GRP_IRET);
	}
}

/* The general registers in changes, as a set of families.  Capstone 4
 * leaves out some implicit writes; those of instructions a compiler emits
 * between a PC and a load are added here. */
static unsigned written_by(csh h, const cs_insn *in)
{
	cs_regs r, w;
	uint8_t nr = 0, nw = 0;
	unsigned set = 0, width;

	if (cs.regs_access(h, in, r, &nr, w, &nw) != CS_ERR_OK)
		return ~0u; /* unknown: everything */
	for (unsigned i = 0; i < nw; i++) {
		int f = family((x86_reg)w[i], &width);

		if (f >= 0 && f < 16)
			set |= 1u << f;
	}
	switch (in->id) {
	case X86_INS_CMPXCHG:
		set |= 1u << 0;
		break;
	case X86_INS_CMPXCHG8B:
	case X86_INS_CMPXCHG16B:
		set |= 1u << 0 | 1u << 2;
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < sizeof(in->detail->x86.prefix); i++)
		if (in->detail->x86.prefix[i] == X86_PREFIX_REP ||
		    in->detail->x86.prefix[i] == X86_PREFIX_REPNE)
			set |= 1u << 1; /* rep: rcx */
	return set;
}

static uint64_t fs_base(void)
{
	uint64_t v;

	__asm__ volatile("movq %%fs:0, %0" : "=r"(v));
	return v;
}

/* A register of the operand: its family (VP_NONE when none), its width. */
static int operand_reg(x86_reg r, unsigned written, uint8_t *fam, uint8_t *w4)
{
	unsigned width;
	int f;

	if (r == X86_REG_INVALID) {
		*fam = VP_NONE;
		return 0;
	}
	if ((f = family(r, &width)) < 0 || (f < 16 && (written & (1u << f))))
		return -1; /* a vector index (gather), or changed since the PC */
	*fam = (uint8_t)f;
	*w4 = width == 4;
	return 0;
}

/* op's address from what in and its operand m say, when the registers at
 * the PC give it: 0, or -1. */
static int describe(const cs_insn *in, const cs_x86_op *m, uint64_t pc, unsigned written,
		    struct vp_op *op)
{
	if (m->mem.segment == X86_REG_FS)
		op->fs = 1;
	else if (m->mem.segment != X86_REG_INVALID && m->mem.segment != X86_REG_CS &&
		 m->mem.segment != X86_REG_DS && m->mem.segment != X86_REG_ES &&
		 m->mem.segment != X86_REG_SS)
		return -1; /* GS: its base is not at hand */
	if (operand_reg(m->mem.base, written, &op->base, &op->base_w4) ||
	    operand_reg(m->mem.index, written, &op->index, &op->index_w4) || op->index == VP_RIP)
		return -1;
	op->load = (uint16_t)(in->address - pc);
	op->next = (uint16_t)(in->address + in->size - pc);
	op->scale = (uint8_t)m->mem.scale;
	op->disp = m->mem.disp;
	op->addr32 = in->detail->x86.addr_size == 4;
	op->size = m->size >= 8 ? 8 : m->size >= 4 ? 4 : m->size >= 2 ? 2 : 1;
	return 0;
}

/* The first memory operand in reads, or NULL. */
static const cs_x86_op *read_operand(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (not_a_load(in->id))
		return NULL;
	switch (in->id) {
	case X86_INS_BT:
	case X86_INS_BTC:
	case X86_INS_BTR:
	case X86_INS_BTS:
		/* a register's bit offset reaches past [base] (by offset / 8,
		 * signed): the address is not the operand's */
		for (unsigned i = 0; i < x->op_count; i++)
			if (x->operands[i].type == X86_OP_REG)
				return NULL;
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && (x->operands[i].access & CS_AC_READ) &&
		    x->operands[i].size)
			return &x->operands[i];
	return NULL;
}

int vp_decode(struct vp_thread *t, const uint8_t *code, size_t n, uint64_t pc, struct vp_op *op)
{
	const uint8_t *p = code;
	uint64_t at = pc;
	unsigned written = 0;

	memset(op, 0, sizeof(*op));
	op->load = VP_NO_LOAD;
	for (int i = 0; i < VP_WINDOW && n; i++) {
		const cs_x86_op *m;
		bool ok;

		t->arena_used = 0;
		t->decoding = 1;
		atomic_signal_fence(memory_order_seq_cst);
		ok = cs.disasm_iter(t->cs, &p, &n, &at, t->insn);
		atomic_signal_fence(memory_order_seq_cst);
		t->decoding = 0;
		if (!ok)
			break;
		op->len = (uint16_t)(at - pc); /* the bytes decoded so far decide */
		m = read_operand(t->insn);
		if (m && !describe(t->insn, m, pc, written, op))
			return 0;
		if (transfer(t->cs, t->insn))
			break;
		written |= written_by(t->cs, t->insn);
	}
	op->load = VP_NO_LOAD;
	return -1;
}

int vp_op_address(const struct vp_op *op, uint64_t pc, const void *ucv, struct vp_load *out)
{
	const ucontext_t *uc = ucv;
	uint64_t a = (uint64_t)op->disp, v;

	if (op->load == VP_NO_LOAD)
		return -1;
	if (op->fs)
		a += fs_base();
	if (op->base != VP_NONE) {
		v = op->base == VP_RIP ? pc + op->next : saved(uc, op->base);
		a += op->base_w4 ? (uint32_t)v : v;
	}
	if (op->index != VP_NONE) {
		v = saved(uc, op->index);
		a += (op->index_w4 ? (uint32_t)v : v) * op->scale;
	}
	out->pc = pc + op->load;
	out->addr = op->addr32 ? (uint32_t)a : a;
	out->size = op->size;
	return 0;
}

int vp_decode_open(struct vp_thread *t)
{
	static const uint8_t warm[] = { 0x48, 0x8b, 0x03 }; /* mov rax, [rbx] */
	const uint8_t *p = warm;
	size_t n = sizeof(warm);
	uint64_t at = 0;

	if (t->cs)
		return 0;
	if (cs.open(CS_ARCH_X86, CS_MODE_64, &t->cs) != CS_ERR_OK) {
		t->cs = 0;
		return -1;
	}
	if (cs.option(t->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    !(t->arena = malloc(VP_ARENA)) || !(t->insn = cs.malloc(t->cs)) || !cs.disasm_iter(t->cs, &p, &n, &at, t->insn)) {
		vp_decode_close(t);
		return -1;
	}
	return 0;
}

void vp_decode_close(struct vp_thread *t)
{
	if (t->insn)
		cs.free(t->insn, 1);
	if (t->cs)
		cs.close(&t->cs);
	free(t->arena);
	t->arena = NULL;
	t->arena_used = 0;
	t->insn = NULL;
	t->cs = 0;
}
