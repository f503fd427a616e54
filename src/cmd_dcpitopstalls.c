/* dcpitopstalls: the instructions with the most stall cycles across
 * images, with DCPI's columns and the possible culprits of each stall
 * (libdcpi's stall.h on calc.h's estimates). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/select.h"
#include "dcpi/stall.h"
#include "dcpi/vprof.h"
#include "report.h"

#define MAX_ROWS ((size_t)1 << 22)

/* One stalled instruction; strings are its image's (kept open). */
struct row {
	size_t img;
	const char *proc, *file;
	unsigned line;
	uint64_t vaddr;
	char insn[200];
	double stall;            /* samples */
	double count, avg;       /* block frequency; stall cycles per execution */
	int avg_digits;          /* significant digits of avg (dcpi_stall_avg_digits) */
	int total_digits;        /* and of stall in all (dcpi_stall_total_digits) */
	char conf;
	int digits;              /* the count's significant digits (dcpi_calc_block) */
	struct dcpi_stall_insn s;
	uint64_t at[DCPI_STALL_NKINDS];   /* the blamed instruction's address; 0 none */
	/* the value profile of the load a 'd' culprit blames, where there is one */
	uint64_t vt_samples;
	double vt_mean;
	char vt_bin[32];                 /* the bin most of its samples fell in */
};

struct ts {
	struct report_base b;        /* first: the skeleton's */
	unsigned long long n;
	const char *proc;            /* -proc NAME, or NULL */
	int proc_seen;               /* -proc's procedure was among the images' */
	size_t nshow;                /* rows printed */
	size_t cur;
	struct row *rows;
	size_t nrows, cap;
	double total_stall;
	int absolute, evidence;
	int vtrace;                  /* a culprit has a value profile */
	uint64_t total[DCPI_MAX_EVENTS];
};

static void own_option(void *ctx, int c, const char *arg)
{
	if (c == 'n')
		((struct ts *)ctx)->n = cli_parse_count("n", arg);
	else
		((struct ts *)ctx)->proc = arg; /* -proc */
}

static const struct option own_opts[] = {
	{ "n", required_argument, NULL, 'n' },
	{ "proc", required_argument, NULL, 256 },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpitopstalls", .synopsis = "[options] [IMAGE...]",
	.about = "The instructions with the most stall cycles (cycles above their static best\n"
		 "case), in the given images or in all, with the possible culprits.\n",
	.common = CLI_SELECT | CLI_JSON | CLI_IMAGES,
	.help = "  -n N               how many instructions (default 20)\n"
		"  -proc NAME         only the instructions of this procedure (as dcpiprof\n"
		"                     names it); shares are of its stall cycles\n",
	.footer = "IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n"
		  "Culprits: i I-cache, I ITLB, d D-cache, D DTLB, w write buffer, p branch\n"
		  "mispredict, f functional unit, s synchronisation, m microcode, ? unexplained.\n",
	.shortopts = "n:", .opts = own_opts, .opt = own_option,
};

/* ---- collecting ---------------------------------------------------------------------- */

/* Cycles a sample stands for in the stall's unit: 1 when it is samples. */
static double unit_cycles(const struct ts *t)
{
	return t->b.r.cols->cycles_per_sample > 0 ? t->b.r.cols->cycles_per_sample : 1;
}

/* Samples in the stall's unit. */
static double stall_units(const struct ts *t, double samples)
{
	return samples * unit_cycles(t);
}

static void add_row(struct ts *t, const struct dcpi_stall_proc *p, size_t i)
{
	const struct dcpi_annot_insn *r = &p->a.insns[i];
	size_t b = dcpi_cfg_block_at(&p->c.cfg, r->insn.vaddr);
	struct row *w;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct row *v;

		if (cap > MAX_ROWS || !(v = realloc(t->rows, cap * sizeof(*v))))
			cli_die("too many stalled instructions (over %zu)", MAX_ROWS);
		t->rows = v;
		t->cap = cap;
	}
	w = &t->rows[t->nrows++];
	w->img = t->cur;
	w->proc = p->name;
	w->file = r->file;
	w->line = r->line;
	w->vaddr = r->insn.vaddr;
	snprintf(w->insn, sizeof(w->insn), "%s%s%s", r->insn.mnemonic,
		 r->insn.operands[0] ? " " : "", r->insn.operands);
	w->stall = p->stall[i];
	w->count = b < p->c.cfg.nblocks ? p->c.blocks[b].freq : 0;
	w->conf = b < p->c.cfg.nblocks ? p->c.blocks[b].conf : 'L';
	w->digits = b < p->c.cfg.nblocks ? p->c.blocks[b].digits : 1;
	w->avg = p->c.insns[i].stall;
	w->avg_digits = dcpi_stall_avg_digits(&p->c, i);
	w->total_digits = dcpi_stall_total_digits(&p->c, b, i, stall_units(t, w->stall),
						  (double)r->counts[p->col], unit_cycles(t));
	w->s = p->s[i];
	w->vt_samples = 0; /* mark_vtrace's, later */
	w->vt_mean = 0;
	w->vt_bin[0] = 0;
	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		w->at[k] = w->s.blame[k] < p->a.ninsns ? p->a.insns[w->s.blame[k]].insn.vaddr : 0;
	t->total_stall += w->stall;
}

