/* jitdump files (jit-PID.dump, the format of the Linux perf tool's
 * tools/perf/util/jitdump.h): found through the executable mapping of the
 * file the runtime makes, opened through /proc/PID/map_files (the very
 * file mapped, no path resolved), read incrementally up to the time of the
 * sample being named.  See dcpi/jitmap.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "internal.h"
#include "jitmap_priv.h"

#define JD_MAGIC 0x4A695444u
#define JD_MAGIC_SWAPPED 0x4454694Au
#define JD_HEADER 40u
#define JD_FLAG_ARCH_TIMESTAMP 1u
#define JD_REC_HEADER 16u

enum { JD_LOAD = 0, JD_MOVE = 1, JD_DEBUG_INFO = 2, JD_CLOSE = 3 };

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void corrupt(struct dcpi_jitmap *jm, struct jm_proc *p, const char *why)
{
	jm->st.skipped++;
	p->dump_done = 1;
	dcpi_jm_warn(jm, "jitdump %s of process %d: %s at offset %llu: the rest is not read",
		     p->dump_path, (int)p->pid, why, (unsigned long long)p->dump_pos);
}

/* ---- records -------------------------------------------------------------- */

/* Printable UTF-8: node 20 now and then writes a DEBUG_INFO file name
 * that is neither (bytes of a freed string). */
static int file_name_ok(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t more = s[i] < 0x80 ? 0 : (s[i] & 0xe0) == 0xc0 ? 1 : (s[i] & 0xf0) == 0xe0 ? 2
			    : (s[i] & 0xf8) == 0xf0 ? 3 : 4;

		if (more == 4 || (more == 0 && (s[i] < 0x20 || s[i] == 0x7f)) ||
		    (more == 1 && s[i] < 0xc2) || n - i <= more)
			return 0;
		for (size_t k = 1; k <= more; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += more + 1;
	}
	return 1;
}

/* One pending line (its address absolute until a LOAD takes it); lines
 * over the cap, of line 0 or without a file are dropped.  A file name of
 * the one byte 0xff means the previous entry's (perf's jitdump.h). */
static int keep_line(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t addr, uint32_t line,
		     const char *file, size_t flen)
{
	int err;

	if (!line || !flen || p->nlines >= JM_MAX_LINES)
		return 0;
	err = dcpi_jm_charge(jm, p, sizeof(struct jm_line) + (flen > DCPI_JITMAP_MAX_LINE
							      ? DCPI_JITMAP_MAX_LINE : flen) + 1,
			     "source lines");
	if (err)
		return err == -ENOSPC ? 0 : err;
	if (flen == 1 && (uint8_t)file[0] == 0xff) { /* "as the entry before" */
		if (p->nlines == p->pending0)
			return 0;
		err = DCPI_GROW(p->lines, p->lines_cap, p->nlines + 1, JM_MAX_LINES, "lines");
		if (err)
			return err == -EFBIG ? 0 : err;
		p->lines[p->nlines] = (struct jm_line){ addr, p->lines[p->nlines - 1].file_off, line };
		p->nlines++;
		return 0;
	}
	if (flen > DCPI_JITMAP_MAX_LINE)
		flen = DCPI_JITMAP_MAX_LINE;
	if (!file_name_ok((const uint8_t *)file, flen)) {
		/* take_lines finds a file in the procedure's name */
		err = DCPI_GROW(p->lines, p->lines_cap, p->nlines + 1, JM_MAX_LINES, "lines");
		if (err)
			return err == -EFBIG ? 0 : err;
		p->lines[p->nlines++] = (struct jm_line){ addr, JM_NO_FILE, line };
		return 0;
	}
	err = DCPI_GROW(p->lines, p->lines_cap, p->nlines + 1, JM_MAX_LINES, "lines");
	if (!err)
		err = dcpi_buf_grow(&p->names, flen + 1);
	if (err)
		return err == -EFBIG ? 0 : err;
	p->lines[p->nlines++] = (struct jm_line){ addr, p->names.len, line };
	dcpi_buf_put(&p->names, file, flen);
	return dcpi_buf_put(&p->names, "", 1);
}

/* The file in a procedure name of node's form "JS:*f /path/x.js:LINE:COL"
 * (stored in names), for lines whose file name was unreadable; else
 * JM_NO_FILE. */
