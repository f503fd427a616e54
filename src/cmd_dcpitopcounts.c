/* dcpitopcounts: the instructions with the most samples, across images,
 * with DCPI's columns: counts, procedure, address, instruction, image,
 * source file:line. */
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
#include "dcpi/vprof.h"
#include "report.h"

#define MAX_OPEN 4096   /* image identities opened in one report */

struct opts {
	struct cli_common co;        /* -db -epoch -host -label -json IMAGE... */
	const char *sort;
	unsigned long long n;
	int vtrace, invariant;
};

struct cand {
	size_t img;             /* into imgs, or (raw) into raws */
	int raw;
	const struct dcpi_annot_sample *s;
};

/* An image whose file could not be read: its samples by file offset
 * (vaddr holds the offset), still ranked and shown. */
struct raw {
	const struct dcpi_profile *prof;
	struct dcpi_annot_sample *s;
	size_t n;
};

/* One output row, resolved. */
struct top {
	const struct cand *c;
	char proc[512];
	char insn[256];
	const char *file;
	unsigned line;
};

struct tc {
	struct opts o;
	struct dcpi_profset set;
	struct dcpi_annot_image *imgs[MAX_OPEN];
	size_t nimgs;
	struct raw raws[MAX_OPEN];
	size_t nraws;
	struct cand *cands;
	size_t ncands;
	uint64_t total[DCPI_MAX_EVENTS];
	int sortcol, failed_named;
	struct dcpi_selection sel;
	struct dcpi_objcache *objs;
	struct report_warnings w;
};

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	if (c == 'n')
		o->n = cli_parse_count("n", arg);
	else if (c == 257)
		o->vtrace = 1;
	else if (c == 258)
		o->vtrace = o->invariant = 1;
	else
		o->sort = arg; /* -sort */
}

static const struct option own_opts[] = {
	{ "n", required_argument, NULL, 'n' },
	{ "sort", required_argument, NULL, 256 },
	{ "vtrace", no_argument, NULL, 257 },
	{ "invariant", no_argument, NULL, 258 },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpitopcounts", .synopsis = "[options] [IMAGE...]",
	.about = "The instructions with the most samples, in the given images or in all.\n",
	.common = CLI_SELECT | CLI_JSON | CLI_IMAGES,
	.help = "  -n N               how many instructions (default 20)\n"
		"  -sort EVENT        order by this event (default: the first)\n"
		"  -vtrace            the loads with the most measured latency (their cycles\n"
		"                     summed over their samples; value profiles: dcpi record\n"
		"                     -vtrace), instead of the instructions with the most samples\n"
		"  -invariant         the value-profiled loads that loaded one value every time\n"
		"                     (8 samples or more): candidates for specialisation\n",
	.footer = "IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n",
	.shortopts = "n:", .opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	o->n = 20;
	cli_parse(&cli, argc, argv, &o->co, o);
}

/* ---- images ---------------------------------------------------------------------- */

static int cmp_sample(const void *a, const void *b)
{
	const struct dcpi_annot_sample *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* The group's rows by offset, summed over its profiles. */
static void open_raw(struct tc *t, const size_t *idx, size_t n)
{
	struct raw *r = &t->raws[t->nraws];
	size_t total = 0, k = 0;

	for (size_t i = 0; i < n; i++)
		total += t->set.v[idx[i]].prof.nrows;
	if (!(r->s = calloc(total ? total : 1, sizeof(*r->s))))
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_profile *p = &t->set.v[idx[i]].prof;

		for (size_t j = 0; j < p->nrows; j++, k++) {
			r->s[k].vaddr = p->offsets[j];
			for (unsigned e = 0; e < p->nevents; e++) {
				int col = dcpi_profset_event(&t->set, p->events[e].name);

				if (col >= 0)
					r->s[k].counts[col] = p->counts[j * p->nevents + e];
			}
		}
	}
	qsort(r->s, total, sizeof(*r->s), cmp_sample);
	for (size_t j = 0; j < total; j++) { /* coalesce equal offsets */
		if (r->n && r->s[r->n - 1].vaddr == r->s[j].vaddr) {
			for (unsigned e = 0; e < DCPI_MAX_EVENTS; e++)
				r->s[r->n - 1].counts[e] += r->s[j].counts[e];
			continue;
		}
		r->s[r->n++] = r->s[j];
	}
	r->prof = &t->set.v[idx[0]].prof;
	t->nraws++;
}

