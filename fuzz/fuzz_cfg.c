/* libFuzzer target for control-flow graphs and the estimates on them:
 * the input's first byte picks the architecture and which calls never
 * return; the rest is code at 0x1000, decoded and built into a graph
 * (jump tables are read from the input itself), then estimated in the
 * mode the first byte's top bits pick, with samples taken from the bytes.  Every graph must keep the
 * header's invariants: blocks tile the instructions in order, edges are
 * sorted, unique and name real nodes, classes are in range, and the
 * estimated counts (not the exact ones, kept as given) conserve flow at
 * every block. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/calc.h"
#include "dcpi/cfg.h"
#include "dcpi/disasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x1000
/* What one run does is bounded so that runs stay over 1,000/s: the
 * estimates' min-cost flow grows faster than linearly with the graph and,
 * under the fuzzer's comparison tracing, was nearly all of the time (56
 * runs/s).  Graphs are built from up to MAX_INPUT bytes of code (a few
 * hundred instructions: every shape the graph code has; the seeds are at
 * most 693 bytes); they are estimated when they have at most
 * MAX_EST_BLOCKS blocks, in the one mode the input's selector byte picks. */
#define MAX_INPUT 1024
#define MAX_EST_BLOCKS 16

struct src {
	const uint8_t *p;
	size_t n;
	unsigned sel;
};

static int fz_noreturn(uint64_t t, void *arg)
{
	const struct src *s = arg;

	return ((t * 2654435761u) >> 7) % 8 < (s->sel & 3);
}

static int fz_read(uint64_t vaddr, void *buf, size_t len, void *arg)
{
	const struct src *s = arg;

	if (vaddr < BASE || vaddr - BASE > s->n || len > s->n - (vaddr - BASE))
		return -1;
	memcpy(buf, s->p + (vaddr - BASE), len);
	return 0;
}

static void check_graph(const struct dcpi_cfg *g, const struct dcpi_insn *v, size_t n)
{
	size_t next = 0;

	for (size_t b = 0; b < g->nblocks; b++) {
		const struct dcpi_cfg_block *bl = &g->blocks[b];

		if (bl->first != next || bl->ninsns == 0 || bl->first + bl->ninsns > n ||
		    bl->start != v[bl->first].vaddr || bl->cls >= g->nclasses)
			abort();
		next += bl->ninsns;
	}
	if (next != n)
		abort();
	for (size_t e = 0; e < g->nedges; e++) {
		const struct dcpi_cfg_edge *x = &g->edges[e];

		if (x->from >= DCPI_CFG_NNODES(g) || x->to >= DCPI_CFG_NNODES(g))
			abort();
		if (e && (g->edges[e - 1].from > x->from ||
			  (g->edges[e - 1].from == x->from && g->edges[e - 1].to >= x->to)))
			abort();
	}
}

/* Flow in and out of each block, in one pass over the edges (a pass per
 * block was most of an iteration's time). */
static void check_flow(const struct dcpi_calc *c)
{
	size_t nb = c->cfg.nblocks;
	double *in = calloc(nb ? 2 * nb : 1, sizeof(*in)), *out = in + nb;

	if (!in)
		return;
	for (size_t e = 0; e < c->cfg.nedges; e++) {
		if (c->cfg.edges[e].to < nb)
			in[c->cfg.edges[e].to] += c->edges[e].count;
		if (c->cfg.edges[e].from < nb)
			out[c->cfg.edges[e].from] += c->edges[e].count;
	}
	for (size_t b = 0; b < nb; b++) {
		double f = c->blocks[b].freq;

		if (!(f >= 0) || fabs(in[b] - f) > 1e-6 * (1 + f) || fabs(out[b] - f) > 1e-6 * (1 + f))
			abort();
	}
	free(in);
}

static void estimate(const struct dcpi_insn *v, size_t n, const struct src *s,
		     const struct dcpi_cfg_opts *o)
{
	uint64_t *t = calloc(n, sizeof(*t)), *r = calloc(n, sizeof(*r));
	struct dcpi_calc_input in;
	struct dcpi_calc c;

	if (!t || !r)
		goto out;
	for (size_t i = 0; i < n; i++) {
		t[i] = v[i].bytes[0] * (uint64_t)(s->sel >> 4);
		r[i] = v[i].bytes[v[i].size - 1];
	}
	memset(&in, 0, sizeof(in));
	in.arch = o->arch;
	in.insns = v;
	in.n = n;
	in.stride = sizeof(*v);
	in.time = t;
	in.retired = r;
	in.exact = r;
	in.cycles_per_sample = (s->sel & 8) ? 1000 : 0;
	in.retired_period = 100;
	in.cfg = *o;
	in.mode = (enum dcpi_calc_mode)((s->sel >> 6) % (DCPI_CALC_EXACT + 1));
	if (dcpi_calc_run(&in, &c) == 0) {
		/* exact counts are kept as given, consistent or not */
		if (in.mode != DCPI_CALC_EXACT)
			check_flow(&c);
		dcpi_calc_free(&c);
	}
out:
	free(t);
	free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src s = { data + 1, size ? size - 1 : 0, size ? data[0] : 0 };
	const char *arch = (s.sel & 4) ? "aarch64" : "x86-64";
	struct dcpi_cfg_opts o = { arch, fz_noreturn, fz_read, &s };
	struct dcpi_disasm *d;
	struct dcpi_insn *v = NULL;
	struct dcpi_cfg g;
	size_t n = 0;

	if (size < 2 || size > MAX_INPUT || dcpi_disasm_open_mem(arch, s.p, s.n, BASE, &d))
		return 0;
	if (dcpi_disasm_collect(d, BASE, BASE + s.n, &v, &n) == 0 && n > 0 &&
	    dcpi_cfg_build(v, n, sizeof(*v), &o, &g) == 0) {
		size_t nblocks = g.nblocks;

		check_graph(&g, v, n);
		dcpi_cfg_free(&g);
		if (nblocks <= MAX_EST_BLOCKS)
			estimate(v, n, &s, &o);
	}
	free(v);
	dcpi_disasm_close(d);
	return 0;
}
