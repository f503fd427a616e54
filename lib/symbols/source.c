/* Finding and reading source files named by DWARF: see dcpi/srcline.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/source.h"
#include "dcpi/srcline.h"

#define TRIED_MAX 700        /* bytes of "tried ..." list kept for the message */
#define SUFFIX_MAX 32        /* trailing parts of a path tried per -I dir */

struct dcpi_source {
	char *path;
	char *data;              /* the file, '\n' (and a '\r' before it) -> '\0' */
	size_t size;
	uint32_t *off;           /* line i starts at off[i - 1]; off[nlines] = size + 1 */
	size_t nlines;
};

/* The search state: what was tried, the first error that was not "no
 * such file" (reported when nothing is found). */
struct search {
	uid_t uid;               /* dcpi_source_opts.image_uid when it restricts, else 0 */
	struct dcpi_buf tried;
	int cut;
	int first_err;
	char first_msg[256];
};

int dcpi_source_remap_parse(char *arg, struct dcpi_remap *r)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg)
		return dcpi_error(EINVAL, "bad remap \"%s\": want OLD=NEW", arg);
	*eq = '\0';
	r->from = arg;
	r->to = eq + 1;
	return 0;
}

void dcpi_source_close(struct dcpi_source *src)
{
	if (!src)
		return;
	free(src->path);
	free(src->data);
	free(src->off);
	free(src);
}

const char *dcpi_source_path(const struct dcpi_source *src)
{
	return src->path;
}

size_t dcpi_source_nlines(const struct dcpi_source *src)
{
	return src->nlines;
}

const char *dcpi_source_line(const struct dcpi_source *src, size_t lineno, size_t *len)
{
	size_t start, n;

	if (lineno == 0 || lineno > src->nlines)
		return NULL;
	start = src->off[lineno - 1];
	n = src->off[lineno] - 1 - start;
	if (n > 0 && src->data[start + n - 1] == '\0')
		n--;  /* the '\r' of a CRLF ending */
	if (len)
		*len = n;
	return src->data + start;
}

/* ---- reading ------------------------------------------------------------ */

