/* Stack sets (dcpi/stacks.h): interning, the caps, the file's round trip,
 * merging, and the decoder's refusals one by one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/stacks.h"
#include "fixture.h"
#include "tap.h"

static const char *const evnames[] = { "cpu-clock", "page-faults" };
static const uint64_t periods[] = { 250000, 1 };

static void identity(struct dcpi_profile *p, const char *path, uint8_t id)
{
	dcpi_profile_init(p);
	p->path = (char *)path;
	p->build_id[0] = id;
	p->build_id_len = 20;
	p->size = 4096;
	p->mtime = -5;
	p->kind = DCPI_IMAGE_FILE;
	p->text_start = 0x1000;
	p->text_size = 0x2000;
}

/* a set of two images, two labels, three stacks */
static void sample_set(struct dcpi_stackset *s)
{
	struct dcpi_profile a, b;
	uint32_t ia, ib, lx;
	struct dcpi_stack_frame f[3];

	dcpi_stackset_init(s, 2, evnames, periods);
	s->epoch = strdup("20261126T000000Z");
	s->platform = strdup("h1");
	identity(&a, "/usr/bin/prog", 1);
	identity(&b, "/lib/libc.so.6", 2);
	dcpi_stackset_image(s, &a, &ia);
	dcpi_stackset_image(s, &b, &ib);
	dcpi_stackset_label(s, "comm=prog", &lx);
	f[0] = (struct dcpi_stack_frame){ ib, 0x1234 };
	f[1] = (struct dcpi_stack_frame){ ia, 0x1100 };
	f[2] = (struct dcpi_stack_frame){ ia, 0x1010 };
	dcpi_stackset_add(s, 0, -1, DCPI_STACK_END_WHOLE, f, 3, 0, 6);
	dcpi_stackset_add(s, lx, -1, DCPI_STACK_END_WHOLE, f, 3, 0, 3);
	f[1] = (struct dcpi_stack_frame){ DCPI_FRAME_UNKNOWN, 0 };
	dcpi_stackset_add(s, 0, -1, DCPI_STACK_END_NORULE, f, 2, 1, 1);
}

static uint64_t count_of(const struct dcpi_stackset *s, size_t i, unsigned e)
{
	return s->counts[i * s->nevents + e];
}

static void test_interning(void)
{
	struct dcpi_stackset s;
	struct dcpi_profile a;
	uint32_t i1, i2, l1, l2;
	struct dcpi_stack_frame f[DCPI_STACK_MAX_FRAMES + 10];

	sample_set(&s);
	T_EQ(s.nstacks, 3, "three distinct stacks: one label apart, one end apart");
	T_EQ(s.nimages, 2, "two images");
	T_EQ(s.nlabels, 2, "label 0 (unlabelled) and one more");
	T_STREQ(s.labels[0], "", "label 0 is the empty one");
	identity(&a, "/usr/bin/prog", 1);
	dcpi_stackset_image(&s, &a, &i1);
	a.mtime = 7;
	dcpi_stackset_image(&s, &a, &i2);
	T_OK(i1 == 0 && i2 == 2, "an image is its whole identity: another mtime is another image");
	dcpi_stackset_label(&s, "comm=prog", &l1);
	dcpi_stackset_label(&s, "comm=other", &l2);
	T_OK(l1 == 1 && l2 == 2, "labels interned");
	f[0] = s.frames[s.stacks[0].first];
	f[1] = s.frames[s.stacks[0].first + 1];
	f[2] = s.frames[s.stacks[0].first + 2];
	T_EQ(dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_WHOLE, f, 3, 1, 4), 0, "add again");
	T_OK(s.nstacks == 3 && count_of(&s, 0, 0) == 6 && count_of(&s, 0, 1) == 4,
	     "the same stack adds to its counts, per event");
	for (size_t k = 0; k < DCPI_STACK_MAX_FRAMES + 10; k++)
		f[k] = (struct dcpi_stack_frame){ 0, 0x1000 + k };
	dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_WHOLE, f, DCPI_STACK_MAX_FRAMES + 10, 0, 1);
	T_OK(s.stacks[3].nframes == DCPI_STACK_MAX_FRAMES && s.stacks[3].end == DCPI_STACK_END_CUT,
	     "a stack past %d frames is cut, and says so", DCPI_STACK_MAX_FRAMES);
	T_EQ(dcpi_stackset_add(&s, 9, -1, DCPI_STACK_END_WHOLE, f, 1, 0, 1), -EINVAL, "no such label");
	T_EQ(dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_N, f, 1, 0, 1), -EINVAL, "no such end");
	T_EQ(dcpi_stackset_add(&s, 0, -1, 0, f, 1, 2, 1), -EINVAL, "no such event");
	T_EQ(dcpi_stackset_add(&s, 0, -1, 0, f, 0, 0, 1), -EINVAL, "no frames");
	f[0].image = 77;
	T_EQ(dcpi_stackset_add(&s, 0, -1, 0, f, 1, 0, 1), -EINVAL, "a frame of no image");
	{
		struct dcpi_profile bad;
		uint32_t ib;

		identity(&bad, "/x", 9);
		bad.kind = DCPI_IMAGE_UNKNOWN + 1;
		T_EQ(dcpi_stackset_image(&s, &bad, &ib), -EINVAL,
		     "an image of no such kind: refused (the file could not be read back)");
	}
	dcpi_stackset_clear(&s);
	T_OK(s.nstacks == 0 && s.nimages == 0 && s.nlabels == 1 && s.nevents == 2,
	     "clear: no stacks, images or labels but the unlabelled; the events stay");
	dcpi_stackset_label(&s, "", &l1);
	T_EQ(l1, 0, "after clear, the empty label is still 0");
	dcpi_stackset_free(&s);
}

