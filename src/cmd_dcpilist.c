/* dcpilist: one procedure's samples by source line and by instruction,
 * as DCPI's dcpilist printed them (default -both: each source line with
 * its total, then its instructions with theirs). */
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
#include "dcpi/source.h"
#include "dcpi/vprof.h"
#include "report.h"

enum { SHOW_BOTH, SHOW_SOURCE, SHOW_ASM };
#define MAX_DIRS 64
#define MAX_REMAPS 64

struct opts {
	struct cli_common co;        /* -db -epoch -host -label -json */
	const char *file, *proc, *image;
	int show;
	const char *dirs[MAX_DIRS + 1];
	size_t ndirs;
	struct dcpi_remap remaps[MAX_REMAPS];
	size_t nremaps;
	char fdir[4096];
	int vtrace;
};

struct listing {
	struct opts o;
	struct dcpi_profset set;
	struct dcpi_annot_image *img;
	struct dcpi_annotation a;
	struct dcpi_source_opts src;  /* the image keeps a pointer to it */
	const char *name;            /* procedure name, NULL for a bare range */
	int derived;                 /* cpi and freq can be computed */
	struct report_warnings w;
	struct dcpi_vprof *vp;       /* -vtrace: the set's value profiles */
	long vimg;                   /* the image's in them, or -1 */
	size_t vfiles;               /* epoch.vprof files read */
};

enum { O_BOTH = 256, O_SOURCE, O_ASM, O_REMAP, O_VTRACE };

static void add_dir(struct opts *o, const char *d)
{
	if (o->ndirs == MAX_DIRS)
		cli_usage_error("at most %d -I directories", MAX_DIRS);
	o->dirs[o->ndirs++] = d;
}

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	switch (c) {
	case O_BOTH: o->show = SHOW_BOTH; break;
	case O_SOURCE: o->show = SHOW_SOURCE; break;
	case O_ASM: o->show = SHOW_ASM; break;
	case 'f': o->file = arg; break;
	case 'I': add_dir(o, arg); break;
	case O_VTRACE: o->vtrace = 1; break;
	case O_REMAP:
		if (o->nremaps == MAX_REMAPS)
			cli_usage_error("at most %d -remap rules", MAX_REMAPS);
		if (dcpi_source_remap_parse((char *)arg, &o->remaps[o->nremaps++])) /* argv's */
			cli_usage_error("-remap: %s", dcpi_errmsg());
		break;
	}
}

static const struct option own_opts[] = {
	{ "both", no_argument, NULL, O_BOTH },
	{ "source", no_argument, NULL, O_SOURCE },
	{ "asm", no_argument, NULL, O_ASM },
	{ "f", required_argument, NULL, 'f' },
	{ "I", required_argument, NULL, 'I' },
	{ "remap", required_argument, NULL, O_REMAP },
	{ "vtrace", no_argument, NULL, O_VTRACE },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpilist", .synopsis = "[options] PROCEDURE IMAGE",
	.about = "One procedure's samples by source line and instruction.\n",
	.common = CLI_SELECT | CLI_JSON,
	.help = "  -both              source lines, each followed by its instructions (default)\n"
		"  -source            source lines only\n"
		"  -asm               instructions only, in address order\n"
		"  -f FILE            the procedure's source file is FILE (its directory is\n"
		"                     searched first)\n"
		"  -I DIR             search DIR for source files (repeatable)\n"
		"  -remap OLD=NEW     source paths starting with OLD are under NEW (repeatable)\n"
		"  -vtrace            each sampled load's measured latency by bin, mean and hot\n"
		"                     values (value profiles: dcpi record -vtrace)\n",
	.footer = "PROCEDURE is a name (raw, demangled, or demangled without parameters), an\n"
		  "address 0xADDR or a range 0xLO-0xHI of the image's virtual addresses.\n"
		  "IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n",
	.shortopts = "f:I:", .opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	cli_parse(&cli, argc, argv, &o->co, o);
	if (argc - optind != 2)
		cli_usage_error("want PROCEDURE and IMAGE");
	o->proc = argv[optind];
	o->image = argv[optind + 1];
}

