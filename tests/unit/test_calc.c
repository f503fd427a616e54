/* The calc engine's parts on hand-made inputs whose answers are worked
 * out here: the min-cost circulation on small graphs with known optima,
 * control-flow graphs of hand-assembled x86-64 (blocks, edges, no-return
 * calls, a jump table, an unresolved indirect jump), equivalence classes,
 * the cost table, and estimates from made-up samples. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/calc.h"
#include "dcpi/cfg.h"
#include "dcpi/cost.h"
#include "dcpi/coverage.h"
#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/flow.h"
#include "dcpi/stall.h"
#include "analysis/calc_int.h" /* calc_reconcile on a graph made by hand */
#include "analysis/cfg_int.h" /* cfg_cycle_classes against brute force */
#include "tap.h"

#define BASE 0x1000

/* ---- flow ------------------------------------------------------------------------------ */

static void test_flow(void)
{
	struct dcpi_flow f;
	int64_t cost;
	long a, b, c;

	/* a 3-cycle: keeping 5 units on the -10 arc pays 2 per unit to return */
	dcpi_flow_init(&f, 3);
	a = dcpi_flow_add(&f, 0, 1, 5, -10);
	b = dcpi_flow_add(&f, 1, 2, DCPI_FLOW_INF, 1);
	c = dcpi_flow_add(&f, 2, 0, DCPI_FLOW_INF, 1);
	T_EQ(dcpi_flow_solve(&f, &cost), 0, "cycle solves");
	T_EQ(f.arcs[a].flow, 5, "negative arc kept full");
	T_EQ(f.arcs[b].flow, 5, "returned by the cycle");
	T_EQ(f.arcs[c].flow, 5, "conserved");
	T_EQ(cost, -40, "optimum -50 + 10");
	dcpi_flow_free(&f);

	/* returning costs more than keeping earns: nothing flows */
	dcpi_flow_init(&f, 2);
	a = dcpi_flow_add(&f, 0, 1, 7, -1);
	dcpi_flow_add(&f, 1, 0, DCPI_FLOW_INF, 2);
	T_EQ(dcpi_flow_solve(&f, &cost), 0, "solves");
	T_EQ(f.arcs[a].flow, 0, "unprofitable arc left empty");
	T_EQ(cost, 0, "cost 0");
	dcpi_flow_free(&f);

	/* two return paths: the cheaper takes everything; a bottleneck splits */
	dcpi_flow_init(&f, 4);
	a = dcpi_flow_add(&f, 0, 1, 10, -5);
	b = dcpi_flow_add(&f, 1, 2, 4, 1);       /* cheap but only 4 wide */
	c = dcpi_flow_add(&f, 2, 0, DCPI_FLOW_INF, 0);
	dcpi_flow_add(&f, 1, 3, DCPI_FLOW_INF, 3);
	dcpi_flow_add(&f, 3, 0, DCPI_FLOW_INF, 0);
	T_EQ(dcpi_flow_solve(&f, &cost), 0, "solves");
	T_EQ(f.arcs[a].flow, 10, "all 10 kept");
	T_EQ(f.arcs[b].flow, 4, "cheap path full");
	T_EQ(f.arcs[c].flow, 4, "its return");
	T_EQ(cost, -50 + 4 + 18, "optimum -28");
	dcpi_flow_free(&f);

	/* profi's block split: estimates 10 and 4 on a 2-block loop meet at 4
	 * when lowering is cheap (1) and raising dear (5) */
	dcpi_flow_init(&f, 4);
	a = dcpi_flow_add(&f, 0, 1, 10, -1);
	dcpi_flow_add(&f, 0, 1, DCPI_FLOW_INF, 5);
	b = dcpi_flow_add(&f, 2, 3, 4, -1);
	dcpi_flow_add(&f, 2, 3, DCPI_FLOW_INF, 5);
	dcpi_flow_add(&f, 1, 2, DCPI_FLOW_INF, 0);
	c = dcpi_flow_add(&f, 3, 0, DCPI_FLOW_INF, 0);
	T_EQ(dcpi_flow_solve(&f, NULL), 0, "solves");
	T_EQ(f.arcs[c].flow, 4, "asymmetric costs take the low estimate");
	T_EQ(f.arcs[a].flow + f.arcs[b].flow, 8, "both blocks at 4");
	dcpi_flow_free(&f);

	dcpi_flow_init(&f, 2);
	T_EQ(dcpi_flow_add(&f, 0, 1, DCPI_FLOW_INF, -1), -EINVAL, "unbounded negative refused");
	T_EQ(dcpi_flow_add(&f, 0, 2, 1, 1), -EINVAL, "node out of range refused");
	T_EQ(dcpi_flow_add(&f, 0, 1, -1, 1), -EINVAL, "negative capacity refused");
	dcpi_flow_free(&f);
}

/* Random graphs: the solution conserves flow, respects capacities, and
 * is optimal, i.e. its residual graph has no negative cycle (checked by
 * Bellman-Ford from a virtual source). */
static uint64_t lcg = 12345;
static unsigned rnd(unsigned n)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((lcg >> 33) % n);
}

static int negative_cycle(const struct dcpi_flow *f)
{
	size_t n = f->nnodes;
	int64_t *d = calloc(n, sizeof(*d));
	int changed = 1;

	for (size_t round = 0; round <= n && changed; round++) {
		changed = 0;
		for (size_t i = 0; i < f->narcs; i++) {
			const struct dcpi_flow_arc *a = &f->arcs[i];

			if ((a->cap == DCPI_FLOW_INF || a->flow < a->cap) && d[a->from] + a->cost < d[a->to])
				d[a->to] = d[a->from] + a->cost, changed = 1;
			if (a->flow > 0 && d[a->to] - a->cost < d[a->from])
				d[a->from] = d[a->to] - a->cost, changed = 1;
		}
	}
	free(d);
	return changed;
}

static void test_flow_random(void)
{
	size_t bad_cons = 0, bad_cap = 0, bad_opt = 0, solved = 0;

	for (int g = 0; g < 200; g++) {
		struct dcpi_flow f;
		size_t n = 2 + rnd(30), m = n + rnd(4 * (unsigned)n);
		int64_t *bal;

		dcpi_flow_init(&f, n);
		for (size_t i = 0; i < m; i++) {
			int64_t cost = (int64_t)rnd(41) - 20;
			int64_t cap = cost < 0 || rnd(3) ? 1 + rnd(1000) : DCPI_FLOW_INF;

			dcpi_flow_add(&f, rnd((unsigned)n), rnd((unsigned)n), cap, cost);
		}
		/* a way back everywhere, so that every circulation is possible */
		for (size_t v = 1; v < n; v++) {
			dcpi_flow_add(&f, v, 0, DCPI_FLOW_INF, 1 + rnd(5));
			dcpi_flow_add(&f, 0, v, DCPI_FLOW_INF, 1 + rnd(5));
		}
		if (dcpi_flow_solve(&f, NULL)) {
			dcpi_flow_free(&f);
			continue;
		}
		solved++;
		bal = calloc(n, sizeof(*bal));
		for (size_t i = 0; i < f.narcs; i++) {
			const struct dcpi_flow_arc *a = &f.arcs[i];

			bal[a->from] -= a->flow;
			bal[a->to] += a->flow;
			bad_cap += a->flow < 0 || (a->cap != DCPI_FLOW_INF && a->flow > a->cap);
		}
		for (size_t v = 0; v < n; v++)
			bad_cons += bal[v] != 0;
		bad_opt += negative_cycle(&f);
		free(bal);
		dcpi_flow_free(&f);
	}
	T_EQ(solved, 200, "200 random graphs solved");
	T_EQ(bad_cons, 0, "flow conserved at every node");
	T_EQ(bad_cap, 0, "every arc within its capacity");
	T_EQ(bad_opt, 0, "optimal: no negative cycle left in any residual graph");
}

/* ---- graphs of hand-assembled code --------------------------------------------------- */

static struct dcpi_insn *decode(const uint8_t *code, size_t len, size_t *n)
{
	struct dcpi_disasm *d;
	struct dcpi_insn *v = NULL;

	*n = 0;
	if (dcpi_disasm_open_mem("x86-64", code, len, BASE, &d))
		return NULL;
	dcpi_disasm_collect(d, BASE, BASE + len, &v, n);
	dcpi_disasm_close(d);
	return v;
}

static int has_edge(const struct dcpi_cfg *g, size_t from, size_t to, enum dcpi_cfg_edge_kind k)
{
	for (size_t e = 0; e < g->nedges; e++)
		if (g->edges[e].from == from && g->edges[e].to == to && g->edges[e].kind == k)
			return 1;
	return 0;
}

