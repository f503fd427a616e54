/* dcpid: the collection daemon.  Samples every CPU with perf_events,
 * attributes samples to images, aggregates in memory and merges into the
 * database every -merge seconds and on flush, epoch and quit. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dcpi/ctl.h"
#include "dcpi/cpuclock.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/file.h"
#include "dcpi/imagecache.h"
#include "dcpi/jitmap.h"
#include "dcpi/label.h"
#include "dcpi/overhead.h"
#include "dcpi/run.h"
#include "dcpi/version.h"

#define MAX_BYPID 64
/* dcpid's own CPU time is estimated from this long after sampling began:
 * before, it reads every process's maps and identifies their images,
 * which is no measure of what it costs from then on (16.8% of a CPU in
 * the first second here, 2.4% a minute later) */
#define WARMUP_NS (10 * 1000000000ull)
#define WARN_BURST 20       /* warnings logged at once; then one a second */
#define MAX_LOSS_CPUS 4096
#define LOSS_LOG_SECS 10    /* at most one line per CPU this often */

enum { LOG_ERR, LOG_INFO, LOG_DEBUG };

struct daemon {
	/* options */
	const char *db;
	struct dcpi_eventlist events;
	const char *bypid[MAX_BYPID];
	size_t nbypid;
	int unknown_per_pid, reuse_epoch, nodaemon, loglevel, logmaps, nice_val, shared;
	int buildid_mmap, imagecache, mux;
	unsigned label_keys;    /* -label */
	unsigned stack_bytes;   /* -stacks, -stack-bytes; 0: no stacks */
	uint64_t jitmem;        /* -jitmem: JIT maps' budget per user, bytes; 0 default */
	unsigned gc_days;       /* -gc: 0 off */
	unsigned rotate_secs;   /* -rotate: a new epoch on each boundary; 0 off */
	time_t next_rotate;
	double budget;          /* -budget PCT: 0 off */
	double ns_per_sample;   /* calibrated cost of one sample; 0 unknown */
	uint64_t clock_khz;     /* measured CPU clock; 0 unknown */
	uint64_t started_ns;    /* when sampling began */
	double cpu_at_start;    /* our CPU seconds then (start-up is not steady state) */
	uint64_t warm_ns;       /* when start-up was over (WARMUP_NS on); 0: not yet */
	double warm_cpu;        /* our CPU seconds then */
	uint64_t samples_at_start, samples_before; /* for the rate: see leave_epoch */
	time_t next_gc;
	uint8_t *cached;        /* per image index: 1 once cached or given up */
	size_t ncached;
	uint64_t forgotten;     /* images the loadmap forgot when cached was last valid */
	unsigned merge_secs, status_secs, ring_pages;
	const char *logfile;
	char logpath[4200];     /* where the log goes ("" for stderr) */
	/* state */
	char host[DCPI_HOST_MAX];
	char platform[DCPI_HOST_MAX]; /* where it writes: host, or DB/hosts' */
	FILE *log;
	int lockfd, ctlfd, sigfd;
	struct dcpi_ctl_server ctl;
	unsigned dirmode, filemode;
	struct dcpi_run *run;
	time_t next_merge, next_status;
	uint64_t logged_unknown;
	double warn_tokens;         /* on_warning's rate limit */
	uint64_t warn_last_ns, warn_suppressed;
	/* losses not yet logged, by CPU + 1 (0: CPU not known), and when the
	   next line may be written */
	uint64_t unlogged_lost[1 + MAX_LOSS_CPUS];
	time_t next_loss_log;
	int quit;
	int journal;            /* stderr is systemd's journal (JOURNAL_STREAM) */
};

