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
/* Many files replaced together with one sync for all of them, where
 * dcpi_file_write_atomic would sync each: a merge that writes thousands of
 * profiles must not cost thousands of fsyncs of data and directory.
 *
 *   dcpi_file_batch_add     writes the new contents under the temporary
 *                           name ("<path>.tmp.<pid>"), not synced, not
 *                           visible at path
 *   dcpi_file_batch_commit  makes every temporary file durable (one
 *                           syncfs(2) per directory when the batch holds
 *                           DCPI_FILE_BATCH_SYNCFS files or more, else an
 *                           fsync of each), then renames each into place in
 *                           the order added, then fsyncs each directory once
 *   dcpi_file_batch_release removes the temporary files not committed
 *
 * The guarantee is dcpi_file_write_atomic's, per file: a process killed or
 * a machine crashed at any instant leaves each path old or new, never
 * half written, and no rename is issued before the contents it names are
 * on disk (so no renamed-but-empty file survives a crash).  What is not
 * given: that the files of one batch change together (after a crash some
 * may be new and others old).  A path may be added once per batch
 * (dcpi_file_batch_has); commit before writing it again.
 *
 * Ownership: the batch owns copies of the paths; init before use, release
 * after (also after a commit).  One batch per thread. */
#define DCPI_FILE_BATCH_SYNCFS 8

struct dcpi_file_batch_ent;

struct dcpi_file_batch {
	struct dcpi_file_batch_ent *ents; /* in the order added */
	size_t n, cap;
	size_t committed;                 /* ents[0..committed) are in place */
	uint32_t *set;                    /* open addressing: index + 1 of ents */
	size_t setcap;                    /* a power of 2, or 0 */
};

void dcpi_file_batch_init(struct dcpi_file_batch *b);
/* Write data as path's next contents (not yet visible, not yet durable).
 * -EEXIST when path is in the batch already; on any error nothing of this
 * call is left behind. */
int dcpi_file_batch_add(struct dcpi_file_batch *b, const char *path, const void *data,
			size_t len, unsigned mode);
/* Whether path was added and not yet committed. */
int dcpi_file_batch_has(const struct dcpi_file_batch *b, const char *path);
/* Files added and not yet committed. */
size_t dcpi_file_batch_pending(const struct dcpi_file_batch *b);
/* Sync, rename, sync the directories (see above).  *done (may be NULL):
 * how many of the files pending, in the order added, are now in place; on
 * a failed sync none are, and their temporary files are removed; on a
 * failed rename those before it are; on a failed directory sync all are
 * in place but maybe not durable (the error says so).  The batch is empty
 * again afterwards, ready for more. */
int dcpi_file_batch_commit(struct dcpi_file_batch *b, size_t *done);
/* Remove the temporary files of what is pending; free everything. */
void dcpi_file_batch_release(struct dcpi_file_batch *b);

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
