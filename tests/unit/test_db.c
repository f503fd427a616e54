/* The database layout: epoch names and order, the writer lock, the
 * epoch statistics file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/profile.h"
#include "dcpi/snapshot.h"
#include "dcpi/stacks.h"
#include "dcpi/stats.h"
#include "dcpi/symtab.h"
#include "tap.h"

static char tmp[64];

static void test_epochs(void)
{
	char name[DCPI_EPOCH_NAME_MAX], db[128], **v;
	size_t n;
	time_t t = 1795000000; /* date -u -d @1795000000: 2026-11-18 11:06:40 */

	snprintf(db, sizeof(db), "%s/db", tmp);
	T_EQ(dcpi_db_init(db, 0700), 0, "init creates the database");
	T_EQ(dcpi_db_epoch_latest(db, name), -ENOENT, "no epochs yet: -ENOENT");
	T_OK(strstr(dcpi_errmsg(), "no epochs") != NULL, "message says so: %s", dcpi_errmsg());
	T_EQ(dcpi_db_epoch_create(db, t, 0700, name), 0, "create an epoch");
	T_STREQ(name, "20261118T110640Z", "named by its UTC start");
	for (int i = 2; i <= 11; i++)
		dcpi_db_epoch_create(db, t, 0700, name);
	T_STREQ(name, "20261118T110640Z-11", "same second: numbered suffix");
	dcpi_db_epoch_create(db, t + 1, 0700, name);
	T_EQ(dcpi_db_epochs(db, &v, &n), 0, "list epochs");
	T_EQ(n, 12, "12 epochs");
	T_STREQ(v[9], "20261118T110640Z-10", "-10 sorts after -9");
	T_STREQ(v[10], "20261118T110640Z-11", "-11 after -10");
	T_STREQ(v[11], "20261118T110641Z", "a later second comes last");
	dcpi_db_names_free(v, n);
	T_EQ(dcpi_db_epoch_latest(db, name), 0, "latest");
	T_STREQ(name, "20261118T110641Z", "latest is the newest");
	T_OK(dcpi_db_is_epoch_name("20261118T110641Z-3"), "epoch name with suffix");
	T_OK(!dcpi_db_is_epoch_name("20261118T110641Z-"), "dangling suffix refused");
	T_OK(!dcpi_db_is_epoch_name("2026111xT073321Z"), "bad digit refused");
	T_OK(!dcpi_db_is_epoch_name("hosts"), "other names refused");
	{
		struct stat st;

		stat(db, &st);
		T_EQ(st.st_mode & 0777, 0700, "database directory is 0700");
	}
	{
		char f[160];
		FILE *fp;

		snprintf(f, sizeof(f), "%s/file", tmp);
		fp = fopen(f, "w");
		fclose(fp);
		T_EQ(dcpi_db_init(f, 0700), -ENOTDIR, "a file is not a database");
	}
}

