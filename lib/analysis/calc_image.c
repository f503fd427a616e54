/* The calc engine on an annotated image: see dcpi/calc.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/calc.h"
#include "dcpi/error.h"
#include "dcpi/evcols.h"

static int image_noreturn(uint64_t target, void *arg)
{
	struct dcpi_annot_image *img = arg;
	const struct dcpi_sym *s = dcpi_symtab_lookup_vaddr(dcpi_annot_image_symtab(img), target);

	return s && s->vaddr == target && dcpi_cfg_noreturn_name(s->name);
}

static int image_read(uint64_t vaddr, void *buf, size_t len, void *arg)
{
	return dcpi_annot_image_read(arg, vaddr, buf, len);
}

void dcpi_calc_image_cfg(struct dcpi_annot_image *img, struct dcpi_cfg_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->arch = dcpi_annot_image_arch(img);
	o->noreturn = image_noreturn;
	o->read = image_read;
	o->arg = img;
}

#define MAX_COLD_BYTES 65536
#define MAX_ENTRIES 256

/* Where the procedure's cold part (a symbol "NAME.cold", or any symbol
 * holding "cold" that its jumps lead to) jumps back into [a->lo, a->hi):
 * the cold code is decoded instruction by instruction, at most
 * MAX_COLD_BYTES of it. */
static size_t cold_entries(struct dcpi_annot_image *img, const struct dcpi_annotation *a,
			   uint64_t *out)
{
	const struct dcpi_symtab *st = dcpi_annot_image_symtab(img);
	uint64_t seen = 0;
	size_t n = 0;

	for (size_t i = 0; i < a->ninsns && n < MAX_ENTRIES; i++) {
		const struct dcpi_insn *in = &a->insns[i].insn;
		const struct dcpi_sym *s;
		struct dcpi_insn ci;

		if (!(in->flags & DCPI_INSN_JUMP) || !(in->flags & DCPI_INSN_DIRECT) ||
		    (in->target >= a->lo && in->target < a->hi))
			continue;
		s = dcpi_symtab_lookup_vaddr(st, in->target);
		if (!s || !strstr(s->name, "cold") || s->vaddr == seen)
			continue;
		seen = s->vaddr;
		for (uint64_t v = s->vaddr; v < s->vaddr + s->size &&
		     v < s->vaddr + MAX_COLD_BYTES && n < MAX_ENTRIES; v += ci.size) {
			if (dcpi_annot_image_insn(img, v, &ci) || ci.size == 0)
				break;
			if ((ci.flags & DCPI_INSN_JUMP) && (ci.flags & DCPI_INSN_DIRECT) &&
			    ci.target >= a->lo && ci.target < a->hi)
				out[n++] = ci.target;
		}
	}
	return n;
}

int dcpi_calc_annotation(struct dcpi_annot_image *img, const struct dcpi_annotation *a,
			 const struct dcpi_calc_cols *cols, struct dcpi_calc *out)
{
	struct dcpi_calc_input in;
	uint64_t *time = NULL, *ret = NULL, entries[MAX_ENTRIES];
	uint64_t first_bad = 0;
	size_t bad = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (!a->has_code || a->ninsns == 0)
		return dcpi_error(ENODATA, "no code for 0x%" PRIx64 "-0x%" PRIx64 ": block "
				  "frequencies need the instructions", a->lo, a->hi);
	for (size_t i = 0; i < a->ninsns; i++)
		if ((a->insns[i].insn.flags & DCPI_INSN_BAD) && !bad++)
			first_bad = a->insns[i].insn.vaddr;
	/* after bytes that do not decode, the walk resynchronises on junk:
	 * a graph of it would be invented */
	if (bad)
		return dcpi_error(ENOEXEC, "0x%" PRIx64 "-0x%" PRIx64 ": the bytes at 0x%" PRIx64
				  " do not decode (%zu place%s; instructions this disassembler "
				  "does not know, such as AVX-512, or data): no graph is made of "
				  "code that cannot be read", a->lo, a->hi, first_bad, bad,
				  bad > 1 ? "s" : "");
	memset(&in, 0, sizeof(in));
	time = cols->time >= 0 ? calloc(a->ninsns, sizeof(*time)) : NULL;
	ret = cols->retired >= 0 ? calloc(a->ninsns, sizeof(*ret)) : NULL;
	if ((cols->time >= 0 && !time) || (cols->retired >= 0 && !ret)) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < a->ninsns; i++) {
		if (time)
			time[i] = a->insns[i].counts[cols->time];
		if (ret)
			ret[i] = a->insns[i].counts[cols->retired];
	}
	in.arch = dcpi_annot_image_arch(img);
	in.insns = &a->insns[0].insn;
	in.n = a->ninsns;
	in.stride = sizeof(a->insns[0]);
	in.time = time;
	in.retired = ret;
	in.exact = cols->exact;
	in.cycles_per_sample = cols->cycles_per_sample;
	in.retired_period = cols->retired_period;
	in.mode = cols->mode;
	in.timer = cols->timer;
	in.block_cycles = cols->block_cycles;
	in.block_cycles_arg = cols->block_cycles_arg;
	dcpi_calc_image_cfg(img, &in.cfg);
	in.cfg.entries = entries;
	in.cfg.nentries = cold_entries(img, a, entries);
	err = dcpi_calc_run(&in, out);
out:
	free(time);
	free(ret);
	return err;
}

int dcpi_calc_cols_choose(const struct dcpi_profset *set, int mode, struct dcpi_calc_cols *c)
{
	memset(c, 0, sizeof(*c));
	c->time = dcpi_evcols_time(set);
	c->timer = c->time >= 0 && c->time != dcpi_evcols_cycles(set);
	c->cycles_per_sample = dcpi_evcols_cycles_per_sample(set, c->time);
	c->retired = dcpi_evcols_retired(set);
	c->retired_period = c->retired >= 0 ? (double)set->periods[c->retired] : 0;
	c->mode = mode >= 0 ? (enum dcpi_calc_mode)mode
		  : c->retired >= 0 ? DCPI_CALC_RETIRED : DCPI_CALC_TIME;
	if (c->mode == DCPI_CALC_RETIRED && c->retired < 0)
		return dcpi_error(EINVAL, "-mode retired: no 'instructions' event with one period "
				  "in the samples");
	if (c->mode == DCPI_CALC_TIME && c->time < 0)
		return dcpi_error(EINVAL, "no cycles or time event (cycles, cpu-clock, task-clock) "
				  "with one period in the samples: nothing to estimate from");
	return 0;
}
