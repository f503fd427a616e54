/* Radix sort of (key, value) pairs: see lib/internal.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "internal.h"

#define KEY_BYTES 8

/* One stable counting pass on byte b of the keys, src into dst. */
static void pass(const struct dcpi_kv *src, struct dcpi_kv *dst, size_t n, unsigned b,
		 const size_t *count)
{
	size_t off[256], sum = 0;

	for (unsigned d = 0; d < 256; d++) {
		off[d] = sum;
		sum += count[d];
	}
	for (size_t i = 0; i < n; i++)
		dst[off[(src[i].key >> (8 * b)) & 0xff]++] = src[i];
}

int dcpi_sort_kv(struct dcpi_kv *a, size_t n)
{
	size_t count[KEY_BYTES][256], bytes, i;
	struct dcpi_kv *tmp, *src = a, *dst, *t;

	for (i = 1; i < n && a[i - 1].key <= a[i].key; i++)
		;
	if (i >= n) /* already sorted (kallsyms is, by address) */
		return 0;
	if (dcpi_size_mul(n, sizeof(*a), &bytes))
		return -ENOMEM;
	tmp = malloc(bytes);
	if (!tmp)
		return dcpi_error(ENOMEM, "out of memory for %zu sort entries", n);
	memset(count, 0, sizeof(count));
	for (i = 0; i < n; i++)
		for (unsigned b = 0; b < KEY_BYTES; b++)
			count[b][(a[i].key >> (8 * b)) & 0xff]++;
	dst = tmp;
	for (unsigned b = 0; b < KEY_BYTES; b++) {
		/* a byte every key shares orders nothing: skip its pass
		   (the high bytes of addresses, mostly) */
		if (count[b][(a[0].key >> (8 * b)) & 0xff] == n)
			continue;
		pass(src, dst, n, b, count[b]);
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, bytes);
	free(tmp);
	return 0;
}
