/* dcpiprof: where the time went, by image or by procedure, as DCPI's
 * dcpiprof printed it: a header of events and totals, then one column
 * group (samples, %, cum%) per event. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <libiberty/hashtab.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/annotate.h"
#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/profset.h"
#include "dcpi/symtab.h"
#include "report.h"

enum { OUT_TEXT, OUT_JSON, OUT_CSV };
#define MAX_IMAGES 256
#define UNSYM_REGION 0x10000 /* unnamed code is grouped by 64 KiB */

struct opts {
	const char *db, *epoch, *host, *sort, *ratio;
	int procs, bypid, out;
	unsigned long long keep;
	double cutoff;
	const char *images[MAX_IMAGES];
	size_t nimages;
};

struct row {
	char *image, *proc;
	int64_t pid;
	uint64_t c[DCPI_MAX_EVENTS];
};

struct report {
	struct opts o;
	struct dcpi_profset set;
	htab_t index;           /* (image, proc, pid) -> row */
	struct row **rows;
	size_t nrows, cap;
	uint64_t total[DCPI_MAX_EVENTS];
	int sortcol, ratio_a, ratio_b;
	struct report_warnings w;
	int failed_named;       /* a named image could not be symbolised */
	const char **matched;   /* per named image: did a profile match */
};

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpiprof [options] [IMAGE...]\n"
"Where the time went: images sorted by samples; with -i or IMAGE arguments,\n"
"the procedures of all images or of those images.\n\n"
"  -db DIR            the database (default $DCPIDB)\n"
"  -epoch NAME        an epoch, 'latest' (default) or 'all' (summed)\n"
"  -host NAME         a host of a shared database, or 'all' (default: this one)\n"
"  -i                 procedures of all images\n"
"  -pid               keep per-process profiles (dcpid -bypid) apart\n"
"  -sort EVENT        order by this event (default: the first)\n"
"  -keep N            only the first N rows\n"
"  -cutoff PERCENT    only rows with at least this share of the sort event\n"
"  -ratio A/B         add a column A/B (e.g. instructions/cycles)\n"
"  -json              JSON output (schema in dcpiprof(1))\n"
"  -csv               CSV output\n"
"  -h, -help          this help\n\n"
"IMAGE is a path as profiled, a file name (libc.so.6), or 'kernel'.\n");
}

static void parse_options(struct opts *o, int argc, char **argv)
{
	enum { O_DB = 256, O_EPOCH, O_HOST, O_PID, O_SORT, O_KEEP, O_CUTOFF, O_RATIO, O_JSON,
	       O_CSV };
	static const struct option lo[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "epoch", required_argument, NULL, O_EPOCH },
		{ "host", required_argument, NULL, O_HOST },
		{ "i", no_argument, NULL, 'i' },
		{ "pid", no_argument, NULL, O_PID },
		{ "sort", required_argument, NULL, O_SORT },
		{ "keep", required_argument, NULL, O_KEEP },
		{ "cutoff", required_argument, NULL, O_CUTOFF },
		{ "ratio", required_argument, NULL, O_RATIO },
		{ "json", no_argument, NULL, O_JSON },
		{ "csv", no_argument, NULL, O_CSV },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->keep = ULLONG_MAX;
	while ((c = getopt_long_only(argc, argv, "ih", lo, NULL)) != -1) {
		switch (c) {
		case O_DB: o->db = optarg; break;
		case O_EPOCH: o->epoch = optarg; break;
		case O_HOST: o->host = optarg; break;
		case 'i': o->procs = 1; break;
		case O_PID: o->bypid = 1; break;
		case O_SORT: o->sort = optarg; break;
		case O_KEEP: o->keep = cli_parse_count("keep", optarg); break;
		case O_CUTOFF: {
			char *end;

			o->cutoff = strtod(optarg, &end);
			if (*end || end == optarg || !(o->cutoff >= 0 && o->cutoff <= 100))
				cli_usage_error("-cutoff wants a percentage 0-100, not '%s'", optarg);
			break;
		}
		case O_RATIO:
			if (!strchr(optarg, '/'))
				cli_usage_error("-ratio wants EVENT/EVENT, not '%s'", optarg);
			o->ratio = optarg;
			break;
		case O_JSON: o->out = OUT_JSON; break;
		case O_CSV: o->out = OUT_CSV; break;
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	for (; optind < argc; optind++) {
		if (o->nimages == MAX_IMAGES)
			cli_usage_error("at most %d images", MAX_IMAGES);
		o->images[o->nimages++] = argv[optind];
	}
	if (o->nimages)
		o->procs = 1;
	o->db = cli_db(o->db);
}

/* ---- which profiles --------------------------------------------------------- */

/* Whether the profile is in the report; with IMAGE arguments, only theirs. */
static int selected(struct report *r, const struct dcpi_profile *p)
{
	return report_select(p, r->o.images, r->o.nimages, r->matched);
}

/* ---- rows ------------------------------------------------------------------- */

static hashval_t row_hash(const void *p)
{
	const struct row *w = p;

	return htab_hash_string(w->image) * 31 + (w->proc ? htab_hash_string(w->proc) : 0) +
	       (hashval_t)w->pid;
}

static int row_eq(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->pid == y->pid && !strcmp(x->image, y->image) &&
	       (x->proc == y->proc || (x->proc && y->proc && !strcmp(x->proc, y->proc)));
}

static struct row *row_get(struct report *r, const char *image, const char *proc, int64_t pid)
{
	struct row key = { (char *)image, (char *)proc, pid, { 0 } }, *w;
	void **slot = htab_find_slot(r->index, &key, INSERT);

	if (!slot)
		cli_die("out of memory");
	if (*slot)
		return *slot;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->image = strdup(image)) || (proc && !(w->proc = strdup(proc))))
		cli_die("out of memory");
	w->pid = pid;
	if (r->nrows == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->rows = realloc(r->rows, r->cap * sizeof(*r->rows));
		if (!r->rows)
			cli_die("out of memory");
	}
	r->rows[r->nrows++] = w;
	*slot = w;
	return w;
}

