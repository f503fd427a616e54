/* Packing an epoch with the code it needs, and unpacking it: see dcpi/tar.h. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libiberty/hashtab.h>

#include "dcpi/db.h"
#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/imagecache.h"
#include "dcpi/profile.h"
#include "dcpi/symtab.h"
#include "dcpi/stacks.h"
#include "dcpi/tar.h"

#define COPY_BUF (64u << 10)

/* ---- packing ------------------------------------------------------------------ */

struct pack {
	struct archive *a;
	const char *out;
	struct dcpi_tar_stats *st;
	htab_t done;            /* archive names written */
};

static int ar_error(struct archive *a, const char *what, const char *name)
{
	int e = archive_errno(a);

	return dcpi_error(e > 0 ? e : EIO, "%s %s: %s", what, name,
			  archive_error_string(a) ? archive_error_string(a) : "libarchive error");
}

/* Add the regular file path as name (once), mode 0600: the file opened
 * once, its build-id checked on that descriptor when id is given (the
 * path may have been swapped for another file since the symbol search
 * checked it: -ESTALE), and read from that same descriptor. */
static int add_file(struct pack *p, const char *path, const char *name, const uint8_t *id,
		    size_t idlen)
{
	struct archive_entry *e;
	struct stat sb;
	char *buf = NULL;
	void **slot;
	int fd, err = 0;
	ssize_t n;

	slot = htab_find_slot(p->done, name, INSERT);
	if (!slot)
		return dcpi_error(ENOMEM, "out of memory");
	if (*slot)
		return 0;
	fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &sb);
	if (fd < 0)
		return fd;
	if (!dcpi_buildid_fd_is(fd, id, idlen)) {
		close(fd);
		return dcpi_error(ESTALE, "%s: not the image profiled any more", path);
	}
	if (!(*slot = strdup(name)) || !(e = archive_entry_new()) || !(buf = malloc(COPY_BUF))) {
		free(buf);
		close(fd);
		return dcpi_error(ENOMEM, "out of memory");
	}
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0600);
	archive_entry_set_size(e, sb.st_size);
	archive_entry_set_mtime(e, sb.st_mtime, 0);
	if (archive_write_header(p->a, e) != ARCHIVE_OK)
		err = ar_error(p->a, "writing", name);
	lseek(fd, 0, SEEK_SET);
	while (!err && (n = read(fd, buf, COPY_BUF)) > 0)
		if (archive_write_data(p->a, buf, (size_t)n) != n)
			err = ar_error(p->a, "writing", name);
	if (!err && n < 0)
		err = dcpi_error(errno, "%s: %s", path, strerror(errno));
	if (!err) {
		p->st->files++;
		p->st->bytes += (uint64_t)sb.st_size;
	}
	archive_entry_free(e);
	free(buf);
	close(fd);
	return err;
}

/* The image and debug file of a profile, by build-id, where the symbol
 * search finds them (the image cache of db included). */
static int add_code(struct pack *p, const struct dcpi_profile *prof,
		    const struct dcpi_symtab_opts *so)
{
	char hex[2 * DCPI_BUILD_ID_MAX + 1], name[2 * DCPI_BUILD_ID_MAX + 32];
	struct dcpi_symtab *st;
	const char *img, *dbg;
	int err = 0;

	if (prof->kind != DCPI_IMAGE_FILE || !prof->build_id_len)
		return 0;
	dcpi_hex(prof->build_id, prof->build_id_len, hex);
	snprintf(name, sizeof(name), ".build-id/%.2s/%s", hex, hex + 2);
	if (htab_find(p->done, name))
		return 0;
	if (dcpi_symtab_open(prof->path, prof->build_id, prof->build_id_len, so, &st)) {
		if (!p->st->missing++)
			snprintf(p->st->first_missing, sizeof(p->st->first_missing), "%s",
				 prof->path);
		return 0;
	}
	img = dcpi_symtab_image_file(st);
	dbg = dcpi_symtab_debug_file(st);
	if (img && !(err = add_file(p, img, name, prof->build_id, prof->build_id_len)))
		p->st->images++;
	else if (err == -ESTALE)
		img = NULL, err = 0; /* swapped since it was checked: missing */
	if (!err && dbg && (!img || strcmp(dbg, img))) {
		snprintf(name, sizeof(name), ".build-id/%.2s/%s.debug", hex, hex + 2);
		if (!(err = add_file(p, dbg, name, prof->build_id, prof->build_id_len)))
			p->st->debug++;
		else if (err == -ESTALE)
			err = 0;
	}
	if (!img && !p->st->missing++)
		snprintf(p->st->first_missing, sizeof(p->st->first_missing), "%s", prof->path);
	dcpi_symtab_close(st);
	return err;
}

