/* How close dcpicalc's block counts come to the truth: for each kernel
 * (a database holding its dcpid samples and dcpix's exact counts), the
 * hot procedure's blocks estimated in each mode and compared with the
 * exact counts.
 *   accuracy NAME DB IMAGE PROC [NAME DB IMAGE PROC ...]
 * NAME is [RUN/]PROGRAM[:WHAT]: blocks are scored per run and program;
 * with more than one program a table per program and one of all is
 * printed, and with more than one run each figure is the median over the
 * runs (each run a profile of its own, scored on its own).
 * Modes: (b) time, from the real cpu-clock samples, relative, and again
 * with the clock rate dcpi record measured (epoch stats), absolute; (a) retired, with
 * instruction samples drawn from the exact counts (Poisson thinning at a
 * fixed seed, about A_SAMPLES per procedure), without and with skid (each
 * sample moved to the next instruction in memory, which at a taken branch is
 * not the next executed: a harsher skid than a PEBS event's); (c) exact.  The naive
 * baseline (a block's samples / its instructions) is scored beside (b).
 * Blocks scored: >= 1% of the procedure's samples and >= 64 samples (of
 * the mode's own event).  "shape": the estimates times one scale per
 * procedure (sum exact / sum estimate over the scored blocks);
 * "absolute": as estimated, when the mode has absolute counts. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/annotate.h"
#include "dcpi/calc.h"
#include "dcpi/evcols.h"
#include "dcpi/error.h"
#include "dcpi/profset.h"
#include "dcpi/select.h"

#define A_SAMPLES 20000.0
#define MIN_SAMPLES 64
#define MIN_SHARE 0.01

enum { M_TIME, M_TIME_CLOCK, M_TIME_MCA, M_MCA_CLOCK, M_NAIVE, M_RET, M_RET_SKID, M_EXACT,
       M_N };
static const char *const mode_names[M_N] = { "(b) time", "(b) time+clock", "(b) llvm-mca",
					     "(b) llvm-mca+clock", "naive", "(a) retired",
					     "(a) retired+skid", "(c) exact" };

/* counts per mode: [0] all, [1] H, [2] M, [3] L; within 10/25, shape/abs */
struct score {
	size_t n[4], s10[4], s25[4], a10[4], a25[4];
	int absolute;
};
#define MAX_RUNS 16
#define MAX_PROGS 32
static struct score scores[MAX_RUNS][MAX_PROGS + 1][M_N];   /* [MAX_PROGS]: all */
static char progs[MAX_PROGS][64];
static size_t nprogs, nruns;
static size_t cur_run, cur_prog;

static uint64_t rng_s = 0x853c49e6748fea9bull;
static double urand(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return (double)(rng_s >> 11) / 9007199254740992.0;
}

/* Poisson(lambda): Knuth for small lambda, a normal approximation above. */
static uint64_t poisson(double lambda)
{
	if (lambda <= 0)
		return 0;
	if (lambda > 60) {
		double u1 = urand(), u2 = urand();
		double z = sqrt(-2 * log(u1 + 1e-300)) * cos(2 * M_PI * u2);
		double v = lambda + sqrt(lambda) * z;

		return v < 0 ? 0 : (uint64_t)llround(v);
	}
	{
		double l = exp(-lambda), p = 1;
		uint64_t k = 0;

		do {
			k++;
			p *= urand();
		} while (p > l);
		return k - 1;
	}
}

static int conf_slot(char c)
{
	return c == 'H' ? 1 : c == 'M' ? 2 : c == 'L' ? 3 : 0;
}

static void tally(struct score *s, char conf, double est, double scale, double exact, int abs)
{
	int slots[2] = { 0, conf_slot(conf) };

	for (int k = 0; k < (slots[1] ? 2 : 1); k++) {
		int i = slots[k];
		double sh = fabs(est * scale - exact) / exact, ab = fabs(est - exact) / exact;

		s->n[i]++;
		s->s10[i] += sh <= 0.10;
		s->s25[i] += sh <= 0.25;
		s->a10[i] += abs && ab <= 0.10;
		s->a25[i] += abs && ab <= 0.25;
	}
	s->absolute = abs;
}