static void test_cap(void)
{
	struct dcpi_stackset s;
	struct dcpi_profile a;
	struct dcpi_stack_frame f[2];
	uint32_t ia;
	uint64_t total = 0, overflow = 0;
	int err = 0;

	dcpi_stackset_init(&s, 1, evnames, periods);
	identity(&a, "/bin/x", 1);
	dcpi_stackset_image(&s, &a, &ia);
	/* DCPI_STACKS_MAX stacks, then more of 4 leaves, then more of new leaves */
	for (uint64_t i = 0; i < DCPI_STACKS_MAX + 1000 && !err; i++) {
		f[0] = (struct dcpi_stack_frame){ ia, i < DCPI_STACKS_MAX ? 0 : i % 4 };
		f[1] = (struct dcpi_stack_frame){ ia, i + 1 };
		err = dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_WHOLE, f, 2, 0, 1);
	}
	T_EQ(err, 0, "adds past the cap succeed");
	for (size_t i = 0; i < s.nstacks; i++) {
		total += count_of(&s, i, 0);
		if (s.stacks[i].end == DCPI_STACK_END_OVERFLOW) {
			overflow += count_of(&s, i, 0);
			T_OK(s.stacks[i].nframes == 1, "an overflow stack is its leaf alone");
		}
	}
	T_EQ(total, DCPI_STACKS_MAX + 1000, "no sample lost past the cap");
	T_EQ(overflow, 1000, "the 1,000 past the cap are counted by their leaf");
	T_EQ(s.nstacks, DCPI_STACKS_MAX + 4, "four leaves past the cap: four more stacks");
	dcpi_stackset_free(&s);
}

/* Merging into a set at its images' cap keeps the stacks: frames of new
 * images "no image known"; a path the file could not hold is refused. */
