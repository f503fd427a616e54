/* dcpi record: run one command, sample it and the processes it starts into
 * a new epoch of a database, and print where its time went (dcpiprof).
 * The newcomer's entry point: no daemon, no root, a database in ./dcpidb
 * unless told otherwise.
 *
 * It takes no writer lock: the only directory it writes is the epoch it
 * creates itself, which dcpid never touches (dcpid writes its own epoch).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "dcpi/cpuclock.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/imagecache.h"
#include "dcpi/event.h"
#include "dcpi/label.h"
#include "dcpi/run.h"
#include "dcpi/bins.h"
#include "dcpi/vprof.h"


#define DIRMODE 0700
#define FILEMODE 0600
#define POLL_MS 100
#define MERGE_SECS 60                /* a kill loses at most this much */
#define MAX_RINGS 4096
#define MAX_DRAIN_WARNINGS 10        /* a broken ring must not flood stderr */
#define PARANOID "/proc/sys/kernel/perf_event_paranoid"

struct record {
	/* options */
	const char *db, *out, *keep, *sort;
	int syswide, quiet, procs, imagecache, mux;
	unsigned label_keys;    /* -label */
	unsigned stack_bytes;   /* -stacks, -stack-bytes; 0: no stacks */
	struct dcpi_eventlist events;
	char **cmd;                  /* argv of the command, NULL-terminated */
	const char *vtrace;          /* -vtrace SPEC, or NULL */
	char vbins[4096];            /* its bins file */
	char vlib[4096];             /* libdcpivp.so */
	char vdir[64];               /* where the processes write their value profiles */
	/* state */
	char host[DCPI_HOST_MAX];
	char platform[DCPI_HOST_MAX]; /* host, or what DB/hosts pools it into */
	char epoch[DCPI_EPOCH_NAME_MAX];
	struct dcpi_run *run;
	pid_t child;
	int go_fd, exec_fd, sigfd;   /* go: child may exec; exec: its errno */
	sigset_t oldmask;            /* restored in the child before exec */
	int status;                  /* the child's wait status */
	unsigned drain_warnings;
	uint64_t clock_khz;          /* measured CPU clock; 0 unknown */
};

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpi record [options] [--] COMMAND [ARGS...]\n"
"Run COMMAND, sample it and every process it starts, write the profiles into\n"
"a new epoch of the database, and print where the time went (dcpiprof).\n\n"
"  -db DIR            the database (default $DCPIDB, else ./dcpidb; created 0700)\n"
"  -event SPEC        what to sample, repeatable: TYPE[:[F|R]PERIOD[K|M]], and\n"
"                     a+b+c for one set counted at the same time (a perf group;\n"
"                     see dcpi-events(7)).\n"
"                     Default: cycles and instructions, or cpu-clock without a PMU\n"
"  -mux               every event its own group, which the kernel time-multiplexes\n"
"                     when the PMU has too few counters (DCPI's -mux)\n"
"  -label KEYS        keep profiles apart by comm, uid and/or cgroup (see dcpid)\n"
"  -stacks            record call stacks too (dcpiprof -callers, -callees, -inclusive)\n"
"  -stack-bytes N     bytes of user stack each sample copies (default 16K; implies\n"
"                     -stacks)\n"
"  -vtrace ldlatency[:BINS]\n"
"                     value profiles too: the latency of sampled loads, binned by\n"
"                     the bins file BINS (default DB/bins, made by dcpi bins when\n"
"                     missing), and their hot values (libdcpivp(7); dcpilist -vtrace)\n"
"  -a                 sample every process while COMMAND runs (needs root)\n"
"  -o FILE            write the report to FILE instead of standard output\n"
"  -quiet             no report, only the summary line on standard error\n"
"  -i                 report procedures too (dcpiprof -i)\n"
"  -keep N            report only the first N rows\n"
"  -sort EVENT        order the report by this event\n"
"  -imagecache        keep a copy of every profiled image in DB/.build-id, so\n"
"                     the epoch can still be read after a rebuild (dcpidiff)\n"
"  -v, -verbose       every warning on a line of its own\n"
"  -h, -help          this help\n\n"
"Exit status: COMMAND's (128+N when signal N killed it); 127 when COMMAND\n"
"cannot be found, 126 when it cannot be run; 1 when profiling failed;\n"
"2 for a usage error.\n");
}

