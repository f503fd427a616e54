/* libFuzzer target for jitdump files (jit-PID.dump).  The input is taken
 * as process 1's dump (dcpi_jitmap_feed_dump: a memfd, no file), its
 * records read as samples at growing times need them (a few probe
 * addresses, then everything at exit), and the pseudo-image of what the
 * probes hit is built: every offset handed out must lie inside it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"
#include "jit_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROBES 8

/* Addresses worth probing: code_addr fields of what look like LOAD
 * records (id 0) at 8-byte steps after the 40-byte header. */
static size_t probes_of(const uint8_t *data, size_t size, uint64_t *probe)
{
	size_t n = 0;

	for (size_t at = 40; at + 40 <= size && n < PROBES; at += 8) {
		uint32_t id;

		memcpy(&id, data + at, 4);
		if (id == 0) {
			memcpy(&probe[n], data + at + 32, 8);
			probe[n++] += 1;
		}
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_jitmap_opts o = { "/nonexistent", NULL, NULL };
	struct dcpi_jitmap *jm;
	uint64_t probe[PROBES], offs[PROBES], off;
	size_t nprobes = probes_of(data, size, probe), nhit = 0;
	int64_t key = 0;

	if (dcpi_jitmap_new(&o, &jm))
		abort();
	dcpi_jitmap_feed_dump(jm, 1, data, size);
	for (size_t i = 0; i < nprobes; i++)
		if (dcpi_jitmap_resolve(jm, 1, probe[i], (uint64_t)i << 40, &key, &off) == 1)
			offs[nhit++] = off;
	dcpi_jitmap_exit(jm, 1);
	jit_check_image(jm, key, offs, nhit);
	dcpi_jitmap_free(jm);
	return 0;
}
