/* Control-flow graphs against callgrind: tests/workloads/cfgfix.c is
 * built -O2 -g and run under valgrind --tool=callgrind; for each of its
 * fx_* functions, every jump callgrind recorded inside it must be an edge
 * of our graph into a block start, every block's instructions must have
 * run equally often (a block is entered only at its first), and the
 * exact-count import (load offset by symbols) must land on the
 * function's instructions.  The callgrind reader and the exact store are
 * checked on the way: a written file reads back equal; bad input is
 * refused.  Skips, saying why, without valgrind. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/calc.h"
#include "dcpi/callgrind.h"
#include "dcpi/cfg.h"
#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "dcpi/file.h"
#include "dcpi/symtab.h"
#include "fixture.h"
#include "tap.h"

static struct dcpi_disasm *dis;

static int read_image(uint64_t vaddr, void *buf, size_t len, void *arg)
{
	(void)arg;
	return dcpi_disasm_read(dis, vaddr, buf, len);
}

static void check_function(const struct dcpi_symtab *st, const struct dcpi_exact *ex,
			   const char *name)
{
	const struct dcpi_sym *s;
	struct dcpi_cfg_opts o = { "x86-64", NULL, read_image, NULL, NULL, 0 };
	struct dcpi_insn *v = NULL;
	struct dcpi_cfg g;
	size_t n = 0, njumps = 0, bad_jumps = 0, uneven = 0, ran = 0;

	if (dcpi_symtab_find(st, name, &s, 1) != 1) {
		T_OK(0, "%s: found in the fixture's symbols", name);
		return;
	}
	T_EQ(dcpi_disasm_collect(dis, s->vaddr, s->vaddr + s->size, &v, &n), 0, "%s decodes", name);
	T_EQ(dcpi_cfg_build(v, n, sizeof(*v), &o, &g), 0, "%s: graph builds", name);
	for (size_t j = 0; j < ex->njumps; j++) {
		const struct dcpi_exact_jump *x = &ex->jumps[j];
		size_t a, b, k, ne;

		if (x->from < s->vaddr || x->from >= s->vaddr + s->size || x->to < s->vaddr ||
		    x->to >= s->vaddr + s->size)
			continue;
		njumps++;
		a = dcpi_cfg_block_at(&g, x->from);
		b = dcpi_cfg_block_at(&g, x->to);
		k = dcpi_cfg_out_edges(&g, a, &ne);
		if (b >= g.nblocks || g.blocks[b].start != x->to) {
			bad_jumps++;
			continue;
		}
		while (ne && g.edges[k].to != b)
			k++, ne--;
		bad_jumps += ne == 0;
	}
	for (size_t b = 0; b < g.nblocks; b++) {
		const struct dcpi_cfg_block *bl = &g.blocks[b];
		uint64_t c0 = dcpi_exact_count(ex, bl->start);

		ran += c0 > 0;
		for (size_t i = bl->first; i < bl->first + bl->ninsns; i++)
			uneven += dcpi_exact_count(ex, v[i].vaddr) != c0;
	}
	T_OK(njumps >= 3, "%s: callgrind recorded jumps inside it (%zu)", name, njumps);
	T_EQ(bad_jumps, 0, "%s: every recorded jump is an edge into a block start", name);
	T_EQ(uneven, 0, "%s: every block's instructions ran equally often", name);
	T_OK(ran >= 3, "%s: %zu blocks ran", name, ran);
	if (!strcmp(name, "fx_switch"))
		T_EQ(g.ntables, 1, "fx_switch: its jump table recovered");
	dcpi_cfg_free(&g);
	free(v);
}

static void check_store(const struct dcpi_exact *ex)
{
	struct dcpi_exact back;
	uint8_t *data = NULL;
	size_t len;
	int err;

	T_EQ(dcpi_exact_write(fx_tmp, ex), 0, "exact counts written");
	err = dcpi_exact_read(fx_tmp, ex->build_id, ex->build_id_len, &back);
	T_EQ(err, 0, "and read back");
	if (err)
		return;
	T_EQ(back.ninsns, ex->ninsns, "same instructions");
	T_EQ(back.njumps, ex->njumps, "same jumps");
	T_OK(!memcmp(back.insns, ex->insns, ex->ninsns * sizeof(*ex->insns)), "same counts");
	dcpi_exact_free(&back);
	/* a truncated file is refused, not half read */
	fx_sh("f=$(ls '%s'/exact/*); head -c 40 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"", fx_tmp);
	T_EQ(dcpi_exact_read(fx_tmp, ex->build_id, ex->build_id_len, &back), -EBADMSG,
	     "a truncated exact file: EBADMSG");
	(void)data;
	(void)len;
}

