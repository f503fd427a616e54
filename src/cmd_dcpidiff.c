/* dcpidiff: two profile sets compared, by image, by procedure, or within
 * one procedure by source line, instruction or basic block: each side's
 * samples (or samples per second), the change and the ratio, whether the
 * change is more than sampling noise, and each side's share, the largest
 * changes first (DCPI's dcpidiff; the model is dcpi/diff.h). */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/blocks.h"
#include "dcpi/diff.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/procs.h"
#include "dcpi/select.h"
#include "report.h"

enum { OUT_TEXT, OUT_JSON, OUT_CSV };
enum { BY_IMAGE, BY_PROC, BY_INCLUSIVE, BY_SOURCE, BY_ASM, BY_BLOCK };
/* rows are (image, procedure): -i, IMAGE arguments, -inclusive */
#define BY_PROCS(c) ((c)->o.by == BY_PROC || (c)->o.by == BY_INCLUSIVE)
enum { PER_NONE = CLI_RATE_NONE, PER_SECOND = CLI_RATE_SECOND, PER_CPU = CLI_RATE_CPU };

struct opts {
	struct cli_common co;           /* -db -host -label -json -csv; images:
					   IMAGE... or PROCEDURE IMAGE */
	const char *side[2];            /* EPOCH[@HOST] */
	int by, bypid, out;
	struct report_compare cmp;   /* -event -keep -rate -shares */
};

struct side {
	struct report_side sel;         /* what the argument named */
	const char *host;
	struct dcpi_profset set;
	int col;                        /* the compared event's column */
	struct report_warnings w;
	struct dcpi_annot_image *img;   /* -source/-asm/-blocks */
	struct dcpi_annotation a;
	const char *proc;               /* the resolved name */
};

struct cmp {
	struct opts o;
	struct side s[2];
	struct dcpi_objcache *objs;
	struct dcpi_diff d;
	const char *const *heads;       /* label column names */
	size_t nheads;
	int failed;
};

enum { O_SOURCE = 256, O_ASM, O_BLOCKS, O_PID, O_INCLUSIVE };

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	switch (c) {
	case 'i': o->by = o->by >= BY_PROC ? o->by : BY_PROC; break;
	case O_SOURCE: o->by = BY_SOURCE; break;
	case O_ASM: o->by = BY_ASM; break;
	case O_BLOCKS: o->by = BY_BLOCK; break;
	case O_PID: o->bypid = 1; break;
	case O_INCLUSIVE: o->by = BY_INCLUSIVE; break;
	default: report_compare_option(&o->cmp, c, arg); break;
	}
}

