/* The two reads the signal handler makes of the program's memory: a copy
 * of the code at the PC and the timed load.  Both are written in assembly
 * so that the one instruction that may fault has a known address: the
 * fault handler (vp_signal.c) asks vp_probe_fixup() whether a fault is at
 * one of them and, if so, resumes at its fixup by editing the saved RIP.
 * No longjmp, no state to restore: the probe functions keep nothing live
 * across the faulting instruction but registers the fixup expects.
 *
 * The timed load, as dcpi bins times its chase (lib/collect/membench.c):
 *   lfence; rdtsc; lfence      nothing before it still running, the load
 *                              not started before the clock is read
 *   mov (addr), reg            the load, of the operand's size
 *   rdtscp; lfence             rdtscp waits for the load to complete
 * Its own cost (the two clock reads) is calibrated at start as the least
 * of many timings of a load from L1 and subtracted by the caller. */
#include <cpuid.h>
#include <stdint.h>

#include "vp.h"

/* vp_probe_load{1,2,4,8}(addr = rdi, value = rsi) -> rax cycles, or -1
 * (the load faulted).  The load's label is vp_ld{N}; all four share one
 * fixup. */
#define VP_TIMED(N, LOAD)                                                    \
	".globl vp_probe_load" #N "\n"                                       \
	".hidden vp_probe_load" #N "\n"                                      \
	".type vp_probe_load" #N ", @function\n"                             \
	"vp_probe_load" #N ":\n"                                             \
	"	lfence\n"                                                    \
	"	rdtsc\n"                                                     \
	"	lfence\n"                                                    \
	"	shlq $32, %rdx\n"                                            \
	"	orq %rdx, %rax\n"                                            \
	"	movq %rax, %r8\n"                                            \
	".globl vp_ld" #N "\n"                                               \
	".hidden vp_ld" #N "\n"                                              \
	"vp_ld" #N ":\n"                                                     \
	"	" LOAD "\n"                                                  \
	"	rdtscp\n"                                                    \
	"	lfence\n"                                                    \
	"	shlq $32, %rdx\n"                                            \
	"	orq %rdx, %rax\n"                                            \
	"	subq %r8, %rax\n"                                            \
	"	movq %r9, (%rsi)\n"                                          \
	"	ret\n"                                                       \
	".size vp_probe_load" #N ", . - vp_probe_load" #N "\n"

__asm__(".text\n"
	VP_TIMED(1, "movzbq (%rdi), %r9")
	VP_TIMED(2, "movzwq (%rdi), %r9")
	VP_TIMED(4, "movl (%rdi), %r9d")
	VP_TIMED(8, "movq (%rdi), %r9")
	".globl vp_ld_fixup\n"
	".hidden vp_ld_fixup\n"
	"vp_ld_fixup:\n"
	"	movq $-1, %rax\n"
	"	ret\n"
	/* vp_probe_copy(dst = rdi, src = rsi, n = rdx) -> rax bytes copied;
	 * a fault at vp_cp leaves rax the bytes copied so far, and the
	 * fixup returns it. */
	".globl vp_probe_copy\n"
	".hidden vp_probe_copy\n"
	".type vp_probe_copy, @function\n"
	"vp_probe_copy:\n"
	"	xorl %eax, %eax\n"
	"	testq %rdx, %rdx\n"
	"	jz 2f\n"
	"1:\n"
	".globl vp_cp\n"
	".hidden vp_cp\n"
	"vp_cp:\n"
	"	movzbl (%rsi,%rax), %ecx\n"
	"	movb %cl, (%rdi,%rax)\n"
	"	incq %rax\n"
	"	cmpq %rdx, %rax\n"
	"	jb 1b\n"
	"2:\n"
	".globl vp_cp_fixup\n"
	".hidden vp_cp_fixup\n"
	"vp_cp_fixup:\n"
	"	ret\n"
	".size vp_probe_copy, . - vp_probe_copy\n");

uint64_t vp_probe_load1(uint64_t addr, uint64_t *value);
uint64_t vp_probe_load2(uint64_t addr, uint64_t *value);
uint64_t vp_probe_load4(uint64_t addr, uint64_t *value);
uint64_t vp_probe_load8(uint64_t addr, uint64_t *value);
extern const char vp_ld1[], vp_ld2[], vp_ld4[], vp_ld8[], vp_ld_fixup[], vp_cp[], vp_cp_fixup[];

uint64_t vp_probe_load(uint64_t addr, unsigned size, uint64_t *value)
{
	switch (size) {
	case 1:
		return vp_probe_load1(addr, value);
	case 2:
		return vp_probe_load2(addr, value);
	case 4:
		return vp_probe_load4(addr, value);
	default:
		return vp_probe_load8(addr, value);
	}
}

uintptr_t vp_probe_fixup(uintptr_t rip)
{
	if (rip == (uintptr_t)vp_ld1 || rip == (uintptr_t)vp_ld2 || rip == (uintptr_t)vp_ld4 ||
	    rip == (uintptr_t)vp_ld8)
		return (uintptr_t)vp_ld_fixup;
	if (rip == (uintptr_t)vp_cp)
		return (uintptr_t)vp_cp_fixup;
	return 0;
}

uint64_t vp_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

int vp_probe_supported(void)
{
	unsigned a, b, c, d;

	/* rdtscp: CPUID 0x80000001 EDX bit 27 */
	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
}

uint64_t vp_probe_calibrate(void)
{
	volatile uint64_t hot = 1;
	uint64_t best = UINT64_MAX, v;

	for (int i = 0; i < 2000; i++) {
		uint64_t c = vp_probe_load8((uint64_t)(uintptr_t)&hot, &v);

		if (c < best)
			best = c;
	}
	return best == UINT64_MAX ? 0 : best;
}
