/* Several hosts, one database: the hosts file and the names a host writes
 * under.  See "Hosts and platforms" in dcpi/db.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"

#define HOSTS_MAX (256u << 10)   /* a hosts file of a few thousand lines */

/* A host or platform name as a directory name: no '/', no leading '.',
 * no space or control byte. */
static int good_name(const char *s, size_t n)
{
	if (n == 0 || n >= DCPI_HOST_MAX || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return 0;
	return 1;
}

/* The line (from 1) of byte off of text. */
static unsigned line_of(const char *text, size_t off)
{
	unsigned n = 1;

	for (size_t i = 0; i < off; i++)
		n += text[i] == '\n';
	return n;
}

int dcpi_db_platform(const char *root, const char *host, char *out, size_t len)
{
	char path[4200], *text, *line, *next;
	uint8_t *data = NULL;
	size_t size = 0;
	unsigned lineno = 0;
	const char *nul;
	int err;

	if (strlen(host) >= len)
		return dcpi_error(ENAMETOOLONG, "host name too long");
	snprintf(out, len, "%s", host);
	snprintf(path, sizeof(path), "%s/hosts", root);
	err = dcpi_file_read(path, HOSTS_MAX, &data, &size);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	/* a C string would end there, and the lines after it go unread */
	if ((nul = memchr(data, '\0', size))) {
		err = dcpi_error(EBADMSG, "%s:%u: a NUL byte: not a text file", path,
				 line_of((const char *)data, (size_t)(nul - (const char *)data)));
		free(data);
		return err;
	}
	text = calloc(1, size + 1);
	if (!text) {
		free(data);
		return dcpi_error(ENOMEM, "out of memory");
	}
	memcpy(text, data, size);
	free(data);
	/* line by line, empty ones counted, so messages name the right line */
	for (line = text; line && *line; line = next) {
		char *h, *p, *rest, *s2 = NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		h = strtok_r(line, " \t", &s2);
		if (!h || h[0] == '#')
			continue;
		p = strtok_r(NULL, " \t", &s2);
		rest = strtok_r(NULL, " \t", &s2);
		if (!p || (rest && rest[0] != '#') || !good_name(h, strlen(h)) ||
		    !good_name(p, strlen(p))) {
			err = dcpi_error(EBADMSG, "%s:%u: want 'HOST PLATFORM' (names without '/', "
					 "spaces or a leading '.')", path, lineno);
			break;
		}
		if (!strcmp(h, host)) {
			if (strlen(p) >= len)
				err = dcpi_error(ENAMETOOLONG, "%s:%u: platform name too long", path,
						 lineno);
			else
				snprintf(out, len, "%s", p);
			break;
		}
	}
	free(text);
	if (err)
		snprintf(out, len, "%s", host);
	return err;
}

int dcpi_db_pooled(const char *platdir, const char *host)
{
	const char *base = strrchr(platdir, '/');

	return strcmp(base ? base + 1 : platdir, host) != 0;
}

int dcpi_db_epoch_file(char *out, size_t len, const char *platdir, const char *host,
		       const char *suffix)
{
	int n = host && dcpi_db_pooled(platdir, host)
		? snprintf(out, len, "%s/epoch@%s.%s", platdir, host, suffix)
		: snprintf(out, len, "%s/epoch.%s", platdir, suffix);

	return n < 0 || (size_t)n >= len ? dcpi_error(ENAMETOOLONG, "%s: path too long", platdir)
					 : 0;
}

int dcpi_db_stats_path(char *out, size_t len, const char *platdir, const char *host)
{
	return dcpi_db_epoch_file(out, len, platdir, host, "stats");
}