static void logmsg(struct daemon *d, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One line into the log with one write: a full or read-only disk cuts no
 * line in two (a part written is taken back), and what the log cannot
 * take goes to syslog (the journal under systemd), so that the last words
 * of a daemon whose database became unwritable (the samples it could not
 * merge) are recorded somewhere. */
static void log_line(struct daemon *d, int level, const char *ts, const char *safe)
{
	static char line[4 * 4096 + 128];
	int fd = fileno(d->log), n;
	struct stat st;
	off_t before = d->log != stderr && fstat(fd, &st) == 0 ? st.st_size : -1;
	ssize_t w;

	n = snprintf(line, sizeof(line), "%s dcpid[%d]: %s%s\n", ts, (int)getpid(),
		     level == LOG_ERR ? "error: " : "", safe);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1, line[n - 1] = '\n';
	do
		w = write(fd, line, (size_t)n);
	while (w < 0 && errno == EINTR);
	if (d->journal && d->log != stderr) /* the journal too, with its priority */
		dprintf(STDERR_FILENO, "<%d>%s%s\n", level == LOG_ERR ? 3 : level == LOG_INFO ? 6 : 7,
			level == LOG_ERR ? "error: " : "", safe);
	if (w == n)
		return;
	if (w > 0 && before >= 0 && ftruncate(fd, before)) {
		/* the part stays: nothing more to do about it */
	}
	cli_syslog(level == LOG_ERR, "%s%s (the log %s could not take it: %s)",
		   level == LOG_ERR ? "error: " : "", safe, d->logpath,
		   w < 0 ? strerror(errno) : "short write");
}

/* One line, control bytes escaped (cli_escape): a name a user chose (a
 * jitdump's directory with a newline in it) cannot forge a line. */
static void logmsg(struct daemon *d, int level, const char *fmt, ...)
{
	static char msg[4096], safe[4 * sizeof(msg) + 1];
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;

	if (level > d->loglevel || !d->log)
		return;
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_escape(safe, sizeof(safe), msg);
	log_line(d, level, ts, safe);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether stderr is the journal's stream systemd gave us: JOURNAL_STREAM
 * names its device and inode (systemd.exec(5)). */
static int journal_stderr(void)
{
	const char *j = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return j && sscanf(j, "%llu:%llu", &dev, &ino) == 2 && !fstat(STDERR_FILENO, &st) &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpid [options] [DB]\n"
"Sample every CPU continuously into the profile database DB (or -db DIR,\n"
"or $DCPIDB).  Runs as a daemon; control it with dcpictl.\n\n"
"  -db DIR            the database (created 0700 if missing)\n"
"  -event SPEC        what to sample, repeatable: TYPE[:[F|R]PERIOD[K|M]], and\n"
"                     a+b+c for one set counted at the same time (a perf group;\n"
"                     see dcpi-events(7)).\n"
"                     Default: cycles and instructions, or cpu-clock without a PMU\n"
"  -budget PCT        choose the clock events' periods so that sampling costs at\n"
"                     most PCT%% of the CPUs (the cost of a sample is measured)\n"
"  -mux               every event its own group, which the kernel time-multiplexes\n"
"                     when the PMU has too few counters (DCPI's -mux)\n"
"  -label KEYS        keep profiles apart by comm, uid and/or cgroup (comma-separated;\n"
"                     at most 1024 labels, the rest counted as 'other')\n"
"  -stacks            keep call stacks too, in each epoch's epoch.stacks (dcpiprof\n"
"                     -callers, -callees, -inclusive); -nostacks: not (the default)\n"
"  -stack-bytes N     bytes of user stack each sample copies (default 16K; implies\n"
"                     -stacks)\n"
"  -bypid IMAGE       per-process profiles for IMAGE (path or file name), repeatable;\n"
"                     K=V[,K=V] (with -label): every image of the processes so labelled\n"
"  -unknown           per-process profiles of unattributable samples, by 1 MB region\n"
"  -merge SECONDS     merge into the database this often (default 60)\n"
"  -rotate DURATION   a new epoch on each boundary of the clock (1h: 03:00, 04:00,\n"
"                     ...; s, m, h, d), named by its boundary\n"
"  -gc DAYS           remove epochs that ended more than DAYS ago (the 3 latest\n"
"                     stay) and image-cache entries nothing refers to, daily\n"
"  -epoch             continue the latest epoch instead of starting a new one\n"
"  -nodaemon          stay in the foreground\n"
"  -log FILE          log here (default DB/dcpid-HOST.log; '-' for stderr)\n"
"  -quiet             log only errors\n"
"  -v, -verbose       log more (each merge, each control request)\n"
"  -logmaps           log samples that map to no image (the first 1000)\n"
"  -status SECONDS    log a status line this often\n"
"  -nice N            run at this nice value\n"
"  -bufpages N        ring buffer data pages per CPU, a power of 2 (default 128)\n"
"  -shared            make the database readable by other users (0755/0644)\n"
"  -imagecache        keep a copy of every profiled image in DB/.build-id (a hard\n"
"                     link when on the same file system), so reports still find\n"
"                     the code after a rebuild or upgrade\n"
"  -jitmem MIB        memory for what JIT code maps say, per user (default 128;\n"
"                     all users together: 4 times that)\n"
"  -buildid-mmap      take build-ids from the kernel's mmap records instead of\n"
"                     reading them from the files (exact for files deleted at once,\n"
"                     but some kernels then corrupt other perf users' records)\n"
"  -h, -help          this help\n");
}

static void parse_options(struct daemon *d, int argc, char **argv)
{
	enum { O_DB = 256, O_EVENT, O_MUX, O_LABEL, O_GC, O_BUDGET, O_BYPID, O_UNKNOWN, O_MERGE, O_EPOCH, O_NODAEMON, O_LOG,
	       O_QUIET, O_VERBOSE, O_LOGMAPS, O_STATUS, O_NICE, O_BUFPAGES, O_SHARED,
	       O_BUILDID_MMAP, O_IMAGECACHE, O_JITMEM, O_ROTATE, O_STACKS, O_NOSTACKS, O_STACK_BYTES };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "event", required_argument, NULL, O_EVENT },
		{ "mux", no_argument, NULL, O_MUX },
		{ "label", required_argument, NULL, O_LABEL },
		{ "stacks", no_argument, NULL, O_STACKS },
		{ "nostacks", no_argument, NULL, O_NOSTACKS },
		{ "stack-bytes", required_argument, NULL, O_STACK_BYTES },
		{ "gc", required_argument, NULL, O_GC },
		{ "budget", required_argument, NULL, O_BUDGET },
		{ "bypid", required_argument, NULL, O_BYPID },
		{ "unknown", no_argument, NULL, O_UNKNOWN },
		{ "merge", required_argument, NULL, O_MERGE },
		{ "epoch", no_argument, NULL, O_EPOCH },
		{ "nodaemon", no_argument, NULL, O_NODAEMON },
		{ "log", required_argument, NULL, O_LOG },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "logmaps", no_argument, NULL, O_LOGMAPS },
		{ "status", required_argument, NULL, O_STATUS },
		{ "nice", required_argument, NULL, O_NICE },
		{ "bufpages", required_argument, NULL, O_BUFPAGES },
		{ "shared", no_argument, NULL, O_SHARED },
		{ "buildid-mmap", no_argument, NULL, O_BUILDID_MMAP },
		{ "imagecache", no_argument, NULL, O_IMAGECACHE },
		{ "jitmem", required_argument, NULL, O_JITMEM },
		{ "rotate", required_argument, NULL, O_ROTATE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	int c;

	d->merge_secs = 60;
	d->loglevel = LOG_INFO;
	d->journal = journal_stderr();
	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case O_DB: db = optarg; break;
		case O_EVENT:
			if (dcpi_event_parse(&d->events, optarg))
				cli_usage_error("%s", dcpi_errmsg());
			break;
		case O_MUX: d->mux = 1; break;
		case O_GC:
			d->gc_days = (unsigned)cli_parse_count("gc", optarg);
			if (d->gc_days == 0 || d->gc_days > 36500)
				cli_usage_error("-gc wants 1 to 36500 days, not '%s'", optarg);
			break;
		case O_BUDGET: {
			char *end;

			d->budget = strtod(optarg, &end);
			if (*end || end == optarg || !(d->budget >= 0.01 && d->budget <= 50))
				cli_usage_error("-budget wants a percentage of CPU, 0.01 to 50, not '%s'",
						optarg);
			break;
		}
		case O_LABEL:
			if (dcpi_label_parse(optarg, &d->label_keys))
				cli_usage_error("%s", dcpi_errmsg());
			break;
		case O_STACKS:
			if (!d->stack_bytes)
				d->stack_bytes = CLI_STACK_BYTES;
			break;
		case O_NOSTACKS: d->stack_bytes = 0; break;
		case O_STACK_BYTES:
			d->stack_bytes = cli_parse_stack_bytes("stack-bytes", optarg);
			break;
		case O_BYPID:
			if (d->nbypid == MAX_BYPID)
				cli_usage_error("at most %d -bypid images", MAX_BYPID);
			d->bypid[d->nbypid++] = optarg;
			break;
		case O_UNKNOWN: d->unknown_per_pid = 1; break;
		case O_MERGE:
			d->merge_secs = (unsigned)cli_parse_count("merge", optarg);
			if (d->merge_secs == 0 || d->merge_secs > 86400)
				cli_usage_error("-merge wants 1 to 86400 seconds, not '%s'", optarg);
			break;
		case O_ROTATE:
			d->rotate_secs = cli_parse_duration("rotate", optarg);
			if (d->rotate_secs < 1 || d->rotate_secs > 7 * 86400)
				cli_usage_error("-rotate wants 1s to 7d, not '%s'", cli_safe(optarg));
			break;
		case O_EPOCH: d->reuse_epoch = 1; break;
		case O_NODAEMON: d->nodaemon = 1; break;
		case O_LOG: d->logfile = optarg; break;
		case O_QUIET: d->loglevel = LOG_ERR; break;
		case O_VERBOSE: d->loglevel = LOG_DEBUG; break;
		case O_LOGMAPS: d->logmaps = 1; break;
		case O_STATUS: d->status_secs = (unsigned)cli_parse_count("status", optarg); break;
		case O_NICE: {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || end == optarg || v < -20 || v > 19)
				cli_usage_error("-nice wants -20 to 19, not '%s'", optarg);
			d->nice_val = (int)v;
			break;
		}
		case O_BUFPAGES: {
			unsigned long long v = cli_parse_count("bufpages", optarg);

			if (v == 0 || v > 65536 || (v & (v - 1)))
				cli_usage_error("-bufpages wants a power of 2 up to 65536, not '%s'", optarg);
			d->ring_pages = (unsigned)v;
			break;
		}
		case O_SHARED: d->shared = 1; break;
		case O_BUILDID_MMAP: d->buildid_mmap = 1; break;
		case O_IMAGECACHE: d->imagecache = 1; break;
		case O_JITMEM: {
			unsigned long long v = cli_parse_count("jitmem", optarg);

			if (v == 0 || v > 65536)
				cli_usage_error("-jitmem wants 1 to 65536 MiB, not '%s'", optarg);
			d->jitmem = (uint64_t)v << 20;
			break;
		}
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	if (optind < argc) {
		if (db)
			cli_usage_error("database given twice: -db %s and %s", db, argv[optind]);
		db = argv[optind++];
	}
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", argv[optind]);
	for (size_t i = 0; i < d->nbypid; i++) { /* -bypid K=V: keys -label keeps */
		char key[32];
		const char *p = d->bypid[i];
		unsigned k;

		while (strchr(d->bypid[i], '=') && *p) {
			size_t n = strcspn(p, "=");

			snprintf(key, sizeof(key), "%.*s", (int)(n < 31 ? n : 31), p);
			if (dcpi_label_parse(key, &k) || !(d->label_keys & k))
				cli_usage_error("-bypid %s: '%s' is not a key of -label (comm, uid, cgroup; "
						"give -label %s)", cli_safe(d->bypid[i]), cli_safe(key),
						cli_safe(key));
			p += n;
			p += strcspn(p, ",");
			p += *p == ',';
		}
	}
	d->db = cli_db(db);
	d->dirmode = d->shared ? 0755 : 0700;
	d->filemode = d->shared ? 0644 : 0600;
}

