/* One JSON writer for every command (bpftool's json_writer is the model):
 * strings are escaped in one place, separators and nesting are the
 * writer's business, and the caller says only where a line should break.
 *
 *   struct dcpi_json *j = dcpi_json_new(stdout);
 *   dcpi_json_obj_begin(j);
 *   dcpi_json_key_str(j, "database", db);
 *   dcpi_json_break(j);                 (next member on a new line)
 *   dcpi_json_key(j, "rows"); dcpi_json_arr_begin(j); ... dcpi_json_arr_end(j);
 *   dcpi_json_obj_end(j);
 *   dcpi_json_free(j);                  (ends the document with a newline)
 *
 * Layout: members and elements are separated by ", "; after
 * dcpi_json_break() the next separator (or the closing bracket) starts a
 * new line indented one space per open bracket.  Strings are UTF-8 passed
 * through, with '"', '\\' and control characters escaped (\uXXXX) and each
 * byte that begins no well-formed UTF-8 sequence written as \ufffd (a
 * path's bytes need not be UTF-8; a strict parser refuses them); numbers
 * that are not finite are written as null, which JSON can carry.
 *
 * Errors: the writer writes to a stdio stream and keeps no state about
 * failures: the caller checks ferror() on it at the end, as for printf.
 * Bounds: nesting deeper than DCPI_JSON_MAX_DEPTH is a programming error:
 * brackets past it are written but not indented or closed by
 * dcpi_json_free(), which closes every bracket below it. */
#ifndef DCPI_JSON_H
#define DCPI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DCPI_JSON_MAX_DEPTH 32

struct dcpi_json;

/* A writer on f (not closed by dcpi_json_free).  NULL on ENOMEM. */
struct dcpi_json *dcpi_json_new(FILE *f);
/* End the document (a newline after the top-level value) and free. */
void dcpi_json_free(struct dcpi_json *j);

void dcpi_json_obj_begin(struct dcpi_json *j);
void dcpi_json_obj_end(struct dcpi_json *j);
void dcpi_json_arr_begin(struct dcpi_json *j);
void dcpi_json_arr_end(struct dcpi_json *j);
/* Start a new line before the next member, element or closing bracket. */
void dcpi_json_break(struct dcpi_json *j);

/* An object member's name; its value comes next. */
void dcpi_json_key(struct dcpi_json *j, const char *name);

/* Values. */
void dcpi_json_str(struct dcpi_json *j, const char *s);     /* NULL: null */
void dcpi_json_strf(struct dcpi_json *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dcpi_json_u64(struct dcpi_json *j, uint64_t v);
void dcpi_json_i64(struct dcpi_json *j, int64_t v);
void dcpi_json_fixed(struct dcpi_json *j, double v, int decimals);  /* "%.*f" */
/* From now on in this process, dcpi_json_fixed writes every value to the
 * 17 significant digits that give back the same double ("%.17g"), not to
 * its decimals: for a reader that rounds the value itself and must get the
 * digits the text tools print (dcpi report's pages), where rounding twice
 * (12.4951 to 12.50, then to 12) would differ from rounding once (12). */
void dcpi_json_exact_numbers(void);
void dcpi_json_bool(struct dcpi_json *j, int v);
void dcpi_json_null(struct dcpi_json *j);

/* Members: key and value in one call. */
void dcpi_json_key_str(struct dcpi_json *j, const char *name, const char *s);
void dcpi_json_key_u64(struct dcpi_json *j, const char *name, uint64_t v);
void dcpi_json_key_bool(struct dcpi_json *j, const char *name, int v);
/* "name": v with decimals digits, or null when !known (a ratio without a
 * base, a length no statistics gave) */
void dcpi_json_key_fixed(struct dcpi_json *j, const char *name, int known, double v,
			 int decimals);
/* "name": [the n strings of v] */
void dcpi_json_key_strs(struct dcpi_json *j, const char *name, const char *const *v, size_t n);

#endif
