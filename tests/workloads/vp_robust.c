/* Workload for e2e/vtrace_lib (libdcpivp(7)): programs that make life
 * hard for a preloaded sampler.  Each mode runs its loads for a given
 * amount of CPU time (not wall time: the tests must not depend on what
 * else the machine runs) and prints what the test checks.
 *   vp_robust handler    its own SIGPROF handler (sigaction, then signal),
 *                        fed by raise() and setitimer(ITIMER_PROF): prints
 *                        "raised N" (of 100), "timer N", "leaked N"
 *                        (signals it got that were the library's: si_code
 *                        POLL_IN) and "dispositions ok" when sigaction and
 *                        signal returned its own handlers
 *   vp_robust onstack    an alternate stack and its own SIGPROF handler
 *                        with SA_ONSTACK, fed by raise(): prints "onstack
 *                        N" (of 100 run on the alternate stack)
 *   vp_robust trap       its own SIGTRAP handler, fed by raise() and int3:
 *                        prints "trapped N" (of 110) and "leaked N"
 *   vp_robust block      SIGPROF blocked from main() to its end
 *   vp_robust fork       forks; parent_work() and child_work() each in
 *                        their own process; prints "child PID"
 *   vp_robust threads    64 threads, thread i loading the value 0x1000 + i
 *                        in thread_work()
 *   vp_robust exit       8 threads loading; one of them calls exit(0)
 *   vp_robust race       a thread reads a page (catching its own SIGSEGV
 *                        with sigsetjmp) that another one keeps making
 *                        unreadable (mprotect) and unmapping; prints
 *                        "caught N" (its own faults)
 *   vp_robust masked     a masked load (vmaskmovps, mask 0) from a page
 *                        never readable: the program never faults, a probe
 *                        that skips the mapping check always does; prints
 *                        "masked" (or "no avx")
 *   vp_robust segv       reads address 0 with no handler: dies of SIGSEGV
 *   vp_robust exec       exec_work(), then execs itself as "after"
 *   vp_robust after      after_work() (the program exec'd)
 *   vp_robust execfail   work, an exec that fails, work again
 *   vp_robust vfork      vfork, the child execs /bin/true
 *   vp_robust vforksig   its own SIGSEGV handler; vfork, the child sets
 *                        SIGSEGV to SIG_DFL and _exits; then it faults on
 *                        purpose and prints "caught" from its handler
 *   vp_robust execpend   SIGPROF blocked, 50 ms of CPU, then execs itself
 *                        as "unblock" with LD_PRELOAD removed from its
 *                        environment
 *   vp_robust unblock    unblocks SIGPROF (default action) and prints
 *                        "alive"
 *   vp_robust rename     renames itself "caf\xc3\xa9" (prctl PR_SET_NAME)
 *                        and loads
 *   vp_robust fds        prints its open descriptors, its threads and the
 *                        kernel's SIGPROF/SIGSEGV/SIGBUS handlers
 * A second argument scales the CPU time (default 1: 0.3 s a phase). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vp_loads.h"

static double scale = 1;
static volatile uint64_t sink;

static double cpu_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Loads from a 64 KiB array for secs of this thread's CPU time, eight a
 * turn (vp_loads.h). */
#define WORK(name)                                                                \
	__attribute__((noinline)) uint64_t name(double secs)                      \
	{                                                                         \
		static volatile uint64_t a[8192];                                 \
		uint64_t s = 0;                                                   \
		double t = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);                  \
		while (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t < secs * scale)   \
			for (volatile uint64_t *p = a; p < a + 8192; p += 8)      \
				VP_ADD8(s, p);                                    \
		return s;                                                         \
	}
WORK(main_work)
WORK(parent_work)
WORK(child_work)
WORK(exec_work)
WORK(after_work)

/* ---- handler ---- */
static atomic_int raised, timer, leaked;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == POLL_IN || si->si_code == POLL_HUP)
		atomic_fetch_add(&leaked, 1);
	else if (si->si_code == SI_TKILL)
		atomic_fetch_add(&raised, 1);
	else
		atomic_fetch_add(&timer, 1);
}

