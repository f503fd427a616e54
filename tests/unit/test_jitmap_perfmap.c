/* A perf map's reading, from the inside (lib/collect/jitmap_priv.h):
 *   - the JIT ranges' treap (jitmap_ranges.c) against the loadmap's
 *     sorted array (dcpi_lm_place), which places a range the same way:
 *     random placements over a small space, so that most overlap, and
 *     every boundary looked up in both; then a map listed backwards,
 *     which the array took quadratic time over;
 *   - a line over the length cap cut by a read: its rest is no line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/jitmap_priv.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int same(const struct lm_map *a, const struct lm_map *b)
{
	if (!a || !b)
		return a == b;
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->image == b->image;
}

/* Every range's edges, and one past and before, agree in both. */
static int agree(const struct jm_ranges *t, const struct lm_proc *ref, uint64_t *bad)
{
	for (size_t i = 0; i < ref->nmaps; i++) {
		const struct lm_map *m = &ref->maps[i];
		uint64_t at[] = { m->start - 1, m->start, m->start + 1, m->end - 1, m->end };

		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++)
			if (!same(jm_ranges_lookup(t, at[k]), dcpi_lm_lookup(ref, at[k]))) {
				*bad = at[k];
				return 0;
			}
	}
	return 1;
}

static size_t count(const struct jm_ranges *t, uint64_t lo, uint64_t hi)
{
	size_t n = 0;

	for (uint64_t a = lo; a < hi; a++) {
		const struct lm_map *m = jm_ranges_lookup(t, a);

		if (m) {
			n++;
			a = m->end - 1;
		}
	}
	return n;
}

static void test_random(uint64_t space, uint64_t maxlen, int rounds)
{
	struct jm_ranges t = { 0 };
	struct lm_proc ref = { 0 };
	uint64_t bad = 0;
	int ok = 1, err = 0;

	for (int i = 0; i < rounds && ok && !err; i++) {
		uint64_t s = 0x1000 + next() % space, len = 1 + next() % maxlen;

		err = jm_ranges_place(&t, s, s + len, i);
		err = err ? err : dcpi_lm_place(&ref, s, s + len, 0, i);
		if (i % 997 == 0 || i == rounds - 1)
			ok = agree(&t, &ref, &bad);
	}
	T_OK(!err && ok, "%d placements of up to %llu bytes in %llu: as the sorted array "
	     "places them (%zu ranges; first disagreement at 0x%llx)", rounds,
	     (unsigned long long)maxlen, (unsigned long long)space, ref.nmaps,
	     (unsigned long long)bad);
	T_OK(t.count == ref.nmaps, "as many ranges (%u, %zu)", t.count, ref.nmaps);
	jm_ranges_free(&t);
	free(ref.maps);
}

static void test_edges(void)
{
	struct jm_ranges t = { 0 };
	const struct lm_map *m;

	T_OK(jm_ranges_place(&t, 0x2000, 0x2000, 1) == 0 && !jm_ranges_lookup(&t, 0x2000),
	     "an empty range places nothing");
	jm_ranges_place(&t, 0x1000, 0x3000, 1);
	jm_ranges_place(&t, 0x1800, 0x2000, 2); /* inside: splits it in three */
	m = jm_ranges_lookup(&t, 0x2800);
	T_OK(m && m->image == 1 && m->start == 0x2000 && m->pgoff == 0x1000,
	     "the tail of a split range keeps its offset into the entry");
	m = jm_ranges_lookup(&t, 0x17ff);
	T_OK(m && m->image == 1 && m->end == 0x1800, "its head ends where the new one starts");
	jm_ranges_place(&t, 0x0, 0x10000, 3); /* over everything */
	T_OK(t.count == 1 && jm_ranges_lookup(&t, 0x1900)->image == 3,
	     "one range over all leaves one");
	T_OK(!jm_ranges_lookup(&t, 0x10000), "nothing past the end");
	jm_ranges_free(&t);
}

/* A map listed backwards (each entry below the last): 200,000 entries
 * (the array moved every range on each; the treap does not). */
static void test_backwards(void)
{
	struct jm_ranges t = { 0 };
	int err = 0;
	size_t n = 200000, found = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = jm_ranges_place(&t, 0x7f0000000000ull - 16 * (i + 1),
				      0x7f0000000000ull - 16 * i, (int32_t)i);
	for (size_t i = 0; i < n; i += 1000) {
		const struct lm_map *m = jm_ranges_lookup(&t, 0x7f0000000000ull - 16 * i - 8);

		found += m && m->image == (int32_t)i;
	}
	T_OK(!err && t.count == n && found == n / 1000,
	     "200,000 entries listed backwards: all placed, each found (%zu of %zu)", found,
	     n / 1000);
	T_OK(count(&t, 0x7f0000000000ull - 16 * 100, 0x7f0000000000ull) == 100,
	     "and walked in address order");
	jm_ranges_free(&t);
}

static int has_entry(const struct jm_proc *p, const char *name)
{
	for (size_t i = 0; i < p->nents; i++)
		if (!strcmp((const char *)p->names.data + p->ents[i].name_off, name))
			return 1;
	return 0;
}

static void test_long_line(void)
{
	struct dcpi_jitmap_opts o = { 0 };
	struct dcpi_jitmap *jm = NULL;
	struct jm_proc *p;
	char *a = malloc(8192);
	const char *b = "7f0000001000 40 FORGED\n7f0000002000 40 real\n";
	size_t used = 0, used2 = 0;

	if (!a || dcpi_jitmap_new(&o, &jm) || !(p = dcpi_jm_proc(jm, 4242))) {
		T_OK(0, "a jitmap");
		free(a);
		return;
	}
	memcpy(a, "1000 10 ", 8);
	memset(a + 8, 'A', 8192 - 8); /* a name past the cap, its newline not read yet */
	dcpi_jm_lines(jm, p, a, 8192, 0, &used);
	dcpi_jm_lines(jm, p, b, strlen(b), 0, &used2);
	T_OK(used == 8192 && used2 == strlen(b) && !has_entry(p, "FORGED") && has_entry(p, "real") &&
	     p->nents == 1, "a line over the cap, cut by a read: its rest is skipped to its newline, "
	     "the next line read (%zu entries)", p->nents);
	p->skip_rest = 0;
	dcpi_jm_lines(jm, p, a, 8192, 1, &used);
	T_OK(!p->skip_rest, "at the end of the file nothing is left to skip");
	dcpi_jitmap_free(jm);
	free(a);
}

int main(void)
{
	test_long_line();
	test_edges();
	test_random(1 << 12, 64, 20000);
	test_random(1 << 20, 1 << 14, 20000);
	test_random(1 << 16, 1, 5000);
	test_backwards();
	return t_done();
}