/* Score blocks of c against the exact counts; samples[b] picks blocks. */
static void score(int mode, const struct dcpi_calc *c, const double *est, const uint64_t *samples,
		  const uint64_t *exact, int abs, const char *kernel)
{
	uint64_t total = 0;
	double se = 0, sx = 0;
	size_t nb = c->cfg.nblocks;

	for (size_t b = 0; b < nb; b++)
		total += samples[b];
	for (int pass = 0; pass < 2; pass++)
		for (size_t b = 0; b < nb; b++) {
			double x = (double)exact[c->cfg.blocks[b].first];

			if (samples[b] < MIN_SAMPLES || (double)samples[b] < MIN_SHARE * (double)total ||
			    x <= 0)
				continue;
			if (pass == 0) {
				se += est[b];
				sx += x;
			} else {
				tally(&scores[cur_run][cur_prog][mode],
				      mode == M_NAIVE ? 0 : c->blocks[b].conf, est[b],
				      se > 0 ? sx / se : 0, x, abs);
				tally(&scores[cur_run][MAX_PROGS][mode],
				      mode == M_NAIVE ? 0 : c->blocks[b].conf, est[b],
				      se > 0 ? sx / se : 0, x, abs);
				if (getenv("ACCURACY_VERBOSE"))
					printf("# %s %s B%zu %c est %.4g scaled %.4g exact %.4g\n",
					       kernel, mode_names[mode], b, c->blocks[b].conf, est[b],
					       est[b] * sx / se, x);
			}
		}
}

struct kern {
	struct dcpi_profset set;
	struct dcpi_annot_image *img;
	struct dcpi_annotation a;
	uint64_t *exact;
	int time_col;
};

static int open_kernel(struct kern *k, const char *db, const char *image, const char *proc)
{
	struct dcpi_selection sel;
	size_t idx[64], n = 0;
	uint64_t lo, hi;
	const char *name;

	if (dcpi_profset_load(db, "all", NULL, &k->set) || dcpi_select(&k->set, &image, 1, &sel))
		return -1;
	for (size_t i = 0; i < k->set.n && n < 64; i++)
		if (sel.chosen[i])
			idx[n++] = i;
	dcpi_selection_free(&sel);
	k->time_col = dcpi_evcols_time(&k->set); /* the reports' policy */
	if (n == 0 || k->time_col < 0 || dcpi_annot_image_open(&k->set, idx, n, NULL, &k->img) ||
	    dcpi_annot_resolve(dcpi_annot_image_symtab(k->img), proc, &lo, &hi, &name, NULL, 0,
			       &n) ||
	    dcpi_annotate(k->img, lo, hi, &k->a) || dcpi_calc_exact_load(db, k->img, &k->a, &k->exact))
		return -1;
	return 0;
}

/* ACCURACY_DUMP=FILE: one line per block of mode (b) for analysis (name,
 * block, first address, instructions, samples, exact, estimate, freq,
 * confidence, best-case cycles, class, support, moved, why, landed, and each
 * instruction's samples and text). */
static void dump(const struct kern *k, const struct dcpi_calc *c, const uint64_t *bs,
		 const char *kernel)
{
	const char *path = getenv("ACCURACY_DUMP");
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	for (size_t b = 0; b < c->cfg.nblocks; b++) {
		const struct dcpi_cfg_block *bl = &c->cfg.blocks[b];

		fprintf(f, "%s\t%zu\t%#" PRIx64 "\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%.6g\t%.6g\t%c\t%.3g\t%zu\t%.4g\t%.3f\t%u\t%.3f\t",
			kernel, b, k->a.insns[bl->first].insn.vaddr, bl->ninsns, bs[b],
			k->exact[bl->first], c->blocks[b].estimate, c->blocks[b].freq,
			c->blocks[b].conf, c->blocks[b].cost.cycles, bl->cls, c->blocks[b].support,
			c->blocks[b].moved, c->blocks[b].why, c->blocks[b].landed);
		for (size_t i = bl->first; i < bl->first + bl->ninsns; i++)
			fprintf(f, "%s%" PRIu64 ":%s %s", i > bl->first ? "|" : "",
				k->a.insns[i].counts[k->time_col], k->a.insns[i].insn.mnemonic,
				k->a.insns[i].insn.operands);
		fputc('\n', f);
	}
	fclose(f);
}