static uint64_t name_file(struct jm_proc *p, const struct jm_entry *e)
{
	const char *name = (const char *)p->names.data + e->name_off;
	const char *sp = strrchr(name, ' '), *c2, *c1;
	size_t flen;
	uint64_t off;

	if (!sp || !(c2 = strrchr(sp, ':')) || c2 == sp + 1)
		return JM_NO_FILE;
	for (c1 = c2 - 1; c1 > sp && *c1 != ':'; c1--)
		;
	if (c1 == sp || c1 == sp + 1)
		return JM_NO_FILE;
	flen = (size_t)(c1 - (sp + 1)); /* a length: the pointers die with the grow */
	if (dcpi_buf_grow(&p->names, flen + 1))
		return JM_NO_FILE;
	off = p->names.len;
	name = (const char *)p->names.data + e->name_off; /* the grow may move it */
	sp = strrchr(name, ' ');
	dcpi_buf_put(&p->names, sp + 1, flen);
	dcpi_buf_put(&p->names, "", 1);
	return off;
}

/* Whether a line's file looks like one: a path, or node's "node:..." of its
 * built-in modules.  node 20's freed bytes are sometimes printable too
 * ("7&uD" was seen), even valid UTF-8 with a slash ("/\xc8\x94B" was seen);
 * a name with neither '/' nor ':', or with a byte past ASCII, gives way to
 * the file in the procedure's name, where there is one (a real path past
 * ASCII is then named as the procedure names it). */
static int file_like(const struct jm_proc *p, uint64_t file_off)
{
	const char *f = (const char *)p->names.data + file_off;

	for (const unsigned char *c = (const unsigned char *)f; *c; c++)
		if (*c >= 0x80)
			return 0;
	return strchr(f, '/') || strchr(f, ':');
}

/* The pending lines go to entry e, loaded at addr: offsets from its start. */
static void take_lines(struct jm_proc *p, struct jm_entry *e, uint64_t addr)
{
	size_t k = p->pending0;

	if (p->pending_addr != addr || p->nlines == p->pending0) {
		p->nlines = p->pending0;
		return;
	}
	uint64_t guess = name_file(p, e);

	for (size_t i = p->pending0; i < p->nlines; i++)
		if (p->lines[i].off >= addr && p->lines[i].off - addr < e->size &&
		    (p->lines[i].file_off != JM_NO_FILE || guess != JM_NO_FILE)) {
			p->lines[k] = p->lines[i];
			p->lines[k].off -= addr;
			if (p->lines[k].file_off == JM_NO_FILE ||
			    (guess != JM_NO_FILE && !file_like(p, p->lines[k].file_off)))
				p->lines[k].file_off = guess;
			k++;
		}
	e->line0 = (uint32_t)p->pending0;
	e->nlines = (uint32_t)(k - p->pending0);
	p->nlines = p->pending0 = k;
}

/* LOAD: pid, tid, vma, code_addr, code_size, code_index, name, code. */
static int rec_load(struct dcpi_jitmap *jm, struct jm_proc *p, const uint8_t *r, size_t n)
{
	const uint8_t *name = r + JD_REC_HEADER + 40, *nul;
	uint64_t addr, size;
	size_t n0;
	int err;

	if (n < JD_REC_HEADER + 41 || !(nul = memchr(name, '\0', n - (JD_REC_HEADER + 40)))) {
		corrupt(jm, p, "a LOAD record too short or with an unterminated name");
		return 0;
	}
	addr = get64(r + JD_REC_HEADER + 16);
	size = get64(r + JD_REC_HEADER + 24);
	if (size > n - (size_t)(nul + 1 - r)) {
		corrupt(jm, p, "a LOAD record whose code runs past its end");
		return 0;
	}
	if (nul == name) {
		corrupt(jm, p, "a LOAD record without a name");
		return 0;
	}
	n0 = p->nents;
	err = dcpi_jm_add_entry(jm, p, addr, size, (const char *)name, (size_t)(nul - name),
				nul + 1, JM_NO_CODE);
	if (!err && p->nents > n0)
		take_lines(p, &p->ents[n0], addr);
	else
		p->nlines = p->pending0;
	return err;
}

