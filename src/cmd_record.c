/* dcpi record: run one command, sample it and the processes it starts into
 * a new epoch of a database, and print where its time went (dcpiprof).
 * The newcomer's entry point: no daemon, no root, a database in ./dcpidb
 * unless told otherwise.
 *
 * It takes no writer lock: the only directory it writes is the epoch it
 * creates itself, which dcpid never touches (dcpid writes its own epoch).
 */
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
#include "dcpi/collector.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/profile.h"
#include "dcpi/sampler.h"
#include "dcpi/snapshot.h"
#include "dcpi/stats.h"

#define DEFAULT_DB "./dcpidb"
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
	int syswide, quiet, procs;
	struct dcpi_eventlist events;
	char **cmd;                  /* argv of the command, NULL-terminated */
	/* state */
	char host[DCPI_HOST_MAX];
	char epoch[DCPI_EPOCH_NAME_MAX];
	char platdir[4096];
	int kernel;                  /* kernel-mode samples are taken */
	struct dcpi_sampler *sampler;
	struct dcpi_collector *col;
	pid_t child;
	int go_fd, exec_fd, sigfd;   /* go: child may exec; exec: its errno */
	sigset_t oldmask;            /* restored in the child before exec */
	int status;                  /* the child's wait status */
	uint64_t tree_ns;            /* CPU time of the child and its waited-for
					descendants, once it has ended */
	unsigned drain_warnings;
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
"                     a+b+c for one multiplexed set (see dcpi-events(7)).\n"
"                     Default: cycles and instructions, or cpu-clock without a PMU\n"
"  -a                 sample every process while COMMAND runs (needs root)\n"
"  -o FILE            write the report to FILE instead of standard output\n"
"  -quiet             no report, only the summary line on standard error\n"
"  -i                 report procedures too (dcpiprof -i)\n"
"  -keep N            report only the first N rows\n"
"  -sort EVENT        order the report by this event\n"
"  -h, -help          this help\n\n"
"Exit status: COMMAND's (128+N when signal N killed it); 127 when COMMAND\n"
"cannot be found, 126 when it cannot be run; 1 when profiling failed;\n"
"2 for a usage error.\n");
}

