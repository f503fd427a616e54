/* Finding the files an image's symbols are read from: the profiled image
 * itself or a copy with its build-id, and its separate debug file.  The
 * search order is documented at dcpi_symtab_open() in dcpi/symtab.h. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <zlib.h>

#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/source.h"
#include "symtab_int.h"

#define SYS_DEBUG_DIR "/usr/lib/debug"
#define MAX_DEBUG_DIRS 64 /* entries of a debug path honoured */

/* What a candidate must prove to be the file we look for. */
struct want {
	const uint8_t *id;     /* build-id it must carry (NULL: none asked) */
	size_t idlen;
	int check_crc;         /* the .gnu_debuglink CRC must match */
	uint32_t crc;
};

/* The .build-id directory layout of an id: "xx/yyyy..."; out holds
 * 2 * len + 2 bytes. */
void dcpi_debuginfo_id_path(const uint8_t *id, size_t len, char *out)
{
	if (len == 0) {
		out[0] = '\0';
		return;
	}
	dcpi_hex(id, len, out + 1);
	out[0] = out[1];
	out[1] = out[2];
	out[2] = '/';
}

/* snprintf into a PATH_MAX buffer; a path that does not fit is no match. */
static int mkpath(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mkpath(char *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, PATH_MAX, fmt, ap);
	va_end(ap);
	return n >= 0 && n < PATH_MAX ? 0 : -ENAMETOOLONG;
}

static int file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t n;
	off_t off = 0;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*crc = (uint32_t)c;
	return 0;
}

/* Open path if it is what w asks for.  Failures are not errors here (the
 * search goes on), so the thread's message is left alone. */
static int try_open(const char *path, const struct want *w, struct symelf *f)
{
	char saved[1024];
	uint32_t crc;
	int err;

	if (access(path, R_OK))
		return -ENOENT;
	snprintf(saved, sizeof(saved), "%s", dcpi_errmsg());
	err = dcpi_symelf_open(path, f);
	dcpi_error(0, "%s", saved);
	if (err)
		return err;
	if (w->idlen && f->idlen && (f->idlen != w->idlen || memcmp(f->id, w->id, w->idlen)))
		goto reject;
	if (w->idlen && !f->idlen && !w->check_crc)
		goto reject;
	if (w->check_crc && (file_crc(f->fd, &crc) || crc != w->crc))
		goto reject;
	return 0;
reject:
	dcpi_symelf_close(f);
	return -ESTALE;
}

