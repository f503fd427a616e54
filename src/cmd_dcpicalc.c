/* dcpicalc: one procedure's control-flow graph with estimated block
 * frequencies, cycles per instruction and stalls, as DCPI's dcpicalc
 * printed them; the estimation is libdcpi's (calc.h). */
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
#include "dcpi/dot.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/source.h"
#include "dcpi/stall.h"
#include "render.h"
#include "report.h"

enum { MODE_AUTO = -1 };

struct opts {
	struct cli_common co;        /* -db -epoch -host -label -json */
	const char *proc, *image;
	const char *svg, *pdf;       /* -svg FILE, -pdf FILE */
	double cutoff;
	int exact, mode, dot;
};

struct calc {
	struct opts o;
	struct dcpi_profset set;
	struct dcpi_annot_image *img;
	struct dcpi_annotation a;
	struct dcpi_source_opts src;
	const char *name;
	struct dcpi_calc_cols cols;
	struct dcpi_calc c;
	struct report_warnings w;
	uint64_t *exact;             /* -exact: per annotated instruction */
};

enum { O_CUTOFF = 256, O_MODE, O_EXACT, O_DOT, O_SVG, O_PDF };

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;
	char *end;

	switch (c) {
	case O_CUTOFF:
		o->cutoff = strtod(arg, &end);
		if (end == arg || *end || !(o->cutoff >= 0 && o->cutoff <= 100))
			cli_usage_error("-cutoff: want a percentage 0-100, not '%s'", cli_safe(arg));
		break;
	case O_MODE:
		if (!strcmp(arg, "retired"))
			o->mode = DCPI_CALC_RETIRED;
		else if (!strcmp(arg, "time"))
			o->mode = DCPI_CALC_TIME;
		else
			cli_usage_error("-mode: want 'retired' or 'time', not '%s'", cli_safe(arg));
		break;
	case O_EXACT: o->exact = 1; break;
	case O_DOT: o->dot = 1; break;
	case O_SVG: o->svg = arg; break;
	case O_PDF: o->pdf = arg; break;
	}
}

static const struct option own_opts[] = {
	{ "cutoff", required_argument, NULL, O_CUTOFF },
	{ "mode", required_argument, NULL, O_MODE },
	{ "exact", no_argument, NULL, O_EXACT },
	{ "dot", no_argument, NULL, O_DOT },
	{ "svg", required_argument, NULL, O_SVG },
	{ "pdf", required_argument, NULL, O_PDF },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpicalc", .synopsis = "[options] PROCEDURE IMAGE",
	.about = "One procedure's basic blocks with estimated execution counts, and cycles\n"
		 "per instruction, from its samples.\n",
	.common = CLI_SELECT | CLI_JSON,
	.help = "  -cutoff PCT        list the instructions only of blocks holding at least PCT%\n"
		"                     of the procedure's samples (default 0: every block)\n"
		"  -mode MODE         'retired' (an instructions event) or 'time' (cycles or a\n"
		"                     time event); default: retired when sampled, else time\n"
		"  -exact             exact counts recorded by dcpix(1) instead of estimates\n",
	.after = "  -dot               the annotated graph as Graphviz DOT\n"
		 "  -svg FILE          the graph drawn by Graphviz's dot into FILE (SVG)\n"
		 "  -pdf FILE          the same as PDF\n",
	.footer = "PROCEDURE and IMAGE take every form dcpilist(1) takes.\n",
	.opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	o->mode = MODE_AUTO;
	cli_parse(&cli, argc, argv, &o->co, o);
	if (o->co.json + o->dot + !!o->svg + !!o->pdf > 1)
		cli_usage_error("-json, -dot, -svg and -pdf: one at a time");
	if (argc - optind != 2)
		cli_usage_error("want PROCEDURE and IMAGE");
	o->proc = argv[optind];
	o->image = argv[optind + 1];
}

static void choose_columns(struct calc *k)
{
	report_calc_cols(&k->set, k->o.exact ? (int)DCPI_CALC_EXACT : k->o.mode, &k->cols);
}

static uint64_t block_samples(const struct calc *k, size_t b, unsigned col)
{
	const struct dcpi_cfg_block *bl = &k->c.cfg.blocks[b];
	uint64_t s = 0;

	for (size_t i = bl->first; i < bl->first + bl->ninsns; i++)
		s += k->a.insns[i].counts[col];
	return s;
}

