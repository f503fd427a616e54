/* The static cost model: see dcpi/cost.h.
 *
 * Sources, cited per class below:
 *   [AF]  Agner Fog, "Instruction tables", Skylake section (2022-11-04),
 *         https://www.agner.org/optimize/instruction_tables.pdf
 *   [UI]  uops.info, Skylake (SKL) measurements, https://uops.info/table.html
 *   [AFm] Agner Fog, "The microarchitecture of Intel, AMD and VIA CPUs",
 *         11.1-11.9 (Skylake: 4-wide rename/retire, 2 loads and 1 store
 *         per clock, one taken branch per clock, L1 load-to-use 4-5 cycles)
 *   [N1]  Arm Neoverse N1 Software Optimization Guide, 3.x (AArch64)
 * Where a source gives a range (DIV r64: 35-88 cycles), the low end is
 * used: the model must never cost more than the hardware's best case. */
#include <pthread.h>
#include <math.h>
#include <string.h>

#include <capstone/capstone.h>

#include "dcpi/cost.h"

#define ISSUE_WIDTH 4.0        /* [AFm] 11.8: 4 fused uops per clock */
#define LOAD_PORTS 2.0         /* [AFm] 11.9: two loads per clock (p2, p3) */
#define STORE_PORTS 1.0        /* [AFm] 11.9: one store per clock (p4) */
#define LOAD_LAT 4.0           /* [AFm] 11.10: L1 hit, simple addressing */
#define CARRY_ITERS 8          /* iterations simulated for the carried bound */

enum cls {
	C_OTHER, C_ALU, C_MOV, C_LEA, C_SHIFT, C_SHIFT_CL, C_IMUL, C_MUL_WIDE, C_DIV32,
	C_DIV64, C_JCC, C_JMP, C_JMP_IND, C_CALL, C_RET, C_PUSH, C_POP, C_CMOV, C_SETCC,
	C_NOP, C_FP_ADD, C_FP_MUL, C_FMA, C_FP_DIV, C_FP_SQRT, C_FP_MOV, C_FP_CVT,
	C_VEC_LOGIC, C_BITCOUNT, C_CRC32, C_LOCKED, C_STRING, C_FENCE, C_PAUSE, C_A64, C_N
};

