/* Minimum-cost circulation: see dcpi/flow.h.  Residual arcs come in
 * pairs (2i forward, 2i+1 backward) so that either is the other's ^ 1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/flow.h"
#include "internal.h"

struct res {
	size_t to;
	int64_t cap, cost;       /* residual capacity (DCPI_FLOW_INF: none) */
};

struct solver {
	size_t nn, s, t;         /* nodes, with the super source and sink */
	struct res *r;
	size_t nr;
	size_t *first, *adj;     /* residual arcs out of each node (CSR) */
	int64_t *pot, *dist;
	size_t *heap, *hpos;     /* binary heap of nodes by dist; hpos SIZE_MAX: out */
	size_t hn;
	size_t *it, *path;       /* a phase's current arc per node; the DFS's arcs */
	unsigned char *mark;     /* bit 1: on the DFS path; bit 2: dead this phase */
};

int dcpi_flow_init(struct dcpi_flow *f, size_t nnodes)
{
	memset(f, 0, sizeof(*f));
	if (nnodes > DCPI_FLOW_MAX_NODES)
		return dcpi_error(EFBIG, "%zu nodes in a flow problem, more than %zu", nnodes,
				  DCPI_FLOW_MAX_NODES);
	f->nnodes = nnodes;
	return 0;
}

void dcpi_flow_free(struct dcpi_flow *f)
{
	free(f->arcs);
	memset(f, 0, sizeof(*f));
}

long dcpi_flow_add(struct dcpi_flow *f, size_t from, size_t to, int64_t cap, int64_t cost)
{
	int err;

	if (from >= f->nnodes || to >= f->nnodes || cap < 0 ||
	    (cap != DCPI_FLOW_INF && cap > DCPI_FLOW_MAX_VALUE) || cost > DCPI_FLOW_MAX_VALUE ||
	    cost < -DCPI_FLOW_MAX_VALUE || (cost < 0 && cap == DCPI_FLOW_INF))
		return dcpi_error(EINVAL, "bad flow arc %zu -> %zu (capacity %lld, cost %lld)",
				  from, to, (long long)cap, (long long)cost);
	err = DCPI_GROW(f->arcs, f->cap, f->narcs + 1, DCPI_FLOW_MAX_ARCS, "flow arcs");
	if (err)
		return err;
	f->arcs[f->narcs] = (struct dcpi_flow_arc){ from, to, cap, cost, 0 };
	return (long)f->narcs++;
}

/* ---- the heap ---------------------------------------------------------------------- */

static void heap_swap(struct solver *s, size_t i, size_t j)
{
	size_t a = s->heap[i];

	s->heap[i] = s->heap[j];
	s->heap[j] = a;
	s->hpos[s->heap[i]] = i;
	s->hpos[s->heap[j]] = j;
}

static void heap_up(struct solver *s, size_t i)
{
	while (i > 0 && s->dist[s->heap[(i - 1) / 2]] > s->dist[s->heap[i]]) {
		heap_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct solver *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < s->hn && s->dist[s->heap[l]] < s->dist[s->heap[m]])
			m = l;
		if (l + 1 < s->hn && s->dist[s->heap[l + 1]] < s->dist[s->heap[m]])
			m = l + 1;
		if (m == i)
			return;
		heap_swap(s, i, m);
		i = m;
	}
}

static void heap_push(struct solver *s, size_t v)
{
	if (s->hpos[v] == SIZE_MAX) {
		s->heap[s->hn] = v;
		s->hpos[v] = s->hn++;
	}
	heap_up(s, s->hpos[v]);
}

static size_t heap_pop(struct solver *s)
{
	size_t v = s->heap[0];

	heap_swap(s, 0, --s->hn);
	s->hpos[v] = SIZE_MAX;
	if (s->hn)
		heap_down(s, 0);
	return v;
}

/* ---- successive shortest paths ------------------------------------------------------- */

/* Dijkstra on reduced costs from s->s; 1 when s->t is reached. */
static int shortest(struct solver *s)
{
	for (size_t v = 0; v < s->nn; v++)
		s->dist[v] = INT64_MAX, s->hpos[v] = SIZE_MAX;
	s->hn = 0;
	s->dist[s->s] = 0;
	heap_push(s, s->s);
	while (s->hn) {
		size_t u = heap_pop(s);

		for (size_t k = s->first[u]; k < s->first[u + 1]; k++) {
			const struct res *a = &s->r[s->adj[k]];
			int64_t d;

			if (a->cap == 0)
				continue;
			d = s->dist[u] + a->cost + s->pot[u] - s->pot[a->to];
			if (d < s->dist[a->to]) {
				s->dist[a->to] = d;
				heap_push(s, a->to);
			}
		}
	}
	for (size_t v = 0; v < s->nn; v++)
		if (s->dist[v] != INT64_MAX)
			s->pot[v] += s->dist[v];
	return s->dist[s->t] != INT64_MAX;
}

/* Push the bottleneck along the n arcs of path[]. */
static void push_path(struct solver *s, size_t n)
{
	int64_t push = DCPI_FLOW_INF;

	for (size_t k = 0; k < n; k++)
		if (s->r[s->path[k]].cap < push)
			push = s->r[s->path[k]].cap;
	for (size_t k = 0; k < n; k++) {
		struct res *a = &s->r[s->path[k]], *b = &s->r[s->path[k] ^ 1];

		if (a->cap != DCPI_FLOW_INF)
			a->cap -= push;
		if (b->cap != DCPI_FLOW_INF)
			b->cap += push;
	}
}

