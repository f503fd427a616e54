/* The profile database on disk.
 *
 *   DB/                              (DCPIDB)
 *     .dcpid-HOST.lock               one writer per host: flock + its pid
 *     .build-id/xx/yyyy...           copies of profiled images (dcpid
 *                                    -imagecache), by build-id
 *     .dcpid-HOST.sock               the daemon's control socket
 *     dcpid-HOST.log                 the daemon's log (default)
 *     20261122T101500Z/              an epoch, named by its UTC start
 *       HOST/                        a platform directory
 *         NAME.prof ...              one profile per image identity
 *         epoch.stats                samples, losses, events (text)
 *         kallsyms.gz, modules       snapshot of the kernel's symbols
 *
 * Directories are created 0700 and files 0600 unless the caller passes a
 * wider mode: profiles reveal what other users run.
 *
 * Hosts and platforms.  A database may be shared by several hosts (on a
 * shared file system).  Each writes under its platform directory: its
 * host name, or the platform the file DB/hosts gives it ("HOST PLATFORM"
 * lines, '#' comments), so that machines of one platform pool their
 * profiles into one directory.  There each host writes only its own
 * files, named with "@HOST" (NAME@HOST.prof, epoch@HOST.stats), and
 * publishes each by write-then-rename: no lock is shared across machines.
 * Epochs are database-wide: a daemon adopts a newer epoch another host
 * started at its next merge.
 */
#ifndef DCPI_DB_H
#define DCPI_DB_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dcpi/file.h"
#include "dcpi/profile.h"

#define DCPI_EPOCH_NAME_MAX 32
#define DCPI_HOST_MAX 256

/* The platform directory host writes under: what DB/hosts maps it to, or
 * host.  0 (out set), or -EBADMSG naming the line of a malformed hosts
 * file (out is then host). */
int dcpi_db_platform(const char *root, const char *host, char *out, size_t len);
/* Whether host shares platdir with others (its name is not host's). */
int dcpi_db_pooled(const char *platdir, const char *host);
/* An epoch file of host's in a platform directory: PLATDIR/epoch.SUFFIX,
 * or PLATDIR/epoch@HOST.SUFFIX where hosts share it (host NULL: the
 * first).  -ENAMETOOLONG. */
int dcpi_db_epoch_file(char *out, size_t len, const char *platdir, const char *host,
		       const char *suffix);
/* host's statistics file in platdir: epoch.stats, or epoch@HOST.stats
 * in a pooled directory. */
int dcpi_db_stats_path(char *out, size_t len, const char *platdir, const char *host);

/* Create DB (and parents) if missing with dirmode, and check it with
 * dcpi_db_check_dir: every writer (dcpid, often root) calls it on the
 * database and on each directory it writes in. */
int dcpi_db_init(const char *root, unsigned dirmode);
/* -EPERM/-ENOTDIR unless path (resolved: realpath(3)) and every directory
 * above it is a directory owned by us or root and writable by nobody else
 * (an ancestor may be world-writable if sticky, as /tmp); -ELOOP when a
 * symbolic link on the path as given (the database's own name in /tmp,
 * say) is another user's.  Then no other
 * user can swap anything under the resolved path, and plain paths below it
 * are safe: a writer uses the resolved path from then on. */
int dcpi_db_check_dir(const char *path);

/* This machine's platform name: the host name, with '/' and leading '.'
 * made safe for a directory name. */
int dcpi_db_host(char *out, size_t len);

/* Create a new epoch directory named after t (UTC, to the second).  If that
 * name exists (two epochs in one second) a "-2", "-3"... suffix keeps
 * names unique and sorted. */
int dcpi_db_epoch_create(const char *root, time_t t, unsigned dirmode,
			 char name[DCPI_EPOCH_NAME_MAX]);

/* Whether name has the form of an epoch directory name. */
int dcpi_db_is_epoch_name(const char *name);

/* All epochs, oldest first.  *names is a malloc'd array of malloc'd
 * strings; release with dcpi_db_names_free. */
int dcpi_db_epochs(const char *root, char ***names, size_t *n);
void dcpi_db_names_free(char **names, size_t n);

/* The newest epoch; -ENOENT with "DB: no epochs" when there is none. */
int dcpi_db_epoch_latest(const char *root, char name[DCPI_EPOCH_NAME_MAX]);

/* Hosts (platform directories) of an epoch, sorted. */
int dcpi_db_hosts(const char *root, const char *epoch, char ***names, size_t *n);

