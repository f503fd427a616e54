/* Unwind tables (dcpi/unwind.h) against CFI known by construction: a
 * shared object assembled here from explicit .cfi directives (the
 * assembler writes them as written, whatever the compiler), whose rows are
 * checked one by one -- a frame-pointer prologue and epilogue, a leaf that
 * moves rsp, the outermost frame, a rule the table does not take -- then
 * the step on synthetic stacks: a three-frame walk to the end, a copy that
 * runs out, hostile stacks (a loop, a return address in the kernel, a CFA
 * that falls), the frame-pointer fallback, and the tables of the real
 * libc and liblzma (no frame pointers) built whole. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/unwind.h"
#include "fixture.h"
#include "tap.h"

static const char fixture_s[] =
	"	.text\n"
	"	.globl f_std\n	.type f_std, @function\n"
	"f_std:\n	.cfi_startproc\n"
	"	push %rbp\n	.cfi_def_cfa_offset 16\n	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n	.cfi_def_cfa_register %rbp\n"
	"	nop\n"
	"	pop %rbp\n	.cfi_def_cfa %rsp, 8\n	.cfi_restore %rbp\n"
	"	ret\n	.cfi_endproc\n	.size f_std, .-f_std\n"
	"	.globl f_leaf\n	.type f_leaf, @function\n"
	"f_leaf:\n	.cfi_startproc\n"
	"	sub $40, %rsp\n	.cfi_def_cfa_offset 48\n"
	"	nop\n"
	"	add $40, %rsp\n	.cfi_def_cfa_offset 8\n"
	"	ret\n	.cfi_endproc\n	.size f_leaf, .-f_leaf\n"
	"	.globl f_end\n	.type f_end, @function\n"
	"f_end:\n	.cfi_startproc\n	.cfi_undefined %rip\n"
	"	xor %ebp, %ebp\n	hlt\n	.cfi_endproc\n	.size f_end, .-f_end\n"
	"	.globl f_expr\n	.type f_expr, @function\n"
	"f_expr:\n	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06\n" /* def_cfa_expression: breg7 8; deref */
	"	nop\n	ret\n	.cfi_endproc\n	.size f_expr, .-f_expr\n"
	"	.section .note.GNU-stack, \"\", @progbits\n";

static const struct dcpi_unwind_row no_row = { 0, 0, 0, 0xff, 0 };

static const struct dcpi_unwind_row *at(struct dcpi_unwind_table *t, uint64_t a)
{
	const struct dcpi_unwind_row *r = dcpi_unwind_lookup(t, a);

	return r ? r : &no_row;
}

#define ROW(t, a, k, off, bp) \
	(at(t, a)->kind == (k) && at(t, a)->cfa_off == (off) && at(t, a)->bp_off == (bp))