static void add_counts(struct report *r, struct row *w, const struct dcpi_profset_entry *e,
		       size_t row)
{
	const struct dcpi_profile *p = &e->prof;

	for (uint32_t ev = 0; ev < p->nevents; ev++) {
		uint64_t n = p->counts[row * p->nevents + ev];

		w->c[e->col[ev]] += n;
		r->total[e->col[ev]] += n;
	}
}

/* ---- symbols ---------------------------------------------------------------- */

struct symcache {
	char *key;
	struct dcpi_symtab *st; /* NULL: failed (warned once) */
};

static struct symcache cache[1024];
static size_t ncache;

static struct dcpi_symtab *open_symbols(struct report *r, const struct dcpi_profset_entry *e,
					int named)
{
	const struct dcpi_profile *p = &e->prof;
	char key[8192], hex[2 * DCPI_BUILD_ID_MAX + 1] = "";
	struct dcpi_symtab *st = NULL;
	int err;

	dcpi_hex(p->build_id, p->build_id_len, hex);
	if (p->kind == DCPI_IMAGE_FILE)
		snprintf(key, sizeof(key), "%s\n%s\n%" PRIu64, p->path, hex, p->size);
	else
		snprintf(key, sizeof(key), "%s\n%s\n%" PRIx64, p->path, e->platdir, p->text_start);
	for (size_t i = 0; i < ncache; i++)
		if (!strcmp(cache[i].key, key))
			return cache[i].st;
	err = dcpi_annot_symtab_open(e, report_symtab_opts(r->o.db), &st);
	if (err) {
		if (strstr(dcpi_errmsg(), p->path))
			report_warn(&r->w, "%s; its samples are shown as one row", dcpi_errmsg());
		else
			report_warn(&r->w, "%s: %s; its samples are shown as one row", p->path,
				    dcpi_errmsg());
		r->failed_named |= named;
		st = NULL;
	} else if (*dcpi_symtab_message(st)) {
		report_warn(&r->w, "%s: %s", p->path, dcpi_symtab_message(st));
	}
	if (ncache < sizeof(cache) / sizeof(cache[0])) {
		cache[ncache].key = strdup(key);
		cache[ncache++].st = st;
	}
	return st;
}

/* Samples in no symbol keep their place: named by section when it is not
 * the main text (".plt", ".init"), else by the 64 KiB region of the image
 * they fell in, so a stripped library still shows where its time went. */
static void procedure_name(const struct dcpi_profile *p, struct dcpi_symtab *st, uint64_t off,
			   char *buf, size_t len)
{
	const struct dcpi_sym *s = st ? dcpi_symtab_lookup(st, off) : NULL;
	const char *sec = st ? dcpi_symtab_section(st, off) : NULL;
	uint64_t lo = off / UNSYM_REGION * UNSYM_REGION;
	char name[256];

	report_short_name(p, name, sizeof(name));
	if (s)
		snprintf(buf, len, "%s", s->demangled);
	else if (p->kind == DCPI_IMAGE_UNKNOWN)
		snprintf(buf, len, "[unknown]");
	else if (p->kind == DCPI_IMAGE_ANON || !st)
		snprintf(buf, len, "[%s]", name);
	else if (sec && strcmp(sec, ".text"))
		snprintf(buf, len, "[%s %s]", name, sec);
	else
		snprintf(buf, len, "[%s+0x%" PRIx64 "-0x%" PRIx64 "%s%s]", name, lo,
			 lo + UNSYM_REGION - 1, sec ? " " : "", sec ? sec : "");
}

