/* Samples by label: see dcpi/labelsum.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/labelsum.h"
#include "internal.h"

#define MAX_ROWS ((size_t)1 << 20)

static int row_of(struct dcpi_labelsum *t, const char *label, struct dcpi_labelsum_row **out)
{
	int err;

	/* labels are few (a daemon keeps at most 1024 per run): a linear search */
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].label == label ||
		    (t->rows[i].label && label && !strcmp(t->rows[i].label, label))) {
			*out = &t->rows[i];
			return 0;
		}
	if ((err = DCPI_GROW(t->rows, t->cap, t->n + 1, MAX_ROWS, "labels")))
		return err;
	memset(&t->rows[t->n], 0, sizeof(t->rows[0]));
	if (label && !(t->rows[t->n].label = strdup(label)))
		return dcpi_error(ENOMEM, "out of memory");
	*out = &t->rows[t->n++];
	return 0;
}

int dcpi_labelsum_build(struct dcpi_labelsum *t, const struct dcpi_profset *set,
			const char *by)
{
	char value[512];
	int err = 0;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < set->n && !err; i++) {
		const struct dcpi_profset_entry *e = &set->v[i];
		const char *label = e->prof.label;
		struct dcpi_labelsum_row *w = NULL;

		if (label && by) {
			if (dcpi_profile_label_value(label, by, value, sizeof(value)))
				snprintf(value, sizeof(value), "-");
			label = value;
		}
		if ((err = row_of(t, label, &w)))
			break;
		w->profiles++;
		for (uint32_t ev = 0; ev < e->prof.nevents; ev++) {
			w->c[e->col[ev]] += e->prof.events[ev].total;
			t->total[e->col[ev]] += e->prof.events[ev].total;
		}
	}
	if (err)
		dcpi_labelsum_free(t);
	return err;
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct dcpi_labelsum_row *x = a, *y = b;
	int col = *(const int *)arg;

	if (!x->label != !y->label)
		return x->label ? -1 : 1;
	if (x->c[col] != y->c[col])
		return x->c[col] > y->c[col] ? -1 : 1;
	return x->label ? strcmp(x->label, y->label) : 0;
}

void dcpi_labelsum_sort(struct dcpi_labelsum *t, int col)
{
	if (t->n)
		qsort_r(t->rows, t->n, sizeof(*t->rows), cmp_rows, &col);
}

void dcpi_labelsum_free(struct dcpi_labelsum *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].label);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