/* ---- epochs ------------------------------------------------------------- */

static void log_epoch(struct daemon *d)
{
	logmsg(d, LOG_INFO, "epoch %s (%s)", dcpi_run_epoch(d->run), dcpi_run_platdir(d->run));
}

/* Around an epoch switch: the samples this daemon took in the epoch it
 * leaves are kept for the overhead estimate (the statistics restart). */
static void leave_epoch(struct daemon *d)
{
	if (d->started_ns)
		d->samples_before += dcpi_run_stats(d->run)->samples - d->samples_at_start;
}

static void entered_epoch(struct daemon *d)
{
	d->samples_at_start = dcpi_run_stats(d->run)->samples;
	log_epoch(d);
}

static int enter_epoch(struct daemon *d, const char *name)
{
	int err;

	leave_epoch(d);
	if (!(err = dcpi_run_enter_epoch(d->run, name)))
		entered_epoch(d);
	return err;
}

/* A new epoch named by time t (now, or -rotate's boundary). */
static int new_epoch(struct daemon *d, time_t t)
{
	int err;

	leave_epoch(d);
	if (!(err = dcpi_run_new_epoch_at(d->run, t)))
		entered_epoch(d);
	return err;
}

/* ---- sampling ----------------------------------------------------------- */

/* Samples aggregated in memory, not yet merged. */
static uint64_t pending(struct daemon *d)
{
	return dcpi_collector_pending(dcpi_run_collector(d->run));
}

/* Read all rings; process what is certainly in order (all = everything). */
static int drain(struct daemon *d, int all)
{
	int err = dcpi_run_drain(d->run, all);

	if (err)
		logmsg(d, LOG_ERR, "reading samples: %s", dcpi_errmsg());
	return err;
}

/* Images forgotten by the merge renumber the rest: the -imagecache marks,
 * by index, start again (a cached image costs one access(2) to see). */
static void forget_cached(struct daemon *d)
{
	struct dcpi_loadmap_stats ls;

	dcpi_loadmap_stats(dcpi_collector_loadmap(dcpi_run_collector(d->run)), &ls);
	if (ls.forgotten != d->forgotten && d->cached)
		memset(d->cached, 0, d->ncached);
	d->forgotten = ls.forgotten;
}

#define GC_KEEP 3           /* epochs -gc always keeps, as DCPI did */
#define GC_EVERY 86400      /* seconds between two collections */

/* -gc: old epochs and unreferenced image-cache entries, then what the
 * database holds, in the log. */
static void collect_garbage(struct daemon *d)
{
	struct dcpi_db_gc g;
	uint64_t bytes = 0;
	size_t nepochs = 0;

	d->next_gc = time(NULL) + GC_EVERY;
	if (dcpi_db_gc(d->db, d->host, d->platform, dcpi_run_epoch(d->run), d->gc_days, GC_KEEP,
		       time(NULL), &g))
		logmsg(d, LOG_ERR, "gc: %s", dcpi_errmsg());
	dcpi_db_usage(d->db, &bytes, &nepochs);
	logmsg(d, LOG_INFO, "gc: removed %zu epochs older than %u days and %zu image-cache files "
	       "(%.1f MiB); the database holds %.1f MiB in %zu epochs", g.epochs_removed,
	       d->gc_days, g.cache_removed, g.freed / 1048576.0, bytes / 1048576.0, nepochs);
}

/* Epochs are database-wide: when another host sharing the database has
 * started a newer one, continue in it (our samples up to now are merged
 * into the old one). */
static void adopt_epoch(struct daemon *d)
{
	char latest[DCPI_EPOCH_NAME_MAX];

	if (dcpi_db_epoch_latest(d->db, latest) || strcmp(latest, dcpi_run_epoch(d->run)) <= 0)
		return;
	logmsg(d, LOG_INFO, "epoch %s was started by another host: adopting it", latest);
	if (enter_epoch(d, latest))
		logmsg(d, LOG_ERR, "cannot adopt epoch %s: %s", latest, dcpi_errmsg());
}

static void log_suppressed(struct daemon *d);

