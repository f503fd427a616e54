/* libdcpivp.so: its start (the constructor), the sampling of each thread
 * (one perf task-clock event per thread, its overflow a signal to that
 * thread), fork, and the points where the file is written (exit, exec).
 * See vp.h for the pieces and libdcpivp(7) for the behaviour.
 *
 * DCPI_VTRACE unset or empty: the constructor returns at once; the
 * interposed functions (vp_intercept.c) then only pass their calls on. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "vp.h"

struct vp_config vp_cfg;
atomic_int vp_active;
atomic_uint_fast64_t vp_skipped[VP_NSKIP];
__thread struct vp_thread vp_self __attribute__((tls_model("initial-exec"))) = {
	.fd = -1, .last_fd = -1, .slot = -1
};

const char *const vp_skip_names[VP_NSKIP] = {
	"noload", "nocode", "unmapped", "fault", "busy", "full", "noimage",
};

/* The events open, for a fork child to close (it inherits them all);
 * taken around fork (pthread_atfork) so that none is half-registered. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int fd;
	uint64_t id;
} reg[VP_THREADS_MAX];

static pthread_key_t thread_key;
static pid_t owner;
static atomic_int flushed;
static uint64_t start_ns, start_tsc;

void vp_say(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	memcpy(msg, VP_PREFIX, sizeof(VP_PREFIX) - 1);
	va_start(ap, fmt);
	n = vsnprintf(msg + sizeof(VP_PREFIX) - 1, sizeof(msg) - sizeof(VP_PREFIX), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += (int)sizeof(VP_PREFIX) - 1;
	if (n > (int)sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	if (write(2, msg, (size_t)n) < 0)
		return; /* nowhere else to say it */
}

uint64_t vp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t vp_random(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return vp_rdtsc() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
}

void *vp_map(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void vp_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

static void swap_bytes(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

static void sift_down(char *base, size_t root, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
			child++;
		if (cmp(base + root * size, base + child * size) >= 0)
			return;
		swap_bytes(base + root * size, base + child * size, size);
	}
}

void vp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *b = base;

	for (size_t i = n / 2; i-- > 0;)
		sift_down(b, i, n, size, cmp);
	for (size_t i = n; i-- > 1;) {
		swap_bytes(b, b + i * size, size);
		sift_down(b, 0, i, size, cmp);
	}
}

int vp_owner(void)
{
	return atomic_load(&vp_active) && getpid() == owner;
}

/* ---- configuration ------------------------------------------------------ */

/* DCPI's bins when no file is named: powers of two, [0,1], [2,3], [4,7],
 * ... [2^30, 2^31 - 1], then [2^31, 2^64 - 1]; each named c and its MIN,
 * its MIN its REP (but 1 for [0,1]). */
static void default_bins(struct dcpi_bins *b)
{
	memset(b, 0, sizeof(*b));
	b->v[0] = (struct dcpi_bin){ .min = 0, .max = 1, .rep = 1, .name = "c0" };
	for (unsigned k = 1; k < DCPI_BINS_MAX; k++) {
		struct dcpi_bin *x = &b->v[k];

		x->min = x->rep = 1ull << k;
		x->max = k == DCPI_BINS_MAX - 1 ? UINT64_MAX : (2ull << k) - 1;
		snprintf(x->name, sizeof(x->name), "c%" PRIu64, x->min);
	}
	b->n = DCPI_BINS_MAX;
}

/* The bins file, parsed by libdcpi's parser.  (Not dcpi_bins_read(): its
 * message for a malformed file is formatted from dcpi_errmsg() into the
 * same buffer, and comes out garbled.) */
static int read_bins(const char *path, struct dcpi_bins *b)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int err = dcpi_file_read(path, DCPI_BINS_FILE_MAX, &data, &len);

	if (err)
		return err;
	err = dcpi_bins_parse((const char *)data, len, b);
	free(data);
	if (err)
		dcpi_error_prefix(err, "%s", path);
	return err;
}

/* A decimal number of at most 20 digits: 0, or -1. */
static int decimal(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 0;
}

/* Signals whose default action terminates and which nothing else sends
 * synchronously: the handler's chaining relies on both.  Real-time
 * signals are refused: they queue, and when the queue is full (a program
 * that blocks the signal for a while) the kernel sends SIGIO in their
 * place, whose default action kills the program. */
