/* Reading processes' mappings from PROCROOT/PID/maps: the initial scan and
 * the lazy lookup of pids first met later.  See dcpi/loadmap.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dcpi/error.h"
#include "dcpi/loadmap.h"
#include "dcpi/maps.h"
#include "loadmap_priv.h"

/* Record one executable line into p. */
static int scan_entry(struct dcpi_loadmap *lm, struct lm_proc *p,
		      const struct dcpi_maps_entry *e)
{
	struct lm_src src = { p->pid, e->path, e->maj, e->min, e->ino, e->start, e->end,
			      NULL, 0 };
	uint64_t pgoff = e->pgoff;
	int image;

	if (!(e->prot & PROT_EXEC))
		return 0;
	image = dcpi_lm_mapping_image(lm, &src, &pgoff);
	if (image < DCPI_NO_IMAGE)
		return image;
	return dcpi_lm_place(p, e->start, e->end, pgoff, image);
}

static int scan_lines(struct dcpi_loadmap *lm, FILE *f, const char *path, struct lm_proc *p)
{
	struct dcpi_maps_entry e;
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	int rc = 0;

	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		rc = dcpi_maps_parse_line(line, &e);
		if (rc == 0)
			rc = scan_entry(lm, p, &e);
		if (rc < 0) {
			dcpi_error_prefix(-rc, "%s:%lu", path, lineno);
			goto out;
		}
	}
	if (ferror(f)) {
		/* A process that exits while we read its maps reads as ESRCH. */
		rc = dcpi_error(errno ? errno : EIO, "%s: %s", path, strerror(errno ? errno : EIO));
		goto out;
	}
out:
	free(line);
	return rc;
}

/* Replace p's mappings with those of the maps text in f (named path). */
static int scan_stream(struct dcpi_loadmap *lm, struct lm_proc *p, FILE *f, const char *path)
{
	struct lm_proc tmp = { .pid = p->pid };
	int rc = scan_lines(lm, f, path, &tmp);

	if (rc < 0) {
		free(tmp.maps);
		lm->scan_failed++;
		return rc;
	}
	free(p->maps);
	p->maps = tmp.maps;
	p->nmaps = tmp.nmaps;
	p->cap = tmp.cap;
	return 0;
}

int dcpi_lm_scan_into(struct dcpi_loadmap *lm, struct lm_proc *p)
{
	char path[4096];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%d/maps", lm->procroot, (int)p->pid);
	f = fopen(path, "re");
	if (!f) {
		rc = errno == ENOENT ? ESRCH : errno;
		lm->scan_failed++;
		return dcpi_error(rc, "%s: %s", path, strerror(errno));
	}
	rc = scan_stream(lm, p, f, path);
	fclose(f);
	return rc;
}

/* Find or add pid; *created says whether it is new. */
static struct lm_proc *proc_for_scan(struct dcpi_loadmap *lm, int32_t pid, int *created)
{
	struct lm_proc *p = dcpi_lm_proc_find(lm, pid);

	*created = !p;
	return p ? p : dcpi_lm_proc_add(lm, pid);
}

/* After a scan of p: remember a failure so samples of this pid don't retry. */
static int scan_done(struct lm_proc *p, int created, int rc)
{
	if (rc < 0) {
		if (created)
			p->dead = p->unknown = 1;
		return rc;
	}
	p->dead = p->unknown = 0;
	return 0;
}

int dcpi_loadmap_scan_text(struct dcpi_loadmap *lm, int32_t pid, const char *text, size_t len)
{
	struct lm_proc *p;
	int created, rc;
	FILE *f;

	if (pid <= 0)
		return dcpi_error(EINVAL, "no process %d", (int)pid);
	if (!(p = proc_for_scan(lm, pid, &created)))
		return -ENOMEM;
	if (!len) { /* fmemopen refuses an empty buffer: no lines, no mappings */
		free(p->maps);
		p->maps = NULL;
		p->nmaps = p->cap = 0;
		return scan_done(p, created, 0);
	}
	f = fmemopen((void *)text, len, "r");
	if (!f)
		return scan_done(p, created, dcpi_error(errno, "fmemopen: %s", strerror(errno)));
	rc = scan_stream(lm, p, f, "maps text");
	fclose(f);
	return scan_done(p, created, rc);
}

int dcpi_loadmap_scan_pid(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p;
	int created;

	if (pid <= 0)
		return dcpi_error(EINVAL, "no process %d", (int)pid);
	if (!(p = proc_for_scan(lm, pid, &created)))
		return -ENOMEM;
	return scan_done(p, created, dcpi_lm_scan_into(lm, p));
}

static int32_t entry_pid(const char *name)
{
	int64_t v = 0;
	const char *c;

	if (!*name)
		return -1;
	for (c = name; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
		if (v > INT32_MAX)
			return -1;
	}
	return (int32_t)v;
}

int dcpi_loadmap_scan(struct dcpi_loadmap *lm)
{
	struct dirent *d;
	DIR *dir;
	int n = 0, rc;

	dir = opendir(lm->procroot);
	if (!dir)
		return dcpi_error(errno, "%s: %s", lm->procroot, strerror(errno));
	while ((d = readdir(dir)) != NULL) {
		int32_t pid = entry_pid(d->d_name);
		if (pid <= 0)
			continue;
		rc = dcpi_loadmap_scan_pid(lm, pid);
		if (rc == 0)
			n++;
		else if (rc == -ENOMEM) {
			n = rc;
			break;
		}
	}
	closedir(dir);
	return n;
}