static const struct option own_opts[] = {
	{ "i", no_argument, NULL, 'i' },
	{ "source", no_argument, NULL, O_SOURCE },
	{ "asm", no_argument, NULL, O_ASM },
	{ "blocks", no_argument, NULL, O_BLOCKS },
	{ "pid", no_argument, NULL, O_PID },
	{ "inclusive", no_argument, NULL, O_INCLUSIVE },
	REPORT_COMPARE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpidiff",
	.synopsis = "[options] EPOCH_A EPOCH_B [IMAGE...]\n"
		    "       dcpidiff [options] -source|-asm|-blocks EPOCH_A EPOCH_B PROCEDURE IMAGE",
	.about = "Two profile sets compared: each side's samples, the change (B - A) and the\n"
		 "ratio (B / A), whether the change is more than sampling noise (exact Poisson\n"
		 "test, 95%), and each side's share of its own samples; largest change first.\n"
		 "With IMAGEs, their procedures (as dcpiprof IMAGE).  EPOCH is an epoch name,\n"
		 "'latest', 'all' or a time (last-24h, 03:00..04:00), optionally @HOST, then\n"
		 "optionally /pid=N (one process of dcpid -bypid) and K=V labels, comma-separated:\n"
		 "dcpidiff last-7d/pid=9420 last-7d/pid=9521 nightly compares two runs.\n",
	.common = CLI_DB | CLI_HOST | CLI_LABEL | CLI_JSON | CLI_CSV,
	.host_help = "  -host NAME         the host of both sides (default: this one; 'all' sums)\n",
	.help = "  -i                 by procedure (default: by image)\n"
		"  -source            within PROCEDURE: by source line\n"
		"  -asm               within PROCEDURE: by instruction address\n"
		"  -blocks            within PROCEDURE: by basic block\n"
		"  -pid               keep per-process profiles (dcpid -bypid) apart\n"
		"  -inclusive         procedures by inclusive samples (in them and below), from\n"
		"                     both sides' call stacks; shares are of the samples with stacks\n"
		"  -event NAME        the event compared (default: A's first)\n"
		"  -rate second|cpu   compare samples per second of epoch, or per CPU-second\n"
		"                     monitored (when the sides' lengths differ)\n"
		"  -shares            compare (test and order by) shares instead of samples\n"
		"  -keep N            only the first N rows\n",
	.shortopts = "i", .opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	o->cmp.keep = ULLONG_MAX;
	cli_parse(&cli, argc, argv, &o->co, o);
	o->out = o->co.json ? OUT_JSON : o->co.csv ? OUT_CSV : o->out;
	if (argc - optind < 2)
		cli_usage_error("two sides to compare: EPOCH_A EPOCH_B");
	o->side[0] = argv[optind++];
	o->side[1] = argv[optind++];
	for (; optind < argc; optind++) {
		if (o->co.nimages == CLI_MAX_IMAGES)
			cli_usage_error("at most %d images", CLI_MAX_IMAGES);
		o->co.images[o->co.nimages++] = argv[optind];
	}
	if (o->by >= BY_SOURCE && o->co.nimages != 2)
		cli_usage_error("-source, -asm and -blocks compare one procedure: PROCEDURE IMAGE");
	if (o->by >= BY_SOURCE && o->out == OUT_CSV)
		cli_usage_error("-csv is for images and procedures; use -json");
	if (o->cmp.per && o->cmp.shares)
		cli_usage_error("-rate and -shares compare different things: choose one");
	if (o->by == BY_IMAGE && o->co.nimages) /* as dcpiprof IMAGE: its procedures */
		o->by = BY_PROC;
	if (o->by == BY_INCLUSIVE && (o->co.nimages || o->bypid))
		cli_usage_error("-inclusive compares every procedure of the stacks: no IMAGE or -pid");
}

/* ---- the two sides ----------------------------------------------------------- */

/* A side: EPOCH[@HOST][/pid=N,K=V...] (report_side_load). */
static void load_side(struct cmp *c, int k)
{
	struct side *s = &c->s[k];

	report_side_load(c->o.co.db, c->o.side[k], c->o.co.host, c->o.co.label, k ? "B" : "A",
			 &s->sel, &s->set);
	s->host = s->sel.host;
	if (s->set.nevents == 0)
		cli_die("%s %s: no samples", k ? "B" : "A", c->o.side[k]);
	report_check_set(&s->w, &s->set);
}

static int event_col(const struct side *s, const char *name, const char *which)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	int col = dcpi_profset_event(&s->set, name);

	if (col >= 0)
		return col;
	for (unsigned e = 0; e < s->set.nevents; e++)
		dcpi_buf_printf(&b, "%s%s", e ? ", " : "", s->set.events[e]);
	cli_die("event '%s' is not in %s's profiles (they have: %s): the two sides sampled "
		"different events; name one both have with -event", name, which,
		b.len ? (char *)b.data : "none");
}

static void choose_event(struct cmp *c)
{
	const char *name = c->o.cmp.event ? c->o.cmp.event : c->s[0].set.events[0];

	c->s[0].col = event_col(&c->s[0], name, "A");
	c->s[1].col = event_col(&c->s[1], name, "B");
	if (c->s[0].set.periods[c->s[0].col] != c->s[1].set.periods[c->s[1].col])
		report_warn(&c->s[1].w, "%s was sampled every %" PRIu64 " in A and every %" PRIu64
			    " in B: shares compare, raw counts do not", name,
			    c->s[0].set.periods[c->s[0].col], c->s[1].set.periods[c->s[1].col]);
}

static double side_cpu_seconds(const struct side *s)
{
	return dcpi_profset_cpu_seconds(&s->set, (unsigned)s->col);
}

/* What an amount is per: 1 (samples), or each side's seconds of epoch or
 * CPU-seconds; and a note when plain samples compare sides of different
 * lengths. */
