/* The parsers of what the tools read, field by field and refusal by
 * refusal: the hosts file, epoch statistics, perf maps, dcpitar members,
 * label selections, kallsyms snapshots, profile headers and exact-count
 * files.  What each refuses, it refuses alone: every bad input below
 * differs from an accepted one in one place. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/buf.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "dcpi/file.h"
#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"
#include "dcpi/profile.h"
#include "dcpi/profset.h"
#include "dcpi/snapshot.h"
#include "dcpi/stats.h"
#include "dcpi/symtab.h"
#include "dcpi/tar.h"
#include "dbprof.h"
#include "fixture.h"
#include "tap.h"

#define EPOCH "20240102T030405Z"

static void put_file(const char *path, const char *text, size_t len)
{
	if (dcpi_file_write_atomic(path, text, len, 0600))
		fprintf(stderr, "writing %s: %s\n", path, dcpi_errmsg());
}

/* The message of the last error holds want. */
static int says(const char *want)
{
	return strstr(dcpi_errmsg(), want) != NULL;
}

/* ---- the hosts file ---------------------------------------------------------- */

/* The platform of host under a hosts file of text (NULL: none). */
static int platform_of(const char *text, size_t len, const char *host, char *out, size_t outlen)
{
	char root[PATH_MAX];

	snprintf(root, sizeof(root), "%s", fx_path("hostsdb"));
	fx_sh("rm -rf '%s' && mkdir -p '%s'", root, root);
	if (text)
		put_file(fx_path("hostsdb/hosts"), text, len);
	return dcpi_db_platform(root, host, out, outlen);
}

static void hosts_ok(const char *text, const char *host, const char *want, const char *what)
{
	char out[DCPI_HOST_MAX];
	int err = platform_of(text, strlen(text), host, out, sizeof(out));

	T_OK(!err && !strcmp(out, want), "hosts: %s: %s -> %s (got %d %s)", what, host, want, err,
	     out);
}

static void hosts_refused(const char *text, size_t len, const char *want, const char *what)
{
	char out[DCPI_HOST_MAX];
	int err = platform_of(text, len ? len : strlen(text), "a", out, sizeof(out));

	T_OK(err == -EBADMSG && says(want) && !strcmp(out, "a"),
	     "hosts: %s refused, naming %s, the host's own name kept (%d: %s)", what, want, err,
	     err ? dcpi_errmsg() : out);
}

static void test_hosts(void)
{
	char out[DCPI_HOST_MAX], longname[DCPI_HOST_MAX + 8], text[700];

	T_EQ(platform_of(NULL, 0, "a", out, sizeof(out)), 0, "hosts: no file");
	T_STREQ(out, "a", "hosts: no file: the host's own name");
	hosts_ok("a pool\nb pool2\n", "a", "pool", "the first line");
	hosts_ok("a pool\nb pool2\n", "b", "pool2", "the second line");
	hosts_ok("a pool\nb pool2\n", "c", "c", "a host not listed");
	hosts_ok("# comment\n\n  \na\tpool # trailing comment\n", "a", "pool",
		 "comments, blank lines, tabs");
	hosts_ok("a pool", "a", "pool", "the last line without its newline");
	hosts_ok("a-1.example.com x_y@z\n", "a-1.example.com", "x_y@z", "dots, '@' and '_' inside names");
	hosts_ok("a pool\nb .bad\n", "a", "pool", "lines after the host's are not read");

	hosts_refused("# x\n\na\n", 0, "hosts:3:", "a host without a platform");
	hosts_refused("a pool extra\n", 0, "hosts:1:", "a third field");
	hosts_refused("b x\n.a pool\n", 0, "hosts:2:", "a host name with a leading '.'");
	hosts_refused("a .pool\n", 0, "hosts:1:", "a platform with a leading '.'");
	hosts_refused("a ..\n", 0, "hosts:1:", "the platform '..'");
	hosts_refused("a p/q\n", 0, "hosts:1:", "a platform with '/'");
	hosts_refused("a/b pool\n", 0, "hosts:1:", "a host with '/'");
	hosts_refused("a p\x7fq\n", 0, "hosts:1:", "a platform with DEL");
	hosts_refused("a p\x01q\n", 0, "hosts:1:", "a platform with a control byte");
	hosts_refused("b x\na p\0q\n", 10, "hosts:2: a NUL byte", "a NUL byte");
	memset(longname, 'p', DCPI_HOST_MAX);
	longname[DCPI_HOST_MAX] = 0;
	snprintf(text, sizeof(text), "a %s\n", longname);
	hosts_refused(text, 0, "hosts:1:", "a platform of DCPI_HOST_MAX bytes");
	longname[DCPI_HOST_MAX - 1] = 0;
	snprintf(text, sizeof(text), "a %s\n", longname);
	hosts_ok(text, "a", longname, "a platform of DCPI_HOST_MAX - 1 bytes");
	T_EQ(platform_of("a pool-long\n", 12, "a", out, 6), -ENAMETOOLONG,
	     "hosts: a platform longer than the caller's buffer");
	T_STREQ(out, "a", "hosts: ... the host's own name kept");

	T_EQ(dcpi_db_pooled("/db/e/pool", "a"), 1, "a host writing under another name is pooled");
	T_EQ(dcpi_db_pooled("/db/e/a", "a"), 0, "a host writing under its own name is not");
	T_OK(!dcpi_db_stats_path(out, sizeof(out), "/db/e/pool", "a") &&
	     !strcmp(out, "/db/e/pool/epoch@a.stats"), "pooled: epoch@HOST.stats (%s)", out);
	T_OK(!dcpi_db_stats_path(out, sizeof(out), "/db/e/a", "a") &&
	     !strcmp(out, "/db/e/a/epoch.stats"), "alone: epoch.stats (%s)", out);
	T_EQ(dcpi_db_stats_path(out, 10, "/db/e/pool", "a"), -ENAMETOOLONG, "a path too long");
}

