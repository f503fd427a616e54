/* Amounts or shares over epochs, Welch's t-test and the Poisson test:
 * see dcpi/shares.h. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/hashtab.h>

#include "dcpi/error.h"
#include "dcpi/shares.h"
#include "internal.h"
#include "labels.h"

double dcpi_shares_t95(double df)
{
	static const double df_at[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
					17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
					40, 60, 120 };
	static const double t_at[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
				       2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
				       2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
				       2.060, 2.056, 2.052, 2.048, 2.045, 2.042, 2.021, 2.000,
				       1.980 };
	const size_t n = sizeof(df_at) / sizeof(df_at[0]);
	double x, x0, x1;
	size_t i;

	if (!(df >= 1))
		return t_at[0];
	for (i = 0; i < n && df_at[i] < df; i++)
		;
	if (i < n && df_at[i] == df)
		return t_at[i];
	if (i == n) { /* between 120 and infinity: 1.960 at 1/df = 0 */
		x = 1 / df, x1 = 1 / df_at[n - 1];
		return 1.960 + (t_at[n - 1] - 1.960) * x / x1;
	}
	/* df_at[i - 1] < df < df_at[i]: linear in 1/df */
	x = 1 / df, x0 = 1 / df_at[i - 1], x1 = 1 / df_at[i];
	return t_at[i] + (t_at[i - 1] - t_at[i]) * (x - x1) / (x0 - x1);
}

/* Above this many samples the normal approximation (with continuity
 * correction) decides as the exact test does at 95%, and the exact sum
 * would cost a step per sample. */
#define POISSON_EXACT_MAX 100000

double dcpi_shares_poisson_p(uint64_t a, double ea, uint64_t b, double eb)
{
	double n = (double)a + (double)b, p, q, lb, l, sum = 0, z;

	if (n == 0 || !(ea > 0) || !(eb > 0))
		return 1;
	p = eb / (ea + eb);
	q = 1 - p;
	if (!(p > 0) || !(q > 0))
		return 1;
	if (n > POISSON_EXACT_MAX) {
		z = (fabs((double)b - n * p) - 0.5) / sqrt(n * p * q);
		return z > 0 ? erfc(z / M_SQRT2) : 1;
	}
	/* log pmf(b), then every k whose pmf is at most that one's, each pmf
	   from the previous (pmf(k+1) = pmf(k) (n-k)/(k+1) p/q) */
	lb = lgamma(n + 1) - lgamma((double)b + 1) - lgamma(n - (double)b + 1) +
	     (double)b * log(p) + (n - (double)b) * log(q);
	l = n * log(q);
	for (double k = 0; k <= n; k++) {
		if (l <= lb + 1e-7)
			sum += exp(l);
		l += log((n - k) / (k + 1)) + log(p / q);
	}
	return sum < 1 ? sum : 1;
}

/* ---- rows --------------------------------------------------------------------- */

static hashval_t row_hash(const void *p)
{
	return dcpi_labels_hash((const char *const *)((const struct dcpi_shares_row *)p)->label, DCPI_SHARES_LABELS);
}

static int row_eq(const void *a, const void *b)
{
	return !dcpi_labels_cmp((const char *const *)((const struct dcpi_shares_row *)a)->label,
				(const char *const *)((const struct dcpi_shares_row *)b)->label, DCPI_SHARES_LABELS);
}

static void row_free(struct dcpi_shares_row *r)
{
	if (!r)
		return;
	dcpi_labels_free(r->label, DCPI_SHARES_LABELS);
	free(r->value[0]);
	free(r->value[1]);
	free(r);
}

static struct dcpi_shares_row *row_new(const struct dcpi_shares *s,
				       const struct dcpi_shares_row *key)
{
	struct dcpi_shares_row *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	for (int g = 0; g < 2; g++)
		if (s->nepochs[g] && !(r->value[g] = calloc(s->nepochs[g], sizeof(double))))
			goto fail;
	if (dcpi_labels_copy(r->label, (const char *const *)key->label, DCPI_SHARES_LABELS))
		goto fail;
	return r;
fail:
	row_free(r);
	return NULL;
}

static int row_get(struct dcpi_shares *s, const struct dcpi_shares_row *key,
		   struct dcpi_shares_row **out)
{
	void **slot;
	int err;

	if ((*out = htab_find(s->index, key)))
		return 0;
	if (!(*out = row_new(s, key)))
		return dcpi_error(ENOMEM, "out of memory");
	if ((err = DCPI_GROW(s->rows, s->cap, s->n + 1, SIZE_MAX, "rows")) ||
	    !(slot = htab_find_slot(s->index, key, INSERT))) {
		row_free(*out);
		return err ? err : dcpi_error(ENOMEM, "out of memory");
	}
	s->rows[s->n++] = *out;
	*slot = *out;
	return 0;
}

