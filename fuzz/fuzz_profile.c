/* libFuzzer target for the profile decoder.  Whatever the input, decoding
 * must not crash; what decodes must encode again (the encoder refuses
 * exactly what the decoder refuses) and decode to the same profile.
 *
 * Almost every mutation breaks the CRC, which would keep the fuzzer out of
 * everything behind it; so each input is also decoded with its last four
 * bytes replaced by the right CRC of the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static int same_events(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	for (uint32_t e = 0; e < a->nevents; e++) {
		const struct dcpi_profile_event *x = &a->events[e], *y = &b->events[e];

		if (!same_str(x->name, y->name) || x->period != y->period ||
		    x->total != y->total || x->monitored_ppm != y->monitored_ppm)
			return 0;
	}
	return 1;
}

static int same_profile(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	size_t ncounts = a->nrows * a->nevents;

	return same_str(a->path, b->path) && a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) && a->size == b->size &&
	       a->mtime == b->mtime && same_str(a->epoch, b->epoch) &&
	       same_str(a->platform, b->platform) && a->kind == b->kind && a->pid == b->pid &&
	       a->text_start == b->text_start && a->text_size == b->text_size &&
	       a->nevents == b->nevents && same_events(a, b) && a->nrows == b->nrows &&
	       !memcmp(a->offsets, b->offsets, a->nrows * sizeof(uint64_t)) &&
	       !memcmp(a->counts, b->counts, ncounts * sizeof(uint64_t));
}

static void check(const uint8_t *data, size_t size)
{
	struct dcpi_profile p, q;
	struct dcpi_buf b = DCPI_BUF_INIT;

	if (dcpi_profile_decode(data, size, &p) != 0)
		return;
	if (dcpi_profile_encode(&p, &b) != 0)
		abort(); /* decoded but cannot be written back */
	if (dcpi_profile_decode(b.data, b.len, &q) != 0 || !same_profile(&p, &q))
		abort(); /* the round trip changed something */
	/* Our encoding is canonical: never longer than what we were given. */
	if (b.len > size)
		abort();
	dcpi_profile_free(&q);
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	uint32_t crc;

	check(data, size);
	if (size < 4 || size > (1u << 20))
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	crc = (uint32_t)crc32(0L, fixed, (uInt)(size - 4));
	for (int i = 0; i < 4; i++)
		fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
	check(fixed, size);
	free(fixed);
	return 0;
}
