/* The control-flow graph of a procedure: see dcpi/cfg.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_int.h"
#include "dcpi/error.h"
#include "internal.h"

#define MAX_EDGES (DCPI_CFG_MAX_BLOCKS * 8 + DCPI_CFG_MAX_TABLE * 16)

struct build {
	struct cfg_ctx c;
	unsigned char *lead, *noret;
	uint64_t **tab;              /* per instruction: its jump table's targets */
	size_t *ntab;
	size_t *blk;                 /* per instruction: its block */
	size_t ecap;
};

size_t cfg_insn_index(const struct cfg_ctx *c, uint64_t v)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (CFG_INSN(c, mid)->vaddr < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && CFG_INSN(c, lo)->vaddr == v ? lo : c->n;
}

static const char *const noreturn_names[] = {
	"abort", "exit", "_exit", "_Exit", "quick_exit", "__stack_chk_fail",
	"__stack_chk_fail_local", "__assert_fail", "__assert_perror_fail", "__assert_rtn",
	"__assert", "__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid",
	"__cxa_throw_bad_array_new_length", "__cxa_pure_virtual", "_Unwind_Resume",
	"__fortify_fail", "__chk_fail", "err", "errx", "verr", "verrx", "pthread_exit",
	"longjmp", "siglongjmp", "_longjmp", "__longjmp_chk", "std::terminate()",
	"_ZSt9terminatev", "__ubsan_handle_builtin_unreachable", "__builtin_unreachable",
	"__libc_fatal", "panic", "__go_panic", "rust_panic", "_ZSt17__throw_bad_allocv",
	"_ZSt20__throw_length_errorPKc", "_ZSt24__throw_out_of_range_fmtPKcz",
	"_ZSt19__throw_logic_errorPKc", "_ZSt20__throw_out_of_rangePKc",
};

int dcpi_cfg_noreturn_name(const char *name)
{
	size_t len;

	if (!name)
		return 0;
	len = strcspn(name, "@");
	for (size_t i = 0; i < sizeof(noreturn_names) / sizeof(noreturn_names[0]); i++)
		if (strlen(noreturn_names[i]) == len && !strncmp(noreturn_names[i], name, len))
			return 1;
	return 0;
}

/* ---- leaders --------------------------------------------------------------------- */

static int ends_block(struct build *b, size_t i)
{
	const struct dcpi_insn *in = CFG_INSN(&b->c, i);

	if (in->flags & (DCPI_INSN_BAD | DCPI_INSN_TRAP | DCPI_INSN_JUMP | DCPI_INSN_RET))
		return 1;
	if ((in->flags & DCPI_INSN_CALL) && (in->flags & DCPI_INSN_DIRECT) && b->c.o.noreturn &&
	    b->c.o.noreturn(in->target, b->c.o.arg)) {
		b->noret[i] = 1;
		return 1;
	}
	return 0;
}

static int mark_leaders(struct build *b)
{
	const struct cfg_ctx *c = &b->c;

	b->lead[0] = 1;
	for (size_t k = 0; k < c->o.nentries; k++) {
		size_t t = cfg_insn_index(c, c->o.entries[k]);

		if (t < c->n)
			b->lead[t] = 1;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct dcpi_insn *in = CFG_INSN(c, i);
		size_t t;
		int err;

		if (ends_block(b, i) && i + 1 < c->n)
			b->lead[i + 1] = 1;
		if (!(in->flags & DCPI_INSN_JUMP))
			continue;
		if ((in->flags & DCPI_INSN_DIRECT) && (t = cfg_insn_index(c, in->target)) < c->n)
			b->lead[t] = 1;
		if (!(in->flags & DCPI_INSN_INDIRECT))
			continue;
		err = cfg_jump_table(c, i, &b->tab[i], &b->ntab[i]);
		if (err)
			return dcpi_error(ENOMEM, "out of memory");
		for (size_t k = 0; k < b->ntab[i]; k++)
			b->lead[cfg_insn_index(c, b->tab[i][k])] = 1;
	}
	return 0;
}

