/* libFuzzer target for perf maps (/tmp/perf-PID.map).  Each line goes to
 * dcpi_jitmap_parse_line (an accepted line must name a non-empty rest of
 * the line); the whole input is then read as process 1's map
 * (dcpi_jitmap_feed_text: no file), the starts of accepted lines are
 * resolved, and the pseudo-image of what they hit is built: every offset
 * handed out must lie inside that image's text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"
#include "jit_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROBES 16
/* Only entries up to this size are probed: the pseudo-image holds each hit
 * entry's whole range (zeros where no code is known), so a line claiming
 * megabytes made an iteration build and clear megabytes (409 runs/s once
 * the corpus held such lines).  Larger entries are still parsed and fed. */
#define PROBE_MAX_SIZE (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_jitmap_opts o = { "/nonexistent", NULL, NULL };
	struct dcpi_jitmap *jm;
	uint64_t probes[PROBES], offs[PROBES], off;
	size_t nprobes = 0, nhit = 0, pos = 0;
	int64_t key = 0;

	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - (data + pos)) : size - pos, name;
		uint64_t start, sz;

		if (dcpi_jitmap_parse_line((const char *)data + pos, len, &start, &sz, &name) == 0) {
			if (name == 0 || name >= len)
				abort();
			if (nprobes < PROBES && sz <= PROBE_MAX_SIZE)
				probes[nprobes++] = start + sz / 2;
		}
		pos += len + 1;
	}
	if (dcpi_jitmap_new(&o, &jm))
		abort();
	dcpi_jitmap_feed_text(jm, 1, (const char *)data, size);
	for (size_t i = 0; i < nprobes; i++)
		if (dcpi_jitmap_resolve(jm, 1, probes[i], UINT64_MAX, &key, &off) == 1)
			offs[nhit++] = off;
	jit_check_image(jm, key, offs, nhit);
	dcpi_jitmap_free(jm);
	return 0;
}
