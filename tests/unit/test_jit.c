/* JIT code: SHA-1, perf-map lines, ELF pseudo-images read back by the
 * symbol and disassembly code the tools use, and the jitmap on a fake
 * /proc tree: fresh, stale, overlapping, truncated and hostile maps (a
 * symlink, a FIFO, another user's file, huge and malformed entries), and
 * the collector storing a pseudo-image per process in the database. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/collector.h"
#include "dcpi/ctl.h"
#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"
#include "dcpi/sha1.h"
#include "dcpi/srcline.h"
#include "dcpi/symtab.h"
#include "collect/jitmap_priv.h" /* a process's user, for the budget test */
#include "tap.h"

static char tmp[256];
static char warnings[8192];
static int nwarnings;

static void on_warning(void *arg, const char *msg)
{
	(void)arg;
	nwarnings++;
	strncat(warnings, msg, sizeof(warnings) - strlen(warnings) - 2);
	strcat(warnings, "\n");
}

static void test_sha1(void)
{
	struct dcpi_sha1 s;
	uint8_t out[20];
	char hex[41];
	static char big[1000];

	dcpi_sha1_init(&s);
	dcpi_sha1_update(&s, "abc", 3);
	dcpi_sha1_final(&s, out);
	dcpi_hex(out, 20, hex);
	T_STREQ(hex, "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA-1 of abc");
	memset(big, 'a', sizeof(big));
	dcpi_sha1_init(&s);
	for (int i = 0; i < 1000; i++)
		dcpi_sha1_update(&s, big, sizeof(big));
	dcpi_sha1_final(&s, out);
	dcpi_hex(out, 20, hex);
	T_STREQ(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "SHA-1 of a million a's");
}

static void test_parse(void)
{
	uint64_t a, n;
	size_t name;
	const char *l1 = "7f7b64006040 1e0 JS:*churn /tmp/hot.js:1:15";
	const char *l2 = "0x1000\t0X20\tlong Hot.churn(long)\r";

	T_EQ(dcpi_jitmap_parse_line(l1, strlen(l1), &a, &n, &name), 0, "node line parses");
	T_EQ(a, 0x7f7b64006040ull, "its start");
	T_EQ(n, 0x1e0, "its size");
	T_STREQ(l1 + name, "JS:*churn /tmp/hot.js:1:15", "its name, spaces kept");
	T_EQ(dcpi_jitmap_parse_line(l2, strlen(l2), &a, &n, &name), 0, "0x and tabs parse");
	T_EQ(a + n, 0x1020, "0x1000 + 0x20");
	T_OK(!strncmp(l2 + name, "long Hot.churn(long)", 20), "name without the CR");
	T_EQ(dcpi_jitmap_parse_line("1000 20", 7, &a, &n, &name), -EINVAL, "no name: refused");
	T_EQ(dcpi_jitmap_parse_line("1000 20 ", 8, &a, &n, &name), -EINVAL, "empty name: refused");
	T_EQ(dcpi_jitmap_parse_line("10g0 20 f", 9, &a, &n, &name), -EINVAL, "not hex: refused");
	T_EQ(dcpi_jitmap_parse_line("11112222333344445 20 f", 22, &a, &n, &name), -EINVAL,
	     "17 hex digits: refused");
	T_EQ(dcpi_jitmap_parse_line("1000 20 f\0g", 11, &a, &n, &name), -EINVAL,
	     "a NUL in the name: refused");
	T_EQ(dcpi_jitmap_parse_line("", 0, &a, &n, &name), -EINVAL, "empty line: refused");
}

static const uint8_t code_f[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 }; /* push rbp; ... ret */
static const uint8_t code_g[] = { 0x31, 0xc0, 0xc3 };                   /* xor eax; ret */

static int build(const struct dcpi_jit_func *f, size_t n, const char *path, uint8_t id[20])
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	int err = dcpi_jitimage_build(f, n, &b, id);

	if (!err)
		err = dcpi_file_write_atomic(path, b.data, b.len, 0600);
	dcpi_buf_release(&b);
	return err;
}

static void test_image(void)
{
	struct dcpi_jit_func f[3] = { { "f", sizeof(code_f), code_f, NULL, 0 }, { "nocode", 40, NULL, NULL, 0 },
				      { "g", sizeof(code_g), code_g, NULL, 0 } };
	uint8_t id[20], id2[20], id3[20], got[64];
	char path[300];
	struct dcpi_symtab *st = NULL;
	struct dcpi_disasm *d = NULL;
	struct dcpi_insn *in = NULL;
	size_t nin = 0;
	uint64_t at1 = dcpi_jitimage_place(0), at2, at3;

	at2 = dcpi_jitimage_place(at1 + sizeof(code_f));
	at3 = dcpi_jitimage_place(at2 + 40);
	snprintf(path, sizeof(path), "%s/img", tmp);
	T_EQ(build(f, 3, path, id), 0, "image built");
	T_EQ(dcpi_buildid_elf(path, got, sizeof(got)), 20, "the image has a 20-byte build-id");
	T_OK(!memcmp(got, id, 20), "the one returned");
	T_EQ(dcpi_symtab_open(path, id, 20, NULL, &st), 0, "symtab opens it: %s", dcpi_errmsg());
	if (st) {
		const struct dcpi_sym *s = dcpi_symtab_lookup(st, at1 + 3);
		T_OK(s && !strcmp(s->name, "f"), "offset in f names f");
		s = dcpi_symtab_lookup(st, at2 + 39);
		T_OK(s && !strcmp(s->name, "nocode"), "last byte of nocode names it");
		s = dcpi_symtab_lookup(st, at3);
		T_OK(s && !strcmp(s->name, "g") && s->size == sizeof(code_g), "g, with its size");
		dcpi_symtab_close(st);
	}
	T_EQ(dcpi_disasm_open(path, &d), 0, "disassembler opens it");
	if (d) {
		T_EQ(dcpi_disasm_collect(d, at1, at1 + sizeof(code_f), &in, &nin), 0, "f decodes");
		T_OK(nin == 4 && !strncmp(in[0].mnemonic, "push", 4) &&
		     !strncmp(in[3].mnemonic, "ret", 3), "push ... ret (%zu instructions: %s)", nin,
		     nin ? in[0].mnemonic : "");
		free(in);
		in = NULL;
		T_EQ(dcpi_disasm_collect(d, at2, at2 + 40, &in, &nin), -ENODATA,
		     "code never given is said to be absent, not shown as zeros");
		free(in);
		dcpi_disasm_close(d);
	}
	T_EQ(build(f, 3, path, id2), 0, "built again");
	T_OK(!memcmp(id, id2, 20), "same content, same build-id");
	f[0].name = "f2";
	T_EQ(build(f, 3, path, id3), 0, "renamed");
	T_OK(memcmp(id, id3, 20), "other content, other build-id");
	f[1].size = 0;
	T_EQ(build(f, 3, path, id3), -EINVAL, "a zero size is refused");
	f[1] = (struct dcpi_jit_func){ "", 4, NULL, NULL, 0 };
	T_EQ(build(f, 3, path, id3), -EINVAL, "an empty name is refused");
}

