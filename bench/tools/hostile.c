/* hostile: what a user's hostile input costs the daemon's readers, each
 * beside the same amount of ordinary input, in one run (a ratio near 1:
 * the hostile order costs what the ordinary one does).
 *   - a perf map of N lines listed backwards (each entry below the last)
 *     against the same lines forwards;
 *   - a jitdump of 1 GiB of 16-byte records: the first sample's read (one
 *     step of JM_DUMP_STEP) and the process's exit, against a dump of one
 *     step's size;
 *   - with cc: one function of R unwind rows against R/2 functions of two
 *     rows each (the same rows).
 *
 *   hostile [-lines N] [-rows R] [-runs K]
 *     -lines N  perf map lines (default 1000000)
 *     -rows R   unwind rows (default 40000)
 *     -runs K   runs of each, the median printed (default 5)
 * Prints seconds (medians) and the ratios. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/jitmap.h"
#include "dcpi/unwind.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

/* Seconds to read a perf map of n lines, backwards or not. */
static double perfmap(size_t n, int backwards)
{
	/* budgets past what n entries keep: every line is placed */
	struct dcpi_jitmap_opts o = { .procroot = "/nonexistent", .budget = (uint64_t)1 << 40,
				      .budget_per_uid = (uint64_t)1 << 40 };
	struct dcpi_jitmap *jm;
	char *t = malloc(n * 40), *p = t;
	double t0, t1;

	if (!t || dcpi_jitmap_new(&o, &jm))
		exit(1);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%llx 10 f%zu\n",
			     (unsigned long long)(backwards ? 0x7f0000000000ull - 16 * (i + 1)
							    : 0x10000000ull + 16 * i), i);
	t0 = now();
	dcpi_jitmap_feed_text(jm, 4242, t, (size_t)(p - t));
	t1 = now();
	dcpi_jitmap_free(jm);
	free(t);
	return t1 - t0;
}

/* Seconds to read a jitdump of mb MiB of 16-byte records of no kind we
 * read: its first sample and its exit. */
static double jitdump(size_t mb)
{
	struct dcpi_jitmap_opts o = { .procroot = "/nonexistent" };
	struct dcpi_jitmap *jm;
	size_t n = (mb << 20) / 16, len = 40 + n * 16;
	uint8_t *d = calloc(1, len);
	uint32_t h[3] = { 0x4A695444, 1, 40 }, r[2] = { 99, 16 };
	int64_t key;
	uint64_t off;
	double t0, t1;

	if (!d || dcpi_jitmap_new(&o, &jm))
		exit(1);
	memcpy(d, h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		uint64_t ts = 1 + i;

		memcpy(d + 40 + 16 * i, r, 8);
		memcpy(d + 48 + 16 * i, &ts, 8);
	}
	dcpi_jitmap_feed_dump(jm, 4242, d, len);
	free(d);
	t0 = now();
	dcpi_jitmap_resolve(jm, 4242, 0x1234, UINT64_MAX - 1, &key, &off);
	dcpi_jitmap_exit(jm, 4242);
	t1 = now();
	dcpi_jitmap_free(jm);
	return t1 - t0;
}

/* Seconds to compile the unwind table of so (made by cc from rows rows in
 * one function, or in functions of two rows each), or -1 without cc. */
static double unwind(const char *dir, unsigned rows, int one)
{
	char s[300], so[300], cmd[700];
	struct dcpi_unwind_table t = { 0 };
	FILE *f;
	double t0, t1;

	snprintf(s, sizeof(s), "%s/u%d.s", dir, one);
	snprintf(so, sizeof(so), "%s/u%d.so", dir, one);
	if (!(f = fopen(s, "w")))
		return -1;
	fputs("\t.text\n", f);
	for (unsigned i = 0; i < rows / 2; i++) {
		if (one ? i == 0 : 1)
			fprintf(f, "\t.globl g%u\n\t.type g%u, @function\ng%u:\n\t.cfi_startproc\n",
				i, i, i);
		fputs("\tnop\n\t.cfi_adjust_cfa_offset 8\n\tnop\n\t.cfi_adjust_cfa_offset -8\n", f);
		if (one ? i == rows / 2 - 1 : 1)
			fputs("\tret\n\t.cfi_endproc\n", f);
	}
	fputs("\t.section .note.GNU-stack,\"\",@progbits\n", f);
	if (fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd), "cc -shared -nostdlib -o '%s' '%s' 2>/dev/null", so, s);
	if (system(cmd))
		return -1;
	t0 = now();
	if (dcpi_unwind_table_build(so, &t))
		return -1;
	t1 = now();
	dcpi_unwind_table_free(&t);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	size_t lines = 1000000;
	unsigned rows = 40000;
	int runs = 5;
	double a[32], b[32], fwd, back, step, big, one, many;
	char dir[] = "/tmp/dcpi-hostile.XXXXXX";

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-lines"))
			lines = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-rows"))
			rows = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-runs"))
			runs = atoi(argv[i + 1]);
	}
	if (runs < 1 || runs > 32 || !lines || rows < 4) {
		fprintf(stderr, "usage: hostile [-lines N] [-rows R] [-runs 1..32]\n");
		return 2;
	}
	for (int k = 0; k < runs; k++)
		a[k] = perfmap(lines, 0), b[k] = perfmap(lines, 1);
	fwd = median(a, runs), back = median(b, runs);
	printf("perf map, %zu lines: forwards %.3f s, backwards %.3f s (ratio %.2f)\n", lines, fwd,
	       back, back / fwd);
	for (int k = 0; k < runs; k++)
		a[k] = jitdump(64), b[k] = jitdump(1024);
	step = median(a, runs), big = median(b, runs);
	printf("jitdump of 16-byte records, first sample and exit: 64 MiB %.3f s, 1 GiB %.3f s "
	       "(ratio %.2f)\n", step, big, big / step);
	if (!mkdtemp(dir))
		return 1;
	for (int k = 0; k < runs; k++)
		a[k] = unwind(dir, rows, 0), b[k] = unwind(dir, rows, 1);
	many = median(a, runs), one = median(b, runs);
	if (many < 0 || one < 0)
		printf("unwind: no cc to assemble the fixtures, not measured\n");
	else
		printf("unwind table, %u rows: in functions of two %.3f s, in one function %.3f s "
		       "(ratio %.2f)\n", rows, many, one, one / many);
	{
		char cmd[100];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "hostile: could not remove %s\n", dir);
	}
	return 0;
}
