/* Profile files: round trip, merge, set_rows, hostile input, atomic writes.
 *
 *   test_profile               run the tests (TAP)
 *   test_profile --write FILE  write the fixed small profile of the e2e
 *                              tests to FILE and describe on stdout what it
 *                              holds, one "key value..." line per field and
 *                              row (tests/e2e/cat.sh derives its expected
 *                              output from that description)
 *   test_profile --seed DIR    write the fuzz seed corpus into DIR
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/profile.h"
#include "tap.h"

/* ---- fixtures ------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void) /* xorshift64*: deterministic for a seed */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static void add_event(struct dcpi_profile *p, const char *name, uint64_t period, uint32_t ppm)
{
	struct dcpi_profile_event *ev = &p->events[p->nevents++];

	ev->name = strdup(name);
	ev->period = period;
	ev->monitored_ppm = ppm;
}

static void set_identity(struct dcpi_profile *p, const char *path, int64_t pid)
{
	p->path = strdup(path);
	p->build_id_len = 20;
	for (unsigned i = 0; i < p->build_id_len; i++)
		p->build_id[i] = (uint8_t)(i * 7 + 3);
	p->size = 123456;
	p->mtime = 1700000000;
	p->epoch = strdup("20261122T101500Z");
	p->platform = strdup("testhost");
	p->kind = DCPI_IMAGE_FILE;
	p->pid = pid;
	p->text_start = 0x1040;
	p->text_size = 0x2000;
}

/* n random rows over the profile's events, through set_rows. */
static int random_rows(struct dcpi_profile *p, size_t n, uint64_t seed, uint64_t span)
{
	uint64_t *off = calloc(n ? n : 1, sizeof(*off));
	uint64_t *cnt = calloc(n * p->nevents + 1, sizeof(*cnt));
	int err;

	rng_state = seed;
	for (size_t r = 0; r < n; r++) {
		off[r] = rng() % span;
		for (uint32_t e = 0; e < p->nevents; e++)
			cnt[r * p->nevents + e] = rng() % 5 == 0 ? 0 : rng() % 100000;
	}
	err = dcpi_profile_set_rows(p, n, off, cnt);
	free(off);
	free(cnt);
	return err;
}