static int on_proc(struct dcpi_stall_proc *p, void *arg)
{
	struct ts *t = arg;

	t->proc_seen = 1; /* dcpi_stall_image_only passes -proc's procedure alone */
	if (p->err) {
		if (p->samples || !p->a.ninsns)
			report_warn(&t->b.w, "%s: %s: %s; its samples are not explained",
				    report_base(dcpi_annot_image_profile(t->b.r.imgs[t->cur])->path),
				    p->name, dcpi_errmsg());
		return 0;
	}
	t->absolute = p->c.absolute;
	for (size_t i = 0; i < p->a.ninsns; i++)
		if (p->stall[i] > 0)
			add_row(t, p, i);
	return 0;
}

static void analyse(struct ts *t)
{
	for (t->cur = 0; t->cur < t->b.r.nimgs; t->cur++) {
		struct dcpi_annot_image *img = t->b.r.imgs[t->cur];
		uint64_t unattributed;
		size_t n;
		const struct dcpi_annot_sample *s = dcpi_annot_image_samples(img, &n);

		for (size_t i = 0; i < n; i++)
			for (unsigned e = 0; e < t->b.r.set.nevents; e++)
				t->total[e] += s[i].counts[e];
		if (!dcpi_annot_image_has_code(img)) {
			report_warn(&t->b.w, "%s: no code to analyse; its stalls are not shown",
				    report_base(dcpi_annot_image_profile(img)->path));
			continue;
		}
		if (dcpi_stall_image_only(img, &t->b.r.set, t->b.r.cols, t->proc, on_proc, t,
					  &unattributed))
			cli_die("%s", dcpi_errmsg());
		if (unattributed)
			report_warn(&t->b.w, "%s: %" PRIu64 " samples in no sized symbol are not "
				    "explained", report_base(dcpi_annot_image_profile(img)->path),
				    unattributed);
	}
	for (unsigned e = 0; e < t->b.r.set.nevents; e++)
		t->evidence |= dcpi_stall_event_kind(t->b.r.set.events[e]) >= 0;
}

/* Whether a value-profiled load mostly missed: more than half of its
 * samples beyond the first bin where the bins are this machine's levels
 * (dcpi bins: the first is L1), or, from precise samples, more than half
 * of those whose source is known from past L1 and the fill buffer.  -1:
 * the profile cannot say (bins that are not levels). */
static int mostly_missed(const struct dcpi_vprof *vp, const struct dcpi_vprof_load *l)
{
	uint64_t known = 0, hit;

	if (!strcmp(vp->kind, "ldlat")) {
		for (int k = 0; k < DCPI_SRC_N; k++)
			if (k != DCPI_SRC_OTHER)
				known += l->sources[k];
		hit = l->sources[DCPI_SRC_L1] + l->sources[DCPI_SRC_LFB];
		return known ? (known - hit) * 2 > known : -1;
	}
	if (!vp->bins.n || strcmp(vp->bins.v[0].name, "L1"))
		return -1;
	return (l->samples - l->bins[0]) * 2 > l->samples;
}

/* A 'd' culprit whose load has a value profile (dcpi record -vtrace, or
 * precise samples): its latency, measured; marked measured where the
 * load mostly missed L1. */
