/* The loadmap: maps parsing, a fake procroot with ELF files built here,
 * side-band records (mmap/fork/exec/exit), kernel and modules from fake
 * and real kallsyms, and the real /proc for this very process. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/loadmap.h"
#include "dcpi/maps.h"
#include "fixture.h"
#include "tap.h"

static char tmp[256];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* Build an executable at out from a one-function program whose return
 * value is v (so two builds differ in content and build-id). */
static int build_elf(const char *out, int v, const char *extra_flags)
{
	char src[PATH_MAX], text[256];

	snprintf(src, sizeof(src), "%s/src%d.c", tmp, v);
	snprintf(text, sizeof(text), "int main(void) { return %d; }\n", v);
	write_file(src, text);
	return fx_sh("cc %s -o '%s' '%s'", extra_flags, out, src);
}

/* Build-id as readelf prints it, an independent reading of the note. */
static int readelf_build_id(const char *path, char *hex, size_t max)
{
	char cmd[2 * PATH_MAX], line[512];
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");
		if (b && !found) {
			snprintf(hex, max, "%s", b + 10);
			hex[strcspn(hex, "\n")] = '\0';
			found = 1;
		}
	}
	pclose(p);
	return found;
}

static const char *image_id_hex(const struct dcpi_image *im)
{
	static char hex[2 * DCPI_BUILD_ID_MAX + 1];

	dcpi_hex(im->build_id, im->build_id_len, hex);
	return hex;
}

/* One maps line for path (its real dev and inode). */
static void maps_line(char *buf, size_t n, uint64_t start, uint64_t end, const char *perms,
		      uint64_t pgoff, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	snprintf(buf, n, "%012" PRIx64 "-%012" PRIx64 " %s %08" PRIx64 " %02x:%02x %llu"
		 "                    %s\n", start, end, perms, pgoff, major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino, path);
}

static void fake_proc(int pid, const char *maps)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/proc/%d", tmp, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/proc/%d/root", tmp, pid);
	if (symlink("/", p) < 0 && errno != EEXIST)
		perror(p);
	snprintf(p, sizeof(p), "%s/proc/%d/maps", tmp, pid);
	write_file(p, maps);
}

static struct dcpi_mmap_event mmap_ev(int32_t pid, uint64_t start, uint64_t len,
				      uint64_t pgoff, const char *path)
{
	struct dcpi_mmap_event ev = { .pid = pid, .tid = pid, .start = start, .len = len,
				      .pgoff = pgoff, .prot = PROT_READ | PROT_EXEC,
				      .path = path };
	struct stat st;

	if (stat(path, &st) == 0) {
		ev.maj = major(st.st_dev);
		ev.min = minor(st.st_dev);
		ev.ino = st.st_ino;
	}
	return ev;
}

/* ---- maps lines ------------------------------------------------------------ */

static void test_parse_good(void)
{
	struct dcpi_maps_entry e;
	char l1[] = "00400000-00452000 r-xp 0000a000 08:02 173521      /usr/bin/dbus-daemon\n";
	char l2[] = "7f0000001000-7f0000002000 r-xp 00001000 fd:01 42   /tmp/my dir/lib x.so";
	char l3[] = "7f0000001000-7f0000002000 r-xp 00000000 00:2c 7 /tmp/old (deleted)\n";
	char l4[] = "7ffc12345000-7ffc12347000 r-xp 00000000 00:00 0                  [vdso]\n";
	char l5[] = "7f0000003000-7f0000004000 rwxp 00000000 00:00 0 \n";
	char l6[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0";

	T_EQ(dcpi_maps_parse_line(l1, &e), 0, "plain line parses");
	T_OK(e.start == 0x400000 && e.end == 0x452000 && e.pgoff == 0xa000, "plain: addresses");
	T_OK(e.prot == (PROT_READ | PROT_EXEC), "plain: perms r-x");
	T_OK(e.maj == 8 && e.min == 2 && e.ino == 173521, "plain: device and inode");
	T_STREQ(e.path, "/usr/bin/dbus-daemon", "plain: path without padding or newline");
	T_EQ(dcpi_maps_parse_line(l2, &e), 0, "path with spaces parses");
	T_STREQ(e.path, "/tmp/my dir/lib x.so", "path with spaces kept whole");
	T_OK(e.maj == 0xfd && e.min == 1, "hex device numbers");
	T_EQ(dcpi_maps_parse_line(l3, &e), 0, "deleted file parses");
	T_STREQ(e.path, "/tmp/old (deleted)", "deleted suffix left for the loadmap");
	T_EQ(dcpi_maps_parse_line(l4, &e), 0, "[vdso] parses");
	T_STREQ(e.path, "[vdso]", "[vdso] path");
	T_EQ(dcpi_maps_parse_line(l5, &e), 0, "anonymous with trailing space parses");
	T_OK(e.path && e.path[0] == '\0' && e.prot == (PROT_READ | PROT_WRITE | PROT_EXEC),
	     "anonymous: empty path, rwx");
	T_EQ(dcpi_maps_parse_line(l6, &e), 0, "anonymous without trailing space parses");
	T_OK(e.start == 0xffffffffff600000ull && e.prot == PROT_EXEC, "16-digit address, --x");
}

static void test_parse_bad(void)
{
	static const char *const bad[] = {
		"",
		"00400000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-xp 00000000 08:02",
		"00400000-00452000 r-xp 00000000 08:02 /bin/x",
		"00400000-00452000 r-xp 00000000 0802 1 /bin/x",
		"0040zz00-00452000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-xp 0000g000 08:02 1 /bin/x",
		"00000000000400000-00452000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-xp 00000000 08:02 99999999999999999999999 /bin/x",
		"00500000-00400000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00400000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-x 00000000 08:02 1 /bin/x",
		"00400000-00452000 rwxq 00000000 08:02 1 /bin/x",
		"00400000-00452000  r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-xp 00000000 08:02 12a /bin/x",
		"-00452000 r-xp 00000000 08:02 1 /bin/x",
		"00400000-00452000 r-xp 00000000 123456789:02 1 /bin/x",
	};
	struct dcpi_maps_entry e;
	char line[DCPI_MAPS_LINE_MAX + 64];
	size_t i;
	int all = 1, quoted = 1;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		if (dcpi_maps_parse_line(line, &e) != -EBADMSG) {
			printf("# accepted: \"%s\"\n", bad[i]);
			all = 0;
		} else if (bad[i][0] && !strstr(dcpi_errmsg(), bad[i])) {
			printf("# message does not quote the line: %s\n", dcpi_errmsg());
			quoted = 0;
		}
	}
	T_OK(all, "malformed lines refused with -EBADMSG");
	T_OK(quoted, "messages quote the line");
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line, "00400000-00452000 r-xp 00000000 08:02 1 /", 41);
	T_EQ(dcpi_maps_parse_line(line, &e), -EBADMSG, "over-long line refused");
}