static const struct dcpi_cost_class classes[C_N] = {
	/* no row: taken as a simple ALU op, the cheapest case */
	[C_OTHER]     = { "other",     1, 1, 0.25, DCPI_PORT_ALU, 0 },
	/* [AF] ADD SUB AND OR XOR CMP TEST INC DEC NEG NOT r,r/i: 1, 1, 0.25 */
	[C_ALU]       = { "alu",       1, 1, 0.25, DCPI_PORT_ALU, 0 },
	/* [AF] MOV r,r / r,i; MOVZX MOVSX MOVSXD; CDQE: 1, 0-1, 0.25 */
	[C_MOV]       = { "mov",       1, 1, 0.25, DCPI_PORT_ALU, 0 },
	/* [AF] LEA, 1-2 components: 1, 1, 0.5 */
	[C_LEA]       = { "lea",       1, 1, 0.5, DCPI_PORT_ALU, 0 },
	/* [AF] SHL SHR SAR ROL ROR r,i: 1, 1, 0.5 */
	[C_SHIFT]     = { "shift",     1, 1, 0.5, DCPI_PORT_ALU, 0 },
	/* [AF] SHL SHR SAR r,cl: 3, 2, 2 (flags merge) */
	[C_SHIFT_CL]  = { "shift-cl",  3, 2, 2, DCPI_PORT_ALU, 0 },
	/* [AF] IMUL r,r / r,r,i: 1, 3, 1 (p1) */
	[C_IMUL]      = { "imul",      1, 3, 1, DCPI_PORT_MUL, 0 },
	/* [AF] MUL/IMUL r64 (128-bit product): 2, 3, 1 */
	[C_MUL_WIDE]  = { "mul-wide",  2, 3, 1, DCPI_PORT_MUL, 0 },
	/* [AF] DIV r32: 10, 26, 6; IDIV r32: 10, 26, 6 */
	[C_DIV32]     = { "div32",     10, 26, 6, DCPI_PORT_DIV, 1 },
	/* [AF] DIV r64: 36, 35-88, 21-83; IDIV r64: 57, 42-95, 24-90 */
	[C_DIV64]     = { "div64",     36, 35, 21, DCPI_PORT_DIV, 1 },
	/* [AF] Jcc: 1, -, 0.5-2 (not taken 0.5) [UI] 0.5 */
	[C_JCC]       = { "jcc",       1, 1, 0.5, DCPI_PORT_BRANCH, 0 },
	/* [AF] JMP near: 1, -, 1-2 */
	[C_JMP]       = { "jmp",       1, 1, 1, DCPI_PORT_BRANCH, 0 },
	/* [AF] JMP r: 1, -, 2 */
	[C_JMP_IND]   = { "jmp-ind",   1, 1, 2, DCPI_PORT_BRANCH, 0 },
	/* [AF] CALL near: 2, -, 3 */
	[C_CALL]      = { "call",      2, 1, 3, DCPI_PORT_BRANCH, 0 },
	/* [AF] RET: 2, -, 1 */
	[C_RET]       = { "ret",       2, 1, 1, DCPI_PORT_BRANCH, 0 },
	/* [AF] PUSH r: 1, 3 (store forwarding aside), 1 */
	[C_PUSH]      = { "push",      1, 1, 1, DCPI_PORT_ALU, 0 },
	/* [AF] POP r: 1, 2, 0.5 */
	[C_POP]       = { "pop",       1, 2, 0.5, DCPI_PORT_ALU, 0 },
	/* [AF] CMOVcc r,r: 1, 1, 0.5 */
	[C_CMOV]      = { "cmov",      1, 1, 0.5, DCPI_PORT_ALU, 0 },
	/* [AF] SETcc r: 1, 1, 0.5 */
	[C_SETCC]     = { "setcc",     1, 1, 0.5, DCPI_PORT_ALU, 0 },
	/* [AF] NOP (multi-byte), ENDBR64 [UI]: 1, 0, 0.25 */
	[C_NOP]       = { "nop",       1, 0, 0.25, DCPI_PORT_ALU, 0 },
	/* [AF] ADDSD/SS/PD/PS SUBSD...: 1, 4, 0.5 */
	[C_FP_ADD]    = { "fp-add",    1, 4, 0.5, DCPI_PORT_FP, 0 },
	/* [AF] MULSD/SS/PD/PS: 1, 4, 0.5 */
	[C_FP_MUL]    = { "fp-mul",    1, 4, 0.5, DCPI_PORT_FP, 0 },
	/* [AF] VFMADD...: 1, 4, 0.5 */
	[C_FMA]       = { "fma",       1, 4, 0.5, DCPI_PORT_FP, 0 },
	/* [AF] DIVSS: 1, 11, 3; DIVSD: 1, 13-14, 4 */
	[C_FP_DIV]    = { "fp-div",    1, 11, 3, DCPI_PORT_DIV, 1 },
	/* [AF] SQRTSS: 1, 12, 3; SQRTSD: 1, 15-16, 4-6 */
	[C_FP_SQRT]   = { "fp-sqrt",   1, 12, 3, DCPI_PORT_DIV, 1 },
	/* [AF] MOVAPS/MOVUPS/MOVSD/MOVQ x,x: 1, 0-1, 0.25 */
	[C_FP_MOV]    = { "fp-mov",    1, 1, 0.25, DCPI_PORT_ALU, 0 },
	/* [AF] CVTSI2SD: 2, 5, 1; CVTTSD2SI: 2, 6, 1; CVTSS2SD: 2, 5, 1 */
	[C_FP_CVT]    = { "fp-cvt",    2, 5, 1, DCPI_PORT_FP, 0 },
	/* [AF] PXOR/XORPS/ANDPS/POR/PAND x,x: 1, 1, 0.33 */
	[C_VEC_LOGIC] = { "vec-logic", 1, 1, 0.33f, DCPI_PORT_ALU, 0 },
	/* [AF] POPCNT LZCNT TZCNT BSF BSR: 1, 3, 1 (p1) */
	[C_BITCOUNT]  = { "bitcount",  1, 3, 1, DCPI_PORT_MUL, 0 },
	/* [AF] CRC32 r,r: 1, 3, 1 (p1) */
	[C_CRC32]     = { "crc32",     1, 3, 1, DCPI_PORT_MUL, 0 },
	/* [AF] XCHG r,m: 8, 23, ~18; LOCK ADD m,r: 8, 18, ~18; CMPXCHG: 10, 18 */
	[C_LOCKED]    = { "locked",    8, 18, 18, DCPI_PORT_MICRO, 1 },
	/* [AF] REP MOVS/STOS: microcode, at least ~3 uops and 1 clock */
	[C_STRING]    = { "string",    3, 1, 1, DCPI_PORT_MICRO, 1 },
	/* [AF] MFENCE: 3, -, 33; LFENCE: 2, -, 4; SFENCE: 2, -, 6 (low: LFENCE) */
	[C_FENCE]     = { "fence",     2, 4, 4, DCPI_PORT_MICRO, 1 },
	/* [AFm] 11.x: PAUSE about 140 clocks on Skylake */
	[C_PAUSE]     = { "pause",     4, 140, 140, DCPI_PORT_MICRO, 1 },
	/* [N1] 3.3: integer ALU 1 cycle, 3 ALU pipes: 1, 1, 0.33 (generic) */
	[C_A64]       = { "a64",       1, 1, 0.33f, DCPI_PORT_ALU, 0 },
};

