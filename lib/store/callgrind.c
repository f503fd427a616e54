/* callgrind's output format: see dcpi/callgrind.h, and valgrind's
 * docs/html/cl-format.html for the grammar. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/callgrind.h"
#include "dcpi/error.h"
#include "internal.h"

#define MAX_NAMES 1000000
#define MAX_FNS ((size_t)1 << 22)
#define MAX_LINE 65536

struct parser {
	struct dcpi_callgrind *cg;
	char **names;               /* "(id) name" compression table for ob= and fn= */
	size_t nnames, names_cap;
	size_t obj, npos, instr_field;
	int have_obj, have_positions;
	char *fn;                   /* current function (owned by names or a copy) */
	uint64_t last[8];           /* last position, for relative positions */
	enum { NEXT_COST, NEXT_CALL, NEXT_JUMP } next;
	uint64_t jump_to, jump_count;
	size_t line;
};

static int bad(struct parser *p, const char *what)
{
	return dcpi_error(EBADMSG, "callgrind output, line %zu: %s", p->line, what);
}

/* "(3) name" defines id 3; "(3)" refers to it; "name" is itself. */
static int name_of(struct parser *p, char *s, const char **out)
{
	char *end;
	unsigned long id;
	int err;

	id = *s == '(' && s[1] >= '0' && s[1] <= '9' ? strtoul(s + 1, &end, 10) : 0;
	if (*s != '(' || s[1] < '0' || s[1] > '9' || *end != ')') {
		*out = s;   /* a plain name, such as "(below main)" */
		return 0;
	}
	if (id >= MAX_NAMES)
		return bad(p, "bad compressed name");
	end++;
	while (*end == ' ')
		end++;
	if (*end) {
		if (id >= p->nnames) {
			err = DCPI_GROW(p->names, p->names_cap, id + 1, MAX_NAMES, "names");
			if (err)
				return err;
			memset(p->names + p->nnames, 0, (id + 1 - p->nnames) * sizeof(*p->names));
			p->nnames = id + 1;
		}
		free(p->names[id]);
		p->names[id] = strdup(end);
		if (!p->names[id])
			return dcpi_error(ENOMEM, "out of memory");
	}
	if (id >= p->nnames || !p->names[id])
		return bad(p, "compressed name used before it is defined");
	*out = p->names[id];
	return 0;
}

static int set_obj(struct parser *p, char *s)
{
	struct dcpi_callgrind *cg = p->cg;
	const char *name;
	int err = name_of(p, s, &name);

	if (err)
		return err;
	for (size_t i = 0; i < cg->nobjs; i++)
		if (!strcmp(cg->objs[i].counts.path, name)) {
			p->obj = i;
			p->have_obj = 1;
			return 0;
		}
	err = DCPI_GROW(cg->objs, cg->cap, cg->nobjs + 1, DCPI_CALLGRIND_MAX_OBJS, "objects");
	if (err)
		return err;
	memset(&cg->objs[cg->nobjs], 0, sizeof(cg->objs[0]));
	cg->objs[cg->nobjs].counts.path = strdup(name);
	if (!cg->objs[cg->nobjs].counts.path)
		return dcpi_error(ENOMEM, "out of memory");
	p->obj = cg->nobjs++;
	p->have_obj = 1;
	return 0;
}

static int set_fn(struct parser *p, char *s)
{
	const char *name;
	int err = name_of(p, s, &name);

	free(p->fn);
	p->fn = err ? NULL : strdup(name);
	return err ? err : p->fn ? 0 : dcpi_error(ENOMEM, "out of memory");
}

static int note_fn(struct parser *p, uint64_t addr)
{
	struct dcpi_callgrind_obj *o = &p->cg->objs[p->obj];
	int err;

	if (!p->fn)
		return 0;
	if (o->nfns && !strcmp(o->fns[o->nfns - 1].name, p->fn)) {
		if (addr < o->fns[o->nfns - 1].lo)
			o->fns[o->nfns - 1].lo = addr;
		return 0;
	}
	for (size_t i = 0; i < o->nfns; i++)
		if (!strcmp(o->fns[i].name, p->fn)) {
			if (addr < o->fns[i].lo)
				o->fns[i].lo = addr;
			return 0;
		}
	err = DCPI_GROW(o->fns, o->fns_cap, o->nfns + 1, MAX_FNS, "functions");
	if (err)
		return err;
	o->fns[o->nfns].name = strdup(p->fn);
	o->fns[o->nfns].lo = addr;
	return o->fns[o->nfns++].name ? 0 : dcpi_error(ENOMEM, "out of memory");
}

/* One position field: hex/decimal, "+N", "-N" or "*". */
static int position(struct parser *p, char **s, size_t k, uint64_t *v)
{
	char *end;
	uint64_t x;

	if (**s == '*') {
		*v = p->last[k];
		(*s)++;
		return 0;
	}
	if (**s == '+' || **s == '-') {
		x = strtoull(*s + 1, &end, 0);
		if (end == *s + 1)
			return bad(p, "bad relative position");
		*v = **s == '+' ? p->last[k] + x : p->last[k] - x;
	} else {
		x = strtoull(*s, &end, 0);
		if (end == *s)
			return bad(p, "bad position");
		*v = x;
	}
	*s = end;
	p->last[k] = *v;
	return 0;
}

/* A count at s: digits only (strtoull would take "-1" as 2^64 - 1), at
 * most DCPI_EXACT_COUNT_MAX.  0 with *end past it, or -1. */
