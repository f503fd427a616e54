/* The disassembler against objdump: fixtures are built here with cc (and,
 * for AArch64, clang --target + ld.lld when installed) in a temp dir;
 * every instruction's address and mnemonic, and every direct branch
 * target, is compared with what objdump (llvm-objdump for AArch64) prints
 * for the same function. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "fixture.h"
#include "tap.h"

#define MAXI 4096

/* One objdump line: address, mnemonic (prefixes dropped), direct target. */
struct oline {
	uint64_t addr;
	char mnem[32];
	uint64_t target;
	int has_target;
};

static int is_prefix(const char *tok)
{
	static const char *const pfx[] = { "data16", "data32", "cs", "ds", "es", "ss", "fs",
					   "gs", "notrack", "bnd", "addr32", "rex", "rex.W",
					   "rex.WB", "rex.B", "rex.R", "rex.X", NULL };
	int i;

	for (i = 0; pfx[i]; i++)
		if (!strcmp(tok, pfx[i]))
			return 1;
	return 0;
}

/* "  1040:\tmov    %rdi,%rax   # comment" or llvm's "  210120:  \tadd\tw0, ..." */
static int parse_oline(char *line, struct oline *o)
{
	char *colon, *tok, *save = NULL, *lt;
	unsigned long long a;

	if (sscanf(line, " %llx:", &a) != 1 || !(colon = strchr(line, ':')) || colon[1] == '\0')
		return -1;
	memset(o, 0, sizeof(*o));
	o->addr = a;
	lt = strstr(colon, " <");
	if (lt) {   /* the target is the hex token right before " <sym>" */
		char *s = lt;

		while (s > colon && s[-1] != ' ' && s[-1] != '\t' && s[-1] != ',')
			s--;
		o->target = strtoull(s, NULL, 16);
		o->has_target = 1;
	}
	for (tok = strtok_r(colon + 1, " \t\n", &save); tok && is_prefix(tok);
	     tok = strtok_r(NULL, " \t\n", &save))
		;
	if (!tok)
		return -1;
	snprintf(o->mnem, sizeof(o->mnem), "%s", tok);
	return 0;
}

static int objdump_fn(const char *objdump, const char *bin, uint64_t lo, uint64_t hi,
		      struct oline *out, int max)
{
	char cmd[2 * PATH_MAX], line[1024];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "%s --no-show-raw-insn --start-address=0x%" PRIx64
		 " --stop-address=0x%" PRIx64 " '%s'", objdump, lo, hi, bin);
	p = popen(cmd, "r");
	while (p && n < max && fgets(line, sizeof(line), p)) {
		if (!strstr(line, ":\t") && !strstr(line, ": \t") && !strstr(line, ":  "))
			continue;
		if (parse_oline(line, &out[n]) == 0 && out[n].addr >= lo && out[n].addr < hi)
			n++;
	}
	if (p)
		pclose(p);
	return n;
}

/* Equal, or equal after one size suffix (callq/call, movl/mov, nopw/nop). */
static int same_mnem(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (!strcmp(a, b))
		return 1;
	if (la == lb + 1 && !strncmp(a, b, lb) && strchr("bwlq", a[la - 1]))
		return 1;
	return lb == la + 1 && !strncmp(a, b, la) && strchr("bwlq", b[lb - 1]);
}

static void check_flags(const char *what, const struct dcpi_insn *in, const struct oline *o,
			int *bad_flags, int *targets, int *bad_targets)
{
	const char *m = in->mnemonic;

	if ((!strncmp(m, "ret", 3) && !(in->flags & DCPI_INSN_RET)) ||
	    (!strncmp(m, "call", 4) && !(in->flags & DCPI_INSN_CALL)) ||
	    (!strncmp(m, "bl", 2) && m[2] == '\0' && !(in->flags & DCPI_INSN_CALL)) ||
	    ((!strcmp(m, "jmp") || !strcmp(m, "b")) && (in->flags & DCPI_INSN_COND)) ||
	    ((m[0] == 'j' && strcmp(m, "jmp") && strcmp(m, "jmpq")) &&
	     !(in->flags & DCPI_INSN_COND))) {
		(*bad_flags)++;
		printf("# %s: 0x%" PRIx64 " %s has flags 0x%x\n", what, in->vaddr, m, in->flags);
	}
	if (!o->has_target || !(in->flags & (DCPI_INSN_JUMP | DCPI_INSN_CALL)))
		return;
	(*targets)++;
	if (!(in->flags & DCPI_INSN_DIRECT) || in->target != o->target) {
		(*bad_targets)++;
		printf("# %s: 0x%" PRIx64 " %s target 0x%" PRIx64 ", objdump 0x%" PRIx64 "\n",
		       what, in->vaddr, m, in->target, o->target);
	}
}

