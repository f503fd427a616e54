/* Source files: found (with -remap rules and -I directories) and read for
 * listings.  A file that cannot be found is said so by the caller; nothing
 * here guesses at a different file. */
#ifndef DCPI_SOURCE_H
#define DCPI_SOURCE_H

#include <stddef.h>
#include <sys/types.h>

#define DCPI_SOURCE_MAX_SIZE ((size_t)64 << 20)      /* source file bytes */


/* A prefix rewrite: a path starting with from (at a '/' boundary or the
 * whole path) has that prefix replaced by to. */
struct dcpi_remap {
	const char *from;
	const char *to;
};

/* Split "OLD=NEW" in place (arg is modified; r points into it).  -EINVAL
 * with a message when there is no '=' or OLD is empty. */
int dcpi_source_remap_parse(char *arg, struct dcpi_remap *r);

/* Where to look for sources; a NULL opts means "only the path itself". */
struct dcpi_source_opts {
	const char *const *dirs;     /* -I directories, searched in order */
	size_t ndirs;
	const struct dcpi_remap *remaps;  /* -remap rules, tried in order */
	size_t nremaps;
	/* The owner of the image (its DWARF names the files): when neither
	 * root (0, what a zeroed struct says), (uid_t)-1 nor the caller's
	 * euid, a file is read only when image_uid owns it or it is
	 * world-readable, so that a user's DWARF cannot make root's tools
	 * show files the user cannot read.  Other files found are refused
	 * (-EACCES when nothing else is found, with a message naming them). */
	uid_t image_uid;
};

/* image_uid for an image whose owner is not known (a copy the daemon made
 * in the database's image cache, the original gone): only world-readable
 * files are read. */
#define DCPI_UID_UNKNOWN ((uid_t)-2)

struct dcpi_source;

/* Find and read the source file DWARF names dwarf_path.  Tried in order:
 * the path rewritten by each matching remap; the path itself; then for
 * each dir: DIR/P for P = the path (relative paths) or each trailing part
 * of it, longest first, down to DIR/basename.  Only regular files are
 * read, at most DCPI_SOURCE_MAX_SIZE bytes (-EFBIG), and for another
 * user's image only the files o->image_uid may read.  -ENOENT when none
 * exists, with a message naming every place tried (cut with "..." when
 * very long). */
int dcpi_source_open(const char *dwarf_path, const struct dcpi_source_opts *o,
		     struct dcpi_source **out);

void dcpi_source_close(struct dcpi_source *src);

/* The file actually read. */
const char *dcpi_source_path(const struct dcpi_source *src);

/* Number of lines (a last line without '\n' counts). */
size_t dcpi_source_nlines(const struct dcpi_source *src);

/* Line lineno (1-based) without its "\n" or "\r\n", NUL-terminated, any
 * length; *len (may be NULL) gets its length (it may hold NULs).  NULL
 * when lineno is 0 or past the end.  Valid until dcpi_source_close(). */
const char *dcpi_source_line(const struct dcpi_source *src, size_t lineno, size_t *len);

#endif