/*   0: test %esi,%esi; jle 0xc | 4: add %edi,%eax; dec %esi; jne 4 | a: jmp c | c: ret */
static const uint8_t loop_code[] = { 0x85, 0xf6, 0x7e, 0x08, 0x01, 0xf8, 0xff, 0xce,
				     0x75, 0xfa, 0xeb, 0x00, 0xc3 };

/* Two back edges to one header, a continue's and the loop's own:
 *   0: add $1,%rdx; test $1,%al; jne 0xe | 8: add $1,%rax; jmp 0
 *   0xe: cmp %rdx,%rsi; jne 0 | 0x13: ret
 * B0 dominates B2, B2 post-dominates B0, both have B0 as innermost loop
 * header; but B0 is also on the continue's cycle (B0, B1), which B2 is
 * not, and runs once more for each time round it: two classes. */
static const uint8_t continue_code[] = { 0x48, 0x83, 0xc2, 0x01, 0xa8, 0x01, 0x75, 0x06,
					 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xf2, 0x48, 0x39,
					 0xd6, 0x75, 0xed, 0xc3 };

static void test_cfg_shared_header(void)
{
	struct dcpi_cfg g;
	size_t n;
	struct dcpi_insn *v = decode(continue_code, sizeof(continue_code), &n);

	T_EQ(n, 8, "8 instructions decode");
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "graph builds");
	T_EQ(g.nblocks, 4, "4 blocks");
	T_OK(has_edge(&g, 1, 0, DCPI_EDGE_JUMP) && has_edge(&g, 2, 0, DCPI_EDGE_JUMP),
	     "two back edges to B0");
	T_OK(g.blocks[0].loop == 0 && g.blocks[2].loop == 0, "B0 and B2 in B0's loop");
	T_OK(g.blocks[0].cls != g.blocks[2].cls,
	     "B0 (on the continue's cycle too) and B2: two classes");
	T_OK(g.blocks[1].cls != g.blocks[0].cls && g.blocks[1].cls != g.blocks[2].cls,
	     "the continue's block its own class");
	dcpi_cfg_free(&g);
	free(v);
}

/* A loop whose one way out is a block only some turns pass (liblzma's
 * match loop, reduced):
 *   0: dec %ecx; jne 8 | 4: dec %edx; je 0xa | 8: jmp 0 | 0xa: ret
 * B0 dominates B1, B1 post-dominates B0 (the only exit is B1's), and
 * both are in the one natural loop (B2 -> B0); but B0 -> B2 -> B0 is a
 * cycle without B1: B0 runs on every turn, B1 on some.  Dominance and
 * loops put them in one class; they are two. */
static const uint8_t exit_code[] = { 0xff, 0xc9, 0x75, 0x04, 0xff, 0xca,
				     0x74, 0x02, 0xeb, 0xf6, 0xc3 };

static void test_cfg_partial_exit(void)
{
	struct dcpi_cfg g;
	size_t n;
	struct dcpi_insn *v = decode(exit_code, sizeof(exit_code), &n);

	T_EQ(n, 6, "6 instructions decode");
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "graph builds");
	T_EQ(g.nblocks, 4, "4 blocks");
	T_OK(has_edge(&g, 0, 2, DCPI_EDGE_JUMP) && has_edge(&g, 1, 3, DCPI_EDGE_JUMP) &&
	     has_edge(&g, 2, 0, DCPI_EDGE_JUMP), "B0 -> B2, B1 -> B3, B2 -> B0");
	T_OK(g.blocks[0].loop == 0 && g.blocks[1].loop == 0 && g.blocks[2].loop == 0,
	     "B0, B1, B2 in B0's loop");
	T_OK(g.blocks[0].cls != g.blocks[1].cls, "B0 (every turn) and B1 (some): two classes");
	T_OK(g.blocks[2].cls != g.blocks[0].cls && g.blocks[2].cls != g.blocks[1].cls,
	     "B2 (one turn fewer than B0) its own class");
	T_OK(g.blocks[3].cls != g.blocks[0].cls && g.blocks[3].cls != g.blocks[1].cls,
	     "B3 (once) its own class");
	dcpi_cfg_free(&g);
	free(v);
}

/* Whether v lies on a cycle of the graph without node gone (brute force). */
static int on_cycle_without(size_t nn, const size_t *from, const size_t *to, size_t ne,
			    const unsigned char *keep, size_t v, size_t gone)
{
	unsigned char seen[16] = { 0 };
	size_t stack[16], sp = 0;

	for (size_t e = 0; e < ne; e++)
		if (from[e] == v && to[e] != gone && keep[to[e]] && !seen[to[e]])
			seen[to[e]] = 1, stack[sp++] = to[e];
	while (sp) {
		size_t u = stack[--sp];

		if (u == v)
			return 1;
		for (size_t e = 0; e < ne; e++)
			if (from[e] == u && to[e] != gone && keep[to[e]] && !seen[to[e]])
				seen[to[e]] = 1, stack[sp++] = to[e];
	}
	(void)nn;
	return 0;
}

/* Random graphs of up to 12 nodes (node 0 the outside): the classes
 * against the definition (a and b are on the same cycles when neither is
 * on a cycle without the other), and against runs (random walks from the
 * outside back to it: one class, one count). */
static void test_cycle_classes_random(void)
{
	uint64_t r = 0x243f6a8885a308d3ull;
	int wrong_def = 0, wrong_run = 0, graphs = 0, merged = 0;

	for (int gi = 0; gi < 400; gi++) {
		size_t nn = 3 + gi % 10, ne = 0, from[64], to[64], cls[16];
		unsigned char keep[16], fw[16], bw[16];

		for (size_t v = 0; v < nn && gi % 2; v++)   /* half of them: a ring, then more */
			from[ne] = v, to[ne++] = (v + 1) % nn;
		for (size_t e = 0; e < (gi % 2 ? nn / 2 : nn + nn / 2) + gi % 5 && ne < 64; e++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			from[ne] = (r >> 33) % nn;
			to[ne++] = (r >> 13) % nn;
		}
		/* keep: reached from 0 and reaching 0 */
		memset(fw, 0, sizeof(fw)), memset(bw, 0, sizeof(bw));
		fw[0] = bw[0] = 1;
		for (size_t it = 0; it < nn; it++)
			for (size_t e = 0; e < ne; e++) {
				fw[to[e]] |= fw[from[e]];
				bw[from[e]] |= bw[to[e]];
			}
		for (size_t v = 0; v < nn; v++)
			keep[v] = fw[v] && bw[v];
		if (cfg_cycle_classes(nn, from, to, ne, 0, keep, cls))
			continue;
		graphs++;
		for (size_t a = 1; a < nn; a++)
			for (size_t b = a + 1; b < nn; b++) {
				int same, def;

				if (!keep[a] || !keep[b])
					continue;
				same = cls[a] == cls[b];
				def = !on_cycle_without(nn, from, to, ne, keep, a, b) &&
				      !on_cycle_without(nn, from, to, ne, keep, b, a);
				wrong_def += same != def;
				merged += same;
			}
		/* runs: 20 walks, each from 0 until it comes back to 0 */
		for (int w = 0; w < 20; w++) {
			unsigned cnt[16] = { 0 };
			size_t v = 0;

			for (int step = 0; step < 200; step++) {
				size_t opts[64], no = 0;

				for (size_t e = 0; e < ne; e++)
					if (from[e] == v && keep[to[e]])
						opts[no++] = to[e];
				if (!no)
					break;
				r = r * 6364136223846793005ull + 1442695040888963407ull;
				v = opts[(r >> 33) % no];
				if (v == 0)
					break;
				cnt[v]++;
			}
			if (v != 0)
				continue;   /* not back out: not a whole run */
			for (size_t a = 1; a < nn; a++)
				for (size_t b = a + 1; b < nn; b++)
					wrong_run += keep[a] && keep[b] && cls[a] == cls[b] &&
						     cnt[a] != cnt[b];
		}
		for (size_t v = 0; v < nn; v++)
			wrong_run += !keep[v] && cls[v] != SIZE_MAX;
	}
	T_EQ(graphs, 400, "400 random graphs classed");
	T_OK(merged > 100, "classes join blocks (%d pairs)", merged);
	T_EQ(wrong_def, 0, "a pair in one class exactly when on the same cycles");
	T_EQ(wrong_run, 0, "one class, one count on every whole run; none for the rest");
}

