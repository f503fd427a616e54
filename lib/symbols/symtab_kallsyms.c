/* Kernel symbols from a kallsyms snapshot: dcpi_symtab_open_kallsyms().
 * The file is hostile input (it may come from another host's database):
 * lines are read into a fixed buffer, every field is checked, and bad
 * lines are counted, never fatal unless nothing at all parsed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/snapshot.h"
#include "internal.h"
#include "symtab_int.h"

struct kline {
	uint64_t addr;
	char type;
	const char *name;
	const char *module; /* NULL: vmlinux */
};

/* Owner of the symbol table being read, and the addresses of every
 * symbol of that owner (text or not) to bound the text symbols' sizes. */
struct kread {
	const char *module;
	uint64_t *addrs;
	size_t naddrs, capaddrs;
	size_t parsed, nonzero;
};

static char *next_field(char **p)
{
	char *s = *p, *start;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	start = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return start;
}

/* 1 to 16 hex digits (either case), nothing else. */
static int parse_hex(const char *s, uint64_t *v)
{
	return dcpi_hex_scan_u64(&s, NULL, v) || *s ? -1 : 0;
}

/* "ADDR TYPE NAME" or "ADDR TYPE NAME [MODULE]"; line is modified. */
static int parse_line(char *line, struct kline *k)
{
	char *p = line, *addr, *type, *mod;
	size_t mlen;

	addr = next_field(&p);
	type = next_field(&p);
	k->name = next_field(&p);
	mod = next_field(&p);
	if (!addr || !type || !k->name || type[1] || parse_hex(addr, &k->addr))
		return -1;
	k->type = type[0];
	k->module = NULL;
	if (!mod)
		return 0;
	mlen = strlen(mod);
	if (mlen < 3 || mod[0] != '[' || mod[mlen - 1] != ']' || next_field(&p))
		return -1;
	mod[mlen - 1] = '\0';
	k->module = mod + 1;
	return 0;
}

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static unsigned char kbind(char type)
{
	if (type == 'T')
		return DCPI_SYM_GLOBAL;
	return type == 'w' || type == 'W' ? DCPI_SYM_WEAK : DCPI_SYM_LOCAL;
}

static int mine(const struct kread *r, const struct kline *k)
{
	if (!r->module)
		return k->module == NULL;
	return k->module && !strcmp(k->module, r->module);
}

static int add_addr(struct kread *r, uint64_t a)
{
	int err = DCPI_GROW(r->addrs, r->capaddrs, r->naddrs + 1, DCPI_SYMTAB_MAX_SYMS,
			    "kallsyms entries");

	if (err)
		return err;
	r->addrs[r->naddrs++] = a;
	return 0;
}

static int take_line(struct dcpi_symtab *st, struct kread *r, char *line)
{
	struct symtab_in in = { 0 };
	struct kline k;
	int err;

	if (parse_line(line, &k)) {
		st->skipped++;
		return 0;
	}
	r->parsed++;
	if (!mine(r, &k) || !strncmp(k.name, DCPI_KALLSYMS_PADDING, sizeof(DCPI_KALLSYMS_PADDING) - 1))
		return 0; /* a padding symbol: its bytes go with the function before */
	r->nonzero += k.addr != 0;
	err = add_addr(r, k.addr);
	if (err || !is_text(k.type))
		return err;
	in.s.vaddr = k.addr;
	in.s.bind = kbind(k.type);
	in.s.name = dcpi_symtab_intern(st, k.name, strlen(k.name));
	in.is_func = 1;
	in.limit = r->naddrs - 1; /* its address's index, for set_limits */
	if (!in.s.name)
		return -ENOMEM;
	return dcpi_symtab_add(st, &in);
}

/* The decompressed text is read in fixed chunks and cut into lines in
 * place; a line split by a chunk's end is carried over in a fixed
 * buffer.  A line that does not fit DCPI_KALLSYMS_LINE_MAX (with its
 * newline and a NUL), or that holds a NUL byte, is skipped and counted,
 * so no input makes us allocate more. */
#define KS_CHUNK 65536

struct lines {
	char carry[DCPI_KALLSYMS_LINE_MAX];
	size_t ncarry;
	int toolong;            /* the carried line is past the limit */
	char chunk[KS_CHUNK + 1];
};

/* One complete line of len bytes (no newline), NUL-terminated at
 * line[len]. */
static int one_line(struct dcpi_symtab *st, struct kread *r, char *line, size_t len)
{
	if (len > DCPI_KALLSYMS_LINE_MAX - 2 || memchr(line, '\0', len)) {
		st->skipped++;
		return 0;
	}
	return take_line(st, r, line);
}

/* Add the start of a line to the carry buffer (it ends in a later chunk). */
static void carry(struct lines *l, const char *p, size_t len)
{
	if (l->toolong || len > sizeof(l->carry) - 1 - l->ncarry) {
		l->toolong = 1;
		return;
	}
	memcpy(l->carry + l->ncarry, p, len);
	l->ncarry += len;
}

/* The carried line, completed by its last len bytes at p (len 0 at the
 * end of the file). */
