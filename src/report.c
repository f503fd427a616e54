/* What the report commands share: see report.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/db.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/imagecache.h"
#include "dcpi/json.h"
#include "dcpi/obj.h"
#include "dcpi/select.h"
#include "dcpi/stats.h"
#include "dcpi/symtab.h"
#include "dcpi/bins.h"
#include "report.h"

void report_warn(struct report_warnings *w, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (w->n == REPORT_MAX_WARNINGS - 1) { /* the last slot says how many more */
		w->dropped++;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		w->v[w->n++] = s;
	va_end(ap);
}

void report_warn_finish(struct report_warnings *w)
{
	size_t d = w->dropped;

	if (!d)
		return;
	w->dropped = 0;
	w->n = REPORT_MAX_WARNINGS - 2; /* makes room for the count */
	free(w->v[w->n]);
	report_warn(w, "%zu more warnings not shown", d + 1);
}

/* What a warning says, past the image it is about: the text after the
 * first ": " of a warning that starts with a path or a [label]; else all
 * of it.  Warnings of one kind are counted on one line. */
static const char *warn_kind(const char *msg)
{
	const char *k = msg[0] == '/' || msg[0] == '[' ? strstr(msg, ": ") : NULL;

	return k ? k + 2 : msg;
}

void report_warn_print(const struct report_warnings *w, const char *prefix)
{
	for (size_t i = 0; i < w->n; i++) {
		const char *kind = warn_kind(w->v[i]);
		size_t same = 0, first = i;

		for (size_t j = 0; j < w->n && !cli_verbose; j++)
			if (!strcmp(warn_kind(w->v[j]), kind)) {
				same++;
				first = j < first ? j : first;
			}
		if (cli_verbose || same <= 1)
			fprintf(stderr, "%s: warning: %s%s\n", cli_prog, prefix, cli_safe(w->v[i]));
		else if (first == i)
			fprintf(stderr, "%s: warning: %s%zu images: %s (-v lists them)\n", cli_prog,
				prefix, same, cli_safe(kind));
	}
}


/* Bounded: the set's sums never wrap (dcpi_profset_load) so a part is at
 * most its whole, and if a caller's is not, no share above 100% is printed. */
double report_pct(uint64_t n, uint64_t t)
{
	return t ? 100.0 * (double)(n < t ? n : t) / (double)t : 0;
}

void report_check_set(struct report_warnings *w, const struct dcpi_profset *set)
{
	const struct dcpi_epoch_stats *st = &set->stats;

	if (set->nbad)
		report_warn(w, "%zu profile(s) could not be read and are left out; the first: %s",
			    set->nbad, set->first_bad);
	if (set->nbad_stats)
		report_warn(w, "%zu statistics file(s) refused and left out of the header's "
			    "counts; the first: %s", set->nbad_stats, set->first_bad_stats);
	if (st->lost)
		report_warn(w, "%" PRIu64 " samples were lost (%.2f%%): the profile under-counts",
			    st->lost, report_pct(st->lost, st->samples + st->lost));
	if (st->samples && st->unknown * 100 > st->samples)
		report_warn(w, "%" PRIu64 " samples (%.2f%%) map to no image", st->unknown,
			    report_pct(st->unknown, st->samples));
}

