/* Stall culprits by static rules: see dcpi/stall.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "dcpi/cost.h"
#include "dcpi/error.h"
#include "dcpi/stall.h"

static const char codes[DCPI_STALL_NKINDS + 1] = "iIdDwpfsm?";
static const char *const names[DCPI_STALL_NKINDS + 1] = {
	"I-cache miss", "ITLB miss", "D-cache miss", "DTLB miss", "write buffer",
	"branch mispredict", "functional unit", "synchronisation", "microcode",
	"unexplained",
};

char dcpi_stall_code(enum dcpi_stall_kind k)
{
	return codes[(unsigned)k <= DCPI_STALL_NKINDS ? k : DCPI_STALL_NKINDS];
}

const char *dcpi_stall_name(enum dcpi_stall_kind k)
{
	return names[(unsigned)k <= DCPI_STALL_NKINDS ? k : DCPI_STALL_NKINDS];
}

int dcpi_stall_kind_of(char code)
{
	const char *p = code ? memchr(codes, code, DCPI_STALL_NKINDS) : NULL;

	return p && p - codes < DCPI_STALL_NKINDS ? (int)(p - codes) : -1;
}

int dcpi_stall_event_kind(const char *event)
{
	static const struct { const char *name; int kind; } ev[] = {
		{ "cache-misses", DCPI_STALL_DCACHE },
		{ "L1-dcache-load-misses", DCPI_STALL_DCACHE },
		{ "LLC-load-misses", DCPI_STALL_DCACHE },
		{ "dTLB-load-misses", DCPI_STALL_DTLB },
		{ "iTLB-load-misses", DCPI_STALL_ITLB },
		{ "L1-icache-load-misses", DCPI_STALL_ICACHE },
		{ "branch-misses", DCPI_STALL_BRANCH },
	};

	for (size_t i = 0; event && i < sizeof(ev) / sizeof(ev[0]); i++)
		if (!strcmp(event, ev[i].name))
			return ev[i].kind;
	return -1;
}

void dcpi_stall_codes(unsigned mask, char *buf)
{
	size_t n = 0;

	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		if (mask & (1u << k))
			buf[n++] = codes[k];
	if (!n)
		buf[n++] = '?';
	buf[n] = 0;
}

void dcpi_stall_add(struct dcpi_stall_sum *sum, const struct dcpi_stall_insn *s, double stall)
{
	unsigned m = s->culprits;

	if (!(stall > 0))
		return;
	sum->total += stall;
	if (!m) {
		sum->unexplained += stall;
		return;
	}
	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		if (!(m & (1u << k)))
			continue;
		sum->max[k] += stall;
		if (!(m & (m - 1)))
			sum->min[k] += stall;
	}
}

double dcpi_stall_samples(const struct dcpi_calc *c, const uint64_t *time, size_t i)
{
	const struct dcpi_calc_insn *ci = &c->insns[i];

	if (!time || ci->cpi <= 0 || ci->stall <= 0)
		return 0;
	return (double)time[i] * ci->stall / ci->cpi;
}

/* ---- the walk ------------------------------------------------------------------------ */

struct ctx {
	const struct dcpi_stall_input *in;
	size_t *pred_start, *preds;     /* in-edges of each block: preds[pred_start[b]..] */
	size_t *blk;                    /* block of each instruction */
	size_t *seen;                   /* == gen: its evidence counted for this one */
	size_t gen;
};

struct pos {
	size_t j;                       /* instruction */
	unsigned dist;                  /* from the explained one, >= 1 */
	uint16_t regs[DCPI_INSN_MAX_REGS];  /* registers still sought */
	uint8_t nregs;
};

static const struct dcpi_insn *insn(const struct dcpi_stall_input *in, size_t i)
{
	return (const struct dcpi_insn *)(const void *)((const char *)in->insns + i * in->stride);
}

static int pointer_reg(const struct dcpi_stall_input *in, unsigned r)
{
	if (in->arch && strcmp(in->arch, "x86-64") && strcmp(in->arch, "i386"))
		return r == ARM64_REG_SP;
	return r == X86_REG_RSP || r == X86_REG_RIP;
}

static void mark(struct dcpi_stall_insn *o, int k, size_t j)
{
	if (!(o->possible & (1u << k)))
		o->blame[k] = j;
	o->possible |= 1u << k;
}

/* The rules of the class of instruction j (the explained one or one behind it). */
static void class_rules(const struct dcpi_stall_input *in, size_t j, struct dcpi_stall_insn *o)
{
	const struct dcpi_cost_class *c = dcpi_cost_class(in->arch, insn(in, j));

	if (c->port == DCPI_PORT_DIV)
		mark(o, DCPI_STALL_FU, j);
	else if (!strcmp(c->name, "locked") || !strcmp(c->name, "fence"))
		mark(o, DCPI_STALL_SYNC, j);
	else if (c->port == DCPI_PORT_MICRO)
		mark(o, DCPI_STALL_MICRO, j);
}

