/* libFuzzer target for value profiles (dcpi/vprof.h): whatever the text,
 * parsing must not crash; what parses must hold the format's rules (each
 * load's OUTSIDE and bin counts add up to its SAMPLES, at most 16 values,
 * each counted 1..SAMPLES, most frequent first; sources adding up to at
 * most SAMPLES), write back to text that
 * reads back to the same text, and merge into an empty profile (twice:
 * each count doubled) without breaking those rules. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/buf.h"
#include "dcpi/vprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct dcpi_vprof *v)
{
	for (size_t i = 0; i < v->nloads; i++) {
		const struct dcpi_vprof_load *l = &v->loads[i];
		uint64_t sum = l->outside;

		for (size_t b = 0; b < v->bins.n; b++)
			sum += l->bins[b];
		if (sum != l->samples || l->image >= v->nimages || l->nvalues > DCPI_VPROF_VALUES ||
		    dcpi_vprof_load(v, l->image, l->off) != l)
			abort();
		sum = 0;
		for (int k = 0; k < DCPI_SRC_N; k++)
			sum += l->sources[k];
		if (sum > l->samples)
			abort();
		for (unsigned k = 0; k < l->nvalues; k++)
			if (!l->values[k].count || l->values[k].count > l->samples ||
			    (k && l->values[k].count > l->values[k - 1].count))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_vprof *v, *w = NULL, *m = NULL;
	struct dcpi_buf a = DCPI_BUF_INIT, b = DCPI_BUF_INIT;

	if (dcpi_vprof_parse((const char *)data, size, &v))
		return 0;
	check(v);
	if (dcpi_vprof_format(v, &a) || dcpi_vprof_parse((const char *)a.data, a.len, &w) ||
	    dcpi_vprof_format(w, &b) || a.len != b.len || memcmp(a.data, b.data, a.len))
		abort();
	if (dcpi_vprof_new(&m) || dcpi_vprof_merge(m, v))
		abort();
	if (dcpi_vprof_merge(m, w)) /* refused only where a sum would pass 2^62 */
		goto out;
	if (m->nloads != v->nloads || m->nimages != v->nimages)
		abort();
	check(m);
	for (size_t i = 0; i < v->nloads; i++) {
		const struct dcpi_vprof_load *x = &v->loads[i];
		const struct dcpi_vprof_load *y = dcpi_vprof_load(m, x->image, x->off);

		if (!y || (x->samples < UINT64_MAX / 2 && y->samples != 2 * x->samples) ||
		    y->nvalues != x->nvalues)
			abort();
	}
out:
	dcpi_buf_release(&a);
	dcpi_buf_release(&b);
	dcpi_vprof_free(v);
	dcpi_vprof_free(w);
	dcpi_vprof_free(m);
	return 0;
}
