/* Two profile sets compared: what dcpidiff prints.
 *
 * Rows are keyed by up to three labels (image, procedure, pid; or file and
 * line; or an address): the caller adds what side A and side B counted
 * under each key, then dcpi_diff_finish computes, per row, each side's
 * share of its own total (so a longer epoch does not look like more time),
 * the change in share in percentage points (B - A) and the ratio of the
 * shares (B / A), and orders the rows by the size of the change, largest
 * first.  Raw counts are kept beside the shares.
 *
 * A row only one side has is "new" (ratio infinite: has_ratio 0) or
 * "gone" (ratio 0).  Nothing is estimated here: shares are the sampled
 * fractions; whether a change is more than sampling noise is dcpistats'
 * question (shares.h).
 *
 * Ownership: the diff owns its rows and their labels.  Not thread-safe.
 */
#ifndef DCPI_DIFF_H
#define DCPI_DIFF_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_DIFF_LABELS 3

struct dcpi_diff_row {
	char *label[DCPI_DIFF_LABELS];   /* NULL past the labels the caller used */
	uint64_t a, b;                   /* samples on each side */
	double pa, pb;                   /* shares of each side's total, percent */
	double delta_pp;                 /* pb - pa, percentage points */
	double ratio;                    /* pb / pa when has_ratio */
	int has_ratio;                   /* 0 when pa is 0 (new in B) */
};

struct dcpi_diff {
	struct dcpi_diff_row **rows;
	size_t n, cap;
	uint64_t total_a, total_b;       /* of every row added */
	void *index;                     /* private */
};

void dcpi_diff_init(struct dcpi_diff *d);
void dcpi_diff_free(struct dcpi_diff *d);

/* Add count to the row of the labels (NULL entries end the list) on side
 * 0 (A) or 1 (B).  0, or -ENOMEM. */
int dcpi_diff_add(struct dcpi_diff *d, int side, const char *const *labels, size_t nlabels,
		  uint64_t count);
/* Shares, changes and order (see the top of this file). */
void dcpi_diff_finish(struct dcpi_diff *d);

#endif
