/* libFuzzer target for latency bins files (dcpi/bins.h): whatever the
 * text, parsing must not crash; what parses must hold the file's rules
 * (ranges in order and disjoint, each REP in its range), write back to
 * text that parses to the same bins, and find each bin by its edges and
 * representative. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/bins.h"
#include "dcpi/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_bins b, c;
	struct dcpi_buf out = DCPI_BUF_INIT;

	if (dcpi_bins_parse((const char *)data, size, &b))
		return 0;
	for (size_t i = 0; i < b.n; i++) {
		const struct dcpi_bin *x = &b.v[i];

		if (x->min > x->rep || x->rep > x->max || (i && x->min <= b.v[i - 1].max) ||
		    dcpi_bins_find(&b, x->min) != (int)i || dcpi_bins_find(&b, x->max) != (int)i ||
		    dcpi_bins_find(&b, x->rep) != (int)i)
			abort();
	}
	if (dcpi_bins_format(&b, &out) || dcpi_bins_parse((const char *)out.data, out.len, &c) ||
	    c.n != b.n)
		abort();
	for (size_t i = 0; i < b.n; i++)
		if (c.v[i].min != b.v[i].min || c.v[i].max != b.v[i].max ||
		    c.v[i].rep != b.v[i].rep || strcmp(c.v[i].name, b.v[i].name))
			abort();
	dcpi_buf_release(&out);
	return 0;
}
