/* A process's JIT ranges (see jitmap_priv.h): disjoint address ranges,
 * each naming the entry that owns it, the latest entry placed winning
 * where entries overlap.  A treap keyed by start (split and merge), so a
 * placement costs O(log n) plus the ranges it removes, in whatever order
 * a map lists its entries: the sorted array of the loadmap moved every
 * range after the new one, and a perf map listed backwards took time
 * quadratic in its entries (a million: minutes). */
#include <errno.h>
#include <stdlib.h>

#include "dcpi/error.h"
#include "internal.h"
#include "jitmap_priv.h"

/* Node 0 is nil. */
#define NIL 0u

static uint32_t rnd(struct jm_ranges *r)
{
	uint64_t x = r->seed ? r->seed : 0x9e3779b97f4a7c15ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->seed = x;
	return (uint32_t)(x >> 32);
}

static uint32_t node_new(struct jm_ranges *r, const struct lm_map *m)
{
	uint32_t i;

	if (r->free != NIL) {
		i = r->free;
		r->free = r->n[i].l;
	} else {
		if (r->len == 0)
			r->len = 1; /* nil */
		if (r->len >= JM_RANGES_MAX ||
		    DCPI_GROW(r->n, r->cap, r->len + 1, JM_RANGES_MAX, "JIT ranges"))
			return NIL;
		i = (uint32_t)r->len++;
	}
	r->n[i] = (struct jm_rnode){ *m, NIL, NIL, rnd(r) };
	r->count++;
	return i;
}

/* Every node of t back to the free list. */
static void free_tree(struct jm_ranges *r, uint32_t t)
{
	while (t != NIL) {
		uint32_t next = r->n[t].r;

		free_tree(r, r->n[t].l);
		r->n[t].l = r->free;
		r->free = t;
		r->count--;
		t = next;
	}
}

/* t split into *a (starts below key) and *b (the rest). */
static void split(struct jm_ranges *r, uint32_t t, uint64_t key, uint32_t *a, uint32_t *b)
{
	if (t == NIL) {
		*a = *b = NIL;
	} else if (r->n[t].m.start < key) {
		split(r, r->n[t].r, key, &r->n[t].r, b);
		*a = t;
	} else {
		split(r, r->n[t].l, key, a, &r->n[t].l);
		*b = t;
	}
}

/* a and b (every start of a below every start of b) as one tree. */
static uint32_t merge(struct jm_ranges *r, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (r->n[a].prio > r->n[b].prio) {
		r->n[a].r = merge(r, r->n[a].r, b);
		return a;
	}
	r->n[b].l = merge(r, a, r->n[b].l);
	return b;
}

static uint32_t rightmost(const struct jm_ranges *r, uint32_t t)
{
	while (t != NIL && r->n[t].r != NIL)
		t = r->n[t].r;
	return t;
}

/* What of m lies from end on, as a range of its own. */
static struct lm_map tail_of(const struct lm_map *m, uint64_t end)
{
	return (struct lm_map){ end, m->end, m->pgoff + (end - m->start), m->image };
}

int jm_ranges_place(struct jm_ranges *r, uint64_t start, uint64_t end, int32_t image)
{
	struct lm_map add = { start, end, 0, image };
	uint32_t left, mid, right, x, y, nn, nt;

	if (start >= end)
		return 0;
	if (r->count + 2 > JM_RANGES_MAX)
		return dcpi_error(ENOSPC, "more than %u JIT ranges", JM_RANGES_MAX);
	/* both nodes it may need first, so that nothing changes on failure */
	nn = node_new(r, &add);
	nt = nn != NIL ? node_new(r, &add) : NIL;
	if (nt == NIL) {
		if (nn != NIL)
			free_tree(r, nn);
		return dcpi_error(ENOMEM, "out of memory for JIT ranges");
	}
	split(r, r->root, start, &left, &right);
	split(r, right, end, &mid, &right);
	x = rightmost(r, left); /* the range before start may reach into the new one */
	y = rightmost(r, mid);  /* the last range starting inside may reach past end */
	if (x != NIL && r->n[x].m.end > end)
		r->n[nt].m = tail_of(&r->n[x].m, end);
	else if (y != NIL && r->n[y].m.end > end)
		r->n[nt].m = tail_of(&r->n[y].m, end);
	else
		free_tree(r, nt), nt = NIL;
	if (x != NIL && r->n[x].m.end > start)
		r->n[x].m.end = start;
	free_tree(r, mid);
	r->root = merge(r, merge(r, left, nn), merge(r, nt, right));
	return 0;
}

const struct lm_map *jm_ranges_lookup(const struct jm_ranges *r, uint64_t ip)
{
	uint32_t t = r->root, best = NIL;

	while (t != NIL) {
		if (r->n[t].m.start <= ip) {
			best = t;
			t = r->n[t].r;
		} else {
			t = r->n[t].l;
		}
	}
	return best != NIL && ip < r->n[best].m.end ? &r->n[best].m : NULL;
}

void jm_ranges_free(struct jm_ranges *r)
{
	free(r->n);
	*r = (struct jm_ranges){ 0 };
}
