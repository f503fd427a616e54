/* The JSON writer: see dcpi/json.h. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "dcpi/json.h"
#include "dcpi/utf8.h"

struct dcpi_json {
	FILE *f;
	int depth;              /* open brackets */
	int first;              /* nothing yet inside the innermost bracket */
	int after_key;          /* a name was written: the value follows ": " */
	int brk;                /* dcpi_json_break() is pending */
	char open[DCPI_JSON_MAX_DEPTH];   /* the closer of each open bracket */
};

struct dcpi_json *dcpi_json_new(FILE *f)
{
	struct dcpi_json *j = calloc(1, sizeof(*j));

	if (j) {
		j->f = f;
		j->first = 1;
	}
	return j;
}

static void close_bracket(struct dcpi_json *j, char c);

void dcpi_json_free(struct dcpi_json *j)
{
	if (!j)
		return;
	while (j->depth > 0) /* a caller's bug still leaves valid JSON */
		close_bracket(j, j->open[j->depth - 1]);
	fputc('\n', j->f);
	free(j);
}

static void newline(struct dcpi_json *j, int depth)
{
	fputc('\n', j->f);
	for (int i = 0; i < depth; i++)
		fputc(' ', j->f);
}

/* What goes before a member or element: a separator, a pending break. */
static void before_item(struct dcpi_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (!j->first)
		fputc(',', j->f);
	if (j->brk)
		newline(j, j->depth);
	else if (!j->first)
		fputc(' ', j->f);
	j->brk = 0;
	j->first = 0;
}

void dcpi_json_break(struct dcpi_json *j)
{
	j->brk = 1;
}

static void open_bracket(struct dcpi_json *j, char c, char closer)
{
	before_item(j);
	fputc(c, j->f);
	if (j->depth < DCPI_JSON_MAX_DEPTH)
		j->open[j->depth++] = closer;
	j->first = 1;
}

static void close_bracket(struct dcpi_json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	if (j->brk)
		newline(j, j->depth);
	j->brk = 0;
	j->first = 0;
	j->after_key = 0;
	fputc(c, j->f);
}

void dcpi_json_obj_begin(struct dcpi_json *j)
{
	open_bracket(j, '{', '}');
}

void dcpi_json_obj_end(struct dcpi_json *j)
{
	close_bracket(j, '}');
}

void dcpi_json_arr_begin(struct dcpi_json *j)
{
	open_bracket(j, '[', ']');
}

void dcpi_json_arr_end(struct dcpi_json *j)
{
	close_bracket(j, ']');
}

/* A JSON string: '"', '\\' and control characters escaped; a byte that
 * starts no well-formed UTF-8 sequence (a path's, say: Linux names are
 * bytes) becomes U+FFFD, one for each such byte, as strict parsers
 * refuse the document otherwise. */
static void put_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = 0;

		/* a run of bytes written as they are: printable ASCII and
		   well-formed sequences past it */
		for (size_t k; s[n] >= 0x20 && s[n] != '"' && s[n] != '\\' &&
			       (k = dcpi_utf8_len(s + n)); n += k)
			;
		if (n)
			fwrite(s, 1, n, f), s += n;
		else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s++);
		else if (*s < 0x20)
			fprintf(f, "\\u%04x", *s++);
		else
			fputs("\\ufffd", f), s++;
	}
	fputc('"', f);
}

void dcpi_json_key(struct dcpi_json *j, const char *name)
{
	before_item(j);
	put_string(j->f, name);
	fputs(": ", j->f);
	j->after_key = 1;
}

void dcpi_json_str(struct dcpi_json *j, const char *s)
{
	if (!s) {
		dcpi_json_null(j);
		return;
	}
	before_item(j);
	put_string(j->f, s);
}

void dcpi_json_strf(struct dcpi_json *j, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	dcpi_json_str(j, n < 0 ? NULL : s); /* out of memory: null, still valid */
	if (n >= 0)
		free(s);
}

void dcpi_json_u64(struct dcpi_json *j, uint64_t v)
{
	before_item(j);
	fprintf(j->f, "%" PRIu64, v);
}

void dcpi_json_i64(struct dcpi_json *j, int64_t v)
{
	before_item(j);
	fprintf(j->f, "%" PRId64, v);
}

static int exact_numbers;

void dcpi_json_exact_numbers(void)
{
	exact_numbers = 1;
}

void dcpi_json_fixed(struct dcpi_json *j, double v, int decimals)
{
	if (!isfinite(v)) {
		dcpi_json_null(j);
		return;
	}
	before_item(j);
	if (exact_numbers)
		fprintf(j->f, "%.17g", v == 0 ? 0.0 : v); /* no "-0" */
	else
		fprintf(j->f, "%.*f", decimals, v);
}

void dcpi_json_bool(struct dcpi_json *j, int v)
{
	before_item(j);
	fputs(v ? "true" : "false", j->f);
}

void dcpi_json_null(struct dcpi_json *j)
{
	before_item(j);
	fputs("null", j->f);
}

void dcpi_json_key_str(struct dcpi_json *j, const char *name, const char *s)
{
	dcpi_json_key(j, name);
	dcpi_json_str(j, s);
}

void dcpi_json_key_u64(struct dcpi_json *j, const char *name, uint64_t v)
{
	dcpi_json_key(j, name);
	dcpi_json_u64(j, v);
}

void dcpi_json_key_fixed(struct dcpi_json *j, const char *name, int known, double v,
			 int decimals)
{
	dcpi_json_key(j, name);
	if (known)
		dcpi_json_fixed(j, v, decimals);
	else
		dcpi_json_null(j);
}

void dcpi_json_key_bool(struct dcpi_json *j, const char *name, int v)
{
	dcpi_json_key(j, name);
	dcpi_json_bool(j, v);
}

void dcpi_json_key_strs(struct dcpi_json *j, const char *name, const char *const *v, size_t n)
{
	dcpi_json_key(j, name);
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		dcpi_json_str(j, v[i]);
	dcpi_json_arr_end(j);
}
