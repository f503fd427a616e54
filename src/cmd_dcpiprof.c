/* dcpiprof: where the time went, by image or by procedure, as DCPI's
 * dcpiprof printed it: a header of events and totals, then one column
 * group (samples, %, cum%) per event. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/folded.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/pprof.h"
#include "dcpi/procs.h"
#include "dcpi/profset.h"
#include "dcpi/select.h"
#include "prof_stacks.h"
#include "report.h"

enum { OUT_TEXT, OUT_JSON, OUT_CSV, OUT_FOLDED, OUT_PPROF };

struct opts {
	struct cli_common co;        /* -db -epoch -host -label -json -csv IMAGE... */
	const char *sort, *ratio, *pprof, *by;
	const char *proc;            /* -callers, -callees PROC */
	int procs, bypid, out, stacks;  /* stacks: PS_CALLERS, ... (prof_stacks.h) */
	unsigned long long depth;
	unsigned long long keep;
	double cutoff;
};

struct report {
	struct opts o;
	struct dcpi_profset set;
	struct dcpi_selection sel;
	struct dcpi_objcache *objs;
	struct dcpi_procs t;
	int sortcol, ratio_a, ratio_b;
	struct report_warnings w;
};

/* ---- options ------------------------------------------------------------ */

enum { O_BY = 256, O_PID, O_SORT, O_KEEP, O_CUTOFF, O_RATIO, O_FOLDED, O_PPROF, O_CALLERS,
       O_CALLEES, O_INCLUSIVE, O_DEPTH, O_STACKS };

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;
	char *end;

	switch (c) {
	case 'i': o->procs = 1; break;
	case O_PID: o->bypid = 1; break;
	case O_BY: o->by = cli_label_key(arg); break;
	case O_SORT: o->sort = arg; break;
	case O_KEEP: o->keep = cli_parse_count("keep", arg); break;
	case O_CUTOFF:
		o->cutoff = strtod(arg, &end);
		if (*end || end == arg || !(o->cutoff >= 0 && o->cutoff <= 100))
			cli_usage_error("-cutoff wants a percentage 0-100, not '%s'", cli_safe(arg));
		break;
	case O_RATIO:
		if (!strchr(arg, '/'))
			cli_usage_error("-ratio wants EVENT/EVENT, not '%s'", cli_safe(arg));
		o->ratio = arg;
		break;
	case O_FOLDED: o->out = OUT_FOLDED; break;
	case O_PPROF: o->out = OUT_PPROF; o->pprof = arg; break;
	case O_CALLERS:
	case O_CALLEES:
	case O_INCLUSIVE:
	case O_STACKS:
		if (o->stacks)
			cli_usage_error("-callers, -callees, -inclusive and -stacks: one at a time");
		o->stacks = c == O_CALLERS ? PS_CALLERS : c == O_CALLEES ? PS_CALLEES
			  : c == O_INCLUSIVE ? PS_INCLUSIVE : PS_STACKS;
		o->proc = arg;
		break;
	case O_DEPTH:
		o->depth = cli_parse_count("depth", arg);
		if (o->depth < 1 || o->depth > 64)
			cli_usage_error("-depth wants 1 to 64, not '%s'", cli_safe(arg));
		break;
	}
}