static void test_cfg_loop(void)
{
	struct dcpi_cfg g;
	size_t n, out;
	struct dcpi_insn *v = decode(loop_code, sizeof(loop_code), &n);

	T_EQ(n, 7, "7 instructions decode");
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "graph builds");
	out = DCPI_CFG_OUTSIDE(&g);
	T_EQ(g.nblocks, 4, "4 blocks");
	T_EQ(g.blocks[1].start, BASE + 4, "loop block at 4");
	T_EQ(g.blocks[1].ninsns, 3, "loop block has 3 instructions");
	T_OK(g.blocks[1].self_loop, "loop block is a self-loop");
	T_OK(has_edge(&g, out, 0, DCPI_EDGE_ENTRY), "entry edge");
	T_OK(has_edge(&g, 0, 1, DCPI_EDGE_FALL), "B0 falls into B1");
	T_OK(has_edge(&g, 0, 3, DCPI_EDGE_JUMP), "B0 jumps to B3");
	T_OK(has_edge(&g, 1, 1, DCPI_EDGE_JUMP), "B1 jumps to itself");
	T_OK(has_edge(&g, 1, 2, DCPI_EDGE_FALL), "B1 falls into B2");
	T_OK(has_edge(&g, 2, 3, DCPI_EDGE_JUMP), "B2 jumps to B3");
	T_OK(has_edge(&g, 3, out, DCPI_EDGE_EXIT), "B3 returns");
	T_EQ(g.nedges, 7, "7 edges, no more");
	T_EQ(g.blocks[3].end_kind, DCPI_END_RET, "B3 ends in a return");
	/* B0 and B3 run equally often; the loop body and B2 do not */
	T_EQ(g.blocks[0].cls, g.blocks[3].cls, "B0 and B3 one class");
	T_OK(g.blocks[1].cls != g.blocks[0].cls, "loop body its own class");
	T_OK(g.blocks[2].cls != g.blocks[0].cls && g.blocks[2].cls != g.blocks[1].cls,
	     "B2 (after the loop, skipped by B0's jump) its own class");
	T_EQ(g.nclasses, 3, "3 classes");
	T_EQ(g.blocks[1].loop, 1, "B1 in its own loop");
	T_EQ(g.blocks[0].loop, SIZE_MAX, "B0 in no loop");
	T_EQ(dcpi_cfg_block_at(&g, BASE + 7), 1, "address inside B1 found");
	dcpi_cfg_free(&g);
	free(v);
}

static int noreturn_at_0x2000(uint64_t t, void *arg)
{
	(void)arg;
	return t == 0x2000;
}

/* 0: test %edi,%edi; je 9 | 4: call 0x2000 (abort) | 9: call 0x3000; ret | */
static const uint8_t call_code[] = { 0x85, 0xff, 0x74, 0x05, 0xe8, 0xf7, 0x0f, 0x00, 0x00,
				     0xe8, 0xf2, 0x1f, 0x00, 0x00, 0xc3 };

static void test_cfg_noreturn(void)
{
	struct dcpi_cfg_opts o = { NULL, noreturn_at_0x2000, NULL, NULL, NULL, 0 };
	struct dcpi_cfg g;
	size_t n;
	struct dcpi_insn *v = decode(call_code, sizeof(call_code), &n);

	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), &o, &g), 0, "graph builds");
	T_EQ(g.nblocks, 3, "the no-return call ends a block; the other call does not");
	T_EQ(g.blocks[1].end_kind, DCPI_END_NORETURN, "B1 ends in a no-return call");
	T_OK(has_edge(&g, 1, DCPI_CFG_OUTSIDE(&g), DCPI_EDGE_EXIT), "B1 leaves the procedure");
	T_OK(!has_edge(&g, 1, 2, DCPI_EDGE_FALL), "no fall-through after abort");
	T_EQ(g.blocks[2].ninsns, 2, "call 0x3000 and ret in one block");
	dcpi_cfg_free(&g);
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "without the callback");
	T_OK(has_edge(&g, 1, 2, DCPI_EDGE_FALL), "every call returns: B1 falls into B2");
	dcpi_cfg_free(&g);
	free(v);
	T_OK(dcpi_cfg_noreturn_name("abort@plt"), "abort@plt never returns");
	T_OK(dcpi_cfg_noreturn_name("__stack_chk_fail"), "__stack_chk_fail never returns");
	T_OK(dcpi_cfg_noreturn_name("exit@@GLIBC_2.2.5"), "exit@@GLIBC never returns");
	T_OK(!dcpi_cfg_noreturn_name("exit_group_helper"), "a longer name is not exit");
	T_OK(!dcpi_cfg_noreturn_name("printf"), "printf returns");
}

/* 0: cmp $2,%edi; ja 0x14 | 5: mov %edi,%edi; jmp *0x2000(,%rdi,8) |
 * e: inc %eax; ret | 11: dec %eax; ret | 14: xor %eax,%eax; ret
 * table at 0x2000: 0x100e, 0x1011, 0x100e */
static const uint8_t table_code[] = { 0x83, 0xff, 0x02, 0x77, 0x0f, 0x89, 0xff, 0xff, 0x24,
				      0xfd, 0x00, 0x20, 0x00, 0x00, 0xff, 0xc0, 0xc3, 0xff,
				      0xc8, 0xc3, 0x31, 0xc0, 0xc3 };

static int read_table(uint64_t vaddr, void *buf, size_t len, void *arg)
{
	static const uint64_t table[3] = { 0x100e, 0x1011, 0x100e };
	int *reads = arg;

	++*reads;
	if (vaddr < 0x2000 || vaddr + len > 0x2000 + sizeof(table))
		return -ERANGE;
	memcpy(buf, (const char *)table + (vaddr - 0x2000), len);
	return 0;
}

static void test_cfg_table(void)
{
	int reads = 0;
	struct dcpi_cfg_opts o = { "x86-64", NULL, read_table, &reads, NULL, 0 };
	struct dcpi_cfg g;
	size_t n, b1, b2;
	struct dcpi_insn *v = decode(table_code, sizeof(table_code), &n);

	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), &o, &g), 0, "graph builds");
	T_EQ(g.ntables, 1, "one jump table recovered");
	T_EQ(reads, 3, "three entries read (cmp $2; ja)");
	b1 = dcpi_cfg_block_at(&g, 0x100e);
	b2 = dcpi_cfg_block_at(&g, 0x1011);
	T_EQ(g.blocks[b1].start, 0x100e, "case 0 starts a block");
	T_EQ(g.blocks[b2].start, 0x1011, "case 1 starts a block");
	T_OK(has_edge(&g, 1, b1, DCPI_EDGE_TABLE) && has_edge(&g, 1, b2, DCPI_EDGE_TABLE),
	     "table edges from the jump's block");
	T_EQ(g.nunresolved, 0, "nothing unresolved");
	dcpi_cfg_free(&g);
	/* without the table's bytes the jump goes to the unknown node */
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "graph builds without read");
	T_EQ(g.nunresolved, 1, "one unresolved jump");
	T_OK(has_edge(&g, 1, DCPI_CFG_UNKNOWN(&g), DCPI_EDGE_UNKNOWN), "edge into unknown");
	T_OK(has_edge(&g, DCPI_CFG_UNKNOWN(&g), dcpi_cfg_block_at(&g, 0x100e),
		      DCPI_EDGE_UNKNOWN), "unknown reaches the block nothing else enters");
	dcpi_cfg_free(&g);
	free(v);
}

static void test_cfg_bad(void)
{
	static const uint8_t junk[] = { 0x0f, 0x0b, 0xff, 0xff, 0x06, 0xc3 };
	struct dcpi_cfg g;
	size_t n;
	struct dcpi_insn *v = decode(junk, sizeof(junk), &n);

	T_EQ(dcpi_cfg_build(v, 0, sizeof(*v), NULL, &g), -EINVAL, "no instructions: EINVAL");
	T_EQ(dcpi_cfg_build(v, n, 1, NULL, &g), -EINVAL, "a stride too small: EINVAL");
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), 0, "undecodable bytes still build");
	T_EQ(g.blocks[0].end_kind, DCPI_END_TRAP, "ud2 ends the first block as a trap");
	dcpi_cfg_free(&g);
	free(v);
}

/* ---- cost ------------------------------------------------------------------------------ */