static int make_blocks(struct build *b, struct dcpi_cfg *g)
{
	const struct cfg_ctx *c = &b->c;
	size_t nb = 0;

	for (size_t i = 0; i < c->n; i++)
		nb += b->lead[i];
	if (nb > DCPI_CFG_MAX_BLOCKS)
		return dcpi_error(EFBIG, "the procedure has %zu basic blocks, more than the %zu "
				  "this analysis takes", nb, DCPI_CFG_MAX_BLOCKS);
	g->blocks = calloc(nb, sizeof(*g->blocks));
	if (!g->blocks)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0, k = SIZE_MAX; i < c->n; i++) {
		const struct dcpi_insn *in = CFG_INSN(c, i);

		if (b->lead[i]) {
			k = k == SIZE_MAX ? 0 : k + 1;
			g->blocks[k].start = in->vaddr;
			g->blocks[k].first = i;
			g->blocks[k].loop = SIZE_MAX;
		}
		g->blocks[k].ninsns++;
		g->blocks[k].end = in->vaddr + in->size;
		b->blk[i] = k;
	}
	g->nblocks = nb;
	return 0;
}

/* ---- edges ----------------------------------------------------------------------- */

static int add_edge(struct build *b, struct dcpi_cfg *g, size_t from, size_t to,
		    enum dcpi_cfg_edge_kind kind)
{
	int err = DCPI_GROW(g->edges, b->ecap, g->nedges + 1, MAX_EDGES, "control-flow edges");

	if (err)
		return err;
	g->edges[g->nedges++] = (struct dcpi_cfg_edge){ from, to, kind };
	return 0;
}

/* Edges of a jump at the end of block k. */
static int jump_edges(struct build *b, struct dcpi_cfg *g, size_t k, size_t i)
{
	const struct dcpi_insn *in = CFG_INSN(&b->c, i);
	size_t t, out = DCPI_CFG_OUTSIDE(g);
	int err = 0;

	g->blocks[k].end_kind = DCPI_END_JUMP;
	if (in->flags & DCPI_INSN_COND)
		err = add_edge(b, g, k, i + 1 < b->c.n ? k + 1 : out,
			       i + 1 < b->c.n ? DCPI_EDGE_FALL : DCPI_EDGE_EXIT);
	if (err)
		return err;
	if (in->flags & DCPI_INSN_DIRECT) {
		t = cfg_insn_index(&b->c, in->target);
		if (t < b->c.n && g->blocks[k].start == in->target)
			g->blocks[k].self_loop = 1;
		return add_edge(b, g, k, t < b->c.n ? b->blk[t] : out,
				t < b->c.n ? DCPI_EDGE_JUMP : DCPI_EDGE_EXIT);
	}
	if (b->ntab[i]) {
		g->ntables++;
		for (size_t e = 0; e < b->ntab[i] && !err; e++)
			err = add_edge(b, g, k, b->blk[cfg_insn_index(&b->c, b->tab[i][e])],
				       DCPI_EDGE_TABLE);
		return err;
	}
	g->nunresolved++;
	return add_edge(b, g, k, DCPI_CFG_UNKNOWN(g), DCPI_EDGE_UNKNOWN);
}

static int block_edges(struct build *b, struct dcpi_cfg *g, size_t k)
{
	size_t i = g->blocks[k].first + g->blocks[k].ninsns - 1, out = DCPI_CFG_OUTSIDE(g);
	const struct dcpi_insn *in = CFG_INSN(&b->c, i);
	struct dcpi_cfg_block *bl = &g->blocks[k];

	if (in->flags & (DCPI_INSN_BAD | DCPI_INSN_TRAP))
		bl->end_kind = DCPI_END_TRAP;
	else if (in->flags & DCPI_INSN_RET)
		bl->end_kind = DCPI_END_RET;
	else if (b->noret[i])
		bl->end_kind = DCPI_END_NORETURN;
	else if (in->flags & DCPI_INSN_JUMP)
		return jump_edges(b, g, k, i);
	else if (i + 1 < b->c.n)
		return add_edge(b, g, k, k + 1, DCPI_EDGE_FALL);
	else
		bl->end_kind = DCPI_END_RANGE;
	return add_edge(b, g, k, out, DCPI_EDGE_EXIT);
}

