/* Stall culprits (stall.h) on hand-assembled x86-64 loops whose answers
 * are worked out here (bytes from GNU as, listed beside them): a pointer
 * chase (d), a divide (f), a data-dependent branch (p), a locked
 * increment (s), a jump to another cache line (i); evidence weighing;
 * min..max ranges; codes and names; block coverage (coverage.h); refusals. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cfg.h"
#include "dcpi/coverage.h"
#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/stall.h"
#include "tap.h"

#define BASE 0x1000
#define BIT(k) (1u << (k))

struct proc {
	struct dcpi_insn *v;
	size_t n;
	struct dcpi_cfg g;
	struct dcpi_stall_insn *s;
};

static int explain(const uint8_t *code, size_t len, const uint64_t **evidence, struct proc *p)
{
	struct dcpi_disasm *d;
	struct dcpi_stall_input in = { 0 };

	memset(p, 0, sizeof(*p));
	if (dcpi_disasm_open_mem("x86-64", code, len, BASE, &d))
		return -1;
	dcpi_disasm_collect(d, BASE, BASE + len, &p->v, &p->n);
	dcpi_disasm_close(d);
	if (dcpi_cfg_build(p->v, p->n, sizeof(*p->v), NULL, &p->g))
		return -1;
	p->s = calloc(p->n, sizeof(*p->s));
	in.insns = p->v;
	in.n = p->n;
	in.stride = sizeof(*p->v);
	in.cfg = &p->g;
	for (int k = 0; evidence && k < DCPI_STALL_NKINDS; k++)
		in.evidence[k] = evidence[k];
	return dcpi_stall_culprits(&in, p->s);
}

static void done(struct proc *p)
{
	dcpi_cfg_free(&p->g);
	free(p->v);
	free(p->s);
}

static const char *codes(unsigned m)
{
	static char b[DCPI_STALL_NKINDS + 1];

	dcpi_stall_codes(m, b);
	return b;
}

static void test_chase(void)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x00,       /* 0: mov (%rax),%rax */
		0x83, 0xe9, 0x01,       /* 3: sub $1,%ecx */
		0x75, 0xf8,             /* 6: jne 0 */
		0xc3,                   /* 8: ret */
	};
	struct proc p;

	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "chase explained");
	T_OK(p.s[1].possible & BIT(DCPI_STALL_DCACHE), "the load's skid successor: d (%s)",
	     codes(p.s[1].possible));
	T_EQ(p.s[1].blame[DCPI_STALL_DCACHE], 0, "blamed on the load");
	T_OK(p.s[0].possible & BIT(DCPI_STALL_DCACHE), "the load itself: d (%s)",
	     codes(p.s[0].possible));
	T_OK(p.s[0].possible & BIT(DCPI_STALL_BRANCH), "loop head after jne: p");
	T_OK(!(p.s[1].possible & BIT(DCPI_STALL_FU)), "no divide: no f");
	T_EQ(p.s[1].culprits, p.s[1].possible, "no evidence: culprits are the possibilities");
	done(&p);
}

static void test_divide(void)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf0,       /* 0: mov %rsi,%rax */
		0x31, 0xd2,             /* 1: xor %edx,%edx */
		0x48, 0xf7, 0xf1,       /* 2: div %rcx */
		0x48, 0x01, 0xc3,       /* 3: add %rax,%rbx */
		0xff, 0xcf,             /* 4: dec %edi */
		0x75, 0xf1,             /* 5: jne 0 */
		0xc3,
	};
	struct proc p;

	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "divide explained");
	T_STREQ(codes(p.s[3].possible), "f", "the divide's consumer: only f");
	T_EQ(p.s[3].blame[DCPI_STALL_FU], 2, "blamed on the div");
	done(&p);
}

