/* The libc functions the library interposes (the only symbols it
 * exports), each passing its call on to the next definition (libc's)
 * found with dlsym(RTLD_NEXT):
 *   threads  pthread_create, thrd_create: the new thread opens its event
 *            first (and closes it at its end: a key destructor, vp.c)
 *   signals  sigaction, signal, bsd_signal, sysv_signal, sigset: for the
 *            sample signal, SIGSEGV and SIGBUS the program's disposition
 *            is recorded (vp_signal.c) and the library's handler stays
 *   exec     execve, execv, execvp, execvpe, execl, execlp, execle,
 *            fexecve: the file written before the call; removed again
 *            and sampling resumed when the call fails
 *   _exit    _exit, _Exit: the file written (exit() writes it through
 *            atexit)
 * When the library is not active (DCPI_VTRACE unset, or its start
 * failed) each does exactly what libc's does. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

#include "vp.h"

#define VP_EXPORT __attribute__((visibility("default")))
#define VP_ARGS_MAX 65536 /* arguments of execl*, as a bound on the stack used */

extern char **environ;

/* The next definition of name, looked up once. */
static void *next(const char *name, void *_Atomic *slot)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(slot, p, memory_order_release);
	}
	return p;
}

#define REAL(name)                                                            \
	static __typeof__(name) *real_##name(void)                            \
	{                                                                     \
		static void *_Atomic slot;                                    \
		return (__typeof__(name) *)next(#name, &slot);                \
	}

REAL(pthread_create)
REAL(thrd_create)
REAL(sigaction)
REAL(signal)
REAL(sysv_signal)
/* (sigset is marked deprecated: its type written out) */
static sighandler_t (*real_sigset(void))(int, sighandler_t)
{
	static void *_Atomic slot;

	return (sighandler_t (*)(int, sighandler_t))next("sigset", &slot);
}
REAL(execve)
REAL(execvp)
REAL(execvpe)
REAL(fexecve)
REAL(_exit)
REAL(_Exit)

/* Every next definition looked up now, from the constructor: dlsym may
 * allocate and take the loader's lock, which a signal handler or a vfork
 * child must not. */
void vp_intercept_init(void)
{
	(void)real_pthread_create();
	(void)real_thrd_create();
	(void)real_sigaction();
	(void)real_signal();
	(void)real_sysv_signal();
	(void)real_sigset();
	(void)real_execve();
	(void)real_execvp();
	(void)real_execvpe();
	(void)real_fexecve();
	(void)real__exit();
	(void)real__Exit();
}

int vp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return real_sigaction()(sig, act, old);
}

/* ---- threads -------------------------------------------------------------- */

struct vp_start {
	void *(*fn)(void *);
	int (*c11)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct vp_start s = *(struct vp_start *)p;

	free(p);
	vp_thread_begin(); /* failing, this thread is not sampled */
	if (s.c11)
		return (void *)(intptr_t)s.c11(s.arg);
	return s.fn(s.arg);
}

static int create(pthread_t *th, const pthread_attr_t *attr, struct vp_start *s)
{
	int err;

	if (!s)
		return EAGAIN;
	err = real_pthread_create()(th, attr, thread_start, s);
	if (err)
		free(s);
	return err;
}

VP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	struct vp_start *s;

	if (!atomic_load(&vp_active))
		return real_pthread_create()(th, attr, fn, arg);
	if (!(s = malloc(sizeof(*s))))
		return real_pthread_create()(th, attr, fn, arg); /* unsampled */
	*s = (struct vp_start){ .fn = fn, .arg = arg };
	return create(th, attr, s);
}

/* glibc's thrd_create calls its pthread_create inside libc, past the one
 * above; a C11 thread's result is its start's int, as thrd_join reads it. */
VP_EXPORT int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
	struct vp_start *s;
	int err;

	if (!atomic_load(&vp_active))
		return real_thrd_create()(thr, fn, arg);
	if (!(s = malloc(sizeof(*s))))
		return thrd_nomem;
	*s = (struct vp_start){ .c11 = fn, .arg = arg };
	err = create((pthread_t *)thr, NULL, s);
	return !err ? thrd_success : err == ENOMEM ? thrd_nomem : err == EBUSY ? thrd_busy :
	       thrd_error;
}

/* ---- signals ---------------------------------------------------------------- */

VP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (vp_signals_swap(sig, act, old))
		return 0;
	return real_sigaction()(sig, act, old);
}