static int admissible(const struct solver *s, size_t u, size_t k)
{
	const struct res *a = &s->r[k];

	return a->cap > 0 && !(s->mark[a->to] & 3) && s->dist[a->to] != INT64_MAX &&
	       a->cost + s->pot[u] - s->pot[a->to] == 0;
}

/* After one Dijkstra, every shortest path is made of arcs of reduced
 * cost 0: augment along them by depth-first search until none is left
 * (current-arc pointers and dead nodes kept for the phase, as Dinic's
 * algorithm does), so that one Dijkstra serves many augmentations.
 * Every augmentation is along a shortest path: optimality is kept. */
static void phase(struct solver *s)
{
	for (size_t v = 0; v < s->nn; v++)
		s->it[v] = s->first[v], s->mark[v] = 0;
	for (;;) {
		size_t v = s->s, n = 0;

		s->mark[v] |= 1;
		while (v != s->t) {
			while (s->it[v] < s->first[v + 1] && !admissible(s, v, s->adj[s->it[v]]))
				s->it[v]++;
			if (s->it[v] < s->first[v + 1]) {
				s->path[n++] = s->adj[s->it[v]];
				v = s->r[s->adj[s->it[v]]].to;
				s->mark[v] |= 1;
				continue;
			}
			s->mark[v] = 2;   /* dead: no way on from here this phase */
			if (n == 0)
				return;
			v = s->r[s->path[--n] ^ 1].to;
			s->it[v]++;
		}
		push_path(s, n);
		for (size_t k = 0; k < n; k++)
			s->mark[s->r[s->path[k] ^ 1].to] &= 2;
		s->mark[s->t] &= 2;
	}
}

static void add_res(struct solver *s, size_t from, size_t to, int64_t cap, int64_t cost,
		    int64_t back)
{
	s->r[s->nr++] = (struct res){ to, cap, cost };
	s->r[s->nr++] = (struct res){ from, back, -cost };
}

/* The residual graph after negative arcs are saturated, with the super
 * source feeding each node's surplus and the sink taking each deficit. */
static int setup(struct solver *s, const struct dcpi_flow *f, int64_t *need)
{
	int64_t *excess = calloc(f->nnodes, sizeof(int64_t));
	size_t *fill;

	s->nn = f->nnodes + 2;
	s->s = f->nnodes;
	s->t = f->nnodes + 1;
	s->r = calloc(2 * (f->narcs + f->nnodes), sizeof(*s->r));
	s->first = calloc(s->nn + 1, sizeof(size_t));
	s->adj = calloc(2 * (f->narcs + f->nnodes) + 1, sizeof(size_t));
	s->pot = calloc(s->nn, sizeof(int64_t));
	s->dist = calloc(s->nn, sizeof(int64_t));
	s->heap = calloc(s->nn, sizeof(size_t));
	s->hpos = calloc(s->nn, sizeof(size_t));
	s->it = calloc(s->nn, sizeof(size_t));
	s->path = calloc(s->nn + 1, sizeof(size_t));
	s->mark = calloc(s->nn, 1);
	fill = calloc(s->nn + 1, sizeof(size_t));
	if (!excess || !s->r || !s->first || !s->adj || !s->pot || !s->dist ||
	    !s->heap || !s->hpos || !s->it || !s->path || !s->mark || !fill) {
		free(excess);
		free(fill);
		return -ENOMEM;
	}
	*need = 0;
	for (size_t i = 0; i < f->narcs; i++) {
		const struct dcpi_flow_arc *a = &f->arcs[i];
		int sat = a->cost < 0;

		add_res(s, a->from, a->to, sat ? 0 : a->cap, a->cost, sat ? a->cap : 0);
		if (sat)
			excess[a->to] += a->cap, excess[a->from] -= a->cap;
	}
	for (size_t v = 0; v < f->nnodes; v++) {
		if (excess[v] > 0)
			add_res(s, s->s, v, excess[v], 0, 0), *need += excess[v];
		else if (excess[v] < 0)
			add_res(s, v, s->t, -excess[v], 0, 0);
	}
	for (size_t k = 0; k < s->nr; k++)
		s->first[s->r[k ^ 1].to + 1]++;
	for (size_t v = 0; v < s->nn; v++)
		s->first[v + 1] += s->first[v];
	for (size_t k = 0; k < s->nr; k++) {
		size_t from = s->r[k ^ 1].to;

		s->adj[s->first[from] + fill[from]++] = k;
	}
	free(excess);
	free(fill);
	return 0;
}

static void solver_free(struct solver *s)
{
	free(s->r), free(s->first), free(s->adj), free(s->pot), free(s->dist);
	free(s->heap), free(s->hpos), free(s->it), free(s->path), free(s->mark);
}

int dcpi_flow_solve(struct dcpi_flow *f, int64_t *total_cost)
{
	struct solver s;
	int64_t need, moved = 0;
	__int128 total = 0;
	int err;

	memset(&s, 0, sizeof(s));
	err = setup(&s, f, &need);
	if (err) {
		solver_free(&s);
		return dcpi_error(ENOMEM, "out of memory");
	}
	while (shortest(&s))
		phase(&s);
	for (size_t k = s.first[s.s]; k < s.first[s.s + 1]; k++)
		moved += s.r[s.adj[k] ^ 1].cap;
	for (size_t i = 0; i < f->narcs; i++) {
		f->arcs[i].flow = s.r[2 * i + 1].cap;
		total += (__int128)f->arcs[i].flow * f->arcs[i].cost;
	}
	solver_free(&s);
	if (moved != need)
		return dcpi_error(EDOM, "no circulation carries the flow of the negative arcs");
	if (total_cost)
		*total_cost = total > INT64_MAX ? INT64_MAX : total < INT64_MIN ? INT64_MIN
									   : (int64_t)total;
	return 0;
}