/* ---- a fake /proc ---------------------------------------------------------- */

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

/* PROC/PID with status, stat (started 100 s ago), root/tmp */
static void fake_proc(int pid, int uid)
{
	char p[512], s[600];
	long hz = sysconf(_SC_CLK_TCK);
	time_t now = time(NULL);

	snprintf(p, sizeof(p), "%s/proc/%d/root/tmp", tmp, pid);
	snprintf(s, sizeof(s), "mkdir -p %s", p);
	if (system(s))
		abort();
	snprintf(p, sizeof(p), "%s/proc/stat", tmp);
	snprintf(s, sizeof(s), "cpu 1 2 3\nbtime %lld\n", (long long)now - 1000);
	put(p, s);
	snprintf(p, sizeof(p), "%s/proc/%d/status", tmp, pid);
	snprintf(s, sizeof(s), "Name:\tnode\nUid:\t%d\t%d\t%d\t%d\nNSpid:\t%d\n", uid, uid, uid, uid,
		 pid);
	put(p, s);
	snprintf(p, sizeof(p), "%s/proc/%d/stat", tmp, pid);
	snprintf(s, sizeof(s), "%d (no de) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %lld 0 0\n", pid,
		 (long long)(900 * hz));
	put(p, s);
}

/* Append, then wait out the re-read interval. */
static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
	usleep(DCPI_JITMAP_REREAD_NS / 1000 + 10000);
}

static char *map_path(int pid)
{
	static char p[600];

	snprintf(p, sizeof(p), "%s/proc/%d/root/tmp/perf-%d.map", tmp, pid, pid);
	return p;
}

static struct dcpi_jitmap *new_jm(void)
{
	char procroot[300];
	struct dcpi_jitmap_opts o = { .procroot = procroot, .on_warning = on_warning };
	struct dcpi_jitmap *jm = NULL;

	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	if (dcpi_jitmap_new(&o, &jm))
		abort();
	warnings[0] = '\0';
	nwarnings = 0;
	return jm;
}

static void age(const char *path, int seconds_ago)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds_ago;
	t[1] = t[0];
	if (utimensat(AT_FDCWD, path, t, 0))
		abort();
}

static void test_map_fresh(void)
{
	struct dcpi_jitmap *jm = new_jm();
	struct dcpi_buf b = DCPI_BUF_INIT;
	uint8_t id[20];
	char path[128];
	int64_t key = 0, key2 = 0;
	uint64_t off = 0;
	int32_t pid = 0;

	fake_proc(100, 0);
	put(map_path(100), "1000 100 first\n0x2000 0x40 second one\n1000 10 replaces first\n");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x2010, 0, &key, &off), 1, "a sample in second is JIT code");
	T_EQ(off, DCPI_JITIMAGE_TEXT + 0x10, "first hit: placed at the start of the text");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x1004, 0, &key2, &off), 1, "a sample at 0x1004");
	T_EQ(key2, key, "same process, same key");
	T_EQ(off, DCPI_JITIMAGE_TEXT + 0x40 + 4, "placed after second: the newest entry wins");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x1050, 0, &key2, &off), 1, "0x1050: what is left of first");
	T_EQ(off, DCPI_JITIMAGE_TEXT + 0x50 + 0x50,
	     "placed third, at its offset from its own start");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x3000, 0, &key2, &off), 0, "outside every entry");
	T_EQ(dcpi_jitmap_image(jm, key, &b, id, path, sizeof(path), &pid), 0, "its image");
	T_STREQ(path, "/tmp/perf-100.map", "shown as the map the process wrote");
	T_EQ(pid, 100, "of process 100");
	T_EQ(nwarnings, 0, "no warnings: %s", warnings);
	dcpi_buf_release(&b);
	/* appended later, read on a miss after the re-read interval */
	append(map_path(100), "4000 10 late\n5000 10 no newli");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x4001, 0, &key2, &off), 1, "an appended entry is read");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x5001, 0, &key2, &off), 0, "a partial line waits");
	dcpi_jitmap_exit(jm, 100);
	T_EQ(dcpi_jitmap_image(jm, key, &b, id, path, sizeof(path), &pid), 0,
	     "an exited process's image is there until the reap");
	dcpi_buf_release(&b);
	dcpi_jitmap_reap(jm);
	T_EQ(dcpi_jitmap_image(jm, key, &b, id, path, sizeof(path), &pid), -ENOENT, "reaped");
	unlink(map_path(100));
	/* the file is kept open: deleted, it is still read */
	put(map_path(100), "1000 100 a\n");
	T_EQ(dcpi_jitmap_resolve(jm, 100, 0x1001, 0, &key2, &off), 1, "a new process 100");
	T_OK(key2 != key, "with a new key");
	dcpi_jitmap_free(jm);
}

/* A merge's image of a process: by content first, then, as it grows, one
 * id of the process's own, replaced each time (a superset at the same
 * offsets); nothing to write when nothing was placed since; written with
 * its no-code range as a hole. */