/* -f FILE: its directory is searched before the -I ones. */
static void apply_file_opt(struct opts *o)
{
	const char *slash;

	if (!o->file)
		return;
	slash = strrchr(o->file, '/');
	snprintf(o->fdir, sizeof(o->fdir), "%.*s", slash ? (int)(slash - o->file) : 1,
		 slash ? o->file : ".");
	if (!o->fdir[0])
		snprintf(o->fdir, sizeof(o->fdir), "/");
	memmove(&o->dirs[1], &o->dirs[0], o->ndirs * sizeof(o->dirs[0]));
	o->dirs[0] = o->fdir;
	o->ndirs++;
}

/* ---- choosing and annotating ------------------------------------------------------ */

static void open_image(struct listing *l)
{
	l->src = (struct dcpi_source_opts){ .dirs = l->o.dirs, .ndirs = l->o.ndirs,
					    .remaps = l->o.remaps, .nremaps = l->o.nremaps };
	l->img = report_annot_open(&l->set, l->o.co.db, l->o.image, &l->src);
}

/* ---- text --------------------------------------------------------------------------- */

/* The place a figure from samples is known to: its standard error (rel
 * relative to v), to the nearest power of ten. */
static double err_place(double v, double rel)
{
	return pow(10, round(log10(v * rel)));
}

static void counts_cols(const struct listing *l, const uint64_t *c)
{
	double cpi, freq;
	char a[32], b[32];
	int cy, in;

	for (unsigned e = 0; e < l->set.nevents; e++)
		printf("%10" PRIu64 " %6.2f%% ", c[e], report_pct(c[e], l->a.total[e]));
	if (!l->derived)
		return;
	if (dcpi_annot_cpi(&l->set, c, &cpi, &freq) && dcpi_annot_derived_cols(&l->set, &cy, &in)) {
		/* to the digits their samples carry: freq's error 1/sqrt(n) of
		 * it, cpi's both counts' together */
		double ri = 1 / sqrt((double)c[in]);
		double rc = c[cy] ? sqrt(1 / (double)c[cy] + 1 / (double)c[in]) : 0;

		dcpi_count_str(freq, 'H', dcpi_quantum_digits(freq, err_place(freq, ri)), b,
			       sizeof(b));
		if (cpi > 0)
			dcpi_quantum_str(cpi, err_place(cpi, rc), 2, a, sizeof(a));
		else
			snprintf(a, sizeof(a), "0");
		printf("%6s %10s ", a, b);
	} else {
		printf("%6s %10s ", "-", "-");
	}
}

static void column_heads(const struct listing *l)
{
	for (unsigned e = 0; e < l->set.nevents; e++)
		printf("%10s %7s ", cli_safe(l->set.events[e]), "%");
	if (l->derived)
		printf("%6s %10s ", "cpi", "freq");
}

static const char *base(const char *p)
{
	return report_base(p);
}

/* Operands, with "<name>" after a direct target outside the procedure,
 * as objdump names call targets. */
static void target_name(const struct listing *l, const struct dcpi_insn *in, char *buf,
			size_t len)
{
	const struct dcpi_sym *s = NULL;

	if ((in->flags & DCPI_INSN_DIRECT) && (in->target < l->a.lo || in->target >= l->a.hi))
		s = dcpi_symtab_lookup_vaddr(dcpi_annot_image_symtab(l->img), in->target);
	if (s && s->vaddr == in->target)
		snprintf(buf, len, "%s <%s>", in->operands, dcpi_sym_demangled(s));
	else if (s)
		snprintf(buf, len, "%s <%s+0x%" PRIx64 ">", in->operands, dcpi_sym_demangled(s),
			 in->target - s->vaddr);
	else
		snprintf(buf, len, "%s", in->operands);
}

/* -vtrace: the value profile of the load at an instruction, or NULL. */
static const struct dcpi_vprof_load *vload(const struct listing *l, const struct dcpi_annot_insn *r)
{
	if (!l->vp || l->vimg < 0 || !l->a.has_code)
		return NULL;
	return dcpi_vprof_load(l->vp, (uint32_t)l->vimg, r->offset);
}

#define VTRACE_TEXT_VALUES 4

/* The hot values.  Where the counts are approximate (a full list: 16
 * values or more were seen), each is within the load's bound of the truth:
 * its share is shown as the range that leaves, and only where 1% of the
 * samples or more are surely that value; none may stand out. */
