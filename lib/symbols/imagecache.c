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

/* Copy fd (size bytes) to tmp, then rename over file. */
static int copy_into(int fd, uint64_t size, const char *tmp, const char *file, unsigned mode)
{
	char buf[1 << 16];
	int out, err = 0;
	ssize_t r;

	if (size > DCPI_CACHE_MAX_BYTES)
		return dcpi_error(EFBIG, "%s: image of %llu bytes not cached (over %llu)", file,
				  (unsigned long long)size, (unsigned long long)DCPI_CACHE_MAX_BYTES);
	/* mode is the database's file mode: never a set-id bit */
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return dcpi_error(errno, "%s: %s", tmp, strerror(errno));
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r) {
			err = dcpi_error(errno ? errno : EIO, "%s: %s", tmp, strerror(errno ? errno : EIO));
			break;
		}
	if (!err && r < 0)
		err = dcpi_error(errno, "reading for %s: %s", file, strerror(errno));
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

/* A hard link shares the inode: its set-id bits and file capabilities,
 * in a tree other users may enter (-shared), and it keeps a program a
 * security update replaced runnable.  Such images are copied (plain). */
static int privileged(int fd, const struct stat *st)
{
	return (st->st_mode & (S_ISUID | S_ISGID)) ||
	       fgetxattr(fd, "security.capability", NULL, 0) >= 0;
}

int dcpi_imagecache_add(const char *root, const char *path, const uint8_t *id, size_t idlen,
			unsigned dirmode, unsigned filemode)
{
	char dir[4200], file[4300], tmp[4400], cdir[4096];
	uint8_t now[DCPI_BUILD_ID_MAX];
	struct stat st;
	int fd, n, err;

	err = cache_path(root, id, idlen, dir, sizeof(dir), file, sizeof(file));
	if (err)
		return err;
	if (access(file, F_OK) == 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	/* the file must still be the image that ran */
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? dcpi_buildid_elf_fd(fd, now, sizeof(now))
						       : -EINVAL;
	if (n != (int)idlen || memcmp(now, id, idlen)) {
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
	if (!err && (privileged(fd, &st) || (link(path, file) != 0 && errno != EEXIST))) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid());
		lseek(fd, 0, SEEK_SET);
		err = copy_into(fd, (uint64_t)st.st_size, tmp, file, filemode);
	}
	close(fd);
	return err;
}