/* Share of the procedure's samples (of the estimating event) in block b. */
static double block_pct(const struct calc *k, size_t b)
{
	int col = k->cols.mode == DCPI_CALC_RETIRED ? k->cols.retired : k->cols.time;

	if (col < 0)
		col = 0;
	return report_pct(block_samples(k, b, (unsigned)col), k->a.total[col]);
}

static const char *node_name(const struct calc *k, size_t v, char *buf, size_t len)
{
	if (v == DCPI_CFG_UNKNOWN(&k->c.cfg))
		return "unknown";
	if (v == DCPI_CFG_OUTSIDE(&k->c.cfg))
		return "outside";
	snprintf(buf, len, "B%zu", v);
	return buf;
}

static const char *mode_name(enum dcpi_calc_mode m)
{
	return m == DCPI_CALC_RETIRED ? "retired" : m == DCPI_CALC_TIME ? "time" : "exact";
}

static const char *edge_kind(enum dcpi_cfg_edge_kind kd)
{
	static const char *const n[] = { "fall", "jump", "table", "unknown", "entry", "exit" };

	return n[kd];
}

/* ---- text --------------------------------------------------------------------------- */

/* A measured cpi (or a stall, to the place of the cpi it is part of) to
 * the digits its samples and count carry: 0 (no samples) as 0. */
static void print_cpi(double v, double quantum)
{
	char buf[32];

	printf(" %6s", v == 0 && quantum == 0 ? "0" : dcpi_quantum_str(v, quantum, 2, buf,
									    sizeof(buf)));
}

/* A block's cpi below its best case says that its count is too high or
 * the cost model too slow for this core: marked '!', and said once. */
static int below_best(const struct dcpi_calc_block *cb)
{
	return cb->cpi >= 0 && cb->best_cpi > 0 && cb->cpi < cb->best_cpi - 0.005;
}