static void test_image_growth(void)
{
	struct dcpi_jitmap *jm = new_jm(), *jm2 = new_jm();
	struct dcpi_buf b = DCPI_BUF_INIT;
	uint8_t id[20], id1[20], id2[20], content[20];
	char path[128], file[300];
	struct dcpi_symtab *st = NULL;
	struct stat sb;
	int64_t key = 0, k2 = 0;
	uint64_t off1 = 0, off = 0, size = 0;
	int32_t pid = 0;
	int replace = -1;

	fake_proc(110, 0);
	put(map_path(110), "1000 100 first\n200000 80000 big\n300000 100 third\n");
	T_EQ(dcpi_jitmap_resolve(jm, 110, 0x1010, 0, &key, &off1), 1, "a sample in first");
	T_EQ(dcpi_jitmap_image_next(jm, key, &b, id1, path, sizeof(path), &pid, &size, &replace), 0,
	     "the first image is built");
	T_EQ(replace, 0, "named by its content, not replacing anything");
	T_EQ(size, b.len, "its size");
	dcpi_buf_release(&b);
	T_EQ(dcpi_jitmap_image(jm, key, &b, content, path, sizeof(path), &pid), 0, "whole image");
	T_OK(!memcmp(id1, content, 20), "the first id is the content's");
	dcpi_buf_release(&b);
	dcpi_jitmap_image_stored(jm, key);
	T_EQ(dcpi_jitmap_image_next(jm, key, &b, id, path, sizeof(path), &pid, &size, &replace), 1,
	     "nothing placed since it was stored: nothing to write");
	T_OK(!memcmp(id, id1, 20) && b.len == 0, "the stored id, no bytes");
	T_EQ(dcpi_jitmap_resolve(jm, 110, 0x200010, 0, &k2, &off), 1, "a sample in big");
	T_EQ(dcpi_jitmap_image_next(jm, key, &b, id2, path, sizeof(path), &pid, &size, &replace), 0,
	     "grown: built again");
	T_EQ(replace, 1, "to replace");
	T_OK(memcmp(id2, id1, 20) != 0, "under an id of the process's own");
	dcpi_buf_release(&b);
	/* not stored (the commit failed): built again under the same id */
	T_EQ(dcpi_jitmap_image_next(jm, key, &b, id, path, sizeof(path), &pid, &size, &replace), 0,
	     "not stored: built again");
	T_OK(!memcmp(id, id2, 20) && replace == 1, "same id, replacing");
	dcpi_buf_release(&b);
	dcpi_jitmap_image_stored(jm, key);
	T_EQ(dcpi_jitmap_resolve(jm, 110, 0x300010, 0, &k2, &off), 1, "a sample in third");
	T_EQ(dcpi_jitmap_image_next(jm, key, &b, id, path, sizeof(path), &pid, &size, &replace), 0,
	     "grown again");
	T_OK(!memcmp(id, id2, 20) && replace == 1, "the same own id, replaced");
	snprintf(file, sizeof(file), "%s/grown", tmp);
	T_EQ(dcpi_file_write_atomic(file, b.data, b.len, 0600), 0, "written");
	T_EQ(stat(file, &sb), 0, "stat");
	T_OK((uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size / 4,
	     "the no-code range (0x80000 bytes) is a hole: %lld of %lld bytes on disk",
	     (long long)sb.st_blocks * 512, (long long)sb.st_size);
	T_EQ(dcpi_symtab_open(file, id, 20, NULL, &st), 0, "the grown image opens: %s",
	     dcpi_errmsg());
	if (st) {
		const struct dcpi_sym *s = dcpi_symtab_lookup(st, off1);

		T_OK(s && !strcmp(s->name, "first"), "the first merge's offset still names first");
		s = dcpi_symtab_lookup(st, off);
		T_OK(s && !strcmp(s->name, "third"), "and the new one third");
		dcpi_symtab_close(st);
	}
	dcpi_buf_release(&b);
	/* another daemon run: the same first image, another grown id */
	T_EQ(dcpi_jitmap_resolve(jm2, 110, 0x1010, 0, &k2, &off), 1, "another run: first");
	dcpi_jitmap_image_next(jm2, k2, &b, id, path, sizeof(path), &pid, &size, &replace);
	T_OK(!memcmp(id, id1, 20), "same content, same first id");
	dcpi_jitmap_image_stored(jm2, k2);
	dcpi_buf_release(&b);
	dcpi_jitmap_resolve(jm2, 110, 0x200010, 0, &k2, &off);
	dcpi_jitmap_image_next(jm2, k2, &b, id, path, sizeof(path), &pid, &size, &replace);
	T_OK(memcmp(id, id2, 20) != 0, "but its grown image is its own, never the last run's");
	dcpi_buf_release(&b);
	dcpi_jitmap_free(jm);
	dcpi_jitmap_free(jm2);
	unlink(map_path(110));
}

static void test_map_stale(void)
{
	struct dcpi_jitmap *jm = new_jm();
	struct dcpi_jitmap_stats st;
	int64_t key;
	uint64_t off;

	fake_proc(101, 0);
	put(map_path(101), "1000 100 old\n");
	age(map_path(101), 3600);
	T_EQ(dcpi_jitmap_resolve(jm, 101, 0x1010, 0, &key, &off), 0,
	     "a map last written before the process started is not applied");
	T_OK(strstr(warnings, "earlier process") != NULL, "and said so: %s", warnings);
	append(map_path(101), "3000 10 appended\n");
	T_EQ(dcpi_jitmap_resolve(jm, 101, 0x3004, 0, &key, &off), 1, "what this process appends is");
	T_EQ(dcpi_jitmap_resolve(jm, 101, 0x1010, 0, &key, &off), 0, "the old lines still are not");
	put(map_path(101), "1000 8 truncated and rewritten\n");
	usleep(60000);
	T_EQ(dcpi_jitmap_resolve(jm, 101, 0x1004, 0, &key, &off), 1,
	     "a map that shrank is read again from the start");
	dcpi_jitmap_stats(jm, &st);
	T_EQ(st.stale, 1, "one stale map counted");
	dcpi_jitmap_free(jm);
}

static void refused(int pid, const char *what, const char *expect)
{
	struct dcpi_jitmap *jm = new_jm();
	struct dcpi_jitmap_stats st;
	int64_t key;
	uint64_t off;
	time_t t0 = time(NULL);

	T_EQ(dcpi_jitmap_resolve(jm, pid, 0x1010, 0, &key, &off), 0, "%s: not applied", what);
	T_OK(time(NULL) - t0 < 2, "%s: did not block", what);
	T_OK(strstr(warnings, expect) != NULL, "%s: a clear log line: %s", what, warnings);
	dcpi_jitmap_stats(jm, &st);
	T_EQ(st.refused, 1, "%s: counted as refused", what);
	T_EQ(dcpi_jitmap_resolve(jm, pid, 0x1010, 0, &key, &off), 0, "%s: asked again", what);
	T_EQ(nwarnings, 1, "%s: said once", what);
	dcpi_jitmap_free(jm);
}

static void test_map_hostile(void)
{
	char target[512], tmpdir[512];
	struct dcpi_jitmap *jm;
	struct dcpi_jitmap_stats st;
	int64_t key;
	uint64_t off;

	fake_proc(102, 0);
	snprintf(target, sizeof(target), "%s/secret", tmp);
	put(target, "1000 100 from a file the user could not read\n");
	if (symlink(target, map_path(102)))
		abort();
	refused(102, "a symlink", "symbolic link");

	fake_proc(103, 0);
	if (mkfifo(map_path(103), 0600))
		abort();
	refused(103, "a FIFO", "not a regular file");

	fake_proc(104, 1000);
	put(map_path(104), "1000 100 planted\n");
	if (chown(map_path(104), 2000, 2000))
		abort();
	refused(104, "another user's file", "owned by uid 2000");

	fake_proc(105, 0);
	snprintf(tmpdir, sizeof(tmpdir), "%s/proc/105/root/tmp", tmp);
	rmdir(tmpdir);
	snprintf(target, sizeof(target), "%s/proc/103/root/tmp", tmp);
	if (symlink(target, tmpdir))
		abort();
	refused(105, "a symlinked tmp/", "not a directory");

	fake_proc(106, 0);
	put(map_path(106), "garbage\n1000 ffffffffffff huge\nfffffffffffffff0 100 wraps\n"
			   "ffff900000000000 10 kernel half\n2000 10 good\n"
			   "2000 zz bad size\n");
	jm = new_jm();
	T_EQ(dcpi_jitmap_resolve(jm, 106, 0x2004, 0, &key, &off), 1, "the good line among bad ones");
	T_EQ(dcpi_jitmap_resolve(jm, 106, 0x1004, 0, &key, &off), 0, "the huge entry is not applied");
	dcpi_jitmap_stats(jm, &st);
	T_EQ(st.skipped, 5, "five lines skipped");
	T_EQ(nwarnings, 1, "one warning for the file: %s", warnings);
	dcpi_jitmap_free(jm);

	fake_proc(107, 0);
	{
		char *line = malloc(100000);
		memset(line, 'x', 99999);
		line[99999] = '\0';
		FILE *f = fopen(map_path(107), "w");
		fprintf(f, "1000 10 a\n3000 10 %s\n5000 10 c\n", line);
		fclose(f);
		free(line);
	}
	jm = new_jm();
	T_EQ(dcpi_jitmap_resolve(jm, 107, 0x5004, 0, &key, &off), 1, "an entry after a 100 kB line");
	T_EQ(dcpi_jitmap_resolve(jm, 107, 0x3004, 0, &key, &off), 0, "the long line skipped");
	dcpi_jitmap_free(jm);
}

/* ---- jitdump ----------------------------------------------------------- */

static void put_hdr(struct dcpi_buf *b, uint32_t id, uint32_t size, uint64_t ts)
{
	dcpi_buf_put(b, &id, 4);
	dcpi_buf_put(b, &size, 4);
	dcpi_buf_put(b, &ts, 8);
}

static void put64(struct dcpi_buf *b, uint64_t v)
{
	dcpi_buf_put(b, &v, 8);
}

static void dump_header(struct dcpi_buf *b, uint64_t flags)
{
	uint32_t h[6] = { 0x4A695444, 1, 40, 62, 0, 120 };

	dcpi_buf_put(b, h, sizeof(h));
	put64(b, 0);
	put64(b, flags);
}

static void dump_load(struct dcpi_buf *b, uint64_t ts, uint64_t addr, const char *name,
		      const uint8_t *code, size_t n)
{
	uint32_t ids[2] = { 120, 120 };

	put_hdr(b, 0, (uint32_t)(16 + 40 + strlen(name) + 1 + n), ts);
	dcpi_buf_put(b, ids, 8);
	put64(b, addr);
	put64(b, addr);
	put64(b, n);
	put64(b, 7);
	dcpi_buf_put(b, name, strlen(name) + 1);
	dcpi_buf_put(b, code, n);
}

static void dump_move(struct dcpi_buf *b, uint64_t ts, uint64_t from, uint64_t to, uint64_t n)
{
	uint32_t ids[2] = { 120, 120 };

	put_hdr(b, 1, 16 + 48, ts);
	dcpi_buf_put(b, ids, 8);
	put64(b, to);
	put64(b, from);
	put64(b, to);
	put64(b, n);
	put64(b, 7);
}

static void dump_debug(struct dcpi_buf *b, uint64_t ts, uint64_t addr, const char *file)
{
	uint32_t line[2] = { 12, 0 };

	put_hdr(b, 2, (uint32_t)(16 + 16 + 16 + strlen(file) + 2), ts);
	put64(b, addr);
	put64(b, 1);
	put64(b, addr);
	dcpi_buf_put(b, line, 8);
	dcpi_buf_put(b, file, strlen(file) + 1);
	dcpi_buf_put(b, "", 1); /* pad: one byte more than the entry */
}

/* dcpi record's child, gone before its jitdump's mapping was looked at
 * (on a loaded machine the look comes late): its dump is opened by path,
 * a regular file of ours; a file of another user's is not, and a
 * system-wide jitmap (dcpid: any user's process could name any path)
 * never opens a path. */
static struct dcpi_jitmap *jm_own(int own)
{
	static char procroot[300];
	struct dcpi_jitmap_opts o = { .procroot = procroot, .on_warning = on_warning,
				      .own_children = own };
	struct dcpi_jitmap *jm = NULL;

	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	if (dcpi_jitmap_new(&o, &jm))
		abort();
	return jm;
}

static void test_dump_after_exit(void)
{
	struct dcpi_jitmap *jm;
	struct dcpi_buf b = DCPI_BUF_INIT;
	char file[300];
	int64_t key = 0;
	uint64_t off = 0;
	FILE *f;

	dump_header(&b, 0);
	dump_load(&b, 100, 0x5000, "JS:*f x.js:1:1", code_f, sizeof(code_f));
	snprintf(file, sizeof(file), "%s/jit-120.dump", tmp);
	f = fopen(file, "w");
	if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f)) {
		T_OK(0, "dump written");
		return;
	}
	dcpi_buf_release(&b);
	jm = jm_own(1);
	T_EQ(dcpi_jitmap_watch_dump(jm, 120, 0x10000, 0x11000, file), 0, "our child's dump, "
	     "its process gone");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5002, 150, &key, &off), 1,
	     "its code named from the dump opened by path");
	dcpi_jitmap_free(jm);
	jm = jm_own(0);
	dcpi_jitmap_watch_dump(jm, 120, 0x10000, 0x11000, file);
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5002, 150, &key, &off), 0,
	     "system-wide: a gone process's path is never opened");
	dcpi_jitmap_free(jm);
	T_EQ(chown(file, 65534, 65534), 0, "the dump now another user's");
	jm = jm_own(1);
	dcpi_jitmap_watch_dump(jm, 120, 0x10000, 0x11000, file);
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5002, 150, &key, &off), 0,
	     "our child's, but a file of another user's: not read");
	T_OK(strstr(warnings, "jitdump") != NULL, "and said so: %s", warnings);
	dcpi_jitmap_free(jm);
	unlink(file);
}