struct idclass {
	unsigned id;
	unsigned char cls;
};

static const struct idclass x86_ids[] = {
	{ X86_INS_ADD, C_ALU }, { X86_INS_SUB, C_ALU }, { X86_INS_AND, C_ALU },
	{ X86_INS_OR, C_ALU }, { X86_INS_XOR, C_ALU }, { X86_INS_CMP, C_ALU },
	{ X86_INS_TEST, C_ALU }, { X86_INS_INC, C_ALU }, { X86_INS_DEC, C_ALU },
	{ X86_INS_NEG, C_ALU }, { X86_INS_NOT, C_ALU }, { X86_INS_ADC, C_ALU },
	{ X86_INS_SBB, C_ALU }, { X86_INS_BT, C_ALU }, { X86_INS_ANDN, C_ALU },
	{ X86_INS_MOV, C_MOV }, { X86_INS_MOVABS, C_MOV }, { X86_INS_MOVZX, C_MOV },
	{ X86_INS_MOVSX, C_MOV }, { X86_INS_MOVSXD, C_MOV }, { X86_INS_CDQE, C_MOV },
	{ X86_INS_CWDE, C_MOV }, { X86_INS_CDQ, C_MOV }, { X86_INS_CQO, C_MOV },
	{ X86_INS_MOVBE, C_MOV }, { X86_INS_XCHG, C_MOV }, { X86_INS_BSWAP, C_MOV },
	{ X86_INS_LEA, C_LEA },
	{ X86_INS_SHL, C_SHIFT }, { X86_INS_SHR, C_SHIFT }, { X86_INS_SAR, C_SHIFT },
	{ X86_INS_SAL, C_SHIFT }, { X86_INS_ROL, C_SHIFT }, { X86_INS_ROR, C_SHIFT },
	{ X86_INS_SHLX, C_SHIFT }, { X86_INS_SHRX, C_SHIFT }, { X86_INS_SARX, C_SHIFT },
	{ X86_INS_RORX, C_SHIFT },
	{ X86_INS_IMUL, C_IMUL }, { X86_INS_MUL, C_MUL_WIDE }, { X86_INS_MULX, C_MUL_WIDE },
	{ X86_INS_DIV, C_DIV32 }, { X86_INS_IDIV, C_DIV32 },
	{ X86_INS_JMP, C_JMP }, { X86_INS_CALL, C_CALL }, { X86_INS_RET, C_RET },
	{ X86_INS_PUSH, C_PUSH }, { X86_INS_POP, C_POP },
	{ X86_INS_NOP, C_NOP }, { X86_INS_ENDBR64, C_NOP }, { X86_INS_ENDBR32, C_NOP },
	{ X86_INS_ADDSD, C_FP_ADD }, { X86_INS_ADDSS, C_FP_ADD }, { X86_INS_ADDPD, C_FP_ADD },
	{ X86_INS_ADDPS, C_FP_ADD }, { X86_INS_SUBSD, C_FP_ADD }, { X86_INS_SUBSS, C_FP_ADD },
	{ X86_INS_SUBPD, C_FP_ADD }, { X86_INS_SUBPS, C_FP_ADD }, { X86_INS_VADDSD, C_FP_ADD },
	{ X86_INS_VADDPD, C_FP_ADD }, { X86_INS_VADDSS, C_FP_ADD }, { X86_INS_VADDPS, C_FP_ADD },
	{ X86_INS_MAXSD, C_FP_ADD }, { X86_INS_MINSD, C_FP_ADD }, { X86_INS_UCOMISD, C_FP_ADD },
	{ X86_INS_UCOMISS, C_FP_ADD }, { X86_INS_COMISD, C_FP_ADD },
	{ X86_INS_MULSD, C_FP_MUL }, { X86_INS_MULSS, C_FP_MUL }, { X86_INS_MULPD, C_FP_MUL },
	{ X86_INS_MULPS, C_FP_MUL }, { X86_INS_VMULSD, C_FP_MUL }, { X86_INS_VMULPD, C_FP_MUL },
	{ X86_INS_VMULSS, C_FP_MUL }, { X86_INS_VMULPS, C_FP_MUL },
	{ X86_INS_VFMADD231SD, C_FMA }, { X86_INS_VFMADD213SD, C_FMA },
	{ X86_INS_VFMADD132SD, C_FMA }, { X86_INS_VFMADD231PD, C_FMA },
	{ X86_INS_VFMADD213PD, C_FMA }, { X86_INS_VFMADD231PS, C_FMA },
	{ X86_INS_DIVSD, C_FP_DIV }, { X86_INS_DIVSS, C_FP_DIV }, { X86_INS_DIVPD, C_FP_DIV },
	{ X86_INS_DIVPS, C_FP_DIV }, { X86_INS_VDIVSD, C_FP_DIV }, { X86_INS_VDIVSS, C_FP_DIV },
	{ X86_INS_SQRTSD, C_FP_SQRT }, { X86_INS_SQRTSS, C_FP_SQRT },
	{ X86_INS_SQRTPD, C_FP_SQRT }, { X86_INS_VSQRTSD, C_FP_SQRT },
	{ X86_INS_MOVSD, C_FP_MOV }, { X86_INS_MOVSS, C_FP_MOV }, { X86_INS_MOVAPS, C_FP_MOV },
	{ X86_INS_MOVAPD, C_FP_MOV }, { X86_INS_MOVUPS, C_FP_MOV }, { X86_INS_MOVUPD, C_FP_MOV },
	{ X86_INS_MOVQ, C_FP_MOV }, { X86_INS_MOVD, C_FP_MOV }, { X86_INS_MOVDQA, C_FP_MOV },
	{ X86_INS_MOVDQU, C_FP_MOV }, { X86_INS_VMOVSD, C_FP_MOV }, { X86_INS_VMOVAPS, C_FP_MOV },
	{ X86_INS_VMOVUPS, C_FP_MOV }, { X86_INS_VMOVAPD, C_FP_MOV }, { X86_INS_VMOVDQU, C_FP_MOV },
	{ X86_INS_CVTSI2SD, C_FP_CVT }, { X86_INS_CVTSI2SS, C_FP_CVT },
	{ X86_INS_CVTTSD2SI, C_FP_CVT }, { X86_INS_CVTSD2SS, C_FP_CVT },
	{ X86_INS_CVTSS2SD, C_FP_CVT }, { X86_INS_VCVTSI2SD, C_FP_CVT },
	{ X86_INS_PXOR, C_VEC_LOGIC }, { X86_INS_XORPS, C_VEC_LOGIC },
	{ X86_INS_XORPD, C_VEC_LOGIC }, { X86_INS_ANDPS, C_VEC_LOGIC },
	{ X86_INS_ANDPD, C_VEC_LOGIC }, { X86_INS_POR, C_VEC_LOGIC },
	{ X86_INS_PAND, C_VEC_LOGIC }, { X86_INS_VPXOR, C_VEC_LOGIC },
	{ X86_INS_VXORPS, C_VEC_LOGIC },
	{ X86_INS_POPCNT, C_BITCOUNT }, { X86_INS_LZCNT, C_BITCOUNT },
	{ X86_INS_TZCNT, C_BITCOUNT }, { X86_INS_BSF, C_BITCOUNT }, { X86_INS_BSR, C_BITCOUNT },
	{ X86_INS_CRC32, C_CRC32 },
	{ X86_INS_CMPXCHG, C_LOCKED }, { X86_INS_XADD, C_LOCKED },
	{ X86_INS_MOVSB, C_STRING }, { X86_INS_MOVSW, C_STRING }, { X86_INS_MOVSQ, C_STRING },
	{ X86_INS_STOSB, C_STRING }, { X86_INS_STOSD, C_STRING }, { X86_INS_STOSQ, C_STRING },
	{ X86_INS_CMPSB, C_STRING }, { X86_INS_SCASB, C_STRING },
	{ X86_INS_MFENCE, C_FENCE }, { X86_INS_LFENCE, C_FENCE }, { X86_INS_SFENCE, C_FENCE },
	{ X86_INS_CPUID, C_FENCE }, { X86_INS_RDTSC, C_FENCE },
	{ X86_INS_PAUSE, C_PAUSE },
};