/* ---- building the table ----------------------------------------------------- */

static void image_label(const struct dcpi_profile *p, int bypid, char *buf, size_t len)
{
	if (p->kind == DCPI_IMAGE_UNKNOWN)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%s", p->path);
	(void)bypid;
}

static void build(struct report *r)
{
	char img[4200], proc[4200];

	for (size_t i = 0; i < r->set.n; i++) {
		const struct dcpi_profset_entry *e = &r->set.v[i];
		const struct dcpi_profile *p = &e->prof;
		int64_t pid = r->o.bypid ? p->pid : -1;
		struct dcpi_symtab *st = NULL;
		struct row *w = NULL;

		if (!selected(r, p))
			continue;
		image_label(p, r->o.bypid, img, sizeof(img));
		if (r->o.procs && p->kind != DCPI_IMAGE_UNKNOWN && p->kind != DCPI_IMAGE_ANON)
			st = open_symbols(r, e, r->o.nimages > 0);
		for (size_t row = 0; row < p->nrows; row++) {
			if (r->o.procs) {
				procedure_name(p, st, p->offsets[row], proc, sizeof(proc));
				w = row_get(r, img, proc, pid);
			} else if (!w) {
				w = row_get(r, img, NULL, pid);
			}
			add_counts(r, w, e, row);
		}
	}
}

static int sortcol;

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;

	if (x->c[sortcol] != y->c[sortcol])
		return x->c[sortcol] > y->c[sortcol] ? -1 : 1;
	if (strcmp(x->image, y->image))
		return strcmp(x->image, y->image);
	if (x->proc && y->proc && strcmp(x->proc, y->proc))
		return strcmp(x->proc, y->proc);
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int event_col(struct report *r, const char *name, const char *what)
{
	int c = dcpi_profset_event(&r->set, name);

	if (c < 0) {
		struct dcpi_buf b = DCPI_BUF_INIT;

		for (unsigned e = 0; e < r->set.nevents; e++)
			dcpi_buf_printf(&b, "%s%s", e ? ", " : "", r->set.events[e]);
		cli_die("%s: no event '%s' in these profiles (they have: %s)", what, name,
			b.len ? (char *)b.data : "none");
	}
	return c;
}

static void choose_columns(struct report *r)
{
	r->sortcol = r->o.sort ? event_col(r, r->o.sort, "-sort") : 0;
	r->ratio_a = r->ratio_b = -1;
	if (r->o.ratio) {
		char a[128];

		snprintf(a, sizeof(a), "%.*s", (int)strcspn(r->o.ratio, "/"), r->o.ratio);
		r->ratio_a = event_col(r, a, "-ratio");
		r->ratio_b = event_col(r, strchr(r->o.ratio, '/') + 1, "-ratio");
	}
}

/* Rows shown: keep and cutoff applied after sorting. */
static size_t shown_rows(struct report *r)
{
	size_t n = 0;

	for (; n < r->nrows && n < r->o.keep; n++) {
		uint64_t t = r->total[r->sortcol];

		if (r->o.cutoff > 0 && t && 100.0 * r->rows[n]->c[r->sortcol] / t < r->o.cutoff)
			break;
	}
	return n;
}

/* ---- output ----------------------------------------------------------------- */

static void print_header(struct report *r)
{
	report_print_header(r->o.db, &r->set, r->total, &r->w);
	printf("\nThe numbers given below are the number of samples for each listed event type%s.\n",
	       r->ratio_a >= 0 ? " or, for the ratio of two event types, the ratio of their samples"
			       : "");
	printf("==============================================================================\n");
}

static int ratio_width(const struct report *r)
{
	int n = (int)strlen(r->o.ratio);

	return n > 10 ? n : 10;
}

