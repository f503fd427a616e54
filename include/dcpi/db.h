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
 */
#ifndef DCPI_DB_H
#define DCPI_DB_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dcpi/profile.h"

#define DCPI_EPOCH_NAME_MAX 32
#define DCPI_HOST_MAX 256

/* Create DB (and parents) if missing with dirmode; refuse a non-directory. */
int dcpi_db_init(const char *root, unsigned dirmode);

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
/* The pid recorded in the lock file if the lock is held, else 0. */
int dcpi_db_lock_holder(const char *root, const char *host);

/* The image cache: DB/.build-id, where DIR/xx/yyyy... (the build-id in
 * hex, split after two digits) is a copy of the image with that build-id,
 * the layout dcpi_symtab_opts.buildid_cache reads.  A tool finds the code
 * that ran there even after the file was rebuilt or upgraded. */
int dcpi_db_cache_dir(const char *root, char *out, size_t len);

/* Put the file at path into the cache, if it still has that build-id:
 * a hard link when the database shares its file system (free, and the
 * link keeps the old inode when the file is replaced), else a copy (files
 * over DCPI_CACHE_MAX_BYTES are refused with -EFBIG).  0 when cached or
 * already there; -ESTALE when the file has another build-id now. */
#define DCPI_CACHE_MAX_BYTES ((uint64_t)1 << 30)
int dcpi_db_cache_image(const char *root, const char *path, const uint8_t *id, size_t idlen,
			unsigned dirmode, unsigned filemode);

/* Snapshot the kernel's symbols into a platform directory: procdir's
 * kallsyms gzip-compressed as kallsyms.gz (a sixth of its size: it is
 * most of an epoch's disk otherwise) and modules as it is (absent on a
 * kernel without modules, which is not an error).  procdir is normally
 * "/proc".  All writes atomic. */
#define DCPI_SNAPSHOT_MAX ((size_t)256 << 20)
int dcpi_db_snapshot_kernel(const char *platdir, const char *procdir, unsigned mode);

/* The kallsyms snapshot of a platform directory: kallsyms.gz, or the
 * uncompressed kallsyms older databases hold.  -ENOENT when neither. */
int dcpi_db_kallsyms_path(const char *platdir, char *out, size_t len);

/* Epoch statistics: what the tools show in their headers. */
struct dcpi_stats_event {
	char name[64];
	uint64_t period;
	uint64_t samples;
	uint64_t time_enabled;  /* ns, summed over CPUs */
	uint64_t time_running;
};

struct dcpi_epoch_stats {
	char epoch[DCPI_EPOCH_NAME_MAX];
	char platform[DCPI_HOST_MAX];
	int64_t start;          /* unix time the epoch began */
	int64_t updated;        /* unix time of the last merge */
	uint64_t samples;       /* samples read from the kernel */
	uint64_t lost;          /* samples the kernel dropped (ring full) */
	uint64_t throttled;     /* throttle events (kernel slowed sampling) */
	uint64_t unknown;       /* samples attributable to no image */
	uint64_t kernel;        /* samples in kernel mode */
	uint64_t images;        /* profiles written */
	uint32_t ncpus;
	uint32_t nevents;
	struct dcpi_stats_event ev[DCPI_MAX_EVENTS];
};

int dcpi_stats_write(const char *path, const struct dcpi_epoch_stats *st, unsigned mode);
/* Parse; unknown keys are ignored (newer writers), malformed lines are
 * -EBADMSG naming the line. */
int dcpi_stats_read(const char *path, struct dcpi_epoch_stats *st);
int dcpi_stats_parse(const char *text, size_t len, struct dcpi_epoch_stats *st);

#endif
