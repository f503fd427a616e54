/* In-memory aggregation of samples, the analogue of DCPI's per-CPU hash
 * tables: (image, pid, label) bins, each a hash table offset -> counts[nevents].
 *
 * Memory grows with distinct PCs, not with samples.  Bins and rows are
 * capped (DCPI_AGG_MAX_ROWS in all); past the cap, adds fail with
 * -ENOSPC and the caller counts the sample as dropped, so a pathological
 * workload cannot make the daemon eat the machine.
 */
#ifndef DCPI_AGG_H
#define DCPI_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"

#define DCPI_AGG_MAX_ROWS (64u << 20)

struct dcpi_agg;

struct dcpi_agg *dcpi_agg_new(unsigned nevents);
void dcpi_agg_free(struct dcpi_agg *a);

/* Count n samples of event ev at (image, pid, label, offset).  pid -1 for
 * the ordinary shared profile of an image; label 0 when unlabelled (a
 * labeler's id otherwise, dcpi/label.h). */
int dcpi_agg_add(struct dcpi_agg *a, int image, int64_t pid, uint32_t label, uint64_t offset,
		 unsigned ev, uint64_t n);

/* Bins, for writing out.  Indices are valid until the next clear. */
size_t dcpi_agg_nbins(const struct dcpi_agg *a);
void dcpi_agg_bin_key(const struct dcpi_agg *a, size_t bin, int *image, int64_t *pid,
		      uint32_t *label);
/* Fill p's rows (and event totals) from bin; p's nevents must equal the
 * aggregator's and its identity fields are left alone. */
int dcpi_agg_bin_rows(const struct dcpi_agg *a, size_t bin, struct dcpi_profile *p);

/* Rows in one bin; forget one bin's counts (after writing it). */
size_t dcpi_agg_bin_nrows(const struct dcpi_agg *a, size_t bin);
void dcpi_agg_bin_clear(struct dcpi_agg *a, size_t bin);

/* Forget every count (after a merge). */
void dcpi_agg_clear(struct dcpi_agg *a);
/* Distinct rows held now, across bins. */
size_t dcpi_agg_nrows(const struct dcpi_agg *a);

#endif
