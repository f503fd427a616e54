/* Value profiles (dcpi/vprof.h): a process's file read field by field,
 * written back the same; two merged; the refusals one by one. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/vprof.h"
#include "tap.h"

static const char good[] =
	"dcpi-vprof 1\n"
	"# a comment, and a blank line\n"
	"\n"
	"kind ldlatency\n"
	"pid 4242\n"
	"comm chase\n"
	"tsc_hz 3800000000\n"
	"timing 31\n"
	"period 500000\n"
	"signals 1000\n"
	"skipped noload 40\n"
	"skipped unmapped 2\n"
	"bin 0 0 5 3 L1\n"
	"bin 1 6 20 12 L2\n"
	"bin 2 40 18446744073709551615 437 memory\n"
	"image 0 0a1b2c /usr/bin/chase\n"
	"image 1 - /tmp/a dir/with\\\\back\\nslash\n"
	"load 0 1a2b 900 360000 10 20 30 840\n"
	"value 0 1a2b ff 500\n"
	"value 0 1a2b 7 700\n"
	"source 0 1a2b L1 800\n"
	"source 0 1a2b remote-RAM 100\n"
	"load 1 10 58 174 0 58 0 0\n"
	"end\n";

static struct dcpi_vprof *parse(const char *text)
{
	struct dcpi_vprof *v = NULL;

	if (dcpi_vprof_parse(text, strlen(text), &v))
		return NULL;
	return v;
}

static void test_fields(void)
{
	struct dcpi_vprof *v = parse(good), *w;
	const struct dcpi_vprof_load *l;
	struct dcpi_buf out = DCPI_BUF_INIT, again = DCPI_BUF_INIT;
	static const uint8_t id[] = { 0x0a, 0x1b, 0x2c };

	T_OK(v != NULL, "parsed: %s", dcpi_errmsg());
	if (!v)
		return;
	T_STREQ(v->kind, "ldlatency", "kind");
	T_OK(v->pid == 4242 && !strcmp(v->comm, "chase") && v->processes == 1, "pid, comm, one process");
	T_OK(v->tsc_hz == 3800000000u && v->timing == 31 && v->period == 500000 && v->signals == 1000,
	     "tsc_hz, timing, period, signals");
	T_OK(v->nskipped == 2 && !strcmp(v->skipped[0].name, "noload") && v->skipped[0].n == 40 &&
	     !strcmp(v->skipped[1].name, "unmapped") && v->skipped[1].n == 2, "skipped by reason");
	T_OK(v->bins.n == 3 && v->bins.v[1].min == 6 && v->bins.v[1].rep == 12 &&
	     !strcmp(v->bins.v[2].name, "memory") && v->bins.v[2].max == UINT64_MAX, "the bins");
	T_OK(v->nimages == 2 && !strcmp(v->images[0].path, "/usr/bin/chase") &&
	     v->images[0].build_id_len == 3 && !memcmp(v->images[0].build_id, id, 3), "image 0, build-id");
	T_STREQ(v->images[1].path, "/tmp/a dir/with\\back\nslash", "image 1: spaces kept, escapes undone");
	T_OK(v->images[1].build_id_len == 0, "image 1: no build-id");
	T_EQ(dcpi_vprof_image(v, "/usr/bin/chase", id, 3), 0, "found by path and build-id");
	T_EQ(dcpi_vprof_image(v, "/usr/bin/chase", NULL, 0), -1, "not without its build-id");
	l = dcpi_vprof_load(v, 0, 0x1a2b);
	T_OK(l && l->samples == 900 && l->cycles == 360000 && l->outside == 10 && l->bins[0] == 20 &&
	     l->bins[1] == 30 && l->bins[2] == 840, "the load field by field");
	T_OK(l && l->nvalues == 2 && l->values[0].value == 7 && l->values[0].count == 700 &&
	     l->values[1].value == 0xff && l->values[1].count == 500, "its values, most frequent first");
	T_OK(l && l->sources[DCPI_SRC_L1] == 800 && l->sources[DCPI_SRC_REMOTE_RAM] == 100 &&
	     l->sources[DCPI_SRC_RAM] == 0, "its data sources by level");
	T_OK(dcpi_vprof_load(v, 1, 0x10) && !dcpi_vprof_load(v, 0, 0x10) &&
	     !dcpi_vprof_load(v, 1, 0x1a2b), "loads by (image, offset)");
	T_EQ(dcpi_vprof_format(v, &out), 0, "written");
	w = NULL;
	T_EQ(dcpi_vprof_parse((const char *)out.data, out.len, &w), 0, "read back: %s", dcpi_errmsg());
	if (w) {
		T_EQ(dcpi_vprof_format(w, &again), 0, "written again");
		T_OK(again.len == out.len && !memcmp(again.data, out.data, out.len), "the same text");
		dcpi_vprof_free(w);
	}
	dcpi_buf_release(&out);
	dcpi_buf_release(&again);
	dcpi_vprof_free(v);
}

/* Two processes' files of one image merged, and a third of other bins. */
static void test_merge(void)
{
	struct dcpi_vprof *a = parse(good), *b, *m = NULL, *x;
	const struct dcpi_vprof_load *l;
	char *text = strdup(good), *p;

	/* the second process: pid 4243, the same load with other values */
	p = strstr(text, "pid 4242");
	memcpy(p, "pid 4243", 8);
	p = strstr(text, "value 0 1a2b ff 500");
	memcpy(p, "value 0 1a2b 9f 500", 19);
	b = parse(text);
	T_OK(a && b, "two files");
	T_EQ(dcpi_vprof_new(&m), 0, "an empty merge");
	if (!a || !b || !m)
		goto out;
	T_EQ(dcpi_vprof_merge(m, a), 0, "the first merged");
	T_EQ(dcpi_vprof_merge(m, b), 0, "the second merged");
	T_OK(m->pid == -1 && m->processes == 2 && m->signals == 2000, "two processes, signals summed");
	T_OK(m->nskipped == 2 && m->skipped[0].n == 80, "skips summed by reason");
	T_OK(m->nimages == 2, "each image once");
	l = dcpi_vprof_load(m, 0, 0x1a2b);
	T_OK(l && l->samples == 1800 && l->cycles == 720000 && l->bins[2] == 1680 && l->outside == 20,
	     "the load's counts summed");
	T_OK(l && l->nvalues == 3 && l->values[0].value == 7 && l->values[0].count == 1400 &&
	     l->values[1].count == 500 && l->values[2].count == 500, "hot lists joined: 7 summed, ff and 9f kept");
	p = strstr(text, "bin 1 6 20 12 L2");
	memcpy(p, "bin 1 6 21 12 L2", 16);
	x = parse(text);
	T_OK(x != NULL, "a file of other bins");
	if (x) {
		T_EQ(dcpi_vprof_merge(m, x), -EINVAL, "refused: other bins");
		T_OK(strstr(dcpi_errmsg(), "bins") != NULL, "says so: %s", dcpi_errmsg());
		T_OK(m->processes == 2, "the merge unchanged");
		dcpi_vprof_free(x);
	}
	{
		struct dcpi_buf out = DCPI_BUF_INIT;
		struct dcpi_vprof *r = NULL;

		T_OK(!dcpi_vprof_format(m, &out) && !dcpi_buf_put(&out, "", 1) &&
		     strstr((char *)out.data, "processes 2\n") &&
		     !strstr((char *)out.data, "pid "), "the merged file says processes, no pid");
		T_EQ(dcpi_vprof_parse((const char *)out.data, out.len - 1, &r), 0, "and reads back: %s",
		     dcpi_errmsg());
		dcpi_vprof_free(r);
		dcpi_buf_release(&out);
	}
out:
	dcpi_vprof_free(a);
	dcpi_vprof_free(b);
	dcpi_vprof_free(m);
	free(text);
}