/* ---- build-ids --------------------------------------------------------------- */

static void test_build_ids(const char *elf, const char *noid)
{
	uint8_t id[DCPI_BUILD_ID_MAX];
	char hex[2 * DCPI_BUILD_ID_MAX + 1], want[256], txt[PATH_MAX];
	int n;

	n = dcpi_buildid_elf(elf, id, sizeof(id));
	T_OK(n > 0, "build-id read from %s (%d)", elf, n);
	if (n > 0)
		dcpi_hex(id, (size_t)n, hex);
	else
		hex[0] = '\0';
	T_OK(readelf_build_id(elf, want, sizeof(want)), "readelf finds a build-id");
	T_STREQ(hex, want, "build-id equals readelf's");
	T_EQ(dcpi_buildid_elf(noid, id, sizeof(id)), 0, "no build-id note: 0");
	snprintf(txt, sizeof(txt), "%s/text", tmp);
	write_file(txt, "not an ELF file at all\n");
	T_EQ(dcpi_buildid_elf(txt, id, sizeof(id)), -ENOEXEC, "not ELF: -ENOEXEC");
	T_EQ(dcpi_buildid_elf("/nonexistent/x", id, sizeof(id)), -ENOENT, "missing: -ENOENT");
	T_EQ(dcpi_buildid_elf(elf, id, 4), -EOVERFLOW, "id longer than the buffer refused");
}

/* ---- the fake procroot ---------------------------------------------------------- */

struct fixture {
	char prog1[1024], prog2[1024], procroot[1024];
	char want1[256];
};

#define P1_START 0x555555554000ull
#define P1_END 0x555555556000ull
#define P1_PGOFF 0x1000ull
#define VDSO_START 0x7ffff7fc1000ull
#define JIT_START 0x7f0000000000ull

static struct dcpi_loadmap *scan_fixture(struct fixture *fx)
{
	char maps[4 * PATH_MAX], *p = maps;
	struct dcpi_loadmap *lm;

	maps_line(p, 1024, P1_START - 0x1000, P1_START, "r--p", 0, fx->prog1);
	p += strlen(p);
	maps_line(p, 1024, P1_START, P1_END, "r-xp", P1_PGOFF, fx->prog1);
	p += strlen(p);
	sprintf(p, "%012llx-%012llx rw-p 00000000 00:00 0                  [heap]\n"
		"%012llx-%012llx rwxp 00000000 00:00 0 \n"
		"%012llx-%012llx r-xp 00000000 00:00 0                  [vdso]\n",
		0x555555600000ull, 0x555555700000ull, JIT_START, JIT_START + 0x10000,
		VDSO_START, VDSO_START + 0x2000);
	fake_proc(100, maps);
	maps_line(maps, 1024, 0x400000, 0x402000, "r-xp", P1_PGOFF, fx->prog1);
	fake_proc(101, maps);
	lm = dcpi_loadmap_new(fx->procroot);
	T_EQ(dcpi_loadmap_scan(lm), 2, "scan finds the two fake processes");
	return lm;
}