static void open_group(struct tc *t, const size_t *idx, size_t n)
{
	const struct dcpi_profile *p = &t->set.v[idx[0]].prof;
	struct dcpi_annot_opts ao = { NULL, NULL, NULL, 1, t->objs };
	struct dcpi_annot_image *img;

	if (t->nimgs + t->nraws >= MAX_OPEN) {
		report_warn(&t->w, "more than %d images: %s and later ones are left out", MAX_OPEN,
			    p->path);
		return;
	}
	if (dcpi_annot_image_open(&t->set, idx, n, &ao, &img)) {
		report_warn(&t->w, "%s%s%s; its samples are shown by file offset",
			    strstr(dcpi_errmsg(), p->path) ? "" : p->path,
			    strstr(dcpi_errmsg(), p->path) ? "" : ": ", dcpi_errmsg());
		t->failed_named |= t->o.co.nimages > 0;
		open_raw(t, idx, n);
		return;
	}
	for (size_t i = 0; i < dcpi_annot_image_nnotes(img); i++)
		report_warn(&t->w, "%s: %s", report_base(p->path), dcpi_annot_image_note(img, i));
	t->imgs[t->nimgs++] = img;
}

/* Open each image identity the arguments name. */
static void open_images(struct tc *t)
{
	uint64_t nocode = 0;

	if (dcpi_select(&t->set, t->o.co.images, t->o.co.nimages, &t->sel))
		cli_die("%s", dcpi_errmsg());
	t->objs = report_objcache(t->o.co.db);
	for (size_t k = 0; k < t->sel.ngroups; k++) {
		const struct dcpi_image_group *g = &t->sel.groups[k];
		const struct dcpi_profile *p = &t->set.v[g->idx[0]].prof;

		if (p->kind == DCPI_IMAGE_ANON || p->kind == DCPI_IMAGE_UNKNOWN)
			nocode += g->samples;
		else
			open_group(t, g->idx, g->n);
	}
	if (nocode)
		report_warn(&t->w, "%" PRIu64 " samples in anonymous memory or in no image are "
			    "not instructions of an image and are left out", nocode);
}

/* ---- ranking ----------------------------------------------------------------------- */

static int sortcol;

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->s->counts[sortcol] != y->s->counts[sortcol])
		return x->s->counts[sortcol] > y->s->counts[sortcol] ? -1 : 1;
	if (x->raw != y->raw)
		return x->raw < y->raw ? -1 : 1;
	if (x->img != y->img)
		return x->img < y->img ? -1 : 1;
	return x->s->vaddr < y->s->vaddr ? -1 : x->s->vaddr > y->s->vaddr;
}

static void add_cand(struct tc *t, size_t *k, size_t img, int raw,
		     const struct dcpi_annot_sample *s)
{
	for (unsigned e = 0; e < t->set.nevents; e++)
		t->total[e] += s->counts[e];
	t->cands[(*k)++] = (struct cand){ img, raw, s };
}

static void rank(struct tc *t)
{
	size_t total = 0, k = 0;

	for (size_t i = 0; i < t->nimgs; i++) {
		size_t n;

		dcpi_annot_image_samples(t->imgs[i], &n);
		total += n;
	}
	for (size_t i = 0; i < t->nraws; i++)
		total += t->raws[i].n;
	t->cands = calloc(total ? total : 1, sizeof(*t->cands));
	if (!t->cands)
		cli_die("out of memory");
	for (size_t i = 0; i < t->nimgs; i++) {
		size_t n;
		const struct dcpi_annot_sample *s = dcpi_annot_image_samples(t->imgs[i], &n);

		for (size_t j = 0; j < n; j++)
			add_cand(t, &k, i, 0, &s[j]);
	}
	for (size_t i = 0; i < t->nraws; i++)
		for (size_t j = 0; j < t->raws[i].n; j++)
			add_cand(t, &k, i, 1, &t->raws[i].s[j]);
	t->ncands = k;
	sortcol = t->sortcol;
	if (k)
		qsort(t->cands, k, sizeof(*t->cands), cmp_cand);
}

