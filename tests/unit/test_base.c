/* lib/base: the grow helper of lib/internal.h and hex strings. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "internal.h"
#include "tap.h"

static void test_grow(void)
{
	int *v = NULL, *keep;
	size_t cap = 0, prev;
	int err = 0, moves = 0;

	for (size_t n = 0; n < 1000 && !err; n++) {
		prev = cap;
		err = DCPI_GROW(v, cap, n + 1, SIZE_MAX, "ints");
		if (!err)
			v[n] = (int)n;
		moves += cap != prev;
	}
	T_EQ(err, 0, "1000 appends");
	T_EQ(v[999], 999, "contents kept across growth");
	T_OK(cap >= 1000 && cap < 2048, "capacity doubles (%zu)", cap);
	T_OK(moves <= 7, "log(n) reallocations (%d)", moves);

	keep = v;
	prev = cap;
	err = DCPI_GROW(v, cap, prev + 1, prev, "ints");
	T_EQ(err, -EFBIG, "past max: -EFBIG");
	T_OK(strstr(dcpi_errmsg(), "more than") && strstr(dcpi_errmsg(), "ints"),
	     "message names the cap: %s", dcpi_errmsg());
	T_OK(v == keep && cap == prev, "array and capacity unchanged on error");

	err = dcpi_grow((void **)&v, &cap, cap + 1, SIZE_MAX / 2, SIZE_MAX, "huge things");
	T_EQ(err, -ENOMEM, "size overflow: -ENOMEM, no wrap-around");
	T_OK(v == keep && cap == prev, "unchanged after overflow");

	err = DCPI_GROW(v, cap, 10, 5, "ints");
	T_EQ(err, 0, "need within capacity: nothing to do, whatever max says");
	free(v);

	v = NULL, cap = 0;
	T_EQ(DCPI_GROW(v, cap, 3, 20, "ints"), 0, "small first growth");
	T_EQ(cap, DCPI_GROW_MIN, "first capacity DCPI_GROW_MIN");
	T_EQ(DCPI_GROW(v, cap, 17, 20, "ints"), 0, "growth clipped");
	T_EQ(cap, 20, "capacity clipped to max");
	free(v);
}

static void test_mul(void)
{
	size_t out = 0;

	T_EQ(dcpi_size_mul(1u << 20, 1u << 10, &out), 0, "ordinary product");
	T_EQ(out, (size_t)1 << 30, "value");
	T_EQ(dcpi_size_mul(SIZE_MAX / 2 + 1, 2, &out), -ENOMEM, "overflow refused");
}

static void test_hex(void)
{
	const uint8_t id[] = { 0x00, 0xab, 0x7f, 0x10 };
	char out[2 * sizeof(id) + 1];

	dcpi_hex(id, sizeof(id), out);
	T_STREQ(out, "00ab7f10", "lower-case hex");
	dcpi_hex(id, 0, out);
	T_STREQ(out, "", "empty");
}

int main(void)
{
	test_grow();
	test_mul();
	test_hex();
	return t_done();
}