const char *report_base(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/* Images whose name shares the argument's stem (before its first '.'),
 * up to five, each once: "did you mean" for a name almost right. */
void report_suggest(const struct dcpi_profset *set, const char *want)
{
	const char *shown[5];
	size_t nshown = 0, stem = strcspn(want, ".");

	for (size_t i = 0; i < set->n && nshown < 5; i++) {
		const char *b = report_base(set->v[i].prof.path);
		size_t k = 0;

		if (stem == 0 || strncmp(b, want, stem) || set->v[i].prof.kind != DCPI_IMAGE_FILE)
			continue;
		while (k < nshown && strcmp(shown[k], b))
			k++;
		if (k == nshown)
			shown[nshown++] = b;
	}
	for (size_t k = 0; k < nshown; k++)
		fprintf(stderr, "%s %s", k ? "," : "similar images:", cli_safe(shown[k]));
	if (nshown)
		fputc('\n', stderr);
}

int report_any_matched(const char *const *matched, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (matched[i])
			return 1;
	return 0;
}

int report_unmatched(const struct dcpi_profset *set, const char *const *images, size_t n,
		     const char *const *matched)
{
	int status = 0;

	for (size_t i = 0; i < n; i++)
		if (!matched[i] && dcpi_profset_bad_of(set, images[i])) {
			fprintf(stderr, "%s: error: the profile of image '%s' could not be read: %s\n",
				cli_prog, cli_safe(images[i]),
				cli_safe(dcpi_profset_bad_of(set, images[i])));
			status = 1;
		} else if (!matched[i]) {
			fprintf(stderr, "%s: error: no profile of image '%s' in epoch%s %s%s\n",
				cli_prog, cli_safe(images[i]), set->nepochs > 1 ? "s" : "",
				set->epochs[set->nepochs - 1], set->nepochs > 1 ? " ..." : "");
			report_suggest(set, images[i]);
			status = 1;
		}
	return status;
}

void report_print_header(FILE *f, const char *db, const struct dcpi_profset *set,
			 const uint64_t *total, const struct report_warnings *w)
{
	const struct dcpi_epoch_stats *st = &set->stats;
	double pct, irq;

	fprintf(f, "Database: %s\nEpoch%s:", cli_safe(db), set->nepochs > 1 ? "s" : "");
	for (size_t i = 0; i < set->nepochs; i++)
		fprintf(f, " %s", cli_safe(set->epochs[i]));
	fprintf(f, "\nHost%s:", set->nhosts > 1 ? "s" : "");
	for (size_t i = 0; i < set->nhosts; i++)
		fprintf(f, " %s", cli_safe(set->hosts[i]));
	fprintf(f, "\n\n%-24s %12s  %s\n%-24s %12s  %s\n", "Column", "Total", "Period (for events)",
	       "------", "-----", "------");
	for (unsigned e = 0; e < set->nevents; e++) {
		char per[32];

		snprintf(per, sizeof(per), "%" PRIu64, set->periods[e]);
		fprintf(f, "%-24s %12" PRIu64 "  %s\n", cli_safe(set->events[e]), total[e],
		       set->periods[e] ? per : "mixed");
	}
	if (set->nstats) {
		fprintf(f, "\nSamples: %" PRIu64 ", lost %" PRIu64 ", unknown %" PRIu64 " (%.2f%%)",
		       st->samples, st->lost, st->unknown, report_pct(st->unknown, st->samples));
		if (st->throttled)
			fprintf(f, ", throttled %" PRIu64 " time%s", st->throttled,
				st->throttled == 1 ? "" : "s");
		fprintf(f, "\n");
	}
	if (st->clock_khz)
		fprintf(f, "Clock: %.3f GHz (measured by the collector)\n", st->clock_khz / 1e6);
	if (!dcpi_stats_overhead(st, &pct, &irq)) {
		fprintf(f, "Overhead: %.2f%% of the CPU time monitored: the collector's own %.2f s "
			"(measured)", pct, st->collector_cpu_ns / 1e9);
		if (st->sample_cost_ns)
			fprintf(f, " and interrupts ~%.2f s (estimated: %" PRIu64 " ns a sample)", irq,
				st->sample_cost_ns);
		else
			fprintf(f, "; interrupts not measured");
		fprintf(f, "\n");
	}
	report_warn_print(w, "");
}

void report_json_header(struct dcpi_json *j, const struct dcpi_profset *set,
			const uint64_t *total, const struct report_warnings *w)
{
	const struct dcpi_epoch_stats *st = &set->stats;
	double pct, irq;

	dcpi_json_key_strs(j, "epochs", (const char *const *)set->epochs, set->nepochs);
	dcpi_json_key_strs(j, "hosts", (const char *const *)set->hosts, set->nhosts);
	dcpi_json_break(j);
	dcpi_json_key_u64(j, "samples", st->samples);
	if (st->clock_khz)
		dcpi_json_key_u64(j, "clock_khz", st->clock_khz);
	if (!dcpi_stats_overhead(st, &pct, &irq)) {
		dcpi_json_key(j, "overhead");
		dcpi_json_obj_begin(j);
		dcpi_json_key_fixed(j, "percent", 1, pct, 4);
		dcpi_json_key_u64(j, "collector_cpu_ns", st->collector_cpu_ns);
		dcpi_json_key(j, "sample_cost_ns");
		if (st->sample_cost_ns)
			dcpi_json_u64(j, st->sample_cost_ns);
		else
			dcpi_json_null(j);
		dcpi_json_key(j, "interrupt_ns"); /* samples x sample_cost_ns: an estimate */
		if (st->sample_cost_ns)
			dcpi_json_u64(j, (uint64_t)(irq * 1e9 + 0.5));
		else
			dcpi_json_null(j);
		dcpi_json_obj_end(j);
	}
	dcpi_json_key_u64(j, "lost", st->lost);
	dcpi_json_key_u64(j, "unknown", st->unknown);
	dcpi_json_key_u64(j, "throttled", st->throttled);
	dcpi_json_break(j);
	dcpi_json_key(j, "events");
	dcpi_json_arr_begin(j);
	for (unsigned e = 0; e < set->nevents; e++) {
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "name", set->events[e]);
		dcpi_json_key_u64(j, "period", set->periods[e]);
		dcpi_json_key_u64(j, "total", total[e]);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_key_strs(j, "warnings", (const char *const *)w->v, w->n);
}

void report_json_counts(struct dcpi_json *j, unsigned nevents, const uint64_t *c,
			const uint64_t *total)
{
	dcpi_json_key(j, "counts");
	dcpi_json_arr_begin(j);
	for (unsigned e = 0; e < nevents; e++)
		dcpi_json_u64(j, c[e]);
	dcpi_json_arr_end(j);
	dcpi_json_key(j, "percent");
	dcpi_json_arr_begin(j);
	for (unsigned e = 0; e < nevents; e++)
		dcpi_json_fixed(j, report_pct(c[e], total[e]), 4);
	dcpi_json_arr_end(j);
}

struct dcpi_objcache *report_objcache(const char *db)
{
	struct dcpi_obj_opts oo = { report_symtab_opts(db), NULL, NULL };
	struct dcpi_objcache *c = dcpi_objcache_new(&oo);

	if (!c)
		cli_die("out of memory");
	return c;
}

struct dcpi_json *report_json_begin(const char *db)
{
	struct dcpi_json *j = dcpi_json_new(stdout);

	if (!j)
		cli_die("out of memory");
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "database", db);
	return j;
}

