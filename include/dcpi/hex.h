/* Lower-case hex of a byte string (build-ids in paths, messages and
 * reports). */
#ifndef DCPI_HEX_H
#define DCPI_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Hex form of len bytes into out, which holds 2*len+1 bytes; always
 * NUL-terminated. */
void dcpi_hex(const uint8_t *id, size_t len, char *out);

/* 1 to 16 hex digits (either case) at *pp, up to end (NULL: a NUL ends
 * them), into *v, *pp moved past them; -1 (nothing moved) for none or
 * more than 16. */
int dcpi_hex_scan_u64(const char **pp, const char *end, uint64_t *v);

#endif