/* What kept a block's confidence from H, as words: "few,skid"; "" for none. */
static const char *why_words(unsigned why, char *buf, size_t len)
{
	static const struct { unsigned bit; const char *word; } w[] = {
		{ DCPI_CALC_WHY_FEW, "few" }, { DCPI_CALC_WHY_STALL, "stall" },
		{ DCPI_CALC_WHY_SKID, "skid" }, { DCPI_CALC_WHY_MOVED, "moved" },
		{ DCPI_CALC_WHY_GRAPH, "graph" }, { DCPI_CALC_WHY_TIMER, "timer" },
		{ DCPI_CALC_WHY_RAN, "ran" }, { DCPI_CALC_WHY_PEAK, "peak" },
	};
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if ((why & w[i].bit) && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", w[i].word);
	return buf;
}

static void print_block_row(const struct calc *k, size_t b)
{
	const struct dcpi_cfg_block *bl = &k->c.cfg.blocks[b];
	const struct dcpi_calc_block *cb = &k->c.blocks[b];
	char f[32], w[80];

	printf("B%-4zu 0x%-10" PRIx64 " %5zu", b, bl->start, bl->ninsns);
	for (unsigned e = 0; e < k->set.nevents; e++)
		printf(" %10" PRIu64, block_samples(k, b, e));
	printf(" %12s %c", dcpi_block_count_str(cb, f, sizeof(f)), cb->conf);
	printf(" %6.2f", cb->best_cpi);
	print_cpi(cb->cpi, dcpi_digits_quantum(cb->cpi, cb->cpi_digits));
	putchar(below_best(cb) ? '!' : ' ');
	printf(" %-10s C%zu%s", dcpi_cost_bound_name(&cb->cost), bl->cls,
	       bl->reachable ? "" : " unreachable");
	if (cb->why && cb->conf != 'H' && cb->conf != 'E')
		printf(" (%s)", why_words(cb->why, w, sizeof(w)));
	putchar('\n');
}

static void print_edges_of(const struct calc *k, size_t v)
{
	size_t n, e0 = dcpi_cfg_out_edges(&k->c.cfg, v, &n);
	char a[32], b[32], f[32];

	for (size_t e = e0; e < e0 + n; e++) {
		const struct dcpi_cfg_edge *ge = &k->c.cfg.edges[e];
		const struct dcpi_calc_edge *ce = &k->c.edges[e];

		printf("  %-8s -> %-8s %-7s %12s %c", node_name(k, ge->from, a, sizeof(a)),
		       node_name(k, ge->to, b, sizeof(b)), edge_kind(ge->kind),
		       dcpi_edge_count_str(ce, f, sizeof(f)), ce->conf);
		if (ce->prob >= 0)
			printf(" %6.3f\n", ce->prob);
		else
			printf(" %6s\n", "-");
	}
}

static void print_insns(const struct calc *k, size_t b)
{
	const struct dcpi_cfg_block *bl = &k->c.cfg.blocks[b];

	const struct dcpi_calc_block *cb = &k->c.blocks[b];
	char f[32], q[32];

	printf("\nB%zu  0x%" PRIx64 "-0x%" PRIx64 "  freq %s (%c)  best-case cpi %.2f", b,
	       bl->start, bl->end, dcpi_block_count_str(cb, f, sizeof(f)), cb->conf, cb->best_cpi);
	if (cb->cpi >= 0)
		printf("  actual cpi %s%s",
		       dcpi_quantum_str(cb->cpi, dcpi_digits_quantum(cb->cpi, cb->cpi_digits), 2, q,
					sizeof(q)),
		       below_best(cb) ? " (below the best case: see '!')" : "");
	printf("\n");
	for (size_t i = bl->first; i < bl->first + bl->ninsns; i++) {
		const struct dcpi_annot_insn *r = &k->a.insns[i];
		const struct dcpi_calc_insn *ci = &k->c.insns[i];
		double quantum = dcpi_digits_quantum(ci->cpi, ci->digits);

		for (unsigned e = 0; e < k->set.nevents; e++)
			printf("%10" PRIu64 " ", r->counts[e]);
		printf("%6.2f", ci->best);
		print_cpi(ci->cpi, quantum);
		print_cpi(ci->stall, quantum);
		printf("  0x%-10" PRIx64 " %-7s %s\n", r->insn.vaddr, r->insn.mnemonic,
		       cli_safe(r->insn.operands));
	}
}

/* Time samples made cycles by the clock rate in the epoch's statistics. */
static int clock_converted(const struct calc *k)
{
	return k->c.mode == DCPI_CALC_TIME && k->c.absolute && k->set.stats.clock_khz &&
	       k->cols.time >= 0 && dcpi_profset_event(&k->set, "cycles") < 0 &&
	       dcpi_profset_event(&k->set, "cpu-cycles") < 0;
}

static void print_intro(const struct calc *k)
{
	const struct dcpi_calc *c = &k->c;

	printf("\nProcedure: %s\nImage: %s\nRange: 0x%" PRIx64 "-0x%" PRIx64
	       " (%zu instructions, %zu blocks, %zu classes)\n",
	       k->name ? cli_safe(k->name) : "(address range)",
	       cli_safe(dcpi_annot_image_profile(k->img)->path), k->a.lo, k->a.hi, k->a.ninsns,
	       c->cfg.nblocks, c->cfg.nclasses);
	for (size_t i = 0; i < dcpi_annot_image_nnotes(k->img); i++)
		printf("note: %s\n", cli_safe(dcpi_annot_image_note(k->img, i)));
	for (size_t i = 0; i < k->a.nnotes; i++)
		printf("note: %s\n", cli_safe(k->a.notes[i]));
	printf("Mode: %s (from %s)\n", mode_name(c->mode),
	       c->mode == DCPI_CALC_EXACT ? "dcpix's counts"
	       : c->mode == DCPI_CALC_RETIRED ? k->set.events[k->cols.retired]
	       : k->set.events[k->cols.time]);
	if (!c->absolute)
		printf("note: counts are RELATIVE (hottest block = %.0f): %s samples time, and no "
		       "clock rate converts it to cycles; cpi and probabilities do not depend "
		       "on the scale\n", DCPI_CALC_REL_SCALE, k->set.events[k->cols.time]);
	if (clock_converted(k)) {
		printf("note: counts are ABSOLUTE estimates: %s samples converted to cycles at "
		       "%.3f GHz, the clock the collector measured at start", k->set.events[k->cols.time],
		       (double)k->set.stats.clock_khz / 1e6);
		if (c->calm > 0)
			printf("; their scale is the "
			       "one that puts the procedure's %.0f calm samples (from a block's third "
			       "instruction on, not after a load or a long-latency instruction) at their "
			       "best case per execution: too low where the core ran them in a stall's "
			       "shadow or faster than the model, too high where they took longer (see "
			       "ACCURACY in dcpicalc(1)); ", c->calm);
		else
			printf(", over each block's "
			       "best case, and no calm sample to scale them by: where a block stalls "
			       "(real code does: see ACCURACY in dcpicalc(1)) its count is an upper "
			       "bound, several times too high; a short block whose samples land "
			       "elsewhere takes the graph's count, which can be far too low; ");
		printf("the confidences speak for the counts relative to each other, not for the "
		       "scale\n");
	}
	if (!c->has_cpi)
		printf("note: no cpi: %s\n", k->cols.time < 0 ? "no cycles or time samples"
		       : "the samples measure time, and no clock rate converts it to cycles");
	if (c->cfg.nunresolved)
		printf("note: %zu indirect jump%s not resolved: edges go to and from 'unknown' "
		       "(%.0f)\n", c->cfg.nunresolved, c->cfg.nunresolved > 1 ? "s" : "",
		       c->unknown_freq);
	if (c->mode == DCPI_CALC_EXACT)
		printf("\nfreq = exact executions (dcpix; conf E), best = best-case cycles per "
		       "instruction (estimated), cpi = cycles sampled per execution, bound = what "
		       "limits the best case.\n");
	else
		printf("\nEstimates, not measurements: freq = %s executions, conf = confidence "
		       "(H/M/L, and in parentheses what kept it from H: few samples, a "
		       "stall, skid of a stall onto its samples, moved by the graph, the "
		       "graph's count alone, a timer's samples, or half its samples where a stall "
		       "ends: peak), best = best-case cycles per instruction, cpi = "
		       "cycles sampled per execution, bound = what limits the best case.  Counts "
		       "are printed to "
		       "the digits their confidence carries: H three significant digits (two "
		       "from a software clock), M two, "
		       "L only its order of magnitude (~); >0: the graph's count is 0, but the "
		       "block's own samples say it ran (ran).\n",
		       c->absolute ? "estimated" : "relative");
}

static void print_text(const struct calc *k)
{
	report_print_header(stdout, k->o.co.db, &k->set, k->a.total, &k->w);
	print_intro(k);
	printf("==============================================================================\n");
	printf("%-5s %-12s %5s", "block", "address", "insns");
	for (unsigned e = 0; e < k->set.nevents; e++)
		printf(" %10s", cli_safe(k->set.events[e]));
	printf(" %12s %c %6s %6s %-10s %s\n", k->c.absolute ? "freq" : "rel.freq", 'c', "best",
	       "cpi", "bound", "class");
	for (size_t b = 0; b < k->c.cfg.nblocks; b++)
		print_block_row(k, b);
	for (size_t b = 0; b < k->c.cfg.nblocks; b++)
		if (below_best(&k->c.blocks[b])) {
			printf("! cpi below the best case, which no block can run: %s the "
			       "static cost model\n  is slower than this core (see ACCURACY in "
			       "dcpicalc(1))\n", k->c.mode == DCPI_CALC_EXACT ?
			       "its count is exact, so" : "its count is over-estimated, or");
			break;
		}
	printf("\nEdges: from -> to, kind, count, confidence, probability\n");
	for (size_t v = 0; v < DCPI_CFG_NNODES(&k->c.cfg); v++)
		print_edges_of(k, v);
	printf("\nInstructions (samples per event, best-case cycles, cpi, stall cycles)%s:\n",
	       k->o.cutoff > 0 ? "; blocks under the cutoff left out" : "");
	for (size_t b = 0; b < k->c.cfg.nblocks; b++)
		if (block_pct(k, b) >= k->o.cutoff)
			print_insns(k, b);
}

/* ---- JSON --------------------------------------------------------------------------- */

static void json_num(struct dcpi_json *j, const char *key, double v, int decimals)
{
	dcpi_json_key(j, key);
	if (v < 0 || !isfinite(v))
		dcpi_json_null(j);
	else
		dcpi_json_fixed(j, v, decimals);
}

static void json_conf(struct dcpi_json *j, char conf)
{
	char s[2] = { conf, 0 };

	dcpi_json_key_str(j, "conf", s);
}

/* "why": what kept the block from H (dcpicalc(1), Confidence), as words */
static void json_why(struct dcpi_json *j, const struct dcpi_calc_block *cb)
{
	char w[80], *save = NULL;

	dcpi_json_key(j, "why");
	dcpi_json_arr_begin(j);
	if (cb->conf != 'H' && cb->conf != 'E') {
		why_words(cb->why, w, sizeof(w));
		for (char *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save))
			dcpi_json_str(j, t);
	}
	dcpi_json_arr_end(j);
}