static void test_merge_caps(void)
{
	struct dcpi_stackset full, src;
	struct dcpi_profile a;
	struct dcpi_stack_frame f[2];
	char path[64], *longp = malloc(5000);
	uint32_t idx, ia;
	int err = 0;
	uint64_t total = 0;

	dcpi_stackset_init(&full, 1, evnames, periods);
	for (uint32_t i = 0; i < DCPI_STACK_IMAGES_MAX && !err; i++) {
		snprintf(path, sizeof(path), "/lib/l%u.so", i);
		identity(&a, path, 1);
		err = dcpi_stackset_image(&full, &a, &idx);
	}
	T_EQ(err, 0, "%u images", DCPI_STACK_IMAGES_MAX);
	identity(&a, "/lib/one-more.so", 1);
	T_EQ(dcpi_stackset_image(&full, &a, &idx), -ENOSPC, "one more image: -ENOSPC");
	dcpi_stackset_init(&src, 1, evnames, periods);
	dcpi_stackset_image(&src, &a, &ia);
	f[0] = (struct dcpi_stack_frame){ ia, 0x1234 };
	f[1] = (struct dcpi_stack_frame){ ia, 0x1100 };
	dcpi_stackset_add(&src, 0, -1, DCPI_STACK_END_WHOLE, f, 2, 0, 5);
	T_EQ(dcpi_stackset_merge(&full, &src), 0, "merging a new image into a full set succeeds");
	for (size_t i = 0; i < full.nstacks; i++)
		total += full.counts[i];
	T_OK(full.nstacks == 1 && total == 5 && full.frames[0].image == DCPI_FRAME_UNKNOWN &&
	     full.frames[0].off == 0 && full.frames[1].image == DCPI_FRAME_UNKNOWN,
	     "its stack kept, its samples counted, its frames of no image known");
	memset(longp, 'x', 4999);
	longp[0] = '/';
	longp[4999] = 0;
	identity(&a, longp, 1);
	T_EQ(dcpi_stackset_image(&src, &a, &idx), -EINVAL,
	     "an image path longer than the file can hold: refused");
	dcpi_stackset_free(&src);
	dcpi_stackset_free(&full);
	free(longp);
}

static int encode(const struct dcpi_stackset *s, struct dcpi_buf *b)
{
	b->len = 0;
	return dcpi_stackset_encode(s, b);
}

static int same_frames(const struct dcpi_stack_frame *a, const struct dcpi_stack_frame *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].image != b[i].image || a[i].off != b[i].off)
			return 0;
	return 1;
}

static void test_roundtrip(void)
{
	struct dcpi_stackset s, d;
	struct dcpi_buf b = DCPI_BUF_INIT, b2 = DCPI_BUF_INIT;
	int ok = 1;

	sample_set(&s);
	T_EQ(encode(&s, &b), 0, "encode");
	T_OK(b.len > 12 && !memcmp(b.data, "DCPISTKS", 8), "the file starts with its magic");
	T_EQ(dcpi_stackset_decode(b.data, b.len, &d), 0, "decode: %s", dcpi_errmsg());
	T_OK(d.nstacks == 3 && d.nimages == 2 && d.nlabels == 2 && d.nevents == 2 &&
	     !strcmp(d.events[1], "page-faults") && d.periods[0] == 250000 &&
	     !strcmp(d.epoch, "20261126T000000Z") && !strcmp(d.platform, "h1"),
	     "stacks, images, labels, events, periods, epoch and platform come back");
	for (size_t i = 0; i < 3; i++) {
		ok &= d.stacks[i].nframes == s.stacks[i].nframes && d.stacks[i].end == s.stacks[i].end &&
		      d.stacks[i].label == s.stacks[i].label &&
		      same_frames(d.frames + d.stacks[i].first, s.frames + s.stacks[i].first,
				  s.stacks[i].nframes) &&
		      count_of(&d, i, 0) == count_of(&s, i, 0) && count_of(&d, i, 1) == count_of(&s, i, 1);
	}
	T_OK(ok, "every stack's frames, end, label and counts come back");
	T_OK(d.frames[d.stacks[2].first + 1].image == DCPI_FRAME_UNKNOWN, "an unknown frame stays unknown");
	T_OK(d.images[1].build_id[0] == 2 && d.images[1].build_id_len == 20 && d.images[1].mtime == -5 &&
	     d.images[1].text_start == 0x1000 && d.images[1].text_size == 0x2000 &&
	     !strcmp(d.images[1].path, "/lib/libc.so.6"), "an image's identity comes back whole");
	encode(&d, &b2);
	T_OK(b2.len == b.len && !memcmp(b.data, b2.data, b.len), "decode then encode: the same bytes");
	dcpi_stackset_free(&d);
	dcpi_buf_release(&b2);
	dcpi_buf_release(&b);
	dcpi_stackset_free(&s);
}

