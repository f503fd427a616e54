/* The symbol layer against fixtures built here with cc/c++ in a temp dir.
 * Truth comes from outside libdcpi: the fixture prints its own functions'
 * file offsets (from its runtime addresses and /proc/self/maps), nm -S
 * gives sizes and addresses, readelf -n gives build-ids. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/demangle.h"
#include "dcpi/error.h"
#include "dcpi/snapshot.h"
#include "dcpi/source.h"
#include "dcpi/symtab.h"
#include "fixture.h"
#include "tap.h"

static char tmp[128];
static const char *root;

struct fx {
	char name[64];
	uint64_t off;
};
#define NFX 5

static const char *tpath(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int k;
	char *b = bufs[k++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", tmp, name);
	return b;
}

/* Run the fixture; it prints "name 0xOFFSET" lines. */
static int run_fixture(const char *bin, struct fx *fx)
{
	char line[256];
	FILE *p = popen(bin, "r");
	int n = 0;

	if (!p)
		return -1;
	while (n < NFX && fgets(line, sizeof(line), p)) {
		unsigned long long off;

		if (sscanf(line, "%63s 0x%llx", fx[n].name, &off) == 2)
			fx[n++].off = off;
	}
	pclose(p);
	return n;
}

/* nm -S: address and size of name (size 0 when nm gives none). */
static int nm_sym(const char *bin, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[PATH_MAX + 16], line[512], n[256], t[8];
	unsigned long long a, s;
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		s = 0;
		if (sscanf(line, "%llx %llx %7s %255s", &a, &s, t, n) != 4 &&
		    sscanf(line, "%llx %7s %255s", &a, t, n) != 3)
			continue;
		if (!strcmp(n, name)) {
			*addr = a;
			*size = s;
			found = 1;
		}
	}
	if (p)
		pclose(p);
	return found ? 0 : -1;
}

static int build_id_hex(const char *bin, char *hex, size_t len)
{
	char cmd[PATH_MAX + 32], line[512];
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");

		if (b && sscanf(b + 10, "%127s", hex) == 1 && strlen(hex) < len)
			found = 1;
	}
	if (p)
		pclose(p);
	return found ? 0 : -1;
}

static size_t hex2bin(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	while (hex[0] && hex[1] && sscanf(hex, "%2x", &v) == 1) {
		out[n++] = v;
		hex += 2;
	}
	return n;
}

static int compile(const char *out, const char *flags, const char *src)
{
	return fx_sh("cc -g %s -o '%s' '%s/tests/workloads/%s' 2>&1", flags, out, root, src);
}

/* Every fixture function is found by its profile offset, at nm's vaddr
 * with nm's size, and a byte inside it maps to it too. */
static void check_functions(const char *what, struct dcpi_symtab *st, const char *bin,
			    const struct fx *fx, int nfx)
{
	int i;

	T_EQ(nfx, NFX, "%s: fixture printed all its offsets", what);
	for (i = 0; i < nfx; i++) {
		const struct dcpi_sym *s = dcpi_symtab_lookup(st, fx[i].off);
		uint64_t a = 0, sz = 0, off = 0;
		int have = !nm_sym(bin, fx[i].name, &a, &sz);

		T_OK(s && !strcmp(s->name, fx[i].name), "%s: offset 0x%" PRIx64 " is %s (got %s)",
		     what, fx[i].off, fx[i].name, s ? s->name : "nothing");
		if (!s)
			continue;
		T_OK(have && s->vaddr == a, "%s: %s vaddr 0x%" PRIx64 " is nm's", what,
		     fx[i].name, s->vaddr);
		if (have && sz)
			T_EQ(s->size, sz, "%s: %s size is nm's", what, fx[i].name);
		else
			T_OK(s->size > 0, "%s: size-less %s extends to the next symbol", what,
			     fx[i].name);
		T_OK(!dcpi_symtab_vaddr2off(st, s->vaddr, &off) && off == fx[i].off,
		     "%s: %s vaddr maps back to its offset", what, fx[i].name);
		if (s->size > 1)
			T_OK(dcpi_symtab_lookup(st, fx[i].off + s->size - 1) == s,
			     "%s: last byte of %s is in it", what, fx[i].name);
	}
}

