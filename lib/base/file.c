/* Whole-file reads and atomic whole-file writes for the database: see
 * dcpi_file_write_atomic() and dcpi_file_read() in dcpi/file.h.
 *
 * Atomicity rests on rename(2) within one directory: the new contents are
 * complete and fsync'd under a temporary name before the rename makes them
 * visible, so a reader (or a daemon killed at any instant) sees either the
 * old file or the new one.  The temporary name is "<path>.tmp.<pid>": one
 * writer per file per process, which the daemon's per-platform lock gives. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "internal.h"

/* len bytes at p to fd: at its position (at < 0), else at offset at. */
static int write_at(int fd, const uint8_t *p, size_t len, off_t at)
{
	while (len) {
		ssize_t n = at < 0 ? write(fd, p, len) : pwrite(fd, p, len, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		if (at >= 0)
			at += n;
		len -= (size_t)n;
	}
	return 0;
}

int dcpi_write_all(int fd, const void *data, size_t len)
{
	return write_at(fd, data, len, -1);
}

#define HOLE 4096 /* a block of zeros this long (at a multiple of it) is skipped */

static int all_zero(const uint8_t *p, size_t n)
{
	return p[0] == 0 && !memcmp(p, p + 1, n - 1);
}

int dcpi_write_sparse(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t run = 0, i; /* bytes [run, i) wait to be written */
	int err;

	for (i = 0; i + HOLE <= len; i += HOLE) {
		if (!all_zero(p + i, HOLE))
			continue;
		if (i > run && (err = write_at(fd, p + run, i - run, (off_t)run)))
			return err;
		run = i + HOLE;
	}
	if (len > run && (err = write_at(fd, p + run, len - run, (off_t)run)))
		return err;
	/* ending in a hole: the size says where the file ends */
	return run == len && len && ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
}

/* The directory part of path ("." when there is none), malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int fsync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd, err = 0;

	if (!dir)
		return dcpi_error(ENOMEM, "out of memory");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		err = dcpi_error(errno, "%s: cannot open directory: %s", dir, strerror(errno));
	else if (fsync(fd) < 0 && errno != EINVAL) /* some filesystems can't */
		err = dcpi_error(errno, "%s: fsync of directory: %s", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(dir);
	return err;
}

/* Create tmp with exactly mode (not masked by umask: the caller chose it),
 * fill it and make it durable. */
static int write_tmp(const char *tmp, const void *data, size_t len, unsigned mode)
{
	int fd, err;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	if (fd < 0)
		return dcpi_error(errno, "%s: cannot create: %s", tmp, strerror(errno));
	err = fchmod(fd, mode & 07777) < 0 ? -errno : 0;
	if (!err)
		err = dcpi_write_sparse(fd, data, len);
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno; /* NFS reports write errors at close */
	if (err)
		return dcpi_error(-err, "%s: cannot write: %s", tmp, strerror(-err));
	return 0;
}

int dcpi_file_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char tmp[PATH_MAX];
	int n, err;

	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return dcpi_error(ENAMETOOLONG, "%s: path too long", path);
	err = write_tmp(tmp, data, len, mode);
	if (!err && rename(tmp, path) < 0)
		err = dcpi_error(errno, "%s: cannot rename %s into place: %s", path, tmp,
				 strerror(errno));
	if (err) {
		unlink(tmp); /* the old file, if any, is untouched */
		return err;
	}
	err = fsync_dir(path);
	return err ? dcpi_error_prefix(err, "%s: written, but not durable", path) : 0;
}

int dcpi_file_is_tmp_name(const char *name)
{
	const char *t = strstr(name, ".tmp.");

	if (!t)
		return 0;
	while ((t = strstr(t + 1, ".tmp."))) /* the last one */
		name = t;
	t = strrchr(name, '.') + 1;
	if (!*t)
		return 0;
	for (; *t; t++)
		if (*t < '0' || *t > '9')
			return 0;
	return 1;
}

/* Read fd to its end, at most max bytes: one byte more is an error, so a
 * file growing while we read cannot make us allocate without bound. */
static int read_fd(int fd, const char *path, size_t max, uint8_t **data, size_t *len)
{
	size_t cap = 0, n = 0;
	uint8_t *buf = NULL;
	ssize_t got;
	int err;

	if (max > SIZE_MAX / 2) {
		err = dcpi_error(EINVAL, "%s: read limit too large", path);
		goto fail;
	}
	for (;;) {
		/* one byte past max, to see that there is more */
		if ((err = DCPI_GROW(buf, cap, n + 1, max + 1, "bytes"))) {
			dcpi_error_prefix(-err, "%s", path);
			goto fail;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = dcpi_error(errno, "%s: read error: %s", path, strerror(errno));
			goto fail;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > max) {
			err = dcpi_error(EFBIG, "%s: larger than %zu bytes", path, max);
			goto fail;
		}
	}
	*data = buf;
	*len = n;
	return 0;
fail:
	free(buf);
	return err;
}

int dcpi_file_check_own(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return dcpi_error(EINVAL, "%s: not a regular file", path);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return dcpi_error(EPERM, "%s: owned by uid %u, not by us or root", path,
				  (unsigned)st.st_uid);
	return 0;
}

int dcpi_file_open_regular(int dirfd, const char *path, int flags, struct stat *st)
{
	char self[64];
	int pfd, fd;

	pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | (flags & O_NOFOLLOW));
	if (pfd < 0)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	if (fstat(pfd, st) < 0)
		fd = dcpi_error(errno, "%s: %s", path, strerror(errno));
	else if (S_ISDIR(st->st_mode))
		fd = dcpi_error(EISDIR, "%s: is a directory", path);
	else if (S_ISLNK(st->st_mode)) /* O_NOFOLLOW, as open(2) says it */
		fd = dcpi_error(ELOOP, "%s: a symbolic link", path);
	else if (!S_ISREG(st->st_mode)) /* devices, FIFOs */
		fd = dcpi_error(EINVAL, "%s: not a regular file", path);
	else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			fd = dcpi_error(errno, "%s: %s", path, strerror(errno));
	}
	close(pfd);
	return fd;
}

int dcpi_file_read(const char *path, size_t max, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd, err;

	*data = NULL;
	*len = 0;
	fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max)
		err = dcpi_error(EFBIG, "%s: %lld bytes, larger than %zu", path,
				 (long long)st.st_size, max);
	else
		err = read_fd(fd, path, max, data, len);
	close(fd);
	return err;
}