static void print_text(struct report *r, size_t n)
{
	uint64_t cum[DCPI_MAX_EVENTS] = { 0 };

	print_header(r);
	for (unsigned e = 0; e < r->set.nevents; e++)
		printf("%12s %7s %7s ", r->set.events[e], "%", "cum%");
	if (r->ratio_a >= 0)
		printf("%*s ", ratio_width(r), r->o.ratio);
	printf(r->o.procs ? " %-40s %s\n" : " %s\n", r->o.procs ? "procedure" : "image", "image");
	for (size_t i = 0; i < n; i++) {
		const struct row *w = r->rows[i];

		for (unsigned e = 0; e < r->set.nevents; e++) {
			cum[e] += w->c[e];
			printf("%12" PRIu64 " %6.2f%% %6.2f%% ", w->c[e],
			       report_pct(w->c[e], r->total[e]), report_pct(cum[e], r->total[e]));
		}
		if (r->ratio_a >= 0) {
			if (w->c[r->ratio_b])
				printf("%*.3f ", ratio_width(r), (double)w->c[r->ratio_a] / w->c[r->ratio_b]);
			else
				printf("%*s ", ratio_width(r), "-");
		}
		if (r->o.procs)
			printf(" %-40s %s", w->proc, w->image);
		else
			printf(" %s", w->image);
		if (w->pid >= 0)
			printf(" (pid %" PRId64 ")", w->pid);
		printf("\n");
	}
}

static void print_json(struct report *r, size_t n)
{
	printf("{\"database\": ");
	report_json_str(r->o.db);
	printf(", \"mode\": \"%s\", ", r->o.procs ? "procedures" : "images");
	report_json_header(&r->set, r->total, &r->w);
	printf(",\n \"rows\": [");
	for (size_t i = 0; i < n; i++) {
		const struct row *w = r->rows[i];

		printf("%s\n  {\"image\": ", i ? "," : "");
		report_json_str(w->image);
		if (r->o.procs) {
			printf(", \"procedure\": ");
			report_json_str(w->proc);
		}
		if (w->pid >= 0)
			printf(", \"pid\": %" PRId64, w->pid);
		printf(", \"counts\": [");
		for (unsigned e = 0; e < r->set.nevents; e++)
			printf("%s%" PRIu64, e ? ", " : "", w->c[e]);
		printf("], \"percent\": [");
		for (unsigned e = 0; e < r->set.nevents; e++)
			printf("%s%.4f", e ? ", " : "", report_pct(w->c[e], r->total[e]));
		printf("]}");
	}
	printf("\n ]}\n");
}

static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_csv(struct report *r, size_t n)
{
	for (size_t i = 0; i < r->w.n; i++) /* CSV has no place for them */
		fprintf(stderr, "%s: warning: %s\n", cli_prog, r->w.v[i]);
	printf("image,%spid", r->o.procs ? "procedure," : "");
	for (unsigned e = 0; e < r->set.nevents; e++) {
		putchar(',');
		csv_field(r->set.events[e]);
	}
	putchar('\n');
	for (size_t i = 0; i < n; i++) {
		const struct row *w = r->rows[i];

		csv_field(w->image);
		if (r->o.procs) {
			putchar(',');
			csv_field(w->proc);
		}
		if (w->pid >= 0)
			printf(",%" PRId64, w->pid);
		else
			printf(",");
		for (unsigned e = 0; e < r->set.nevents; e++)
			printf(",%" PRIu64, w->c[e]);
		putchar('\n');
	}
}

/* ---- main ------------------------------------------------------------------- */

int cmd_dcpiprof(int argc, char **argv)
{
	static struct report r;
	static const char *matched[MAX_IMAGES];
	size_t n;
	int status = 0;

	parse_options(&r.o, argc, argv);
	r.matched = matched;
	if (dcpi_profset_load(r.o.db, r.o.epoch, r.o.host, &r.set))
		cli_die("%s", dcpi_errmsg());
	r.index = htab_create_alloc(1024, row_hash, row_eq, NULL, calloc, free);
	if (!r.index)
		cli_die("out of memory");
	report_check_set(&r.w, &r.set);
	build(&r);
	report_warn_finish(&r.w);
	status = report_unmatched(&r.set, r.o.images, r.o.nimages, matched);
	if (r.set.nevents == 0)
		cli_die("%s: no samples in epoch %s", r.o.db, r.set.epochs[r.set.nepochs - 1]);
	choose_columns(&r);
	sortcol = r.sortcol;
	if (r.nrows)
		qsort(r.rows, r.nrows, sizeof(*r.rows), cmp_rows);
	n = shown_rows(&r);
	if (r.o.out == OUT_JSON)
		print_json(&r, n);
	else if (r.o.out == OUT_CSV)
		print_csv(&r, n);
	else
		print_text(&r, n);
	if (r.failed_named) {
		fprintf(stderr, "%s: error: symbols of a named image could not be read (see the "
			"warnings)\n", cli_prog);
		status = 1;
	}
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	return status;
}
