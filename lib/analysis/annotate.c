/* Samples on instructions and source lines: see dcpi/annotate.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/annotate.h"
#include "dcpi/error.h"
#include "dcpi/evcols.h"
#include "dcpi/source.h"
#include "internal.h"

#define MAX_SOURCES 256  /* source files kept open per image */

struct source_slot {
	const char *dwarf_path;     /* interned by the srclines */
	struct dcpi_source *src;    /* NULL: not found */
	unsigned long noted;        /* the annotation that last said so */
};

struct dcpi_annot_image {
	const struct dcpi_profset *set;
	const struct dcpi_profset_entry *prim;  /* the identity chosen */
	struct dcpi_annot_opts o;
	struct dcpi_obj *obj;         /* the image's handle: symbols, code, DWARF */
	int own_obj;                  /* opened here, not borrowed from o.objs */
	struct dcpi_symtab *st;       /* the obj's */
	struct dcpi_disasm *dis;      /* the obj's; NULL: no code */
	uint64_t code_delta;          /* symtab vaddr - code vaddr (KASLR) */
	struct dcpi_srclines *sl;     /* the obj's; NULL: no DWARF */
	struct dcpi_annot_sample *samples;
	size_t nsamples;
	char *notes[DCPI_ANNOT_MAX_NOTES];
	size_t nnotes, notes_cut;
	struct dcpi_source_opts src;  /* o.src's, with the image's owner */
	struct source_slot sources[MAX_SOURCES];
	size_t nsources;
	unsigned long serial;         /* of the current annotation, for notes */
};

/* ---- notes --------------------------------------------------------------- */

__attribute__((format(printf, 4, 0)))
static void note_add(char **v, size_t *n, size_t *cut, const char *fmt, va_list ap)
{
	char *s;

	if (*n == DCPI_ANNOT_MAX_NOTES - 1) { /* the last slot says how many more */
		(*cut)++;
		free(v[*n]);
		v[*n] = NULL;
		if (asprintf(&s, "%zu more notes not shown", *cut) >= 0)
			v[*n] = s;
		return;
	}
	if (vasprintf(&s, fmt, ap) >= 0)
		v[(*n)++] = s;
}

