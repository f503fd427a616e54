/* dcpi report: an epoch as pages a browser opens from disk (dcpi/html.h).
 *
 * Every number on the pages is what a text tool prints: the pages carry
 * the tools' own JSON documents (dcpiprof, dcpilist -both, dcpicalc,
 * dcpitopstalls, dcpiwhatcg, dcpilabel, dcpidiff), made by running those
 * commands of this binary in child processes, and report.js draws them.
 * This file only chooses the pages (the top procedures, by dcpiprof's
 * table) and writes them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "dcpi/buf.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/html.h"
#include "dcpi/vprof.h"
#include "dcpi/json.h"
#include "dcpi/procs.h"
#include "dcpi/profset.h"
#include "report.h"

#define MAX_OUT ((size_t)256 << 20)     /* one document a child prints */
#define TOP_IMAGES 8    /* where the cycles went, and the top stalls: of these */

struct job;

struct rep {
	struct cli_common co;
	const char *out;                /* -o DIR */
	const char *diff;               /* -diff EPOCH_A; B is the operand */
	unsigned long long pages, keep; /* -n, -keep */
	char epoch[256];                /* the epoch the children are given */
	unsigned nwarn;                 /* documents that carried warnings */
	unsigned nfailed;               /* pages whose tool failed */
	unsigned nocode;                /* procedure pages without code to analyse */
	pid_t pid;                      /* ours, in the graphs' file names */
	const char *top[TOP_IMAGES];    /* the images with most samples */
	size_t ntop;
	struct job *jobs;               /* the index's tools, run by jobs_pid */
	size_t njobs;
	pid_t jobs_pid;
	int last_nocode;                /* the last document said "has_code": false */
	int stacks;                     /* the epoch has call stacks */
	int vtrace;                     /* ... value profiles */
};

static void own_option(void *ctx, int c, const char *arg)
{
	struct rep *r = ctx;

	switch (c) {
	case 'o': r->out = arg; break;
	case 'n': r->pages = cli_parse_count("n", arg); break;
	case 256: r->keep = cli_parse_count("keep", arg); break;
	case 257: r->diff = arg; break;
	}
}

static const struct option own_opts[] = {
	{ "o", required_argument, NULL, 'o' },
	{ "n", required_argument, NULL, 'n' },
	{ "keep", required_argument, NULL, 256 },
	{ "diff", required_argument, NULL, 257 },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpi report", .synopsis = "[options]\n       dcpi report [options] -diff EPOCH_A EPOCH_B",
	.about = "An epoch as a report to open in a browser: DIR/index.html (the epoch, its\n"
		 "images and procedures, where the cycles went) and a page per top procedure\n"
		 "(source and instructions with their samples, the control-flow graph with\n"
		 "estimated block counts, the stalls); with -diff, two epochs compared.\n"
		 "Self-contained: nothing is fetched, everything is in DIR.\n",
	.common = CLI_SELECT,
	.help = "  -o DIR             where to write it (default ./dcpi-report)\n"
		"  -n N               pages for the N procedures with most samples (default 20)\n"
		"  -keep N            rows of the procedure table (default 500)\n"
		"  -diff EPOCH_A      compare EPOCH_A with the operand EPOCH_B (as dcpidiff)\n",
	.shortopts = "o:n:", .opts = own_opts, .opt = own_option,
};

/* ---- the tools, run as children ----------------------------------------------------- */

/* What fn(argv) printed on out (and on err), run in a child process: a
 * tool's exit and its static state stay its own.  Its exit status. */
static int run_tool(int (*fn)(int, char **), const char *prog, char **argv, struct dcpi_buf *out,
		    struct dcpi_buf *err)
{
	int fd[2], efd, status;
	pid_t pid;

