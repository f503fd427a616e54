/* Dominators, loops and frequency equivalence classes of a CFG: see
 * dcpi/cfg.h.  Dominators by Cooper, Harvey and Kennedy's iterative
 * algorithm ("A Simple, Fast Dominance Algorithm", 2001) over reverse
 * postorder, from the outside node (forward: dominators; on the reversed
 * graph: post-dominators).  Ancestry in either tree is answered in O(1)
 * by DFS pre/post numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_int.h"
#include "dcpi/error.h"

#define NONE SIZE_MAX
#define MAX_WALK 256   /* dominator-tree ancestors tried per block */

struct csr {
	size_t *first, *adj;     /* adj[first[v]..first[v+1]) */
};

struct tree {
	size_t *idom;            /* NONE: unreachable from the root */
	size_t *rpo;             /* reverse-postorder number, NONE unreachable */
	size_t *pre, *post;      /* tree DFS numbers */
};

struct work {
	size_t nn;
	struct csr succ, pred;
	struct tree dom, pdom;
	size_t *order, *stack, *stack2;
	uint64_t *cycles;        /* per node: the natural loops (one per back
				    edge) that hold it, hashed */
};

static int csr_make(const struct dcpi_cfg *g, size_t nn, int reverse, struct csr *c)
{
	size_t *fill;

	c->first = calloc(nn + 1, sizeof(size_t));
	c->adj = calloc(g->nedges ? g->nedges : 1, sizeof(size_t));
	fill = calloc(nn + 1, sizeof(size_t));
	if (!c->first || !c->adj || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t e = 0; e < g->nedges; e++)
		c->first[(reverse ? g->edges[e].to : g->edges[e].from) + 1]++;
	for (size_t v = 0; v < nn; v++)
		c->first[v + 1] += c->first[v];
	for (size_t e = 0; e < g->nedges; e++) {
		size_t a = reverse ? g->edges[e].to : g->edges[e].from;
		size_t b = reverse ? g->edges[e].from : g->edges[e].to;

		c->adj[c->first[a] + fill[a]++] = b;
	}
	free(fill);
	return 0;
}

/* Reverse postorder from root over succ, iteratively: w->order holds the
 * reachable nodes in RPO; returns how many. */
static size_t rpo(struct work *w, const struct csr *succ, size_t root, size_t *num)
{
	size_t sp = 0, k = 0, n;
	size_t *it = w->stack2;

	for (size_t v = 0; v < w->nn; v++)
		num[v] = NONE, it[v] = 0;
	w->stack[sp++] = root;
	num[root] = 0;
	while (sp) {
		size_t v = w->stack[sp - 1];

		if (succ->first[v] + it[v] < succ->first[v + 1]) {
			size_t s = succ->adj[succ->first[v] + it[v]++];

			if (num[s] == NONE) {
				num[s] = 0;
				w->stack[sp++] = s;
			}
			continue;
		}
		w->order[k++] = v;
		sp--;
	}
	n = k;
	for (size_t i = 0; i < n / 2; i++) {
		size_t t = w->order[i];

		w->order[i] = w->order[n - 1 - i];
		w->order[n - 1 - i] = t;
	}
	for (size_t i = 0; i < n; i++)
		num[w->order[i]] = i;
	return n;
}

static size_t intersect(const struct tree *t, size_t a, size_t b)
{
	while (a != b) {
		while (t->rpo[a] > t->rpo[b])
			a = t->idom[a];
		while (t->rpo[b] > t->rpo[a])
			b = t->idom[b];
	}
	return a;
}

static void dominators(struct work *w, const struct csr *succ, const struct csr *pred,
		       size_t root, struct tree *t)
{
	size_t n = rpo(w, succ, root, t->rpo);
	int changed = 1;

	for (size_t v = 0; v < w->nn; v++)
		t->idom[v] = NONE;
	t->idom[root] = root;
	while (changed) {
		changed = 0;
		for (size_t i = 1; i < n; i++) {
			size_t v = w->order[i], nd = NONE;

			for (size_t k = pred->first[v]; k < pred->first[v + 1]; k++) {
				size_t p = pred->adj[k];

				if (t->rpo[p] == NONE || t->idom[p] == NONE)
					continue;
				nd = nd == NONE ? p : intersect(t, p, nd);
			}
			if (nd != NONE && t->idom[v] != nd) {
				t->idom[v] = nd;
				changed = 1;
			}
		}
	}
}