static void check_reader_bad(void)
{
	struct dcpi_callgrind cg;
	static const char nopos[] = "# callgrind format\nversion: 1\npositions: line\n"
				    "events: Ir\nob=/x\nfn=f\n12 3\n";
	static const char noob[] = "# callgrind format\npositions: instr\nevents: Ir\n0x10 3\n";
	static const char ok[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
				 "ob=(1) /bin/x\nfn=(2) (below main)\n0x10 1 5\n+2 1 5\n"
				 "jump=4 0x10 1\n0x12 1\ncalls=1 0x99 0\n0x14 2 100\n";

	T_EQ(dcpi_callgrind_parse("hello", 5, &cg), -EBADMSG, "not callgrind: EBADMSG");
	T_EQ(dcpi_callgrind_parse(nopos, sizeof(nopos) - 1, &cg), -EBADMSG,
	     "no instruction positions: EBADMSG");
	T_OK(strstr(dcpi_errmsg(), "--dump-instr=yes") != NULL, "the message says what to do");
	T_EQ(dcpi_callgrind_parse(noob, sizeof(noob) - 1, &cg), -EBADMSG, "costs before ob=");
	{
		static const char neg[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					  "ob=/bin/x\nfn=f\n0x10 1 -1\n";
		static const char negj[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					   "ob=/bin/x\nfn=f\njump=-1 0x20 1\n0x10 1 5\n";
		static const char huge[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					   "ob=/bin/x\nfn=f\n0x10 1 9007199254740992\n";

		/* strtoull took "-1" as 2^64 - 1, shown as 18446744073709551616 */
		T_EQ(dcpi_callgrind_parse(neg, sizeof(neg) - 1, &cg), -EBADMSG, "a cost of -1 refused");
		T_EQ(dcpi_callgrind_parse(negj, sizeof(negj) - 1, &cg), -EBADMSG,
		     "a jump count of -1 refused");
		T_EQ(dcpi_callgrind_parse(huge, sizeof(huge) - 1, &cg), -EBADMSG,
		     "a cost above 2^53 - 1 refused");
	}
	{
		static const char most[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					   "ob=/bin/x\nfn=f\n0x10 1 9007199254740991\n";
		static const char gap[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					  "ob=(1) /bin/x\nfn=(5) f\nfn=(3)\n0x10 1 5\n";
		static const char undef[] = "# callgrind format\npositions: instr line\nevents: Ir\n"
					    "ob=(1) /bin/x\nfn=(2)\n0x10 1 5\n";

		T_EQ(dcpi_callgrind_parse(most, sizeof(most) - 1, &cg), 0, "a cost of 2^53 - 1 taken");
		if (cg.nobjs == 1)
			T_EQ(dcpi_exact_count(&cg.objs[0].counts, 0x10), UINT64_C(9007199254740991),
			     "... as it is");
		dcpi_callgrind_free(&cg);
		T_EQ(dcpi_callgrind_parse(gap, sizeof(gap) - 1, &cg), -EBADMSG,
		     "a compressed name below a defined one but never defined itself refused");
		T_OK(strstr(dcpi_errmsg(), "used before it is defined") != NULL, "... saying so: %s",
		     dcpi_errmsg());
		T_EQ(dcpi_callgrind_parse(undef, sizeof(undef) - 1, &cg), -EBADMSG,
		     "a compressed name past every defined one refused");
	}
	T_EQ(dcpi_callgrind_parse(ok, sizeof(ok) - 1, &cg), 0, "compressed names, relative "
	     "positions, jumps and calls parse");
	if (cg.nobjs == 1) {
		const struct dcpi_exact *e = &cg.objs[0].counts;

		T_STREQ(e->path, "/bin/x", "object named by its compressed name");
		T_EQ(e->ninsns, 2, "two instructions (a call's inclusive cost is not one)");
		T_EQ(dcpi_exact_count(e, 0x12), 5, "+2 is 0x12");
		T_EQ(e->njumps, 1, "one jump");
		T_EQ(e->jumps[0].from, 0x12, "its source is the next line's position");
		T_EQ(cg.objs[0].nfns, 1, "one function, '(below main)' not a compressed name");
	}
	dcpi_callgrind_free(&cg);
}

int main(void)
{
	const char *bin, *out;
	struct dcpi_callgrind cg;
	struct dcpi_symtab *st = NULL;
	struct dcpi_exact ex;
	uint8_t *text = NULL;
	size_t len = 0;

	check_reader_bad();
	if (fx_sh("command -v valgrind >/dev/null 2>&1")) {
		T_SKIP("valgrind is not installed (scripts/install-deps installs it)");
		return t_done();
	}
	if (fx_setup("cfgcg"))
		return 1;
	bin = fx_path("cfgfix");
	out = fx_path("cg.out");
	if (fx_sh("cc -O2 -g -fno-inline -o '%s' '%s/tests/workloads/cfgfix.c'", bin, fx_root) ||
	    fx_sh("valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes "
		  "--compress-strings=no --compress-pos=no --quiet --callgrind-out-file='%s' '%s'",
		  out, bin)) {
		T_OK(0, "fixture builds and runs under callgrind");
		fx_cleanup();
		return t_done();
	}
	T_EQ(dcpi_file_read(out, (size_t)1 << 30, &text, &len), 0, "callgrind's output read");
	T_EQ(dcpi_callgrind_parse((const char *)text, len, &cg), 0, "and parsed");
	free(text);
	T_EQ(dcpi_symtab_open(bin, NULL, 0, NULL, &st), 0, "fixture's symbols");
	T_EQ(dcpi_disasm_open(bin, &dis), 0, "fixture's code");
	for (size_t i = 0; i < cg.nobjs; i++) {
		if (strcmp(cg.objs[i].counts.path, bin))
			continue;
		T_EQ(dcpi_calc_exact_import(&cg.objs[i], st, &ex), 0, "counts moved to ELF addresses");
		check_function(st, &ex, "fx_switch");
		check_function(st, &ex, "fx_isort");
		check_function(st, &ex, "fx_calls");
		check_store(&ex);
		dcpi_exact_free(&ex);
	}
	dcpi_disasm_close(dis);
	dcpi_symtab_close(st);
	dcpi_callgrind_free(&cg);
	fx_cleanup();
	return t_done();
}
