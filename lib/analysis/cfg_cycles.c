/* Cycle equivalence of a graph's nodes: see cfg_int.h.  Johnson, Pearson
 * and Pingali's algorithm ("The Program Structure Tree", PLDI 1994,
 * section 3): each node v is split into an edge v_in - v_out, the graph
 * is taken as undirected, and one depth-first search finds for each tree
 * edge its bracket set (the back edges from below it to above it), kept
 * as a list whose top and size name the set.  Two edges lie on the same
 * cycles when their bracket sets are equal; a node's class is its edge's.
 * O(nodes + edges) time and space. */
#include <errno.h>
#include <stdlib.h>

#include "cfg_int.h"

#define NONE SIZE_MAX

struct cyc {
	size_t n, m;                 /* split nodes, undirected edges */
	size_t *ea, *eb;             /* edge e joins ea[e] and eb[e] */
	size_t *first, *adj;         /* incident edges of each node */
	size_t *num, *node_at;       /* preorder number, and its inverse */
	size_t *up;                  /* the tree edge to the parent, NONE at the root */
	size_t *hi;
	size_t *cls;                 /* per edge */
	/* brackets: the back edges (bracket id = edge id) and capping edges
	 * (ids from m up) */
	size_t nbr, *prev, *next, *bcls, *rsize, *rcls;
	size_t *head, *tail, *size;  /* per node: its bracket list */
	size_t *out_first, *out_adj; /* back edges from a node up */
	size_t *in_first, *in_adj;   /* back edges from below into a node */
	size_t *cap_next, *cap_head; /* capping brackets into a node, linked */
	size_t *stack, *it;
	size_t classes;
};

static size_t other(const struct cyc *c, size_t e, size_t v)
{
	return c->ea[e] == v ? c->eb[e] : c->ea[e];
}

/* ---- bracket lists: doubly linked, push at the head ---- */

static void push(struct cyc *c, size_t v, size_t b)
{
	if (c->head[v] == NONE)
		c->tail[v] = b;
	c->prev[b] = NONE;
	c->next[b] = c->head[v];
	if (c->head[v] != NONE)
		c->prev[c->head[v]] = b;
	c->head[v] = b;
	c->size[v]++;
}

static void unlink_br(struct cyc *c, size_t v, size_t b)
{
	if (c->prev[b] != NONE)
		c->next[c->prev[b]] = c->next[b];
	else
		c->head[v] = c->next[b];
	if (c->next[b] != NONE)
		c->prev[c->next[b]] = c->prev[b];
	else
		c->tail[v] = c->prev[b];
	c->size[v]--;
}

/* v's list gets child u's in front of it. */
static void concat(struct cyc *c, size_t v, size_t u)
{
	if (c->head[u] == NONE)
		return;
	if (c->head[v] == NONE) {
		c->head[v] = c->head[u];
		c->tail[v] = c->tail[u];
	} else {
		c->next[c->tail[u]] = c->head[v];
		c->prev[c->head[v]] = c->tail[u];
		c->head[v] = c->head[u];
	}
	c->size[v] += c->size[u];
	c->head[u] = NONE;
	c->size[u] = 0;
}

static int dfs(struct cyc *c, size_t root)
{
	size_t sp = 0, k = 0;
	size_t *nout = calloc(c->n + 1, sizeof(size_t)), *nin = calloc(c->n + 1, sizeof(size_t));

	if (!nout || !nin) {
		free(nout), free(nin);
		return -ENOMEM;
	}
	for (size_t v = 0; v < c->n; v++)
		c->num[v] = NONE, c->it[v] = 0, c->up[v] = NONE;
	c->stack[sp++] = root;
	c->num[root] = k;
	c->node_at[k++] = root;
	while (sp) {
		size_t v = c->stack[sp - 1];

		if (c->first[v] + c->it[v] < c->first[v + 1]) {
			size_t e = c->adj[c->first[v] + c->it[v]++], t = other(c, e, v);

			if (e == c->up[v])
				continue;
			if (c->num[t] == NONE) {
				c->up[t] = e;
				c->num[t] = k;
				c->node_at[k++] = t;
				c->stack[sp++] = t;
			} else if (c->num[t] < c->num[v]) {
				c->ea[e] = v, c->eb[e] = t;   /* back edge: ea below, eb above */
				nout[v + 1]++, nin[t + 1]++;
				c->cls[e] = NONE - 1;          /* marks a back edge until classed */
			}
			continue;
		}
		sp--;
	}
	/* the back edges of each node, up (out) and in from below (in) */
	for (size_t v = 0; v < c->n; v++)
		nout[v + 1] += nout[v], nin[v + 1] += nin[v];
	for (size_t v = 0; v <= c->n; v++)
		c->out_first[v] = nout[v], c->in_first[v] = nin[v];
	for (size_t e = 0; e < c->m; e++)
		if (c->cls[e] == NONE - 1) {
			c->out_adj[nout[c->ea[e]]++] = e;
			c->in_adj[nin[c->eb[e]]++] = e;
			c->cls[e] = NONE;
		}
	free(nout), free(nin);
	return (int)k;
}