/* Disassemble fn and compare with objdump; returns how many branch
 * targets were compared. */
static int compare_fn(struct dcpi_disasm *d, const char *what, const char *nm,
		      const char *objdump, const char *bin, const char *fn)
{
	static struct oline ol[MAXI];
	struct dcpi_insn *in = NULL;
	uint64_t a = 0, sz = 0;
	size_t n = 0, i, j = 0;
	int no, agree = 0, addr_ok = 1, bad_flags = 0, targets = 0, bad_targets = 0, err;

	if (fx_nm(nm, bin, fn, &a, &sz) || !sz) {
		T_OK(0, "%s: nm finds %s", what, fn);
		return 0;
	}
	no = objdump_fn(objdump, bin, a, a + sz, ol, MAXI);
	err = dcpi_disasm_collect(d, a, a + sz, &in, &n);
	T_EQ(err, 0, "%s: %s disassembles (%s)", what, fn, err ? dcpi_errmsg() : "ok");
	T_OK(no > 0, "%s: objdump lists %s (%d instructions)", what, fn, no);
	T_EQ(n, no, "%s: %s: as many instructions as objdump", what, fn);
	for (i = 0; i < n && j < (size_t)no; i++, j++) {
		if (in[i].vaddr != ol[j].addr) {
			addr_ok = 0;
			printf("# %s: insn %zu at 0x%" PRIx64 ", objdump 0x%" PRIx64 "\n", what, i,
			       in[i].vaddr, ol[j].addr);
			break;
		}
		if (same_mnem(in[i].mnemonic, ol[j].mnem))
			agree++;
		else
			printf("# %s: 0x%" PRIx64 " mnemonic \"%s\", objdump \"%s\"\n", what,
			       in[i].vaddr, in[i].mnemonic, ol[j].mnem);
		check_flags(what, &in[i], &ol[j], &bad_flags, &targets, &bad_targets);
	}
	T_OK(addr_ok && n > 0, "%s: %s: every address matches objdump", what, fn);
	T_OK(n > 0 && agree * 100 >= (int)n * 95, "%s: %s: %d of %zu mnemonics agree (>= 95%%)",
	     what, fn, agree, n);
	T_EQ(bad_flags, 0, "%s: %s: ret/call/jump classification", what, fn);
	T_EQ(bad_targets, 0, "%s: %s: %d direct targets equal objdump's", what, fn, targets);
	free(in);
	return targets;
}