static void choose_exposure(struct cmp *c)
{
	static const char *const what[] = { "", "seconds of epoch", "CPU-seconds" };

	c->d.by_share = c->o.cmp.shares;
	for (int k = 0; k < 2 && c->o.cmp.per; k++) {
		const struct side *s = &c->s[k];
		double x = c->o.cmp.per == PER_SECOND ? s->set.seconds : side_cpu_seconds(s);

		if (!(x > 0))
			cli_die("%s %s: its statistics give no %s (-rate %s needs them)", k ? "B" : "A",
				c->o.side[k], what[c->o.cmp.per], c->o.cmp.per == PER_SECOND ? "second" : "cpu");
		c->d.expo[k] = x;
	}
}

/* The sides' lengths differ by more than 10%: plain samples are totals over
 * different times. */
static int lengths_differ(const struct cmp *c)
{
	double a = c->s[0].set.seconds, b = c->s[1].set.seconds;

	return a > 0 && b > 0 && fabs(a - b) > 0.1 * fmax(a, b);
}

/* ---- images and procedures --------------------------------------------------------- */

static void add_table(struct cmp *c, int k)
{
	struct side *s = &c->s[k];
	struct dcpi_procs_opts po = { c->o.by == BY_PROC, c->o.bypid, c->objs, NULL };
	struct dcpi_selection sel;
	struct dcpi_procs t;
	char pid[32];

	if (dcpi_select(&s->set, c->o.co.images, c->o.co.nimages, &sel) ||
	    dcpi_procs_build(&t, &s->set, sel.chosen, c->o.co.nimages > 0, &po))
		cli_die("%s", dcpi_errmsg());
	for (size_t i = 0; i < t.nnotes; i++)
		report_warn(&s->w, "%s", t.notes[i]);
	for (size_t i = 0; i < c->o.co.nimages; i++)
		if (!sel.matched[i])
			report_warn(&s->w, "no profile of image '%s' on this side", c->o.co.images[i]);
	for (size_t i = 0; i < t.n; i++) {
		const struct dcpi_proc_row *r = t.rows[i];
		const char *l[3] = { r->image, r->proc, NULL };
		size_t nl = c->o.by == BY_PROC ? 2 : 1;

		if (c->o.bypid) {
			snprintf(pid, sizeof(pid), "%" PRId64, r->pid);
			l[nl++] = r->pid >= 0 ? pid : "";
		}
		if (r->c[s->col] && dcpi_diff_add(&c->d, k, l, nl, r->c[s->col]))
			cli_die("%s", dcpi_errmsg());
	}
	c->failed |= t.failed_chosen;
	dcpi_procs_free(&t);
	dcpi_selection_free(&sel);
}

/* Side k's procedures by inclusive samples, from its call stacks; the
 * shares are of the samples with stacks (rows overlap: a caller holds its
 * callees' samples). */
static void add_inclusive(struct cmp *c, int k)
{
	struct side *s = &c->s[k];
	struct dcpi_callgraph g;
	char what[300];

	snprintf(what, sizeof(what), "%s %s", k ? "B" : "A", c->o.side[k]);
	report_side_callgraph(c->o.co.label, &s->sel, &s->set, c->objs, s->col, what, &s->w, &g);
	for (size_t i = 0; i < g.nprocs; i++) {
		const char *l[2] = { g.procs[i].image, g.procs[i].proc };

		if (g.procs[i].incl[s->col] && dcpi_diff_add(&c->d, k, l, 2, g.procs[i].incl[s->col]))
			cli_die("%s", dcpi_errmsg());
	}
	if (k)
		c->d.total_b = g.total[s->col];
	else
		c->d.total_a = g.total[s->col];
	dcpi_callgraph_free(&g);
}

/* ---- within one procedure ------------------------------------------------------ */