/* ---- onstack ---- */
static char altstack[65536];
static atomic_int onstack;

static void on_prof_alt(int sig)
{
	char here;

	(void)sig;
	if (&here >= altstack && &here < altstack + sizeof(altstack))
		atomic_fetch_add(&onstack, 1);
}

static int mode_onstack(void)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof_alt;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaltstack(&ss, NULL) || sigaction(SIGPROF, &sa, NULL))
		return 1;
	for (int i = 0; i < 100; i++) {
		sink = main_work(0.003);
		raise(SIGPROF);
	}
	printf("onstack %d\n", atomic_load(&onstack));
	return 0;
}

static void on_prof_plain(int sig)
{
	(void)sig;
}

/* Its own SIGPROF: 100 raise()s between loads (each delivered before
 * raise returns), and setitimer's (counted, not checked: ITIMER_PROF
 * follows the scheduler's tick accounting, which a busy VM makes erratic). */
static int mode_handler(void)
{
	struct sigaction sa, old, now;
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
	int ok;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ok = sigaction(SIGPROF, &sa, &old) == 0 && old.sa_handler == SIG_DFL;
	/* signal() replaces it, and says it replaced on_prof */
	ok = ok && signal(SIGPROF, on_prof_plain) == (void (*)(int))(void *)on_prof;
	ok = ok && sigaction(SIGPROF, NULL, &now) == 0 && now.sa_handler == on_prof_plain;
	ok = ok && sigaction(SIGPROF, &sa, NULL) == 0; /* on_prof again, to see si_code */
	setitimer(ITIMER_PROF, &it, NULL);
	for (int i = 0; i < 100; i++) {
		sink = main_work(0.003);
		raise(SIGPROF);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	printf("raised %d\ntimer %d\nleaked %d\n%s\n", atomic_load(&raised), atomic_load(&timer),
	       atomic_load(&leaked), ok ? "dispositions ok" : "dispositions WRONG");
	return 0;
}

/* Its own SIGTRAP (under DCPI_VTRACE_SIGNAL=trap, the library's signal
 * too): 100 raise()s and 10 int3 breakpoints between loads.  Prints
 * "trapped N" (of 110) and "leaked N" (the library's: si_code TRAP_PERF). */
static atomic_int trapped;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == 6 /* TRAP_PERF */)
		atomic_fetch_add(&leaked, 1);
	else
		atomic_fetch_add(&trapped, 1);
}

static int mode_trap(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL))
		return 1;
	for (int i = 0; i < 100; i++) {
		sink = main_work(0.003);
		raise(SIGTRAP);
		if (i % 10 == 0)
			__asm__ volatile("int3");
	}
	printf("trapped %d\nleaked %d\n", atomic_load(&trapped), atomic_load(&leaked));
	return 0;
}

static int mode_block(void)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGPROF);
	sigprocmask(SIG_BLOCK, &m, NULL);
	sink = main_work(0.3);
	printf("blocked\n");
	return 0;
}

static int mode_fork(void)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		sink = child_work(0.3);
		exit(0);
	}
	printf("child %d\n", (int)pid);
	sink = parent_work(0.3);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	return 0;
}

/* ---- threads ---- */
static volatile uint64_t values[64 * 8]; /* one a line */

__attribute__((noinline)) uint64_t thread_work(volatile uint64_t *mine, double secs)
{
	uint64_t s = 0;
	double t = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);

	while (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t < secs * scale)
		for (int i = 0; i < 125; i++)
			VP_ADD8_SAME(s, mine);
	return s;
}

static void *thread_main(void *p)
{
	intptr_t i = (intptr_t)p;

	return (void *)(uintptr_t)thread_work(&values[i * 8], 0.03);
}

static int mode_threads(void)
{
	pthread_t th[64];

	for (int i = 0; i < 64; i++) {
		values[i * 8] = 0x1000u + (unsigned)i;
		if (pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i))
			return 1;
	}
	for (int i = 0; i < 64; i++)
		pthread_join(th[i], NULL);
	printf("threads 64\n");
	return 0;
}

