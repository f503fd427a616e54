/* Who called it, by construction (tests/e2e/stacks; built -O2
 * -fomit-frame-pointer: no frame pointers, as Debian builds).
 *   callers MODE [N [S]]  ratio, tail, chain, threads: N rounds at least,
 *                       and on until S seconds of CPU time (each thread's,
 *                       for threads): a fast machine then takes as many
 *                       samples as a slow one
 *   callers ratio [N]   leaf() called from six(), three() and one() with
 *                       work in the ratio 6:3:1, N rounds (default 6).  A
 *                       round is cut in SLICES slices, each calling all
 *                       three: a change of the machine's speed mid-run (a
 *                       VM's neighbours, a clock step) then falls on all
 *                       three callers alike, not on the one running then.
 *                       Each call is still long (one() some 1 ms, two
 *                       periods of 2,000 samples/s, never a loop short
 *                       enough for periodic sampling to lock onto)
 *   callers ratio N S FILE  the same, and writes to FILE the CPU time
 *                       (this thread's clock) spent in six(), three() and
 *                       one(): "six T three T one T", seconds.  A timer's
 *                       samples measure time, not work: where the machine
 *                       runs one caller slower than another (neighbours,
 *                       the host taking the guest's CPU), the samples
 *                       follow the time, and so must a check
 *   callers looper [M]  DCPI's looper: get_next_random() calls rand() in
 *                       a loop, M million times (default 20); main calls
 *                       only it, so every rand() sample is under it
 *   callers tail [N]    leaf() reached from two() through jumper(), whose
 *                       call to it is its last act: a tail call, made a
 *                       jump (no frame of jumper() is left on the stack),
 *                       and from direct(), 2:1, N rounds (default 6),
 *                       each cut in SLICES slices as ratio's are
 *   callers chain [N]   leaf() reached 2:1 through a chain of two tail
 *                       calls (chain() calls hop1(), which jumps to hop2(),
 *                       which jumps to leaf()) and through a fork of them
 *                       (forked() calls forker(), which jumps to forkb() or
 *                       forkc() by its argument's parity, each jumping to
 *                       leaf(): two ways, only the first known), N rounds,
 *                       each cut in SLICES slices
 *   callers threads [N] ratio's work in two threads at once, N rounds
 *                       each (default 6): leaf() under six(), three() and
 *                       one() under runner(), on threads' stacks (the
 *                       copies dcpi cuts at each thread's top) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICES 10

volatile unsigned long sink;

__attribute__((noinline)) static void leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
}

/* each call is followed by work of its own, so none is a tail call */
__attribute__((noinline)) static void six(void) { leaf(42000000 / SLICES); sink++; }
__attribute__((noinline)) static void three(void) { leaf(21000000 / SLICES); sink++; }
__attribute__((noinline)) static void one(void) { leaf(7000000 / SLICES); sink++; }

__attribute__((noinline)) static unsigned long get_next_random(unsigned long m)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < m; i++)
		s += (unsigned long)rand();
	return s;
}

/* noipa: no clone of jumper() with n folded in, so it keeps its name */
__attribute__((noipa)) static void jumper(unsigned long n) { sink++; leaf(n); }
__attribute__((noipa)) static void two(void) { jumper(28000000 / SLICES); sink++; }
__attribute__((noipa)) static void direct(void) { leaf(14000000 / SLICES); sink++; }

__attribute__((noipa)) static void hop2(unsigned long n) { sink += 2; leaf(n); }
__attribute__((noipa)) static void hop1(unsigned long n) { sink += 1; hop2(n); }
__attribute__((noipa)) static void chain(void) { hop1(28000000 / SLICES); sink++; }
__attribute__((noipa)) static void forkb(unsigned long n) { sink += 3; leaf(n); }
__attribute__((noipa)) static void forkc(unsigned long n) { sink += 4; leaf(n); }
__attribute__((noipa)) static void forker(unsigned long n)
{
	if (n & 1)
		forkb(n);
	else
		forkc(n);
}
/* odd: forker jumps to forkb */
__attribute__((noipa)) static void forked(void) { forker(14000000 / SLICES + 1); sink++; }

/* The CPU time clock c has counted, in seconds. */
static double cpu_s(clockid_t c)
{
	struct timespec ts;

	return clock_gettime(c, &ts) ? 0 : (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Rounds: at least n slices, and on until the CPU time reaches s seconds
 * (a fast machine takes as many samples as a slow one); whole slices. */
struct rounds {
	int n;
	double s;
};

static int more(const struct rounds *r, int i, clockid_t c)
{
	return i < r->n || (r->s > 0 && cpu_s(c) < r->s);
}

__attribute__((noipa)) static void *runner(void *arg)
{
	for (int i = 0; more(arg, i, CLOCK_THREAD_CPUTIME_ID); i++) {
		six();
		three();
		one();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct rounds r = { (argc > 2 ? atoi(argv[2]) : 6) * SLICES, argc > 3 ? atof(argv[3]) : 0 };
	const clockid_t pc = CLOCK_PROCESS_CPUTIME_ID;

	if (argc > 1 && !strcmp(argv[1], "threads")) {
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, runner, &r))
				return 1;
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "chain")) {
		for (int i = 0; more(&r, i, pc); i++) {
			chain();
			forked();
		}
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "tail")) {
		for (int i = 0; more(&r, i, pc); i++) {
			two();
			direct();
		}
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "looper")) {
		unsigned long m = (argc > 2 ? strtoul(argv[2], NULL, 10) : 20) * 1000000ul;

		sink = get_next_random(m);
		return 0;
	}
	const clockid_t tc = CLOCK_THREAD_CPUTIME_ID;
	double spent[3] = { 0, 0, 0 }, t[4];
	FILE *f;

	for (int i = 0; more(&r, i, pc); i++) {
		t[0] = cpu_s(tc);
		six();
		t[1] = cpu_s(tc);
		three();
		t[2] = cpu_s(tc);
		one();
		t[3] = cpu_s(tc);
		for (int k = 0; k < 3; k++)
			spent[k] += t[k + 1] - t[k];
	}
	if (argc > 4) {
		f = fopen(argv[4], "w");
		if (!f || fprintf(f, "six %.6f three %.6f one %.6f\n", spent[0], spent[1],
				  spent[2]) < 0 || fclose(f))
			return 1;
	}
	return 0;
}
