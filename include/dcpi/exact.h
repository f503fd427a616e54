/* Exact execution counts of one image, keyed by its build-id, stored in
 * the database beside the samples (DB/exact/BUILDID-HEX): what dcpix(1)
 * records from a run under callgrind and dcpicalc -exact reads.
 *
 * File format (text, one record a line): "dcpi-exact 1", "path PATH",
 * "buildid HEX", "runs N" (how many dcpix runs the counts add up; absent
 * in older files: 1), then "i VADDR COUNT" per instruction executed (hex
 * vaddr, decimal count), then "j FROM TO COUNT" per jump taken (the
 * source instruction's and the target's vaddrs).  Addresses are the
 * image's ELF virtual addresses.  Readers check every field (digits only:
 * no sign, no space inside a number, nothing past 64 bits; a count at
 * most DCPI_EXACT_COUNT_MAX) and cap the file at DCPI_EXACT_MAX_BYTES.
 *
 * Ownership: a struct dcpi_exact owns its arrays and path
 * (dcpi_exact_free).  insns are sorted by vaddr, unique; jumps by (from,
 * to), unique. */
#ifndef DCPI_EXACT_H
#define DCPI_EXACT_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_EXACT_MAX_BYTES ((size_t)512 << 20)
#define DCPI_EXACT_MAX_BUILDID 64
/* 2^53 - 1: exact in a double (the cost model's arithmetic), and beyond any
 * run under callgrind (10^15 executions of one instruction) */
#define DCPI_EXACT_COUNT_MAX ((UINT64_C(1) << 53) - 1)

struct dcpi_exact_insn {
	uint64_t vaddr, count;
};

struct dcpi_exact_jump {
	uint64_t from, to, count;
};

struct dcpi_exact {
	char *path;
	uint8_t build_id[DCPI_EXACT_MAX_BUILDID];
	size_t build_id_len;
	uint64_t runs;          /* runs added up (0 reads as 1) */
	struct dcpi_exact_insn *insns;
	size_t ninsns, insns_cap;
	struct dcpi_exact_jump *jumps;
	size_t njumps, jumps_cap;
};

/* Append a count (any order; dcpi_exact_sort sums duplicates).  0 or
 * -ENOMEM / -E2BIG. */
int dcpi_exact_add_insn(struct dcpi_exact *e, uint64_t vaddr, uint64_t count);
int dcpi_exact_add_jump(struct dcpi_exact *e, uint64_t from, uint64_t to, uint64_t count);
/* Sort and merge (counts of the same address or jump added up). */
void dcpi_exact_sort(struct dcpi_exact *e);
/* Add from's counts and runs to into's (one image's runs summed, as DCPI's
 * dcpisumxct did), sorted.  0 or -ENOMEM / -E2BIG (into then unchanged in
 * what it held before, but may hold part of from's counts). */
int dcpi_exact_merge(struct dcpi_exact *into, const struct dcpi_exact *from);
/* Write DB/exact/BUILDID atomically (the directory is made 0700).
 * -EINVAL without a build-id. */
int dcpi_exact_write(const char *db, const struct dcpi_exact *e);
/* Read the counts of the image with this build-id: 0, -ENOENT (none
 * recorded), -EBADMSG (a corrupt file: the message says where). */
int dcpi_exact_read(const char *db, const uint8_t *build_id, size_t len, struct dcpi_exact *out);
/* The count of the instruction at vaddr, 0 when it never ran. O(log n). */
uint64_t dcpi_exact_count(const struct dcpi_exact *e, uint64_t vaddr);
void dcpi_exact_free(struct dcpi_exact *e);

#endif
