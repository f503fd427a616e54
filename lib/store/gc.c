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

/* Remove host's files from platdir (all of them unless pooled: then only
 * those named for it), then platdir and the epoch directory if empty. */
static int remove_host_files(const char *epochdir, const char *platdir, const char *host,
			     uint64_t *freed)
{
	char mine[DCPI_HOST_MAX + 2];
	int pooled = dcpi_db_pooled(platdir, host), err = 0;
	struct dirent *de;
	DIR *d = opendir(platdir);

	snprintf(mine, sizeof(mine), "@%s.", host);
	if (!d)
		return errno == ENOENT ? 0 : dcpi_error(errno, "%s: %s", platdir, strerror(errno));
	while ((de = readdir(d))) {
		struct stat sb;

		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode) ||
		    (pooled && !strstr(de->d_name, mine)))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			*freed += (uint64_t)sb.st_blocks * 512;
		else if (!err)
			err = dcpi_error(errno, "%s/%s: %s", platdir, de->d_name, strerror(errno));
	}
	closedir(d);
	/* shared snapshot files of a pooled directory go with its last host */
	rmdir(platdir);
	rmdir(epochdir);
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
static void gc_cache(const char *root, htab_t ids, time_t horizon, struct dcpi_db_gc *st)
{
	char cache[4096], sub[4200];
	struct dirent *de, *fe;
	DIR *d, *s;

	if (dcpi_db_path(cache, sizeof(cache), root, NULL, NULL, ".build-id") ||
	    !(d = opendir(cache)))
		return;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.' ||
		    snprintf(sub, sizeof(sub), "%s/%s", cache, de->d_name) >= (int)sizeof(sub) ||
		    !(s = opendir(sub)))
			continue;
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
		rmdir(sub);
	}
	closedir(d);
}

int dcpi_db_gc(const char *root, const char *host, const char *platform, const char *current,
	       unsigned days, unsigned keep, time_t now, struct dcpi_db_gc *st)
{
	time_t horizon = now - (time_t)days * 86400;
	char **epochs, epochdir[4096], platdir[4096];
	size_t n, first_kept = 0;
	htab_t ids;
	int err;

	memset(st, 0, sizeof(*st));
	if ((err = dcpi_db_epochs(root, &epochs, &n)))
		return err;
	/* epoch i ended when i + 1 began; the latest `keep`, the current one and
	   those that ended within the horizon stay */
	for (size_t i = 0; i + keep < n && !err; i++) {
		time_t end = epoch_time(epochs[i + 1]);

		if ((current && !strcmp(epochs[i], current)) || end < 0 || end >= horizon)
			break;
		if (!(err = dcpi_db_path(epochdir, sizeof(epochdir), root, epochs[i], NULL, NULL)) &&
		    !(err = dcpi_db_path(platdir, sizeof(platdir), root, epochs[i], platform, NULL)))
			err = remove_host_files(epochdir, platdir, host, &st->freed);
		st->epochs_removed++;
		first_kept = i + 1;
	}
	ids = htab_create_alloc(256, htab_hash_string, htab_eq_string, free, calloc, free);
	if (!err && ids) {
		collect_ids(root, epochs + first_kept, n - first_kept, ids);
		gc_cache(root, ids, horizon, st);
	}
	if (ids)
		htab_delete(ids);
	dcpi_db_names_free(epochs, n);
	return err;
}
