/* dcpiwhatcg: where an image's cycles went (execution, static stalls,
 * dynamic stalls by culprit as ranges, unexplained stall and gain), as
 * DCPI's dcpiwhatcg printed it; -stall KIND lists the procedures losing
 * most to one culprit.  The tally is libdcpi's (stall.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/select.h"
#include "dcpi/stall.h"
#include "report.h"

#define MAX_PROCS ((size_t)1 << 20)
#define FIG_DIGITS 3 /* significant digits of the text report's figures */

/* One procedure's loss to -stall's kind. */
struct loss {
	size_t img;
	const char *proc;            /* the image's string */
	double min, max, samples;
};

struct wcg {
	struct report_base b;        /* first: the skeleton's */
	int kind;                    /* -stall; -1 none */
	unsigned long long n;
	size_t nshow;                /* losses printed */
	size_t cur;
	struct dcpi_stall_tally *tally;    /* per image */
	double *unanalysed;                /* per image: samples of no estimate */
	struct loss *loss;
	size_t nloss, cap;
	uint64_t total[DCPI_MAX_EVENTS];
};

static void own_option(void *ctx, int c, const char *arg)
{
	struct wcg *t = ctx;

	if (c == 'n') {
		t->n = cli_parse_count("n", arg);
		return;
	}
	t->kind = strlen(arg) == 1 ? dcpi_stall_kind_of(arg[0]) : -1; /* -stall */
	if (t->kind < 0)
		cli_usage_error("-stall: want one of i I d D w p f s m, not '%s'", cli_safe(arg));
}

