/* dcpiprof's views of call stacks (dcpi/callgraph.h): -callers, -callees
 * and -inclusive, as text, JSON or CSV. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/buf.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "prof_stacks.h"
#include "report.h"

#define MAX_MATCH 8

/* What the stacks are, and how their walks ended (of the sort column). */
static void print_stacks_line(FILE *f, const struct dcpi_callgraph *g, unsigned col,
			      const char *name)
{
	uint64_t t = g->total[col];

	fprintf(f, "Stacks: %" PRIu64 " samples of %s with a stack", t, cli_safe(name));
	for (unsigned k = 0; k < DCPI_STACK_END_N; k++)
		if (g->ends[k][col])
			fprintf(f, "; %s %.1f%%", dcpi_stack_end_name(k),
				report_pct(g->ends[k][col], t));
	if (g->tail[col])
		fprintf(f, "; a tail call's frame put back in %.1f%%", report_pct(g->tail[col], t));
	fprintf(f, "\n");
}

static int load(struct prof_stacks *ps, struct dcpi_callgraph *g)
{
	struct dcpi_cg_opts co = { ps->label, -1, ps->bypid };

	if (dcpi_callgraph_build(g, ps->set, &co, ps->objs))
		return cli_error("%s", dcpi_errmsg());
	if (g->nbad)
		report_warn(ps->w, "%zu stacks file%s could not be read, left out (%s)", g->nbad,
			    g->nbad == 1 ? "" : "s", g->first_bad ? g->first_bad : "");
	report_warn_finish(ps->w);
	if (!g->nfiles || !g->total[ps->col]) {
		report_warn_print(ps->w, "");
		dcpi_callgraph_free(g);
		return cli_error("no call stacks in %s: record them with dcpi record -stacks or "
				 "dcpid -stacks", ps->set->nepochs > 1 ? "these epochs" : "this epoch");
	}
	return 0;
}

static const struct dcpi_callgraph *cmp_g;