static void make_random(struct dcpi_profile *p, size_t nrows, uint64_t seed)
{
	dcpi_profile_init(p);
	set_identity(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", -1);
	add_event(p, "cycles", 64000, 1000000);
	add_event(p, "instructions", 100000, 500000);
	add_event(p, "L1-dcache-load-misses", 1000, 250000);
	random_rows(p, nrows, seed, 1u << 22);
}

/* The fixed small profile of the e2e test and the fuzz seeds. */
static const uint64_t small_rows[][3] = {
	{ 0x1040, 12, 30 }, { 0x1044, 7, 0 },    { 0x1050, 0, 5 },  { 0x10a8, 130, 220 },
	{ 0x10ac, 41, 17 }, { 0x1100, 3, 3 },    { 0x1234, 99, 1 }, { 0x2000, 1, 250 },
	{ 0x2f00, 56, 56 }, { 0x3000, 1000, 999 },
};
#define NSMALL (sizeof(small_rows) / sizeof(small_rows[0]))

static void make_small(struct dcpi_profile *p, size_t nrows)
{
	uint64_t off[NSMALL], cnt[NSMALL * 2];

	dcpi_profile_init(p);
	set_identity(p, "/opt/dcpi-test/bin/app", 4242);
	add_event(p, "cycles", 64000, 1000000);
	add_event(p, "instructions", 100000, 512345);
	for (size_t r = 0; r < nrows && r < NSMALL; r++) {
		off[r] = small_rows[r][0];
		cnt[r * 2] = small_rows[r][1];
		cnt[r * 2 + 1] = small_rows[r][2];
	}
	dcpi_profile_set_rows(p, nrows < NSMALL ? nrows : NSMALL, off, cnt);
}

static int encode(const struct dcpi_profile *p, struct dcpi_buf *b)
{
	b->len = 0;
	return dcpi_profile_encode(p, b);
}

static int same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* 1 when every field and row of a and b is equal; says what differs. */
static int same_profile(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	int same = same_str(a->path, b->path) && a->build_id_len == b->build_id_len &&
		   !memcmp(a->build_id, b->build_id, a->build_id_len) && a->size == b->size &&
		   a->mtime == b->mtime && same_str(a->epoch, b->epoch) &&
		   same_str(a->platform, b->platform) && a->kind == b->kind && a->pid == b->pid &&
		   a->text_start == b->text_start && a->text_size == b->text_size &&
		   a->nevents == b->nevents && a->nrows == b->nrows;

	for (uint32_t e = 0; same && e < a->nevents; e++)
		same = same_str(a->events[e].name, b->events[e].name) &&
		       a->events[e].period == b->events[e].period &&
		       a->events[e].total == b->events[e].total &&
		       a->events[e].monitored_ppm == b->events[e].monitored_ppm;
	for (size_t r = 0; same && r < a->nrows; r++) {
		same = a->offsets[r] == b->offsets[r];
		for (uint32_t e = 0; same && e < a->nevents; e++)
			same = a->counts[r * a->nevents + e] == b->counts[r * b->nevents + e];
	}
	if (!same)
		printf("# profiles differ\n");
	return same;
}

static int is_empty(const struct dcpi_profile *p)
{
	return !p->path && !p->nevents && !p->nrows && !p->offsets && !p->counts;
}

/* ---- a hand encoder, written from dcpiformat(5) independently of lib ---- */

static void raw_varint(struct dcpi_buf *b, uint64_t v)
{
	do {
		uint8_t byte = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);

		dcpi_buf_put(b, &byte, 1);
		v >>= 7;
	} while (v);
}

static void raw_str(struct dcpi_buf *b, const char *s)
{
	raw_varint(b, strlen(s));
	dcpi_buf_put(b, s, strlen(s));
}

static void raw_crc(struct dcpi_buf *b)
{
	uint32_t c = (uint32_t)crc32(0L, b->data, (uInt)b->len);
	uint8_t le[4] = { (uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16), (uint8_t)(c >> 24) };

	dcpi_buf_put(b, le, 4);
}

/* Header up to the event count: path "/bin/x", build-id ab cd, size 10,
 * mtime -2, epoch "E", platform "h", kind 1 (kernel), pid 7, text 0x100+0x80. */
static void raw_header(struct dcpi_buf *b, uint64_t version)
{
	b->len = 0;
	dcpi_buf_put(b, "DCPIPROF", 8);
	raw_varint(b, version);
	raw_str(b, "/bin/x");
	raw_varint(b, 2);
	dcpi_buf_put(b, "\xab\xcd", 2);
	raw_varint(b, 10);
	raw_varint(b, 3); /* zigzag(-2) */
	raw_str(b, "E");
	raw_str(b, "h");
	raw_varint(b, 1);
	raw_varint(b, 14); /* zigzag(7) */
	raw_varint(b, 0x100);
	raw_varint(b, 0x80);
}

/* One event "cycles" period 1000 with the given total, ppm 999999. */
static void raw_event(struct dcpi_buf *b, uint64_t total)
{
	raw_varint(b, 1);
	raw_str(b, "cycles");
	raw_varint(b, 1000);
	raw_varint(b, total);
	raw_varint(b, 999999);
}

static int decode_msg(struct dcpi_buf *b, const char *want, int want_err)
{
	struct dcpi_profile p;
	int err = dcpi_profile_decode(b->data, b->len, &p);
	int ok = err == want_err && (!want || strstr(dcpi_errmsg(), want)) && is_empty(&p);

	if (!ok)
		printf("# err %d, message \"%s\"\n", err, dcpi_errmsg());
	dcpi_profile_free(&p);
	return ok;
}