static void resolve(struct tc *t, const struct cand *c, struct top *r)
{
	struct dcpi_annot_image *img;
	const struct dcpi_symtab *st;
	const struct dcpi_sym *s;
	struct dcpi_insn in;
	int err;
	struct dcpi_srcloc loc;
	uint64_t off;

	r->c = c;
	r->file = "??";
	r->line = 0;
	if (c->raw) { /* the address is a file offset: say so */
		snprintf(r->proc, sizeof(r->proc), "%s", "(image unreadable: file offset)");
		snprintf(r->insn, sizeof(r->insn), "%s", "(code not available)");
		return;
	}
	img = t->imgs[c->img];
	st = dcpi_annot_image_symtab(img);
	s = dcpi_symtab_lookup_vaddr(st, c->s->vaddr);
	if (s)
		snprintf(r->proc, sizeof(r->proc), "%s", dcpi_sym_demangled(s));
	else if (!dcpi_symtab_vaddr2off(st, c->s->vaddr, &off))
		dcpi_symtab_describe(st, off, r->proc, sizeof(r->proc));
	else
		snprintf(r->proc, sizeof(r->proc), "??");
	err = dcpi_annot_image_insn(img, c->s->vaddr, &in);
	if (!err)
		snprintf(r->insn, sizeof(r->insn), "%s%s%s", in.mnemonic, in.operands[0] ? " " : "",
			 in.operands);
	else if (err == -EDOM) /* a sample inside an instruction: no made-up decoding */
		snprintf(r->insn, sizeof(r->insn), "(inside 0x%" PRIx64 ")", in.vaddr);
	else
		snprintf(r->insn, sizeof(r->insn), "%s", "(code not available)");
	if (!dcpi_annot_image_srcloc(img, c->s->vaddr, &loc)) {
		r->file = loc.file;
		r->line = loc.line;
	}
}

/* ---- output ----------------------------------------------------------------------- */

static const char *image_path(const struct tc *t, const struct top *r)
{
	return r->c->raw ? t->raws[r->c->img].prof->path
			 : dcpi_annot_image_profile(t->imgs[r->c->img])->path;
}

static void print_row(const struct tc *t, const struct top *r)
{
	for (unsigned e = 0; e < t->set.nevents; e++)
		printf("%10" PRIu64 " %6.2f%% ", r->c->s->counts[e],
		       report_pct(r->c->s->counts[e], t->total[e]));
	printf(" %-28s 0x%-12" PRIx64 " %-36s %s", cli_safe(r->proc), r->c->s->vaddr,
	       cli_safe(r->insn), cli_safe(report_base(image_path(t, r))));
	if (r->line)
		printf(" %s:%u", cli_safe(report_base(r->file)), r->line);
	printf("\n");
}

static void print_text(const struct tc *t, const struct top *rows, size_t n)
{
	report_print_header(stdout, t->o.co.db, &t->set, t->total, &t->w);
	printf("\nThe numbers given below are the number of samples for each listed event type,\n"
	       "and their share of the samples of the images listed.\n");
	printf("==============================================================================\n");
	for (unsigned e = 0; e < t->set.nevents; e++)
		printf("%10s %7s ", cli_safe(t->set.events[e]), "%");
	printf(" %-28s %-14s %-36s %s\n", "procedure", "address", "instruction", "image  file:line");
	for (size_t i = 0; i < n; i++)
		print_row(t, &rows[i]);
}

static void print_json(const struct tc *t, const struct top *rows, size_t n)
{
	struct dcpi_json *j = report_json_begin(t->o.co.db);

	report_json_header(j, &t->set, t->total, &t->w);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++) {
		const struct top *r = &rows[i];

		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "image", image_path(t, r));
		dcpi_json_key_str(j, "procedure", r->proc);
		dcpi_json_key(j, "address");
		dcpi_json_strf(j, "0x%" PRIx64, r->c->s->vaddr);
		dcpi_json_key_str(j, "instruction", r->insn);
		dcpi_json_key_str(j, "file", r->file);
		dcpi_json_key_u64(j, "line", r->line);
		report_json_counts(j, t->set.nevents, r->c->s->counts, t->total);
		dcpi_json_obj_end(j);
	}
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

/* ---- -vtrace: loads by measured latency ------------------------------------------ */

struct vrow {
	const struct dcpi_vprof_load *l;
	struct dcpi_annot_sample s;     /* its address (vaddr), for resolve() */
	struct cand c;
	struct top r;
};

/* Ties: by image, then offset. */
static int cmp_vrow_place(const struct vrow *x, const struct vrow *y)
{
	if (x->c.img != y->c.img)
		return x->c.img < y->c.img ? -1 : 1;
	return x->l->off < y->l->off ? -1 : x->l->off > y->l->off;
}

static int cmp_vrow_samples(const void *a, const void *b)
{
	const struct vrow *x = a, *y = b;

	if (x->l->samples != y->l->samples)
		return x->l->samples > y->l->samples ? -1 : 1;
	return cmp_vrow_place(x, y);
}

static int cmp_vrow(const void *a, const void *b)
{
	const struct vrow *x = a, *y = b;

	if (x->l->cycles != y->l->cycles)
		return x->l->cycles > y->l->cycles ? -1 : 1;
	return cmp_vrow_place(x, y);
}