static void img_note(struct dcpi_annot_image *img, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void img_note(struct dcpi_annot_image *img, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_add(img->notes, &img->nnotes, &img->notes_cut, fmt, ap);
	va_end(ap);
}

/* ---- choosing the identity ----------------------------------------------- */

static uint64_t entry_samples(const struct dcpi_profset_entry *e)
{
	uint64_t t = 0;

	for (uint32_t ev = 0; ev < e->prof.nevents; ev++)
		t += e->prof.events[ev].total;
	return t;
}

/* The entry whose identity has the most samples (ties: the first). */
static const struct dcpi_profset_entry *choose(const struct dcpi_profset *set,
					       const size_t *idx, size_t n)
{
	const struct dcpi_profset_entry *best = NULL;
	uint64_t best_t = 0;

	for (size_t i = 0; i < n; i++) {
		const struct dcpi_profset_entry *e = &set->v[idx[i]];
		uint64_t t = 0;

		for (size_t j = 0; j < n; j++)
			if (dcpi_profile_same_image(&e->prof, &set->v[idx[j]].prof))
				t += entry_samples(&set->v[idx[j]]);
		if (!best || t > best_t) {
			best = e;
			best_t = t;
		}
	}
	return best;
}

/* ---- symbols and code ------------------------------------------------------ */

/* The obj of a profile: from the caller's cache when there is one (then
 * borrowed), else opened for this image alone. */
static int get_obj(const struct dcpi_annot_image *img, const struct dcpi_profset_entry *e,
		   struct dcpi_obj **out, int *owned)
{
	struct dcpi_obj_opts oo = { img->o.sym, img->o.vmlinux, NULL };

	*owned = !img->o.objs;
	if (img->o.objs)
		return dcpi_objcache_get(img->o.objs, &e->prof, e->platdir, out);
	return dcpi_obj_open(&e->prof, e->platdir, &oo, out);
}

static void put_obj(struct dcpi_obj *obj, int owned)
{
	if (owned)
		dcpi_obj_close(obj);
}

/* Symbols, code and lines, with a note for each that cannot be had. */
static int open_image(struct dcpi_annot_image *img)
{
	int err = get_obj(img, img->prim, &img->obj, &img->own_obj);

	if (err)
		return err;
	img->st = dcpi_obj_symtab(img->obj);
	if (*dcpi_symtab_message(img->st))
		img_note(img, "%s: %s", img->prim->prof.path, dcpi_symtab_message(img->st));
	img->dis = dcpi_obj_code(img->obj, &img->code_delta);
	if (!img->dis && dcpi_obj_code_note(img->obj))
		img_note(img, "%s", dcpi_obj_code_note(img->obj));
	if (img->o.src)
		img->src = *img->o.src;
	img->src.image_uid = dcpi_symtab_owner(img->st);
	img->sl = dcpi_obj_lines(img->obj);
	if (!img->sl && dcpi_obj_lines_note(img->obj))
		img_note(img, "%s", dcpi_obj_lines_note(img->obj));
	return 0;
}

/* ---- samples ----------------------------------------------------------------- */

struct acc {
	struct dcpi_annot_sample *v;
	size_t n, cap;
	uint64_t unplaced;
};

static int acc_add(struct acc *a, uint64_t vaddr, const struct dcpi_profset_entry *e, size_t row)
{
	const struct dcpi_profile *p = &e->prof;
	struct dcpi_annot_sample *s;

	int err = DCPI_GROW(a->v, a->cap, a->n + 1, SIZE_MAX, "samples");

	if (err)
		return err;
	s = &a->v[a->n++];
	memset(s, 0, sizeof(*s));
	s->vaddr = vaddr;
	for (uint32_t ev = 0; ev < p->nevents; ev++)
		s->counts[e->col[ev]] += p->counts[row * p->nevents + ev];
	return 0;
}

/* A kernel sample of another boot, moved to the chosen boot's address of
 * the same symbol and offset in it; 0 when no unique symbol matches. */
static int relocate(const struct dcpi_symtab *from, const struct dcpi_symtab *to, uint64_t addr,
		    uint64_t *out)
{
	const struct dcpi_sym *s = dcpi_symtab_lookup_vaddr(from, addr), *t[1];

	if (!s || dcpi_symtab_find(to, s->name, t, 1) != 1)
		return 0;
	*out = t[0]->vaddr + (addr - s->vaddr);
	return 1;
}

static int add_entry(struct dcpi_annot_image *img, struct acc *a,
		     const struct dcpi_profset_entry *e)
{
	const struct dcpi_profile *p = &e->prof;
	struct dcpi_obj *oobj = NULL;
	const struct dcpi_symtab *other = NULL;
	int err = 0, owned = 0;

	if (p->kind == DCPI_IMAGE_KERNEL && strcmp(e->platdir, img->prim->platdir) &&
	    !get_obj(img, e, &oobj, &owned))
		other = dcpi_obj_symtab(oobj); /* else unplaceable: counted below */
	for (size_t r = 0; r < p->nrows && !err; r++) {
		uint64_t v;
		int ok;

		if (p->kind == DCPI_IMAGE_KERNEL && strcmp(e->platdir, img->prim->platdir))
			ok = other && relocate(other, img->st, p->offsets[r], &v);
		else
			ok = !dcpi_symtab_off2vaddr(img->st, p->offsets[r], &v);
		if (ok)
			err = acc_add(a, v, e, r);
		else
			for (uint32_t ev = 0; ev < p->nevents; ev++)
				a->unplaced += p->counts[r * p->nevents + ev];
	}
	put_obj(oobj, owned);
	return err;
}

static int cmp_sample(const void *x, const void *y)
{
	const struct dcpi_annot_sample *a = x, *b = y;

	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

/* Sort, then fold equal addresses into one. */
static void acc_fold(struct acc *a, unsigned ncols)
{
	size_t w = 0;

	if (a->n)
		qsort(a->v, a->n, sizeof(*a->v), cmp_sample);
	for (size_t r = 0; r < a->n; r++) {
		if (w && a->v[w - 1].vaddr == a->v[r].vaddr) {
			for (unsigned c = 0; c < ncols; c++)
				a->v[w - 1].counts[c] += a->v[r].counts[c];
			continue;
		}
		a->v[w++] = a->v[r];
	}
	a->n = w;
}

static int gather(struct dcpi_annot_image *img, const size_t *idx, size_t n)
{
	struct acc a = { 0 };
	size_t other = 0;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		const struct dcpi_profset_entry *e = &img->set->v[idx[i]];

		if (!dcpi_profile_same_image(&e->prof, &img->prim->prof)) {
			other++;
			continue;
		}
		err = add_entry(img, &a, e);
	}
	if (err) {
		free(a.v);
		return err;
	}
	acc_fold(&a, img->set->nevents);
	img->samples = a.v;
	img->nsamples = a.n;
	if (other)
		img_note(img, "%zu profile(s) of another build of %s are left out", other,
			 img->prim->prof.path);
	if (a.unplaced)
		img_note(img, "%" PRIu64 " samples could not be placed at an address of this "
			 "image and are left out", a.unplaced);
	return 0;
}

/* ---- the image ---------------------------------------------------------------- */

int dcpi_annot_image_open(const struct dcpi_profset *set, const size_t *idx, size_t n,
			  const struct dcpi_annot_opts *o, struct dcpi_annot_image **out)
{
	struct dcpi_annot_image *img;
	int err;

	*out = NULL;
	if (n == 0)
		return dcpi_error(EINVAL, "no profiles to annotate");
	img = calloc(1, sizeof(*img));
	if (!img)
		return dcpi_error(ENOMEM, "out of memory");
	img->set = set;
	if (o)
		img->o = *o;
	img->prim = choose(set, idx, n);
	err = open_image(img);
	if (err)
		goto fail;
	err = gather(img, idx, n);
	if (err)
		goto fail;
	*out = img;
	return 0;
fail:
	dcpi_annot_image_close(img);
	return err;
}

void dcpi_annot_image_close(struct dcpi_annot_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nsources; i++)
		dcpi_source_close(img->sources[i].src);
	for (size_t i = 0; i < img->nnotes; i++)
		free(img->notes[i]);
	free(img->samples);
	put_obj(img->obj, img->own_obj);
	free(img);
}