/* ---- epoch statistics ----------------------------------------------------------- */

static void test_stats_fields(void)
{
	static const char text[] =
		"# dcpi epoch statistics\n"
		"epoch " EPOCH "\nplatform hostA\nstart 1700000000\nupdated 1700000600\n"
		"samples 1000\nlost 7\nthrottled 3\nunknown 11\nkernel 13\nimages 17\n"
		"labels comm,uid\nlabel_values 19\nlabel_other 23\nclock_khz 2900000\ncpus 8\n"
		"collector_cpu_ns 41000000\nsample_cost_ns 1500\n"
		"event cycles period 1000 samples 600 enabled 5000 running 4000\n"
		"event cpu-clock period 250000 running 31 enabled 37 samples 400\n"
		"future_key whatever it is\n";
	struct dcpi_epoch_stats st;
	int err = dcpi_stats_parse(text, sizeof(text) - 1, &st);

	T_EQ(err, 0, "stats: a full file parses%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	T_STREQ(st.epoch, EPOCH, "stats: epoch");
	T_STREQ(st.platform, "hostA", "stats: platform");
	T_EQ(st.start, 1700000000, "stats: start");
	T_EQ(st.updated, 1700000600, "stats: updated");
	T_EQ(st.samples, 1000, "stats: samples");
	T_EQ(st.lost, 7, "stats: lost");
	T_EQ(st.throttled, 3, "stats: throttled");
	T_EQ(st.unknown, 11, "stats: unknown");
	T_EQ(st.kernel, 13, "stats: kernel");
	T_EQ(st.images, 17, "stats: images");
	T_STREQ(st.labels, "comm,uid", "stats: labels");
	T_EQ(st.label_values, 19, "stats: label_values");
	T_EQ(st.label_other, 23, "stats: label_other");
	T_EQ(st.clock_khz, 2900000, "stats: clock_khz");
	T_EQ(st.ncpus, 8, "stats: cpus");
	T_EQ(st.collector_cpu_ns, 41000000, "stats: collector_cpu_ns");
	T_EQ(st.sample_cost_ns, 1500, "stats: sample_cost_ns");
	{
		double pct = 0, irq = 0;

		/* (41 ms + 1000 samples x 1.5 us) / 5000 ns enabled of cycles */
		T_OK(dcpi_stats_overhead(&st, &pct, &irq) == 0 &&
		     fabs(pct - 100.0 * (41000000 + 1500000) / 5000) < 1e-6 && fabs(irq - 0.0015) < 1e-12,
		     "stats: overhead from the collector's CPU, the samples' cost and the first "
		     "event's enabled time (%.1f%%, %.4f s)", pct, irq);
	}
	T_EQ(st.nevents, 2, "stats: two events");
	T_OK(!strcmp(st.ev[0].name, "cycles") && st.ev[0].period == 1000 &&
	     st.ev[0].samples == 600 && st.ev[0].time_enabled == 5000 &&
	     st.ev[0].time_running == 4000, "stats: the first event's fields");
	T_OK(!strcmp(st.ev[1].name, "cpu-clock") && st.ev[1].period == 250000 &&
	     st.ev[1].samples == 400 && st.ev[1].time_enabled == 37 &&
	     st.ev[1].time_running == 31, "stats: the second event's, its keys in another order");

	/* what dcpi_stats_write writes, dcpi_stats_parse reads back */
	{
		const char *path = fx_path("rt.stats");
		struct dcpi_epoch_stats back;

		err = dcpi_stats_write(path, &st, 0600);
		if (!err)
			err = dcpi_stats_read(path, &back);
		T_OK(!err && !memcmp(&st, &back, sizeof(st)), "stats: written and read back equal");
	}
}

static void test_stats_refusals(void)
{
	static const struct { const char *text, *what; } bad[] = {
		{ "samples\n", "a key without a value" },
		{ "samples -1\n", "a negative count" },
		{ "samples +1\n", "a count with a sign" },
		{ "samples 1x\n", "a count with trailing bytes" },
		{ "samples 18446744073709551616\n", "a count past 2^64" },
		{ "start 9223372036854775808\n", "a start past 2^63" },
		{ "updated 9223372036854775808\n", "an update time past 2^63" },
		{ "cpus 1 2\n", "two values" },
		{ "labels comm uid\n", "labels with a space" },
		{ "labels 0123456789012345678901234567890123\n", "labels too long" },
		{ "epoch 01234567890123456789012345678901234567890123456789012345678901234\n",
		  "an epoch name too long" },
		{ "event cycles period 1000 samples\n", "an event key without its value" },
		{ "event cycles period x\n", "an event value not a number" },
		{ "event 0123456789012345678901234567890123456789012345678901234567890123456789"
		  "0123456789012345678901234567890123456789012345678901234567890123456789 period 1\n",
		  "an event name too long" },
	};
	struct dcpi_epoch_stats st;
	char text[4096], *at = text;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char t[512];
		int err;

		/* a good first line, so the refusal names line 2 */
		snprintf(t, sizeof(t), "samples 10\n%s", bad[i].text);
		err = dcpi_stats_parse(t, strlen(t), &st);
		T_OK(err == -EBADMSG && says("line 2: malformed"), "stats: %s refused, naming line 2 "
		     "(%d: %s)", bad[i].what, err, err ? dcpi_errmsg() : "accepted");
	}
	for (int e = 0; e < DCPI_MAX_EVENTS; e++)
		at += sprintf(at, "event e%d period 1\n", e);
	T_EQ(dcpi_stats_parse(text, strlen(text), &st), 0, "stats: %d events", DCPI_MAX_EVENTS);
	strcpy(at, "event one_more period 1\n");
	T_OK(dcpi_stats_parse(text, strlen(text), &st) == -EBADMSG &&
	     says("line 17: malformed"), "stats: event %d refused", DCPI_MAX_EVENTS + 1);
	T_OK(dcpi_stats_parse("samples 1\0\n", 11, &st) == -EBADMSG && says("NUL"),
	     "stats: a NUL byte refused");
	T_OK(dcpi_stats_parse("start 9223372036854775807\n", 26, &st) == 0 &&
	     st.start == INT64_MAX, "stats: a start of 2^63 - 1 accepted");
	T_OK(dcpi_stats_parse("samples 5\nunknown 5\nkernel 5\n", 29, &st) == 0,
	     "stats: unknown and kernel equal to samples accepted");
	T_OK(dcpi_stats_parse("sample_cost_ns 1000001\n", 23, &st) == -EBADMSG &&
	     says("sample_cost_ns 1000001 is above"), "stats: a sample cost above 1 ms refused");
	T_OK(dcpi_stats_parse("sample_cost_ns 1000000\n", 23, &st) == 0,
	     "stats: a sample cost of 1 ms accepted");
	{
		double pct, irq;

		T_OK(dcpi_stats_parse("samples 5\nevent e period 1 enabled 10\n", 37, &st) == 0 &&
		     dcpi_stats_overhead(&st, &pct, &irq) == -ENOENT,
		     "stats: no collector CPU time: no overhead");
		T_OK(dcpi_stats_parse("collector_cpu_ns 5\n", 19, &st) == 0 &&
		     dcpi_stats_overhead(&st, &pct, &irq) == -ENOENT,
		     "stats: no enabled time: no overhead");
	}
}