static void *exit_main(void *p)
{
	sink = main_work(p ? 0.15 : 10);
	if (p) {
		fflush(stdout);
		exit(0); /* the others still running */
	}
	return NULL;
}

static int mode_exit(void)
{
	pthread_t th;

	for (int i = 0; i < 8; i++)
		if (pthread_create(&th, NULL, exit_main, (void *)(intptr_t)(i == 7)))
			return 1;
	printf("exiting\n");
	sink = main_work(10);
	return 1; /* not reached: thread 7 exits first */
}

/* ---- race ---- */
static volatile uint64_t *page;
static atomic_int stop, caught;
static __thread sigjmp_buf env;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

/* Twelve dependent multiplies, then the load: a sample taken in the
 * multiplies finds the load ahead, with the page's address in a register
 * nothing between changes, whether the page is readable then or not. */
#define MUL "imulq %[x], %[x]\n\t"
__attribute__((noinline)) uint64_t race_read(volatile uint64_t *p)
{
	uint64_t s = 0, x = 3;

	for (int i = 0; i < 100000; i++)
		__asm__ volatile(MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL
				 "addq (%[p]), %[s]"
				 : [s] "+r"(s), [x] "+r"(x)
				 : [p] "r"(p)
				 : "memory");
	return s;
}

static void *reader(void *p)
{
	(void)p;
	while (!atomic_load(&stop)) {
		if (sigsetjmp(env, 1)) {
			atomic_fetch_add(&caught, 1);
			continue;
		}
		sink = race_read(page);
	}
	return NULL;
}

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* The page alternates between readable and not (unmapped one time in
 * four) every half millisecond of wall time: the reader, running while the
 * other sleeps, meets both states whatever the machine's load. */
static int mode_race(void)
{
	struct sigaction sa;
	pthread_t th;
	double t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || pthread_create(&th, NULL, reader, NULL))
		return 1;
	t = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned n = 0; cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - t < 0.6 * scale; n++) {
		if (n % 4 == 3)
			munmap((void *)page, 4096);
		else
			mprotect((void *)page, 4096, PROT_NONE);
		nap(500000);
		if (n % 4 == 3)
			mmap((void *)page, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		else
			mprotect((void *)page, 4096, PROT_READ);
		nap(500000);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("caught %d\n", atomic_load(&caught));
	return 0;
}

/* A load the program makes that never faults, from a page that is never
 * readable: vmaskmovps with a zero mask reads nothing (AVX suppresses the
 * fault of a masked-off element), but its operand is a read of memory, so
 * the library finds it ahead of the multiplies and, with its mapping check
 * skipped (DCPI_VTRACE_TEST_NOCHECK), times a load that faults. */
__attribute__((noinline, target("avx"))) uint64_t masked_read(const void *p, long n)
{
	uint64_t x = 3;

	while (n--)
		__asm__ volatile(MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL
				 "vxorps %%xmm1, %%xmm1, %%xmm1\n\t"
				 "vmaskmovps (%[p]), %%xmm1, %%xmm0"
				 : [x] "+r"(x)
				 : [p] "r"(p)
				 : "xmm0", "xmm1", "memory");
	return x;
}

static int mode_masked(void)
{
	void *none;
	double t;

	if (!__builtin_cpu_supports("avx")) {
		printf("no avx\n");
		return 0;
	}
	none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		return 1;
	for (t = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
	     cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - t < 0.3 * scale;)
		sink = masked_read(none, 10000);
	printf("masked\n");
	return 0;
}

static int mode_exec(const char *self)
{
	sink = exec_work(0.2);
	fflush(stdout);
	execl(self, self, "after", (char *)NULL);
	return 1;
}

static int mode_execfail(void)
{
	sink = main_work(0.1);
	if (execl("/nonexistent/vp_robust", "vp_robust", (char *)NULL) == 0 || errno != ENOENT)
		return 1;
	sink = main_work(0.1);
	printf("exec failed\n");
	return 0;
}

static int mode_vfork(void)
{
	pid_t pid;
	int st;

	sink = main_work(0.1);
	fflush(stdout);
	pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	printf("child %d\n", (int)pid);
	return 0;
}

static sigjmp_buf vfenv;

static void on_segv_vf(int sig)
{
	(void)sig;
	siglongjmp(vfenv, 1);
}

static int mode_vforksig(void)
{
	struct sigaction sa;
	pid_t pid;
	int st;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv_vf;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return 1;
	sink = main_work(0.1);
	pid = vfork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	sink = main_work(0.1);
	if (sigsetjmp(vfenv, 1) == 0) {
		volatile uintptr_t zero = 0;

		sink = *(volatile uint64_t *)zero;
		return 1;
	}
	printf("caught\n");
	return 0;
}

static int mode_execpend(const char *self)
{
	sigset_t m;
	char *env[] = { NULL };

	sigemptyset(&m);
	sigaddset(&m, SIGPROF);
	sigprocmask(SIG_BLOCK, &m, NULL);
	sink = main_work(0.05);
	fflush(stdout);
	execle(self, self, "unblock", (char *)NULL, env);
	return 1;
}

static int mode_unblock(void)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGPROF);
	sigprocmask(SIG_UNBLOCK, &m, NULL);
	printf("alive\n");
	return 0;
}