/* MOVE: pid, tid, vma, old_code_addr, new_code_addr, code_size, index. */
static int rec_move(struct dcpi_jitmap *jm, struct jm_proc *p, const uint8_t *r, size_t n)
{
	const struct lm_map *m;
	const struct jm_entry *e;
	uint64_t from, to, size;
	uint32_t line0, nlines;
	size_t n0;
	char *name;
	int err;

	if (n < JD_REC_HEADER + 48) {
		corrupt(jm, p, "a MOVE record too short");
		return 0;
	}
	from = get64(r + JD_REC_HEADER + 16);
	to = get64(r + JD_REC_HEADER + 24);
	size = get64(r + JD_REC_HEADER + 32);
	m = jm_ranges_lookup(&p->ranges, from);
	if (!m || m->start != from || m->pgoff != 0)
		return 0; /* code we never saw loaded: nothing to move */
	e = &p->ents[m->image];
	if (size > e->size)
		size = e->size;
	name = strdup((const char *)p->names.data + e->name_off); /* names may move */
	if (!name)
		return -ENOMEM;
	line0 = e->line0;
	nlines = e->nlines;
	n0 = p->nents;
	err = dcpi_jm_add_entry(jm, p, to, size, name, strlen(name), NULL, e->code_off);
	free(name);
	if (!err && p->nents > n0) {
		p->ents[n0].line0 = line0;
		p->ents[n0].nlines = nlines;
	}
	return err;
}

/* DEBUG_INFO: code_addr, nr_entry, then entries of (addr, line, discrim,
 * file name): kept as pending for the LOAD of code_addr that follows. */
static int rec_debug(struct dcpi_jitmap *jm, struct jm_proc *p, const uint8_t *r, size_t n)
{
	size_t pos = JD_REC_HEADER + 16;
	uint64_t nr;

	p->nlines = p->pending0; /* an earlier DEBUG_INFO no LOAD took */
	if (n < pos) {
		corrupt(jm, p, "a DEBUG_INFO record too short");
		return 0;
	}
	p->pending_addr = get64(r + JD_REC_HEADER);
	nr = get64(r + JD_REC_HEADER + 8);
	for (uint64_t i = 0; i < nr; i++) {
		const uint8_t *nul;
		int err;

		if (n - pos < 17 || !(nul = memchr(r + pos + 16, '\0', n - pos - 16))) {
			p->nlines = p->pending0;
			corrupt(jm, p, "a DEBUG_INFO record whose entries run past its end");
			return 0;
		}
		err = keep_line(jm, p, get64(r + pos), get32(r + pos + 8), (const char *)r + pos + 16,
				(size_t)(nul - (r + pos + 16)));
		if (err)
			return err;
		pos = (size_t)(nul + 1 - r);
	}
	jm->st.debug_entries += nr;
	return 0;
}

static int apply(struct dcpi_jitmap *jm, struct jm_proc *p, const uint8_t *r, size_t n)
{
	switch (get32(r)) {
	case JD_LOAD:
		return rec_load(jm, p, r, n);
	case JD_MOVE:
		return rec_move(jm, p, r, n);
	case JD_DEBUG_INFO:
		return rec_debug(jm, p, r, n);
	case JD_CLOSE:
		p->dump_done = 1;
		return 0;
	default:
		return 0; /* unwinding info and later kinds: not needed */
	}
}

/* ---- reading --------------------------------------------------------------- */

/* Bytes [pos, pos + n) of p's dump (whose readable size is size), from
 * the window, read afresh from pos when they are not in it: NULL when the
 * file does not hold them (yet) or n is over the window. */
static const uint8_t *window(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t pos, size_t n,
			     uint64_t size)
{
	size_t want;
	ssize_t r;

	if (pos >= jm->win_off && pos - jm->win_off <= jm->win_len &&
	    n <= jm->win_len - (pos - jm->win_off))
		return jm->win + (pos - jm->win_off);
	if (n > JM_DUMP_WINDOW || pos >= size || n > size - pos)
		return NULL;
	want = size - pos < JM_DUMP_WINDOW ? (size_t)(size - pos) : JM_DUMP_WINDOW;
	if (want > jm->win_cap) { /* as big as the dumps read need, up to the window */
		size_t cap = jm->win_cap ? jm->win_cap : 4096;
		uint8_t *w;

		while (cap < want)
			cap *= 2;
		if (!(w = realloc(jm->win, cap)))
			return NULL;
		jm->win = w;
		jm->win_cap = cap;
	}
	r = pread(p->dump_fd, jm->win, want, (off_t)pos);
	jm->win_off = pos;
	jm->win_len = r > 0 ? (size_t)r : 0;
	return jm->win_len >= n ? jm->win : NULL;
}

