/* The database layout: epochs, platform directories, the writer lock.
 * See dcpi/db.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "internal.h"

static int mkdir_p(const char *path, unsigned mode)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return dcpi_error(ENAMETOOLONG, "%s: bad or too long path", path);
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return dcpi_error(errno, "%s: cannot create: %s", tmp, strerror(errno));
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return dcpi_error(errno, "%s: cannot create: %s", tmp, strerror(errno));
	return 0;
}

/* One directory a root daemon may write in: a real directory (not a
 * symlink), owned by us or root, and writable by nobody else -- except a
 * sticky ancestor such as /tmp, where others cannot rename what we own. */
static int trusted_dir(const char *path, int last)
{
	struct stat st;

	if (lstat(path, &st))
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return dcpi_error(ELOOP, "%s: refusing a symbolic link in the database path", path);
	if (!S_ISDIR(st.st_mode))
		return dcpi_error(ENOTDIR, "%s: not a directory", path);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return dcpi_error(EPERM, "%s: owned by uid %u, not by us (uid %u) or root: "
				  "refusing to write there", path, (unsigned)st.st_uid,
				  (unsigned)geteuid());
	if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
		return dcpi_error(EPERM, "%s: writable by group or others (mode %o): refusing "
				  "to write there", path, (unsigned)(st.st_mode & 07777));
	return 0;
}

/* Each symbolic link on the path as given, before realpath resolves it
 * away: one another user made (in a sticky directory such as /tmp, at the
 * database's own name) leads wherever that user chose, a root-owned
 * directory included, and is refused.  Root's and ours are followed. */
static int links_trusted(const char *path)
{
	char tmp[4096];
	struct stat st;
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return dcpi_error(ENAMETOOLONG, "%s: bad or too long path", path);
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1;; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = 0;
		if (!lstat(tmp, &st) && S_ISLNK(st.st_mode) && st.st_uid != 0 &&
		    st.st_uid != geteuid())
			return dcpi_error(ELOOP, "%s: a symbolic link owned by uid %u: refusing to "
					  "follow it to the database", tmp, (unsigned)st.st_uid);
		if (!c)
			return 0;
		*p = c;
	}
}

int dcpi_db_check_dir(const char *path)
{
	int err = links_trusted(path);
	char *abs = err ? NULL : realpath(path, NULL);

	if (err)
		return err;
	if (!abs)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	/* every component from the top: each one we pass could be swapped */
	for (char *p = abs + 1; !err; p++) {
		if (*p && *p != '/')
			continue;
		if (!*p) {
			err = trusted_dir(abs, 1);
			break;
		}
		*p = 0;
		err = trusted_dir(abs, 0);
		*p = '/';
	}
	free(abs);
	return err;
}

int dcpi_db_init(const char *root, unsigned dirmode)
{
	int err = links_trusted(root); /* before mkdir follows one */

	if (!err)
		err = mkdir_p(root, dirmode);
	return err ? err : dcpi_db_check_dir(root);
}

int dcpi_db_host(char *out, size_t len)
{
	char h[DCPI_HOST_MAX];

	if (gethostname(h, sizeof(h) - 1))
		snprintf(h, sizeof(h), "localhost");
	h[sizeof(h) - 1] = 0;
	if (!h[0])
		snprintf(h, sizeof(h), "localhost");
	for (char *p = h; *p; p++)
		if (*p == '/' || (p == h && *p == '.'))
			*p = '_';
	if (strlen(h) >= len)
		return dcpi_error(ENAMETOOLONG, "host name too long");
	snprintf(out, len, "%s", h);
	return 0;
}

int dcpi_db_path(char *out, size_t len, const char *root, const char *epoch,
		 const char *host, const char *file)
{
	int n = snprintf(out, len, "%s%s%s%s%s%s%s", root,
			 epoch ? "/" : "", epoch ? epoch : "",
			 host ? "/" : "", host ? host : "",
			 file ? "/" : "", file ? file : "");

	if (n < 0 || (size_t)n >= len)
		return dcpi_error(ENAMETOOLONG, "%s: path too long", root);
	return 0;
}