static void json_samples(struct dcpi_json *j, const struct calc *k, const uint64_t *c)
{
	dcpi_json_key(j, "samples");
	dcpi_json_arr_begin(j);
	for (unsigned e = 0; e < k->set.nevents; e++)
		dcpi_json_u64(j, c[e]);
	dcpi_json_arr_end(j);
}

static void json_block(struct dcpi_json *j, const struct calc *k, size_t b)
{
	const struct dcpi_cfg_block *bl = &k->c.cfg.blocks[b];
	const struct dcpi_calc_block *cb = &k->c.blocks[b];
	uint64_t s[DCPI_MAX_EVENTS] = { 0 };

	for (unsigned e = 0; e < k->set.nevents; e++)
		s[e] = block_samples(k, b, e);
	dcpi_json_obj_begin(j);
	dcpi_json_key_u64(j, "id", b);
	dcpi_json_key(j, "start");
	dcpi_json_strf(j, "0x%" PRIx64, bl->start);
	dcpi_json_key(j, "end");
	dcpi_json_strf(j, "0x%" PRIx64, bl->end);
	dcpi_json_key_u64(j, "instructions", bl->ninsns);
	json_num(j, "freq", cb->freq, 2);
	json_num(j, "estimate", cb->estimate, 2);
	json_conf(j, cb->conf);
	dcpi_json_key_u64(j, "digits", (uint64_t)cb->digits);
	json_why(j, cb);
	json_samples(j, k, s);
	json_num(j, "best_cpi", cb->best_cpi, 3);
	json_num(j, "cpi", cb->cpi, 3);
	dcpi_json_key_u64(j, "cpi_digits", (uint64_t)cb->cpi_digits);
	dcpi_json_key_str(j, "bound", dcpi_cost_bound_name(&cb->cost));
	dcpi_json_key_u64(j, "class", bl->cls);
	dcpi_json_key_bool(j, "reachable", bl->reachable);
	dcpi_json_obj_end(j);
}