const struct dcpi_symtab *dcpi_annot_image_symtab(const struct dcpi_annot_image *img)
{
	return img->st;
}

const struct dcpi_profile *dcpi_annot_image_profile(const struct dcpi_annot_image *img)
{
	return &img->prim->prof;
}

int dcpi_annot_image_has_code(const struct dcpi_annot_image *img)
{
	return img->dis != NULL;
}

const struct dcpi_annot_sample *dcpi_annot_image_samples(const struct dcpi_annot_image *img,
							 size_t *n)
{
	*n = img->nsamples;
	return img->samples;
}

size_t dcpi_annot_image_nnotes(const struct dcpi_annot_image *img)
{
	return img->nnotes;
}

const char *dcpi_annot_image_note(const struct dcpi_annot_image *img, size_t i)
{
	return i < img->nnotes ? img->notes[i] : NULL;
}

/* Decoding toward want: the instruction that starts at or holds it. */
struct upto {
	uint64_t want;
	struct dcpi_insn *out;
};

static int insn_upto(const struct dcpi_insn *in, void *arg)
{
	struct upto *u = arg;

	if (in->vaddr + in->size <= u->want)
		return 0;
	*u->out = *in;
	return 1;
}

/* Where decoding must start for vaddr: its procedure's first byte, so an
 * address inside an instruction is never decoded as one; the address
 * itself when no sized symbol holds it (nothing better is known). */
static void decode_window(const struct dcpi_annot_image *img, uint64_t vaddr, uint64_t *lo,
			  uint64_t *hi)
{
	const struct dcpi_sym *s = dcpi_symtab_lookup_vaddr(img->st, vaddr);

	*lo = vaddr;
	*hi = vaddr + DCPI_INSN_MAX_BYTES;
	if (!s || !s->size || s->vaddr + s->size <= vaddr)
		return;
	if (vaddr - s->vaddr <= DCPI_ANNOT_MAX_RANGE)
		*lo = s->vaddr;
	if (s->vaddr + s->size < *hi)
		*hi = s->vaddr + s->size; /* do not read past the procedure's section */
}

