/* Rows keyed by a few string labels (dcpidiff's and dcpistats' tables):
 * comparing, hashing, copying and freeing the labels in one place.  A
 * NULL label ends nothing: it is a label of its own, equal only to NULL.
 * Private to lib/analysis. */
#ifndef DCPI_ANALYSIS_LABELS_H
#define DCPI_ANALYSIS_LABELS_H

#include <stddef.h>

int dcpi_labels_cmp(const char *const *a, const char *const *b, size_t n);
unsigned dcpi_labels_hash(const char *const *l, size_t n);
/* dst[i] = strdup(src[i]) (NULL stays NULL); 0, or -ENOMEM with dst freed. */
int dcpi_labels_copy(char **dst, const char *const *src, size_t n);
void dcpi_labels_free(char **l, size_t n);

#endif
