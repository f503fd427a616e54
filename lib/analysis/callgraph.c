/* Who called it: stacks by procedure.  See dcpi/callgraph.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/procs.h"
#include "dcpi/symtab.h"
#include "internal.h"

struct cg_index {
	uint32_t *slot;         /* procedure + 1, by (image, proc) */
	size_t cap;
	uint32_t *stamp;        /* per procedure: the stack that last counted it */
};

static uint64_t hash_str2(const char *a, const char *b)
{
	uint64_t h = dcpi_fnv1a(dcpi_hash_bytes(a, strlen(a)), "\xff", 1);

	return dcpi_hash64(dcpi_fnv1a(h, b, strlen(b)));
}

/* The procedure (image, proc) of process pid (-1: of every process),
 * added when new. */
static int proc_of(struct dcpi_callgraph *g, const char *image, const char *proc, int64_t pid,
		   uint32_t *out)
{
	struct cg_index *x = g->index;
	uint64_t h = dcpi_mix64(hash_str2(image, proc) ^ (uint64_t)pid);
	size_t i;
	int err;

	if (x->cap)
		for (i = h & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1)) {
			const struct dcpi_cg_proc *p = &g->procs[x->slot[i] - 1];

			if (p->pid == pid && !strcmp(p->image, image) && !strcmp(p->proc, proc)) {
				*out = x->slot[i] - 1;
				return 0;
			}
		}
	if (g->nprocs >= UINT32_MAX - 1)
		return dcpi_error(ENOSPC, "too many procedures");
	if (2 * (g->nprocs + 1) > x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 1024;
		uint32_t *t = calloc(cap, sizeof(*t));

		if (!t)
			return dcpi_error(ENOMEM, "out of memory");
		for (size_t k = 0; k < g->nprocs; k++) {
			const struct dcpi_cg_proc *p = &g->procs[k];

			for (i = dcpi_mix64(hash_str2(p->image, p->proc) ^ (uint64_t)p->pid) & (cap - 1);
			     t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = (uint32_t)k + 1;
		}
		free(x->slot);
		x->slot = t;
		x->cap = cap;
	}
	if ((err = DCPI_GROW(g->procs, g->procs_cap, g->nprocs + 1, SIZE_MAX, "procedures")))
		return err;
	memset(&g->procs[g->nprocs], 0, sizeof(g->procs[0]));
	g->procs[g->nprocs].pid = pid;
	if (!(g->procs[g->nprocs].image = strdup(image)) ||
	    !(g->procs[g->nprocs].proc = strdup(proc))) {
		free(g->procs[g->nprocs].image);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (i = h & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1))
		;
	x->slot[i] = (uint32_t)g->nprocs + 1;
	*out = (uint32_t)g->nprocs++;
	return 0;
}

/* ---- one stacks file --------------------------------------------------------- */

struct memo {
	uint64_t key;                   /* image << 44 ^ off */
	int64_t pid;                    /* the procedure's process, or -1 */
	uint64_t val;                   /* proc + 1; 0: empty */
};

struct file_ctx {
	struct dcpi_callgraph *g;
	const struct dcpi_stackset *s;
	const char *platdir;
	struct dcpi_objcache *objs;
	unsigned col[DCPI_MAX_EVENTS];  /* the set's column of each file event, or -1u */
	struct memo *memo;              /* (key, pid) hash -> proc + 1 */
	size_t memo_cap;
	struct memo *tail;              /* key -> the offset its call went to + 1, or
					   TAIL_NONE (pid unused) */
	struct chain_memo *chain;       /* (key, inner) -> the chain after the call's */
	struct names **names;           /* per image: its symbols by name, or NULL */
	char *name;
	size_t name_cap;
};

#define TAIL_NONE UINT64_MAX
#define TAIL_CHAIN 3            /* procedures put back between two frames, at most */

struct chain_memo {
	uint64_t key;                   /* the caller frame's */
	uint32_t inner;                 /* the procedure the next frame in is in */
	uint8_t used, n;
	uint32_t p[TAIL_CHAIN - 1];     /* put back after the call's, outermost first */
};

/* An image's symbols by raw name (a version, "@@GLIBC_2.34", left out):
 * the entry of the one defined by a name, for calls through the PLT. */
struct name_slot {
	const char *name;       /* the symbol's (not owned) */
	size_t len;             /* of the name without its version */
	uint64_t vaddr;
	int dup;                /* two symbols of that name at other places */
};

struct names {
	struct name_slot *v;
	size_t cap;             /* a power of 2; 0: no symbols */
};