static void test_cost(void)
{
	/* imul %rdx,%rax; add $1,%rax; dec %ecx; jne 0 (self-loop): the carried chain
	 * on rax is imul + add = 3 + 1 cycles; issue alone would be 1 */
	static const uint8_t code[] = { 0x48, 0x0f, 0xaf, 0xc2, 0x48, 0x83, 0xc0, 0x01,
					0xff, 0xc9, 0x75, 0xf4, 0x48, 0xf7, 0xf1, 0xf2,
					0x0f, 0x5e, 0xc1 };
	struct dcpi_cost_block cb;
	size_t n;
	struct dcpi_insn *v = decode(code, sizeof(code), &n);

	T_EQ(n, 6, "6 instructions");
	T_STREQ(dcpi_cost_class("x86-64", &v[0])->name, "imul", "imul r,r is imul");
	T_STREQ(dcpi_cost_class("x86-64", &v[1])->name, "alu", "add is alu");
	T_STREQ(dcpi_cost_class("x86-64", &v[3])->name, "jcc", "jne is jcc");
	T_STREQ(dcpi_cost_class("x86-64", &v[4])->name, "div64", "div %%rcx is div64");
	T_STREQ(dcpi_cost_class("x86-64", &v[5])->name, "fp-div", "divsd is fp-div");
	T_OK(dcpi_cost_class("x86-64", &v[4])->long_latency, "div is long-latency");
	dcpi_cost_block("x86-64", v, 4, sizeof(*v), 0, NULL, &cb);
	T_OK(fabs(cb.cycles - 1.0) < 1e-9, "straight-line: 4 uops / 4 wide = 1 cycle (%g)",
	     cb.cycles);
	dcpi_cost_block("x86-64", v, 4, sizeof(*v), 1, NULL, &cb);
	T_OK(fabs(cb.cycles - 4.0) < 1e-9, "self-loop: carried imul+add = 4 cycles (%g)",
	     cb.cycles);
	T_EQ(cb.bound, DCPI_BOUND_CARRIED, "bound by the carried chain");
	dcpi_cost_block("x86-64", v + 4, 1, sizeof(*v), 0, NULL, &cb);
	T_OK(cb.cycles >= 21, "div64 costs its reciprocal throughput (%g)", cb.cycles);
	T_STREQ(dcpi_cost_bound_name(&cb), "divider", "bound by the divider");
	dcpi_cost_block("x86-64", v, 4, sizeof(*v), 0, NULL, &cb);
	T_OK(fabs(cb.path - (dcpi_cost_class("x86-64", &v[0])->latency +
			     dcpi_cost_class("x86-64", &v[1])->latency)) < 1e-9,
	     "path: the imul -> add chain (%g), not the jne's", cb.path);
	free(v);
}

/* The path of a compare on two loads: liblzma's match loop's
 *   movq (%rdi,%r10),%r8; subq (%rdx,%r10),%r8; je
 * issues in one cycle, but alone waits for both loads one after the
 * other (4 cycles each on a hit) before the branch can resolve. */
static void test_cost_path(void)
{
	static const uint8_t code[] = { 0x4e, 0x8b, 0x04, 0x17, 0x4e, 0x2b, 0x04, 0x12,
					0x74, 0x00 };
	struct dcpi_cost_block cb;
	size_t n;
	struct dcpi_insn *v = decode(code, sizeof(code), &n);

	T_EQ(n, 3, "3 instructions");
	if (n == 3) {
		dcpi_cost_block("x86-64", v, 3, sizeof(*v), 0, NULL, &cb);
		T_OK(cb.cycles <= 1.0, "best case: issue-bound, 1 cycle or less (%g)", cb.cycles);
		T_OK(cb.path >= 2 * 4 + 1, "path: two loads in a row and the subtract (%g)", cb.path);
	}
	free(v);
}

/* Lowering spreads in proportion (calc_flow.c's segments): a dispatch
 * block B0 with a firm estimate of 100 leads to eight cases B1-B8, each
 * estimated at 80 from samples that are not firm, which join again in
 * B9 (100) and loop back.  The cases share B0's count; with equal
 * estimates, equally, to within a segment (80 / 16 = 5) of each other.
 * Four whole-unit segments gave some cases 0 and others 2.5 times their
 * share. */
static void test_flow_proportional(void)
{
	struct dcpi_cfg_block blocks[10];
	struct dcpi_cfg_edge edges[32];
	struct dcpi_calc_block cb[10];
	struct dcpi_calc_edge ce[32];
	struct calc_est est[10];
	struct dcpi_calc c;
	size_t ne = 0, out = 11;
	double lo = INFINITY, hi = 0;

	memset(blocks, 0, sizeof(blocks)), memset(cb, 0, sizeof(cb)), memset(ce, 0, sizeof(ce));
	memset(&c, 0, sizeof(c));
	edges[ne++] = (struct dcpi_cfg_edge){ 0, 1, DCPI_EDGE_TABLE };
	for (size_t k = 2; k <= 8; k++)
		edges[ne++] = (struct dcpi_cfg_edge){ 0, k, DCPI_EDGE_TABLE };
	for (size_t k = 1; k <= 8; k++)
		edges[ne++] = (struct dcpi_cfg_edge){ k, 9, DCPI_EDGE_JUMP };
	edges[ne++] = (struct dcpi_cfg_edge){ 9, 0, DCPI_EDGE_JUMP };
	edges[ne++] = (struct dcpi_cfg_edge){ 9, out, DCPI_EDGE_EXIT };
	edges[ne++] = (struct dcpi_cfg_edge){ out, 0, DCPI_EDGE_ENTRY };
	c.cfg = (struct dcpi_cfg){ .blocks = blocks, .nblocks = 10, .edges = edges, .nedges = ne };
	c.blocks = cb;
	c.edges = ce;
	for (size_t b = 0; b < 10; b++) {
		int cas = b >= 1 && b <= 8;

		est[b] = (struct calc_est){ .w = cas ? 80 : 100, .support = cas ? 0 : 400, .has = 1 };
		cb[b].time = cas ? 80 : 400;
		blocks[b].reachable = 1;
	}
	T_EQ(calc_reconcile(DCPI_CALC_TIME, &c, est), 0, "reconciled");
	for (size_t k = 1; k <= 8; k++)
		lo = fmin(lo, cb[k].freq), hi = fmax(hi, cb[k].freq);
	T_OK(fabs(cb[0].freq - 100) < 5, "the dispatch keeps its firm 100 (%g)", cb[0].freq);
	T_OK(lo > 0 && hi - lo <= 80.0 / 16 + 1e-6,
	     "the eight cases share it, none a segment from another (%g to %g)", lo, hi);
}

/* ---- estimates -------------------------------------------------------------------------- */

