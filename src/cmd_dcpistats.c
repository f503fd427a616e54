/* dcpistats: how each image's or procedure's samples (or samples per
 * second, or share) vary over epochs of the same workload, and with two
 * groups of epochs whether they changed more than the runs vary (DCPI's
 * dcpistats; Welch's t-test, see dcpi/shares.h). */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/procs.h"
#include "dcpi/shares.h"
#include "report.h"

#define MAX_EPOCHS DCPI_SHARES_MAX_EPOCHS

struct opts {
	struct cli_common co;        /* -db -host -label -json */
	int procs;
	int inclusive;               /* -inclusive: procedures' inclusive samples */
	struct report_compare cmp;   /* -event -keep -rate -shares */
	const char *epochs[2][MAX_EPOCHS];
	size_t n[2];
};

struct st {
	struct opts o;
	struct dcpi_objcache *objs;
	struct dcpi_shares s;
	struct report_warnings w;
	char event[64];
};

enum { O_INCLUSIVE = 256 };

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	switch (c) {
	case 'i': o->procs = 1; break;
	case O_INCLUSIVE: o->procs = o->inclusive = 1; break;
	default: report_compare_option(&o->cmp, c, arg); break;
	}
}

static const struct option own_opts[] = {
	{ "i", no_argument, NULL, 'i' },
	{ "inclusive", no_argument, NULL, O_INCLUSIVE },
	REPORT_COMPARE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpistats", .synopsis = "[options] EPOCH... [-- EPOCH...]",
	.about = "How each image's (or with -i procedure's) samples vary over epochs of one\n"
		 "workload: mean, standard deviation, min, max.  With a second group after --:\n"
		 "the difference of the means, its 95% confidence interval and whether it is\n"
		 "significant (Welch's t-test on the per-epoch values).\n"
		 "Options come before the epochs.  An EPOCH may be followed by /pid=N (one process\n"
		 "of dcpid -bypid) and K=V labels: runs of a job compared with other runs.\n",
	.common = CLI_DB | CLI_HOST | CLI_LABEL | CLI_JSON,
	.host_help = "  -host NAME         the host (default: this one; 'all' sums hosts)\n",
	.help = "  -i                 by procedure (default: by image)\n"
		"  -inclusive         procedures by inclusive samples (in them and below), from\n"
		"                     the epochs' call stacks (dcpi record -stacks, dcpid -stacks);\n"
		"                     shares are of the samples with stacks\n"
		"  -event NAME        the event (default: the first epoch's first)\n"
		"  -rate second|cpu   samples per second of epoch, or per CPU-second monitored\n"
		"  -shares            shares of each epoch's samples instead of samples\n"
		"  -keep N            only the first N rows\n",
	/* '+': stop at the first epoch, so the "--" between groups survives */
	.shortopts = "+i", .opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	int g = 0;

	o->cmp.keep = ULLONG_MAX;
	cli_parse(&cli, argc, argv, &o->co, o);
	for (; optind < argc; optind++) {
		if (!strcmp(argv[optind], "--") && g == 0) {
			g = 1;
			continue;
		}
		if (o->n[g] == MAX_EPOCHS)
			cli_usage_error("at most %d epochs per group", MAX_EPOCHS);
		o->epochs[g][o->n[g]++] = argv[optind];
	}
	if (o->n[0] == 0 || (g && o->n[1] == 0))
		cli_usage_error(g ? "an epoch on each side of --" : "at least one epoch");
	if (o->cmp.per && o->cmp.shares)
		cli_usage_error("-rate and -shares measure different things: choose one");
}

/* One epoch's procedures by inclusive samples, of its samples with stacks. */
static void add_inclusive(struct st *t, int g, size_t e, const struct report_side *sel,
			  const struct dcpi_profset *set, int col)
{
	struct dcpi_callgraph cg;

	report_side_callgraph(t->o.co.label, sel, set, t->objs, col, t->o.epochs[g][e], &t->w,
			      &cg);
	for (size_t i = 0; i < cg.nprocs; i++) {
		const char *l[2] = { cg.procs[i].image, cg.procs[i].proc };

		if (cg.procs[i].incl[col] && dcpi_shares_add(&t->s, g, e, l, 2, cg.procs[i].incl[col],
							      cg.total[col]))
			cli_die("%s", dcpi_errmsg());
	}
	dcpi_callgraph_free(&cg);
}

