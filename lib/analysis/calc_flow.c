/* Reconciling block estimates over the graph (see dcpi/calc.h): after
 * profi (LLVM SampleProfileInference.cpp; He et al., POPL 2022).  Each
 * block is split into an in and an out node joined by two arcs: one of
 * capacity w (its estimate) and negative cost -dec (keeping a unit of the
 * estimate earns what lowering it would cost), one unbounded of cost inc
 * (each unit above the estimate).  CFG edges join out to in at a small
 * cost, dearer through the unknown node, so that flow prefers known
 * paths.  The minimum-cost circulation then trades lowering against
 * raising per unit, and conserves flow by construction. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "calc_int.h"
#include "dcpi/error.h"
#include "dcpi/flow.h"

#define FLOW_SCALE 1e9       /* the largest estimate, in flow units */
#define EDGE_COST 1
#define UNKNOWN_EDGE_COST 4
#define UNKNOWN_EXIT_COST 50 /* an indirect jump as a tail call: rare */
#define FREE_BLOCK_COST 1    /* raising a block that has no samples */
#define EXACT_COST 1000000
#define ENTRY_FACTOR 4       /* raising an unsampled entry: profi's 40 vs 10 */

static size_t in_node(const struct dcpi_cfg *g, size_t v)
{
	return v < g->nblocks ? 2 * v : 2 * g->nblocks + (v - g->nblocks);
}

static size_t out_node(const struct dcpi_cfg *g, size_t v)
{
	return v < g->nblocks ? 2 * v + 1 : in_node(g, v);
}

/* Per-unit costs of lowering and raising a block's count.  A block of a
 * class with no samples is raised at a cost growing with the procedure's
 * samples (total): the more samples, the likelier a block that ran would
 * have had some; yet cheaper than lowering a well-sampled block, since
 * skid can empty a short block on a hot path.
 * Mode TIME, an estimate without firm samples (all its samples on its
 * first two instructions, where a predecessor's stall or a mispredicted
 * branch's refill lands: a compare and branch after a missed load) is
 * worth keeping no more than an edge costs: the graph routes flow through
 * it only where no path is cheaper.  Worth 10 a unit, as a firm block's
 * least, it drew a loop's flow round itself: gzip's longest_match kept
 * `cmpb; jne` (1,698 samples on the jne) at the loop's count, 11 times
 * the truth, and the procedure's one scale with it.  Two sets of five
 * make accuracy runs, kernels / corpus / held out within 25%: 59.4 /
 * 50.0 / 55.4 -> 61.8 / 52.2 / 56.9 and 59.4 / 48.9 / 52.1 -> 62.5 /
 * 53.3 / 56.4 (worth 0: kernels 33-38%). */
#define NO_FIRM_DEC EDGE_COST
/* Mode TIME: a unit above a block's estimate costs 8 times a unit below
 * it.  A time estimate is an upper bound (its samples over its best case,
 * which no run beats): raised, the block would have run faster than its
 * best case.  At 4 times (profi's ratio), three sets of five make accuracy
 * runs gave kernels / corpus / held out within 25% of 61.8 / 52.2 / 56.9,
 * 62.5 / 53.3 / 56.4 and 62.5 / 52.2 / 50.5; at 8 times 61.8 / 58.3 /
 * 57.7, 61.8 / 56.0 / 58.5 and 62.5 / 56.5 / 52.6 (chosen on the first
 * two, checked on the third; 2, 6, 10, 12 and 16 times were no better). */
#define TIME_RAISE 80
static void block_costs(enum dcpi_calc_mode mode, const struct calc_est *e, double total,
			int64_t *dec, int64_t *inc)
{
	int64_t wt = 1 + (int64_t)fmin(30, floor(sqrt(isinf(e->support) ? 900 : e->support)));

	if (e->zero) {
		*dec = 0;
		*inc = 10 * (1 + (int64_t)fmin(30, floor(sqrt(total) / 4)));
	} else if (mode == DCPI_CALC_EXACT)
		*dec = *inc = EXACT_COST;
	else if (mode == DCPI_CALC_TIME)
		*dec = e->support > 0 ? 10 * wt : NO_FIRM_DEC, *inc = TIME_RAISE * wt;
	else
		*dec = *inc = 10 * wt;
}

/* Keeping the estimate is worth more the closer to 0 a block would go:
 * the dec arc is split into SEGMENTS equal parts of falling worth (from
 * 2 - 1/SEGMENTS down to 1/SEGMENTS of dec, mean 1), so that lowering
 * spreads over blocks in proportion rather than emptying the cheapest one
 * (linear costs pick corners; within a segment they still do, so the
 * segments are fine).  Raising is convex too: half the estimate again at
 * 0.75 x inc, then 1.5 x inc.  Costs are in COST_UNITs of a tenth, so
 * that the segments' worths stay apart when rounded even for the least
 * dec (NO_FIRM_DEC).
 * Four segments of whole units split an interpreter's dispatch count
 * over its eight cases (no firm samples: each two instructions) by
 * quarters of their estimates: three cases at 0, three at 2.5 times the
 * truth.  Sixteen, in tenths, split it evenly; make accuracy's kernels
 * within 25% went from 61.8-63.6% to 64.7-71.9% over four sets (the
 * corpus and the held-out programs within 3 points either way). */