int dcpi_annot_image_read(struct dcpi_annot_image *img, uint64_t vaddr, void *buf, size_t len)
{
	if (!img->dis)
		return dcpi_error(ENODATA, "%s: no code to read", img->prim->prof.path);
	/* a slid kernel's tables hold its unslid addresses: not read */
	if (img->code_delta)
		return dcpi_error(ENODATA, "%s: data of a relocated image is not read",
				  img->prim->prof.path);
	return dcpi_disasm_read(img->dis, vaddr, buf, len);
}

const char *dcpi_annot_image_arch(const struct dcpi_annot_image *img)
{
	return img->dis ? dcpi_disasm_arch(img->dis) : NULL;
}

int dcpi_annot_image_insn(struct dcpi_annot_image *img, uint64_t vaddr, struct dcpi_insn *insn)
{
	struct upto u = { vaddr - img->code_delta, insn };
	uint64_t lo, hi;
	int err;

	if (!img->dis)
		return dcpi_error(ENODATA, "%s: no code to disassemble", img->prim->prof.path);
	decode_window(img, vaddr, &lo, &hi);
	err = dcpi_disasm_range(img->dis, lo - img->code_delta, hi - img->code_delta, insn_upto,
				&u);
	if (err != 1)
		return err ? err : dcpi_error(ENODATA, "no instruction at 0x%" PRIx64, vaddr);
	insn->vaddr += img->code_delta;
	if (insn->flags & DCPI_INSN_DIRECT)
		insn->target += img->code_delta;
	if (insn->vaddr == vaddr)
		return 0;
	if (insn->vaddr < vaddr)
		return dcpi_error(EDOM, "0x%" PRIx64 " is inside the instruction at 0x%" PRIx64,
				  vaddr, insn->vaddr);
	return dcpi_error(ENODATA, "no instruction decodes at 0x%" PRIx64, vaddr);
}

int dcpi_annot_image_srcloc(struct dcpi_annot_image *img, uint64_t vaddr,
			    struct dcpi_srcloc *loc)
{
	if (!img->sl)
		return dcpi_error(ENOENT, "%s: no source lines", img->prim->prof.path);
	return dcpi_srcline_lookup(img->sl, vaddr - img->code_delta, loc);
}

/* The text of a source line; NULL (noted once per file) when the file is
 * not found. */
static const char *source_text(struct dcpi_annot_image *img, const char *file, unsigned line,
			       struct dcpi_annotation *a);

/* ---- procedures ------------------------------------------------------------------ */

static int parse_hex(const char *s, uint64_t *v, const char **end)
{
	char *e;

	if (strncmp(s, "0x", 2) && strncmp(s, "0X", 2))
		return -1;
	errno = 0;
	*v = strtoull(s, &e, 16);
	if (errno || e <= s + 2)
		return -1;
	*end = e;
	return 0;
}

static size_t similar(const struct dcpi_symtab *st, const char *spec,
		      const struct dcpi_sym **cands, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < dcpi_symtab_count(st); i++) {
		const struct dcpi_sym *s = dcpi_symtab_sym(st, i);

		if (strstr(dcpi_sym_demangled(s), spec) || strstr(s->name, spec)) {
			if (n < max)
				cands[n] = s;
			n++;
		}
	}
	return n;
}

static int resolve_name(const struct dcpi_symtab *st, const char *spec, uint64_t *lo,
			uint64_t *hi, const char **name, const struct dcpi_sym **cands,
			size_t max, size_t *ncands)
{
	const struct dcpi_sym *m[64];
	size_t n = dcpi_symtab_find(st, spec, m, 64), distinct = 0;

	for (size_t i = 0; i < n && i < 64; i++) {
		size_t j = 0;

		while (j < i && m[j]->vaddr != m[i]->vaddr)
			j++;
		if (j == i) /* aliases of one address are one procedure */
			m[distinct++] = m[i];
	}
	if (n == 0 || distinct != 1 || n > 64) {
		if (n == 0) {
			*ncands = similar(st, spec, cands, max);
		} else {
			*ncands = n > 64 ? n : distinct;
			for (size_t i = 0; i < distinct && i < max; i++)
				cands[i] = m[i];
		}
		return n == 0 ? dcpi_error(ENOENT, "no procedure '%s' in %s", spec,
					   dcpi_symtab_path(st))
			      : dcpi_error(EEXIST, "procedure name '%s' is ambiguous in %s", spec,
					   dcpi_symtab_path(st));
	}
	if (!m[0]->size)
		return dcpi_error(EINVAL, "procedure '%s' has no size: name a range 0xLO-0xHI",
				  spec);
	*lo = m[0]->vaddr;
	*hi = m[0]->vaddr + m[0]->size;
	*name = dcpi_sym_demangled(m[0]);
	return 0;
}