/* Every regular file of one platform directory, and the code its
 * profiles need. */
static int add_platdir(struct pack *p, const char *db, const char *epoch, const char *host,
		       const struct dcpi_symtab_opts *so)
{
	char dir[4096], path[4400], name[4400];
	struct dirent *de;
	DIR *d;
	int err = dcpi_db_path(dir, sizeof(dir), db, epoch, host, NULL);

	if (err)
		return err;
	if (!(d = opendir(dir)))
		return dcpi_error(errno, "%s: %s", dir, strerror(errno));
	while (!err && (de = readdir(d))) {
		struct stat sb;
		struct dcpi_profile prof;
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(name, sizeof(name), "%s/%s/%s", epoch, host, de->d_name);
		err = add_file(p, path, name, NULL, 0);
		if (!err && n > 7 && !strcmp(de->d_name + n - 7, ".stacks")) {
			/* the code of the callers' images too: a caller's image
			   may have no profile of its own */
			struct dcpi_stackset ss;

			if (!dcpi_stackset_read(path, &ss)) {
				for (size_t i = 0; !err && i < ss.nimages; i++)
					err = add_code(p, &ss.images[i], so);
				dcpi_stackset_free(&ss);
			}
			continue;
		}
		if (err || n < 5 || strcmp(de->d_name + n - 5, ".prof"))
			continue;
		dcpi_profile_init(&prof);
		if (!dcpi_profile_read(path, &prof))
			err = add_code(p, &prof, so);
		dcpi_profile_free(&prof);
	}
	closedir(d);
	return err;
}

int dcpi_tar_pack(const char *db, const char *epoch, const char *out,
		  struct dcpi_tar_stats *st)
{
	char latest[DCPI_EPOCH_NAME_MAX], cache[4096], hosts[4200], **plats = NULL;
	struct dcpi_symtab_opts so = { 0 };
	struct pack p = { NULL, out, st, NULL };
	size_t np = 0;
	int fd, err;

	memset(st, 0, sizeof(*st));
	if (!epoch || !strcmp(epoch, "latest")) {
		if ((err = dcpi_db_epoch_latest(db, latest)))
			return err;
		epoch = latest;
	}
	if (!dcpi_db_is_epoch_name(epoch))
		return dcpi_error(EINVAL, "'%s' is not an epoch name (YYYYMMDDTHHMMSSZ)", epoch);
	if ((err = dcpi_db_hosts(db, epoch, &plats, &np)))
		return err;
	if (!dcpi_imagecache_dir(db, cache, sizeof(cache)))
		so.buildid_cache = cache;
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		dcpi_db_names_free(plats, np);
		return dcpi_error(errno, "%s: %s", out, strerror(errno));
	}
	p.a = archive_write_new();
	p.done = htab_create_alloc(256, htab_hash_string, htab_eq_string, free, calloc, free);
	if (!p.a || !p.done)
		err = dcpi_error(ENOMEM, "out of memory");
	else if (archive_write_set_format_pax_restricted(p.a) != ARCHIVE_OK ||
		 archive_write_open_fd(p.a, fd) != ARCHIVE_OK)
		err = ar_error(p.a, "creating", out);
	for (size_t i = 0; !err && i < np; i++)
		err = add_platdir(&p, db, epoch, plats[i], &so);
	snprintf(hosts, sizeof(hosts), "%s/hosts", db);
	if (!err && access(hosts, F_OK) == 0)
		err = add_file(&p, hosts, "hosts", NULL, 0);
	if (!err && archive_write_close(p.a) != ARCHIVE_OK)
		err = ar_error(p.a, "closing", out);
	if (p.a)
		archive_write_free(p.a);
	if (p.done)
		htab_delete(p.done);
	dcpi_db_names_free(plats, np);
	if (close(fd) && !err)
		err = dcpi_error(errno, "%s: %s", out, strerror(errno));
	if (err)
		unlink(out); /* never leave half an archive that looks whole */
	return err;
}

