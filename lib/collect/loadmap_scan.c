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

int dcpi_lm_scan_into(struct dcpi_loadmap *lm, struct lm_proc *p)
{
	struct lm_proc tmp = { .pid = p->pid };
	char path[4096];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%d/maps", lm->procroot, (int)p->pid);
	f = fopen(path, "re");
	if (!f) {
		rc = errno == ENOENT ? ESRCH : errno;
		rc = dcpi_error(rc, "%s: %s", path, strerror(errno));
		goto fail;
	}
	rc = scan_lines(lm, f, path, &tmp);
	fclose(f);
	if (rc < 0)
		goto fail;
	free(p->maps);
	p->maps = tmp.maps;
	p->nmaps = tmp.nmaps;
	p->cap = tmp.cap;
	return 0;
fail:
	free(tmp.maps);
	lm->scan_failed++;
	return rc;
}

int dcpi_loadmap_scan_pid(struct dcpi_loadmap *lm, int32_t pid)
{
	struct lm_proc *p = dcpi_lm_proc_find(lm, pid);
	int created = 0, rc;

	if (pid <= 0)
		return dcpi_error(EINVAL, "no process %d", (int)pid);
	if (!p) {
		p = dcpi_lm_proc_add(lm, pid);
		if (!p)
			return -ENOMEM;
		created = 1;
	}
	rc = dcpi_lm_scan_into(lm, p);
	if (rc < 0) {
		/* Remember the failure so samples of this pid don't retry. */
		if (created)
			p->dead = p->unknown = 1;
		return rc;
	}
	p->dead = p->unknown = 0;
	return 0;
}

/* A /proc entry name that is a pid: digits only, in int32 range. */
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