static void memory_rules(const struct dcpi_insn *x, size_t j, struct dcpi_stall_insn *o)
{
	if (x->flags & DCPI_INSN_LOAD) {
		mark(o, DCPI_STALL_DCACHE, j);
		mark(o, DCPI_STALL_DTLB, j);
	}
	if (x->flags & DCPI_INSN_STORE)
		mark(o, DCPI_STALL_WRITE, j);
}

/* Registers of p->regs that x writes leave the sought set; a load
 * writing one is a def-use culprit. */
static void defuse(const struct dcpi_insn *x, size_t j, struct pos *p, struct dcpi_stall_insn *o)
{
	uint8_t k = 0;

	for (uint8_t r = 0; r < p->nregs; r++) {
		int hit = 0;

		for (uint8_t w = 0; w < x->nregs_write; w++)
			hit |= x->regs_write[w] == p->regs[r];
		if (!hit)
			p->regs[k++] = p->regs[r];
		else if (x->flags & DCPI_INSN_LOAD)
			memory_rules(&(struct dcpi_insn){ .flags = DCPI_INSN_LOAD }, j, o);
	}
	p->nregs = k;
}

/* Entry rules for i, near the start of its block b: what the blocks
 * entering it ended with. */
static void entry_rules(const struct ctx *x, size_t i, size_t b, struct dcpi_stall_insn *o)
{
	const struct dcpi_stall_input *in = x->in;
	const struct dcpi_cfg_block *bl = &in->cfg->blocks[b];
	uint64_t at = insn(in, i)->vaddr;

	if (i - bl->first >= DCPI_STALL_ENTRY)
		return;
	for (size_t e = x->pred_start[b]; e < x->pred_start[b + 1]; e++) {
		const struct dcpi_cfg_edge *ge = &in->cfg->edges[x->preds[e]];
		const struct dcpi_cfg_block *q = &in->cfg->blocks[ge->from];
		size_t j = q->first + q->ninsns - 1;
		const struct dcpi_insn *br = insn(in, j);

		if ((br->flags & DCPI_INSN_JUMP) && (br->flags & (DCPI_INSN_COND | DCPI_INSN_INDIRECT)))
			mark(o, DCPI_STALL_BRANCH, j);
		if (ge->kind != DCPI_EDGE_JUMP && ge->kind != DCPI_EDGE_TABLE)
			continue;
		if (br->vaddr >> 6 != at >> 6)
			mark(o, DCPI_STALL_ICACHE, j);
		if (br->vaddr >> 12 != at >> 12)
			mark(o, DCPI_STALL_ITLB, j);
	}
}

/* Each instruction's evidence once, however many paths reach it. */
static void near_evidence(const struct ctx *x, size_t j, struct dcpi_stall_insn *o)
{
	const struct dcpi_stall_input *in = x->in;

	if (x->seen[j] == x->gen)
		return;
	x->seen[j] = x->gen;
	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		if (in->evidence[k])
			o->weight[k] += in->evidence[k][j];
}

/* Push the instructions executed just before p.j onto the stack. */
static size_t push_back(const struct ctx *x, const struct pos *p, struct pos *st, size_t sp,
			size_t cap)
{
	size_t b = x->blk[p->j];
	const struct dcpi_cfg_block *bl = &x->in->cfg->blocks[b];

	if (p->dist >= DCPI_STALL_WINDOW)
		return sp;
	if (p->j > bl->first) {
		if (sp < cap) {
			st[sp] = *p;
			st[sp].j = p->j - 1;
			st[sp++].dist = p->dist + 1;
		}
		return sp;
	}
	for (size_t e = x->pred_start[b]; e < x->pred_start[b + 1] && sp < cap; e++) {
		const struct dcpi_cfg_block *q = &x->in->cfg->blocks[x->in->cfg->edges[x->preds[e]].from];

		st[sp] = *p;
		st[sp].j = q->first + q->ninsns - 1;
		st[sp++].dist = p->dist + 1;
	}
	return sp;
}