static void test_pie_and_nopie(void)
{
	static const char *flags[2] = { "-O1 -fPIE -pie", "-O1 -fno-pie -no-pie" };
	static const char *names[2] = { "pie", "nopie" };
	int k;

	for (k = 0; k < 2; k++) {
		const char *bin = tpath(names[k]);
		struct dcpi_symtab *st = NULL;
		struct fx fx[NFX];
		uint64_t a, sz, v = 0;
		const struct dcpi_sym *out[4];
		int nfx, err;

		if (compile(bin, flags[k], "symtab_fixture.c")) {
			T_OK(0, "%s: fixture compiles", names[k]);
			continue;
		}
		nfx = run_fixture(bin, fx);
		err = dcpi_symtab_open(bin, NULL, 0, NULL, &st);
		T_EQ(err, 0, "%s: opens (%s)", names[k], err ? dcpi_errmsg() : "ok");
		if (err)
			continue;
		T_EQ(dcpi_symtab_source(st), DCPI_SYMSRC_SYMTAB, "%s: symbols from .symtab", names[k]);
		T_EQ(dcpi_symtab_status(st), DCPI_SYMTAB_UNVERIFIED, "%s: no build-id given",
		     names[k]);
		check_functions(names[k], st, bin, fx, nfx);
		nm_sym(bin, "global_fn", &a, &sz);
		T_OK(!dcpi_symtab_off2vaddr(st, fx[1].off, &v) && v == a,
		     "%s: off2vaddr(0x%" PRIx64 ") = 0x%" PRIx64 ", nm says 0x%" PRIx64, names[k],
		     fx[1].off, v, a);
		if (k == 1)
			T_OK(v != fx[1].off, "nopie: vaddr differs from the file offset");
		T_EQ(dcpi_symtab_find(st, "weak_alias", out, 4), 1, "%s: alias found by name",
		     names[k]);
		T_OK(out[0]->is_alias && out[0]->vaddr == a,
		     "%s: alias is marked and at global_fn's address", names[k]);
		T_STREQ(dcpi_symtab_lookup(st, fx[1].off)->name, "global_fn",
			"%s: the global name is shown, not the weak alias", names[k]);
		dcpi_symtab_close(st);
	}
}

/* PLT stubs are named SYM@plt as objdump names them: a program built here
 * three ways (lazy .plt, IBT's .plt.sec with -z now, and stripped) and two
 * of the system's stripped programs.  Every "<X@plt>:" label objdump
 * prints is looked up; at least one each (they all call libc). */
static void test_plt(void)
{
	static const char *flags[] = { "-O1 -fno-pie -no-pie", "-O1 -fcf-protection=full -Wl,-z,now",
				       "-O1 -s" };
	const char *bins[5];
	char cmd[PATH_MAX + 64], line[512], name[256], tag[16];

	for (int k = 0; k < 3; k++) {
		snprintf(tag, sizeof(tag), "plt%d", k);
		bins[k] = strdup(tpath(tag));
		if (compile(bins[k], flags[k], "randloop.c"))
			T_OK(0, "%s: randloop compiles with %s", tag, flags[k]);
	}
	bins[3] = "/usr/bin/sort";
	bins[4] = "/bin/ls";
	for (int k = 0; k < 5; k++) {
		struct dcpi_symtab *st = NULL;
		unsigned long long a;
		int n = 0, bad = 0;
		FILE *p;

		if (dcpi_symtab_open(bins[k], NULL, 0, NULL, &st)) {
			T_OK(0, "%s opens: %s", bins[k], dcpi_errmsg());
			continue;
		}
		snprintf(cmd, sizeof(cmd), "objdump -d '%s'", bins[k]);
		p = popen(cmd, "r");
		while (p && fgets(line, sizeof(line), p)) {
			const struct dcpi_sym *sy;

			/* "X@plt-0x10" is objdump's label for the stubs' common head */
			if (sscanf(line, "%llx <%255[^>]>:", &a, name) != 2 || !strstr(name, "@plt") ||
			    strstr(name, "@plt-"))
				continue;
			n++;
			sy = dcpi_symtab_lookup_vaddr(st, a);
			if (!sy || strcmp(sy->name, name) || sy->vaddr != a) {
				if (bad++ < 3)
					printf("# %s: 0x%llx is %s, objdump says %s\n", bins[k], a,
					       sy ? sy->name : "(none)", name);
			}
		}
		if (p)
			pclose(p);
		T_OK(n > 0 && bad == 0, "%s: its %d PLT stubs named as objdump names them (%d differ)",
		     bins[k], n, bad);
		dcpi_symtab_close(st);
	}
	for (int k = 0; k < 3; k++)
		free((char *)bins[k]);
}

static void test_describe(void)
{
	const char *bin = tpath("nopie");
	struct dcpi_symtab *st = NULL;
	char buf[256], line[512];
	unsigned long long plt = 0;
	uint64_t off;
	FILE *p;

	if (dcpi_symtab_open(bin, NULL, 0, NULL, &st)) {
		T_OK(0, "describe: open");
		return;
	}
	dcpi_symtab_describe(st, 0, buf, sizeof(buf));
	/* offset 0 is the ELF header, mapped at the image base (0x400000 for a
	   non-PIE x86-64 link) and in no section */
	T_STREQ(buf, "[nopie@0x400000]", "describe: an offset outside sections, by address");
	snprintf(line, sizeof(line), "readelf -SW '%s'", bin);
	p = popen(line, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *s = strstr(line, " .plt ");

		if (s && sscanf(s + 6, "%*s %llx", &plt) == 1)
			break;
	}
	if (p)
		pclose(p);
	if (!plt || dcpi_symtab_vaddr2off(st, plt, &off)) {
		T_SKIP("no .plt in the fixture");
	} else {
		T_OK(dcpi_symtab_lookup(st, off) == NULL, "describe: .plt has no symbol");
		dcpi_symtab_describe(st, off, buf, sizeof(buf));
		snprintf(line, sizeof(line), "[nopie@0x%llx .plt]", plt);
		T_STREQ(buf, line, "describe names the section");
		T_STREQ(dcpi_symtab_section(st, off), ".plt", "section of a .plt offset");
	}
	dcpi_symtab_close(st);
}