static void test_scan_resolve(struct fixture *fx, struct dcpi_loadmap *lm)
{
	const struct dcpi_image *im;
	uint64_t off;
	int i1, i2;

	i1 = dcpi_loadmap_resolve(lm, 100, P1_START + 0x123, 0, &off);
	im = dcpi_loadmap_image(lm, i1);
	T_OK(im != NULL, "sample in prog1's text resolves");
	T_STREQ(im ? im->path : NULL, fx->prog1, "to prog1's path");
	T_EQ(off, P1_PGOFF + 0x123, "offset is the file offset");
	T_STREQ(im ? image_id_hex(im) : NULL, fx->want1, "image build-id equals readelf's");
	T_OK(im && im->kind == DCPI_IMAGE_FILE && im->size > 0 && im->mtime > 0,
	     "kind file, size and mtime known");
	T_EQ(dcpi_loadmap_resolve(lm, 100, P1_START - 0x10, 0, &off), DCPI_NO_IMAGE,
	     "non-executable mapping of the same file is not recorded");
	i2 = dcpi_loadmap_resolve(lm, 101, 0x400010, 0, &off);
	T_EQ(i2, i1, "same file in another process: same image index");
	T_EQ(off, P1_PGOFF + 0x10, "its offset");
	T_EQ(dcpi_loadmap_resolve(lm, 100, JIT_START + 0x40, 0, &off), DCPI_NO_IMAGE,
	     "anonymous executable memory: no image");
	T_EQ(off, JIT_START + 0x40, "no image: offset is the address");
	i2 = dcpi_loadmap_resolve(lm, 100, VDSO_START + 0x1234, 0, &off);
	im = dcpi_loadmap_image(lm, i2);
	T_STREQ(im ? im->path : NULL, "[vdso]", "[vdso] is an image");
	T_OK(im && im->kind == DCPI_IMAGE_ANON && off == 0x1234, "[vdso]: anon, offset from start");
	T_EQ(dcpi_loadmap_resolve(lm, 100, 0x10, 0, &off), DCPI_NO_IMAGE, "unmapped address");
}

static void test_rebuild(struct fixture *fx, struct dcpi_loadmap *lm, int old)
{
	const struct dcpi_image *im;
	char maps[PATH_MAX], want[256];
	uint64_t off;
	int idx;

	/* Replace the file (new inode, new content) as a package update would. */
	snprintf(maps, sizeof(maps), "%s.new", fx->prog1);
	T_EQ(build_elf(maps, 2, "-Wl,--build-id"), 0, "rebuild prog1");
	T_EQ(rename(maps, fx->prog1), 0, "rename it over the old one");
	readelf_build_id(fx->prog1, want, sizeof(want));
	T_OK(strcmp(want, fx->want1) != 0, "the rebuilt file has another build-id");
	maps_line(maps, sizeof(maps), 0x400000, 0x402000, "r-xp", 0, fx->prog1);
	fake_proc(102, maps);
	idx = dcpi_loadmap_resolve(lm, 102, 0x400000, 0, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_OK(idx >= 0 && idx != old, "rebuilt binary at the same path: new image index");
	T_STREQ(im ? im->path : NULL, fx->prog1, "same path");
	T_STREQ(im ? image_id_hex(im) : NULL, want, "new build-id");
	T_EQ(dcpi_loadmap_resolve(lm, 100, P1_START, 0, &off), old,
	     "the process that mapped the old file still resolves to the old image");
	/* Re-reading that process: its maps name the old inode, the path now
	 * holds another file, which must not lend it its build-id. */
	T_EQ(dcpi_loadmap_scan_pid(lm, 100), 0, "rescan the old process");
	idx = dcpi_loadmap_resolve(lm, 100, P1_START, 0, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_OK(im && !strcmp(im->path, fx->prog1) && strcmp(image_id_hex(im), want) != 0,
	     "a replaced file is not taken for the mapped one");
}

/* A process no longer in procroot: its files are taken from our own
 * namespace only when device and inode are the record's. */
static void test_gone(struct fixture *fx, struct dcpi_loadmap *lm, int prog2)
{
	struct dcpi_mmap_event ev = mmap_ev(500, 0x800000, 0x1000, 0, fx->prog2);
	const struct dcpi_image *im;
	uint64_t off;

	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "mmap of a process gone from procroot");
	T_EQ(dcpi_loadmap_resolve(lm, 500, 0x800010, 0, &off), prog2,
	     "same dev/ino: the file at the path is identified");
	ev.ino++;
	ev.start = 0x900000;
	dcpi_loadmap_mmap(lm, &ev);
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 500, 0x900010, 0, &off));
	T_OK(im && !strcmp(im->path, fx->prog2) && im->build_id_len == 0,
	     "another inode: path alone, no borrowed build-id");
}

/* Process churn maps the same files again and again: an inode at a path
 * checked within the last second is not opened again (here: it is gone,
 * and still identified); after that it is. */
static void test_sighted(struct fixture *fx)
{
	struct dcpi_loadmap *lm = dcpi_loadmap_new(fx->procroot);
	struct dcpi_mmap_event ev;
	const struct dcpi_image *im;
	char copy[PATH_MAX];
	uint64_t off;
	int first;

	snprintf(copy, sizeof(copy), "%s/bin dir/prog2 copy", tmp);
	fx_sh("cp '%s' '%s'", fx->prog2, copy);
	ev = mmap_ev(600, 0x800000, 0x1000, 0x3000, copy);
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "mmap of a file, checked by opening it");
	first = dcpi_loadmap_resolve(lm, 600, 0x800010, 0, &off);
	im = dcpi_loadmap_image(lm, first);
	T_OK(im && im->build_id_len == 20, "identified by its build-id");
	T_OK(im && im->text_start == 0x3000 && im->text_size == 0x1000,
	     "its text: the executable mapping's file offset and length (0x3000, 0x1000)");
	unlink(copy);
	ev.pid = ev.tid = 601;
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "the same inode mapped again, at once");
	T_EQ(dcpi_loadmap_resolve(lm, 601, 0x800010, 0, &off), first,
	     "within the second: the same image, the file not opened again");
	usleep(1100 * 1000);
	ev.pid = ev.tid = 602;
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "and again, later");
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 602, 0x800010, 0, &off));
	T_OK(im && im->build_id_len == 0, "after it: opened again (gone: path alone)");
	dcpi_loadmap_free(lm);
}