const struct dcpi_symtab_opts *report_symtab_opts(const char *db)
{
	static char cache[4096], dbg[8192];
	static struct dcpi_symtab_opts o;
	const char *env = getenv("DCPI_DEBUG_PATH");

	if (dcpi_imagecache_dir(db, cache, sizeof(cache)) == 0)
		o.buildid_cache = cache;
	/* the database as a debug directory too: DB/.build-id/xx/yyyy.debug
	   is where dcpitar -x puts the debug files it packed */
	snprintf(dbg, sizeof(dbg), "%s%s%s", db, env && *env ? ":" : "", env && *env ? env : "");
	o.debug_path = dbg;
	return &o;
}

void report_csv_field(FILE *f, const char *s)
{
	int quoted;
	size_t k;

	if (!s)
		return;
	quoted = strpbrk(s, ",\"") != NULL;
	if (quoted)
		fputc('"', f);
	for (; *s; s += k) {
		/* a tab too: a field is one cell of one line */
		k = *s == '\t' ? 0 : cli_plain_len(s);
		if (!k)
			fprintf(f, "\\x%02x", (unsigned char)*s), k = 1;
		else if (*s == '"')
			fputs("\"\"", f);
		else
			fwrite(s, 1, k, f);
	}
	if (quoted)
		fputc('"', f);
}

void report_keep_label(struct dcpi_profset *set, const char *spec)
{
	size_t labelled = 0;
	char example[512] = "";

	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].prof.label && labelled++ == 0)
			snprintf(example, sizeof(example), "%s", set->v[i].prof.label);
	if (dcpi_profset_keep_label(set, spec))
		cli_usage_error("-label %s", dcpi_errmsg());
	if (set->n)
		return;
	if (!labelled)
		cli_die("-label %s: no profile in the chosen epoch(s) is labelled (dcpid -label "
			"comm|uid|cgroup labels them)", spec);
	cli_die("-label %s: none of the %zu labelled profiles has it (one is labelled %s; "
		"dcpilabel lists them all)", spec, labelled, cli_safe(example));
}

