/* Basic blocks of an annotated procedure: maximal runs of instructions
 * entered only at the first and left only at the last.  A block starts at
 * the procedure's first instruction, at every direct jump's target inside
 * the procedure, and after every jump, return or trap; calls do not end a
 * block (control comes back).  Indirect jumps' targets are unknown here, so
 * a block they enter is found only when another rule starts it: the
 * blocks may be too long there, never cut wrongly.
 *
 * Only for annotations with code (has_code); without it there are no
 * instructions to split and the whole range is one block. */
#ifndef DCPI_BLOCKS_H
#define DCPI_BLOCKS_H

#include <stddef.h>

#include "dcpi/annotate.h"

/* The index in a->insns of each block's first instruction, ascending, in
 * a malloc'd array the caller frees.  0, or -ENOMEM. */
int dcpi_blocks_split(const struct dcpi_annotation *a, size_t **starts, size_t *n);

#endif
