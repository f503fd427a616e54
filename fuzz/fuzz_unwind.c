/* libFuzzer target for the stack walk (dcpi/unwind.h), where a user's
 * stack meets the daemon: the input gives a frame's registers (24 bytes),
 * a table of rows (a count byte, then 12 bytes a row: start, kind,
 * offsets) and the rest is the sampled stack copy.  The walk is run to its
 * end as dcpid runs it; every frame it accepts must lie above the last
 * (the CFA rises, so no stack can loop), hold a user address, and every
 * read stays in the copy (ASan checks that). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_unwind_row rows[32];
	struct dcpi_unwind_table t = { rows, 0, 0, 0 };
	struct dcpi_unwind_regs r;
	struct dcpi_unwind_stack s;
	size_t n, pos = 25;
	uint8_t *copy;

	if (size < 25)
		return 0;
	memcpy(&r, data, 24);
	n = data[24] % 32;
	for (size_t i = 0; i < n && pos + 12 <= size; i++, pos += 12) {
		uint32_t start;
		int32_t off;
		int16_t bp;

		memcpy(&start, data + pos, 4);
		memcpy(&off, data + pos + 4, 4);
		memcpy(&bp, data + pos + 8, 2);
		rows[t.n] = (struct dcpi_unwind_row){ start, off, bp, data[pos + 10] % 5, 0 };
		if (t.n && rows[t.n].start <= rows[t.n - 1].start)
			continue; /* tables are sorted */
		t.n++;
	}
	/* the copy in a buffer of its own size, so ASan sees any read past it */
	if (!(copy = malloc(size - pos + 1)))
		return 0;
	memcpy(copy, data + pos, size - pos);
	s = (struct dcpi_unwind_stack){ copy, size - pos, r.sp, NULL };
	for (int k = 0; k < MAX_FRAMES; k++) {
		uint64_t sp = r.sp;
		const struct dcpi_unwind_row *row = dcpi_unwind_lookup(&t, k ? r.ip - 1 : r.ip);

		if (dcpi_unwind_step(row, &r, &s, data[24] & 0x80) != DCPI_UW_OK)
			break;
		if (r.sp <= sp || r.ip >= 0x800000000000ull)
			abort();
		if (k == MAX_FRAMES - 1)
			abort(); /* the walk must end: sp rises within a finite copy */
	}
	free(copy);
	return 0;
}