/* Stripped image + separate debug file: build-id layout in
 * DCPI_DEBUG_PATH, and .gnu_debuglink next to the image. */
static void test_debug_files(void)
{
	const char *full = tpath("dbg-full");
	struct dcpi_symtab_opts opts = { .no_debuginfod = 1 };
	char hex[130], want[PATH_MAX];
	struct dcpi_symtab *st = NULL;
	struct fx fx[NFX];
	int nfx, err;

	if (compile(full, "-O1", "symtab_fixture.c") || build_id_hex(full, hex, sizeof(hex))) {
		T_OK(0, "debug: fixture with build-id");
		return;
	}
	nfx = run_fixture(full, fx);
	fx_sh("cd '%s' && objcopy --only-keep-debug dbg-full dbg-full.debug && "
	   "mkdir -p a b c/.build-id/%.2s && strip --strip-all -o a/prog dbg-full && "
	   "cp dbg-full.debug c/.build-id/%.2s/%s.debug && "
	   "objcopy --add-gnu-debuglink=dbg-full.debug dbg-full b/prog && strip --strip-all b/prog && "
	   "cp dbg-full.debug b/", tmp, hex, hex, hex + 2);

	err = dcpi_symtab_open(tpath("a/prog"), NULL, 0, NULL, &st);
	T_OK(!err && dcpi_symtab_source(st) == DCPI_SYMSRC_DYNSYM,
	     "stripped, no debug path: .dynsym only");
	{
		const struct dcpi_sym *s = err ? NULL : dcpi_symtab_lookup(st, fx[0].off);

		T_OK(s && !strncmp(s->name, "prog@0x", 7) && s->is_alias == 0,
		     "stripped: static_fn is named by address from .eh_frame (%s)",
		     s ? s->name : "unnamed");
	}
	T_OK(!err && strstr(dcpi_symtab_message(st), ".dynsym only"), "stripped: message says so");
	dcpi_symtab_close(st);

	snprintf(want, sizeof(want), "%s/nowhere::%s/c", tmp, tmp);
	setenv("DCPI_DEBUG_PATH", want, 1);
	err = dcpi_symtab_open(tpath("a/prog"), NULL, 0, NULL, &st);
	T_EQ(err, 0, "build-id layout: opens (%s)", err ? dcpi_errmsg() : "ok");
	if (!err) {
		snprintf(want, sizeof(want), "%s/c/.build-id/%.2s/%s.debug", tmp, hex, hex + 2);
		T_STREQ(dcpi_symtab_debug_file(st), want, "build-id layout: debug file found");
		T_STREQ(dcpi_symtab_image_file(st), tpath("a/prog"), "image file is the stripped one");
		check_functions("build-id layout", st, full, fx, nfx);
		dcpi_symtab_close(st);
	}
	unsetenv("DCPI_DEBUG_PATH");

	err = dcpi_symtab_open(tpath("b/prog"), NULL, 0, NULL, &st);
	T_EQ(err, 0, "debuglink: opens (%s)", err ? dcpi_errmsg() : "ok");
	if (!err) {
		T_STREQ(dcpi_symtab_debug_file(st), tpath("b/dbg-full.debug"),
			"debuglink: debug file next to the image");
		check_functions("debuglink", st, full, fx, nfx);
		dcpi_symtab_close(st);
	}
	/* A debug file that fails the CRC is not used. */
	fx_sh("cd '%s/b' && echo x >> dbg-full.debug", tmp);
	err = dcpi_symtab_open(tpath("b/prog"), NULL, 0, NULL, &st);
	T_OK(!err && dcpi_symtab_source(st) == DCPI_SYMSRC_DYNSYM,
	     "debuglink: CRC mismatch rejected");
	dcpi_symtab_close(st);
	/* ... but the same in .debug/ (the second place) is found. */
	fx_sh("cd '%s/b' && mkdir -p .debug && cp ../dbg-full.debug .debug/", tmp);
	err = dcpi_symtab_open(tpath("b/prog"), NULL, 0, NULL, &st);
	T_OK(!err && !strcmp(dcpi_symtab_debug_file(st), tpath("b/.debug/dbg-full.debug")),
	     "debuglink: found in .debug/ (%s)", err ? dcpi_errmsg() : dcpi_symtab_debug_file(st));
	dcpi_symtab_close(st);
	/* ... and under the system debug directory by the image's directory. */
	fx_sh("cd '%s' && rm -rf b/.debug && mkdir -p 'sys%s/b' && cp dbg-full.debug 'sys%s/b/'", tmp,
	   tmp, tmp);
	snprintf(want, sizeof(want), "%s/sys", tmp);
	opts.sys_debug_dir = want;
	err = dcpi_symtab_open(tpath("b/prog"), NULL, 0, &opts, &st);
	snprintf(want, sizeof(want), "%s/sys%s/b/dbg-full.debug", tmp, tmp);
	T_OK(!err && !strcmp(dcpi_symtab_debug_file(st), want),
	     "debuglink: found under the system debug dir (%s)",
	     err ? dcpi_errmsg() : dcpi_symtab_debug_file(st));
	dcpi_symtab_close(st);
}

