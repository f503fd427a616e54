/* In-memory sample aggregation: see dcpi/agg.h.
 * Open addressing with linear probing at most half full, in both levels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/agg.h"
#include "dcpi/error.h"
#include "internal.h"

struct bin {
	int image;
	int64_t pid;
	uint32_t label;         /* a labeller's id; 0 when unlabelled */
	size_t nrows, cap;      /* cap: a power of 2, 0 before the first add */
	uint64_t *slots;        /* cap slots of 1 + nevents words: offset + 1
				   (0 = empty slot), then the counts; one
				   cache miss finds a row and its counts */
};

struct dcpi_agg {
	unsigned nevents;
	struct bin *bins;
	size_t nbins, bins_cap;
	size_t *index;          /* hash of (image, pid, label) -> bin + 1 */
	size_t index_cap;
	size_t last;            /* bin of the previous add: samples cluster */
	size_t total_rows;
};

struct dcpi_agg *dcpi_agg_new(unsigned nevents)
{
	struct dcpi_agg *a;

	if (nevents == 0 || nevents > DCPI_MAX_EVENTS)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (a) {
		a->nevents = nevents;
		a->last = (size_t)-1;
	}
	return a;
}

static void bin_release(struct bin *b)
{
	free(b->slots);
	memset(b, 0, sizeof(*b));
}

void dcpi_agg_clear(struct dcpi_agg *a)
{
	for (size_t i = 0; i < a->nbins; i++)
		bin_release(&a->bins[i]);
	a->nbins = 0;
	a->total_rows = 0;
	a->last = (size_t)-1;
	if (a->index)
		memset(a->index, 0, a->index_cap * sizeof(*a->index));
}

void dcpi_agg_free(struct dcpi_agg *a)
{
	if (!a)
		return;
	dcpi_agg_clear(a);
	free(a->bins);
	free(a->index);
	free(a);
}

static size_t key_hash(int image, int64_t pid, uint32_t label)
{
	return (size_t)dcpi_hash64(((uint64_t)(uint32_t)image << 32 ^ (uint64_t)pid) + dcpi_mix64(label));
}

static int index_grow(struct dcpi_agg *a)
{
	size_t ncap = a->index_cap ? a->index_cap * 2 : 64;
	size_t *ni = calloc(ncap, sizeof(*ni));

	if (!ni)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t b = 0; b < a->nbins; b++) {
		size_t h = key_hash(a->bins[b].image, a->bins[b].pid, a->bins[b].label) & (ncap - 1);

		while (ni[h])
			h = (h + 1) & (ncap - 1);
		ni[h] = b + 1;
	}
	free(a->index);
	a->index = ni;
	a->index_cap = ncap;
	return 0;
}

static int same_key(const struct bin *b, int image, int64_t pid, uint32_t label)
{
	return b->image == image && b->pid == pid && b->label == label;
}

static int find_bin(struct dcpi_agg *a, int image, int64_t pid, uint32_t label, size_t *out)
{
	size_t h;
	int err;

	if (a->last != (size_t)-1 && same_key(&a->bins[a->last], image, pid, label)) {
		*out = a->last;
		return 0;
	}
	if ((a->nbins + 1) * 2 > a->index_cap && (err = index_grow(a)))
		return err;
	for (h = key_hash(image, pid, label) & (a->index_cap - 1); a->index[h];
	     h = (h + 1) & (a->index_cap - 1)) {
		struct bin *b = &a->bins[a->index[h] - 1];

		if (same_key(b, image, pid, label)) {
			*out = a->last = a->index[h] - 1;
			return 0;
		}
	}
	if ((err = DCPI_GROW(a->bins, a->bins_cap, a->nbins + 1, SIZE_MAX, "image bins")))
		return err;
	memset(&a->bins[a->nbins], 0, sizeof(a->bins[0]));
	a->bins[a->nbins].image = image;
	a->bins[a->nbins].pid = pid;
	a->bins[a->nbins].label = label;
	a->index[h] = a->nbins + 1;
	*out = a->last = a->nbins++;
	return 0;
}