/* Most inclusive samples of the sort column first, then by process. */
static unsigned cmp_col;
static int match_cmp(const void *a, const void *b)
{
	const struct dcpi_cg_proc *x = &cmp_g->procs[*(const size_t *)a],
				  *y = &cmp_g->procs[*(const size_t *)b];

	if (x->incl[cmp_col] != y->incl[cmp_col])
		return x->incl[cmp_col] > y->incl[cmp_col] ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The procedure the arguments name, into *out (malloc'd), *n of them:
 * one, or with -pid one per process that ran it (the same procedure and
 * image); else an error listing them. */
static int find(struct prof_stacks *ps, const struct dcpi_callgraph *g, size_t **out, size_t *n)
{
	size_t *idx = malloc((g->nprocs + 1) * sizeof(*idx)), k = 0, same = 1;
	size_t *got = malloc((g->nprocs + 1) * sizeof(*got));
	unsigned char *seen = calloc(g->nprocs + 1, 1);

	if (!idx || !got || !seen) {
		free(idx);
		free(got);
		free(seen);
		return cli_error("out of memory");
	}
	/* each IMAGE argument's matches, each procedure once (two arguments may
	   name one image: its path and its file name) */
	for (size_t i = 0; i < ps->nimages || (i == 0 && !ps->nimages); i++) {
		size_t m = dcpi_callgraph_find(g, ps->proc, ps->nimages ? ps->images[i] : NULL, got,
					       g->nprocs);

		for (size_t j = 0; j < m && j < g->nprocs; j++)
			if (!seen[got[j]]) {
				seen[got[j]] = 1;
				idx[k++] = got[j];
			}
	}
	free(got);
	free(seen);
	for (size_t i = 1; i < k; i++)
		same &= !strcmp(g->procs[idx[i]].image, g->procs[idx[0]].image) &&
			!strcmp(g->procs[idx[i]].proc, g->procs[idx[0]].proc);
	if (k == 1 || (k > 1 && ps->bypid && same)) {
		cmp_g = g;
		cmp_col = ps->col;
		qsort(idx, k, sizeof(*idx), match_cmp);
		*out = idx;
		*n = k;
		return 0;
	}
	if (!k) {
		free(idx);
		return cli_error("no procedure '%s'%s%s in the stacks (dcpiprof -inclusive lists "
				 "them)", cli_safe(ps->proc), ps->nimages ? " in " : "",
				 ps->nimages ? cli_safe(ps->images[0]) : "");
	}
	fprintf(stderr, "%s: error: '%s' names %zu procedures; name the image too:\n", cli_prog,
		cli_safe(ps->proc), k);
	for (size_t i = 0; i < k && i < MAX_MATCH; i++) {
		fprintf(stderr, "  %s %s", cli_safe(g->procs[idx[i]].proc),
			cli_safe(g->procs[idx[i]].image));
		if (g->procs[idx[i]].pid >= 0)
			fprintf(stderr, " (pid %" PRId64 ")", g->procs[idx[i]].pid);
		fputc('\n', stderr);
	}
	free(idx);
	return -1;
}

/* A procedure's process (-pid: of the stacks kept per process): " (pid N)"
 * in text, a "pid" member in JSON, a pid column in CSV (empty: every
 * process). */
static int64_t pid_of(const struct dcpi_callgraph *g, size_t p)
{
	return p < g->nprocs ? g->procs[p].pid : -1;
}

static void text_pid(int64_t pid)
{
	if (pid >= 0)
		printf(" (pid %" PRId64 ")", pid);
}

static void json_pid(struct dcpi_json *j, int64_t pid)
{
	if (pid >= 0) {
		dcpi_json_key(j, "pid");
		dcpi_json_i64(j, pid);
	}
}

static void csv_pid(const struct prof_stacks *ps, int64_t pid)
{
	if (ps->bypid && pid >= 0)
		printf(",%" PRId64, pid);
	else if (ps->bypid)
		putchar(',');
}

static void text_counts(FILE *f, const struct prof_stacks *ps, const uint64_t *c,
			const uint64_t *of)
{
	for (unsigned e = 0; e < ps->set->nevents; e++)
		fprintf(f, "%12" PRIu64 " %6.2f%% ", c[e], report_pct(c[e], of[e]));
}

static void text_head(FILE *f, const struct prof_stacks *ps, const char *what)
{
	for (unsigned e = 0; e < ps->set->nevents; e++)
		fprintf(f, "%12s %7s ", cli_safe(ps->set->events[e]), "%");
	fprintf(f, " %s\n", what);
}

/* ---- -callers and -callees ----------------------------------------------------- */

struct tree {
	struct prof_stacks *ps;
	const struct dcpi_callgraph *g;
	const uint64_t *of;          /* the procedure's inclusive counts */
	int64_t pid;                 /* its process (-pid), or -1 */
	struct dcpi_json *j;
	size_t path[64];
};

static void row_out(struct tree *t, size_t p, const uint64_t *c, size_t depth)
{
	const struct prof_stacks *ps = t->ps;

	if (ps->out == PS_JSON) {
		dcpi_json_break(t->j);
		dcpi_json_obj_begin(t->j);
		dcpi_json_key_str(t->j, "procedure", dcpi_callgraph_name(t->g, p));
		dcpi_json_key_str(t->j, "image", dcpi_callgraph_image(t->g, p));
		json_pid(t->j, pid_of(t->g, p));
		dcpi_json_key(t->j, "depth");
		dcpi_json_u64(t->j, depth);
		report_json_counts(t->j, ps->set->nevents, c, t->of);
		dcpi_json_obj_end(t->j);
	} else if (ps->out == PS_CSV) {
		printf("%zu,", depth);
		report_csv_field(stdout, dcpi_callgraph_name(t->g, p));
		putchar(',');
		report_csv_field(stdout, dcpi_callgraph_image(t->g, p));
		csv_pid(ps, t->pid); /* the section's: [self] and the pseudo-rows too */
		for (unsigned e = 0; e < ps->set->nevents; e++)
			printf(",%" PRIu64, c[e]);
		putchar('\n');
	} else {
		text_counts(stdout, ps, c, t->of);
		printf(" %*s%s  %s", (int)(2 * (depth - 1)), "", cli_safe(dcpi_callgraph_name(t->g, p)),
		       cli_safe(dcpi_callgraph_image(t->g, p)));
		text_pid(pid_of(t->g, p));
		putchar('\n');
	}
}

/* The callers of path[0..n), and theirs to ps->depth. */
static int callers_tree(struct tree *t, size_t n)
{
	struct dcpi_cg_edge *es;
	size_t ne;
	int err = dcpi_callgraph_callers(t->g, t->path, n, t->ps->col, &es, &ne);

	if (err)
		return cli_error("%s", dcpi_errmsg());
	for (size_t i = 0; i < ne && i < t->ps->keep && !err; i++) {
		row_out(t, es[i].proc, es[i].c, n);
		if (n < t->ps->depth && n < 64 && es[i].proc < t->g->nprocs) {
			t->path[n] = es[i].proc;
			err = callers_tree(t, n + 1);
		}
	}
	free(es);
	return err;
}

/* One procedure's callers or callees: its JSON object, or its text section
 * (CSV: its rows). */
static int section(struct tree *t, size_t p)
{
	const struct prof_stacks *ps = t->ps;
	const struct dcpi_callgraph *g = t->g;
	struct dcpi_cg_edge *es = NULL;
	size_t ne = 0;
	int status = 0;

	t->of = g->procs[p].incl;
	t->pid = g->procs[p].pid;
	t->path[0] = p;
	if (ps->out == PS_JSON) {
		if (ps->bypid) {
			dcpi_json_break(t->j);
			dcpi_json_obj_begin(t->j);
		}
		dcpi_json_key_str(t->j, "procedure", g->procs[p].proc);
		dcpi_json_key_str(t->j, "image", g->procs[p].image);
		json_pid(t->j, g->procs[p].pid);
		dcpi_json_key(t->j, "inclusive");
		dcpi_json_obj_begin(t->j);
		report_json_counts(t->j, ps->set->nevents, g->procs[p].incl, g->total);
		dcpi_json_obj_end(t->j);
		dcpi_json_key(t->j, "rows");
		dcpi_json_arr_begin(t->j);
	} else if (ps->out == PS_TEXT) {
		printf("\n%s of %s (%s)", ps->mode == PS_CALLERS ? "Callers" : "Callees",
		       cli_safe(g->procs[p].proc), cli_safe(g->procs[p].image));
		text_pid(g->procs[p].pid);
		printf(": ");
		for (unsigned e = 0; e < ps->set->nevents; e++)
			printf("%s%" PRIu64 " %s", e ? ", " : "", g->procs[p].incl[e],
			       cli_safe(ps->set->events[e]));
		printf(" samples in it and below (%.2f%% of the samples with stacks); shares are "
		       "of those.\n", report_pct(g->procs[p].incl[ps->col], g->total[ps->col]));
		printf("==============================================================================\n");
		text_head(stdout, ps, ps->mode == PS_CALLERS ? "caller  image" : "callee  image");
	}
	if (ps->mode == PS_CALLERS) {
		status = callers_tree(t, 1);
	} else if (dcpi_callgraph_callees(g, p, ps->col, &es, &ne)) {
		status = cli_error("%s", dcpi_errmsg());
	} else {
		for (size_t i = 0; i < ne && i < ps->keep; i++)
			row_out(t, es[i].proc, es[i].c, 1);
		free(es);
	}
	if (ps->out == PS_JSON) {
		dcpi_json_break(t->j);
		dcpi_json_arr_end(t->j);
		if (ps->bypid)
			dcpi_json_obj_end(t->j);
	}
	return status;
}

int prof_stacks_report(struct prof_stacks *ps)
{
	struct dcpi_callgraph g;
	struct tree t = { ps, &g, NULL, -1, NULL, { 0 } };
	size_t *match = NULL, nmatch = 0;
	int status = 0;

	if (load(ps, &g))
		return -1;
	if (ps->mode == PS_INCLUSIVE || ps->mode == PS_STACKS) {
		status = ps->mode == PS_INCLUSIVE ? prof_stacks_inclusive(ps, &g)
						  : prof_stacks_list(ps, &g);
		dcpi_callgraph_free(&g);
		return status;
	}
	if (find(ps, &g, &match, &nmatch)) {
		dcpi_callgraph_free(&g);
		return -1;
	}
	if (ps->out == PS_JSON) {
		t.j = report_json_begin(ps->db);
		dcpi_json_key_str(t.j, "mode", ps->mode == PS_CALLERS ? "callers" : "callees");
		report_json_header(t.j, ps->set, g.total, ps->w);
		dcpi_json_break(t.j);
		if (ps->bypid) { /* -pid: a section per process that ran it */
			dcpi_json_key(t.j, "procedures");
			dcpi_json_arr_begin(t.j);
		}
	} else if (ps->out == PS_CSV) {
		report_warn_print(ps->w, "");
		printf("depth,%s,image%s", ps->mode == PS_CALLERS ? "caller" : "callee",
		       ps->bypid ? ",pid" : "");
		for (unsigned e = 0; e < ps->set->nevents; e++) {
			putchar(',');
			report_csv_field(stdout, ps->set->events[e]);
		}
		putchar('\n');
	} else {
		report_print_header(stdout, ps->db, ps->set, g.total, ps->w);
		print_stacks_line(stdout, &g, ps->col, ps->set->events[ps->col]);
	}
	for (size_t i = 0; i < nmatch && !status; i++)
		status = section(&t, match[i]);
	if (ps->out == PS_JSON) {
		if (ps->bypid) {
			dcpi_json_break(t.j);
			dcpi_json_arr_end(t.j);
		}
		dcpi_json_obj_end(t.j);
		dcpi_json_free(t.j);
	}
	free(match);
	dcpi_callgraph_free(&g);
	return status;
}

/* ---- -inclusive ------------------------------------------------------------------ */

static const struct dcpi_callgraph *incl_g;
static unsigned incl_col;

static int incl_cmp(const void *a, const void *b)
{
	const struct dcpi_cg_proc *x = &incl_g->procs[*(const size_t *)a],
				  *y = &incl_g->procs[*(const size_t *)b];
	int c;

	if (x->incl[incl_col] != y->incl[incl_col])
		return x->incl[incl_col] > y->incl[incl_col] ? -1 : 1;
	if (x->self[incl_col] != y->self[incl_col])
		return x->self[incl_col] > y->self[incl_col] ? -1 : 1;
	c = strcmp(x->image, y->image);
	c = c ? c : strcmp(x->proc, y->proc);
	return c ? c : x->pid < y->pid ? -1 : x->pid > y->pid;
}

int prof_stacks_inclusive(struct prof_stacks *ps, const struct dcpi_callgraph *g)
{
	size_t *order = malloc((g->nprocs + 1) * sizeof(*order)), n = 0;
	struct dcpi_json *j = NULL;

	if (!order)
		return cli_error("out of memory");
	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].incl[ps->col])
			order[n++] = i;
	incl_g = g;
	incl_col = ps->col;
	qsort(order, n, sizeof(*order), incl_cmp);
	if (n > ps->keep)
		n = ps->keep;
	if (ps->out == PS_JSON) {
		j = report_json_begin(ps->db);
		dcpi_json_key_str(j, "mode", "inclusive");
		report_json_header(j, ps->set, g->total, ps->w);
		dcpi_json_break(j);
		dcpi_json_key(j, "rows");
		dcpi_json_arr_begin(j);
	} else if (ps->out == PS_CSV) {
		report_warn_print(ps->w, "");
		printf("image,procedure%s", ps->bypid ? ",pid" : "");
		for (unsigned e = 0; e < ps->set->nevents; e++) {
			printf(",self ");
			report_csv_field(stdout, ps->set->events[e]);
			printf(",inclusive ");
			report_csv_field(stdout, ps->set->events[e]);
		}
		putchar('\n');
	} else {
		report_print_header(stdout, ps->db, ps->set, g->total, ps->w);
		print_stacks_line(stdout, g, ps->col, ps->set->events[ps->col]);
		printf("\nProcedures by inclusive samples: in the procedure and in what it called "
		       "(self: in it alone),\nof the samples with stacks.\n");
		printf("==============================================================================\n");
		for (unsigned e = 0; e < ps->set->nevents; e++)
			printf("%12s %7s %12s %7s ", "self", "%", cli_safe(ps->set->events[e]), "incl%");
		printf(" %-40s %s\n", "procedure", "image");
	}
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_cg_proc *p = &g->procs[order[i]];

		if (ps->out == PS_JSON) {
			dcpi_json_break(j);
			dcpi_json_obj_begin(j);
			dcpi_json_key_str(j, "image", p->image);
			dcpi_json_key_str(j, "procedure", p->proc);
			json_pid(j, p->pid);
			dcpi_json_key(j, "self");
			dcpi_json_obj_begin(j);
			report_json_counts(j, ps->set->nevents, p->self, g->total);
			dcpi_json_obj_end(j);
			dcpi_json_key(j, "inclusive");
			dcpi_json_obj_begin(j);
			report_json_counts(j, ps->set->nevents, p->incl, g->total);
			dcpi_json_obj_end(j);
			dcpi_json_obj_end(j);
		} else if (ps->out == PS_CSV) {
			report_csv_field(stdout, p->image);
			putchar(',');
			report_csv_field(stdout, p->proc);
			csv_pid(ps, p->pid);
			for (unsigned e = 0; e < ps->set->nevents; e++)
				printf(",%" PRIu64 ",%" PRIu64, p->self[e], p->incl[e]);
			putchar('\n');
		} else {
			for (unsigned e = 0; e < ps->set->nevents; e++)
				printf("%12" PRIu64 " %6.2f%% %12" PRIu64 " %6.2f%% ", p->self[e],
				       report_pct(p->self[e], g->total[e]), p->incl[e],
				       report_pct(p->incl[e], g->total[e]));
			printf(" %-40s %s", cli_safe(p->proc), cli_safe(p->image));
			text_pid(p->pid);
			putchar('\n');
		}
	}
	if (j) {
		dcpi_json_break(j);
		dcpi_json_arr_end(j);
		dcpi_json_obj_end(j);
		dcpi_json_free(j);
	}
	free(order);
	return 0;
}