/* The same for a perf map: our child gone before the look (dcpi record
 * with stacks under ASan fell that far behind node, and every JIT sample
 * was unknown) has its map read at its name in our /tmp when it is ours
 * and written since the jitmap was made; a system-wide jitmap gives up,
 * and an older map at that name is stale (only what follows is read). */
static void test_map_after_exit(void)
{
	enum { GONE = 4190001 }; /* no such process in the fake /proc */
	char path[64];
	struct dcpi_jitmap *jm;
	int64_t key = 0;
	uint64_t off = 0;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", GONE);
	jm = jm_own(1);
	put(path, "1000 100 fn\n");
	dcpi_jitmap_watch(jm, GONE);
	T_EQ(dcpi_jitmap_resolve(jm, GONE, 0x1010, 0, &key, &off), 1,
	     "our child's map, its process gone: read at its name");
	{
		int64_t pk = 0, k2 = 0;
		uint64_t o2 = 0;

		T_EQ(dcpi_jitmap_pending(jm, GONE, &pk), 1,
		     "its map open: what it does not name yet may be later");
		T_EQ(pk, key, "pending under the key of this run of the process");
		append(path, "2000 10 late\n");
		dcpi_jitmap_exit(jm, GONE);
		T_EQ(dcpi_jitmap_resolve_key(jm, pk, 0x2004, &k2, &o2), 1,
		     "resolved by key after it exited: its map read at exit");
		T_EQ(k2, key, "the same process's key (not a new process's of the pid)");
	}
	dcpi_jitmap_free(jm);
	jm = jm_own(0);
	dcpi_jitmap_watch(jm, GONE);
	T_EQ(dcpi_jitmap_resolve(jm, GONE, 0x1010, 0, &key, &off), 0,
	     "system-wide: a gone process's map is not read");
	{
		int64_t pk = 0;

		T_EQ(dcpi_jitmap_pending(jm, GONE, &pk), 0, "nor will it be: nothing is pending");
	}
	dcpi_jitmap_free(jm);
	age(path, 100);
	jm = jm_own(1);
	dcpi_jitmap_watch(jm, GONE);
	T_EQ(dcpi_jitmap_resolve(jm, GONE, 0x1010, 0, &key, &off), 0,
	     "a map last written before the jitmap was made: stale, not read");
	dcpi_jitmap_free(jm);
	unlink(path);
}