static int merge(struct daemon *d)
{
	uint64_t t0 = now_ns(), n;
	int err;

	drain(d, 1);
	log_suppressed(d); /* the count of a burst, at the latest each merge */
	n = pending(d);
	err = dcpi_run_merge(d->run);
	forget_cached(d);
	if (err)
		logmsg(d, LOG_ERR, "merge into %s failed, samples kept in memory for the next "
		       "try: %s", dcpi_run_platdir(d->run), dcpi_errmsg());
	else
		logmsg(d, LOG_DEBUG, "merged %" PRIu64 " samples into %s in %.1f ms", n,
		       dcpi_run_platdir(d->run), (now_ns() - t0) / 1e6);
	d->next_merge = time(NULL) + d->merge_secs;
	if (!err)
		adopt_epoch(d);
	return err;
}

static void overhead_text(struct daemon *d, char *buf, size_t len);

/* The whole run's counts beside the epoch's (status), and the records
 * waiting in memory for the collector (the ring-reading thread's). */
static void run_totals_text(struct daemon *d, struct dcpi_buf *b)
{
	struct dcpi_run_totals t;
	size_t now, peak;

	dcpi_run_totals(d->run, &t);
	dcpi_sampler_thread_staged(dcpi_run_sampler(d->run), &now, &peak);
	dcpi_buf_printf(b, "run samples: %" PRIu64 "\nrun lost: %" PRIu64 "\nrun throttled: %" PRIu64
			"\nrun unknown: %" PRIu64 "\nrecords waiting: %.1f MiB (at most %.1f MiB "
			"so far)\n", t.samples, t.lost, t.throttled, t.unknown, now / 1048576.0,
			peak / 1048576.0);
}

/* The JIT maps' memory against its budgets (dcpi/jitmap.h). */
static void jit_text(struct daemon *d, struct dcpi_collector *col, struct dcpi_buf *b)
{
	uint64_t user = d->jitmem ? d->jitmem : DCPI_JITMAP_BUDGET_PER_UID;
	uint64_t all = d->jitmem ? d->jitmem * 4 : DCPI_JITMAP_BUDGET;
	struct dcpi_jitmap_stats js;
	struct dcpi_jitmap_user u[64];
	size_t n;

	if (dcpi_collector_jit_stats(col, &js))
		return;
	dcpi_buf_printf(b, "JIT maps: %.1f MiB (budget %.0f MiB per user, %.0f MiB in all; %" PRIu64
			" entries skipped over it)\n", js.bytes / 1048576.0, user / 1048576.0,
			all / 1048576.0, js.over_budget);
	n = dcpi_collector_jit_users(col, u, sizeof(u) / sizeof(u[0]));
	for (size_t i = 0; i < n && i < sizeof(u) / sizeof(u[0]); i++)
		if (u[i].bytes)
			dcpi_buf_printf(b, "JIT maps of uid %" PRIu32 ": %.1f MiB\n", u[i].uid,
					u[i].bytes / 1048576.0);
}

/* Losses as they happen: the kernel's per-CPU reports (the ring was full),
 * gathered by the ring-reading thread, one line per CPU with its count
 * since the last line, at most every LOSS_LOG_SECS (a ring overflowing
 * all the time would write a line per drain). */
static void log_losses(struct daemon *d)
{
	struct dcpi_sampler_loss l[64];
	struct dcpi_run_totals t;
	time_t now = time(NULL);
	size_t n;
	int any = 0;

	do {
		n = dcpi_sampler_losses(dcpi_run_sampler(d->run), l, 64);
		for (size_t i = 0; i < n; i++)
			d->unlogged_lost[l[i].cpu >= 0 && l[i].cpu < MAX_LOSS_CPUS ? l[i].cpu + 1 : 0] +=
				l[i].lost;
	} while (n == 64);
	if (now < d->next_loss_log)
		return;
	dcpi_run_totals(d->run, &t);
	for (int c = 0; c <= MAX_LOSS_CPUS; c++) {
		if (!d->unlogged_lost[c])
			continue;
		if (c)
			logmsg(d, LOG_ERR, "lost %" PRIu64 " samples on CPU %d in epoch %s (its ring "
			       "was full); %" PRIu64 " lost in this run", d->unlogged_lost[c], c - 1,
			       dcpi_run_epoch(d->run), t.lost);
		else
			logmsg(d, LOG_ERR, "lost %" PRIu64 " samples in epoch %s (a ring was full); "
			       "%" PRIu64 " lost in this run", d->unlogged_lost[c],
			       dcpi_run_epoch(d->run), t.lost);
		d->unlogged_lost[c] = 0;
		any = 1;
	}
	if (any)
		d->next_loss_log = now + LOSS_LOG_SECS;
}

static void status_text(struct daemon *d, struct dcpi_buf *b)
{
	char over[256];

	struct dcpi_collector *col = dcpi_run_collector(d->run);
	const struct dcpi_epoch_stats *st = dcpi_collector_stats(col);
	struct dcpi_loadmap_stats ls;

	dcpi_loadmap_stats(dcpi_collector_loadmap(col), &ls);
	uint64_t bytes = 0;
	size_t nepochs = 0;

	dcpi_buf_printf(b, "pid: %d\ndatabase: %s\nhost: %s\nplatform: %s\nepoch: %s\ncpus: %u\n",
			(int)getpid(), d->db, d->host, d->platform, dcpi_run_epoch(d->run),
			st->ncpus);
	if (st->clock_khz)
		dcpi_buf_printf(b, "clock: %.3f GHz (measured at start)\n", st->clock_khz / 1e6);
	if (!dcpi_db_usage(d->db, &bytes, &nepochs))
		dcpi_buf_printf(b, "database size: %.1f MiB in %zu epochs\n", bytes / 1048576.0,
				nepochs);
	if (d->gc_days)
		dcpi_buf_printf(b, "retention: %u days, the 3 latest epochs kept\n", d->gc_days);
	if (d->rotate_secs) {
		struct tm tm;
		char at[32];

		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", localtime_r(&d->next_rotate, &tm));
		dcpi_buf_printf(b, "rotation: every %u s, the next epoch at %s\n", d->rotate_secs, at);
	}
	overhead_text(d, over, sizeof(over));
	dcpi_buf_printf(b, "estimated overhead: %s\n", over);
	for (unsigned e = 0; e < d->events.n; e++)
		dcpi_buf_printf(b, "event: %s period %" PRIu64 "%s samples %" PRIu64
				" monitored %.1f%%\n", d->events.ev[e].name, d->events.ev[e].period,
				d->events.ev[e].randomize ? " (randomised)" : "", st->ev[e].samples,
				st->ev[e].time_enabled
					? 100.0 * st->ev[e].time_running / st->ev[e].time_enabled
					: 100.0);
	dcpi_buf_printf(b, "samples: %" PRIu64 "\nlost: %" PRIu64 "\nthrottled: %" PRIu64
			"\nunknown: %" PRIu64 "\nkernel: %" PRIu64 "\nimages: %" PRIu64
			"\nprocesses: %" PRIu64 "\npending: %" PRIu64 "\nmerge interval: %u s\n"
			"images in memory: %" PRIu64 " (forgotten %" PRIu64 ")\n",
			st->samples, st->lost, st->throttled, st->unknown, st->kernel,
			st->images, ls.processes, dcpi_collector_pending(col), d->merge_secs,
			ls.images, ls.forgotten);
	run_totals_text(d, b);
	jit_text(d, col, b);
}