/* The image path is taken under opts.root (a container's /proc/PID/root). */
static void test_root(void)
{
	struct dcpi_symtab_opts opts = { .root = tmp, .no_debuginfod = 1 };
	struct dcpi_symtab *st = NULL;
	int err = dcpi_symtab_open("/pie", NULL, 0, &opts, &st);

	T_EQ(err, 0, "root: /pie opens under the root (%s)", err ? dcpi_errmsg() : "ok");
	if (!err) {
		T_STREQ(dcpi_symtab_image_file(st), tpath("pie"), "root: the file under the root");
		T_STREQ(dcpi_symtab_path(st), "/pie", "root: the profiled path is kept");
	}
	dcpi_symtab_close(st);
}

/* c++filt is verbose about Rust: it keeps legacy symbols' "::h<hash>"
 * suffix and v0 crates' "[disambiguator]", which we drop as noise. */
static void strip_rust_noise(char *s)
{
	size_t n = strlen(s);
	char *b, *e;

	if (n > 19 && !strncmp(s + n - 19, "::h", 3) &&
	    strspn(s + n - 16, "0123456789abcdef") == 16)
		s[n - 19] = '\0';
	while ((b = strchr(s, '[')) && (e = strchr(b, ']')))
		memmove(b, e + 1, strlen(e + 1) + 1);
}

/* dcpi_demangle against c++filt, which demangles C++ and Rust itself. */
static void test_demangle(void)
{
	static const char *names[] = { "_ZN2ns5Klass6methodEi", "_ZNSt6vectorIiSaIiEE9push_backERKi",
				       "_ZN4core3fmt5write17h0123456789abcdefE",
				       "_RNvCs1234_7mycrate3foo" };
	/* the same without c++filt, as libiberty gives them */
	static const char *fixed[][2] = {
		{ "_ZN2ns5Klass6methodEi", "ns::Klass::method(int)" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back(int const&)" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
		{ "_RNvCs1234_7mycrate3foo", "mycrate::foo" },
		{ "_RINvCs1234_7mycrate3fooTmlEE", "mycrate::foo::<(u32, i32)>" },
	};
	char cmd[256], line[512];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *d = dcpi_demangle(names[i]);
		FILE *p;

		snprintf(cmd, sizeof(cmd), "c++filt '%s'", names[i]);
		p = popen(cmd, "r");
		line[0] = '\0';
		if (!p || !fgets(line, sizeof(line), p))
			line[0] = '\0';
		if (p)
			pclose(p);
		line[strcspn(line, "\n")] = '\0';
		if (names[i][1] == 'R' || strstr(names[i], "17h"))
			strip_rust_noise(line);
		if (!line[0] || !strcmp(line, names[i]))
			T_SKIP("c++filt cannot demangle %s", names[i]);
		else
			T_STREQ(d, line, "demangle %s as c++filt does", names[i]);
		free(d);
	}
	T_OK(dcpi_demangle("main") == NULL, "a C name is not mangled");
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		char *d = dcpi_demangle(fixed[i][0]);

		T_STREQ(d, fixed[i][1], "demangle %s", fixed[i][0]);
		free(d);
	}
}

/* "_Z1f1a" and then levels of "1bI" X X "E", each X the template-id
 * of the level before (the substitution S<2(k-1)-1>_, S_ for the
 * first): f(a, b<a, a>, b<b<a, a>, b<a, a> >, ...), every level doubling
 * the demangled name: 26 levels (278 bytes) demangle to about 900 MB. */
