/* libFuzzer target for the HTML writer's input filters (dcpi/html.h): the
 * input is taken as Graphviz SVG (dcpi_html_svg), as text
 * (dcpi_html_text) and as JSON to embed (dcpi_html_data).  Whatever it is,
 * what they write must hold no markup the input chose: the text no '<',
 * '>', '&' but its entities' and no control byte; the JSON element no '<'
 * but its own tags; an accepted SVG no script, handler or outside link. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dcpi/buf.h"
#include "dcpi/html.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has(const struct dcpi_buf *b, size_t from, size_t to, const char *word)
{
	size_t w = strlen(word);

	for (size_t i = from; i + w <= to; i++)
		if (!strncasecmp((const char *)b->data + i, word, w))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	const char *s = (const char *)data;
	size_t open_len = strlen("<script type=\"application/json\" id=\"d\">");

	if (dcpi_html_text(&b, s, size) == 0)
		for (size_t i = 0; i < b.len; i++) {
			uint8_t c = b.data[i];

			if (c == '<' || c == '>' || c == '"' || c == '\'' ||
			    (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
				abort();
			if (c == '&' && b.len - i < 4)
				abort();
		}
	dcpi_buf_release(&b);
	if (dcpi_html_data(&b, "d", s, size) == 0) {
		if (b.len < open_len + 10 || memcmp(b.data + b.len - 10, "</script>\n", 10))
			abort();
		for (size_t i = open_len; i < b.len - 10; i++)
			if (b.data[i] == '<' || b.data[i] == '>' || b.data[i] == '&')
				abort();
	}
	dcpi_buf_release(&b);
	if (dcpi_html_svg(&b, "cfg", s, size) == 0) {
		if (has(&b, 0, b.len, "<script") || has(&b, 0, b.len, "javascript:") ||
		    has(&b, 0, b.len, "<foreign") || has(&b, 0, b.len, "<!--"))
			abort();
	}
	dcpi_buf_release(&b);
	return 0;
}