/* One epoch's table into group g, epoch e. */
static void add_epoch(struct st *t, int g, size_t e)
{
	struct dcpi_procs_opts po = { t->o.procs, 0, t->objs, NULL };
	const char *name = t->o.epochs[g][e];
	struct report_side sel;
	struct dcpi_profset set;
	struct dcpi_procs p;
	int col;

	report_side_load(t->o.co.db, name, t->o.co.host, t->o.co.label, NULL, &sel, &set);
	if (set.nepochs != 1)
		cli_die("%s: names %zu epochs; dcpistats wants one epoch per argument", name,
			set.nepochs);
	if (!t->event[0])
		snprintf(t->event, sizeof(t->event), "%s",
			 t->o.cmp.event ? t->o.cmp.event : set.nevents ? set.events[0] : "");
	col = dcpi_profset_event(&set, t->event);
	if (col < 0)
		cli_die("epoch %s has no %s samples: the epochs sampled different events; name "
			"one they all have with -event", name, t->event);
	if (set.stats.lost)
		report_warn(&t->w, "%s: %" PRIu64 " samples were lost", name, set.stats.lost);
	if (set.nbad)
		report_warn(&t->w, "%s: %zu profile(s) could not be read and are left out; the "
			    "first: %s", name, set.nbad, set.first_bad);
	if (set.nbad_stats)
		report_warn(&t->w, "%s: %zu statistics file(s) refused; the first: %s", name,
			    set.nbad_stats, set.first_bad_stats);
	if (t->o.cmp.per) {
		double x = t->o.cmp.per == CLI_RATE_SECOND ? set.seconds : dcpi_profset_cpu_seconds(&set, (unsigned)col);

		if (!(x > 0))
			cli_die("epoch %s: its statistics give no %s (-rate %s needs them)", name,
				t->o.cmp.per == CLI_RATE_SECOND ? "length" : "CPU time",
				t->o.cmp.per == CLI_RATE_SECOND ? "second" : "cpu");
		if (dcpi_shares_set_exposure(&t->s, g, e, x))
			cli_die("%s", dcpi_errmsg());
	}
	if (t->o.inclusive) {
		add_inclusive(t, g, e, &sel, &set, col);
		dcpi_profset_free(&set);
		return;
	}
	if (dcpi_procs_build(&p, &set, NULL, 0, &po))
		cli_die("%s", dcpi_errmsg());
	for (size_t i = 0; i < p.nnotes; i++)
		report_warn(&t->w, "%s: %s", name, p.notes[i]);
	for (size_t i = 0; i < p.n; i++) {
		const char *l[2] = { p.rows[i]->image, p.rows[i]->proc };

		if (dcpi_shares_add(&t->s, g, e, l, t->o.procs ? 2 : 1, p.rows[i]->c[col],
				    p.total[col]))
			cli_die("%s", dcpi_errmsg());
	}
	dcpi_procs_free(&p);
	dcpi_profset_free(&set);
}

/* ---- output ------------------------------------------------------------------- */

static const char *verdict_word(int v)
{
	return v == DCPI_SHARES_DIFFERENT ? "yes" : v == DCPI_SHARES_SAME ? "no" : "n/a";
}

static void print_labels(const struct st *t, const struct dcpi_shares_row *r)
{
	if (t->o.procs)
		printf(" %-32s %s\n", cli_safe(r->label[1]), cli_safe(r->label[0]));
	else
		printf(" %s\n", cli_safe(r->label[0]));
}

enum { M_SAMPLES = CLI_RATE_NONE, M_SECOND = CLI_RATE_SECOND, M_CPU = CLI_RATE_CPU, M_SHARE };
static const char *const what_text[] = {
	"samples in each epoch",
	"samples per second of each epoch",
	"samples per CPU-second monitored in each epoch",
	"shares, percent of each epoch's samples",
};
static const char *const what_json[] = { "samples", "per-second", "per-cpu-second", "shares" };

static int measure(const struct st *t)
{
	return t->o.cmp.shares ? M_SHARE : t->o.cmp.per;
}

static void print_text(const struct st *t, size_t n)
{
	int two = t->o.n[1] > 0;

	printf("Database: %s\nEvent: %s\nA: %zu epoch%s", cli_safe(t->o.co.db), cli_safe(t->event),
	       t->o.n[0], t->o.n[0] > 1 ? "s" : "");
	for (size_t e = 0; e < t->o.n[0]; e++)
		printf(" %s", cli_safe(t->o.epochs[0][e]));
	if (two) {
		printf("\nB: %zu epoch%s", t->o.n[1], t->o.n[1] > 1 ? "s" : "");
		for (size_t e = 0; e < t->o.n[1]; e++)
			printf(" %s", cli_safe(t->o.epochs[1][e]));
	}
	printf("\n");
	report_warn_print(&t->w, "");
	if (two && (t->o.n[0] < 2 || t->o.n[1] < 2))
		printf("note: one run on a side: no significance can be computed (run-to-run "
		       "variation is unknown);\n      the interval is the %s sampling "
		       "error alone\n", t->o.cmp.shares ? "binomial" : "Poisson");
	printf("\nValues are %s%s%s; sd is over epochs%s%s.\n", t->o.inclusive ? "inclusive " : "",
	       what_text[measure(t)], t->o.inclusive && measure(t) == M_SHARE ? " with stacks" : "",
	       two ? ";\ndiff = mean B - mean A, with its 95% interval" : "",
	       !two ? "" : t->o.n[0] > 1 && t->o.n[1] > 1 ? " (Welch's t)"
							 : " (sampling error)");
	printf("==============================================================================\n");
	if (two)
		printf("%9s %8s %9s %8s %9s %21s %4s ", t->o.cmp.shares ? "A mean%" : "A mean", "sd",
		       t->o.cmp.shares ? "B mean%" : "B mean", "sd", "diff", "95% interval", "sig");
	else if (t->o.cmp.shares)
		printf("%9s %8s %9s %9s ", "mean%", "sd", "min%", "max%");
	else
		printf("%9s %8s %9s %9s ", "mean", "sd", "min", "max");
	printf(t->o.procs ? " %-32s %s\n" : " %s\n", t->o.procs ? "procedure" : "image", "image");
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_shares_row *r = t->s.rows[i];
		double m = fmax(fabs(r->g[0].max), two ? fabs(r->g[1].max) : 0);
		/* rates: three significant digits of the row's largest value */
		int p = !t->o.cmp.per || m >= 100 ? 2 : m >= 10 ? 3 : m >= 1 ? 4 : 5;

		if (two)
			printf("%9.*f %8.*f %9.*f %8.*f %+9.*f [%+9.*f, %+9.*f] %4s ", p, r->g[0].mean,
			       p, r->g[0].sd, p, r->g[1].mean, p, r->g[1].sd, p, r->diff, p, r->lo,
			       p, r->hi, verdict_word(r->verdict));
		else
			printf("%9.*f %8.*f %9.*f %9.*f ", p, r->g[0].mean, p, r->g[0].sd, p,
			       r->g[0].min, p, r->g[0].max);
		print_labels(t, r);
	}
}

