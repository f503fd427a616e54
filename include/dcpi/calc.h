/* Block frequencies and cycles per instruction of one procedure from
 * flat samples: DCPI's dcpicalc, lifted from instructions to basic
 * blocks and reconciled over the control-flow graph (cfg.h).
 *
 * Modes, by what was sampled:
 *  DCPI_CALC_RETIRED  an instructions-retired event: a block ran
 *     (samples x period) / (its instructions) times.  Poisson noise only;
 *     CPI needs a cycles event too (or an anchored time event).
 *  DCPI_CALC_TIME     a cycles or time event only (VMs; every machine
 *     without a PMU): DCPI's method.  (cycles sampled) / (best-case
 *     cycles of the block, cost.h) is an upper bound on how often it ran,
 *     since stalls only add cycles; within an equivalence class the
 *     lowest cluster of those bounds is taken (the members that did not
 *     stall).
 *  DCPI_CALC_EXACT    exact executions per instruction (dcpix, on
 *     callgrind): counts are exact; CPI = cycles sampled / executions.
 * Then a minimum-cost circulation (flow.h) makes the counts agree with
 * the graph (what enters a block leaves it): symmetric costs for mode
 * RETIRED, asymmetric for TIME (rising above an upper bound is dear,
 * falling below it cheap), near-infinite for EXACT.
 *
 * Units.  A time event without a clock rate (cpu-clock samples, period
 * in ns, and no measured cycles per ns) gives counts only up to one
 * factor: absolute is then 0 and freq, estimate and edge counts are
 * relative (scaled so that the hottest block is DCPI_CALC_REL_SCALE).
 * CPI, stalls and branch probabilities do not depend on that factor and
 * stay meaningful.  Nothing is printed as absolute that is not.
 *
 * Confidence ('H', 'M', 'L'; 'E' for exact counts), as DCPI printed it:
 * H: >= DCPI_CALC_HIGH samples behind the class's estimate (mode TIME:
 * not counting those where a load's stall lands), no long-latency
 * instruction in it (mode TIME), reconciliation moved it by at most 20%,
 * and (mode TIME) a cycles event, not a software clock; M: >=
 * DCPI_CALC_MEDIUM samples and moved by at most 50%; L otherwise, and for
 * blocks whose count comes from the graph alone.  From a software clock
 * (mode TIME, timer): no peak (DCPI_CALC_WHY_PEAK) and
 * DCPI_CALC_HIGH_TIMER firm samples is H unless the graph moved it by more
 * than half (then M), DCPI_CALC_MEDIUM_TIMER M however far the graph moved
 * it; else L (the rule make accuracy measured to hold, dcpicalc(1)
 * ACCURACY).  What held a block below H is in its
 * why bits.
 *
 * Skid: a time sample lands on the instruction after the one that was
 * waiting.  Block and class sums absorb skid inside a block; samples of a
 * block's last instruction that land on the next block's first are not
 * moved back (the cost is per block, so the error is one instruction's
 * share).
 *
 * Ownership: a result owns its graph and arrays (dcpi_calc_free).
 */
#ifndef DCPI_CALC_H
#define DCPI_CALC_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/annotate.h"
#include "dcpi/callgrind.h"
#include "dcpi/cfg.h"
#include "dcpi/cost.h"

#define DCPI_CALC_HIGH 100
#define DCPI_CALC_MEDIUM 16
#define DCPI_CALC_MEDIUM_TIMER 64  /* mode TIME, a software clock: firm samples M needs */
#define DCPI_CALC_HIGH_TIMER 300   /* and H, with no peak */
#define DCPI_CALC_REL_SCALE 1000.0

enum dcpi_calc_mode {
	DCPI_CALC_RETIRED,
	DCPI_CALC_TIME,
	DCPI_CALC_EXACT,
};

struct dcpi_calc_input {
	const char *arch;              /* dcpi_disasm_arch(); NULL: x86-64 */
	const struct dcpi_insn *insns; /* the procedure, as dcpi_cfg_build takes it */
	size_t n, stride;
	/* per instruction (NULL: not sampled): */
	const uint64_t *time;          /* samples of the cycles or time event */
	const uint64_t *retired;       /* samples of instructions retired */
	const uint64_t *exact;         /* exact executions */
	double cycles_per_sample;      /* of time: the cycles event's period, or
					  a time period x a measured clock rate;
					  0: unknown (counts relative in TIME) */
	double retired_period;         /* instructions per retired sample */
	enum dcpi_calc_mode mode;
	int timer;                     /* time is a software clock's (cpu-clock,
					  task-clock), not a cycles event's: its
					  estimates are at most M (dcpicalc(1),
					  ACCURACY: on real programs H was no
					  likelier to hold than L) */
	struct dcpi_cfg_opts cfg;      /* no-return calls, jump tables */
	/* Another model's best case of a block (n instructions from insns,
	 * stride apart), in cycles per execution; NULL or a result <= 0:
	 * dcpi's own (cost.h).  make accuracy compares llvm-mca's so. */
	double (*block_cycles)(void *arg, const struct dcpi_insn *insns, size_t n, size_t stride);
	void *block_cycles_arg;
};