static void print_values(const struct dcpi_vprof_load *v)
{
	const char *sep = "";
	unsigned shown = 0, more = 0;

	if (!v->nvalues)
		return;
	printf(" | values:");
	for (unsigned k = 0; k < v->nvalues; k++) {
		uint64_t c = v->values[k].count, lo = c > v->verr ? c - v->verr : 0;
		uint64_t hi = v->samples - c > v->verr ? c + v->verr : v->samples;

		if (v->verr && lo < v->samples / 100 + (v->samples % 100 != 0))
			break; /* most frequent first: no later one stands out either */
		if (shown == VTRACE_TEXT_VALUES) {
			more++;
			continue;
		}
		if (v->verr)
			printf("%s 0x%" PRIx64 " %.1f-%.1f%%", sep, v->values[k].value,
			       report_pct(lo, v->samples), report_pct(hi, v->samples));
		else
			printf("%s 0x%" PRIx64 " %.1f%%", sep, v->values[k].value,
			       report_pct(c, v->samples));
		sep = ",";
		shown++;
	}
	if (more)
		printf(" (%u more)", more);
	if (!shown)
		printf(" none stands out (16 or more seen, none surely 1%%)");
}

static void print_vload(const struct listing *l, const struct dcpi_vprof_load *v)
{
	const struct dcpi_bins *b = &l->vp->bins;
	const char *sep = "";

	printf("  vtrace: %" PRIu64 " samples, mean %.1f cycles:", v->samples,
	       (double)v->cycles / (double)v->samples);
	for (size_t k = 0; k < b->n; k++)
		if (v->bins[k])
			printf(" %s %" PRIu64, b->v[k].name, v->bins[k]);
	if (v->outside)
		printf(" (in no bin) %" PRIu64, v->outside);
	print_values(v);
	sep = " | from:";
	for (int k = 0; k < DCPI_SRC_N; k++)
		if (v->sources[k]) {
			printf("%s %s %" PRIu64, sep, dcpi_vprof_source_names[k], v->sources[k]);
			sep = ",";
		}
	printf("\n");
}

static void print_insn(const struct listing *l, const struct dcpi_annot_insn *r, int with_line)
{
	counts_cols(l, r->counts);
	printf("  0x%-10" PRIx64, r->insn.vaddr);
	if (l->a.has_code) {
		char ops[sizeof(r->insn.operands) + 64];

		target_name(l, &r->insn, ops, sizeof(ops));
		printf(with_line ? " %-7s %-34s" : " %-7s %s", r->insn.mnemonic, cli_safe(ops));
	}
	if (with_line && r->line)
		printf(" %s:%u", cli_safe(base(r->file)), r->line);
	if (with_line && r->inlined_into)
		printf(" (%s inlined into %s)", cli_safe(r->function), cli_safe(r->inlined_into));
	printf("\n");
	if (vload(l, r))
		print_vload(l, vload(l, r));
}

static void print_line(const struct listing *l, const struct dcpi_annot_line *ln)
{
	counts_cols(l, ln->counts);
	if (ln->line)
		printf("%5u  %s\n", ln->line, ln->text ? cli_safe(ln->text) : "(source not available)");
	else
		printf("%5s  (code with no source line)\n", "??");
}

static void print_source(const struct listing *l, int with_insns)
{
	const char *file = NULL;

	for (size_t i = 0; i < l->a.nlines; i++) {
		const struct dcpi_annot_line *ln = &l->a.lines[i];

		if (!file || strcmp(file, ln->file)) {
			file = ln->file;
			printf("%s-- %s\n", i ? "\n" : "", cli_safe(file));
		}
		print_line(l, ln);
		if (!with_insns)
			continue;
		for (size_t k = ln->first_insn; k < l->a.ninsns; k++)
			if (l->a.insns[k].line_index == i)
				print_insn(l, &l->a.insns[k], 0);
		printf("\n");
	}
}

static void print_strays(const struct listing *l)
{
	if (!l->a.nstrays)
		return;
	printf("\nSamples at addresses that start no instruction:\n");
	for (size_t i = 0; i < l->a.nstrays; i++) {
		const struct dcpi_annot_stray *s = &l->a.strays[i];

		counts_cols(l, s->counts);
		if (s->containing_vaddr)
			printf("  0x%" PRIx64 " (inside the instruction at 0x%" PRIx64 ")\n", s->vaddr,
			       s->containing_vaddr);
		else
			printf("  0x%" PRIx64 " (in no decoded instruction)\n", s->vaddr);
	}
}