/* good with the line starting with `from` replaced by `to` (NULL: removed). */
static char *edit(const char *from, const char *to)
{
	char *out = malloc(sizeof(good) + 256), *p;
	const char *at = strstr(good, from), *eol;

	if (!out || !at)
		abort();
	eol = strchr(at, '\n') + 1;
	p = out;
	memcpy(p, good, (size_t)(at - good));
	p += at - good;
	if (to)
		p += sprintf(p, "%s\n", to);
	strcpy(p, eol);
	return out;
}

static void refused_text(const char *text, size_t len, const char *want, const char *what)
{
	struct dcpi_vprof *v = (struct dcpi_vprof *)1;
	int err = dcpi_vprof_parse(text, len, &v);

	T_OK(err == -EBADMSG && v == NULL && strstr(dcpi_errmsg(), want), "refused, %s: %s", what,
	     dcpi_errmsg());
}

static void refused(const char *from, const char *to, const char *want)
{
	char *t = edit(from, to);

	refused_text(t, strlen(t), want, want);
	free(t);
}

static void test_refusals(void)
{
	char big[200];

	refused_text("", 0, "empty", "an empty file");
	refused_text(good, strlen(good) - 4, "no end", "truncated before end");
	refused_text(good, strlen(good) - 1, "no newline", "cut inside the last line");
	refused("dcpi-vprof 1", "dcpi-vprof 2", "not a value profile");
	refused("kind", NULL, "before the bins");
	refused("kind", "kind LDlatency", "lower-case");
	refused("tsc_hz", "tsc_hz -1", "decimal");
	refused("timing", "timing 31 32", "KEY VALUE");
	refused("period", "period 99999999999999999999", "decimal");
	refused("signals", "signals 1\nsignals 2", "twice");
	refused("pid", "pid 0", "pid from 1");
	refused("pid", "processes 2\npid 3", "both");
	refused("pid", NULL, "comm without pid");
	refused("comm chase", "comm a\x01z", "printable");
	refused("skipped noload", "skipped noload", "skipped REASON N");
	refused("skipped unmapped", "skipped noload 3", "reason given twice");
	refused("bin 0", "bin 1 0 5 3 L1", "counting from 0");
	refused("bin 1", "bin 1 4 20 12 L2", "the bins: line 2: a range not above");
	refused("bin 0", "bin 0 0 5 9 L1", "REP outside");
	refused("image 0", "image 0 0a1 /usr/bin/chase", "hex byte pairs");
	refused("image 0", "image 0 - chase", "absolute PATH");
	refused("image 1", "image 1 - /tmp/a\\t", "escapes");
	refused("image 1", "image 1 0a1b2c /usr/bin/chase", "image given twice");
	refused("image 1", "image 2 - /x", "counting from 0");
	refused("load 0", "load 2 1a2b 900 360000 10 20 30 840", "no image");
	refused("load 0", "load 0 1A2B 900 360000 10 20 30 840", "OFF in hex");
	refused("load 0", "load 0 1a2b 900 360000 10 20 30", "a count per bin");
	refused("load 0", "load 0 1a2b 900 360000 10 20 30 841", "more than SAMPLES");
	refused("load 0", "load 0 1a2b 900 360000 10 20 30 830", "do not add up");
	refused("load 0", "load 0 1a2b 0 0 0 0 0 0", "no samples");
	refused("load 1", "load 0 1a2b 58 174 0 58 0 0", "load given twice");
	refused("value 0 1a2b ff", "value 0 10 ff 500", "not of the load before it");
	refused("value 0 1a2b ff", "value 0 1a2b ff 901", "COUNT not in 1..SAMPLES");
	refused("value 0 1a2b ff", "value 0 1a2b 7 1", "value given twice");
	refused("value 0 1a2b ff", "value 0 1a2b 10000000000000000 1", "in hex");
	refused("end", "end\nload 1 11 1 1 0 1 0 0", "after end");
	refused("source 0 1a2b L1", "source 0 1a2b L9 800", "unknown source LEVEL");
	refused("source 0 1a2b L1", "source 0 1a2b L1 801\nsource 0 1a2b L2 100", "not in 1..SAMPLES");
	refused("source 0 1a2b remote", "source 0 1a2b L1 100", "source given twice");
	refused("source 0 1a2b remote", "source 0 10 L2 100", "not of the load before it");
	refused("end", "bogus 1\nend", "unknown record");
	refused("image 1", "bin 3 50 60 55 L4", "a bin after the images");
	refused("bin 0", "image 0 - /x\nbin 0 0 5 3 L1", "an image before the bins");
	refused("signals", "signals 1000\nload 0 1 1 1 0 1 0 0", "before the bins");
	{
		char *t = edit("comm chase", "comm a");

		t[strstr(t, "comm a") - t + 5] = 0; /* a NUL inside a line */
		refused_text(t, strlen(good), "NUL", "a NUL byte");
		free(t);
	}
	{
		char *t = edit("value 0 1a2b 7", "value 0 1a2b 1 1\nvalue 0 1a2b 2 1\nvalue 0 1a2b 3 1\n"
				"value 0 1a2b 4 1\nvalue 0 1a2b 5 1\nvalue 0 1a2b 6 1\nvalue 0 1a2b 8 1\n"
				"value 0 1a2b 9 1\nvalue 0 1a2b a 1\nvalue 0 1a2b b 1\nvalue 0 1a2b c 1\n"
				"value 0 1a2b d 1\nvalue 0 1a2b e 1\nvalue 0 1a2b f 1\nvalue 0 1a2b 10 1\n"
				"value 0 1a2b 11 1");

		refused_text(t, strlen(t), "more than 16", "17 values of one load");
		free(t);
	}
	memset(big, 'a', sizeof(big));
	T_EQ(dcpi_vprof_parse(big, (size_t)DCPI_VPROF_FILE_MAX + 1, &(struct dcpi_vprof *){ NULL }),
	     -EFBIG, "refused: larger than the cap (not read)");
}