static void parse_options(struct record *r, int argc, char **argv)
{
	enum { O_DB = 256, O_EVENT, O_ALL, O_OUT, O_QUIET, O_KEEP, O_SORT };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "event", required_argument, NULL, O_EVENT },
		{ "a", no_argument, NULL, O_ALL },
		{ "o", required_argument, NULL, O_OUT },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "i", no_argument, NULL, 'i' },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "sort", required_argument, NULL, O_SORT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("DCPIDB");
	int c;

	/* "+": the first non-option is COMMAND; its options are its own */
	while ((c = getopt_long_only(argc, argv, "+ih", opts, NULL)) != -1) {
		switch (c) {
		case O_DB: r->db = optarg; break;
		case O_EVENT:
			if (dcpi_event_parse(&r->events, optarg))
				cli_usage_error("%s", dcpi_errmsg());
			break;
		case O_ALL: r->syswide = 1; break;
		case O_OUT: r->out = optarg; break;
		case O_QUIET: r->quiet = 1; break;
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
	r->cmd = argv + optind;
	if (!r->db || !*r->db)
		r->db = env && *env ? env : DEFAULT_DB;
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

	if (r->events.n)
		return;
	if (dcpi_event_defaults(&r->events, why, sizeof(why)))
		cli_die_lib("choosing default events");
	/* only a fallback is news; the usual choice is in dcpi-events(7) */
	if (strcmp(r->events.ev[0].name, "cycles") && why[0])
		fprintf(stderr, "%s: note: %s\n", cli_prog, why);
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

static int sampler_try(struct record *r, int exclude_kernel)
{
	struct dcpi_sampler_opts so = {
		.pid = r->syswide ? -1 : r->child, .inherit = !r->syswide,
		.exclude_kernel = exclude_kernel, .sideband = 1,
	};

	return dcpi_sampler_open(&dcpi_sampler_perf, &r->events, &so, &r->sampler);
}

/* Kernel samples where allowed: try with them, and for one process fall
 * back to user space only when the kernel refuses (perf_event_paranoid 2
 * lets unprivileged users profile their own processes in user mode). */
static void open_sampler(struct record *r)
{
	int err = sampler_try(r, 0);

	r->kernel = 1;
	if (err == -EACCES || err == -EPERM) {
		if (r->syswide) {
			abandon_child(r);
			cli_die_lib("-a: cannot sample system-wide");
		}
		err = sampler_try(r, 1);
		r->kernel = 0;
		if (!err)
			fprintf(stderr, "%s: note: user-space only (not root; see "
				"perf_event_paranoid)\n", cli_prog);
	}
	if (err == -EACCES || err == -EPERM) {
		abandon_child(r);
		cli_die("cannot sample '%s': perf_event_open: %s (%s is %d; profiling your own "
			"processes needs 2 or less, or root or CAP_PERFMON)", r->cmd[0],
			strerror(-err), PARANOID, read_paranoid());
	}
	if (err) {
		abandon_child(r);
		cli_die_lib("cannot start sampling");
	}
}

static void setup_collector(struct record *r)
{
	struct dcpi_collector_opts co = {
		.events = &r->events, .procroot = "/proc", .host = r->host, .filemode = FILEMODE,
	};
	struct dcpi_loadmap *lm;

	if (dcpi_collector_new(&co, &r->col)) {
		abandon_child(r);
		cli_die_lib("cannot start the collector");
	}
	lm = dcpi_collector_loadmap(r->col);
	if (r->kernel && dcpi_loadmap_load_kernel(lm, "/proc/kallsyms", "/proc/modules"))
		cli_warn("kernel images: %s (kernel samples will be unknown)", dcpi_errmsg());
	/* The child still runs our code until it execs; its exec's mmap
	 * records replace this.  -a: everything that runs already. */
	if (r->syswide ? dcpi_loadmap_scan(lm) < 0 : dcpi_loadmap_scan_pid(lm, r->child) < 0)
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
	if (dcpi_collector_drain(r->col, r->sampler, all))
		drain_warn(r, "reading samples");
}

/* What the epoch's "fraction monitored" divides by.  System-wide, as
 * dcpid: the counters' enabled time.  For one process tree the per-CPU
 * sums say little: a counter on a CPU the process never visited may or may
 * not have been "enabled" (it varies with the kernel), so the sum lies
 * between one and ncpus times the tree's CPU time.  Once the command has
 * ended, that CPU time is known (wait4); before, ncpus is the guess.  The
 * result stays between running (no multiplexing: 100%) and the sum. */
static uint64_t enabled_time(const struct record *r, uint64_t en, uint64_t run)
{
	unsigned ncpus = dcpi_sampler_ncpus(r->sampler);
	uint64_t t;

	if (r->syswide)
		return en;
	t = r->tree_ns ? r->tree_ns : en / (ncpus ? ncpus : 1);
	return t < run ? run : t > en ? en : t;
}

/* Fresh counters: their times are the epoch's times. */
static void update_times(struct record *r)
{
	struct dcpi_epoch_stats *st = dcpi_collector_stats(r->col);

	for (unsigned e = 0; e < r->events.n; e++) {
		uint64_t en, run;

		if (dcpi_sampler_times(r->sampler, e, &en, &run))
			continue;
		st->ev[e].time_enabled = enabled_time(r, en, run);
		st->ev[e].time_running = run;
	}
}

static int merge(struct record *r)
{
	int err;

	update_times(r);
	err = dcpi_collector_merge(r->col, r->platdir);
	dcpi_loadmap_reap(dcpi_collector_loadmap(r->col));
	return err;
}

/* ---- the epoch ---------------------------------------------------------- */

static void start_epoch(struct record *r)
{
	struct dcpi_epoch_stats *st = dcpi_collector_stats(r->col);

	if (dcpi_db_epoch_create(r->db, time(NULL), DIRMODE, r->epoch) ||
	    dcpi_db_path(r->platdir, sizeof(r->platdir), r->db, r->epoch, r->host, NULL) ||
	    dcpi_db_init(r->platdir, DIRMODE))
		cli_die_lib("cannot create an epoch in %s", r->db);
	snprintf(st->epoch, sizeof(st->epoch), "%s", r->epoch);
	st->start = (int64_t)time(NULL);
	st->ncpus = dcpi_sampler_ncpus(r->sampler);
	/* without kernel samples the addresses would be zeros anyway */
	if (r->kernel && dcpi_snapshot_kernel(r->platdir, "/proc", FILEMODE))
		cli_warn("kernel symbol snapshot: %s", dcpi_errmsg());
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

static int child_done(struct record *r)
{
	struct rusage ru;
	pid_t p = wait4(r->child, &r->status, WNOHANG, &ru);

	if (p != r->child)
		return p < 0 && errno == ECHILD;
	r->tree_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
		     ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
	return 1;
}

static void run(struct record *r)
{
	static struct pollfd fds[MAX_RINGS + 1];
	size_t n = dcpi_sampler_pollfds(r->sampler, fds + 1, MAX_RINGS);
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
			if (merge(r))
				cli_warn("merge into %s failed, samples kept for the next try: %s",
					 r->platdir, dcpi_errmsg());
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
	const struct dcpi_epoch_stats *st = dcpi_collector_stats(r->col);

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
	if (dcpi_db_host(r.host, sizeof(r.host)) || dcpi_db_init(r.db, DIRMODE))
		cli_die_lib("cannot use database %s", r.db);
	r.sigfd = setup_signals(&r);
	if (r.sigfd < 0)
		cli_die("signalfd: %s", strerror(errno));
	start_child(&r);
	open_sampler(&r);
	setup_collector(&r);
	if (dcpi_sampler_enable(r.sampler)) {
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
	dcpi_sampler_disable(r.sampler);
	drain(&r, 1);
	if (merge(&r))
		cli_die_lib("cannot write the profiles into %s", r.platdir);
	summary(&r);
	code = exit_code(r.status);
	if (!r.quiet && (err = report(&r)) != 0)
		cli_warn("the report failed (%s); the profiles are in %s",
			 err < 0 ? strerror(-err) : "see above", r.platdir);
	dcpi_sampler_close(r.sampler);
	dcpi_collector_free(r.col);
	close(r.sigfd);
	return code;
}