static unsigned char x86_class[X86_INS_ENDING];
static pthread_once_t x86_once = PTHREAD_ONCE_INIT;

static void x86_init(void)
{
	for (size_t i = 0; i < sizeof(x86_ids) / sizeof(x86_ids[0]); i++)
		x86_class[x86_ids[i].id] = x86_ids[i].cls;
}

/* Families by mnemonic: conditional moves and sets; locked forms. */
static enum cls x86_family(const struct dcpi_insn *in, enum cls c)
{
	const char *m = in->mnemonic;

	if (!strncmp(m, "lock", 4) || (in->id == X86_INS_XCHG && (in->flags & DCPI_INSN_LOAD)))
		return C_LOCKED;
	if (!strncmp(m, "rep", 3))
		return C_STRING;
	if (!strncmp(m, "cmov", 4))
		return C_CMOV;
	if (!strncmp(m, "set", 3))
		return C_SETCC;
	if ((in->flags & DCPI_INSN_JUMP) && (in->flags & DCPI_INSN_COND))
		return C_JCC;
	if ((in->flags & DCPI_INSN_JUMP) && (in->flags & DCPI_INSN_INDIRECT))
		return C_JMP_IND;
	if (c == C_SHIFT && strstr(in->operands, "%cl,"))
		return C_SHIFT_CL;
	/* a 64-bit divide: its operand is a 64-bit register or a q-suffixed form */
	if (c == C_DIV32 && (in->operands[0] == '%' ? in->operands[1] == 'r' &&
			     !strpbrk(in->operands + 2, "dwb")
						 : m[strlen(m) - 1] == 'q'))
		return C_DIV64;
	/* one-operand IMUL is the widening form */
	if (c == C_IMUL && !strchr(in->operands, ','))
		return C_MUL_WIDE;
	return c;
}

