/* Kernel symbols from a kallsyms snapshot: dcpi_symtab_open_kallsyms().
 * The file is hostile input (it may come from another host's database):
 * lines are read into a fixed buffer, every field is checked, and bad
 * lines are counted, never fatal unless nothing at all parsed. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/error.h"
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

static int parse_hex(const char *s, uint64_t *v)
{
	size_t n = strlen(s), i;
	uint64_t x = 0;

	if (!n || n > 16)
		return -1;
	for (i = 0; i < n; i++) {
		int c = tolower((unsigned char)s[i]);

		if (!isxdigit(c))
			return -1;
		x = x << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	*v = x;
	return 0;
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
	if (!mine(r, &k))
		return 0;
	r->nonzero += k.addr != 0;
	err = add_addr(r, k.addr);
	if (err || !is_text(k.type))
		return err;
	in.s.vaddr = k.addr;
	in.s.bind = kbind(k.type);
	in.s.name = dcpi_symtab_intern(st, k.name, strlen(k.name));
	in.is_func = 1;
	in.limit = UINT64_MAX;
	if (!in.s.name)
		return -ENOMEM;
	return dcpi_symtab_add(st, &in);
}

/* Read lines into a fixed buffer; a line that does not fit is skipped to
 * its end and counted, so no input makes us allocate more. */
static int read_lines(gzFile fp, struct dcpi_symtab *st, struct kread *r)
{
	char line[DCPI_KALLSYMS_LINE_MAX];
	int c, err, zerr;

	while (gzgets(fp, line, sizeof(line))) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n') {
			line[n - 1] = '\0';
		} else if (!gzeof(fp)) {
			while ((c = gzgetc(fp)) != -1 && c != '\n')
				;
			st->skipped++;
			continue;
		}
		err = take_line(st, r, line);
		if (err)
			return err;
	}
	gzerror(fp, &zerr);
	return zerr != Z_OK && zerr != Z_BUF_ERROR
		       ? dcpi_error(EBADMSG, "%s: corrupt compressed data", st->path)
		       : 0;
}

/* The owner's addresses, sorted (into a scratch array of pairs for the
 * radix sort, then back). */
static int sort_addrs(struct kread *r)
{
	struct dcpi_kv *kv = calloc(r->naddrs ? r->naddrs : 1, sizeof(*kv));
	int err;

	if (!kv)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < r->naddrs; i++)
		kv[i].key = r->addrs[i];
	err = dcpi_sort_kv(kv, r->naddrs);
	for (size_t i = 0; !err && i < r->naddrs; i++)
		r->addrs[i] = kv[i].key;
	free(kv);
	return err;
}

/* A text symbol ends where the next symbol of its owner begins, data
 * included, so the last function before a data area does not swallow it. */
static int set_limits(struct dcpi_symtab *st, struct kread *r)
{
	size_t i;
	int err = sort_addrs(r);

	if (err)
		return err;
	for (i = 0; i < st->nin; i++) {
		uint64_t v = st->in[i].s.vaddr;
		size_t lo = 0, hi = r->naddrs;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (r->addrs[mid] <= v)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < r->naddrs)
			st->in[i].limit = r->addrs[lo];
	}
	return 0;
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
