/* Growable buffers and varints: see dcpi/buf.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "internal.h"

int dcpi_buf_grow(struct dcpi_buf *b, size_t extra)
{
	if (extra > DCPI_BUF_MAX - b->len)
		return dcpi_error(EFBIG, "buffer would exceed %zu bytes", DCPI_BUF_MAX);
	return DCPI_GROW(b->data, b->cap, b->len + extra, DCPI_BUF_MAX, "buffer bytes");
}

int dcpi_buf_put(struct dcpi_buf *b, const void *p, size_t n)
{
	int err = dcpi_buf_grow(b, n);

	if (err)
		return err;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int dcpi_buf_put_u32le(struct dcpi_buf *b, uint32_t v)
{
	uint8_t x[4] = { v, v >> 8, v >> 16, v >> 24 };

	return dcpi_buf_put(b, x, 4);
}

int dcpi_buf_put_varint(struct dcpi_buf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;

	do {
		x[n] = v & 0x7f;
		v >>= 7;
		if (v)
			x[n] |= 0x80;
		n++;
	} while (v);
	return dcpi_buf_put(b, x, n);
}

int dcpi_buf_put_str(struct dcpi_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	int err = dcpi_buf_put_varint(b, n);

	return err ? err : dcpi_buf_put(b, s, n);
}

int dcpi_buf_printf(struct dcpi_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return dcpi_error(EINVAL, "bad format");
	err = dcpi_buf_grow(b, (size_t)n + 1);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
	return 0;
}

void dcpi_buf_release(struct dcpi_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int dcpi_buf_get_varint(struct dcpi_cursor *c, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t byte;

		if (c->pos >= c->len)
			return dcpi_error(EBADMSG, "truncated varint at byte %zu", c->pos);
		byte = c->data[c->pos++];
		if (shift == 63 && (byte & 0x7e))
			return dcpi_error(EBADMSG, "varint overflows 64 bits at byte %zu", c->pos - 1);
		r |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			break;
		shift += 7;
		if (shift > 63)
			return dcpi_error(EBADMSG, "varint too long at byte %zu", c->pos - 1);
	}
	*v = r;
	return 0;
}

int dcpi_buf_get_u32le(struct dcpi_cursor *c, uint32_t *v)
{
	const uint8_t *p = NULL;
	int err = dcpi_buf_get_bytes(c, &p, 4);

	if (err)
		return err;
	*v = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return 0;
}

int dcpi_buf_get_bytes(struct dcpi_cursor *c, const uint8_t **p, size_t n)
{
	if (n > c->len - c->pos)
		return dcpi_error(EBADMSG, "truncated: %zu bytes wanted at byte %zu, %zu left",
				  n, c->pos, c->len - c->pos);
	*p = c->data + c->pos;
	c->pos += n;
	return 0;
}

int dcpi_buf_get_str(struct dcpi_cursor *c, char **s, size_t max)
{
	const uint8_t *p = NULL;
	uint64_t n;
	char *r;
	int err = dcpi_buf_get_varint(c, &n);

	if (err)
		return err;
	if (n > max)
		return dcpi_error(EBADMSG, "string of %llu bytes at byte %zu exceeds %zu",
				  (unsigned long long)n, c->pos, max);
	err = dcpi_buf_get_bytes(c, &p, n);
	if (err)
		return err;
	if (memchr(p, 0, n))
		return dcpi_error(EBADMSG, "string with a NUL byte at byte %zu", c->pos - n);
	r = malloc(n + 1);
	if (!r)
		return dcpi_error(ENOMEM, "out of memory");
	memcpy(r, p, n);
	r[n] = 0;
	*s = r;
	return 0;
}

int dcpi_buf_gzip(const struct dcpi_buf *in, int level, struct dcpi_buf *out)
{
	z_stream z;
	int zr, err;

	if (in->len > UINT_MAX)
		return dcpi_error(EFBIG, "cannot compress %zu bytes in one piece", in->len);
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return dcpi_error(ENOMEM, "zlib: cannot start compressing");
	err = dcpi_buf_grow(out, deflateBound(&z, in->len));
	if (!err) {
		z.next_in = in->data;
		z.avail_in = (uInt)in->len;
		z.next_out = out->data + out->len;
		z.avail_out = (uInt)(out->cap - out->len);
		zr = deflate(&z, Z_FINISH);
		if (zr != Z_STREAM_END)
			err = dcpi_error(EIO, "zlib: compressing failed (%d)", zr);
		else
			out->len += z.total_out;
	}
	deflateEnd(&z);
	return err;
}
