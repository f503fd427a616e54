/* Lower-case hex of a byte string (build-ids in paths, messages and
 * reports). */
#ifndef DCPI_HEX_H
#define DCPI_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Hex form of len bytes into out, which holds 2*len+1 bytes; always
 * NUL-terminated. */
void dcpi_hex(const uint8_t *id, size_t len, char *out);

#endif
