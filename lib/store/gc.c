/* Retention: old epochs and unreferenced image-cache entries removed
 * (dcpid -gc), and what the database holds.  See dcpi_db_gc in dcpi/db.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <libiberty/hashtab.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/profile.h"

#define WALK_MAX_FILES (1u << 20)   /* du stops counting there */

/* The start of an epoch from its name (YYYYMMDDTHHMMSSZ), or -1. */
static time_t epoch_time(const char *name)
{
	struct tm tm = { 0 };

	if (!dcpi_db_is_epoch_name(name) ||
	    sscanf(name, "%4d%2d%2dT%2d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

/* Bytes of the regular files below dir (at most WALK_MAX_FILES of them). */
static uint64_t du(const char *dir, size_t *nfiles)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && *nfiles < WALK_MAX_FILES) {
		char path[4400];
		struct stat sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(sb.st_mode)) {
			sum += (uint64_t)sb.st_blocks * 512;
			(*nfiles)++;
		} else if (S_ISDIR(sb.st_mode) &&
			   snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path)) {
			sum += du(path, nfiles);
		}
	}
	closedir(d);
	return sum;
}

int dcpi_db_usage(const char *root, uint64_t *bytes, size_t *epochs)
{
	char **names;
	size_t n, nfiles = 0;
	int err = dcpi_db_epochs(root, &names, &n);

	if (err)
		return err;
	dcpi_db_names_free(names, n);
	*epochs = n;
	*bytes = du(root, &nfiles);
	return 0;
}

/* Open directory name below dirfd (path names it in messages) for
 * deleting in: never through a symbolic link (on a shared database another
 * host's root could point one at a directory on our local disk), and only
 * one owned by root or us and writable by no one else.  0 (*fd set),
 * 1 when it does not exist, or an error naming path. */
static int open_gc_dir(int dirfd, const char *name, const char *path, int *fd)
{
	struct stat st;

	*fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0) {
		if (errno == ENOENT)
			return 1;
		if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
			return dcpi_error(ELOOP, "%s: a symbolic link: refusing to delete "
					  "through it", path);
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	}
	if (fstat(*fd, &st))
		st.st_uid = (uid_t)-1;
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		int err = dcpi_error(EPERM, "%s: owned by uid %u with mode %o, not by us (uid %u) "
				     "or root and writable by no one else: refusing to delete in it",
				     path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				     (unsigned)geteuid());

		close(*fd);
		*fd = -1;
		return err;
	}
	return 0;
}

/* Remove host's files from its platform directory of epoch in root (all of
 * them unless pooled: then only those named for it), then that directory
 * and the epoch's if empty.  Everything below root is opened without
 * following a symbolic link (open_gc_dir). */
static int remove_host_files(int rootfd, const char *root, const char *epoch,
			     const char *platform, const char *host, uint64_t *freed)
{
	char mine[DCPI_HOST_MAX + 2], path[4200];
	int pooled = strcmp(platform, host) != 0, err, efd = -1, pfd = -1;
	struct dirent *de;
	DIR *d;

	snprintf(mine, sizeof(mine), "@%s.", host);
	snprintf(path, sizeof(path), "%s/%s", root, epoch);
	if ((err = open_gc_dir(rootfd, epoch, path, &efd)))
		return err > 0 ? 0 : err;
	snprintf(path, sizeof(path), "%s/%s/%s", root, epoch, platform);
	if ((err = open_gc_dir(efd, platform, path, &pfd))) {
		close(efd);
		return err > 0 ? 0 : err;
	}
	if (!(d = fdopendir(pfd))) {
		err = dcpi_error(errno, "%s: %s", path, strerror(errno));
		close(pfd);
		close(efd);
		return err;
	}
	while ((de = readdir(d))) {
		struct stat sb;

		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode) ||
		    (pooled && !strstr(de->d_name, mine)))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			*freed += (uint64_t)sb.st_blocks * 512;
		else if (!err)
			err = dcpi_error(errno, "%s/%s: %s", path, de->d_name, strerror(errno));
	}
	closedir(d);
	/* shared snapshot files of a pooled directory go with its last host */
	unlinkat(efd, platform, AT_REMOVEDIR);
	close(efd);
	unlinkat(rootfd, epoch, AT_REMOVEDIR);
	return err;
}

