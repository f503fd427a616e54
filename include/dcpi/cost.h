/* A static cost model: best-case cycles of an instruction and of a
 * basic block, per architecture.  DCPI's estimate of how often a block
 * ran from time samples alone rests on it (count <= cycles sampled /
 * best-case cycles, since stalls only add cycles), so every number here
 * errs low: a class takes the fast end of a measured range, and a block's
 * cost is a lower bound (the largest of a few resource bounds), never a
 * simulation.
 *
 * x86-64: about thirty instruction classes keyed by Capstone instruction
 * id, numbers for Intel Skylake from Agner Fog's instruction tables
 * (agner.org/optimize/instruction_tables.pdf, 2022) checked against
 * uops.info's SKL measurements; each class cites its row in cost.c.
 * AArch64: one generic class (a placeholder: single-issue costs from Arm's
 * Neoverse N1 Software Optimization Guide, section 3) until a table is
 * written; the bounds are then loose, still lower bounds.
 *
 * All results are plain values; nothing to free.
 */
#ifndef DCPI_COST_H
#define DCPI_COST_H

#include <stddef.h>

#include "dcpi/disasm.h"

/* Execution resources a class occupies (one bound each per block). */
enum dcpi_cost_port {
	DCPI_PORT_ALU,        /* any integer ALU (Skylake p0156) */
	DCPI_PORT_MUL,        /* the integer multiplier (p1) */
	DCPI_PORT_DIV,        /* the divider, not pipelined (p0) */
	DCPI_PORT_FP,         /* FP add/mul/FMA (p01) */
	DCPI_PORT_BRANCH,     /* branch units (p06) */
	DCPI_PORT_MICRO,      /* microcoded or serialising */
	DCPI_PORT_N,
};

struct dcpi_cost_class {
	const char *name;
	float uops;           /* fused-domain uops, register form */
	float latency;        /* cycles, register form (loads add DCPI_COST_LOAD_LAT) */
	float rthroughput;    /* reciprocal throughput, cycles */
	enum dcpi_cost_port port;
	int long_latency;     /* may take far longer than its latency (divide,
			         microcode, locked memory): stalls expected */
};

/* What a block's best case is bound by (dcpi_cost_block.bound). */
enum dcpi_cost_bound {
	DCPI_BOUND_ISSUE,     /* uops / issue width */
	DCPI_BOUND_LOAD,      /* loads / load ports */
	DCPI_BOUND_STORE,     /* stores / store ports */
	DCPI_BOUND_PORT,      /* one resource of enum dcpi_cost_port */
	DCPI_BOUND_CARRIED,   /* a self-loop's loop-carried dependency chain */
};

struct dcpi_cost_block {
	double cycles;        /* best-case cycles per execution, > 0 */
	enum dcpi_cost_bound bound;
	enum dcpi_cost_port port;   /* when bound is DCPI_BOUND_PORT */
	int long_latency;     /* holds a long-latency instruction */
	size_t loads, stores;
	double path;          /* the longest chain of dependent instructions
				 (through registers and flags; a load's hit
				 latency counted) of one execution alone:
				 what the block takes when nothing overlaps
				 it, as after a mispredicted branch */
};

/* The class of in on arch (dcpi_disasm_arch(); NULL is x86-64); never
 * NULL: unknown instructions get the "other" class. */
const struct dcpi_cost_class *dcpi_cost_class(const char *arch, const struct dcpi_insn *in);

/* Best-case cycles of one execution of the block insns[0..n-1] (stride
 * bytes apart, as dcpi_cfg_build takes them), with the loop-carried bound
 * when self_loop.  per_insn, when not NULL, gets each instruction's share
 * (by uops) of the block's cycles. */
void dcpi_cost_block(const char *arch, const struct dcpi_insn *insns, size_t n, size_t stride,
		     int self_loop, double *per_insn, struct dcpi_cost_block *out);

const char *dcpi_cost_bound_name(const struct dcpi_cost_block *b);

#endif