static int signal_allowed(uint64_t sig)
{
	switch (sig) {
	case SIGHUP:
	case SIGINT:
	case SIGQUIT:
	case SIGUSR1:
	case SIGUSR2:
	case SIGPIPE:
	case SIGALRM:
	case SIGTERM:
	case SIGSTKFLT:
	case SIGXCPU:
	case SIGXFSZ:
	case SIGVTALRM:
	case SIGPROF:
	case SIGIO:
	case SIGPWR:
		return 1;
	default:
		return 0;
	}
}

static int configure_dir(void)
{
	const char *d = getenv("DCPI_VTRACE_DIR"), *db = getenv("DCPIDB");
	char path[PATH_MAX], cwd[PATH_MAX];
	struct stat st;
	int n;

	if (d && *d)
		n = snprintf(path, sizeof(path), "%s", d);
	else if (db && *db)
		n = snprintf(path, sizeof(path), "%s/vtrace", db);
	else {
		vp_say("neither DCPI_VTRACE_DIR nor DCPIDB is set: nowhere to write; not profiling");
		return -1;
	}
	if (n < 0 || (size_t)n >= sizeof(path)) {
		vp_say("the output directory's name is too long; not profiling");
		return -1;
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		vp_say("%s: cannot create: %s; not profiling", path, strerror(errno));
		return -1;
	}
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		vp_say("%s: not a directory; not profiling", path);
		return -1;
	}
	if (path[0] == '/')
		n = snprintf(vp_cfg.dir, sizeof(vp_cfg.dir), "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(vp_cfg.dir, sizeof(vp_cfg.dir), "%s/%s", cwd, path);
	else
		n = -1;
	if (n < 0 || (size_t)n >= sizeof(vp_cfg.dir)) {
		vp_say("%s: cannot name it from /; not profiling", path);
		return -1;
	}
	return 0;
}

/* 1: profile; 0: not asked; -1: asked wrongly (said). */
static int configure(void)
{
	const char *v = getenv("DCPI_VTRACE"), *p, *s;
	uint64_t x;

	if (!v || !*v)
		return 0;
	if (strncmp(v, "ldlatency", 9) || (v[9] && (v[9] != ':' || !v[10]))) {
		vp_say("DCPI_VTRACE=%.200s: ldlatency or ldlatency:BINSFILE wanted; not profiling", v);
		return -1;
	}
	if (v[9]) {
		if (read_bins(v + 10, &vp_cfg.bins) < 0) {
			vp_say("%s; not profiling", dcpi_errmsg());
			return -1;
		}
	} else {
		default_bins(&vp_cfg.bins);
	}
	vp_cfg.period_ns = VP_PERIOD_DEFAULT;
	if ((p = getenv("DCPI_VTRACE_PERIOD")) && *p) {
		if (decimal(p, &x) || x < VP_PERIOD_MIN || x > VP_PERIOD_MAX) {
			vp_say("DCPI_VTRACE_PERIOD=%.40s: nanoseconds from %llu to %llu wanted; "
			       "not profiling", p, VP_PERIOD_MIN, VP_PERIOD_MAX);
			return -1;
		}
		vp_cfg.period_ns = x;
	}
	vp_cfg.sig = SIGPROF;
	if ((s = getenv("DCPI_VTRACE_SIGNAL")) && !strcmp(s, "trap")) {
		vp_cfg.sig = SIGTRAP;
		vp_cfg.trap = 1;
		vp_cfg.cookie = vp_random() | 1;
	} else if (s && *s) {
		if (decimal(s, &x) || !signal_allowed(x)) {
			vp_say("DCPI_VTRACE_SIGNAL=%.40s: trap, or a standard signal whose default "
			       "action terminates (not SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, "
			       "SIGABRT, SIGSYS, nor a real-time one) wanted; not profiling", s);
			return -1;
		}
		vp_cfg.sig = (int)x;
	}
	vp_cfg.nocheck = (p = getenv("DCPI_VTRACE_TEST_NOCHECK")) && !strcmp(p, "1");
	return configure_dir() ? -1 : 1;
}

/* ---- threads -------------------------------------------------------------- */

/* fd is still the event with id (the program may have closed it, and the
 * number may be another file now). */
static int still_ours(int fd, uint64_t id)
{
	uint64_t now;

	return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &now) == 0 && now == id;
}

/* fd moved to 1024 or above when RLIMIT_NOFILE leaves room there: the
 * program's own descriptors stay below FD_SETSIZE for select(), as
 * without the library.  Else fd as it is. */
