/* A reader of callgrind's output format (valgrind --tool=callgrind
 * --dump-instr=yes --collect-jumps=yes --compress-strings=no
 * --compress-pos=no): per object (ob=), the exact count of every
 * instruction executed (the first event, Ir) and of every jump taken,
 * by runtime address; and for each function (fn=) the lowest address it
 * ran, so that a caller can find where the object was loaded.
 *
 * Inclusive costs of calls (the line after calls=) are not an
 * instruction's own and are skipped; a jump's source is the position of
 * the line after jump= or jcnd=.  Compressed names ("(3) name") are
 * understood; relative positions ("+3", "-2", "*") too.  Anything else
 * that is not a cost line is ignored, as the format allows.
 *
 * Ownership: the result owns everything (dcpi_callgrind_free).
 * Bounds: at most DCPI_CALLGRIND_MAX_OBJS objects and the row caps of
 * exact.h; a line is at most 64 KiB. */
#ifndef DCPI_CALLGRIND_H
#define DCPI_CALLGRIND_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/exact.h"

#define DCPI_CALLGRIND_MAX_OBJS 4096

struct dcpi_callgrind_fn {
	char *name;
	uint64_t lo;          /* lowest runtime address it executed */
};

struct dcpi_callgrind_obj {
	struct dcpi_exact counts;       /* path set; runtime addresses; sorted */
	struct dcpi_callgrind_fn *fns;
	size_t nfns, fns_cap;
};

struct dcpi_callgrind {
	struct dcpi_callgrind_obj *objs;
	size_t nobjs, cap;
	uint64_t total;                 /* instructions counted in all */
};

/* Parse text[0..len).  0, or -EBADMSG (not callgrind output, or without
 * instruction positions: the message says to use --dump-instr=yes),
 * -ENOMEM, -E2BIG. */
int dcpi_callgrind_parse(const char *text, size_t len, struct dcpi_callgrind *out);
void dcpi_callgrind_free(struct dcpi_callgrind *cg);

#endif
