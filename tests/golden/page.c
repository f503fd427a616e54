/* A report command on one page: what the option spine (cli.h) and the
 * report skeleton (report_main, report.h) leave a new report to write --
 * its options, its rows, and its text, JSON and CSV.  Per image: the
 * samples of the time column, the instructions sampled, and the hottest
 * one.  Built and checked against dcpiprof and dcpitopcounts by
 * tests/golden/page.sh; docs/architecture.md points here. */
#include <inttypes.h>
#include <stdio.h>

#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/json.h"
#include "dcpi/symtab.h"
#include "report.h"

struct row { const char *image, *proc; uint64_t samples, insns, hot_vaddr, hot; };

static struct page {
	struct report_base b;        /* first: the skeleton's */
	struct row rows[REPORT_MAX_OPEN];
	uint64_t total[DCPI_MAX_EVENTS];
} t;

static const struct cli_cmd cli = {
	.name = "page", .synopsis = "[options] [IMAGE...]",
	.about = "Each image's samples of the time column, and its hottest instruction.\n",
	.common = CLI_SELECT | CLI_JSON | CLI_CSV | CLI_IMAGES,
};

static void analyse(void *ctx)
{
	for (size_t i = 0; i < t.b.r.nimgs; i++) {
		struct row *r = &t.rows[i];
		const struct dcpi_symtab *st = dcpi_annot_image_symtab(t.b.r.imgs[i]);
		const struct dcpi_sym *sym;
		size_t n;
		const struct dcpi_annot_sample *s = dcpi_annot_image_samples(t.b.r.imgs[i], &n);

		r->image = report_base(dcpi_annot_image_profile(t.b.r.imgs[i])->path);
		for (size_t k = 0; k < n; k++) {
			uint64_t c = s[k].counts[t.b.r.cols->time];

			for (unsigned e = 0; e < t.b.r.set.nevents; e++)
				t.total[e] += s[k].counts[e];
			r->samples += c;
			r->insns += c > 0;
			if (c > r->hot)
				r->hot = c, r->hot_vaddr = s[k].vaddr;
		}
		sym = st && r->hot ? dcpi_symtab_lookup_vaddr(st, r->hot_vaddr) : NULL;
		r->proc = sym ? dcpi_sym_demangled(sym) : "";
	}
	(void)ctx;
}

static void text(void *ctx)
{
	report_print_header(stdout, t.b.o.db, &t.b.r.set, t.total, &t.b.w);
	printf("\n%-18s %10s %8s %-20s %-10s %8s\n", "image", "samples", "insns", "hottest in",
	       "at", "samples");
	for (size_t i = 0; i < t.b.r.nimgs; i++)
		printf("%-18s %10" PRIu64 " %8" PRIu64 " %-20s 0x%08" PRIx64 " %8" PRIu64 "\n",
		       cli_safe(t.rows[i].image), t.rows[i].samples, t.rows[i].insns,
		       cli_safe(t.rows[i].proc), t.rows[i].hot_vaddr, t.rows[i].hot);
	(void)ctx;
}

static void json(void *ctx)
{
	struct dcpi_json *j = report_json_begin(t.b.o.db);

	report_json_header(j, &t.b.r.set, t.total, &t.b.w);
	dcpi_json_break(j);
	dcpi_json_key(j, "images");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < t.b.r.nimgs; i++) {
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "image", t.rows[i].image);
		dcpi_json_key(j, "samples");
		dcpi_json_u64(j, t.rows[i].samples);
		dcpi_json_key(j, "instructions");
		dcpi_json_u64(j, t.rows[i].insns);
		dcpi_json_key_str(j, "hottest_procedure", t.rows[i].proc);
		dcpi_json_key(j, "hottest");
		dcpi_json_strf(j, "0x%" PRIx64, t.rows[i].hot_vaddr);
		dcpi_json_key(j, "hottest_samples");
		dcpi_json_u64(j, t.rows[i].hot);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
	(void)ctx;
}

static void csv(void *ctx)
{
	printf("image,samples,instructions,hottest_procedure,hottest,hottest_samples\n");
	for (size_t i = 0; i < t.b.r.nimgs; i++) {
		report_csv_field(stdout, t.rows[i].image);
		printf(",%" PRIu64 ",%" PRIu64 ",", t.rows[i].samples, t.rows[i].insns);
		report_csv_field(stdout, t.rows[i].proc);
		printf(",0x%" PRIx64 ",%" PRIu64 "\n", t.rows[i].hot_vaddr, t.rows[i].hot);
	}
	(void)ctx;
}

int main(int argc, char **argv)
{
	static const struct report_kind k = { &cli, "no samples to report", analyse, text, json,
					      csv, NULL };

	cli_prog = "page";
	return report_main(&k, &t.b, &t, argc, argv);
}