int dcpi_db_is_epoch_name(const char *s)
{
	/* YYYYMMDDTHHMMSSZ, optionally -N */
	static const char shape[] = "ddddddddTddddddZ";

	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return 0;
	}
	s += sizeof(shape) - 1;
	if (!*s)
		return 1;
	if (*s++ != '-' || !*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int dcpi_db_epoch_create(const char *root, time_t t, unsigned dirmode,
			 char name[DCPI_EPOCH_NAME_MAX])
{
	char base[DCPI_EPOCH_NAME_MAX], path[4096];
	struct tm tm;
	int err;

	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y%m%dT%H%M%SZ", &tm);
	/* Bounded: a thousand epochs in one second means something is wrong. */
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(name, DCPI_EPOCH_NAME_MAX, "%.20s", base);
		else
			snprintf(name, DCPI_EPOCH_NAME_MAX, "%.20s-%d", base, i);
		err = dcpi_db_path(path, sizeof(path), root, name, NULL, NULL);
		if (err)
			return err;
		if (mkdir(path, dirmode) == 0)
			return 0;
		if (errno != EEXIST)
			return dcpi_error(errno, "%s: cannot create epoch: %s", path, strerror(errno));
	}
	return dcpi_error(EEXIST, "%s: too many epochs named %s", root, base);
}

static int cmp_str(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);

	/* Epoch "X-10" sorts after "X-9": compare suffix numbers by length. */
	if (lx != ly && !strncmp(x, y, 16) && dcpi_db_is_epoch_name(x) && dcpi_db_is_epoch_name(y))
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

void dcpi_db_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* List the entries of dir accepted by want(), sorted.  With prefix, each
 * name is returned as "dir/name". */