/* signal() with glibc's BSD semantics (sa_flags SA_RESTART, the signal
 * itself masked while its handler runs), or System V's, for the signals
 * the library keeps; the others go to libc's as they are. */
static sighandler_t set_handler(int sig, sighandler_t h, int sysv)
{
	struct sigaction sa, old;

	if (h == SIG_ERR || sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (sysv) {
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	} else {
		sigaddset(&sa.sa_mask, sig);
		sa.sa_flags = SA_RESTART;
	}
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

VP_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	if (!vp_signals_swap(sig, NULL, NULL))
		return real_signal()(sig, h);
	return set_handler(sig, h, 0);
}

sighandler_t bsd_signal(int sig, sighandler_t h); /* glibc declares it only for XPG4.2 */

VP_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

VP_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	if (!vp_signals_swap(sig, NULL, NULL))
		return real_sysv_signal()(sig, h);
	return set_handler(sig, h, 1);
}

/* System V's sigset(): as glibc's, on the sigaction above. */
VP_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	sigset_t set, oset;

	if (!vp_signals_swap(sig, NULL, NULL))
		return real_sigset()(sig, h);
	sigemptyset(&set);
	if (sig <= 0 || sig >= NSIG || sigaddset(&set, sig) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (h == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
			return SIG_ERR;
		if (sigismember(&oset, sig))
			return SIG_HOLD;
		if (sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0 || sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
		return SIG_ERR;
	return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
}

/* ---- exec -------------------------------------------------------------------- */

VP_EXPORT int execve(const char *file, char *const argv[], char *const envp[])
{
	char path[PATH_MAX];
	int flushed = vp_flush_now(path, sizeof(path));
	int r = real_execve()(file, argv, envp);

	if (flushed) /* it failed */
		vp_flush_undo(path);
	return r;
}

VP_EXPORT int execv(const char *file, char *const argv[])
{
	return execve(file, argv, environ);
}

VP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	char path[PATH_MAX];
	int flushed = vp_flush_now(path, sizeof(path));
	int r = real_execvpe()(file, argv, envp);

	if (flushed) /* it failed */
		vp_flush_undo(path);
	return r;
}

VP_EXPORT int execvp(const char *file, char *const argv[])
{
	char path[PATH_MAX];
	int flushed = vp_flush_now(path, sizeof(path));
	int r = real_execvp()(file, argv);

	if (flushed) /* it failed */
		vp_flush_undo(path);
	return r;
}

VP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	char path[PATH_MAX];
	int flushed = vp_flush_now(path, sizeof(path));
	int r = real_fexecve()(fd, argv, envp);

	if (flushed) /* it failed */
		vp_flush_undo(path);
	return r;
}

/* execl's arguments counted: the array then built on the stack (an exec
 * may be a vfork child's, where nothing may be allocated). */
static size_t count_args(const char *arg, va_list ap)
{
	size_t n = 1;
	va_list aq;

	va_copy(aq, ap);
	if (arg)
		while (va_arg(aq, const char *) && n < VP_ARGS_MAX)
			n++;
	va_end(aq);
	return arg ? n : 0;
}

/* which: 0 execl, 1 execlp, 2 execle */
static int exec_list(int which, const char *file, const char *arg, va_list ap)
{
	size_t n = count_args(arg, ap);
	char **argv;
	char *const *envp = environ;

	if (n >= VP_ARGS_MAX) {
		errno = E2BIG;
		return -1;
	}
	argv = __builtin_alloca((n + 1) * sizeof(*argv));
	argv[0] = (char *)arg;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	if (n)
		(void)va_arg(ap, char *); /* the NULL */
	argv[n] = NULL;
	if (which == 2)
		envp = va_arg(ap, char *const *);
	if (which == 1)
		return execvp(file, argv);
	return execve(file, argv, envp);
}

VP_EXPORT int execl(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(0, file, arg, ap);
	va_end(ap);
	return r;
}

VP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(1, file, arg, ap);
	va_end(ap);
	return r;
}

VP_EXPORT int execle(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(2, file, arg, ap);
	va_end(ap);
	return r;
}

/* ---- _exit ---------------------------------------------------------------- */

VP_EXPORT void _exit(int status)
{
	vp_flush_now(NULL, 0);
	real__exit()(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

VP_EXPORT void _Exit(int status)
{
	vp_flush_now(NULL, 0);
	real__Exit()(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}
