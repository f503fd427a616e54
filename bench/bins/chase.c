/* bench/bins/chase BYTES...: load latency over each working set, measured
 * apart from dcpi (its own list, its own clock): a linked list of one node
 * per 64-byte line in an order shuffled by rand(3), walked for 20 ms, timed with CLOCK_MONOTONIC and turned into time-stamp counter
 * cycles at the rate this program measures against that clock.  Prints
 * "BYTES CYCLES" a line: the least of five walks (the least disturbed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double t0 = now(), tsc_hz;
	uint64_t c0 = __rdtsc();

	while (now() - t0 < 0.2)
		;
	tsc_hz = (double)(__rdtsc() - c0) / (now() - t0);
	srand(12345);
	for (int a = 1; a < argc; a++) {
		size_t bytes = strtoull(argv[a], NULL, 10), n = bytes / 64, steps = 0;
		char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t *order = malloc(n * sizeof(*order));
		double ns[5];
		void **p;

		if (buf == MAP_FAILED || !order || n < 2)
			return 1;
		madvise(buf, bytes, MADV_HUGEPAGE);
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
			size_t j = ((size_t)rand() << 16 ^ (size_t)rand()) % (i + 1), x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (size_t i = 0; i < n; i++)
			*(void **)(buf + order[i] * 64) = buf + order[(i + 1) % n] * 64;
		p = (void **)(buf + order[0] * 64);
		for (size_t i = 0; i < n; i++)
			p = *p;
		for (int k = 0; k < 5; k++) {
			double s = now();

			steps = 0;
			while (now() - s < 0.02) {
				for (int i = 0; i < 10000; i++)
					p = *p;
				steps += 10000;
			}
			ns[k] = (now() - s) / (double)steps;
		}
		qsort(ns, 5, sizeof(ns[0]), cmp);
		printf("%zu %.2f %p\n", bytes, ns[0] * tsc_hz, (void *)p);
		free(order);
		munmap(buf, bytes);
	}
	return 0;
}