/* What the vtrace lines are. */
static void print_vheader(const struct listing *l)
{
	const struct dcpi_bins *b = &l->vp->bins;

	if (!strcmp(l->vp->kind, "ldlat"))
		printf("vtrace: the latency of the sampled loads as the PMU measured it (precise "
		       "samples, ldlat), in core cycles; samples per bin of");
	else
		printf("vtrace: the measured latency of the sampled loads (%s, %" PRIu64 " process%s), "
		       "in time-stamp counter cycles; samples per bin of", l->vp->kind,
		       l->vp->processes, l->vp->processes == 1 ? "" : "es");
	for (size_t k = 0; k < b->n; k++)
		if (b->v[k].max == UINT64_MAX)
			printf("%s %s %" PRIu64 "+", k ? "," : "", b->v[k].name, b->v[k].min);
		else
			printf("%s %s %" PRIu64 "-%" PRIu64, k ? "," : "", b->v[k].name, b->v[k].min,
			       b->v[k].max);
	printf("; values: the values loaded most often, with their share of the load's samples\n"
	       "(where 16 values or more were seen, the range the count allows, and only the values "
	       "surely 1%% or more)\n");
	if (l->vimg < 0)
		printf("note: no load of this image was value-profiled\n");
}

static void print_text(const struct listing *l)
{
	const struct dcpi_profile *p = dcpi_annot_image_profile(l->img);

	report_print_header(stdout, l->o.co.db, &l->set, l->a.total, &l->w);
	printf("\nProcedure: %s\nImage: %s\nRange: 0x%" PRIx64 "-0x%" PRIx64 " (%zu %s)\n",
	       l->name ? cli_safe(l->name) : "(address range)", cli_safe(p->path), l->a.lo,
	       l->a.hi, l->a.ninsns,
	       l->a.has_code ? "instructions" : "sampled addresses");
	for (size_t i = 0; i < dcpi_annot_image_nnotes(l->img); i++)
		printf("note: %s\n", cli_safe(dcpi_annot_image_note(l->img, i)));
	for (size_t i = 0; i < l->a.nnotes; i++)
		printf("note: %s\n", cli_safe(l->a.notes[i]));
	printf("\nCounts are samples; %% is the share of the procedure's samples%s.\n",
	       l->derived ? "; cpi = cycles per instruction, freq = estimated executions" : "");
	if (l->vp)
		print_vheader(l);
	printf("==============================================================================\n");
	column_heads(l);
	printf(l->o.show == SHOW_ASM ? "  address      instruction\n" : "  line   source\n");
	if (l->o.show == SHOW_ASM)
		for (size_t i = 0; i < l->a.ninsns; i++)
			print_insn(l, &l->a.insns[i], 1);
	else
		print_source(l, l->o.show == SHOW_BOTH);
	print_strays(l);
}

/* ---- JSON --------------------------------------------------------------------------- */

static void json_counts(struct dcpi_json *j, const struct listing *l, const uint64_t *c)
{
	double cpi, freq;

	report_json_counts(j, l->set.nevents, c, l->a.total);
	if (l->derived && dcpi_annot_cpi(&l->set, c, &cpi, &freq)) {
		dcpi_json_key(j, "cpi");
		dcpi_json_fixed(j, cpi, 4);
		dcpi_json_key(j, "freq");
		dcpi_json_fixed(j, freq, 0);
	}
}

/* -vtrace: "vtrace": samples, cycles, mean_cycles; "latency": samples per
 * bin name ("" for none); "values": value (hex), count, share, bound. */
