/* Dominators, loops and frequency equivalence classes of a CFG: see
 * dcpi/cfg.h.  Dominators by Cooper, Harvey and Kennedy's iterative
 * algorithm ("A Simple, Fast Dominance Algorithm", 2001) over reverse
 * postorder from the outside node; ancestry in the tree is answered in
 * O(1) by DFS pre/post numbers.  Loops (dcpi_cfg_block.loop) are the
 * natural loops of the back edges; classes are cycle-equivalent blocks
 * (cfg_cycles.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_int.h"
#include "dcpi/error.h"

#define NONE SIZE_MAX

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
	struct csr succ, pred;   /* the graph */
	struct tree dom;
	size_t *back;            /* reverse postorder on the reversed graph:
				    NONE where the outside is not reached */
	size_t *order, *stack, *stack2;
};

static int csr_make(size_t nn, const size_t *from, const size_t *to, size_t ne, int reverse,
		    struct csr *c)
{
	size_t *fill;

	c->first = calloc(nn + 1, sizeof(size_t));
	c->adj = calloc(ne ? ne : 1, sizeof(size_t));
	fill = calloc(nn + 1, sizeof(size_t));
	if (!c->first || !c->adj || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t e = 0; e < ne; e++)
		c->first[(reverse ? to[e] : from[e]) + 1]++;
	for (size_t v = 0; v < nn; v++)
		c->first[v + 1] += c->first[v];
	for (size_t e = 0; e < ne; e++) {
		size_t a = reverse ? to[e] : from[e];

		c->adj[c->first[a] + fill[a]++] = reverse ? from[e] : to[e];
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

/* The natural loop of latch -> header: header, and what reaches latch
 * backwards without passing header.  Marks mark[v] = stamp; when assign,
 * sets loop[v] = header. */
static size_t loop_body(struct work *w, struct dcpi_cfg *g, const struct backedge *be,
			size_t *mark, size_t stamp, int assign)
{
	size_t sp = 0, size = 1;

	mark[be->header] = stamp;
	if (assign && be->header < g->nblocks)
		g->blocks[be->header].loop = be->header;
	if (mark[be->latch] != stamp) {
		mark[be->latch] = stamp;
		w->stack[sp++] = be->latch;
		size++;
	}
	while (sp) {
		size_t v = w->stack[--sp];

		if (assign && v < g->nblocks)
			g->blocks[v].loop = be->header;
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
		be[i].size = loop_body(w, g, &be[i], mark, 2 * i + 1, 0);
	qsort(be, nbe, sizeof(*be), size_desc);
	for (size_t i = 0; i < nbe; i++)
		loop_body(w, g, &be[i], mark, 2 * i + 2, 1);
	free(be);
	free(mark);
	return 0;
}

/* ---- classes --------------------------------------------------------------------- */

static int tree_alloc(struct tree *t, size_t nn)
{
	t->idom = calloc(nn, sizeof(size_t));
	t->rpo = calloc(nn, sizeof(size_t));
	t->pre = calloc(nn, sizeof(size_t));
	t->post = calloc(nn, sizeof(size_t));
	return t->idom && t->rpo && t->pre && t->post ? 0 : -ENOMEM;
}

/* Classes: blocks on the same cycles of the graph closed through the
 * outside (cfg_cycle_classes), which every run passes equally often.
 * Dominance is not enough: a dominating b, b post-dominating a and both
 * in the same natural loops, a and b still differ when b is on only some
 * of the loop's turns and ends it (liblzma's match loop: the block that
 * leaves it ran 19.9 million times, the loop's head 41.9 million).  A
 * block the outside does not reach, or that does not reach the outside,
 * is a class of its own. */
static int classes(struct work *w, struct dcpi_cfg *g)
{
	size_t root = DCPI_CFG_OUTSIDE(g), *from = calloc(g->nedges + 1, sizeof(size_t));
	size_t *to = calloc(g->nedges + 1, sizeof(size_t)), *cyc = calloc(w->nn, sizeof(size_t));
	size_t nmap = 3 * w->nn + g->nedges + 1, *map = calloc(nmap, sizeof(size_t));
	unsigned char *keep = calloc(w->nn, 1);
	int err = !from || !to || !cyc || !map || !keep ? -ENOMEM : 0;

	for (size_t e = 0; !err && e < g->nedges; e++)
		from[e] = g->edges[e].from, to[e] = g->edges[e].to;
	for (size_t v = 0; !err && v < w->nn; v++)
		keep[v] = w->dom.rpo[v] != NONE && w->back[v] != NONE;
	if (!err)
		err = cfg_cycle_classes(w->nn, from, to, g->nedges, root, keep, cyc);
	for (size_t k = 0; !err && k < nmap; k++)
		map[k] = NONE;
	/* dense numbers, in block order (cfg_cycle_classes' are below
	 * 3 x nodes + edges); a singleton where there is none */
	g->nclasses = 0;
	for (size_t b = 0; !err && b < g->nblocks; b++) {
		size_t *k = cyc[b] < nmap ? &map[cyc[b]] : NULL;

		g->blocks[b].reachable = w->dom.rpo[b] != NONE;
		if (!k)
			g->blocks[b].cls = g->nclasses++;
		else {
			if (*k == NONE)
				*k = g->nclasses++;
			g->blocks[b].cls = *k;
		}
	}
	free(from), free(to), free(cyc), free(map), free(keep);
	return err;
}

static void work_free(struct work *w)
{
	free(w->succ.first), free(w->succ.adj), free(w->pred.first), free(w->pred.adj);
	free(w->dom.idom), free(w->dom.rpo), free(w->dom.pre), free(w->dom.post);
	free(w->back);
	free(w->order), free(w->stack), free(w->stack2);
}

/* The graph's own successor and predecessor lists. */
static int edge_csrs(const struct dcpi_cfg *g, struct work *w)
{
	size_t *from = calloc(g->nedges + 1, sizeof(size_t)), *to = calloc(g->nedges + 1, sizeof(size_t));
	int err = !from || !to ? -ENOMEM : 0;

	for (size_t e = 0; !err && e < g->nedges; e++)
		from[e] = g->edges[e].from, to[e] = g->edges[e].to;
	if (!err)
		err = csr_make(w->nn, from, to, g->nedges, 0, &w->succ);
	if (!err)
		err = csr_make(w->nn, from, to, g->nedges, 1, &w->pred);
	free(from), free(to);
	return err;
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
	err = !w.order || !w.stack || !w.stack2 ? -ENOMEM : 0;
	if (!err)
		err = edge_csrs(g, &w);
	if (!err)
		err = tree_alloc(&w.dom, w.nn);
	if (!err)
		err = (w.back = calloc(w.nn, sizeof(size_t))) ? 0 : -ENOMEM;
	if (!err) {
		dominators(&w, &w.succ, &w.pred, root, &w.dom);
		rpo(&w, &w.pred, root, w.back);
		err = number_tree(&w, &w.dom, root);
	}
	if (!err)
		err = find_loops(&w, g);
	if (!err)
		err = classes(&w, g);
	work_free(&w);
	return err ? dcpi_error(ENOMEM, "out of memory") : 0;
}
