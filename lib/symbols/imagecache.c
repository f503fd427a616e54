/* The database's image cache: see dcpi_imagecache_add in dcpi/db.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/imagecache.h"

int dcpi_imagecache_dir(const char *root, char *out, size_t len)
{
	return dcpi_db_path(out, len, root, NULL, NULL, ".build-id");
}

static int cache_path(const char *root, const uint8_t *id, size_t idlen, char *dir,
		      size_t dlen, char *file, size_t flen)
{
	char hex[2 * DCPI_BUILD_ID_MAX + 1], cdir[4096];
	int err;

	if (idlen == 0 || idlen > DCPI_BUILD_ID_MAX)
		return dcpi_error(EINVAL, "no build-id to cache by");
	dcpi_hex(id, idlen, hex);
	err = dcpi_imagecache_dir(root, cdir, sizeof(cdir));
	if (err)
		return err;
	if (snprintf(dir, dlen, "%s/%.2s", cdir, hex) >= (int)dlen ||
	    snprintf(file, flen, "%s/%s", dir, hex + 2) >= (int)flen)
		return dcpi_error(ENAMETOOLONG, "%s: path too long", root);
	return 0;
}

/* Copy fd (size bytes, from the start) to tmp and rename it over file,
 * if the copy still has build-id id: the owner of the file may rewrite it
 * while we read. */
static int copy_into(int fd, uint64_t size, const uint8_t *id, size_t idlen, const char *tmp,
		     const char *file, unsigned mode)
{
	char buf[1 << 16];
	int out, err = 0;
	ssize_t r;
	off_t off = 0;

	if (size > DCPI_CACHE_MAX_BYTES)
		return dcpi_error(EFBIG, "%s: image of %llu bytes not cached (over %llu)", file,
				  (unsigned long long)size, (unsigned long long)DCPI_CACHE_MAX_BYTES);
	/* mode is the database's file mode: never a set-id bit */
	out = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return dcpi_error(errno, "%s: %s", tmp, strerror(errno));
	while ((r = pread(fd, buf, sizeof(buf), off)) > 0) {
		if (write(out, buf, (size_t)r) != r) {
			err = dcpi_error(errno ? errno : EIO, "%s: %s", tmp, strerror(errno ? errno : EIO));
			break;
		}
		if ((uint64_t)(off += r) > DCPI_CACHE_MAX_BYTES) { /* it grows as we read */
			err = dcpi_error(EFBIG, "%s: image over %llu bytes not cached", file,
					 (unsigned long long)DCPI_CACHE_MAX_BYTES);
			break;
		}
	}
	if (!err && r < 0)
		err = dcpi_error(errno, "reading for %s: %s", file, strerror(errno));
	if (!err && !dcpi_buildid_fd_is(out, id, idlen))
		err = dcpi_error(ESTALE, "%s: not cached: the file changed while it was copied",
				 file);
	if (!err && fsync(out))
		err = dcpi_error(errno, "%s: %s", tmp, strerror(errno));
	if (close(out) && !err)
		err = dcpi_error(errno, "%s: %s", tmp, strerror(errno));
	if (!err && rename(tmp, file))
		err = dcpi_error(errno, "%s: %s", file, strerror(errno));
	if (err)
		unlink(tmp);
	return err;
}

/* A hard link shares the inode: its owner can rewrite "the code that
 * ran" later, and its set-id bits and file capabilities come along, in a
 * tree other users may enter (-shared), keeping a program a security
 * update replaced runnable.  So only a file of root's or ours that no one
 * else may write, and that is not privileged, is linked; others are
 * copied (plain). */
static int linkable(int fd, const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022) &&
	       !(st->st_mode & (S_ISUID | S_ISGID)) &&
	       fgetxattr(fd, "security.capability", NULL, 0) < 0;
}

/* Link the inode of fd (the one whose build-id was checked, never the
 * path again) at file: 0, or -1 with errno. */
static int link_fd(int fd, const char *file)
{
	char self[64];

	if (!linkat(fd, "", AT_FDCWD, file, AT_EMPTY_PATH) || errno == EEXIST)
		return 0;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH: a daemon without it */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (!linkat(AT_FDCWD, self, AT_FDCWD, file, AT_SYMLINK_FOLLOW) || errno == EEXIST)
		return 0;
	return -1;
}

int dcpi_imagecache_add(const char *root, const char *path, const uint8_t *id, size_t idlen,
			unsigned dirmode, unsigned filemode)
{
	char dir[4200], file[4300], tmp[4400], cdir[4096];
	struct stat st;
	int fd, err;

	err = cache_path(root, id, idlen, dir, sizeof(dir), file, sizeof(file));
	if (err)
		return err;
	if (access(file, F_OK) == 0)
		return 0;
	fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0)
		return fd;
	/* the file must still be the image that ran */
	if (!dcpi_buildid_fd_is(fd, id, idlen)) {
		close(fd);
		return dcpi_error(ESTALE, "%s: not cached: it is not the image profiled any more",
				  path);
	}
	err = dcpi_imagecache_dir(root, cdir, sizeof(cdir));
	if (!err && (mkdir(cdir, dirmode) && errno != EEXIST))
		err = dcpi_error(errno, "%s: %s", cdir, strerror(errno));
	if (!err && (mkdir(dir, dirmode) && errno != EEXIST))
		err = dcpi_error(errno, "%s: %s", dir, strerror(errno));
	if (!err)
		err = dcpi_db_check_dir(dir);
	if (!err && (!linkable(fd, &st) || link_fd(fd, file))) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid());
		err = copy_into(fd, (uint64_t)st.st_size, id, idlen, tmp, file, filemode);
	}
	close(fd);
	return err;
}
