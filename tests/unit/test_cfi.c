/* Stripped code named from .eh_frame: a fixture built here (-O2 -g) and a
 * stripped copy of it (strip keeps .eh_frame and .eh_frame_hdr).  Every
 * function of the unstripped copy (nm's answer, independent of our ELF
 * readers) must be found in the stripped one as IMAGE@0xADDR at its
 * address, named ones must keep their names, and an image whose table is
 * corrupt must still open, only without the extra names. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/symtab.h"
#include "fixture.h"
#include "tap.h"

static const char *const funcs[] = { "global_fn", "other_global", "main", "static_fn" };

static void test_stripped(const char *full, const char *stripped)
{
	struct dcpi_symtab *st = NULL;
	int err = dcpi_symtab_open(stripped, NULL, 0, NULL, &st);

	T_EQ(err, 0, "the stripped copy opens: %s", err ? dcpi_errmsg() : "");
	if (err)
		return;
	T_OK(strstr(dcpi_symtab_message(st), "named from .eh_frame") != NULL,
	     "the message says where the names came from: %s", dcpi_symtab_message(st));
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t addr, size;
		const struct dcpi_sym *s;
		char want[64];

		if (fx_nm("nm", full, funcs[i], &addr, &size)) {
			T_OK(0, "nm finds %s in the unstripped copy", funcs[i]);
			continue;
		}
		snprintf(want, sizeof(want), "stripped@0x%" PRIx64, addr);
		s = dcpi_symtab_lookup_vaddr(st, addr + size / 2);
		T_OK(s && s->vaddr == addr && !strcmp(s->name, want) && s->size >= size,
		     "%s (0x%" PRIx64 ", %" PRIu64 " bytes) is %s (got %s at 0x%" PRIx64 ")", funcs[i],
		     addr, size, want, s ? s->name : "nothing", s ? s->vaddr : 0);
	}
	dcpi_symtab_close(st);
}

/* The table's version byte made 2: not the format we know, so no names
 * from it, and no failure either. */
static void test_corrupt(const char *stripped)
{
	struct dcpi_symtab *st = NULL;
	uint64_t addr = 0, size;
	int err;

	if (fx_sh("cp '%s' '%s' && off=$(readelf -SW '%s' | sed -n "
		  "'s/.*[.]eh_frame_hdr *PROGBITS *[0-9a-f]* \\([0-9a-f]*\\).*/\\1/p') && "
		  "[ -n \"$off\" ] && printf '\\002' | dd of='%s' bs=1 seek=$((0x$off)) "
		  "conv=notrunc 2>/dev/null", stripped, fx_path("bad"), fx_path("bad"),
		  fx_path("bad"))) {
		T_OK(0, "corrupt a copy's .eh_frame_hdr");
		return;
	}
	err = dcpi_symtab_open(fx_path("bad"), NULL, 0, NULL, &st);
	T_EQ(err, 0, "an image with a table of another version still opens");
	fx_nm("nm", fx_path("fix"), "global_fn", &addr, &size);
	T_OK(st && !dcpi_symtab_lookup_vaddr(st, addr), "and gets no names from it");
	dcpi_symtab_close(st);
}

/* Code built without unwind tables after a tiny FDE (the C runtime's
 * one-byte _dl_relocate_static_pie): an FDE ends where its rows end, so
 * the code after it is not taken for part of it. */
static void test_no_fde(void)
{
	const char *dir = fx_path("nofde");
	struct dcpi_symtab *st = NULL;
	uint64_t addr, size;
	const struct dcpi_sym *s;
	char path[600];

	if (fx_sh("mkdir -p '%s' && cd '%s' && "
		  "printf 'void tiny(void) {}\n' >a.c && "
		  "printf 'volatile long sink;\nvoid tiny(void);\n"
		  "__attribute__((noinline)) void loop(long n) { for (long i = 0; i < n; i++) "
		  "sink += i; }\nint main(void) { tiny(); loop(3); return 0; }\n' >b.c && "
		  "cc -O2 -c a.c && cc -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables "
		  "-c b.c && cc -o full a.o b.o && strip -o stripped full", dir, dir)) {
		T_OK(0, "build the no-FDE fixture");
		return;
	}
	snprintf(path, sizeof(path), "%s/full", dir);
	if (fx_nm("nm", path, "loop", &addr, &size)) {
		T_OK(0, "nm finds loop");
		return;
	}
	snprintf(path, sizeof(path), "%s/stripped", dir);
	if (dcpi_symtab_open(path, NULL, 0, NULL, &st)) {
		T_OK(0, "the no-FDE fixture opens: %s", dcpi_errmsg());
		return;
	}
	s = dcpi_symtab_lookup_vaddr(st, addr);
	T_OK(!s, "code no FDE covers (loop, 0x%" PRIx64 ") is no FDE's function (got %s at 0x%"
	     PRIx64 ", %" PRIu64 " bytes)", addr, s ? s->name : "nothing", s ? s->vaddr : 0,
	     s ? s->size : 0);
	dcpi_symtab_close(st);
}

int main(void)
{
	const char *src, *full, *stripped;

	if (fx_setup("cfi")) {
		T_OK(0, "temp dir");
		return t_done();
	}
	src = fx_path("fix.c");
	full = fx_path("fix");
	stripped = fx_path("stripped");
	if (fx_sh("cp '%s/tests/workloads/symtab_fixture.c' '%s' && cc -O2 -g -o '%s' '%s' && "
		  "strip -o '%s' '%s'", fx_root, src, full, src, stripped, full)) {
		T_OK(0, "build and strip the fixture (cc, strip)");
		fx_cleanup();
		return t_done();
	}
	test_stripped(full, stripped);
	test_corrupt(stripped);
	test_no_fde();
	fx_cleanup();
	return t_done();
}