static const struct option own_opts[] = {
	{ "i", no_argument, NULL, 'i' },
	{ "pid", no_argument, NULL, O_PID },
	{ "by", required_argument, NULL, O_BY },
	{ "sort", required_argument, NULL, O_SORT },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "cutoff", required_argument, NULL, O_CUTOFF },
	{ "ratio", required_argument, NULL, O_RATIO },
	{ "folded", no_argument, NULL, O_FOLDED },
	{ "pprof", required_argument, NULL, O_PPROF },
	{ "callers", required_argument, NULL, O_CALLERS },
	{ "callees", required_argument, NULL, O_CALLEES },
	{ "inclusive", no_argument, NULL, O_INCLUSIVE },
	{ "stacks", no_argument, NULL, O_STACKS },
	{ "depth", required_argument, NULL, O_DEPTH },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpiprof", .synopsis = "[options] [IMAGE...]",
	.about = "Where the time went: images sorted by samples; with -i or IMAGE arguments,\n"
		 "the procedures of all images or of those images.\n",
	.common = CLI_SELECT | CLI_JSON | CLI_CSV | CLI_IMAGES,
	.help = "  -i                 procedures of all images\n"
		"  -pid               keep per-process profiles and stacks (dcpid -bypid) apart\n"
		"  -by KEY            keep labelled profiles apart by comm, uid or cgroup\n"
		"  -sort EVENT        order by this event (default: the first)\n"
		"  -keep N            only the first N rows\n"
		"  -cutoff PERCENT    only rows with at least this share of the sort event\n"
		"  -ratio A/B         add a column A/B (e.g. instructions/cycles)\n"
		"  -callers PROC      who called PROC (in the IMAGE named, if any), with shares\n"
		"                     of its inclusive samples; from the epoch's call stacks\n"
		"  -depth N           with -callers: their callers too, N levels (default 1)\n"
		"  -callees PROC      what PROC's inclusive samples were spent in: itself, and\n"
		"                     each procedure it called\n"
		"  -inclusive         procedures by inclusive samples (in them and below)\n"
		"  -stacks            the call stacks themselves, most samples first\n",
	.after = "  -folded            folded stacks for flame graphs: image;procedure;file:line N\n"
		 "  -pprof FILE        write a gzipped pprof profile to FILE instead of a report\n",
	.footer = "IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n",
	.shortopts = "i", .opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	o->keep = ULLONG_MAX;
	cli_parse(&cli, argc, argv, &o->co, o);
	if ((o->co.json || o->co.csv) && o->out)
		cli_usage_error("-json, -csv, -folded and -pprof: one output at a time");
	if (o->co.json)
		o->out = OUT_JSON;
	else if (o->co.csv)
		o->out = OUT_CSV;
	if (o->co.nimages)
		o->procs = 1;
	if (o->stacks && o->by)
		cli_usage_error("call stacks are kept by label and process, not by -by's keys: "
				"-label K=V chooses them (-by goes with the flat report)");
	if (o->depth && o->stacks != PS_CALLERS)
		cli_usage_error("-depth goes with -callers");
	if (o->stacks && o->out && o->out != OUT_JSON && o->out != OUT_CSV)
		cli_usage_error("-folded and -pprof do not go with -callers, -callees, -inclusive or "
				"-stacks");
	if ((o->stacks == PS_INCLUSIVE || o->stacks == PS_STACKS) && o->co.nimages)
		cli_usage_error("-inclusive and -stacks take no IMAGE");
}

/* ---- the table ------------------------------------------------------------ */

static int build(struct report *r)
{
	struct dcpi_procs_opts po = { r->o.procs, r->o.bypid, NULL, r->o.by };
	int exporting = r->o.out == OUT_FOLDED || r->o.out == OUT_PPROF;
	struct dcpi_obj_opts oo = { report_symtab_opts(r->o.co.db), NULL, NULL };

	if (dcpi_select(&r->set, r->o.co.images, r->o.co.nimages, &r->sel))
		return cli_error("%s", dcpi_errmsg());
	if ((r->o.procs || exporting) && !(po.objs = r->objs = dcpi_objcache_new(&oo)))
		return cli_error("out of memory");
	if (dcpi_procs_build(&r->t, &r->set, r->sel.chosen, r->o.co.nimages > 0, &po))
		return cli_error("%s", dcpi_errmsg());
	for (size_t i = 0; i < r->t.nnotes; i++)
		report_warn(&r->w, "%s", r->t.notes[i]);
	return 0;
}

static int event_col(struct report *r, const char *name, const char *what)
{
	int c = dcpi_profset_event(&r->set, name);

	if (c < 0) {
		struct dcpi_buf b = DCPI_BUF_INIT;

		for (unsigned e = 0; e < r->set.nevents; e++)
			dcpi_buf_printf(&b, "%s%s", e ? ", " : "", r->set.events[e]);
		cli_error("%s: no event '%s' in these profiles (they have: %s)", what, name,
			  b.len ? (char *)b.data : "none");
		dcpi_buf_release(&b);
	}
	return c;
}

