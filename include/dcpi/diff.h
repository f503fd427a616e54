/* Two profile sets compared: what dcpidiff prints.
 *
 * Rows are keyed by up to three labels (image, procedure, pid; or file and
 * line; or an address): the caller adds what side A and side B counted
 * under each key, then dcpi_diff_finish computes, per row:
 *  - each side's amount: its samples divided by the side's exposure
 *    (expo[]: 1 by default, so samples; the caller may set seconds of
 *    epoch or CPU-seconds when the sides' lengths differ), the change
 *    B - A and the ratio B / A of the amounts;
 *  - each side's share of its own total, the change in percentage points
 *    (B - A) and the ratio of the shares;
 *  - whether the change is more than sampling noise: the exact Poisson
 *    test of dcpi_shares_poisson_p at 95%, on the amounts (with the
 *    exposures), or with by_share on the shares (each side's total as its
 *    exposure).  It cannot see how runs vary: that is dcpistats'.
 * and orders the rows by the size of the change in the measure compared
 * (amount, or share with by_share), largest first.
 *
 * Why amounts by default: a share moves when anything else changes; a
 * procedure that took exactly as many samples in A as in B did not change.
 *
 * A row only one side has is "new" (ratio infinite: has_ratio 0) or
 * "gone" (ratio 0).
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
	double ra, rb;                   /* amounts: a / expo[0], b / expo[1] */
	double delta;                    /* rb - ra */
	double ratio;                    /* rb / ra when has_ratio */
	double pa, pb;                   /* shares of each side's total, percent */
	double delta_pp;                 /* pb - pa, percentage points */
	double share_ratio;              /* pb / pa when has_ratio */
	int has_ratio;                   /* 0 when a is 0 (new in B) */
	double p;                        /* the test's two-sided p-value */
	int significant;                 /* p < 0.05 */
};

struct dcpi_diff {
	struct dcpi_diff_row **rows;
	size_t n, cap;
	uint64_t total_a, total_b;       /* of every row added */
	double expo[2];                  /* each side's exposure (> 0; init: 1) */
	int by_share;                    /* test and order by share */
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