static int get_count(char *s, char **end, uint64_t *v)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno || *v > DCPI_EXACT_COUNT_MAX ? -1 : 0;
}

static int cost_line(struct parser *p, char *s)
{
	uint64_t pos[8] = { 0 }, ir = 0, addr;
	char *end;
	int err;

	if (!p->have_positions)
		return bad(p, "no instruction positions: run callgrind with --dump-instr=yes");
	if (!p->have_obj)
		return bad(p, "a cost line before any ob=");
	for (size_t k = 0; k < p->npos; k++) {
		while (*s == ' ' || *s == '\t')
			s++;
		err = position(p, &s, k, &pos[k]);
		if (err)
			return err;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s && get_count(s, &end, &ir))
		return bad(p, "bad cost (not a count of at most 2^53 - 1)");
	addr = pos[p->instr_field];
	if (p->next == NEXT_CALL) {   /* inclusive cost of a call: not this insn's */
		p->next = NEXT_COST;
		return 0;
	}
	if (p->next == NEXT_JUMP) {
		p->next = NEXT_COST;
		err = dcpi_exact_add_jump(&p->cg->objs[p->obj].counts, addr, p->jump_to,
					  p->jump_count);
		if (err || !ir)
			return err;
	}
	p->cg->total = dcpi_sat_add(p->cg->total, ir);
	err = note_fn(p, addr);
	return err ? err : dcpi_exact_add_insn(&p->cg->objs[p->obj].counts, addr, ir);
}

/* "jump=COUNT POS..." or "jcnd=EXE/COUNT POS...": the target. */
static int jump_line(struct parser *p, char *s, int cond)
{
	uint64_t pos[8] = { 0 };
	char *end;
	int err;

	if (get_count(s, &end, &p->jump_count))
		return bad(p, "bad jump count");
	if (cond) {
		if (*end != '/')
			return bad(p, "bad jcnd count");
		s = end + 1;
		if (get_count(s, &end, &p->jump_count))
			return bad(p, "bad jcnd count");
	}
	s = end;
	for (size_t k = 0; k < p->npos; k++) {
		while (*s == ' ')
			s++;
		err = position(p, &s, k, &pos[k]);
		if (err)
			return err;
	}
	p->jump_to = pos[p->instr_field];
	p->next = NEXT_JUMP;
	return 0;
}

static int positions(struct parser *p, char *s)
{
	size_t k = 0;
	char *tok, *save = NULL;

	p->have_positions = 0;
	for (tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), k++) {
		if (k >= 8)
			return bad(p, "too many position fields");
		if (!strcmp(tok, "instr"))
			p->instr_field = k, p->have_positions = 1;
	}
	p->npos = k;
	return p->have_positions ? 0 : bad(p, "no instruction positions: run callgrind with "
					   "--dump-instr=yes");
}

static int one_line(struct parser *p, char *s)
{
	if (!strncmp(s, "positions:", 10))
		return positions(p, s + 10);
	if (!strncmp(s, "ob=", 3))
		return set_obj(p, s + 3);
	if (!strncmp(s, "fn=", 3))
		return set_fn(p, s + 3);
	if (!strncmp(s, "calls=", 6)) {
		p->next = NEXT_CALL;
		return 0;
	}
	if (!strncmp(s, "jump=", 5))
		return jump_line(p, s + 5, 0);
	if (!strncmp(s, "jcnd=", 5))
		return jump_line(p, s + 5, 1);
	if ((*s >= '0' && *s <= '9') || *s == '+' || *s == '-' || *s == '*')
		return cost_line(p, s);
	return 0;   /* headers, fl= fi= fe= cob= cfi= cfn= totals, comments */
}

int dcpi_callgrind_parse(const char *text, size_t len, struct dcpi_callgrind *out)
{
	struct parser p;
	char *buf = NULL;
	int err = 0;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	p.cg = out;
	p.npos = 1;
	if (!(len >= 18 && !memcmp(text, "# callgrind format", 18)) &&
	    !(len >= 8 && !memcmp(text, "version:", 8)))
		return dcpi_error(EBADMSG, "not callgrind output");
	buf = malloc(MAX_LINE + 1);
	if (!buf)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < len && !err;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = (nl ? (size_t)(nl - text) : len) - i;

		p.line++;
		if (n > MAX_LINE) {
			err = bad(&p, "line too long");
			break;
		}
		memcpy(buf, text + i, n);
		buf[n] = '\0';
		if (n && buf[n - 1] == '\r')
			buf[n - 1] = '\0';
		err = one_line(&p, buf);
		i += n + 1;
	}
	free(buf);
	for (size_t i = 0; i < p.nnames; i++)
		free(p.names[i]);
	free(p.names);
	free(p.fn);
	for (size_t i = 0; i < out->nobjs && !err; i++)
		dcpi_exact_sort(&out->objs[i].counts);
	if (err)
		dcpi_callgrind_free(out);
	return err;
}

void dcpi_callgrind_free(struct dcpi_callgrind *cg)
{
	for (size_t i = 0; i < cg->nobjs; i++) {
		dcpi_exact_free(&cg->objs[i].counts);
		for (size_t k = 0; k < cg->objs[i].nfns; k++)
			free(cg->objs[i].fns[k].name);
		free(cg->objs[i].fns);
	}
	free(cg->objs);
	memset(cg, 0, sizeof(*cg));
}