static void annotate_side(struct cmp *c, int k)
{
	struct side *s = &c->s[k];
	struct dcpi_annot_opts ao = { NULL, NULL, NULL, 1, c->objs };
	const struct dcpi_sym *cands[1];
	struct dcpi_selection sel;
	size_t *idx, n = 0, nc;
	uint64_t lo, hi;
	int err;

	if (dcpi_select(&s->set, &c->o.co.images[1], 1, &sel))
		cli_die("%s", dcpi_errmsg());
	idx = calloc(s->set.n ? s->set.n : 1, sizeof(*idx));
	if (!idx)
		cli_die("out of memory");
	for (size_t i = 0; i < s->set.n; i++)
		if (sel.chosen[i] && s->set.v[i].prof.kind != DCPI_IMAGE_ANON &&
		    s->set.v[i].prof.kind != DCPI_IMAGE_UNKNOWN)
			idx[n++] = i;
	dcpi_selection_free(&sel);
	err = n ? dcpi_annot_image_open(&s->set, idx, n, &ao, &s->img) : -1;
	free(idx);
	if (err)
		cli_die("%s: %s", k ? "B" : "A", n ? dcpi_errmsg() : "no profile of that image");
	for (size_t i = 0; i < dcpi_annot_image_nnotes(s->img); i++)
		report_warn(&s->w, "%s", dcpi_annot_image_note(s->img, i));
	if (dcpi_annot_resolve(dcpi_annot_image_symtab(s->img), c->o.co.images[0], &lo, &hi,
			       &s->proc, cands, 1, &nc) ||
	    dcpi_annotate(s->img, lo, hi, &s->a))
		cli_die("%s: %s", k ? "B" : "A", dcpi_errmsg());
	for (size_t i = 0; i < s->a.nnotes; i++)
		report_warn(&s->w, "%s", s->a.notes[i]);
}

static void add_label(struct cmp *c, int k, const char *l0, const char *l1, uint64_t n)
{
	const char *l[2] = { l0, l1 };

	if (n && dcpi_diff_add(&c->d, k, l, 2, n))
		cli_die("%s", dcpi_errmsg());
}

static void add_lines(struct cmp *c, int k)
{
	const struct side *s = &c->s[k];
	char line[32];

	for (size_t i = 0; i < s->a.nlines; i++) {
		const struct dcpi_annot_line *ln = &s->a.lines[i];

		snprintf(line, sizeof(line), "%u", ln->line);
		add_label(c, k, ln->file, ln->line ? line : "??", ln->counts[s->col]);
	}
	for (size_t i = 0; i < s->a.nstrays; i++) /* kept: counted, never dropped */
		add_label(c, k, "(inside an instruction)", "", s->a.strays[i].counts[s->col]);
}

static void insn_text(const struct dcpi_annot_insn *r, int has_code, char *buf, size_t len)
{
	if (has_code)
		snprintf(buf, len, "%s%s%s", r->insn.mnemonic, r->insn.operands[0] ? " " : "",
			 r->insn.operands);
	else
		snprintf(buf, len, "(code not available)");
}

static void add_insns(struct cmp *c, int k)
{
	const struct side *s = &c->s[k];
	char addr[32], text[256];

	for (size_t i = 0; i < s->a.ninsns; i++) {
		const struct dcpi_annot_insn *r = &s->a.insns[i];

		snprintf(addr, sizeof(addr), "0x%" PRIx64, r->insn.vaddr);
		insn_text(r, s->a.has_code, text, sizeof(text));
		add_label(c, k, addr, text, r->counts[s->col]);
	}
	for (size_t i = 0; i < s->a.nstrays; i++) {
		snprintf(addr, sizeof(addr), "0x%" PRIx64, s->a.strays[i].vaddr);
		add_label(c, k, addr, "(inside an instruction)", s->a.strays[i].counts[s->col]);
	}
}

static void add_blocks(struct cmp *c, int k)
{
	const struct side *s = &c->s[k];
	char range[64], what[64];
	size_t *st, nb;

	if (dcpi_blocks_split(&s->a, &st, &nb))
		cli_die("%s", dcpi_errmsg());
	for (size_t b = 0; b < nb; b++) {
		size_t end = b + 1 < nb ? st[b + 1] : s->a.ninsns;
		const struct dcpi_annot_insn *last = &s->a.insns[end - 1];
		uint64_t n = 0;

		for (size_t i = st[b]; i < end; i++)
			n += s->a.insns[i].counts[s->col];
		snprintf(range, sizeof(range), "0x%" PRIx64 "-0x%" PRIx64,
			 s->a.insns[st[b]].insn.vaddr, last->insn.vaddr + last->insn.size);
		snprintf(what, sizeof(what), "%zu instructions", end - st[b]);
		add_label(c, k, range, what, n);
	}
	free(st);
	for (size_t i = 0; i < s->a.nstrays; i++) /* kept: counted, never dropped */
		add_label(c, k, "(inside an instruction)", "", s->a.strays[i].counts[s->col]);
}