const struct dcpi_cost_class *dcpi_cost_class(const char *arch, const struct dcpi_insn *in)
{
	if (arch && strcmp(arch, "x86-64") && strcmp(arch, "i386"))
		return &classes[C_A64];
	pthread_once(&x86_once, x86_init);
	if (in->flags & DCPI_INSN_BAD)
		return &classes[C_OTHER];
	return &classes[x86_family(in, in->id < X86_INS_ENDING ? (enum cls)x86_class[in->id]
							       : C_OTHER)];
}

/* ---- blocks ------------------------------------------------------------------------ */

#define INSN(p, i, stride) ((const struct dcpi_insn *)(const void *)((const char *)(p) + \
								    (i) * (stride)))
#define NREGS 1024   /* Capstone register ids are below this on both arches */

static double latency_of(const struct dcpi_cost_class *c, const struct dcpi_insn *in)
{
	return c->latency + ((in->flags & DCPI_INSN_LOAD) ? LOAD_LAT : 0);
}

/* One instruction with unbounded resources: done its latency after what
 * it reads is ready (ready[], per register, updated for what it writes).
 * Memory dependencies are not seen (a lower bound still).  Returns when
 * it is done. */
static double step(const char *arch, const struct dcpi_insn *in, double *ready)
{
	double t = 0;

	for (unsigned r = 0; r < in->nregs_read; r++)
		if (in->regs_read[r] < NREGS && ready[in->regs_read[r]] > t)
			t = ready[in->regs_read[r]];
	t += latency_of(dcpi_cost_class(arch, in), in);
	for (unsigned r = 0; r < in->nregs_write; r++)
		if (in->regs_write[r] < NREGS)
			ready[in->regs_write[r]] = t;
	return t;
}