/* What held a block's confidence down (dcpi_calc_block.why, bits). */
enum dcpi_calc_why {
	DCPI_CALC_WHY_FEW = 1,         /* fewer samples behind it than H needs */
	DCPI_CALC_WHY_STALL = 2,       /* a long-latency instruction in its class, or
					  its bound lowered by the graph (it stalled) */
	DCPI_CALC_WHY_MOVED = 4,       /* the graph moved it from its estimate */
	DCPI_CALC_WHY_GRAPH = 8,       /* no estimate of its own, or 0 for a class
					  without samples: the graph's count */
	DCPI_CALC_WHY_SKID = 16,       /* its firm samples sit mostly where a
					  load's or a divide's stall lands */
	DCPI_CALC_WHY_TIMER = 32,      /* time samples from a software clock
					  (cpu-clock, task-clock): H needs
					  DCPI_CALC_HIGH_TIMER firm samples */
	DCPI_CALC_WHY_RAN = 64,        /* the graph's count is 0, but samples inside
					  the block (past its first instruction)
					  say it ran: a lower bound, printed >0 */
	DCPI_CALC_WHY_PEAK = 128,      /* mode time: half or more of the block's
					  samples on one instruction, where a
					  stall ends (its first two, or after a
					  load, a store or a long-latency
					  instruction): L at most */
};

struct dcpi_calc_block {
	double freq;                   /* reconciled executions */
	double estimate;               /* the class's estimate before it; < 0: none */
	char conf;                     /* 'H' 'M' 'L' 'E' */
	int digits;                    /* significant digits its count carries:
					  H 3 (2 from a software clock), M 2,
					  L 1; 0 exact */
	unsigned why;                  /* enum dcpi_calc_why: what kept it from H */
	double support;                /* samples the estimate rests on (mode time:
					  firm ones); INFINITY for exact counts */
	double moved;                  /* |freq - estimate| / the larger; 0 without one */
	double landed;                 /* mode time: the share of support on
					  instructions where a stall lands */
	uint64_t time, retired;        /* samples in the block */
	struct dcpi_cost_block cost;   /* best case per execution */
	double expect;                 /* mode time: the cycles per execution its
					  samples are divided by, cost.cycles or
					  more (see calc.c's expected()) */
	double best_cpi;               /* cost.cycles / instructions */
	double cpi;                    /* cycles sampled / (freq x instructions); < 0: none */
	int cpi_digits;                /* significant digits cpi carries: to
					  the place of its samples' standard
					  error (1/sqrt(n) of it), or of its
					  count's digits where coarser */
};

struct dcpi_calc_insn {
	double best;                   /* best-case cycles (its share of the block's) */
	double cpi;                    /* cycles per execution; < 0: cannot say */
	double stall;                  /* cpi - best, >= 0; < 0 when cpi is */
	int digits;                    /* significant digits cpi carries (its
					  own samples' and its block's count's);
					  stall is good to the same place */
};

struct dcpi_calc_edge {
	double count;                  /* in freq's units */
	double prob;                   /* of leaving its source by it; < 0: source never ran */
	char conf;                     /* the weaker of its ends' */
	int digits;                    /* the fewer of its ends' (a block's) */
};

struct dcpi_calc {
	struct dcpi_cfg cfg;
	struct dcpi_calc_block *blocks;  /* cfg.blocks' order */
	struct dcpi_calc_insn *insns;    /* input order */
	struct dcpi_calc_edge *edges;    /* cfg.edges' order */
	enum dcpi_calc_mode mode;
	int absolute;                    /* freq are executions, else relative */
	int has_cpi;                     /* cpi can be computed at all */
	double unknown_freq;             /* flow through the unknown node */
	double calm;                     /* mode time with a clock: the calm samples
					    (calc.c's clock_scale) the counts' scale
					    came from; 0: the bounds' scale */
};