static void test_x86(void)
{
	const char *bin = fx_path("hot"), *dbg = fx_path("hot.debug");
	struct dcpi_disasm *d = NULL;
	struct dcpi_insn *in = NULL;
	uint64_t a = 0, sz = 0;
	size_t n = 0;
	int err, targets = 0;

	if (fx_sh("cc -g -O2 -o '%s' '%s/tests/workloads/srcline_hot.c'", bin, fx_root)) {
		T_OK(0, "x86 fixture compiles");
		return;
	}
	err = dcpi_disasm_open(bin, &d);
	T_EQ(err, 0, "opens the fixture (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	T_STREQ(dcpi_disasm_arch(d), "x86-64", "architecture from e_machine");
	targets += compare_fn(d, "att", "nm", "objdump -d", bin, "main");
	targets += compare_fn(d, "att", "nm", "objdump -d", bin, "hot_loop");
	targets += compare_fn(d, "att", "nm", "objdump -d", bin, "pick");
	T_OK(targets > 0, "some direct branches were compared (%d)", targets);
	T_EQ(dcpi_disasm_set_syntax(d, DCPI_SYNTAX_INTEL), 0, "Intel syntax can be chosen");
	compare_fn(d, "intel", "nm", "objdump -d -M intel", bin, "main");

	fx_nm("nm", bin, "main", &a, &sz);
	T_EQ(dcpi_disasm_range(d, 0xfffffffff000ull, 0xfffffffff010ull, NULL, NULL), -ERANGE,
	     "a range outside the image is refused (%s)", dcpi_errmsg());
	T_EQ(dcpi_disasm_range(d, a, a + DCPI_DISASM_MAX_RANGE + 1, NULL, NULL), -EFBIG,
	     "a range over the cap is refused");
	T_EQ(dcpi_disasm_range(d, a + 4, a, NULL, NULL), -EINVAL, "lo > hi is refused");
	T_OK(dcpi_disasm_collect(d, a, a, &in, &n) == 0 && n == 0 && !in, "an empty range is empty");
	dcpi_disasm_close(d);

	d = NULL;
	if (fx_sh("objcopy --only-keep-debug '%s' '%s'", bin, dbg)) {
		T_OK(0, "objcopy --only-keep-debug");
		return;
	}
	err = dcpi_disasm_open(dbg, &d);
	T_EQ(err, 0, "a debug-only file opens");
	if (!err)
		T_EQ(dcpi_disasm_range(d, a, a + sz, NULL, NULL), -ENODATA,
		     "a debug-only file gives -ENODATA (%s)", dcpi_errmsg());
	dcpi_disasm_close(d);
}

/* A file its owner truncates while a tool (root's) decodes it: read into
 * memory at open, so the decoding goes on, never a SIGBUS. */
static void test_truncated_under_us(void)
{
	const char *cp = fx_path("shrinks");
	struct dcpi_disasm *d = NULL;
	struct dcpi_insn *in = NULL;
	uint64_t a = 0, sz = 0;
	size_t n = 0;

	if (fx_sh("cp '%s' '%s'", fx_path("hot"), cp) || fx_nm("nm", cp, "main", &a, &sz)) {
		T_OK(0, "copy of the fixture");
		return;
	}
	T_EQ(dcpi_disasm_open(cp, &d), 0, "opens the copy");
	if (!d)
		return;
	T_EQ(truncate(cp, 0), 0, "the owner truncates it");
	T_EQ(dcpi_disasm_collect(d, a, a + sz, &in, &n), 0, "main still decodes, from memory");
	T_OK(n > 0, "%zu instructions, no SIGBUS", n);
	free(in);
	dcpi_disasm_close(d);
}

/* Patch e_machine (offset 18, little-endian) of a copy. */
static void test_refusals(void)
{
	const char *txt = fx_path("text"), *ppc = fx_path("ppc");
	struct dcpi_disasm *d = NULL;
	int err;

	T_OK(dcpi_disasm_open(fx_path("missing"), &d) == -ENOENT && !d, "missing file: -ENOENT");
	fx_sh("echo 'not an elf' > '%s'", txt);
	T_EQ(dcpi_disasm_open(txt, &d), -ENOEXEC, "a text file: -ENOEXEC");
	if (fx_sh("cp '%s' '%s' && printf '\\025\\000' | dd of='%s' bs=1 seek=18 conv=notrunc "
	       "2>/dev/null", fx_path("hot"), ppc, ppc)) {
		T_OK(0, "patched copy made");
		return;
	}
	err = dcpi_disasm_open(ppc, &d);
	T_OK(err == -ENOTSUP && strstr(dcpi_errmsg(), "machine 21"),
	     "an unmapped machine: -ENOTSUP naming it (%s)", dcpi_errmsg());
	dcpi_disasm_close(d);
}

static void test_aarch64(void)
{
	const char *src = fx_path("a64.c"), *obj = fx_path("a64.o"), *bin = fx_path("a64");
	struct dcpi_disasm *d = NULL;
	FILE *f;
	int err;

	if (fx_sh("command -v clang >/dev/null && command -v ld.lld >/dev/null && "
	       "command -v llvm-objdump >/dev/null && "
	       "command -v llvm-nm >/dev/null") != 0 ||
	    fx_sh("clang --print-targets | grep -q aarch64") != 0) {
		T_SKIP("no clang/ld.lld/llvm-objdump with AArch64 to build a fixture");
		return;
	}
	f = fopen(src, "w");
	if (!f)
		return;
	fputs("int g(int x) { return x * 3; }\n"
	      "int f(int n) { int s = 0; for (int i = 0; i < n; i++) s += g(i) ^ i;\n"
	      "  if (s < 0) return f(s + 1000); return s; }\n", f);
	fclose(f);
	if (fx_sh("clang --target=aarch64-linux-gnu -O1 -fno-inline -ffreestanding -c -o '%s' '%s'"
	       " && ld.lld -e f -o '%s' '%s'", obj, src, bin, obj)) {
		T_OK(0, "AArch64 fixture builds");
		return;
	}
	err = dcpi_disasm_open(bin, &d);
	T_EQ(err, 0, "AArch64 fixture opens (%s)", err ? dcpi_errmsg() : "ok");
	if (err)
		return;
	T_STREQ(dcpi_disasm_arch(d), "aarch64", "AArch64 from e_machine");
	T_OK(compare_fn(d, "a64", "llvm-nm", "llvm-objdump -d", bin, "f") > 0,
	     "AArch64 direct targets compared");
	T_EQ(dcpi_disasm_set_syntax(d, DCPI_SYNTAX_INTEL), -ENOTSUP, "no Intel syntax on AArch64");
	dcpi_disasm_close(d);
}

int main(void)
{
	if (fx_setup("disasm"))
		return 1;
	test_x86();
	test_truncated_under_us();
	test_refusals();
	test_aarch64();
	fx_cleanup();
	return t_done();
}