static void visit(struct cyc *c, size_t v)
{
	size_t hi0 = NONE, hi1 = NONE, hi2 = NONE, hichild = NONE;

	for (size_t k = c->out_first[v]; k < c->out_first[v + 1]; k++)
		if (c->num[c->eb[c->out_adj[k]]] < hi0)
			hi0 = c->num[c->eb[c->out_adj[k]]];
	/* children: the nodes whose tree edge up leads to v */
	for (size_t k = c->first[v]; k < c->first[v + 1]; k++) {
		size_t e = c->adj[k], u = other(c, e, v);

		if (c->up[u] == e && u != v && c->hi[u] < hi1)
			hi1 = c->hi[u], hichild = u;
	}
	for (size_t k = c->first[v]; k < c->first[v + 1]; k++) {
		size_t e = c->adj[k], u = other(c, e, v);

		if (c->up[u] == e && u != v) {
			if (u != hichild && c->hi[u] < hi2)
				hi2 = c->hi[u];
			concat(c, v, u);
		}
	}
	c->hi[v] = hi0 < hi1 ? hi0 : hi1;
	for (size_t d = c->cap_head[v]; d != NONE; d = c->cap_next[d])
		unlink_br(c, v, d);
	for (size_t k = c->in_first[v]; k < c->in_first[v + 1]; k++) {
		size_t b = c->in_adj[k];

		unlink_br(c, v, b);
		if (c->bcls[b] == NONE)
			c->bcls[b] = c->classes++;
	}
	for (size_t k = c->out_first[v]; k < c->out_first[v + 1]; k++)
		push(c, v, c->out_adj[k]);
	if (hi2 != NONE && (hi0 == NONE || hi2 < hi0)) {
		size_t d = c->nbr++, t = c->node_at[hi2];

		c->cap_next[d] = c->cap_head[t];
		c->cap_head[t] = d;
		c->bcls[d] = NONE, c->rsize[d] = NONE;
		push(c, v, d);
	}
	if (c->up[v] != NONE) {
		size_t e = c->up[v], b = c->head[v];

		if (b == NONE) {
			c->cls[e] = c->classes++;   /* a bridge: on no cycle */
			return;
		}
		if (c->rsize[b] != c->size[v]) {
			c->rsize[b] = c->size[v];
			c->rcls[b] = c->classes++;
		}
		c->cls[e] = c->rcls[b];
		if (c->rsize[b] == 1)
			c->bcls[b] = c->cls[e];
	}
}

static void cyc_free(struct cyc *c)
{
	free(c->ea), free(c->eb), free(c->first), free(c->adj), free(c->num), free(c->node_at);
	free(c->up), free(c->hi), free(c->cls), free(c->prev), free(c->next), free(c->bcls);
	free(c->rsize), free(c->rcls), free(c->head), free(c->tail), free(c->size), free(c->out_first);
	free(c->out_adj), free(c->in_first), free(c->in_adj), free(c->cap_next), free(c->cap_head);
	free(c->stack), free(c->it);
}