static int carried_line(struct dcpi_symtab *st, struct kread *r, struct lines *l, const char *p,
			size_t len)
{
	int err = 0;

	carry(l, p, len);
	if (l->toolong) {
		st->skipped++;
	} else {
		l->carry[l->ncarry] = '\0';
		err = one_line(st, r, l->carry, l->ncarry);
	}
	l->ncarry = 0;
	l->toolong = 0;
	return err;
}

static int chunk_lines(struct dcpi_symtab *st, struct kread *r, struct lines *l, size_t n)
{
	char *p = l->chunk, *end = l->chunk + n, *nl;
	int err = 0;

	while (!err && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (l->ncarry || l->toolong) {
			err = carried_line(st, r, l, p, (size_t)(nl - p));
		} else {
			*nl = '\0';
			err = one_line(st, r, p, (size_t)(nl - p));
		}
		p = nl + 1;
	}
	if (!err && p < end)
		carry(l, p, (size_t)(end - p));
	return err;
}

static int read_lines(gzFile fp, struct dcpi_symtab *st, struct kread *r)
{
	struct lines *l = calloc(1, sizeof(*l));
	int n, err = 0, zerr;

	if (!l)
		return dcpi_error(ENOMEM, "out of memory");
	while (!err && (n = gzread(fp, l->chunk, KS_CHUNK)) > 0)
		err = chunk_lines(st, r, l, (size_t)n);
	if (!err && (l->ncarry || l->toolong)) /* a last line without its newline */
		err = carried_line(st, r, l, "", 0);
	free(l);
	if (err)
		return err;
	gzerror(fp, &zerr);
	return zerr != Z_OK && zerr != Z_BUF_ERROR
		       ? dcpi_error(EBADMSG, "%s: corrupt compressed data", st->path)
		       : 0;
}

/* A text symbol ends where the next symbol of its owner begins, data
 * included, so the last function before a data area does not swallow it.
 * Each text symbol's limit holds the index of its address in r->addrs
 * until here.  Linear after the sort (no search per symbol): the owner's
 * addresses are sorted with their indexes, each sorted position gets the
 * next greater address, and each symbol reads that of its own. */
static int set_limits(struct dcpi_symtab *st, struct kread *r)
{
	size_t n = r->naddrs, p, *pos = NULL;
	struct dcpi_kv *kv = NULL;
	uint64_t next = UINT64_MAX;
	int err = 0;

	kv = calloc(n ? n : 1, sizeof(*kv));
	pos = calloc(n ? n : 1, sizeof(*pos));
	if (!kv || !pos) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	for (p = 0; p < n; p++)
		kv[p] = (struct dcpi_kv){ r->addrs[p], p };
	err = dcpi_sort_kv(kv, n);
	if (err)
		goto out;
	for (p = 0; p < n; p++)
		pos[kv[p].val] = p;
	for (p = n; p-- > 0;) {
		if (p + 1 < n && kv[p + 1].key != kv[p].key)
			next = kv[p + 1].key;
		kv[p].val = next;
	}
	for (size_t i = 0; i < st->nin; i++)
		st->in[i].limit = kv[pos[st->in[i].limit]].val;
out:
	free(kv);
	free(pos);
	return err;
}

static int check_result(struct dcpi_symtab *st, const struct kread *r, const char *module)
{
	if (!r->parsed)
		return dcpi_error(EBADMSG, "%s: no valid kallsyms line (%zu malformed)", st->path,
				  st->skipped);
	if (!st->nin)
		return dcpi_error(ENOENT, "%s: no text symbols for %s", st->path,
				  module ? module : "the kernel");
	if (!r->nonzero)
		return dcpi_error(EACCES, "%s: every address is zero (hidden by kptr_restrict; "
				  "read it as root)", st->path);
	if (st->skipped)
		return dcpi_symtab_note(st, "%zu malformed kallsyms lines skipped", st->skipped);
	return 0;
}

static int setup(struct dcpi_symtab *st, const char *module, uint64_t base)
{
	st->base = base;
	st->source = DCPI_SYMSRC_KALLSYMS;
	if (dcpi_symtab_set_str(&st->label, module ? module : "kernel") ||
	    dcpi_symtab_set_str(&st->debug_file, st->path))
		return -ENOMEM;
	return 0;
}

int dcpi_symtab_open_kallsyms(const char *kallsyms_path, const char *module, uint64_t base,
			      struct dcpi_symtab **out)
{
	struct kread r = { .module = module };
	struct dcpi_symtab *st;
	gzFile fp = NULL;
	int err;

	*out = NULL;
	st = dcpi_symtab_new(module ? DCPI_IMAGE_MODULE : DCPI_IMAGE_KERNEL, kallsyms_path);
	if (!st)
		return -ENOMEM;
	err = setup(st, module, base);
	if (err)
		goto out;
	/* gz* reads the database's kallsyms.gz and plain files alike */
	fp = gzopen(kallsyms_path, "rbe");
	if (!fp) {
		err = dcpi_error(errno, "%s: %s", kallsyms_path, strerror(errno));
		goto out;
	}
	err = read_lines(fp, st, &r);
	if (!err)
		err = check_result(st, &r, module);
	if (err)
		goto out;
	err = set_limits(st, &r);
	if (!err)
		err = dcpi_symtab_finish(st);
out:
	if (fp)
		gzclose(fp);
	free(r.addrs);
	if (err) {
		dcpi_symtab_close(st);
		return err;
	}
	*out = st;
	return 0;
}