static uint64_t hash_name(const char *s, size_t n)
{
	return dcpi_mix64(dcpi_hash_bytes(s, n));
}

static size_t unversioned_len(const char *s)
{
	const char *at = strchr(s, '@');

	return at ? (size_t)(at - s) : strlen(s);
}

static struct names *names_build(const struct dcpi_symtab *st)
{
	size_t n = dcpi_symtab_count(st), cap = 16;
	struct names *x = calloc(1, sizeof(*x));

	while (cap < 2 * n + 2)
		cap *= 2;
	if (!x || !(x->v = calloc(cap, sizeof(*x->v)))) {
		free(x);
		return NULL;
	}
	x->cap = cap;
	for (size_t i = 0; i < n; i++) {
		const struct dcpi_sym *sym = dcpi_symtab_sym(st, i);
		size_t len = unversioned_len(sym->name), all = strlen(sym->name), k;

		if (!len || (all > 4 && !strcmp(sym->name + all - 4, "@plt")))
			continue; /* a PLT entry: not where the name is defined */
		for (k = hash_name(sym->name, len) & (cap - 1); x->v[k].name; k = (k + 1) & (cap - 1))
			if (x->v[k].len == len && !memcmp(x->v[k].name, sym->name, len))
				break;
		if (!x->v[k].name)
			x->v[k] = (struct name_slot){ sym->name, len, sym->vaddr, 0 };
		else if (x->v[k].vaddr != sym->vaddr)
			x->v[k].dup = 1;
	}
	return x;
}

/* The entry of the one symbol named name[0..len) (unversioned): 0 and
 * *vaddr, or -1 (none, or more than one place). */
static int names_find(const struct names *x, const char *name, size_t len, uint64_t *vaddr)
{
	for (size_t k = hash_name(name, len) & (x->cap - 1); x->v[k].name; k = (k + 1) & (x->cap - 1))
		if (x->v[k].len == len && !memcmp(x->v[k].name, name, len)) {
			if (x->v[k].dup)
				return -1;
			*vaddr = x->v[k].vaddr;
			return 0;
		}
	return -1;
}

/* The procedure of frame f of the file, in a stack of process pid (-1:
 * processes together). */
static int frame_proc(struct file_ctx *x, const struct dcpi_stack_frame *f, int64_t pid,
		      uint32_t *out)
{
	uint64_t key = f->image == DCPI_FRAME_UNKNOWN ? UINT64_MAX
						      : ((uint64_t)f->image << 44) ^ f->off;
	size_t i, mask = x->memo_cap - 1;
	const struct dcpi_profile *id;
	struct dcpi_obj *obj = NULL;
	int err;

	for (i = dcpi_hash64(key ^ (uint64_t)pid * 0x9e3779b97f4a7c15ull) & mask; x->memo[i].val;
	     i = (i + 1) & mask)
		if (x->memo[i].key == key && x->memo[i].pid == pid) {
			*out = (uint32_t)x->memo[i].val - 1;
			return 0;
		}
	if (f->image == DCPI_FRAME_UNKNOWN) {
		err = proc_of(x->g, "unknown", "[unknown]", pid, out);
	} else {
		id = &x->s->images[f->image];
		if (x->objs && dcpi_objcache_get(x->objs, id, x->platdir, &obj))
			obj = NULL; /* named by region, as the flat reports do */
		if ((err = dcpi_procs_name_grow(id, obj ? dcpi_obj_symtab(obj) : NULL, f->off,
						&x->name, &x->name_cap)))
			return err;
		err = proc_of(x->g, id->path, x->name, pid, out);
	}
	if (err)
		return err;
	x->memo[i] = (struct memo){ key, pid, (uint64_t)*out + 1 };
	return 0;
}

/* The entry (file offset) of the procedure a direct call or jump to vaddr t
 * of image `image` enters: t itself when a symbol starts there (*entry 1),
 * the procedure of that name the image defines when t is its PLT entry
 * (*entry 1), or, when allow_inner, t though no symbol starts there
 * (*entry 0: code only its region names, the end of a chain).  -1: none. */
static int target_off(struct file_ctx *x, uint32_t image, const struct dcpi_symtab *st,
		      uint64_t t, int allow_inner, uint64_t *off, int *entry)
{
	const struct dcpi_sym *sym = dcpi_symtab_lookup_vaddr(st, t);
	size_t n;

	*entry = sym && sym->vaddr == t;
	if (!*entry && !allow_inner)
		return -1;
	n = *entry ? strlen(sym->name) : 0;
	if (n > 4 && !strcmp(sym->name + n - 4, "@plt")) {
		if (!x->names[image] && !(x->names[image] = names_build(st)))
			return -1;
		if (names_find(x->names[image], sym->name, unversioned_len(sym->name) ==
			       n ? n - 4 : unversioned_len(sym->name), &t))
			return -1; /* defined elsewhere, or in two places */
	}
	return dcpi_symtab_vaddr2off(st, t, off) ? -1 : 0;
}

