/* Minimum-cost circulation on a small directed graph: what reconciles
 * estimated block counts into counts that obey flow conservation (LLVM's
 * profile inference "profi", He et al., POPL 2022, is the model; BOLT's
 * MCF.cpp the older cousin).
 *
 * Arcs have an integer capacity (DCPI_FLOW_INF: none) and an integer
 * cost per unit, of either sign.  dcpi_flow_solve() finds the flow on
 * every arc that conserves flow at every node and minimises the sum of
 * cost x flow.  Negative arcs are saturated first (their reverse is then
 * a positive residual arc), which leaves supplies and demands at nodes;
 * successive shortest paths (Dijkstra with potentials) route them.  An
 * arc of negative cost must have a finite capacity (else a cycle through
 * it could have no optimum): dcpi_flow_add refuses it.
 *
 * Bounds: at most DCPI_FLOW_MAX_NODES nodes and DCPI_FLOW_MAX_ARCS arcs;
 * capacities and costs at most DCPI_FLOW_MAX_VALUE in magnitude (sums
 * then stay within int64_t).
 */
#ifndef DCPI_FLOW_H
#define DCPI_FLOW_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_FLOW_INF INT64_MAX
#define DCPI_FLOW_MAX_NODES ((size_t)1 << 20)
#define DCPI_FLOW_MAX_ARCS ((size_t)1 << 22)
#define DCPI_FLOW_MAX_VALUE ((int64_t)1 << 40)

struct dcpi_flow_arc {
	size_t from, to;
	int64_t cap, cost, flow;
};

struct dcpi_flow {
	size_t nnodes;
	struct dcpi_flow_arc *arcs;
	size_t narcs, cap;
};

/* An empty graph of nnodes nodes.  0 or -EFBIG. */
int dcpi_flow_init(struct dcpi_flow *f, size_t nnodes);
void dcpi_flow_free(struct dcpi_flow *f);
/* Add an arc: returns its index (>= 0), or -EINVAL (a node out of range,
 * a negative capacity, a value over the bound), -EFBIG, -ENOMEM. */
long dcpi_flow_add(struct dcpi_flow *f, size_t from, size_t to, int64_t cap, int64_t cost);
/* Solve: arcs[].flow is set.  0, -EDOM (the saturated negative arcs'
 * flow cannot be routed back: no circulation holds it), -ENOMEM.
 * *total_cost (may be NULL) gets sum cost x flow. */
int dcpi_flow_solve(struct dcpi_flow *f, int64_t *total_cost);

#endif