static void test_estimate(void)
{
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v = decode(loop_code, sizeof(loop_code), &n);
	/* retired samples: B0 2 insns x 10, loop 3 insns x 1000, B2 10, B3 10 */
	uint64_t ret[7] = { 10, 10, 1000, 1000, 1000, 10, 10 };
	uint64_t time[7] = { 5, 5, 3000, 0, 1000, 5, 5 };

	memset(&in, 0, sizeof(in));
	in.insns = v;
	in.n = n;
	in.stride = sizeof(*v);
	in.retired = ret;
	in.retired_period = 1000;
	in.time = time;
	in.cycles_per_sample = 1000;
	in.mode = DCPI_CALC_RETIRED;
	T_EQ(dcpi_calc_run(&in, &c), 0, "retired mode runs");
	T_OK(fabs(c.blocks[1].freq - 1e6) / 1e6 < 0.01, "loop ran 1000 x 1000 / 1 (%g)",
	     c.blocks[1].freq);
	T_EQ(c.blocks[1].conf, 'H', "loop confidence H");
	T_OK(c.absolute && c.has_cpi, "absolute, with cpi");
	T_OK(fabs(c.blocks[1].cpi - 4000.0 * 1000 / (1e6 * 3)) < 0.01, "loop cpi 4/3 (%g)",
	     c.blocks[1].cpi);
	T_OK(fabs(c.insns[2].cpi - 3.0) < 0.01, "add: 3000 cycles-samples / 1e6 = 3 cpi (%g)",
	     c.insns[2].cpi);
	T_OK(c.insns[3].stall == 0, "dec: no cycles, no stall");
	/* conservation, by construction */
	for (size_t b = 0; b < c.cfg.nblocks; b++) {
		double in_f = 0, out_f = 0;

		for (size_t e = 0; e < c.cfg.nedges; e++) {
			if (c.cfg.edges[e].to == b)
				in_f += c.edges[e].count;
			if (c.cfg.edges[e].from == b)
				out_f += c.edges[e].count;
		}
		T_OK(fabs(in_f - c.blocks[b].freq) < 1e-6 * (1 + in_f) &&
		     fabs(out_f - c.blocks[b].freq) < 1e-6 * (1 + out_f),
		     "block %zu: in %g = freq %g = out %g", b, in_f, c.blocks[b].freq, out_f);
	}
	dcpi_calc_free(&c);

	/* the loop's first instruction: 1040 samples agree with its interior's
	   1000 a piece (3 standard deviations of the difference: 116), and
	   count, as without skid or with a skid of one executed instruction
	   they are its own; 1400 are another instruction's, skidded in */
	ret[2] = 1040;
	T_EQ(dcpi_calc_run(&in, &c), 0, "retired mode runs (first instruction 1040)");
	T_OK(fabs(c.blocks[1].estimate - 3040e3 / 3) < 1, "1040 + 2 x 1000 over 3 instructions "
	     "x 1000 (%g)", c.blocks[1].estimate);
	T_OK(fabs(c.blocks[1].support - 3040) < 1e-9, "all 3040 samples its support (%g)",
	     c.blocks[1].support);
	dcpi_calc_free(&c);
	ret[2] = 1400;
	T_EQ(dcpi_calc_run(&in, &c), 0, "retired mode runs (first instruction 1400)");
	T_OK(fabs(c.blocks[1].estimate - 1e6) < 1, "1400 left out: 2 x 1000 over 2 (%g)",
	     c.blocks[1].estimate);
	dcpi_calc_free(&c);
	ret[2] = 1000;

	/* time only, no clock: relative counts, and the hottest block at the scale */
	in.mode = DCPI_CALC_TIME;
	in.retired = NULL;
	in.cycles_per_sample = 0;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs");
	T_OK(!c.absolute, "no clock: relative");
	T_OK(fabs(c.blocks[1].freq - DCPI_CALC_REL_SCALE) < 1e-6, "hottest block at the scale");
	T_OK(c.blocks[1].cpi > 0, "cpi still computed");
	dcpi_calc_free(&c);

	/* time only: B2 (jmp, its only predecessor the loop B1) stalled, 5000
	   samples on one instruction; the loop ran near its best case, with
	   firm samples (past its second instruction).  B2 runs at most as
	   often as B1: its estimate is B1's bound, not its own, and not H */
	{
		uint64_t stall[7] = { 0, 0, 0, 150, 150, 5000, 0 };

		in.time = stall;
		T_EQ(dcpi_calc_run(&in, &c), 0, "time mode with a stalled block runs");
		T_OK(c.blocks[2].estimate > 0 &&
		     c.blocks[2].estimate <= c.blocks[1].estimate * (1 + 1e-9),
		     "the stalled block bounded by its predecessor: %g <= %g",
		     c.blocks[2].estimate, c.blocks[1].estimate);
		T_OK(c.blocks[2].conf != 'H', "and not H (%c)", c.blocks[2].conf);
		dcpi_calc_free(&c);
		in.time = time;
	}

	in.mode = DCPI_CALC_RETIRED;
	T_EQ(dcpi_calc_run(&in, &c), -EINVAL, "retired mode without retired samples: EINVAL");
	in.mode = DCPI_CALC_EXACT;
	T_EQ(dcpi_calc_run(&in, &c), -EINVAL, "exact mode without counts: EINVAL");
	free(v);
}

/* A loop that a side block can join: its back edge from the loop's own
 * branch, and again from the compare and branch after it (gzip's
 * longest_match: `cmpb; jne`, its samples all on the jne where the
 * compare's load ends).  That block's estimate has no firm samples, so it
 * is worth no more than an edge: the loop's flow is not drawn round it
 * to keep it.
 *   0: add $1,%rdx; add $1,%rcx; add $1,%rax; cmp %rdx,%rsi; jne 0
 *   0x11: cmp %rax,(%rdi); jne 0 | 0x16: ret */
static const uint8_t side_code[] = { 0x48, 0x83, 0xc2, 0x01, 0x48, 0x83, 0xc1, 0x01, 0x48,
				     0x83, 0xc0, 0x01, 0x48, 0x39, 0xd6, 0x75, 0xef, 0x48,
				     0x39, 0x07, 0x75, 0xea, 0xc3 };

static void time_input(struct dcpi_calc_input *in, const struct dcpi_insn *v, size_t n,
		       const uint64_t *t);

/* cpi and stall to the digits they carry: the quantum string, and each
 * instruction's digits at the place of its samples' standard error (a
 * power of ten within a factor of sqrt(10) of cpi / sqrt(n)), or its
 * count's where coarser. */
static void test_cpi_digits(void)
{
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n, bad = 0, seen = 0;
	struct dcpi_insn *v = decode(side_code, sizeof(side_code), &n);
	uint64_t t[8] = { 0, 30, 480, 100, 4000, 0, 800, 5 };
	char buf[32];

	T_STREQ(dcpi_quantum_str(1.92, 0.1, 2, buf, sizeof(buf)), "1.9", "1.92 to 0.1: 1.9");
	T_STREQ(dcpi_quantum_str(0.57, 0.1, 2, buf, sizeof(buf)), "0.6", "0.57 to 0.1: 0.6");
	T_STREQ(dcpi_quantum_str(1234.5, 100, 2, buf, sizeof(buf)), "1200", "1234.5 to 100: 1200");
	T_STREQ(dcpi_quantum_str(0.1234, 0, 2, buf, sizeof(buf)), "0.12", "no quantum: 2 decimals");
	T_STREQ(dcpi_quantum_str(-1, 0.1, 2, buf, sizeof(buf)), "-", "none: -");
	T_OK(fabs(dcpi_digits_quantum(1.92, 2) - 0.1) < 1e-12 &&
	     fabs(dcpi_digits_quantum(0.0123, 1) - 0.01) < 1e-12 && dcpi_digits_quantum(5, 0) == 0,
	     "quantum of 1.92 at 2 digits 0.1, of 0.0123 at 1 0.01, all digits 0");
	T_EQ(n, 8, "8 instructions decode");
	time_input(&in, v, n, t);
	in.timer = 1;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs");
	for (size_t i = 0; i < n && c.blocks; i++) {
		const struct dcpi_calc_insn *ci = &c.insns[i];
		size_t b = dcpi_cfg_block_at(&c.cfg, v[i].vaddr);
		double q, se;

		if (!(ci->cpi > 0) || !t[i] || b >= c.cfg.nblocks)
			continue;
		seen++;
		q = dcpi_digits_quantum(ci->cpi, ci->digits);
		se = ci->cpi / sqrt((double)t[i]);
		bad += !(q > 0) || q < se / sqrt(10) * 0.999 ||
		       (q > se * sqrt(10) * 1.001 && q > dcpi_digits_quantum(ci->cpi,
									  c.blocks[b].digits) * 1.001);
	}
	T_OK(seen >= 4, "sampled instructions with a cpi (%zu)", seen);
	T_EQ(bad, 0, "each to its samples' standard error, or its count's digits");
	/* a stall in all is samples' time less best x count: no less precise
	 * than its average, which divides it by the count */
	bad = seen = 0;
	for (size_t i = 0; i < n && c.blocks; i++) {
		size_t b = dcpi_cfg_block_at(&c.cfg, v[i].vaddr);
		double u = in.cycles_per_sample > 0 ? in.cycles_per_sample : 1, tot;

		if (!(c.insns[i].stall > 0) || b >= c.cfg.nblocks)
			continue;
		seen++;
		tot = (double)t[i] * u - c.insns[i].best * c.blocks[b].freq;
		bad += dcpi_stall_total_digits(&c, b, i, tot, (double)t[i], u) <
		       dcpi_stall_avg_digits(&c, i);
		bad += dcpi_stall_total_digits(&c, b, i, 0, (double)t[i], u) != 0;
	}
	T_OK(seen >= 1, "stalled instructions (%zu)", seen);
	T_EQ(bad, 0, "a stall in all carries its average's digits or more; none of 0");
	dcpi_calc_free(&c);
	free(v);
}

