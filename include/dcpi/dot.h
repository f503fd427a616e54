/* One procedure's annotated control-flow graph (calc.h) as Graphviz DOT.
 *
 * One node per basic block, named B0..Bn-1 as dcpicalc names them; the
 * outside and unknown nodes are not drawn (their edges are left out, and
 * blocks entered from outside say "entry").  A block's font size grows
 * with its execution count, its area with its share of the procedure's
 * samples, and its fill colour with that share (white to red: the heat).
 * Blocks holding less than cutoff percent of the samples shrink to a
 * small stub labelled with their name.  A graph of more than
 * DCPI_DOT_LARGE blocks gets layout bounds for speed (dot spends most of
 * its time routing splines).  Edges are drawn thicker by count
 * and labelled with it; an estimate is printed to the digits its
 * confidence carries (dcpi_count_str).  A block's source lines, when
 * given, close its label.  Names and labels are escaped for DOT; a layout
 * bound (nslimit, mclimit) keeps dot's work bounded on large graphs.
 */
#ifndef DCPI_DOT_H
#define DCPI_DOT_H

#include <stdint.h>
#include <stdio.h>

#include "dcpi/calc.h"

/* Past this many blocks a graph is laid out for time: straight edges,
 * short searches (nslimit=2, mclimit=0.2, splines=line). */
#define DCPI_DOT_LARGE 100

struct dcpi_dot_opts {
	const char *title;              /* the procedure's name, or NULL */
	const uint64_t *block_samples;  /* per block, of the estimating event */
	double cutoff;                  /* percent, 0..100 */
	const char *const *block_src;   /* per block, its source lines as DCPI's
					   dcpisource drew them, '\n' between
					   them; NULL (or a NULL entry): none */
};

/* Write c as DOT to f: 0, or -EIO when writing failed. */
int dcpi_dot_write(FILE *f, const struct dcpi_calc *c, const struct dcpi_dot_opts *o);

#endif