/* ---- perf maps ----------------------------------------------------------------- */

struct jm_case {
	struct dcpi_jitmap *jm;
	int32_t pid;
	uint64_t entries, skipped;
};

static void on_warning(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* A jitmap fed text as pid's map; its entries and skipped lines. */
static int feed(struct jm_case *c, int32_t pid, const char *text, size_t len)
{
	struct dcpi_jitmap_opts o = { .procroot = fx_path("noproc"), .on_warning = on_warning };
	struct dcpi_jitmap_stats st;
	int err = dcpi_jitmap_new(&o, &c->jm);

	c->pid = pid;
	if (!err)
		err = dcpi_jitmap_feed_text(c->jm, pid, text, len);
	if (err)
		return err;
	dcpi_jitmap_stats(c->jm, &st);
	c->entries = st.entries;
	c->skipped = st.skipped;
	return 0;
}

/* The name of the JIT function at ip, or "" (none); into buf. */
static const char *jit_name(struct jm_case *c, uint64_t ip, char *buf, size_t len)
{
	struct dcpi_buf img = DCPI_BUF_INIT;
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *s;
	uint8_t id[DCPI_SHA1_LEN];
	char path[256];
	int64_t key;
	uint64_t off;
	int32_t pid;

	buf[0] = 0;
	if (dcpi_jitmap_resolve(c->jm, c->pid, ip, 0, &key, &off) != 1 ||
	    dcpi_jitmap_image(c->jm, key, &img, id, path, sizeof(path), &pid) ||
	    dcpi_file_write_atomic(fx_path("jit.img"), img.data, img.len, 0600) ||
	    dcpi_symtab_open(fx_path("jit.img"), id, DCPI_SHA1_LEN, NULL, &st)) {
		dcpi_buf_release(&img);
		return buf;
	}
	s = dcpi_symtab_lookup(st, off);
	snprintf(buf, len, "%s", s ? s->name : "");
	dcpi_symtab_close(st);
	dcpi_buf_release(&img);
	return buf;
}

static void test_perfmap(void)
{
	static const char map[] =
		"1000 10 first\n"
		"0x2000 0X20 second with spaces\r\n"
		"3000\t8\tthird\n"
		"\n"
		"4000 0 size zero\n"
		"5000 10\n"
		"50g0 10 not hex\n"
		"6000  10 two spaces\n"
		"ffff7ffffffffff0 20 into the kernel's half\n"
		"fffffffffffffff0 20 wraps\n"
		"8000 10 last, no newline";
	struct jm_case c;
	char name[256];
	uint64_t start, size;
	size_t off;

	T_EQ(feed(&c, 4242, map, sizeof(map) - 1), 0, "perf map: fed");
	T_EQ(c.entries, 5, "perf map: five entries taken");
	T_EQ(c.skipped, 5, "perf map: five lines skipped (size 0, no name, not hex, kernel, wrap)");
	T_STREQ(jit_name(&c, 0x1004, name, sizeof(name)), "first", "perf map: the first line");
	T_STREQ(jit_name(&c, 0x201f, name, sizeof(name)), "second with spaces",
		"perf map: 0x, upper-case X, spaces in the name, CR LF");
	T_STREQ(jit_name(&c, 0x3007, name, sizeof(name)), "third", "perf map: tabs");
	T_STREQ(jit_name(&c, 0x6000, name, sizeof(name)), "two spaces",
		"perf map: several blanks between fields");
	T_STREQ(jit_name(&c, 0x800f, name, sizeof(name)), "last, no newline",
		"perf map: the last line without its newline, at the end of the file");
	T_STREQ(jit_name(&c, 0x8010, name, sizeof(name)), "", "perf map: the end is exclusive");
	T_STREQ(jit_name(&c, 0x4000, name, sizeof(name)), "", "perf map: a size-0 entry names nothing");
	T_STREQ(jit_name(&c, 0xffff7ffffffffff8ull, name, sizeof(name)), "",
		"perf map: an entry reaching the kernel's half names nothing");
	dcpi_jitmap_free(c.jm);

	T_EQ(feed(&c, 4243, "1000 10 a\n2000 10 b", 19), 0, "perf map: a second map");
	T_EQ(c.entries, 2, "perf map: both lines, the last one without a newline");
	dcpi_jitmap_free(c.jm);
	{
		char *big = malloc(DCPI_JITMAP_MAX_LINE + 64);
		size_t n;

		n = (size_t)sprintf(big, "1000 10 ");
		memset(big + n, 'x', DCPI_JITMAP_MAX_LINE - n);
		n = DCPI_JITMAP_MAX_LINE;
		big[n++] = '\n';
		T_OK(!feed(&c, 4244, big, n) && c.entries == 1 && c.skipped == 0,
		     "perf map: a line of DCPI_JITMAP_MAX_LINE bytes taken");
		dcpi_jitmap_free(c.jm);
		memmove(big + 9, big + 8, n - 8);
		n++;
		T_OK(!feed(&c, 4245, big, n) && c.entries == 0 && c.skipped == 1,
		     "perf map: a line of one byte more skipped");
		dcpi_jitmap_free(c.jm);
		free(big);
	}
	{
		char line[64];
		int n = snprintf(line, sizeof(line), "1000 %llx huge\n",
				 (unsigned long long)DCPI_JITMAP_MAX_FUNC + 1);

		T_OK(!feed(&c, 4246, line, (size_t)n) && c.entries == 0 && c.skipped == 1,
		     "perf map: a function over DCPI_JITMAP_MAX_FUNC skipped");
		dcpi_jitmap_free(c.jm);
		n = snprintf(line, sizeof(line), "1000 %llx biggest\n",
			     (unsigned long long)DCPI_JITMAP_MAX_FUNC);
		T_OK(!feed(&c, 4247, line, (size_t)n) && c.entries == 1 && c.skipped == 0,
		     "perf map: a function of DCPI_JITMAP_MAX_FUNC taken");
		dcpi_jitmap_free(c.jm);
	}
	T_OK(!dcpi_jitmap_parse_line("ffffffffffffffff 1 x\r", 21, &start, &size, &off) &&
	     start == UINT64_MAX && size == 1 && off == 19,
	     "perf map line: 16 hex digits, CR dropped, the name's offset");
	T_EQ(dcpi_jitmap_parse_line("1000 10 \r", 9, &start, &size, &off), -EINVAL,
	     "perf map line: a name of just CR refused");
	T_EQ(dcpi_jitmap_parse_line("0x 10 f", 7, &start, &size, &off), -EINVAL,
	     "perf map line: 0x without digits refused");
	T_EQ(dcpi_jitmap_parse_line("1000 10f", 8, &start, &size, &off), -EINVAL,
	     "perf map line: no blank before the name refused");
}

/* ---- dcpitar members ----------------------------------------------------------- */

struct member {
	const char *name, *data;
	int type;                /* AE_IFREG, AE_IFLNK, AE_IFDIR, or 1: a hard link */
};

/* A pax tar of the members at path. */
static int make_tar(const char *path, const struct member *m, size_t n)
{
	struct archive *a = archive_write_new();
	int err = 0;

	if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_filename(a, path) != ARCHIVE_OK) {
		if (a)
			archive_write_free(a);
		return -1;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct archive_entry *e = archive_entry_new();
		size_t len = m[i].data ? strlen(m[i].data) : 0;

		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_perm(e, 0644);
		if (m[i].type == 1) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, "hosts");
		} else {
			archive_entry_set_filetype(e, (unsigned)m[i].type);
			if (m[i].type == AE_IFLNK)
				archive_entry_set_symlink(e, "/etc/passwd");
			if (m[i].type == AE_IFREG)
				archive_entry_set_size(e, (la_int64_t)len);
		}
		if (archive_write_header(a, e) != ARCHIVE_OK ||
		    (len && m[i].type == AE_IFREG &&
		     archive_write_data(a, m[i].data, len) != (la_ssize_t)len))
			err = -1;
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		err = -1;
	archive_write_free(a);
	return err;
}