/* NAME@0xADDR (what dcpiprof prints for one of several procedures of one
 * name): the symbol starting at ADDR, if it has that name.  0, or -ENOENT
 * (without a message: the caller goes on with the spec as a name). */
static int resolve_at(const struct dcpi_symtab *st, const char *spec, size_t nlen,
		      const char *addr, uint64_t *lo, uint64_t *hi, const char **name)
{
	const struct dcpi_sym *m[64];
	const char *end;
	char want[4096];
	uint64_t a;
	size_t n;

	if (nlen >= sizeof(want) || parse_hex(addr, &a, &end) || *end)
		return -ENOENT;
	memcpy(want, spec, nlen);
	want[nlen] = '\0';
	n = dcpi_symtab_find(st, want, m, 64);
	for (size_t i = 0; i < n && i < 64; i++)
		if (m[i]->vaddr == a && m[i]->size) {
			*lo = a;
			*hi = a + m[i]->size;
			*name = dcpi_sym_demangled(m[i]);
			return 0;
		}
	return -ENOENT;
}

/* dcpiprof's and dcpitopcounts' labels for code no symbol covers,
 * "[IMAGE@0xLO-0xHI SECTION]" (HI the last byte) or "[IMAGE@0xADDR
 * SECTION]": the range, or the symbol holding the address. */
static int resolve_label(const struct dcpi_symtab *st, const char *spec, uint64_t *lo,
			 uint64_t *hi, const char **name)
{
	const char *at = strrchr(spec, '@'), *end;
	const struct dcpi_sym *s;
	uint64_t a, b;

	if (!at || spec[strlen(spec) - 1] != ']' || parse_hex(at + 1, &a, &end))
		return dcpi_error(EINVAL, "'%s' is not a label dcpiprof prints "
				  "([IMAGE@0xLO-0xHI SECTION])", spec);
	if (*end == '-') {
		if (parse_hex(end + 1, &b, &end) || (*end != ' ' && *end != ']') || b < a ||
		    b == UINT64_MAX)
			return dcpi_error(EINVAL, "'%s': a label's range is 0xLO-0xHI with LO <= HI",
					  spec);
		*lo = a;
		*hi = b + 1;
		return 0;
	}
	if (*end != ' ' && *end != ']')
		return dcpi_error(EINVAL, "'%s' is not a label dcpiprof prints", spec);
	s = dcpi_symtab_lookup_vaddr(st, a);
	if (!s || !s->size)
		return dcpi_error(ENOENT, "no procedure holds 0x%" PRIx64 " in %s (give a range, "
				  "0xLO-0xHI)", a, dcpi_symtab_path(st));
	*lo = s->vaddr;
	*hi = s->vaddr + s->size;
	*name = dcpi_sym_demangled(s);
	return 0;
}

int dcpi_annot_resolve(const struct dcpi_symtab *st, const char *spec, uint64_t *lo,
		       uint64_t *hi, const char **name, const struct dcpi_sym **cands,
		       size_t max, size_t *ncands)
{
	const struct dcpi_sym *s;
	const char *end;
	uint64_t a, b;

	*ncands = 0;
	*name = NULL;
	if (!strcmp(spec, "[unknown]") || (spec[0] == '[' && !strchr(spec, '@')))
		return dcpi_error(ENOENT, "'%s' is a label for code that cannot be listed by "
				  "address (anonymous memory, samples of no image, or a "
				  "section's stubs)", spec);
	if (spec[0] == '[')
		return resolve_label(st, spec, lo, hi, name);
	if (parse_hex(spec, &a, &end) && !dcpi_symtab_find(st, spec, cands, 0) &&
	    (end = strrchr(spec, '@')) && end != spec && end[1] == '0' &&
	    !resolve_at(st, spec, (size_t)(end - spec), end + 1, lo, hi, name))
		return 0;
	if (parse_hex(spec, &a, &end))
		return resolve_name(st, spec, lo, hi, name, cands, max, ncands);
	if (*end == '-') {
		if (parse_hex(end + 1, &b, &end) || *end || b <= a)
			return dcpi_error(EINVAL, "'%s': a range is 0xLO-0xHI with LO < HI", spec);
		*lo = a;
		*hi = b;
		s = dcpi_symtab_lookup_vaddr(st, a);
		*name = s ? dcpi_sym_demangled(s) : NULL;
		return 0;
	}
	if (*end)
		return dcpi_error(EINVAL, "'%s' is neither a name, 0xADDR nor 0xLO-0xHI", spec);
	s = dcpi_symtab_lookup_vaddr(st, a);
	if (!s || !s->size)
		return dcpi_error(ENOENT, "no procedure holds 0x%" PRIx64 " in %s", a,
				  dcpi_symtab_path(st));
	*lo = s->vaddr;
	*hi = s->vaddr + s->size;
	*name = dcpi_sym_demangled(s);
	return 0;
}

