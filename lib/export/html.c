/* The HTML writer: see dcpi/html.h. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "dcpi/html.h"

int dcpi_html_text(struct dcpi_buf *b, const char *s, size_t n)
{
	size_t from = 0;
	int err = 0;

	if (n == (size_t)-1)
		n = strlen(s);
	for (size_t i = 0; i < n && !err; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" :
				c == '"' ? "&quot;" : c == '\'' ? "&#39;" :
				(c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? "\xef\xbf\xbd" :
				NULL;

		if (!e)
			continue;
		err = dcpi_buf_put(b, s + from, i - from);
		err = err ? err : dcpi_buf_put(b, e, strlen(e));
		from = i + 1;
	}
	return err ? err : dcpi_buf_put(b, s + from, n - from);
}

int dcpi_html_begin(struct dcpi_buf *b, const struct dcpi_html_page *p)
{
	int err;

	err = dcpi_buf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			      "<meta name=\"viewport\" content=\"width=device-width\">\n"
			      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
			      "'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
			      "img-src 'self' data:\">\n<title>");
	err = err ? err : dcpi_html_text(b, p->title, (size_t)-1);
	err = err ? err : dcpi_buf_printf(b, "</title>\n<link rel=\"stylesheet\" href=\"");
	err = err ? err : dcpi_html_text(b, p->root, (size_t)-1);
	err = err ? err : dcpi_buf_printf(b, "report.css\">\n</head>\n<body data-page=\"");
	err = err ? err : dcpi_html_text(b, p->kind, (size_t)-1);
	err = err ? err : dcpi_buf_printf(b, "\">\n<header><nav><a href=\"");
	err = err ? err : dcpi_html_text(b, p->root, (size_t)-1);
	err = err ? err : dcpi_buf_printf(b, "index.html\">dcpi report</a></nav>\n<h1>");
	err = err ? err : dcpi_html_text(b, p->title, (size_t)-1);
	err = err ? err : dcpi_buf_printf(b, "</h1></header>\n<main id=\"main\"><noscript>This "
					  "report is drawn by its script (report.js, beside "
					  "it); the numbers are in the page as JSON."
					  "</noscript></main>\n");
	return err;
}

/* The id of an element: letters, digits, '-' and '_' only (ours). */
static int put_id(struct dcpi_buf *b, const char *id)
{
	for (const char *s = id; *s; s++)
		if (!(((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_'))
			return -EINVAL;
	return dcpi_buf_put(b, id, strlen(id));
}

int dcpi_html_data(struct dcpi_buf *b, const char *id, const char *json, size_t n)
{
	int err = dcpi_buf_printf(b, "<script type=\"application/json\" id=\"");
	size_t from = 0;

	err = err ? err : put_id(b, id);
	err = err ? err : dcpi_buf_printf(b, "\">");
	for (size_t i = 0; i < n && !err; i++) {
		const char *e = json[i] == '<' ? "\\u003c" : json[i] == '>' ? "\\u003e" :
				json[i] == '&' ? "\\u0026" : NULL;

		if (!e)
			continue;
		err = dcpi_buf_put(b, json + from, i - from);
		err = err ? err : dcpi_buf_put(b, e, 6);
		from = i + 1;
	}
	err = err ? err : dcpi_buf_put(b, json + from, n - from);
	return err ? err : dcpi_buf_printf(b, "</script>\n");
}

/* Whether s[0..n) holds word, case ignored. */
static int has_word(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);

	for (size_t i = 0; i + w <= n; i++)
		if ((s[i] | 32) == (word[0] | 32) && !strncasecmp(s + i, word, w))
			return 1;
	return 0;
}

/* Whether s[0..n) has an attribute whose name starts "on" (an event
 * handler): " on" then letters then '='. */
static int has_handler(const char *s, size_t n)
{
	for (size_t i = 0; i + 3 < n; i++) {
		size_t j = i + 3;

		if (!strchr(" \t\n\r", s[i]) || (s[i + 1] | 32) != 'o' || (s[i + 2] | 32) != 'n')
			continue;
		while (j < n && ((s[j] | 32) >= 'a' && (s[j] | 32) <= 'z'))
			j++;
		if (j < n && s[j] == '=' && j > i + 3)
			return 1;
	}
	return 0;
}

/* Whether an href in s[0..n) goes anywhere but an anchor of the page. */
static int has_outside_link(const char *s, size_t n)
{
	for (size_t i = 0; i + 6 <= n; i++)
		if (!strncasecmp(s + i, "href=", 5) && (i + 6 >= n || s[i + 6] != '#'))
			return 1;
	return 0;
}

/* Whether the SVG as written, s[0..n), holds what a page must not run or
 * follow.  Checked on what was written, not on what came in: dropping a
 * comment or a namespace declaration joins what stood either side of it,
 * so "<scr xmlns=\"a\"ipt" would come out as "<script". */
static int svg_unsafe(const char *s, size_t n)
{
	static const char *const words[] = { "<script", "<foreign", "javascript:", "<!entity",
					     "<!--" };

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (has_word(s, n, words[k]))
			return 1;
	return has_handler(s, n) || has_outside_link(s, n);
}

int dcpi_html_svg(struct dcpi_buf *b, const char *id, const char *svg, size_t n)
{
	static const char *const xmlns[] = { " xmlns=\"", " xmlns:xlink=\"" };
	const char *end = svg + n, *p;
	size_t start = b->len, body;
	int err;

	for (p = svg; p + 4 <= end && strncmp(p, "<svg", 4); p++)
		;
	if (p + 4 > end)
		return -EINVAL;
	err = dcpi_buf_printf(b, "<div class=\"cfg\" id=\"");
	err = err ? err : put_id(b, id);
	err = err ? err : dcpi_buf_printf(b, "\">\n");
	body = b->len;
	while (p < end && !err) {
		const char *skip = NULL, *run = p + 1;
		size_t k;

		if (*p == '<' && end - p >= 4 && !strncmp(p, "<!--", 4)) { /* a comment, to its end */
			const char *c = p + 4;

			while (c + 3 <= end && strncmp(c, "-->", 3))
				c++;
			if (c + 3 > end)
				err = -EINVAL;
			p = c + 3;
			continue;
		}
		for (k = 0; k < 2 && !skip && *p == ' '; k++)
			if ((size_t)(end - p) > strlen(xmlns[k]) &&
			    !strncmp(p, xmlns[k], strlen(xmlns[k])))
				skip = memchr(p + strlen(xmlns[k]), '"',
					      end - p - strlen(xmlns[k]));
		if (skip) {
			p = skip + 1;
			continue;
		}
		while (run < end && *run != '<' && *run != ' ') /* up to the next tag or attribute */
			run++;
		err = dcpi_buf_put(b, p, run - p);
		p = run;
	}
	if (!err && svg_unsafe((const char *)b->data + body, b->len - body))
		err = -EINVAL;
	err = err ? err : dcpi_buf_printf(b, "</div>\n");
	if (err) /* nothing of a refused or unfinished SVG stays in the page */
		b->len = start;
	return err;
}

int dcpi_html_end(struct dcpi_buf *b, const struct dcpi_html_page *p)
{
	int err = dcpi_buf_printf(b, "<script src=\"");

	err = err ? err : dcpi_html_text(b, p->root, (size_t)-1);
	return err ? err : dcpi_buf_printf(b, "report.js\"></script>\n</body>\n</html>\n");
}