static void json_vload(struct dcpi_json *j, const struct listing *l,
		       const struct dcpi_vprof_load *v)
{
	const struct dcpi_bins *b = &l->vp->bins;

	dcpi_json_key(j, "vtrace");
	dcpi_json_obj_begin(j);
	dcpi_json_key_u64(j, "samples", v->samples);
	dcpi_json_key_u64(j, "cycles", v->cycles);
	dcpi_json_key(j, "mean_cycles");
	dcpi_json_fixed(j, (double)v->cycles / (double)v->samples, 1);
	dcpi_json_obj_end(j);
	dcpi_json_key(j, "latency");
	dcpi_json_obj_begin(j);
	for (size_t k = 0; k < b->n; k++)
		dcpi_json_key_u64(j, b->v[k].name, v->bins[k]);
	if (v->outside)
		dcpi_json_key_u64(j, "", v->outside);
	dcpi_json_obj_end(j);
	dcpi_json_key(j, "values");
	dcpi_json_arr_begin(j);
	for (unsigned k = 0; k < v->nvalues; k++) {
		dcpi_json_obj_begin(j);
		dcpi_json_key(j, "value");
		dcpi_json_strf(j, "0x%" PRIx64, v->values[k].value);
		dcpi_json_key_u64(j, "count", v->values[k].count);
		dcpi_json_key(j, "share");
		dcpi_json_fixed(j, (double)v->values[k].count / (double)v->samples, 4);
		dcpi_json_key_bool(j, "approximate", v->verr != 0);
		dcpi_json_key(j, "share_min");
		dcpi_json_fixed(j, (double)(v->values[k].count > v->verr ? v->values[k].count - v->verr
							       : 0) / (double)v->samples, 4);
		dcpi_json_key(j, "share_max");
		dcpi_json_fixed(j, (double)(v->samples - v->values[k].count > v->verr ?
					     v->values[k].count + v->verr : v->samples) /
				   (double)v->samples, 4);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_key(j, "sources");
	dcpi_json_obj_begin(j);
	for (int k = 0; k < DCPI_SRC_N; k++)
		if (v->sources[k])
			dcpi_json_key_u64(j, dcpi_vprof_source_names[k], v->sources[k]);
	dcpi_json_obj_end(j);
}

static void json_insn(struct dcpi_json *j, const struct listing *l,
		      const struct dcpi_annot_insn *r)
{
	char bytes[2 * sizeof(r->insn.bytes) + 1] = "";

	for (unsigned b = 0; b < r->insn.size && b < sizeof(r->insn.bytes); b++)
		snprintf(bytes + 2 * b, 3, "%02x", r->insn.bytes[b]);
	dcpi_json_obj_begin(j);
	dcpi_json_key(j, "address");
	dcpi_json_strf(j, "0x%" PRIx64, r->insn.vaddr);
	dcpi_json_key(j, "offset");
	dcpi_json_strf(j, "0x%" PRIx64, r->offset);
	dcpi_json_key_str(j, "bytes", bytes);
	dcpi_json_key_str(j, "mnemonic", l->a.has_code ? r->insn.mnemonic : NULL);
	dcpi_json_key_str(j, "operands", l->a.has_code ? r->insn.operands : NULL);
	dcpi_json_key_str(j, "file", r->file);
	dcpi_json_key_u64(j, "line", r->line);
	dcpi_json_key_str(j, "function", r->function);
	dcpi_json_key_str(j, "inlined_into", r->inlined_into);
	dcpi_json_key_u64(j, "line_index", r->line_index);
	json_counts(j, l, r->counts);
	if (vload(l, r))
		json_vload(j, l, vload(l, r));
	dcpi_json_obj_end(j);
}

static void json_line(struct dcpi_json *j, const struct listing *l,
		      const struct dcpi_annot_line *ln)
{
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "file", ln->file);
	dcpi_json_key_u64(j, "line", ln->line);
	dcpi_json_key_str(j, "text", ln->text);
	dcpi_json_key_u64(j, "instructions", ln->ninsns);
	json_counts(j, l, ln->counts);
	dcpi_json_obj_end(j);
}

static void json_stray(struct dcpi_json *j, const struct listing *l,
		       const struct dcpi_annot_stray *s)
{
	dcpi_json_obj_begin(j);
	dcpi_json_key(j, "address");
	dcpi_json_strf(j, "0x%" PRIx64, s->vaddr);
	dcpi_json_key(j, "inside");
	if (s->containing_vaddr)
		dcpi_json_strf(j, "0x%" PRIx64, s->containing_vaddr);
	else
		dcpi_json_null(j);
	json_counts(j, l, s->counts);
	dcpi_json_obj_end(j);
}

