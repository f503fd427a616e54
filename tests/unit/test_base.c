/* lib/base: the grow and sort helpers of lib/internal.h, the keyed hash,
 * hex strings, and batches of atomic file writes. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
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

static int kv_cmp(const void *a, const void *b)
{
	const struct dcpi_kv *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->val < y->val ? -1 : x->val > y->val;
}

/* Against qsort by (key, input position): the same order means sorted
 * and stable.  Keys mix high and low bytes so that every pass runs, and
 * repeat so that stability shows. */
static void test_sort(void)
{
	enum { N = 5000 };
	struct dcpi_kv *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
	uint64_t x = 88172645463325252ull;
	size_t bad = 0;

	if (!a || !b) {
		T_OK(0, "sort: allocation");
		goto out;
	}
	for (size_t i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		a[i].key = (x % 97) << 56 | (x >> 20) % 300;
		a[i].val = i;
	}
	memcpy(b, a, N * sizeof(*a));
	qsort(b, N, sizeof(*b), kv_cmp);
	T_EQ(dcpi_sort_kv(a, N), 0, "sort: succeeds");
	for (size_t i = 0; i < N; i++)
		bad += a[i].key != b[i].key || a[i].val != b[i].val;
	T_EQ(bad, 0, "sort: ordered by key, equal keys in input order");
	for (size_t i = 0; i < N; i++)
		a[i] = (struct dcpi_kv){ 0x7f0000001000ull, N - i };
	T_EQ(dcpi_sort_kv(a, N), 0, "sort: equal keys");
	T_EQ(a[0].val, N, "sort: equal keys keep their order");
	T_EQ(dcpi_sort_kv(a, 0), 0, "sort: empty");
out:
	free(a);
	free(b);
}

/* The files of directory dir whose names are temporary ones. */
static int count_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += dcpi_file_is_tmp_name(e->d_name);
	if (d)
		closedir(d);
	return n;
}

static int file_is(const char *path, const char *want)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int ok = !dcpi_file_read(path, 1 << 20, &data, &len) && len == strlen(want) &&
		 !memcmp(data, want, len);

	free(data);
	return ok;
}

/* n files (n >= DCPI_FILE_BATCH_SYNCFS: one syncfs; fewer: fsyncs), then
 * one written again after its commit; a released batch leaves the old
 * contents and no temporary file. */
static void test_batch(unsigned n)
{
	char dir[] = "/tmp/dcpi-batch.XXXXXX", path[64][128];
	struct dcpi_file_batch b;
	size_t done = 99;
	int ok = 1;

	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		return;
	}
	dcpi_file_batch_init(&b);
	for (unsigned i = 0; i < n; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/f%u", dir, i);
		ok &= !dcpi_file_batch_add(&b, path[i], "new", 3, 0600);
		ok &= access(path[i], F_OK) != 0; /* not visible before the commit */
	}
	T_OK(ok, "%u files added, none visible yet", n);
	T_OK(dcpi_file_batch_has(&b, path[0]) && !dcpi_file_batch_has(&b, dir), "has");
	T_EQ(dcpi_file_batch_add(&b, path[0], "x", 1, 0600), -EEXIST, "a path twice: EEXIST");
	T_EQ(count_tmp(dir), n, "written under temporary names");
	T_EQ(dcpi_file_batch_commit(&b, &done), 0, "commit");
	T_EQ(done, n, "all in place");
	T_OK(file_is(path[0], "new") && file_is(path[n - 1], "new"), "new contents");
	T_EQ(count_tmp(dir), 0, "no temporary file left");
	T_OK(!dcpi_file_batch_has(&b, path[0]), "an empty batch after a commit");
	T_EQ(dcpi_file_batch_add(&b, path[0], "newer", 5, 0600), 0, "the same path again");
	dcpi_file_batch_release(&b);
	T_OK(file_is(path[0], "new") && count_tmp(dir) == 0,
	     "released uncommitted: old contents, no temporary file");
	for (unsigned i = 0; i < n; i++)
		unlink(path[i]);
	rmdir(dir);
}

/* Blocks of zeros become holes; the bytes read back are the same, whatever
 * the zeros' place (the middle, the end, a block only partly zero). */