/* ---- control requests --------------------------------------------------- */

/* dcpictl image: a mapping the kernel did not report (a program's own
 * loader), registered as if it had; samples read from now on find it. */
static int image_request(struct daemon *d, const char *req)
{
	struct dcpi_mmap_event ev;
	int err = dcpi_ctl_parse_image(req, &ev);

	if (!err) {
		drain(d, 0); /* what was sampled before is attributed before */
		err = dcpi_loadmap_mmap(dcpi_collector_loadmap(dcpi_run_collector(d->run)), &ev);
	}
	if (!err)
		logmsg(d, LOG_INFO, "image %s in process %d at 0x%llx+0x%llx (dcpictl)", ev.path,
		       (int)ev.pid, (unsigned long long)ev.start, (unsigned long long)ev.len);
	return err;
}

static void handle_request(struct daemon *d, int conn, const char *req)
{
	struct dcpi_buf out = DCPI_BUF_INIT;
	int err = 0;

	logmsg(d, LOG_DEBUG, "control request '%s'", req);
	if (!strcmp(req, "status")) {
		drain(d, 0);
		dcpi_run_update_times(d->run);
		status_text(d, &out);
	} else if (!strcmp(req, "flush")) {
		err = merge(d);
	} else if (!strcmp(req, "epoch")) {
		err = merge(d);
		if (!err)
			err = new_epoch(d, time(NULL));
		if (!err)
			dcpi_buf_printf(&out, "epoch: %s\n", dcpi_run_epoch(d->run));
	} else if (!strncmp(req, "image ", 6)) {
		err = image_request(d, req);
	} else if (!strcmp(req, "quit")) {
		/* A daemon that cannot write keeps its samples and runs on:
		 * quitting would lose them.  SIGTERM still stops it. */
		err = merge(d);
		if (err)
			dcpi_error_prefix(err, "not stopping, samples kept in memory (SIGTERM "
					  "stops anyway and loses them)");
		d->quit = !err;
	} else {
		dcpi_error(EINVAL, "unknown request '%.64s' (status, flush, epoch, image, quit)", req);
		err = -EINVAL;
	}
	if (err)
		dcpi_buf_printf(&out, "error: %s\n", dcpi_errmsg());
	else
		dcpi_buf_printf(&out, "ok\n");
	if (out.len && write(conn, out.data, out.len) < 0)
		logmsg(d, LOG_DEBUG, "control reply lost: %s", strerror(errno));
	dcpi_buf_release(&out);
}

/* Every request that is complete; never waits for a client. */
static void serve_control(struct daemon *d)
{
	char req[DCPI_CTL_LINE_MAX];
	uid_t uid;
	int conn, r;

	while ((r = dcpi_ctl_server_next(&d->ctl, &conn, req, sizeof(req), &uid)) != 0) {
		if (r < 0) {
			logmsg(d, LOG_ERR, "%s", dcpi_errmsg());
			if (r != -EACCES)
				return;
			continue;
		}
		if (r == 2 && strcmp(req, "status") && strcmp(req, "flush") && strcmp(req, "epoch")) {
			static const char no[] = "error: permission denied (the daemon's group may "
						 "status, flush and epoch)\n";

			(void)!write(conn, no, sizeof(no) - 1);
			logmsg(d, LOG_ERR, "refused '%.32s' from uid %u, of the daemon's group",
			       req, (unsigned)uid);
		} else {
			handle_request(d, conn, req);
		}
		close(conn);
	}
}

/* ---- set-up ------------------------------------------------------------- */

/* Say how many warnings the rate limit held back, if any. */
static void log_suppressed(struct daemon *d)
{
	if (d->warn_suppressed)
		logmsg(d, LOG_ERR, "%" PRIu64 " more warning%s (refused files and the like) not "
		       "logged: at most %d a burst, then one a second", d->warn_suppressed,
		       d->warn_suppressed == 1 ? "" : "s", WARN_BURST);
	d->warn_suppressed = 0;
}

/* Warnings from the library (a perf map refused, a jitdump cut short) are
 * what a user can cause at will, one per process: a token bucket lets
 * WARN_BURST through at once and one a second after, and counts the rest,
 * so the log cannot grow at the user's pace (nor the daemon spend its time
 * writing it). */
static void on_warning(void *arg, const char *msg)
{
	struct daemon *d = arg;
	uint64_t now = now_ns();

	d->warn_tokens += (double)(now - d->warn_last_ns) / 1e9;
	if (d->warn_tokens > WARN_BURST)
		d->warn_tokens = WARN_BURST;
	d->warn_last_ns = now;
	if (d->warn_tokens < 1) {
		d->warn_suppressed++;
		return;
	}
	d->warn_tokens -= 1;
	log_suppressed(d);
	logmsg(d, LOG_ERR, "%s", msg);
}

static void on_unknown(void *arg, int32_t pid, uint64_t ip, int kernel)
{
	struct daemon *d = arg;

	/* bounded: a storm of unknown samples must not fill the disk */
	if (d->logged_unknown++ < 1000)
		logmsg(d, LOG_INFO, "unknown sample: pid %d ip 0x%" PRIx64 "%s", (int)pid, ip,
		       kernel ? " (kernel)" : "");
}

/* -imagecache: once per image, link or copy its file into DB/.build-id.
 * Called from merges, off the sampling path; an image whose file changed
 * or vanished is logged once and not tried again. */
static void on_merged(void *arg, int index, const struct dcpi_image *img)
{
	struct daemon *d = arg;
	size_t idx = (size_t)index;

	if (img->kind != DCPI_IMAGE_FILE || !img->build_id_len || index < 0)
		return;
	if (idx >= d->ncached) {
		size_t n = idx * 2 + 64;
		uint8_t *nc = realloc(d->cached, n);

		if (!nc)
			return;
		memset(nc + d->ncached, 0, n - d->ncached);
		d->cached = nc;
		d->ncached = n;
	}
	if (d->cached[idx])
		return;
	d->cached[idx] = 1;
	if (dcpi_imagecache_add(d->db, img->path, img->build_id, img->build_id_len, d->dirmode,
				d->filemode))
		logmsg(d, LOG_INFO, "image cache: %s", dcpi_errmsg());
}

