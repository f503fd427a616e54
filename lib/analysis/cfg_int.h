/* Private to the CFG module (cfg.c, cfg_table.c, cfg_classes.c, cfg_cycles.c). */
#ifndef DCPI_CFG_INT_H
#define DCPI_CFG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dcpi/cfg.h"

struct cfg_ctx {
	const char *base;            /* the instructions, stride bytes apart */
	size_t n, stride;
	struct dcpi_cfg_opts o;
	const char *arch_hint;
};

#define CFG_INSN(c, i) ((const struct dcpi_insn *)(const void *)((c)->base + (i) * (c)->stride))

/* The instruction starting at v, or c->n. */
size_t cfg_insn_index(const struct cfg_ctx *c, uint64_t v);
/* The targets of the indirect jump insns[j] when it reads a recognised
 * jump table: 0 with *targets (malloc'd) and *n, *n 0 when not one;
 * -ENOMEM. */
int cfg_jump_table(const struct cfg_ctx *c, size_t j, uint64_t **targets, size_t *n);
/* Reachability, loops and equivalence classes of a built graph. */
int cfg_classes(struct dcpi_cfg *g);
/* Cycle equivalence: nodes v of a graph of nn nodes and ne edges
 * from[e] -> to[e], with keep[v] set (every one on a path from root and
 * back to it; edges to or from others are left out), get in cls[v] the
 * same number exactly when they lie on the same cycles, so that every
 * circulation through root passes them equally often; the others get
 * SIZE_MAX.  Class numbers are not dense.  0, or -ENOMEM. */
int cfg_cycle_classes(size_t nn, const size_t *from, const size_t *to, size_t ne, size_t root,
		      const unsigned char *keep, size_t *cls);

#endif
