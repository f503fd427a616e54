/* Stall culprits of every sampled procedure of an image: see dcpi/stall.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/cost.h"
#include "dcpi/error.h"
#include "dcpi/stall.h"

/* Evidence columns of set, copied per instruction. */
static int evidence(const struct dcpi_profset *set, const struct dcpi_annotation *a,
		    uint64_t **ev)
{
	for (unsigned e = 0; e < set->nevents; e++) {
		int k = dcpi_stall_event_kind(set->events[e]);

		if (k < 0 || ev[k])
			continue;
		if (!(ev[k] = calloc(a->ninsns, sizeof(uint64_t))))
			return dcpi_error(ENOMEM, "out of memory");
		for (size_t i = 0; i < a->ninsns; i++)
			ev[k][i] = a->insns[i].counts[e];
	}
	return 0;
}

int dcpi_stall_explain(struct dcpi_annot_image *img, const struct dcpi_profset *set, int tcol,
		       const struct dcpi_annotation *a, const struct dcpi_calc *c,
		       struct dcpi_stall_insn **sp, double **stallp)
{
	struct dcpi_stall_input in = { 0 };
	uint64_t *ev[DCPI_STALL_NKINDS] = { 0 }, *time = NULL;
	struct dcpi_stall_insn *s = calloc(a->ninsns ? a->ninsns : 1, sizeof(*s));
	double *stall = calloc(a->ninsns ? a->ninsns : 1, sizeof(double));
	unsigned char *want = NULL;
	int err;

	time = calloc(a->ninsns ? a->ninsns : 1, sizeof(*time));
	want = calloc(a->ninsns ? a->ninsns : 1, 1);
	err = !s || !stall || !time || !want ? dcpi_error(ENOMEM, "out of memory")
					      : evidence(set, a, ev);
	if (err)
		goto out;
	for (size_t i = 0; i < a->ninsns; i++)
		time[i] = tcol >= 0 ? a->insns[i].counts[tcol] : 0;
	for (size_t i = 0; i < a->ninsns; i++) {
		stall[i] = dcpi_stall_samples(c, time, i);
		want[i] = stall[i] > 0;
	}
	in.arch = dcpi_annot_image_arch(img);
	in.insns = &a->insns[0].insn;
	in.n = a->ninsns;
	in.stride = sizeof(a->insns[0]);
	in.cfg = &c->cfg;
	in.want = want;
	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		in.evidence[k] = ev[k];
	err = dcpi_stall_culprits(&in, s);
out:
	for (int k = 0; k < DCPI_STALL_NKINDS; k++)
		free(ev[k]);
	free(time);
	free(want);
	if (err) {
		free(s);
		free(stall);
		s = NULL;
		stall = NULL;
	}
	*sp = s;
	*stallp = stall;
	return err;
}

static int explain(struct dcpi_annot_image *img, const struct dcpi_profset *set, int tcol,
		   struct dcpi_stall_proc *p)
{
	return dcpi_stall_explain(img, set, tcol, &p->a, &p->c, &p->s, &p->stall);
}

static void proc_free(struct dcpi_stall_proc *p)
{
	dcpi_calc_free(&p->c);
	dcpi_annotation_free(&p->a);
	free(p->s);
	free(p->stall);
	memset(p, 0, sizeof(*p));
}

/* One procedure: 0 (fn called), fn's value, or -ENOMEM. */
static int one(struct dcpi_annot_image *img, const struct dcpi_profset *set,
	       const struct dcpi_calc_cols *cols, const struct dcpi_sym *sym,
	       dcpi_stall_proc_fn fn, void *arg)
{
	struct dcpi_stall_proc p = { 0 };
	int err;

	p.name = dcpi_sym_demangled(sym);
	p.col = cols->time;
	p.lo = sym->vaddr;
	p.hi = sym->vaddr + sym->size;
	if ((err = dcpi_annotate(img, p.lo, p.hi, &p.a)))
		return err == -ENOMEM ? err : fn(&(struct dcpi_stall_proc){
			.name = p.name, .lo = p.lo, .hi = p.hi, .err = err }, arg);
	for (size_t i = 0; i < p.a.ninsns; i++)
		p.samples += p.a.insns[i].counts[cols->time];
	p.err = dcpi_calc_annotation(img, &p.a, cols, &p.c);
	if (!p.err && (err = explain(img, set, cols->time, &p))) {
		proc_free(&p);
		return err;
	}
	if (p.err == -ENOMEM) {
		proc_free(&p);
		return -ENOMEM;
	}
	if (p.err) {
		free(p.s);
		free(p.stall);
		p.s = NULL;
		p.stall = NULL;
	}
	err = fn(&p, arg);
	proc_free(&p);
	return err;
}

