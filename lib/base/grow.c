/* Growing arrays and checked sizes: see lib/internal.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "dcpi/error.h"
#include "internal.h"

int dcpi_size_mul(size_t a, size_t b, size_t *out)
{
	if (__builtin_mul_overflow(a, b, out))
		return dcpi_error(ENOMEM, "size overflow: %zu x %zu bytes", a, b);
	return 0;
}

int dcpi_grow(void **arr, size_t *cap, size_t need, size_t elsize, size_t max,
	      const char *what)
{
	size_t ncap = *cap ? *cap : DCPI_GROW_MIN, bytes;
	void *p;

	if (need <= *cap)
		return 0;
	if (need > max)
		return dcpi_error(EFBIG, "more than %zu %s", max, what);
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (ncap > max)
		ncap = max;
	if (dcpi_size_mul(ncap, elsize, &bytes))
		return dcpi_error(ENOMEM, "out of memory for %zu %s", ncap, what);
	p = realloc(*arr, bytes);
	if (!p)
		return dcpi_error(ENOMEM, "out of memory for %zu %s", ncap, what);
	*arr = p;
	*cap = ncap;
	return 0;
}