static void compare_procedure(struct cmp *c)
{
	static const char *const src[] = { "file", "line" }, *const asmh[] = { "address",
		"instruction" }, *const blk[] = { "block", "size" };
	const struct dcpi_profile *pa, *pb;

	for (int k = 0; k < 2; k++) {
		annotate_side(c, k);
		if (c->o.by == BY_SOURCE)
			add_lines(c, k);
		else if (c->o.by == BY_ASM)
			add_insns(c, k);
		else
			add_blocks(c, k);
	}
	pa = dcpi_annot_image_profile(c->s[0].img);
	pb = dcpi_annot_image_profile(c->s[1].img);
	if (c->o.by != BY_SOURCE && !dcpi_profile_same_image(pa, pb))
		report_warn(&c->s[1].w, "A and B ran different builds of %s: instructions are "
			    "matched by address, which a rebuild moves; compare -source", pb->path);
	c->heads = c->o.by == BY_SOURCE ? src : c->o.by == BY_ASM ? asmh : blk;
	c->nheads = 2;
}

/* ---- output --------------------------------------------------------------------- */

static void print_side_head(const struct cmp *c, int k, FILE *f)
{
	const struct side *s = &c->s[k];

	fprintf(f, "%s: epoch%s", k ? "B" : "A", s->set.nepochs > 1 ? "s" : "");
	for (size_t i = 0; i < s->set.nepochs; i++)
		fprintf(f, " %s", cli_safe(s->set.epochs[i]));
	fprintf(f, ", host%s", s->set.nhosts > 1 ? "s" : "");
	for (size_t i = 0; i < s->set.nhosts; i++)
		fprintf(f, " %s", cli_safe(s->set.hosts[i]));
	fprintf(f, ": %" PRIu64 " samples of %s", k ? c->d.total_b : c->d.total_a,
		cli_safe(s->set.events[s->col]));
	if (s->proc)
		fprintf(f, " in %s", cli_safe(s->proc));
	if (s->set.seconds > 0)
		fprintf(f, ", %.0f s", s->set.seconds);
	if (side_cpu_seconds(s) > 0)
		fprintf(f, ", %.1f CPU-s", side_cpu_seconds(s));
	fprintf(f, "\n");
	report_warn_print(&s->w, k ? "B: " : "A: ");
}

static const char *const per_names[] = { "", " per second of epoch", " per CPU-second" };

static void print_explanation(const struct cmp *c)
{
	if (c->o.cmp.shares)
		printf("\nA and B are samples of %s; A%% and B%% each side's share of its own samples;\n"
		       "delta pp is B%% - A%% and ratio B%% / A%% (new: only B has it).  sig: the\n"
		       "change in share is more than sampling noise (exact Poisson test, 95%%).\n"
		       "Largest change in share first.\n", cli_safe(c->s[0].set.events[c->s[0].col]));
	else
		printf("\nA and B are samples of %s%s;\ndelta is B - A and ratio B / A (new: "
		       "only B has it).  sig: the change is more\nthan sampling noise (exact Poisson "
		       "test, 95%%; how runs vary is dcpistats' question).\nA%% and B%% are each "
		       "side's share of its own samples.  Largest change first.\n",
		       cli_safe(c->s[0].set.events[c->s[0].col]), per_names[c->o.cmp.per]);
	if (c->o.by == BY_INCLUSIVE)
		printf("Inclusive: a procedure's samples are those whose call stack holds it (in it\n"
		       "and below); the shares are of each side's samples with stacks, and rows\n"
		       "overlap (a caller holds its callees' samples).\n");
	if (!c->o.cmp.per && !c->o.cmp.shares && lengths_differ(c))
		printf("note: A covers %.0f s and B %.0f s: A and B are totals over different "
		       "times;\n      -rate second compares samples per second\n",
		       c->s[0].set.seconds, c->s[1].set.seconds);
}

/* Samples as integers; rates with three significant digits or more (a
 * rate below 0.001 prints as 0.000); 0 without a sign. */
static void print_amount(double v, int per, int sign)
{
	double m = fabs(v);
	int prec = !per ? 0 : m >= 100 ? 1 : m >= 10 ? 2 : 3;

	if (v == 0)
		printf("%10s ", "0");
	else
		printf(sign ? "%+10.*f " : "%10.*f ", prec, v);
}