static void parse_options(struct record *r, int argc, char **argv)
{
	enum { O_DB = 256, O_EVENT, O_MUX, O_LABEL, O_ALL, O_OUT, O_QUIET, O_KEEP, O_SORT, O_IMAGECACHE,
	       O_STACKS, O_STACK_BYTES, O_VTRACE };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "event", required_argument, NULL, O_EVENT },
		{ "mux", no_argument, NULL, O_MUX },
		{ "label", required_argument, NULL, O_LABEL },
		{ "stacks", no_argument, NULL, O_STACKS },
		{ "stack-bytes", required_argument, NULL, O_STACK_BYTES },
		{ "vtrace", required_argument, NULL, O_VTRACE },
		{ "a", no_argument, NULL, O_ALL },
		{ "o", required_argument, NULL, O_OUT },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "imagecache", no_argument, NULL, O_IMAGECACHE },
		{ "i", no_argument, NULL, 'i' },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "sort", required_argument, NULL, O_SORT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("DCPIDB");
	int c;

	/* "+": the first non-option is COMMAND; its options are its own */
	while ((c = cli_getopt(argc, argv, "+ih", opts)) != -1) {
		switch (c) {
		case O_DB: r->db = optarg; break;
		case O_EVENT:
			if (dcpi_event_parse(&r->events, optarg))
				cli_usage_error("%s", dcpi_errmsg());
			break;
		case O_MUX: r->mux = 1; break;
		case O_LABEL:
			if (dcpi_label_parse(optarg, &r->label_keys))
				cli_usage_error("%s", dcpi_errmsg());
			break;
		case O_STACKS:
			if (!r->stack_bytes)
				r->stack_bytes = CLI_STACK_BYTES;
			break;
		case O_STACK_BYTES: r->stack_bytes = cli_parse_stack_bytes("stack-bytes", optarg); break;
		case O_VTRACE: r->vtrace = optarg; break;
		case O_ALL: r->syswide = 1; break;
		case O_OUT: r->out = optarg; break;
		case O_QUIET: r->quiet = 1; break;
		case O_IMAGECACHE: r->imagecache = 1; break;
		case 'i': r->procs = 1; break;
		case O_KEEP:
			cli_parse_count("keep", optarg);
			r->keep = optarg;
			break;
		case O_SORT: r->sort = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	if (optind >= argc)
		cli_usage_error("no command to run");
	if (r->out && r->quiet)
		cli_usage_error("-o and -quiet exclude each other");
	if (r->vtrace && strcmp(r->vtrace, "ldlatency") && strncmp(r->vtrace, "ldlatency:", 10))
		cli_usage_error("-vtrace %s: ldlatency or ldlatency:BINSFILE wanted", r->vtrace);
	if (r->vtrace && r->syswide)
		cli_usage_error("-vtrace profiles COMMAND's processes: not with -a");
	r->cmd = argv + optind;
	if (!r->db || !*r->db)
		r->db = env && *env ? env : CLI_LOCAL_DB;
}

/* ---- -vtrace: value profiles ------------------------------------------- */

/* libdcpivp.so: $DCPI_VPLIB, else beside this program (a build's bin/),
 * else ../lib/dcpi/ from it (installed). */
static void vtrace_find_lib(struct record *r)
{
	const char *env = getenv("DCPI_VPLIB");
	char exe[3072], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(r->vlib, sizeof(r->vlib), "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			cli_die("-vtrace: /proc/self/exe: %s", strerror(errno));
		exe[n] = 0;
		if ((slash = strrchr(exe, '/')))
			*slash = 0;
		snprintf(r->vlib, sizeof(r->vlib), "%s/libdcpivp.so", exe);
		if (access(r->vlib, R_OK))
			snprintf(r->vlib, sizeof(r->vlib), "%s/../lib/dcpi/libdcpivp.so", exe);
	}
	if (access(r->vlib, R_OK))
		cli_die("-vtrace: %s: %s (set DCPI_VPLIB to libdcpivp.so)", r->vlib, strerror(errno));
}

/* The bins: the file given (checked now), else DB/bins, made by measuring
 * this machine (dcpi bins) when it is not there yet. */
static void vtrace_bins(struct record *r)
{
	const char *given = r->vtrace[9] == ':' ? r->vtrace + 10 : NULL;
	struct dcpi_bins b;

	if (given) {
		if (dcpi_bins_read(given, &b))
			cli_die("-vtrace: %s", dcpi_errmsg());
		snprintf(r->vbins, sizeof(r->vbins), "%s", given);
		return;
	}
	snprintf(r->vbins, sizeof(r->vbins), "%s/bins", r->db);
	if (!access(r->vbins, F_OK)) {
		if (dcpi_bins_read(r->vbins, &b))
			cli_die("-vtrace: %s (remove it to have it measured again)", dcpi_errmsg());
		return;
	}
	/* said even with -quiet: it takes seconds and makes a file */
	fprintf(stderr, "%s: note: measuring this machine's load latencies for %s (dcpi bins; "
		"once)\n", cli_prog, r->vbins);
	if (bins_measure(r->vbins, FILEMODE))
		cli_die_lib("-vtrace: cannot write %s", r->vbins);
}

/* A directory of files (what the processes wrote, and any temporary file
 * one left when killed) removed. */
static void rm_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

static char vtrace_dir[64]; /* removed at exit, whatever ends the run */

static void vtrace_cleanup(void)
{
	if (vtrace_dir[0])
		rm_files(vtrace_dir);
	vtrace_dir[0] = 0;
}

static void vtrace_setup(struct record *r)
{
	for (unsigned e = 0; e < r->events.n; e++)
		if (r->events.ev[e].mem)
			cli_usage_error("-vtrace and -event %s both make value profiles: one or the "
					"other", r->events.ev[e].name);
	vtrace_find_lib(r);
	vtrace_bins(r);
	snprintf(r->vdir, sizeof(r->vdir), "/tmp/dcpi-vtrace.XXXXXX");
	if (!mkdtemp(r->vdir))
		cli_die("-vtrace: mkdtemp: %s", strerror(errno));
	snprintf(vtrace_dir, sizeof(vtrace_dir), "%s", r->vdir);
	atexit(vtrace_cleanup);
}

/* In the child: the library preloaded, told what to do and where. */
static int vtrace_env(const struct record *r)
{
	const char *old = getenv("LD_PRELOAD");
	char spec[4200], pre[8400];

	snprintf(spec, sizeof(spec), "ldlatency:%s", r->vbins);
	snprintf(pre, sizeof(pre), "%s%s%s", r->vlib, old && *old ? " " : "", old ? old : "");
	return setenv("DCPI_VTRACE", spec, 1) || setenv("DCPI_VTRACE_DIR", r->vdir, 1) ||
	       setenv("LD_PRELOAD", pre, 1);
}


/* The processes' value profiles merged into the epoch's epoch.vprof. */
static void vtrace_finish(struct record *r)
{
	struct dcpi_vprof *v = NULL;
	size_t nfiles = 0, nbad = 0;
	char *first_bad = NULL, path[4200];
	uint64_t samples = 0;

	if (dcpi_vprof_new(&v) || dcpi_vprof_merge_dir(r->vdir, v, &nfiles, &nbad, &first_bad))
		cli_warn("-vtrace: %s", dcpi_errmsg());
	if (nbad)
		cli_warn("-vtrace: %zu value profiles refused; the first: %s", nbad,
			 first_bad ? first_bad : "out of memory");
	snprintf(path, sizeof(path), "%s/epoch.vprof", dcpi_run_platdir(r->run));
	for (size_t i = 0; v && i < v->nloads; i++)
		samples = samples > UINT64_MAX - v->loads[i].samples ? UINT64_MAX
								    : samples + v->loads[i].samples;
	if (v && nfiles && dcpi_vprof_write(path, v, FILEMODE))
		cli_warn("-vtrace: %s", dcpi_errmsg());
	else if (v)
		fprintf(stderr, "dcpi record: value profile: %" PRIu64 " load samples of %zu loads "
			"from %zu process%s (%" PRIu64 " signals)\n", samples, v->nloads, nfiles,
			nfiles == 1 ? "" : "es", v->signals);
	if (v && !nfiles)
		cli_warn("-vtrace: no process wrote a value profile (is %s preloaded? a static "
			 "program cannot be)", r->vlib);
	vtrace_cleanup();
	free(first_bad);
	dcpi_vprof_free(v);
}

/* ---- the command -------------------------------------------------------- */

/* In the child: wait for the word that the counters are on, then exec.
 * EOF instead of the word means the parent gave up. */
static _Noreturn void child_run(struct record *r, int go, int execerr)
{
	char b;
	int e;

	if (read(go, &b, 1) != 1)
		_exit(127);
	sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
	if (r->vtrace && vtrace_env(r))
		_exit(127);
	execvp(r->cmd[0], r->cmd);
	e = errno;
	(void)!write(execerr, &e, sizeof(e));
	_exit(127);
}

static void start_child(struct record *r)
{
	int go[2], ex[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC))
		cli_die("pipe: %s", strerror(errno));
	fflush(NULL);
	r->child = fork();
	if (r->child < 0)
		cli_die("fork: %s", strerror(errno));
	if (r->child == 0) {
		close(go[1]);
		close(ex[0]);
		child_run(r, go[0], ex[1]);
	}
	close(go[0]);
	close(ex[1]);
	r->go_fd = go[1];
	r->exec_fd = ex[0];
}

