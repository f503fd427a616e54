/* The labels of a profile set with their samples: what dcpilabel lists.
 * Rows are the distinct labels of the labelled profiles (dcpid -label),
 * or, with a key, the distinct values of that key ("xz" for comm); the
 * samples of unlabelled profiles are one row whose label is NULL.
 *
 * Ownership: the table owns its rows and strings.  Not thread-safe. */
#ifndef DCPI_LABELSUM_H
#define DCPI_LABELSUM_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profset.h"

struct dcpi_labelsum_row {
	char *label;            /* the label, or the key's value; NULL: unlabelled */
	size_t profiles;        /* profiles summed into the row */
	uint64_t c[DCPI_MAX_EVENTS]; /* by set column */
};

struct dcpi_labelsum {
	struct dcpi_labelsum_row *rows;
	size_t n, cap;
	uint64_t total[DCPI_MAX_EVENTS];
};

/* Sum set by label, or by the value of key by (NULL: whole labels; a
 * labelled profile without that key counts under "-").  0 or -ENOMEM. */
int dcpi_labelsum_build(struct dcpi_labelsum *t, const struct dcpi_profset *set,
			const char *by);
/* Most samples of column col first; ties by label, unlabelled last. */
void dcpi_labelsum_sort(struct dcpi_labelsum *t, int col);
void dcpi_labelsum_free(struct dcpi_labelsum *t);

#endif