/* A settle callback counting the kept samples named. */
static int count_hits(void *arg, int32_t pid, uint64_t ip, unsigned ev, int hit, int64_t key,
		      uint64_t offset)
{
	(void)pid, (void)ip, (void)ev, (void)key, (void)offset;
	*(int *)arg += hit;
	return 0;
}

/* node maps its jitdump as soon as it has created it (O_TRUNC, empty)
 * and writes the header through a stdio buffer some milliseconds later,
 * more on a loaded machine: a look between the two found a file shorter
 * than a header, refused it for good, and every JIT sample of the run was
 * anonymous memory (e2e/jit_node beside two CPU hogs, 1 run of 15).  The
 * empty file is kept open and its header checked as it grows; one never
 * written is refused when its process exits. */
static void test_dump_before_header(void)
{
	struct dcpi_jitmap *jm;
	struct dcpi_buf b = DCPI_BUF_INIT;
	char file[300];
	int64_t key = 0;
	uint64_t off = 0;
	int hits = 0;
	FILE *f;

	snprintf(file, sizeof(file), "%s/jit-121.dump", tmp);
	f = fopen(file, "w");
	if (!f || fclose(f)) {
		T_OK(0, "empty dump made");
		return;
	}
	warnings[0] = '\0';
	jm = jm_own(1);
	T_EQ(dcpi_jitmap_watch_dump(jm, 121, 0x10000, 0x11000, file), 0,
	     "the dump watched while still empty");
	T_EQ(dcpi_jitmap_resolve(jm, 121, 0x5002, 150, &key, &off), 0, "nothing named yet");
	T_EQ(dcpi_jitmap_defer(jm, 121, 0x5002, 150, 0), 1, "the sample kept for later");
	T_OK(!strstr(warnings, "jitdump"), "an empty dump is not refused: %s", warnings);
	dump_header(&b, 0);
	dump_load(&b, 100, 0x5000, "JS:*f x.js:1:1", code_f, sizeof(code_f));
	f = fopen(file, "a");
	if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f))
		T_OK(0, "dump written");
	dcpi_buf_release(&b);
	T_EQ(dcpi_jitmap_settle(jm, count_hits, &hits), 0, "settled");
	T_EQ(hits, 1, "the kept sample named once the runtime wrote its dump");
	T_EQ(dcpi_jitmap_resolve(jm, 121, 0x5003, 160, &key, &off), 1, "and later ones too");
	dcpi_jitmap_free(jm);

	T_EQ(truncate(file, 0), 0, "the dump empty again");
	jm = jm_own(1);
	dcpi_jitmap_watch_dump(jm, 121, 0x10000, 0x11000, file);
	dcpi_jitmap_exit(jm, 121);
	T_OK(strstr(warnings, "shorter than a jitdump header") != NULL,
	     "a dump with no header when its process exits: refused, and said: %s", warnings);
	dcpi_jitmap_free(jm);
	unlink(file);
}