#define SEGMENTS 16
#define COST_UNIT 10

static double seg_worth(int k)
{
	return (2.0 * (SEGMENTS - k) - 1.0) / SEGMENTS;
}

static int add_block(struct dcpi_flow *f, size_t b, int64_t w, int64_t dec, int64_t inc,
		     long *arc)
{
	int64_t left = w;
	long r = 0;

	dec *= COST_UNIT;
	inc *= COST_UNIT;
	for (int k = 0; k < SEGMENTS && r >= 0; k++) {
		int64_t cap = k == SEGMENTS - 1 ? left : w / SEGMENTS;

		arc[k] = cap > 0 ? (r = dcpi_flow_add(f, 2 * b, 2 * b + 1, cap,
						     -(int64_t)llround(dec * seg_worth(k)))) : -1;
		left -= cap > 0 ? cap : 0;
	}
	if (r >= 0 && w > 1)
		r = arc[SEGMENTS] = dcpi_flow_add(f, 2 * b, 2 * b + 1, w / 2,
						  (int64_t)llround(0.75 * inc));
	else
		arc[SEGMENTS] = -1;
	if (r >= 0)
		r = arc[SEGMENTS + 1] = dcpi_flow_add(f, 2 * b, 2 * b + 1, DCPI_FLOW_INF,
						      w > 1 ? (int64_t)llround(1.5 * inc) : inc);
	return r < 0 ? (int)r : 0;
}

#define ARCS_PER_BLOCK (SEGMENTS + 2)

static int add_blocks(struct dcpi_flow *f, enum dcpi_calc_mode mode, const struct dcpi_calc *c,
		      const struct calc_est *est, double q, long *arc)
{
	const struct dcpi_cfg *g = &c->cfg;
	double total = 0;
	int err = 0;

	for (size_t b = 0; b < g->nblocks; b++)
		total += (double)(mode == DCPI_CALC_RETIRED ? c->blocks[b].retired : c->blocks[b].time);
	for (size_t b = 0; b < g->nblocks && !err; b++) {
		int64_t dec, inc, w = est[b].has ? (int64_t)llround(est[b].w * q) : 0;

		block_costs(mode, &est[b], total, &dec, &inc);
		if (b == 0 && est[b].zero)
			inc *= ENTRY_FACTOR;
		err = add_block(f, b, w, dec, est[b].has ? inc : FREE_BLOCK_COST,
				arc + ARCS_PER_BLOCK * b);
	}
	return err;
}

static double block_flow(const struct dcpi_flow *f, const long *arc)
{
	int64_t s = 0;

	for (int k = 0; k < ARCS_PER_BLOCK; k++)
		s += arc[k] >= 0 ? f->arcs[arc[k]].flow : 0;
	return (double)s;
}

int calc_reconcile(enum dcpi_calc_mode mode, struct dcpi_calc *c, const struct calc_est *est)
{
	const struct dcpi_cfg *g = &c->cfg;
	size_t nb = g->nblocks;
	long *arc = calloc(ARCS_PER_BLOCK * nb + g->nedges + 1, sizeof(long)), *earc;
	struct dcpi_flow f;
	double top = 0, q;
	int err;

	if (!arc)
		return dcpi_error(ENOMEM, "out of memory");
	earc = arc + ARCS_PER_BLOCK * nb;
	for (size_t b = 0; b < nb; b++)
		if (est[b].has)
			top = fmax(top, est[b].w);
	q = top > 0 ? FLOW_SCALE / top : 1;
	err = dcpi_flow_init(&f, 2 * nb + 2);
	if (!err)
		err = add_blocks(&f, mode, c, est, q, arc);
	for (size_t e = 0; e < g->nedges && !err; e++) {
		const struct dcpi_cfg_edge *ge = &g->edges[e];

		earc[e] = dcpi_flow_add(&f, out_node(g, ge->from), in_node(g, ge->to), DCPI_FLOW_INF,
					COST_UNIT * (ge->kind != DCPI_EDGE_UNKNOWN ? EDGE_COST
						     : ge->to == DCPI_CFG_OUTSIDE(g)
						     ? UNKNOWN_EXIT_COST
						     : UNKNOWN_EDGE_COST));
		err = earc[e] < 0 ? (int)earc[e] : 0;
	}
	if (!err)
		err = dcpi_flow_solve(&f, NULL);
	for (size_t b = 0; b < nb && !err; b++)
		c->blocks[b].freq = block_flow(&f, arc + ARCS_PER_BLOCK * b) / q;
	for (size_t e = 0; e < g->nedges && !err; e++)
		c->edges[e].count = (double)f.arcs[earc[e]].flow / q;
	dcpi_flow_free(&f);
	free(arc);
	return err;
}
