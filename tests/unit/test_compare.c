/* The comparison model: dcpi_diff (shares, points, ratios, new and gone
 * rows, order) and dcpi_shares (mean, sd, Welch's interval, the binomial
 * floor, one epoch a side) on numbers worked out by hand, and the t table. */
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
	T_OK(NEAR(d.rows[0]->delta_pp, -40, 1e-9) && NEAR(d.rows[0]->ratio, 20.0 / 60, 1e-9),
	     "f: -40 points, ratio 1/3");
	T_OK(!d.rows[1]->has_ratio && NEAR(d.rows[1]->pb, 30, 1e-9), "new: no ratio, 30%%");
	T_OK(d.rows[3]->has_ratio && d.rows[3]->ratio == 0 && d.rows[3]->b == 0, "gone: ratio 0");
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
	put(&s, 0, 0, "hot", 600, 1000);
	put(&s, 1, 0, "hot", 400, 1000);
	dcpi_shares_finish(&s);
	h = find(&s, "hot");
	T_EQ(h ? h->verdict : -9, DCPI_SHARES_NOT_COMPUTED, "one run a side: not computed");
	T_OK(h && NEAR(h->hi - h->diff, 1.96 * sqrt(4.8), 1e-9),
	     "the interval is the binomial error alone (+-1.96 x 2.19)");
	dcpi_shares_free(&s);
}

int main(void)
{
	test_diff();
	test_t95();
	test_shares();
	return t_done();
}