/* Pre/post numbers of the tree idom[] (children found by scanning: the
 * tree is stored as parent links; a counting sort gives child lists). */
static int number_tree(struct work *w, struct tree *t, size_t root)
{
	size_t *first = calloc(w->nn + 2, sizeof(size_t)), *kid = calloc(w->nn, sizeof(size_t));
	size_t *it = w->stack2, sp = 0, clock = 0;

	if (!first || !kid) {
		free(first);
		free(kid);
		return -ENOMEM;
	}
	for (size_t v = 0; v < w->nn; v++)
		if (v != root && t->idom[v] != NONE)
			first[t->idom[v] + 2]++;
	for (size_t v = 0; v < w->nn; v++)
		first[v + 2] += first[v + 1];
	for (size_t v = 0; v < w->nn; v++)
		if (v != root && t->idom[v] != NONE)
			kid[first[t->idom[v] + 1]++] = v;
	for (size_t v = 0; v < w->nn; v++)
		t->pre[v] = t->post[v] = NONE, it[v] = 0;
	w->stack[sp++] = root;
	t->pre[root] = clock++;
	while (sp) {
		size_t v = w->stack[sp - 1];

		if (first[v] + it[v] < first[v + 1]) {
			size_t c = kid[first[v] + it[v]++];

			t->pre[c] = clock++;
			w->stack[sp++] = c;
			continue;
		}
		t->post[v] = clock++;
		sp--;
	}
	free(first);
	free(kid);
	return 0;
}

/* a is an ancestor of b (or b itself) in t. */
static int ancestor(const struct tree *t, size_t a, size_t b)
{
	return t->pre[a] != NONE && t->pre[b] != NONE && t->pre[a] <= t->pre[b] &&
	       t->post[b] <= t->post[a];
}

/* ---- loops ----------------------------------------------------------------------- */

struct backedge {
	size_t latch, header, size;
};

static int size_desc(const void *pa, const void *pb)
{
	const struct backedge *a = pa, *b = pb;

	return a->size != b->size ? (a->size > b->size ? -1 : 1)
				  : (a->header < b->header ? -1 : a->header > b->header);
}

