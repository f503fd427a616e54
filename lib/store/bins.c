/* Latency bins files: see dcpi/bins.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/bins.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "internal.h"

static int name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '+' || c == '-';
}

/* One bin's rules against the bins before it: NULL, or what is wrong. */
static const char *check(const struct dcpi_bins *b, size_t n, const struct dcpi_bin *x)
{
	size_t len = strlen(x->name);

	if (x->min > x->max)
		return "MIN above MAX";
	if (x->rep < x->min || x->rep > x->max)
		return "REP outside [MIN, MAX]";
	if (!len || len > DCPI_BIN_NAME_MAX)
		return "a NAME of 1 to 31 characters wanted";
	for (size_t i = 0; i < len; i++)
		if (!name_char((unsigned char)x->name[i]))
			return "a NAME of letters, digits and _.+- wanted";
	if (n && x->min <= b->v[n - 1].max)
		return "a range not above the one before it";
	for (size_t i = 0; i < n; i++)
		if (!strcmp(b->v[i].name, x->name))
			return "a NAME given twice";
	return NULL;
}

static int bad(struct dcpi_bins *b, unsigned line, const char *what)
{
	b->n = 0;
	return dcpi_error(EBADMSG, "line %u: %s", line, what);
}

int dcpi_bins_parse(const char *text, size_t len, struct dcpi_bins *b)
{
	unsigned line = 0;
	size_t at = 0;

	memset(b, 0, sizeof(*b));
	while (at < len) {
		char buf[256], *tok[5], *save = NULL, *t, *hash;
		size_t end = at, n = 0;
		struct dcpi_bin x;
		const char *why;

		while (end < len && text[end] != '\n')
			end++;
		line++;
		if (end - at >= sizeof(buf))
			return bad(b, line, "longer than 255 bytes");
		memcpy(buf, text + at, end - at);
		buf[end - at] = 0;
		if (memchr(buf, 0, end - at))
			return bad(b, line, "a NUL byte");
		at = end + 1;
		if ((hash = strchr(buf, '#')))
			*hash = 0;
		for (t = strtok_r(buf, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
			if (n == 5)
				break;
			tok[n++] = t;
		}
		if (n == 0)
			continue;
		if (n != 4)
			return bad(b, line, "MIN MAX REP NAME wanted");
		if (dcpi_dec_u64(tok[0], &x.min) || dcpi_dec_u64(tok[1], &x.max) ||
		    dcpi_dec_u64(tok[2], &x.rep))
			return bad(b, line, "MIN, MAX and REP are decimal cycles");
		if (strlen(tok[3]) > DCPI_BIN_NAME_MAX)
			return bad(b, line, "a NAME of 1 to 31 characters wanted");
		snprintf(x.name, sizeof(x.name), "%s", tok[3]);
		if ((why = check(b, b->n, &x)))
			return bad(b, line, why);
		if (b->n == DCPI_BINS_MAX)
			return bad(b, line, "more than 32 bins");
		b->v[b->n++] = x;
	}
	if (!b->n)
		return dcpi_error(EBADMSG, "no bins");
	return 0;
}

int dcpi_bins_read(const char *path, struct dcpi_bins *b)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int err = dcpi_file_read(path, DCPI_BINS_FILE_MAX, &data, &len);

	memset(b, 0, sizeof(*b));
	if (err)
		return err;
	err = dcpi_bins_parse((const char *)data, len, b);
	free(data);
	if (err == -EBADMSG)
		return dcpi_error(EBADMSG, "%s: %s", path, dcpi_errmsg());
	return err;
}

int dcpi_bins_format(const struct dcpi_bins *b, struct dcpi_buf *out)
{
	int err;

	if (!b->n || b->n > DCPI_BINS_MAX)
		return dcpi_error(EINVAL, "no bins, or more than 32");
	for (size_t i = 0; i < b->n; i++) {
		const char *why = check(b, i, &b->v[i]);

		if (why || strlen(b->v[i].name) > DCPI_BIN_NAME_MAX)
			return dcpi_error(EINVAL, "bin %zu: %s", i + 1, why ? why : "a NAME too long");
	}
	err = dcpi_buf_printf(out, "# dcpi latency bins: MIN MAX REP NAME, in time-stamp counter "
			      "cycles (dcpi-bins(1))\n");
	for (size_t i = 0; i < b->n && !err; i++)
		err = dcpi_buf_printf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", b->v[i].min,
				      b->v[i].max, b->v[i].rep, b->v[i].name);
	return err;
}

void dcpi_bins_default(struct dcpi_bins *b)
{
	memset(b, 0, sizeof(*b));
	b->v[0] = (struct dcpi_bin){ 0, 3, 2, "c0-3" };
	for (unsigned k = 2; k < 10; k++) {
		struct dcpi_bin *x = &b->v[k - 1];

		x->min = 1ull << k;
		x->max = (2ull << k) - 1;
		x->rep = 3ull << (k - 1);
		snprintf(x->name, sizeof(x->name), "c%llu-%llu", (unsigned long long)x->min,
			 (unsigned long long)x->max);
	}
	b->v[9] = (struct dcpi_bin){ 1024, UINT64_MAX, 1536, "c1024+" };
	b->n = 10;
}

int dcpi_bins_find(const struct dcpi_bins *b, uint64_t cycles)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) { /* the first bin whose MAX is at least cycles */
		size_t m = lo + (hi - lo) / 2;

		if (b->v[m].max < cycles)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < b->n && b->v[lo].min <= cycles ? (int)lo : -1;
}
