/* The symbol table proper: building, lookups, accessors.  See
 * dcpi/symtab.h; the loaders are symtab_elf.c and symtab_kallsyms.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/demangle.h"
#include "dcpi/error.h"
#include "internal.h"
#include "symtab_int.h"

#define POOL_CHUNK 65536
#define LOOKUP_BACKTRACK 16 /* earlier symbols tried for an address past the
			       nearest one's end (nested/overlapping symbols);
			       bounded so a lookup stays O(log n) */

struct symtab_pool_chunk {
	struct symtab_pool_chunk *next;
	size_t used, cap;
	char data[];
};

struct dcpi_symtab *dcpi_symtab_new(enum dcpi_image_kind kind, const char *path)
{
	struct dcpi_symtab *st = calloc(1, sizeof(*st));

	if (!st) {
		dcpi_error(ENOMEM, "out of memory");
		return NULL;
	}
	st->kind = kind;
	st->path = strdup(path);
	if (!st->path) {
		free(st);
		dcpi_error(ENOMEM, "out of memory");
		return NULL;
	}
	return st;
}

int dcpi_symtab_set_str(char **dst, const char *src)
{
	char *s = src ? strdup(src) : NULL;

	if (src && !s)
		return dcpi_error(ENOMEM, "out of memory");
	free(*dst);
	*dst = s;
	return 0;
}

static struct symtab_pool_chunk *pool_chunk(struct dcpi_symtab *st, size_t need)
{
	struct symtab_pool_chunk *c = st->pool;
	size_t cap = need > POOL_CHUNK ? need : POOL_CHUNK;

	if (c && c->cap - c->used >= need)
		return c;
	if (cap > SYMTAB_POOL_MAX - st->pool_bytes) {
		dcpi_error(EFBIG, "%s: symbol names exceed %zu bytes", st->path, SYMTAB_POOL_MAX);
		return NULL;
	}
	c = malloc(sizeof(*c) + cap);
	if (!c) {
		dcpi_error(ENOMEM, "out of memory");
		return NULL;
	}
	c->next = st->pool;
	c->used = 0;
	c->cap = cap;
	st->pool = c;
	st->pool_bytes += cap;
	return c;
}