static void open_log(struct daemon *d)
{
	char path[4200];
	int fd;

	if (d->logfile && !strcmp(d->logfile, "-")) {
		d->log = stderr;
		return;
	}
	if (d->logfile)
		snprintf(path, sizeof(path), "%s", d->logfile);
	else
		snprintf(path, sizeof(path), "%s/dcpid-%s.log", d->db, d->host);
	snprintf(d->logpath, sizeof(d->logpath), "%s", path);
	/* never through a symlink, never a FIFO, only a file of ours or root's */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		  d->filemode);
	if (fd < 0)
		cli_die("cannot open log %s: %s", path, strerror(errno));
	if (dcpi_file_check_own(fd, path))
		cli_die_lib("cannot use log");
	d->log = fdopen(fd, "a");
	if (!d->log)
		cli_die("cannot open log %s: %s", path, strerror(errno));
	if (fchmod(fd, d->filemode) && errno != EPERM)
		cli_die("cannot open log %s: %s", path, strerror(errno));
}

static void setup_events(struct daemon *d)
{
	char why[512] = "";

	if (!d->events.n) {
		if (dcpi_event_defaults(&d->events, why, sizeof(why)))
			cli_die_lib("choosing default events");
		if (why[0])
			logmsg(d, LOG_INFO, "%s", why);
	}
	if (d->mux)
		dcpi_event_mux(&d->events);
}

/* Our own CPU time, user and system, in seconds. */
static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int is_clock(const struct dcpi_event_spec *ev)
{
	return !strcmp(ev->name, "cpu-clock") || !strcmp(ev->name, "task-clock");
}

/* The CPU clock, into every epoch's statistics: time samples then convert
 * to cycles (dcpicalc).  /proc/cpuinfo's figure is logged beside it. */
static void measure_clock(struct daemon *d)
{
	struct dcpi_cpuclock ck;

	if (dcpi_cpuclock_measure(NULL, &ck)) {
		logmsg(d, LOG_INFO, "clock rate not measured (time samples stay relative): %s",
		       dcpi_errmsg());
		return;
	}
	d->clock_khz = (uint64_t)(ck.cycles_per_ns * 1e6 + 0.5);
	logmsg(d, LOG_INFO, "CPU clock %.3f GHz (a chain of dependent adds, the median of %d "
	       "rounds; the fastest %.3f GHz; /proc/cpuinfo says %.0f MHz)", ck.cycles_per_ns,
	       ck.rounds, ck.best, ck.cpuinfo_mhz);
}

/* The cost of one sample, measured here with the first event, and with
 * -budget the clock events' periods that keep the interrupts within it. */
static void calibrate(struct daemon *d)
{
	struct dcpi_event_spec *ev = &d->events.ev[0];

	measure_clock(d);
	if (dcpi_overhead_calibrate(ev, &d->ns_per_sample)) {
		d->ns_per_sample = 0;
		logmsg(d, LOG_INFO, "overhead not estimated: %s", dcpi_errmsg());
		if (d->budget > 0)
			cli_die("-budget: the cost of a sample could not be measured: %s",
				dcpi_errmsg());
		return;
	}
	logmsg(d, LOG_INFO, "one %s sample costs %.1f us here (calibrated: a loop timed with "
	       "and without sampling)", ev->name, d->ns_per_sample / 1000);
	if (d->budget <= 0)
		return;
	for (unsigned e = 0; e < d->events.n; e++) {
		struct dcpi_event_spec *x = &d->events.ev[e];

		if (!is_clock(x))
			cli_die("-budget chooses the period of cpu-clock and task-clock only; give "
				"%s a period (-event %s:PERIOD)", x->name, x->name);
		/* the events share the budget */
		x->period = dcpi_overhead_period_for(d->budget / 100.0 / d->events.n,
						     d->ns_per_sample);
		logmsg(d, LOG_INFO, "-budget %g%%: %s every %" PRIu64 " ns (%.0f samples/s per "
		       "CPU)", d->budget, x->name, x->period, 1e9 / (double)x->period);
	}
}

/* The estimated overhead so far: the interrupts (samples per second per
 * CPU x the calibrated cost) and our own CPU time, as a sentence. */
static void overhead_text(struct daemon *d, char *buf, size_t len)
{
	const struct dcpi_epoch_stats *st = dcpi_run_stats(d->run);
	unsigned ncpus = dcpi_sampler_ncpus(dcpi_run_sampler(d->run));
	double secs = (now_ns() - d->started_ns) / 1e9, rate, self;

	if (!d->ns_per_sample || secs <= 0 || !ncpus) {
		snprintf(buf, len, "not estimated (no calibration)");
		return;
	}
	rate = (double)(d->samples_before + st->samples - d->samples_at_start) / secs / ncpus;
	if (!d->warm_ns || now_ns() - d->warm_ns < 1000000000ull) {
		/* start-up: the interrupts alone; dcpid's share said apart */
		self = (cpu_seconds() - d->cpu_at_start) / secs;
		snprintf(buf, len, "%.2f%% of CPU: %.0f samples/s per CPU x %.1f us, dcpid not "
			 "estimated yet (start-up, its first %.0f s: %.2f%% of CPU so far)",
			 100 * dcpi_overhead_share(rate, d->ns_per_sample, 0, ncpus), rate,
			 d->ns_per_sample / 1000, (double)WARMUP_NS / 1e9, 100 * self / ncpus);
		return;
	}
	self = (cpu_seconds() - d->warm_cpu) / ((now_ns() - d->warm_ns) / 1e9);
	snprintf(buf, len, "%.2f%% of CPU: %.0f samples/s per CPU x %.1f us, dcpid %.2f%%",
		 100 * dcpi_overhead_share(rate, d->ns_per_sample, self, ncpus), rate,
		 d->ns_per_sample / 1000, 100 * self / ncpus);
}

/* Start-up over: dcpid's own CPU time is measured from here on. */
static void warm_up(struct daemon *d)
{
	uint64_t now = now_ns();

	if (!d->warm_ns && d->started_ns && now - d->started_ns >= WARMUP_NS) {
		d->warm_ns = now;
		d->warm_cpu = cpu_seconds();
	}
}

/* Open the counters (disabled) and the collector, and read the kernel's
 * symbols: everything slow that need not wait for sampling, since from
 * dcpi_sampler_enable() on the rings fill and nobody drains them until
 * the main loop runs (at 50,000 samples/s per CPU the default ring holds
 * a quarter of a second, and reading /proc/kallsyms alone can take that). */