static int choose_columns(struct report *r)
{
	r->sortcol = r->o.sort ? event_col(r, r->o.sort, "-sort") : 0;
	r->ratio_a = r->ratio_b = -1;
	if (r->o.ratio) {
		char a[128];

		snprintf(a, sizeof(a), "%.*s", (int)strcspn(r->o.ratio, "/"), r->o.ratio);
		r->ratio_a = event_col(r, a, "-ratio");
		r->ratio_b = r->ratio_a < 0 ? -1 : event_col(r, strchr(r->o.ratio, '/') + 1, "-ratio");
		if (r->ratio_b < 0)
			return -1;
	}
	return r->sortcol < 0 ? -1 : 0;
}

/* ---- output ----------------------------------------------------------------- */

static void print_header(struct report *r, FILE *f)
{
	report_print_header(f, r->o.co.db, &r->set, r->t.total, &r->w);
	fprintf(f, "\nThe numbers given below are the number of samples for each listed event type%s.\n",
	       r->ratio_a >= 0 ? " or, for the ratio of two event types, the ratio of their samples"
			       : "");
	fprintf(f, "==============================================================================\n");
}

static int ratio_width(const struct report *r)
{
	int n = (int)strlen(r->o.ratio);

	return n > 10 ? n : 10;
}

static void print_text(struct report *r, FILE *f, size_t n)
{
	uint64_t cum[DCPI_MAX_EVENTS] = { 0 };

	print_header(r, f);
	for (unsigned e = 0; e < r->set.nevents; e++)
		fprintf(f, "%12s %7s %7s ", cli_safe(r->set.events[e]), "%", "cum%");
	if (r->ratio_a >= 0)
		fprintf(f, "%*s ", ratio_width(r), r->o.ratio);
	fprintf(f, r->o.procs ? " %-40s %s\n" : " %s\n", r->o.procs ? "procedure" : "image", "image");
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_proc_row *w = r->t.rows[i];

		for (unsigned e = 0; e < r->set.nevents; e++) {
			cum[e] += w->c[e];
			fprintf(f, "%12" PRIu64 " %6.2f%% %6.2f%% ", w->c[e],
			       report_pct(w->c[e], r->t.total[e]), report_pct(cum[e], r->t.total[e]));
		}
		if (r->ratio_a >= 0) {
			if (w->c[r->ratio_b])
				fprintf(f, "%*.3f ", ratio_width(r), (double)w->c[r->ratio_a] / w->c[r->ratio_b]);
			else
				fprintf(f, "%*s ", ratio_width(r), "-");
		}
		if (r->o.procs)
			fprintf(f, " %-40s %s", cli_safe(w->proc), cli_safe(w->image));
		else
			fprintf(f, " %s", cli_safe(w->image));
		if (w->pid >= 0)
			fprintf(f, " (pid %" PRId64 ")", w->pid);
		if (w->group)
			fprintf(f, " (%s %s)", r->o.by, cli_safe(w->group));
		fprintf(f, "\n");
	}
}

static void print_json(struct report *r, size_t n)
{
	struct dcpi_json *j = report_json_begin(r->o.co.db);

	dcpi_json_key_str(j, "mode", r->o.procs ? "procedures" : "images");
	report_json_header(j, &r->set, r->t.total, &r->w);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_proc_row *w = r->t.rows[i];

		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "image", w->image);
		if (r->o.procs) {
			dcpi_json_key_str(j, "procedure", w->proc);
			dcpi_json_key(j, "address");
			if (w->has_addr)
				dcpi_json_strf(j, "0x%" PRIx64, w->addr);
			else
				dcpi_json_null(j);
		}
		if (w->pid >= 0) {
			dcpi_json_key(j, "pid");
			dcpi_json_i64(j, w->pid);
		}
		if (w->group)
			dcpi_json_key_str(j, r->o.by, w->group);
		report_json_counts(j, r->set.nevents, w->c, r->t.total);
		dcpi_json_obj_end(j);
	}
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