static void demangle_bomb(char *out, int levels)
{
	strcpy(out, "_Z1f1a");
	for (int k = 1; k <= levels; k++) {
		int idx = k == 1 ? 0 : 2 * (k - 1);
		char id[16], *p = id;

		*p++ = 'S';
		if (idx) {
			char d[8];
			int nd = 0, n = idx - 1;

			do {
				d[nd++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[n % 36];
				n /= 36;
			} while (n);
			while (nd)
				*p++ = d[--nd];
		}
		*p++ = '_';
		*p = '\0';
		sprintf(out + strlen(out), "1bI%s%sE", id, id);
	}
}

/* The same in Rust v0: c::f::<i32, (i32, i32), ((i32, i32), (i32, i32)),
 * ...>, each tuple two back-references ("B<base 62>_", an offset after
 * "_R") to the one before. */
static void demangle_bomb_rust(char *out, int levels)
{
	static const char b62[] = "0123456789abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t prev;

	strcpy(out, "_RINvC1c1f");
	prev = strlen(out) - 2;
	strcat(out, "l");
	for (int k = 0; k < levels; k++) {
		size_t here = strlen(out) - 2, n = prev;
		char ref[16], d[8];
		int nd = 0, r = 0;

		if (n) {
			n--;
			do {
				d[nd++] = b62[n % 62];
				n /= 62;
			} while (n);
		}
		while (nd)
			ref[r++] = d[--nd];
		ref[r] = '\0';
		sprintf(out + strlen(out), "TB%s_B%s_E", ref, ref);
		prev = here;
	}
	strcat(out, "E");
}

/* A name demangling past DCPI_DEMANGLE_MAX does not demangle (the
 * demangler stops at the limit, not at gigabytes); one below it does. */
static void test_demangle_bomb(void)
{
	static const int levels[] = { 16, 24, 26, 60 };
	char raw[1024], *d;

	demangle_bomb(raw, 2);
	d = dcpi_demangle(raw);
	T_STREQ(d, "f(a, b<a, a>, b<b<a, a>, b<a, a> >)", "two levels demangle");
	free(d);
	demangle_bomb(raw, 12);
	d = dcpi_demangle(raw);
	T_OK(d && strlen(d) == 53191 && strlen(d) <= DCPI_DEMANGLE_MAX,
	     "12 levels demangle whole (53191 bytes, below the limit)");
	free(d);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		demangle_bomb(raw, levels[i]);
		d = dcpi_demangle(raw);
		T_OK(d == NULL, "%d levels (%zu bytes) past the limit: not demangled", levels[i],
		     strlen(raw));
		free(d);
	}
	demangle_bomb_rust(raw, 2);
	d = dcpi_demangle(raw);
	T_STREQ(d, "c::f::<i32, (i32, i32), ((i32, i32), (i32, i32))>", "Rust: two levels demangle");
	free(d);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		demangle_bomb_rust(raw, levels[i]);
		d = dcpi_demangle(raw);
		T_OK(d == NULL, "Rust: %d levels (%zu bytes) past the limit: not demangled",
		     levels[i], strlen(raw));
		free(d);
	}
}

static void test_cxx(void)
{
	const char *bin = tpath("cxx");
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *out[4];
	uint64_t a, sz;
	int err;

	if (fx_sh("c++ -g -O1 -o '%s' '%s/tests/workloads/symtab_fixture_cxx.cpp'", bin, root)) {
		T_OK(0, "c++ fixture compiles");
		return;
	}
	err = dcpi_symtab_open(bin, NULL, 0, NULL, &st);
	T_EQ(err, 0, "c++: opens");
	if (err)
		return;
	T_EQ(dcpi_symtab_find(st, "ns::Klass::method(int)", out, 4), 1,
	     "c++: found by demangled name");
	T_OK(!nm_sym(bin, "_ZN2ns5Klass6methodEi", &a, &sz) && out[0]->vaddr == a,
	     "c++: at nm's address of the mangled name");
	T_STREQ(out[0]->name, "_ZN2ns5Klass6methodEi", "c++: raw name kept");
	T_STREQ(dcpi_sym_demangled(out[0]), "ns::Klass::method(int)", "c++: demangled name");
	T_EQ(dcpi_symtab_find(st, "ns::Klass::method", out, 4), 1,
	     "c++: found without the parameter list");
	T_OK(dcpi_symtab_lookup_vaddr(st, a) == out[0], "c++: lookup by vaddr");
	dcpi_symtab_close(st);
}

/* Demangling is lazy: the first call fills the cache, later calls return
 * the same string, and a plain C name comes back as its raw name. */
static void test_demangle_lazy(void)
{
	const char *bin = tpath("cxx");
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *out[4];
	const char *d;

	if (dcpi_symtab_open(bin, NULL, 0, NULL, &st)) {
		T_OK(0, "lazy: c++ fixture opens");
		return;
	}
	if (dcpi_symtab_find(st, "_ZN2ns5Klass6methodEi", out, 4) == 1) {
		d = dcpi_sym_demangled(out[0]);
		T_OK(d != out[0]->name && dcpi_sym_demangled(out[0]) == d,
		     "lazy: demangled once, then the cached string");
	} else {
		T_OK(0, "lazy: mangled symbol found by raw name");
	}
	T_EQ(dcpi_symtab_find(st, "main", out, 4), 1, "lazy: main found");
	T_OK(dcpi_sym_demangled(out[0]) == out[0]->name &&
	     dcpi_sym_demangled(out[0]) == out[0]->name,
	     "lazy: a C name is its raw name, also the second time");
	dcpi_symtab_close(st);
}