static void open_sampling(struct daemon *d)
{
	struct dcpi_run_opts ro = {
		.db = d->db, .host = d->host, .platform = d->platform, .events = &d->events,
		.sampling = { .pid = -1, .ring_pages = d->ring_pages, .sideband = 1,
			      .mmap_build_id = d->buildid_mmap, .stack_bytes = d->stack_bytes },
		.bypid = d->bypid, .nbypid = d->nbypid, .unknown_per_pid = d->unknown_per_pid,
		.label_keys = d->label_keys, .dirmode = d->dirmode, .filemode = d->filemode,
		.jit_budget_per_uid = d->jitmem, .jit_budget = d->jitmem * 4,
		.clock_khz = d->clock_khz, .sample_cost_ns = (uint64_t)(d->ns_per_sample + 0.5),
		.drain_thread = 1, .on_warning = on_warning,
		.on_unknown = d->logmaps ? on_unknown : NULL,
		.on_merged = d->imagecache ? on_merged : NULL, .arg = d,
	};

	if (dcpi_run_new(&ro, &d->run))
		cli_die_lib("cannot start the collector");
	if (dcpi_run_open(d->run))
		cli_die_lib("cannot start sampling");
	/* a first scan reads every image's build-id into the identity cache,
	 * so the scan that counts, once sampling is on, is quick */
	(void)dcpi_run_scan(d->run);
}

static void start_sampling(struct daemon *d)
{
	/* enable first, then scan: a process started in between is seen by
	 * both, which is harmless, rather than by neither */
	if (dcpi_run_start(d->run))
		cli_die_lib("cannot enable sampling");
	d->started_ns = now_ns();
	d->samples_at_start = dcpi_run_stats(d->run)->samples;
	d->cpu_at_start = cpu_seconds();
	if (dcpi_run_scan(d->run) < 0)
		logmsg(d, LOG_ERR, "initial process scan: %s", dcpi_errmsg());
}

/* perf rings are not inherited across fork (the kernel marks them
 * VM_DONTCOPY), so we fork before setting up, and the parent waits on a
 * pipe for the daemon's word: "ok", or EOF after the daemon printed its
 * error on the terminal's stderr and exited.  So `dcpid DB` fails
 * visibly when the daemon cannot start. */
static int daemonize_start(struct daemon *d)
{
	int p[2];
	char ok[2];
	pid_t pid;

	if (d->nodaemon)
		return -1;
	if (pipe2(p, O_CLOEXEC))
		cli_die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		cli_die("fork: %s", strerror(errno));
	if (pid > 0) {
		close(p[1]);
		_exit(read(p[0], ok, 2) == 2 && !memcmp(ok, "ok", 2) ? 0 : 1);
	}
	close(p[0]);
	setsid();
	pid = fork(); /* not a session leader: never reacquires a terminal */
	if (pid < 0)
		cli_die("fork: %s", strerror(errno));
	if (pid > 0)
		_exit(0);
	return p[1];
}

static void daemonize_finish(struct daemon *d, int ready_fd)
{
	int fd;

	if (ready_fd < 0)
		return;
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		if (d->log != stderr)
			dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	(void)!write(ready_fd, "ok", 2);
	close(ready_fd);
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* What a killed daemon left: temporary files, an epoch.stats behind its
 * profiles. */
static void recover(struct daemon *d)
{
	size_t removed;
	uint64_t added;

	if (dcpi_stats_recover(d->db, d->host, d->platform, d->filemode, &removed, &added))
		logmsg(d, LOG_ERR, "recovering after a crash: %s", dcpi_errmsg());
	if (removed)
		logmsg(d, LOG_INFO, "removed %zu temporary files left by a crash", removed);
	if (added)
		logmsg(d, LOG_INFO, "epoch.stats recounted from the profiles: %" PRIu64
		       " samples were missing", added);
}

/* On the terminal that started us (stderr until daemonize_finish), as
 * DCPI's dcpid said it: what is sampled, and where the log is.  Sets are
 * separated by commas, the events of a set joined by '+'. */
static void announce(struct daemon *d)
{
	char what[1024];
	size_t len = 0;

	if (d->loglevel == LOG_ERR)
		return;
	what[0] = 0;
	for (unsigned e = 0; e < d->events.n && len < sizeof(what); e++) {
		const struct dcpi_event_spec *ev = &d->events.ev[e];

		len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s:%s%" PRIu64,
					e == 0 ? "" : ev->set == ev[-1].set ? "+" : ", ", ev->name,
					ev->randomize ? "R" : "F", ev->period);
	}
	fprintf(stderr, "%s: monitoring %s on %u CPUs\n", cli_prog, what,
		dcpi_sampler_ncpus(dcpi_run_sampler(d->run)));
	fprintf(stderr, "%s: logging to %s\n", cli_prog,
		d->logpath[0] ? d->logpath : "standard error");
}

static void setup(struct daemon *d)
{
	char name[DCPI_EPOCH_NAME_MAX];

	umask(d->shared ? 022 : 077);
	if (d->nice_val && setpriority(PRIO_PROCESS, 0, d->nice_val))
		cli_die("-nice %d: %s", d->nice_val, strerror(errno));
	if (dcpi_db_host(d->host, sizeof(d->host)) || dcpi_db_init(d->db, d->dirmode))
		cli_die_lib("cannot use database");
	/* checked as resolved: from now on, no symlink of the path is followed */
	if (!(d->db = realpath(d->db, NULL)))
		cli_die("cannot use database: %s", strerror(errno));
	if (dcpi_db_lock(d->db, d->host, &d->lockfd))
		cli_die_lib("cannot start");
	if (dcpi_db_platform(d->db, d->host, d->platform, sizeof(d->platform)))
		cli_die_lib("cannot start");
	open_log(d);
	recover(d);
	setup_events(d);
	calibrate(d);
	open_sampling(d);
	/* before enabling: entering an epoch copies the kernel's symbols */
	if (d->reuse_epoch && dcpi_db_epoch_latest(d->db, name) == 0) {
		if (enter_epoch(d, name))
			cli_die_lib("cannot continue epoch %s", name);
	} else if (new_epoch(d, time(NULL))) {
		cli_die_lib("cannot start an epoch");
	}
	start_sampling(d);
	/* a daemon of its own group (the service's dcpi): its members may ask
	   status, flush and epoch; root's group is never one */
	if (dcpi_ctl_listen(d->db, d->host, getegid() ? 0660 : 0600, &d->ctlfd))
		cli_die_lib("cannot create the control socket");
	dcpi_ctl_server_init(&d->ctl, d->ctlfd);
	d->ctl.group = getegid();
	d->sigfd = setup_signals();
	if (d->sigfd < 0)
		cli_die("signalfd: %s", strerror(errno));
	announce(d);
	logmsg(d, LOG_INFO, "dcpid %s, pid %d", dcpi_version(), (int)getpid());
	logmsg(d, LOG_INFO, "sampling %u CPUs into %s",
	       dcpi_sampler_ncpus(dcpi_run_sampler(d->run)), dcpi_run_platdir(d->run));
	for (unsigned e = 0; e < d->events.n; e++)
		logmsg(d, LOG_INFO, "event %s (set %u) period %" PRIu64 "%s", d->events.ev[e].name,
		       d->events.ev[e].set, d->events.ev[e].period,
		       d->events.ev[e].randomize ? " randomised" : "");
}

