/* Folded stacks: see dcpi/folded.h. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/hashtab.h>

#include "dcpi/addrs.h"
#include "dcpi/buf.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/folded.h"
#include "dcpi/utf8.h"

struct stack {
	char *key;
	uint64_t count;
};

struct fold {
	htab_t index;           /* of struct stack, by key */
	int col;
	struct dcpi_buf line;
};

static hashval_t stack_hash(const void *p)
{
	return htab_hash_string(((const struct stack *)p)->key);
}

static int stack_eq(const void *a, const void *b)
{
	return !strcmp(((const struct stack *)a)->key, ((const struct stack *)b)->key);
}

static void stack_free(void *p)
{
	struct stack *s = p;

	free(s->key);
	free(s);
}

/* One frame name: ';' would split it, control bytes would break lines
 * (and C1 controls, U+0080..U+009F, or a byte that begins no UTF-8
 * sequence, would reach a terminal as escapes): a '?' for each. */
static int put_name(struct dcpi_buf *b, const char *s)
{
	int err = 0;

	while (*s && !err) {
		const unsigned char *u = (const unsigned char *)s;
		size_t n = dcpi_utf8_len(u);

		if (n == 1 && *s != ';' && *u >= 0x20 && *u != 0x7f)
			err = dcpi_buf_put(b, s, 1);
		else if (n > 1 && !(n == 2 && u[0] == 0xc2 && u[1] < 0xa0))
			err = dcpi_buf_put(b, s, n);
		else
			err = dcpi_buf_put(b, *s == ';' ? ":" : "?", 1), n = n ? n : 1;
		s += n;
	}
	return err;
}

static int build_key(struct fold *f, const struct dcpi_addr *a)
{
	char img[256];
	int err;

	f->line.len = 0;
	dcpi_profile_short_name(&a->e->prof, img, sizeof(img));
	if ((err = put_name(&f->line, img)) || (err = dcpi_buf_put(&f->line, ";", 1)) ||
	    (err = put_name(&f->line, a->procedure)))
		return err;
	for (size_t k = a->nframes; k-- > 1 && !err;) /* inlined callees, outer to inner */
		if (!(err = dcpi_buf_put(&f->line, ";", 1)))
			err = put_name(&f->line, a->frames[k - 1].function);
	if (!err && a->nframes && a->frames[0].line) {
		const char *file = strrchr(a->frames[0].file, '/');

		err = dcpi_buf_printf(&f->line, ";");
		if (!err)
			err = put_name(&f->line, file ? file + 1 : a->frames[0].file);
		if (!err)
			err = dcpi_buf_printf(&f->line, ":%u", a->frames[0].line);
	}
	return err ? err : dcpi_buf_put(&f->line, "", 1);
}

/* Count n samples of the stack in f->line. */
static int add_line(struct fold *f, uint64_t n)
{
	struct stack key, *s;
	void **slot;

	key.key = (char *)f->line.data;
	if (!(s = htab_find(f->index, &key))) {
		s = calloc(1, sizeof(*s));
		if (!s || !(s->key = strdup(key.key)) ||
		    !(slot = htab_find_slot(f->index, &key, INSERT))) {
			if (s)
				free(s->key);
			free(s);
			return dcpi_error(ENOMEM, "out of memory");
		}
		*slot = s;
	}
	s->count += n;
	return 0;
}

static int add_addr(void *arg, const struct dcpi_addr *a)
{
	struct fold *f = arg;
	int err;

	if (!a->counts[f->col])
		return 0;
	if ((err = build_key(f, a)))
		return err;
	return add_line(f, a->counts[f->col]);
}

static int collect(void **slot, void *arg)
{
	struct stack ***out = arg;

	*(*out)++ = *slot;
	return 1;
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp((*(struct stack *const *)a)->key, (*(struct stack *const *)b)->key);
}

static int print_sorted(struct fold *f, FILE *out)
{
	size_t n = htab_elements(f->index);
	struct stack **v = calloc(n ? n : 1, sizeof(*v)), **p = v;

	if (!v)
		return dcpi_error(ENOMEM, "out of memory");
	htab_traverse_noresize(f->index, collect, &p);
	qsort(v, n, sizeof(*v), cmp_stack);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", v[i]->key, v[i]->count);
	free(v);
	return ferror(out) ? dcpi_error(EIO, "writing the folded stacks failed") : 0;
}

int dcpi_folded_write(FILE *out, const struct dcpi_profset *set, const unsigned char *chosen,
		      struct dcpi_objcache *objs, int col)
{
	struct fold f = { NULL, col, DCPI_BUF_INIT };
	int err;

	f.index = htab_create_alloc(1024, stack_hash, stack_eq, stack_free, calloc, free);
	if (!f.index)
		return dcpi_error(ENOMEM, "out of memory");
	err = dcpi_addrs_walk(set, chosen, objs, add_addr, &f);
	if (!err)
		err = print_sorted(&f, out);
	htab_delete(f.index);
	dcpi_buf_release(&f.line);
	return err;
}

/* A frame of a call stack: IMAGE`PROCEDURE, the image by its file name. */
static int put_frame(struct dcpi_buf *b, const struct dcpi_callgraph *g, uint32_t p)
{
	const char *img = g->procs[p].image, *slash = strrchr(img, '/');
	int err = put_name(b, slash ? slash + 1 : img);

	err = err ? err : dcpi_buf_put(b, "`", 1);
	return err ? err : put_name(b, g->procs[p].proc);
}

int dcpi_folded_write_stacks(FILE *out, const struct dcpi_callgraph *g, int col)
{
	struct fold f = { NULL, col, DCPI_BUF_INIT };
	int err = 0;

	if (col < 0 || (unsigned)col >= g->nevents)
		return dcpi_error(EINVAL, "no column %d", col);
	f.index = htab_create_alloc(1024, stack_hash, stack_eq, stack_free, calloc, free);
	if (!f.index)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; !err && i < g->nstacks; i++) {
		const struct dcpi_cg_stack *st = &g->stacks[i];

		if (!st->c[col])
			continue;
		f.line.len = 0;
		if (st->end != DCPI_STACK_END_WHOLE && st->end != DCPI_STACK_END_KERNEL)
			err = dcpi_buf_printf(&f.line, "[%s];", dcpi_stack_end_name(st->end));
		for (uint32_t k = st->n; !err && k-- > 0;) {
			err = put_frame(&f.line, g, g->frames[st->first + k]);
			if (!err && k)
				err = dcpi_buf_put(&f.line, ";", 1);
		}
		err = err ? err : dcpi_buf_put(&f.line, "", 1);
		err = err ? err : add_line(&f, st->c[col]);
	}
	if (!err)
		err = print_sorted(&f, out);
	htab_delete(f.index);
	dcpi_buf_release(&f.line);
	return err;
}