/* ---- one procedure of one image (dcpilist, dcpicalc) ---------------------------------- */

#define MAX_CANDS 20

struct dcpi_annot_image *report_annot_open(const struct dcpi_profset *set, const char *db,
					   const char *image, const struct dcpi_source_opts *src)
{
	struct dcpi_annot_opts ao = { report_symtab_opts(db), src, NULL, 0, NULL };
	size_t *idx = calloc(set->n ? set->n : 1, sizeof(*idx)), n = 0;
	struct dcpi_annot_image *img = NULL;
	struct dcpi_selection sel;
	int err;

	if (!idx || dcpi_select(set, &image, 1, &sel))
		cli_die("%s", idx ? dcpi_errmsg() : "out of memory");
	for (size_t i = 0; i < set->n; i++) {
		const struct dcpi_profile *p = &set->v[i].prof;

		if (sel.chosen[i] && p->kind != DCPI_IMAGE_ANON && p->kind != DCPI_IMAGE_UNKNOWN)
			idx[n++] = i;
	}
	dcpi_selection_free(&sel);
	err = n ? dcpi_annot_image_open(set, idx, n, &ao, &img) : 0;
	free(idx);
	if (n == 0 && dcpi_profset_bad_of(set, image))
		cli_die("the profile of image '%s' could not be read: %s", cli_safe(image),
			cli_safe(dcpi_profset_bad_of(set, image)));
	if (n == 0) {
		fprintf(stderr, "%s: error: no profile of image '%s' in epoch%s %s%s\n", cli_prog,
			cli_safe(image), set->nepochs > 1 ? "s" : "",
			set->epochs[set->nepochs - 1], set->nepochs > 1 ? " ..." : "");
		report_suggest(set, image);
		exit(1);
	}
	if (err)
		cli_die("%s", dcpi_errmsg());
	return img;
}

void report_annot_resolve(struct dcpi_annot_image *img, const char *proc, uint64_t *lo,
			  uint64_t *hi, const char **name)
{
	const struct dcpi_symtab *st = dcpi_annot_image_symtab(img);
	const struct dcpi_sym *c[MAX_CANDS];
	size_t nc;
	int err = dcpi_annot_resolve(st, proc, lo, hi, name, c, MAX_CANDS, &nc);

	if (!err)
		return;
	fprintf(stderr, "%s: error: %s\n", cli_prog, cli_safe(dcpi_errmsg()));
	if (nc)
		fprintf(stderr, "%s%s:\n", err == -EEXIST ? "candidates, each named as NAME@0xADDR"
			: "similar names", nc > MAX_CANDS ? " (the first 20)" : "");
	for (size_t i = 0; i < nc && i < MAX_CANDS; i++)
		if (err == -EEXIST)
			fprintf(stderr, "  %s@0x%" PRIx64 "  (%" PRIu64 " bytes)\n",
				cli_safe(dcpi_sym_demangled(c[i])), c[i]->vaddr, c[i]->size);
		else
			fprintf(stderr, "  0x%-16" PRIx64 " %-8" PRIu64 " %s\n", c[i]->vaddr,
				c[i]->size, cli_safe(dcpi_sym_demangled(c[i])));
	exit(1);
}

/* ---- what was sampled, for the calc engine ---- */

void report_calc_cols(const struct dcpi_profset *set, int mode, struct dcpi_calc_cols *c)
{
	if (dcpi_calc_cols_choose(set, mode, c))
		cli_die("%s", dcpi_errmsg());
}

size_t report_open_images(const struct dcpi_profset *set, const struct dcpi_selection *sel,
			  struct dcpi_objcache *objs, struct dcpi_annot_image **imgs, size_t max,
			  struct report_warnings *w)
{
	struct dcpi_annot_opts ao = { NULL, NULL, NULL, 1, objs };
	size_t n = 0;

