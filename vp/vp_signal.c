/* The handlers: DCPI's upcall (the sample signal: a thread's own perf
 * event overflowed) and the fault handler that keeps the probe's faults
 * from the program, each chaining to what the program installed.
 *
 * The program's dispositions of the three signals the library handles
 * (the sample signal, SIGSEGV, SIGBUS) are kept here, not in the kernel:
 * the interposed sigaction()/signal() (vp_intercept.c) record and return
 * them, and the handlers forward to them what is not the library's.  They
 * are read in handlers, so they are swapped without a lock: each signal
 * has VP_DISP slots, a writer fills a free one and publishes its index by
 * compare-and-swap (retrying when another writer published first, so that
 * every sigaction() returns the disposition it replaced), and a reader
 * copies the published slot.  A reader overtaken by VP_DISP - 1 writers
 * while it copies could read a torn slot; programs set these dispositions
 * a few times in a run. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "vp.h"

#define VP_DISP 8

struct vp_disp {
	int sig;
	atomic_uint cur, next;
	struct sigaction slot[VP_DISP];
};

static struct vp_disp disps[3]; /* the sample signal, SIGSEGV, SIGBUS */
static long page_size;
static uint64_t timing; /* the timing code's cost, cycles */

static struct vp_disp *disp_of(int sig)
{
	if (!atomic_load_explicit(&vp_active, memory_order_acquire))
		return NULL;
	for (int i = 0; i < 3; i++)
		if (disps[i].sig == sig)
			return &disps[i];
	return NULL;
}

static void disp_get(struct vp_disp *d, struct sigaction *sa)
{
	unsigned cur = atomic_load_explicit(&d->cur, memory_order_acquire);

	memcpy(sa, &d->slot[cur % VP_DISP], sizeof(*sa));
}

/* Publish act in place of the disposition seen (expect: its slot), or
 * in place of whatever is current (expect < 0); the one replaced to old. */
static int disp_put(struct vp_disp *d, const struct sigaction *act, struct sigaction *old,
		    int expect)
{
	for (;;) {
		unsigned cur = atomic_load_explicit(&d->cur, memory_order_acquire);
		unsigned s = atomic_fetch_add_explicit(&d->next, 1, memory_order_relaxed) % VP_DISP;

		if (expect >= 0 && cur != (unsigned)expect)
			return 0; /* the program changed it meanwhile: its own wins */
		if (s == cur)
			s = (s + 1) % VP_DISP;
		if (old)
			memcpy(old, &d->slot[cur], sizeof(*old));
		memcpy(&d->slot[s], act, sizeof(*act));
		if (atomic_compare_exchange_strong_explicit(&d->cur, &cur, s, memory_order_acq_rel,
							    memory_order_acquire))
			return 1;
	}
}

int vp_signals_swap(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct vp_disp *d = disp_of(sig);

	/* a vfork child shares these records with its parent but not its
	 * dispositions: its own go to the kernel, the parent's kept */
	if (!d || !vp_owner())
		return 0;
	if (!act) {
		if (old)
			disp_get(d, old);
		return 1;
	}
	disp_put(d, act, old, -1);
	return 1;
}

/* The signal was sent by something else than a fault, or can be again. */
static void resend(int sig)
{
	syscall(SYS_tgkill, getpid(), gettid(), sig);
}