/* -invariant's text: each load's samples, its one value, where it is. */
static void invariant_text(const struct dcpi_vprof *vp, const struct vrow *v, size_t n,
			   struct tc *t)
{
	printf("\nThe loads that loaded one value every time they were sampled (%s, %d samples "
	       "or more):\ncandidates for specialisation.  A sampled value, not a proof: "
	       "a value the samples\nmissed is not excluded.\n", vp->kind, DCPI_VPROF_INVARIANT_MIN);
	printf("==============================================================================\n");
	printf("%8s %-18s %-28s %-14s %-36s %s\n", "samples", "value", "procedure", "address",
	       "instruction", "image");
	for (size_t i = 0; i < n; i++)
		printf("%8" PRIu64 " 0x%-16" PRIx64 " %-28s 0x%-12" PRIx64 " %-36s %s\n",
		       v[i].l->samples, v[i].l->values[0].value, cli_safe(v[i].r.proc), v[i].s.vaddr,
		       cli_safe(v[i].r.insn), cli_safe(report_base(image_path(t, &v[i].r))));
	if (!n)
		printf("(none)\n");
}

static void vtrace_report(struct tc *t)
{
	struct dcpi_vprof *vp;
	struct vrow *v;
	size_t nfiles, nbad, n = 0, left = 0;
	uint64_t all = 0;
	char *first_bad;

	if (dcpi_vprof_of_set(&t->set, &vp, &nfiles, &nbad, &first_bad))
		cli_die("%s", dcpi_errmsg());
	if (nbad)
		report_warn(&t->w, "%zu value profiles unread; the first: %s", nbad, first_bad);
	free(first_bad);
	if (!nfiles)
		cli_die("-vtrace: no value profiles in the epochs chosen (dcpi record -vtrace makes "
			"them)");
	if (!(v = calloc(vp->nloads + 1, sizeof(*v))))
		cli_die("out of memory");
	for (size_t i = 0; i < vp->nloads; i++) {
		const struct dcpi_vprof_load *l = &vp->loads[i];
		const struct dcpi_vprof_image *im = &vp->images[l->image];
		uint64_t va, value;
		size_t k;

		if (t->o.invariant && !dcpi_vprof_invariant(l, &value))
			continue;
		for (k = 0; k < t->nimgs; k++) {
			const struct dcpi_profile *p = dcpi_annot_image_profile(t->imgs[k]);

			if (!strcmp(p->path, im->path) && p->build_id_len == im->build_id_len &&
			    !memcmp(p->build_id, im->build_id, im->build_id_len))
				break;
		}
		if (k == t->nimgs ||
		    dcpi_symtab_off2vaddr(dcpi_annot_image_symtab(t->imgs[k]), l->off, &va)) {
			left++; /* of an image not chosen, not sampled, or unreadable */
			continue;
		}
		v[n].l = l;
		v[n].s.vaddr = va;
		v[n].c = (struct cand){ k, 0, &v[n].s };
		all = all > UINT64_MAX - l->cycles ? UINT64_MAX : all + l->cycles;
		n++;
	}
	if (left)
		report_warn(&t->w, "%zu value-profiled loads in images not listed here (not chosen, "
			    "not sampled, or unreadable) are left out", left);
	report_warn_finish(&t->w);
	qsort(v, n, sizeof(*v), t->o.invariant ? cmp_vrow_samples : cmp_vrow);
	if (n > t->o.n)
		n = (size_t)t->o.n;
	for (size_t i = 0; i < n; i++) {
		v[i].c.s = &v[i].s;
		resolve(t, &v[i].c, &v[i].r);
	}
	if (t->o.co.json) {
		struct dcpi_json *j = report_json_begin(t->o.co.db);

		report_json_header(j, &t->set, t->total, &t->w);
		dcpi_json_key_u64(j, "processes", vp->processes);
		dcpi_json_key_u64(j, "cycles", all);
		dcpi_json_key_bool(j, "invariant", t->o.invariant);
		dcpi_json_break(j);
		dcpi_json_key(j, "loads");
		dcpi_json_arr_begin(j);
		for (size_t i = 0; i < n; i++) {
			const struct dcpi_vprof_load *l = v[i].l;
			int b = dcpi_vprof_top_bin(vp, l);

			dcpi_json_break(j);
			dcpi_json_obj_begin(j);
			dcpi_json_key_str(j, "image", image_path(t, &v[i].r));
			dcpi_json_key_str(j, "procedure", v[i].r.proc);
			dcpi_json_key(j, "address");
			dcpi_json_strf(j, "0x%" PRIx64, v[i].s.vaddr);
			dcpi_json_key_str(j, "instruction", v[i].r.insn);
			dcpi_json_key_u64(j, "samples", l->samples);
			dcpi_json_key_u64(j, "cycles", l->cycles);
			dcpi_json_key(j, "mean_cycles");
			dcpi_json_fixed(j, (double)l->cycles / (double)l->samples, 1);
			dcpi_json_key_str(j, "bin", b < 0 ? NULL : vp->bins.v[b].name);
			dcpi_json_key_u64(j, "bin_samples", b < 0 ? 0 : l->bins[b]);
			if (t->o.invariant) {
				dcpi_json_key(j, "value");
				dcpi_json_strf(j, "0x%" PRIx64, l->values[0].value);
			}
			dcpi_json_obj_end(j);
		}
		dcpi_json_break(j);
		dcpi_json_arr_end(j);
		dcpi_json_obj_end(j);
		dcpi_json_free(j);
	} else {
		report_print_header(stdout, t->o.co.db, &t->set, t->total, &t->w);
		if (t->o.invariant) {
			invariant_text(vp, v, n, t);
			goto out;
		}
		printf("\nThe loads with the most measured latency (%s):\ntheir %s summed over their "
		       "samples and the share of all loads' cycles, samples,\nmean cycles, and the "
		       "latency bin most of them fell in, with its share.\n",
		       strcmp(vp->kind, "ldlat") ? "value profiler" : "precise samples, ldlat",
		       strcmp(vp->kind, "ldlat") ? "time-stamp counter cycles" : "core cycles");
		printf("==============================================================================\n");
		printf("%12s %7s %8s %8s %-16s %-28s %-14s %-36s %s\n", "cycles", "%", "samples",
		       "mean", "bin", "procedure", "address", "instruction", "image");
		for (size_t i = 0; i < n; i++) {
			const struct dcpi_vprof_load *l = v[i].l;
			int b = dcpi_vprof_top_bin(vp, l);
			char bin[48] = "(none)";

			if (b >= 0)
				snprintf(bin, sizeof(bin), "%s %.0f%%", vp->bins.v[b].name,
					 report_pct(l->bins[b], l->samples));
			printf("%12" PRIu64 " %6.2f%% %8" PRIu64 " %8.1f %-16s %-28s 0x%-12" PRIx64
			       " %-36s %s\n", l->cycles, report_pct(l->cycles, all), l->samples,
			       (double)l->cycles / (double)l->samples, bin, cli_safe(v[i].r.proc),
			       v[i].s.vaddr, cli_safe(v[i].r.insn),
			       cli_safe(report_base(image_path(t, &v[i].r))));
		}
	}
out:
	free(v);
	dcpi_vprof_free(vp);
}