static void test_hand_encoded(void)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_profile p;
	int err;

	raw_header(&b, 1);
	raw_event(&b, 12);
	raw_varint(&b, 2);
	raw_varint(&b, 0x120); raw_varint(&b, 5);
	raw_varint(&b, 0x10);  raw_varint(&b, 7);
	raw_crc(&b);
	err = dcpi_profile_decode(b.data, b.len, &p);
	T_EQ(err, 0, "a profile encoded by hand from dcpiformat(5) decodes");
	if (err)
		printf("# %s\n", dcpi_errmsg());
	if (!err) {
		T_OK(!strcmp(p.path, "/bin/x") && p.build_id_len == 2 && p.build_id[0] == 0xab &&
		     p.size == 10 && p.mtime == -2 && !strcmp(p.epoch, "E") &&
		     !strcmp(p.platform, "h") && p.kind == DCPI_IMAGE_KERNEL && p.pid == 7 &&
		     p.text_start == 0x100 && p.text_size == 0x80, "hand-encoded header fields");
		T_OK(p.nevents == 1 && !strcmp(p.events[0].name, "cycles") &&
		     p.events[0].period == 1000 && p.events[0].total == 12 &&
		     p.events[0].monitored_ppm == 999999, "hand-encoded event");
		T_OK(p.nrows == 2 && p.offsets[0] == 0x120 && p.offsets[1] == 0x130 &&
		     p.counts[0] == 5 && p.counts[1] == 7, "rows are offset deltas");
	}
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_round_trip(void)
{
	struct dcpi_profile a, b;
	struct dcpi_buf buf = DCPI_BUF_INIT, again = DCPI_BUF_INIT;
	int err;

	make_random(&a, 1000, 42);
	T_OK(a.nrows > 900 && a.nrows <= 1000, "1000 random rows (%zu after merging duplicates)",
	     a.nrows);
	T_EQ(encode(&a, &buf), 0, "encode 3 events x %zu rows", a.nrows);
	err = dcpi_profile_decode(buf.data, buf.len, &b);
	T_EQ(err, 0, "decode it back (%s)", err ? dcpi_errmsg() : "ok");
	T_OK(!err && same_profile(&a, &b), "identical fields and rows after the round trip");
	T_OK(!err && encode(&b, &again) == 0 && again.len == buf.len &&
	     !memcmp(again.data, buf.data, buf.len), "re-encoding gives the same bytes");
	dcpi_profile_free(&a);
	dcpi_profile_free(&b);

	dcpi_profile_init(&a); /* an empty profile: no events, no rows, no strings */
	T_EQ(encode(&a, &buf), 0, "encode an empty profile");
	err = dcpi_profile_decode(buf.data, buf.len, &b);
	T_OK(!err && b.nrows == 0 && b.nevents == 0 && b.pid == -1 && !strcmp(b.path, ""),
	     "an empty profile round-trips (pid -1, empty path)");
	dcpi_profile_free(&b);
	dcpi_buf_release(&buf);
	dcpi_buf_release(&again);
}

static void test_encode_refuses(void)
{
	struct dcpi_profile p;
	struct dcpi_buf b = DCPI_BUF_INIT;

	make_small(&p, NSMALL);
	p.events[0].total++;
	T_EQ(encode(&p, &b), -EINVAL, "encode refuses a total that is not its column's sum");
	T_EQ(b.len, 0, "and appends nothing");
	p.events[0].total--;
	p.offsets[3] = p.offsets[2];
	T_EQ(encode(&p, &b), -EINVAL, "encode refuses a repeated offset");
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

/* Reference for merge and set_rows: the count of (offset, event name) by
 * brute force over the inputs. */
static uint64_t brute_count(const struct dcpi_profile *const *ps, int n, uint64_t off,
			    const char *name)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		int e = dcpi_profile_event_index(ps[i], name);

		for (size_t r = 0; e >= 0 && r < ps[i]->nrows; r++)
			if (ps[i]->offsets[r] == off)
				sum += ps[i]->counts[r * ps[i]->nevents + e];
	}
	return sum;
}

