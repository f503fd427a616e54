/* libFuzzer target for the stacks file (epoch.stacks, dcpi/stacks.h).
 * An input whose first byte is odd is the rest with its CRC-32 appended
 * (so mutations reach the structure behind the checksum); an even one is
 * taken as it is.  Whatever it is, decoding must not crash; what decodes
 * must hold the set's invariants (every frame names an image of the set or
 * none, every label and end is in range, every stack has samples), and
 * encoding it must give bytes that decode to a set encoding to the same
 * bytes again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/buf.h"
#include "dcpi/stacks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct dcpi_stackset *s)
{
	for (size_t i = 0; i < s->nstacks; i++) {
		const struct dcpi_stack *st = &s->stacks[i];
		uint64_t any = 0;

		if (st->label >= s->nlabels || st->end >= DCPI_STACK_END_N || !st->nframes ||
		    st->nframes > DCPI_STACK_MAX_FRAMES || st->first + st->nframes > s->nframes)
			abort();
		for (uint32_t k = 0; k < st->nframes; k++) {
			uint32_t im = s->frames[st->first + k].image;

			if (im != DCPI_FRAME_UNKNOWN && im >= s->nimages)
				abort();
		}
		for (unsigned e = 0; e < s->nevents; e++)
			any |= s->counts[i * s->nevents + e];
		if (!any)
			abort();
	}
	if (!s->nlabels || s->labels[0][0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_stackset s, t;
	struct dcpi_buf a = DCPI_BUF_INIT, b = DCPI_BUF_INIT;
	uint8_t *in = NULL;
	size_t len = size;

	if (size && (data[0] & 1)) {
		uint32_t crc;

		len = size - 1 + 4;
		if (!(in = malloc(len)))
			return 0;
		memcpy(in, data + 1, size - 1);
		crc = (uint32_t)crc32(crc32(0L, NULL, 0), in, (uInt)(size - 1));
		for (int k = 0; k < 4; k++)
			in[size - 1 + k] = (uint8_t)(crc >> (8 * k));
		data = in;
	}
	if (dcpi_stackset_decode(data, len, &s) == 0) {
		check(&s);
		if (dcpi_stackset_encode(&s, &a))
			abort();
		if (dcpi_stackset_decode(a.data, a.len, &t))
			abort(); /* what we wrote, we must read */
		check(&t);
		if (dcpi_stackset_encode(&t, &b) || a.len != b.len || memcmp(a.data, b.data, a.len))
			abort();
		dcpi_stackset_free(&t);
		dcpi_stackset_free(&s);
	}
	dcpi_buf_release(&a);
	dcpi_buf_release(&b);
	free(in);
	return 0;
}