int dcpi_shares_init(struct dcpi_shares *s, size_t na, size_t nb)
{
	memset(s, 0, sizeof(*s));
	if (na == 0 || na > DCPI_SHARES_MAX_EPOCHS || nb > DCPI_SHARES_MAX_EPOCHS)
		return dcpi_error(EINVAL, "between 1 and %u epochs per group",
				  DCPI_SHARES_MAX_EPOCHS);
	s->nepochs[0] = na;
	s->nepochs[1] = nb;
	s->total[0] = calloc(na, sizeof(uint64_t));
	s->total[1] = calloc(nb ? nb : 1, sizeof(uint64_t));
	s->exposure[0] = malloc(na * sizeof(double));
	s->exposure[1] = malloc((nb ? nb : 1) * sizeof(double));
	s->index = htab_create_alloc(256, row_hash, row_eq, NULL, calloc, free);
	if (!s->total[0] || !s->total[1] || !s->exposure[0] || !s->exposure[1] || !s->index) {
		dcpi_shares_free(s);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (int g = 0; g < 2; g++)
		for (size_t e = 0; e < s->nepochs[g]; e++)
			s->exposure[g][e] = 1;
	return 0;
}

int dcpi_shares_set_exposure(struct dcpi_shares *s, int g, size_t e, double exposure)
{
	if (g < 0 || g > 1 || e >= s->nepochs[g] || !(exposure > 0))
		return dcpi_error(EINVAL, "no epoch %zu in group %d, or an exposure not above 0",
				  e, g);
	s->exposure[g][e] = exposure;
	return 0;
}

void dcpi_shares_free(struct dcpi_shares *s)
{
	for (size_t i = 0; i < s->n; i++)
		row_free(s->rows[i]);
	free(s->rows);
	free(s->total[0]);
	free(s->total[1]);
	free(s->exposure[0]);
	free(s->exposure[1]);
	if (s->index)
		htab_delete(s->index);
	memset(s, 0, sizeof(*s));
}

int dcpi_shares_add(struct dcpi_shares *s, int g, size_t e, const char *const *labels,
		    size_t nlabels, uint64_t count, uint64_t total)
{
	struct dcpi_shares_row key, *r = NULL;
	int err;

	if (g < 0 || g > 1 || e >= s->nepochs[g])
		return dcpi_error(EINVAL, "no epoch %zu in group %d", e, g);
	memset(&key, 0, sizeof(key));
	for (size_t i = 0; i < nlabels && i < DCPI_SHARES_LABELS; i++)
		key.label[i] = (char *)labels[i];
	if ((err = row_get(s, &key, &r)))
		return err;
	s->total[g][e] = total;
	r->g[g].samples = dcpi_sat_add(r->g[g].samples, count); /* over epochs: may not fit */
	if (s->by_share)
		r->value[g][e] += total ? 100.0 * (double)count / (double)total : 0;
	else
		r->value[g][e] += (double)count / s->exposure[g][e];
	return 0;
}

/* ---- statistics --------------------------------------------------------------- */

static void group_stats(const struct dcpi_shares *s, int g, struct dcpi_shares_row *r)
{
	struct dcpi_shares_group *st = &r->g[g];
	size_t n = s->nepochs[g];
	double sum = 0, ss = 0, noise = 0;

	st->min = st->max = r->value[g][0];
	for (size_t e = 0; e < n; e++) {
		double v = r->value[g][e], t = (double)s->total[g][e], x = s->exposure[g][e];

		sum += v;
		st->min = v < st->min ? v : st->min;
		st->max = v > st->max ? v : st->max;
		if (s->by_share && t > 0) /* p(1-p)/T, in percent^2 */
			noise += v * (100 - v) / t;
		else if (!s->by_share) /* Poisson: var(N / x) = N / x^2 = v / x */
			noise += v / x;
	}
	st->mean = sum / (double)n;
	for (size_t e = 0; e < n; e++)
		ss += (r->value[g][e] - st->mean) * (r->value[g][e] - st->mean);
	st->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	st->noisevar = noise / (double)n;
}

/* B - A, its interval and verdict (see the top of dcpi/shares.h). */
static void compare(const struct dcpi_shares *s, struct dcpi_shares_row *r)
{
	size_t na = s->nepochs[0], nb = s->nepochs[1];
	double va, vb, a, b, se, t;

	r->diff = r->g[1].mean - r->g[0].mean;
	if (na < 2 || nb < 2) {
		se = sqrt(r->g[0].noisevar + r->g[1].noisevar);
		r->lo = r->diff - 1.96 * se;
		r->hi = r->diff + 1.96 * se;
		r->df = 0;
		r->verdict = DCPI_SHARES_NOT_COMPUTED;
		return;
	}
	va = fmax(r->g[0].sd * r->g[0].sd, r->g[0].noisevar);
	vb = fmax(r->g[1].sd * r->g[1].sd, r->g[1].noisevar);
	a = va / (double)na;
	b = vb / (double)nb;
	se = sqrt(a + b);
	r->df = a + b > 0 ? (a + b) * (a + b) /
			    (a * a / (double)(na - 1) + b * b / (double)(nb - 1)) : 1;
	t = dcpi_shares_t95(r->df);
	r->lo = r->diff - t * se;
	r->hi = r->diff + t * se;
	r->verdict = r->lo > 0 || r->hi < 0 ? DCPI_SHARES_DIFFERENT : DCPI_SHARES_SAME;
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
	int two_groups = *(const int *)arg;
	const struct dcpi_shares_row *a = *(struct dcpi_shares_row *const *)x;
	const struct dcpi_shares_row *b = *(struct dcpi_shares_row *const *)y;
	double ka = two_groups ? fabs(a->diff) : a->g[0].mean;
	double kb = two_groups ? fabs(b->diff) : b->g[0].mean;

	if (ka != kb)
		return ka > kb ? -1 : 1;
	return dcpi_labels_cmp((const char *const *)a->label, (const char *const *)b->label,
			       DCPI_SHARES_LABELS);
}

void dcpi_shares_finish(struct dcpi_shares *s)
{
	int two_groups = s->nepochs[1] > 0;

	for (size_t i = 0; i < s->n; i++) {
		struct dcpi_shares_row *r = s->rows[i];

		for (int g = 0; g < 2; g++)
			if (s->nepochs[g])
				group_stats(s, g, r);
		if (s->nepochs[1])
			compare(s, r);
	}
	if (s->n)
		qsort_r(s->rows, s->n, sizeof(*s->rows), cmp_rows, &two_groups);
}