const char *dcpi_symtab_intern(struct dcpi_symtab *st, const char *s, size_t len)
{
	struct symtab_pool_chunk *c;
	char *p;

	if (len > SYMTAB_POOL_MAX - 1) {
		dcpi_error(EFBIG, "%s: symbol name too long", st->path);
		return NULL;
	}
	c = pool_chunk(st, len + 1);
	if (!c)
		return NULL;
	p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

int dcpi_symtab_add(struct dcpi_symtab *st, const struct symtab_in *sym)
{
	int err = DCPI_GROW(st->in, st->capin, st->nin + 1, DCPI_SYMTAB_MAX_SYMS, "entries");

	if (err)
		return dcpi_error_prefix(-err, "%s: symbols", st->path);
	st->in[st->nin] = *sym;
	st->in[st->nin++].s.dem = NULL; /* the demangling cache starts empty */
	return 0;
}

int dcpi_symtab_add_seg(struct dcpi_symtab *st, const struct symtab_seg *seg)
{
	int err;

	if (st->nsegs >= SYMTAB_MAX_SEGS)
		return dcpi_error(EFBIG, "%s: more than %d PT_LOAD segments", st->path,
				  SYMTAB_MAX_SEGS);
	err = DCPI_GROW(st->segs, st->capsegs, st->nsegs + 1, SYMTAB_MAX_SEGS, "segments");
	if (err)
		return err;
	st->segs[st->nsegs++] = *seg;
	return 0;
}

int dcpi_symtab_add_sec(struct dcpi_symtab *st, uint64_t addr, uint64_t size, const char *name)
{
	const char *n;
	int err;

	if (st->nsecs >= SYMTAB_MAX_SECS)
		return 0; /* only describe() uses them: more are ignored, not fatal */
	err = DCPI_GROW(st->secs, st->capsecs, st->nsecs + 1, SYMTAB_MAX_SECS, "sections");
	if (err)
		return err;
	n = dcpi_symtab_intern(st, name, strlen(name));
	if (!n)
		return -ENOMEM;
	st->secs[st->nsecs++] = (struct symtab_sec){ addr, size, n };
	return 0;
}

int dcpi_symtab_note(struct dcpi_symtab *st, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (st->msg.len) {
		st->msg.len--; /* drop the NUL */
		err = dcpi_buf_put(&st->msg, "; ", 2);
		if (err)
			return err;
	}
	return dcpi_buf_put(&st->msg, line, strlen(line) + 1);
}

/* ---- finishing ---------------------------------------------------------- */

static size_t underscores(const char *s)
{
	return strspn(s, "_");
}

/* Order within one address decides which name is shown: global before
 * weak before local, functions before untyped labels, sized before
 * size-less, fewer leading underscores (the public name over internal
 * aliases such as __pi_ or __libc_ ones), then by name so the choice
 * never depends on input order. */
static int in_cmp(const void *a, const void *b)
{
	const struct symtab_in *x = a, *y = b;
	size_t ux, uy;

	if (x->s.vaddr != y->s.vaddr)
		return x->s.vaddr < y->s.vaddr ? -1 : 1;
	if (x->s.bind != y->s.bind)
		return x->s.bind < y->s.bind ? -1 : 1;
	if (x->is_func != y->is_func)
		return x->is_func ? -1 : 1;
	if (!x->s.size != !y->s.size)
		return x->s.size ? -1 : 1;
	ux = underscores(x->s.name);
	uy = underscores(y->s.name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return strcmp(x->s.name, y->s.name);
}

/* Put st->in[kv[i].val] at i for every i, in place (following each
 * cycle of the permutation; a done position's val is set to its own
 * index): a second array of 10^5 symbols would cost more in page faults
 * than the moves. */
static void permute(struct symtab_in *in, struct dcpi_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct symtab_in tmp;
		size_t j = i, k;

		if (kv[i].val == i)
			continue;
		tmp = in[i];
		while ((k = kv[j].val) != i) {
			in[j] = in[k];
			kv[j].val = j;
			j = k;
		}
		in[j] = tmp;
		kv[j].val = j;
	}
}

/* The staging array in in_cmp's order, stable: a radix sort by address,
 * then each run of one address (a handful of aliases) by in_cmp.  The
 * same order as a stable sort of the whole array by in_cmp (glibc's qsort
 * merge sort), at a fraction of the cost on tables of 10^5 symbols. */
static int sort_in(struct dcpi_symtab *st)
{
	struct dcpi_kv *kv = NULL;
	struct symtab_in *in = st->in;
	size_t i, j, n = st->nin;
	int err = 0;

	for (i = 1; i < n && in[i - 1].s.vaddr <= in[i].s.vaddr; i++)
		;
	if (i < n) { /* not in address order already (kallsyms is) */
		kv = calloc(n, sizeof(*kv));
		if (!kv)
			return dcpi_error(ENOMEM, "out of memory");
		for (i = 0; i < n; i++)
			kv[i] = (struct dcpi_kv){ in[i].s.vaddr, i };
		err = dcpi_sort_kv(kv, n);
		if (!err)
			permute(in, kv, n);
		free(kv);
		if (err)
			return err;
	}
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && in[j].s.vaddr == in[i].s.vaddr; j++)
			;
		if (j - i > 1)
			qsort(in + i, j - i, sizeof(*in), in_cmp);
	}
	return 0;
}