static int has_offset(const struct dcpi_profile *p, uint64_t off)
{
	for (size_t r = 0; r < p->nrows; r++)
		if (p->offsets[r] == off)
			return 1;
	return 0;
}

static int check_merged(const struct dcpi_profile *m, const struct dcpi_profile *const *in)
{
	int ok = 1;

	for (size_t r = 0; ok && r < m->nrows; r++) {
		ok = r == 0 || m->offsets[r] > m->offsets[r - 1];
		for (uint32_t e = 0; ok && e < m->nevents; e++)
			ok = m->counts[r * m->nevents + e] ==
			     brute_count(in, 2, m->offsets[r], m->events[e].name);
	}
	for (int i = 0; ok && i < 2; i++)
		for (size_t r = 0; ok && r < in[i]->nrows; r++)
			ok = has_offset(m, in[i]->offsets[r]);
	for (uint32_t e = 0; ok && e < m->nevents; e++) {
		uint64_t sum = 0;

		for (size_t r = 0; r < m->nrows; r++)
			sum += m->counts[r * m->nevents + e];
		ok = sum == m->events[e].total;
	}
	return ok;
}

static void test_merge(void)
{
	struct dcpi_profile a, b, c, a0;
	const struct dcpi_profile *in[2] = { &a0, &b };
	uint64_t ta0, ti0, ti1, tb1;
	int err;

	make_random(&a, 300, 1);
	make_random(&a0, 300, 1);
	dcpi_profile_init(&b);
	set_identity(&b, "/other/path", 99);
	add_event(&b, "instructions", 100000, 777);
	add_event(&b, "branch-misses", 5000, 888);
	random_rows(&b, 300, 2, 1u << 12); /* dense: many offsets shared with a */
	random_rows(&a, 300, 1, 1u << 12);
	random_rows(&a0, 300, 1, 1u << 12);
	ta0 = a.events[0].total, ti0 = a.events[1].total, ti1 = b.events[0].total;
	tb1 = b.events[1].total;

	err = dcpi_profile_merge(&a, &b);
	T_EQ(err, 0, "merge profiles with different events");
	T_EQ(a.nevents, 4, "the new event is appended");
	T_OK(a.nevents == 4 && !strcmp(a.events[3].name, "branch-misses") &&
	     a.events[3].period == 5000, "appended event keeps its name and period");
	T_OK(a.events[0].total == ta0 && a.events[1].total == ti0 + ti1 &&
	     a.events[3].total == tb1, "totals add up by event name");
	T_EQ(a.events[1].monitored_ppm, 777, "monitored fraction is the newer one");
	T_OK(!strcmp(a.path, "/usr/lib/x86_64-linux-gnu/libc.so.6") && a.pid == -1,
	     "identity of the destination is kept");
	T_OK(check_merged(&a, in), "every merged row is the sum of its inputs (%zu rows)", a.nrows);
	T_OK(a.nrows < a0.nrows + b.nrows, "overlapping offsets became single rows");

	make_random(&c, 10, 3);
	c.events[0].period = 1;
	T_EQ(dcpi_profile_merge(&a, &c), -EINVAL, "an event with another period is refused");
	T_OK(a.nevents == 4 && check_merged(&a, in), "and the destination is unchanged");
	dcpi_profile_free(&c);

	dcpi_profile_init(&c);
	for (int e = 0; e < DCPI_MAX_EVENTS; e++) {
		char name[16];

		snprintf(name, sizeof(name), "ev%d", e);
		add_event(&c, name, 1, 0);
	}
	T_EQ(dcpi_profile_merge(&a, &c), -E2BIG, "more than DCPI_MAX_EVENTS events: -E2BIG");
	T_OK(a.nevents == 4 && check_merged(&a, in), "and the destination is unchanged");
	dcpi_profile_free(&c);

	/* Merging a profile into itself doubles it (src aliases dst). */
	make_random(&c, 50, 9);
	ta0 = c.events[2].total;
	T_OK(dcpi_profile_merge(&c, &c) == 0 && c.nevents == 3 &&
	     c.events[2].total == 2 * ta0, "a profile merged into itself doubles");
	dcpi_profile_free(&c);
	dcpi_profile_free(&a);
	dcpi_profile_free(&b);
	dcpi_profile_free(&a0);
}

