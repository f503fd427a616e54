/* Folded stacks for flame-graph tools (Brendan Gregg's flamegraph.pl,
 * inferno, speedscope): one line per distinct stack,
 *
 *   IMAGE;PROCEDURE[;INLINED...];FILE:LINE COUNT
 *
 * IMAGE is the image's short name (dcpi_profile_short_name), PROCEDURE as
 * dcpi_procs_name names it, then the functions inlined into it down to
 * the innermost, and the innermost source line (the last level is left
 * out when DWARF knows no line).  COUNT is the samples of one event.
 * Lines are sorted; a stack's counts over epochs, hosts and processes are
 * summed.  ';' inside a name becomes ':' and control bytes '?', so every
 * line splits the way the tools split it.  The counts add up to the
 * event's total over the chosen profiles. */
#ifndef DCPI_FOLDED_H
#define DCPI_FOLDED_H

#include <stdio.h>

#include "dcpi/callgraph.h"
#include "dcpi/obj.h"
#include "dcpi/profset.h"

/* Write the folded stacks of column col of the entries with chosen[i]
 * set (NULL: all) to f.  0, -ENOMEM, or -EIO when f failed. */
int dcpi_folded_write(FILE *f, const struct dcpi_profset *set, const unsigned char *chosen,
		      struct dcpi_objcache *objs, int col);

/* The call stacks of g instead, root first, one line per distinct stack:
 *
 *   IMAGE`PROCEDURE;IMAGE`PROCEDURE;...;IMAGE`PROCEDURE COUNT
 *
 * (IMAGE the image's file name), a stack whose walk stopped short of the
 * outermost frame starting with a frame "[copy ran out]" (or the other
 * ends of dcpi/stacks.h) that says so.  Sorted; names escaped as above. */
int dcpi_folded_write_stacks(FILE *f, const struct dcpi_callgraph *g, int col);

#endif