/* ---- unpacking ---------------------------------------------------------------- */

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return n > 0;
}

/* Names a pack writes: "hosts", ".build-id/xx/HEX[.debug]", and
 * "EPOCH/PLATFORM/FILE" with plain names (no '/', no leading '.'). */
static int name_ok(const char *name)
{
	const char *s1, *s2;

	if (!strcmp(name, "hosts"))
		return 1;
	if (!strncmp(name, ".build-id/", 10)) {
		const char *h = name + 10, *dot;
		size_t n;

		/* "xx/" first: h + 3 is inside the name only then */
		if (!is_hex(h, 2) || h[2] != '/')
			return 0;
		dot = strchr(h + 3, '.');
		n = dot ? (size_t)(dot - (h + 3)) : strlen(h + 3);
		return is_hex(h + 3, n) && (!dot || !strcmp(dot, ".debug"));
	}
	s1 = strchr(name, '/');
	s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (!s1 || !s2 || strchr(s2 + 1, '/') || s1 - name >= DCPI_EPOCH_NAME_MAX)
		return 0;
	{
		char ep[DCPI_EPOCH_NAME_MAX];

		snprintf(ep, sizeof(ep), "%.*s", (int)(s1 - name), name);
		if (!dcpi_db_is_epoch_name(ep))
			return 0;
	}
	/* a platform name as hosts have them (open_parent would cut a longer
	   one to its buffer and unpack the entry under another name) */
	return s2 > s1 + 1 && s1[1] != '.' && s2 - s1 - 1 < DCPI_HOST_MAX && s2[1] &&
	       s2[1] != '.';
}

/* One unpacking: the new directory is held open (dfd) from the moment it
 * is made, and everything below it is created with mkdirat/openat
 * relative to that descriptor, never by path: a user who can write the
 * directory's parent may rename it and plant a symlink at its name, but
 * the entries still land in the directory we made (issue 24). */
struct unpack {
	struct archive *a;
	const char *tar, *dir;
	int dfd;
	uint64_t max;           /* total bytes at most */
	struct dcpi_tar_stats *st;
};

/* The directory of name's last component, below u->dfd: every level made
 * 0700 with mkdirat and opened O_NOFOLLOW (the caller closes it, unless it
 * is u->dfd).  *base is the last component. */
static int open_parent(struct unpack *u, const char *name, const char **base)
{
	char comp[256];
	int fd = u->dfd;

	*base = name;
	for (const char *s; (s = strchr(name, '/')); name = s + 1) {
		int next;

		snprintf(comp, sizeof(comp), "%.*s", (int)(s - name), name);
		if (mkdirat(fd, comp, 0700) && errno != EEXIST)
			next = -1;
		else
			next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int e = errno;

			if (fd != u->dfd)
				close(fd);
			return dcpi_error(e, "%s/%s: %s", u->dir, comp, strerror(e));
		}
		if (fd != u->dfd)
			close(fd);
		fd = next;
		*base = s + 1;
	}
	return fd;
}

/* Why entry e is refused, or NULL: only what a pack writes, in size. */
static const char *entry_refused(struct archive_entry *e, const char *name)
{
	int64_t size = archive_entry_size(e);

	if (!name || !name_ok(name))
		return "is not one dcpitar writes";
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) ||
	    archive_entry_symlink(e))
		return "is not a regular file";
	if (archive_entry_sparse_count(e) > 0)
		return "is a sparse file (dcpitar writes none)";
	if (size < 0 || (uint64_t)size > DCPI_TAR_FILE_MAX)
		return "is larger than " DCPI_TAR_FILE_MAX_STR;
	return NULL;
}

