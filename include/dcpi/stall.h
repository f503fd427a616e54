/* Why the cycles went: the possible culprits of each instruction's
 * dynamic stall (cycles sampled above its static best case, calc.h), by
 * DCPI's static rules and one-letter codes.
 *
 * The rules look backwards from the sampled instruction, since skid puts
 * a stall's samples on the waiting consumer or just after the culprit.
 * The walk follows the graph's edges backwards (a loop's back edge too)
 * for at most DCPI_STALL_WINDOW instructions on each path and
 * DCPI_STALL_MAX_STEPS instructions in all; nothing further back is
 * blamed.  For instruction i:
 *   d, D  i is a load, the instruction before it is one (skid), or a
 *         register i reads was last written by a load (def-use through
 *         the disassembler's register lists; the stack and instruction
 *         pointers are not counted);
 *   w     i or the instruction before it stores;
 *   f     a divide or square root (cost class on the divider) in the window;
 *   s     a locked instruction or a fence in the window, or i is one;
 *   m     a microcoded instruction (string ops, pause, ...) in the window;
 *   p     i is among the first DCPI_STALL_ENTRY instructions of a block
 *         entered from a block ending in a conditional or indirect jump;
 *   i, I  i is among the first DCPI_STALL_ENTRY instructions of a block
 *         entered by a jump whose source is on another 64-byte cache line
 *         (i) or 4 KiB page (I);
 *   ?     none of these.
 * These are possibilities, never certainties: with time samples alone
 * every candidate is only possible.
 *
 * Evidence.  When the caller has samples of an event that measures a
 * kind (dcpi_stall_event_kind: cache, TLB, branch misses), it passes
 * them per instruction; the samples of that event on the instructions
 * the walk visited are the candidate's weight.  Candidates of kinds with
 * evidence but no samples near are dropped when another candidate has
 * some (measured, not merely possible): .measured says which survived on
 * evidence.  A kind without evidence keeps weight 0 and stays possible.
 *
 * Ranges.  A stall with k candidates counts towards each of them: to
 * max always, to min only when it is the sole candidate.  A stall with
 * no candidate is unexplained.
 *
 * Ownership: results are plain arrays the caller owns.
 */
#ifndef DCPI_STALL_H
#define DCPI_STALL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/calc.h"
#include "dcpi/disasm.h"

#define DCPI_STALL_WINDOW 6
#define DCPI_STALL_ENTRY 2
#define DCPI_STALL_MAX_STEPS 256

enum dcpi_stall_kind {
	DCPI_STALL_ICACHE,      /* i */
	DCPI_STALL_ITLB,        /* I */
	DCPI_STALL_DCACHE,      /* d */
	DCPI_STALL_DTLB,        /* D */
	DCPI_STALL_WRITE,       /* w: store/write buffer */
	DCPI_STALL_BRANCH,      /* p: branch mispredict */
	DCPI_STALL_FU,          /* f: functional unit busy (divide, sqrt) */
	DCPI_STALL_SYNC,        /* s: locked instructions, fences */
	DCPI_STALL_MICRO,       /* m: microcode, assists */
	DCPI_STALL_NKINDS,
};

/* Its one-letter code ('i' ... 'm'), '?' for kind DCPI_STALL_NKINDS. */
char dcpi_stall_code(enum dcpi_stall_kind k);
/* "I-cache miss", "D-cache miss", ...; "unexplained" for DCPI_STALL_NKINDS. */
const char *dcpi_stall_name(enum dcpi_stall_kind k);
/* The kind of a code letter, or -1. */
int dcpi_stall_kind_of(char code);
/* The kind an event's samples are evidence of ("cache-misses",
 * "L1-dcache-load-misses", "LLC-load-misses": d; "dTLB-load-misses": D;
 * "iTLB-load-misses": I; "L1-icache-load-misses": i; "branch-misses": p),
 * or -1. */
int dcpi_stall_event_kind(const char *event);

struct dcpi_stall_input {
	const char *arch;               /* dcpi_disasm_arch(); NULL: x86-64 */
	const struct dcpi_insn *insns;  /* as dcpi_calc_input took them */
	size_t n, stride;
	const struct dcpi_cfg *cfg;     /* their graph (dcpi_calc.cfg) */
	/* Which instructions to explain (nonzero), NULL: all. */
	const unsigned char *want;
	/* Per kind, samples of an event measuring it per instruction; NULL: none. */
	const uint64_t *evidence[DCPI_STALL_NKINDS];
};

struct dcpi_stall_insn {
	unsigned possible;              /* bits 1 << kind, by the static rules */
	unsigned culprits;              /* after evidence (== possible without any) */
	unsigned measured;              /* culprits kept because evidence was seen */
	uint64_t weight[DCPI_STALL_NKINDS];  /* evidence samples near */
	size_t blame[DCPI_STALL_NKINDS];     /* instruction blamed, or SIZE_MAX */
};

/* Culprits of each wanted instruction into out[0..n-1] (others zeroed).
 * 0, -EINVAL (no instructions or graph), -ENOMEM. */
int dcpi_stall_culprits(const struct dcpi_stall_input *in, struct dcpi_stall_insn *out);

/* Stall ranges of a set of instructions: min..max per kind. */
struct dcpi_stall_sum {
	double min[DCPI_STALL_NKINDS], max[DCPI_STALL_NKINDS];
	double unexplained;             /* stall with no candidate */
	double total;                   /* all stall added */
};

