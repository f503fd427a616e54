/* dcpicoverage: which basic blocks and source lines of a procedure, or of
 * every procedure of an image, ran and which did not, from dcpicalc's
 * estimated counts or dcpix's exact ones (libdcpi's coverage.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/coverage.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/source.h"
#include "report.h"

struct opts {
	struct cli_common co;        /* -db -epoch -host -label -json */
	const char *proc, *image;
	int exact;
};

/* One procedure's coverage. */
struct proc {
	const char *name;
	uint64_t lo, hi;
	struct dcpi_annotation a;
	struct dcpi_cfg g;               /* of c, or built here when nothing ran */
	struct dcpi_calc c;
	int estimated;                   /* c holds an estimate */
	struct dcpi_coverage cov;
	uint64_t samples;
};

struct cv {
	struct opts o;
	struct dcpi_profset set;
	struct dcpi_annot_image *img;
	struct dcpi_source_opts src;
	struct dcpi_calc_cols cols;
	struct report_warnings w;
	struct dcpi_json *j;
	size_t nblocks, blocks_ran, nlines, lines_ran, nprocs, procs_ran;
	uint64_t total[DCPI_MAX_EVENTS];   /* the image's samples */
};

static void own_option(void *ctx, int c, const char *arg)
{
	((struct opts *)ctx)->exact = 1; /* -exact, the only one */
	(void)c;
	(void)arg;
}

static const struct option own_opts[] = {
	{ "exact", no_argument, NULL, 256 },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpicoverage", .synopsis = "[options] PROCEDURE IMAGE\n"
					     "       dcpicoverage [options] IMAGE",
	.about = "Which basic blocks and source lines ran and which did not, from estimated\n"
		 "counts (or dcpix's exact ones): one procedure in detail, or every\n"
		 "procedure of an image in summary.\n",
	.common = CLI_SELECT | CLI_JSON,
	.help = "  -exact             exact counts recorded by dcpix(1) instead of estimates\n",
	.footer = "PROCEDURE and IMAGE take every form dcpilist(1) takes.\n",
	.opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	cli_parse(&cli, argc, argv, &o->co, o);
	if (argc - optind == 1) {
		o->image = argv[optind];
	} else if (argc - optind == 2) {
		o->proc = argv[optind];
		o->image = argv[optind + 1];
	} else {
		cli_usage_error("want PROCEDURE IMAGE, or IMAGE");
	}
}

/* ---- one procedure ----------------------------------------------------------------- */

/* Estimate p (or read its exact counts) and its coverage: 0, or an error
 * in dcpi_errmsg() (no code, code that does not decode). */
static int analyse(struct cv *k, struct proc *p)
{
	struct dcpi_calc_cols cols = k->cols;
	uint64_t *exact = NULL;
	int col = cols.mode == DCPI_CALC_RETIRED ? cols.retired : cols.time;
	int err;

	if ((err = dcpi_annotate(k->img, p->lo, p->hi, &p->a)))
		return err;
	for (size_t i = 0; col >= 0 && i < p->a.ninsns; i++)
		p->samples += p->a.insns[i].counts[col];
	if (k->o.exact && (err = dcpi_calc_exact_load(k->o.co.db, k->img, &p->a, &exact)))
		return err;
	cols.exact = exact;
	if (p->samples || exact) {
		err = dcpi_calc_annotation(k->img, &p->a, &cols, &p->c);
		free(exact);
		if (err)
			return err;
		p->estimated = 1;
		return dcpi_coverage_of_calc(&p->a, &p->c, &p->cov);
	}
	/* nothing sampled: the graph only, nothing ran */
	if (!p->a.has_code || !p->a.ninsns)
		return dcpi_error(ENODATA, "no code for 0x%" PRIx64 "-0x%" PRIx64, p->lo, p->hi);
	{
		struct dcpi_cfg_opts co;

		dcpi_calc_image_cfg(k->img, &co);
		if ((err = dcpi_cfg_build(&p->a.insns[0].insn, p->a.ninsns, sizeof(p->a.insns[0]),
					  &co, &p->g)))
			return err;
	}
	return dcpi_coverage_of(&p->a, &p->g, NULL, 0, &p->cov);
}

static void proc_free(struct proc *p)
{
	dcpi_coverage_free(&p->cov);
	dcpi_calc_free(&p->c);
	dcpi_cfg_free(&p->g);
	dcpi_annotation_free(&p->a);
}

static const struct dcpi_cfg *graph(const struct proc *p)
{
	return p->estimated ? &p->c.cfg : &p->g;
}

static double pct(size_t n, size_t d)
{
	return d ? 100.0 * (double)n / (double)d : 0;
}

/* ---- detail: PROCEDURE IMAGE ------------------------------------------------------- */

