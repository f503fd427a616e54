/* Private to the CFG module (cfg.c, cfg_table.c, cfg_classes.c). */
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

#endif
