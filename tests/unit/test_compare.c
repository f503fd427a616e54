/* The comparison model: dcpi_diff (amounts, shares, points, ratios, new and
 * gone rows, order, the Poisson test) and dcpi_shares (mean, sd, Welch's
 * interval, the Poisson and binomial floors, exposures, one epoch a side)
 * on numbers worked out by hand, the exact Poisson test against binomial
 * sums done by hand, and the t table. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dcpi/diff.h"
#include "dcpi/shares.h"
#include "tap.h"

#define NEAR(a, b, eps) (fabs((a) - (b)) < (eps))

static void add(struct dcpi_diff *d, int side, const char *l0, const char *l1, uint64_t n)
{
	const char *l[2] = { l0, l1 };

	T_EQ(dcpi_diff_add(d, side, l, l1 ? 2 : 1, n), 0, "add %s %s", l0, l1 ? l1 : "");
}

static void test_diff(void)
{
	struct dcpi_diff d;

	dcpi_diff_init(&d);
	d.by_share = 1;
	add(&d, 0, "img", "f", 60);
	add(&d, 0, "img", "g", 30);
	add(&d, 0, "img", "gone", 10);
	add(&d, 1, "img", "f", 100);
	add(&d, 1, "img", "g", 250);
	add(&d, 1, "img", "new", 150);
	add(&d, 1, "img", "f", 0);
	dcpi_diff_finish(&d);
	T_EQ(d.total_a, 100, "A's total");
	T_EQ(d.total_b, 500, "B's total");
	T_EQ(d.n, 4, "four rows: f, g, gone, new");
	/* g: 30% -> 50% (+20); f: 60% -> 20% (-40); new: 0 -> 30% (+30); gone: 10% -> 0 (-10) */
	T_OK(d.n == 4 && !strcmp(d.rows[0]->label[1], "f") && !strcmp(d.rows[1]->label[1], "new") &&
	     !strcmp(d.rows[2]->label[1], "g") && !strcmp(d.rows[3]->label[1], "gone"),
	     "ordered by the size of the change: f, new, g, gone");
	T_OK(NEAR(d.rows[0]->delta_pp, -40, 1e-9) && NEAR(d.rows[0]->share_ratio, 20.0 / 60, 1e-9),
	     "f: -40 points, share ratio 1/3");
	T_OK(NEAR(d.rows[0]->ratio, 100.0 / 60, 1e-9) && NEAR(d.rows[0]->delta, 40, 1e-9),
	     "f: the amount still rose 60 -> 100 (ratio 5/3, +40)");
	T_OK(!d.rows[1]->has_ratio && NEAR(d.rows[1]->pb, 30, 1e-9), "new: no ratio, 30%%");
	T_OK(d.rows[3]->has_ratio && d.rows[3]->ratio == 0 && d.rows[3]->b == 0, "gone: ratio 0");
	dcpi_diff_free(&d);

	/* work_a made 3x cheaper, work_b and work_c untouched: by amount only
	   work_a changed; by share the untouched ones "grow" 20% -> 33% */
	dcpi_diff_init(&d);
	add(&d, 0, "img", "work_a", 525);
	add(&d, 0, "img", "work_b", 175);
	add(&d, 0, "img", "work_c", 175);
	add(&d, 1, "img", "work_a", 175);
	add(&d, 1, "img", "work_b", 175);
	add(&d, 1, "img", "work_c", 175);
	dcpi_diff_finish(&d);
	T_OK(!strcmp(d.rows[0]->label[1], "work_a") && NEAR(d.rows[0]->delta, -350, 1e-9) &&
	     d.rows[0]->significant, "amounts: work_a -350, a significant decrease, first");
	T_OK(!d.rows[1]->significant && !d.rows[2]->significant && d.rows[1]->delta == 0 &&
	     d.rows[2]->delta == 0 && NEAR(d.rows[1]->p, 1, 1e-9) && NEAR(d.rows[2]->p, 1, 1e-9),
	     "amounts: work_b and work_c unchanged, not significant (p 1)");
	dcpi_diff_free(&d);
	dcpi_diff_init(&d);
	d.by_share = 1;
	add(&d, 0, "img", "work_a", 525);
	add(&d, 0, "img", "work_b", 175);
	add(&d, 1, "img", "work_a", 175);
	add(&d, 1, "img", "work_b", 175);
	dcpi_diff_finish(&d);
	T_OK(d.rows[0]->significant && d.rows[1]->significant,
	     "shares (on request): both move, as shares do");
	dcpi_diff_free(&d);

	/* exposures: 10 in 1 s and 20 in 2 s are one rate */
	dcpi_diff_init(&d);
	d.expo[0] = 1;
	d.expo[1] = 2;
	add(&d, 0, "img", "f", 10);
	add(&d, 1, "img", "f", 20);
	dcpi_diff_finish(&d);
	T_OK(NEAR(d.rows[0]->ra, 10, 1e-9) && NEAR(d.rows[0]->rb, 10, 1e-9) &&
	     d.rows[0]->delta == 0 && !d.rows[0]->significant, "per second: 10/s both, no change");
	dcpi_diff_free(&d);

	dcpi_diff_init(&d);
	add(&d, 1, "only-b", NULL, 5);
	dcpi_diff_finish(&d);
	T_OK(d.n == 1 && d.rows[0]->pa == 0 && NEAR(d.rows[0]->pb, 100, 1e-9),
	     "an empty side: shares 0, no division by zero");
	dcpi_diff_free(&d);
}