static void text_detail(const struct cv *k, const struct proc *p)
{
	const struct dcpi_cfg *g = graph(p);

	report_print_header(stdout, k->o.co.db, &k->set, p->a.total, &k->w);
	printf("\nProcedure: %s\nImage: %s\n", p->name ? cli_safe(p->name) : "(address range)",
	       cli_safe(dcpi_annot_image_profile(k->img)->path));
	printf("Blocks ran: %zu of %zu (%.1f%%); lines ran: %zu of %zu (%.1f%%)%s\n",
	       p->cov.blocks_ran, p->cov.nblocks, pct(p->cov.blocks_ran, p->cov.nblocks),
	       p->cov.lines_ran, p->cov.nlines, pct(p->cov.lines_ran, p->cov.nlines),
	       k->o.exact ? " (exact counts)" : " (estimated counts)");
	printf("==============================================================================\n");
	printf("%-6s %-12s %5s %12s %c  %s\n", "block", "address", "insns",
	       p->estimated && !p->c.absolute ? "rel.freq" : "freq", 'c', "ran");
	for (size_t b = 0; b < g->nblocks; b++) {
		char f[32];

		if (p->estimated) /* to its digits; >0: ran, the graph gave it nothing */
			dcpi_block_count_str(&p->c.blocks[b], f, sizeof(f));
		else
			snprintf(f, sizeof(f), "0");
		printf("B%-5zu 0x%-10" PRIx64 " %5zu %12s %c  %s\n", b, g->blocks[b].start,
		       g->blocks[b].ninsns, f, p->estimated ? p->c.blocks[b].conf : '-',
		       p->cov.block_ran[b] == 2 ? "yes (implied by the graph)"
		       : p->cov.block_ran[b] ? "yes" : "NOT RUN");
	}
	printf("\nLines (ran: yes / NOT RUN):\n");
	for (size_t l = 0; l < p->a.nlines; l++) {
		const struct dcpi_annot_line *ln = &p->a.lines[l];

		if (!ln->line || !ln->ninsns)
			continue;
		printf("  %-7s %s:%u", p->cov.line_ran[l] ? "yes" : "NOT RUN",
		       cli_safe(report_base(ln->file)), ln->line);
		if (ln->text)
			printf("  %s", cli_safe(ln->text));
		printf("\n");
	}
}