static void test_lazy(struct fixture *fx, struct dcpi_loadmap *lm, int img)
{
	struct dcpi_loadmap_stats st0, st;
	char maps[PATH_MAX];
	uint64_t off;

	maps_line(maps, sizeof(maps), 0x600000, 0x601000, "r-xp", 0, fx->prog2);
	fake_proc(300, maps);
	dcpi_loadmap_stats(lm, &st0);
	T_OK(dcpi_loadmap_resolve(lm, 300, 0x600010, 0, &off) >= 0 && off == 0x10,
	     "a pid first met in a sample is looked up");
	dcpi_loadmap_resolve(lm, 300, 0x600020, 0, &off);
	T_EQ(dcpi_loadmap_resolve(lm, 999, 0x600010, 0, &off), DCPI_NO_IMAGE, "unknown pid");
	dcpi_loadmap_resolve(lm, 999, 0x600010, 0, &off);
	dcpi_loadmap_resolve(lm, 999, 0x600020, 0, &off);
	dcpi_loadmap_stats(lm, &st);
	T_EQ(st.lazy_scans - st0.lazy_scans, 2, "each new pid looked up once, not per sample");
	T_EQ(st.scan_failed - st0.scan_failed, 1, "the missing one counted as failed once");
	(void)img;
	fake_proc(401, maps);
	T_EQ(dcpi_loadmap_fork(lm, 401, 999), 0, "fork from a parent never known");
	T_OK(dcpi_loadmap_resolve(lm, 401, 0x600010, 0, &off) >= 0 && off == 0x10,
	     "the child is read from procroot instead");
	fake_proc(402, maps);
	T_EQ(dcpi_loadmap_fork(lm, 402, 0), 0, "fork with ppid 0");
	T_OK(dcpi_loadmap_resolve(lm, 402, 0x600010, 0, &off) >= 0, "that child is read too");
	test_gone(fx, lm, dcpi_loadmap_resolve(lm, 300, 0x600010, 0, &off));
}

static void test_overlap(struct fixture *fx, struct dcpi_loadmap *lm, int img1)
{
	struct dcpi_mmap_event ev = mmap_ev(101, 0x400800, 0x800, 0x5000, fx->prog2);
	uint64_t off;
	int img2;

	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "mmap in the middle of a mapping");
	img2 = dcpi_loadmap_resolve(lm, 101, 0x400900, 0, &off);
	T_OK(img2 >= 0 && img2 != img1 && off == 0x5100, "the new mapping wins where it lies");
	T_OK(dcpi_loadmap_resolve(lm, 101, 0x4007ff, 0, &off) == img1 &&
	     off == P1_PGOFF + 0x7ff, "left remnant keeps its offsets");
	T_OK(dcpi_loadmap_resolve(lm, 101, 0x401000, 0, &off) == img1 &&
	     off == P1_PGOFF + 0x1000, "right remnant's offset is shifted");
	ev = mmap_ev(101, 0x401800, 0x1000, 0, "//anon");
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "anonymous exec mmap over the end");
	T_EQ(dcpi_loadmap_resolve(lm, 101, 0x401900, 0, &off), DCPI_NO_IMAGE,
	     "anonymous exec memory (JIT) has no image");
	T_EQ(dcpi_loadmap_resolve(lm, 101, 0x4017ff, 0, &off), img1, "trimmed mapping below it");
	ev = mmap_ev(101, 0x400000, 0x800, 0, fx->prog1);
	ev.prot = PROT_READ;
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "non-executable mmap");
	T_EQ(dcpi_loadmap_resolve(lm, 101, 0x400010, 0, &off), DCPI_NO_IMAGE,
	     "a non-executable mapping clears what it covers");
}