static void test_dump(void)
{
	struct dcpi_jitmap *jm = new_jm();
	struct dcpi_jitmap_stats st;
	struct dcpi_buf b = DCPI_BUF_INIT, img = DCPI_BUF_INIT;
	int64_t key = 0;
	uint64_t off = 0;
	uint8_t id[20];
	char path[128], file[300];
	int32_t pid;
	struct dcpi_disasm *d = NULL;
	struct dcpi_insn *in = NULL;
	size_t nin = 0;

	dump_header(&b, 0);
	dump_debug(&b, 100, 0x5000, "x.js");
	dump_load(&b, 100, 0x5000, "JS:*f x.js:1:1", code_f, sizeof(code_f));
	dump_load(&b, 200, 0x6000, "JS:*g x.js:5:1", code_g, sizeof(code_g));
	dump_move(&b, 300, 0x6000, 0x7000, sizeof(code_g));
	dump_load(&b, 400, 0x5000, "JS:*f2 x.js:1:1", code_g, sizeof(code_g));
	put_hdr(&b, 3, 16, 500);
	T_EQ(dcpi_jitmap_feed_dump(jm, 120, b.data, 40), 0, "a dump of just a header");
	T_EQ(dcpi_jitmap_feed_dump(jm, 120, b.data, b.len), 0, "a whole dump");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5002, 150, &key, &off), 1, "f at time 150");
	T_EQ(off, DCPI_JITIMAGE_TEXT + 2, "its offset");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x6001, 150, &key, &off), 0,
	     "g is not there yet at time 150");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x7001, 350, &key, &off), 1, "g where it moved");
	T_EQ(dcpi_jitimage_place(DCPI_JITIMAGE_TEXT + sizeof(code_f)) + 1, off,
	     "placed after f, at its offset");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5002, 350, &key, &off), 1, "f still, at time 350");
	T_EQ(off, DCPI_JITIMAGE_TEXT + 2, "same place");
	T_EQ(dcpi_jitmap_resolve(jm, 120, 0x5001, 450, &key, &off), 1, "at 450 f2 replaced f");
	T_OK(off > DCPI_JITIMAGE_TEXT + 0x20, "f2 is a procedure of its own (offset 0x%llx)",
	     (unsigned long long)off);
	dcpi_jitmap_stats(jm, &st);
	T_EQ(st.debug_entries, 1, "the DEBUG_INFO record was read");
	T_EQ(dcpi_jitmap_image(jm, key, &img, id, path, sizeof(path), &pid), 0, "its image");
	T_STREQ(path, "/tmp/jit-120.dump", "named after the dump");
	snprintf(file, sizeof(file), "%s/dumpimg", tmp);
	dcpi_file_write_atomic(file, img.data, img.len, 0600);
	{
		struct dcpi_srclines *sl = NULL;
		struct dcpi_srcloc loc;

		T_EQ(dcpi_srcline_open(file, &sl), 0, "the image has DWARF lines: %s", dcpi_errmsg());
		T_OK(sl && dcpi_srcline_lookup(sl, DCPI_JITIMAGE_TEXT + 1, &loc) == 0 &&
		     loc.line == 12 && loc.file && strstr(loc.file, "x.js"),
		     "f's code is x.js:12, from the DEBUG_INFO before its LOAD");
		dcpi_srcline_close(sl);
	}
	T_EQ(dcpi_disasm_open(file, &d), 0, "the image disassembles");
	if (d) {
		T_EQ(dcpi_disasm_collect(d, DCPI_JITIMAGE_TEXT, DCPI_JITIMAGE_TEXT + sizeof(code_f),
					 &in, &nin), 0, "f's code bytes are there");
		T_OK(nin == 4 && !strncmp(in[3].mnemonic, "ret", 3), "push ... ret");
		free(in);
		dcpi_disasm_close(d);
	}
	dcpi_buf_release(&img);
	dcpi_jitmap_free(jm);

	/* a file name that is not one (node 20 writes freed bytes now and
	   then, unprintable or not): the file in the procedure's name stands
	   in; the second time the names grow (and move) as it is copied */
	for (int g = 0; g < 4; g++) {
	static const char *const garbage[4] = { "\xc6\xfe\x92", "7&uD", "/a\xc1\xaf",
						"/\310\224B" };   /* octal: "\x94B" would be one escape */
	static const char *const kind[4] = { "not UTF-8", "printable garbage",
					     "an overlong UTF-8 sequence",
					     "valid UTF-8 with a slash, past ASCII" };
	jm = new_jm();
	b.len = 0;
	dump_header(&b, 0);
	dump_debug(&b, 100, 0x5000, garbage[g]);
	dump_load(&b, 100, 0x5000, "JS:*h /src/h.js:3:1", code_f, sizeof(code_f));
	dcpi_jitmap_feed_dump(jm, 125, b.data, b.len);
	T_EQ(dcpi_jitmap_resolve(jm, 125, 0x5001, 200, &key, &off), 1, "h is there");
	img.len = 0;
	T_EQ(dcpi_jitmap_image(jm, key, &img, id, path, sizeof(path), &pid), 0, "h's image");
	dcpi_file_write_atomic(file, img.data, img.len, 0600);
	{
		struct dcpi_srclines *sl = NULL;
		struct dcpi_srcloc loc;

		T_OK(dcpi_srcline_open(file, &sl) == 0 &&
		     dcpi_srcline_lookup(sl, DCPI_JITIMAGE_TEXT, &loc) == 0 && loc.line == 12 &&
		     loc.file && !strcmp(loc.file, "/src/h.js"),
		     "line 12 of /src/h.js, the file named in the procedure (%s)",
		     kind[g]);
		dcpi_srcline_close(sl);
	}
	dcpi_jitmap_free(jm);
	}
	dcpi_buf_release(&img);

	/* hostile dumps: each is a clear warning, never a crash */
	{
		static const struct { const char *what, *expect; size_t cut; uint32_t patch_at, patch; }
		cases[] = {
			{ "bad magic", "bad magic", 0, 0, 0x12345678 },
			{ "other byte order", "other byte order", 0, 0, 0x4454694A },
			{ "a record of 4 GiB", "impossible size", 0, 44, 0xffffffff },
			{ "a record of 8 bytes", "impossible size", 0, 44, 8 },
			{ "a short header", "shorter than", 20, 0, 0 },
			{ "version 0", "jitdump version 0", 0, 4, 0 },
			{ "a header of 39 bytes", "a header of impossible size", 0, 8, 39 },
			{ "a header of 4097 bytes", "a header of impossible size", 0, 8, 4097 },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct dcpi_buf h = DCPI_BUF_INIT;

			dump_header(&h, 0);
			dump_load(&h, 100, 0x5000, "f", code_f, sizeof(code_f));
			if (cases[i].patch_at)
				memcpy(h.data + cases[i].patch_at, &cases[i].patch, 4);
			else if (!cases[i].cut)
				memcpy(h.data, &cases[i].patch, 4);
			jm = new_jm();
			T_EQ(dcpi_jitmap_feed_dump(jm, 122, h.data, cases[i].cut ? cases[i].cut : h.len), 0,
			     "%s: read", cases[i].what);
			T_EQ(dcpi_jitmap_resolve(jm, 122, 0x5001, UINT64_MAX, &key, &off), 0,
			     "%s: nothing applied", cases[i].what);
			dcpi_jitmap_exit(jm, 122); /* a short header: refused at exit */
			T_OK(strstr(warnings, cases[i].expect) != NULL, "%s: said: %s", cases[i].what,
			     warnings);
			dcpi_jitmap_free(jm);
			dcpi_buf_release(&h);
		}
	}
	/* a LOAD whose code runs past its record, after a good one */
	b.len = 0;
	dump_header(&b, 0);
	dump_load(&b, 100, 0x5000, "good", code_f, sizeof(code_f));
	dump_load(&b, 100, 0x6000, "bad", code_g, sizeof(code_g));
	{
		uint64_t huge = 1u << 20;
		memcpy(b.data + b.len - sizeof(code_g) - 4 - 8 - 8, &huge, 8); /* its code_size */
	}
	jm = new_jm();
	dcpi_jitmap_feed_dump(jm, 123, b.data, b.len);
	T_EQ(dcpi_jitmap_resolve(jm, 123, 0x5001, UINT64_MAX, &key, &off), 1, "the good LOAD");
	T_EQ(dcpi_jitmap_resolve(jm, 123, 0x6001, UINT64_MAX, &key, &off), 0, "not the bad one");
	T_OK(strstr(warnings, "code runs past") != NULL, "said: %s", warnings);
	dcpi_jitmap_free(jm);
	/* a LOAD without a name, after a good one */
	b.len = 0;
	dump_header(&b, 0);
	dump_load(&b, 100, 0x5000, "good", code_f, sizeof(code_f));
	dump_load(&b, 100, 0x6000, "", code_g, sizeof(code_g));
	jm = new_jm();
	dcpi_jitmap_feed_dump(jm, 126, b.data, b.len);
	T_EQ(dcpi_jitmap_resolve(jm, 126, 0x5001, UINT64_MAX, &key, &off), 1, "the named LOAD");
	T_EQ(dcpi_jitmap_resolve(jm, 126, 0x6001, UINT64_MAX, &key, &off), 0,
	     "not the nameless one");
	T_OK(strstr(warnings, "a LOAD record without a name") != NULL, "said: %s", warnings);
	dcpi_jitmap_free(jm);
	/* truncated in the middle of a record: what is whole is read */
	for (size_t cut = 41; cut < b.len; cut += 7) {
		jm = new_jm();
		dcpi_jitmap_feed_dump(jm, 124, b.data, cut);
		dcpi_jitmap_resolve(jm, 124, 0x5001, UINT64_MAX, &key, &off);
		dcpi_jitmap_exit(jm, 124);
		dcpi_jitmap_free(jm);
	}
	T_OK(1, "every truncation of a dump read without a crash");
	dcpi_buf_release(&b);
}

