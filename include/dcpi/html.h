/* The HTML writer of dcpi report: pages that carry their data as JSON and
 * draw it with one small script and style sheet of our own (report.js,
 * report.css, written beside the pages).  Nothing is fetched: no network,
 * no fonts, no framework; a page opened from disk shows everything.
 *
 * Escaping is done here and only here:
 *   - text and attribute values: dcpi_html_text() (& < > " ' as entities,
 *     control bytes as U+FFFD), so a name is always text, never markup;
 *   - JSON embedded in a page: dcpi_html_data() (< > & as \u003c ..., which
 *     JSON allows inside strings, the only place they can occur), so no
 *     name can close the script element that holds it;
 *   - a Graphviz SVG drawn inline: dcpi_html_svg() takes it from its <svg>
 *     element on, drops comments and the namespace declarations (HTML
 *     gives inline SVG its namespace), and refuses scripts, event handler
 *     attributes, foreign objects and links that leave the page.
 * The script renders every string with textContent.
 *
 * A page is built in a dcpi_buf (dcpi/buf.h); every function returns 0 or
 * -ENOMEM/-EFBIG from the buffer, dcpi_html_svg() also -EINVAL. */
#ifndef DCPI_HTML_H
#define DCPI_HTML_H

#include <stddef.h>

#include "dcpi/buf.h"

struct dcpi_html_page {
	const char *title;      /* <title> and the heading */
	const char *kind;       /* what the script draws: "index", "proc", "diff" */
	const char *root;       /* the way to report.css/report.js: "" or "../" */
};

/* The page's head, its navigation and the start of its body. */
int dcpi_html_begin(struct dcpi_buf *b, const struct dcpi_html_page *p);
/* s[0..n) as HTML text (n == (size_t)-1: up to its NUL). */
int dcpi_html_text(struct dcpi_buf *b, const char *s, size_t n);
/* A JSON document json[0..n) as the page's data named id, for the script
 * (<script type="application/json" id="ID">). */
int dcpi_html_data(struct dcpi_buf *b, const char *id, const char *json, size_t n);
/* Graphviz's SVG svg[0..n) inline in a <div id="ID">. */
int dcpi_html_svg(struct dcpi_buf *b, const char *id, const char *svg, size_t n);
/* The script and the end of the page. */
int dcpi_html_end(struct dcpi_buf *b, const struct dcpi_html_page *p);

/* report.js and report.css: the assets every page names, to be written
 * beside index.html. */
extern const char dcpi_html_js[], dcpi_html_css[];

#endif