	efd = memfd_create("dcpi-report-stderr", MFD_CLOEXEC);
	if (efd < 0 || pipe2(fd, O_CLOEXEC))
		cli_die("pipe: %s", strerror(errno));
	fflush(NULL);
	if ((pid = fork()) < 0)
		cli_die("fork: %s", strerror(errno));
	if (pid == 0) {
		int argc = 0;

		signal(SIGPIPE, SIG_DFL);
		if (dup2(fd[1], 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		while (argv[argc])
			argc++;
		cli_prog = prog;
		optind = 0;
		dcpi_json_exact_numbers(); /* the page rounds each number once, as the text */
		exit(fn(argc, argv));
	}
	close(fd[1]);
	for (;;) {
		ssize_t n;

		if (dcpi_buf_grow(out, 65536) && out->len < MAX_OUT)
			cli_die("out of memory");
		n = read(fd[0], out->data + out->len, out->cap - out->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out->len += (size_t)n;
		if (out->len >= MAX_OUT) {
			kill(pid, SIGKILL);
			break;
		}
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (err) {
		off_t n = lseek(efd, 0, SEEK_END);

		if (n > 0 && !dcpi_buf_grow(err, (size_t)n + 1) &&
		    pread(efd, err->data + err->len, (size_t)n, 0) == n)
			err->len += (size_t)n;
		if (!dcpi_buf_grow(err, 1))
			err->data[err->len] = 0;
	}
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* argv for a tool: its name, the selection options, then the rest (up to
 * NULL). */
#define TOOL_ARGS 32
static void tool_argv(const struct rep *r, const char *epoch, char **v, const char *name, ...)
{
	const char *a;
	size_t n = 0;
	va_list ap;

	v[n++] = (char *)name;
	v[n++] = "-db";
	v[n++] = (char *)r->co.db;
	if (epoch) {
		v[n++] = "-epoch";
		v[n++] = (char *)epoch;
	}
	if (r->co.host) {
		v[n++] = "-host";
		v[n++] = (char *)r->co.host;
	}
	if (r->co.label) {
		v[n++] = "-label";
		v[n++] = (char *)r->co.label;
	}
	va_start(ap, name);
	while ((a = va_arg(ap, const char *)) && n < TOOL_ARGS - 1)
		v[n++] = (char *)a;
	va_end(ap);
	v[n] = NULL;
}

/* The images with most samples after the arguments of v (a tool_argv
 * ending in "--"). */
static void add_top_images(const struct rep *r, char **v)
{
	size_t n = 0;

	while (v[n])
		n++;
	for (size_t i = 0; i < r->ntop && n < TOOL_ARGS - 1; i++)
		v[n++] = (char *)r->top[i];
	v[n] = NULL;
}

/* A JSON document of a tool for page b as data id; a tool that fails
 * gives {"error": its message} instead (fatal: the page cannot be made
 * without it). */
static void embed_doc(struct rep *r, struct dcpi_buf *b, const char *id, int fatal, int st,
		      struct dcpi_buf out, struct dcpi_buf err)
{
	if (st) {
		char *msg = err.data ? (char *)err.data : "failed", *nl = strchr(msg, '\n');
		FILE *f;
		struct dcpi_json *j;

		if (nl)
			*nl = 0;
		if (fatal)
			cli_die("%s", msg[0] ? msg : "a tool failed");
		r->nfailed++;
		dcpi_buf_release(&out);
		if (!(f = open_memstream((char **)&out.data, &out.len)) || !(j = dcpi_json_new(f)))
			cli_die("out of memory");
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "error", msg);
		dcpi_json_free(j);
		if (fclose(f))
			cli_die("out of memory");
		out.cap = out.len;
	} else if (memmem(out.data, out.len, "\"warnings\": [\"", 14)) {
		r->nwarn++;
	}
	r->last_nocode = !st && memmem(out.data, out.len, "\"has_code\": false", 17);
	if (dcpi_html_data(b, id, (const char *)out.data, out.len))
		cli_die("%s: out of memory", id);
	dcpi_buf_release(&out);
	dcpi_buf_release(&err);
}

static void embed_tool(struct rep *r, struct dcpi_buf *b, const char *id, int fatal,
		       int (*fn)(int, char **), char **argv)
{
	struct dcpi_buf out = DCPI_BUF_INIT, err = DCPI_BUF_INIT;
	int st = run_tool(fn, argv[0], argv, &out, &err);

	embed_doc(r, b, id, fatal, st, out, err);
}

/* ---- tools run beside the parent --------------------------------------------------- */

/* A tool a child of ours runs while the parent makes the pages: the
 * analyses of whole images (dcpiwhatcg, dcpitopstalls) cost seconds on a
 * machine's day.  Its status, error and output go to DIR/.job.ID.PID. */
struct job {
	const char *id;
	int fatal;
	int (*fn)(int, char **);
	char *argv[TOOL_ARGS];
};

/* A child to work beside the parent (it ends with _exit): its pid in the
 * parent, 0 in the child.  Buffered output is flushed first, so that
 * neither writes it twice. */
static pid_t fork_helper(void)
{
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) < 0)
		cli_die("fork: %s", strerror(errno));
	return pid;
}

static void job_path(const struct rep *r, const struct job *j, char *path, size_t len)
{
	snprintf(path, len, "%s/.job.%s.%ld", r->out, j->id, (long)r->pid);
}

static pid_t start_jobs(const struct rep *r, const struct job *jobs, size_t n)
{
	pid_t pid = fork_helper();

	if (pid)
		return pid;
	for (size_t i = 0; i < n; i++) {
		struct dcpi_buf out = DCPI_BUF_INIT, err = DCPI_BUF_INIT, f = DCPI_BUF_INIT;
		char path[PATH_MAX];
		int st = run_tool(jobs[i].fn, jobs[i].argv[0], (char **)jobs[i].argv, &out, &err);

		job_path(r, &jobs[i], path, sizeof(path));
		if (dcpi_buf_printf(&f, "%d %zu\n", st, err.len) || dcpi_buf_put(&f, err.data, err.len) ||
		    dcpi_buf_put(&f, out.data, out.len) ||
		    dcpi_file_write_atomic(path, f.data, f.len, 0600))
			unlink(path);
		dcpi_buf_release(&out);
		dcpi_buf_release(&err);
		dcpi_buf_release(&f);
	}
	_exit(0);
}

/* Job j's document into page b, as embed_tool would have put it. */
static void embed_job(struct rep *r, struct dcpi_buf *b, const struct job *j)
{
	struct dcpi_buf out = DCPI_BUF_INIT, err = DCPI_BUF_INIT;
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0, elen;
	char head[64];
	int st = 1, n = 0;

	job_path(r, j, path, sizeof(path));
	if (dcpi_file_read(path, MAX_OUT + (1u << 20), &data, &len) == 0)
		snprintf(head, sizeof(head), "%.*s", (int)(len < 63 ? len : 63), (const char *)data);
	else
		head[0] = 0;
	if (data && sscanf(head, "%d %zu\n%n", &st, &elen, &n) == 2 && n > 0 &&
	    elen <= len - (size_t)n) {
		if (dcpi_buf_put(&err, data + n, elen) || dcpi_buf_put(&err, "", 1) ||
		    dcpi_buf_put(&out, data + n + elen, len - n - elen))
			cli_die("out of memory");
		err.len--; /* the NUL kept past the end */
	} else {
		st = 1;
		if (dcpi_buf_printf(&err, "%s: the tool's child left no output", j->id))
			cli_die("out of memory");
	}
	free(data);
	unlink(path);
	embed_doc(r, b, j->id, j->fatal, st, out, err);
}

/* ---- the pages ------------------------------------------------------------------------- */

struct page {
	const struct dcpi_proc_row *row;
	struct dcpi_html_page p;
	struct dcpi_buf b;
	int code;                       /* dcpilist found code: graph, estimates, stalls */
};

static void index_page(struct rep *r, const struct dcpi_procs *t, size_t npages);

static void write_file(const struct rep *r, const char *name, const void *p, size_t n)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", r->out, name) >= (int)sizeof(path))
		cli_die("%s: path too long", cli_safe(r->out));
	if (dcpi_file_write_atomic(path, p, n, 0644))
		cli_die("%s", dcpi_errmsg());
}

static void page_done(const struct rep *r, struct dcpi_buf *b, const struct dcpi_html_page *p,
		      const char *name)
{
	if (dcpi_html_end(b, p))
		cli_die("out of memory");
	write_file(r, name, b->data, b->len);
	dcpi_buf_release(b);
}

/* Where page k's graph is drawn. */
static void cfg_path(const struct rep *r, size_t k, char *path, size_t len)
{
	snprintf(path, len, "%s/p/.cfg.%zu.%ld.svg", r->out, k, (long)r->pid);
}

/* The graphs of the pages with code, drawn by dcpicalc -svg in one child
 * while the parent makes the rest: Graphviz's layout is most of a
 * report's time (1.6 s of a 300-block procedure's page). */
static pid_t draw_graphs(const struct rep *r, const struct page *pg, size_t n)
{
	pid_t pid = fork_helper();

	if (pid)
		return pid;
	for (size_t k = 0; k < n; k++) {
		char path[PATH_MAX], *v[TOOL_ARGS];
		struct dcpi_buf out = DCPI_BUF_INIT;

		if (!pg[k].code)
			continue;
		cfg_path(r, k, path, sizeof(path));
		tool_argv(r, r->epoch, v, "dcpicalc", "-svg", path, "--", pg[k].row->proc,
			  pg[k].row->image, NULL);
		if (run_tool(cmd_dcpicalc, "dcpicalc", v, &out, NULL))
			unlink(path);
		dcpi_buf_release(&out);
	}
	_exit(0);
}

/* Page k's graph, drawn by draw_graphs, inline. */
static void embed_cfg(struct rep *r, struct page *pg, size_t k)
{
	char path[PATH_MAX];
	uint8_t *svg = NULL;
	size_t len = 0;

	cfg_path(r, k, path, sizeof(path));
	if (dcpi_file_read(path, MAX_OUT, &svg, &len) ||
	    dcpi_html_svg(&pg->b, "cfg", (const char *)svg, len)) {
		r->nfailed++;
		if (dcpi_buf_printf(&pg->b, "<p class=\"note\">No graph: dcpicalc -svg could not "
				    "draw this procedure.</p>\n"))
			cli_die("out of memory");
	}
	free(svg);
	unlink(path);
}

/* Whether the set's epochs have value profiles (a readable one: a corrupt
 * one is said by dcpilist on the pages). */
static int vtrace_present(const struct dcpi_profset *set)
{
	struct dcpi_vprof *vp;
	size_t nfiles = 0, nbad;
	char *first_bad = NULL;

	if (dcpi_vprof_of_set(set, &vp, &nfiles, &nbad, &first_bad))
		cli_die("%s", dcpi_errmsg());
	free(first_bad);
	dcpi_vprof_free(vp);
	return nfiles > 0;
}

/* The procedure pages: the listing of each first (it says whether there
 * is code), then the graphs drawn in a child while the estimates and
 * stalls are made here, then the index; last the graphs go in. */
static void proc_pages(struct rep *r, const struct dcpi_procs *t, size_t n)
{
	struct page *pg = calloc(n ? n : 1, sizeof(*pg));
	char *v[TOOL_ARGS], name[64];
	pid_t helper;
	int status;

	if (!pg)
		cli_die("out of memory");
	for (size_t k = 0; k < n; k++) {
		pg[k].row = t->rows[k];
		pg[k].p = (struct dcpi_html_page){ t->rows[k]->proc, "proc", "../" };
		if (dcpi_html_begin(&pg[k].b, &pg[k].p))
			cli_die("out of memory");
		tool_argv(r, r->epoch, v, "dcpilist", "-both", "-json",
			  r->vtrace ? "-vtrace" : "-both", "--", pg[k].row->proc, pg[k].row->image, NULL);
		embed_tool(r, &pg[k].b, "list", 0, cmd_dcpilist, v);
		pg[k].code = !r->last_nocode; /* the kernel's code unread, say: samples only */
		r->nocode += !pg[k].code;
	}
	helper = draw_graphs(r, pg, n);
	for (size_t k = 0; k < n; k++) {
		if (!pg[k].code)
			continue;
		tool_argv(r, r->epoch, v, "dcpicalc", "-json", "--", pg[k].row->proc,
			  pg[k].row->image, NULL);
		embed_tool(r, &pg[k].b, "calc", 0, cmd_dcpicalc, v);
		tool_argv(r, r->epoch, v, "dcpitopstalls", "-json", "-n", "50", "-proc",
			  pg[k].row->proc, "--", pg[k].row->image, NULL);
		embed_tool(r, &pg[k].b, "stalls", 0, cmd_dcpitopstalls, v);
	}
	for (size_t k = 0; k < n && r->stacks; k++) { /* who called it, what it called */
		tool_argv(r, r->epoch, v, "dcpiprof", "-json", "-keep", "50", "-callers",
			  pg[k].row->proc, "--", pg[k].row->image, NULL);
		embed_tool(r, &pg[k].b, "callers", 0, cmd_dcpiprof, v);
		tool_argv(r, r->epoch, v, "dcpiprof", "-json", "-keep", "50", "-callees",
			  pg[k].row->proc, "--", pg[k].row->image, NULL);
		embed_tool(r, &pg[k].b, "callees", 0, cmd_dcpiprof, v);
	}
	index_page(r, t, n);
	while (waitpid(helper, &status, 0) < 0 && errno == EINTR)
		;
	for (size_t k = 0; k < n; k++) {
		if (pg[k].code)
			embed_cfg(r, &pg[k], k);
		snprintf(name, sizeof(name), "p/%zu.html", k);
		page_done(r, &pg[k].b, &pg[k].p, name);
	}
	free(pg);
}

/* The pages of the procedures as JSON: [{"image", "procedure", "page"}]. */
static void pages_data(struct dcpi_buf *b, const struct dcpi_procs *t, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct dcpi_json *j = f ? dcpi_json_new(f) : NULL;

	if (!j)
		cli_die("out of memory");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++) {
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "image", t->rows[i]->image);
		dcpi_json_key_str(j, "procedure", t->rows[i]->proc);
		dcpi_json_key(j, "page");
		dcpi_json_strf(j, "p/%zu.html", i);
		dcpi_json_obj_end(j);
	}
	dcpi_json_free(j);
	if (fclose(f) || dcpi_html_data(b, "pages", text, len))
		cli_die("out of memory");
	free(text);
}

