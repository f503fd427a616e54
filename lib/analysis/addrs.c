/* Every sampled address, named: see dcpi/addrs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/addrs.h"
#include "dcpi/error.h"
#include "dcpi/procs.h"
#include "dcpi/symtab.h"

static const char *known(const char *s)
{
	return s && *s ? s : "??";
}

/* The source frames of vaddr, innermost first: the innermost function at
 * the line itself, then each function it was inlined into at its call
 * site. */
static void frames_of(struct dcpi_srclines *sl, uint64_t vaddr, struct dcpi_addr *a)
{
	struct dcpi_srcloc loc;

	if (!sl || dcpi_srcline_lookup(sl, vaddr, &loc))
		return;
	a->frames[0] = (struct dcpi_addr_frame){ known(loc.function), known(loc.file), loc.line };
	a->nframes = 1;
	for (size_t k = 0; k < loc.ninline && a->nframes < DCPI_ADDR_MAX_FRAMES; k++) {
		const char *caller = k + 1 < loc.ninline ? loc.inl[k + 1].callee : loc.outer;

		a->frames[a->nframes++] = (struct dcpi_addr_frame){
			known(caller), known(loc.inl[k].call_file), loc.inl[k].call_line };
	}
}

struct entry_ctx {
	const struct dcpi_profset_entry *e;
	const struct dcpi_symtab *st;
	struct dcpi_srclines *sl;
	uint64_t delta;         /* symtab vaddr - code/DWARF vaddr */
};

static void open_entry(struct dcpi_objcache *objs, struct entry_ctx *x)
{
	const struct dcpi_profile *p = &x->e->prof;
	struct dcpi_obj *obj;

	x->st = NULL;
	x->sl = NULL;
	x->delta = 0;
	if (p->kind == DCPI_IMAGE_ANON || p->kind == DCPI_IMAGE_UNKNOWN || !objs ||
	    dcpi_objcache_get(objs, p, x->e->platdir, &obj))
		return; /* the rows are still given, by offset */
	x->st = dcpi_obj_symtab(obj);
	if (p->kind == DCPI_IMAGE_KERNEL)
		dcpi_obj_code(obj, &x->delta);
	x->sl = dcpi_obj_lines(obj);
}

/* a->map_* (see dcpi/addrs.h) */
static void map_of(const struct entry_ctx *x, struct dcpi_addr *a)
{
	const struct dcpi_profile *p = &x->e->prof;
	struct dcpi_symtab_segment seg;

	if (p->kind == DCPI_IMAGE_FILE && x->st && !dcpi_symtab_segment(x->st, a->offset, &seg)) {
		a->map_start = seg.vaddr;
		a->map_limit = seg.vaddr + seg.memsz;
		a->map_offset = seg.off;
		a->has_map = a->map_limit > a->map_start;
	} else if ((p->kind == DCPI_IMAGE_KERNEL || p->kind == DCPI_IMAGE_MODULE) && a->has_vaddr &&
		   p->text_size && p->text_start <= UINT64_MAX - p->text_size &&
		   a->vaddr >= p->text_start && a->vaddr - p->text_start < p->text_size) {
		a->map_start = p->text_start;
		a->map_limit = p->text_start + p->text_size;
		a->has_map = 1;
	}
}

/* One row of e, named, into a (its procedure in *proc, grown as needed). */
static int name_row(const struct entry_ctx *x, uint64_t offset, struct dcpi_addr *a, char **proc,
		    size_t *pcap)
{
	int err;

	memset(a, 0, sizeof(*a));
	a->e = x->e;
	a->offset = offset;
	a->has_vaddr = x->st && !dcpi_symtab_off2vaddr(x->st, a->offset, &a->vaddr);
	if (!a->has_vaddr)
		a->vaddr = a->offset;
	map_of(x, a);
	if ((err = dcpi_procs_name_grow(&x->e->prof, x->st, a->offset, proc, pcap)))
		return err;
	a->procedure = *proc;
	if (a->has_vaddr)
		frames_of(x->sl, a->vaddr - x->delta, a);
	return 0;
}

int dcpi_addrs_one(struct dcpi_objcache *objs, const struct dcpi_profset_entry *e,
		   uint64_t offset, struct dcpi_addr *a, char **proc, size_t *pcap)
{
	struct entry_ctx x = { e, NULL, NULL, 0 };

	open_entry(objs, &x);
	return name_row(&x, offset, a, proc, pcap);
}

static int walk_entry(struct dcpi_objcache *objs,
		      const struct dcpi_profset_entry *e, dcpi_addr_cb cb, void *arg)
{
	const struct dcpi_profile *p = &e->prof;
	struct entry_ctx x = { e, NULL, NULL, 0 };
	char *proc = NULL;
	size_t pcap = 0;
	struct dcpi_addr a;
	int err = 0;

	open_entry(objs, &x);
	for (size_t r = 0; r < p->nrows && !err; r++) {
		if ((err = name_row(&x, p->offsets[r], &a, &proc, &pcap)))
			break;
		for (uint32_t ev = 0; ev < p->nevents; ev++)
			a.counts[e->col[ev]] += p->counts[r * p->nevents + ev];
		err = cb(arg, &a);
	}
	free(proc);
	return err;
}

int dcpi_addrs_walk(const struct dcpi_profset *set, const unsigned char *chosen,
		    struct dcpi_objcache *objs, dcpi_addr_cb cb, void *arg)
{
	int err = 0;

	for (size_t i = 0; i < set->n && !err; i++)
		if (!chosen || chosen[i])
			err = walk_entry(objs, &set->v[i], cb, arg);
	return err;
}