static void test_record_ids(struct fixture *fx, struct dcpi_loadmap *lm)
{
	static const uint8_t fake_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3 };
	struct dcpi_mmap_event ev = mmap_ev(101, 0x900000, 0x1000, 0, fx->prog2);
	const struct dcpi_image *im;
	struct dcpi_loadmap_stats st0, st;
	uint64_t off;
	char gone[PATH_MAX + 16];
	int a, b;

	ev.build_id = fake_id;
	ev.build_id_len = sizeof(fake_id);
	dcpi_loadmap_mmap(lm, &ev);
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 101, 0x900000, 0, &off));
	T_OK(im && im->build_id_len == 20 && !memcmp(im->build_id, fake_id, 20),
	     "the record's build-id is the identity");
	dcpi_loadmap_stats(lm, &st0);
	snprintf(gone, sizeof(gone), "%s/gone (deleted)", tmp);
	ev = mmap_ev(101, 0xa00000, 0x1000, 0, gone);
	dcpi_loadmap_mmap(lm, &ev);
	a = dcpi_loadmap_resolve(lm, 101, 0xa00000, 0, &off);
	im = dcpi_loadmap_image(lm, a);
	snprintf(gone, sizeof(gone), "%s/gone", tmp);
	T_STREQ(im ? im->path : NULL, gone, "deleted file: suffix stripped");
	T_OK(im && im->build_id_len == 0, "deleted file without build-id: path alone");
	ev.start = 0xb00000;
	dcpi_loadmap_mmap(lm, &ev);
	b = dcpi_loadmap_resolve(lm, 101, 0xb00000, 0, &off);
	dcpi_loadmap_stats(lm, &st);
	T_EQ(b, a, "the same unreadable path: the same image");
	T_EQ(st.id_failed - st0.id_failed, 1, "id_failed counted once for it");
}

static void test_lifecycle(struct fixture *fx, struct dcpi_loadmap *lm, int img1)
{
	struct dcpi_mmap_event ev = mmap_ev(200, 0x700000, 0x1000, 0, fx->prog2);
	struct dcpi_loadmap_stats st0, st;
	char p[PATH_MAX];
	uint64_t off;
	int img;

	T_EQ(dcpi_loadmap_fork(lm, 200, 100), 0, "fork");
	T_OK(dcpi_loadmap_resolve(lm, 200, P1_START + 8, 0, &off) == img1 &&
	     off == P1_PGOFF + 8, "the child inherits its parent's mappings");
	T_EQ(dcpi_loadmap_fork(lm, 100, 100), 0, "a new thread");
	T_EQ(dcpi_loadmap_resolve(lm, 100, P1_START + 8, 0, &off), img1, "changes nothing");
	T_EQ(dcpi_loadmap_exec(lm, 200), 0, "exec");
	T_EQ(dcpi_loadmap_resolve(lm, 200, P1_START + 8, 0, &off), DCPI_NO_IMAGE,
	     "exec drops the old mappings");
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "the new image's mmap");
	img = dcpi_loadmap_resolve(lm, 200, 0x700004, 0, &off);
	T_STREQ(dcpi_loadmap_image(lm, img) ? dcpi_loadmap_image(lm, img)->path : NULL,
		fx->prog2, "resolves after exec");
	T_EQ(dcpi_loadmap_resolve(lm, 100, P1_START + 8, 0, &off), img1, "the parent unchanged");
	dcpi_loadmap_stats(lm, &st0);
	T_EQ(dcpi_loadmap_exit(lm, 200), 0, "exit");
	dcpi_loadmap_stats(lm, &st);
	T_EQ(st0.processes - st.processes, 1, "an exited process is no longer counted live");
	T_EQ(dcpi_loadmap_resolve(lm, 200, 0x700004, 0, &off), img, "resolvable until reap");
	dcpi_loadmap_reap(lm);
	dcpi_loadmap_stats(lm, &st0);
	T_EQ(dcpi_loadmap_resolve(lm, 200, 0x700004, 0, &off), DCPI_NO_IMAGE,
	     "forgotten after reap");
	dcpi_loadmap_stats(lm, &st);
	T_EQ(st.lazy_scans - st0.lazy_scans, 1, "(and then looked up as a new pid)");
	snprintf(p, sizeof(p), "%s/proc/101/maps", tmp);
	unlink(p);
	T_EQ(dcpi_loadmap_scan_pid(lm, 101), -ESRCH, "scan_pid of a vanished process: -ESRCH");
}

/* After a forget, only what is mapped or pinned is left, renumbered; the
 * mappings and the pinned index follow, and the identity cache too. */
static void test_forget(struct dcpi_loadmap *lm, int img1)
{
	struct dcpi_image gone = { .path = "/nowhere/gone", .kind = DCPI_IMAGE_FILE, .size = 1 };
	struct dcpi_image pin = { .path = "[pinned]", .kind = DCPI_IMAGE_UNKNOWN };
	char *path1 = strdup(dcpi_loadmap_image(lm, img1)->path);
	struct dcpi_loadmap_stats st0, st;
	int32_t pinned;
	size_t n;
	uint64_t off;
	int idx;

	pinned = dcpi_loadmap_intern(lm, &pin);
	T_OK(dcpi_loadmap_intern(lm, &gone) >= 0, "an image nothing maps");
	dcpi_loadmap_stats(lm, &st0);
	T_EQ(dcpi_loadmap_forget(lm, &pinned, 1, &n), 0, "forget");
	dcpi_loadmap_stats(lm, &st);
	T_OK(n >= 1 && st.images == st0.images - n && st.forgotten == st0.forgotten + n,
	     "forgotten images are counted and gone from memory");
	T_STREQ(dcpi_loadmap_image(lm, pinned) ? dcpi_loadmap_image(lm, pinned)->path : NULL,
		"[pinned]", "the pinned index follows its image");
	idx = dcpi_loadmap_resolve(lm, 100, P1_START + 8, 0, &off);
	T_STREQ(dcpi_loadmap_image(lm, idx) ? dcpi_loadmap_image(lm, idx)->path : NULL, path1,
		"a live process's mapping follows its image");
	T_EQ(dcpi_loadmap_intern(lm, &pin), pinned, "the image set is rebuilt");
	T_EQ(dcpi_loadmap_intern(lm, &gone), (int)st.images, "a forgotten image comes back new");
	free(path1);
}