/* A back edge's own 64-bit name (splitmix64 of its number). */
static uint64_t cycle_name(size_t i)
{
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The natural loop of latch -> header: header, and what reaches latch
 * backwards without passing header.  Marks mark[v] = stamp; when assign,
 * sets loop[v] = header and adds the loop's name (name) to cycles[v]. */
static size_t loop_body(struct work *w, struct dcpi_cfg *g, const struct backedge *be,
			size_t *mark, size_t stamp, int assign, uint64_t name)
{
	size_t sp = 0, size = 1;

	mark[be->header] = stamp;
	if (assign && be->header < g->nblocks) {
		g->blocks[be->header].loop = be->header;
		w->cycles[be->header] ^= name;
	}
	if (mark[be->latch] != stamp) {
		mark[be->latch] = stamp;
		w->stack[sp++] = be->latch;
		size++;
	}
	while (sp) {
		size_t v = w->stack[--sp];

		if (assign && v < g->nblocks) {
			g->blocks[v].loop = be->header;
			w->cycles[v] ^= name;
		}
		for (size_t k = w->pred.first[v]; k < w->pred.first[v + 1]; k++) {
			size_t p = w->pred.adj[k];

			if (mark[p] == stamp || w->dom.rpo[p] == NONE)
				continue;
			mark[p] = stamp;
			w->stack[sp++] = p;
			size++;
		}
	}
	return size;
}

static int find_loops(struct work *w, struct dcpi_cfg *g)
{
	struct backedge *be = calloc(g->nedges ? g->nedges : 1, sizeof(*be));
	size_t *mark = calloc(w->nn, sizeof(size_t)), nbe = 0;

	if (!be || !mark) {
		free(be);
		free(mark);
		return -ENOMEM;
	}
	for (size_t e = 0; e < g->nedges; e++) {
		size_t u = g->edges[e].from, h = g->edges[e].to;

		if (u < g->nblocks && h < g->nblocks && ancestor(&w->dom, h, u))
			be[nbe++] = (struct backedge){ u, h, 0 };
	}
	for (size_t i = 0; i < nbe; i++)
		be[i].size = loop_body(w, g, &be[i], mark, 2 * i + 1, 0, 0);
	qsort(be, nbe, sizeof(*be), size_desc);
	for (size_t i = 0; i < nbe; i++)
		loop_body(w, g, &be[i], mark, 2 * i + 2, 1, cycle_name(i));
	free(be);
	free(mark);
	return 0;
}

/* ---- classes --------------------------------------------------------------------- */

static size_t find(size_t *uf, size_t v)
{
	while (uf[v] != v) {
		uf[v] = uf[uf[v]];
		v = uf[v];
	}
	return v;
}

static int classes(struct work *w, struct dcpi_cfg *g)
{
	size_t *uf = calloc(g->nblocks, sizeof(size_t)), *id = calloc(g->nblocks, sizeof(size_t));

	if (!uf || !id) {
		free(uf);
		free(id);
		return -ENOMEM;
	}
	for (size_t b = 0; b < g->nblocks; b++)
		uf[b] = b, id[b] = NONE;
	for (size_t b = 0; b < g->nblocks; b++) {
		size_t a = w->dom.idom[b];

		g->blocks[b].reachable = w->dom.rpo[b] != NONE;
		for (size_t s = 0; a < g->nblocks && s < MAX_WALK; s++, a = w->dom.idom[a]) {
			/* a dominates b, b post-dominates a, and the two lie
			 * on the same cycles: not only the same innermost
			 * header, since loops that share one (a self-loop at
			 * an outer loop's head, a continue) are cycles of
			 * their own, which run one block more often */
			if (ancestor(&w->pdom, b, a) && g->blocks[a].loop == g->blocks[b].loop &&
			    w->cycles[a] == w->cycles[b]) {
				uf[find(uf, b)] = find(uf, a);
				break;
			}
		}
	}
	g->nclasses = 0;
	for (size_t b = 0; b < g->nblocks; b++) {
		size_t r = find(uf, b);

		if (id[r] == NONE)
			id[r] = g->nclasses++;
		g->blocks[b].cls = id[r];
	}
	free(uf);
	free(id);
	return 0;
}

static void work_free(struct work *w)
{
	free(w->succ.first), free(w->succ.adj), free(w->pred.first), free(w->pred.adj);
	free(w->dom.idom), free(w->dom.rpo), free(w->dom.pre), free(w->dom.post);
	free(w->pdom.idom), free(w->pdom.rpo), free(w->pdom.pre), free(w->pdom.post);
	free(w->order), free(w->stack), free(w->stack2), free(w->cycles);
}

static int tree_alloc(struct tree *t, size_t nn)
{
	t->idom = calloc(nn, sizeof(size_t));
	t->rpo = calloc(nn, sizeof(size_t));
	t->pre = calloc(nn, sizeof(size_t));
	t->post = calloc(nn, sizeof(size_t));
	return t->idom && t->rpo && t->pre && t->post ? 0 : -ENOMEM;
}

int cfg_classes(struct dcpi_cfg *g)
{
	size_t root = DCPI_CFG_OUTSIDE(g);
	struct work w;
	int err;

	memset(&w, 0, sizeof(w));
	w.nn = DCPI_CFG_NNODES(g);
	w.order = calloc(w.nn, sizeof(size_t));
	w.stack = calloc(w.nn + g->nedges + 1, sizeof(size_t));
	w.stack2 = calloc(w.nn, sizeof(size_t));
	w.cycles = calloc(w.nn, sizeof(uint64_t));
	err = !w.order || !w.stack || !w.stack2 || !w.cycles ? -ENOMEM : 0;
	if (!err)
		err = csr_make(g, w.nn, 0, &w.succ);
	if (!err)
		err = csr_make(g, w.nn, 1, &w.pred);
	if (!err)
		err = tree_alloc(&w.dom, w.nn);
	if (!err)
		err = tree_alloc(&w.pdom, w.nn);
	if (!err) {
		dominators(&w, &w.succ, &w.pred, root, &w.dom);
		dominators(&w, &w.pred, &w.succ, root, &w.pdom);
		err = number_tree(&w, &w.dom, root);
	}
	if (!err)
		err = number_tree(&w, &w.pdom, root);
	if (!err)
		err = find_loops(&w, g);
	if (!err)
		err = classes(&w, g);
	work_free(&w);
	return err ? dcpi_error(ENOMEM, "out of memory") : 0;
}