static int tar_n;

/* Unpack members (with a good "hosts" before them) into a new directory:
 * the result, and the directory's name in dir. */
static int unpack(const struct member *m, size_t n, uint64_t max, char *dir, size_t len,
		  struct dcpi_tar_stats *st)
{
	struct member all[8] = { { "hosts", "a b\n", AE_IFREG } };
	char tar[PATH_MAX];

	memcpy(all + 1, m, n * sizeof(*m));
	snprintf(tar, sizeof(tar), "%s", fx_path("t.tar"));
	snprintf(dir, len, "%s/x%d", fx_tmp, tar_n++);
	unlink(tar);
	if (make_tar(tar, all, n + 1))
		return -999;
	return dcpi_tar_unpack(tar, dir, max, st);
}

static void tar_refused(const struct member m, const char *why)
{
	struct dcpi_tar_stats st;
	char dir[PATH_MAX], want[600];
	struct stat sb;
	int err = unpack(&m, 1, 0, dir, sizeof(dir), &st);

	snprintf(want, sizeof(want), "entry '%s' %s: refused", m.name, why);
	T_OK(err == -EBADMSG && says(want), "tar: '%s' refused: %s (%d: %s)", m.name, why, err,
	     err ? dcpi_errmsg() : "accepted");
	T_OK(lstat(dir, &sb) && errno == ENOENT, "tar: ... and nothing is left of the unpacking");
}

