/* Workload for e2e/vtrace_lib (libdcpivp(7)): whether the library's
 * sample handler allocates.  Its hot loop converts doubles loaded from
 * memory (cvtsd2si rax, qword ptr [rdi]: an instruction Capstone 4's
 * printer prints through an alias, with cs_strdup and cs_mem_free) and
 * makes no allocation itself; malloc, calloc, realloc and free are this
 * program's (the executable's definitions come before libc's for every
 * library), and count the calls made while the loop runs: they can only
 * be a signal handler's.  Prints "allocs N" and "loops N".
 *   vp_alloc [SCALE]   SCALE times 0.5 s of CPU time */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static atomic_int counting;
static atomic_long allocs;

void *malloc(size_t n)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t s)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_calloc(n, s);
}

void *realloc(void *p, size_t n)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p && atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	__libc_free(p);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double d[4096];

__attribute__((noinline)) static uint64_t cvt_work(double secs)
{
	uint64_t s = 0, loops = 0;
	double t = cpu_seconds();

	while (cpu_seconds() - t < secs) {
		for (int i = 0; i < 4096; i++) {
			long v;

			__asm__ volatile("cvtsd2si (%1), %0" : "=r"(v) : "r"(&d[i]) : "memory");
			s += (uint64_t)v;
		}
		loops++;
	}
	printf("loops %llu\n", (unsigned long long)loops);
	return s;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1;
	volatile uint64_t sink;
	long n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 4096; i++)
		d[i] = i;
	printf("start\n"); /* stdio's buffer allocated before counting */
	atomic_store(&counting, 1);
	sink = cvt_work(0.5 * scale);
	atomic_store(&counting, 0);
	(void)sink;
	n = atomic_load(&allocs);
	printf("allocs %ld\n", n);
	return 0;
}