static void print_csv(struct report *r, size_t n)
{
	report_warn_print(&r->w, "");
	printf("image,%spid%s%s", r->o.procs ? "procedure," : "", r->o.by ? "," : "",
	       r->o.by ? r->o.by : "");
	for (unsigned e = 0; e < r->set.nevents; e++) {
		putchar(',');
		report_csv_field(stdout, r->set.events[e]);
	}
	putchar('\n');
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_proc_row *w = r->t.rows[i];

		report_csv_field(stdout, w->image);
		if (r->o.procs) {
			putchar(',');
			report_csv_field(stdout, w->proc);
		}
		if (w->pid >= 0)
			printf(",%" PRId64, w->pid);
		else
			printf(",");
		if (w->group) {
			putchar(',');
			report_csv_field(stdout, w->group);
		}
		for (unsigned e = 0; e < r->set.nevents; e++)
			printf(",%" PRIu64, w->c[e]);
		putchar('\n');
	}
}

/* ---- exports ------------------------------------------------------------------ */

/* The epoch's call stacks when it has them (and no IMAGE narrows the
 * report to some leaves), else one stack per sampled line. */
static void print_folded(struct report *r)
{
	struct dcpi_callgraph g;
	int stacks = 0;

	if (!r->o.co.nimages) {
		struct dcpi_cg_opts co = { r->o.co.label, -1, 0 };

		if (dcpi_callgraph_build(&g, &r->set, &co, r->objs))
			cli_die("%s", dcpi_errmsg());
		if (g.nbad)
			report_warn(&r->w, "%zu stacks file%s could not be read, left out (%s)",
				    g.nbad, g.nbad == 1 ? "" : "s", g.first_bad ? g.first_bad : "");
		stacks = g.nfiles && g.total[r->sortcol];
	}
	report_warn_print(&r->w, "");
	if (stacks) {
		fprintf(stderr, "%s: folded call stacks of %" PRIu64 " samples of %s\n", cli_prog,
			g.total[r->sortcol], cli_safe(r->set.events[r->sortcol]));
		if (dcpi_folded_write_stacks(stdout, &g, r->sortcol))
			cli_die("%s", dcpi_errmsg());
	} else if (dcpi_folded_write(stdout, &r->set, r->sel.chosen, r->objs, r->sortcol)) {
		cli_die("%s", dcpi_errmsg());
	}
	if (!r->o.co.nimages)
		dcpi_callgraph_free(&g);
}

static void write_pprof(struct report *r)
{
	const struct dcpi_epoch_stats *st = &r->set.stats;
	struct dcpi_pprof_opts po = { .default_col = (unsigned)r->sortcol };

	report_warn_print(&r->w, "");
	if (st->start > 0) {
		po.time_nanos = st->start * 1000000000ll;
		if (st->updated > st->start)
			po.duration_nanos = (st->updated - st->start) * 1000000000ll;
	}
	if (!r->o.co.nimages && dcpi_callgraph_present(&r->set)) { /* the call stacks */
		size_t nbad = 0;

		if (dcpi_pprof_write_stacks(r->o.pprof, &r->set, r->o.co.label, r->objs, &po, &nbad))
			cli_die("%s", dcpi_errmsg());
		if (nbad)
			cli_warn("%zu stacks file%s could not be read, left out", nbad,
				 nbad == 1 ? "" : "s");
		fprintf(stderr, "%s: wrote %s: the call stacks of the %s samples\n", cli_prog,
			cli_safe(r->o.pprof), cli_safe(r->set.events[0]));
		return;
	}
	if (dcpi_pprof_write(r->o.pprof, &r->set, r->sel.chosen, r->objs, &po))
		cli_die("%s", dcpi_errmsg());
	fprintf(stderr, "%s: wrote %s: %" PRIu64 " %s samples\n", cli_prog,
		cli_safe(r->o.pprof), r->t.total[0], cli_safe(r->set.events[0]));
}

/* ---- main ------------------------------------------------------------------- */

/* Load, select, build and order: everything but the printing.  The exit
 * status so far, or -1 after an error message. */
