/* libdcpi's private helpers, for every layer (never installed, never
 * included by the commands).
 *
 * Growing arrays: one overflow-checked, capped helper instead of a
 * hand-written realloc at every site (git's ALLOC_GROW and st_mult,
 * libbpf's libbpf_ensure_mem). */
#ifndef DCPI_INTERNAL_H
#define DCPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_GROW_MIN 16   /* first capacity, in elements */

/* Make room for need elements of elsize bytes in *arr, whose capacity is
 * *cap elements.  The capacity at least doubles (so n appends cost O(n)),
 * starts at DCPI_GROW_MIN, and never exceeds max elements.  On error *arr
 * and *cap are unchanged (the old array stays the caller's) and it returns
 * -EFBIG "more than MAX WHAT" when need > max, or -ENOMEM when the size
 * overflows or the allocation fails.  what names the elements in those
 * messages ("images", "samples"). */
int dcpi_grow(void **arr, size_t *cap, size_t need, size_t elsize, size_t max,
	      const char *what);

/* The usual call: room for need elements of arr's type. */
#define DCPI_GROW(arr, cap, need, max, what) \
	dcpi_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)), (max), (what))

/* a * b into *out; -ENOMEM (with a message) when it overflows size_t. */
int dcpi_size_mul(size_t a, size_t b, size_t *out);

/* a + b, or UINT64_MAX when that overflows: sums of counts a file
 * claims, so that hostile values cannot wrap into small ones. */
static inline uint64_t dcpi_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Write all len bytes to fd (retrying short writes and EINTR): 0, or
 * -errno (-EIO when write(2) wrote nothing); no message. */
int dcpi_write_all(int fd, const void *data, size_t len);
/* The same into a new, empty file, with every 4 KiB-aligned block of zeros
 * left a hole (no disk space: JIT pseudo-images' no-code ranges). */
int dcpi_write_sparse(int fd, const void *data, size_t len);

/* A whole token of decimal digits as a u64: 0, or -1 (empty, another
 * character, or past 2^64 - 1).  No sign, no spaces. */
static inline int dcpi_dec_u64(const char *t, uint64_t *v)
{
	uint64_t x = 0;

	if (!*t)
		return -1;
	for (; *t; t++) {
		if (*t < '0' || *t > '9' || x > (UINT64_MAX - (uint64_t)(*t - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*t - '0');
	}
	*v = x;
	return 0;
}

/* The same of 1 to 16 lower-case hex digits (no 0x). */
static inline int dcpi_hex_u64(const char *t, uint64_t *v)
{
	uint64_t x = 0;
	size_t n = 0;

	for (; *t; t++, n++) {
		int d = *t >= '0' && *t <= '9' ? *t - '0' : *t >= 'a' && *t <= 'f' ? *t - 'a' + 10 : -1;

		if (d < 0 || n == 16)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	if (!n)
		return -1;
	*v = x;
	return 0;
}

/* A 64-bit mixer (MurmurHash3's finalizer) for open-addressing tables. */
static inline uint64_t dcpi_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* The same, keyed with a random seed of this process (dcpi_hash_seed, drawn
 * once from getrandom), for tables whose keys a user chooses: the addresses
 * a program runs at, the frames of its stacks, the paths it maps.  Without a
 * key, whoever knows the mixer can pick keys that all land in one run of
 * slots, and each insertion then costs the whole run (a collector stalled
 * by one process).  Slot order then differs from run to run: nothing may be
 * printed or written in slot order. */
uint64_t dcpi_hash_seed(void);

static inline uint64_t dcpi_hash64(uint64_t x)
{
	return dcpi_mix64(x ^ dcpi_hash_seed());
}

/* FNV-1a over n bytes from h; dcpi_hash_bytes starts it at the basis
 * keyed with the seed: the strings a user chooses (paths, names, labels),
 * before a final mix. */
static inline uint64_t dcpi_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t dcpi_hash_bytes(const void *p, size_t n)
{
	return dcpi_fnv1a(0xcbf29ce484222325ull ^ dcpi_hash_seed(), p, n);
}

/* A key and what it carries (an index, most often). */
struct dcpi_kv {
	uint64_t key, val;
};

/* Sort n pairs by key, stably (equal keys keep their order), in O(n): a
 * least-significant-byte radix sort, with one pass per key byte in which
 * the keys differ.  It replaces qsort where large tables (symbols: 10^5
 * and more) are sorted by address.  Returns 0, or -ENOMEM (with a
 * message) when the scratch copy of n pairs cannot be allocated. */
int dcpi_sort_kv(struct dcpi_kv *a, size_t n);

#endif