static void explain(struct ctx *x, size_t i, struct dcpi_stall_insn *o)
{
	const struct dcpi_stall_input *in = x->in;
	const struct dcpi_insn *me = insn(in, i);
	struct pos st[DCPI_STALL_MAX_STEPS], p = { .j = i, .dist = 0 };
	size_t sp = 0, steps = 0;

	x->gen++;
	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		o->blame[k] = SIZE_MAX;
	memory_rules(me, i, o);
	class_rules(in, i, o);
	entry_rules(x, i, x->blk[i], o);
	near_evidence(x, i, o);
	for (uint8_t r = 0; r < me->nregs_read; r++)
		if (!pointer_reg(in, me->regs_read[r]))
			p.regs[p.nregs++] = me->regs_read[r];
	sp = push_back(x, &p, st, sp, DCPI_STALL_MAX_STEPS);
	while (sp > 0 && steps++ < DCPI_STALL_MAX_STEPS) {
		struct pos q = st[--sp];
		const struct dcpi_insn *y = insn(in, q.j);

		if (q.dist == 1)
			memory_rules(y, q.j, o);
		defuse(y, q.j, &q, o);
		class_rules(in, q.j, o);
		near_evidence(x, q.j, o);
		sp = push_back(x, &q, st, sp, DCPI_STALL_MAX_STEPS);
	}
}

/* Candidates with evidence of their own and none seen give way to those
 * with some. */
static void weigh(const struct dcpi_stall_input *in, struct dcpi_stall_insn *o)
{
	unsigned seen = 0, none = 0;

	for (int k = 0; k < DCPI_STALL_NKINDS; k++) {
		if (!(o->possible & (1u << k)) || !in->evidence[k])
			continue;
		if (o->weight[k] > 0)
			seen |= 1u << k;
		else
			none |= 1u << k;
	}
	o->culprits = seen ? o->possible & ~none : o->possible;
	o->measured = seen;
}

static int index_graph(struct ctx *x)
{
	const struct dcpi_cfg *g = x->in->cfg;
	size_t nb = g->nblocks;

	x->pred_start = calloc(nb + 2, sizeof(size_t));
	x->preds = calloc(g->nedges ? g->nedges : 1, sizeof(size_t));
	x->blk = calloc(x->in->n, sizeof(size_t));
	x->seen = calloc(x->in->n, sizeof(size_t));
	if (!x->pred_start || !x->preds || !x->blk || !x->seen)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t e = 0; e < g->nedges; e++)
		if (g->edges[e].from < nb && g->edges[e].to < nb)
			x->pred_start[g->edges[e].to + 2]++;
	for (size_t b = 0; b < nb; b++)
		x->pred_start[b + 2] += x->pred_start[b + 1];
	for (size_t e = 0; e < g->nedges; e++)
		if (g->edges[e].from < nb && g->edges[e].to < nb)
			x->preds[x->pred_start[g->edges[e].to + 1]++] = e;
	for (size_t b = 0; b < nb; b++)
		for (size_t i = g->blocks[b].first;
		     i < g->blocks[b].first + g->blocks[b].ninsns && i < x->in->n; i++)
			x->blk[i] = b;
	return 0;
}

int dcpi_stall_culprits(const struct dcpi_stall_input *in, struct dcpi_stall_insn *out)
{
	struct ctx x = { in, NULL, NULL, NULL, NULL, 0 };
	int err;

	if (!in->n || !in->cfg || !in->cfg->nblocks)
		return dcpi_error(EINVAL, "no instructions or no graph to explain stalls in");
	memset(out, 0, in->n * sizeof(*out));
	err = index_graph(&x);
	for (size_t i = 0; !err && i < in->n; i++) {
		if (in->want && !in->want[i])
			continue;
		explain(&x, i, &out[i]);
		weigh(in, &out[i]);
	}
	free(x.pred_start);
	free(x.preds);
	free(x.blk);
	free(x.seen);
	return err;
}

int dcpi_stall_avg_digits(const struct dcpi_calc *c, size_t i)
{
	const struct dcpi_calc_insn *ci = &c->insns[i];
	double q = dcpi_digits_quantum(ci->cpi, ci->digits);

	return q > 0 && ci->stall >= q / 2 ? dcpi_quantum_digits(ci->stall, q) : 0;
}

int dcpi_stall_total_digits(const struct dcpi_calc *c, size_t b, size_t i, double v,
			    double samples, double u)
{
	double et, eb, q;

	if (!(v > 0) || !(samples > 0) || b >= c->cfg.nblocks || i < c->cfg.blocks[b].first ||
	    i >= c->cfg.blocks[b].first + c->cfg.blocks[b].ninsns)
		return 0;
	et = u * sqrt(samples);
	eb = c->insns[i].best * dcpi_digits_quantum(c->blocks[b].freq, c->blocks[b].digits);
	q = pow(10, round(log10(fmax(et, eb))));
	return v >= q / 2 ? dcpi_quantum_digits(v, q) : 0;
}