/* Copy the entry's data to fd, within the total cap. */
static int copy_data(struct unpack *u, int fd, const char *name)
{
	char buf[COPY_BUF];
	la_ssize_t n;

	while ((n = archive_read_data(u->a, buf, sizeof(buf))) > 0) {
		if ((uint64_t)n > u->max - u->st->bytes)
			return dcpi_error(EFBIG, "%s: unpacks to more than %" PRIu64 " bytes "
					  "(at entry '%s'): refused", u->tar, u->max, name);
		if (write(fd, buf, (size_t)n) != n)
			return dcpi_error(errno ? errno : EIO, "%s/%s: %s", u->dir, name,
					  strerror(errno ? errno : EIO));
		u->st->bytes += (uint64_t)n;
	}
	return n < 0 ? ar_error(u->a, "reading", name) : 0;
}

static int extract_one(struct unpack *u, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e), *why = entry_refused(e, name), *base;
	int pfd, fd, err;

	if (why)
		return dcpi_error(EBADMSG, "%s: entry '%s' %s: refused", u->tar,
				  name ? name : "(no name)", why);
	if ((pfd = open_parent(u, name, &base)) < 0)
		return pfd;
	fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	err = fd < 0 ? dcpi_error(errno, "%s/%s: %s", u->dir, name, strerror(errno)) : 0;
	if (pfd != u->dfd)
		close(pfd);
	if (err)
		return err;
	err = copy_data(u, fd, name);
	if (close(fd) && !err)
		err = dcpi_error(errno, "%s/%s: %s", u->dir, name, strerror(errno));
	if (!err)
		u->st->files++;
	return err;
}

/* Remove everything below dfd (what this unpacking made: at most three
 * levels, all of them ours and private). */
static void remove_below(int dfd, int depth)
{
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!unlinkat(dfd, de->d_name, 0) || errno != EISDIR || depth > 3)
			continue;
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			remove_below(sub, depth + 1);
			close(sub);
		}
		unlinkat(dfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* Make dir (0700, new) and hold it open; refuse it if what we opened is
 * not the directory we made (a symlink or another user's directory put in
 * its place). */
static int make_dir(struct unpack *u)
{
	struct stat sb;

	if (mkdir(u->dir, 0700))
		return dcpi_error(errno, "%s: %s", u->dir, errno == EEXIST ? "already exists: "
				  "unpack into a new directory" : strerror(errno));
	u->dfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (u->dfd < 0)
		return dcpi_error(errno, "%s: %s (replaced as it was made?)", u->dir,
				  strerror(errno));
	if (fstat(u->dfd, &sb) || sb.st_uid != geteuid() || (sb.st_mode & 0077)) {
		close(u->dfd);
		u->dfd = -1;
		return dcpi_error(EPERM, "%s: replaced by another user's directory as it was "
				  "made: refused", u->dir);
	}
	return 0;
}

/* Undo a failed unpacking: empty the directory we made and remove it, if
 * its name still leads to it. */
static void unmake_dir(struct unpack *u)
{
	struct stat a, b;

	remove_below(u->dfd, 1);
	if (!fstat(u->dfd, &a) && !lstat(u->dir, &b) && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		rmdir(u->dir);
}

int dcpi_tar_unpack(const char *tar, const char *dir, uint64_t max,
		    struct dcpi_tar_stats *st)
{
	struct unpack u = { NULL, tar, dir, -1, max ? max : DCPI_TAR_TOTAL_MAX, st };
	struct archive_entry *e;
	int r, err;

	memset(st, 0, sizeof(*st));
	if ((err = make_dir(&u)))
		return err;
	if (!(u.a = archive_read_new())) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto out;
	}
	archive_read_support_format_tar(u.a);
	archive_read_support_filter_all(u.a);
	if (archive_read_open_filename(u.a, tar, COPY_BUF) != ARCHIVE_OK)
		err = ar_error(u.a, "opening", tar);
	while (!err && (r = archive_read_next_header(u.a, &e)) != ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			err = ar_error(u.a, "reading", tar);
			break;
		}
		err = extract_one(&u, e);
	}
	if (!err && st->files == 0)
		err = dcpi_error(EBADMSG, "%s: no entries: not a dcpitar archive", tar);
	archive_read_free(u.a);
out:
	if (err)
		unmake_dir(&u); /* all or nothing */
	close(u.dfd);
	return err;
}