/* ---- through the collector --------------------------------------------- */

static int fx_mkdirs(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mkdir -p -m 700 %s", dir);
	return system(cmd);
}

static void test_collector(void)
{
	struct dcpi_eventlist l;
	char procroot[300], db[300], platdir[400], cache[600];
	struct dcpi_collector_opts o = { .events = &l, .procroot = procroot, .host = "h",
					 .db = db, .on_warning = on_warning };
	struct dcpi_collector *c = NULL;
	struct dcpi_record r = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
				 .pid = 110, .tid = 110, .ip = 0x2004 };
	char **files;
	size_t n;
	int found = 0;

	memset(&l, 0, sizeof(l));
	if (dcpi_event_parse(&l, "cpu-clock:F500000"))
		abort();
	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	snprintf(db, sizeof(db), "%s/db", tmp);
	snprintf(platdir, sizeof(platdir), "%s/db/e/h", tmp);
	if (dcpi_db_init(db, 0700) || fx_mkdirs(platdir))
		abort();
	fake_proc(110, 0);
	put(map_path(110), "2000 20 hot\n");
	T_EQ(dcpi_collector_new(&o, &c), 0, "collector with a database");
	snprintf(dcpi_collector_stats(c)->epoch, DCPI_EPOCH_NAME_MAX, "e");
	for (int i = 0; i < 3; i++)
		T_EQ(dcpi_collector_feed(c, &r, 0), 0, "sample %d", i);
	r.ip = 0x9004; /* anonymous code the map does not describe */
	T_EQ(dcpi_collector_feed(c, &r, 0), 0, "a sample nothing describes");
	T_EQ(dcpi_collector_merge(c, platdir), 0, "merged: %s", dcpi_errmsg());
	T_EQ(dcpi_db_profiles(platdir, &files, &n), 0, "profiles listed");
	for (size_t i = 0; i < n; i++) {
		struct dcpi_profile p;
		char hex[41];

		dcpi_profile_init(&p);
		if (dcpi_profile_read(files[i], &p))
			continue;
		if (!strcmp(p.path, "/tmp/perf-110.map")) {
			found |= 1;
			T_EQ(p.pid, 110, "per process");
			T_EQ(p.nrows, 1, "one row");
			T_EQ(p.nrows ? p.offsets[0] : 0, DCPI_JITIMAGE_TEXT + 4, "at hot+4");
			T_EQ(p.build_id_len, 20, "named by content");
			dcpi_hex(p.build_id, 20, hex);
			snprintf(cache, sizeof(cache), "%s/.build-id/%.2s/%s", db, hex, hex + 2);
			T_OK(access(cache, R_OK) == 0, "the pseudo-image is in the database: %s", cache);
		}
		if (!strcmp(p.path, "[anon:node@0x0]")) {
			found |= 2;
			T_OK(p.pid == 110 && p.kind == DCPI_IMAGE_ANON && p.nrows == 1 &&
			     p.offsets[0] == 0x9004, "per process and region, under its command");
		}
		dcpi_profile_free(&p);
	}
	dcpi_db_names_free(files, n);
	T_OK(found & 1, "a profile of /tmp/perf-110.map");
	T_OK(found & 2, "a profile of node's undescribed anonymous code");
	T_EQ(dcpi_collector_stats(c)->unknown, 1, "that sample counted unknown, the others not");
	dcpi_collector_free(c);
}

/* A pseudo-image that cannot be stored (here .build-id is a file, so no
 * directory can be made under it) does not fail the merge: its samples
 * are counted unknown, a warning says why, the other profiles are written. */
static void test_collector_unstorable(void)
{
	struct dcpi_eventlist l;
	char procroot[300], db[300], platdir[400], path[600];
	struct dcpi_collector_opts o = { .events = &l, .procroot = procroot, .host = "h",
					 .db = db, .on_warning = on_warning };
	struct dcpi_collector *c = NULL;
	struct dcpi_record r = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
				 .pid = 110, .tid = 110, .ip = 0x2004 };
	char **files = NULL;
	size_t n = 0;

	memset(&l, 0, sizeof(l));
	if (dcpi_event_parse(&l, "cpu-clock:F500000"))
		abort();
	snprintf(procroot, sizeof(procroot), "%s/proc", tmp);
	snprintf(db, sizeof(db), "%s/db-nostore", tmp);
	snprintf(platdir, sizeof(platdir), "%s/db-nostore/e/h", tmp);
	if (dcpi_db_init(db, 0700) || fx_mkdirs(platdir))
		abort();
	snprintf(path, sizeof(path), "%s/.build-id", db);
	put(path, "not a directory\n");
	put(map_path(110), "2000 20 hot\n");
	nwarnings = 0;
	warnings[0] = 0;
	T_EQ(dcpi_collector_new(&o, &c), 0, "collector with a database whose .build-id is a file");
	snprintf(dcpi_collector_stats(c)->epoch, DCPI_EPOCH_NAME_MAX, "e");
	for (int i = 0; i < 3; i++)
		dcpi_collector_feed(c, &r, 0);
	T_EQ(dcpi_collector_merge(c, platdir), 0, "the merge still succeeds: %s", dcpi_errmsg());
	T_EQ(dcpi_collector_stats(c)->unknown, 3, "the JIT samples counted unknown");
	T_OK(strstr(warnings, "pseudo-image was not stored") != NULL, "a warning says why: %s",
	     warnings);
	T_OK(dcpi_db_profiles(platdir, &files, &n) == 0, "the statistics written (%zu profiles)", n);
	dcpi_db_names_free(files, n);
	dcpi_collector_free(c);
}