/* The unknown node may lead to any block nothing else enters, or out. */
static int unknown_edges(struct build *b, struct dcpi_cfg *g)
{
	unsigned char *entered;
	int err;

	if (!g->nunresolved)
		return 0;
	entered = calloc(g->nblocks, 1);
	if (!entered)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t e = 0; e < g->nedges; e++)
		if (g->edges[e].to < g->nblocks && g->edges[e].from != g->edges[e].to)
			entered[g->edges[e].to] = 1;
	entered[0] = 1;
	err = add_edge(b, g, DCPI_CFG_UNKNOWN(g), DCPI_CFG_OUTSIDE(g), DCPI_EDGE_UNKNOWN);
	for (size_t k = 0; k < g->nblocks && !err; k++)
		if (!entered[k])
			err = add_edge(b, g, DCPI_CFG_UNKNOWN(g), k, DCPI_EDGE_UNKNOWN);
	free(entered);
	return err;
}

static int edge_cmp(const void *pa, const void *pb)
{
	const struct dcpi_cfg_edge *a = pa, *b = pb;

	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	if (a->to != b->to)
		return a->to < b->to ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

static void sort_edges(struct dcpi_cfg *g)
{
	size_t k = 0;

	qsort(g->edges, g->nedges, sizeof(*g->edges), edge_cmp);
	for (size_t e = 0; e < g->nedges; e++)
		if (!k || g->edges[k - 1].from != g->edges[e].from ||
		    g->edges[k - 1].to != g->edges[e].to)
			g->edges[k++] = g->edges[e];
	g->nedges = k;
}

static int make_edges(struct build *b, struct dcpi_cfg *g)
{
	int err = add_edge(b, g, DCPI_CFG_OUTSIDE(g), 0, DCPI_EDGE_ENTRY);

	for (size_t k = 0; k < b->c.o.nentries && !err; k++) {
		size_t t = cfg_insn_index(&b->c, b->c.o.entries[k]);

		if (t < b->c.n)
			err = add_edge(b, g, DCPI_CFG_OUTSIDE(g), b->blk[t], DCPI_EDGE_ENTRY);
	}

	for (size_t k = 0; k < g->nblocks && !err; k++)
		err = block_edges(b, g, k);
	if (!err)
		err = unknown_edges(b, g);
	if (!err)
		sort_edges(g);
	return err;
}

/* ---- the graph ------------------------------------------------------------------- */

static void build_free(struct build *b)
{
	if (b->tab)
		for (size_t i = 0; i < b->c.n; i++)
			free(b->tab[i]);
	free(b->tab);
	free(b->ntab);
	free(b->lead);
	free(b->noret);
	free(b->blk);
}

int dcpi_cfg_build(const struct dcpi_insn *insns, size_t n, size_t stride,
		   const struct dcpi_cfg_opts *o, struct dcpi_cfg *g)
{
	struct build b;
	int err;

	memset(&b, 0, sizeof(b));
	b.c = (struct cfg_ctx){ (const char *)insns, n, stride, { 0 }, "x86-64" };
	memset(g, 0, sizeof(*g));
	if (n == 0 || !insns || stride < sizeof(*insns))
		return dcpi_error(EINVAL, "no instructions to build a control-flow graph of");
	if (o)
		b.c.o = *o;
	if (b.c.o.arch)
		b.c.arch_hint = b.c.o.arch;
	b.lead = calloc(n, 1);
	b.noret = calloc(n, 1);
	b.tab = calloc(n, sizeof(*b.tab));
	b.ntab = calloc(n, sizeof(*b.ntab));
	b.blk = calloc(n, sizeof(*b.blk));
	err = !b.lead || !b.noret || !b.tab || !b.ntab || !b.blk
		      ? dcpi_error(ENOMEM, "out of memory") : mark_leaders(&b);
	if (!err)
		err = make_blocks(&b, g);
	if (!err)
		err = make_edges(&b, g);
	if (!err)
		err = cfg_classes(g);
	build_free(&b);
	if (err)
		dcpi_cfg_free(g);
	return err;
}

void dcpi_cfg_free(struct dcpi_cfg *g)
{
	free(g->blocks);
	free(g->edges);
	memset(g, 0, sizeof(*g));
}

size_t dcpi_cfg_block_at(const struct dcpi_cfg *g, uint64_t vaddr)
{
	size_t lo = 0, hi = g->nblocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->blocks[mid].end <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nblocks && g->blocks[lo].start <= vaddr ? lo : g->nblocks;
}

size_t dcpi_cfg_out_edges(const struct dcpi_cfg *g, size_t v, size_t *n)
{
	size_t lo = 0, hi = g->nedges, first;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->edges[mid].from < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < g->nedges && g->edges[lo].from == v)
		lo++;
	*n = lo - first;
	return first;
}