static void test_fixture(void)
{
	struct dcpi_unwind_table t;
	uint64_t std, leaf, end, expr, sz;
	const char *so = fx_path("fx.so");
	FILE *f = fopen(fx_path("fx.s"), "w");
	int err;

	if (!f || fputs(fixture_s, f) < 0 || fclose(f) ||
	    fx_sh("cc -shared -nostdlib -o '%s' '%s'", so, fx_path("fx.s")) ||
	    fx_nm("nm", so, "f_std", &std, &sz) || fx_nm("nm", so, "f_leaf", &leaf, &sz) ||
	    fx_nm("nm", so, "f_end", &end, &sz) || fx_nm("nm", so, "f_expr", &expr, &sz)) {
		T_SKIP("cc, as or nm cannot make the fixture");
		return;
	}
	err = dcpi_unwind_table_build(so, &t);
	T_EQ(err, 0, "the fixture's table builds%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err)
		return;
	T_EQ(t.fdes, 4, "four FDEs read");
	T_OK(t.nsegs >= 1 && dcpi_unwind_lookup_off(&t, std - t.segs[0].vaddr + t.segs[0].off) ==
			       dcpi_unwind_lookup(&t, std),
	     "by file offset through the executable segment: the same row as by address");
	T_OK(dcpi_unwind_lookup_off(&t, 0) == NULL || t.segs[0].off == 0,
	     "an offset in no executable segment: no row");
	T_OK(ROW(&t, std, DCPI_UW_SP, 8, DCPI_UW_SAME), "f_std+0: CFA rsp+8, rbp untouched");
	T_OK(ROW(&t, std + 1, DCPI_UW_SP, 16, -16), "f_std+1 (after push): CFA rsp+16, rbp at CFA-16");
	T_OK(ROW(&t, std + 4, DCPI_UW_BP, 16, -16), "f_std+4 (after mov): CFA rbp+16");
	T_OK(ROW(&t, std + 5, DCPI_UW_BP, 16, -16), "f_std+5 (the nop): the same row");
	T_OK(ROW(&t, std + 6, DCPI_UW_SP, 8, DCPI_UW_SAME), "f_std+6 (after pop): CFA rsp+8, rbp restored");
	T_OK(ROW(&t, leaf, DCPI_UW_SP, 8, DCPI_UW_SAME), "f_leaf+0: CFA rsp+8");
	T_OK(ROW(&t, leaf + 4, DCPI_UW_SP, 48, DCPI_UW_SAME), "f_leaf+4 (after sub 40): CFA rsp+48");
	T_OK(ROW(&t, leaf + 9, DCPI_UW_SP, 8, DCPI_UW_SAME), "f_leaf+9 (after add): CFA rsp+8");
	T_OK(at(&t, end)->kind == DCPI_UW_END && at(&t, end + 2)->kind == DCPI_UW_END,
	     "f_end: the return address undefined: the outermost frame");
	T_OK(at(&t, expr)->kind == DCPI_UW_NONE && t.unsupported >= 1,
	     "f_expr: a CFA expression not taken: no rule (%zu such rows)", t.unsupported);
	T_OK(dcpi_unwind_lookup(&t, std - 1) == NULL || at(&t, std - 1)->kind == DCPI_UW_NONE,
	     "before the first FDE: nothing known");
	for (size_t i = 1; i < t.n; i++)
		if (t.rows[i].start <= t.rows[i - 1].start ||
		    (t.rows[i].kind == t.rows[i - 1].kind && t.rows[i].cfa_off == t.rows[i - 1].cfa_off &&
		     t.rows[i].bp_off == t.rows[i - 1].bp_off)) {
			T_OK(0, "rows sorted and adjacent rows differ (row %zu)", i);
			break;
		}
	T_OK(1, "%zu rows, sorted, adjacent ones different", t.n);
	dcpi_unwind_table_free(&t);
}

/* A stack copy of words at base. */
struct fake {
	uint64_t w[64];
	struct dcpi_unwind_stack s;
};

static void fake_init(struct fake *f, uint64_t base)
{
	memset(f, 0, sizeof(*f));
	f->s.data = (const uint8_t *)f->w;
	f->s.len = sizeof(f->w);
	f->s.base = base;
}

static void test_step(void)
{
	const uint64_t base = 0x7ffd00001000ull;
	struct dcpi_unwind_row leaf = { 0, 48, DCPI_UW_SAME, DCPI_UW_SP, 0 };
	struct dcpi_unwind_row fp = { 0, 16, -16, DCPI_UW_BP, 0 };
	struct dcpi_unwind_row end = { 0, 0, DCPI_UW_SAME, DCPI_UW_END, 0 };
	struct dcpi_unwind_row plt = { 0, 11, DCPI_UW_SAME, DCPI_UW_PLT, 0 };
	struct dcpi_unwind_regs r;
	struct fake f;

	/* leaf (rsp+48: return address at w[5]) -> fp frame (rbp = base+0x60:
	   saved rbp at w[12], return address at w[13]) -> outermost */
	fake_init(&f, base);
	f.w[5] = 0x401234;
	f.w[12] = 0x7ffd00001200ull;   /* the caller's caller's rbp */
	f.w[13] = 0x405678;
	r = (struct dcpi_unwind_regs){ 0x401000, base, base + 0x60 };
	T_EQ(dcpi_unwind_step(&leaf, &r, &f.s, 0), DCPI_UW_OK, "leaf: one frame up");
	T_OK(r.ip == 0x401234 && r.sp == base + 48 && r.bp == base + 0x60,
	     "leaf: the return address, CFA as rsp, rbp kept");
	T_EQ(dcpi_unwind_step(&fp, &r, &f.s, 0), DCPI_UW_OK, "fp frame: one frame up");
	T_OK(r.ip == 0x405678 && r.sp == base + 0x70 && r.bp == 0x7ffd00001200ull,
	     "fp frame: CFA rbp+16, rbp from CFA-16");
	T_EQ(dcpi_unwind_step(&end, &r, &f.s, 0), DCPI_UW_STOP_END, "the outermost frame ends it");

	/* an epilogue after "pop %rbp; pop %r12", where GCC's CFI still says
	   rbp is saved at CFA-24: the slot lies below rsp, popped, and rbp
	   already holds the caller's value (it is kept, not "copy ran out") */
	{
		struct dcpi_unwind_row epi = { 0, 8, -24, DCPI_UW_SP, 0 };

		fake_init(&f, base);
		f.w[0] = 0x40cccc;
		r = (struct dcpi_unwind_regs){ 0x401000, base, 0x7ffd00003000ull };
		T_EQ(dcpi_unwind_step(&epi, &r, &f.s, 0), DCPI_UW_OK,
		     "an epilogue past its pop of rbp: one frame up");
		T_OK(r.ip == 0x40cccc && r.sp == base + 8 && r.bp == 0x7ffd00003000ull,
		     "the epilogue: rbp kept, its popped slot not read");
	}
	fake_init(&f, base);
	f.w[5] = 0x401234;

	/* the copy runs out: a CFA past it */
	r = (struct dcpi_unwind_regs){ 0x401000, base + 0x1f0, 0 };
	T_EQ(dcpi_unwind_step(&leaf, &r, &f.s, 0), DCPI_UW_STOP_TRUNCATED,
	     "a return address past the copy: truncated");
	/* hostile: the CFA does not rise (rbp below rsp) */
	r = (struct dcpi_unwind_regs){ 0x401000, base + 0x80, base };
	T_EQ(dcpi_unwind_step(&fp, &r, &f.s, 0), DCPI_UW_STOP_BAD, "a CFA below rsp: refused");
	/* hostile: a return address in the kernel */
	f.w[5] = 0xffffffff81000000ull;
	r = (struct dcpi_unwind_regs){ 0x401000, base, 0 };
	T_EQ(dcpi_unwind_step(&leaf, &r, &f.s, 0), DCPI_UW_STOP_BAD,
	     "a return address in the kernel: refused");
	/* hostile: a frame-pointer loop (rbp pointing at itself) */
	f.w[8] = base + 0x40;
	f.w[9] = 0x401111;
	r = (struct dcpi_unwind_regs){ 0x401000, base + 0x40, base + 0x40 };
	{
		int steps = 0, res;

		while ((res = dcpi_unwind_step(NULL, &r, &f.s, 1)) == DCPI_UW_OK && steps < 1000)
			steps++;
		T_OK(steps <= 1 && res == DCPI_UW_STOP_BAD,
		     "a frame-pointer loop ends at once (%d steps, %d)", steps, res);
	}
	/* the frame-pointer fallback where no row is known */
	fake_init(&f, base);
	f.w[2] = base + 0x100;   /* saved rbp */
	f.w[3] = 0x409999;       /* return address */
	r = (struct dcpi_unwind_regs){ 0x401000, base, base + 0x10 };
	T_EQ(dcpi_unwind_step(NULL, &r, &f.s, 0), DCPI_UW_STOP_NORULE, "no row, no fallback: stop");
	T_EQ(dcpi_unwind_step(NULL, &r, &f.s, 1), DCPI_UW_OK, "no row: the frame-pointer chain");
	T_OK(r.ip == 0x409999 && r.sp == base + 0x20 && r.bp == base + 0x100,
	     "the chain: return address at rbp+8, rbp at rbp, rsp rbp+16");
	/* a PLT entry: before its push CFA rsp+8, after it rsp+16 */
	fake_init(&f, base);
	f.w[0] = 0x40aaaa;
	f.w[1] = 0x40bbbb;
	r = (struct dcpi_unwind_regs){ 0x401020, base, 0 };
	T_OK(dcpi_unwind_step(&plt, &r, &f.s, 0) == DCPI_UW_OK && r.ip == 0x40aaaa,
	     "a PLT entry's jmp: the return address at rsp");
	r = (struct dcpi_unwind_regs){ 0x40102b, base, 0 };
	T_OK(dcpi_unwind_step(&plt, &r, &f.s, 0) == DCPI_UW_OK && r.ip == 0x40bbbb,
	     "past its push: at rsp+8");
	/* a copy of nothing */
	f.s.len = 0;
	r = (struct dcpi_unwind_regs){ 0x401000, base, 0 };
	T_EQ(dcpi_unwind_step(&leaf, &r, &f.s, 0), DCPI_UW_STOP_TRUNCATED, "an empty copy: truncated");
}

static void test_real(const char *path)
{
	struct dcpi_unwind_table t;
	int err = dcpi_unwind_table_build(path, &t);
	size_t none = 0;

	if (err == -ENOENT && access(path, R_OK)) {
		T_SKIP("%s is not here", path);
		return;
	}
	T_EQ(err, 0, "%s: the table builds%s%s", path, err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err)
		return;
	for (size_t i = 0; i < t.n; i++)
		none += t.rows[i].kind == DCPI_UW_NONE;
	T_OK(t.fdes > 100 && t.n > t.fdes && t.unsupported * 100 < t.n,
	     "%s: %zu FDEs, %zu rows, %zu rules not taken, %zu gaps", path, t.fdes, t.n,
	     t.unsupported, none);
	dcpi_unwind_table_free(&t);
}

/* A table opened for lookups gives what the whole table gives, at every
 * row's start and the byte before it, looked up in a scattered order (so
 * FDEs are compiled out of order, each after others' rows), with its
 * file's descriptor closed before the first lookup; and it compiles only
 * the FDEs looked up in. */
static void test_lazy(const char *path)
{
	struct dcpi_unwind_table whole, t;
	size_t n, bad = 0, k;
	uint64_t *a;
	int fd, err;

	if (access(path, R_OK)) {
		T_SKIP("%s is not here", path);
		return;
	}
	if (dcpi_unwind_table_build(path, &whole)) {
		T_OK(0, "%s: the whole table builds: %s", path, dcpi_errmsg());
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : dcpi_unwind_table_open_fd(fd, path, &t);
	if (fd >= 0)
		close(fd);
	T_EQ(err, 0, "%s: opened for lookups%s%s", path, err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err) {
		dcpi_unwind_table_free(&whole);
		return;
	}
	T_OK(t.n == 0 && t.fdes == 0 && t.entry == whole.entry && t.nsegs == whole.nsegs,
	     "%s: opened, nothing compiled yet (%zu rows), entry and segments read", path, t.n);
	n = 2 * whole.n + 2;
	a = malloc(n * sizeof(*a));
	if (!a) {
		dcpi_unwind_table_free(&whole);
		dcpi_unwind_table_free(&t);
		return;
	}
	for (size_t i = 0; i < whole.n; i++) {
		a[2 * i] = whole.rows[i].start;
		a[2 * i + 1] = whole.rows[i].start - 1;
	}
	a[n - 2] = whole.entry;
	a[n - 1] = whole.entry + 3;
	/* the first lookup compiles one FDE */
	(void)dcpi_unwind_lookup(&t, a[n / 2]);
	T_EQ(t.fdes, 1, "%s: one lookup, one FDE compiled", path);
	/* scattered: a step coprime with n visits every address once */
	k = n / 3 + 1;
	while (n > 1 && (k % 2 == 0 || n % k == 0 || k % n == 0))
		k++;
	for (size_t i = 0, j = 0; i < n; i++, j = (j + k) % n) {
		const struct dcpi_unwind_row *w = dcpi_unwind_lookup(&whole, a[j]);
		const struct dcpi_unwind_row *l = dcpi_unwind_lookup(&t, a[j]);

		if (!w != !l || (w && (w->kind != l->kind || w->cfa_off != l->cfa_off ||
				       w->bp_off != l->bp_off))) {
			if (bad++ < 3)
				printf("# 0x%" PRIx64 ": whole %d/%d/%d, looked up %d/%d/%d\n", a[j],
				       w ? w->kind : -1, w ? w->cfa_off : 0, w ? w->bp_off : 0,
				       l ? l->kind : -1, l ? l->cfa_off : 0, l ? l->bp_off : 0);
		}
	}
	T_OK(bad == 0 && t.fdes <= whole.fdes,
	     "%s: %zu addresses, the same rule as the whole table's at each (%zu differ; %zu of "
	     "%zu FDEs compiled)", path, n, bad, t.fdes, whole.fdes);
	free(a);
	dcpi_unwind_table_free(&whole);
	dcpi_unwind_table_free(&t);
}

int main(void)
{
	struct dcpi_unwind_table t;

	if (fx_setup("unwind"))
		return 1;
	test_fixture();
	test_step();
	test_real("/usr/lib/x86_64-linux-gnu/libc.so.6");
	test_real("/usr/lib/x86_64-linux-gnu/liblzma.so.5");
	test_lazy("/usr/lib/x86_64-linux-gnu/libc.so.6");
	test_lazy(fx_path("fx.so"));
	T_OK(dcpi_unwind_table_build("/nonexistent", &t) == -ENOENT && t.n == 0,
	     "a missing file: -ENOENT, an empty table");
	T_OK(dcpi_unwind_table_build(fx_path("fx.s"), &t) == -EBADMSG && t.n == 0,
	     "a file that is not ELF: -EBADMSG");
	if (fx_sh("head -c 2000 '%s' >'%s'", fx_path("fx.so"), fx_path("cut.so")) == 0)
		T_OK(dcpi_unwind_table_build(fx_path("cut.so"), &t) == -EBADMSG &&
		     strstr(dcpi_errmsg(), "headers lie past its end"),
		     "a file cut short, its section headers past its end: refused before libelf "
		     "allocates for them (%s)", dcpi_errmsg());
	T_OK(dcpi_unwind_table_build("/dev/null", &t) == -EINVAL, "not a regular file: refused");
	{
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		T_OK(dcpi_unwind_table_open_fd(fd, "/dev/null", &t) == -EINVAL && !t.lazy,
		     "opened for lookups: not a regular file, refused");
		close(fd);
	}
	/* an entry point without CFI (as ld.so's _dl_start_user): the outermost frame */
	{
		FILE *f = fopen(fx_path("entry.s"), "w");
		if (f && fputs("	.text\n	.globl _start\n_start:\n	call g\n	hlt\n"
			       "	.globl g\n	.type g, @function\ng:\n	.cfi_startproc\n	ret\n"
			       "	.cfi_endproc\n	.section .note.GNU-stack, \"\", @progbits\n", f) >= 0 &&
		    !fclose(f) &&
		    !fx_sh("cc -nostdlib -static -Wl,--eh-frame-hdr -o '%s' '%s'", fx_path("entry"),
			   fx_path("entry.s")) &&
		    dcpi_unwind_table_build(fx_path("entry"), &t) == 0) {
			/* _start: call g (5 bytes), hlt; g (with its FDE) follows */
			T_OK(t.entry && at(&t, t.entry + 4)->kind == DCPI_UW_END &&
			     at(&t, t.entry + 6)->kind == DCPI_UW_SP && at(&t, t.entry + 200)->kind != DCPI_UW_END,
			     "the entry point's first bytes, no FDE there: the outermost frame "
			     "(entry 0x%" PRIx64 ")", t.entry);
			dcpi_unwind_table_free(&t);
			test_lazy(fx_path("entry"));
		} else {
			T_SKIP("cannot link the entry-point fixture");
		}
	}
	/* CFI naming register 500,000,000 (libdw would grow its register array
	   to 2 GB for it): refused before libdw interprets it */
	{
		FILE *f = fopen(fx_path("huge.s"), "w");

		if (f && fputs("	.text\n	.globl g\n	.type g, @function\ng:\n"
			       "	.cfi_startproc\n	.cfi_escape 0x05, 0x80, 0xca, 0xb5, 0xee, 0x01, 0x02\n"
			       "	ret\n	.cfi_endproc\n	.section .note.GNU-stack, \"\", @progbits\n",
			       f) >= 0 && !fclose(f) &&
		    !fx_sh("cc -shared -nostdlib -o '%s' '%s'", fx_path("huge.so"), fx_path("huge.s")))
			T_OK(dcpi_unwind_table_build(fx_path("huge.so"), &t) == -EBADMSG &&
			     strstr(dcpi_errmsg(), "no compiler writes") && t.n == 0,
			     "CFI naming register 500,000,000: refused before libdw runs it (%s)",
			     dcpi_errmsg());
		if (!access(fx_path("huge.so"), R_OK)) {
			int fd = open(fx_path("huge.so"), O_RDONLY | O_CLOEXEC);

			T_OK(dcpi_unwind_table_open_fd(fd, "huge.so", &t) == -EBADMSG && !t.lazy &&
			     t.n == 0, "and opened for lookups: refused the same, nothing kept");
			close(fd);
		}
		else
			T_SKIP("cannot assemble the huge-register fixture");
	}
	/* one FDE of 10,000 rows (libdw runs an FDE from its start for each
	   row: their square): the first 2,048 compiled, nothing known past */
	{
		FILE *f = fopen(fx_path("rows.s"), "w");
		int ok = f && fputs("	.text\n	.globl g\n	.type g, @function\ng:\n"
				    "	.cfi_startproc\n", f) >= 0;

		for (int i = 0; ok && i < 5000; i++)
			ok = fputs("	nop\n	.cfi_adjust_cfa_offset 8\n	nop\n"
				   "	.cfi_adjust_cfa_offset -8\n", f) >= 0;
		ok = ok && fputs("	ret\n	.cfi_endproc\n	.section .note.GNU-stack, \"\", "
				 "@progbits\n", f) >= 0;
		if (f && fclose(f))
			ok = 0;
		if (ok &&
		    !fx_sh("cc -shared -nostdlib -o '%s' '%s'", fx_path("rows.so"), fx_path("rows.s")) &&
		    dcpi_unwind_table_build(fx_path("rows.so"), &t) == 0) {
			const struct dcpi_unwind_row *first = t.n ? &t.rows[0] : NULL;
			const struct dcpi_unwind_row *late =
				first ? dcpi_unwind_lookup(&t, first->start + 9000) : NULL;
			const struct dcpi_unwind_row *early =
				first ? dcpi_unwind_lookup(&t, first->start + 1000) : NULL;

			T_OK(t.n >= 2048 && t.n <= 2051 && late && late->kind == DCPI_UW_NONE &&
			     early && early->kind == DCPI_UW_SP && t.unsupported >= 1,
			     "an FDE of 10,000 rows: %zu compiled, the rest unknown (NONE)", t.n);
			dcpi_unwind_table_free(&t);
		} else {
			T_SKIP("cannot assemble the many-rows fixture");
		}
	}
	fx_cleanup();
	return t_done();
}