/* The record at dump_pos, if whole: 1 (*rec in the window, or malloc'd
 * into *own when over it), 0 not yet, <0. */
static int next_record(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t size,
		       uint64_t time, const uint8_t **rec, uint8_t **own, uint32_t *len)
{
	const uint8_t *h = window(jm, p, p->dump_pos, JD_REC_HEADER, size);
	uint64_t ts;

	*own = NULL;
	if (!h)
		return 0;
	*len = get32(h + 4);
	ts = get64(h + 8);
	if (*len < JD_REC_HEADER || *len > DCPI_JITMAP_MAX_RECORD) {
		corrupt(jm, p, "a record of impossible size");
		return 0;
	}
	if (*len > size - p->dump_pos) {
		if (p->dump_pos + *len > DCPI_JITMAP_MAX_DUMP)
			corrupt(jm, p, "the size cap");
		return 0; /* still being written */
	}
	if (!p->dump_timeless && ts > time) {
		p->dump_next = ts;
		return 0;
	}
	if (*len <= JM_DUMP_WINDOW) {
		*rec = window(jm, p, p->dump_pos, *len, size);
		return *rec ? 1 : 0;
	}
	*own = malloc(*len);
	if (!*own)
		return -ENOMEM;
	if (pread(p->dump_fd, *own, *len, (off_t)p->dump_pos) != (ssize_t)*len) {
		free(*own);
		*own = NULL;
		return 0;
	}
	*rec = *own;
	return 1;
}

/* Refuse p's open dump: closed, nothing more read. */
static void dump_refuse(struct dcpi_jitmap *jm, struct jm_proc *p, const char *why)
{
	dcpi_jm_refuse(jm, p, "jitdump", p->dump_path, why);
	close(p->dump_fd);
	p->dump_fd = -1;
	p->dump_done = 1;
	p->dump_headless = 0;
}

/* The header of p's open dump: 0 when good; -EAGAIN when the file is
 * still shorter than one (p->dump_headless set: a runtime maps the file
 * before it writes to it, node writes through a stdio buffer, so the
 * header may reach the file long after the mapping is seen); else
 * -EINVAL, the dump refused and closed. */
