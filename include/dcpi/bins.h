/* Latency bins (issue 26; DCPI's value profiler's bins file): ranges of
 * measured load latency, each stored as one representative value and
 * named in reports.  The file, text, one bin a line:
 *
 *   MIN MAX REP NAME
 *
 * decimal cycles (of the time-stamp counter, as the value profiler times
 * loads), MIN <= REP <= MAX; the ranges in increasing order and disjoint
 * (a latency in a gap between them is in no bin); NAME 1 to
 * DCPI_BIN_NAME_MAX characters of letters, digits and "_.+-", each name
 * once.  '#' starts a comment to the end of its line; blank lines are
 * skipped.  At most DCPI_BINS_MAX bins, DCPI_BINS_FILE_MAX bytes.
 * dcpi bins writes one for the machine it runs on (dcpi-bins(1)). */
#ifndef DCPI_BINS_H
#define DCPI_BINS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"

#define DCPI_BINS_MAX 32
#define DCPI_BIN_NAME_MAX 31
#define DCPI_BINS_FILE_MAX (64u << 10)

struct dcpi_bin {
	uint64_t min, max, rep;
	char name[DCPI_BIN_NAME_MAX + 1];
};

struct dcpi_bins {
	size_t n;
	struct dcpi_bin v[DCPI_BINS_MAX];
};

/* Parse len bytes of text into b: 0, or -EBADMSG "line N: what" (b then
 * holds nothing). */
int dcpi_bins_parse(const char *text, size_t len, struct dcpi_bins *b);
/* The same from a file (a regular file, at most DCPI_BINS_FILE_MAX bytes):
 * its errors name the path. */
int dcpi_bins_read(const char *path, struct dcpi_bins *b);
/* b as a file's text (a header comment, then a line a bin), appended to
 * out; -EINVAL if b breaks a rule above. */
int dcpi_bins_format(const struct dcpi_bins *b, struct dcpi_buf *out);
/* The bins used where none are given: powers of two, c0-3, c4-7, c8-15,
 * ..., c512-1023 and c1024+, each represented by its middle. */
void dcpi_bins_default(struct dcpi_bins *b);
/* The bin holding a latency of cycles, or -1 (below, above or between). */
int dcpi_bins_find(const struct dcpi_bins *b, uint64_t cycles);

#endif
