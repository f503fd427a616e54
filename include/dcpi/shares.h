/* How shares vary over epochs, and whether two groups of epochs differ:
 * what dcpistats prints.
 *
 * Per row (an image or a procedure, keyed by up to three labels) and per
 * epoch, the share is the row's samples as a percent of that epoch's
 * total (a row absent from an epoch has share 0 there).  Per group of
 * epochs: the mean share, its sample standard deviation, min and max.
 *
 * Two groups are compared with Welch's t-test on the per-epoch shares, at
 * 95%: the difference of the means (B - A, percentage points), its 95%
 * confidence interval, and significant when the interval excludes 0.
 * Sampling noise within an epoch: a share measured from T samples varies
 * by at least the binomial p(1-p)/T from run to run, so each group's
 * variance is taken as the larger of its observed variance and its mean
 * binomial variance; a group whose epochs happen to agree exactly does not
 * make a difference certain.
 *
 * With fewer than two epochs in a group no t-test can be made from one run
 * (the run-to-run variation is unknown): then significant is "not
 * computed" and the interval is the binomial sampling error alone
 * (+-1.96 standard errors), which says how precisely each share was
 * measured, not whether the programs differ.
 *
 * Ownership: the table owns its rows and labels.  Not thread-safe.
 */
#ifndef DCPI_SHARES_H
#define DCPI_SHARES_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_SHARES_LABELS 3
#define DCPI_SHARES_MAX_EPOCHS 1024    /* per group */

enum dcpi_shares_verdict {
	DCPI_SHARES_NOT_COMPUTED = -1,  /* a group has fewer than 2 epochs */
	DCPI_SHARES_SAME = 0,           /* the interval holds 0 */
	DCPI_SHARES_DIFFERENT = 1,
};

struct dcpi_shares_group {
	double mean, sd, min, max;      /* percent; sd 0 with one epoch */
	double binvar;                  /* mean binomial variance of one epoch's
					   share, percent^2 */
	uint64_t samples;               /* over the group's epochs */
};

struct dcpi_shares_row {
	char *label[DCPI_SHARES_LABELS];
	double *share[2];               /* per epoch of each group, percent */
	struct dcpi_shares_group g[2];
	double diff, lo, hi;            /* two groups: B - A and its 95% interval */
	double df;                      /* Welch's degrees of freedom (0: none) */
	int verdict;                    /* enum dcpi_shares_verdict */
};

struct dcpi_shares {
	size_t nepochs[2];              /* per group; nepochs[1] 0: one group */
	uint64_t *total[2];             /* per epoch */
	struct dcpi_shares_row **rows;
	size_t n, cap;
	void *index;                    /* private */
};

/* Groups of na and nb epochs (nb 0: one group).  0, -EINVAL (no epoch, or
 * more than DCPI_SHARES_MAX_EPOCHS), -ENOMEM. */
int dcpi_shares_init(struct dcpi_shares *s, size_t na, size_t nb);
void dcpi_shares_free(struct dcpi_shares *s);

/* count samples of the row of the labels in epoch e of group g, whose
 * total is total (the same total for every call of that epoch). */
int dcpi_shares_add(struct dcpi_shares *s, int g, size_t e, const char *const *labels,
		    size_t nlabels, uint64_t count, uint64_t total);
/* Statistics and order: one group by mean share, two by the size of the
 * difference, largest first. */
void dcpi_shares_finish(struct dcpi_shares *s);

/* The two-sided 95% critical value of Student's t with df degrees of
 * freedom (df < 1 reads as 1): exact to 3 decimals at whole df up to 30
 * and at 40, 60, 120; in between linear in 1/df, which errs on the safe
 * (larger) side. */
double dcpi_shares_t95(double df);

#endif
