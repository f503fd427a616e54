/* A growable byte buffer with a hard cap, and LEB128 varints.
 *
 * Invariants: data is NULL only while cap == 0; len <= cap; growth never
 * passes DCPI_BUF_MAX (an encoded profile or control message larger than
 * that is refused with -EFBIG, not allocated).  The buffer owns data;
 * dcpi_buf_release() frees it and leaves an empty buffer.
 */
#ifndef DCPI_BUF_H
#define DCPI_BUF_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_BUF_MAX ((size_t)1 << 31)

struct dcpi_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

#define DCPI_BUF_INIT { NULL, 0, 0 }

int dcpi_buf_grow(struct dcpi_buf *b, size_t extra);
int dcpi_buf_put(struct dcpi_buf *b, const void *p, size_t n);
int dcpi_buf_put_u32le(struct dcpi_buf *b, uint32_t v);
int dcpi_buf_put_varint(struct dcpi_buf *b, uint64_t v);
/* A string as varint length + bytes (no NUL). */
int dcpi_buf_put_str(struct dcpi_buf *b, const char *s);
int dcpi_buf_printf(struct dcpi_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dcpi_buf_release(struct dcpi_buf *b);
/* Append the gzip form of in (deflate with the gzip wrapper, as gzip(1),
 * zlib's gz* readers and Go's pprof read it) to out, at zlib's level
 * (1 fastest .. 9 smallest).  -EFBIG past 4 GiB. */
int dcpi_buf_gzip(const struct dcpi_buf *in, int level, struct dcpi_buf *out);

/* A read cursor over bytes the caller owns.  Every get checks bounds and
 * fails with -EBADMSG at the end of input; pos never passes len. */
struct dcpi_cursor {
	const uint8_t *data;
	size_t len;
	size_t pos;
};

int dcpi_buf_get_varint(struct dcpi_cursor *c, uint64_t *v);
int dcpi_buf_get_u32le(struct dcpi_cursor *c, uint32_t *v);
int dcpi_buf_get_bytes(struct dcpi_cursor *c, const uint8_t **p, size_t n);
/* A varint-length string, at most max bytes; returned NUL-terminated in a
 * malloc'd copy the caller frees.  Embedded NULs are refused. */
int dcpi_buf_get_str(struct dcpi_cursor *c, char **s, size_t max);

#endif