static int try_pathf(struct symelf *f, const struct want *w, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int try_pathf(struct symelf *f, const struct want *w, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return try_open(path, w, f);
}

/* ---- debug directories -------------------------------------------------- */

struct dirlist {
	char *copy;
	const char *dir[MAX_DEBUG_DIRS];
	size_t n;
};

static const char *sys_debug_dir(const struct dcpi_symtab_opts *opts)
{
	return opts && opts->sys_debug_dir ? opts->sys_debug_dir : SYS_DEBUG_DIR;
}

/* The user's debug path (opts, else $DCPI_DEBUG_PATH), split at ':'. */
static int dirlist_user(struct dirlist *dl, const struct dcpi_symtab_opts *opts)
{
	const char *src = opts && opts->debug_path ? opts->debug_path : getenv("DCPI_DEBUG_PATH");
	char *save = NULL, *tok;

	memset(dl, 0, sizeof(*dl));
	if (!src || !*src)
		return 0;
	dl->copy = strdup(src);
	if (!dl->copy)
		return dcpi_error(ENOMEM, "out of memory");
	for (tok = strtok_r(dl->copy, ":", &save); tok && dl->n < MAX_DEBUG_DIRS;
	     tok = strtok_r(NULL, ":", &save))
		dl->dir[dl->n++] = tok;
	return 0;
}

static void dirlist_free(struct dirlist *dl)
{
	free(dl->copy);
	dl->copy = NULL;
}

/* dir/.build-id/xx/yyyy<suffix> */
static int try_build_id_dir(const char *dir, const struct want *w, const char *suffix,
			    struct symelf *f)
{
	char idp[2 * DCPI_BUILD_ID_MAX + 2];

	if (!w->idlen)
		return -ENOENT;
	dcpi_debuginfo_id_path(w->id, w->idlen, idp);
	return try_pathf(f, w, "%s/.build-id/%s%s", dir, idp, suffix);
}

static int try_user_build_id(const struct dcpi_symtab_opts *opts, const struct want *w,
			     const char *suffix, struct symelf *f)
{
	struct dirlist dl;
	size_t i;
	int err = dirlist_user(&dl, opts);

	if (err)
		return err;
	for (i = 0, err = -ENOENT; i < dl.n && err; i++)
		err = try_build_id_dir(dl.dir[i], w, suffix, f);
	dirlist_free(&dl);
	return err ? -ENOENT : 0;
}

/* libdebuginfod, loaded the first time it is wanted: linked, it and the
 * thirty-odd libraries it needs (curl, TLS, LDAP, ...) cost every command
 * about 3 ms to load, and most runs never ask a server. */
static struct {
	debuginfod_client *(*begin)(void);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(debuginfod_client *);
} dfd;
static pthread_once_t dfd_once = PTHREAD_ONCE_INIT;

static void dfd_load(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return; /* not installed: as if no server had it */
	*(void **)&dfd.find_executable = dlsym(h, "debuginfod_find_executable");
	*(void **)&dfd.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&dfd.end = dlsym(h, "debuginfod_end");
	if (dfd.find_executable && dfd.find_debuginfo && dfd.end)
		*(void **)&dfd.begin = dlsym(h, "debuginfod_begin"); /* last: all or none */
}

/* debuginfod only when configured: it may take the network's time. */
static int try_debuginfod(const struct dcpi_symtab_opts *opts, const struct want *w, int exec,
			  struct symelf *f)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *c;
	char *path = NULL;
	int fd, err;

	if ((opts && opts->no_debuginfod) || !urls || !*urls || !w->idlen)
		return -ENOENT;
	pthread_once(&dfd_once, dfd_load);
	if (!dfd.begin || !(c = dfd.begin()))
		return -ENOENT;
	fd = exec ? dfd.find_executable(c, w->id, (int)w->idlen, &path)
		  : dfd.find_debuginfo(c, w->id, (int)w->idlen, &path);
	dfd.end(c);
	if (fd < 0) {
		free(path);
		return -ENOENT;
	}
	close(fd);
	err = path ? try_open(path, w, f) : -ENOENT;
	free(path);
	return err;
}

/* ---- the image ---------------------------------------------------------- */

static int find_copy(const struct dcpi_symtab_opts *opts, const struct want *w,
		     struct symelf *f)
{
	char idp[2 * DCPI_BUILD_ID_MAX + 2];

	if (opts && opts->buildid_cache) {
		dcpi_debuginfo_id_path(w->id, w->idlen, idp);
		if (!try_pathf(f, w, "%s/%s", opts->buildid_cache, idp))
			return 0;
	}
	if (!try_build_id_dir(sys_debug_dir(opts), w, "", f))
		return 0;
	if (!try_user_build_id(opts, w, "", f))
		return 0;
	return try_debuginfod(opts, w, 1, f);
}

static int find_debug_by_id(const struct dcpi_symtab_opts *opts, const struct want *w,
			    struct symelf *f)
{
	if (!try_build_id_dir(sys_debug_dir(opts), w, ".debug", f))
		return 0;
	if (!try_user_build_id(opts, w, ".debug", f))
		return 0;
	return try_debuginfod(opts, w, 0, f);
}

static void set_id(struct dcpi_symtab *st, const uint8_t *id, size_t len)
{
	if (len)
		memcpy(st->build_id, id, len);
	st->build_id_len = len;
}