/* The loop-carried bound of a self-loop: registers' ready times over
 * CARRY_ITERS iterations; the growth per iteration in the second half is
 * the recurrence's latency. */
static double carried(const char *arch, const struct dcpi_insn *insns, size_t n, size_t stride)
{
	double ready[NREGS];
	double half = 0, end = 0;

	memset(ready, 0, sizeof(ready));
	for (int it = 0; it < CARRY_ITERS; it++) {
		for (size_t i = 0; i < n; i++)
			step(arch, INSN(insns, i, stride), ready);
		end = 0;
		for (size_t r = 0; r < NREGS; r++)
			if (ready[r] > end)
				end = ready[r];
		if (it == CARRY_ITERS / 2 - 1)
			half = end;
	}
	return (end - half) / (CARRY_ITERS - CARRY_ITERS / 2);
}

/* The longest dependence chain of one execution alone (dcpi_cost_block's
 * path), from all ready at 0: when the last instruction is done (a branch
 * on a loaded value after the load and the compare). */
static double path(const char *arch, const struct dcpi_insn *insns, size_t n, size_t stride)
{
	double ready[NREGS], end = 0;

	memset(ready, 0, sizeof(ready));
	for (size_t i = 0; i < n; i++)
		end = fmax(end, step(arch, INSN(insns, i, stride), ready));
	return end;
}

void dcpi_cost_block(const char *arch, const struct dcpi_insn *insns, size_t n, size_t stride,
		     int self_loop, double *per_insn, struct dcpi_cost_block *out)
{
	double port[DCPI_PORT_N] = { 0 }, uops = 0, best, c;
	int x86 = !arch || !strcmp(arch, "x86-64") || !strcmp(arch, "i386");

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_insn *in = INSN(insns, i, stride);
		const struct dcpi_cost_class *k = dcpi_cost_class(arch, in);

		uops += k->uops;
		if (k->port != DCPI_PORT_ALU)
			port[k->port] += k->rthroughput;
		out->long_latency |= k->long_latency;
		out->loads += !!(in->flags & DCPI_INSN_LOAD);
		out->stores += !!(in->flags & DCPI_INSN_STORE);
	}
	best = uops / (x86 ? ISSUE_WIDTH : 3.0);
	out->bound = DCPI_BOUND_ISSUE;
	if ((c = out->loads / LOAD_PORTS) > best)
		best = c, out->bound = DCPI_BOUND_LOAD;
	if ((c = out->stores / STORE_PORTS) > best)
		best = c, out->bound = DCPI_BOUND_STORE;
	for (int p = 0; p < DCPI_PORT_N; p++)
		if (port[p] > best)
			best = port[p], out->bound = DCPI_BOUND_PORT, out->port = p;
	if (self_loop && n && (c = carried(arch, insns, n, stride)) > best)
		best = c, out->bound = DCPI_BOUND_CARRIED;
	if (best <= 0)
		best = 0.25;
	out->cycles = best;
	out->path = path(arch, insns, n, stride);
	for (size_t i = 0; per_insn && i < n; i++)
		per_insn[i] = uops > 0 ? best * dcpi_cost_class(arch, INSN(insns, i, stride))->uops / uops
				       : best / (double)n;
}

const char *dcpi_cost_bound_name(const struct dcpi_cost_block *b)
{
	static const char *const ports[DCPI_PORT_N] = { "alu", "multiplier", "divider", "fp",
							"branch", "microcode" };

	switch (b->bound) {
	case DCPI_BOUND_ISSUE: return "issue";
	case DCPI_BOUND_LOAD: return "loads";
	case DCPI_BOUND_STORE: return "stores";
	case DCPI_BOUND_PORT: return ports[b->port];
	case DCPI_BOUND_CARRIED: return "carried";
	}
	return "?";
}