/* Give sig to the program's disposition as the kernel would have. */
static void chain(struct vp_disp *d, int sig, siginfo_t *si, void *uc, int fault)
{
	struct sigaction sa, dfl;
	sigset_t old;
	int masked = 0, sent = si->si_code <= 0; /* kill(), sigqueue(), tgkill() */
	unsigned cur = atomic_load_explicit(&d->cur, memory_order_acquire);

	memcpy(&sa, &d->slot[cur % VP_DISP], sizeof(sa));
	if (sa.sa_handler == SIG_IGN && (!fault || sent))
		return;
	if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) {
		/* the default action: every sample signal allowed terminates
		 * (vp.c), and a fault cannot be ignored.  With the kernel's
		 * default in place a real fault kills when it runs again; a
		 * sent signal is sent again, delivered on return. */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		vp_real_sigaction(sig, &dfl, NULL);
		if (!fault || sent)
			resend(sig);
		return;
	}
	if (!sigisemptyset(&sa.sa_mask) || (sa.sa_flags & SA_NODEFER)) {
		sigset_t m = sa.sa_mask;

		pthread_sigmask(SIG_BLOCK, &m, &old);
		if (sa.sa_flags & SA_NODEFER) {
			sigemptyset(&m);
			sigaddset(&m, sig);
			pthread_sigmask(SIG_UNBLOCK, &m, NULL);
		}
		masked = 1;
	}
	if (sa.sa_flags & SA_RESETHAND) {
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		disp_put(d, &dfl, NULL, (int)(cur % VP_DISP));
	}
	if (sa.sa_flags & SA_SIGINFO)
		sa.sa_sigaction(sig, si, uc);
	else
		sa.sa_handler(sig);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void vp_on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t fix;

	if (si->si_code > 0 && (fix = vp_probe_fixup((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]))) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fix;
		return;
	}
	chain(&disps[sig == SIGSEGV ? 1 : 2], sig, si, ucv, 1);
}

/* The kernel's struct sigaction, for a raw query (no libc in between). */
struct vp_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* The fault handlers are still the library's: the program can replace
 * them by a raw rt_sigaction, and a probe fault would then reach it. */
static int faults_caught(void)
{
	static const int sigs[2] = { SIGSEGV, SIGBUS };
	struct vp_ksigaction k;

	for (int i = 0; i < 2; i++)
		if (syscall(SYS_rt_sigaction, sigs[i], NULL, &k, 8) || k.handler != (void *)vp_on_fault)
			return 0;
	return 1;
}

/* addr..addr+size-1 is mapped (mincore: ENOMEM where a page is not). */
static int mapped(uint64_t addr, unsigned size)
{
	uint64_t first = addr & ~(uint64_t)(page_size - 1);
	uint64_t last = (addr + size - 1) & ~(uint64_t)(page_size - 1);
	unsigned char vec[2];

	return mincore((void *)(uintptr_t)first, last - first + (uint64_t)page_size, vec) == 0;
}

static enum vp_skip sample(struct vp_thread *t, const ucontext_t *uc)
{
	uint8_t code[VP_WINDOW * 15];
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP], cycles, value = 0;
	struct vp_load ld;
	struct vp_op op;
	size_t n;

	if (!faults_caught())
		return VP_UNMAPPED; /* nothing read that could fault */
	if (sigismember(&uc->uc_sigmask, SIGSEGV) || sigismember(&uc->uc_sigmask, SIGBUS)) {
		/* a blocked fault kills: unblocked until the handler returns */
		sigset_t m;

		sigemptyset(&m);
		sigaddset(&m, SIGSEGV);
		sigaddset(&m, SIGBUS);
		pthread_sigmask(SIG_UNBLOCK, &m, NULL);
	}
	if (!(n = vp_maps_readable(pc, sizeof(code))))
		return VP_NOCODE;
	if (!vp_dcache_get(pc, n, &op)) {
		if (!(n = vp_probe_copy(code, (const void *)(uintptr_t)pc, n)))
			return VP_NOCODE;
		vp_decode(t, code, n, pc, &op);
		vp_dcache_put(pc, code, &op);
	}
	if (vp_op_address(&op, pc, uc, &ld))
		return VP_NOLOAD;
	if (!vp_cfg.nocheck &&
	    (vp_maps_readable(ld.addr, ld.size) < ld.size || !mapped(ld.addr, ld.size)))
		return VP_UNMAPPED;
	cycles = vp_probe_load(ld.addr, ld.size, &value);
	if (cycles == UINT64_MAX)
		return VP_FAULT;
	return vp_table_add(ld.pc, cycles > timing ? cycles - timing : 0, value);
}

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/* si_perf_data of a TRAP_PERF SIGTRAP, which glibc's siginfo_t does not
 * name: the kernel's long after si_addr. */
