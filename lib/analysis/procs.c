/* Time by image or by procedure: see dcpi/procs.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/hashtab.h>

#include "dcpi/error.h"
#include "dcpi/procs.h"
#include "dcpi/select.h"
#include "dcpi/symtab.h"
#include "internal.h"

/* What the build needs besides the table. */
struct build {
	struct dcpi_procs *t;
	const struct dcpi_procs_opts *o;
	htab_t noted;           /* identity keys whose symbol problems were noted */
	int strict;
};

/* ---- notes ----------------------------------------------------------------- */

static void note(struct dcpi_procs *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct dcpi_procs *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (DCPI_GROW(t->notes, t->notes_cap, t->nnotes + 1, DCPI_PROCS_MAX_NOTES, "notes"))
		return; /* past the cap: the tools cut far earlier anyway */
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		t->notes[t->nnotes++] = s;
	va_end(ap);
}

/* ---- rows ------------------------------------------------------------------ */

static hashval_t row_hash(const void *p)
{
	const struct dcpi_proc_row *w = p;

	return htab_hash_string(w->image) * 31 + (w->proc ? htab_hash_string(w->proc) : 0) +
	       (hashval_t)w->pid + (w->group ? htab_hash_string(w->group) * 7 : 0);
}

static int row_eq(const void *a, const void *b)
{
	const struct dcpi_proc_row *x = a, *y = b;

	return x->pid == y->pid && !strcmp(x->image, y->image) &&
	       (x->proc == y->proc || (x->proc && y->proc && !strcmp(x->proc, y->proc))) &&
	       (x->group == y->group || (x->group && y->group && !strcmp(x->group, y->group)));
}

static void row_free(struct dcpi_proc_row *w)
{
	if (!w)
		return;
	free(w->image);
	free(w->proc);
	free(w->group);
	free(w);
}

static struct dcpi_proc_row *row_new(const char *image, const char *proc, int64_t pid,
				     const char *group)
{
	struct dcpi_proc_row *w = calloc(1, sizeof(*w));

	if (!w || !(w->image = strdup(image)) || (proc && !(w->proc = strdup(proc))) ||
	    (group && !(w->group = strdup(group)))) {
		row_free(w);
		return NULL;
	}
	w->pid = pid;
	return w;
}

static int row_get(struct dcpi_procs *t, const char *image, const char *proc, int64_t pid,
		   const char *group, struct dcpi_proc_row **out)
{
	struct dcpi_proc_row key = { .image = (char *)image, .proc = (char *)proc, .pid = pid,
				      .group = (char *)group }, *w;
	void **slot;
	int err;

	if ((*out = htab_find(t->index, &key)))
		return 0;
	if (!(w = row_new(image, proc, pid, group)))
		return dcpi_error(ENOMEM, "out of memory");
	if ((err = DCPI_GROW(t->rows, t->cap, t->n + 1, SIZE_MAX, "rows")) ||
	    !(slot = htab_find_slot(t->index, &key, INSERT))) {
		row_free(w);
		return err ? err : dcpi_error(ENOMEM, "out of memory");
	}
	t->rows[t->n++] = w;
	*slot = *out = w;
	return 0;
}

static void add_counts(struct dcpi_procs *t, struct dcpi_proc_row *w,
		       const struct dcpi_profset_entry *e, size_t row)
{
	const struct dcpi_profile *p = &e->prof;

	for (uint32_t ev = 0; ev < p->nevents; ev++) {
		uint64_t n = p->counts[row * p->nevents + ev];

		w->c[e->col[ev]] += n;
		t->total[e->col[ev]] += n;
	}
}

/* ---- symbols ------------------------------------------------------------------ */

/* Say once per image what went wrong with its symbols, or what the open
 * noticed ("using copy from ..."). */
static void note_symbols(struct build *b, const struct dcpi_profset_entry *e,
			 const struct dcpi_obj *obj, int err)
{
	const struct dcpi_profile *p = &e->prof;
	char *key = dcpi_obj_identity(p, e->platdir);
	void **slot = key ? htab_find_slot(b->noted, key, INSERT) : NULL;
	const char *msg;

	if (!slot || *slot) {
		free(key);
		return;
	}
	*slot = key;
	if (err) {
		msg = dcpi_errmsg();
		if (strstr(msg, p->path))
			note(b->t, "%s; its samples are shown as one row", msg);
		else
			note(b->t, "%s: %s; its samples are shown as one row", p->path, msg);
	} else if (*(msg = dcpi_symtab_message(dcpi_obj_symtab(obj)))) {
		note(b->t, "%s: %s", p->path, msg);
	}
}

static const struct dcpi_symtab *symbols(struct build *b, const struct dcpi_profset_entry *e)
{
	struct dcpi_obj *obj = NULL;
	int err;

	if (!b->o->objs)
		return NULL;
	err = dcpi_objcache_get(b->o->objs, &e->prof, e->platdir, &obj);
	note_symbols(b, e, obj, err);
	if (err)
		b->t->failed_chosen |= b->strict;
	return err ? NULL : dcpi_obj_symtab(obj);
}