/* The file at the path is the profiled image, or the profile has no
 * build-id to tell (then it is used, marked unverified).  A file without
 * a build-id when the profile has one is another file. */
static int accept_file(struct dcpi_symtab *st, struct symelf *img, const uint8_t *id,
		       size_t idlen)
{
	if (!idlen) {
		st->status = DCPI_SYMTAB_UNVERIFIED;
		dcpi_symtab_note(st, "profile has no build-id; identity not checked");
	}
	set_id(st, img->idlen ? img->id : id, img->idlen ? img->idlen : idlen);
	dcpi_symtab_set_owner(st, img->uid);
	return dcpi_symtab_set_str(&st->image_file, img->path);
}

/* Whether path is in the database's image cache (opts->buildid_cache). */
static int in_cache(const struct dcpi_symtab_opts *opts, const char *path)
{
	size_t n = opts && opts->buildid_cache ? strlen(opts->buildid_cache) : 0;

	return n && !strncmp(path, opts->buildid_cache, n) && path[n] == '/';
}

/* The file at the path is not the profiled image; f (a copy, or with
 * DEBUG_ONLY a debug file) is.  Returns 0 for a copy, 1 for DEBUG_ONLY. */
static int use_other(struct dcpi_symtab *st, const struct dcpi_symtab_opts *opts,
		     enum dcpi_symtab_status status, const struct symelf *f, int had_file,
		     const uint8_t *id, size_t idlen)
{
	const char *why = had_file ? "file rebuilt since profiling" : "file gone since profiling";

	st->status = status;
	set_id(st, id, idlen);
	if (status == DCPI_SYMTAB_DEBUG_ONLY) {
		dcpi_symtab_note(st, "%s; no copy of it found, symbols from debug file %s "
				 "(no code)", why, f->path);
		return 1;
	}
	dcpi_symtab_note(st, "%s; using copy from %s", why, f->path);
	/* the image cache's copies are the daemon's whoever's the image was:
	   a copy of one link (not a link of the image itself, which keeps
	   its owner) has no known owner, and its DWARF names no file that
	   is not world-readable */
	if (in_cache(opts, f->path) && f->nlink == 1 && (f->uid == 0 || f->uid == geteuid()))
		st->owner = DCPI_UID_UNKNOWN;
	else
		dcpi_symtab_set_owner(st, f->uid);
	return dcpi_symtab_set_str(&st->image_file, f->path);
}

int dcpi_debuginfo_find_image(struct dcpi_symtab *st, const char *path, const uint8_t *id,
			      size_t idlen, const struct dcpi_symtab_opts *opts,
			      struct symelf *img, struct symelf *dbg)
{
	struct want w = { id, idlen, 0, 0 };
	char full[PATH_MAX], have[2 * DCPI_BUILD_ID_MAX + 1] = "none",
	     want_hex[2 * DCPI_BUILD_ID_MAX + 1], note[PATH_MAX + 96] = "";
	char unreadable[512] = "";
	int err, had_file = 0;

