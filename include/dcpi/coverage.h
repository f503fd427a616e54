/* Which basic blocks and source lines of a procedure ran, from its
 * estimated (calc.h) or exact (dcpix) block counts.
 *
 * A block ran when its count is at least DCPI_COVERAGE_MIN (executions,
 * or relative units where the hottest block is DCPI_CALC_REL_SCALE): a
 * block the graph gives flow to ran even without samples of its own; one
 * the graph gave none ran when its own samples say so (dcpicalc's ">0",
 * DCPI_CALC_WHY_RAN: dcpi_coverage_of_calc).  Then, since counts
 * estimated from samples miss blocks that ran too rarely to be sampled,
 * the graph implies more (block_ran 2): when any block ran the entry did;
 * the only predecessor of a block that ran ran before it; the only
 * successor of a block that ran (one that does not leave the procedure)
 * ran after it, a block's edges to itself aside (a loop is entered and,
 * when the procedure returned, left); repeated until nothing changes.  A
 * source line ran when any of its instructions is in a block that ran;
 * lines of no known file:line are not counted.
 *
 * Ownership: the result owns its two arrays (dcpi_coverage_free).
 */
#ifndef DCPI_COVERAGE_H
#define DCPI_COVERAGE_H

#include <stddef.h>

#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/cfg.h"

#define DCPI_COVERAGE_MIN 0.5

struct dcpi_coverage {
	size_t nblocks, blocks_ran;     /* blocks_ran counts implied ones too */
	size_t blocks_implied;
	size_t nlines, lines_ran;       /* lines with a known file:line */
	size_t ninsns, insns_ran;
	unsigned char *block_ran;       /* per block of g: 0, 1 (counted), 2 (implied) */
	unsigned char *line_ran;        /* per row of a->lines */
};

/* Coverage of annotation a whose graph is g (built on a's instructions),
 * freq per block (NULL: nothing ran).  0 or -ENOMEM; out zeroed then. */
int dcpi_coverage_of(const struct dcpi_annotation *a, const struct dcpi_cfg *g,
		     const double *freq, size_t freq_stride, struct dcpi_coverage *out);
/* The same from an estimate c of a's blocks: a block ran when its count
 * says so or its samples do (DCPI_CALC_WHY_RAN).  0 or -ENOMEM. */
int dcpi_coverage_of_calc(const struct dcpi_annotation *a, const struct dcpi_calc *c,
			  struct dcpi_coverage *out);
void dcpi_coverage_free(struct dcpi_coverage *c);

#endif