int cmd_dcpitopcounts(int argc, char **argv)
{
	static struct tc t;
	struct top *rows = NULL;
	size_t n;
	int status;

	parse_options(&t.o, argc, argv);
	if (dcpi_profset_load(t.o.co.db, t.o.co.epoch, t.o.co.host, &t.set))
		cli_die("%s", dcpi_errmsg());
	if (t.o.co.label)
		report_keep_label(&t.set, t.o.co.label);
	if (t.set.nevents == 0)
		cli_die("%s: no samples in epoch %s", t.o.co.db, t.set.epochs[t.set.nepochs - 1]);
	t.sortcol = 0;
	if (t.o.sort && (t.sortcol = dcpi_profset_event(&t.set, t.o.sort)) < 0)
		cli_die("-sort: no event '%s' in these profiles", t.o.sort);
	report_check_set(&t.w, &t.set);
	open_images(&t);
	status = report_unmatched(&t.set, t.o.co.images, t.o.co.nimages, t.sel.matched);
	rank(&t); /* the event totals too, which -vtrace's header prints */
	if (t.o.vtrace) {
		vtrace_report(&t);
		goto done;
	}
	report_warn_finish(&t.w);
	n = t.ncands < t.o.n ? t.ncands : (size_t)t.o.n;
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows)
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++)
		resolve(&t, &t.cands[i], &rows[i]);
	if (t.o.co.json)
		print_json(&t, rows, n);
	else
		print_text(&t, rows, n);
done:
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	if (t.failed_named) {
		fprintf(stderr, "%s: error: a named image could not be read (see the warnings)\n",
			cli_prog);
		status = 1;
	}
	free(rows);
	free(t.cands);
	for (size_t i = 0; i < t.nimgs; i++)
		dcpi_annot_image_close(t.imgs[i]);
	for (size_t i = 0; i < t.nraws; i++)
		free(t.raws[i].s);
	dcpi_objcache_free(t.objs); /* after the images, which borrow from it */
	dcpi_selection_free(&t.sel);
	dcpi_profset_free(&t.set);
	return status;
}
