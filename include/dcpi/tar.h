/* An epoch packed for analysis on another machine (dcpitar): a tar file
 * holding the epoch's directory (profiles, statistics, kallsyms
 * snapshots), the database's hosts file, and the code the profiles need,
 * found by build-id: each image (.build-id/xx/yyyy) and its separate debug
 * file (.build-id/xx/yyyy.debug), where the symbol search finds them (the
 * profiled path if it still has the build-id, the database's image cache,
 * the debug directories, debuginfod).  Unpacked, it is a database whose
 * image cache and debug directory hold that code, so the tools read it
 * after the binaries are gone.  The tar is written and read with
 * libarchive (POSIX pax format).
 *
 * Unpacking trusts nothing in the archive: only regular files (the
 * directories their names need are made, never taken from an entry: a
 * directory entry is refused), only the names a pack writes (an epoch directory, hosts,
 * .build-id/xx/...), no absolute paths, no "..", no links, no sparse
 * entries, files 0600 and the directories made 0700, each file and the total
 * capped; anything else is refused with a message naming the entry, and
 * the target directory must not exist yet.  It is opened (O_NOFOLLOW) as
 * soon as it is made and everything is created below that descriptor, so
 * renaming it and planting a symlink at its name (in a directory another
 * user can write) redirects nothing.  A refused archive leaves nothing:
 * what was unpacked before the refusal is removed.
 */
#ifndef DCPI_TAR_H
#define DCPI_TAR_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_TAR_FILE_MAX ((uint64_t)4 << 30)  /* one unpacked file at most */
#define DCPI_TAR_FILE_MAX_STR "4 GiB"
#define DCPI_TAR_TOTAL_MAX ((uint64_t)16 << 30) /* default cap of a whole unpacking */

struct dcpi_tar_stats {
	size_t files;           /* entries written or read */
	size_t images;          /* image files packed (by build-id) */
	size_t debug;           /* debug files packed */
	size_t missing;         /* profiled images with a build-id but no code found */
	uint64_t bytes;         /* file bytes written or read */
	char first_missing[512];/* the first missing image's path */
};

/* Pack epoch ("latest" or NULL: the latest) of db into out (created, not
 * overwritten: -EEXIST).  0, or -errno with a message. */
int dcpi_tar_pack(const char *db, const char *epoch, const char *out,
		  struct dcpi_tar_stats *st);
/* Unpack tar into the new directory dir (which must not exist: -EEXIST),
 * at most max bytes in all (0: DCPI_TAR_TOTAL_MAX; a compressed archive
 * may hold a thousand times its size).  0, or -errno with a message; on
 * error dir is removed with everything unpacked into it. */
int dcpi_tar_unpack(const char *tar, const char *dir, uint64_t max,
		    struct dcpi_tar_stats *st);

#endif