/* The index's analyses of whole images, started now beside the pages:
 * where the cycles went and the top stalls, of the images with most
 * samples only (an image's analysis costs in proportion to its code, and a
 * database of a machine's day holds hundreds). */
static void index_jobs(struct rep *r)
{
	static struct job jobs[2] = { { "whatcg", 0, cmd_dcpiwhatcg, { 0 } },
				      { "stalls", 0, cmd_dcpitopstalls, { 0 } } };

	tool_argv(r, r->epoch, jobs[0].argv, "dcpiwhatcg", "-json", "--", NULL);
	add_top_images(r, jobs[0].argv);
	tool_argv(r, r->epoch, jobs[1].argv, "dcpitopstalls", "-json", "--", NULL);
	add_top_images(r, jobs[1].argv);
	r->jobs = jobs;
	r->njobs = 2;
	r->jobs_pid = start_jobs(r, jobs, 2);
}

static void index_page(struct rep *r, const struct dcpi_procs *t, size_t npages)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_html_page p = { "", "index", "" };
	char *v[TOOL_ARGS], keep[32], title[512];
	int status;

	snprintf(title, sizeof(title), "Epoch %s of %s", r->epoch, report_base(r->co.db));
	p.title = title;
	snprintf(keep, sizeof(keep), "%llu", r->keep);
	if (dcpi_html_begin(&b, &p))
		cli_die("out of memory");
	tool_argv(r, r->epoch, v, "dcpiprof", "-json", NULL);
	embed_tool(r, &b, "images", 1, cmd_dcpiprof, v);
	tool_argv(r, r->epoch, v, "dcpiprof", "-i", "-json", "-keep", keep, NULL);
	embed_tool(r, &b, "procs", 1, cmd_dcpiprof, v);
	/* run beside the pages since the start (index_jobs) */
	while (waitpid(r->jobs_pid, &status, 0) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < r->njobs; i++)
		embed_job(r, &b, &r->jobs[i]);
	if (r->stacks) { /* the flame graph's stacks, and time by procedure and below */
		tool_argv(r, r->epoch, v, "dcpiprof", "-stacks", "-json", "-keep", "3000", NULL);
		embed_tool(r, &b, "stacks", 0, cmd_dcpiprof, v);
		tool_argv(r, r->epoch, v, "dcpiprof", "-inclusive", "-json", "-keep", keep, NULL);
		embed_tool(r, &b, "inclusive", 0, cmd_dcpiprof, v);
	}
	if (!r->co.label) {
		tool_argv(r, r->epoch, v, "dcpilabel", "-json", NULL);
		embed_tool(r, &b, "labels", 0, cmd_dcpilabel, v);
	}
	pages_data(&b, t, npages);
	page_done(r, &b, &p, "index.html");
}