static const struct option own_opts[] = {
	{ "stall", required_argument, NULL, 256 },
	{ "n", required_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpiwhatcg", .synopsis = "[options] [IMAGE...]",
	.about = "Where each image's cycles went: execution, static stalls, dynamic stalls by\n"
		 "possible culprit (min..max), unexplained stall and gain.\n",
	.common = CLI_SELECT | CLI_JSON | CLI_IMAGES,
	.help = "  -stall KIND        the procedures losing most to culprit KIND (a code:\n"
		"                     i I d D w p f s m)\n"
		"  -n N               with -stall, how many procedures (default 20)\n",
	.footer = "IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n",
	.shortopts = "n:", .opts = own_opts, .opt = own_option,
};

/* ---- collecting ---------------------------------------------------------------------- */

static void add_loss(struct wcg *t, const struct dcpi_stall_proc *p)
{
	struct dcpi_stall_tally one = { 0 };
	int k = t->kind;

	dcpi_stall_tally_add(&one, p, dcpi_annot_image_arch(t->b.r.imgs[t->cur]));
	if (!(one.dyn.max[k] > 0))
		return;
	if (t->nloss == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct loss *v;

		if (cap > MAX_PROCS || !(v = realloc(t->loss, cap * sizeof(*v))))
			cli_die("too many procedures (over %zu)", MAX_PROCS);
		t->loss = v;
		t->cap = cap;
	}
	t->loss[t->nloss++] = (struct loss){ t->cur, p->name, one.dyn.min[k], one.dyn.max[k],
					     one.samples };
}

static int on_proc(struct dcpi_stall_proc *p, void *arg)
{
	struct wcg *t = arg;

	dcpi_stall_tally_add(&t->tally[t->cur], p, dcpi_annot_image_arch(t->b.r.imgs[t->cur]));
	if (p->err) {
		if (p->samples)
			report_warn(&t->b.w, "%s: %s: %s; its samples are not analysed",
				    report_base(dcpi_annot_image_profile(t->b.r.imgs[t->cur])->path),
				    p->name, dcpi_errmsg());
	} else if (t->kind >= 0) {
		add_loss(t, p);
	}
	return 0;
}

static void analyse(struct wcg *t)
{
	t->tally = calloc(t->b.r.nimgs ? t->b.r.nimgs : 1, sizeof(*t->tally));
	t->unanalysed = calloc(t->b.r.nimgs ? t->b.r.nimgs : 1, sizeof(double));
	if (!t->tally || !t->unanalysed)
		cli_die("out of memory");
	for (t->cur = 0; t->cur < t->b.r.nimgs; t->cur++) {
		struct dcpi_annot_image *img = t->b.r.imgs[t->cur];
		uint64_t unattributed, sum = 0;
		size_t n;
		const struct dcpi_annot_sample *s = dcpi_annot_image_samples(img, &n);

		for (size_t i = 0; i < n; i++) {
			for (unsigned e = 0; e < t->b.r.set.nevents; e++)
				t->total[e] += s[i].counts[e];
			sum += s[i].counts[t->b.r.cols->time];
		}
		if (!dcpi_annot_image_has_code(img)) {
			t->unanalysed[t->cur] = (double)sum;
			t->tally[t->cur].samples = (double)sum;
			continue;
		}
		if (dcpi_stall_image(img, &t->b.r.set, t->b.r.cols, on_proc, t, &unattributed))
			cli_die("%s", dcpi_errmsg());
		t->unanalysed[t->cur] += (double)unattributed;
		t->tally[t->cur].samples += (double)unattributed;
	}
}

/* ---- output ------------------------------------------------------------------------ */

static const char *image_name(const struct wcg *t, size_t i)
{
	return dcpi_annot_image_profile(t->b.r.imgs[i])->path;
}

static double units(const struct wcg *t, double samples)
{
	return t->b.r.cols->cycles_per_sample > 0 ? samples * t->b.r.cols->cycles_per_sample : samples;
}

static double pct(double v, double total)
{
	return total > 0 ? 100.0 * v / total : 0;
}

/* A figure in the report's unit to digits significant digits (with a k,
 * M, G suffix from 1,000 on), signed: the estimates behind it carry no
 * more, and a cycle count from a time event no more than its clock. */
static const char *fig_str(const struct wcg *t, double samples, int digits, char *buf, size_t len)
{
	double v = units(t, samples);

	buf[0] = '-';
	dcpi_count_str(fabs(v), 'H', digits, buf + (v < 0), len - (v < 0));
	return buf;
}

static void text_line(const struct wcg *t, const char *name, double v, double total)
{
	char a[32];

	printf("  %-34s %14s %7.1f%%\n", name, fig_str(t, v, FIG_DIGITS, a, sizeof(a)),
	       pct(v, total));
}

static void text_range(const struct wcg *t, const char *name, double lo, double hi, double total)
{
	char a[64], x[32], y[32];

	snprintf(a, sizeof(a), "%s..%s", fig_str(t, lo, FIG_DIGITS, x, sizeof(x)),
		 fig_str(t, hi, FIG_DIGITS, y, sizeof(y)));
	printf("    %-32s %21s %5.1f%%..%.1f%%\n", name, a, pct(lo, total), pct(hi, total));
}

static void text_image(const struct wcg *t, size_t i)
{
	const struct dcpi_stall_tally *y = &t->tally[i];
	double tot = y->samples, not = t->unanalysed[i] + y->unestimated, analysed = tot - not;
	double err = sqrt(analysed > 0 ? analysed : 0);
	char e[32], f[32];

	printf("\nImage: %s\n", cli_safe(image_name(t, i)));
	text_line(t, "Execution", y->execution, tot);
	text_line(t, "Static stalls", y->static_stall, tot);
	text_line(t, "Dynamic stalls", y->dyn.total, tot);
	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		char name[64];

		if (!(y->dyn.max[k] > 0))
			continue;
		snprintf(name, sizeof(name), "%s (%c)", dcpi_stall_name(k), dcpi_stall_code(k));
		text_range(t, name, y->dyn.min[k], y->dyn.max[k], tot);
	}
	text_line(t, "  Unexplained stall", y->dyn.unexplained, tot);
	text_line(t, "Unexplained gain", y->gain > 0 ? -y->gain : 0, tot);
	text_line(t, "Not analysed", not, tot);
	printf("  %-34s %14s\n", "", "--------------");
	text_line(t, "Total sampled", tot, tot);
	snprintf(e, sizeof(e), "+-%s", fig_str(t, err, 2, f, sizeof(f)));
	printf("  %-34s %14s %6.1f%%\n", "Net sampling error (1 s.e.)", e, pct(err, tot));
	printf("  Samples with confidence H or M: %.1f%%\n", pct(y->conf_ok, analysed));
	if (pct(y->gain, tot) >= 1)
		printf("  note: Execution and Static stalls are the static cost model's best case "
		       "for the estimated counts,\n  together %.1f%% of the cycles sampled: the code "
		       "ran faster than the model says it can\n  (Unexplained gain), so the counts "
		       "are over-estimated or the model is slower than this core;\n  read those two "
		       "lines as upper bounds (dcpiwhatcg(1), ACCURACY)\n",
		       pct(y->execution + y->static_stall, tot));
}

static int cmp_loss(const void *a, const void *b)
{
	const struct loss *x = a, *y = b;

	if (x->max != y->max)
		return x->max > y->max ? -1 : 1;
	if (x->min != y->min)
		return x->min > y->min ? -1 : 1;
	return x->img < y->img ? -1 : x->img > y->img;
}

static void text_losses(const struct wcg *t, size_t n)
{
	int k = t->kind;

	printf("\nProcedures losing most to %s (%c), min..max, and share of their samples:\n",
	       dcpi_stall_name(k), dcpi_stall_code(k));
	for (size_t i = 0; i < n; i++) {
		const struct loss *l = &t->loss[i];
		char a[64], x[32], y[32];

		snprintf(a, sizeof(a), "%s..%s", fig_str(t, l->min, FIG_DIGITS, x, sizeof(x)),
			 fig_str(t, l->max, FIG_DIGITS, y, sizeof(y)));
		printf("  %21s %5.1f%%..%5.1f%%  %s  %s\n", a, pct(l->min, l->samples),
		       pct(l->max, l->samples), cli_safe(l->proc),
		       cli_safe(report_base(image_name(t, l->img))));
	}
}