static int check_header(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	uint8_t h[JD_HEADER];
	uint32_t magic, size;
	const char *why = NULL;

	if (pread(p->dump_fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		p->dump_headless = 1;
		return -EAGAIN;
	}
	p->dump_headless = 0;
	if ((magic = get32(h)) == JD_MAGIC_SWAPPED)
		why = "written with the other byte order";
	else if (magic != JD_MAGIC)
		why = "not a jitdump (bad magic)";
	else if (get32(h + 4) < 1)
		why = "jitdump version 0";
	else if ((size = get32(h + 8)) < JD_HEADER || size > 4096)
		why = "a header of impossible size";
	if (why) {
		dump_refuse(jm, p, why);
		return -EINVAL;
	}
	p->dump_pos = get32(h + 8);
	p->dump_timeless = (get64(h + 32) & JD_FLAG_ARCH_TIMESTAMP) != 0;
	if (p->dump_timeless)
		dcpi_jm_warn(jm, "jitdump %s of process %d is stamped with the CPU's clock, not "
			     "CLOCK_MONOTONIC: its code is applied in file order, not by time",
			     p->dump_path, (int)p->pid);
	return 0;
}

int dcpi_jm_dump_read(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t time)
{
	struct stat st;
	uint64_t size;
	int err = 0;

	if (p->dump_fd < 0 || p->dump_done || fstat(p->dump_fd, &st))
		return 0;
	p->dump_checked = dcpi_jm_now();
	p->dump_next = 0;
	if (p->dump_headless && check_header(jm, p))
		return 0; /* not written yet, or refused (then closed) */
	size = (uint64_t)st.st_size < DCPI_JITMAP_MAX_DUMP ? (uint64_t)st.st_size
							   : DCPI_JITMAP_MAX_DUMP;
	if (size > p->dump_pos && size - p->dump_pos > JM_DUMP_STEP) {
		size = p->dump_pos + JM_DUMP_STEP;
		p->dump_next = 1; /* the rest on the next sample */
	}
	jm->win_len = 0; /* the file may have changed, or be another's */
	while (!err && !p->dump_done && p->dump_pos < size) {
		const uint8_t *rec = NULL;
		uint8_t *own;
		uint32_t len;
		int r = next_record(jm, p, size, time, &rec, &own, &len);

		if (r <= 0)
			return r;
		err = apply(jm, p, rec, len);
		free(own);
		p->dump_pos += len;
	}
	return err;
}

/* ---- opening ----------------------------------------------------------------- */

static int take_dump(struct dcpi_jitmap *jm, struct jm_proc *p, int fd, const char *path)
{
	struct stat st;

	snprintf(p->dump_path, sizeof(p->dump_path), "%s", path);
	if (dcpi_jm_check_file(jm, p, fd, "jitdump", p->dump_path, &st)) {
		close(fd);
		return -EPERM;
	}
	p->dump_fd = fd;
	if (check_header(jm, p) == -EINVAL)
		return -EINVAL;
	jm->st.dumps++;
	return 0;
}

void dcpi_jm_dump_last(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	dcpi_jm_dump_read(jm, p, UINT64_MAX);
	if (p->dump_fd >= 0 && p->dump_headless)
		dump_refuse(jm, p, "shorter than a jitdump header");
}

int dcpi_jitmap_watch_dump(struct dcpi_jitmap *jm, int32_t pid, uint64_t start, uint64_t end,
			   const char *path)
{
	struct jm_proc *p = pid > 0 ? dcpi_jm_proc(jm, pid) : NULL;
	struct stat st;
	char mf[4200];
	int fd;

	if (!p || p->dump_fd >= 0 || p->dump_done)
		return 0;
	if (dcpi_jm_ids(jm, p)) {
		if (!jm->o.own_children)
			return 0;
		p->ruid = p->euid = geteuid(); /* gone already: ours, as our child was */
		p->nspid = pid;
	}
	snprintf(mf, sizeof(mf), "%s/%d/map_files/%llx-%llx", jm->procroot, (int)pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = dcpi_file_open_regular(AT_FDCWD, mf, 0, &st);
	if (fd == -ENOENT && jm->o.own_children && path[0] == '/') {
		/* our child, gone before we looked: the file at its path, if it
		   is a regular file of ours (opened without following links) */
		fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &st);
		if (fd >= 0 && st.st_uid != geteuid()) {
			close(fd);
			fd = -EPERM;
		}
	}
	if (fd < 0) {
		snprintf(p->dump_path, sizeof(p->dump_path), "%s", path);
		dcpi_jm_refuse(jm, p, "jitdump", p->dump_path, fd == -ENOENT
			       ? "no longer mapped when looked at" : fd == -EINVAL
			       ? "not a regular file" : strerror(-fd));
		p->dump_done = 1;
		return 0;
	}
	take_dump(jm, p, fd, path);
	return 0;
}

int dcpi_jitmap_feed_dump(struct dcpi_jitmap *jm, int32_t pid, const void *data, size_t len)
{
	struct jm_proc *p = pid > 0 ? dcpi_jm_proc(jm, pid) : NULL;
	char path[64];
	int fd;

	if (!p)
		return dcpi_error(ENOSPC, "no JIT state for process %d", (int)pid);
	fd = memfd_create("jitdump", MFD_CLOEXEC);
	if (fd < 0)
		return dcpi_error(errno, "memfd_create: %s", strerror(errno));
	if (write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return dcpi_error(EIO, "memfd: short write");
	}
	p->gave_up = 1; /* no perf map to look for */
	p->nspid = pid;
	p->ruid = p->euid = geteuid();
	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)pid);
	if (p->dump_fd >= 0) {
		close(p->dump_fd);
		p->dump_fd = -1;
	}
	p->dump_done = 0;
	p->dump_checked = 0;
	take_dump(jm, p, fd, path);
	return 0;
}
