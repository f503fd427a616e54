/* SHA-1 (FIPS 180-4): see dcpi/sha1.h. */
#include <string.h>

#include "dcpi/sha1.h"

static uint32_t rol(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *b)
{
	uint32_t w[80], a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
	unsigned i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (bb & c) | (~bb & d), k = 0x5a827999;
		else if (i < 40)
			f = bb ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (bb & c) | (bb & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = bb ^ c ^ d, k = 0xca62c1d6;
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(bb, 30);
		bb = a;
		a = t;
	}
	h[0] += a;
	h[1] += bb;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void dcpi_sha1_init(struct dcpi_sha1 *s)
{
	static const uint32_t iv[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
					0xc3d2e1f0 };

	memcpy(s->h, iv, sizeof(iv));
	s->nbytes = 0;
	s->fill = 0;
}

void dcpi_sha1_update(struct dcpi_sha1 *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	s->nbytes += n;
	while (n > 0) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;

		memcpy(s->block + s->fill, b, take);
		s->fill += take;
		b += take;
		n -= take;
		if (s->fill == 64) {
			sha1_block(s->h, s->block);
			s->fill = 0;
		}
	}
}

void dcpi_sha1_final(struct dcpi_sha1 *s, uint8_t out[DCPI_SHA1_LEN])
{
	uint64_t bits = s->nbytes * 8;
	uint8_t pad = 0x80, len[8];
	unsigned i;

	dcpi_sha1_update(s, &pad, 1);
	pad = 0;
	while (s->fill != 56)
		dcpi_sha1_update(s, &pad, 1);
	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	dcpi_sha1_update(s, len, 8);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}