void dcpi_procs_name(const struct dcpi_profile *p, const struct dcpi_symtab *st, uint64_t off,
		     char *buf, size_t len)
{
	const struct dcpi_sym *s = st ? dcpi_symtab_lookup(st, off) : NULL;
	uint64_t v = off, lo, hi, slo = 0, shi = UINT64_MAX;
	const char *sec = NULL, *at = "+"; /* '+': an offset no segment maps */
	char name[256];

	if (st && !s && dcpi_symtab_off2vaddr(st, off, &v) == 0) {
		sec = dcpi_symtab_section_at(st, v, &slo, &shi);
		at = "@";
	}
	/* 64 KiB of the virtual address space, inside the section: a range
	   dcpilist takes as it is printed */
	lo = v / DCPI_PROCS_REGION * DCPI_PROCS_REGION;
	hi = lo + (DCPI_PROCS_REGION - 1);
	if (lo < slo)
		lo = slo;
	if (hi > shi - 1)
		hi = shi - 1;
	dcpi_profile_short_name(p, name, sizeof(name));
	if (s)
		snprintf(buf, len, "%s", dcpi_sym_demangled(s));
	else if (p->kind == DCPI_IMAGE_UNKNOWN)
		snprintf(buf, len, "[unknown]");
	else if (p->kind == DCPI_IMAGE_ANON || !st)
		snprintf(buf, len, "[%s]", name);
	else if (sec && strcmp(sec, ".text"))
		snprintf(buf, len, "[%s %s]", name, sec);
	else
		snprintf(buf, len, "[%s%s0x%" PRIx64 "-0x%" PRIx64 "%s%s]", name, at, lo, hi,
			 sec ? " " : "", sec ? sec : "");
}

/* *buf holds at least s's whole name and its @0xADDR, or a region's. */
static int proc_room(char **buf, size_t *cap, const struct dcpi_sym *s)
{
	size_t need = (s ? strlen(dcpi_sym_demangled(s)) : 0) + 512;
	char *v;

	if (need <= *cap)
		return 0;
	if (!(v = realloc(*buf, need)))
		return dcpi_error(ENOMEM, "out of memory");
	*buf = v;
	*cap = need;
	return 0;
}

int dcpi_procs_name_grow(const struct dcpi_profile *p, const struct dcpi_symtab *st,
			 uint64_t off, char **buf, size_t *cap)
{
	int err = proc_room(buf, cap, st ? dcpi_symtab_lookup(st, off) : NULL);

	if (!err)
		dcpi_procs_name(p, st, off, *buf, *cap);
	return err;
}

/* ---- building ----------------------------------------------------------------- */

/* Sampled symbols of one profile that share their name with another
 * sampled symbol at another address (a JIT's recompiled function, static
 * functions of one name in two files): each is named NAME@0xADDR, which
 * dcpilist and the others take, instead of the two being summed into one
 * row.  Sorted by address for is_twin. */
struct twins {
	const struct dcpi_sym **v;
	size_t n;
};

static int by_name(const void *a, const void *b)
{
	const struct dcpi_sym *x = *(const struct dcpi_sym *const *)a;
	const struct dcpi_sym *y = *(const struct dcpi_sym *const *)b;
	int c = strcmp(dcpi_sym_demangled(x), dcpi_sym_demangled(y));

	return c ? c : x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = (*(const struct dcpi_sym *const *)a)->vaddr;
	uint64_t y = (*(const struct dcpi_sym *const *)b)->vaddr;

	return x < y ? -1 : x > y;
}

static int find_twins(const struct dcpi_profile *p, const struct dcpi_symtab *st,
		      struct twins *tw)
{
	const struct dcpi_sym **v = NULL, *last = NULL;
	size_t n = 0, cap = 0, k = 0;
	int err;

	for (size_t row = 0; row < p->nrows; row++) { /* each symbol once: offsets sorted */
		const struct dcpi_sym *s = dcpi_symtab_lookup(st, p->offsets[row]);

		if (!s || s == last)
			continue;
		last = s;
		if ((err = DCPI_GROW(v, cap, n + 1, SIZE_MAX, "symbols"))) {
			free(v);
			return err;
		}
		v[n++] = s;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_name);
	for (size_t i = 0; i < n; i++) { /* keep those with a same-named neighbour */
		int twin = (i > 0 && !strcmp(dcpi_sym_demangled(v[i - 1]), dcpi_sym_demangled(v[i])) &&
			    v[i - 1]->vaddr != v[i]->vaddr) ||
			   (i + 1 < n && !strcmp(dcpi_sym_demangled(v[i + 1]), dcpi_sym_demangled(v[i])) &&
			    v[i + 1]->vaddr != v[i]->vaddr);

		if (twin)
			v[k++] = v[i];
	}
	if (k > 1)
		qsort(v, k, sizeof(*v), by_addr);
	tw->v = v;
	tw->n = k;
	return 0;
}

static int is_twin(const struct twins *tw, const struct dcpi_sym *s)
{
	return tw->n && bsearch(&s, tw->v, tw->n, sizeof(*tw->v), by_addr);
}

/* The row's start address: its symbol's, while every symbol summed into it
 * starts there (rows of one name from two builds or boots have none). */
