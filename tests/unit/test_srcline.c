/* Source lines against binutils: fixtures are built here with cc -g -O2;
 * every byte of the fixtures' functions is looked up and compared with
 * `addr2line -a -i -f` (file basename, line, and the whole inline chain).
 * Marked lines are found with grep, never hard-coded.  Also: a separate
 * debug file answers like the image, source search with -remap and -I,
 * and corrupted DWARF never crashes (this test runs under ASan too). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/source.h"
#include "dcpi/srcline.h"
#include "fixture.h"
#include "tap.h"

#define MAXA 8192   /* addresses compared per function */
#define MAXL 8      /* inline levels parsed from addr2line */

/* What addr2line -a -i -f says about one address. */
struct a2l {
	uint64_t addr;
	int n;
	char fn[MAXL][128];
	char file[MAXL][128];     /* basename: what is compared */
	unsigned line[MAXL];
};

static struct a2l truth[MAXA];

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Line number of the first line of the fixture containing mark. */
static void a2l_pair(struct a2l *t, const char *fn, char *loc)
{
	char *colon = strrchr(loc, ':');

	if (t->n >= MAXL || !colon)
		return;
	*colon = '\0';
	snprintf(t->fn[t->n], sizeof(t->fn[0]), "%.127s", fn);
	snprintf(t->file[t->n], sizeof(t->file[0]), "%.127s", base(loc));
	t->line[t->n] = (unsigned)strtoul(colon + 1, NULL, 10);
	t->n++;
}

/* addr2line for every address in [lo, hi), one process. */
static int run_a2l(const char *bin, uint64_t lo, uint64_t hi)
{
	char *cmd, fn[512], loc[PATH_MAX + 64];
	size_t len = (size_t)(hi - lo) * 20 + PATH_MAX + 64, pos;
	uint64_t a;
	int n = -1;
	FILE *p;

	cmd = malloc(len);
	if (!cmd || hi - lo > MAXA)
		goto out;
	pos = (size_t)snprintf(cmd, len, "addr2line -a -i -f -e '%s'", bin);
	for (a = lo; a < hi; a++)
		pos += (size_t)snprintf(cmd + pos, len - pos, " 0x%" PRIx64, a);
	p = popen(cmd, "r");
	while (p && fgets(fn, sizeof(fn), p)) {
		fn[strcspn(fn, "\n")] = '\0';
		if (!strncmp(fn, "0x", 2) && n + 1 < MAXA) {
			memset(&truth[++n], 0, sizeof(truth[0]));
			truth[n].addr = strtoull(fn, NULL, 16);
		} else if (n >= 0 && fgets(loc, sizeof(loc), p)) {
			loc[strcspn(loc, " \n")] = '\0';   /* drop " (discriminator N)" */
			a2l_pair(&truth[n], fn, loc);
		}
	}
	if (p)
		pclose(p);
	n++;
out:
	free(cmd);
	return n;
}

/* 1 when our answer is addr2line's, line and inline chain alike. */
static int agrees(int err, const struct dcpi_srcloc *l, const struct a2l *t)
{
	size_t k;

	if (t->n == 0 || !strcmp(t->file[0], "??") || t->line[0] == 0)
		return err != 0 || l->line == 0;
	if (err || strcmp(base(l->file), base(t->file[0])) || l->line != t->line[0])
		return 0;
	if ((int)l->ninline != t->n - 1 || strcmp(l->outer, t->fn[t->n - 1]))
		return 0;
	for (k = 0; k < l->ninline; k++)
		if (strcmp(l->inl[k].callee, t->fn[k]) || l->inl[k].call_line != t->line[k + 1] ||
		    strcmp(base(l->inl[k].call_file), base(t->file[k + 1])))
			return 0;
	return 1;
}