/* Maps text from memory reads as from a file; bytes past len are not read. */
static void test_scan_text(void)
{
	static const char text[] = "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n"
				   "garbage past the length";
	struct dcpi_loadmap *lm = dcpi_loadmap_new("/nonexistent");
	uint64_t off;
	int idx;

	T_EQ(dcpi_loadmap_scan_text(lm, 7, text, strchr(text, '\n') + 1 - text), 0,
	     "scan_text of one line");
	idx = dcpi_loadmap_resolve(lm, 7, 0x7f0000000010, 0, &off);
	T_STREQ(dcpi_loadmap_image(lm, idx) ? dcpi_loadmap_image(lm, idx)->path : NULL, "[vdso]",
		"its mapping resolves");
	T_EQ(dcpi_loadmap_scan_text(lm, 8, "", 0), 0, "empty text: no mappings");
	T_EQ(dcpi_loadmap_scan_text(lm, 0, text, 4), -EINVAL, "pid 0 refused");
	dcpi_loadmap_free(lm);
}

static void test_procroot(void)
{
	struct fixture fx;
	struct dcpi_loadmap *lm;
	uint64_t off;
	int img1;

	snprintf(fx.procroot, sizeof(fx.procroot), "%s/proc", tmp);
	mkdir(fx.procroot, 0755);
	snprintf(fx.prog1, sizeof(fx.prog1), "%s/bin dir/prog one", tmp);
	snprintf(fx.prog2, sizeof(fx.prog2), "%s/bin dir/prog2", tmp);
	fx_sh("mkdir -p '%s/bin dir'", tmp);
	T_EQ(build_elf(fx.prog1, 1, "-Wl,--build-id"), 0, "build prog1");
	T_EQ(build_elf(fx.prog2, 3, "-Wl,--build-id"), 0, "build prog2");
	T_OK(readelf_build_id(fx.prog1, fx.want1, sizeof(fx.want1)), "readelf reads prog1");
	lm = scan_fixture(&fx);
	test_scan_resolve(&fx, lm);
	img1 = dcpi_loadmap_resolve(lm, 100, P1_START, 0, &off);
	test_overlap(&fx, lm, img1);
	test_record_ids(&fx, lm);
	test_lifecycle(&fx, lm, img1);
	test_lazy(&fx, lm, img1);
	test_rebuild(&fx, lm, img1);
	test_forget(lm, img1);
	dcpi_loadmap_free(lm);
	test_sighted(&fx);
}

/* ---- the kernel ---------------------------------------------------------------------- */

/* A raw note as the kernel exports it. */
static size_t put_note(uint8_t *p, uint32_t type, const char *name, const uint8_t *desc,
		       uint32_t dlen)
{
	uint32_t h[3] = { (uint32_t)strlen(name) + 1, dlen, type };
	size_t n = 12, nl = (h[0] + 3) & ~3u;

	memcpy(p, h, 12);
	memset(p + 12, 0, nl + ((dlen + 3) & ~3u));
	memcpy(p + n, name, h[0]);
	n += nl;
	memcpy(p + n, desc, dlen);
	return n + ((dlen + 3) & ~3u);
}

static void write_notes(const char *path, const uint8_t *id, uint32_t len)
{
	uint8_t buf[256];
	size_t n = put_note(buf, 6, "Linux", (const uint8_t *)"6.1.0", 6);
	FILE *f;

	n += put_note(buf + n, 3, "GNU", id, len);
	f = fopen(path, "w");
	if (f) {
		fwrite(buf, 1, n, f);
		fclose(f);
	}
}