static int bin_grow(struct bin *b, unsigned nevents)
{
	size_t ncap = b->cap ? b->cap * 2 : 64, w = 1 + nevents;
	uint64_t *ns = calloc(ncap * w, sizeof(*ns));

	if (!ns)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < b->cap; i++) {
		const uint64_t *s = &b->slots[i * w];
		size_t h;

		if (!s[0])
			continue;
		for (h = dcpi_hash64(s[0]) & (ncap - 1); ns[h * w]; h = (h + 1) & (ncap - 1))
			;
		memcpy(&ns[h * w], s, w * sizeof(*ns));
	}
	free(b->slots);
	b->slots = ns;
	b->cap = ncap;
	return 0;
}

int dcpi_agg_add(struct dcpi_agg *a, int image, int64_t pid, uint32_t label, uint64_t offset,
		 unsigned ev, uint64_t n)
{
	uint64_t key = offset + 1; /* offset ~0 would collide with "empty": fold it */
	struct bin *b;
	size_t bi = 0, h, w;
	int err;

	if (ev >= a->nevents)
		return dcpi_error(EINVAL, "event %u out of range", ev);
	if (key == 0)
		key = 1;
	err = find_bin(a, image, pid, label, &bi);
	if (err)
		return err;
	b = &a->bins[bi];
	if ((b->nrows + 1) * 2 > b->cap) {
		if (a->total_rows >= DCPI_AGG_MAX_ROWS)
			return dcpi_error(ENOSPC, "aggregation table full (%u rows)", DCPI_AGG_MAX_ROWS);
		err = bin_grow(b, a->nevents);
		if (err)
			return err;
	}
	w = 1 + a->nevents;
	for (h = dcpi_hash64(key) & (b->cap - 1); b->slots[h * w] && b->slots[h * w] != key;
	     h = (h + 1) & (b->cap - 1))
		;
	if (!b->slots[h * w]) {
		b->slots[h * w] = key;
		b->nrows++;
		a->total_rows++;
	}
	b->slots[h * w + 1 + ev] += n;
	return 0;
}

size_t dcpi_agg_nbins(const struct dcpi_agg *a)
{
	return a->nbins;
}

void dcpi_agg_bin_key(const struct dcpi_agg *a, size_t bin, int *image, int64_t *pid,
		      uint32_t *label)
{
	*image = a->bins[bin].image;
	*pid = a->bins[bin].pid;
	*label = a->bins[bin].label;
}

size_t dcpi_agg_bin_nrows(const struct dcpi_agg *a, size_t bin)
{
	return a->bins[bin].nrows;
}

void dcpi_agg_bin_clear(struct dcpi_agg *a, size_t bin)
{
	struct bin *b = &a->bins[bin];

	a->total_rows -= b->nrows;
	free(b->slots);
	b->slots = NULL;
	b->nrows = b->cap = 0;
}

size_t dcpi_agg_nrows(const struct dcpi_agg *a)
{
	return a->total_rows;
}

int dcpi_agg_bin_rows(const struct dcpi_agg *a, size_t bin, struct dcpi_profile *p)
{
	const struct bin *b = &a->bins[bin];
	uint64_t *offs, *cnts;
	size_t n = 0;
	int err;

	if (p->nevents != a->nevents)
		return dcpi_error(EINVAL, "profile has %u events, aggregator %u", p->nevents,
				  a->nevents);
	offs = malloc((b->nrows ? b->nrows : 1) * sizeof(*offs));
	cnts = malloc((b->nrows ? b->nrows : 1) * a->nevents * sizeof(*cnts));
	if (!offs || !cnts) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < b->cap; i++) {
		const uint64_t *s = &b->slots[i * (1 + a->nevents)];

		if (!s[0])
			continue;
		offs[n] = s[0] - 1;
		memcpy(&cnts[n * a->nevents], s + 1, a->nevents * sizeof(*cnts));
		n++;
	}
	err = dcpi_profile_set_rows(p, n, offs, cnts);
out:
	free(offs);
	free(cnts);
	return err;
}