static void print_text(const struct cmp *c, size_t n)
{
	static const char *const img[] = { "image" }, *const proc[] = { "procedure", "image" };
	const char *const *h = c->heads ? c->heads : BY_PROCS(c) ? proc : img;
	size_t nh = c->heads ? c->nheads : BY_PROCS(c) ? 2 : 1;

	printf("Database: %s\n", cli_safe(c->o.co.db));
	print_side_head(c, 0, stdout);
	print_side_head(c, 1, stdout);
	print_explanation(c);
	printf("==============================================================================\n");
	printf("%10s %10s %10s %7s %7s %7s %8s %3s ", "A", "B", "delta", "ratio", "A%", "B%",
	       "delta pp", "sig");
	printf(nh > 1 ? " %-40s %s" : " %s", h[0], nh > 1 ? h[1] : "");
	printf("%s\n", c->o.bypid && c->o.by <= BY_PROC ? "  pid" : "");
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_diff_row *r = c->d.rows[i];

		print_amount(r->ra, c->o.cmp.per, 0);
		print_amount(r->rb, c->o.cmp.per, 0);
		print_amount(r->delta, c->o.cmp.per, 1);
		if (r->has_ratio)
			printf("%7.2f ", c->o.cmp.shares ? r->share_ratio : r->ratio);
		else
			printf("%7s ", "new");
		printf("%6.2f%% %6.2f%% %+8.2f %3s ", r->pa, r->pb, r->delta_pp,
		       r->significant ? "yes" : "no");
		if (nh > 1 && !c->heads) /* (image, procedure): shown as dcpiprof does */
			printf(" %-40s %s", cli_safe(r->label[1]), cli_safe(r->label[0]));
		else if (nh > 1)
			printf(" %-40s %s", cli_safe(r->label[0]), cli_safe(r->label[1]));
		else
			printf(" %s", cli_safe(r->label[0]));
		if (c->o.bypid && c->o.by <= BY_PROC && r->label[nh] && *r->label[nh])
			printf("  %s", r->label[nh]);
		printf("\n");
	}
}

static void json_side(struct dcpi_json *j, const struct cmp *c, int k)
{
	const struct side *s = &c->s[k];

	dcpi_json_break(j);
	dcpi_json_key(j, k ? "b" : "a");
	dcpi_json_obj_begin(j);
	dcpi_json_key_strs(j, "epochs", (const char *const *)s->set.epochs, s->set.nepochs);
	dcpi_json_key_strs(j, "hosts", (const char *const *)s->set.hosts, s->set.nhosts);
	dcpi_json_key_u64(j, "total", k ? c->d.total_b : c->d.total_a);
	dcpi_json_key_u64(j, "period", s->set.periods[s->col]);
	dcpi_json_key_fixed(j, "seconds", s->set.seconds > 0, s->set.seconds, 0);
	dcpi_json_key_fixed(j, "cpu_seconds", side_cpu_seconds(s) > 0, side_cpu_seconds(s), 3);
	if (s->proc)
		dcpi_json_key_str(j, "procedure", s->proc);
	dcpi_json_key_strs(j, "warnings", (const char *const *)s->w.v, s->w.n);
	dcpi_json_obj_end(j);
}

static const char *const mode_names[] = { "images", "procedures", "inclusive", "source", "asm",
					   "blocks" };