/* Setting up failed: let the waiting child go away without running. */
static void abandon_child(struct record *r)
{
	if (r->go_fd >= 0)
		close(r->go_fd);
	r->go_fd = -1;
	if (r->child > 0)
		waitpid(r->child, NULL, 0);
	r->child = -1;
}

/* Let the child exec; 0 once it did, else the exec's errno (the child has
 * exited then).  The exec pipe is close-on-exec: EOF means success. */
static int release_child(struct record *r)
{
	int e = 0;
	ssize_t n;

	if (write(r->go_fd, "g", 1) != 1)
		return errno;
	close(r->go_fd);
	r->go_fd = -1;
	do
		n = read(r->exec_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(r->exec_fd);
	r->exec_fd = -1;
	return n == sizeof(e) ? e : 0;
}

/* The shells' convention for the status of a command. */
static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* ---- sampling ----------------------------------------------------------- */

static int read_paranoid(void)
{
	char buf[32] = "";
	FILE *f = fopen(PARANOID, "r");
	int v = 99; /* unknown: treat as strict */

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = atoi(buf);
		fclose(f);
	}
	return v;
}

static void setup_events(struct record *r)
{
	char why[512] = "";

	if (!r->events.n) {
		if (dcpi_event_defaults(&r->events, why, sizeof(why)))
			cli_die_lib("choosing default events");
		/* only a fallback is news; the usual choice is in dcpi-events(7) */
		if (strcmp(r->events.ev[0].name, "cycles") && why[0])
			fprintf(stderr, "%s: note: %s\n", cli_prog, why);
	}
	if (r->mux)
		dcpi_event_mux(&r->events);
}