static const char fake_kallsyms[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 T start_kernel\n"
	"ffffffff82000000 T _etext\n"
	"ffffffffc00f0000 d ext4_data\t[ext4]\n"
	"ffffffffc0001000 t ext4_init\t[ext4]\n"
	"ffffffffc0000000 t ext4_fill_super\t[ext4]\n"
	"ffffffffc0100000 T xfs_mount\t[xfs]\n"
	"ffffffffc0110000 t xfs_other\t[xfs]\n"
	"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";

static void check_kernel(struct dcpi_loadmap *lm, const uint8_t *kid, const uint8_t *mid,
			 const char *how)
{
	const struct dcpi_image *im;
	uint64_t off;
	int idx;

	idx = dcpi_loadmap_resolve(lm, 1, 0xffffffff81000100ull, 1, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_OK(im && im->kind == DCPI_IMAGE_KERNEL && !strcmp(im->path, "[kernel.kallsyms]"),
	     "%s: kernel sample → kernel image", how);
	T_OK(im && off == 0xffffffff81000100ull && im->text_start == 0xffffffff81000000ull &&
	     im->text_size == 0x1000000, "%s: offset = address, text range from _stext/_etext",
	     how);
	T_OK(im && im->build_id_len == 20 && !memcmp(im->build_id, kid, 20),
	     "%s: kernel build-id from the notes file", how);
	idx = dcpi_loadmap_resolve(lm, 1, 0xffffffffc0001010ull, 1, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_STREQ(im ? im->path : NULL, "[ext4]", "%s: address in ext4 → [ext4]", how);
	T_OK(im && im->kind == DCPI_IMAGE_MODULE && off == 0x1010 &&
	     im->text_start == 0xffffffffc0000000ull, "%s: offset from the module base", how);
	T_OK(im && im->build_id_len == 20 && !memcmp(im->build_id, mid, 20),
	     "%s: module build-id from sysfs", how);
	idx = dcpi_loadmap_resolve(lm, 1, 0xffffffffc0100008ull, 0, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_OK(im && !strcmp(im->path, "[xfs]") && off == 8,
	     "%s: user-flagged sample at a kernel address → [xfs]", how);
	idx = dcpi_loadmap_resolve(lm, 1, 0xffffffffc0201000ull, 1, &off);
	im = dcpi_loadmap_image(lm, idx);
	T_OK(im && im->kind == DCPI_IMAGE_KERNEL && off == 0xffffffffc0201000ull,
	     "%s: kernel address outside every module → kernel image", how);
}

static void test_kernel_fake(void)
{
	uint8_t kid[20], mid[20];
	char ks[1024], mods[1024], mods0[1024], sys[1024], p[PATH_MAX];
	struct dcpi_loadmap *lm;
	struct dcpi_mmap_event ev = { .pid = -1, .tid = -1, .prot = PROT_EXEC };
	const struct dcpi_image *im;
	uint64_t off;
	int i;

	for (i = 0; i < 20; i++) {
		kid[i] = (uint8_t)(i * 7 + 1);
		mid[i] = (uint8_t)(0xff - i);
	}
	snprintf(sys, sizeof(sys), "%s/sys", tmp);
	fx_sh("mkdir -p '%s/kernel' '%s/module/ext4/notes'", sys, sys);
	snprintf(p, sizeof(p), "%s/kernel/notes", sys);
	write_notes(p, kid, 20);
	snprintf(p, sizeof(p), "%s/module/ext4/notes/.note.gnu.build-id", sys);
	write_notes(p, mid, 20);
	snprintf(ks, sizeof(ks), "%s/kallsyms", tmp);
	write_file(ks, fake_kallsyms);
	snprintf(mods, sizeof(mods), "%s/modules", tmp);
	write_file(mods, "ext4 1048576 1 - Live 0xffffffffc0000000\n"
			 "xfs 131072 0 - Live 0xffffffffc0100000 (OE)\n");
	snprintf(mods0, sizeof(mods0), "%s/modules0", tmp);
	write_file(mods0, "ext4 1048576 1 - Live 0x0000000000000000\n"
			  "xfs 131072 0 - Live 0x0000000000000000 (OE)\n");

	lm = dcpi_loadmap_new(tmp);
	T_EQ(dcpi_loadmap_set_sysfs(lm, sys), 0, "point sysfs at the fake tree");
	T_EQ(dcpi_loadmap_load_kernel(lm, ks, mods), 0, "fake kallsyms + modules load");
	check_kernel(lm, kid, mid, "addresses");
	ev.start = 0xffffffffc0300000ull;
	ev.len = 0x2000;
	ev.path = "[nfs]";
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "kernel mmap record for a module");
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 1, 0xffffffffc0300010ull, 1, &off));
	T_OK(im && !strcmp(im->path, "[nfs]") && off == 0x10, "module from a record resolves");
	ev.start = 0xffffffffc0400000ull;
	ev.path = "/lib/modules/6.1/kernel/fs/fuse/fuse-x.ko.zst";
	dcpi_loadmap_mmap(lm, &ev);
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 1, 0xffffffffc0400020ull, 1, &off));
	T_OK(im && !strcmp(im->path, "[fuse_x]") && off == 0x20, "module named by its .ko path");
	ev.path = "[kernel.kallsyms]_text";
	T_EQ(dcpi_loadmap_mmap(lm, &ev), 0, "a kernel text record is tolerated");
	dcpi_loadmap_free(lm);

	lm = dcpi_loadmap_new(tmp);
	dcpi_loadmap_set_sysfs(lm, sys);
	T_EQ(dcpi_loadmap_load_kernel(lm, ks, mods0), 0, "modules with hidden addresses load");
	check_kernel(lm, kid, mid, "hidden");
	snprintf(p, sizeof(p), "%s/nomodules", tmp);
	T_EQ(dcpi_loadmap_load_kernel(lm, ks, p), 0, "a missing modules file means none");
	T_EQ(dcpi_loadmap_resolve(lm, 1, 0xffffffffc0001010ull, 1, &off),
	     dcpi_loadmap_resolve(lm, 1, 0xffffffff81000000ull, 1, &off),
	     "then module addresses are the kernel's");
	write_file(ks, "ffffffff81000000 T _stext\nnot a kallsyms line\n");
	T_EQ(dcpi_loadmap_load_kernel(lm, ks, NULL), -EBADMSG, "malformed kallsyms refused");
	dcpi_loadmap_free(lm);

	/* the same from text in memory, as dcpid reads /proc/kallsyms once */
	lm = dcpi_loadmap_new(tmp);
	dcpi_loadmap_set_sysfs(lm, sys);
	T_EQ(dcpi_loadmap_load_kernel_text(lm, fake_kallsyms, strlen(fake_kallsyms), "mem", mods),
	     0, "kallsyms text from memory loads");
	check_kernel(lm, kid, mid, "from memory");
	T_EQ(dcpi_loadmap_load_kernel_text(lm, fake_kallsyms, 0, "mem", mods), -EBADMSG,
	     "empty kallsyms text refused");
	T_EQ(dcpi_loadmap_load_kernel_text(lm, "ffffffff81000000 T _stext\nnot a line\n", 37,
					   "mem", NULL), -EBADMSG, "malformed text refused");
	dcpi_loadmap_free(lm);
}