/* A file's errors name it, the parser's message after (dcpi_error formats
 * apart: its own message may be an argument). */
static void test_read(void)
{
	char path[] = "/tmp/dcpi-test-vprof.XXXXXX", want[128];
	struct dcpi_vprof *v = NULL;
	int fd = mkstemp(path);
	char *t = edit("timing", "timing x");

	T_OK(fd >= 0 && write(fd, t, strlen(t)) == (ssize_t)strlen(t), "a file written");
	if (fd >= 0)
		close(fd);
	snprintf(want, sizeof(want), "%s: line 8: a decimal number wanted", path);
	T_EQ(dcpi_vprof_read(path, &v), -EBADMSG, "refused");
	T_STREQ(dcpi_errmsg(), want, "the message names the file, then the line");
	T_OK(v == NULL, "no profile from it");
	unlink(path);
	free(t);
}

/* Samples added one by one: bins by latency, Space-Saving's hot list
 * (exact while at most 16 values were seen), sources. */
static void test_add(void)
{
	struct dcpi_vprof *v = NULL;
	const struct dcpi_vprof_load *l;
	static const uint8_t id[] = { 1, 2 };
	int err = 0;

	T_EQ(dcpi_vprof_new(&v), 0, "a new profile");
	if (!v)
		return;
	{
		static const char bins[] = "0 5 3 L1\n6 50 20 L2\n100 1000 400 mem\n";

		T_EQ(dcpi_bins_parse(bins, strlen(bins), &v->bins), 0, "its bins");
	}
	/* 8:4:2:1 of four values, latencies 3, 30, 400, and 70 (between bins) */
	for (int i = 0; i < 15 && !err; i++) {
		uint64_t val = i < 8 ? 10 : i < 12 ? 20 : i < 14 ? 30 : 40;
		uint64_t cyc = i % 4 == 0 ? 3 : i % 4 == 1 ? 30 : i % 4 == 2 ? 400 : 70;

		err = dcpi_vprof_add(v, "/bin/x", id, 2, 0x40, cyc, 1, val, i < 10 ? DCPI_SRC_L1 : DCPI_SRC_RAM);
	}
	T_EQ(err, 0, "15 samples added");
	l = dcpi_vprof_load(v, 0, 0x40);
	T_OK(l && v->nimages == 1 && l->samples == 15 && l->cycles == 4 * 3 + 4 * 30 + 4 * 400 + 3 * 70,
	     "samples and cycles summed");
	T_OK(l && l->bins[0] == 4 && l->bins[1] == 4 && l->bins[2] == 4 && l->outside == 3,
	     "binned; 70 in no bin");
	T_OK(l && l->nvalues == 4 && l->values[0].value == 10 && l->values[0].count == 8 &&
	     l->values[1].count == 4 && l->values[2].count == 2 && l->values[3].value == 40 &&
	     l->values[3].count == 1, "the hot list exact: 8, 4, 2, 1");
	T_OK(l && l->sources[DCPI_SRC_L1] == 10 && l->sources[DCPI_SRC_RAM] == 5, "sources counted");
	/* 20 more distinct values: the list keeps 16, 10 (8 of 35) first, each
	   count at least the truth */
	for (uint64_t k = 0; k < 20 && !err; k++)
		err = dcpi_vprof_add(v, "/bin/x", id, 2, 0x40, 3, 1, 1000 + k, -1);
	l = dcpi_vprof_load(v, 0, 0x40);
	T_OK(l && !err && l->nvalues == 16 && l->values[0].value == 10 && l->values[0].count >= 8,
	     "past 16 values: 16 kept, the most frequent first");
	{
		uint64_t sum = 0;

		for (unsigned k = 0; l && k < l->nvalues; k++)
			sum += l->values[k].count;
		T_OK(l && sum == l->samples, "Space-Saving's counts add up to the samples");
	}
	T_OK(dcpi_vprof_add(v, "/bin/x", NULL, 0, 0x40, 3, 0, 0, -1) == 0 && v->nimages == 2,
	     "the same path without a build-id: another image");
	dcpi_vprof_free(v);
}