static int read_all(int fd, const char *path, size_t size, char **data, size_t *got)
{
	size_t n = 0;
	char *p;

	/* One byte more than fstat said, to notice a file that grew. */
	p = malloc(size + 2);
	if (!p)
		return dcpi_error(ENOMEM, "%s: out of memory for %zu bytes", path, size);
	while (n < size + 1) {
		ssize_t r = read(fd, p + n, size + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(p);
			return dcpi_error(errno, "%s: %s", path, strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	p[n] = '\0';
	*data = p;
	*got = n;
	return 0;
}

static int split_lines(struct dcpi_source *src)
{
	size_t i, k = 0, n = 0;
	int at_start = 1;

	for (i = 0; i < src->size; i++)
		n += src->data[i] == '\n';
	if (src->size > 0 && src->data[src->size - 1] != '\n')
		n++;
	src->off = calloc(n + 1, sizeof(*src->off));
	if (!src->off)
		return dcpi_error(ENOMEM, "%s: out of memory for %zu lines", src->path, n);
	src->nlines = n;
	/* every byte: the last line's '\n' is cut too */
	for (i = 0; i < src->size; i++) {
		if (at_start && k < n)
			src->off[k++] = (uint32_t)i;
		at_start = src->data[i] == '\n';
		if (at_start) {
			src->data[i] = '\0';
			if (i > 0 && src->data[i - 1] == '\r')
				src->data[i - 1] = '\0';
		}
	}
	src->off[n] = (uint32_t)(src->size + 1);
	return 0;
}

static int load(const char *path, int fd, const struct stat *st, struct dcpi_source *src)
{
	int err;

	if ((uint64_t)st->st_size > DCPI_SOURCE_MAX_SIZE)
		return dcpi_error(EFBIG, "%s: source file larger than %zu MiB", path,
				  DCPI_SOURCE_MAX_SIZE >> 20);
	err = read_all(fd, path, (size_t)st->st_size, &src->data, &src->size);
	if (err)
		return err;
	if (src->size > DCPI_SOURCE_MAX_SIZE)
		return dcpi_error(EFBIG, "%s: source file larger than %zu MiB", path,
				  DCPI_SOURCE_MAX_SIZE >> 20);
	src->path = strdup(path);
	if (!src->path)
		return dcpi_error(ENOMEM, "%s: out of memory", path);
	return split_lines(src);
}

/* 1: read into *out; 0: not there (keep looking); <0: fatal. */
static int try_path(const char *path, struct search *se, struct dcpi_source **out)
{
	struct dcpi_source *src;
	struct stat st;
	int fd, err;

	if (se->tried.len < TRIED_MAX)
		dcpi_buf_printf(&se->tried, "%s%s", se->tried.len ? ", " : "", path);
	else
		se->cut = 1;
	fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0) { /* not there, or not a regular file: keep looking */
		if (fd != -ENOENT && fd != -ENOTDIR && fd != -EINVAL && fd != -EISDIR &&
		    !se->first_err) {
			se->first_err = -fd;
			snprintf(se->first_msg, sizeof(se->first_msg), "%s", dcpi_errmsg());
		}
		return 0;
	}
	if (se->uid && st.st_uid != se->uid && !(st.st_mode & S_IROTH)) {
		close(fd);
		if (!se->first_err && se->uid == DCPI_UID_UNKNOWN) {
			se->first_err = EACCES;
			snprintf(se->first_msg, sizeof(se->first_msg),
				 "source not read: %s is not world-readable, and the image (a copy "
				 "in the image cache) has no known owner", path);
		} else if (!se->first_err) {
			se->first_err = EACCES;
			snprintf(se->first_msg, sizeof(se->first_msg),
				 "source not read: %s is not readable by the image's owner uid %lu",
				 path, (unsigned long)se->uid);
		}
		return 0;
	}
	src = calloc(1, sizeof(*src));
	err = src ? load(path, fd, &st, src) : dcpi_error(ENOMEM, "%s: out of memory", path);
	close(fd);
	if (err) {
		dcpi_source_close(src);
		return err;
	}
	*out = src;
	return 1;
}

/* ---- searching ---------------------------------------------------------- */

static int try_join(const char *a, const char *sep, const char *b, struct search *se,
		    struct dcpi_source **out)
{
	char p[PATH_MAX];
	int n = snprintf(p, sizeof(p), "%s%s%s", a, sep, b);

	if (n < 0 || (size_t)n >= sizeof(p))
		return 0;
	return try_path(p, se, out);
}

static int try_remaps(const char *path, const struct dcpi_source_opts *o, struct search *se,
		      struct dcpi_source **out)
{
	size_t i;
	int r;

	for (i = 0; i < o->nremaps; i++) {
		const char *from = o->remaps[i].from;
		size_t len = strlen(from);

		if (!len || strncmp(path, from, len) ||
		    !(path[len] == '\0' || path[len] == '/' || from[len - 1] == '/'))
			continue;
		r = try_join(o->remaps[i].to, "", path + len, se, out);
		if (r)
			return r;
	}
	return 0;
}

/* DIR/P for each trailing part P of path, longest first. */
static int try_dir(const char *dir, const char *path, struct search *se,
		   struct dcpi_source **out)
{
	const char *p = path;
	int r, k;

	for (k = 0; k < SUFFIX_MAX && *p; k++) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		r = try_join(dir, "/", p, se, out);
		if (r)
			return r;
		p = strchr(p, '/');
		if (!p)
			break;
	}
	if (k == SUFFIX_MAX && strrchr(path, '/'))   /* a very deep path: still the basename */
		return try_join(dir, "/", strrchr(path, '/') + 1, se, out);
	return 0;
}

static int search(const char *path, const struct dcpi_source_opts *o, struct search *se,
		  struct dcpi_source **out)
{
	size_t i;
	int r;

	if (o) {
		r = try_remaps(path, o, se, out);
		if (r)
			return r;
	}
	r = try_path(path, se, out);
	for (i = 0; !r && o && i < o->ndirs; i++)
		r = try_dir(o->dirs[i], path, se, out);
	return r;
}

int dcpi_source_open(const char *dwarf_path, const struct dcpi_source_opts *o,
		     struct dcpi_source **out)
{
	struct search se = { 0, DCPI_BUF_INIT, 0, 0, "" };
	int r;

	*out = NULL;
	if (o && o->image_uid != 0 && o->image_uid != (uid_t)-1 && o->image_uid != geteuid())
		se.uid = o->image_uid;
	if (!dwarf_path || !*dwarf_path)
		return dcpi_error(EINVAL, "no source file name");
	r = search(dwarf_path, o, &se, out);
	if (r == 0)
		r = dcpi_error(se.first_err ? se.first_err : ENOENT,
			       "%s: source not found; tried %.*s%s%s%s%s", dwarf_path,
			       (int)se.tried.len, se.tried.data ? (const char *)se.tried.data : "",
			       se.cut ? ", ..." : "", se.first_err ? " (" : "", se.first_msg,
			       se.first_err ? ")" : "");
	dcpi_buf_release(&se.tried);
	return r < 0 ? r : 0;
}