static void mark_vtrace(struct ts *t)
{
	struct dcpi_vprof *vp;
	size_t nfiles, nbad;
	char *first_bad;

	if (dcpi_vprof_of_set(&t->b.r.set, &vp, &nfiles, &nbad, &first_bad))
		cli_die("%s", dcpi_errmsg());
	if (nbad)
		report_warn(&t->b.w, "%zu value profiles unread; the first: %s", nbad, first_bad);
	free(first_bad);
	for (size_t i = 0; nfiles && i < t->nrows; i++) {
		struct row *r = &t->rows[i];
		const struct dcpi_annot_image *img = t->b.r.imgs[r->img];
		const struct dcpi_profile *p = dcpi_annot_image_profile(img);
		const struct dcpi_vprof_load *l;
		long vimg;
		uint64_t off;
		int best;

		if (!(r->s.culprits & (1u << DCPI_STALL_DCACHE)) || !r->at[DCPI_STALL_DCACHE] ||
		    (vimg = dcpi_vprof_image(vp, p->path, p->build_id, p->build_id_len)) < 0 ||
		    dcpi_symtab_vaddr2off(dcpi_annot_image_symtab(img), r->at[DCPI_STALL_DCACHE],
					  &off) ||
		    !(l = dcpi_vprof_load(vp, (uint32_t)vimg, off)))
			continue;
		best = dcpi_vprof_top_bin(vp, l);
		r->vt_samples = l->samples;
		r->vt_mean = (double)l->cycles / (double)l->samples;
		snprintf(r->vt_bin, sizeof(r->vt_bin), "%s", best < 0 ? "(no-bin)" : vp->bins.v[best].name);
		if (mostly_missed(vp, l) == 1)
			r->s.measured |= 1u << DCPI_STALL_DCACHE;
		t->vtrace = 1;
	}
	dcpi_vprof_free(vp);
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->stall != y->stall)
		return x->stall > y->stall ? -1 : 1;
	if (x->img != y->img)
		return x->img < y->img ? -1 : 1;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* ---- output ------------------------------------------------------------------------ */


/* A stall (in all, or per execution: avg) to digits significant digits
 * ("0" for none); in all as counts print ("13M"). */
static const char *stall_str(double v, int digits, int avg, char *buf, size_t len)
{
	if (digits <= 0 || !(v > 0))
		snprintf(buf, len, "0");
	else if (avg)
		dcpi_quantum_str(v, dcpi_digits_quantum(v, digits), 2, buf, len);
	else
		dcpi_count_str(v, 'H', digits, buf, len);
	return buf;
}

static void culprit_codes(const struct row *r, char *buf)
{
	size_t n = 0;

	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		if (!(r->s.culprits & (1u << k)))
			continue;
		buf[n++] = dcpi_stall_code(k);
		if (r->s.measured & (1u << k))
			buf[n++] = '*';
	}
	if (!n)
		buf[n++] = '?';
	buf[n] = 0;
}

static void print_text(const struct ts *t, size_t n)
{
	const char *unit = t->b.r.cols->cycles_per_sample > 0 ? "cycles" : "samples";
	double cum = 0;
	char all[32];

	report_print_header(stdout, t->b.o.db, &t->b.r.set, t->total, &t->b.w);
	printf("\nStall = %s above the instruction's static best case, from %s (%s %s "
	       "in all);\ncount = %s executions of its block, to the digits its confidence "
	       "carries, c = confidence (H/M/L); "
	       "avg = stall cycles per execution;\nculprits are POSSIBLE reasons by static "
	       "rules%s: i I-cache, I ITLB, d D-cache, D DTLB,\nw write buffer, p branch "
	       "mispredict, f functional unit, s synchronisation, m microcode, ? unexplained.\n",
	       unit, t->b.r.set.events[t->b.r.cols->time],
	       stall_str(stall_units(t, t->total_stall), 3, 0, all, sizeof(all)), unit,
	       t->absolute ? "estimated" : "relative",
	       t->evidence && t->vtrace ? " (* : seen by a miss event near it, or measured missing L1)"
	       : t->evidence ? " (* : seen by a miss event near it)"
	       : t->vtrace ? " (d* : the load measured missing L1)" : "");
	if (t->vtrace)
		printf("[d: N cycles BIN]: the blamed load's latency as the value profiler measured it "
		       "(mean, and the bin most\nof its samples fell in; dcpilist -vtrace).\n");
	printf("==============================================================================\n");
	printf("%6s %6s %10s %10s %c %7s %-9s %-12s %-24s %s\n", "%", "cum%", "stall", "count", 'c',
	       "avg", "culprits", "address", "procedure", "instruction  image  file:line");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &t->rows[i];
		char c[2 * DCPI_STALL_NKINDS + 1], cnt[32], st[32], avg[32];
		double pct = t->total_stall > 0 ? 100.0 * r->stall / t->total_stall : 0;
		double v = stall_units(t, r->stall);

		cum += pct;
		culprit_codes(r, c);
		printf("%5.2f%% %5.1f%% %10s %10s %c %7s %-9s 0x%-10" PRIx64 " %-24s %s  %s",
		       pct, cum, stall_str(v, r->total_digits, 0, st, sizeof(st)),
		       dcpi_count_str(r->count, r->conf, r->digits, cnt, sizeof(cnt)), r->conf,
		       stall_str(r->avg, r->avg_digits, 1, avg, sizeof(avg)), c, r->vaddr,
		       cli_safe(r->proc), cli_safe(r->insn),
		       cli_safe(report_base(dcpi_annot_image_profile(t->b.r.imgs[r->img])->path)));
		if (r->line)
			printf(" %s:%u", cli_safe(report_base(r->file)), r->line);
		if (r->vt_samples)
			printf(" [d: %.1f cycles %s]", r->vt_mean, r->vt_bin);
		printf("\n");
	}
}