/* A rebuilt image fails with -ESTALE; its old copy in a build-id cache
 * is then used; a deleted one is -ENOENT unless a copy exists. */
static void test_rebuilt(void)
{
	const char *bin = tpath("rb");
	struct dcpi_symtab_opts opts = { .no_debuginfod = 1 };
	char hex1[130], hex2[130], copy[PATH_MAX];
	uint8_t id1[64];
	size_t idlen, l;
	struct dcpi_symtab *st = NULL;
	struct fx fx[NFX];
	int nfx, err;

	if (compile(bin, "-O1", "symtab_fixture.c") || build_id_hex(bin, hex1, sizeof(hex1))) {
		T_OK(0, "rebuilt: fixture");
		return;
	}
	idlen = hex2bin(hex1, id1);
	nfx = run_fixture(bin, fx);
	fx_sh("cd '%s' && mkdir -p cache/%.2s && cp rb cache/%.2s/%s", tmp, hex1, hex1, hex1 + 2);
	snprintf(copy, sizeof(copy), "%s/cache/%.2s/%s", tmp, hex1, hex1 + 2);
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_OK(!err && dcpi_symtab_status(st) == DCPI_SYMTAB_OK, "matching build-id: status OK");
	T_OK(!err && dcpi_symtab_build_id(st, &l) && l == idlen &&
	     !memcmp(dcpi_symtab_build_id(st, &l), id1, idlen), "build-id read matches readelf");
	dcpi_symtab_close(st);

	compile(bin, "-O1 -DVARIANT=7", "symtab_fixture.c");
	build_id_hex(bin, hex2, sizeof(hex2));
	T_OK(strcmp(hex1, hex2), "rebuild changed the build-id");
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_EQ(err, -ESTALE, "rebuilt: -ESTALE");
	T_OK(strstr(dcpi_errmsg(), "changed since profiling") && strstr(dcpi_errmsg(), hex1) &&
	     strstr(dcpi_errmsg(), hex2), "rebuilt: message has both build-ids: %s",
	     dcpi_errmsg());

	opts.buildid_cache = tpath("cache");
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_EQ(err, 0, "rebuilt + cache: opens (%s)", err ? dcpi_errmsg() : "ok");
	if (!err) {
		T_EQ(dcpi_symtab_status(st), DCPI_SYMTAB_COPY, "rebuilt + cache: status COPY");
		T_STREQ(dcpi_symtab_image_file(st), copy, "rebuilt + cache: the copy is read");
		T_OK(strstr(dcpi_symtab_message(st), "rebuilt since profiling; using copy from"),
		     "rebuilt + cache: message: %s", dcpi_symtab_message(st));
		check_functions("cache copy", st, copy, fx, nfx);
		dcpi_symtab_close(st);
	}
	unlink(bin);
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_OK(!err && strstr(dcpi_symtab_message(st), "gone"), "deleted + cache: copy used");
	/* the cache's copy is ours whoever's the image was: no known owner,
	   so its DWARF names only world-readable sources */
	T_OK(!err && dcpi_symtab_owner(st) == DCPI_UID_UNKNOWN,
	     "deleted + cache: a copy of one link has no known owner (%lu)",
	     err ? 0ul : (unsigned long)dcpi_symtab_owner(st));
	dcpi_symtab_close(st);
	fx_sh("ln '%s' '%s/cache-link'", copy, tmp); /* a link of the image: its owner is kept */
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_OK(!err && dcpi_symtab_owner(st) == 0, "deleted + cache: a link of the image keeps its "
	     "owner (%lu)", err ? 0ul : (unsigned long)dcpi_symtab_owner(st));
	dcpi_symtab_close(st);
	unlink(tpath("cache-link"));
	opts.buildid_cache = NULL;
	/* A debug file made by objcopy --only-keep-debug has the symbols but
	 * zeroed PT_LOAD sizes: it cannot place offsets, so it is not used. */
	fx_sh("cd '%s' && mkdir -p d/.build-id/%.2s && objcopy --only-keep-debug %s "
	   "d/.build-id/%.2s/%s.debug", tmp, hex1, copy, hex1, hex1 + 2);
	opts.debug_path = tpath("d");
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_OK(err == -ENOENT && strstr(dcpi_errmsg(), "not the file layout"),
	     "deleted, layout-less debug file only: -ENOENT saying why (%s)", dcpi_errmsg());
	dcpi_symtab_close(st);
	/* An unstripped copy shipped as the .debug file can. */
	fx_sh("cp '%s' '%s/d/.build-id/%.2s/%s.debug'", copy, tmp, hex1, hex1 + 2);
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_OK(!err && dcpi_symtab_status(st) == DCPI_SYMTAB_DEBUG_ONLY &&
	     !dcpi_symtab_image_file(st), "deleted, unstripped debug file: DEBUG_ONLY (%s)",
	     err ? dcpi_errmsg() : dcpi_symtab_message(st));
	if (!err)
		check_functions("debug only", st, copy, fx, nfx);
	dcpi_symtab_close(st);
	opts.debug_path = NULL;
	err = dcpi_symtab_open(bin, id1, idlen, &opts, &st);
	T_EQ(err, -ENOENT, "deleted, no copy: -ENOENT");
	T_OK(strstr(dcpi_errmsg(), bin) != NULL, "deleted: message names the file");
	err = dcpi_symtab_open(tpath("never-there"), NULL, 0, NULL, &st);
	T_EQ(err, -ENOENT, "missing file without build-id: -ENOENT");
	T_OK(st == NULL, "failed open leaves *out NULL");
}