/* The report can only sort by an event we sample: say so before the run. */
static void check_sort(const struct record *r)
{
	if (!r->sort)
		return;
	for (unsigned e = 0; e < r->events.n; e++)
		if (!strcmp(r->events.ev[e].name, r->sort))
			return;
	cli_usage_error("-sort %s: not an event sampled here (first: %s)", r->sort,
			r->events.ev[0].name);
}

static void on_warning(void *arg, const char *msg)
{
	(void)arg;
	cli_warn("%s", msg);
}

static _Noreturn void die_sampling(struct record *r, int err)
{
	abandon_child(r);
	if ((err == -EACCES || err == -EPERM) && r->syswide)
		cli_die_lib("-a: cannot sample system-wide");
	if (err == -EACCES || err == -EPERM)
		cli_die("cannot sample '%s': perf_event_open: %s (%s is %d; profiling your own "
			"processes needs 2 or less, or root or CAP_PERFMON)", r->cmd[0],
			strerror(-err), PARANOID, read_paranoid());
	cli_die_lib("cannot start sampling");
}

/* The run, its counters open but disabled.  Kernel samples where allowed:
 * for one process the run falls back to user space only when the kernel
 * refuses (perf_event_paranoid 2 lets unprivileged users profile their
 * own processes in user mode). */
/* -imagecache: link or copy each profiled file into DB/.build-id (once:
 * record merges once, at the end).  A file that changed or vanished
 * meanwhile is said, not cached. */