static void test_no_firm_side(void)
{
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v = decode(side_code, sizeof(side_code), &n);
	uint64_t t[8] = { 0, 100, 100, 100, 100, 0, 800, 5 };

	T_EQ(n, 8, "8 instructions decode");
	time_input(&in, v, n, t);
	in.timer = 1;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs");
	T_OK(c.cfg.nblocks == 3 && c.cfg.blocks[1].ninsns == 2, "loop, side block of 2, ret (%zu)",
	     c.cfg.nblocks);
	if (c.cfg.nblocks == 3) {
		T_OK(c.cfg.blocks[0].cls != c.cfg.blocks[1].cls,
		     "the loop's block and the side block: two classes (the loop's own "
		     "back edge is a cycle the side block is not on)");
		T_OK(c.blocks[1].support == 0 && c.blocks[1].estimate > 0,
		     "the side block's estimate rests on no firm sample (%g)", c.blocks[1].estimate);
		T_OK(c.blocks[1].freq < 0.8 * c.blocks[1].estimate,
		     "the graph did not keep it whole (%g of %g)", c.blocks[1].freq,
		     c.blocks[1].estimate);
		T_OK(fabs(c.blocks[0].freq - c.blocks[0].estimate) < 0.2 * c.blocks[0].estimate,
		     "the loop keeps its own (%g, estimated %g)", c.blocks[0].freq,
		     c.blocks[0].estimate);
	}
	dcpi_calc_free(&c);
	free(v);
}

/* Skid (issue 29): a loop whose firm samples sit on the instruction after
 * a load that reads the load's value (where the load's stall lands) is
 * at most M, and says why; spread evenly, the same loop is H.
 *   0: add $1,%edx  3: dec %esi  5: mov (%rdi),%eax  7: add %eax,%ecx
 *   9: test %esi,%esi  11: jne 0  13: ret */
/* Mode TIME over n decoded instructions v with samples t. */
static void time_input(struct dcpi_calc_input *in, const struct dcpi_insn *v, size_t n,
		       const uint64_t *t)
{
	memset(in, 0, sizeof(*in));
	in->insns = v;
	in->n = n;
	in->stride = sizeof(*v);
	in->mode = DCPI_CALC_TIME;
	in->time = t;
}

static const uint8_t skid_code[] = { 0x83, 0xc2, 0x01, 0xff, 0xce, 0x8b, 0x07, 0x01, 0xc1,
				     0x85, 0xf6, 0x75, 0xf3, 0xc3 };

/* a block's cycles from "another model": 2.5 for the 6-instruction loop,
 * none (0: dcpi's own) for anything else; counts its calls */
/* The same loop, its add reading %ecx, not the load's %eax: nothing lands. */
static const uint8_t nodep_code[] = { 0x83, 0xc2, 0x01, 0xff, 0xce, 0x8b, 0x07, 0x01, 0xca,
				      0x85, 0xf6, 0x75, 0xf3, 0xc3 };
/* The loop with a store in the load's place: add $1,%edx; dec %esi;
 * mov %eax,(%rdi,%rdx,4); add $1,%ecx; test %esi,%esi; jne 0; ret. */
static const uint8_t store_code[] = { 0x83, 0xc2, 0x01, 0xff, 0xce, 0x89, 0x04, 0x97, 0x83,
				      0xc1, 0x01, 0x85, 0xf6, 0x75, 0xf1, 0xc3 };
/* An epilogue: add $8,%rsp; pop %rbx; pop %rbp; pop %r12; ret.  Each pop
 * loads and writes %rsp, the next reads it: the stack engine's, no stall. */
static const uint8_t pops_code[] = { 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x5d, 0x41, 0x5c, 0xc3 };

static double other_model(void *arg, const struct dcpi_insn *insns, size_t n, size_t stride)
{
	(void)insns, (void)stride;
	++*(int *)arg;
	return n == 6 ? 2.5 : 0;
}