static void json_culprits(struct dcpi_json *j, const struct row *r)
{
	dcpi_json_key(j, "culprits");
	dcpi_json_arr_begin(j);
	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		char code[2] = { dcpi_stall_code(k), 0 };

		if (!(r->s.culprits & (1u << k)))
			continue;
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "code", code);
		dcpi_json_key_str(j, "name", dcpi_stall_name(k));
		dcpi_json_key_bool(j, "measured", !!(r->s.measured & (1u << k)));
		dcpi_json_key_u64(j, "weight", r->s.weight[k]);
		dcpi_json_key(j, "at");
		if (r->at[k])
			dcpi_json_strf(j, "0x%" PRIx64, r->at[k]);
		else
			dcpi_json_null(j);
		if (k == DCPI_STALL_DCACHE && r->vt_samples) {
			dcpi_json_key(j, "latency");
			dcpi_json_obj_begin(j);
			dcpi_json_key_u64(j, "samples", r->vt_samples);
			dcpi_json_key(j, "mean_cycles");
			dcpi_json_fixed(j, r->vt_mean, 1);
			dcpi_json_key_str(j, "bin", r->vt_bin);
			dcpi_json_obj_end(j);
		}
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
}

static void json_row(struct dcpi_json *j, const struct ts *t, const struct row *r)
{
	char conf[2] = { r->conf, 0 };

	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "image", dcpi_annot_image_profile(t->b.r.imgs[r->img])->path);
	dcpi_json_key_str(j, "procedure", r->proc);
	dcpi_json_key(j, "address");
	dcpi_json_strf(j, "0x%" PRIx64, r->vaddr);
	dcpi_json_key_str(j, "instruction", r->insn);
	dcpi_json_key(j, "stall");
	dcpi_json_fixed(j, stall_units(t, r->stall), 2);
	dcpi_json_key(j, "percent");
	dcpi_json_fixed(j, t->total_stall > 0 ? 100.0 * r->stall / t->total_stall : 0, 2);
	dcpi_json_key(j, "count");
	dcpi_json_fixed(j, r->count, 2);
	dcpi_json_key_str(j, "conf", conf);
	dcpi_json_key_u64(j, "digits", (uint64_t)r->digits);
	dcpi_json_key(j, "avg_stall");
	dcpi_json_fixed(j, r->avg, 3);
	dcpi_json_key_u64(j, "stall_digits", (uint64_t)r->total_digits);
	dcpi_json_key_u64(j, "avg_stall_digits", (uint64_t)r->avg_digits);
	json_culprits(j, r);
	dcpi_json_key_str(j, "file", r->file);
	dcpi_json_key_u64(j, "line", r->line);
	dcpi_json_obj_end(j);
}

static void print_json(const struct ts *t, size_t n)
{
	struct dcpi_json *j = report_json_begin(t->b.o.db);

	report_json_header(j, &t->b.r.set, t->total, &t->b.w);
	dcpi_json_break(j);
	dcpi_json_key_str(j, "stall_unit", t->b.r.cols->cycles_per_sample > 0 ? "cycles" : "samples");
	dcpi_json_key_bool(j, "absolute", t->absolute);
	dcpi_json_key(j, "total_stall");
	dcpi_json_fixed(j, stall_units(t, t->total_stall), 2);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++) {
		dcpi_json_break(j);
		json_row(j, t, &t->rows[i]);
	}
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

static void sort_rows(void *ctx)
{
	struct ts *t = ctx;

	analyse(t);
	mark_vtrace(t);
	if (t->proc && !t->proc_seen)
		cli_die("-proc %s: no procedure of that name has samples in the images chosen",
			cli_safe(t->proc));
	if (t->nrows)
		qsort(t->rows, t->nrows, sizeof(*t->rows), cmp_row);
	t->nshow = t->nrows < t->n ? t->nrows : (size_t)t->n;
}

static void text(void *ctx)
{
	print_text(ctx, ((struct ts *)ctx)->nshow);
}

static void json(void *ctx)
{
	print_json(ctx, ((struct ts *)ctx)->nshow);
}

static void done(void *ctx)
{
	free(((struct ts *)ctx)->rows);
}

int cmd_dcpitopstalls(int argc, char **argv)
{
	static const struct report_kind k = { &cli, "stalls are cycles, and none were sampled",
					      sort_rows, text, json, NULL, done };
	static struct ts t = { .n = 20 };

	return report_main(&k, &t.b, &t, argc, argv);
}