static void test_lock(void)
{
	char db[128];
	int fd, fd2, st;
	pid_t pid;

	snprintf(db, sizeof(db), "%s/db", tmp);
	T_EQ(dcpi_db_lock(db, "h1", &fd), 0, "take the lock");
	T_EQ(dcpi_db_lock_holder(db, "h1"), getpid(), "holder is us");
	pid = fork();
	if (pid == 0) { /* another process: refused, with our pid in the message */
		char want[32];
		int r = dcpi_db_lock(db, "h1", &fd2);

		snprintf(want, sizeof(want), "pid %d", (int)getppid());
		_exit(r == -EBUSY && strstr(dcpi_errmsg(), want) ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	T_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a second writer is refused, naming the holder");
	T_EQ(dcpi_db_lock(db, "h2", &fd2), 0, "another host's lock is independent");
	close(fd);
	close(fd2);
	T_EQ(dcpi_db_lock_holder(db, "h1"), 0, "released lock has no holder");
}

static void test_stats(void)
{
	struct dcpi_epoch_stats a, b;
	char path[128];
	static const char *const bad[] = {
		"samples x\n", "samples -1\n", "samples\n", "event\n",
		"event cycles period\n", "event cycles period 12x\n",
		"samples 99999999999999999999999\n",
	};

	memset(&a, 0, sizeof(a));
	snprintf(a.epoch, sizeof(a.epoch), "20261118T110641Z");
	snprintf(a.platform, sizeof(a.platform), "host-1");
	a.start = 1795000000;
	a.updated = 1795000100;
	a.samples = 123456789012ull;
	a.lost = 3;
	a.throttled = 4;
	a.unknown = 5;
	a.kernel = 6;
	a.images = 7;
	a.ncpus = 2;
	a.nevents = 2;
	snprintf(a.ev[0].name, sizeof(a.ev[0].name), "cycles");
	a.ev[0].period = 1000003;
	a.ev[0].samples = 100;
	a.ev[0].time_enabled = 2000;
	a.ev[0].time_running = 1000;
	snprintf(a.ev[1].name, sizeof(a.ev[1].name), "instructions");
	a.ev[1].period = 2000003;
	snprintf(path, sizeof(path), "%s/epoch.stats", tmp);
	T_EQ(dcpi_stats_write(path, &a, 0600), 0, "write stats");
	T_EQ(dcpi_stats_read(path, &b), 0, "read stats");
	T_OK(!memcmp(&a, &b, sizeof(a)), "stats round trip exactly");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = dcpi_stats_parse(bad[i], strlen(bad[i]), &b);

		T_EQ(r, -EBADMSG, "malformed line refused: %.*s", (int)strcspn(bad[i], "\n"), bad[i]);
	}
	T_EQ(dcpi_stats_parse("# c\n\nfuture_key 1\nsamples 9\n", 27, &b), 0, "comments, blank lines, unknown keys pass");
	T_EQ(b.samples, 9, "value read");
	T_EQ(dcpi_stats_parse("samples 1\0x", 11, &b), -EBADMSG, "NUL byte refused");
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The kallsyms snapshot is stored compressed and read back transparently;
 * a plain one (older databases) still reads. */
static void test_snapshot(void)
{
	char proc[128], plat[128], path[300], big[300];
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *s;
	struct stat a, b;
	FILE *f;

	snprintf(proc, sizeof(proc), "%s/proc", tmp);
	snprintf(plat, sizeof(plat), "%s/plat", tmp);
	mkdir(proc, 0700);
	mkdir(plat, 0700);
	snprintf(big, sizeof(big), "%s/kallsyms", proc);
	f = fopen(big, "w");
	for (int i = 0; f && i < 20000; i++) /* each function after its padding */
		fprintf(f, "ffffffff81%06x T __pfx_kernel_function_number_%d\n"
			   "ffffffff81%06x T kernel_function_number_%d\n", i * 32, i, i * 32 + 16, i);
	if (f)
		fclose(f);
	T_EQ(dcpi_snapshot_kernel(plat, proc, 0600), 0, "snapshot without /proc/modules");
	T_EQ(dcpi_snapshot_kallsyms_path(plat, path, sizeof(path)), 0, "snapshot found");
	T_OK(strstr(path, "kallsyms.gz") != NULL, "stored as kallsyms.gz: %s", path);
	stat(big, &a);
	stat(path, &b);
	T_OK(b.st_size * 4 < a.st_size, "compressed: %lld bytes for %lld", (long long)b.st_size,
	     (long long)a.st_size);
	T_EQ(b.st_mode & 0777, 0600, "snapshot is private");
	T_EQ(dcpi_symtab_open_kallsyms(path, NULL, 0, &st), 0, "symbols read from kallsyms.gz");
	s = st ? dcpi_symtab_lookup(st, 0xffffffff81000000ull + 32 * 12345 + 16 + 3) : NULL;
	T_STREQ(s ? s->name : NULL, "kernel_function_number_12345", "lookup in the compressed snapshot");
	s = st ? dcpi_symtab_lookup(st, 0xffffffff81000000ull + 32 * 12346 + 3) : NULL;
	T_STREQ(s ? s->name : NULL, "kernel_function_number_12345",
		"a padding goes with the function before");
	dcpi_symtab_close(st);
	{
		gzFile z = gzopen(path, "rb");
		char line[256];
		int pfx = 0, n = 0;

		while (z && gzgets(z, line, sizeof(line)))
			n++, pfx += strstr(line, "__pfx_") != NULL;
		if (z)
			gzclose(z);
		T_OK(n == 20000 && pfx == 0, "the snapshot leaves the paddings out (%d lines, %d)",
		     n, pfx);
	}
	/* and a reader skips them where a snapshot (or /proc) has them */
	T_EQ(dcpi_symtab_open_kallsyms(big, NULL, 0, &st), 0, "symbols read from kallsyms");
	s = st ? dcpi_symtab_lookup(st, 0xffffffff81000000ull + 32 * 12346 + 3) : NULL;
	T_STREQ(s ? s->name : NULL, "kernel_function_number_12345", "padding skipped by the reader");
	dcpi_symtab_close(st);
	unlink(path);
	snprintf(path, sizeof(path), "%s/kallsyms", plat);
	write_text(path, "ffffffff81000000 T _stext\nffffffff81000100 T _etext\n");
	T_EQ(dcpi_snapshot_kallsyms_path(plat, big, sizeof(big)), 0, "plain kallsyms of an older database");
	T_STREQ(big, path, "found as kallsyms");
	unlink(path);
	T_EQ(dcpi_snapshot_kallsyms_path(plat, big, sizeof(big)), -ENOENT, "no snapshot: -ENOENT");
	snprintf(path, sizeof(path), "%s/modules", proc);
	write_text(path, "ext4 1000 1 - Live 0xffffffffc0000000\n");
	T_EQ(dcpi_snapshot_kernel(plat, proc, 0600), 0, "snapshot with modules");
	snprintf(path, sizeof(path), "%s/modules", plat);
	T_OK(access(path, R_OK) == 0, "modules copied");
}

/* A profile of the kernel or a module with 7 samples at one offset. */
static void kernel_profile(struct dcpi_profile *p, const char *path, uint32_t kind,
			   uint64_t text_start, uint64_t off)
{
	const uint64_t c = 7;

	dcpi_profile_init(p);
	p->path = strdup(path);
	p->kind = kind;
	p->text_start = text_start;
	p->epoch = strdup("20261129T000000Z");
	p->platform = strdup("vm");
	p->nevents = 1;
	p->events[0].name = strdup("cpu-clock");
	p->events[0].period = 500000;
	p->events[0].total = c;
	dcpi_profile_set_rows(p, 1, &off, &c);
}

/* An epoch's snapshot cut down to what it sampled: each sampled address's
 * symbol (all of them at its address), the next symbol of its owner (which
 * bounds its size), _text/_stext/_etext, and lines not of kallsyms' form;
 * a symbol looked up in the cut file is the one of the whole file. */
static void test_snapshot_prune(void)
{
	static const char whole[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81001000 T alpha\n"
		"ffffffff81001000 t alpha_alias\n"
		"ffffffff81001040 t beta\n"
		"ffffffff81001080 D some_data\n"
		"ffffffff810010c0 T gamma\n"
		"ffffffff81002000 T delta\n"
		"not a kallsyms line\n"
		"ffffffff81003000 T _etext\n"
		"ffffffffc0001000 t mod_one\t[ext4]\n"
		"ffffffffc0001100 t mod_two\t[ext4]\n"
		"ffffffffc0002000 t other_mod\t[xfs]\n"
		"ffffffffc0001200 t mod_three\t[ext4]\n";
	/* alpha+0x10, gamma+0x8, mod_one+0x20 (a module's row: base +
	   offset); below every symbol; a repeat */
	const uint64_t addrs[] = { 0x1000, 0xffffffff81001010ull, 0xffffffff81001010ull,
				   0xffffffff810010c8ull, 0xffffffffc0001020ull };
	struct dcpi_buf in = DCPI_BUF_INIT, out = DCPI_BUF_INIT;
	char plat[128], path[300], got[4096];

	dcpi_buf_put(&in, whole, sizeof(whole) - 1);
	T_EQ(dcpi_snapshot_prune_text(&in, addrs, 5, &out), 0, "cut down");
	snprintf(got, sizeof(got), "%.*s", (int)out.len, (const char *)out.data);
	T_STREQ(got,
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81001000 T alpha\n"
		"ffffffff81001000 t alpha_alias\n"
		"ffffffff81001040 t beta\n"
		"ffffffff810010c0 T gamma\n"
		"ffffffff81002000 T delta\n"
		"not a kallsyms line\n"
		"ffffffff81003000 T _etext\n"
		"ffffffffc0001000 t mod_one\t[ext4]\n"
		"ffffffffc0001100 t mod_two\t[ext4]\n",
		"each sampled symbol and its aliases, the next of its owner, the markers");
	out.len = 0;
	T_EQ(dcpi_snapshot_prune_text(&in, NULL, 0, &out), 0, "nothing sampled");
	snprintf(got, sizeof(got), "%.*s", (int)out.len, (const char *)out.data);
	T_STREQ(got,
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T _stext\n"
		"not a kallsyms line\n"
		"ffffffff81003000 T _etext\n",
		"nothing sampled: the markers alone");

	/* a platform directory: a kernel profile, a module's, a stacks file
	   with a kernel frame; the cut file names what the whole one names */
	snprintf(plat, sizeof(plat), "%s/prune", tmp);
	mkdir(plat, 0700);
	{
		struct dcpi_profile k, m;
		const uint64_t ko[] = { 0xffffffff81001050ull }, mo[] = { 0x110 };
		struct dcpi_stackset ss;
		const char *ev[] = { "cpu-clock" };
		const uint64_t per[] = { 500000 };
		struct dcpi_stack_frame fr[2];
		uint32_t img = 0;
		struct dcpi_symtab *st = NULL;
		const struct dcpi_sym *sym;
		uint64_t *a = NULL;
		size_t na = 0;

		kernel_profile(&k, "[kernel.kallsyms]", DCPI_IMAGE_KERNEL, 0, ko[0]);
		kernel_profile(&m, "[ext4]", DCPI_IMAGE_MODULE, 0xffffffffc0001000ull, mo[0]);
		snprintf(path, sizeof(path), "%s/kernel.prof", plat);
		T_EQ(dcpi_profile_write(path, &k, 0600), 0, "a kernel profile");
		snprintf(path, sizeof(path), "%s/ext4.prof", plat);
		T_EQ(dcpi_profile_write(path, &m, 0600), 0, "a module's profile");
		T_EQ(dcpi_stackset_init(&ss, 1, ev, per), 0, "a stack set");
		dcpi_stackset_image(&ss, &k, &img);
		fr[0] = (struct dcpi_stack_frame){ img, 0xffffffff81002010ull };  /* delta */
		fr[1] = (struct dcpi_stack_frame){ img, 0xffffffff81001010ull };  /* alpha */
		T_EQ(dcpi_stackset_add(&ss, 0, -1, DCPI_STACK_END_WHOLE, fr, 2, 0, 7), 0, "a stack");
		snprintf(path, sizeof(path), "%s/epoch.stacks", plat);
		T_EQ(dcpi_stackset_merge_file(path, &ss, 0600), 0, "its stacks file");
		dcpi_stackset_free(&ss);
		dcpi_profile_free(&k);
		dcpi_profile_free(&m);
		T_EQ(dcpi_snapshot_sampled(plat, &a, &na), 0, "the sampled addresses");
		T_OK(na == 4 && a[0] == 0xffffffff81001010ull && a[1] == 0xffffffff81001050ull &&
		     a[2] == 0xffffffff81002010ull && a[3] == 0xffffffffc0001110ull,
		     "profiles' rows, a module's from its base, the stacks' frames, sorted (%zu)", na);
		free(a);
		T_EQ(dcpi_snapshot_prune(plat, &in, 0600), 0, "kallsyms.gz cut down");
		snprintf(path, sizeof(path), "%s/kallsyms.gz", plat);
		T_EQ(dcpi_symtab_open_kallsyms(path, NULL, 0, &st), 0, "the cut snapshot reads");
		sym = st ? dcpi_symtab_lookup(st, 0xffffffff81001050ull) : NULL;
		T_STREQ(sym ? sym->name : NULL, "beta", "a profile's procedure named");
		sym = st ? dcpi_symtab_lookup(st, 0xffffffff81002010ull) : NULL;
		T_STREQ(sym ? sym->name : NULL, "delta", "a stack frame's procedure named");
		sym = st ? dcpi_symtab_lookup(st, 0xffffffff810010c8ull) : NULL;
		T_OK(!sym || strcmp(sym->name, "gamma"), "an unsampled procedure left out");
		dcpi_symtab_close(st);
		T_EQ(dcpi_symtab_open_kallsyms(path, "ext4", 0xffffffffc0001000ull, &st), 0,
		     "the module's symbols read");
		sym = st ? dcpi_symtab_lookup(st, 0x110) : NULL; /* by offset from its base */
		T_STREQ(sym ? sym->name : NULL, "mod_two", "a module's procedure named");
		dcpi_symtab_close(st);
		/* an unreadable profile: nothing is cut */
		snprintf(path, sizeof(path), "%s/bad.prof", plat);
		write_text(path, "garbage");
		T_OK(dcpi_snapshot_prune(plat, &in, 0600) != 0, "a corrupt profile: an error");
		snprintf(path, sizeof(path), "%s/kallsyms.gz", plat);
		T_EQ(dcpi_symtab_open_kallsyms(path, NULL, 0, &st), 0, "the snapshot still reads");
		sym = st ? dcpi_symtab_lookup(st, 0xffffffff81001050ull) : NULL;
		T_STREQ(sym ? sym->name : NULL, "beta", "and is as it was");
		dcpi_symtab_close(st);
	}
	dcpi_buf_release(&in);
	dcpi_buf_release(&out);
}

static void test_filenames(void)
{
	struct dcpi_profile a = { .path = (char *)"/usr/lib/libc.so.6", .build_id = { 1, 2 },
				  .build_id_len = 2, .platform = (char *)"h", .pid = -1 };
	struct dcpi_profile b = a, k = { .path = (char *)"[kernel.kallsyms]", .kind = DCPI_IMAGE_KERNEL,
				      .platform = (char *)"h", .pid = -1 };
	struct dcpi_profile u = { .path = (char *)"[unknown 0x7f0000000000]",
				  .kind = DCPI_IMAGE_UNKNOWN, .platform = (char *)"h",
				  .text_start = 0x7f0000000000, .pid = 77 };
	char n1[256], n2[256];

	b.build_id[1] = 3;
	dcpi_db_profile_name(&a, n1, sizeof(n1));
	dcpi_db_profile_name(&b, n2, sizeof(n2));
	T_OK(!strncmp(n1, "libc.so.6-", 10) && strstr(n1, ".prof"), "image name: %s", n1);
	T_OK(strcmp(n1, n2) != 0, "a rebuilt image gets another file: %s vs %s", n1, n2);
	a.pid = 1234;
	dcpi_db_profile_name(&a, n2, sizeof(n2));
	T_OK(strstr(n2, "_h1234.prof") != NULL, "per-process name: %s", n2);
	dcpi_db_profile_name(&k, n1, sizeof(n1));
	T_OK(!strncmp(n1, "kernel.kallsyms-", 16), "kernel name: %s", n1);
	dcpi_db_profile_name(&u, n1, sizeof(n1));
	T_STREQ(n1, "h77@0x7f0000000000.prof", "-unknown region name");
	u.path = (char *)"[unknown]";
	u.pid = -1;
	dcpi_db_profile_name(&u, n1, sizeof(n1));
	T_STREQ(n1, "unknown@h.prof", "shared unknown name");
}

/* A profile of image path with build-id byte id, one sample, into
 * DB/EPOCH/HOST. */
static void put_profile(const char *db, const char *epoch, const char *host, uint8_t id)
{
	char dir[512];
	uint64_t off = 0x1000, cnt = 1;
	struct dcpi_profile p;
	struct dcpi_profile_event ev = { (char *)"cycles", 1000, 1, 1000000 };

	snprintf(dir, sizeof(dir), "%s/%s/%s", db, epoch, host);
	dcpi_db_init(dir, 0700);
	dcpi_profile_init(&p);
	p.path = (char *)"/usr/bin/prog";
	p.platform = (char *)host;
	p.epoch = (char *)epoch;
	memset(p.build_id, id, 20);
	p.build_id_len = 20;
	p.nevents = 1;
	p.events[0] = ev;
	p.nrows = 1;
	p.offsets = &off;
	p.counts = &cnt;
	if (dcpi_db_merge_profile(dir, &p, 0600))
		printf("# merge: %s\n", dcpi_errmsg());
}

/* A cache entry for build-id byte id, last modified at mtime. */
static void put_cache(const char *db, uint8_t id, time_t mtime, const char *suffix)
{
	char path[512], hex[41];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

	for (int i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", id);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", db, hex);
	dcpi_db_init(path, 0700);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", db, hex, hex + 2, suffix);
	write_text(path, "\177ELF");
	utimensat(AT_FDCWD, path, ts, 0);
}

static int exists(const char *db, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", db, rel);
	return access(path, F_OK) == 0;
}

/* -gc 7 on epochs that began 30, 20, 10, 5, 2 and 1 days ago: those that
 * ended more than 7 days ago go (the 30- and 20-day ones: the next began
 * 20 and 10 days ago), the 10-day one stays (it ended 5 days ago); cache
 * entries of removed epochs' images go when old, a recent one stays. */
static void test_gc(void)
{
	static const int ago[] = { 30, 20, 10, 5, 2, 1 };
	time_t now = 1795000000;
	char db[128], names[6][DCPI_EPOCH_NAME_MAX];
	struct dcpi_db_gc g;
	uint64_t bytes = 0;
	size_t nepochs = 0;

	snprintf(db, sizeof(db), "%s/gcdb", tmp);
	dcpi_db_init(db, 0700);
	for (int i = 0; i < 6; i++) {
		dcpi_db_epoch_create(db, now - ago[i] * 86400, 0700, names[i]);
		put_profile(db, names[i], "h1", (uint8_t)(0x10 + i));
	}
	put_profile(db, names[0], "h2", 0x99);           /* another host's: stays */
	for (int i = 0; i < 6; i++)
		put_cache(db, (uint8_t)(0x10 + i), now - 40 * 86400, "");
	put_cache(db, 0x10, now - 40 * 86400, ".debug");
	put_cache(db, 0x77, now - 86400, "");            /* unreferenced, but recent */
	put_cache(db, 0x78, now - 40 * 86400, "");       /* unreferenced and old */

	T_EQ(dcpi_db_gc(db, "h1", "h1", names[5], 7, 3, now, &g), 0, "gc runs");
	T_EQ(g.epochs_removed, 2, "two epochs removed (30 and 20 days)");
	T_OK(!exists(db, names[1]) && exists(db, names[2]) && exists(db, names[5]),
	     "the 20-day epoch is gone, the 10-day one (ended 5 days ago) and the latest stay");
	T_OK(exists(db, names[0]), "the 30-day epoch stays while host h2's files are in it");
	T_EQ(g.cache_removed, 4, "cache: 0x10 and its .debug, 0x11, 0x78 removed");
	T_OK(!exists(db, ".build-id/10/10101010101010101010101010101010101010") &&
	     !exists(db, ".build-id/10/10101010101010101010101010101010101010.debug") &&
	     exists(db, ".build-id/12/12121212121212121212121212121212121212") &&
	     exists(db, ".build-id/77/77777777777777777777777777777777777777") &&
	     !exists(db, ".build-id/78/78787878787878787878787878787878787878"),
	     "kept epochs' images and a recent entry stay; the rest go");
	T_EQ(dcpi_db_gc(db, "h2", "h2", names[5], 7, 3, now, &g), 0, "gc as host h2");
	T_OK(!exists(db, names[0]), "h2's gc removes its own files, and the emptied epoch");
	T_EQ(dcpi_db_usage(db, &bytes, &nepochs), 0, "usage");
	T_OK(nepochs == 4 && bytes > 0, "4 epochs, %llu bytes", (unsigned long long)bytes);

	/* -gc 1 with 3 kept: the latest three stay however old */
	T_EQ(dcpi_db_gc(db, "h1", "h1", NULL, 1, 3, now + 400 * 86400, &g), 0, "gc a year later");
	T_OK(g.epochs_removed == 1 && exists(db, names[3]) && exists(db, names[5]),
	     "only the 10-day epoch goes: the 3 latest stay (%zu removed)", g.epochs_removed);
}

/* DB/hosts: each line counted (empty ones too) and a NUL byte refused,
 * not read as the end of the file. */
static void test_hosts(void)
{
	static const char good[] = "# HOST PLATFORM\n\nweb1 web\nweb2 web # pooled\n";
	static const char nul[] = "web1 web\n\nweb2\0 x\nweb3 web\n";
	char db[128], path[160], plat[DCPI_HOST_MAX];
	FILE *f;
	int err;

	snprintf(db, sizeof(db), "%s/hostsdb", tmp);
	dcpi_db_init(db, 0700);
	snprintf(path, sizeof(path), "%s/hosts", db);
	T_EQ(dcpi_db_platform(db, "web1", plat, sizeof(plat)), 0, "no hosts file: fine");
	T_STREQ(plat, "web1", "and a host is its own platform");
	write_text(path, good);
	T_OK(dcpi_db_platform(db, "web2", plat, sizeof(plat)) == 0 && !strcmp(plat, "web"),
	     "web2 writes under web (%s)", plat);
	T_OK(dcpi_db_platform(db, "db1", plat, sizeof(plat)) == 0 && !strcmp(plat, "db1"),
	     "a host not listed is its own platform");
	write_text(path, "web1 web\n\nweb2 a/b\n");
	err = dcpi_db_platform(db, "web2", plat, sizeof(plat));
	T_EQ(err, -EBADMSG, "a platform with '/' refused");
	T_OK(err && strstr(dcpi_errmsg(), "/hosts:3: want 'HOST PLATFORM'"),
	     "the line is counted with the empty one before it: %s", err ? dcpi_errmsg() : "");
	if ((f = fopen(path, "w"))) {
		fwrite(nul, 1, sizeof(nul) - 1, f);
		fclose(f);
	}
	err = dcpi_db_platform(db, "web3", plat, sizeof(plat));
	T_EQ(err, -EBADMSG, "a NUL byte refused (it cut the file: web3 was never read)");
	T_OK(err && strstr(dcpi_errmsg(), "/hosts:3: a NUL byte"),
	     "the file and line named: %s", err ? dcpi_errmsg() : "");
	T_STREQ(plat, "web3", "and the host is left its own name");
}

/* -gc through a symbolic link: another host's root, on a shared
 * database, replaces host h1's platform directory of an old epoch (and a
 * .build-id fan-out directory) with links to a directory on our local
 * disk.  Nothing there is deleted; the platform link is named. */
static void test_gc_symlink(void)
{
	time_t now = 1795000000;
	char db[128], names[5][DCPI_EPOCH_NAME_MAX], outside[160], path[512], link[512];
	struct timespec old[2] = { { now - 40 * 86400, 0 }, { now - 40 * 86400, 0 } };
	struct dcpi_db_gc g;
	int err;

	snprintf(db, sizeof(db), "%s/gclinkdb", tmp);
	snprintf(outside, sizeof(outside), "%s/local-disk", tmp);
	dcpi_db_init(db, 0700);
	dcpi_db_init(outside, 0700);
	snprintf(path, sizeof(path), "%s/precious", outside);
	write_text(path, "data");
	snprintf(path, sizeof(path), "%s/3131313131313131313131313131313131313131", outside);
	write_text(path, "\177ELF");
	utimensat(AT_FDCWD, path, old, 0); /* old enough to go */
	for (int i = 0; i < 5; i++)
		dcpi_db_epoch_create(db, now - (40 - i) * 86400, 0700, names[i]);
	snprintf(path, sizeof(path), "%s/%s", db, names[0]);
	mkdir(path, 0700);
	snprintf(link, sizeof(link), "%s/%s/h1", db, names[0]);
	T_EQ(symlink(outside, link), 0, "h1's platform directory of the oldest epoch is a link out");
	snprintf(path, sizeof(path), "%s/.build-id", db);
	mkdir(path, 0700);
	snprintf(link, sizeof(link), "%s/.build-id/31", db);
	T_EQ(symlink(outside, link), 0, "and .build-id/31 too");
	err = dcpi_db_gc(db, "h1", "h1", NULL, 7, 1, now, &g);
	T_EQ(err, -ELOOP, "gc refuses the link");
	T_OK(err && strstr(dcpi_errmsg(), "/h1: a symbolic link: refusing to delete through it"),
	     "and names it: %s", err ? dcpi_errmsg() : "(no error)");
	snprintf(path, sizeof(path), "%s/precious", outside);
	T_OK(access(path, F_OK) == 0, "the file the platform link leads to is still there");
	snprintf(path, sizeof(path), "%s/3131313131313131313131313131313131313131", outside);
	T_OK(access(path, F_OK) == 0, "so is the one the .build-id link leads to");
	/* the cache pass, on its own: the link to the local disk is skipped */
	snprintf(link, sizeof(link), "%s/%s/h1", db, names[0]);
	unlink(link);
	T_EQ(dcpi_db_gc(db, "h1", "h1", NULL, 7, 1, now, &g), 0, "gc without the platform link");
	T_OK(access(path, F_OK) == 0, "the cache link's target survives it");
}

int main(void)
{
	char cmd[96];

	snprintf(tmp, sizeof(tmp), "/tmp/dcpi-test-db.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	test_epochs();
	test_lock();
	test_stats();
	test_snapshot();
	test_snapshot_prune();
	test_filenames();
	test_gc();
	test_gc_symlink();
	test_hosts();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		printf("# could not remove %s\n", tmp);
	return t_done();
}