/* 0, or -EINVAL (no instructions; a mode without its samples), cfg and
 * flow errors (-EFBIG: too large), -ENOMEM.  out is zeroed on failure. */
int dcpi_calc_run(const struct dcpi_calc_input *in, struct dcpi_calc *out);
void dcpi_calc_free(struct dcpi_calc *c);

/* ---- on an annotated procedure (annotate.h) ---- */

/* Which columns of the annotation's counts feed which input. */
struct dcpi_calc_cols {
	int time;                      /* set column of cycles or a time event; -1 none */
	int retired;                   /* set column of instructions retired; -1 none */
	const uint64_t *exact;         /* per annotation instruction, or NULL */
	double cycles_per_sample, retired_period;   /* as in dcpi_calc_input */
	enum dcpi_calc_mode mode;
	int timer;                     /* as in dcpi_calc_input */
	double (*block_cycles)(void *, const struct dcpi_insn *, size_t, size_t); /* as there */
	void *block_cycles_arg;
};

/* The columns of set an estimate reads (dcpi/evcols.h's policy) and its
 * mode: mode >= 0 as asked, else retired when an instructions event was
 * sampled, else time.  -EINVAL (with a message) when the mode's event is
 * not in the set. */
int dcpi_calc_cols_choose(const struct dcpi_profset *set, int mode, struct dcpi_calc_cols *c);

/* Graph options that read img: calls to its no-return functions (by
 * symbol, dcpi_cfg_noreturn_name) end blocks; jump tables are read from
 * its file. */
void dcpi_calc_image_cfg(struct dcpi_annot_image *img, struct dcpi_cfg_opts *o);
/* dcpi_calc_run on annotation a of img.  Besides its errors: -ENODATA
 * (no code), -ENOEXEC (most of the range does not decode). */
int dcpi_calc_annotation(struct dcpi_annot_image *img, const struct dcpi_annotation *a,
			 const struct dcpi_calc_cols *cols, struct dcpi_calc *out);

/* ---- exact counts (dcpix) ---- */

/* The counts of callgrind object o as the image st describes them: ELF
 * virtual addresses (the load offset found from where o's functions
 * started, by their symbols: the offset most of them agree on) and st's
 * build-id.  0, -ENOENT (no function of o is a symbol of st: not the same
 * image), -EINVAL (st has no build-id), -ENOMEM. */
int dcpi_calc_exact_import(const struct dcpi_callgrind_obj *o, const struct dcpi_symtab *st,
			   struct dcpi_exact *out);
/* Exact executions of each instruction of annotation a (ninsns values,
 * malloc'd), from the counts recorded for img's build-id in db: 0,
 * -ENOENT (none recorded: the message says to run dcpix), -EINVAL (the
 * image has no build-id), read errors. */
int dcpi_calc_exact_load(const char *db, struct dcpi_annot_image *img,
			 const struct dcpi_annotation *a, uint64_t **counts);

/* An estimated count printed to the significant digits it carries
 * (dcpi_calc_block.digits: H three, two from a software clock, M two, L
 * one, its order of magnitude, with '~' before it: "~3G"); from 1,000 on
 * with a k, M, G, T suffix ("20.1M"); digits 0 (E: exact) in full.
 * Returns buf. */
const char *dcpi_count_str(double v, char conf, int digits, char *buf, size_t len);

/* A block's count as the reports print it: to its digits (an H from a
 * software clock carries two), or ">0" where the graph's count is 0 but
 * the block's samples say it ran (DCPI_CALC_WHY_RAN).  Returns buf. */
const char *dcpi_block_count_str(const struct dcpi_calc_block *cb, char *buf, size_t len);

/* An edge's count to its digits.  Returns buf. */
const char *dcpi_edge_count_str(const struct dcpi_calc_edge *ce, char *buf, size_t len);

/* The significant digits v has when given to the place quantum (a power
 * of ten; the inverse of dcpi_digits_quantum), at least 1. */
int dcpi_quantum_digits(double v, double quantum);

/* The place a value carries digits significant digits to (0.01 for 0.123
 * at two); 0 for digits 0 (all) or v not above 0. */
double dcpi_digits_quantum(double v, int digits);

/* v (a cpi, a stall, cycles) rounded to quantum (dcpi_digits_quantum of
 * what it was measured with: a stall to its cpi's place) and printed
 * with as many decimals as that place needs, at most 3; quantum 0 prints
 * decimals decimals.  "-" for v < 0.  Returns buf. */
const char *dcpi_quantum_str(double v, double quantum, int decimals, char *buf, size_t len);

#endif
