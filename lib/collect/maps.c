/* /proc/PID/maps line parser: see dcpi/maps.h.
 *
 * The kernel prints "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " and then,
 * for named mappings, pads with spaces and appends the name.  The parser is
 * strict about the fixed fields (a file that is not what the kernel prints
 * is not trusted for anything) and takes the rest of the line as the path,
 * which may itself contain spaces.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "dcpi/error.h"
#include "dcpi/maps.h"

#define QUOTE_MAX 160 /* how much of a bad line the error message quotes */

static int bad_line(const char *line, const char *why)
{
	return dcpi_error(EBADMSG, "maps line \"%.*s\": %s", QUOTE_MAX, line, why);
}

/* At most maxdigits hex digits, at least one; *pp advances past them. */
static int parse_hex(const char **pp, unsigned maxdigits, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	unsigned n = 0;

	for (;; p++, n++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (n == maxdigits)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	if (n == 0)
		return -1;
	*v = x;
	*pp = p;
	return 0;
}

static int parse_dec(const char **pp, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	*pp = p;
	return 0;
}

static int expect(const char **pp, char c)
{
	if (**pp != c)
		return -1;
	(*pp)++;
	return 0;
}

static int parse_perms(const char **pp, unsigned *prot)
{
	const char *p = *pp;

	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -1;
	*prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		(p[2] == 'x' ? PROT_EXEC : 0);
	*pp = p + 4;
	return 0;
}

static void cut_newline(char *line, size_t len)
{
	if (len > 0 && line[len - 1] == '\n')
		line[len - 1] = '\0';
}

static int parse_range(const char **pp, struct dcpi_maps_entry *e)
{
	if (parse_hex(pp, 16, &e->start) || expect(pp, '-') || parse_hex(pp, 16, &e->end))
		return -1;
	return 0;
}

static int parse_dev(const char **pp, struct dcpi_maps_entry *e)
{
	uint64_t maj, min;

	if (parse_hex(pp, 8, &maj) || expect(pp, ':') || parse_hex(pp, 8, &min))
		return -1;
	e->maj = (unsigned)maj;
	e->min = (unsigned)min;
	return 0;
}

int dcpi_maps_parse_line(char *line, struct dcpi_maps_entry *e)
{
	size_t len = strnlen(line, DCPI_MAPS_LINE_MAX + 1);
	const char *p = line;

	if (len > DCPI_MAPS_LINE_MAX)
		return bad_line(line, "line too long");
	cut_newline(line, len);
	memset(e, 0, sizeof(*e));
	if (parse_range(&p, e))
		return bad_line(line, "bad address range");
	if (e->start >= e->end)
		return bad_line(line, "start not below end");
	if (expect(&p, ' ') || parse_perms(&p, &e->prot))
		return bad_line(line, "bad permissions");
	if (expect(&p, ' ') || parse_hex(&p, 16, &e->pgoff))
		return bad_line(line, "bad offset");
	if (expect(&p, ' ') || parse_dev(&p, e))
		return bad_line(line, "bad device");
	if (expect(&p, ' ') || parse_dec(&p, &e->ino))
		return bad_line(line, "bad inode");
	if (*p != '\0' && *p != ' ')
		return bad_line(line, "junk after inode");
	while (*p == ' ')
		p++;
	if (strchr(p, '\n'))
		return bad_line(line, "embedded newline");
	e->path = p;
	return 0;
}