/* The file the symbols of image f->image came from, opened (its build-id
 * the profiled one, or no build-id to tell), and its symbols: fd or -1.
 * (Opened for a question, closed after it: the memos keep the answers; an
 * epoch's thousands of images are never all open at once.) */
static int image_open(struct file_ctx *x, uint32_t image, const struct dcpi_symtab **out)
{
	const struct dcpi_profile *id = &x->s->images[image];
	struct dcpi_obj *obj = NULL;
	const struct dcpi_symtab *st;
	const char *file;
	struct stat sb;
	uint8_t eh[20];
	int fd;

	if (id->kind != DCPI_IMAGE_FILE || !x->objs ||
	    dcpi_objcache_get(x->objs, id, x->platdir, &obj) || !(st = dcpi_obj_symtab(obj)))
		return -1;
	file = dcpi_symtab_status(st) == DCPI_SYMTAB_DEBUG_ONLY ? NULL : dcpi_symtab_image_file(st);
	if (!file || (fd = dcpi_file_open_regular(AT_FDCWD, file, 0, &sb)) < 0)
		return -1;
	/* x86-64 code only (e_machine 62, little-endian): the decoding below */
	if (pread(fd, eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh[5] != 1 || eh[18] != 62 ||
	    eh[19] != 0) {
		close(fd);
		return -1;
	}
	*out = st;
	return fd;
}

/* Where the direct call before a caller frame's return address went: the
 * offset of that procedure's entry in the same image (a call through the
 * image's PLT: of the procedure of that name the image defines), or
 * TAIL_NONE.  Only a 5-byte `call rel32` whose target is exactly a
 * symbol's start counts (bytes that merely decode as one would have to
 * land on an entry by chance). */
static uint64_t call_target(struct file_ctx *x, const struct dcpi_stack_frame *f)
{
	const struct dcpi_symtab *st;
	uint64_t va, t, off;
	uint8_t b[5];
	ssize_t got;
	int fd, entry;

	if (f->off < 4 || (fd = image_open(x, f->image, &st)) < 0)
		return TAIL_NONE;
	/* the offset is a file offset: the call's 5 bytes end at off + 1 (the
	   return address) */
	got = pread(fd, b, sizeof(b), (off_t)(f->off - 4));
	close(fd);
	if (got != (ssize_t)sizeof(b) || b[0] != 0xe8 || dcpi_symtab_off2vaddr(st, f->off, &va))
		return TAIL_NONE;
	t = va + 1 + (uint64_t)(int64_t)(int32_t)((uint32_t)b[1] | (uint32_t)b[2] << 8 |
						   (uint32_t)b[3] << 16 | (uint32_t)b[4] << 24);
	return target_off(x, f->image, st, t, 0, &off, &entry) ? TAIL_NONE : off;
}

/* ---- chains of tail calls ---------------------------------------------------- */

/* A procedure that calls A, A jumps to B, B jumps to C: the stack holds the
 * caller and C.  Where the procedure the caller's call went to (A) does not
 * itself jump to the procedure the next frame is in, the procedures its
 * direct jumps leave for are followed (through the PLT as calls are), and
 * a chain is put back when exactly one path of the shortest length found
 * leads there.  Bounded: TAIL_CHAIN procedures put back, TAIL_FANOUT jumps
 * of a procedure followed, TAIL_BODY bytes of one read, TAIL_VISITS
 * procedures read per question. */
#define TAIL_FANOUT 16
#define TAIL_BODY 65536
#define TAIL_VISITS 32

struct tjumps {
	uint64_t entry;                 /* the procedure's entry (file offset) */
	size_t n;
	uint64_t to[TAIL_FANOUT];       /* where its jumps out of it go */
	uint8_t is_entry[TAIL_FANOUT];  /* ... a procedure's entry (followed) */
};

struct chain_ctx {
	struct file_ctx *x;
	int fd;
	const struct dcpi_symtab *st;
	uint32_t image;
	const char *inner_name;         /* the procedure to reach */
	struct tjumps seen[TAIL_VISITS];
	size_t nseen;
	uint64_t path[TAIL_CHAIN], found[TAIL_CHAIN]; /* entries, outermost first */
	unsigned nfound;                /* paths found of the length searched */
	unsigned found_len;             /* the first one's procedures (A first) */
	int incomplete;                 /* a procedure on the way could not be read
					   whole (no size, too large, too many jumps,
					   out of visits): a path may be hidden */
	uint8_t buf[TAIL_BODY];
	/* the walk of one body */
	struct tjumps *cur;
	uint64_t lo, hi;
};

static int jump_out(const struct dcpi_insn *in, void *arg)
{
	struct chain_ctx *c = arg;
	struct tjumps *j = c->cur;
	uint64_t off;
	int entry;
	size_t k;

	if ((in->flags & (DCPI_INSN_JUMP | DCPI_INSN_DIRECT)) != (DCPI_INSN_JUMP | DCPI_INSN_DIRECT) ||
	    (in->target >= c->lo && in->target < c->hi) ||
	    target_off(c->x, c->image, c->st, in->target, 1, &off, &entry))
		return 0;
	for (k = 0; k < j->n; k++)
		if (j->to[k] == off)
			return 0;
	if (j->n == TAIL_FANOUT)
		return 1; /* too many to follow: none are */
	j->is_entry[j->n] = (uint8_t)entry;
	j->to[j->n++] = off;
	return 0;
}

/* The jumps out of the procedure entered at entry, or NULL (unreadable,
 * no size, too large, too many, out of visits). */
static struct tjumps *jumps_of(struct chain_ctx *c, uint64_t entry)
{
	const struct dcpi_sym *sym;
	struct dcpi_disasm *d;
	struct tjumps *j;
	uint64_t va;
	int err;

	for (size_t k = 0; k < c->nseen; k++)
		if (c->seen[k].entry == entry)
			return c->seen[k].n == SIZE_MAX ? NULL : &c->seen[k];
	if (c->nseen == TAIL_VISITS)
		return NULL;
	j = &c->seen[c->nseen++];
	j->entry = entry;
	j->n = SIZE_MAX;
	if (dcpi_symtab_off2vaddr(c->st, entry, &va) || !(sym = dcpi_symtab_lookup_vaddr(c->st, va)) ||
	    sym->vaddr != va || !sym->size || sym->size > TAIL_BODY ||
	    pread(c->fd, c->buf, sym->size, (off_t)entry) != (ssize_t)sym->size ||
	    dcpi_disasm_open_mem("x86-64", c->buf, sym->size, va, &d))
		return NULL;
	c->cur = j;
	c->lo = va;
	c->hi = va + sym->size;
	j->n = 0;
	err = dcpi_disasm_range(d, va, va + sym->size, jump_out, c);
	dcpi_disasm_close(d);
	if (err)
		j->n = SIZE_MAX;
	return err ? NULL : j;
}

/* Whether the code at file offset off is in the procedure to reach. */
static int is_inner(struct chain_ctx *c, uint64_t off)
{
	struct file_ctx *x = c->x;

	if (dcpi_procs_name_grow(&x->s->images[c->image], c->st, off, &x->name, &x->name_cap))
		return 0;
	return !strcmp(x->name, c->inner_name);
}

/* Paths of exactly `left` more jumps from the procedure entered at entry
 * (path[0..depth) so far) to the procedure to reach: counted in nfound,
 * the first kept. */
static void paths(struct chain_ctx *c, uint64_t entry, unsigned depth, unsigned left)
{
	struct tjumps *j = jumps_of(c, entry);
	int hit = 0;                    /* one path per procedure reaching inner */

	c->path[depth] = entry;
	if (!j)
		c->incomplete = 1;
	for (size_t k = 0; j && k < j->n && c->nfound < 2; k++) {
		int on_path = 0;

		for (unsigned d = 0; d <= depth; d++)
			on_path |= c->path[d] == j->to[k];
		if (on_path)
			continue;
		if (left == 1) {
			if (hit || !is_inner(c, j->to[k]))
				continue;
			hit = 1;
			if (!c->nfound++) {
				memcpy(c->found, c->path, sizeof(c->found));
				c->found_len = depth + 1;
			}
		} else if (j->is_entry[k] && depth + 1 < TAIL_CHAIN) {
			paths(c, j->to[k], depth + 1, left - 1);
		}
	}
}

/* After the procedure A (entered at a_off) the caller frame f's call went
 * to, the ones a chain of tail calls passed through to reach inner:
 * out[0..*n), outermost first (A not among them). */
static int tail_chain(struct file_ctx *x, const struct dcpi_stack_frame *f, uint64_t a_off,
		      uint32_t inner, int64_t pid, uint32_t *out, unsigned *n)
{
	struct chain_ctx *c;
	int err = 0;

	*n = 0;
	if (strcmp(x->g->procs[inner].image, x->s->images[f->image].path))
		return 0; /* jumps stay in the image */
	if (!(c = calloc(1, sizeof(*c))))
		return dcpi_error(ENOMEM, "out of memory");
	c->x = x;
	c->image = f->image;
	c->inner_name = x->g->procs[inner].proc;
	if ((c->fd = image_open(x, f->image, &c->st)) < 0) {
		free(c);
		return 0;
	}
	for (unsigned len = 1; len <= TAIL_CHAIN && !c->nfound && !c->incomplete; len++)
		paths(c, a_off, 0, len);
	if (c->incomplete)
		c->nfound = 0; /* a path may be hidden: A alone */
	close(c->fd);
	/* one path: put back what it passed through after A; A reaching inner
	   itself, or two ways to, puts back A alone */
	for (unsigned k = 1; c->nfound == 1 && !err && k < c->found_len; k++) {
		if ((err = dcpi_procs_name_grow(&x->s->images[f->image], c->st, c->found[k],
						&x->name, &x->name_cap)) ||
		    (err = proc_of(x->g, x->s->images[f->image].path, x->name, pid, &out[*n])))
			break;
		++*n;
	}
	free(c);
	return err;
}

/* The procedures whose frames tail calls took away between caller frame f
 * and the procedure inner the next frame in is in: the one f's call went
 * to, when that is not inner (it jumped on to inner, or to what did), and
 * those a chain of them passed through (tail_chain).  out[0..*n),
 * outermost first.  Memoized by (frame, inner). */
static int tail_proc(struct file_ctx *x, const struct dcpi_stack_frame *f, uint32_t inner,
		     int64_t pid, uint32_t out[TAIL_CHAIN], unsigned *n)
{
	uint64_t key = ((uint64_t)f->image << 44) ^ f->off, to;
	size_t i, mask = x->memo_cap - 1;
	struct dcpi_stack_frame tf;
	struct chain_memo *cm;
	unsigned more;
	int err;

	*n = 0;
	if (f->image == DCPI_FRAME_UNKNOWN)
		return 0;
	for (i = dcpi_hash64(key) & mask; x->tail[i].val; i = (i + 1) & mask)
		if (x->tail[i].key == key)
			break;
	if (!x->tail[i].val) {
		to = call_target(x, f);
		x->tail[i] = (struct memo){ key, 0, to == TAIL_NONE ? TAIL_NONE : to + 1 };
	}
	if (x->tail[i].val == TAIL_NONE)
		return 0;
	tf = (struct dcpi_stack_frame){ f->image, x->tail[i].val - 1 };
	if (frame_proc(x, &tf, pid, &out[0]))
		return -ENOMEM;
	if (out[0] == inner)
		return 0; /* it called the procedure the next frame is in */
	*n = 1;
	for (i = dcpi_hash64(key ^ (uint64_t)inner * 0x9e3779b97f4a7c15ull) & mask;
	     x->chain[i].used; i = (i + 1) & mask)
		if (x->chain[i].key == key && x->chain[i].inner == inner)
			break;
	cm = &x->chain[i];
	if (!cm->used) {
		if ((err = tail_chain(x, f, tf.off, inner, pid, cm->p, &more)))
			return err;
		*cm = (struct chain_memo){ key, inner, 1, (uint8_t)more, { cm->p[0], cm->p[1] } };
	}
	for (unsigned k = 0; k < cm->n; k++)
		out[(*n)++] = cm->p[k];
	return 0;
}

/* Whether a frame is of user code (a caller frame's offset, when the frame
 * in from it is too, is its return address less one). */
static int user_frame(const struct dcpi_stackset *s, const struct dcpi_stack_frame *f)
{
	return f->image != DCPI_FRAME_UNKNOWN && s->images[f->image].kind == DCPI_IMAGE_FILE;
}

static int add_file(struct dcpi_callgraph *g, const struct dcpi_profset *set,
		    const struct dcpi_stackset *s, const char *platdir,
		    const struct dcpi_cg_opts *o, struct dcpi_objcache *objs)
{
	struct cg_index *ix = g->index;
	struct file_ctx x = { g, s, platdir, objs, { 0 }, NULL, 0, NULL, NULL, NULL, NULL, 0 };
	unsigned char *keep = NULL;
	int err = 0;

	for (unsigned e = 0; e < s->nevents; e++)
		x.col[e] = (unsigned)dcpi_profset_event(set, s->events[e]);
	x.memo_cap = 1024;
	/* at most one entry per frame of the file, processes apart or not (a
	   stack of each process has frames of its own): never full */
	while (x.memo_cap < 2 * (s->nframes + 1))
		x.memo_cap *= 2;
	if (!(x.memo = calloc(x.memo_cap, sizeof(*x.memo))) ||
	    !(x.tail = calloc(x.memo_cap, sizeof(*x.tail))) ||
	    !(x.chain = calloc(x.memo_cap, sizeof(*x.chain))) ||
	    !(x.names = calloc(s->nimages + 1, sizeof(*x.names))) ||
	    !(keep = calloc(s->nlabels + 1, 1)))
		err = dcpi_error(ENOMEM, "out of memory");
	for (size_t l = 0; !err && l < s->nlabels; l++)
		keep[l] = dcpi_callgraph_label_kept(s->labels[l], o->label_spec);
	for (size_t i = 0; !err && i < s->nstacks; i++) {
		const struct dcpi_stack *st = &s->stacks[i];
		struct dcpi_cg_stack *cs;
		uint64_t any = 0;
		size_t n;
		int restored;

		int64_t pid = o->bypid ? st->pid : -1;

		if (!keep[st->label] || (o->pid >= 0 && st->pid != o->pid))
			continue;
		/* room for a chain restored before each caller frame */
		if ((err = DCPI_GROW(g->stacks, g->stacks_cap, g->nstacks + 1, SIZE_MAX, "stacks")) ||
		    (err = DCPI_GROW(g->frames, g->frames_cap,
				     g->nframes + (TAIL_CHAIN + 1) * (size_t)st->nframes,
				     SIZE_MAX, "frames")))
			break;
		cs = &g->stacks[g->nstacks];
		memset(cs, 0, sizeof(*cs));
		for (unsigned e = 0; e < s->nevents; e++)
			if (x.col[e] < g->nevents) {
				cs->c[x.col[e]] = dcpi_sat_add(cs->c[x.col[e]],
							       s->counts[i * s->nevents + e]);
				any |= s->counts[i * s->nevents + e];
			}
		if (!any)
			continue; /* only events the set lacks */
		cs->first = g->nframes;
		cs->end = st->end;
		n = 0;
		restored = 0;
		for (uint32_t k = 0; !err && k < st->nframes; k++) {
			const struct dcpi_stack_frame *f = &s->frames[st->first + k];
			uint32_t t[TAIL_CHAIN];
			unsigned nt;

			if (k && user_frame(s, f) && user_frame(s, f - 1)) {
				if ((err = tail_proc(&x, f, g->frames[cs->first + n - 1], pid, t, &nt)))
					break;
				restored |= nt > 0;
				while (nt) /* leaf first: the innermost first */
					g->frames[cs->first + n++] = t[--nt];
			}
			err = frame_proc(&x, f, pid, &g->frames[cs->first + n]);
			n++;
		}
		if (err)
			break;
		cs->n = (uint32_t)n;
		if (restored)
			for (unsigned e = 0; e < g->nevents; e++)
				g->tail[e] = dcpi_sat_add(g->tail[e], cs->c[e]);
		g->nframes += n;
		g->nstacks++;
	}
	(void)ix;
	free(x.memo);
	free(x.tail);
	free(x.chain);
	for (size_t k = 0; x.names && k < s->nimages; k++)
		if (x.names[k]) {
			free(x.names[k]->v);
			free(x.names[k]);
		}
	free(x.names);
	free(x.name);
	free(keep);
	return err;
}

/* ---- building ------------------------------------------------------------------ */

static int is_stacks_file(const char *name)
{
	size_t n = strlen(name);

	return !strcmp(name, "epoch.stacks") ||
	       (!strncmp(name, "epoch@", 6) && n > 13 && !strcmp(name + n - 7, ".stacks"));
}

static int host_chosen(const struct dcpi_profset *set, const char *host)
{
	if (!set->nhosts)
		return 1;
	for (size_t i = 0; i < set->nhosts; i++)
		if (!strcmp(set->hosts[i], host))
			return 1;
	return 0;
}

/* Each stacks file of one platform directory, of a chosen host. */
static int walk_dir(const struct dcpi_profset *set, const char *platdir,
		    dcpi_callgraph_file_cb cb, void *arg, size_t *nbad, char **first_bad)
{
	DIR *d = opendir(platdir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0; /* gone since the set was loaded: nothing to add */
	while (!err && (de = readdir(d))) {
		struct dcpi_stackset s;
		char path[4200];

		if (!is_stacks_file(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", platdir, de->d_name);
		if ((err = dcpi_stackset_read(path, &s))) {
			if (err != -ENOMEM) {
				(*nbad)++;
				if (!*first_bad)
					*first_bad = strdup(dcpi_errmsg());
				err = 0;
			}
			continue;
		}
		if (host_chosen(set, s.platform ? s.platform : ""))
			err = cb(arg, &s, platdir);
		dcpi_stackset_free(&s);
	}
	closedir(d);
	return err;
}

int dcpi_callgraph_files(const struct dcpi_profset *set, dcpi_callgraph_file_cb cb, void *arg,
			 size_t *nbad, char **first_bad)
{
	int err = 0;

	*nbad = 0;
	*first_bad = NULL;
	for (size_t i = 0; !err && i < set->n; i++) {
		int seen = 0;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(set->v[k].platdir, set->v[i].platdir);
		if (!seen)
			err = walk_dir(set, set->v[i].platdir, cb, arg, nbad, first_bad);
	}
	return err;
}

int dcpi_callgraph_label_kept(const char *label, const char *spec)
{
	return !spec || (label[0] && dcpi_profset_label_has(label, spec));
}

struct build_ctx {
	struct dcpi_callgraph *g;
	const struct dcpi_profset *set;
	const struct dcpi_cg_opts *o;
	struct dcpi_objcache *objs;
};

static int build_file(void *arg, const struct dcpi_stackset *s, const char *platdir)
{
	struct build_ctx *b = arg;

	b->g->nfiles++;
	return add_file(b->g, b->set, s, platdir, b->o, b->objs);
}

int dcpi_callgraph_present(const struct dcpi_profset *set)
{
	for (size_t i = 0; i < set->n; i++) {
		DIR *d = opendir(set->v[i].platdir);
		struct dirent *de;
		int found = 0;

		while (d && !found && (de = readdir(d)))
			found = is_stacks_file(de->d_name);
		if (d)
			closedir(d);
		if (found)
			return 1;
	}
	return 0;
}

/* Self and inclusive counts, from the stacks. */
static int count(struct dcpi_callgraph *g)
{
	struct cg_index *x = g->index;

	free(x->stamp);
	if (!(x->stamp = calloc(g->nprocs + 1, sizeof(*x->stamp))))
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < g->nstacks; i++) {
		const struct dcpi_cg_stack *st = &g->stacks[i];

		for (unsigned e = 0; e < g->nevents; e++) { /* a hostile file's: saturated */
			g->total[e] = dcpi_sat_add(g->total[e], st->c[e]);
			g->ends[st->end][e] = dcpi_sat_add(g->ends[st->end][e], st->c[e]);
			g->procs[g->frames[st->first]].self[e] =
				dcpi_sat_add(g->procs[g->frames[st->first]].self[e], st->c[e]);
		}
		for (uint32_t k = 0; k < st->n; k++) {
			uint32_t p = g->frames[st->first + k];

			if (x->stamp[p] == (uint32_t)i + 1)
				continue; /* recursion: once a stack */
			x->stamp[p] = (uint32_t)i + 1;
			for (unsigned e = 0; e < g->nevents; e++)
				g->procs[p].incl[e] = dcpi_sat_add(g->procs[p].incl[e], st->c[e]);
		}
	}
	return 0;
}

int dcpi_callgraph_build(struct dcpi_callgraph *g, const struct dcpi_profset *set,
			 const struct dcpi_cg_opts *o, struct dcpi_objcache *objs)
{
	static const struct dcpi_cg_opts all = { NULL, -1, 0 };
	struct build_ctx b = { g, set, o ? o : &all, objs };
	int err = 0;


	memset(g, 0, sizeof(*g));
	g->nevents = set->nevents;
	if (!(g->index = calloc(1, sizeof(struct cg_index))))
		return dcpi_error(ENOMEM, "out of memory");
	err = dcpi_callgraph_files(set, build_file, &b, &g->nbad, &g->first_bad);
	if (!err)
		err = count(g);
	if (err)
		dcpi_callgraph_free(g);
	return err;
}

void dcpi_callgraph_free(struct dcpi_callgraph *g)
{
	struct cg_index *x = g->index;

	for (size_t i = 0; i < g->nprocs; i++) {
		free(g->procs[i].image);
		free(g->procs[i].proc);
	}
	if (x) {
		free(x->slot);
		free(x->stamp);
		free(x);
	}
	free(g->procs);
	free(g->stacks);
	free(g->frames);
	free(g->first_bad);
	memset(g, 0, sizeof(*g));
}

/* ---- questions ------------------------------------------------------------------- */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

size_t dcpi_callgraph_find(const struct dcpi_callgraph *g, const char *proc, const char *image,
			   size_t *idx, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nprocs; i++) {
		const struct dcpi_cg_proc *p = &g->procs[i];

		if (strcmp(p->proc, proc))
			continue;
		if (image && strcmp(p->image, image) && strcmp(base_name(p->image), image) &&
		    !(!strcmp(image, "kernel") && !strncmp(p->image, "[kernel", 7)))
			continue;
		if (n < max)
			idx[n] = i;
		n++;
	}
	return n;
}

/* Edges keyed by procedure, summed. */
struct edges {
	struct dcpi_cg_edge *v;
	size_t n, cap;
	unsigned col;
};

static int edge_add(struct edges *es, size_t proc, const uint64_t *c, unsigned ne)
{
	size_t i;
	int err;

	for (i = 0; i < es->n && es->v[i].proc != proc; i++)
		;
	if (i == es->n) {
		if ((err = DCPI_GROW(es->v, es->cap, es->n + 1, SIZE_MAX, "callers")))
			return err;
		memset(&es->v[es->n], 0, sizeof(es->v[0]));
		es->v[es->n++].proc = proc;
	}
	for (unsigned e = 0; e < ne; e++)
		es->v[i].c[e] = dcpi_sat_add(es->v[i].c[e], c[e]);
	return 0;
}

static unsigned sort_col;

static int edge_cmp(const void *a, const void *b)
{
	const struct dcpi_cg_edge *x = a, *y = b;

	if (x->c[sort_col] != y->c[sort_col])
		return x->c[sort_col] > y->c[sort_col] ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

static void edges_sort(struct edges *es)
{
	sort_col = es->col;
	qsort(es->v, es->n, sizeof(*es->v), edge_cmp);
}

/* The outermost position of p in stack st, or -1. */
static long outermost(const struct dcpi_callgraph *g, const struct dcpi_cg_stack *st, size_t p)
{
	for (long k = (long)st->n - 1; k >= 0; k--)
		if (g->frames[st->first + k] == p)
			return k;
	return -1;
}

int dcpi_callgraph_callers(const struct dcpi_callgraph *g, const size_t *path, size_t n,
			   unsigned col, struct dcpi_cg_edge **out, size_t *nout)
{
	struct edges es = { NULL, 0, 0, col < g->nevents ? col : 0 };
	int err = 0;

	for (size_t i = 0; !err && n && i < g->nstacks; i++) {
		const struct dcpi_cg_stack *st = &g->stacks[i];
		long k = outermost(g, st, path[0]);
		size_t j;

		if (k < 0)
			continue;
		for (j = 1; j < n && k + (long)j < (long)st->n &&
			    g->frames[st->first + k + j] == path[j]; j++)
			;
		if (j < n)
			continue; /* the chain is not this stack's */
		if (k + (long)n < (long)st->n)
			err = edge_add(&es, g->frames[st->first + k + n], st->c, g->nevents);
		else
			err = edge_add(&es, st->end == DCPI_STACK_END_WHOLE ||
						    st->end == DCPI_STACK_END_KERNEL
						? DCPI_CG_ROOT : DCPI_CG_STOPPED, st->c, g->nevents);
	}
	if (err) {
		free(es.v);
		return err;
	}
	edges_sort(&es);
	*out = es.v;
	*nout = es.n;
	return 0;
}

int dcpi_callgraph_callees(const struct dcpi_callgraph *g, size_t p, unsigned col,
			   struct dcpi_cg_edge **out, size_t *nout)
{
	struct edges es = { NULL, 0, 0, col < g->nevents ? col : 0 };
	int err = 0;

	for (size_t i = 0; !err && i < g->nstacks; i++) {
		const struct dcpi_cg_stack *st = &g->stacks[i];
		long k = outermost(g, st, p);

		if (k < 0)
			continue;
		err = edge_add(&es, k ? g->frames[st->first + k - 1] : DCPI_CG_SELF, st->c,
			       g->nevents);
	}
	if (err) {
		free(es.v);
		return err;
	}
	edges_sort(&es);
	*out = es.v;
	*nout = es.n;
	return 0;
}

const char *dcpi_callgraph_name(const struct dcpi_callgraph *g, size_t p)
{
	switch (p) {
	case DCPI_CG_ROOT:
		return "[no caller: the outermost frame]";
	case DCPI_CG_STOPPED:
		return "[walk stopped: caller not known]";
	case DCPI_CG_SELF:
		return "[self]";
	default:
		return p < g->nprocs ? g->procs[p].proc : "?";
	}
}

const char *dcpi_callgraph_image(const struct dcpi_callgraph *g, size_t p)
{
	return p < g->nprocs ? g->procs[p].image : "";
}