static void tar_accepted(const struct member m)
{
	struct dcpi_tar_stats st;
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct stat sb;
	uint8_t *data = NULL;
	size_t n = 0;
	int err = unpack(&m, 1, 0, dir, sizeof(dir), &st);

	snprintf(path, sizeof(path), "%s/%s", dir, m.name);
	T_OK(!err && st.files == 2 && !stat(path, &sb) && (sb.st_mode & 07777) == 0600 &&
	     !dcpi_file_read(path, 1 << 20, &data, &n) && n == strlen(m.data) &&
	     !memcmp(data, m.data, n),
	     "tar: '%s' unpacked, 0600, its bytes (%d: %s)", m.name, err, err ? dcpi_errmsg() : "");
	free(data);
}

static void test_tar(void)
{
	static const char *const good[] = {
		EPOCH "/plat/epoch.stats", EPOCH "/p.q-r_s/NAME-0123.prof",
		".build-id/ab/cdef0123", ".build-id/ab/cdef0123.debug",
	};
	static const char *const bad_names[] = {
		"/hosts", "/" EPOCH "/plat/x", EPOCH "/../x", EPOCH "/plat/../x", "../" EPOCH "/p/x",
		EPOCH "/.plat/x", EPOCH "/plat/.x", EPOCH "/plat/x/y", EPOCH "/plat/", EPOCH "//x",
		EPOCH "/plat", "notanepoch/plat/x", "hosts2", "./hosts", ".build-id/ab/cdef.sh",
		".build-id/AB/cdef", ".build-id/ab/CDEF", ".build-id/a/bcdef", ".build-id/abc/def",
		".build-id/ab/", ".build-id/ab/cd/ef", ".build-id/ab/cdef.debug.x",
		".build-id/ab/../../x", ".build-id/", ".build-id/a", ".build-id/ab",
	};
	struct dcpi_tar_stats st;
	struct member two[2] = { { EPOCH "/p/a", "12345", AE_IFREG }, { EPOCH "/p/b", "67890",
									 AE_IFREG } };
	char dir[PATH_MAX], longname[400];
	struct stat sb;
	int err;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		tar_accepted((struct member){ good[i], "data\n", AE_IFREG });
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		tar_refused((struct member){ bad_names[i], "x", AE_IFREG },
			    "is not one dcpitar writes");
	/* platform names as hosts have them: under DCPI_HOST_MAX bytes */
	memset(longname, 'p', sizeof(longname));
	memcpy(longname, EPOCH "/", 17);
	strcpy(longname + 17 + DCPI_HOST_MAX, "/x");
	tar_refused((struct member){ longname, "x", AE_IFREG }, "is not one dcpitar writes");
	strcpy(longname + 17 + DCPI_HOST_MAX - 1, "/x");
	tar_accepted((struct member){ longname, "x", AE_IFREG });
	tar_refused((struct member){ EPOCH "/p/link", NULL, AE_IFLNK }, "is not a regular file");
	tar_refused((struct member){ EPOCH "/p/hard", NULL, 1 }, "is not a regular file");
	tar_refused((struct member){ EPOCH "/p/fifo", NULL, AE_IFIFO }, "is not a regular file");

	/* the total cap: 4 + 10 bytes */
	err = unpack(two, 2, 14, dir, sizeof(dir), &st);
	T_OK(!err && st.files == 3 && st.bytes == 14, "tar: exactly the cap unpacked (%d: %s)",
	     err, err ? dcpi_errmsg() : "");
	err = unpack(two, 2, 13, dir, sizeof(dir), &st);
	T_OK(err == -EFBIG && says("more than 13 bytes") && says("'" EPOCH "/p/b'"),
	     "tar: a byte over the cap refused at the entry that crosses it (%s)",
	     err ? dcpi_errmsg() : "accepted");
	T_OK(lstat(dir, &sb) && errno == ENOENT, "tar: ... and nothing is left");

	/* no entries; an existing directory */
	unlink(fx_path("t.tar"));
	err = make_tar(fx_path("t.tar"), NULL, 0);
	snprintf(dir, sizeof(dir), "%s/empty", fx_tmp);
	T_OK(!err && dcpi_tar_unpack(fx_path("t.tar"), dir, 0, &st) == -EBADMSG &&
	     says("no entries"), "tar: an archive without entries refused");
	T_OK(lstat(dir, &sb) && errno == ENOENT, "tar: ... and nothing is left");
	T_EQ(dcpi_tar_unpack(fx_path("t.tar"), fx_tmp, 0, &st), -EEXIST,
	     "tar: an existing directory refused");
}