static int sec_cmp(const void *a, const void *b)
{
	const struct symtab_sec *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* dem of a name that does not demangle (cached too: dcpi_symtab_find
 * asks for every name) */
static char not_mangled[1];

const char *dcpi_sym_demangled(const struct dcpi_sym *s)
{
	/* the syms live in the symtab's heap arrays, never in const
	   storage: the cache may be written through a const pointer */
	struct dcpi_sym *m = (struct dcpi_sym *)s;
	char *d = __atomic_load_n(&m->dem, __ATOMIC_ACQUIRE), *expect = NULL;

	if (!d) {
		d = dcpi_demangle(s->name);
		if (!d)
			d = not_mangled;
		if (!__atomic_compare_exchange_n(&m->dem, &expect, d, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			if (d != not_mangled)
				free(d); /* another thread stored first */
			d = expect;
		}
	}
	return d == not_mangled ? s->name : d;
}

static void free_demangled(struct dcpi_sym *syms, size_t n)
{
	for (size_t i = 0; syms && i < n; i++)
		if (syms[i].dem != not_mangled)
			free(syms[i].dem);
}

/* Size-less symbols run to the next symbol, but never past the end of
 * their section: padding and the next section's code are not theirs. */
static void fill_sizes(struct dcpi_symtab *st, const uint64_t *limits)
{
	size_t i;

	for (i = 0; i < st->nsyms; i++) {
		struct dcpi_sym *s = &st->syms[i];
		uint64_t end = limits[i];

		if (s->size)
			continue;
		if (i + 1 < st->nsyms && st->syms[i + 1].vaddr < end)
			end = st->syms[i + 1].vaddr;
		if (end != UINT64_MAX && end > s->vaddr)
			s->size = end - s->vaddr;
	}
}

/* Split the sorted staging array into primaries and aliases. */
static int split_aliases(struct dcpi_symtab *st, uint64_t *limits)
{
	size_t i, np = 0, na = 0;

	for (i = 0; i < st->nin; i++) {
		struct symtab_in *in = &st->in[i];
		struct dcpi_sym *p = np ? &st->syms[np - 1] : NULL;

		if (p && p->vaddr == in->s.vaddr) {
			if (!strcmp(p->name, in->s.name))
				continue;
			if (!p->size)
				p->size = in->s.size;
			if (in->limit < limits[np - 1])
				limits[np - 1] = in->limit;
			st->aliases[na] = in->s;
			st->aliases[na++].is_alias = 1;
			continue;
		}
		st->syms[np] = in->s;
		limits[np++] = in->limit;
	}
	st->nsyms = np;
	st->naliases = na;
	return 0;
}

/* Aliases take their primary's (now final) size. */
static void size_aliases(struct dcpi_symtab *st)
{
	size_t i;

	for (i = 0; i < st->naliases; i++) {
		const struct dcpi_sym *p = dcpi_symtab_lookup_vaddr(st, st->aliases[i].vaddr);

		if (p)
			st->aliases[i].size = p->size;
	}
}

static void *malloc_array(size_t n, size_t size)
{
	size_t bytes;

	return dcpi_size_mul(n, size, &bytes) ? NULL : malloc(bytes);
}

int dcpi_symtab_finish(struct dcpi_symtab *st)
{
	uint64_t *limits = NULL;
	size_t n = st->nin ? st->nin : 1;
	int err = sort_in(st);

	if (err)
		goto out;
	err = -ENOMEM;
	if (st->secs)
		qsort(st->secs, st->nsecs, sizeof(*st->secs), sec_cmp);
	/* malloc, not calloc: split_aliases writes every entry it keeps,
	   and most of aliases is never touched */
	st->syms = malloc_array(n, sizeof(*st->syms));
	st->aliases = malloc_array(n, sizeof(*st->aliases));
	limits = malloc_array(n, sizeof(*limits));
	if (!st->syms || !st->aliases || !limits) {
		dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	split_aliases(st, limits);
	fill_sizes(st, limits);
	size_aliases(st);
	err = 0;
out:
	free(limits);
	free(st->in);
	st->in = NULL;
	st->nin = st->capin = 0;
	return err;
}

void dcpi_symtab_close(struct dcpi_symtab *st)
{
	struct symtab_pool_chunk *c, *next;

	if (!st)
		return;
	for (c = st->pool; c; c = next) {
		next = c->next;
		free(c);
	}
	free(st->in);
	free_demangled(st->syms, st->nsyms);
	free_demangled(st->aliases, st->naliases);
	free(st->syms);
	free(st->aliases);
	free(st->segs);
	free(st->secs);
	dcpi_buf_release(&st->msg);
	free(st->path);
	free(st->image_file);
	free(st->debug_file);
	free(st->label);
	free(st);
}

/* ---- lookups ------------------------------------------------------------ */

static int sym_contains(const struct dcpi_sym *s, uint64_t vaddr)
{
	if (vaddr < s->vaddr)
		return 0;
	return s->size ? vaddr - s->vaddr < s->size : vaddr == s->vaddr;
}

const struct dcpi_sym *dcpi_symtab_lookup_vaddr(const struct dcpi_symtab *st, uint64_t vaddr)
{
	size_t lo = 0, hi = st->nsyms, i, k;

	while (lo < hi) { /* first symbol starting after vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, k = 0; i > 0 && k < LOOKUP_BACKTRACK; i--, k++)
		if (sym_contains(&st->syms[i - 1], vaddr))
			return &st->syms[i - 1];
	return NULL;
}

/* The segment holding file offset off.  Segments may share a page of the
 * file; the executable one wins, since samples are taken in code. */
static const struct symtab_seg *seg_of(const struct dcpi_symtab *st, uint64_t off)
{
	const struct symtab_seg *hit = NULL;

	for (size_t i = 0; i < st->nsegs; i++) {
		const struct symtab_seg *g = &st->segs[i];

		if (off < g->off || off - g->off >= g->filesz)
			continue;
		if (!hit || (g->exec && !hit->exec))
			hit = g;
	}
	return hit;
}

int dcpi_symtab_off2vaddr(const struct dcpi_symtab *st, uint64_t off, uint64_t *vaddr)
{
	const struct symtab_seg *hit;

	if (st->kind == DCPI_IMAGE_KERNEL) {
		*vaddr = off;
		return 0;
	}
	if (st->kind == DCPI_IMAGE_MODULE) {
		if (off > UINT64_MAX - st->base)
			return -ERANGE;
		*vaddr = st->base + off;
		return 0;
	}
	if (!(hit = seg_of(st, off)))
		return -ERANGE;
	*vaddr = off - hit->off + hit->vaddr;
	return 0;
}

int dcpi_symtab_segment(const struct dcpi_symtab *st, uint64_t off,
			struct dcpi_symtab_segment *seg)
{
	const struct symtab_seg *hit;

	if (st->kind == DCPI_IMAGE_KERNEL || st->kind == DCPI_IMAGE_MODULE ||
	    !(hit = seg_of(st, off)))
		return -ERANGE;
	seg->vaddr = hit->vaddr;
	seg->off = hit->off;
	seg->memsz = hit->memsz;
	/* down over the segments below it at the same address-to-offset delta
	   (the ELF headers and read-only data before the code, as one mapping
	   of the file) */
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct symtab_seg *g = &st->segs[i];

		if (g->vaddr < seg->vaddr && g->vaddr - g->off == hit->vaddr - hit->off &&
		    g->off <= seg->off) {
			seg->memsz += seg->vaddr - g->vaddr;
			seg->vaddr = g->vaddr;
			seg->off = g->off;
		}
	}
	return 0;
}

int dcpi_symtab_vaddr2off(const struct dcpi_symtab *st, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	if (st->kind == DCPI_IMAGE_KERNEL) {
		*off = vaddr;
		return 0;
	}
	if (st->kind == DCPI_IMAGE_MODULE) {
		if (vaddr < st->base)
			return -ERANGE;
		*off = vaddr - st->base;
		return 0;
	}
	for (i = 0; i < st->nsegs; i++) {
		const struct symtab_seg *g = &st->segs[i];

		if (vaddr < g->vaddr || vaddr - g->vaddr >= g->filesz)
			continue;
		*off = vaddr - g->vaddr + g->off;
		return 0;
	}
	return -ERANGE;
}

const struct dcpi_sym *dcpi_symtab_lookup(const struct dcpi_symtab *st, uint64_t offset)
{
	uint64_t vaddr;

	if (dcpi_symtab_off2vaddr(st, offset, &vaddr))
		return NULL;
	return dcpi_symtab_lookup_vaddr(st, vaddr);
}

/* name equals s, or s up to its parameter list ("f" matches "f(int)"). */
static int name_matches(const char *s, const char *name, size_t nlen)
{
	if (!strcmp(s, name))
		return 1;
	return !strncmp(s, name, nlen) && s[nlen] == '(';
}

static size_t find_in(const struct dcpi_sym *arr, size_t n, const char *name,
		      const struct dcpi_sym **out, size_t max, size_t count)
{
	size_t i, nlen = strlen(name);

	for (i = 0; i < n; i++) {
		const struct dcpi_sym *s = &arr[i];

		if (strcmp(s->name, name) && !name_matches(dcpi_sym_demangled(s), name, nlen))
			continue;
		if (count < max)
			out[count] = s;
		count++;
	}
	return count;
}

size_t dcpi_symtab_find(const struct dcpi_symtab *st, const char *name,
			const struct dcpi_sym **out, size_t max)
{
	size_t n = find_in(st->syms, st->nsyms, name, out, max, 0);

	return find_in(st->aliases, st->naliases, name, out, max, n);
}

size_t dcpi_symtab_count(const struct dcpi_symtab *st)
{
	return st->nsyms;
}

const struct dcpi_sym *dcpi_symtab_sym(const struct dcpi_symtab *st, size_t i)
{
	return i < st->nsyms ? &st->syms[i] : NULL;
}

/* ---- unnamed addresses -------------------------------------------------- */

const char *dcpi_symtab_section_at(const struct dcpi_symtab *st, uint64_t vaddr, uint64_t *lo,
				   uint64_t *hi)
{
	size_t l = 0, h = st->nsecs;

	if (st->kind != DCPI_IMAGE_FILE)
		return NULL;
	while (l < h) {
		size_t mid = l + (h - l) / 2;

		if (st->secs[mid].addr <= vaddr)
			l = mid + 1;
		else
			h = mid;
	}
	/* Sections do not overlap in a linked image, so the nearest one
	 * below is the only candidate. */
	if (!l || vaddr - st->secs[l - 1].addr >= st->secs[l - 1].size)
		return NULL;
	if (lo)
		*lo = st->secs[l - 1].addr;
	if (hi)
		*hi = st->secs[l - 1].addr + st->secs[l - 1].size;
	return st->secs[l - 1].name;
}

const char *dcpi_symtab_section(const struct dcpi_symtab *st, uint64_t offset)
{
	uint64_t vaddr;

	if (dcpi_symtab_off2vaddr(st, offset, &vaddr))
		return NULL;
	return dcpi_symtab_section_at(st, vaddr, NULL, NULL);
}

const char *dcpi_symtab_label(const struct dcpi_symtab *st)
{
	const char *slash;

	if (st->label)
		return st->label;
	slash = strrchr(st->path, '/');
	return slash && slash[1] ? slash + 1 : st->path;
}

size_t dcpi_symtab_describe(const struct dcpi_symtab *st, uint64_t offset, char *buf,
			    size_t len)
{
	uint64_t vaddr;
	const char *sec;
	int n;

	if (dcpi_symtab_off2vaddr(st, offset, &vaddr))
		n = snprintf(buf, len, "[%s+0x%" PRIx64 "]", dcpi_symtab_label(st), offset);
	else if ((sec = dcpi_symtab_section_at(st, vaddr, NULL, NULL)))
		n = snprintf(buf, len, "[%s@0x%" PRIx64 " %s]", dcpi_symtab_label(st), vaddr, sec);
	else
		n = snprintf(buf, len, "[%s@0x%" PRIx64 "]", dcpi_symtab_label(st), vaddr);
	return n < 0 ? 0 : (size_t)n;
}

/* ---- accessors ---------------------------------------------------------- */

const char *dcpi_symtab_path(const struct dcpi_symtab *st)
{
	return st->path;
}

void dcpi_symtab_set_owner(struct dcpi_symtab *st, uid_t uid)
{
	if (uid != 0 && uid != geteuid())
		st->owner = uid;
}

uid_t dcpi_symtab_owner(const struct dcpi_symtab *st)
{
	return st->owner;
}

const char *dcpi_symtab_image_file(const struct dcpi_symtab *st)
{
	return st->image_file;
}

const char *dcpi_symtab_debug_file(const struct dcpi_symtab *st)
{
	return st->debug_file;
}

enum dcpi_symtab_status dcpi_symtab_status(const struct dcpi_symtab *st)
{
	return st->status;
}

enum dcpi_symtab_source dcpi_symtab_source(const struct dcpi_symtab *st)
{
	return st->source;
}

const char *dcpi_symtab_message(const struct dcpi_symtab *st)
{
	return st->msg.len ? (const char *)st->msg.data : "";
}

const uint8_t *dcpi_symtab_build_id(const struct dcpi_symtab *st, size_t *len)
{
	*len = st->build_id_len;
	return st->build_id;
}

size_t dcpi_symtab_skipped(const struct dcpi_symtab *st)
{
	return st->skipped;
}