static void diff_page(struct rep *r, const char *b_epoch)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_html_page p = { "", "diff", "" };
	char *v[TOOL_ARGS], title[600];

	snprintf(title, sizeof(title), "%s against %s", b_epoch, r->diff);
	p.title = title;
	if (dcpi_html_begin(&b, &p))
		cli_die("out of memory");
	tool_argv(r, NULL, v, "dcpidiff", "-json", "--", r->diff, b_epoch, NULL);
	embed_tool(r, &b, "diff-images", 1, cmd_dcpidiff, v);
	tool_argv(r, NULL, v, "dcpidiff", "-i", "-json", "-keep", "500", "--", r->diff, b_epoch,
		  NULL);
	embed_tool(r, &b, "diff", 1, cmd_dcpidiff, v);
	page_done(r, &b, &p, "index.html");
}

/* DIR and DIR/p, made if need be (not through a link another user
 * could have planted: O_NOFOLLOW on the last component). */
static void make_dirs(const struct rep *r)
{
	char path[PATH_MAX];
	struct stat st;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s%s", r->out, i ? "/p" : "");
		if (mkdir(path, 0755) && errno != EEXIST)
			cli_die("%s: %s", cli_safe(path), strerror(errno));
		if (lstat(path, &st) || !S_ISDIR(st.st_mode))
			cli_die("%s: not a directory", cli_safe(path));
		/* another user's directory could hold what it likes at our files'
		   names by the time we write them: only one of our own */
		if (st.st_uid != geteuid())
			cli_die("%s: owned by uid %u, not by us: write the report into a directory "
				"of our own", cli_safe(path), (unsigned)st.st_uid);
	}
}

