/* Exact counts in the database: see dcpi/exact.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "internal.h"

#define MAX_ROWS ((size_t)1 << 26)

int dcpi_exact_add_insn(struct dcpi_exact *e, uint64_t vaddr, uint64_t count)
{
	int err = DCPI_GROW(e->insns, e->insns_cap, e->ninsns + 1, MAX_ROWS, "exact counts");

	if (!err)
		e->insns[e->ninsns++] = (struct dcpi_exact_insn){ vaddr, count };
	return err;
}

int dcpi_exact_add_jump(struct dcpi_exact *e, uint64_t from, uint64_t to, uint64_t count)
{
	int err = DCPI_GROW(e->jumps, e->jumps_cap, e->njumps + 1, MAX_ROWS, "exact jumps");

	if (!err)
		e->jumps[e->njumps++] = (struct dcpi_exact_jump){ from, to, count };
	return err;
}

static int insn_cmp(const void *pa, const void *pb)
{
	const struct dcpi_exact_insn *a = pa, *b = pb;

	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

static int jump_cmp(const void *pa, const void *pb)
{
	const struct dcpi_exact_jump *a = pa, *b = pb;

	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->to < b->to ? -1 : a->to > b->to;
}

void dcpi_exact_sort(struct dcpi_exact *e)
{
	size_t k = 0;

	if (e->ninsns) /* qsort's array may not be NULL, even for none */
		qsort(e->insns, e->ninsns, sizeof(*e->insns), insn_cmp);
	for (size_t i = 0; i < e->ninsns; i++)
		if (k && e->insns[k - 1].vaddr == e->insns[i].vaddr)
			e->insns[k - 1].count = dcpi_sat_add(e->insns[k - 1].count, e->insns[i].count);
		else
			e->insns[k++] = e->insns[i];
	e->ninsns = k;
	k = 0;
	if (e->njumps)
		qsort(e->jumps, e->njumps, sizeof(*e->jumps), jump_cmp);
	for (size_t i = 0; i < e->njumps; i++)
		if (k && !jump_cmp(&e->jumps[k - 1], &e->jumps[i]))
			e->jumps[k - 1].count = dcpi_sat_add(e->jumps[k - 1].count, e->jumps[i].count);
		else
			e->jumps[k++] = e->jumps[i];
	e->njumps = k;
}

static int file_name(char *out, size_t len, const char *db, const uint8_t *bid, size_t n)
{
	char hex[2 * DCPI_EXACT_MAX_BUILDID + 1];

	if (n == 0 || n > DCPI_EXACT_MAX_BUILDID)
		return dcpi_error(EINVAL, "exact counts need an image with a build-id");
	dcpi_hex(bid, n, hex);
	if ((size_t)snprintf(out, len, "%s/exact/%s", db, hex) >= len)
		return dcpi_error(ENAMETOOLONG, "%s: path too long", db);
	return 0;
}

int dcpi_exact_write(const char *db, const struct dcpi_exact *e)
{
	char path[4096], dir[4096];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	err = file_name(path, sizeof(path), db, e->build_id, e->build_id_len);
	if (err)
		return err;
	snprintf(dir, sizeof(dir), "%s/exact", db);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dcpi_error(errno, "%s: %s", dir, strerror(errno));
	f = open_memstream(&buf, &len);
	if (!f)
		return dcpi_error(ENOMEM, "out of memory");
	fprintf(f, "dcpi-exact 1\npath %s\nbuildid %s\nruns %" PRIu64 "\n", e->path ? e->path : "",
		strrchr(path, '/') + 1, e->runs ? e->runs : 1);
	for (size_t i = 0; i < e->ninsns; i++)
		fprintf(f, "i %" PRIx64 " %" PRIu64 "\n", e->insns[i].vaddr, e->insns[i].count);
	for (size_t i = 0; i < e->njumps; i++)
		fprintf(f, "j %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", e->jumps[i].from,
			e->jumps[i].to, e->jumps[i].count);
	if (fclose(f)) {
		free(buf);
		return dcpi_error(ENOMEM, "out of memory");
	}
	err = dcpi_file_write_atomic(path, buf, len, 0600);
	free(buf);
	return err;
}

/* ---- reading -------------------------------------------------------------------------- */

static int bad(const char *path, size_t line, const char *what)
{
	return dcpi_error(EBADMSG, "%s:%zu: %s", path, line, what);
}

