/* Hex strings: see dcpi/hex.h. */
#include "dcpi/hex.h"

void dcpi_hex(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

int dcpi_hex_scan_u64(const char **pp, const char *end, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	unsigned n = 0;

	for (; (!end || p < end) && n < 17; p++, n++) {
		unsigned c = (unsigned char)*p, d;

		if (c - '0' < 10)
			d = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		x = x << 4 | d;
	}
	if (n == 0 || n > 16)
		return -1;
	*v = x;
	*pp = p;
	return 0;
}