static void test_skid(void)
{
	double own, own1;
	int calls = 0;
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v = decode(skid_code, sizeof(skid_code), &n);
	uint64_t landed[7] = { 10, 10, 10, 900, 10, 10, 0 };
	uint64_t even[7] = { 10, 10, 300, 300, 300, 300, 0 };

	T_EQ(n, 7, "7 instructions decode");
	time_input(&in, v, n, landed);
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs");
	T_EQ(c.cfg.blocks[0].ninsns, 6, "the loop is one block of 6");
	T_OK(fabs(c.blocks[0].landed - 900.0 / 930) < 1e-9, "900 of its 930 firm samples "
	     "where the load's stall lands (%g)", c.blocks[0].landed);
	T_OK(c.blocks[0].conf != 'H', "so not H (%c)", c.blocks[0].conf);
	T_OK(c.blocks[0].why & DCPI_CALC_WHY_SKID, "and says skid (why %#x)", c.blocks[0].why);
	dcpi_calc_free(&c);
	in.time = even;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, samples spread");
	T_OK(fabs(c.blocks[0].landed - 0.25) < 1e-9, "a quarter where the stall lands (%g)",
	     c.blocks[0].landed);
	T_EQ(c.blocks[0].conf, 'H', "H");
	T_EQ(c.blocks[0].why, 0, "nothing held it down");
	T_EQ(c.blocks[0].digits, 3, "three significant digits (a cycles event's H)");
	dcpi_calc_free(&c);
	/* plenty of clean samples (300), but most (400 of 700) where the
	 * load's stall lands: M for skid alone */
	{
		uint64_t most[7] = { 10, 10, 100, 400, 100, 100, 0 };

		in.time = most;
		T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, most samples landed");
		T_EQ(c.blocks[0].conf, 'M', "M, not H");
		T_EQ(c.blocks[0].why, DCPI_CALC_WHY_SKID, "for skid alone (why %#x)", c.blocks[0].why);
		dcpi_calc_free(&c);
		in.time = even;
	}
	{
		struct dcpi_insn *w = decode(nodep_code, sizeof(nodep_code), &n);
		struct dcpi_calc_input in2 = in;

		in2.insns = w;
		in2.time = landed;
		T_EQ(dcpi_calc_run(&in2, &c), 0, "time mode runs, the load's value not read");
		T_OK(c.blocks[0].landed == 0 && !(c.blocks[0].why & DCPI_CALC_WHY_SKID),
		     "an instruction that does not read the load's value: nothing lands (%g)",
		     c.blocks[0].landed);
		dcpi_calc_free(&c);
		free(w);
	}
	{
		size_t np;
		struct dcpi_insn *w = decode(pops_code, sizeof(pops_code), &np);
		uint64_t pt[5] = { 0, 10, 200, 200, 200 };
		struct dcpi_calc_input in2 = in;

		in2.insns = w;
		in2.n = np;
		in2.time = pt;
		T_EQ(dcpi_calc_run(&in2, &c), 0, "time mode runs on an epilogue of pops");
		T_OK(c.cfg.nblocks >= 1 && c.blocks[0].landed == 0 && c.blocks[0].conf == 'H',
		     "pops reading %%rsp the pop before wrote: nothing lands, H (%g %c)",
		     c.blocks[0].landed, c.blocks[0].conf);
		dcpi_calc_free(&c);
		free(w);
	}
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, samples spread, again");
	own = c.blocks[0].cost.cycles;
	own1 = c.blocks[1].cost.cycles;
	dcpi_calc_free(&c);
	/* the same samples from a software clock (cpu-clock): 1,200 firm
	 * samples, spread: H, nothing held it down */
	in.timer = 1;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs on a timer's samples");
	T_EQ(c.blocks[0].conf, 'H', "a timer's estimate on 1,200 firm samples, spread, is H");
	T_EQ(c.blocks[0].why, 0, "and nothing held it down (why %#x)", c.blocks[0].why);
	{
		char f[32];
		size_t e = 0;

		while (e < c.cfg.nedges && !(c.cfg.edges[e].from == 0 && c.cfg.edges[e].to == 0))
			e++;
		T_EQ(c.blocks[0].digits, 2, "but it carries two significant digits, not H's three");
		dcpi_block_count_str(&c.blocks[0], f, sizeof(f));
		T_OK(!strcmp(f, "1.0k"), "and is printed so (%s: the hottest block, 1000 "
		     "relative; H's three would be 1.00k)", f);
		T_OK(e < c.cfg.nedges && c.edges[e].digits == 2 && c.edges[e].conf == 'H',
		     "its loop's edge too (H, %d digits)", e < c.cfg.nedges ? c.edges[e].digits : -1);
	}
	dcpi_calc_free(&c);
	/* a timer's block with half or more of its samples on one
	 * instruction after a load (or on its first two) is L (peak); just
	 * under half, or after register arithmetic, no peak; spread, fewer
	 * than DCPI_CALC_MEDIUM_TIMER firm samples (past the second
	 * instruction) is L (few), from there M (few), from
	 * DCPI_CALC_HIGH_TIMER H */
	{
		static const struct {
			uint64_t t[7];
			char conf;
			unsigned why;
			const char *what;
		} cases[] = {
			{ { 10, 10, 10, 900, 10, 10, 0 }, 'L',
			  DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_PEAK | DCPI_CALC_WHY_SKID,
			  "900 of 950 on one: L (peak)" },
			{ { 10, 10, 100, 340, 100, 120, 0 }, 'L',
			  DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_PEAK | DCPI_CALC_WHY_SKID,
			  "340 of 680 on one: L (peak)" },
			{ { 10, 10, 100, 339, 100, 121, 0 }, 'H', 0,
			  "339 of 680 on one: no peak, H" },
			{ { 10, 10, 100, 100, 500, 100, 0 }, 'H', 0,
			  "500 of 820 on the test after a register add: no stall, H" },
			{ { 1, 1, 74, 75, 75, 75, 0 }, 'M', DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_FEW,
			  "299 firm samples: M (few)" },
			{ { 1, 1, 75, 75, 75, 75, 0 }, 'H', 0, "300 firm samples: H" },
			{ { 500, 10, 100, 100, 100, 100, 0 }, 'L',
			  DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_PEAK,
			  "500 of 910 on the first instruction (a branch's refill): L (peak)" },
			{ { 1, 1, 15, 15, 15, 15, 0 }, 'L', DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_FEW,
			  "60 firm samples: L (few)" },
			{ { 1, 1, 16, 16, 16, 16, 0 }, 'M', DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_FEW,
			  "64 firm samples: M" },
			{ { 0, 0, 0, 12, 0, 0, 0 }, 'L', DCPI_CALC_WHY_TIMER | DCPI_CALC_WHY_FEW |
			  DCPI_CALC_WHY_SKID, "12 samples, all on one: too few to call a peak" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			in.time = cases[i].t;
			T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs on a timer's samples");
			T_OK(c.blocks[0].conf == cases[i].conf && c.blocks[0].why == cases[i].why,
			     "%s (%c, why %#x)", cases[i].what, c.blocks[0].conf, c.blocks[0].why);
			dcpi_calc_free(&c);
		}
		/* the same loop with a store where the load was: 500 of 820 on
		   the add after it is a peak (a full store buffer's wait) */
		{
			size_t ns;
			struct dcpi_insn *w = decode(store_code, sizeof(store_code), &ns);
			uint64_t st[7] = { 10, 10, 100, 500, 100, 100, 0 };
			struct dcpi_calc_input in2 = in;

			in2.insns = w;
			in2.time = st;
			T_EQ(ns, 7, "the store loop decodes to 7 instructions");
			T_EQ(dcpi_calc_run(&in2, &c), 0, "time mode runs on the store loop");
			T_OK(c.blocks[0].conf == 'L' && (c.blocks[0].why & DCPI_CALC_WHY_PEAK),
			     "500 of 820 on the add after a store: L (peak) (%c, why %#x)",
			     c.blocks[0].conf, c.blocks[0].why);
			dcpi_calc_free(&c);
			free(w);
		}
		in.time = even;
	}
	in.timer = 0;
	/* another model's best case (make accuracy's llvm-mca): its cycles
	 * where it answers, dcpi's own where it returns 0 */
	in.block_cycles = other_model;
	in.block_cycles_arg = &calls;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs with another model");
	T_OK(calls == 2, "asked once per block (%d)", calls);
	T_OK(fabs(c.blocks[0].cost.cycles - 2.5) < 1e-9, "the loop's best case is its 2.5 (%g)",
	     c.blocks[0].cost.cycles);
	T_OK(c.blocks[1].cost.cycles == own1, "the ret keeps dcpi's own (%g = %g)",
	     c.blocks[1].cost.cycles, own1);
	T_OK(own != 2.5, "which differs from the loop's own (%g)", own);
	dcpi_calc_free(&c);
	free(v);
}

/* Absolute counts from time and a clock (issue 29), by construction: a
 * loop ran N times at its best case but for one instruction's extra
 * cycles, and each instruction's cycles were sampled on the next (skid;
 * the jne's on the loop's first).  Over the best case the samples bound
 * the count from above, loose by the extra cycles; scaled by the calm
 * instructions (third on, none after a load or a long-latency one, each
 * sample a cycle of the one before it) it is N.
 *   skid_code: the load (2) waits 5 cycles, on the add after it;
 *   div_code: the divide (2) takes its best case, which pairing a
 *   sample with its own instruction's best case would have charged to
 *   the calm xor's samples: mov %edi,%eax; xor %edx,%edx; div %ecx;
 *   add %eax,%r8d; dec %esi; jne 0; ret */
static const uint8_t div_code[] = { 0x89, 0xf8, 0x31, 0xd2, 0xf7, 0xf1, 0x41, 0x01,
				    0xc0, 0xff, 0xce, 0x75, 0xf3, 0xc3 };

static void clock_case(const uint8_t *code, size_t len, size_t slow, double extra,
		       const char *what)
{
	const double N = 1e6, u = 1000;
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v = decode(code, len, &n);
	uint64_t t[8] = { 0 };
	double best[8];

	T_OK(n == 7, "%s: 7 instructions decode (%zu)", what, n);
	if (n != 7) {
		free(v);
		return;
	}
	time_input(&in, v, n, t);
	in.cycles_per_sample = u;
	for (size_t i = 0; i < 6; i++)
		t[i] = 100;
	T_EQ(dcpi_calc_run(&in, &c), 0, "%s: time mode runs, to read the best case", what);
	for (size_t i = 0; i < 7; i++)
		best[i] = c.insns[i].best;
	dcpi_calc_free(&c);
	for (size_t i = 0; i < 6; i++) /* instruction i's cycles land on the next */
		t[(i + 1) % 6] = (uint64_t)llround(N * (best[i] + (i == slow ? extra : 0)) / u);
	T_EQ(dcpi_calc_run(&in, &c), 0, "%s: time mode runs", what);
	T_OK(c.absolute, "%s: absolute counts", what);
	T_OK(c.blocks[0].estimate > 0 && fabs(c.blocks[0].freq - N) / N < 0.01,
	     "%s: the loop's count from its calm samples: %g (truth %g)", what,
	     c.blocks[0].freq, N);
	T_OK(c.calm == (double)(t[2] + t[4] + t[5]), "%s: the calm samples said: %g", what,
	     c.calm);
	T_OK(fabs(c.insns[slow + 1].cpi - (best[slow] + extra)) < 0.05 * (best[slow] + extra),
	     "%s: the cpi after the slow instruction is its cycles: %g (truth %g)", what,
	     c.insns[slow + 1].cpi, best[slow] + extra);
	dcpi_calc_free(&c);
	free(v);
}

static void test_clock_scale(void)
{
	const double u = 1000;
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v;
	uint64_t stalled[7] = { 0, 0, 0, 5000, 0, 0, 0 };
	double bound;

	clock_case(skid_code, sizeof(skid_code), 2, 5, "a load's stall");
	clock_case(div_code, sizeof(div_code), 2, 0, "a divide");
	/* with no calm sample the bound's scale stays */
	v = decode(skid_code, sizeof(skid_code), &n);
	time_input(&in, v, n, stalled);
	in.cycles_per_sample = u;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, samples only after the load");
	bound = 5000 * u / (c.blocks[0].expect * (c.blocks[0].cost.cycles - c.insns[0].best) /
			    c.blocks[0].cost.cycles);
	T_OK(fabs(c.blocks[0].freq - bound) / bound < 0.01,
	     "no calm sample: the bound's scale (%g, bound %g)", c.blocks[0].freq, bound);
	T_OK(c.calm == 0, "and says so (calm %g)", c.calm);
	dcpi_calc_free(&c);
	free(v);
}

/* A loop whose head X (4 register adds, compare, je out) runs as often
 * as its body Y (4 adds, jmp back) and its exit Z (3 adds, ret) together:
 * three classes.
 *   0: add $1 to eax ecx edx esi; cmp %eax,%edi; je 0x22
 *   0x10: add $1 to r8d r9d r10d r11d; jmp 0
 *   0x22: add $1 to eax ecx edx; ret */
static const uint8_t headbody_code[] = {
	0x83, 0xc0, 0x01, 0x83, 0xc1, 0x01, 0x83, 0xc2, 0x01, 0x83, 0xc6, 0x01, 0x39, 0xc7,
	0x74, 0x12, 0x41, 0x83, 0xc0, 0x01, 0x41, 0x83, 0xc1, 0x01, 0x41, 0x83, 0xc2, 0x01,
	0x41, 0x83, 0xc3, 0x01, 0xeb, 0xde, 0x83, 0xc0, 0x01, 0x83, 0xc1, 0x01, 0x83, 0xc2,
	0x01, 0xc3
};

/* A software clock's H says the block's own samples fix its count: where
 * the graph moved it by more than half from theirs, it is M (moved).
 * X's 6,000 spread samples say over ten times what Y's and Z's say
 * together (each under 100 firm samples: too few to bound X before the
 * graph); raising them costs more than lowering X, so X goes down to
 * their sum. */
static void test_timer_moved(void)
{
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	size_t n;
	struct dcpi_insn *v = decode(headbody_code, sizeof(headbody_code), &n);
	uint64_t t[15] = { 1000, 1000, 1000, 1000, 1000, 1000, 33, 33, 33, 33, 33,
			   49, 49, 49, 49 };

	T_EQ(n, 15, "15 instructions decode");
	time_input(&in, v, n, t);
	in.timer = 1;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs on a timer's samples");
	T_OK(c.cfg.nblocks == 3 && c.cfg.blocks[0].cls != c.cfg.blocks[1].cls,
	     "head, body and ret; head and body in two classes");
	T_OK(c.cfg.nblocks == 3 && c.blocks[0].support >= DCPI_CALC_HIGH_TIMER &&
	     c.blocks[0].moved > 0.5,
	     "the head: %g firm samples, spread, its count moved by %g from theirs",
	     c.cfg.nblocks == 3 ? c.blocks[0].support : 0, c.cfg.nblocks == 3 ? c.blocks[0].moved : 0);
	T_OK(c.cfg.nblocks == 3 && c.blocks[0].conf == 'M' &&
	     (c.blocks[0].why & DCPI_CALC_WHY_MOVED) && (c.blocks[0].why & DCPI_CALC_WHY_TIMER),
	     "is M, why moved (%c, why %#x)", c.cfg.nblocks == 3 ? c.blocks[0].conf : '?',
	     c.cfg.nblocks == 3 ? c.blocks[0].why : 0);
	dcpi_calc_free(&c);
	/* the body's samples agreeing (about a quarter of 6,000 more): the
	   head keeps its own count, H */
	for (size_t i = 6; i < 11; i++)
		t[i] = 1000;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, the body agreeing");
	T_OK(c.cfg.nblocks == 3 && c.blocks[0].conf == 'H' && c.blocks[0].moved <= 0.5,
	     "the head unmoved (%g) is H (%c)", c.cfg.nblocks == 3 ? c.blocks[0].moved : 0,
	     c.cfg.nblocks == 3 ? c.blocks[0].conf : '?');
	dcpi_calc_free(&c);
	free(v);
}

/* A loop the graph empties although its samples say it ran: all of the
 * header's samples on its second instruction (no firm support, so its
 * estimate is weak), none in the body or the exit, whose raising costs
 * more than keeping the header's estimate earns.  Its count is 0, which
 * is false: the block is marked ran (printed >0), and coverage counts it.
 *   0: mov (%rdi),%eax; add $1,%eax; test %eax,%eax; je 0xf
 *   9: add $4,%rdi; jmp 0
 *   f: ret */
static const uint8_t ran_code[] = { 0x8b, 0x07, 0x83, 0xc0, 0x01, 0x85, 0xc0, 0x74, 0x06,
				    0x48, 0x83, 0xc7, 0x04, 0xeb, 0xf1, 0xc3 };

static void test_ran(void)
{
	size_t n;
	struct dcpi_insn *v = decode(ran_code, sizeof(ran_code), &n);
	uint64_t t[7] = { 0, 100, 0, 0, 0, 0, 0 }, three[7] = { 0, 0, 0, 0, 0, 0, 3 };
	struct dcpi_calc_input in;
	struct dcpi_calc c;
	char buf[32];

	T_EQ(n, 7, "7 instructions decode");
	time_input(&in, v, n, t);
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs");
	T_EQ(c.cfg.nblocks, 3, "three blocks");
	T_OK(c.blocks[0].estimate > 0, "the header has an estimate of its own (%g)",
	     c.blocks[0].estimate);
	T_OK(c.blocks[0].freq == 0, "the graph gives it nothing (%g)", c.blocks[0].freq);
	T_OK(c.blocks[0].why & DCPI_CALC_WHY_RAN, "so it says ran (why %#x)", c.blocks[0].why);
	T_EQ(c.blocks[0].conf, 'L', "L");
	T_OK(!strcmp(dcpi_block_count_str(&c.blocks[0], buf, sizeof(buf)), ">0"),
	     "printed >0, not 0 (%s)", buf);
	T_OK(!(c.blocks[1].why & DCPI_CALC_WHY_RAN) && !(c.blocks[2].why & DCPI_CALC_WHY_RAN),
	     "blocks without samples of their own do not");
	T_OK(!strcmp(dcpi_block_count_str(&c.blocks[1], buf, sizeof(buf)), "0"),
	     "and print their 0 (%s)", buf);
	{
		struct dcpi_annotation a = { 0 };   /* no lines: blocks only */
		struct dcpi_coverage cov;

		T_EQ(dcpi_coverage_of_calc(&a, &c, &cov), 0, "coverage from the estimate");
		T_EQ(cov.block_ran[0], 1, "the header ran, by its samples");
		T_EQ(cov.blocks_ran, 1, "and nothing else is counted or implied (%zu)",
		     cov.blocks_ran);
		dcpi_coverage_free(&cov);
		T_EQ(dcpi_coverage_of(&a, &c.cfg, &c.blocks[0].freq, sizeof(c.blocks[0]), &cov), 0,
		     "coverage from the counts alone");
		T_EQ(cov.blocks_ran, 0, "which would say nothing ran");
		dcpi_coverage_free(&cov);
	}
	dcpi_calc_free(&c);
	/* three samples on a one-instruction block's only instruction may be
	 * skid from elsewhere: not proof that it ran */
	in.time = three;
	T_EQ(dcpi_calc_run(&in, &c), 0, "time mode runs, samples on the ret alone");
	T_OK(!(c.blocks[2].why & DCPI_CALC_WHY_RAN), "a block's first instruction proves nothing "
	     "(why %#x)", c.blocks[2].why);
	dcpi_calc_free(&c);
	free(v);
}

/* Bad input the commands meet: too many blocks, bytes that do not decode. */
static void test_refusals(void)
{
	size_t n = DCPI_CFG_MAX_BLOCKS + 10;
	struct dcpi_insn *v = calloc(n, sizeof(*v));
	struct dcpi_annot_insn rows[3];
	struct dcpi_annotation a;
	struct dcpi_calc_cols cols = { .time = 0, .retired = -1, .mode = DCPI_CALC_TIME };
	struct dcpi_calc c;
	struct dcpi_cfg g;

	for (size_t i = 0; v && i < n; i++) {
		v[i].vaddr = BASE + i;
		v[i].size = 1;
		v[i].flags = DCPI_INSN_RET;
	}
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), NULL, &g), -EFBIG, "a procedure too large: EFBIG");
	T_OK(strstr(dcpi_errmsg(), "basic blocks") != NULL, "the message says why: %s",
	     dcpi_errmsg());
	free(v);

	memset(rows, 0, sizeof(rows));
	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 3; i++) {
		rows[i].insn.vaddr = BASE + (uint64_t)i;
		rows[i].insn.size = 1;
	}
	rows[1].insn.flags = DCPI_INSN_BAD;
	a.lo = BASE;
	a.hi = BASE + 3;
	a.insns = rows;
	a.ninsns = 3;
	a.has_code = 1;
	T_EQ(dcpi_calc_annotation(NULL, &a, &cols, &c), -ENOEXEC, "undecodable bytes: ENOEXEC");
	T_OK(strstr(dcpi_errmsg(), "0x1001 do not decode") != NULL, "the message names them: %s",
	     dcpi_errmsg());
	a.has_code = 0;
	T_EQ(dcpi_calc_annotation(NULL, &a, &cols, &c), -ENODATA, "no code: ENODATA");
}

int main(void)
{
	test_refusals();
	test_flow();
	test_flow_random();
	test_cfg_loop();
	test_cfg_shared_header();
	test_cfg_partial_exit();
	test_cycle_classes_random();
	test_cfg_noreturn();
	test_cfg_table();
	test_cfg_bad();
	test_cost();
	test_cost_path();
	test_flow_proportional();
	test_estimate();
	test_skid();
	test_clock_scale();
	test_timer_moved();
	test_no_firm_side();
	test_cpi_digits();
	test_ran();
	return t_done();
}