	for (size_t k = 0; k < sel->ngroups; k++) {
		const struct dcpi_image_group *g = &sel->groups[k];
		const struct dcpi_profile *p = &set->v[g->idx[0]].prof;

		if (p->kind == DCPI_IMAGE_ANON || p->kind == DCPI_IMAGE_UNKNOWN)
			continue;
		if (n == max) {
			report_warn(w, "more than %zu images: %s and later ones are left out", max,
				    p->path);
			break;
		}
		if (dcpi_annot_image_open(set, g->idx, g->n, &ao, &imgs[n])) {
			report_warn(w, "%s: %s; it is not analysed", report_base(p->path),
				    dcpi_errmsg());
			continue;
		}
		n++;
	}
	return n;
}

void report_images_load(struct report_images *r, const char *db, const char *epoch,
			const char *host, const char *label, const char *const *images,
			size_t nimages, struct report_warnings *w, const char *why)
{
	report_set_load(&r->set, db, epoch, host, label);
	r->cols = calloc(1, sizeof(*r->cols));
	r->sel = calloc(1, sizeof(*r->sel));
	r->imgs = calloc(REPORT_MAX_OPEN, sizeof(*r->imgs));
	if (!r->cols || !r->sel || !r->imgs)
		cli_die("out of memory");
	report_calc_cols(&r->set, -1, r->cols);
	if (r->cols->time < 0)
		cli_die("no cycles or time event (cycles, cpu-clock, task-clock) with one period "
			"in the samples: %s", why);
	report_check_set(w, &r->set);
	if (dcpi_select(&r->set, images, nimages, r->sel))
		cli_die("%s", dcpi_errmsg());
	r->objs = report_objcache(db);
	r->nimgs = report_open_images(&r->set, r->sel, r->objs, r->imgs, REPORT_MAX_OPEN, w);
	r->status = report_unmatched(&r->set, images, nimages, r->sel->matched);
}

void report_images_free(struct report_images *r)
{
	for (size_t i = 0; i < r->nimgs; i++)
		dcpi_annot_image_close(r->imgs[i]);
	dcpi_objcache_free(r->objs); /* after the images, which borrow from it */
	dcpi_selection_free(r->sel);
	free(r->sel);
	free(r->imgs);
	free(r->cols);
	dcpi_profset_free(&r->set);
}

void report_set_load(struct dcpi_profset *set, const char *db, const char *epoch,
		     const char *host, const char *label)
{
	if (dcpi_profset_load(db, epoch, host, set))
		cli_die("%s", dcpi_errmsg());
	if (label)
		report_keep_label(set, label);
	if (set->nevents == 0)
		cli_die("%s: no samples in epoch %s", db, set->epochs[set->nepochs - 1]);
}

void report_json_procedure(struct dcpi_json *j, struct dcpi_annot_image *img, const char *name,
			   uint64_t lo, uint64_t hi)
{
	dcpi_json_key_str(j, "image", dcpi_annot_image_profile(img)->path);
	dcpi_json_key_str(j, "procedure", name);
	dcpi_json_key(j, "lo");
	dcpi_json_strf(j, "0x%" PRIx64, lo);
	dcpi_json_key(j, "hi");
	dcpi_json_strf(j, "0x%" PRIx64, hi);
}

int report_main(const struct report_kind *k, struct report_base *b, void *ctx, int argc,
		char **argv)
{
	cli_parse(k->cli, argc, argv, &b->o, ctx);
	report_images_load(&b->r, b->o.db, b->o.epoch, b->o.host, b->o.label, b->o.images,
			   b->o.nimages, &b->w, k->none);
	k->analyse(ctx);
	report_warn_finish(&b->w);
	if (b->o.json)
		k->json(ctx);
	else if (b->o.csv && k->csv)
		k->csv(ctx);
	else
		k->text(ctx);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	if (k->done)
		k->done(ctx);
	report_images_free(&b->r);
	return b->r.status;
}