/* The number at *p in base 16 or 10, digits only (sscanf would take a
 * sign and wrap "-1" to 2^64 - 1); *p moves past it.  0, or -1. */
static int get_num(const char **p, int base, uint64_t *v)
{
	const char *s = *p;
	char *end;

	if (!(base == 16 ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s)))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, base);
	*p = end;
	return errno ? -1 : 0;
}

/* The numbers of a record after its tag: n numbers, one space apart, the
 * last a count in decimal, the others hex addresses; -1 for anything else. */
static int get_record(const char *s, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		if (get_num(&s, i == n - 1 ? 10 : 16, &v[i]) || *s++ != (i == n - 1 ? '\0' : ' '))
			return -1;
	return 0;
}

static int parse_line(struct dcpi_exact *e, const char *path, size_t ln, char *s)
{
	uint64_t v[3];

	if (ln == 1)
		return strcmp(s, "dcpi-exact 1") ? bad(path, ln, "not a dcpi-exact 1 file") : 0;
	if (!strncmp(s, "path ", 5)) {
		free(e->path);
		e->path = strdup(s + 5);
		return e->path ? 0 : dcpi_error(ENOMEM, "out of memory");
	}
	if (!strncmp(s, "buildid ", 8))
		return 0;   /* the file's name is the key */
	if (!strncmp(s, "runs ", 5)) {
		if (get_record(s + 5, v, 1) || v[0] == 0)
			return bad(path, ln, "runs is not a count above 0");
		e->runs = v[0];
		return 0;
	}
	if (!strncmp(s, "i ", 2) || !strncmp(s, "j ", 2)) {
		int n = s[0] == 'i' ? 2 : 3;

		if (get_record(s + 2, v, n))
			return bad(path, ln, "not a count record (hex addresses, a decimal count)");
		if (v[n - 1] > DCPI_EXACT_COUNT_MAX)
			return dcpi_error(EBADMSG, "%s:%zu: count %" PRIu64 " is above 2^53 - 1",
					  path, ln, v[n - 1]);
		return n == 2 ? dcpi_exact_add_insn(e, v[0], v[1])
			      : dcpi_exact_add_jump(e, v[0], v[1], v[2]);
	}
	return bad(path, ln, "not a count record");
}

int dcpi_exact_merge(struct dcpi_exact *into, const struct dcpi_exact *from)
{
	int err = 0;

	for (size_t i = 0; i < from->ninsns && !err; i++)
		err = dcpi_exact_add_insn(into, from->insns[i].vaddr, from->insns[i].count);
	for (size_t i = 0; i < from->njumps && !err; i++)
		err = dcpi_exact_add_jump(into, from->jumps[i].from, from->jumps[i].to,
					  from->jumps[i].count);
	dcpi_exact_sort(into);
	if (!err)
		into->runs = (into->runs ? into->runs : 1) + (from->runs ? from->runs : 1);
	return err;
}

int dcpi_exact_read(const char *db, const uint8_t *build_id, size_t len, struct dcpi_exact *out)
{
	char path[4096];
	uint8_t *data = NULL;
	size_t n = 0, ln = 0;
	char *s, *nl;
	int err;

	memset(out, 0, sizeof(*out));
	err = file_name(path, sizeof(path), db, build_id, len);
	if (err)
		return err;
	err = dcpi_file_read(path, DCPI_EXACT_MAX_BYTES, &data, &n);
	if (err)
		return err;
	if (n == 0 || data[n - 1] != '\n' || memchr(data, '\0', n)) {
		free(data);
		return bad(path, 0, "empty, truncated or binary");
	}
	data[n - 1] = '\0';
	for (s = (char *)data; s && !err; s = nl) {
		nl = strchr(s, '\n');
		if (nl)
			*nl++ = '\0';
		err = parse_line(out, path, ++ln, s);
	}
	free(data);
	if (err) {
		dcpi_exact_free(out);
		return err;
	}
	memcpy(out->build_id, build_id, len);
	out->build_id_len = len;
	dcpi_exact_sort(out);
	return 0;
}

uint64_t dcpi_exact_count(const struct dcpi_exact *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->ninsns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->insns[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < e->ninsns && e->insns[lo].vaddr == vaddr ? e->insns[lo].count : 0;
}

void dcpi_exact_free(struct dcpi_exact *e)
{
	free(e->path);
	free(e->insns);
	free(e->jumps);
	memset(e, 0, sizeof(*e));
}