static void json_detail(struct cv *k, const struct proc *p)
{
	struct dcpi_json *j = report_json_begin(k->o.co.db);
	const struct dcpi_cfg *g = graph(p);

	report_json_header(j, &k->set, p->a.total, &k->w);
	dcpi_json_break(j);
	dcpi_json_key_str(j, "image", dcpi_annot_image_profile(k->img)->path);
	dcpi_json_key_str(j, "procedure", p->name);
	dcpi_json_key_bool(j, "exact", k->o.exact);
	dcpi_json_key_u64(j, "blocks_ran", p->cov.blocks_ran);
	dcpi_json_key_u64(j, "blocks", p->cov.nblocks);
	dcpi_json_key_u64(j, "lines_ran", p->cov.lines_ran);
	dcpi_json_key_u64(j, "lines", p->cov.nlines);
	dcpi_json_break(j);
	dcpi_json_key(j, "block_list");
	dcpi_json_arr_begin(j);
	for (size_t b = 0; b < g->nblocks; b++) {
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_u64(j, "id", b);
		dcpi_json_key(j, "start");
		dcpi_json_strf(j, "0x%" PRIx64, g->blocks[b].start);
		dcpi_json_key(j, "freq");
		dcpi_json_fixed(j, p->estimated ? p->c.blocks[b].freq : 0, 2);
		dcpi_json_key_bool(j, "ran", p->cov.block_ran[b] != 0);
		dcpi_json_key_bool(j, "implied", p->cov.block_ran[b] == 2);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_key(j, "line_list");
	dcpi_json_arr_begin(j);
	for (size_t l = 0; l < p->a.nlines; l++) {
		if (!p->a.lines[l].line || !p->a.lines[l].ninsns)
			continue;
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "file", p->a.lines[l].file);
		dcpi_json_key_u64(j, "line", p->a.lines[l].line);
		dcpi_json_key_bool(j, "ran", p->cov.line_ran[l]);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

static void detail(struct cv *k)
{
	struct proc p = { 0 };

	report_annot_resolve(k->img, k->o.proc, &p.lo, &p.hi, &p.name);
	if (analyse(k, &p))
		cli_die("%s: %s", p.name ? cli_safe(p.name) : "range", dcpi_errmsg());
	if (k->o.co.json)
		json_detail(k, &p);
	else
		text_detail(k, &p);
	proc_free(&p);
}

/* ---- summary: IMAGE ----------------------------------------------------------------- */

static void summary_row(struct cv *k, const struct proc *p)
{
	if (k->j) {
		dcpi_json_break(k->j);
		dcpi_json_obj_begin(k->j);
		dcpi_json_key_str(k->j, "procedure", p->name);
		dcpi_json_key(k->j, "address");
		dcpi_json_strf(k->j, "0x%" PRIx64, p->lo);
		dcpi_json_key_u64(k->j, "blocks_ran", p->cov.blocks_ran);
		dcpi_json_key_u64(k->j, "blocks", p->cov.nblocks);
		dcpi_json_key_u64(k->j, "lines_ran", p->cov.lines_ran);
		dcpi_json_key_u64(k->j, "lines", p->cov.nlines);
		dcpi_json_obj_end(k->j);
		return;
	}
	printf("%5zu/%-5zu %6.1f%%  %5zu/%-5zu %6.1f%%  0x%-10" PRIx64 " %s\n",
	       p->cov.blocks_ran, p->cov.nblocks, pct(p->cov.blocks_ran, p->cov.nblocks),
	       p->cov.lines_ran, p->cov.nlines, pct(p->cov.lines_ran, p->cov.nlines), p->lo,
	       cli_safe(p->name));
}

static void summary_proc(struct cv *k, const struct dcpi_sym *s)
{
	struct proc p = { 0 };

	p.name = dcpi_sym_demangled(s);
	p.lo = s->vaddr;
	p.hi = s->vaddr + s->size;
	if (analyse(k, &p)) {
		if (p.samples)   /* after the header: said on stderr */
			fprintf(stderr, "%s: warning: %s: %s; left out\n", cli_prog,
				cli_safe(dcpi_sym_demangled(s)), dcpi_errmsg());
		proc_free(&p);
		return;
	}
	summary_row(k, &p);
	k->nprocs++;
	k->procs_ran += p.cov.blocks_ran > 0;
	k->nblocks += p.cov.nblocks;
	k->blocks_ran += p.cov.blocks_ran;
	k->nlines += p.cov.nlines;
	k->lines_ran += p.cov.lines_ran;
	proc_free(&p);
}

static void summary(struct cv *k)
{
	const struct dcpi_symtab *st = dcpi_annot_image_symtab(k->img);
	uint64_t last = UINT64_MAX;
	size_t n;
	const struct dcpi_annot_sample *smp = dcpi_annot_image_samples(k->img, &n);

	if (!dcpi_annot_image_has_code(k->img))
		cli_die("%s: no code to find blocks in%s%s",
			cli_safe(dcpi_annot_image_profile(k->img)->path), dcpi_annot_image_nnotes(k->img) ? ": " : "",
			dcpi_annot_image_nnotes(k->img) ? dcpi_annot_image_note(k->img, 0) : "");
	for (size_t i = 0; i < n; i++)
		for (unsigned e = 0; e < k->set.nevents; e++)
			k->total[e] += smp[i].counts[e];
	if (k->o.co.json) {
		k->j = report_json_begin(k->o.co.db);
		report_json_header(k->j, &k->set, k->total, &k->w);
		dcpi_json_break(k->j);
		dcpi_json_key_str(k->j, "image", dcpi_annot_image_profile(k->img)->path);
		dcpi_json_key_bool(k->j, "exact", k->o.exact);
		dcpi_json_key(k->j, "procedures");
		dcpi_json_arr_begin(k->j);
	} else {
		report_print_header(stdout, k->o.co.db, &k->set, k->total, &k->w);
		printf("\nImage: %s (%s counts)\n", cli_safe(dcpi_annot_image_profile(k->img)->path),
		       k->o.exact ? "exact" : "estimated");
		printf("==============================================================================\n");
		printf("%11s %7s  %11s %7s  %-12s %s\n", "blocks ran", "%", "lines ran", "%",
		       "address", "procedure");
	}
	for (size_t i = 0; i < dcpi_symtab_count(st); i++) {
		const struct dcpi_sym *s = dcpi_symtab_sym(st, i);

		if (!s->size || s->vaddr == last)   /* aliases: once */
			continue;
		last = s->vaddr;
		summary_proc(k, s);
	}
	if (k->j) {
		dcpi_json_arr_end(k->j);
		dcpi_json_break(k->j);
		dcpi_json_key_u64(k->j, "procedures_ran", k->procs_ran);
		dcpi_json_key_u64(k->j, "blocks_ran", k->blocks_ran);
		dcpi_json_key_u64(k->j, "blocks", k->nblocks);
		dcpi_json_key_u64(k->j, "lines_ran", k->lines_ran);
		dcpi_json_key_u64(k->j, "lines", k->nlines);
		dcpi_json_obj_end(k->j);
		dcpi_json_free(k->j);
		return;
	}
	printf("\nProcedures ran: %zu of %zu; blocks: %zu of %zu (%.1f%%); lines: %zu of %zu "
	       "(%.1f%%)\n", k->procs_ran, k->nprocs, k->blocks_ran, k->nblocks,
	       pct(k->blocks_ran, k->nblocks), k->lines_ran, k->nlines,
	       pct(k->lines_ran, k->nlines));
}

int cmd_dcpicoverage(int argc, char **argv)
{
	static struct cv k;

	parse_options(&k.o, argc, argv);
	report_set_load(&k.set, k.o.co.db, k.o.co.epoch, k.o.co.host, k.o.co.label);
	report_check_set(&k.w, &k.set);
	report_warn_finish(&k.w);
	report_calc_cols(&k.set, k.o.exact ? (int)DCPI_CALC_EXACT : -1, &k.cols);
	k.img = report_annot_open(&k.set, k.o.co.db, k.o.image, &k.src);
	if (k.o.proc)
		detail(&k);
	else
		summary(&k);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	dcpi_annot_image_close(k.img);
	dcpi_profset_free(&k.set);
	return 0;
}