void report_side_load(const char *db, const char *arg, const char *host, const char *label,
		      const char *what, struct report_side *sel, struct dcpi_profset *set)
{
	const char *slash = strchr(arg, '/');
	size_t n = slash ? (size_t)(slash - arg) : strlen(arg);
	char buf[512], *save = NULL, *t, *at;

	memset(sel, 0, sizeof(*sel));
	sel->pid = -1;
	if (n >= sizeof(sel->epoch))
		cli_usage_error("%s: too long", cli_safe(arg));
	snprintf(sel->epoch, sizeof(sel->epoch), "%.*s", (int)n, arg);
	snprintf(buf, sizeof(buf), "%s", slash ? slash + 1 : "");
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;

		if (!strncmp(t, "pid=", 4)) {
			sel->pid = strtoll(t + 4, &end, 10);
			if (end == t + 4 || *end || sel->pid < 0)
				cli_usage_error("%s: pid=%s is not a process id", cli_safe(arg),
						cli_safe(t + 4));
		} else if (strchr(t, '=')) {
			size_t l = strlen(sel->labels);

			snprintf(sel->labels + l, sizeof(sel->labels) - l, "%s%s", l ? "," : "", t);
		} else {
			cli_usage_error("%s: after '/', pid=N or KEY=VALUE, not '%s'", cli_safe(arg),
					cli_safe(t));
		}
	}
	sel->host = host;
	if ((at = strchr(sel->epoch, '@'))) { /* EPOCH@HOST */
		*at = 0;
		snprintf(sel->hostbuf, sizeof(sel->hostbuf), "%s", at + 1);
		sel->host = sel->hostbuf;
	}
	if (dcpi_profset_load(db, sel->epoch, sel->host, set)) {
		if (!what)
			cli_die("%s", dcpi_errmsg()); /* it names the epoch */
		cli_die("%s %s: %s", what, cli_safe(arg), dcpi_errmsg());
	}
	if (label)
		report_keep_label(set, label);
	if (sel->labels[0])
		report_keep_label(set, sel->labels);
	if (sel->pid >= 0 && (dcpi_profset_keep_pid(set, sel->pid), set->n == 0))
		cli_die("%s%s%s: no per-process profile of pid %lld (dcpid -bypid keeps them)",
			what ? what : "", what ? " " : "", cli_safe(arg), sel->pid);
}

void report_side_callgraph(const char *label, const struct report_side *sel,
			   const struct dcpi_profset *set, struct dcpi_objcache *objs, int col,
			   const char *what, struct report_warnings *w, struct dcpi_callgraph *g)
{
	struct dcpi_cg_opts co = { NULL, sel->pid, 0 };
	char spec[1100];

	if ((size_t)snprintf(spec, sizeof(spec), "%s%s%s", label ? label : "",
			     label && sel->labels[0] ? "," : "", sel->labels) >= sizeof(spec))
		cli_usage_error("-label and the side's labels: more than %zu bytes", sizeof(spec) - 1);
	co.label_spec = spec[0] ? spec : NULL;
	if (dcpi_callgraph_build(g, set, &co, objs))
		cli_die("%s", dcpi_errmsg());
	if (g->nbad)
		report_warn(w, "%zu stacks file%s could not be read, left out (%s)", g->nbad,
			    g->nbad == 1 ? "" : "s", g->first_bad ? g->first_bad : "");
	if (!g->total[col] && sel->pid >= 0)
		cli_die("%s: no call stacks of pid %lld (dcpid -stacks -bypid keeps them per "
			"process)", what, sel->pid);
	if (!g->total[col])
		cli_die("%s: no call stacks (record them with dcpi record -stacks or dcpid -stacks)",
			what);
}

void report_compare_option(struct report_compare *c, int opt, const char *arg)
{
	switch (opt) {
	case REPORT_O_EVENT: c->event = arg; break;
	case REPORT_O_KEEP: c->keep = cli_parse_count("keep", arg); break;
	case REPORT_O_RATE: c->per = cli_parse_rate(arg); break;
	case REPORT_O_SHARES: c->shares = 1; break;
	}
}

void report_json_bins(struct dcpi_json *j, const char *key, const struct dcpi_bins *b)
{
	dcpi_json_key(j, key);
	dcpi_json_arr_begin(j);
	for (size_t k = 0; k < b->n; k++) {
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "name", b->v[k].name);
		dcpi_json_key_u64(j, "min", b->v[k].min);
		dcpi_json_key_u64(j, "max", b->v[k].max);
		dcpi_json_key_u64(j, "rep", b->v[k].rep);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
}