/* Profile files (*.prof) of a platform directory, sorted, as full paths. */
int dcpi_db_profiles(const char *platdir, char ***paths, size_t *n);

/* snprintf-style path builders; -ENAMETOOLONG when it does not fit. */
int dcpi_db_path(char *out, size_t len, const char *root, const char *epoch,
		 const char *host, const char *file);

/* Take the writer lock of (root, host): -EBUSY with "another dcpid (pid N)
 * is running on DB for host H" when held.  *fd stays open while held. */
int dcpi_db_lock(const char *root, const char *host, int *fd);
/* Retention (dcpid -gc DAYS): host's files in every epoch but the latest
 * keep, the current one and those that ended (the next one began) within
 * days of now are removed (all of its platform directory, or in a pooled
 * one only host's files; the directories when empty); then the image
 * cache's entries (DB/.build-id/xx/yyyy[.debug]) that no profile of a
 * kept epoch names and that are older than days.  Each host removes only
 * what it wrote, so hosts sharing the database may all run it. */
struct dcpi_db_gc {
	size_t epochs_removed;  /* epochs whose files of host were removed */
	size_t cache_removed;   /* image-cache files removed */
	uint64_t freed;         /* bytes (allocated blocks) freed */
};
int dcpi_db_gc(const char *root, const char *host, const char *platform, const char *current,
	       unsigned days, unsigned keep, time_t now, struct dcpi_db_gc *st);
/* What the database holds: bytes of its files (allocated blocks; counting
 * stops after a million files) and its epochs. */
int dcpi_db_usage(const char *root, uint64_t *bytes, size_t *epochs);

/* The pid recorded in the lock file if the lock is held, else 0. */
int dcpi_db_lock_holder(const char *root, const char *host);

/* The file name of a profile (no directory), from its identity: NAME-HASH.prof
 * for an image (HASH over path, kind and build-id, or size and mtime when
 * there is no build-id), with _HOSTPID for a per-process one;
 * unknown@HOST.prof, and HOSTPID@0xREGION.prof for per-process unknown
 * regions.  HOST is p->platform. */
int dcpi_db_profile_name(const struct dcpi_profile *p, char *out, size_t len);

/* Add p to its profile in the platform directory dir (written atomically
 * with mode; created when absent).  A corrupt existing profile is kept
 * aside as NAME.prof.corrupt and a fresh one written: nothing is silently
 * lost.  A file of another identity under the same name (a hash collision,
 * or the same image sampled at another period) moves p to NAME~N.prof.
 * Other read errors (EMFILE, EIO) are returned and nothing is written: the
 * caller keeps p and retries. */
int dcpi_db_merge_profile(const char *dir, struct dcpi_profile *p, unsigned mode);
/* The same into batch b (dcpi/file.h): the new contents are written under
 * their temporary name and take their place when b is committed, with one
 * sync for the whole batch.  -EAGAIN (no message) when the file it would
 * read and write is pending in b already: commit b first, then call again
 * (a file must be read after what the batch writes to it is in place). */
int dcpi_db_merge_profile_batch(const char *dir, struct dcpi_profile *p, unsigned mode,
				struct dcpi_file_batch *b);

/* Store an image the database itself holds (a JIT pseudo-image) under
 * DB/.build-id/xx/yyyy by its build-id, the layout the image cache uses
 * and the tools search: written atomically with mode, the directories
 * created with dirmode and checked (dcpi_db_check_dir).  Nothing is
 * written when a file of that id exists: ids name content.  0 or -errno. */
int dcpi_db_put_image(const char *root, const uint8_t *id, size_t idlen, const void *data,
		      size_t len, unsigned dirmode, unsigned mode);
/* The same into batch b (dcpi/file.h): in place when b is committed, with
 * one sync for the batch; an image pending in b already is not written
 * again.  Add it before the profiles that name it: b renames in order. */
int dcpi_db_put_image_batch(const char *root, const uint8_t *id, size_t idlen, const void *data,
			    size_t len, unsigned dirmode, unsigned mode, struct dcpi_file_batch *b);
/* The same, replacing the file of that id if there is one: a JIT process's
 * grown pseudo-image, a superset of the one it replaces at the same
 * offsets, so the profiles naming the old one read right in the new. */
int dcpi_db_replace_image_batch(const char *root, const uint8_t *id, size_t idlen,
				const void *data, size_t len, unsigned dirmode, unsigned mode,
				struct dcpi_file_batch *b);

#endif
