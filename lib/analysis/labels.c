/* Label keys of comparison tables: see labels.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "labels.h"

static int label_cmp(const char *x, const char *y)
{
	if (!x || !y)
		return (x != NULL) - (y != NULL);
	return strcmp(x, y);
}

int dcpi_labels_cmp(const char *const *a, const char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = label_cmp(a[i], b[i]);

		if (c)
			return c;
	}
	return 0;
}

unsigned dcpi_labels_hash(const char *const *l, size_t n)
{
	unsigned h = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned x = 7;

		for (const char *s = l[i]; s && *s; s++) /* FNV-1a */
			x = (x ^ (unsigned char)*s) * 16777619u;
		h = h * 31 + x;
	}
	return h;
}

int dcpi_labels_copy(char **dst, const char *const *src, size_t n)
{
	memset(dst, 0, n * sizeof(*dst));
	for (size_t i = 0; i < n; i++)
		if (src[i] && !(dst[i] = strdup(src[i]))) {
			dcpi_labels_free(dst, n);
			return dcpi_error(ENOMEM, "out of memory");
		}
	return 0;
}

void dcpi_labels_free(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i]);
		l[i] = NULL;
	}
}
