/* SHA-1, for naming content (pseudo-images of JIT code are identified by
 * the SHA-1 of what they hold, the size of a GNU build-id).  Not for
 * anything that needs collision resistance against a determined attacker:
 * a collision only makes two JIT images share a name in one database. */
#ifndef DCPI_SHA1_H
#define DCPI_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_SHA1_LEN 20

struct dcpi_sha1 {
	uint32_t h[5];
	uint64_t nbytes;
	uint8_t block[64];
	size_t fill;
};

void dcpi_sha1_init(struct dcpi_sha1 *s);
void dcpi_sha1_update(struct dcpi_sha1 *s, const void *p, size_t n);
void dcpi_sha1_final(struct dcpi_sha1 *s, uint8_t out[DCPI_SHA1_LEN]);

#endif