static int prepare(struct report *r, size_t *shown)
{
	int status;

	if (dcpi_profset_load(r->o.co.db, r->o.co.epoch, r->o.co.host, &r->set))
		return cli_error("%s", dcpi_errmsg());
	if (r->o.co.label)
		report_keep_label(&r->set, r->o.co.label);
	report_check_set(&r->w, &r->set);
	if (build(r))
		return -1;
	report_warn_finish(&r->w);
	status = report_unmatched(&r->set, r->o.co.images, r->o.co.nimages, r->sel.matched);
	if (status && !report_any_matched(r->sel.matched, r->o.co.nimages))
		return -1; /* nothing named is there: the errors, no empty table */
	if (r->set.nevents == 0)
		return cli_error("%s: no samples in epoch %s", r->o.co.db,
				 r->set.epochs[r->set.nepochs - 1]);
	if (choose_columns(r))
		return -1;
	dcpi_procs_sort(&r->t, r->sortcol);
	*shown = dcpi_procs_shown(&r->t, r->sortcol, r->o.keep, r->o.cutoff);
	return status;
}

/* Free everything; the exit status (-1: an error was said). */
static int finish(struct report *r, FILE *f, int status)
{
	if (status >= 0 && r->t.failed_chosen) {
		fprintf(stderr, "%s: error: symbols of a named image could not be read (see the "
			"warnings)\n", cli_prog);
		status = 1;
	}
	if (status >= 0 && (fflush(f) || ferror(f)))
		status = cli_error("writing the report failed");
	dcpi_procs_free(&r->t);
	dcpi_objcache_free(r->objs);
	dcpi_selection_free(&r->sel);
	dcpi_profset_free(&r->set);
	return status;
}

int prof_text_report(FILE *f, const char *db, const char *epoch, int procs,
		     const char *keep, const char *sort)
{
	static struct report r;
	size_t n;
	int status;

	memset(&r, 0, sizeof(r));
	r.o.co.db = db;
	r.o.co.epoch = epoch;
	r.o.procs = procs;
	r.o.keep = keep ? cli_parse_count("keep", keep) : ULLONG_MAX;
	r.o.sort = sort;
	status = prepare(&r, &n);
	if (status >= 0)
		print_text(&r, f, n);
	return finish(&r, f, status);
}

/* -callers, -callees, -inclusive: the set, then the stacks. */
static int stacks_main(struct report *r)
{
	struct prof_stacks ps = {
		.mode = r->o.stacks, .out = r->o.out == OUT_JSON ? PS_JSON : r->o.out == OUT_CSV ? PS_CSV
												 : PS_TEXT,
		.db = r->o.co.db, .set = &r->set, .label = r->o.co.label, .bypid = r->o.bypid,
		.w = &r->w,
		.proc = r->o.proc, .images = (const char *const *)r->o.co.images,
		.nimages = r->o.co.nimages, .depth = r->o.depth ? r->o.depth : 1, .keep = r->o.keep,
	};
	int status;

	if (dcpi_profset_load(r->o.co.db, r->o.co.epoch, r->o.co.host, &r->set))
		return cli_error("%s", dcpi_errmsg()), 1;
	if (r->o.co.label)
		report_keep_label(&r->set, r->o.co.label);
	report_check_set(&r->w, &r->set);
	if (r->set.nevents == 0) {
		cli_error("%s: no samples in epoch %s", r->o.co.db, r->set.epochs[r->set.nepochs - 1]);
		dcpi_profset_free(&r->set);
		return 1;
	}
	status = r->o.sort ? event_col(r, r->o.sort, "-sort") : 0;
	if (status >= 0) {
		ps.col = (unsigned)status;
		ps.objs = r->objs = report_objcache(r->o.co.db);
		status = prof_stacks_report(&ps);
	}
	if (status >= 0 && (fflush(stdout) || ferror(stdout)))
		status = cli_error("writing the report failed");
	dcpi_objcache_free(r->objs);
	dcpi_profset_free(&r->set);
	return status < 0 ? 1 : 0;
}

int cmd_dcpiprof(int argc, char **argv)
{
	static struct report r;
	size_t n;
	int status;

	parse_options(&r.o, argc, argv);
	if (r.o.stacks)
		return stacks_main(&r);
	status = prepare(&r, &n);
	if (status < 0)
		return 1;
	if (r.o.out == OUT_FOLDED)
		print_folded(&r);
	else if (r.o.out == OUT_PPROF)
		write_pprof(&r);
	else if (r.o.out == OUT_JSON)
		print_json(&r, n);
	else if (r.o.out == OUT_CSV)
		print_csv(&r, n);
	else
		print_text(&r, stdout, n);
	return finish(&r, stdout, status);
}