static void print_text(const struct wcg *t, size_t nloss)
{
	report_print_header(stdout, t->b.o.db, &t->b.r.set, t->total, &t->b.w);
	printf("\nWhere the %s went (%s samples), by dcpicalc's estimates.  Dynamic stalls are\n"
	       "split by POSSIBLE culprit as min..max: a stall with several candidates counts\n"
	       "towards each.  Total = execution + static + dynamic - gain + not analysed.\n",
	       t->b.r.cols->cycles_per_sample > 0 ? "cycles" : "samples", t->b.r.set.events[t->b.r.cols->time]);
	printf("==============================================================================\n");
	for (size_t i = 0; i < t->b.r.nimgs; i++)
		text_image(t, i);
	if (t->kind >= 0)
		text_losses(t, nloss);
}

static void json_num(struct dcpi_json *j, const char *key, double v)
{
	dcpi_json_key(j, key);
	dcpi_json_fixed(j, v, 2);
}

static void json_image(struct dcpi_json *j, const struct wcg *t, size_t i)
{
	const struct dcpi_stall_tally *y = &t->tally[i];
	double not = t->unanalysed[i] + y->unestimated, analysed = y->samples - not;

	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "image", image_name(t, i));
	json_num(j, "total", units(t, y->samples));
	json_num(j, "execution", units(t, y->execution));
	json_num(j, "static_stall", units(t, y->static_stall));
	json_num(j, "dynamic_stall", units(t, y->dyn.total));
	dcpi_json_key(j, "culprits");
	dcpi_json_arr_begin(j);
	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		char code[2] = { dcpi_stall_code(k), 0 };

		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "code", code);
		dcpi_json_key_str(j, "name", dcpi_stall_name(k));
		json_num(j, "min", units(t, y->dyn.min[k]));
		json_num(j, "max", units(t, y->dyn.max[k]));
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	json_num(j, "unexplained_stall", units(t, y->dyn.unexplained));
	json_num(j, "unexplained_gain", units(t, y->gain));
	json_num(j, "not_analysed", units(t, not));
	json_num(j, "sampling_error", units(t, sqrt(analysed > 0 ? analysed : 0)));
	json_num(j, "confident_percent", pct(y->conf_ok, analysed));
	dcpi_json_obj_end(j);
}

static void json_loss(struct dcpi_json *j, const struct wcg *t, const struct loss *l)
{
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "image", image_name(t, l->img));
	dcpi_json_key_str(j, "procedure", l->proc);
	json_num(j, "min", units(t, l->min));
	json_num(j, "max", units(t, l->max));
	json_num(j, "samples", l->samples);
	dcpi_json_obj_end(j);
}

static void print_json(const struct wcg *t, size_t nloss)
{
	struct dcpi_json *j = report_json_begin(t->b.o.db);

	report_json_header(j, &t->b.r.set, t->total, &t->b.w);
	dcpi_json_break(j);
	dcpi_json_key_str(j, "unit", t->b.r.cols->cycles_per_sample > 0 ? "cycles" : "samples");
	dcpi_json_key(j, "images");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < t->b.r.nimgs; i++) {
		dcpi_json_break(j);
		json_image(j, t, i);
	}
	dcpi_json_arr_end(j);
	if (t->kind >= 0) {
		char code[2] = { dcpi_stall_code(t->kind), 0 };

		dcpi_json_break(j);
		dcpi_json_key_str(j, "stall", code);
		dcpi_json_key(j, "procedures");
		dcpi_json_arr_begin(j);
		for (size_t i = 0; i < nloss; i++) {
			dcpi_json_break(j);
			json_loss(j, t, &t->loss[i]);
		}
		dcpi_json_arr_end(j);
	}
	dcpi_json_break(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

static void sort_losses(void *ctx)
{
	struct wcg *t = ctx;

	analyse(t);
	if (t->nloss)
		qsort(t->loss, t->nloss, sizeof(*t->loss), cmp_loss);
	t->nshow = t->nloss < t->n ? t->nloss : (size_t)t->n;
}

static void text(void *ctx)
{
	print_text(ctx, ((struct wcg *)ctx)->nshow);
}

static void json(void *ctx)
{
	print_json(ctx, ((struct wcg *)ctx)->nshow);
}

static void done(void *ctx)
{
	struct wcg *t = ctx;

	free(t->loss);
	free(t->tally);
	free(t->unanalysed);
}

int cmd_dcpiwhatcg(int argc, char **argv)
{
	static const struct report_kind k = { &cli, "nothing to say where cycles went", sort_losses,
					      text, json, NULL, done };
	static struct wcg t = { .kind = -1, .n = 20 };

	return report_main(&k, &t.b, &t, argc, argv);
}