static void expect_bad(const char *file, const char *what)
{
	struct dcpi_symtab *st = NULL;
	int err = dcpi_symtab_open(file, NULL, 0, NULL, &st);

	T_OK(err < 0 && strstr(dcpi_errmsg(), file), "%s: error naming the file (%d: %s)", what,
	     err, dcpi_errmsg());
	dcpi_symtab_close(st);
}

static void test_corrupt(void)
{
	static const long cuts[] = { 16, 64, 256, -50, -75 };
	char name[64];
	size_t i;

	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		snprintf(name, sizeof(name), "cut%zu", i);
		if (cuts[i] > 0)
			fx_sh("head -c %ld '%s' > '%s'", cuts[i], tpath("pie"), tpath(name));
		else
			fx_sh("head -c $(( $(stat -c %%s '%s') * %ld / 100 )) '%s' > '%s'",
			   tpath("pie"), -cuts[i], tpath("pie"), tpath(name));
		expect_bad(tpath(name), name);
	}
	fx_sh("head -c 4096 /dev/urandom > '%s'", tpath("garbage"));
	expect_bad(tpath("garbage"), "garbage");
	/* Absurd e_shoff (ELF64 header offset 0x28). */
	fx_sh("cp '%s' '%s' && printf '\\000\\377\\377\\377\\377\\377\\377\\177' | "
	   "dd of='%s' bs=1 seek=40 conv=notrunc 2>/dev/null", tpath("pie"), tpath("shoff"),
	   tpath("shoff"));
	expect_bad(tpath("shoff"), "absurd e_shoff");
	/* Absurd e_phoff (offset 0x20). */
	fx_sh("cp '%s' '%s' && printf '\\000\\377\\377\\377\\377\\377\\377\\177' | "
	   "dd of='%s' bs=1 seek=32 conv=notrunc 2>/dev/null", tpath("pie"), tpath("phoff"),
	   tpath("phoff"));
	expect_bad(tpath("phoff"), "absurd e_phoff");
	expect_bad(tpath("."), "a directory");
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void test_kallsyms_fake(void)
{
	char text[8192], longname[5000];
	struct dcpi_symtab *st = NULL;
	const struct dcpi_sym *s;
	int err;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "ffffffff81000000 t startup_64\n"
		 "ffffffff81000000 T _stext\n"
		 "ffffffff81000100 T func_a\n"
		 "ffffffff81000180 t func_b\n"
		 "zzzzzzzz T badhex\n"
		 "ffffffff81000200\n"
		 "ffffffff81000300 D some_data\n"
		 "ffffffff81000280 T %s\n"
		 "ffffffffc0001000 t mod_fn1\t[mymod]\n"
		 "ffffffffc0001040 T mod_fn2\t[mymod]\n"
		 "ffffffffc0002000 d mod_data\t[mymod]\n"
		 "ffffffffc0003000 t other_fn\t[other]\n"
		 "ffffffff81000400 W last_fn\n",
		 longname);
	write_file(tpath("kallsyms"), text);
	err = dcpi_symtab_open_kallsyms(tpath("kallsyms"), NULL, 0, &st);
	T_EQ(err, 0, "kallsyms: parses (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	T_EQ(dcpi_symtab_count(st), 4, "kallsyms: 4 vmlinux text symbols");
	T_EQ(dcpi_symtab_skipped(st), 3, "kallsyms: bad hex, missing fields, long line skipped");
	s = dcpi_symtab_lookup(st, 0xffffffff81000150);
	T_OK(s && !strcmp(s->name, "func_a") && s->size == 0x80, "kallsyms: func_a, size 0x80");
	s = dcpi_symtab_lookup(st, 0xffffffff81000000);
	T_OK(s && !strcmp(s->name, "_stext"), "kallsyms: global name wins over local alias");
	s = dcpi_symtab_lookup(st, 0xffffffff810002ff);
	T_OK(s && !strcmp(s->name, "func_b") && s->size == 0x180,
	     "kallsyms: func_b ends at the data symbol");
	T_OK(!dcpi_symtab_lookup(st, 0xffffffff81000300), "kallsyms: data address unnamed");
	T_OK(!dcpi_symtab_lookup(st, 0xffffffffc0001000), "kallsyms: module symbols not in vmlinux");
	dcpi_symtab_describe(st, 0xffffffff81000300, text, sizeof(text));
	T_STREQ(text, "[kernel@0xffffffff81000300]", "kallsyms: unnamed address described");
	dcpi_symtab_close(st);

	err = dcpi_symtab_open_kallsyms(tpath("kallsyms"), "mymod", 0xffffffffc0001000, &st);
	T_EQ(err, 0, "kallsyms module: opens");
	if (!err) {
		uint64_t v;

		s = dcpi_symtab_lookup(st, 0x50);
		T_OK(s && !strcmp(s->name, "mod_fn2") && s->size == 0xfc0,
		     "kallsyms module: offset 0x50 is mod_fn2, up to mod_data");
		s = dcpi_symtab_lookup(st, 0x10);
		T_OK(s && !strcmp(s->name, "mod_fn1"), "kallsyms module: offset 0x10 is mod_fn1");
		T_OK(!dcpi_symtab_off2vaddr(st, 0x10, &v) && v == 0xffffffffc0001010,
		     "kallsyms module: off2vaddr adds the base");
		T_EQ(dcpi_symtab_count(st), 2, "kallsyms module: only its symbols");
		dcpi_symtab_close(st);
	}
	err = dcpi_symtab_open_kallsyms(tpath("kallsyms"), "absent", 0, &st);
	T_EQ(err, -ENOENT, "kallsyms: unknown module -ENOENT");

	write_file(tpath("kallsyms-empty"), "garbage\n\n   \nnot hex T x\n");
	T_EQ(dcpi_symtab_open_kallsyms(tpath("kallsyms-empty"), NULL, 0, &st), -EBADMSG,
	     "kallsyms: nothing parsed -EBADMSG");
	write_file(tpath("kallsyms-zero"), "0000000000000000 T a\n0000000000000000 T b\n");
	T_EQ(dcpi_symtab_open_kallsyms(tpath("kallsyms-zero"), NULL, 0, &st), -EACCES,
	     "kallsyms: all-zero addresses -EACCES");
}