static void test_t95(void)
{
	T_OK(NEAR(dcpi_shares_t95(1), 12.706, 1e-9), "t(1)");
	T_OK(NEAR(dcpi_shares_t95(4), 2.776, 1e-9), "t(4)");
	T_OK(NEAR(dcpi_shares_t95(30), 2.042, 1e-9), "t(30)");
	T_OK(NEAR(dcpi_shares_t95(120), 1.980, 1e-9), "t(120)");
	T_OK(dcpi_shares_t95(1e9) < 1.9601 && dcpi_shares_t95(1e9) >= 1.96, "t(inf) = 1.96");
	T_OK(dcpi_shares_t95(4.5) < 2.776 && dcpi_shares_t95(4.5) > 2.571, "between df 4 and 5");
	T_OK(dcpi_shares_t95(4.5) >= 2.6589 && dcpi_shares_t95(4.5) < 2.67,
	     "in 1/df: just on the wide side of the true 2.6589");
	T_OK(dcpi_shares_t95(1.5) >= 6.0167, "and at df 1.5 (true 6.0167)");
	T_OK(NEAR(dcpi_shares_t95(0.2), 12.706, 1e-9), "df < 1 reads as 1");
}

static void test_poisson(void)
{
	/* equal exposures: b is binomial(n, 1/2); sums of C(n,k) / 2^n */
	T_OK(NEAR(dcpi_shares_poisson_p(10, 1, 0, 1), 2.0 / 1024, 1e-12), "10 vs 0: p = 2/1024");
	T_OK(NEAR(dcpi_shares_poisson_p(3, 1, 7, 1), 352.0 / 1024, 1e-12),
	     "3 vs 7: p = 2 (1 + 10 + 45 + 120) / 1024");
	T_OK(NEAR(dcpi_shares_poisson_p(5, 1, 5, 1), 1, 1e-12), "5 vs 5: p = 1");
	T_OK(NEAR(dcpi_shares_poisson_p(175, 1, 175, 1), 1, 1e-12), "175 vs 175: p = 1");
	/* 10 in 1 and 20 in 2: the mode of binomial(30, 2/3) */
	T_OK(NEAR(dcpi_shares_poisson_p(10, 1, 20, 2), 1, 1e-9), "one rate over unequal exposures");
	/* n = 1, b ~ binomial(1, 3/4): P(b = 0) = 1/4, and P(1) = 3/4 is larger */
	T_OK(NEAR(dcpi_shares_poisson_p(1, 1, 0, 3), 0.25, 1e-12),
	     "1 vs 0 over 1 and 3: p = P(b = 0) = 1/4");
	T_EQ(dcpi_shares_poisson_p(0, 1, 0, 1), 1, "nothing on either side: p = 1");
	T_EQ(dcpi_shares_poisson_p(4, 0, 1, 1), 1, "no exposure: p = 1");
	/* the normal approximation past 100000 samples: z = 499.5 / sqrt(50250) */
	T_OK(NEAR(dcpi_shares_poisson_p(100000, 1, 101000, 1), erfc(499.5 / sqrt(50250) / M_SQRT2),
		  1e-12) && dcpi_shares_poisson_p(100000, 1, 101000, 1) < 0.05,
	     "100000 vs 101000: normal approximation, p %.4f < 0.05",
	     dcpi_shares_poisson_p(100000, 1, 101000, 1));
	T_OK(dcpi_shares_poisson_p(200000, 1, 200200, 1) > 0.05, "200000 vs 200200: not significant");
}

static void put(struct dcpi_shares *s, int g, size_t e, const char *row, uint64_t n,
		uint64_t total)
{
	const char *l[1] = { row };

	T_EQ(dcpi_shares_add(s, g, e, l, 1, n, total), 0, "add %s", row);
}

static const struct dcpi_shares_row *find(const struct dcpi_shares *s, const char *row)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->rows[i]->label[0], row))
			return s->rows[i];
	return NULL;
}