/* The build-ids of every profile of the kept epochs (any host). */
static void collect_ids(const char *root, char **epochs, size_t n, htab_t ids)
{
	for (size_t i = 0; i < n; i++) {
		char **hosts, dir[4096];
		size_t nh;

		if (dcpi_db_hosts(root, epochs[i], &hosts, &nh))
			continue;
		for (size_t h = 0; h < nh; h++) {
			char **files;
			size_t nf;

			if (dcpi_db_path(dir, sizeof(dir), root, epochs[i], hosts[h], NULL) ||
			    dcpi_db_profiles(dir, &files, &nf))
				continue;
			for (size_t f = 0; f < nf; f++) {
				struct dcpi_profile p;
				char hex[2 * DCPI_BUILD_ID_MAX + 1];
				void **slot;

				dcpi_profile_init(&p);
				if (!dcpi_profile_read(files[f], &p) && p.build_id_len) {
					dcpi_hex(p.build_id, p.build_id_len, hex);
					slot = htab_find_slot(ids, hex, INSERT);
					if (slot && !*slot)
						*slot = strdup(hex);
				}
				dcpi_profile_free(&p);
			}
			dcpi_db_names_free(files, nf);
		}
		dcpi_db_names_free(hosts, nh);
	}
}

/* Image-cache entries (and unpacked .debug files) no kept profile names,
 * untouched for longer than the horizon. */
static void gc_cache(int rootfd, const char *root, htab_t ids, time_t horizon,
		     struct dcpi_db_gc *st)
{
	char cache[4096], sub[4200];
	struct dirent *de, *fe;
	int cfd, sfd;
	DIR *d, *s;

	snprintf(cache, sizeof(cache), "%s/.build-id", root);
	if (open_gc_dir(rootfd, ".build-id", cache, &cfd))
		return;
	if (!(d = fdopendir(cfd))) {
		close(cfd);
		return;
	}
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", cache, de->d_name);
		if (open_gc_dir(dirfd(d), de->d_name, sub, &sfd))
			continue;
		if (!(s = fdopendir(sfd))) {
			close(sfd);
			continue;
		}
		while ((fe = readdir(s))) {
			char hex[2 * DCPI_BUILD_ID_MAX + 8];
			struct stat sb;

			if (fe->d_name[0] == '.' ||
			    fstatat(dirfd(s), fe->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISREG(sb.st_mode) || sb.st_mtime >= horizon)
				continue;
			snprintf(hex, sizeof(hex), "%s%.*s", de->d_name,
				 (int)strcspn(fe->d_name, "."), fe->d_name);
			if (htab_find(ids, hex))
				continue;
			if (unlinkat(dirfd(s), fe->d_name, 0) == 0) {
				st->cache_removed++;
				st->freed += (uint64_t)sb.st_blocks * 512;
			}
		}
		closedir(s);
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int dcpi_db_gc(const char *root, const char *host, const char *platform, const char *current,
	       unsigned days, unsigned keep, time_t now, struct dcpi_db_gc *st)
{
	time_t horizon = now - (time_t)days * 86400;
	char **epochs, plat[DCPI_HOST_MAX];
	size_t n, first_kept = 0;
	htab_t ids;
	int err, rootfd;

	memset(st, 0, sizeof(*st));
	/* the names must be a single component each: they are opened below root */
	if (snprintf(plat, sizeof(plat), "%s", platform) >= (int)sizeof(plat) || !plat[0] ||
	    strchr(plat, '/') || !strcmp(plat, ".") || !strcmp(plat, ".."))
		return dcpi_error(EINVAL, "'%s': not a host name", platform);
	if ((err = dcpi_db_epochs(root, &epochs, &n)))
		return err;
	/* the database itself was checked when the daemon opened it
	   (dcpi_db_check_dir); below it, nothing is followed */
	if ((rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err = dcpi_error(errno, "%s: %s", root, strerror(errno));
		dcpi_db_names_free(epochs, n);
		return err;
	}
	/* epoch i ended when i + 1 began; the latest `keep`, the current one and
	   those that ended within the horizon stay */
	for (size_t i = 0; i + keep < n && !err; i++) {
		time_t end = epoch_time(epochs[i + 1]);

		if ((current && !strcmp(epochs[i], current)) || end < 0 || end >= horizon)
			break;
		err = remove_host_files(rootfd, root, epochs[i], plat, host, &st->freed);
		st->epochs_removed++;
		first_kept = i + 1;
	}
	ids = htab_create_alloc(256, htab_hash_string, htab_eq_string, free, calloc, free);
	if (!err && ids) {
		collect_ids(root, epochs + first_kept, n - first_kept, ids);
		gc_cache(rootfd, root, ids, horizon, st);
	}
	if (ids)
		htab_delete(ids);
	close(rootfd);
	dcpi_db_names_free(epochs, n);
	return err;
}