static int high_fd(int fd)
{
	struct rlimit r;
	int hi;

	if (fd >= VP_FD_LOW || getrlimit(RLIMIT_NOFILE, &r) ||
	    (r.rlim_cur != RLIM_INFINITY && r.rlim_cur <= VP_FD_LOW))
		return fd;
	if ((hi = fcntl(fd, F_DUPFD_CLOEXEC, VP_FD_LOW)) < 0)
		return fd;
	close(fd);
	return hi;
}

static int open_event(uint64_t *id)
{
	struct perf_event_attr a;
	struct f_owner_ex own = { .type = F_OWNER_TID, .pid = gettid() };
	int fd, fl;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = vp_cfg.period_ns;
	a.disabled = 1;
	a.exclude_kernel = 1; /* a user's own, under any perf_event_paranoid */
	a.exclude_hv = 1;
	if (vp_cfg.trap) {
		a.sigtrap = 1; /* the kernel requires both */
		a.remove_on_exec = 1;
		a.sig_data = vp_cfg.cookie;
	} else {
		a.wakeup_events = 1;
	}
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return dcpi_error(errno, "perf_event_open (task-clock%s): %s",
				  vp_cfg.trap ? ", sigtrap" : "", strerror(errno));
	fd = high_fd(fd);
	if ((!vp_cfg.trap &&
	     (fcntl(fd, F_SETOWN_EX, &own) < 0 || fcntl(fd, F_SETSIG, vp_cfg.sig) < 0 ||
	      (fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_ASYNC) < 0)) ||
	    ioctl(fd, PERF_EVENT_IOC_ID, id) < 0) {
		int err = errno;

		close(fd);
		return dcpi_error(err, "the event's signal: %s", strerror(err));
	}
	return fd;
}

int vp_thread_begin(void)
{
	struct vp_thread *t = &vp_self;
	uint64_t id;
	int fd, slot = -1;

	if (vp_decode_open(t))
		return dcpi_error(ENOMEM, "Capstone: cannot open a handle");
	if ((fd = open_event(&id)) < 0)
		return fd;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < VP_THREADS_MAX && slot < 0; i++)
		if (reg[i].fd < 0)
			slot = i;
	if (slot >= 0) {
		reg[slot].fd = fd;
		reg[slot].id = id;
	}
	pthread_mutex_unlock(&reg_lock);
	if (slot < 0) {
		close(fd);
		return dcpi_error(EMFILE, "more than %d threads sampled at once", VP_THREADS_MAX);
	}
	t->slot = slot;
	t->id = id;
	t->fd = fd;
	atomic_signal_fence(memory_order_release);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	pthread_setspecific(thread_key, t); /* its destructor: vp_thread_end */
	return 0;
}

static void unregister(struct vp_thread *t)
{
	if (t->slot < 0)
		return;
	pthread_mutex_lock(&reg_lock);
	reg[t->slot].fd = -1;
	pthread_mutex_unlock(&reg_lock);
	t->slot = -1;
}

void vp_thread_end(void)
{
	struct vp_thread *t = &vp_self;
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, vp_cfg.sig);
	pthread_sigmask(SIG_BLOCK, &m, NULL); /* the thread ends: not restored */
	if (t->fd >= 0) {
		int fd = t->fd;

		t->last_fd = fd;
		t->fd = -1;
		atomic_signal_fence(memory_order_release);
		if (still_ours(fd, t->id)) {
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
			close(fd);
		}
	}
	unregister(t);
	vp_decode_close(t);
}

static void thread_key_end(void *p)
{
	(void)p;
	vp_thread_end();
}

/* The flush stops this thread's sampling in two steps: the signal
 * blocked while the event is disabled and marked, then the program's mask
 * back (an exec keeps the mask: the program exec'd would start with the
 * signal blocked), the event still disabled, a signal of it pending
 * taken (an exec keeps it pending too, for a program that may not handle
 * it: the program blocked it, or it came after the handler's last run)
 * and one still to come ignored (flushing).  Resuming enables it again. */
