/* What a profiling signal leaves of L1 (libdcpivp(7), ACCURACY): a loop
 * keeps an array of KIB KiB hot in L1 and times, now and then, one load
 * of a random line of it (the timing code's own cost included); a
 * SIGPROF every millisecond of its CPU time times, in the handler, the
 * first load of a random line of the same array, then the same line
 * again (L1 for sure, the line just loaded) and a line the handler just
 * wrote.  If the signal's delivery (interrupt, kernel, a hypervisor under
 * a VM, the signal frame) evicts the array, the first load costs what a
 * miss to L2 or beyond does while the second costs what the loop's do.
 * Prints the 10th, 50th and 90th percentile of each, in time-stamp
 * counter ticks, and the share of first loads slower than every one of
 * the loop's 90%.  Not a test.
 *   l1evict [KIB [SIGNALS]]     (defaults 16 and 2000) */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <x86intrin.h>

#define MAX_T 100000

static volatile long *arr, hot;
static size_t nlong;
static unsigned long *t_first, *t_second, *t_ref, *t_loop;
static volatile int nsig;
static int want;
static unsigned seed = 1;

/* One load between serialising time-stamp reads, in ticks. */
static inline unsigned long time_load(volatile long *p)
{
	unsigned aux;
	unsigned long a, b;

	_mm_lfence();
	a = __rdtscp(&aux);
	_mm_lfence();
	(void)*p;
	_mm_lfence();
	b = __rdtscp(&aux);
	_mm_lfence();
	return b - a;
}

static volatile long *random_line(void)
{
	seed = seed * 1103515245 + 12345;
	return &arr[((seed >> 8) % (nlong / 8)) * 8];
}

static void handler(int sig)
{
	volatile long *p;

	(void)sig;
	if (nsig >= want)
		return;
	p = random_line();
	t_first[nsig] = time_load(p);
	t_second[nsig] = time_load(p);
	hot = nsig;
	t_ref[nsig] = time_load(&hot);
	nsig++;
}

static int cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static unsigned long pct(unsigned long *v, int n, int p)
{
	return v[(long)n * p / 100];
}

static void show(const char *name, unsigned long *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-32s %6lu %6lu %6lu\n", name, pct(v, n, 10), pct(v, n, 50), pct(v, n, 90));
}

int main(int argc, char **argv)
{
	long kib = argc > 1 ? atol(argv[1]) : 16, s = 0;
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	int nloop = 0, slower = 0;
	unsigned long loop90;

	want = argc > 2 ? atoi(argv[2]) : 2000;
	if (kib < 1 || kib > 1 << 20 || want < 10 || want > MAX_T) {
		fprintf(stderr, "usage: l1evict [KIB (1..1048576) [SIGNALS (10..%d)]]\n", MAX_T);
		return 2;
	}
	nlong = (size_t)kib * 1024 / sizeof(long);
	arr = calloc(nlong, sizeof(long));
	t_first = calloc(MAX_T, sizeof(long));
	t_second = calloc(MAX_T, sizeof(long));
	t_ref = calloc(MAX_T, sizeof(long));
	t_loop = calloc(MAX_T, sizeof(long));
	if (!arr || !t_first || !t_second || !t_ref || !t_loop)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	while (nsig < want) {
		for (size_t i = 0; i < nlong; i += 8)
			s += arr[i];
		if (nloop < MAX_T)
			t_loop[nloop++] = time_load(random_line());
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	printf("%-32s %6s %6s %6s\n", "ticks of one load", "p10", "p50", "p90");
	show("loop: a line of the array", t_loop, nloop);
	loop90 = pct(t_loop, nloop, 90);
	for (int i = 0; i < want; i++)
		slower += t_first[i] > loop90;
	show("handler: the line, first load", t_first, want);
	show("handler: the same line again", t_second, want);
	show("handler: a line it just wrote", t_ref, want);
	printf("%ld KiB array, %d signals: %.1f%% of the handler's first loads slower than 90%% of "
	       "the loop's (ticks: p10 p50 p90 above)\n", kib, want, 100.0 * slower / want);
	return (int)(s & 0);
}