/* Add stall (any unit, >= 0) with culprits s to sum. */
void dcpi_stall_add(struct dcpi_stall_sum *sum, const struct dcpi_stall_insn *s, double stall);

/* The codes of mask into buf ("dDw"; "?" when empty): at most
 * DCPI_STALL_NKINDS + 1 bytes with the NUL. */
void dcpi_stall_codes(unsigned mask, char *buf);

/* The share of instruction i's samples that are stall: time[i] x
 * stall / cpi of c (samples), 0 when c cannot say. */
double dcpi_stall_samples(const struct dcpi_calc *c, const uint64_t *time, size_t i);

/* The significant digits of instruction i's stall per execution, avg
 * (dcpi_calc_insn.stall): to the place of its cpi (dcpi_calc_insn.digits:
 * its samples' standard error, or its count's digits where coarser);
 * 0 when avg is below half that place. */
int dcpi_stall_avg_digits(const struct dcpi_calc *c, size_t i);

/* ... and of its stall in all, v (its samples' time, samples cycles a
 * sample each, less the best case times the count of its block b, in
 * units of u cycles: 1 when v counts samples): to the place of the larger
 * of the samples' standard error (1/sqrt(samples) of their time) and the
 * best case times the count's last digit's place, to the nearest power of
 * ten; 0 when v is below half of it, or i is not in block b.  The samples' error rules where the
 * best case is small beside their time, so the stall in all may carry
 * more digits than its average, whose count may be an order of
 * magnitude. */
int dcpi_stall_total_digits(const struct dcpi_calc *c, size_t b, size_t i, double v,
			    double samples, double u);

/* ---- every sampled procedure of an annotated image ---- */

/* One procedure, analysed: its annotation, its estimates (when err is 0)
 * and each instruction's culprits and stall samples.  Valid only during
 * the callback; strings are the image's. */
struct dcpi_stall_proc {
	const char *name;               /* its symbol's demangled name */
	uint64_t lo, hi;
	struct dcpi_annotation a;
	struct dcpi_calc c;             /* zeroed when err */
	struct dcpi_stall_insn *s;      /* per instruction (NULL when err) */
	double *stall;                  /* stall samples per instruction (NULL when err) */
	int err;                        /* 0, or why no estimate (dcpi_errmsg() then) */
	uint64_t samples;               /* of the time column in it */
	int col;                        /* the time column (set column) */
};

typedef int (*dcpi_stall_proc_fn)(struct dcpi_stall_proc *p, void *arg);

/* One procedure's stalled instructions explained: a annotated from img, c
 * its estimates, tcol the set column of time samples.  *s and *stall get
 * a->ninsns culprits and stall samples (the caller frees them).  0,
 * -EINVAL (no instructions or graph), -ENOMEM. */
int dcpi_stall_explain(struct dcpi_annot_image *img, const struct dcpi_profset *set, int tcol,
		       const struct dcpi_annotation *a, const struct dcpi_calc *c,
		       struct dcpi_stall_insn **s, double **stall);

/* For each procedure (symbol) of img holding samples, in address order:
 * annotate, estimate (cols; mode TIME or RETIRED with a time column) and
 * explain its stalled instructions, evidence from set's columns
 * dcpi_stall_event_kind names; then fn.  A procedure that cannot be
 * estimated (no code, bytes that do not decode, too large) is passed with
 * err set; *unattributed gets the time samples of no symbol.  Returns 0,
 * fn's nonzero value, or -ENOMEM. */
int dcpi_stall_image(struct dcpi_annot_image *img, const struct dcpi_profset *set,
		     const struct dcpi_calc_cols *cols, dcpi_stall_proc_fn fn, void *arg,
		     uint64_t *unattributed);
/* The same for the procedures named only (their demangled name), the
 * others neither annotated nor estimated; NULL: all. */
int dcpi_stall_image_only(struct dcpi_annot_image *img, const struct dcpi_profset *set,
			  const struct dcpi_calc_cols *cols, const char *only, dcpi_stall_proc_fn fn,
			  void *arg, uint64_t *unattributed);

/* ---- where the cycles went (dcpiwhatcg) ---- */

/* A tally in samples of the time column.  Per block that ran (samples and
 * cpi), k = samples / (cpi x instructions) is its executions in sample
 * units; an instruction expected best x k samples and had time:
 *   execution     issue-bound part of the expected samples (the block's
 *                 uops over the issue width, at most its best case);
 *   static_stall  the rest of the expected samples (load ports, the
 *                 divider, a loop-carried chain: cost.h's bound);
 *   dyn           time above expected, by culprit (ranges);
 *   gain          expected above time (ran faster than the model: skid,
 *                 or a cost model too slow): unexplained gain.
 * Skid is netted first: an instruction short of its expected samples and
 * the next one in its block above them (where a time sample of the first
 * lands) cancel up to the smaller amount, so dyn counts what is left.
 * (dcpi_stall_proc.stall, per instruction, is not netted.)
 *   unestimated   samples of blocks without a cpi (the graph gave them no
 *                 executions), of strays, and of procedures with err.
 * So samples == execution + static_stall + dyn.total - gain + unestimated,
 * up to rounding.  conf_ok: samples in blocks of confidence H, M or E. */
struct dcpi_stall_tally {
	double samples, execution, static_stall, gain, conf_ok, unestimated;
	struct dcpi_stall_sum dyn;
};

/* Add procedure p (err 0) to t; arch is its image's (NULL: x86-64). */
void dcpi_stall_tally_add(struct dcpi_stall_tally *t, const struct dcpi_stall_proc *p,
			  const char *arch);

#endif