void vp_thread_pause(int stop)
{
	struct vp_thread *t = &vp_self;
	sigset_t m, paused_mask;

	if (stop) {
		sigemptyset(&m);
		sigaddset(&m, vp_cfg.sig);
		pthread_sigmask(SIG_BLOCK, &m, &paused_mask);
		t->flushing = 1;
		atomic_signal_fence(memory_order_release);
		if (still_ours(t->fd, t->id))
			ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
		vp_signals_drain(t);
		pthread_sigmask(SIG_SETMASK, &paused_mask, NULL);
		return;
	}
	if (still_ours(t->fd, t->id))
		ioctl(t->fd, PERF_EVENT_IOC_ENABLE, 0);
	atomic_signal_fence(memory_order_release);
	t->flushing = 0;
}

/* ---- fork ------------------------------------------------------------------ */

static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

/* The child: none of the parent's events (their signals go to the
 * parent's threads, but their descriptors are the child's too), an empty
 * table (the parent's samples are the parent's), and an event of its own. */
static void fork_child(void)
{
	struct vp_thread *t = &vp_self;

	owner = getpid();
	for (int i = 0; i < VP_THREADS_MAX; i++)
		if (reg[i].fd >= 0) {
			if (still_ours(reg[i].fd, reg[i].id))
				close(reg[i].fd);
			reg[i].fd = -1;
		}
	pthread_mutex_unlock(&reg_lock);
	t->fd = t->last_fd = -1;
	t->slot = -1;
	t->flushing = 0;
	vp_table_reset();
	for (int i = 0; i < VP_NSKIP; i++)
		atomic_store(&vp_skipped[i], 0);
	vp_maps_reset();
	atomic_store(&flushed, 0);
	start_ns = vp_now_ns();
	start_tsc = vp_rdtsc();
	vp_thread_begin(); /* failing, the child is not sampled */
}

/* ---- the file ---------------------------------------------------------- */

int vp_flush_now(char *path, size_t len)
{
	struct vp_entry *e;
	struct vp_run run = { 0, vp_signals_timing(), 0 };
	struct vp_text text;
	uint64_t ns, tsc;
	size_t n;
	int err;

	if (path && len)
		path[0] = 0;
	if (!vp_owner() || atomic_exchange(&flushed, 1))
		return 0;
	vp_thread_pause(1);
	ns = vp_now_ns();
	tsc = vp_rdtsc();
	if (ns - start_ns >= 10000000ull) /* 10 ms at least: the two clocks read apart */
		run.tsc_hz = (uint64_t)((double)(tsc - start_tsc) * 1e9 / (double)(ns - start_ns) + 0.5);
	e = vp_table_snapshot(&n, &run.busy);
	err = e ? vp_write_text(e, n, &run, &text) : -1;
	vp_unmap(e, vp_table_snapshot_size());
	if (err) {
		vp_say("out of memory writing the value profile");
		return 1;
	}
	if (vp_write_file(text.p, text.len, path, len))
		vp_say("%s", dcpi_errmsg());
	vp_unmap(text.p, text.cap);
	return 1;
}

void vp_flush_undo(const char *path)
{
	int saved = errno;

	if (path && *path)
		unlink(path);
	atomic_store(&flushed, 0);
	vp_thread_pause(0);
	errno = saved;
}

static void at_exit(void)
{
	vp_flush_now(NULL, 0);
}

/* ---- start ------------------------------------------------------------------ */

__attribute__((constructor)) static void vp_init(void)
{
	int err;

	vp_intercept_init();
	if (configure() <= 0)
		return;
	if (!vp_probe_supported()) {
		vp_say("this CPU has no rdtscp: not profiling");
		return;
	}
	if (vp_decode_load()) {
		vp_say("%s; not profiling", dcpi_errmsg());
		return;
	}
	for (int i = 0; i < VP_THREADS_MAX; i++)
		reg[i].fd = -1;
	if ((err = vp_table_init()) || (err = vp_maps_init()) || (err = vp_dcache_init())) {
		vp_say("cannot map the library's tables: %s; not profiling", strerror(-err));
		return;
	}
	if (pthread_key_create(&thread_key, thread_key_end)) {
		vp_say("no thread-specific key left; not profiling");
		return;
	}
	if ((err = vp_signals_install())) {
		vp_say("cannot install its signal handlers: %s; not profiling", strerror(-err));
		return;
	}
	owner = getpid();
	start_ns = vp_now_ns();
	start_tsc = vp_rdtsc();
	atomic_store(&vp_active, 1);
	if (vp_thread_begin() < 0) {
		atomic_store(&vp_active, 0);
		vp_signals_uninstall();
		vp_say("%s; not profiling", dcpi_errmsg());
		return;
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit);
}