/* A copy of the file with byte at changed to v, its checksum made right. */
static int decode_patched(const struct dcpi_buf *b, size_t at, uint8_t v, const char *want)
{
	uint8_t *c = malloc(b->len);
	struct dcpi_stackset d;
	struct dcpi_buf fix = DCPI_BUF_INIT;
	int err, ok;

	memcpy(c, b->data, b->len);
	c[at] = v;
	{
		uint32_t crc = (uint32_t)crc32(crc32(0, NULL, 0), c, (unsigned)(b->len - 4));

		memcpy(c + b->len - 4, &crc, 4); /* little-endian machine */
	}
	err = dcpi_stackset_decode(c, b->len, &d);
	ok = err == -EBADMSG && strstr(dcpi_errmsg(), want);
	if (!ok)
		printf("# byte %zu = %u: err %d '%s', want '%s'\n", at, v, err,
		       err ? dcpi_errmsg() : "", want);
	if (!err)
		dcpi_stackset_free(&d);
	dcpi_buf_release(&fix);
	free(c);
	return ok;
}

static void test_refusals(void)
{
	struct dcpi_stackset s, d;
	struct dcpi_buf b = DCPI_BUF_INIT;
	int all = 1;
	size_t tail;

	sample_set(&s);
	encode(&s, &b);
	for (size_t n = 0; n < b.len; n++) {
		int err = dcpi_stackset_decode(b.data, n, &d);

		if (err != -EBADMSG) {
			all = 0;
			if (!err)
				dcpi_stackset_free(&d);
		}
	}
	T_OK(all, "a file cut anywhere is refused (-EBADMSG), %zu lengths", b.len);
	b.data[0] = 'X';
	T_OK(dcpi_stackset_decode(b.data, b.len, &d) == -EBADMSG &&
	     strstr(dcpi_errmsg(), "not a dcpi stacks file"), "bad magic: %s", dcpi_errmsg());
	b.data[0] = 'D';
	b.data[20] ^= 1;
	T_OK(dcpi_stackset_decode(b.data, b.len, &d) == -EBADMSG &&
	     strstr(dcpi_errmsg(), "checksum mismatch"), "a changed byte: checksum mismatch");
	b.data[20] ^= 1;
	T_OK(decode_patched(&b, 8, 3, "version"), "version 3 refused");
	T_OK(decode_patched(&b, 8, 0, "not version 1 or 2"), "version 0 refused");
	{ /* a file naming one event twice: refused (its columns would add up) */
		static const char *const twice[] = { "cpu-clock", "cpu-clock" };
		struct dcpi_stackset t2;
		struct dcpi_buf b2 = DCPI_BUF_INIT;
		uint32_t none;

		dcpi_stackset_init(&t2, 2, twice, periods);
		dcpi_stackset_label(&t2, "", &none);
		encode(&t2, &b2);
		T_OK(dcpi_stackset_decode(b2.data, b2.len, &d) == -EBADMSG &&
		     strstr(dcpi_errmsg(), "an event twice"), "an event named twice refused: %s",
		     dcpi_errmsg());
		dcpi_buf_release(&b2);
		dcpi_stackset_free(&t2);
	}
	/* the last stack: label 0, pid -1 (zigzag 1), end NORULE, 2 frames
	   (libc+0x1234, unknown), counts 0 1 */
	tail = b.len - 4 - 11;
	T_OK(b.data[tail] == 0 && b.data[tail + 1] == 1 && b.data[tail + 2] == DCPI_STACK_END_NORULE &&
	     b.data[tail + 3] == 2, "the last stack is where the test expects it");
	T_OK(decode_patched(&b, tail, 5, "label 5"), "a label of no such index refused");
	T_OK(decode_patched(&b, tail + 1, 3, "a pid below -1"), "a pid of -2 refused");
	T_OK(decode_patched(&b, tail + 2, DCPI_STACK_END_N, "stack end"), "an end out of range refused");
	T_OK(decode_patched(&b, tail + 3, 0, "no frames"), "a stack of no frames refused");
	T_OK(decode_patched(&b, tail + 4, 9, "frame image 9"), "a frame of no image refused");
	T_OK(decode_patched(&b, tail + 10, 0, "no samples"), "a stack of no samples refused");
	{
		struct dcpi_buf t = DCPI_BUF_INIT;
		uint32_t crc;

		dcpi_buf_put(&t, b.data, b.len - 4);
		dcpi_buf_put(&t, "\0", 1);
		crc = (uint32_t)crc32(crc32(0, NULL, 0), t.data, (unsigned)t.len);
		dcpi_buf_put(&t, &crc, 4);
		T_OK(dcpi_stackset_decode(t.data, t.len, &d) == -EBADMSG &&
		     strstr(dcpi_errmsg(), "trailing"), "a byte past the last stack refused: %s",
		     dcpi_errmsg());
		dcpi_buf_release(&t);
	}
	dcpi_buf_release(&b);
	dcpi_stackset_free(&s);
}

