/* The database's image cache (dcpid -imagecache). */
#ifndef DCPI_IMAGECACHE_H
#define DCPI_IMAGECACHE_H

#include <stddef.h>
#include <stdint.h>

/* The image cache: DB/.build-id, where DIR/xx/yyyy... (the build-id in
 * hex, split after two digits) is a copy of the image with that build-id,
 * the layout dcpi_symtab_opts.buildid_cache reads.  A tool finds the code
 * that ran there even after the file was rebuilt or upgraded. */
int dcpi_imagecache_dir(const char *root, char *out, size_t len);

/* Put the file at path into the cache, if it still has that build-id.
 * Only a regular file is opened (never a device or FIFO renamed there),
 * and everything after the build-id check uses that descriptor, never the
 * path again.  A hard link of that inode when the database shares its
 * file system and the file is root's or ours, writable by no one else,
 * without set-id bits or capabilities (free, and the link keeps the old
 * inode when the file is replaced); else a copy, whose build-id is checked
 * again (files over DCPI_CACHE_MAX_BYTES are refused with -EFBIG).  0 when
 * cached or already there; -ESTALE when the file has another build-id
 * now. */
#define DCPI_CACHE_MAX_BYTES ((uint64_t)1 << 30)
int dcpi_imagecache_add(const char *root, const char *path, const uint8_t *id, size_t idlen,
			unsigned dirmode, unsigned filemode);


#endif