static void test_branch(void)
{
	static const uint8_t code[] = {
		0x8b, 0x06,             /* 0 0x00: mov (%rsi),%eax */
		0x48, 0x83, 0xc6, 0x04, /* 1 0x02: add $4,%rsi */
		0xa8, 0x01,             /* 2 0x06: test $1,%al */
		0x74, 0x03,             /* 3 0x08: je 0x0d */
		0x48, 0x01, 0xc3,       /* 4 0x0a: add %rax,%rbx */
		0x48, 0xff, 0xc2,       /* 5 0x0d: inc %rdx */
		0xff, 0xcf,             /* 6: dec %edi */
		0x75, 0xec,             /* 7: jne 0 */
		0xc3,
	};
	struct proc p;

	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "branch explained");
	T_STREQ(codes(p.s[5].possible), "p", "the je's target: only p");
	T_EQ(p.s[5].blame[DCPI_STALL_BRANCH], 3, "blamed on the je");
	T_OK(p.s[4].possible & BIT(DCPI_STALL_BRANCH), "its fall-through: p");
	T_OK(p.s[2].possible & BIT(DCPI_STALL_DCACHE), "test reads the loaded %%al: d (%s)",
	     codes(p.s[2].possible));
	done(&p);
}

static void test_locked(void)
{
	static const uint8_t code[] = {
		0xf0, 0x48, 0x83, 0x02, 0x01, /* 0: lock addq $1,(%rdx) */
		0xff, 0xcf,                   /* 1: dec %edi */
		0x75, 0xf7,                   /* 2: jne 0 */
		0xc3,
	};
	struct proc p;

	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "locked explained");
	T_OK(p.s[1].possible & BIT(DCPI_STALL_SYNC), "after lock add: s (%s)",
	     codes(p.s[1].possible));
	T_OK(p.s[0].possible & BIT(DCPI_STALL_SYNC), "the lock add itself: s");
	T_OK(p.s[1].possible & BIT(DCPI_STALL_WRITE), "it stores: w");
	done(&p);
}

static void test_icache(void)
{
	uint8_t code[2 + 100 + 4];
	struct proc p;

	code[0] = 0xeb;                          /* jmp +100 */
	code[1] = 100;
	memset(code + 2, 0x90, 100);             /* nops: other lines */
	memcpy(code + 102, "\x48\xff\xc2\xc3", 4); /* inc %rdx; ret */
	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "jump explained");
	T_STREQ(codes(p.s[p.n - 2].possible), "i", "a jump to another line: i");
	done(&p);
}

static void test_evidence(void)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x00, 0x83, 0xe9, 0x01, 0x75, 0xf8, 0xc3,
	};
	uint64_t miss[4] = { 7, 0, 0, 0 }, none[4] = { 0 };
	const uint64_t *ev[DCPI_STALL_NKINDS] = { 0 };
	struct proc p;

	ev[DCPI_STALL_DCACHE] = miss;
	ev[DCPI_STALL_BRANCH] = none;
	T_EQ(explain(code, sizeof(code), ev, &p), 0, "with evidence");
	T_EQ(p.s[0].weight[DCPI_STALL_DCACHE], 7, "misses near weigh d");
	T_OK(p.s[0].measured & BIT(DCPI_STALL_DCACHE), "d measured");
	T_OK(!(p.s[0].culprits & BIT(DCPI_STALL_BRANCH)), "p had evidence, none near: dropped");
	T_OK(p.s[0].culprits & BIT(DCPI_STALL_DTLB), "D had no evidence: stays possible");
	done(&p);

	ev[DCPI_STALL_DCACHE] = none;
	T_EQ(explain(code, sizeof(code), ev, &p), 0, "with empty evidence");
	T_EQ(p.s[0].culprits, p.s[0].possible, "nothing seen anywhere: all stay possible");
	done(&p);
}

static void test_ranges(void)
{
	struct dcpi_stall_sum s = { 0 };
	struct dcpi_stall_insn a = { .culprits = BIT(DCPI_STALL_DCACHE) | BIT(DCPI_STALL_FU) };
	struct dcpi_stall_insn b = { .culprits = BIT(DCPI_STALL_FU) };
	struct dcpi_stall_insn c = { 0 };

	dcpi_stall_add(&s, &a, 10);
	dcpi_stall_add(&s, &b, 4);
	dcpi_stall_add(&s, &c, 3);
	dcpi_stall_add(&s, &b, -1);
	T_OK(s.min[DCPI_STALL_DCACHE] == 0 && s.max[DCPI_STALL_DCACHE] == 10, "d 0..10");
	T_OK(s.min[DCPI_STALL_FU] == 4 && s.max[DCPI_STALL_FU] == 14, "f 4..14");
	T_OK(s.unexplained == 3 && s.total == 17, "3 unexplained of 17; negative ignored");
}