/* Stacks kept per process: a stack of two processes and of none are three,
 * kept through the file and a merge; a version 1 file (no pids) is read as
 * every stack's process -1; a pid past 2^31 - 1 is refused. */
static void test_pids(void)
{
	struct dcpi_stackset s, d, m;
	struct dcpi_buf b = DCPI_BUF_INIT, v1 = DCPI_BUF_INIT;
	struct dcpi_profile a;
	struct dcpi_stack_frame f[2];
	uint32_t ia, crc;
	int found = 0;

	dcpi_stackset_init(&s, 1, evnames, periods);
	identity(&a, "/usr/bin/prog", 1);
	dcpi_stackset_image(&s, &a, &ia);
	f[0] = (struct dcpi_stack_frame){ ia, 0x1100 };
	f[1] = (struct dcpi_stack_frame){ ia, 0x1010 };
	dcpi_stackset_add(&s, 0, 4242, DCPI_STACK_END_WHOLE, f, 2, 0, 5);
	dcpi_stackset_add(&s, 0, 77, DCPI_STACK_END_WHOLE, f, 2, 0, 2);
	dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_WHOLE, f, 2, 0, 1);
	dcpi_stackset_add(&s, 0, 4242, DCPI_STACK_END_WHOLE, f, 2, 0, 1);
	T_EQ(s.nstacks, (size_t)3, "the same frames of two processes and of none: three stacks");
	T_EQ(dcpi_stackset_add(&s, 0, -2, DCPI_STACK_END_WHOLE, f, 2, 0, 1), -EINVAL, "pid -2 refused");
	T_EQ(dcpi_stackset_add(&s, 0, (int64_t)INT32_MAX + 1, DCPI_STACK_END_WHOLE, f, 2, 0, 1),
	     -EINVAL, "a pid past 2^31 - 1 refused");
	encode(&s, &b);
	T_EQ(dcpi_stackset_decode(b.data, b.len, &d), 0, "decoded: %s", dcpi_errmsg());
	for (size_t i = 0; i < d.nstacks; i++)
		found += (d.stacks[i].pid == 4242 && count_of(&d, i, 0) == 6) +
			 (d.stacks[i].pid == 77 && count_of(&d, i, 0) == 2) +
			 (d.stacks[i].pid == -1 && count_of(&d, i, 0) == 1);
	T_EQ(found, 3, "each process's stack and count read back");
	dcpi_stackset_init(&m, 1, evnames, periods);
	T_EQ(dcpi_stackset_merge(&m, &d), 0, "merged");
	T_EQ(dcpi_stackset_merge(&m, &d), 0, "merged twice");
	found = 0;
	for (size_t i = 0; i < m.nstacks; i++)
		found += m.stacks[i].pid == 4242 && count_of(&m, i, 0) == 12;
	T_EQ(m.nstacks == 3 && found, 1, "a merge keeps the processes apart and adds their counts");
	dcpi_stackset_free(&m);
	dcpi_stackset_free(&d);
	/* version 1: the last stack (label 0, pid, end 0, 2 frames, 2 frames of 3
	   bytes, a count: 11 bytes) without its pid byte: of no process, read so */
	dcpi_stackset_clear(&s);
	dcpi_stackset_image(&s, &a, &ia);
	dcpi_stackset_add(&s, 0, -1, DCPI_STACK_END_WHOLE, f, 2, 0, 9);
	b.len = 0;
	encode(&s, &b);
	dcpi_buf_put(&v1, b.data, b.len - 4 - 10); /* up to the stack's label, with it */
	dcpi_buf_put(&v1, b.data + b.len - 4 - 9, 9); /* past the pid */
	v1.data[8] = 1;
	crc = (uint32_t)crc32(crc32(0, NULL, 0), v1.data, (unsigned)v1.len);
	dcpi_buf_put(&v1, &crc, 4);
	T_OK(b.data[b.len - 4 - 10] == 1 && dcpi_stackset_decode(v1.data, v1.len, &d) == 0 &&
	     d.nstacks == 1 && d.stacks[0].pid == -1 && count_of(&d, 0, 0) == 9,
	     "a version 1 file is read, its stacks of no process: %s", dcpi_errmsg());
	if (d.nstacks)
		dcpi_stackset_free(&d);
	/* a pid of 2^31 (zigzag 2^32: five varint bytes) in place of the -1 */
	{
		struct dcpi_buf big = DCPI_BUF_INIT;
		static const uint8_t z[] = { 0x80, 0x80, 0x80, 0x80, 0x10 };

		dcpi_buf_put(&big, b.data, b.len - 4 - 10);
		dcpi_buf_put(&big, z, sizeof(z));
		dcpi_buf_put(&big, b.data + b.len - 4 - 9, 9);
		crc = (uint32_t)crc32(crc32(0, NULL, 0), big.data, (unsigned)big.len);
		dcpi_buf_put(&big, &crc, 4);
		T_OK(dcpi_stackset_decode(big.data, big.len, &d) == -EBADMSG &&
		     strstr(dcpi_errmsg(), "pid"), "a pid of 2^31 refused: %s", dcpi_errmsg());
		dcpi_buf_release(&big);
	}
	dcpi_buf_release(&v1);
	dcpi_buf_release(&b);
	dcpi_stackset_free(&s);
}

