/* A small JIT for the tests: generates two x86-64 functions at run time,
 * each a counted loop (mov $N, %ecx; 1: dec %ecx; jnz 1b; ret), registers
 * them through the dcpi_dyn API with names and source lines, and calls
 * them for MS milliseconds (argv[1], default 1500), jit_hot with three
 * times the iterations of jit_cold.  Not x86-64: exits 77 (skip). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dcpi_dyn.h"

typedef void (*fn)(void);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* mov $n, %ecx; 1: dec %ecx; jnz 1b; ret */
static size_t emit_loop(uint8_t *p, uint32_t n)
{
	static const uint8_t tail[] = { 0xff, 0xc9, 0x75, 0xfc, 0xc3 };

	p[0] = 0xb9;
	memcpy(p + 1, &n, 4);
	memcpy(p + 5, tail, sizeof(tail));
	return 5 + sizeof(tail);
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	double ms = argc > 1 ? atof(argv[1]) : 1500, t0 = now_ms();
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct dcpi_dyn_line hot_lines[] = { { 0, 10, "jit.src" }, { 5, 11, "jit.src" } };
	struct dcpi_dyn_code code[2];
	size_t n0, n1;
	int err;

	if (mem == MAP_FAILED)
		return 1;
	n0 = emit_loop(mem, 3000000);
	n1 = emit_loop(mem + 64, 1000000);
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 1;
	code[0] = (struct dcpi_dyn_code){ mem, n0, "jit_hot", hot_lines, 2 };
	code[1] = (struct dcpi_dyn_code){ mem + 64, n1, "jit_cold", NULL, 0 };
	err = dcpi_dyn_begin();
	for (int i = 0; i < 2 && !err; i++)
		err = dcpi_dyn_add(&code[i]);
	if (!err)
		err = dcpi_dyn_end();
	if (err) {
		fprintf(stderr, "jitc: dcpi_dyn: %s\n", strerror(-err));
		return 1;
	}
	while (now_ms() - t0 < ms) {
		((fn)(void *)mem)();
		((fn)(void *)(mem + 64))();
	}
	return 0;
#else
	(void)argc;
	(void)argv;
	return 77;
#endif
}