/* ---- annotating -------------------------------------------------------------------- */

static void ann_note(struct dcpi_annotation *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void ann_note(struct dcpi_annotation *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_add(a->notes, &a->nnotes, &a->notes_cut, fmt, ap);
	va_end(ap);
}

static const char *source_text(struct dcpi_annot_image *img, const char *file, unsigned line,
			       struct dcpi_annotation *a)
{
	struct source_slot *slot = NULL;

	if (img->o.no_source || !strcmp(file, "??") || line == 0)
		return NULL;
	for (size_t i = 0; i < img->nsources && !slot; i++)
		if (!strcmp(img->sources[i].dwarf_path, file))
			slot = &img->sources[i];
	if (!slot) {
		if (img->nsources == MAX_SOURCES)
			return NULL;
		slot = &img->sources[img->nsources++];
		slot->dwarf_path = file;
		if (dcpi_source_open(file, &img->src, &slot->src))
			slot->src = NULL;
	}
	if (!slot->src && slot->noted != img->serial) {
		slot->noted = img->serial; /* once per file and annotation */
		if (dcpi_source_open(file, &img->src, &slot->src))
			ann_note(a, "source file not found: %s; its lines are listed without text",
				 dcpi_errmsg());
	}
	return slot->src ? dcpi_source_line(slot->src, line, NULL) : NULL;
}

struct collect {
	struct dcpi_annotation *a;
	size_t cap;
	uint64_t delta;
};

static int collect_insn(const struct dcpi_insn *in, void *arg)
{
	struct collect *c = arg;
	struct dcpi_annot_insn *r;

	int err = DCPI_GROW(c->a->insns, c->cap, c->a->ninsns + 1, DCPI_DISASM_MAX_INSNS,
			    "instructions");

	if (err)
		return err;
	r = &c->a->insns[c->a->ninsns++];
	memset(r, 0, sizeof(*r));
	r->insn = *in;
	r->insn.vaddr += c->delta;
	if (in->flags & DCPI_INSN_DIRECT)
		r->insn.target += c->delta;
	return 0;
}

/* The index of the first of the n sorted samples s at or above v. */
static size_t first_sample(const struct dcpi_annot_sample *s, size_t n, uint64_t v)
{
	size_t l = 0, h = n;

	while (l < h) {
		size_t m = l + (h - l) / 2;

		if (s[m].vaddr < v)
			l = m + 1;
		else
			h = m;
	}
	return l;
}

/* Instructions from the code, or one bare row per sampled address when
 * there is no code. */
static int make_insns(struct dcpi_annot_image *img, struct dcpi_annotation *a)
{
	struct collect c = { a, 0, img->code_delta };
	size_t ns;
	const struct dcpi_annot_sample *s = dcpi_annot_image_samples(img, &ns);
	int err;

	if (img->dis) {
		err = dcpi_disasm_range(img->dis, a->lo - img->code_delta, a->hi - img->code_delta,
					collect_insn, &c);
		if (!err) {
			a->has_code = 1;
			return 0;
		}
		if (err == -ENOMEM)
			return err;
		ann_note(a, "instructions are not shown: %s", dcpi_errmsg());
		free(a->insns);
		a->insns = NULL;
		a->ninsns = 0;
		c.cap = 0;
	}
	for (size_t i = first_sample(s, ns, a->lo); i < ns && s[i].vaddr < a->hi; i++) {
		if ((err = DCPI_GROW(a->insns, c.cap, a->ninsns + 1, SIZE_MAX, "instructions")))
			return err;
		memset(&a->insns[a->ninsns], 0, sizeof(a->insns[0]));
		a->insns[a->ninsns++].insn.vaddr = s[i].vaddr;
	}
	return 0;
}

/* The instruction starting at v, or the index of the first one after v. */
size_t dcpi_annot_insn_at(const struct dcpi_annotation *a, uint64_t v)
{
	size_t l = 0, h = a->ninsns;

	while (l < h) {
		size_t m = l + (h - l) / 2;

		if (a->insns[m].insn.vaddr < v)
			l = m + 1;
		else
			h = m;
	}
	return l;
}

static int add_stray(struct dcpi_annotation *a, size_t *cap, const struct dcpi_annot_sample *s,
		     size_t after)
{
	struct dcpi_annot_stray *t;

	int err = DCPI_GROW(a->strays, *cap, a->nstrays + 1, SIZE_MAX, "stray samples");

	if (err)
		return err;
	t = &a->strays[a->nstrays++];
	memset(t, 0, sizeof(*t));
	t->vaddr = s->vaddr;
	if (after > 0) {
		const struct dcpi_insn *p = &a->insns[after - 1].insn;

		if (s->vaddr - p->vaddr < (p->size ? p->size : 1))
			t->containing_vaddr = p->vaddr;
	}
	memcpy(t->counts, s->counts, sizeof(t->counts));
	return 0;
}

/* Only the samples in [lo, hi): from the first one there (the samples are
 * sorted), so a procedure costs O(log n + its samples), not all the image's
 * samples (a million-function image was n^2). */
static int place_samples(struct dcpi_annot_image *img, struct dcpi_annotation *a)
{
	size_t ns, cap = 0;
	const struct dcpi_annot_sample *s = dcpi_annot_image_samples(img, &ns);

	for (size_t i = first_sample(s, ns, a->lo); i < ns && s[i].vaddr < a->hi; i++) {
		size_t k;

		for (unsigned c = 0; c < a->ncols; c++)
			a->total[c] += s[i].counts[c];
		k = dcpi_annot_insn_at(a, s[i].vaddr);
		if (k < a->ninsns && a->insns[k].insn.vaddr == s[i].vaddr) {
			for (unsigned c = 0; c < a->ncols; c++)
				a->insns[k].counts[c] += s[i].counts[c];
		} else if (add_stray(a, &cap, &s[i], k)) {
			return -ENOMEM;
		}
	}
	if (a->nstrays)
		ann_note(a, "%zu sampled address(es) start no instruction (inside one, or in "
			 "undecodable bytes): shown apart, counted in the totals", a->nstrays);
	return 0;
}

static void insn_source(struct dcpi_annot_image *img, struct dcpi_annot_insn *r)
{
	struct dcpi_srcloc loc;

	r->file = "??";
	r->function = "??";
	if (!img->sl || dcpi_srcline_lookup(img->sl, r->insn.vaddr - img->code_delta, &loc))
		return;
	r->file = loc.file;
	r->line = loc.line;
	r->function = loc.function;
	if (loc.ninline) {
		r->inlined_into = loc.ninline > 1 ? loc.inl[1].callee : loc.outer;
		r->call_file = loc.inl[0].call_file;
		r->call_line = loc.inl[0].call_line;
	}
}

/* Files in order of first appearance, so lines group by file. */
struct file_order {
	const char *files[256];
	size_t n;
};

static size_t file_rank(struct file_order *fo, const char *f)
{
	for (size_t i = 0; i < fo->n; i++)
		if (fo->files[i] == f || !strcmp(fo->files[i], f))
			return i;
	if (fo->n < 256)
		fo->files[fo->n++] = f;
	return fo->n - 1; /* past 256 files, the rest share the last rank */
}

struct keyed {
	size_t rank;
	unsigned line;
	size_t insn;
};

static int cmp_keyed(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return a->insn < b->insn ? -1 : a->insn > b->insn;
}

static int make_lines(struct dcpi_annot_image *img, struct dcpi_annotation *a)
{
	struct file_order *fo = calloc(1, sizeof(*fo));
	struct keyed *k = a->ninsns ? calloc(a->ninsns, sizeof(*k)) : NULL;
	size_t cap = 0;
	int err = 0;

	if (!fo || (a->ninsns && !k)) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < a->ninsns; i++) {
		insn_source(img, &a->insns[i]);
		a->has_lines |= a->insns[i].line != 0;
		k[i] = (struct keyed){ file_rank(fo, a->insns[i].file), a->insns[i].line, i };
	}
	if (a->ninsns)
		qsort(k, a->ninsns, sizeof(*k), cmp_keyed);
	for (size_t i = 0; i < a->ninsns; i++) {
		struct dcpi_annot_insn *r = &a->insns[k[i].insn];
		struct dcpi_annot_line *l;

		if (i == 0 || k[i].rank != k[i - 1].rank || k[i].line != k[i - 1].line) {
			if ((err = DCPI_GROW(a->lines, cap, a->nlines + 1, SIZE_MAX, "lines")))
				goto out;
			l = &a->lines[a->nlines++];
			memset(l, 0, sizeof(*l));
			l->file = r->file;
			l->line = r->line;
			l->first_insn = k[i].insn;
			l->text = source_text(img, r->file, r->line, a);
		}
		l = &a->lines[a->nlines - 1];
		r->line_index = a->nlines - 1;
		l->ninsns++;
		for (unsigned c = 0; c < a->ncols; c++)
			l->counts[c] += r->counts[c];
	}
	if (a->ninsns && !a->has_lines && img->sl)
		ann_note(a, "no source lines for 0x%" PRIx64 "-0x%" PRIx64 " (compiled without -g?)",
			 a->lo, a->hi);
out:
	free(fo);
	free(k);
	return err;
}