/* ACCURACY_DUMP_CLOCK=FILE: mode (b) with the clock, one line per block
 * for analysis of the counts' scale (name, block, instructions, exact,
 * count, confidence, best case, calm samples, cycles per sample, and each
 * instruction's samples, best case and kind: l load, s store, x
 * long-latency, - other). */
static void dump_clock(const struct kern *k, const struct dcpi_calc *c, double cps,
		       const char *kernel)
{
	const char *path = getenv("ACCURACY_DUMP_CLOCK");
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	for (size_t b = 0; b < c->cfg.nblocks; b++) {
		const struct dcpi_cfg_block *bl = &c->cfg.blocks[b];

		fprintf(f, "%s\t%zu\t%zu\t%" PRIu64 "\t%.6g\t%c\t%.4g\t%.6g\t%.6g\t", kernel, b,
			bl->ninsns, k->exact[bl->first], c->blocks[b].freq, c->blocks[b].conf,
			c->blocks[b].cost.cycles, c->calm, cps);
		for (size_t i = bl->first; i < bl->first + bl->ninsns; i++) {
			const struct dcpi_insn *in = &k->a.insns[i].insn;
			char kind = (in->flags & DCPI_INSN_LOAD) ? 'l' :
				    dcpi_cost_class(dcpi_annot_image_arch(k->img), in)->long_latency ? 'x' :
				    (in->flags & DCPI_INSN_STORE) ? 's' : '-';

			fprintf(f, "%s%" PRIu64 ":%.4g:%c:%s %s", i > bl->first ? "|" : "",
				k->a.insns[i].counts[k->time_col], c->insns[i].best, kind,
				in->mnemonic, in->operands);
		}
		fputc('\n', f);
	}
	fclose(f);
}

/* ---- llvm-mca's model of this core, for modes (b) llvm-mca ----------------------------
 * A block's best case by llvm-mca -mcpu=native (LLVM's scheduling model of
 * the host CPU): a self-loop's cycles per iteration as simulated (its
 * carried chains count), any other block's "Block RThroughput" (its
 * resources alone, as dcpi's own model).  One llvm-mca per distinct
 * block, remembered for the runs after; 0 (dcpi's own model) where
 * llvm-mca does not take Capstone's text, counted. */
struct mca_entry {
	uint64_t hash;
	double cycles;
};
static struct mca_entry *mca_cache;
static size_t mca_n, mca_cap, mca_asked, mca_failed;
static int mca_missing;

static double mca_cycles(void *arg, const struct dcpi_insn *insns, size_t n, size_t stride)
{
	const struct dcpi_insn *last = (const void *)((const char *)insns + (n - 1) * stride);
	int self_loop = (last->flags & DCPI_INSN_DIRECT) && last->target == insns->vaddr;
	char path[] = "/tmp/dcpi-mca.XXXXXX", cmd[128], line[256];
	uint64_t h = 1469598103934665603ull;
	double rt = -1, total = -1, v;
	FILE *f;
	int fd;

	(void)arg;
	if (mca_missing)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_insn *in = (const void *)((const char *)insns + i * stride);

		for (const char *c = in->mnemonic; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		for (const char *c = in->operands; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		h = (h ^ '\n') * 1099511628211ull;
	}
	h = (h ^ (uint64_t)self_loop) * 1099511628211ull;
	for (size_t i = 0; i < mca_n; i++)
		if (mca_cache[i].hash == h)
			return mca_cache[i].cycles;
	mca_asked++;
	if ((fd = mkstemp(path)) < 0)
		return 0;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		unlink(path);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_insn *in = (const void *)((const char *)insns + i * stride);

		fprintf(f, "%s %s\n", in->mnemonic, in->operands);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "llvm-mca -mcpu=native -iterations=100 %s 2>/dev/null", path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Block RThroughput: %lf", &v) == 1)
			rt = v;
		if (sscanf(line, "Total Cycles: %lf", &v) == 1)
			total = v / 100;
	}
	if (f)
		pclose(f);
	unlink(path);
	v = self_loop ? total : rt;
	if (!(v > 0))
		mca_failed++, v = 0;
	if (mca_n == mca_cap) {
		struct mca_entry *m = realloc(mca_cache, (mca_cap = mca_cap * 2 + 256) * sizeof(*m));

		if (!m)
			return v;
		mca_cache = m;
	}
	mca_cache[mca_n++] = (struct mca_entry){ h, v };
	return v;
}