static int list_dir(const char *dir, int (*want)(const char *dir, const struct dirent *),
		    int full, char ***out, size_t *nout)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	if (!d)
		return dcpi_error(errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		char *s;

		if (!want(dir, de))
			continue;
		if ((err = DCPI_GROW(v, cap, n + 1, SIZE_MAX, "directory entries")))
			goto out;
		if (full ? asprintf(&s, "%s/%s", dir, de->d_name) < 0
			 : !(s = strdup(de->d_name))) {
			err = dcpi_error(ENOMEM, "out of memory listing %s", dir);
			goto out;
		}
		v[n++] = s;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
out:
	closedir(d);
	if (err) {
		dcpi_db_names_free(v, n);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int is_subdir(const char *dir, const struct dirent *de)
{
	char p[4096];
	struct stat st;

	if (de->d_name[0] == '.')
		return 0;
	if (de->d_type == DT_DIR)
		return 1;
	if (de->d_type != DT_UNKNOWN)
		return 0;
	snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static int is_epoch_dir(const char *dir, const struct dirent *de)
{
	return dcpi_db_is_epoch_name(de->d_name) && is_subdir(dir, de);
}

static int is_profile(const char *dir, const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	(void)dir;
	return de->d_name[0] != '.' && n > 5 && !strcmp(de->d_name + n - 5, ".prof");
}

int dcpi_db_epochs(const char *root, char ***names, size_t *n)
{
	return list_dir(root, is_epoch_dir, 0, names, n);
}

int dcpi_db_epoch_latest(const char *root, char name[DCPI_EPOCH_NAME_MAX])
{
	char **v;
	size_t n;
	int err = dcpi_db_epochs(root, &v, &n);

	if (err)
		return err;
	if (n == 0) {
		free(v);
		return dcpi_error(ENOENT, "%s: no epochs in this database", root);
	}
	snprintf(name, DCPI_EPOCH_NAME_MAX, "%s", v[n - 1]);
	dcpi_db_names_free(v, n);
	return 0;
}

int dcpi_db_hosts(const char *root, const char *epoch, char ***names, size_t *n)
{
	char p[4096];
	int err = dcpi_db_path(p, sizeof(p), root, epoch, NULL, NULL);

	return err ? err : list_dir(p, is_subdir, 0, names, n);
}

int dcpi_db_profiles(const char *platdir, char ***paths, size_t *n)
{
	return list_dir(platdir, is_profile, 1, paths, n);
}

static int lock_path(char *out, size_t len, const char *root, const char *host)
{
	char f[DCPI_HOST_MAX + 16];

	snprintf(f, sizeof(f), ".dcpid-%s.lock", host);
	return dcpi_db_path(out, len, root, NULL, NULL, f);
}

int dcpi_db_lock_holder(const char *root, const char *host)
{
	char p[4096], buf[32] = "";
	int fd, pid = 0;
	ssize_t r;

	if (lock_path(p, sizeof(p), root, host))
		return 0;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* nobody holds it */
		close(fd);
		return 0;
	}
	r = read(fd, buf, sizeof(buf) - 1);
	if (r > 0) {
		buf[r] = 0;
		pid = atoi(buf);
	}
	close(fd);
	return pid > 0 ? pid : -1;
}

int dcpi_db_lock(const char *root, const char *host, int *out)
{
	char p[4096], pid[32];
	int fd, err, holder;

	err = lock_path(p, sizeof(p), root, host);
	if (err)
		return err;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return dcpi_error(errno, "%s: %s", p, strerror(errno));
	if ((err = dcpi_file_check_own(fd, p))) {
		close(fd);
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno;
		close(fd);
		if (err != EWOULDBLOCK)
			return dcpi_error(err, "%s: cannot lock: %s", p, strerror(err));
		holder = dcpi_db_lock_holder(root, host);
		return dcpi_error(EBUSY, "another dcpid (pid %d) is already running on %s for host %s",
				  holder, root, host);
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, strlen(pid), 0) < 0) {
		err = dcpi_error(errno, "%s: %s", p, strerror(errno));
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* ---- images the database holds ---------------------------------------------- */

static int mkdir_checked(const char *dir, unsigned dirmode)
{
	if (mkdir(dir, dirmode) && errno != EEXIST)
		return dcpi_error(errno, "%s: %s", dir, strerror(errno));
	return dcpi_db_check_dir(dir);
}

static int put_image(const char *root, const uint8_t *id, size_t idlen, const void *data,
		     size_t len, unsigned dirmode, unsigned mode, int replace,
		     struct dcpi_file_batch *b)
{
	char hex[2 * DCPI_BUILD_ID_MAX + 1], cdir[4096], dir[4200], file[4300];
	int err;

	if (idlen == 0 || idlen > DCPI_BUILD_ID_MAX)
		return dcpi_error(EINVAL, "an image without a build-id cannot be stored");
	dcpi_hex(id, idlen, hex);
	err = dcpi_db_path(cdir, sizeof(cdir), root, NULL, NULL, ".build-id");
	if (err)
		return err;
	if (snprintf(dir, sizeof(dir), "%s/%.2s", cdir, hex) >= (int)sizeof(dir) ||
	    snprintf(file, sizeof(file), "%s/%s", dir, hex + 2) >= (int)sizeof(file))
		return dcpi_error(ENAMETOOLONG, "%s: path too long", root);
	if ((!replace && access(file, F_OK) == 0) || (b && dcpi_file_batch_has(b, file)))
		return 0; /* ids name content: there, or on its way */
	err = mkdir_checked(cdir, dirmode);
	if (!err)
		err = mkdir_checked(dir, dirmode);
	if (!err)
		err = b ? dcpi_file_batch_add(b, file, data, len, mode)
			: dcpi_file_write_atomic(file, data, len, mode);
	return err;
}

int dcpi_db_put_image(const char *root, const uint8_t *id, size_t idlen, const void *data,
		      size_t len, unsigned dirmode, unsigned mode)
{
	return put_image(root, id, idlen, data, len, dirmode, mode, 0, NULL);
}

int dcpi_db_put_image_batch(const char *root, const uint8_t *id, size_t idlen, const void *data,
			    size_t len, unsigned dirmode, unsigned mode, struct dcpi_file_batch *b)
{
	return put_image(root, id, idlen, data, len, dirmode, mode, 0, b);
}

int dcpi_db_replace_image_batch(const char *root, const uint8_t *id, size_t idlen,
				const void *data, size_t len, unsigned dirmode, unsigned mode,
				struct dcpi_file_batch *b)
{
	return put_image(root, id, idlen, data, len, dirmode, mode, 1, b);
}