static void test_set_rows(void)
{
	static const uint64_t off[] = { 50, 10, 50, 30, 10, 10, 20 };
	static const uint64_t cnt[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 };
	static const uint64_t want_off[] = { 10, 20, 30, 50 };
	static const uint64_t want_cnt[] = { 3 + 9 + 11, 4 + 10 + 12, 13, 14, 7, 8, 1 + 5, 2 + 6 };
	struct dcpi_profile p;
	int ok = 1;

	dcpi_profile_init(&p);
	add_event(&p, "a", 1, 0);
	add_event(&p, "b", 1, 0);
	T_EQ(dcpi_profile_set_rows(&p, 7, off, cnt), 0, "set_rows on unsorted duplicates");
	T_EQ(p.nrows, 4, "duplicates merged into 4 rows");
	for (size_t r = 0; ok && p.nrows == 4 && r < 4; r++)
		ok = p.offsets[r] == want_off[r] && p.counts[2 * r] == want_cnt[2 * r] &&
		     p.counts[2 * r + 1] == want_cnt[2 * r + 1];
	T_OK(ok && p.nrows == 4, "rows sorted, duplicate counts added");
	T_OK(p.events[0].total == 1 + 3 + 5 + 7 + 9 + 11 + 13 &&
	     p.events[1].total == 2 + 4 + 6 + 8 + 10 + 12 + 14, "totals recomputed");
	T_EQ(dcpi_profile_set_rows(&p, 0, NULL, NULL), 0, "set_rows with no rows");
	T_OK(p.nrows == 0 && p.events[0].total == 0, "clears rows and totals");
	dcpi_profile_free(&p);
}