static void row_addr(struct dcpi_proc_row *w, const struct dcpi_sym *s)
{
	if (!s) {
		w->has_addr = 0;
		w->addr_set = 1;
	} else if (!w->addr_set) {
		w->addr = s->vaddr;
		w->has_addr = w->addr_set = 1;
	} else if (w->has_addr && w->addr != s->vaddr) {
		w->has_addr = 0;
	}
}

static int add_entry(struct build *b, const struct dcpi_profset_entry *e)
{
	const struct dcpi_profile *p = &e->prof;
	const char *img = p->kind == DCPI_IMAGE_UNKNOWN ? "unknown" : p->path;
	int64_t pid = b->o->bypid ? p->pid : -1;
	const struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *s, *last = NULL;
	struct dcpi_proc_row *w = NULL;
	struct twins tw = { NULL, 0 };
	char *proc = NULL, region[64], group[512];
	size_t pcap = 0;
	int err = 0;

	if (b->o->by && dcpi_profile_label_value(p->label, b->o->by, group, sizeof(group)))
		snprintf(group, sizeof(group), "-");

	/* dcpid -unknown: one profile per process and address region; kept
	   apart, a row says which region (offsets count from its start) */
	if (pid >= 0 && dcpi_select_region(p, region, sizeof(region)) == 0)
		img = region;

	if (b->o->procs && p->kind != DCPI_IMAGE_UNKNOWN && p->kind != DCPI_IMAGE_ANON)
		st = symbols(b, e);
	if (st && (err = find_twins(p, st, &tw)))
		return err;
	for (size_t row = 0; row < p->nrows && !err; row++) {
		if (b->o->procs) {
			/* a symbol's row is named by the symbol alone, and
			   offsets are sorted, so its rows come together: only
			   a change of symbol is named and hashed again */
			s = st ? dcpi_symtab_lookup(st, p->offsets[row]) : NULL;
			if (s && s == last && w) {
				add_counts(b->t, w, e, row);
				continue;
			}
			last = s;
			/* a name is never cut: C++ names pass 4 KiB */
			if ((err = proc_room(&proc, &pcap, s)))
				break;
			dcpi_procs_name(p, st, p->offsets[row], proc, pcap);
			if (s && is_twin(&tw, s)) /* NAME@0xADDR: which of them */
				snprintf(proc + strlen(proc), pcap - strlen(proc),
					 "@0x%" PRIx64, s->vaddr);
			err = row_get(b->t, img, proc, pid, b->o->by ? group : NULL, &w);
			if (!err)
				row_addr(w, s);
		} else if (!w) {
			err = row_get(b->t, img, NULL, pid, b->o->by ? group : NULL, &w);
		}
		if (!err)
			add_counts(b->t, w, e, row);
	}
	free(proc);
	free(tw.v);
	return err;
}

int dcpi_procs_build(struct dcpi_procs *t, const struct dcpi_profset *set,
		     const unsigned char *chosen, int strict, const struct dcpi_procs_opts *o)
{
	struct build b = { t, o, NULL, strict };
	int err = 0;

	memset(t, 0, sizeof(*t));
	t->index = htab_create_alloc(1024, row_hash, row_eq, NULL, calloc, free);
	b.noted = htab_create_alloc(64, htab_hash_string, htab_eq_string, free, calloc, free);
	if (!t->index || !b.noted)
		err = dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < set->n && !err; i++)
		if (!chosen || chosen[i])
			err = add_entry(&b, &set->v[i]);
	if (b.noted)
		htab_delete(b.noted);
	return err;
}

void dcpi_procs_free(struct dcpi_procs *t)
{
	for (size_t i = 0; i < t->n; i++)
		row_free(t->rows[i]);
	for (size_t i = 0; i < t->nnotes; i++)
		free(t->notes[i]);
	if (t->index)
		htab_delete(t->index);
	free(t->rows);
	free(t->notes);
	memset(t, 0, sizeof(*t));
}

/* ---- order -------------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct dcpi_proc_row *x = *(struct dcpi_proc_row *const *)a;
	const struct dcpi_proc_row *y = *(struct dcpi_proc_row *const *)b;
	int col = *(const int *)arg;

	if (x->c[col] != y->c[col])
		return x->c[col] > y->c[col] ? -1 : 1;
	if (strcmp(x->image, y->image))
		return strcmp(x->image, y->image);
	if (x->proc && y->proc && strcmp(x->proc, y->proc))
		return strcmp(x->proc, y->proc);
	if (x->group && y->group && strcmp(x->group, y->group))
		return strcmp(x->group, y->group);
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void dcpi_procs_sort(struct dcpi_procs *t, int col)
{
	if (t->n)
		qsort_r(t->rows, t->n, sizeof(*t->rows), cmp_rows, &col);
}

size_t dcpi_procs_shown(const struct dcpi_procs *t, int col, uint64_t keep, double cutoff)
{
	uint64_t total = t->total[col];
	size_t n = 0;

	for (; n < t->n && n < keep; n++)
		if (cutoff > 0 && total && 100.0 * t->rows[n]->c[col] / total < cutoff)
			break;
	return n;
}
