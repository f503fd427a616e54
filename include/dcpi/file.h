/* Whole files: atomic writes and capped reads, for every database file. */
#ifndef DCPI_FILE_H
#define DCPI_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Write a file atomically: tmp + fsync + rename + directory fsync.  Used
 * for profiles and every other database file.  The temporary file is
 * "<path>.tmp.<pid>" in the same directory, created with exactly mode (not
 * masked by the umask); on any failure it is removed and an existing file
 * at path is left as it was.  One writer per path per process. */
int dcpi_file_write_atomic(const char *path, const void *data, size_t len, unsigned mode);
/* Whether name (no directory) is a temporary name of
 * dcpi_file_write_atomic ("*.tmp.PID"): what a crash leaves behind. */
int dcpi_file_is_tmp_name(const char *name);
/* Read a whole regular file (at most max bytes, else -EFBIG) into a
 * malloc'd buffer the caller frees.  Anything else (FIFO, device, socket)
 * is -EINVAL at once: it is opened non-blocking and never read. */
int dcpi_file_read(const char *path, size_t max, uint8_t **data, size_t *len);

/* Open path (relative to dirfd: AT_FDCWD or a directory's descriptor) for
 * reading, only if it is a regular file, and fill *st: it is looked up
 * with O_PATH, which opens nothing (no device's open routine runs, no
 * FIFO is touched), checked with fstat, and only then opened for reading
 * through /proc/self/fd, the same inode whatever is renamed meanwhile.
 * flags may add O_NOFOLLOW (a symbolic link is then -ELOOP).  The
 * descriptor (O_RDONLY, O_NONBLOCK, O_CLOEXEC), or -errno with a message:
 * -EINVAL "not a regular file". */
struct stat;
int dcpi_file_open_regular(int dirfd, const char *path, int flags, struct stat *st);

/* 0 if fd is a regular file owned by us or root; else -EINVAL/-EPERM.  For
 * files a daemon opens in place (lock, log) after O_NOFOLLOW. */
int dcpi_file_check_own(int fd, const char *path);

#endif