/* The running kernel: check lookups against "T" lines read here. */
static void test_kallsyms_real(void)
{
	struct dcpi_symtab *st = NULL;
	char line[1024], name[512], type[8];
	unsigned long long a;
	int err, checked = 0, bad = 0;
	FILE *f;

	err = dcpi_symtab_open_kallsyms("/proc/kallsyms", NULL, 0, &st);
	if (err == -EACCES || err == -ENOENT) {
		T_SKIP("real kallsyms: %s", dcpi_errmsg());
		return;
	}
	T_EQ(err, 0, "real kallsyms: opens (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	T_OK(dcpi_symtab_count(st) > 1000, "real kallsyms: %zu symbols", dcpi_symtab_count(st));
	f = fopen("/proc/kallsyms", "r");
	while (f && fgets(line, sizeof(line), f) && checked < 2000) {
		const struct dcpi_sym *s;

		if (sscanf(line, "%llx %7s %511s", &a, type, name) != 3 || strcmp(type, "T") ||
		    strchr(line, '[') || !strncmp(name, DCPI_KALLSYMS_PADDING, 6))
			continue; /* paddings are left out: their bytes are the function's before */
		s = dcpi_symtab_lookup(st, a);
		checked++;
		if (!s || s->vaddr != a)
			bad++;
	}
	if (f)
		fclose(f);
	T_OK(checked > 100 && bad == 0, "real kallsyms: %d T symbols looked up, %d wrong", checked,
	     bad);
	dcpi_symtab_close(st);
}

int main(void)
{
	root = getenv("DCPI_ROOT") ? getenv("DCPI_ROOT") : ".";
	unsetenv("DEBUGINFOD_URLS"); /* never wait on the network */
	unsetenv("DCPI_DEBUG_PATH");
	snprintf(tmp, sizeof(tmp), "/tmp/dcpi-symtab.XXXXXX");
	if (!mkdtemp(tmp)) {
		T_OK(0, "mkdtemp");
		return t_done();
	}
	test_pie_and_nopie();
	test_plt();
	test_describe();
	test_debug_files();
	test_cxx();
	test_demangle_lazy();
	test_root();
	test_demangle();
	test_demangle_bomb();
	test_rebuilt();
	test_corrupt();
	test_kallsyms_fake();
	test_kallsyms_real();
	fx_sh("rm -rf '%s'", tmp);
	return t_done();
}