static void json_insn(struct dcpi_json *j, const struct calc *k, size_t i)
{
	const struct dcpi_annot_insn *r = &k->a.insns[i];
	const struct dcpi_calc_insn *ci = &k->c.insns[i];

	dcpi_json_obj_begin(j);
	dcpi_json_key(j, "address");
	dcpi_json_strf(j, "0x%" PRIx64, r->insn.vaddr);
	dcpi_json_key_u64(j, "block", dcpi_cfg_block_at(&k->c.cfg, r->insn.vaddr));
	dcpi_json_key_str(j, "mnemonic", r->insn.mnemonic);
	dcpi_json_key_str(j, "operands", r->insn.operands);
	json_samples(j, k, r->counts);
	json_num(j, "best", ci->best, 3);
	json_num(j, "cpi", ci->cpi, 3);
	json_num(j, "stall", ci->stall, 3);
	dcpi_json_key_u64(j, "cpi_digits", (uint64_t)ci->digits);
	dcpi_json_obj_end(j);
}

static void json_edge(struct dcpi_json *j, const struct calc *k, size_t e)
{
	const struct dcpi_cfg_edge *ge = &k->c.cfg.edges[e];
	const struct dcpi_calc_edge *ce = &k->c.edges[e];
	char a[32], b[32];

	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "from", node_name(k, ge->from, a, sizeof(a)));
	dcpi_json_key_str(j, "to", node_name(k, ge->to, b, sizeof(b)));
	dcpi_json_key_str(j, "kind", edge_kind(ge->kind));
	json_num(j, "count", ce->count, 2);
	json_num(j, "probability", ce->prob, 4);
	json_conf(j, ce->conf);
	dcpi_json_key_u64(j, "digits", (uint64_t)ce->digits);
	dcpi_json_obj_end(j);
}