int dcpi_stall_image(struct dcpi_annot_image *img, const struct dcpi_profset *set,
		     const struct dcpi_calc_cols *cols, dcpi_stall_proc_fn fn, void *arg,
		     uint64_t *unattributed)
{
	return dcpi_stall_image_only(img, set, cols, NULL, fn, arg, unattributed);
}

int dcpi_stall_image_only(struct dcpi_annot_image *img, const struct dcpi_profset *set,
			  const struct dcpi_calc_cols *cols, const char *only, dcpi_stall_proc_fn fn,
			  void *arg, uint64_t *unattributed)
{
	const struct dcpi_symtab *st = dcpi_annot_image_symtab(img);
	size_t n;
	const struct dcpi_annot_sample *s = dcpi_annot_image_samples(img, &n);
	uint64_t done_hi = 0;
	int err = 0;

	*unattributed = 0;
	if (cols->time < 0)
		return dcpi_error(EINVAL, "no cycles or time samples: no stalls to explain");
	for (size_t i = 0; i < n && !err; i++) {
		const struct dcpi_sym *sym;

		if (s[i].vaddr < done_hi)
			continue;
		sym = dcpi_symtab_lookup_vaddr(st, s[i].vaddr);
		if (!sym || !sym->size) {
			*unattributed += s[i].counts[cols->time];
			continue;
		}
		done_hi = sym->vaddr + sym->size;
		if (only && strcmp(dcpi_sym_demangled(sym), only))
			continue; /* not analysed at all: one procedure's stalls of a large image */
		err = one(img, set, cols, sym, fn, arg);
	}
	return err;
}

/* ---- the tally ---------------------------------------------------------------------- */

#define X86_ISSUE_WIDTH 4.0   /* cost.c's ISSUE_WIDTH (Skylake); AArch64 is single-issue there */

/* Share of a block's best case that is issuing its uops. */
static double issue_share(const struct dcpi_stall_proc *p, size_t b, const char *arch)
{
	const struct dcpi_cfg_block *bl = &p->c.cfg.blocks[b];
	int x86 = !arch || !strcmp(arch, "x86-64") || !strcmp(arch, "i386");
	double uops = 0, issue;

	for (size_t i = bl->first; i < bl->first + bl->ninsns; i++)
		uops += dcpi_cost_class(arch, &p->a.insns[i].insn)->uops;
	issue = x86 ? uops / X86_ISSUE_WIDTH : (double)bl->ninsns;
	return p->c.blocks[b].cost.cycles > 0 && issue < p->c.blocks[b].cost.cycles
	       ? issue / p->c.blocks[b].cost.cycles : 1;
}

static void tally_block(struct dcpi_stall_tally *t, const struct dcpi_stall_proc *p, size_t b,
			const char *arch)
{
	const struct dcpi_cfg_block *bl = &p->c.cfg.blocks[b];
	const struct dcpi_calc_block *cb = &p->c.blocks[b];
	double k, expected = 0, share, pending = 0;

	if (cb->cpi <= 0 || !cb->time)
		return;
	k = (double)cb->time / (cb->cpi * (double)bl->ninsns);
	for (size_t i = bl->first; i < bl->first + bl->ninsns; i++) {
		double e = p->c.insns[i].best * k, got = (double)p->a.insns[i].counts[p->col];
		double d = got - e, m;

		expected += e;
		/* skid: what the previous instruction lacked, this one has */
		m = d > 0 && pending > 0 ? (d < pending ? d : pending) : 0;
		d -= m;
		t->gain += pending - m;
		pending = d < 0 ? -d : 0;
		if (d > 0)
			dcpi_stall_add(&t->dyn, &p->s[i], d);
	}
	t->gain += pending;
	share = issue_share(p, b, arch);
	t->execution += expected * share;
	t->static_stall += expected * (1 - share);
	if (cb->conf == 'H' || cb->conf == 'M' || cb->conf == 'E')
		t->conf_ok += (double)cb->time;
}

void dcpi_stall_tally_add(struct dcpi_stall_tally *t, const struct dcpi_stall_proc *p,
			  const char *arch)
{
	double done = 0;

	t->samples += (double)p->samples;
	for (size_t b = 0; !p->err && b < p->c.cfg.nblocks; b++) {
		if (p->c.blocks[b].cpi > 0)
			done += (double)p->c.blocks[b].time;
		tally_block(t, p, b, arch);
	}
	t->unestimated += (double)p->samples - done;
}