static void json_row(struct dcpi_json *j, const struct cmp *c, const struct dcpi_diff_row *r)
{
	static const char *const img[] = { "image", "pid" }, *const proc[] = { "image",
		"procedure", "pid" };

	dcpi_json_break(j);
	dcpi_json_obj_begin(j);
	if (c->heads) {
		dcpi_json_key_str(j, c->heads[0], r->label[0]);
		dcpi_json_key_str(j, c->heads[1], r->label[1]);
	} else {
		const char *const *h = BY_PROCS(c) ? proc : img;
		size_t nl = (BY_PROCS(c) ? 2 : 1) + (size_t)c->o.bypid;

		/* procedure mode labels are (image, procedure[, pid]) */
		for (size_t i = 0; i < nl; i++)
			dcpi_json_key_str(j, h[i], r->label[i] && *r->label[i] ? r->label[i] : NULL);
	}
	dcpi_json_key_u64(j, "a", r->a);
	dcpi_json_key_u64(j, "b", r->b);
	if (c->o.cmp.per) {
		dcpi_json_key_fixed(j, "rate_a", 1, r->ra, 4);
		dcpi_json_key_fixed(j, "rate_b", 1, r->rb, 4);
	}
	dcpi_json_key_fixed(j, "delta", 1, r->delta, 4);
	dcpi_json_key_fixed(j, "ratio", r->has_ratio, r->ratio, 4);
	dcpi_json_key_fixed(j, "share_a", 1, r->pa, 4);
	dcpi_json_key_fixed(j, "share_b", 1, r->pb, 4);
	dcpi_json_key_fixed(j, "delta_pp", 1, r->delta_pp, 4);
	dcpi_json_key_fixed(j, "share_ratio", r->has_ratio, r->share_ratio, 4);
	dcpi_json_key_fixed(j, "p", 1, r->p, 6);
	dcpi_json_key(j, "significant");
	dcpi_json_bool(j, r->significant);
	dcpi_json_obj_end(j);
}

static void print_json(const struct cmp *c, size_t n)
{
	struct dcpi_json *j = report_json_begin(c->o.co.db);

	dcpi_json_key_str(j, "mode", mode_names[c->o.by]);
	dcpi_json_key_str(j, "event", c->s[0].set.events[c->s[0].col]);
	dcpi_json_key_str(j, "compare", c->o.cmp.shares ? "shares" : c->o.cmp.per == PER_SECOND ?
			  "per-second" : c->o.cmp.per == PER_CPU ? "per-cpu-second" : "samples");
	dcpi_json_key_str(j, "test", "poisson-exact-95");
	json_side(j, c, 0);
	json_side(j, c, 1);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		json_row(j, c, c->d.rows[i]);
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

static void print_csv(const struct cmp *c, size_t n)
{
	for (int k = 0; k < 2; k++)
		report_warn_print(&c->s[k].w, k ? "B: " : "A: ");
	printf("image,%spid,a,b,%sdelta,ratio,share_a,share_b,delta_pp,p,significant\n",
	       BY_PROCS(c) ? "procedure," : "", c->o.cmp.per ? "rate_a,rate_b," : "");
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_diff_row *r = c->d.rows[i];
		size_t nl = BY_PROCS(c) ? 2 : 1;

		for (size_t l = 0; l < nl; l++) {
			report_csv_field(stdout, r->label[l]);
			putchar(',');
		}
		printf("%s,%" PRIu64 ",%" PRIu64 ",", c->o.bypid && r->label[nl] ? r->label[nl] : "",
		       r->a, r->b);
		if (c->o.cmp.per)
			printf("%.4f,%.4f,", r->ra, r->rb);
		printf("%.4f,", r->delta);
		if (r->has_ratio)
			printf("%.4f", r->ratio);
		printf(",%.4f,%.4f,%.4f,%.6f,%s\n", r->pa, r->pb, r->delta_pp, r->p,
		       r->significant ? "yes" : "no");
	}
}

/* ---- main ----------------------------------------------------------------------- */

int cmd_dcpidiff(int argc, char **argv)
{
	static struct cmp c;
	size_t n;

	parse_options(&c.o, argc, argv);
	c.objs = report_objcache(c.o.co.db);
	dcpi_diff_init(&c.d);
	load_side(&c, 0);
	load_side(&c, 1);
	choose_event(&c);
	choose_exposure(&c);
	if (c.o.by >= BY_SOURCE) {
		compare_procedure(&c);
	} else if (c.o.by == BY_INCLUSIVE) {
		add_inclusive(&c, 0);
		add_inclusive(&c, 1);
	} else {
		add_table(&c, 0);
		add_table(&c, 1);
	}
	for (int k = 0; k < 2; k++)
		report_warn_finish(&c.s[k].w);
	dcpi_diff_finish(&c.d);
	n = c.d.n < c.o.cmp.keep ? c.d.n : (size_t)c.o.cmp.keep;
	if (c.o.out == OUT_JSON)
		print_json(&c, n);
	else if (c.o.out == OUT_CSV)
		print_csv(&c, n);
	else
		print_text(&c, n);
	if (c.failed)
		cli_warn("symbols of a named image could not be read (see the warnings)");
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	return c.failed;
}
