/* Fixture of test_symtab: functions of every kind the symbol layer must
 * name (global, static, a weak alias, an untyped assembly label).  Run, it
 * prints each one's FILE OFFSET as a profile would record it (runtime
 * address -> its /proc/self/maps line -> address - start + pgoff), which
 * is the test's truth, independent of any ELF reader.  VARIANT changes
 * the code so a rebuild gets another build-id. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef VARIANT
#define VARIANT 1
#endif

volatile int sink;

__attribute__((noinline)) static int static_fn(int x)
{
	for (int i = 0; i < x; i++)
		sink += i * VARIANT;
	return sink;
}

__attribute__((noinline)) int global_fn(int x)
{
	return static_fn(x) + VARIANT;
}

int weak_alias(int x) __attribute__((weak, alias("global_fn")));

__attribute__((noinline)) int other_global(int x)
{
	sink = x;
	return global_fn(x) * 3 + VARIANT;
}

/* An assembly label: STT_NOTYPE, no size. */
__asm__(".text\n"
	".globl asm_label\n"
	"asm_label:\n"
	"\tret\n");
extern char asm_label[];

static void print_offset(const char *name, const void *p)
{
	unsigned long long a = (uintptr_t)p, start, end, pgoff;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &pgoff) != 3)
			continue;
		if (a >= start && a < end) {
			printf("%s 0x%llx\n", name, a - start + pgoff);
			break;
		}
	}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	(void)argv;
	sink = other_global(argc) + weak_alias(argc);
	print_offset("static_fn", (const void *)static_fn);
	print_offset("global_fn", (const void *)global_fn);
	print_offset("other_global", (const void *)other_global);
	print_offset("asm_label", (const void *)asm_label);
	print_offset("main", (const void *)main);
	return 0;
}