static void offsets(struct dcpi_annot_image *img, struct dcpi_annotation *a)
{
	for (size_t i = 0; i < a->ninsns; i++)
		if (dcpi_symtab_vaddr2off(img->st, a->insns[i].insn.vaddr, &a->insns[i].offset))
			a->insns[i].offset = a->insns[i].insn.vaddr;
}

int dcpi_annotate(struct dcpi_annot_image *img, uint64_t lo, uint64_t hi,
		  struct dcpi_annotation *a)
{
	int err;

	memset(a, 0, sizeof(*a));
	if (lo >= hi)
		return dcpi_error(EINVAL, "empty range 0x%" PRIx64 "-0x%" PRIx64, lo, hi);
	if (hi - lo > DCPI_ANNOT_MAX_RANGE)
		return dcpi_error(EFBIG, "0x%" PRIx64 "-0x%" PRIx64 " is over %" PRIu64
				  " bytes: not one procedure", lo, hi, DCPI_ANNOT_MAX_RANGE);
	img->serial++;
	a->lo = lo;
	a->hi = hi;
	a->ncols = img->set->nevents;
	err = make_insns(img, a);
	if (!err)
		err = place_samples(img, a);
	if (!err)
		err = make_lines(img, a);
	if (err) {
		if (err == -ENOMEM)
			dcpi_error(ENOMEM, "out of memory");
		dcpi_annotation_free(a);
		return err;
	}
	offsets(img, a);
	return 0;
}

void dcpi_annotation_free(struct dcpi_annotation *a)
{
	for (size_t i = 0; i < a->nnotes; i++)
		free(a->notes[i]);
	free(a->insns);
	free(a->lines);
	free(a->strays);
	memset(a, 0, sizeof(*a));
}

/* ---- derived columns ----------------------------------------------------------------- */

int dcpi_annot_derived_cols(const struct dcpi_profset *set, int *cycles_col, int *insns_col)
{
	*cycles_col = dcpi_evcols_cycles(set);
	*insns_col = dcpi_evcols_retired(set);
	return *cycles_col >= 0 && *insns_col >= 0;
}

int dcpi_annot_cpi(const struct dcpi_profset *set, const uint64_t *counts, double *cpi,
		   double *freq)
{
	int cy, in;
	double cycles, insns;

	if (!dcpi_annot_derived_cols(set, &cy, &in) || counts[in] == 0)
		return 0;
	cycles = (double)counts[cy] * (double)set->periods[cy];
	insns = (double)counts[in] * (double)set->periods[in];
	*cpi = cycles / insns;
	*freq = insns;
	return 1;
}