static uint64_t perf_data(const siginfo_t *si)
{
	unsigned long d;

	memcpy(&d, (const char *)si + offsetof(siginfo_t, si_addr) + sizeof(void *), sizeof(d));
	return d;
}

/* The signal is one of this thread's events (or of its last one, closed
 * with the signal pending): never the program's.  1: sample it. */
static int ours(const struct vp_thread *t, const siginfo_t *si, int *take)
{
	if (vp_cfg.trap) {
		*take = t->fd >= 0;
		return si->si_code == TRAP_PERF && perf_data(si) == vp_cfg.cookie;
	}
	*take = si->si_fd == t->fd;
	return (si->si_code == POLL_IN || si->si_code == POLL_HUP) && si->si_fd >= 0 &&
	       (si->si_fd == t->fd || si->si_fd == t->last_fd);
}

void vp_signals_drain(struct vp_thread *t)
{
	struct timespec zero = { 0, 0 };
	siginfo_t si, theirs[4];
	sigset_t m;
	int n = 0, take;

	sigemptyset(&m);
	sigaddset(&m, vp_cfg.sig);
	/* a standard signal is pending once for the thread and once for the
	 * process at most: a few waits take them all */
	for (int i = 0; i < 4; i++) {
		if (sigtimedwait(&m, &si, &zero) != vp_cfg.sig)
			break;
		if (!ours(t, &si, &take) && !(si.si_code == SI_USER && si.si_pid == 0))
			theirs[n++] = si;
	}
	for (int i = 0; i < n; i++) /* the program's, pending again as they were */
		syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), vp_cfg.sig, &theirs[i]);
}

void vp_on_sample(int sig, siginfo_t *si, void *ucv)
{
	struct vp_thread *t = &vp_self;
	int saved = errno, take;

	atomic_signal_fence(memory_order_acquire);
	if (ours(t, si, &take)) {
		if (take && !t->flushing) {
			enum vp_skip why;

			if (si->si_code == POLL_HUP) /* the event's limit reached: on again */
				ioctl(t->fd, PERF_EVENT_IOC_ENABLE, 0);
			why = sample(t, ucv);
			if (why != VP_NSKIP)
				atomic_fetch_add_explicit(&vp_skipped[why], 1, memory_order_relaxed);
		}
	} else if (!(si->si_code == SI_USER && si->si_pid == 0)) {
		/* (SI_USER from pid 0: the kernel's signal when its siginfo
		 * could not be queued; it can only be the event's) */
		chain(&disps[0], sig, si, ucv, 0);
	}
	errno = saved;
}

int vp_signals_install(void)
{
	static const int sigs[3] = { 0, SIGSEGV, SIGBUS };
	struct sigaction sa;

	page_size = sysconf(_SC_PAGESIZE);
	timing = vp_probe_calibrate();
	for (int i = 0; i < 3; i++) {
		int sig = i ? sigs[i] : vp_cfg.sig;

		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		if (i) {
			sa.sa_sigaction = vp_on_fault;
			sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* a stack overflow's fault too */
		} else {
			/* SA_ONSTACK: on the thread's alternate stack when it
			 * has one, as Go requires of every handler not its own
			 * (a goroutine's stack is too small for any), and as
			 * the program's own handler may ask to be run */
			sa.sa_sigaction = vp_on_sample;
			sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		}
		disps[i].sig = sig;
		if (vp_real_sigaction(sig, &sa, &disps[i].slot[0]) < 0) {
			int err = -errno;

			while (--i >= 0) /* back as they were */
				vp_real_sigaction(disps[i].sig, &disps[i].slot[0], NULL);
			return err;
		}
		atomic_store(&disps[i].cur, 0);
		atomic_store(&disps[i].next, 1);
	}
	return 0;
}

void vp_signals_uninstall(void)
{
	for (int i = 0; i < 3; i++) {
		struct sigaction sa;

		disp_get(&disps[i], &sa);
		vp_real_sigaction(disps[i].sig, &sa, NULL);
	}
}

uint64_t vp_signals_timing(void)
{
	return timing;
}