/* ---- main loop ---------------------------------------------------------- */

/* The first boundary of -rotate after t, on local time's clock (1h: the
 * hours, 1d: midnights). */
static time_t next_boundary(const struct daemon *d, time_t t)
{
	struct tm tm;
	time_t off, r = d->rotate_secs;

	localtime_r(&t, &tm);
	off = tm.tm_gmtoff;
	return ((t + off) / r + 1) * r - off;
}

/* -rotate: the epoch ends at the boundary; the next is named by it. */
static void rotate(struct daemon *d)
{
	time_t at = d->next_rotate;

	d->next_rotate = next_boundary(d, time(NULL));
	if (merge(d))
		return; /* the samples stay in memory; the next boundary tries again */
	if (new_epoch(d, at))
		logmsg(d, LOG_ERR, "cannot start the epoch of %ld: %s", (long)at, dcpi_errmsg());
}

/* Timed work: merges, status lines, fresh random periods. */
static void tick(struct daemon *d)
{
	time_t now = time(NULL);

	dcpi_run_rerandomize(d->run);
	warm_up(d);
	log_losses(d);
	if (d->rotate_secs && now >= d->next_rotate)
		rotate(d);
	else if (now >= d->next_merge)
		merge(d);
	if (d->gc_days && now >= d->next_gc)
		collect_garbage(d);
	if (d->status_secs && now >= d->next_status) {
		const struct dcpi_epoch_stats *st = dcpi_run_stats(d->run);
		struct dcpi_run_totals t;
		char over[256];

		drain(d, 0);
		dcpi_run_totals(d->run, &t);
		overhead_text(d, over, sizeof(over));
		logmsg(d, LOG_INFO, "status: samples %" PRIu64 " lost %" PRIu64 " throttled %" PRIu64
		       " unknown %" PRIu64 " pending %" PRIu64 " (run: samples %" PRIu64 " lost %"
		       PRIu64 "); estimated overhead %s", st->samples, st->lost, st->throttled,
		       st->unknown, pending(d), t.samples, t.lost, over);
		d->next_status = now + d->status_secs;
	}
}

/* How long poll may sleep: a second at most.  The rings wake us when half
 * full, but a JIT's perf map is opened through its process (dcpi/jitmap.h),
 * which must still run when its mmap records are read, so the rings are
 * also read each second (drained on a timeout); randomised periods want a
 * fresh value each second too.  One wake-up a second is the price. */
static int poll_timeout(const struct daemon *d)
{
	time_t now = time(NULL), next = d->next_merge;

	if (d->status_secs && d->next_status < next)
		next = d->next_status;
	if (d->gc_days && d->next_gc < next)
		next = d->next_gc;
	if (d->rotate_secs && d->next_rotate < next)
		next = d->next_rotate;
	if (next > now + 1)
		next = now + 1;
	return next <= now ? 0 : (int)((next - now) * 1000);
}

static void run(struct daemon *d)
{
	enum { MAXFDS = 4096 };
	static struct pollfd fds[1 + MAXFDS + 1 + DCPI_CTL_CLIENTS];
	size_t nrings = dcpi_sampler_pollfds(dcpi_run_sampler(d->run), fds + 1, MAXFDS);

	fds[0] = (struct pollfd){ d->sigfd, POLLIN, 0 };
	d->next_merge = time(NULL) + d->merge_secs;
	d->next_status = time(NULL) + d->status_secs;
	d->next_gc = time(NULL); /* the first, once the loop drains the rings */
	if (d->rotate_secs)
		d->next_rotate = next_boundary(d, time(NULL));
	while (!d->quit) {
		size_t nfds = 1 + nrings + dcpi_ctl_server_pollfds(&d->ctl, fds + 1 + nrings,
								    1 + DCPI_CTL_CLIENTS);
		int pending_clients = nfds > nrings + 2, timeout = poll_timeout(d);
		int ring_ready = 0, ctl_ready = 0, r;

		if (pending_clients && timeout > 500) /* to drop silent ones in time */
			timeout = 500;
		r = poll(fds, nfds, timeout);

		if (r < 0 && errno != EINTR) {
			logmsg(d, LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		for (size_t i = 1; i < nrings + 1; i++)
			ring_ready |= fds[i].revents & POLLIN;
		for (size_t i = nrings + 1; i < nfds; i++)
			ctl_ready |= fds[i].revents;
		if (ring_ready || r == 0)
			drain(d, 0);
		if (fds[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
				logmsg(d, LOG_INFO, "signal %u: merging and stopping", si.ssi_signo);
				if (merge(d))
					logmsg(d, LOG_ERR, "stopping anyway: %" PRIu64 " samples not "
					       "written are lost", pending(d));
				d->quit = 1;
			}
		}
		if (ctl_ready || pending_clients)
			serve_control(d);
		tick(d);
	}
	dcpi_ctl_server_release(&d->ctl);
}

int cmd_dcpid(int argc, char **argv)
{
	static struct daemon d; /* large; and one per process */
	const struct dcpi_epoch_stats *st;
	struct dcpi_run_totals t;
	char over[256];

	d.lockfd = d.ctlfd = d.sigfd = -1;
	int ready;

	parse_options(&d, argc, argv);
	ready = daemonize_start(&d);
	setup(&d);
	daemonize_finish(&d, ready);
	run(&d);
	st = dcpi_run_stats(d.run);
	dcpi_run_totals(d.run, &t);
	d.next_loss_log = 0;
	log_losses(&d); /* the last ones, whenever the previous line was */
	overhead_text(&d, over, sizeof(over));
	log_suppressed(&d);
	logmsg(&d, LOG_INFO, "stopped: samples %" PRIu64 " lost %" PRIu64 " throttled %" PRIu64
	       " unknown %" PRIu64 " in this run; epoch %s: samples %" PRIu64 " lost %" PRIu64
	       " throttled %" PRIu64 " unknown %" PRIu64 "; estimated overhead %s", t.samples,
	       t.lost, t.throttled, t.unknown, dcpi_run_epoch(d.run), st->samples, st->lost,
	       st->throttled, st->unknown, over);
	if (dcpi_run_close_epoch(d.run))
		logmsg(&d, LOG_ERR, "the kernel symbol snapshot of epoch %s was kept whole: %s",
		       dcpi_run_epoch(d.run), dcpi_errmsg());
	dcpi_ctl_unlink(d.db, d.host);
	dcpi_run_free(d.run);
	return 0;
}