static void json_group(struct dcpi_json *j, const char *name, const struct dcpi_shares_group *g,
		       const double *value, size_t n)
{
	dcpi_json_key(j, name);
	dcpi_json_obj_begin(j);
	dcpi_json_key_fixed(j, "mean", 1, g->mean, 4);
	dcpi_json_key_fixed(j, "sd", 1, g->sd, 4);
	dcpi_json_key_fixed(j, "min", 1, g->min, 4);
	dcpi_json_key_fixed(j, "max", 1, g->max, 4);
	dcpi_json_key_u64(j, "samples", g->samples);
	dcpi_json_key(j, "values");
	dcpi_json_arr_begin(j);
	for (size_t e = 0; e < n; e++)
		dcpi_json_fixed(j, value[e], 4);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
}

static void json_row(struct dcpi_json *j, const struct st *t, const struct dcpi_shares_row *r)
{
	dcpi_json_break(j);
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "image", r->label[0]);
	if (t->o.procs)
		dcpi_json_key_str(j, "procedure", r->label[1]);
	json_group(j, "a", &r->g[0], r->value[0], t->o.n[0]);
	if (t->o.n[1]) {
		json_group(j, "b", &r->g[1], r->value[1], t->o.n[1]);
		dcpi_json_key_fixed(j, "diff", 1, r->diff, 4);
		dcpi_json_key(j, "ci95");
		dcpi_json_arr_begin(j);
		dcpi_json_fixed(j, r->lo, 4);
		dcpi_json_fixed(j, r->hi, 4);
		dcpi_json_arr_end(j);
		dcpi_json_key(j, "significant");
		if (r->verdict == DCPI_SHARES_NOT_COMPUTED)
			dcpi_json_null(j);
		else
			dcpi_json_bool(j, r->verdict == DCPI_SHARES_DIFFERENT);
	}
	dcpi_json_obj_end(j);
}

static void print_json(const struct st *t, size_t n)
{
	struct dcpi_json *j = report_json_begin(t->o.co.db);

	dcpi_json_key_str(j, "mode", t->o.inclusive ? "inclusive" : t->o.procs ? "procedures"
										: "images");
	dcpi_json_key_str(j, "event", t->event);
	dcpi_json_key_str(j, "measure", what_json[measure(t)]);
	dcpi_json_key_strs(j, "a", t->o.epochs[0], t->o.n[0]);
	if (t->o.n[1])
		dcpi_json_key_strs(j, "b", t->o.epochs[1], t->o.n[1]);
	dcpi_json_key_str(j, "test", t->o.n[1] ? t->o.n[0] > 1 && t->o.n[1] > 1
		? "welch-t-95" : t->o.cmp.shares ? "binomial-sampling-error-95"
		: "poisson-sampling-error-95" : NULL);
	dcpi_json_break(j);
	dcpi_json_key_strs(j, "warnings", (const char *const *)t->w.v, t->w.n);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		json_row(j, t, t->s.rows[i]);
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

int cmd_dcpistats(int argc, char **argv)
{
	static struct st t;
	size_t n;

	parse_options(&t.o, argc, argv);
	t.objs = report_objcache(t.o.co.db);
	if (dcpi_shares_init(&t.s, t.o.n[0], t.o.n[1]))
		cli_die("%s", dcpi_errmsg());
	t.s.by_share = t.o.cmp.shares;
	for (int g = 0; g < 2; g++)
		for (size_t e = 0; e < t.o.n[g]; e++)
			add_epoch(&t, g, e);
	report_warn_finish(&t.w);
	dcpi_shares_finish(&t.s);
	n = t.s.n < t.o.cmp.keep ? t.s.n : (size_t)t.o.cmp.keep;
	if (t.o.co.json)
		print_json(&t, n);
	else
		print_text(&t, n);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	return 0;
}