static void test_notes_parse(void)
{
	uint8_t buf[128], id[DCPI_BUILD_ID_MAX], want[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	size_t n = put_note(buf, 6, "Linux", want, 3);

	n += put_note(buf + n, 3, "GNU", want, 8);
	T_EQ(dcpi_buildid_notes(buf, n, id, sizeof(id)), 8, "GNU note found after another");
	T_OK(!memcmp(id, want, 8), "its bytes");
	T_EQ(dcpi_buildid_notes(buf, n - 4, id, sizeof(id)), -EBADMSG, "cut note refused");
	T_EQ(dcpi_buildid_notes(buf, 20, id, sizeof(id)), -EBADMSG, "cut name refused");
	T_EQ(dcpi_buildid_notes(buf, 0, id, sizeof(id)), 0, "no notes: 0");
}

/* The _stext address as kallsyms shows it, read independently. */
static uint64_t real_stext(void)
{
	char line[512];
	uint64_t a = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " _stext\n")) {
			a = strtoull(line, NULL, 16);
			break;
		}
	fclose(f);
	return a;
}

static void test_kernel_real(void)
{
	struct dcpi_loadmap *lm;
	const struct dcpi_image *im;
	uint64_t stext = real_stext(), off;
	int rc;

	if (geteuid() != 0 || stext == 0) {
		T_SKIP("real kallsyms: needs root and visible kernel addresses");
		return;
	}
	lm = dcpi_loadmap_new("/proc");
	rc = dcpi_loadmap_load_kernel(lm, "/proc/kallsyms", "/proc/modules");
	T_EQ(rc, 0, "the real /proc/kallsyms loads (%s)", rc ? dcpi_errmsg() : "ok");
	im = dcpi_loadmap_image(lm, dcpi_loadmap_resolve(lm, 0, stext, 1, &off));
	T_OK(im && im->kind == DCPI_IMAGE_KERNEL && off == stext && im->text_start == stext,
	     "_stext resolves to the kernel image");
	dcpi_loadmap_free(lm);
}

/* ---- the real /proc -------------------------------------------------------------------- */

static __attribute__((noinline)) int marker_function(int x)
{
	return x * 3 + 1;
}

static void test_real_proc(void)
{
	struct dcpi_loadmap *lm = dcpi_loadmap_new("/proc");
	const struct dcpi_image *im;
	struct dcpi_loadmap_stats st;
	char exe[PATH_MAX], code[16];
	uint64_t off;
	FILE *f;
	int n, idx;

	n = dcpi_loadmap_scan(lm);
	T_OK(n > 0, "scan of the real /proc finds processes (%d)", n);
	idx = dcpi_loadmap_resolve(lm, getpid(), (uint64_t)(uintptr_t)&marker_function, 0, &off);
	dcpi_loadmap_stats(lm, &st);
	T_EQ(st.lazy_scans, 0, "this process was found by the scan, not looked up later");
	im = dcpi_loadmap_image(lm, idx);
	if (!realpath("/proc/self/exe", exe))
		exe[0] = '\0';
	T_STREQ(im ? im->path : NULL, exe, "a function of this test resolves to the test binary");
	memset(code, 0, sizeof(code));
	f = fopen(exe, "rb");
	if (f && fseek(f, (long)off, SEEK_SET) == 0 && fread(code, 1, sizeof(code), f) == 16)
		T_OK(!memcmp(code, (const void *)(uintptr_t)&marker_function, sizeof(code)),
		     "the file bytes at the offset are the function's code");
	else
		T_OK(0, "read the test binary at offset %#llx", (unsigned long long)off);
	if (f)
		fclose(f);
	T_EQ(marker_function(1), 4, "(the marker is real code)");
	dcpi_loadmap_free(lm);
}

int main(void)
{
	char noid[1024], elf[1024];

	snprintf(tmp, sizeof(tmp), "%s/dcpi-loadmap.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse_good();
	test_parse_bad();
	snprintf(elf, sizeof(elf), "%s/withid", tmp);
	snprintf(noid, sizeof(noid), "%s/noid", tmp);
	T_EQ(build_elf(elf, 7, "-Wl,--build-id"), 0, "cc builds an ELF with a build-id");
	T_EQ(build_elf(noid, 8, "-Wl,--build-id=none"), 0, "cc builds an ELF without one");
	test_build_ids(elf, noid);
	test_notes_parse();
	test_procroot();
	test_scan_text();
	test_kernel_fake();
	test_kernel_real();
	test_real_proc();
	fx_sh("rm -rf '%s'", tmp);
	return t_done();
}
