/* Many files replaced with one sync: see dcpi_file_batch_* in dcpi/file.h.
 *
 * Why a batch: a merge that writes N profiles one by one costs N data
 * fsyncs and N directory fsyncs, each a journal commit; running thousands
 * of new binaries made one merge write thousands of files and take tens of
 * seconds.  Here the N temporary files are written unsynced, made durable
 * together (syncfs: one journal commit), and only then renamed into place,
 * followed by one fsync of the directory.  The order is what keeps the
 * atomic-write promise: a rename is issued only after the data it exposes
 * is on disk, so a crash never leaves a renamed file whose data was lost.
 *
 * syncfs also writes back every other program's dirty data on that file
 * system, which a small batch should not pay for: below
 * DCPI_FILE_BATCH_SYNCFS files, each is fsynced instead. */
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

struct dcpi_file_batch_ent {
	char *path;                  /* final name */
	char *tmp;                   /* "<path>.tmp.<pid>", written, not synced */
	uint64_t hash;
};

void dcpi_file_batch_init(struct dcpi_file_batch *b)
{
	memset(b, 0, sizeof(*b));
}

static uint64_t path_hash(const char *path)
{
	return dcpi_hash64(dcpi_hash_bytes(path, strlen(path)));
}

/* The set slot of path: its entry's, or the empty one where it would go. */
static size_t set_slot(const struct dcpi_file_batch *b, const char *path, uint64_t h)
{
	size_t mask = b->setcap - 1, i = h & mask;

	for (; b->set[i]; i = (i + 1) & mask) {
		const struct dcpi_file_batch_ent *e = &b->ents[b->set[i] - 1];

		if (e->hash == h && !strcmp(e->path, path))
			break;
	}
	return i;
}

/* Room in the set for one more pending entry (load at most 1/2). */
static int set_grow(struct dcpi_file_batch *b)
{
	size_t cap = b->setcap ? b->setcap : 64;
	uint32_t *set;

	if ((b->n - b->committed + 1) * 2 <= b->setcap)
		return 0;
	while ((b->n - b->committed + 1) * 2 > cap)
		cap *= 2;
	if (cap > UINT32_MAX || !(set = calloc(cap, sizeof(*set))))
		return dcpi_error(ENOMEM, "out of memory");
	free(b->set);
	b->set = set;
	b->setcap = cap;
	for (size_t i = b->committed; i < b->n; i++)
		b->set[set_slot(b, b->ents[i].path, b->ents[i].hash)] = (uint32_t)(i + 1);
	return 0;
}

int dcpi_file_batch_has(const struct dcpi_file_batch *b, const char *path)
{
	return b->setcap && b->set[set_slot(b, path, path_hash(path))] != 0;
}

size_t dcpi_file_batch_pending(const struct dcpi_file_batch *b)
{
	return b->n - b->committed;
}

/* tmp created with exactly mode and filled; not synced (the commit does). */
static int write_unsynced(const char *tmp, const void *data, size_t len, unsigned mode)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	int err;

	if (fd < 0)
		return dcpi_error(errno, "%s: cannot create: %s", tmp, strerror(errno));
	err = fchmod(fd, mode & 07777) < 0 ? -errno : 0;
	if (!err)
		err = dcpi_write_sparse(fd, data, len);
	if (close(fd) < 0 && !err)
		err = -errno; /* NFS reports write errors at close */
	if (err) {
		unlink(tmp);
		return dcpi_error(-err, "%s: cannot write: %s", tmp, strerror(-err));
	}
	return 0;
}

int dcpi_file_batch_add(struct dcpi_file_batch *b, const char *path, const void *data,
			size_t len, unsigned mode)
{
	struct dcpi_file_batch_ent e = { .hash = path_hash(path) };
	char tmp[PATH_MAX];
	int n, err;

	if (dcpi_file_batch_has(b, path))
		return dcpi_error(EEXIST, "%s: written twice in one batch", path);
	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return dcpi_error(ENAMETOOLONG, "%s: path too long", path);
	if ((err = set_grow(b)) || (err = DCPI_GROW(b->ents, b->cap, b->n + 1, UINT32_MAX - 1,
						    "files in one batch")))
		return err;
	e.path = strdup(path);
	e.tmp = strdup(tmp);
	if (!e.path || !e.tmp) {
		free(e.path);
		free(e.tmp);
		return dcpi_error(ENOMEM, "out of memory");
	}
	err = write_unsynced(tmp, data, len, mode);
	if (err) {
		free(e.path);
		free(e.tmp);
		return err;
	}
	b->ents[b->n] = e;
	b->set[set_slot(b, path, e.hash)] = (uint32_t)(b->n + 1);
	b->n++;
	return 0;
}