static void test_merge_file(void)
{
	struct dcpi_stackset s, d, other;
	const char *path = fx_path("epoch.stacks");
	char aside[4200];
	FILE *f;
	struct stat st;
	uint32_t l;
	struct dcpi_stack_frame fr = { DCPI_FRAME_UNKNOWN, 0 };
	static const char *const ev2[] = { "page-faults", "task-clock" };
	static const uint64_t p2[] = { 1, 1000000 };

	sample_set(&s);
	T_EQ(dcpi_stackset_merge_file(path, &s, 0600), 0, "a first merge makes the file");
	T_EQ(dcpi_stackset_merge_file(path, &s, 0600), 0, "a second adds to it");
	T_EQ(dcpi_stackset_read(path, &d), 0, "read back");
	T_OK(d.nstacks == 3 && count_of(&d, 0, 0) == 12 && count_of(&d, 2, 1) == 2,
	     "merged twice: the same stacks, counts doubled");
	T_OK(!stat(path, &st) && (st.st_mode & 0777) == 0600, "the file's mode is the one asked");
	dcpi_stackset_free(&d);
	/* another set of events: matched by name, a new one added */
	dcpi_stackset_init(&other, 2, ev2, p2);
	dcpi_stackset_label(&other, "comm=prog", &l);
	dcpi_stackset_add(&other, l, -1, DCPI_STACK_END_BAD, &fr, 1, 0, 5);
	dcpi_stackset_add(&other, l, -1, DCPI_STACK_END_BAD, &fr, 1, 1, 7);
	T_EQ(dcpi_stackset_merge_file(path, &other, 0600), 0, "events matched by name");
	dcpi_stackset_read(path, &d);
	T_OK(d.nevents == 3 && !strcmp(d.events[2], "task-clock") && d.nstacks == 4 &&
	     count_of(&d, 3, 1) == 5 && count_of(&d, 3, 2) == 7 && count_of(&d, 0, 2) == 0 &&
	     d.stacks[3].label == 1, "page-faults into its column, task-clock a new one, labels by name");
	dcpi_stackset_free(&d);
	other.periods[0] = 2;
	T_EQ(dcpi_stackset_merge_file(path, &other, 0600), -EINVAL,
	     "an event of another period: refused, the file unchanged");
	dcpi_stackset_free(&other);
	f = fopen(path, "w");
	fputs("garbage", f);
	fclose(f);
	T_EQ(dcpi_stackset_merge_file(path, &s, 0600), 0, "a corrupt file: a fresh one");
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	T_OK(!access(aside, F_OK), "the corrupt one kept aside as .corrupt");
	dcpi_stackset_read(path, &d);
	T_OK(d.nstacks == 3 && count_of(&d, 0, 0) == 6, "the fresh file holds this merge's stacks");
	dcpi_stackset_free(&d);
	dcpi_stackset_free(&s);
}

int main(void)
{
	test_pids();
	if (fx_setup("stackset"))
		return 1;
	test_interning();
	test_cap();
	test_merge_caps();
	test_roundtrip();
	test_refusals();
	test_merge_file();
	fx_cleanup();
	return t_done();
}