static void assets(const struct rep *r)
{
	write_file(r, "report.js", dcpi_html_js, strlen(dcpi_html_js));
	write_file(r, "report.css", dcpi_html_css, strlen(dcpi_html_css));
}

int cmd_report(int argc, char **argv)
{
	static struct rep r = { .out = "dcpi-report", .pages = 20, .keep = 500 };
	struct dcpi_profset set;
	struct dcpi_procs t = { 0 }, ti = { 0 };
	struct dcpi_obj_opts oo;
	struct dcpi_procs_opts po = { .procs = 1 };
	size_t npages = 0;

	cli_parse(&cli, argc, argv, &r.co, &r);
	if (r.diff) {
		if (r.co.epoch)
			cli_usage_error("-diff names both epochs: no -epoch with it");
		if (optind != argc - 1)
			cli_usage_error("-diff EPOCH_A wants EPOCH_B as its one operand");
		make_dirs(&r);
		assets(&r);
		diff_page(&r, argv[optind]);
		printf("%s/index.html: epoch %s against %s\n", r.out, argv[optind], r.diff);
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", cli_safe(argv[optind]));
	/* One epoch for every page: "latest" named once, here. */
	report_set_load(&set, r.co.db, r.co.epoch ? r.co.epoch : "latest", r.co.host, r.co.label);
	snprintf(r.epoch, sizeof(r.epoch), "%s",
		 set.nepochs == 1 ? set.epochs[0] : r.co.epoch ? r.co.epoch : "latest");
	oo = (struct dcpi_obj_opts){ report_symtab_opts(r.co.db), NULL, NULL };
	if (!(po.objs = dcpi_objcache_new(&oo)) || dcpi_procs_build(&t, &set, NULL, 0, &po))
		cli_die("%s", dcpi_errmsg());
	dcpi_procs_sort(&t, 0);
	npages = dcpi_procs_shown(&t, 0, r.pages, 0);
	{ /* the top images, as dcpiprof's image table orders them */
		struct dcpi_procs_opts io = { 0 };

		if (dcpi_procs_build(&ti, &set, NULL, 0, &io))
			cli_die("%s", dcpi_errmsg());
		dcpi_procs_sort(&ti, 0);
		for (size_t i = 0; i < ti.n && r.ntop < TOP_IMAGES; i++)
			if (strcmp(ti.rows[i]->image, "unknown"))
				r.top[r.ntop++] = ti.rows[i]->image;
	}
	r.stacks = dcpi_callgraph_present(&set);
	r.vtrace = vtrace_present(&set);
	make_dirs(&r);
	assets(&r);
	r.pid = getpid();
	index_jobs(&r);
	proc_pages(&r, &t, npages);
	for (size_t i = npages;; i++) { /* an earlier report's pages past these */
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/p/%zu.html", r.out, i);
		if (unlink(path))
			break;
	}
	printf("%s/index.html: epoch %s, %zu procedure pages\n", r.out, r.epoch, npages);
	if (r.nwarn)
		cli_warn("%u of the tools' documents carry warnings: the report shows them", r.nwarn);
	if (r.nocode)
		cli_warn("%u of the procedures have no code to read (dcpilist says why on their "
			 "pages): no graph or estimates for them", r.nocode);
	if (r.nfailed)
		cli_warn("%u parts could not be made: the pages say which", r.nfailed);
	dcpi_procs_free(&t);
	dcpi_procs_free(&ti);
	dcpi_objcache_free(po.objs);
	dcpi_profset_free(&set);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
