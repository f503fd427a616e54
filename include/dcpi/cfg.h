/* The control-flow graph of one procedure, from its instructions, and
 * the frequency equivalence classes of its blocks.  Data only: the
 * commands print it (after bpftool's cfg.c, which can only dump).
 *
 * Blocks.  A leader is the procedure's first instruction, every direct
 * jump's target inside the procedure, a recovered jump table's targets,
 * and the instruction after every jump, return, trap, undecodable byte or
 * call to a function that does not return (abort, exit, __stack_chk_fail,
 * ...; the caller says which targets those are).  Other calls do not end
 * a block: control comes back.
 *
 * Nodes.  Blocks are nodes 0..nblocks-1 in address order (block 0 holds
 * the entry).  Two more nodes close the graph into a circulation:
 * DCPI_CFG_UNKNOWN(g) stands for every target of an indirect jump that
 * could not be resolved (edges into it from such jumps; edges out of it to
 * every block nothing else enters, and to the outside, since the jump may
 * be a tail call), and DCPI_CFG_OUTSIDE(g) for the rest of the program
 * (an edge from it to the entry and to each of opts->entries; edges into
 * it from returns, tail calls,
 * branches out of the range, calls that do not return and traps).
 *
 * Jump tables: x86-64's two forms as GCC and Clang emit them are
 * recovered when a bound check (cmp $N; ja) precedes them and the table
 * can be read (opts->read): "jmp *TABLE(,%r,8)" (absolute entries) and
 * "lea TABLE(%rip),%b; movslq (%b,%r,4),%x; add %b,%x; jmp *%x" (entries
 * relative to the table).  Anything else goes to the unknown node.
 *
 * Equivalence classes: blocks a and b are in one class when they lie on
 * the same cycles of the graph closed through the outside node (cycle
 * equivalence, Johnson, Pearson and Pingali 1994): they run equally often
 * on every complete run.  (Dominance, post-dominance and the same
 * innermost loop, as LLVM's sample loader groups blocks, are not enough:
 * a loop's way out may post-dominate its head and pass on some turns
 * only.)  A block the outside does not reach, or that does not reach the
 * outside, is a class of its own.
 *
 * Ownership: the graph owns its arrays; dcpi_cfg_free() releases them.
 * Bounds: at most DCPI_CFG_MAX_BLOCKS blocks (-EFBIG beyond: a procedure
 * too large to analyse), at most DCPI_CFG_MAX_TABLE entries per jump table.
 */
#ifndef DCPI_CFG_H
#define DCPI_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/disasm.h"

#define DCPI_CFG_MAX_BLOCKS ((size_t)1 << 15)
#define DCPI_CFG_MAX_TABLE 4096

#define DCPI_CFG_UNKNOWN(g) ((g)->nblocks)
#define DCPI_CFG_OUTSIDE(g) ((g)->nblocks + 1)
#define DCPI_CFG_NNODES(g) ((g)->nblocks + 2)

enum dcpi_cfg_edge_kind {
	DCPI_EDGE_FALL,      /* into the next block */
	DCPI_EDGE_JUMP,      /* a direct jump's target */
	DCPI_EDGE_TABLE,     /* a jump table's entry */
	DCPI_EDGE_UNKNOWN,   /* into or out of the unknown node */
	DCPI_EDGE_ENTRY,     /* the outside into the entry */
	DCPI_EDGE_EXIT,      /* out of the procedure */
};

/* Why a block ends (dcpi_cfg_block.end_kind). */
enum dcpi_cfg_end {
	DCPI_END_FALL,       /* the next one is a leader */
	DCPI_END_JUMP,       /* a jump, direct or not, conditional or not */
	DCPI_END_RET,
	DCPI_END_NORETURN,   /* a call that does not come back */
	DCPI_END_TRAP,       /* ud2, hlt, brk, or bytes that do not decode */
	DCPI_END_RANGE,      /* the procedure's last instruction falls out of it */
};

struct dcpi_cfg_block {
	uint64_t start, end;         /* [start, end) virtual addresses */
	size_t first, ninsns;        /* its instructions: insns[first..first+ninsns) */
	enum dcpi_cfg_end end_kind;
	size_t cls;                  /* equivalence class, 0..nclasses-1 */
	size_t loop;                 /* header block of its innermost loop, or
					SIZE_MAX when in none */
	int reachable;               /* from the entry */
	int self_loop;               /* jumps to its own start */
};

struct dcpi_cfg_edge {
	size_t from, to;             /* nodes */
	enum dcpi_cfg_edge_kind kind;
};

struct dcpi_cfg {
	struct dcpi_cfg_block *blocks;
	size_t nblocks;
	struct dcpi_cfg_edge *edges;  /* sorted by from, then to; no duplicates */
	size_t nedges;
	size_t nclasses;
	size_t ntables;               /* jump tables recovered */
	size_t nunresolved;           /* indirect jumps sent to the unknown node */
};

struct dcpi_cfg_opts {
	const char *arch;            /* dcpi_disasm_arch(); NULL: "x86-64" */
	/* 1 when a call to target never returns (the caller names it through
	 * its symbols, dcpi_cfg_noreturn_name); NULL: every call returns. */
	int (*noreturn)(uint64_t target, void *arg);
	/* Read len bytes of the image at vaddr (jump tables): 0, or negative
	 * when they are not there.  NULL: tables are not read. */
	int (*read)(uint64_t vaddr, void *buf, size_t len, void *arg);
	void *arg;
	/* Addresses inside the procedure entered from outside it besides its
	 * entry: where its split-off cold part (GCC's f.cold) jumps back.
	 * Each that starts an instruction starts a block entered from the
	 * outside node. */
	const uint64_t *entries;
	size_t nentries;
};

/* Build the graph of the instructions insns[0..n-1] (address order,
 * contiguous, as dcpi_disasm_range gives them) of the procedure [lo, hi).
 * stride is the distance in bytes between instructions (sizeof(struct
 * dcpi_insn) for an array of them; larger when each sits in a bigger row).
 * o may be NULL.  0, or -EINVAL (n == 0), -EFBIG (too many blocks),
 * -ENOMEM; *g is zeroed on failure. */
int dcpi_cfg_build(const struct dcpi_insn *insns, size_t n, size_t stride,
		   const struct dcpi_cfg_opts *o, struct dcpi_cfg *g);
void dcpi_cfg_free(struct dcpi_cfg *g);

/* The block holding vaddr, or g->nblocks.  O(log n). */
size_t dcpi_cfg_block_at(const struct dcpi_cfg *g, uint64_t vaddr);
/* The edges out of node v: *n of them from the returned index. */
size_t dcpi_cfg_out_edges(const struct dcpi_cfg *g, size_t v, size_t *n);

/* 1 when a function of this name never returns: abort, exit, _exit,
 * _Exit, quick_exit, __stack_chk_fail, __assert_fail, __assert_rtn,
 * __cxa_throw, __cxa_rethrow, _Unwind_Resume, __fortify_fail,
 * __chk_fail, err, errx, verr, verrx, pthread_exit, longjmp,
 * siglongjmp, __longjmp_chk, std::terminate, __cxa_bad_cast ...; a
 * "@plt" or "@@GLIBC_x" suffix is ignored. */
int dcpi_cfg_noreturn_name(const char *name);

#endif
