/* UTF-8, strictly: what the writers of names (JSON, the commands' text)
 * pass through and what they escape. */
#ifndef DCPI_UTF8_H
#define DCPI_UTF8_H

#include <stddef.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence at s (RFC 3629:
 * no overlong forms, surrogates or code points past U+10FFFF), or 0 when
 * the byte at s begins none (a lone continuation byte, a truncated
 * sequence, 0xc0, 0xc1, 0xf5..0xff).  A NUL at s is a sequence of 1; a
 * NUL inside one ends it: s must be NUL-terminated or hold the whole
 * sequence. */
size_t dcpi_utf8_len(const unsigned char *s);

#endif