static void test_sparse(void)
{
	char dir[] = "/tmp/dcpi-test-sparse.XXXXXX", path[64];
	size_t len = 10 * 4096 + 100;
	uint8_t *buf = calloc(1, len), *back = malloc(len);
	uint8_t *rd = NULL;
	size_t rn = 0;
	struct stat st;

	if (!mkdtemp(dir) || !buf || !back) {
		T_OK(0, "set-up");
		return;
	}
	memset(buf, 0xab, 4096);          /* block 0: data */
	buf[3 * 4096 + 7] = 1;            /* block 3: one byte in a block of zeros */
	snprintf(path, sizeof(path), "%s/f", dir);
	T_EQ(dcpi_file_write_atomic(path, buf, len, 0600), 0, "written, ending in zeros");
	T_EQ(dcpi_file_read(path, 1 << 20, &rd, &rn), 0, "read back");
	T_OK(rn == len && !memcmp(rd, buf, len), "the same %zu bytes", len);
	T_EQ(stat(path, &st), 0, "stat");
	T_OK((uint64_t)st.st_blocks * 512 <= 3 * 4096, "two blocks of data on disk, the zeros "
	     "holes (%lld bytes allocated)", (long long)st.st_blocks * 512);
	free(rd);
	memset(buf + len - 100, 0xcd, 100);
	T_EQ(dcpi_file_write_atomic(path, buf, len, 0600), 0, "written, ending in data");
	T_EQ(dcpi_file_read(path, 1 << 20, &rd, &rn), 0, "read back");
	T_OK(rn == len && !memcmp(rd, buf, len), "the same bytes, the tail too");
	free(rd);
	T_EQ(dcpi_file_write_atomic(path, buf, 0, 0600), 0, "an empty file");
	T_EQ(stat(path, &st), 0, "stat");
	T_EQ(st.st_size, 0, "is empty");
	unlink(path);
	rmdir(dir);
	free(buf);
	free(back);
}

/* The inverse of x * c mod 2^64 for odd c (Newton's iteration). */
static uint64_t inv_mul(uint64_t c)
{
	uint64_t x = c;

	for (int i = 0; i < 6; i++)
		x *= 2 - c * x;
	return x;
}

/* dcpi_mix64 undone: x ^= x >> 33 is its own inverse. */
static uint64_t unmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= inv_mul(0xc4ceb9fe1a85ec53ull);
	x ^= x >> 33;
	x *= inv_mul(0xff51afd7ed558ccdull);
	return x ^ (x >> 33);
}

/* Keys a user picks so that the unkeyed mixer puts them all in one slot of
 * a 2^16 table (what a program's addresses or stack frames could be made
 * to do) spread over the table under the keyed hash; and each process has
 * a seed of its own. */
static void test_hash(void)
{
	enum { N = 4096, BITS = 16 };
	static uint8_t used[1 << BITS];
	unsigned same = 0, distinct = 0;
	uint64_t child = 0, seed;
	int fd[2];
	pid_t pid;

	T_OK(pipe(fd) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		seed = dcpi_hash_seed();
		_exit(write(fd[1], &seed, sizeof(seed)) == (ssize_t)sizeof(seed) ? 0 : 1);
	}
	seed = dcpi_hash_seed();
	T_OK(read(fd[0], &child, sizeof(child)) == (ssize_t)sizeof(child), "the child's seed read");
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
	T_OK(seed != 0 && seed == dcpi_hash_seed(), "the seed is drawn once and kept");
	T_OK(child != 0 && child != seed, "a process started apart has a seed of its own");
	for (uint64_t j = 1; j <= N; j++) {
		uint64_t k = unmix64(j << BITS);

		same += (dcpi_mix64(k) & ((1u << BITS) - 1)) == 0;
		if (!used[dcpi_hash64(k) & ((1u << BITS) - 1)]++)
			distinct++;
	}
	T_EQ(same, (unsigned)N, "the %d chosen keys share one slot unkeyed", N);
	/* Random slots: about 3,970 distinct of 4,096; 3,800 is 10 sigma out. */
	T_OK(distinct >= 3800, "keyed, they spread: %u distinct slots of %d keys", distinct, N);
}

int main(void)
{
	test_hash();
	test_sparse();
	test_batch(3);
	test_batch(DCPI_FILE_BATCH_SYNCFS + 2);
	test_grow();
	test_mul();
	test_hex();
	test_sort();
	return t_done();
}