/* The directory part of path ("." when there is none), into out. */
static void dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(out, len, ".");
	else if (slash == path)
		snprintf(out, len, "/");
	else
		snprintf(out, len, "%.*s", (int)(slash - path), path);
}

/* Call fn once for each distinct directory of ents[from..to) (a batch
 * writes into one directory or a few: a linear list of them is enough). */
static int each_dir(const struct dcpi_file_batch *b, size_t from, size_t to,
		    int (*fn)(const char *dir))
{
	char (*dirs)[PATH_MAX] = NULL;
	size_t ndirs = 0, cap = 0;
	int err = 0;

	for (size_t i = from; i < to && !err; i++) {
		char d[PATH_MAX];
		size_t k;

		dir_of(b->ents[i].path, d, sizeof(d));
		for (k = 0; k < ndirs && strcmp(dirs[k], d); k++)
			;
		if (k < ndirs)
			continue;
		if ((err = DCPI_GROW(dirs, cap, ndirs + 1, SIZE_MAX, "directories")))
			break;
		memcpy(dirs[ndirs++], d, sizeof(d));
		err = fn(d);
	}
	free(dirs);
	return err;
}

static int sync_dir(const char *dir, int whole_fs)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return dcpi_error(errno, "%s: cannot open directory: %s", dir, strerror(errno));
	if (whole_fs ? syncfs(fd) < 0 : fsync(fd) < 0 && errno != EINVAL) /* some can't */
		err = dcpi_error(errno, "%s: %s: %s", dir, whole_fs ? "syncfs" : "fsync of directory",
				 strerror(errno));
	close(fd);
	return err;
}

static int syncfs_dir(const char *dir)
{
	return sync_dir(dir, 1);
}

static int fsync_dir(const char *dir)
{
	return sync_dir(dir, 0);
}

static int fsync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), err = 0;

	if (fd < 0)
		return dcpi_error(errno, "%s: cannot open: %s", path, strerror(errno));
	if (fsync(fd) < 0)
		err = dcpi_error(errno, "%s: fsync: %s", path, strerror(errno));
	close(fd);
	return err;
}

/* Make the pending temporary files durable. */
static int sync_pending(struct dcpi_file_batch *b)
{
	int err = 0;

	if (b->n - b->committed >= DCPI_FILE_BATCH_SYNCFS &&
	    !(err = each_dir(b, b->committed, b->n, syncfs_dir)))
		return 0;
	if (err && err != -ENOSYS && err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	err = 0; /* a small batch, or no syncfs here: one by one */
	for (size_t i = b->committed; i < b->n && !err; i++)
		err = fsync_file(b->ents[i].tmp);
	return err;
}

static void drop_pending(struct dcpi_file_batch *b, size_t from)
{
	for (size_t i = from; i < b->n; i++) {
		unlink(b->ents[i].tmp);
		free(b->ents[i].path);
		free(b->ents[i].tmp);
	}
	b->n = from;
}

/* Forget the committed entries and the set: the batch is empty again. */
static void reset(struct dcpi_file_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->ents[i].path);
		free(b->ents[i].tmp);
	}
	b->n = b->committed = 0;
	if (b->set)
		memset(b->set, 0, b->setcap * sizeof(*b->set));
}

int dcpi_file_batch_commit(struct dcpi_file_batch *b, size_t *done)
{
	size_t from = b->committed, i;
	int err = sync_pending(b);

	if (done)
		*done = 0;
	if (err) {
		drop_pending(b, from);
		reset(b);
		return dcpi_error_prefix(err, "nothing written");
	}
	for (i = from; i < b->n; i++)
		if (rename(b->ents[i].tmp, b->ents[i].path) < 0) {
			err = dcpi_error(errno, "%s: cannot rename %s into place: %s",
					 b->ents[i].path, b->ents[i].tmp, strerror(errno));
			break;
		}
	b->committed = i;
	drop_pending(b, i); /* after a failed rename: the rest stay old */
	if (done)
		*done = i - from;
	if (i > from) {
		int derr = each_dir(b, from, i, fsync_dir);

		if (!err && derr)
			err = dcpi_error_prefix(derr, "written, but not durable");
	}
	reset(b);
	return err;
}

void dcpi_file_batch_release(struct dcpi_file_batch *b)
{
	drop_pending(b, b->committed);
	reset(b);
	free(b->ents);
	free(b->set);
	dcpi_file_batch_init(b);
}