/* Counts that would wrap are refused before anything changes; a file that
 * is not one, or of other bins, is kept aside and a fresh one written. */
static void test_merge_file(void)
{
	static const char big[] = "dcpi-vprof 1\nkind ldlatency\npid 1\ntsc_hz 0\ntiming 0\n"
				  "period 1\nsignals 1\nbin 0 0 5 3 L1\nimage 0 - /x\n"
				  "load 0 10 3000000000000000000 0 0 3000000000000000000\nend\n";
	struct dcpi_vprof *a = NULL, *m = NULL, *r = NULL, *g = parse(good);
	char dir[] = "/tmp/dcpi-test-vprof.XXXXXX", path[300], aside[320];
	FILE *f;

	T_EQ(dcpi_vprof_parse(big, strlen(big), &a), 0, "a load of 3e18 samples reads");
	T_EQ(dcpi_vprof_new(&m), 0, "an empty merge");
	if (!a || !m || !g)
		goto out;
	T_EQ(dcpi_vprof_merge(m, a), 0, "merged once");
	T_EQ(dcpi_vprof_merge(m, a), -EOVERFLOW, "merged twice: past 2^62, refused");
	T_OK(m->nloads == 1 && m->loads[0].samples == 3000000000000000000ull && m->signals == 1,
	     "and the merge unchanged");
	if (!mkdtemp(dir)) {
		T_OK(0, "mkdtemp");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/epoch.vprof", dir);
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	T_EQ(dcpi_vprof_merge_file(path, g, 0600), 0, "merged into a new file");
	T_EQ(dcpi_vprof_merge_file(path, g, 0600), 0, "merged again");
	T_OK(!dcpi_vprof_read(path, &r) && dcpi_vprof_load(r, 0, 0x1a2b)->samples == 1800,
	     "the file holds both");
	dcpi_vprof_free(r);
	r = NULL;
	T_EQ(dcpi_vprof_merge_file(path, a, 0600), 0, "a profile of other bins: merged into a fresh file");
	T_OK(access(aside, F_OK) == 0, "the old one kept aside as .corrupt");
	T_OK(!dcpi_vprof_read(path, &r) && r->nloads == 1 && r->bins.n == 1, "the fresh one holds the new profile");
	dcpi_vprof_free(r);
	r = NULL;
	if ((f = fopen(path, "w"))) {
		fputs("dcpi-vprof 1\nkind ldlat\n", f); /* cut short */
		fclose(f);
	}
	T_EQ(dcpi_vprof_merge_file(path, a, 0600), 0, "a truncated file: kept aside, a fresh one");
	T_OK(!dcpi_vprof_read(path, &r) && r->nloads == 1, "the fresh one reads");
	dcpi_vprof_free(r);
	unlink(path);
	unlink(aside);
	rmdir(dir);
out:
	dcpi_vprof_free(a);
	dcpi_vprof_free(m);
	dcpi_vprof_free(g);
}

/* A full list's counts are over by at most its least count; joined, the
 * bounds add (the review's example: X at 60 in two lists of floor 50, each
 * with 15 other values at 55; X's truth may be 20 in all). */
static void test_bounds(void)
{
	struct dcpi_vprof *a = NULL, *b = NULL, *m = NULL, *r = NULL;
	struct dcpi_buf t = DCPI_BUF_INIT, out = DCPI_BUF_INIT;
	const struct dcpi_vprof_load *l;
	int err = 0;

	for (int w = 0; w < 2 && !err; w++) {
		t.len = 0;
		err = dcpi_buf_printf(&t, "dcpi-vprof 1\nkind ldlatency\npid %d\ntsc_hz 0\ntiming 0\n"
				      "period 1\nsignals 1000\nbin 0 0 5 3 L1\nimage 0 - /x\n"
				      "load 0 10 1000 0 0 1000\nvalue 0 10 58 60\n", 1 + w);
		for (int k = 0; k < 14 && !err; k++)
			err = dcpi_buf_printf(&t, "value 0 10 %x 55\n", 0x1000 * (w + 1) + k);
		if (!err)
			err = dcpi_buf_printf(&t, "value 0 10 %x 50\nend\n", 0x9000 + w);
		if (!err)
			err = dcpi_vprof_parse((const char *)t.data, t.len, w ? &b : &a);
	}
	T_EQ(err, 0, "two processes' full lists: %s", dcpi_errmsg());
	if (err)
		goto out;
	T_OK(a->loads[0].verr == 50 && a->loads[0].nvalues == 16, "a full list's bound: its least count");
	T_OK(!dcpi_vprof_new(&m) && !dcpi_vprof_merge(m, a) && !dcpi_vprof_merge(m, b), "joined");
	l = dcpi_vprof_load(m, 0, 0x10);
	T_OK(l && l->values[0].value == 0x58 && l->values[0].count == 120 && l->verr >= 100,
	     "X at 120, the bound %llu: at least both lists' 50", l ? (unsigned long long)l->verr : 0ull);
	T_OK(l && l->values[0].count <= l->verr + 20, "so X's range allows its truth, 20");
	T_OK(!dcpi_vprof_format(m, &out) && !dcpi_vprof_parse((const char *)out.data, out.len, &r) &&
	     dcpi_vprof_load(r, 0, 0x10)->verr == l->verr, "the bound written and read back");
	refused("value 0 1a2b 7", "value 0 1a2b 7 700\nbound 0 1a2b 5\nbound 0 1a2b 5", "bound given twice");
	refused("value 0 1a2b 7", "value 0 1a2b 7 700\nbound 0 1a2b 901", "past SAMPLES");
	refused("value 0 1a2b 7", "bound 0 1a2b 5\nvalue 0 1a2b 7 700", "a value after its load's bound");
	refused("value 0 1a2b 7", "value 0 1a2b 7 700\nbound 0 10 5", "a bound not of the load before it");
out:
	dcpi_buf_release(&t);
	dcpi_buf_release(&out);
	dcpi_vprof_free(a);
	dcpi_vprof_free(b);
	dcpi_vprof_free(m);
	dcpi_vprof_free(r);
}

/* Loads that always loaded one value: exactly, and from enough samples. */
static void test_invariant(void)
{
	struct dcpi_vprof_load l;
	uint64_t v = 0;

	memset(&l, 0, sizeof(l));
	l.samples = 12;
	l.nvalues = 1;
	l.values[0] = (struct dcpi_vprof_value){ 0xff, 12 };
	T_OK(dcpi_vprof_invariant(&l, &v) && v == 0xff, "12 of 12 samples loaded 0xff: invariant");
	l.values[0].count = 11;
	T_OK(!dcpi_vprof_invariant(&l, &v), "11 of 12 (a sample without its value): not");
	l.values[0].count = 12;
	l.verr = 1;
	T_OK(!dcpi_vprof_invariant(&l, &v), "a count Space-Saving estimated (verr 1): not");
	l.verr = 0;
	l.nvalues = 2;
	l.values[1] = (struct dcpi_vprof_value){ 0x1, 0 };
	T_OK(!dcpi_vprof_invariant(&l, &v), "two values listed: not");
	l.nvalues = 1;
	l.samples = l.values[0].count = DCPI_VPROF_INVARIANT_MIN - 1;
	T_OK(!dcpi_vprof_invariant(&l, &v), "fewer than %d samples: not", DCPI_VPROF_INVARIANT_MIN);
	l.nvalues = 0;
	l.samples = 100;
	T_OK(!dcpi_vprof_invariant(&l, &v), "no values (precise samples): not");
}

int main(void)
{
	test_bounds();
	test_merge_file();
	test_add();
	test_invariant();
	test_read();
	test_fields();
	test_merge();
	test_refusals();
	return t_done();
}