/* ---- label selection ---------------------------------------------------------- */

static void test_label_value(void)
{
	static const char *label = "comm=xz,uid=1000,cgroup=/a=b/c,commx=no,x=";
	char buf[64];

	T_OK(!dcpi_profile_label_value(label, "comm", buf, sizeof(buf)) && !strcmp(buf, "xz"),
	     "label value: the first key");
	T_OK(!dcpi_profile_label_value(label, "uid", buf, sizeof(buf)) && !strcmp(buf, "1000"),
	     "label value: a middle key");
	T_OK(!dcpi_profile_label_value(label, "cgroup", buf, sizeof(buf)) &&
	     !strcmp(buf, "/a=b/c"), "label value: a value holding '='");
	T_OK(!dcpi_profile_label_value(label, "x", buf, sizeof(buf)) && !strcmp(buf, ""),
	     "label value: an empty value at the end");
	T_OK(!dcpi_profile_label_value("commx=no,comm=yes", "comm", buf, sizeof(buf)) &&
	     !strcmp(buf, "yes"), "label value: a key that another one starts with");
	T_EQ(dcpi_profile_label_value(label, "com", buf, sizeof(buf)), -ENOENT,
	     "label value: a prefix of a key is not the key");
	T_EQ(dcpi_profile_label_value(label, "1000", buf, sizeof(buf)), -ENOENT,
	     "label value: a value is not a key");
	T_EQ(dcpi_profile_label_value(NULL, "comm", buf, sizeof(buf)), -ENOENT,
	     "label value: no label");
	T_OK(!dcpi_profile_label_value(label, "comm", buf, 2) && !strcmp(buf, "x"),
	     "label value: truncated to the buffer");
}

static int add_labelled(const char *dir, const char *label, uint64_t count)
{
	return fx_cycles_profile(dir, EPOCH, "h", "/bin/true", label, count);
}

/* The sum of the profiles spec keeps (-1: refused, the set unchanged). */
static long long kept(const char *root, const char *spec)
{
	struct dcpi_profset s;
	long long sum = 0;
	size_t n0;
	int err;

	if (dcpi_profset_load(root, EPOCH, "h", &s))
		return -2;
	n0 = s.n;
	err = dcpi_profset_keep_label(&s, spec);
	for (size_t i = 0; i < s.n; i++)
		sum += (long long)s.v[i].prof.events[0].total;
	if (sum != (long long)s.sum[0])
		sum = -3; /* the set's sum not kept in step */
	if (err)
		sum = err == -EINVAL && s.n == n0 ? -1 : -4;
	dcpi_profset_free(&s);
	return sum;
}

static void test_label_select(void)
{
	char root[PATH_MAX], dir[PATH_MAX];

	snprintf(root, sizeof(root), "%s", fx_path("labeldb"));
	if (dcpi_db_path(dir, sizeof(dir), root, EPOCH, "h", NULL) || dcpi_db_init(dir, 0700) ||
	    add_labelled(dir, "comm=xz,uid=0", 1) || add_labelled(dir, "comm=xz,uid=1000", 2) ||
	    add_labelled(dir, "comm=sshd,uid=0,cgroup=/s/ssh", 4) ||
	    add_labelled(dir, "comm=xzcat,uid=0", 8) || add_labelled(dir, NULL, 16)) {
		T_OK(0, "label selection: the database: %s", dcpi_errmsg());
		return;
	}
	T_EQ(kept(root, "comm=xz"), 3, "label selection: comm=xz (not xzcat, not unlabelled)");
	T_EQ(kept(root, "uid=0"), 13, "label selection: uid=0");
	T_EQ(kept(root, "comm=xz,uid=0"), 1, "label selection: two pairs, both must hold");
	T_EQ(kept(root, "uid=0,comm=xz"), 1, "label selection: two pairs in the other order");
	T_EQ(kept(root, "uid=1000,comm=sshd"), 0, "label selection: two pairs no label has");
	T_EQ(kept(root, "comm=sshd,uid=0,cgroup=/s/ssh"), 4, "label selection: three pairs");
	T_EQ(kept(root, "comm=sshd,uid=0,cgroup=/s"), 0, "label selection: the third pair differs");
	T_EQ(kept(root, "comm="), 0, "label selection: an empty value matches no label here");
	T_EQ(kept(root, "comm"), -1, "label selection: a key without '=' refused");
	T_EQ(kept(root, "=xz"), -1, "label selection: an empty key refused");
	T_EQ(kept(root, "comm=xz,"), 3, "label selection: a trailing comma is no pair");
	T_EQ(kept(root, "comm=xz,uid"), -1, "label selection: a second pair without '=' refused");
	T_EQ(kept(root, ",comm=xz"), -1, "label selection: an empty first pair refused");
	T_EQ(kept(root, ""), -1, "label selection: an empty selection refused");
}