static void test_shares(void)
{
	static const uint64_t hot[6] = { 600, 610, 590, 400, 410, 390 };
	const struct dcpi_shares_row *h, *c;
	struct dcpi_shares s;

	T_EQ(dcpi_shares_init(&s, 0, 3), -EINVAL, "no epoch in A: refused");
	T_EQ(dcpi_shares_init(&s, 3, 3), 0, "two groups of three");
	s.by_share = 1;
	for (int k = 0; k < 6; k++) {
		put(&s, k / 3, (size_t)(k % 3), "hot", hot[k], 1000);
		if (k != 2) /* absent from one epoch: share 0 there */
			put(&s, k / 3, (size_t)(k % 3), "cold", 100, 1000);
	}
	T_EQ(dcpi_shares_add(&s, 1, 3, (const char *[]){ "x" }, 1, 1, 1), -EINVAL,
	     "an epoch past the group: refused");
	dcpi_shares_finish(&s);
	h = find(&s, "hot");
	c = find(&s, "cold");
	T_OK(h && NEAR(h->g[0].mean, 60, 1e-9) && NEAR(h->g[0].sd, 1, 1e-9) &&
	     h->g[0].min == 59 && h->g[0].max == 61, "hot A: mean 60, sd 1, 59..61");
	/* var = max(1, binomial 2.3993) = 2.3993 per side, se 1.2647, df 4, t 2.776 */
	T_OK(h && NEAR(h->diff, -20, 1e-9) && NEAR(h->df, 4, 1e-6) &&
	     NEAR(h->hi - h->diff, 2.776 * sqrt(2 * 7198.0 / 3000 / 3), 1e-6),
	     "hot: -20 points, the binomial floor, Welch's df 4 (interval %.4f..%.4f)",
	     h ? h->lo : 0, h ? h->hi : 0);
	T_EQ(h ? h->verdict : -9, DCPI_SHARES_DIFFERENT, "hot changed significantly");
	T_OK(c && NEAR(c->g[0].mean, 20.0 / 3, 1e-9) && c->g[0].min == 0, "cold A: one epoch at 0");
	T_EQ(c ? c->verdict : -9, DCPI_SHARES_SAME, "cold: no significant change");
	T_OK(s.n == 2 && s.rows[0] == h, "ordered by the size of the difference");
	dcpi_shares_free(&s);

	T_EQ(dcpi_shares_init(&s, 1, 1), 0, "one epoch a side");
	s.by_share = 1;
	put(&s, 0, 0, "hot", 600, 1000);
	put(&s, 1, 0, "hot", 400, 1000);
	dcpi_shares_finish(&s);
	h = find(&s, "hot");
	T_EQ(h ? h->verdict : -9, DCPI_SHARES_NOT_COMPUTED, "one run a side: not computed");
	T_OK(h && NEAR(h->hi - h->diff, 1.96 * sqrt(4.8), 1e-9),
	     "the interval is the binomial error alone (+-1.96 x 2.19)");
	dcpi_shares_free(&s);
}

/* Amounts (the default): the same procedure's samples stay put while
 * another one's fall; per-epoch exposures divide. */
static void test_amounts(void)
{
	static const uint64_t a[6] = { 600, 610, 590, 200, 210, 190 };
	const struct dcpi_shares_row *h, *c;
	struct dcpi_shares s;

	T_EQ(dcpi_shares_init(&s, 3, 3), 0, "two groups of three");
	for (int k = 0; k < 6; k++) {
		put(&s, k / 3, (size_t)(k % 3), "work_a", a[k], a[k] + 200);
		put(&s, k / 3, (size_t)(k % 3), "work_b", 200, a[k] + 200);
	}
	dcpi_shares_finish(&s);
	h = find(&s, "work_a");
	c = find(&s, "work_b");
	T_OK(h && NEAR(h->g[0].mean, 600, 1e-9) && NEAR(h->g[0].sd, 10, 1e-9) &&
	     NEAR(h->g[0].noisevar, 600, 1e-9), "work_a A: mean 600, sd 10, Poisson floor 600");
	T_OK(h && NEAR(h->diff, -400, 1e-9) && h->verdict == DCPI_SHARES_DIFFERENT,
	     "work_a: -400 samples, significant");
	T_OK(c && c->diff == 0 && c->verdict == DCPI_SHARES_SAME,
	     "work_b: the same 200 samples: not significant (its share went 25%% -> 50%%)");
	dcpi_shares_free(&s);

	T_EQ(dcpi_shares_init(&s, 1, 1), 0, "one epoch a side");
	T_EQ(dcpi_shares_set_exposure(&s, 1, 0, 2), 0, "B lasted twice as long");
	T_EQ(dcpi_shares_set_exposure(&s, 1, 1, 2), -EINVAL, "no epoch 1 in B: refused");
	T_EQ(dcpi_shares_set_exposure(&s, 0, 0, 0), -EINVAL, "exposure 0: refused");
	put(&s, 0, 0, "f", 100, 100);
	put(&s, 1, 0, "f", 200, 200);
	dcpi_shares_finish(&s);
	h = find(&s, "f");
	T_OK(h && NEAR(h->g[1].mean, 100, 1e-9) && h->diff == 0 &&
	     NEAR(h->hi, 1.96 * sqrt(100 + 50), 1e-9),
	     "per second: 100/s both; interval the Poisson error (100 + 200/4)");
	T_EQ(h ? h->verdict : -9, DCPI_SHARES_NOT_COMPUTED, "one run a side: not computed");
	dcpi_shares_free(&s);
}

int main(void)
{
	test_diff();
	test_t95();
	test_poisson();
	test_shares();
	test_amounts();
	return t_done();
}