static void print_json(const struct calc *k)
{
	struct dcpi_json *j = report_json_begin(k->o.co.db);

	report_json_header(j, &k->set, k->a.total, &k->w);
	dcpi_json_break(j);
	report_json_procedure(j, k->img, k->name, k->a.lo, k->a.hi);
	dcpi_json_break(j);
	dcpi_json_key_str(j, "mode", mode_name(k->c.mode));
	dcpi_json_key_bool(j, "absolute", k->c.absolute);
	dcpi_json_key_bool(j, "has_cpi", k->c.has_cpi);
	dcpi_json_key_u64(j, "classes", k->c.cfg.nclasses);
	dcpi_json_key_u64(j, "unresolved_jumps", k->c.cfg.nunresolved);
	dcpi_json_key_u64(j, "jump_tables", k->c.cfg.ntables);
	REPORT_JSON_ROWS(j, "blocks", k->c.cfg.nblocks, json_block(j, k, i_));
	REPORT_JSON_ROWS(j, "edges", k->c.cfg.nedges, json_edge(j, k, i_));
	REPORT_JSON_ROWS(j, "instructions", k->a.ninsns, json_insn(j, k, i_));
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

/* ---- the graph ---------------------------------------------------------------------- */

#define SRC_LINES 4     /* source lines drawn in a block, then "+N more" */

/* Each block's stall line, "stalls: dDw", the possible culprits of its
 * stalled instructions (dcpitopstalls' codes; '?' none found), first in
 * v[b]. */
static void block_stalls(const struct calc *k, char **v)
{
	struct dcpi_stall_insn *s;
	double *stall;
	unsigned *mask;
	unsigned char *any;
	size_t nb = k->c.cfg.nblocks;

	if (k->cols.time < 0 || !k->a.has_code || !nb ||
	    dcpi_stall_explain(k->img, &k->set, k->cols.time, &k->a, &k->c, &s, &stall))
		return; /* no stalls to say (no time samples, no code): the graph without */
	mask = calloc(nb, sizeof(*mask));
	any = calloc(nb, 1);
	if (!mask || !any)
		cli_die("out of memory");
	for (size_t i = 0; i < k->a.ninsns; i++) {
		size_t b = dcpi_cfg_block_at(&k->c.cfg, k->a.insns[i].insn.vaddr);

		if (b < nb && stall[i] > 0) {
			mask[b] |= s[i].culprits;
			any[b] = 1;
		}
	}
	for (size_t b = 0; b < nb; b++) {
		char codes[DCPI_STALL_NKINDS + 2];

		if (!any[b])
			continue;
		dcpi_stall_codes(mask[b], codes);
		if (!(v[b] = malloc(strlen(codes) + 16)))
			cli_die("out of memory");
		snprintf(v[b], strlen(codes) + 16, "stalls: %s", codes);
	}
	free(mask);
	free(any);
	free(s);
	free(stall);
}

/* Whether an instruction of block b before insns[i] (at most 256 back) is
 * of the same source line. */
static int seen_in_block(const struct calc *k, size_t i, size_t b)
{
	for (size_t j = i, n = 0; j-- > 0 && n < 256; n++) {
		if (dcpi_cfg_block_at(&k->c.cfg, k->a.insns[j].insn.vaddr) != b)
			return 0;
		if (k->a.insns[j].line_index == k->a.insns[i].line_index && k->a.insns[j].line)
			return 1;
	}
	return 0;
}

/* Each block's source lines, as DCPI's dcpisource drew them in the graph:
 * "LINE: text" for the procedure's own file, "FILE:LINE: text" for
 * another (an inlined header), in address order, each once. */
static char **block_sources(const struct calc *k)
{
	size_t nb = k->c.cfg.nblocks;
	char **v = calloc(nb ? nb : 1, sizeof(*v));
	size_t *shown = calloc(nb ? nb : 1, sizeof(*shown)), *more = calloc(nb ? nb : 1, sizeof(*more));
	const char *own = NULL;

	if (!v || !shown || !more)
		cli_die("out of memory");
	block_stalls(k, v);
	for (size_t i = 0; i < k->a.ninsns && k->a.has_lines; i++) {
		const struct dcpi_annot_insn *x = &k->a.insns[i];
		const struct dcpi_annot_line *l;
		size_t b = dcpi_cfg_block_at(&k->c.cfg, x->insn.vaddr), len;
		const char *text;
		char line[160];
		char *nv;

		if (b >= nb || !x->line || x->line_index >= k->a.nlines || seen_in_block(k, i, b))
			continue;
		l = &k->a.lines[x->line_index];
		own = own ? own : l->file;
		if (shown[b] == SRC_LINES) {
			more[b]++;
			continue;
		}
		for (text = l->text ? l->text : ""; *text == ' ' || *text == '\t'; text++)
			;
		if (!strcmp(l->file, own))
			snprintf(line, sizeof(line), "%u: %.48s", l->line, text);
		else
			snprintf(line, sizeof(line), "%s:%u: %.48s", report_base(l->file), l->line, text);
		len = v[b] ? strlen(v[b]) : 0;
		if (!(nv = realloc(v[b], len + strlen(line) + 2)))
			cli_die("out of memory");
		snprintf(nv + len, strlen(line) + 2, "%s%s", len ? "\n" : "", line);
		v[b] = nv;
		shown[b]++;
	}
	for (size_t b = 0; b < nb; b++)
		if (more[b]) {
			size_t len = strlen(v[b]);
			char *nv = realloc(v[b], len + 40);

			if (!nv)
				cli_die("out of memory");
			snprintf(nv + len, 40, "\n(+%zu more lines)", more[b]);
			v[b] = nv;
		}
	free(shown);
	free(more);
	return v;
}

static void emit_dot(FILE *f, void *arg)
{
	const struct calc *k = arg;
	int col = k->cols.mode == DCPI_CALC_RETIRED ? k->cols.retired : k->cols.time;
	uint64_t *s = calloc(k->c.cfg.nblocks ? k->c.cfg.nblocks : 1, sizeof(*s));
	char **src = block_sources(k);
	struct dcpi_dot_opts o = { k->name, s, k->o.cutoff, (const char *const *)src };

	if (!s)
		cli_die("out of memory");
	for (size_t b = 0; b < k->c.cfg.nblocks; b++)
		s[b] = block_samples(k, b, (unsigned)(col < 0 ? 0 : col));
	if (dcpi_dot_write(f, &k->c, &o))
		cli_die("%s", dcpi_errmsg());
	for (size_t b = 0; b < k->c.cfg.nblocks; b++)
		free(src[b]);
	free(src);
	free(s);
}

int cmd_dcpicalc(int argc, char **argv)
{
	static struct calc k;
	uint64_t lo, hi;

	parse_options(&k.o, argc, argv);
	report_set_load(&k.set, k.o.co.db, k.o.co.epoch, k.o.co.host, k.o.co.label);
	report_check_set(&k.w, &k.set);
	report_warn_finish(&k.w);
	choose_columns(&k);
	k.img = report_annot_open(&k.set, k.o.co.db, k.o.image, &k.src);
	report_annot_resolve(k.img, k.o.proc, &lo, &hi, &k.name);
	if (dcpi_annotate(k.img, lo, hi, &k.a))
		cli_die("%s", dcpi_errmsg());
	if (k.o.exact && dcpi_calc_exact_load(k.o.co.db, k.img, &k.a, &k.exact))
		cli_die("%s", dcpi_errmsg());
	k.cols.exact = k.exact;
	if (dcpi_calc_annotation(k.img, &k.a, &k.cols, &k.c))
		cli_die("%s: %s", k.name ? cli_safe(k.name) : "range", dcpi_errmsg());
	if (k.o.co.json)
		print_json(&k);
	else if (k.o.dot)
		emit_dot(stdout, &k);
	else if (k.o.svg || k.o.pdf)
		render_dot(k.o.svg ? "svg" : "pdf", k.o.svg ? k.o.svg : k.o.pdf, emit_dot, &k);
	else
		print_text(&k);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	dcpi_calc_free(&k.c);
	free(k.exact);
	dcpi_annotation_free(&k.a);
	dcpi_annot_image_close(k.img);
	dcpi_profset_free(&k.set);
	return 0;
}