static void run_mode(struct kern *k, int mode, const char *kernel)
{
	struct dcpi_calc_cols cols = { .time = k->time_col, .retired = -1, .mode = DCPI_CALC_TIME,
				       .timer = k->time_col != dcpi_evcols_cycles(&k->set) };
	struct dcpi_calc c;
	size_t n = k->a.ninsns;
	uint64_t *ret = NULL, *bs, total = 0;
	double *est, p = 1;

	if (mode == M_RET || mode == M_RET_SKID) {
		for (size_t i = 0; i < n; i++)
			total += k->exact[i];
		p = (double)total / A_SAMPLES;
		ret = calloc(n, sizeof(*ret));
		for (size_t i = 0; i < n; i++) {
			uint64_t s = poisson((double)k->exact[i] / p);
			size_t to = mode == M_RET_SKID && i + 1 < n ? i + 1 : i;

			ret[to] += s;
		}
		/* the annotation's counts are the input: put them in a free column */
		for (size_t i = 0; i < n; i++)
			k->a.insns[i].counts[DCPI_MAX_EVENTS - 1] = ret[i];
		cols = (struct dcpi_calc_cols){ .time = -1, .retired = DCPI_MAX_EVENTS - 1,
						.retired_period = p, .mode = DCPI_CALC_RETIRED };
	} else if (mode == M_EXACT) {
		cols.exact = k->exact;
		cols.mode = DCPI_CALC_EXACT;
	} else if (mode == M_TIME_CLOCK || mode == M_MCA_CLOCK) {
		/* the clock dcpi record measured: absolute counts */
		if (!k->set.stats.clock_khz || !k->set.periods[k->time_col])
			return;
		cols.cycles_per_sample = (double)k->set.periods[k->time_col] *
					 (double)k->set.stats.clock_khz / 1e6;
	}
	if (mode == M_TIME_MCA || mode == M_MCA_CLOCK) {
		if (mca_missing || getenv("ACCURACY_NO_MCA"))
			return;
		cols.block_cycles = mca_cycles;
	}
	if (dcpi_calc_annotation(k->img, &k->a, &cols, &c)) {
		fprintf(stderr, "accuracy: %s: %s\n", kernel, dcpi_errmsg());
		free(ret);
		return;
	}
	est = calloc(c.cfg.nblocks, sizeof(*est));
	bs = calloc(c.cfg.nblocks, sizeof(*bs));
	for (size_t b = 0; b < c.cfg.nblocks; b++) {
		const struct dcpi_cfg_block *bl = &c.cfg.blocks[b];

		for (size_t i = bl->first; i < bl->first + bl->ninsns; i++)
			bs[b] += ret ? ret[i] : k->a.insns[i].counts[k->time_col];
		est[b] = c.blocks[b].freq;
	}
	score(mode, &c, est, bs, k->exact, c.absolute, kernel);
	if (mode == M_TIME)
		dump(k, &c, bs, kernel);
	if (mode == M_TIME_CLOCK)
		dump_clock(k, &c, cols.cycles_per_sample, kernel);
	if (mode == M_TIME) {
		for (size_t b = 0; b < c.cfg.nblocks; b++)
			est[b] = (double)bs[b] / (double)c.cfg.blocks[b].ninsns;
		score(M_NAIVE, &c, est, bs, k->exact, 0, kernel);
	}
	free(est);
	free(bs);
	free(ret);
	dcpi_calc_free(&c);
}