/* ---- kallsyms snapshots --------------------------------------------------------- */

static void test_kallsyms(void)
{
	static const char ks[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000ff0 t " DCPI_KALLSYMS_PADDING "f1\n"
		"ffffffff81001000 T f1\n"
		"ffffffff81001100 w weak_one\n"
		"ffffffff81001200 W Weak_two\n"
		"ffffffff81001300 TT two_letters\n"
		"ffffffff81001400 t in_mod\t[m]\n"
		"ffffffff81001500 t bad_mod\t[]\n"
		"ffffffff81001600 t bad_mod2\tm]\n"
		"ffffffff81001700 t extra\t[m] x\n"
		"1ffffffff81001800 t seventeen_digits\n"
		"ffffffff81001900 D data\n"
		"ffffffff81002000 T " DCPI_KALLSYMS_PADDING "\n"
		"ffffffff81003000 T _etext\n";
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *s;
	char plat[PATH_MAX], proc[PATH_MAX];
	uint8_t *data = NULL;
	size_t n = 0;
	gzFile g;
	char text[4096];
	int len = 0, err;

	snprintf(plat, sizeof(plat), "%s", fx_path("plat"));
	snprintf(proc, sizeof(proc), "%s", fx_path("proc"));
	fx_sh("mkdir -p '%s' '%s'", plat, proc);
	put_file(fx_path("proc/modules"), "m 4096 0 - Live 0xffffffff81001400\n", 35);
	dcpi_buf_put(&b, ks, sizeof(ks) - 1);
	err = dcpi_snapshot_kernel_text(plat, &b, proc, 0600);
	dcpi_buf_release(&b);
	T_EQ(err, 0, "snapshot: written%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	g = gzopen(fx_path("plat/kallsyms.gz"), "rb");
	if (g) {
		len = gzread(g, text, sizeof(text) - 1);
		gzclose(g);
	}
	text[len > 0 ? len : 0] = 0;
	T_OK(len > 0 && !strstr(text, DCPI_KALLSYMS_PADDING), "snapshot: padding symbols dropped");
	T_EQ(len, (int)sizeof(ks) - 1 - (int)strlen("ffffffff81000ff0 t " DCPI_KALLSYMS_PADDING "f1\n") -
		  (int)strlen("ffffffff81002000 T " DCPI_KALLSYMS_PADDING "\n"),
	     "snapshot: every other line kept");
	T_OK(strstr(text, "ffffffff81001000 T f1\nffffffff81001100 w weak_one\n") &&
	     strstr(text, "ffffffff81001700 t extra\t[m] x\n"), "snapshot: ... byte for byte");
	T_OK(!dcpi_file_read(fx_path("plat/modules"), 4096, &data, &n) && n == 35 &&
	     !memcmp(data, "m 4096", 6), "snapshot: the modules list copied");
	free(data);

	err = dcpi_symtab_open_kallsyms(fx_path("plat/kallsyms.gz"), NULL, 0, &st);
	T_EQ(err, 0, "kallsyms: the snapshot reads%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	if (!st)
		return;
	T_EQ(dcpi_symtab_skipped(st), 5, "kallsyms: two-letter type, '[]', unbracketed module, "
	     "a field after it, 17 hex digits skipped");
	s = dcpi_symtab_lookup(st, 0xffffffff81001000);
	T_OK(s && !strcmp(s->name, "f1") && s->bind == DCPI_SYM_GLOBAL && s->size == 0x100,
	     "kallsyms: T: global, sized to the next symbol");
	s = dcpi_symtab_lookup(st, 0xffffffff81001180);
	T_OK(s && !strcmp(s->name, "weak_one") && s->bind == DCPI_SYM_WEAK,
	     "kallsyms: w: a weak text symbol");
	s = dcpi_symtab_lookup(st, 0xffffffff810012ff);
	T_OK(s && !strcmp(s->name, "Weak_two") && s->bind == DCPI_SYM_WEAK,
	     "kallsyms: W: weak, up to the next address, the module's included");
	s = dcpi_symtab_lookup(st, 0xffffffff81001900);
	T_OK(!s || strcmp(s->name, "data"), "kallsyms: D: not a text symbol");
	T_OK(!s || strcmp(s->name, "seventeen_digits"), "kallsyms: 17 hex digits skipped");
	dcpi_symtab_close(st);
	err = dcpi_symtab_open_kallsyms(fx_path("plat/kallsyms.gz"), "m", 0xffffffff81001400, &st);
	s = st ? dcpi_symtab_lookup(st, 0) : NULL;
	T_OK(s && !strcmp(s->name, "in_mod"), "kallsyms: the module's symbol, by offset from its base");
	dcpi_symtab_close(st);
}

/* ---- profile headers ----------------------------------------------------------- */

static int encode_profile(struct dcpi_profile *p, struct dcpi_buf *b)
{
	uint64_t off = 0x10, count = 3;

	dcpi_profile_init(p);
	p->path = strdup("/x");
	p->epoch = strdup(EPOCH);
	p->platform = strdup("h");
	p->kind = DCPI_IMAGE_UNKNOWN;
	p->nevents = 1;
	p->events[0].name = strdup("cycles");
	p->events[0].period = 7;
	p->events[0].monitored_ppm = 1000000;
	return dcpi_profile_set_rows(p, 1, &off, &count) || dcpi_profile_encode(p, b);
}

/* Byte at of the encoding set to v, the checksum recomputed: decoded. */
static int decode_patched(const struct dcpi_buf *b, size_t at, uint8_t v, const char *want)
{
	uint8_t *copy = malloc(b->len);
	struct dcpi_profile p;
	uint32_t crc;
	int err;

	memcpy(copy, b->data, b->len);
	copy[at] = v;
	crc = (uint32_t)crc32(0L, copy, (uInt)(b->len - 4));
	memcpy(copy + b->len - 4, &crc, 4);   /* little-endian hosts */
	err = dcpi_profile_decode(copy, b->len, &p);
	free(copy);
	dcpi_profile_free(&p);
	return err == -EBADMSG && says(want);
}

static void test_profile_header(void)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_profile p, q;
	const uint8_t *kind, *ppm;
	int err = encode_profile(&p, &b);

	T_EQ(err, 0, "profile: encoded");
	if (err)
		goto out;
	/* the kind (4) follows "h" (platform); the ppm (1000000: c0 84 3d) is
	   the only such varint */
	kind = memmem(b.data, b.len, "\x01h\x04", 3);
	ppm = memmem(b.data, b.len, "\xc0\x84\x3d", 3);
	T_OK(kind && ppm, "profile: the kind and ppm bytes found");
	if (!kind || !ppm)
		goto out;
	T_OK(decode_patched(&b, (size_t)(kind + 2 - b.data), 5, "image kind 5 at byte"),
	     "profile: an unknown image kind refused (%s)", dcpi_errmsg());
	T_OK(decode_patched(&b, (size_t)(ppm - b.data), 0xc1, "monitored ppm 1000001"),
	     "profile: a monitored fraction over a million refused (%s)", dcpi_errmsg());
	{
		uint8_t *more = malloc(b.len + 1);

		memcpy(more, b.data, b.len);
		more[b.len] = 0;
		err = dcpi_profile_decode(more, b.len + 1, &q);
		T_OK(err == -EBADMSG && (says("trailing garbage") || says("checksum")),
		     "profile: a byte after the checksum refused (%s)", dcpi_errmsg());
		dcpi_profile_free(&q);
		free(more);
	}
	err = dcpi_profile_decode(b.data, b.len, &q);
	T_OK(!err && q.kind == DCPI_IMAGE_UNKNOWN && q.events[0].monitored_ppm == 1000000 &&
	     q.events[0].period == 7 && q.nrows == 1 && q.offsets[0] == 0x10 && q.counts[0] == 3,
	     "profile: the unpatched encoding decodes, its fields as written");
	dcpi_profile_free(&q);
out:
	dcpi_profile_free(&p);
	dcpi_buf_release(&b);
}

/* ---- exact-count files ----------------------------------------------------------- */

static void test_exact_file(void)
{
	static const uint8_t id[2] = { 0x12, 0x34 };
	struct dcpi_exact e;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", fx_path("exactdb"));
	fx_sh("mkdir -p '%s/exact'", dir);
	put_file(fx_path("exactdb/exact/1234"), "dcpi-exact 1\nruns 1\ni 10 5", 26);
	T_OK(dcpi_exact_read(dir, id, 2, &e) == -EBADMSG && says("empty, truncated or binary"),
	     "exact: a file whose last line has no newline refused (truncated)");
	put_file(fx_path("exactdb/exact/1234"), "dcpi-exact 1\nruns 1\ni 10 5\n", 27);
	T_OK(dcpi_exact_read(dir, id, 2, &e) == 0 && e.runs == 1 && dcpi_exact_count(&e, 0x10) == 5,
	     "exact: the same file complete is read");
	dcpi_exact_free(&e);
	put_file(fx_path("exactdb/exact/1234"), "dcpi-exact 1\nruns 0\n", 20);
	T_OK(dcpi_exact_read(dir, id, 2, &e) == -EBADMSG && says(":2: runs is not a count above 0"),
	     "exact: runs 0 refused, naming line 2");
	put_file(fx_path("exactdb/exact/1234"), "dcpi-exact 1\ni 10 5\ni 10\n", 25);
	T_OK(dcpi_exact_read(dir, id, 2, &e) == -EBADMSG && says(":3: not a count record"),
	     "exact: a record without its count refused, naming line 3");
	put_file(fx_path("exactdb/exact/1234"), "dcpi-exact 1\nj 10 20 5 6\n", 25);
	T_OK(dcpi_exact_read(dir, id, 2, &e) == -EBADMSG && says(":2: not a count record"),
	     "exact: a jump record with a field too many refused");
}

int main(void)
{
	if (fx_setup("parsers"))
		return 1;
	test_hosts();
	test_stats_fields();
	test_stats_refusals();
	test_perfmap();
	test_tar();
	test_label_value();
	test_label_select();
	test_kallsyms();
	test_profile_header();
	test_exact_file();
	fx_cleanup();
	return t_done();
}