static void print_loc(const char *what, uint64_t a, int err, const struct dcpi_srcloc *l,
		      const struct a2l *t)
{
	printf("# %s 0x%" PRIx64 ": ours %s:%u (%zu inline, outer %s, err %d), addr2line "
	       "%s:%u (%d levels, %s)\n", what, a, l->file, l->line, l->ninline, l->outer, err,
	       t->n ? t->file[0] : "-", t->n ? t->line[0] : 0, t->n, t->n ? t->fn[t->n - 1] : "-");
}

/* Every byte of fn: lookup == addr2line.  Returns the addresses compared. */
static int compare_fn(struct dcpi_srclines *s, const char *bin, const char *fn)
{
	uint64_t lo = 0, sz = 0;
	int i, n, agree = 0, shown = 0;

	if (fx_nm("nm", bin, fn, &lo, &sz) || !sz) {
		T_OK(0, "nm finds %s in %s", fn, bin);
		return 0;
	}
	n = run_a2l(bin, lo, lo + sz);
	T_EQ(n, (int)sz, "addr2line answered for every byte of %s", fn);
	for (i = 0; i < n; i++) {
		struct dcpi_srcloc l;
		int err = dcpi_srcline_lookup(s, truth[i].addr, &l);

		if (agrees(err, &l, &truth[i]))
			agree++;
		else if (shown++ < 10)
			print_loc(fn, truth[i].addr, err, &l, &truth[i]);
	}
	T_OK(n > 0 && agree == n, "%s: %d of %d addresses agree with addr2line -i", fn, agree, n);
	return n;
}

/* Rows of the range walk: in order, inside the range, and the last row at
 * each address is what a lookup of that address uses. */
struct walk {
	struct dcpi_srclines *s;
	uint64_t lo, hi, prev;
	unsigned want_line;
	int rows, bad, hits, hit_outer_ok;
	const char *outer;
};

static int walk_row(const struct dcpi_srcrow *r, void *arg)
{
	struct walk *w = arg;
	struct dcpi_srcloc l;

	w->rows++;
	if (r->vaddr < w->lo || r->vaddr >= w->hi || r->vaddr < w->prev || !r->file)
		w->bad++;
	w->prev = r->vaddr;
	if (r->line == w->want_line && !strcmp(base(r->file), "srcline_hot.c")) {
		w->hits++;
		if (!dcpi_srcline_lookup(w->s, r->vaddr, &l) && !strcmp(l.outer, w->outer))
			w->hit_outer_ok++;
	}
	return 0;
}