/* ---- -stacks ----------------------------------------------------------------------- */

/* The graph's stacks merged by their procedures and end (stacks that
 * differ only in offsets within procedures are one), most first. */
struct pstack {
	const uint32_t *f;      /* leaf first */
	uint32_t n;
	uint8_t end;
	uint64_t c[DCPI_MAX_EVENTS];
};

static int pstack_cmp_path(const void *a, const void *b)
{
	const struct pstack *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	for (uint32_t k = 0; k < x->n; k++)
		if (x->f[k] != y->f[k])
			return x->f[k] < y->f[k] ? -1 : 1;
	return 0;
}

static unsigned pstack_col;

static int pstack_cmp_count(const void *a, const void *b)
{
	const struct pstack *x = a, *y = b;

	if (x->c[pstack_col] != y->c[pstack_col])
		return x->c[pstack_col] > y->c[pstack_col] ? -1 : 1;
	return pstack_cmp_path(a, b);
}

int prof_stacks_list(struct prof_stacks *ps, const struct dcpi_callgraph *g)
{
	struct pstack *v = malloc((g->nstacks + 1) * sizeof(*v));
	uint64_t other[DCPI_MAX_EVENTS] = { 0 };
	/* used[p]: procedure p's number in the JSON list (from 1), order[k]: the
	 * procedure numbered k + 1 */
	uint32_t *used = calloc(2 * (g->nprocs + 1), sizeof(*used)), *order, nused = 0;
	size_t n = 0, shown;
	struct dcpi_json *j = NULL;

	if (!v || !used) {
		free(v);
		free(used);
		return cli_error("out of memory");
	}
	order = used + g->nprocs + 1;
	for (size_t i = 0; i < g->nstacks; i++) {
		v[i] = (struct pstack){ g->frames + g->stacks[i].first, g->stacks[i].n,
					g->stacks[i].end, { 0 } };
		memcpy(v[i].c, g->stacks[i].c, sizeof(v[i].c));
	}
	qsort(v, g->nstacks, sizeof(*v), pstack_cmp_path);
	for (size_t i = 0; i < g->nstacks; i++) {
		if (n && !pstack_cmp_path(&v[n - 1], &v[i])) {
			for (unsigned e = 0; e < g->nevents; e++) /* saturated, as the graph's */
				v[n - 1].c[e] = v[n - 1].c[e] > UINT64_MAX - v[i].c[e] ? UINT64_MAX
										 : v[n - 1].c[e] + v[i].c[e];
			continue;
		}
		v[n++] = v[i];
	}
	pstack_col = ps->col;
	qsort(v, n, sizeof(*v), pstack_cmp_count);
	while (n && !v[n - 1].c[ps->col])
		n--; /* none of the sort event */
	shown = n < ps->keep ? n : (size_t)ps->keep;
	for (size_t i = shown; i < n; i++)
		for (unsigned e = 0; e < g->nevents; e++)
			other[e] = other[e] > UINT64_MAX - v[i].c[e] ? UINT64_MAX : other[e] + v[i].c[e];
	if (ps->out == PS_JSON) { /* the procedures the stacks name, then the stacks by index */
		for (size_t i = 0; i < shown; i++)
			for (uint32_t k = 0; k < v[i].n; k++)
				if (!used[v[i].f[k]]) {
					order[nused] = v[i].f[k];
					used[v[i].f[k]] = ++nused;
				}
		j = report_json_begin(ps->db);
		dcpi_json_key_str(j, "mode", "stacks");
		report_json_header(j, ps->set, g->total, ps->w);
		dcpi_json_break(j);
		dcpi_json_key(j, "procedures");
		dcpi_json_arr_begin(j);
		for (uint32_t k = 0; k < nused; k++) {
			dcpi_json_break(j);
			dcpi_json_obj_begin(j);
			dcpi_json_key_str(j, "procedure", g->procs[order[k]].proc);
			dcpi_json_key_str(j, "image", g->procs[order[k]].image);
			json_pid(j, g->procs[order[k]].pid);
			dcpi_json_obj_end(j);
		}
		dcpi_json_break(j);
		dcpi_json_arr_end(j);
		dcpi_json_key(j, "rows");
		dcpi_json_arr_begin(j);
	} else if (ps->out == PS_CSV) {
		report_warn_print(ps->w, "");
		printf("end%s", ps->bypid ? ",pid" : "");
		for (unsigned e = 0; e < ps->set->nevents; e++) {
			putchar(',');
			report_csv_field(stdout, ps->set->events[e]);
		}
		printf(",stack\n");
	} else {
		report_print_header(stdout, ps->db, ps->set, g->total, ps->w);
		print_stacks_line(stdout, g, ps->col, ps->set->events[ps->col]);
		printf("\nCall stacks, most samples first: the outermost frame first, the sampled "
		       "procedure last.\n");
		printf("==============================================================================\n");
	}
	for (size_t i = 0; i < shown; i++) {
		const struct pstack *x = &v[i];

		if (ps->out == PS_JSON) {
			dcpi_json_break(j);
			dcpi_json_obj_begin(j);
			dcpi_json_key(j, "frames");
			dcpi_json_arr_begin(j);
			for (uint32_t k = x->n; k-- > 0;)
				dcpi_json_u64(j, used[x->f[k]] - 1);
			dcpi_json_arr_end(j);
			dcpi_json_key_str(j, "end", dcpi_stack_end_name(x->end));
			report_json_counts(j, ps->set->nevents, x->c, g->total);
			dcpi_json_obj_end(j);
		} else if (ps->out == PS_CSV) {
			report_csv_field(stdout, dcpi_stack_end_name(x->end));
			csv_pid(ps, pid_of(g, x->f[0]));
			for (unsigned e = 0; e < ps->set->nevents; e++)
				printf(",%" PRIu64, x->c[e]);
			putchar(',');
			{
				struct dcpi_buf b = DCPI_BUF_INIT;

				for (uint32_t k = x->n; k-- > 0;)
					dcpi_buf_printf(&b, "%s%s", g->procs[x->f[k]].proc, k ? ";" : "");
				dcpi_buf_put(&b, "", 1);
				report_csv_field(stdout, b.data ? (const char *)b.data : "");
				dcpi_buf_release(&b);
			}
			putchar('\n');
		} else {
			text_counts(stdout, ps, x->c, g->total);
			printf(" %s", x->end == DCPI_STACK_END_WHOLE || x->end == DCPI_STACK_END_KERNEL
					? "" : dcpi_stack_end_name(x->end));
			text_pid(pid_of(g, x->f[0]));
			putchar('\n');
			for (uint32_t k = x->n; k-- > 0;)
				printf("    %*s%s  %s\n", (int)(x->n - 1 - k < 20 ? x->n - 1 - k : 20), "",
				       cli_safe(g->procs[x->f[k]].proc), cli_safe(g->procs[x->f[k]].image));
		}
	}
	if (ps->out == PS_JSON) {
		dcpi_json_break(j);
		dcpi_json_arr_end(j);
		dcpi_json_key(j, "other");
		dcpi_json_obj_begin(j);
		dcpi_json_key(j, "stacks");
		dcpi_json_u64(j, n - shown);
		report_json_counts(j, ps->set->nevents, other, g->total);
		dcpi_json_obj_end(j);
		dcpi_json_obj_end(j);
		dcpi_json_free(j);
	} else if (ps->out == PS_TEXT && n > shown) {
		text_counts(stdout, ps, other, g->total);
		printf(" in %zu more stacks (-keep)\n", n - shown);
	}
	free(v);
	free(used);
	return 0;
}
