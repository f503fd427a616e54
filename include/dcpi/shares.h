/* How amounts (or shares) vary over epochs, and whether two groups of
 * epochs differ: what dcpistats prints.
 *
 * Per row (an image or a procedure, keyed by up to three labels) and per
 * epoch, the value is by default the row's amount: its samples divided by
 * the epoch's exposure (1, so samples, unless the caller sets seconds or
 * CPU-seconds with dcpi_shares_set_exposure).  With by_share set it is
 * the row's samples as a percent of that epoch's total instead.  A row
 * absent from an epoch has value 0 there.  Per group of epochs: the mean,
 * its sample standard deviation, min and max.
 *
 * Why amounts by default: a share moves when anything else changes (a
 * procedure that took exactly the same samples "grows" when another one
 * gets cheaper); an amount moves only when the row itself does.
 *
 * Two groups are compared with Welch's t-test on the per-epoch values, at
 * 95%: the difference of the means (B - A), its 95% confidence interval,
 * and significant when the interval excludes 0.  Sampling noise within an
 * epoch: an amount of N samples varies by at least the Poisson N (a share
 * measured from T samples by the binomial p(1-p)/T) from run to run, so
 * each group's variance is taken as the larger of its observed variance
 * and its mean sampling variance; a group whose epochs happen to agree
 * exactly does not make a difference certain.
 *
 * With fewer than two epochs in a group no t-test can be made from one run
 * (the run-to-run variation is unknown): then significant is "not
 * computed" and the interval is the sampling error alone (+-1.96 standard
 * errors), which says how precisely each value was measured, not whether
 * the programs differ.
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
	double mean, sd, min, max;      /* of the values; sd 0 with one epoch */
	double noisevar;                /* mean sampling variance of one epoch's
					   value (Poisson, or binomial for shares) */
	uint64_t samples;               /* over the group's epochs */
};

struct dcpi_shares_row {
	char *label[DCPI_SHARES_LABELS];
	double *value[2];               /* per epoch of each group: amount, or
					   share in percent */
	struct dcpi_shares_group g[2];
	double diff, lo, hi;            /* two groups: B - A and its 95% interval */
	double df;                      /* Welch's degrees of freedom (0: none) */
	int verdict;                    /* enum dcpi_shares_verdict */
};

struct dcpi_shares {
	int by_share;                   /* compare shares, not amounts; set
					   before the first add */
	size_t nepochs[2];              /* per group; nepochs[1] 0: one group */
	uint64_t *total[2];             /* per epoch */
	double *exposure[2];            /* per epoch: what an amount is per (1) */
	struct dcpi_shares_row **rows;
	size_t n, cap;
	void *index;                    /* private */
};

/* Groups of na and nb epochs (nb 0: one group).  0, -EINVAL (no epoch, or
 * more than DCPI_SHARES_MAX_EPOCHS), -ENOMEM. */
int dcpi_shares_init(struct dcpi_shares *s, size_t na, size_t nb);
void dcpi_shares_free(struct dcpi_shares *s);

/* The exposure of epoch e of group g (> 0; 1 until set): amounts are
 * samples / exposure.  -EINVAL for no such epoch or exposure <= 0. */
int dcpi_shares_set_exposure(struct dcpi_shares *s, int g, size_t e, double exposure);

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

/* Whether counts a and b, each a Poisson count over its exposure (ea,
 * eb > 0: equal for plain samples, seconds for rates, each side's total
 * samples for shares), came from one rate: the two-sided p-value of the
 * exact conditional test (given n = a + b, b is binomial(n, eb / (ea +
 * eb)) under that hypothesis).  1 when n is 0 or an exposure is not
 * positive.  Sampling noise only: it says nothing of how runs vary. */
double dcpi_shares_poisson_p(uint64_t a, double ea, uint64_t b, double eb);

#endif
