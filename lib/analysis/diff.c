/* Two profile sets compared: see dcpi/diff.h. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/hashtab.h>

#include "dcpi/diff.h"
#include "dcpi/error.h"
#include "dcpi/shares.h"
#include "internal.h"
#include "labels.h"

static hashval_t row_hash(const void *p)
{
	return dcpi_labels_hash((const char *const *)((const struct dcpi_diff_row *)p)->label, DCPI_DIFF_LABELS);
}

static int row_eq(const void *a, const void *b)
{
	return !dcpi_labels_cmp((const char *const *)((const struct dcpi_diff_row *)a)->label,
				(const char *const *)((const struct dcpi_diff_row *)b)->label, DCPI_DIFF_LABELS);
}

static void row_free(struct dcpi_diff_row *r)
{
	if (!r)
		return;
	dcpi_labels_free(r->label, DCPI_DIFF_LABELS);
	free(r);
}

void dcpi_diff_init(struct dcpi_diff *d)
{
	memset(d, 0, sizeof(*d));
	d->expo[0] = d->expo[1] = 1;
}

void dcpi_diff_free(struct dcpi_diff *d)
{
	for (size_t i = 0; i < d->n; i++)
		row_free(d->rows[i]);
	free(d->rows);
	if (d->index)
		htab_delete(d->index);
	memset(d, 0, sizeof(*d));
}

static struct dcpi_diff_row *row_new(const struct dcpi_diff_row *key)
{
	struct dcpi_diff_row *r = calloc(1, sizeof(*r));

	if (r && dcpi_labels_copy(r->label, (const char *const *)key->label, DCPI_DIFF_LABELS)) {
		free(r);
		return NULL;
	}
	return r;
}

static int row_get(struct dcpi_diff *d, const struct dcpi_diff_row *key,
		   struct dcpi_diff_row **out)
{
	void **slot;
	int err;

	if (!d->index &&
	    !(d->index = htab_create_alloc(256, row_hash, row_eq, NULL, calloc, free)))
		return dcpi_error(ENOMEM, "out of memory");
	if ((*out = htab_find(d->index, key)))
		return 0;
	if (!(*out = row_new(key)))
		return dcpi_error(ENOMEM, "out of memory");
	if ((err = DCPI_GROW(d->rows, d->cap, d->n + 1, SIZE_MAX, "rows")) ||
	    !(slot = htab_find_slot(d->index, key, INSERT))) {
		row_free(*out);
		return err ? err : dcpi_error(ENOMEM, "out of memory");
	}
	d->rows[d->n++] = *out;
	*slot = *out;
	return 0;
}

int dcpi_diff_add(struct dcpi_diff *d, int side, const char *const *labels, size_t nlabels,
		  uint64_t count)
{
	struct dcpi_diff_row key, *r = NULL;
	int err;

	memset(&key, 0, sizeof(key));
	for (size_t i = 0; i < nlabels && i < DCPI_DIFF_LABELS; i++)
		key.label[i] = (char *)labels[i];
	if ((err = row_get(d, &key, &r)))
		return err;
	if (side) {
		r->b += count;
		d->total_b += count;
	} else {
		r->a += count;
		d->total_a += count;
	}
	return 0;
}

/* Largest change first; then the larger row; then by labels. */
static int cmp_rows(const void *x, const void *y, void *arg)
{
	const struct dcpi_diff_row *a = *(struct dcpi_diff_row *const *)x;
	const struct dcpi_diff_row *b = *(struct dcpi_diff_row *const *)y;
	int by_share = *(const int *)arg;
	double da = fabs(by_share ? a->delta_pp : a->delta);
	double db = fabs(by_share ? b->delta_pp : b->delta);

	if (da != db)
		return da > db ? -1 : 1;
	if (a->a + a->b != b->a + b->b)
		return a->a + a->b > b->a + b->b ? -1 : 1;
	return dcpi_labels_cmp((const char *const *)a->label, (const char *const *)b->label,
			       DCPI_DIFF_LABELS);
}

void dcpi_diff_finish(struct dcpi_diff *d)
{
	double ea = d->expo[0] > 0 ? d->expo[0] : 1, eb = d->expo[1] > 0 ? d->expo[1] : 1;

	for (size_t i = 0; i < d->n; i++) {
		struct dcpi_diff_row *r = d->rows[i];

		r->ra = (double)r->a / ea;
		r->rb = (double)r->b / eb;
		r->delta = r->rb - r->ra;
		r->pa = d->total_a ? 100.0 * (double)r->a / (double)d->total_a : 0;
		r->pb = d->total_b ? 100.0 * (double)r->b / (double)d->total_b : 0;
		r->delta_pp = r->pb - r->pa;
		r->has_ratio = r->a > 0;
		r->ratio = r->has_ratio ? r->rb / r->ra : 0;
		r->share_ratio = r->has_ratio ? r->pb / r->pa : 0;
		r->p = d->by_share ? dcpi_shares_poisson_p(r->a, (double)d->total_a, r->b,
							    (double)d->total_b)
				   : dcpi_shares_poisson_p(r->a, ea, r->b, eb);
		r->significant = r->p < 0.05;
	}
	if (d->n)
		qsort_r(d->rows, d->n, sizeof(*d->rows), cmp_rows, &d->by_share);
}