static void on_merged(void *arg, int index, const struct dcpi_image *img)
{
	struct record *r = arg;

	(void)index;
	if (img->kind != DCPI_IMAGE_FILE || !img->build_id_len)
		return;
	if (dcpi_imagecache_add(r->db, img->path, img->build_id, img->build_id_len, DIRMODE,
				FILEMODE))
		cli_warn("image cache: %s", dcpi_errmsg());
}

/* The CPU clock, so that time samples convert to cycles (dcpicalc);
 * measured before the command starts, so nothing of it competes. */
static void measure_clock(struct record *r)
{
	struct dcpi_cpuclock ck;

	if (dcpi_cpuclock_measure(NULL, &ck)) {
		if (!r->quiet)
			fprintf(stderr, "%s: note: %s; time samples stay relative\n", cli_prog,
				dcpi_errmsg());
		return;
	}
	r->clock_khz = (uint64_t)(ck.cycles_per_ns * 1e6 + 0.5);
}

static void open_run(struct record *r)
{
	struct dcpi_run_opts ro = {
		.db = r->db, .host = r->host, .platform = r->platform, .events = &r->events,
		.sampling = { .pid = r->syswide ? -1 : r->child, .inherit = !r->syswide,
			      .sideband = 1, .stack_bytes = r->stack_bytes },
		.kernel_fallback = 1, .drain_thread = 1, .dirmode = DIRMODE, .filemode = FILEMODE,
		.label_keys = r->label_keys, .clock_khz = r->clock_khz,
		.on_warning = on_warning,
		.on_merged = r->imagecache ? on_merged : NULL, .arg = r,
	};
	int err;

	if (dcpi_run_new(&ro, &r->run)) {
		abandon_child(r);
		cli_die_lib("cannot start the collector");
	}
	err = dcpi_run_open(r->run);
	if (err)
		die_sampling(r, err);
	if (!dcpi_run_kernel(r->run))
		fprintf(stderr, "%s: note: user-space only (not root; see perf_event_paranoid)\n",
			cli_prog);
	/* The child still runs our code until it execs; its exec's mmap
	 * records replace this.  -a: everything that runs already. */
	if (dcpi_run_scan(r->run) < 0)
		cli_warn("reading process maps: %s", dcpi_errmsg());
}

static void drain_warn(struct record *r, const char *what)
{
	if (r->drain_warnings++ < MAX_DRAIN_WARNINGS)
		cli_warn("%s: %s", what, dcpi_errmsg());
}

/* Read all rings; process what is certainly in order (all: everything). */
static void drain(struct record *r, int all)
{
	if (dcpi_run_drain(r->run, all))
		drain_warn(r, "reading samples");
}

/* ---- the epoch ---------------------------------------------------------- */

static void start_epoch(struct record *r)
{
	if (dcpi_run_new_epoch(r->run))
		cli_die_lib("cannot create an epoch in %s", r->db);
	snprintf(r->epoch, sizeof(r->epoch), "%s", dcpi_run_epoch(r->run));
}

/* ---- the loop ------------------------------------------------------------ */

static int setup_signals(struct record *r)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD); /* wakes the loop when the command ends */
	sigprocmask(SIG_BLOCK, &set, &r->oldmask);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* INT/TERM from kill(2) are passed on.  From the terminal (SI_KERNEL) the
 * command, in our process group, got its own copy: a second would be one
 * too many for programs that count interrupts. */
static void handle_signals(struct record *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD || si.ssi_code == SI_KERNEL)
			continue;
		kill(r->child, (int)si.ssi_signo);
	}
}

/* Once the command has ended, the CPU time of it and its waited-for
 * descendants is what its counters were enabled for. */