/* What the kernel holds for this process, as the library could change it. */
static int mode_fds(void)
{
	static const int sigs[3] = { SIGPROF, SIGSEGV, SIGBUS };
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	char path[300], link[256];
	int n = 0;

	sink = main_work(0.1);
	while (dir && (d = readdir(dir))) {
		ssize_t len;

		if (d->d_name[0] == '.' || atoi(d->d_name) == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		link[len < 0 ? 0 : len] = 0;
		printf("fd %s %s\n", d->d_name, link);
	}
	if (dir)
		closedir(dir);
	dir = opendir("/proc/self/task");
	while (dir && (d = readdir(dir)))
		n += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	printf("threads %d\n", n);
	for (int i = 0; i < 3; i++) {
		unsigned long k[4] = { 0 }; /* the kernel's sigaction: handler first */

		syscall(SYS_rt_sigaction, sigs[i], NULL, k, 8);
		printf("signal %d handler %s\n", sigs[i], k[0] ? "set" : "default");
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2)
		scale = atof(argv[2]);
	if (!strcmp(m, "handler"))
		return mode_handler();
	if (!strcmp(m, "block"))
		return mode_block();
	if (!strcmp(m, "trap"))
		return mode_trap();
	if (!strcmp(m, "onstack"))
		return mode_onstack();
	if (!strcmp(m, "fork"))
		return mode_fork();
	if (!strcmp(m, "threads"))
		return mode_threads();
	if (!strcmp(m, "exit"))
		return mode_exit();
	if (!strcmp(m, "race"))
		return mode_race();
	if (!strcmp(m, "masked"))
		return mode_masked();
	if (!strcmp(m, "segv")) {
		volatile uintptr_t zero = 0;

		return (int)*(volatile uint64_t *)zero;
	}
	if (!strcmp(m, "exec"))
		return mode_exec(argv[0]);
	if (!strcmp(m, "after")) {
		sink = after_work(0.2);
		return 0;
	}
	if (!strcmp(m, "execfail"))
		return mode_execfail();
	if (!strcmp(m, "vfork"))
		return mode_vfork();
	if (!strcmp(m, "vforksig"))
		return mode_vforksig();
	if (!strcmp(m, "rename")) {
		prctl(PR_SET_NAME, "caf\xc3\xa9", 0, 0, 0);
		sink = main_work(0.1);
		return 0;
	}
	if (!strcmp(m, "execpend"))
		return mode_execpend(argv[0]);
	if (!strcmp(m, "unblock"))
		return mode_unblock();
	if (!strcmp(m, "fds"))
		return mode_fds();
	fprintf(stderr, "usage: vp_robust handler|onstack|trap|block|fork|threads|exit|race|masked|segv|"
			"exec|execfail|vfork|vforksig|execpend|unblock|rename|fds [SCALE]\n");
	return 2;
}