static void test_ctl_image(void)
{
	struct dcpi_mmap_event ev;

	T_EQ(dcpi_ctl_parse_image("image 42 0x7f0000000000 0x2000 0x1000 /opt/a b/x.so", &ev), 0,
	     "an image request parses");
	T_OK(ev.pid == 42 && ev.start == 0x7f0000000000ull && ev.len == 0x2000 &&
	     ev.pgoff == 0x1000 && !strcmp(ev.path, "/opt/a b/x.so"), "its fields, spaces in the path");
	T_EQ(dcpi_ctl_parse_image("image 42 4096 100 0 x.so", &ev), -EINVAL, "a relative path");
	T_EQ(dcpi_ctl_parse_image("image 0 4096 100 0 /x", &ev), -EINVAL, "pid 0");
	T_EQ(dcpi_ctl_parse_image("image 42 4096 0 0 /x", &ev), -EINVAL, "length 0");
	T_EQ(dcpi_ctl_parse_image("image 42 0xffffffffffffff00 0x1000 0 /x", &ev), -EINVAL,
	     "a range that wraps");
	T_EQ(dcpi_ctl_parse_image("image 42 0xffff800000000000 0x1000 0 /x", &ev), -EINVAL,
	     "the kernel's half");
	T_EQ(dcpi_ctl_parse_image("image 42 4096x 100 0 /x", &ev), -EINVAL, "a bad number");
	T_EQ(dcpi_ctl_parse_image("image 42 4096", &ev), -EINVAL, "missing fields");
	T_EQ(dcpi_ctl_parse_image("image 99999999999 4096 1 0 /x", &ev), -EINVAL, "a pid too big");
}

/* n perf-map lines of pid, at distinct addresses; the entries the jitmap
 * took from them. */
static uint64_t feed_lines(struct dcpi_jitmap *jm, int32_t pid, int n)
{
	struct dcpi_jitmap_stats a, b;
	char *text = malloc((size_t)n * 48), *at = text;

	dcpi_jitmap_stats(jm, &a);
	for (int i = 0; text && i < n; i++)
		at += sprintf(at, "%x 10 fn_%d_%d\n", 0x10000000 + i * 0x10, (int)pid, i);
	if (!text || dcpi_jitmap_feed_text(jm, pid, text, (size_t)(at - text)))
		abort();
	free(text);
	dcpi_jitmap_stats(jm, &b);
	return b.entries - a.entries;
}

/* Issue 24, lever 7: a user's processes share one budget for what their
 * maps say, all users one more; a process's share is given back when it
 * is reaped. */
static void test_budget(void)
{
	struct dcpi_jitmap_opts o = { .on_warning = on_warning, .budget = 96 << 10,
				      .budget_per_uid = 64 << 10 };
	struct dcpi_jitmap *jm = NULL;
	struct dcpi_jitmap_stats st;
	uint64_t a, b, c, d;

	if (dcpi_jitmap_new(&o, &jm))
		abort();
	warnings[0] = '\0';
	dcpi_jm_proc(jm, 101)->ruid = 1000;
	dcpi_jm_proc(jm, 102)->ruid = 1000;
	dcpi_jm_proc(jm, 103)->ruid = 1001;
	dcpi_jm_proc(jm, 104)->ruid = 1002;
	a = feed_lines(jm, 101, 2000);
	dcpi_jitmap_stats(jm, &st);
	T_OK(a > 100 && a < 2000, "a process of user 1000: %llu of 2000 entries, then its "
	     "user's budget", (unsigned long long)a);
	T_OK(st.bytes <= 64 << 10 && st.bytes > 60 << 10, "charged %llu bytes of 64 KiB",
	     (unsigned long long)st.bytes);
	T_EQ(st.over_budget, 2000 - a, "the rest counted as over the budget");
	T_OK(strstr(warnings, "process 101: over the memory budget (0.1 MiB for user 1000") &&
	     !strstr(strstr(warnings, "process 101") + 1, "process 101"), "and said once");
	b = feed_lines(jm, 102, 2000);
	T_EQ(b, 0, "another process of the same user: nothing more");
	c = feed_lines(jm, 103, 2000);
	T_OK(c > 100 && c < a, "another user: what the global budget has left (%llu)",
	     (unsigned long long)c);
	d = feed_lines(jm, 104, 2000);
	T_EQ(d, 0, "a third user: the global budget is spent");
	dcpi_jitmap_exit(jm, 101);
	dcpi_jitmap_reap(jm);
	dcpi_jitmap_stats(jm, &st);
	T_OK(st.bytes < 40 << 10, "reaped: its share given back (%llu bytes charged)",
	     (unsigned long long)st.bytes);
	b = feed_lines(jm, 102, 2000);
	T_OK(b > 100, "the user's other process gets it (%llu entries)", (unsigned long long)b);
	dcpi_jitmap_free(jm);
}

/* A dump past one read's step (JM_DUMP_STEP, 64 MiB): records of 24
 * bytes, so that they straddle the reader's 1 MiB windows, a LOAD with
 * 2 MiB of code (over a window), and a LOAD past the step, read by the
 * sample after the one that read the first 64 MiB. */
static void test_dump_big(void)
{
	struct dcpi_jitmap *jm = new_jm();
	struct dcpi_buf b = DCPI_BUF_INIT;
	uint8_t *big = calloc(1, 2 << 20);
	uint64_t off, ts = 10;
	int64_t key;
	int first, second;

	if (!big)
		abort();
	big[0] = 0xc3; /* ret */
	dump_header(&b, 0);
	while (b.len < (1 << 20) + 100) {
		put_hdr(&b, 99, 24, ts++);
		put64(&b, 0);
	}
	dump_load(&b, ts++, 0x100000, "JS:*big x.js:1:1", big, 2 << 20);
	while (b.len < (80u << 20)) {
		put_hdr(&b, 99, 24, ts++);
		put64(&b, 0);
	}
	dump_load(&b, ts++, 0x900000, "JS:*late x.js:9:1", code_f, sizeof(code_f));
	put_hdr(&b, 3, 16, ts++);
	dcpi_jitmap_feed_dump(jm, 126, b.data, b.len);
	first = dcpi_jitmap_resolve(jm, 126, 0x900001, ts, &key, &off);
	second = dcpi_jitmap_resolve(jm, 126, 0x900001, ts, &key, &off);
	T_OK(first == 0 && second == 1, "an 80 MiB dump: a LOAD past its first 64 MiB is read "
	     "by the next sample, not the first (%d, %d)", first, second);
	T_EQ(dcpi_jitmap_resolve(jm, 126, 0x100000 + (1 << 20), ts, &key, &off), 1,
	     "a LOAD of 2 MiB of code, over the reader's window, read whole");
	T_OK(nwarnings == 0 && strstr(warnings, "not read") == NULL,
	     "and no record taken for corrupt (%s)", warnings);
	dcpi_buf_release(&b);
	free(big);
	dcpi_jitmap_free(jm);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/dcpi-test-jit.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	test_sha1();
	test_parse();
	test_image();
	if (geteuid() != 0) {
		T_SKIP("the fake /proc tests chown files: not root");
	} else {
		test_map_fresh();
		test_image_growth();
		test_map_stale();
		test_map_hostile();
		test_collector();
		test_collector_unstorable();
		test_dump_after_exit();
		test_map_after_exit();
		test_dump_before_header();
	}
	test_dump();
	test_dump_big();
	test_ctl_image();
	test_budget();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd))
			printf("# could not remove %s\n", tmp);
	}
	return t_done();
}