	if (mkpath(full, "%s%s", opts && opts->root ? opts->root : "", path))
		return dcpi_error(ENAMETOOLONG, "%s: path too long", path);
	err = dcpi_symelf_open(full, img);
	if (!err) {
		if (!idlen || (img->idlen == idlen && !memcmp(img->id, id, idlen)))
			return accept_file(st, img, id, idlen);
		had_file = 1;
		dcpi_hex(img->id, img->idlen, have);
		dcpi_symelf_close(img);
	} else if (err != -ENOENT && err != -ENOTDIR && !idlen) {
		return err;
	} else if (err != -ENOENT && err != -ENOTDIR) {
		/* not an ELF file (a JIT's perf map names its pseudo-image): the
		 * copy by build-id is the image */
		snprintf(unreadable, sizeof(unreadable), " (%s)", dcpi_errmsg());
	} else if (!idlen) {
		return dcpi_error(ENOENT, "%s: no such file, and the profile has no build-id "
				  "to find a copy by", full);
	}
	if (!find_copy(opts, &w, img))
		return use_other(st, opts, DCPI_SYMTAB_COPY, img, had_file, id, idlen);
	if (!find_debug_by_id(opts, &w, dbg)) {
		if (dcpi_symelf_has_layout(dbg))
			return use_other(st, opts, DCPI_SYMTAB_DEBUG_ONLY, dbg, had_file, id, idlen);
		snprintf(note, sizeof(note), " (debug file %s has the symbols but not the file "
			 "layout to place profile offsets)", dbg->path);
		dcpi_symelf_close(dbg);
	}
	dcpi_hex(id, idlen, want_hex);
	if (had_file)
		return dcpi_error(ESTALE, "%s: file changed since profiling (build-id %s, profile "
				  "has %s); no matching copy found%s", full, have, want_hex, note);
	if (*unreadable)
		return dcpi_error(ENOENT, "%s: not a readable image%s, and no copy with build-id %s "
				  "found%s", full, unreadable, want_hex, note);
	return dcpi_error(ENOENT, "%s: no such file, and no copy with build-id %s found%s", full,
			  want_hex, note);
}

/* ---- separate debug info ------------------------------------------------ */

/* The .gnu_debuglink places: next to the image, in its .debug/, and
 * under the system debug directory by the image's directory. */
static int try_debuglink(const char *path, const char *name,
			 const struct want *w, const struct dcpi_symtab_opts *opts,
			 struct symelf *dbg)
{
	const char *root = opts && opts->root ? opts->root : "";
	const char *slash = strrchr(path, '/');
	int dlen = slash ? (int)(slash - path) : 0;

	if (!name)
		return -ENOENT;
	if (!try_pathf(dbg, w, "%s%.*s/%s", root, dlen, path, name) ||
	    !try_pathf(dbg, w, "%s%.*s/.debug/%s", root, dlen, path, name) ||
	    !try_pathf(dbg, w, "%s%.*s/%s", sys_debug_dir(opts), dlen, path, name))
		return 0;
	return -ENOENT;
}

/* Each user debug directory: build-id layout, then the debuglink name. */
static int try_user_dirs(const char *name, const struct want *byid, const struct want *bylink,
			 const struct dcpi_symtab_opts *opts, struct symelf *dbg)
{
	struct dirlist dl;
	size_t i;
	int err = dirlist_user(&dl, opts);

	if (err)
		return err;
	for (i = 0, err = -ENOENT; i < dl.n && err; i++) {
		err = try_build_id_dir(dl.dir[i], byid, ".debug", dbg);
		if (err && name)
			err = try_pathf(dbg, bylink, "%s/%s", dl.dir[i], name);
	}
	dirlist_free(&dl);
	return err ? -ENOENT : 0;
}

int dcpi_debuginfo_find_debug(const struct symelf *img, const char *path,
			      const struct dcpi_symtab_opts *opts, struct symelf *dbg)
{
	struct want byid = { img->id, img->idlen, 0, 0 };
	struct want bylink = { img->id, img->idlen, 1, 0 };
	const char *name;
	GElf_Word crc = 0;

	name = dwelf_elf_gnu_debuglink(img->elf, &crc);
	if (name && (!*name || strchr(name, '/')))
		name = NULL; /* a link is a file name, never a path to wander off by */
	bylink.crc = crc;
	if (!try_build_id_dir(sys_debug_dir(opts), &byid, ".debug", dbg))
		return 0;
	if (!try_debuglink(path, name, &bylink, opts, dbg))
		return 0;
	if (!try_user_dirs(name, &byid, &bylink, opts, dbg))
		return 0;
	return try_debuginfod(opts, &byid, 0, dbg) ? -ENOENT : 0;
}