static double pct(size_t a, size_t n)
{
	return n ? 100.0 * (double)a / (double)n : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over the runs of f(run's score); runs without blocks in the
 * slot left out (NAN when none has any). */
static double median(size_t prog, int m, int slot, double (*f)(const struct score *, int))
{
	double v[MAX_RUNS];
	size_t n = 0;

	for (size_t r = 0; r < nruns; r++)
		if (scores[r][prog][m].n[slot])
			v[n++] = f(&scores[r][prog][m], slot);
	if (!n)
		return NAN;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double f_n(const struct score *s, int i) { return (double)s->n[i]; }
static double f_s10(const struct score *s, int i) { return pct(s->s10[i], s->n[i]); }
static double f_s25(const struct score *s, int i) { return pct(s->s25[i], s->n[i]); }
static double f_a10(const struct score *s, int i) { return pct(s->a10[i], s->n[i]); }
static double f_a25(const struct score *s, int i) { return pct(s->a25[i], s->n[i]); }

static void report_one(size_t prog)
{
	static const char *const slot[4] = { "all", "H", "M", "L" };

	printf("%-18s %-4s %6s %9s %9s %9s %9s\n", "mode", "conf", "blocks", "shape10%",
	       "shape25%", "abs10%", "abs25%");
	for (int m = 0; m < M_N; m++)
		for (int i = 0; i < 4; i++) {
			double n = median(prog, m, i, f_n);
			int absolute = 0;

			if (isnan(n) || (i && m == M_NAIVE))
				continue;
			for (size_t r = 0; r < nruns; r++)
				absolute |= scores[r][prog][m].absolute;
			printf("%-18s %-4s %6.0f %8.1f%% %8.1f%%", mode_names[m], slot[i], n,
			       median(prog, m, i, f_s10), median(prog, m, i, f_s25));
			if (absolute)
				printf(" %8.1f%% %8.1f%%\n", median(prog, m, i, f_a10),
				       median(prog, m, i, f_a25));
			else
				printf(" %9s %9s\n", "n/a", "n/a");
		}
}

static void report(void)
{
	const char *runs = nruns > 1 ? " (medians of the runs)" : "";

	if (nprogs > 1)
		for (size_t p = 0; p < nprogs; p++) {
			printf("%s, %zu run%s%s:\n", progs[p], nruns, nruns == 1 ? "" : "s", runs);
			report_one(p);
			putchar('\n');
		}
	if (nprogs > 1)
		printf("all, %zu run%s%s:\n", nruns, nruns == 1 ? "" : "s", runs);
	report_one(MAX_PROGS);
}

/* NAME's run and program: "RUN/PROG:WHAT" (RUN and :WHAT optional). */
static int place(const char *name)
{
	const char *slash = strchr(name, '/'), *prog = slash ? slash + 1 : name;
	size_t len = strcspn(prog, ":");
	char run[32];

	snprintf(run, sizeof(run), "%.*s", slash ? (int)(slash - name) : 0, name);
	cur_run = 0;
	if (slash) {
		static char runs[MAX_RUNS][32];

		for (cur_run = 0; cur_run < nruns && strcmp(runs[cur_run], run); cur_run++)
			;
		if (cur_run == nruns) {
			if (nruns == MAX_RUNS)
				return -1;
			snprintf(runs[nruns++], sizeof(runs[0]), "%s", run);
		}
	} else if (!nruns)
		nruns = 1;
	for (cur_prog = 0; cur_prog < nprogs; cur_prog++)
		if (strlen(progs[cur_prog]) == len && !strncmp(progs[cur_prog], prog, len))
			return 0;
	if (nprogs == MAX_PROGS)
		return -1;
	snprintf(progs[nprogs++], sizeof(progs[0]), "%.*s", (int)len, prog);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5 || (argc - 1) % 4) {
		fprintf(stderr, "usage: accuracy KERNEL DB IMAGE PROC [...]\n");
		return 2;
	}
	/* llvm-mca's modes only where it runs at all */
	mca_missing = system("llvm-mca --version >/dev/null 2>&1") != 0;
	for (int i = 1; i + 3 < argc; i += 4) {
		struct kern k;

		memset(&k, 0, sizeof(k));
		if (place(argv[i])) {
			fprintf(stderr, "accuracy: %s: more than %d runs or %d programs\n", argv[i],
				MAX_RUNS, MAX_PROGS);
			return 1;
		}
		if (open_kernel(&k, argv[i + 1], argv[i + 2], argv[i + 3])) {
			fprintf(stderr, "accuracy: %s: %s\n", argv[i], dcpi_errmsg());
			return 1;
		}
		for (int m = 0; m < M_N; m++)
			if (m != M_NAIVE)
				run_mode(&k, m, argv[i]);
		free(k.exact);
		dcpi_annotation_free(&k.a);
		dcpi_annot_image_close(k.img);
		dcpi_profset_free(&k.set);
	}
	report();
	if (mca_asked)
		printf("(llvm-mca: %zu distinct blocks, %zu it did not take: dcpi's model for those)\n",
		       mca_asked, mca_failed);
	else if (mca_missing)
		printf("(llvm-mca not installed: no llvm-mca modes)\n");
	return 0;
}