static int child_done(struct record *r)
{
	struct rusage ru;
	pid_t p = wait4(r->child, &r->status, WNOHANG, &ru);

	if (p != r->child)
		return p < 0 && errno == ECHILD;
	dcpi_run_set_cpu_time(r->run,
		((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
		((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull);
	return 1;
}

static void run(struct record *r)
{
	static struct pollfd fds[MAX_RINGS + 1];
	size_t n = dcpi_sampler_pollfds(dcpi_run_sampler(r->run), fds + 1, MAX_RINGS);
	time_t next_merge = time(NULL) + MERGE_SECS;

	fds[0] = (struct pollfd){ r->sigfd, POLLIN, 0 };
	while (!child_done(r)) {
		if (poll(fds, n + 1, POLL_MS) < 0 && errno != EINTR)
			cli_warn("poll: %s", strerror(errno));
		/* a ring whose task has exited stays readable for drain() but
		 * would make poll() return at once, forever */
		for (size_t i = 1; i <= n; i++)
			if (fds[i].revents & POLLHUP)
				fds[i].fd = -1;
		if (fds[0].revents & POLLIN)
			handle_signals(r);
		drain(r, 0);
		if (time(NULL) >= next_merge) {
			if (dcpi_run_merge(r->run))
				cli_warn("merge into %s failed, samples kept for the next try: %s",
					 dcpi_run_platdir(r->run), dcpi_errmsg());
			next_merge = time(NULL) + MERGE_SECS;
		}
	}
}

/* ---- the report --------------------------------------------------------- */

/* dcpiprof's report of the new epoch, in this process: the same table
 * and text as `dcpiprof -db DB -epoch EPOCH`.  1 when it failed (said on
 * stderr); the profiles are on disk either way. */
static int report(struct record *r)
{
	FILE *f = stdout;
	int status;

	if (r->out && !(f = fopen(r->out, "we")))
		return -cli_error("%s: %s", r->out, strerror(errno));
	sigprocmask(SIG_SETMASK, &r->oldmask, NULL); /* ^C ends the report */
	status = prof_text_report(f, r->db, r->epoch, r->procs, r->keep, r->sort);
	if (f != stdout && fclose(f) && status >= 0)
		status = cli_error("%s: %s", r->out, strerror(errno));
	return status != 0; /* what went wrong was said */
}

static void summary(struct record *r)
{
	const struct dcpi_epoch_stats *st = dcpi_run_stats(r->run);

	fprintf(stderr, "dcpi record: %" PRIu64 " samples (lost %" PRIu64 ", unknown %" PRIu64
		") in %s of %s\n", st->samples, st->lost, st->unknown, r->epoch, r->db);
}

int cmd_record(int argc, char **argv)
{
	static struct record r; /* large; one per process */
	int err, code;

	r.go_fd = r.exec_fd = r.sigfd = -1;
	parse_options(&r, argc, argv);
	setup_events(&r);
	check_sort(&r);
	if (dcpi_db_host(r.host, sizeof(r.host)) || dcpi_db_init(r.db, DIRMODE) ||
	    dcpi_db_platform(r.db, r.host, r.platform, sizeof(r.platform)))
		cli_die_lib("cannot use database %s", r.db);
	r.sigfd = setup_signals(&r);
	if (r.sigfd < 0)
		cli_die("signalfd: %s", strerror(errno));
	measure_clock(&r);
	if (r.vtrace)
		vtrace_setup(&r);
	start_child(&r);
	open_run(&r);
	/* the epoch's kernel snapshot made now, before the command starts, so
	   that it does not compete with it; when this fails, entering the
	   epoch tries again and says why */
	(void)dcpi_run_prepare_epoch(r.run);
	if (dcpi_run_start(r.run)) {
		abandon_child(&r);
		cli_die_lib("cannot enable sampling");
	}
	err = release_child(&r);
	if (err) {
		waitpid(r.child, NULL, 0);
		fprintf(stderr, "%s: error: cannot run '%s': %s\n", cli_prog, r.cmd[0],
			strerror(err));
		return err == ENOENT ? 127 : 126;
	}
	start_epoch(&r);
	run(&r);
	if (dcpi_run_stop(r.run))
		drain_warn(&r, "reading samples");
	if (dcpi_run_merge(r.run))
		cli_die_lib("cannot write the profiles into %s", dcpi_run_platdir(r.run));
	if (dcpi_run_close_epoch(r.run))
		cli_warn("the kernel symbol snapshot was kept whole: %s", dcpi_errmsg());
	summary(&r);
	if (r.vtrace)
		vtrace_finish(&r);
	code = exit_code(r.status);
	if (!r.quiet && (err = report(&r)) != 0)
		cli_warn("the report failed (%s); the profiles are in %s",
			 err < 0 ? strerror(-err) : "see above", dcpi_run_platdir(r.run));
	dcpi_run_free(r.run);
	close(r.sigfd);
	return code;
}
