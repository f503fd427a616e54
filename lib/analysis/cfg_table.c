/* Jump tables of x86-64 code, recovered from the instructions before an
 * indirect jump: see dcpi/cfg.h.  The patterns are read from Capstone's
 * AT&T operand text; every entry found must land on an instruction of the
 * procedure, else the whole table is refused (the jump then goes to the
 * unknown node): a wrong guess must not invent edges. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_int.h"

#define BACK_WINDOW 32   /* instructions looked at before the jump */

/* s without blanks into buf; 0 when it does not fit. */
static int squeeze(const char *s, char *buf, size_t len)
{
	size_t k = 0;

	for (; *s; s++) {
		if (isspace((unsigned char)*s))
			continue;
		if (k + 1 >= len)
			return 0;
		buf[k++] = *s;
	}
	buf[k] = '\0';
	return 1;
}

static int parse_num(const char *s, int64_t *v, const char **end)
{
	int neg = 0;
	char *e;
	unsigned long long u;

	if (*s == '-')
		neg = 1, s++;
	if (!isdigit((unsigned char)*s))
		return 0;
	errno = 0;
	u = strtoull(s, &e, 0);
	if (errno || e == s)
		return 0;
	*v = neg ? -(int64_t)u : (int64_t)u;
	*end = e;
	return 1;
}

/* "cmp $N, X" directly followed by ja (entries 0..N) or jae (0..N-1). */
static size_t find_bound(const struct cfg_ctx *c, size_t j)
{
	size_t lo = j > BACK_WINDOW ? j - BACK_WINDOW : 0;

	for (size_t i = j; i-- > lo;) {
		const struct dcpi_insn *in = CFG_INSN(c, i), *nx = CFG_INSN(c, i + 1);
		char ops[sizeof(in->operands)];
		const char *e;
		int64_t v;

		if (strncmp(in->mnemonic, "cmp", 3) || !squeeze(in->operands, ops, sizeof(ops)) ||
		    ops[0] != '$' || !parse_num(ops + 1, &v, &e) || *e != ',' || v < 0 ||
		    v >= DCPI_CFG_MAX_TABLE)
			continue;
		if (!strcmp(nx->mnemonic, "ja"))
			return (size_t)v + 1;
		if (!strcmp(nx->mnemonic, "jae") || !strcmp(nx->mnemonic, "jnb"))
			return (size_t)v;
	}
	return 0;
}

/* "*0xTABLE(,%r,8)": absolute 8-byte entries. */
static int absolute_table(const char *ops, uint64_t *table)
{
	const char *e;
	int64_t v;

	if (ops[0] != '*' || !parse_num(ops + 1, &v, &e) || strncmp(e, "(,%", 3))
		return 0;
	e = strchr(e, ')');
	if (!e || e[-1] != '8' || e[-2] != ',' || e[1])
		return 0;
	*table = (uint64_t)v;
	return 1;
}

/* Register text of "%reg" at s, into r (at most 7 characters). */
static int reg_name(const char *s, char *r)
{
	size_t k = 0;

	if (*s != '%')
		return 0;
	for (s++; isalnum((unsigned char)*s) && k < 7; s++)
		r[k++] = *s;
	r[k] = '\0';
	return k > 0;
}

/* "lea 0xD(%rip), %B" before j: the table is the next instruction + D. */
static int rip_lea(const struct cfg_ctx *c, size_t j, const char *base, uint64_t *table)
{
	size_t lo = j > BACK_WINDOW ? j - BACK_WINDOW : 0;
	char want[16];

	snprintf(want, sizeof(want), "(%%rip),%%%s", base);
	for (size_t i = j; i-- > lo;) {
		const struct dcpi_insn *in = CFG_INSN(c, i);
		char ops[sizeof(in->operands)];
		const char *e;
		int64_t d;

		if (strcmp(in->mnemonic, "lea") && strcmp(in->mnemonic, "leaq"))
			continue;
		if (!squeeze(in->operands, ops, sizeof(ops)) || !parse_num(ops, &d, &e) ||
		    strcmp(e, want))
			continue;
		*table = in->vaddr + in->size + (uint64_t)d;
		return 1;
	}
	return 0;
}

/* "jmp *%X" after "movslq (%B,%R,4),%X" and "add %B,%X": entries are
 * 4-byte offsets from the table at B. */
static int relative_table(const struct cfg_ctx *c, size_t j, const char *ops, uint64_t *table)
{
	size_t lo = j > 8 ? j - 8 : 0;
	char x[8], b[8] = "", want_add[24], o2[sizeof(CFG_INSN(c, 0)->operands)];
	int have_add = 0, have_mov = 0;

	if (ops[0] != '*' || !reg_name(ops + 1, x))
		return 0;
	for (size_t i = j; i-- > lo && !(have_add && have_mov);) {
		const struct dcpi_insn *in = CFG_INSN(c, i);

		if (!squeeze(in->operands, o2, sizeof(o2)))
			continue;
		if (!have_add && !strncmp(in->mnemonic, "add", 3)) {
			size_t n = strlen(o2), xl = strlen(x);

			if (n > xl + 2 && !strcmp(o2 + n - xl, x) && o2[n - xl - 1] == '%' &&
			    o2[n - xl - 2] == ',' && reg_name(o2, b))
				have_add = 1;
		} else if (have_add && !have_mov && !strcmp(in->mnemonic, "movslq")) {
			snprintf(want_add, sizeof(want_add), "(%%%s,%%", b);
			if (!strncmp(o2, want_add, strlen(want_add)) && strstr(o2, ",4),%"))
				have_mov = 1;
		}
	}
	return have_add && have_mov && rip_lea(c, j, b, table);
}

int cfg_jump_table(const struct cfg_ctx *c, size_t j, uint64_t **targets, size_t *n)
{
	const struct dcpi_insn *in = CFG_INSN(c, j);
	char ops[sizeof(in->operands)];
	uint64_t table, *t;
	size_t count;
	int rel;

	*targets = NULL;
	*n = 0;
	if (!c->o.read || strcmp(c->arch_hint, "x86-64") || !squeeze(in->operands, ops, sizeof(ops)))
		return 0;
	if (absolute_table(ops, &table))
		rel = 0;
	else if (relative_table(c, j, ops, &table))
		rel = 1;
	else
		return 0;
	count = find_bound(c, j);
	if (count == 0)
		return 0;
	t = calloc(count, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		int32_t r32;
		uint64_t a64;

		if (rel ? c->o.read(table + 4 * i, &r32, 4, c->o.arg)
			: c->o.read(table + 8 * i, &a64, 8, c->o.arg))
			goto refuse;
		t[i] = rel ? table + (uint64_t)(int64_t)r32 : a64;
		if (cfg_insn_index(c, t[i]) == c->n)
			goto refuse;
	}
	*targets = t;
	*n = count;
	return 0;
refuse:
	free(t);
	return 0;
}