static int cyc_alloc(struct cyc *c)
{
	size_t n = c->n, m = c->m, nb = m + n; /* at most one capping edge per node */

	c->ea = calloc(m + 1, sizeof(size_t)), c->eb = calloc(m + 1, sizeof(size_t));
	c->first = calloc(n + 1, sizeof(size_t)), c->adj = calloc(2 * m + 1, sizeof(size_t));
	c->num = calloc(n, sizeof(size_t)), c->node_at = calloc(n, sizeof(size_t));
	c->up = calloc(n, sizeof(size_t)), c->hi = calloc(n, sizeof(size_t));
	c->cls = calloc(m + 1, sizeof(size_t));
	c->prev = calloc(nb, sizeof(size_t)), c->next = calloc(nb, sizeof(size_t));
	c->bcls = calloc(nb, sizeof(size_t)), c->rsize = calloc(nb, sizeof(size_t));
	c->rcls = calloc(nb, sizeof(size_t));
	c->head = calloc(n, sizeof(size_t)), c->size = calloc(n, sizeof(size_t));
	c->tail = calloc(n, sizeof(size_t));
	c->out_first = calloc(n + 1, sizeof(size_t)), c->out_adj = calloc(m + 1, sizeof(size_t));
	c->in_first = calloc(n + 1, sizeof(size_t)), c->in_adj = calloc(m + 1, sizeof(size_t));
	c->cap_next = calloc(nb, sizeof(size_t)), c->cap_head = calloc(n, sizeof(size_t));
	c->stack = calloc(n, sizeof(size_t)), c->it = calloc(n, sizeof(size_t));
	return c->ea && c->eb && c->first && c->adj && c->num && c->node_at && c->up && c->hi &&
			       c->cls && c->prev && c->next && c->bcls && c->rsize && c->rcls &&
			       c->head && c->tail && c->size && c->out_first && c->out_adj && c->in_first &&
			       c->in_adj && c->cap_next && c->cap_head && c->stack && c->it
		       ? 0
		       : -ENOMEM;
}

int cfg_cycle_classes(size_t nn, const size_t *from, const size_t *to, size_t ne, size_t root,
		      const unsigned char *keep, size_t *cls)
{
	struct cyc c = { 0 };
	size_t *fill;
	int err, k;

	c.n = 2 * nn;
	c.m = nn;
	for (size_t e = 0; e < ne; e++)
		c.m += keep[from[e]] && keep[to[e]];
	err = cyc_alloc(&c);
	fill = calloc(c.n + 1, sizeof(size_t));
	if (err || !fill) {
		cyc_free(&c), free(fill);
		return -ENOMEM;
	}
	/* edge v: v_in (2v) - v_out (2v + 1); then u_out - w_in per edge */
	for (size_t v = 0; v < nn; v++)
		c.ea[v] = 2 * v, c.eb[v] = 2 * v + 1;
	for (size_t e = 0, m = nn; e < ne; e++)
		if (keep[from[e]] && keep[to[e]])
			c.ea[m] = 2 * from[e] + 1, c.eb[m++] = 2 * to[e];
	for (size_t e = 0; e < c.m; e++)
		if (e >= nn || keep[e])
			c.first[c.ea[e] + 1]++, c.first[c.eb[e] + 1]++;
	for (size_t v = 0; v < c.n; v++)
		c.first[v + 1] += c.first[v];
	for (size_t e = 0; e < c.m; e++)
		if (e >= nn || keep[e]) {
			c.adj[c.first[c.ea[e]] + fill[c.ea[e]]++] = e;
			c.adj[c.first[c.eb[e]] + fill[c.eb[e]]++] = e;
		}
	for (size_t e = 0; e < c.m; e++)
		c.cls[e] = NONE;
	for (size_t v = 0; v < c.n; v++)
		c.head[v] = NONE, c.cap_head[v] = NONE, c.size[v] = 0;
	k = dfs(&c, 2 * root);
	if (k < 0) {
		cyc_free(&c), free(fill);
		return k;
	}
	c.nbr = c.m;
	for (size_t b = 0; b < c.m + c.n; b++)
		c.bcls[b] = NONE, c.rsize[b] = NONE;
	for (size_t i = (size_t)k; i-- > 0;)
		visit(&c, c.node_at[i]);
	for (size_t v = 0; v < nn; v++) {
		size_t x = c.cls[v] != NONE ? c.cls[v] : c.bcls[v];

		cls[v] = keep[v] && c.num[2 * v] != NONE ? x : NONE;
	}
	cyc_free(&c), free(fill);
	return 0;
}