static void test_truncation_and_flips(void)
{
	struct dcpi_profile p, q;
	struct dcpi_buf b = DCPI_BUF_INIT;
	size_t bad_trunc = 0, bad_flip = 0, no_msg = 0;

	make_random(&p, 200, 7);
	encode(&p, &b);
	for (size_t len = 0; len < b.len; len++) {
		/* A fresh copy of exactly len bytes, so ASan sees any overread. */
		uint8_t *cut = malloc(len ? len : 1);

		memcpy(cut, b.data, len);
		if (dcpi_profile_decode(cut, len, &q) != -EBADMSG || !is_empty(&q))
			bad_trunc++;
		else if (!strstr(dcpi_errmsg(), "byte"))
			no_msg++;
		dcpi_profile_free(&q);
		free(cut);
	}
	T_EQ(bad_trunc, 0, "every truncation 0..%zu of a profile is rejected", b.len - 1);
	T_EQ(no_msg, 0, "and every message says at which byte");
	dcpi_profile_free(&p);

	make_small(&p, NSMALL);
	encode(&p, &b);
	/* Every other value of every byte (CRC-32 catches any error burst of
	 * up to 32 bits, so none may get through). */
	for (size_t i = 0; i < b.len; i++) {
		for (unsigned x = 1; x < 256; x++) {
			b.data[i] ^= x;
			if (dcpi_profile_decode(b.data, b.len, &q) != -EBADMSG || !is_empty(&q))
				bad_flip++;
			dcpi_profile_free(&q);
			b.data[i] ^= x;
		}
	}
	T_EQ(bad_flip, 0, "all 255 other values of each byte of a %zu-byte profile are rejected",
	     b.len);
	T_EQ(dcpi_profile_decode(b.data, b.len, &q), 0, "the unflipped bytes still decode");
	dcpi_profile_free(&q);
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

/* A labelled profile is version 2 with its label after the pid; one
 * without a label stays version 1 (what older builds read), and a label
 * is part of a profile's identity. */
static void test_label(void)
{
	struct dcpi_profile p, q;
	struct dcpi_buf b = DCPI_BUF_INIT;
	char v[64];

	make_small(&p, 3);
	T_EQ(encode(&p, &b), 0, "unlabelled: encodes");
	T_EQ(b.data[8], 1, "unlabelled: version 1");
	p.label = strdup("comm=xz,uid=1000,cgroup=/user.slice");
	T_EQ(encode(&p, &b), 0, "labelled: encodes");
	T_EQ(b.data[8], 2, "labelled: version 2");
	T_EQ(dcpi_profile_decode(b.data, b.len, &q), 0, "labelled: decodes");
	T_OK(q.label && !strcmp(q.label, p.label) && q.pid == p.pid && q.nrows == 3,
	     "labelled: label, pid and rows read back (%s)", q.label ? q.label : "none");
	T_OK(dcpi_profile_label_value(q.label, "uid", v, sizeof(v)) == 0 && !strcmp(v, "1000"),
	     "label value of uid: %s", v);
	T_OK(dcpi_profile_label_value(q.label, "cgroup", v, sizeof(v)) == 0 &&
	     !strcmp(v, "/user.slice"), "label value of cgroup (the last): %s", v);
	T_EQ(dcpi_profile_label_value(q.label, "com", v, sizeof(v)), -ENOENT,
	     "a prefix of a key is no key");
	T_EQ(dcpi_profile_label_value(NULL, "comm", v, sizeof(v)), -ENOENT, "no label: no value");
	b.len -= 6; /* cut inside the rows */
	T_OK(decode_msg(&b, NULL, -EBADMSG), "labelled, truncated: refused");
	dcpi_profile_free(&q);
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

static void test_messages(void)
{
	struct dcpi_profile p;
	struct dcpi_buf b = DCPI_BUF_INIT;

	make_small(&p, 3);
	encode(&p, &b);
	b.data[0] = 'X';
	T_OK(decode_msg(&b, "not a dcpi profile", -EBADMSG), "wrong magic: not a dcpi profile");
	b.data[0] = 'D';
	b.data[8] = 3;
	T_OK(decode_msg(&b, "unsupported version 3 at byte 8", -EBADMSG), "version 3 refused");
	b.data[8] = 1;
	b.data[b.len - 1] ^= 1;
	T_OK(decode_msg(&b, "checksum mismatch", -EBADMSG), "a bad CRC: checksum mismatch");
	b.data[b.len - 1] ^= 1;
	dcpi_buf_put(&b, "", 1);
	T_OK(decode_msg(&b, "trailing garbage", -EBADMSG), "one extra byte: trailing garbage");
	b.len -= 5;
	T_OK(decode_msg(&b, "truncated", -EBADMSG), "no checksum: truncated");
	dcpi_profile_free(&p);

	raw_header(&b, 1);
	raw_varint(&b, DCPI_MAX_EVENTS + 1);
	raw_crc(&b);
	T_OK(decode_msg(&b, "event count 17 at byte", -EBADMSG), "17 events refused");

	raw_header(&b, 1);
	raw_event(&b, 2);
	raw_varint(&b, 2);
	raw_varint(&b, 0x10); raw_varint(&b, 1);
	raw_varint(&b, 0);    raw_varint(&b, 1);
	raw_crc(&b);
	T_OK(decode_msg(&b, "row 1 at byte", -EBADMSG), "a repeated offset (delta 0) refused");

	raw_header(&b, 1);
	raw_event(&b, 2);
	raw_varint(&b, 2);
	raw_varint(&b, UINT64_MAX - 1); raw_varint(&b, 1);
	raw_varint(&b, 2);              raw_varint(&b, 1);
	raw_crc(&b);
	T_OK(decode_msg(&b, "overflows", -EBADMSG), "an offset past 2^64 refused");

	raw_header(&b, 1);
	raw_event(&b, 5); /* the rows add up to 3 */
	raw_varint(&b, 2);
	raw_varint(&b, 0x10); raw_varint(&b, 1);
	raw_varint(&b, 0x10); raw_varint(&b, 2);
	raw_crc(&b);
	T_OK(decode_msg(&b, "corrupt", -EBADMSG), "a total that is not its column's sum");

	raw_header(&b, 1);
	raw_varint(&b, 0);
	raw_varint(&b, (uint64_t)1 << 40);
	raw_crc(&b);
	T_OK(decode_msg(&b, "cannot fit", -EBADMSG),
	     "2^40 rows refused before allocating (not -ENOMEM)");

	b.len = 0;
	dcpi_buf_put(&b, "DCPIPROF\x01", 9);
	raw_varint(&b, DCPI_PROFILE_STR_MAX + 1);
	for (int i = 0; i <= DCPI_PROFILE_STR_MAX; i++)
		dcpi_buf_put(&b, "a", 1);
	T_OK(decode_msg(&b, "path: string of 4097 bytes", -EBADMSG), "a path over the limit");
	dcpi_buf_release(&b);
}

/* ---- files ---------------------------------------------------------------- */

static char tmpdir[64];

static int count_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static int file_is(const char *path, const char *want)
{
	uint8_t *data;
	size_t len;
	int same;

	if (dcpi_file_read(path, 1 << 20, &data, &len))
		return 0;
	same = len == strlen(want) && !memcmp(data, want, len);
	free(data);
	return same;
}

static void test_atomic_write(void)
{
	char path[128], sub[96], tmp[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/f", tmpdir);
	T_EQ(dcpi_file_write_atomic(path, "old", 3, 0600), 0, "atomic write creates a file");
	T_EQ(dcpi_file_write_atomic(path, "newer", 5, 0640), 0, "and replaces it");
	T_OK(file_is(path, "newer"), "the file holds the new contents");
	T_OK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640, "with the given mode");
	T_EQ(count_temps(tmpdir), 0, "no temporary file is left");

	/* A directory squatting on the temporary name: creation fails. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	mkdir(tmp, 0700);
	T_OK(dcpi_file_write_atomic(path, "x", 1, 0600) < 0 && strstr(dcpi_errmsg(), tmp),
	     "a failure to create the temporary file is reported, naming it");
	T_OK(file_is(path, "newer"), "and the old file is intact");
	rmdir(tmp);

	/* Running out of space mid-write (the file size limit stands in for
	 * ENOSPC): the temporary file goes, the old file stays. */
	struct rlimit old, small = { 2, 0 };
	getrlimit(RLIMIT_FSIZE, &old);
	small.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &small);
	int err = dcpi_file_write_atomic(path, "too long", 8, 0600);
	setrlimit(RLIMIT_FSIZE, &old);
	T_EQ(err, -EFBIG, "a write that runs out of room fails (%s)", dcpi_errmsg());
	T_OK(file_is(path, "newer") && count_temps(tmpdir) == 0,
	     "leaving the old file and no temporary file");

	snprintf(sub, sizeof(sub), "%s/ro", tmpdir);
	snprintf(path, sizeof(path), "%s/f", sub);
	mkdir(sub, 0700);
	dcpi_file_write_atomic(path, "old", 3, 0600);
	chmod(sub, 0500);
	if (geteuid() == 0) {
		T_SKIP("write into a read-only directory: root ignores directory permissions");
	} else {
		T_OK(dcpi_file_write_atomic(path, "new", 3, 0600) == -EACCES,
		     "a write into a read-only directory fails with EACCES");
		T_OK(file_is(path, "old") && count_temps(sub) == 0, "leaving the old file alone");
	}
	chmod(sub, 0700);
}

static void test_read_names_file(void)
{
	char path[128];
	struct dcpi_profile p;
	int err;

	snprintf(path, sizeof(path), "%s/prof", tmpdir);
	make_small(&p, NSMALL);
	T_EQ(dcpi_profile_write(path, &p, 0600), 0, "dcpi_profile_write");
	dcpi_profile_free(&p);
	T_EQ(dcpi_profile_read(path, &p), 0, "dcpi_profile_read reads it back");
	T_EQ(p.nrows, NSMALL, "with its rows");
	dcpi_profile_free(&p);
	truncate(path, 20);
	err = dcpi_profile_read(path, &p);
	T_OK(err == -EBADMSG && !strncmp(dcpi_errmsg(), path, strlen(path)),
	     "a read error starts with the file name: %s", dcpi_errmsg());
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	err = dcpi_profile_read(path, &p);
	T_OK(err == -ENOENT && !strncmp(dcpi_errmsg(), path, strlen(path)),
	     "a missing file is -ENOENT naming it");
	T_OK(is_empty(&p), "and leaves the profile empty");
}

static void cleanup(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
}

/* ---- generator modes ------------------------------------------------------ */

static int write_small(const char *path)
{
	struct dcpi_profile p;
	int err;

	make_small(&p, NSMALL);
	err = dcpi_profile_write(path, &p, 0644);
	if (err) {
		fprintf(stderr, "test_profile: %s\n", dcpi_errmsg());
		return 1;
	}
	printf("path %s\nbuild-id ", p.path);
	for (unsigned i = 0; i < p.build_id_len; i++)
		printf("%02x", p.build_id[i]);
	printf("\nsize %" PRIu64 "\nmtime %" PRId64 "\nepoch %s\nplatform %s\nkind file\n"
	       "pid %" PRId64 "\ntext-start %" PRIu64 "\ntext-size %" PRIu64 "\n",
	       p.size, p.mtime, p.epoch, p.platform, p.pid, p.text_start, p.text_size);
	for (uint32_t e = 0; e < p.nevents; e++)
		printf("event %s %" PRIu64 " %u\n", p.events[e].name, p.events[e].period,
		       p.events[e].monitored_ppm);
	/* The rows as given to set_rows, not as the library stored them. */
	for (size_t r = 0; r < NSMALL; r++)
		printf("row %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", small_rows[r][0],
		       small_rows[r][1], small_rows[r][2]);
	dcpi_profile_free(&p);
	return 0;
}

static int write_seeds(const char *dir)
{
	static const size_t sizes[] = { 0, 1, 3, NSMALL };
	char path[512];
	struct dcpi_profile p;
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path), "%s/small-%zu-rows.prof", dir, sizes[i]);
		make_small(&p, sizes[i]);
		err = dcpi_profile_write(path, &p, 0644);
		dcpi_profile_free(&p);
	}
	snprintf(path, sizeof(path), "%s/random-3-events.prof", dir);
	make_random(&p, 40, 5);
	err = err ? err : dcpi_profile_write(path, &p, 0644);
	dcpi_profile_free(&p);
	if (err)
		fprintf(stderr, "test_profile: %s\n", dcpi_errmsg());
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_small(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--seed"))
		return write_seeds(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: test_profile [--write FILE | --seed DIR]\n");
		return 2;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_profile.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_hand_encoded();
	test_round_trip();
	test_encode_refuses();
	test_merge();
	test_set_rows();
	test_truncation_and_flips();
	test_messages();
	test_label();
	test_atomic_write();
	test_read_names_file();
	cleanup();
	return t_done();
}
