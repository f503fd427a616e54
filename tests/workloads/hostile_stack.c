/* A program whose stack an unwinder must not trust (tests/e2e/stacks).
 *   hostile_stack MODE [MILLIONS]
 * spins MILLIONS million iterations (default 200) with its stack pointer
 * on a fake stack of 64 KiB that holds:
 *   loop     the address of the spinning code itself, everywhere: each
 *            frame "returns" into the same code (a walk must end, bounded)
 *   kernel   kernel addresses: return addresses and saved rbp (refused)
 *   garbage  a pseudo-random pattern
 * and rbp pointing at the fake stack's bottom (kernel: into the kernel);
 *   unmapped the stack pointer on an unmapped page: the kernel copies
 *            nothing of the stack (a sample with an empty copy)
 *   deep     a real recursion 20,000 frames deep, spinning at its bottom:
 *            deeper than any stack copy (the copy runs out)
 * Timer samples reach no handler in the program (perf takes them in the
 * kernel), so the fake stack pointer is never used by anything but the
 * profiler's unwinder.  x86-64 only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS 8192

static uint64_t fake[WORDS] __attribute__((aligned(64)));
volatile unsigned long sink;

/* n iterations with rsp = sp and rbp = bp; rsp and rbp restored after */
__attribute__((noinline)) static void spin_on(uint64_t *sp, uint64_t bp, unsigned long n)
{
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %%rbp, %%r13\n\t"
			 "mov %0, %%rsp\n\t"
			 "mov %1, %%rbp\n\t"
			 "1: dec %2\n\t"
			 "jnz 1b\n\t"
			 "mov %%r12, %%rsp\n\t"
			 "mov %%r13, %%rbp\n\t"
			 : "+r"(sp), "+r"(bp), "+r"(n)
			 :
			 : "r12", "r13", "memory", "cc");
}

__attribute__((noinline)) static unsigned long deep(int depth, unsigned long n)
{
	volatile char pad[16] = { 0 };

	if (depth > 0)
		return deep(depth - 1, n) + pad[0];
	/* a register loop, whose speed is the core's clock: a loop on a
	 * volatile runs several times faster on cores that rename memory
	 * (AMD Zen), and too few samples then fall in it */
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
	return sink;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "loop";
	unsigned long n = (argc > 2 ? strtoul(argv[2], NULL, 10) : 200) * 1000000ul;
	uint64_t bp = (uint64_t)(uintptr_t)&fake[WORDS / 2], x = 0x9e3779b97f4a7c15ull;

	if (!strcmp(mode, "deep")) {
		sink = deep(20000, n);
		return 0;
	}
	for (int i = 0; i < WORDS; i++) {
		if (!strcmp(mode, "loop"))
			fake[i] = (uint64_t)(uintptr_t)&spin_on + 16;
		else if (!strcmp(mode, "kernel"))
			fake[i] = 0xffffffff81000000ull + 8 * (uint64_t)i;
		else
			fake[i] = x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
	if (!strcmp(mode, "unmapped")) {
		spin_on((uint64_t *)(uintptr_t)0x10000, 0, n);
		return 0;
	}
	if (!strcmp(mode, "kernel"))
		bp = 0xffffffff81234000ull;
	else if (strcmp(mode, "loop") && strcmp(mode, "garbage")) {
		fprintf(stderr, "hostile_stack: MODE is loop, kernel, garbage, deep or unmapped\n");
		return 2;
	}
	spin_on(&fake[64], bp, n);
	return 0;
}