static void test_names(void)
{
	char b[DCPI_STALL_NKINDS + 1];

	T_EQ(dcpi_stall_code(DCPI_STALL_DCACHE), 'd', "d");
	T_STREQ(dcpi_stall_name(DCPI_STALL_DCACHE), "D-cache miss", "its name");
	T_EQ(dcpi_stall_code(DCPI_STALL_NKINDS), '?', "?");
	T_EQ(dcpi_stall_kind_of('s'), DCPI_STALL_SYNC, "s is sync");
	T_EQ(dcpi_stall_kind_of('x'), -1, "x is nothing");
	T_EQ(dcpi_stall_kind_of('?'), -1, "? is no kind");
	T_EQ(dcpi_stall_event_kind("branch-misses"), DCPI_STALL_BRANCH, "branch-misses: p");
	T_EQ(dcpi_stall_event_kind("cpu-clock"), -1, "cpu-clock: none");
	dcpi_stall_codes(0, b);
	T_STREQ(b, "?", "empty mask");
	dcpi_stall_codes(~0u, b);
	T_STREQ(b, "iIdDwpfsm", "all");
}

/* coverage.h on the branch loop: the loop's blocks counted, the entry and
 * what only leads to or from them implied, the rest not run. */
static void test_coverage(void)
{
	static const uint8_t code[] = {
		0x8b, 0x06, 0x48, 0x83, 0xc6, 0x04, 0xa8, 0x01, 0x74, 0x03, /* B0: ... je */
		0x48, 0x01, 0xc3,                                           /* B1: add */
		0x48, 0xff, 0xc2, 0xff, 0xcf, 0x75, 0xec,                   /* B2: inc; dec; jne */
		0xc3,                                                       /* B3: ret */
	};
	struct proc p;
	struct dcpi_annotation a = { 0 };
	struct dcpi_coverage c;
	double freq[4] = { 0, 0, 10, 0 };

	T_EQ(explain(code, sizeof(code), NULL, &p), 0, "graph");
	T_EQ(p.g.nblocks, 4, "four blocks");
	a.ninsns = 0;   /* no lines: blocks only */
	T_EQ(dcpi_coverage_of(&a, &p.g, freq, sizeof(freq[0]), &c), 0, "coverage");
	T_EQ(c.block_ran[2], 1, "the counted block ran");
	T_EQ(c.block_ran[0], 2, "the entry: implied");
	T_EQ(c.block_ran[3], 0, "B2 goes to B0 or B3: B3 not implied");
	T_EQ(c.block_ran[1], 0, "B2 comes from B0 or B1: B1 not implied");
	T_EQ(c.blocks_ran, 2, "2 of 4");
	T_EQ(c.blocks_implied, 1, "1 implied");
	dcpi_coverage_free(&c);
	freq[2] = 0;
	freq[1] = 5;   /* B1 ran: it goes on only to B2, and comes only from B0 */
	T_EQ(dcpi_coverage_of(&a, &p.g, freq, sizeof(freq[0]), &c), 0, "coverage from B1");
	T_EQ(c.block_ran[2], 2, "B1's only successor: implied");
	T_EQ(c.block_ran[0], 2, "B1's only predecessor: implied");
	T_EQ(c.block_ran[3], 0, "B3 still not");
	dcpi_coverage_free(&c);
	T_EQ(dcpi_coverage_of(&a, &p.g, NULL, 0, &c), 0, "nothing counted");
	T_EQ(c.blocks_ran, 0, "nothing ran, nothing implied");
	dcpi_coverage_free(&c);
	done(&p);
}

static void test_refusals(void)
{
	struct dcpi_stall_input in = { 0 };
	struct dcpi_stall_insn s;

	T_EQ(dcpi_stall_culprits(&in, &s), -EINVAL, "nothing: EINVAL");
}

int main(void)
{
	test_chase();
	test_divide();
	test_branch();
	test_locked();
	test_icache();
	test_evidence();
	test_ranges();
	test_names();
	test_coverage();
	test_refusals();
	return t_done();
}