static void test_hot(void)
{
	const char *bin = fx_path("hot"), *dbg = fx_path("hot.debug"), *nodbg = fx_path("hot.nodbg");
	unsigned hot = fx_marked_line("srcline_hot.c", "HOTLOOP");
	struct dcpi_srclines *s = NULL, *sd = NULL;
	struct walk w = { 0 };
	uint64_t lo = 0, sz = 0, a;
	int err, same = 0, total = 0;

	T_OK(hot > 0, "the HOTLOOP mark is on line %u", hot);
	if (fx_sh("cc -g -O2 -o '%s' '%s/tests/workloads/srcline_hot.c'", bin, fx_root)) {
		T_OK(0, "fixture compiles");
		return;
	}
	err = dcpi_srcline_open(bin, &s);
	T_EQ(err, 0, "opens the fixture's DWARF (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	compare_fn(s, bin, "main");
	compare_fn(s, bin, "hot_loop");
	compare_fn(s, bin, "pick");

	fx_nm("nm", bin, "hot_loop", &lo, &sz);
	w = (struct walk){ s, lo, lo + sz, 0, hot, 0, 0, 0, 0, "hot_loop" };
	T_EQ(dcpi_srcline_range(s, lo, lo + sz, walk_row, &w), 0, "range walk of hot_loop");
	T_OK(w.rows > 0 && w.bad == 0, "%d rows, in order and inside the range", w.rows);
	T_OK(w.hits > 0 && w.hit_outer_ok == w.hits,
	     "the HOTLOOP line has %d rows in hot_loop, each looked up in hot_loop", w.hits);
	T_EQ(dcpi_srcline_range(s, lo + sz, lo, walk_row, &w), -EINVAL, "lo > hi is refused");

	if (fx_sh("objcopy --only-keep-debug '%s' '%s' && strip -g -o '%s' '%s'", bin, dbg, nodbg,
		  bin)) {
		T_OK(0, "objcopy/strip");
		goto out;
	}
	err = dcpi_srcline_open(dbg, &sd);
	T_EQ(err, 0, "the separate debug file opens (%s)", err ? dcpi_errmsg() : "ok");
	fx_nm("nm", bin, "main", &lo, &sz);
	for (a = lo; sd && a < lo + sz; a++) {
		struct dcpi_srcloc x, y;
		int e1 = dcpi_srcline_lookup(s, a, &x), e2 = dcpi_srcline_lookup(sd, a, &y);

		total++;
		same += e1 == e2 && !strcmp(x.file, y.file) && x.line == y.line &&
			x.column == y.column && x.ninline == y.ninline && !strcmp(x.outer, y.outer);
	}
	T_OK(total > 0 && same == total, "debug file answers as the image for %d of %d bytes of "
	     "main", same, total);
	dcpi_srcline_close(sd);
	sd = NULL;
	T_EQ(dcpi_srcline_open(nodbg, &sd), -ENODATA, "a stripped image: -ENODATA (%s)",
	     dcpi_errmsg());
out:
	dcpi_srcline_close(s);
}

static void check_chain(struct dcpi_srclines *s, const char *bin, const char *fn,
			unsigned body, const char *callee, unsigned call_line)
{
	uint64_t lo = 0, sz = 0, a;
	struct dcpi_srcloc l;
	int found = 0;

	fx_nm("nm", bin, fn, &lo, &sz);
	for (a = lo; a < lo + sz && !found; a++)
		found = !dcpi_srcline_lookup(s, a, &l) && l.line == body;
	T_OK(found, "%s has code on the inlined body line %u", fn, body);
	if (!found)
		return;
	T_OK(l.ninline >= 1 && !strcmp(l.inl[0].callee, callee) && l.inl[0].call_line == call_line
	     && !strcmp(base(l.inl[0].call_file), "srcline_inline.c"),
	     "%s: %s inlined at line %u (got %s at %u)", fn, callee, call_line,
	     l.ninline ? l.inl[0].callee : "-", l.ninline ? l.inl[0].call_line : 0);
	T_STREQ(l.outer, fn, "%s: the outer function", fn);
	T_STREQ(l.function, callee, "%s: the innermost function is the callee", fn);
}

static void test_inline(void)
{
	const char *bin = fx_path("inl");
	unsigned body = fx_marked_line("srcline_inline.c", "INLBODY");
	unsigned nest = fx_marked_line("srcline_inline.c", "NESTBODY");
	struct dcpi_srclines *s = NULL;
	uint64_t lo = 0, sz = 0, a;
	struct dcpi_srcloc l;
	int err, found = 0;

	if (fx_sh("cc -g -O2 -o '%s' '%s/tests/workloads/srcline_inline.c'", bin, fx_root)) {
		T_OK(0, "inline fixture compiles");
		return;
	}
	err = dcpi_srcline_open(bin, &s);
	T_EQ(err, 0, "opens the inline fixture (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	compare_fn(s, bin, "first");
	compare_fn(s, bin, "second");
	compare_fn(s, bin, "main");
	check_chain(s, bin, "first", body, "square_add", fx_marked_line("srcline_inline.c", "CALLSITE1"));
	check_chain(s, bin, "second", body, "square_add", fx_marked_line("srcline_inline.c", "CALLSITE2"));
	fx_nm("nm", bin, "main", &lo, &sz);
	for (a = lo; a < lo + sz && !found; a++)
		found = !dcpi_srcline_lookup(s, a, &l) && l.line == nest;
	T_OK(found && l.ninline == 2 && !strcmp(l.inl[0].callee, "mix") &&
	     l.inl[0].call_line == fx_marked_line("srcline_inline.c", "NESTCALL") &&
	     !strcmp(l.inl[1].callee, "scramble") &&
	     l.inl[1].call_line == fx_marked_line("srcline_inline.c", "NESTOUTER") &&
	     !strcmp(l.outer, "main"), "two levels: mix in scramble in main");
	T_EQ(dcpi_srcline_lookup(s, 0xfffffffff000ull, &l), -ENOENT, "an address without debug "
	     "info: -ENOENT");
	T_STREQ(l.file, "??", "... and the file reads ??");
	dcpi_srcline_close(s);
}

/* ---- source files ------------------------------------------------------- */

static void test_reader(void)
{
	const char *f = fx_path("lines.txt"), *big = fx_path("big.c"), *fifo = fx_path("fifo.c");
	struct dcpi_source *src = NULL;
	const char *ln;
	size_t len = 99;
	FILE *fp = fopen(f, "w");
	int i;

	if (!fp)
		return;
	fputs("a\r\nbb\n\n", fp);
	for (i = 0; i < 100000; i++)
		fputc('x', fp);
	fputs("\nlast", fp);
	fclose(fp);
	T_EQ(dcpi_source_open(f, NULL, &src), 0, "reads a file by its path");
	if (!src)
		return;
	T_EQ(dcpi_source_nlines(src), 5, "five lines, the last without a newline");
	ln = dcpi_source_line(src, 1, &len);
	T_OK(ln && !strcmp(ln, "a") && len == 1, "a CRLF line loses its \\r");
	T_STREQ(dcpi_source_line(src, 2, NULL), "bb", "line 2");
	T_OK((ln = dcpi_source_line(src, 3, &len)) && len == 0 && !*ln, "an empty line");
	T_OK((ln = dcpi_source_line(src, 4, &len)) && len == 100000 && strlen(ln) == 100000,
	     "a 100000-byte line whole");
	T_STREQ(dcpi_source_line(src, 5, NULL), "last", "the unterminated last line");
	T_OK(!dcpi_source_line(src, 6, NULL) && !dcpi_source_line(src, 0, NULL),
	     "lines 0 and nlines+1 are NULL");
	dcpi_source_close(src);
	src = NULL;
	/* a last line ended by "\n" (as most files end) loses it too */
	if ((fp = fopen(f, "w"))) {
		fputs("{\n}\n", fp);
		fclose(fp);
	}
	T_EQ(dcpi_source_open(f, NULL, &src), 0, "a file ending in a newline");
	T_OK(src && dcpi_source_nlines(src) == 2 && (ln = dcpi_source_line(src, 2, &len)) &&
	     !strcmp(ln, "}") && len == 1, "its last line is \"}\", without the \\n");
	dcpi_source_close(src);
	src = NULL;
	fx_sh("truncate -s %zu '%s'", DCPI_SOURCE_MAX_SIZE + 1, big);
	T_EQ(dcpi_source_open(big, NULL, &src), -EFBIG, "a file over the cap: -EFBIG");
	fx_sh("mkfifo '%s'", fifo);
	T_EQ(dcpi_source_open(fifo, NULL, &src), -ENOENT, "a FIFO is not read (nor blocked on)");
	T_EQ(dcpi_source_open(fx_tmp, NULL, &src), -ENOENT, "a directory is not a source");
}

static void test_remap_parse(void)
{
	char a[] = "/old/dir=/new", b[] = "nothing", c[] = "=x";
	struct dcpi_remap r;

	T_OK(dcpi_source_remap_parse(a, &r) == 0 && !strcmp(r.from, "/old/dir") && !strcmp(r.to, "/new"),
	     "OLD=NEW splits");
	T_EQ(dcpi_source_remap_parse(b, &r), -EINVAL, "no '=': -EINVAL");
	T_EQ(dcpi_source_remap_parse(c, &r), -EINVAL, "empty OLD: -EINVAL");
}

/* Open name with opts and check the HOTLOOP line reads back. */
static void found_via(const char *what, const char *name, const struct dcpi_source_opts *o,
		      unsigned hot, const char *want_path)
{
	struct dcpi_source *src = NULL;
	const char *ln;
	int err = dcpi_source_open(name, o, &src);

	T_EQ(err, 0, "%s finds the moved source (%s)", what, err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	ln = dcpi_source_line(src, hot, NULL);
	T_OK(ln && strstr(ln, "HOTLOOP"), "%s: line %u is the HOTLOOP line", what, hot);
	T_STREQ(dcpi_source_path(src), want_path, "%s: the path read", what);
	dcpi_source_close(src);
}

/* Build in tmp/build/sub from a relative name, then move the tree. */
static void test_moved(void)
{
	unsigned hot = fx_marked_line("srcline_hot.c", "HOTLOOP");
	char built[PATH_MAX], from[200], to[200], dir1[PATH_MAX], dir2[PATH_MAX];
	char want1[PATH_MAX], want2[PATH_MAX];
	struct dcpi_srclines *s = NULL;
	struct dcpi_srcloc l;
	struct dcpi_source *src = NULL;
	struct dcpi_remap rm[2];
	const char *dirs[2];
	struct dcpi_source_opts o = { .remaps = rm, .nremaps = 2 };
	uint64_t lo = 0, sz = 0;
	int err;

	snprintf(from, sizeof(from), "%s/build", fx_tmp);
	snprintf(to, sizeof(to), "%s/moved", fx_tmp);
	snprintf(built, sizeof(built), "%s/sub/srcline_hot.c", from);
	if (fx_sh("mkdir -p '%s/sub' && cp '%s/tests/workloads/srcline_hot.c' '%s/sub/' && "
		  "cd '%s' && cc -g -gdwarf-4 -O2 -o ../moved.bin sub/srcline_hot.c && "
		  "mv '%s' '%s'", from, fx_root, from, from, from, to)) {
		T_OK(0, "relative-path fixture builds and moves");
		return;
	}
	err = dcpi_srcline_open(fx_path("moved.bin"), &s);
	fx_nm("nm", fx_path("moved.bin"), "hot_loop", &lo, &sz);
	while (!err && sz && !(err = dcpi_srcline_lookup(s, lo, &l)) && l.line != hot && --sz)
		lo++;
	T_OK(!err && l.line == hot, "the HOTLOOP address of the moved build");
	T_STREQ(err ? NULL : l.file, built, "a relative name is joined with the comp dir");
	dcpi_srcline_close(s);

	rm[0] = (struct dcpi_remap){ "/no/such/prefix", "/elsewhere" };
	rm[1] = (struct dcpi_remap){ from, to };
	snprintf(want1, sizeof(want1), "%s/sub/srcline_hot.c", to);
	found_via("-remap", built, &o, hot, want1);
	dirs[0] = fx_path("nowhere");
	dirs[1] = to;
	o = (struct dcpi_source_opts){ .dirs = dirs, .ndirs = 2 };
	found_via("-I DIR (DIR/relative-path)", built, &o, hot, want1);
	snprintf(dir2, sizeof(dir2), "%s/sub", to);
	dirs[1] = dir2;
	snprintf(want2, sizeof(want2), "%s/sub/srcline_hot.c", to);
	found_via("-I DIR (DIR/basename)", built, &o, hot, want2);

	snprintf(dir1, sizeof(dir1), "%s/nowhere/sub/srcline_hot.c", fx_tmp);
	o = (struct dcpi_source_opts){ .dirs = dirs, .ndirs = 1, .remaps = rm, .nremaps = 1 };
	err = dcpi_source_open(built, &o, &src);
	T_EQ(err, -ENOENT, "a missing source: -ENOENT");
	T_OK(strstr(dcpi_errmsg(), built) && strstr(dcpi_errmsg(), dir1) &&
	     strstr(dcpi_errmsg(), "nowhere/srcline_hot.c"),
	     "the message names the places tried: %s", dcpi_errmsg());
	T_EQ(dcpi_source_open(built, NULL, &src), -ENOENT, "no options: only the path itself");
}

static void test_sources(void)
{
	test_reader();
	test_remap_parse();
	test_moved();
}

/* ---- corrupt DWARF ------------------------------------------------------ */

/* File offset and size of a section, from readelf -S -W. */
static int section_of(const char *bin, const char *name, long *off, long *size)
{
	char cmd[PATH_MAX + 32], line[512], n[128], type[64];
	unsigned long long a, o, s;
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "readelf -S -W '%s'", bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');

		if (b && sscanf(b + 1, "%127s %63s %llx %llx %llx", n, type, &a, &o, &s) == 5 &&
		    !strcmp(n, name)) {
			*off = (long)o;
			*size = (long)s;
			found = 1;
		}
	}
	if (p)
		pclose(p);
	return found ? 0 : -1;
}

/* A copy of bin with the section's bytes mangled by one of the modes. */
static int mangle(const char *bin, const char *out, long off, long size, int mode)
{
	FILE *in = fopen(bin, "rb"), *o = fopen(out, "wb");
	unsigned seed = 12345u + (unsigned)mode;
	long pos = 0;
	int c, rc = -1;

	if (!in || !o)
		goto done;
	while ((c = fgetc(in)) != EOF) {
		long k = pos++ - off;

		if (k >= 0 && k < size) {
			seed = seed * 1103515245u + 12345u;
			if (mode == 0 && k < 4)
				c = 0xff;                    /* 64-bit DWARF marker, then garbage */
			else if (mode == 1 && k < 48)
				c ^= 0xff;                   /* the whole header */
			else if (mode == 2 && k >= size / 2)
				c = 0xff;                    /* second half */
			else if (mode >= 3 && k >= 16 && (seed >> 16) % 8 == 0)
				c ^= 1 << ((seed >> 8) % 8); /* bit flips past the header */
		}
		fputc(c, o);
	}
	rc = 0;
done:
	if (in)
		fclose(in);
	if (o && fclose(o))
		rc = -1;
	return rc;
}

static int count_row(const struct dcpi_srcrow *r, void *arg)
{
	(void)r;
	++*(int *)arg;
	return 0;
}

/* Opens or fails cleanly; every answer is an error with a message or a
 * complete location.  Returns 1 when the answers differ from clean. */
static int probe(const char *what, const char *file, uint64_t lo, uint64_t hi, int *sane)
{
	struct dcpi_srclines *s = NULL;
	struct dcpi_srcloc l;
	uint64_t a;
	int err, rows = 0, changed = 0;

	err = dcpi_srcline_open(file, &s);
	if (err) {
		*sane &= dcpi_errmsg()[0] != '\0';
		printf("# %s: open: %s\n", what, dcpi_errmsg());
		return 1;
	}
	for (a = lo; a < hi; a++) {
		err = dcpi_srcline_lookup(s, a, &l);
		if (err)
			changed = 1;
		*sane &= err ? dcpi_errmsg()[0] != '\0' : l.file && l.function && l.outer;
	}
	err = dcpi_srcline_range(s, lo, hi, count_row, &rows);
	*sane &= err == 0 || dcpi_errmsg()[0] != '\0';
	changed |= err != 0;
	dcpi_srcline_close(s);
	return changed;
}

static void test_corrupt(void)
{
	static const char *const sect[2] = { ".debug_line", ".debug_info" };
	uint64_t lo = 0, sz = 0;
	int k, mode, sane = 1, affected = 0, tried = 0;
	struct dcpi_srclines *s = NULL;
	char bin[PATH_MAX];

	snprintf(bin, sizeof(bin), "%s", fx_path("hot"));   /* fx_path's buffers rotate */

	T_EQ(dcpi_srcline_open(fx_path("missing"), &s), -ENOENT, "a missing file: -ENOENT");
	T_EQ(dcpi_srcline_open(fx_path("lines.txt"), &s), -ENOEXEC, "a text file: -ENOEXEC");
	if (fx_nm("nm", bin, "main", &lo, &sz)) {
		T_OK(0, "nm main");
		return;
	}
	for (k = 0; k < 2; k++) {
		long off = 0, size = 0;

		if (section_of(bin, sect[k], &off, &size) || size <= 0) {
			T_OK(0, "readelf finds %s", sect[k]);
			continue;
		}
		for (mode = 0; mode < 6; mode++) {
			char name[64], what[64];

			snprintf(name, sizeof(name), "bad%d-%d", k, mode);
			snprintf(what, sizeof(what), "%s mode %d", sect[k], mode);
			if (mangle(bin, fx_path(name), off, size, mode))
				continue;
			tried++;
			affected += probe(what, fx_path(name), lo, lo + sz, &sane);
		}
	}
	T_EQ(tried, 12, "12 corrupted copies made");
	T_OK(sane, "every answer on corrupt DWARF is a clean error or a whole location");
	T_OK(affected > 0, "the corruption was seen (%d of %d copies)", affected, tried);
}

/* Another user's image: its DWARF may name only files that user can
 * read (owned by it, or world-readable); root's and the caller's images
 * read what the caller can. */
static void test_source_owner(void)
{
	uid_t me = geteuid(), other = me == 65534 ? 65533 : 65534;
	const char *f = fx_path("secret.c");
	struct dcpi_source_opts o = { .image_uid = other };
	struct dcpi_source *src = NULL;
	FILE *fp = fopen(f, "w");
	int err;

	if (!fp || fputs("the secret\n", fp) < 0 || fclose(fp) || chmod(f, 0600)) {
		T_OK(0, "write %s", f);
		return;
	}
	err = dcpi_source_open(f, &o, &src);
	T_EQ(err, -EACCES, "another user's image: a 0600 file of mine is not read");
	T_OK(!src && strstr(dcpi_errmsg(), "is not readable by the image's owner uid"),
	     "and the message says why: %s", dcpi_errmsg());
	dcpi_source_close(src);
	src = NULL;
	o.dirs = (const char *const[]){ fx_tmp };
	o.ndirs = 1;
	T_EQ(dcpi_source_open("/elsewhere/secret.c", &o, &src), -EACCES,
	     "nor when found through -I");
	dcpi_source_close(src);
	src = NULL;
	chmod(f, 0644);
	err = dcpi_source_open(f, &o, &src);
	T_OK(!err && src && !strcmp(dcpi_source_line(src, 1, NULL), "the secret"),
	     "a world-readable file is read");
	dcpi_source_close(src);
	src = NULL;
	chmod(f, 0600);
	o.dirs = NULL;
	o.ndirs = 0;
	o.image_uid = DCPI_UID_UNKNOWN;
	err = dcpi_source_open(f, &o, &src);
	T_OK(err == -EACCES && !src && strstr(dcpi_errmsg(), "has no known owner"),
	     "an image of no known owner (the image cache's copy): a 0600 file is not read (%s)",
	     dcpi_errmsg());
	dcpi_source_close(src);
	src = NULL;
	for (int k = 0; k < 3; k++) {
		o.image_uid = k == 0 ? 0 : k == 1 ? me : (uid_t)-1;
		err = dcpi_source_open(f, &o, &src);
		T_OK(!err && src, "image owned by %s: read as before",
		     k == 0 ? "root" : k == 1 ? "the caller" : "nobody known");
		dcpi_source_close(src);
		src = NULL;
	}
	if (me != 0) {
		T_SKIP("not root: cannot give the file to uid %lu", (unsigned long)other);
		return;
	}
	o.image_uid = other;
	if (chown(f, other, (gid_t)-1)) {
		T_OK(0, "chown %s", f);
		return;
	}
	err = dcpi_source_open(f, &o, &src);
	T_OK(!err && src, "a 0600 file of the image's owner is read");
	dcpi_source_close(src);
}

int main(void)
{
	if (fx_setup("srcline"))
		return 1;
	test_hot();
	test_inline();
	test_sources();
	test_corrupt();
	test_source_owner();
	fx_cleanup();
	return t_done();
}