static void json_vheader(struct dcpi_json *j, const struct listing *l)
{
	const struct dcpi_bins *b = &l->vp->bins;

	dcpi_json_key(j, "vtrace");
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "kind", l->vp->kind);
	dcpi_json_key_u64(j, "processes", l->vp->processes);
	dcpi_json_key_u64(j, "tsc_hz", l->vp->tsc_hz);
	dcpi_json_key_bool(j, "image_profiled", l->vimg >= 0);
	report_json_bins(j, "bins", b);
	dcpi_json_obj_end(j);
}

static void print_json(const struct listing *l)
{
	struct dcpi_json *j = report_json_begin(l->o.co.db);

	report_json_header(j, &l->set, l->a.total, &l->w);
	dcpi_json_break(j);
	report_json_procedure(j, l->img, l->name, l->a.lo, l->a.hi);
	dcpi_json_key_bool(j, "has_code", l->a.has_code);
	dcpi_json_key_bool(j, "has_lines", l->a.has_lines);
	dcpi_json_key_bool(j, "derived", l->derived);
	if (l->vp)
		json_vheader(j, l);
	dcpi_json_break(j);
	dcpi_json_key(j, "notes");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < dcpi_annot_image_nnotes(l->img); i++)
		dcpi_json_str(j, dcpi_annot_image_note(l->img, i));
	for (size_t i = 0; i < l->a.nnotes; i++)
		dcpi_json_str(j, l->a.notes[i]);
	dcpi_json_arr_end(j);
	REPORT_JSON_ROWS(j, "lines", l->a.nlines, json_line(j, l, &l->a.lines[i_]));
	REPORT_JSON_ROWS(j, "instructions", l->a.ninsns, json_insn(j, l, &l->a.insns[i_]));
	REPORT_JSON_ROWS(j, "strays", l->a.nstrays, json_stray(j, l, &l->a.strays[i_]));
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

/* -vtrace: the value profiles of the chosen epochs and hosts, and the
 * listed image's in them. */
static void open_vtrace(struct listing *l)
{
	const struct dcpi_profile *p = dcpi_annot_image_profile(l->img);
	size_t nbad;
	char *first_bad;

	if (dcpi_vprof_of_set(&l->set, &l->vp, &l->vfiles, &nbad, &first_bad))
		cli_die("%s", dcpi_errmsg());
	if (nbad)
		cli_warn("%zu value profiles unread; the first: %s", nbad, cli_safe(first_bad));
	free(first_bad);
	if (!l->vfiles)
		cli_die("-vtrace: no value profiles in the epochs chosen (dcpi record -vtrace makes "
			"them)");
	if (l->o.co.label)
		cli_warn("-vtrace: value profiles are not kept by label: those of every process");
	l->vimg = dcpi_vprof_image(l->vp, p->path, p->build_id, p->build_id_len);
}

int cmd_dcpilist(int argc, char **argv)
{
	static struct listing l;
	uint64_t lo, hi;
	int cy, in;

	parse_options(&l.o, argc, argv);
	apply_file_opt(&l.o);
	if (dcpi_profset_load(l.o.co.db, l.o.co.epoch, l.o.co.host, &l.set))
		cli_die("%s", dcpi_errmsg());
	if (l.o.co.label)
		report_keep_label(&l.set, l.o.co.label);
	if (l.set.nevents == 0)
		cli_die("%s: no samples in epoch %s", l.o.co.db, l.set.epochs[l.set.nepochs - 1]);
	report_check_set(&l.w, &l.set);
	report_warn_finish(&l.w);
	open_image(&l);
	report_annot_resolve(l.img, l.o.proc, &lo, &hi, &l.name);
	if (dcpi_annotate(l.img, lo, hi, &l.a))
		cli_die("%s", dcpi_errmsg());
	l.derived = dcpi_annot_derived_cols(&l.set, &cy, &in);
	if (l.o.vtrace)
		open_vtrace(&l);
	if (l.o.co.json)
		print_json(&l);
	else
		print_text(&l);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the listing failed");
	dcpi_annotation_free(&l.a);
	dcpi_vprof_free(l.vp);
	dcpi_annot_image_close(l.img);
	dcpi_profset_free(&l.set);
	return 0;
}
