/* Perf maps: finding, opening and reading /tmp/perf-PID.map safely.  See
 * dcpi/jitmap.h for the rules; every refusal is one warning naming the
 * file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "internal.h"
#include "jitmap_priv.h"

#define CHUNK 65536

/* ---- one line ----------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A hex number at *i, optional 0x; at most 16 digits. */
static int get_hex(const char *s, size_t len, size_t *i, uint64_t *v)
{
	size_t digits = 0;
	int d;

	if (*i + 1 < len && s[*i] == '0' && (s[*i + 1] | 0x20) == 'x')
		*i += 2;
	*v = 0;
	while (*i < len && (d = hexval(s[*i])) >= 0) {
		if (++digits > 16)
			return -EINVAL;
		*v = *v << 4 | (uint64_t)d;
		(*i)++;
	}
	return digits ? 0 : -EINVAL;
}

static int get_blank(const char *s, size_t len, size_t *i)
{
	size_t from = *i;

	while (*i < len && (s[*i] == ' ' || s[*i] == '\t'))
		(*i)++;
	return *i > from ? 0 : -EINVAL;
}

int dcpi_jitmap_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size,
			   size_t *name_off)
{
	size_t i = 0;

	if (len && line[len - 1] == '\r')
		len--;
	if (get_hex(line, len, &i, start) || get_blank(line, len, &i) ||
	    get_hex(line, len, &i, size) || get_blank(line, len, &i) || i >= len)
		return -EINVAL;
	if (memchr(line + i, '\0', len - i))
		return -EINVAL;
	*name_off = i;
	return 0;
}

/* ---- the process -------------------------------------------------------- */

/* The number after "\nKEY" (the idx'th on that line; -1: the last). */
static int status_field(const char *s, const char *key, int idx, long long *v)
{
	const char *p = strstr(s, key), *end;
	int n = 0, got = 0;

	if (!p)
		return -ENOENT;
	p += strlen(key);
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	while (p < end) {
		char *q;
		long long x;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		errno = 0;
		x = strtoll(p, &q, 10);
		if (q == p || errno)
			return -EINVAL;
		if (idx < 0 || n == idx)
			*v = x, got = 1;
		if (n++ == idx)
			break;
		p = q;
	}
	return got ? 0 : -EINVAL;
}

static int read_small(struct dcpi_jitmap *jm, int32_t pid, const char *name, char **text)
{
	char path[4200];
	uint8_t *data;
	size_t len;
	int err;

	if (pid >= 0)
		snprintf(path, sizeof(path), "%s/%d/%s", jm->procroot, (int)pid, name);
	else
		snprintf(path, sizeof(path), "%s/%s", jm->procroot, name);
	err = dcpi_file_read(path, 1 << 16, &data, &len);
	if (err)
		return err;
	*text = malloc(len + 1);
	if (!*text) {
		free(data);
		return -ENOMEM;
	}
	memcpy(*text, data, len);
	(*text)[len] = '\0';
	free(data);
	return 0;
}

/* Start time from stat's 22nd field (clock ticks after boot) and btime. */
static int proc_start(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	char *stat = NULL, *sys = NULL, *q;
	long long ticks = -1, btime = -1, hz = sysconf(_SC_CLK_TCK);
	int err = read_small(jm, p->pid, "stat", &stat);

	if (!err)
		err = read_small(jm, -1, "stat", &sys);
	if (!err && (q = strrchr(stat, ')')) != NULL) {
		/* after ") ": state is field 3; starttime is field 22 */
		char *tok = q + 1, *save = NULL;
		int f = 2;

		for (tok = strtok_r(tok, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++f == 22) {
				ticks = strtoll(tok, NULL, 10);
				break;
			}
	}
	if (!err && sys) {
		char *b = strstr(sys, "\nbtime ");
		if (b)
			btime = strtoll(b + 7, NULL, 10);
	}
	if (!err && (ticks < 0 || btime < 0 || hz <= 0))
		err = -EINVAL;
	if (!err)
		p->start_ns = btime * 1000000000ll + ticks * (1000000000ll / hz);
	free(stat);
	free(sys);
	return err;
}

/* Whether the process's root is ours (no container): then its /tmp is
 * ours too, and a map can be opened there once the process is gone. */
static int same_root(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	char root[4200];
	struct stat a, b;

	snprintf(root, sizeof(root), "%s/%d/root", jm->procroot, (int)p->pid);
	return stat(root, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int proc_ids(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	long long r = -1, e = -1, ns = p->pid;
	char *s = NULL;
	int err = read_small(jm, p->pid, "status", &s);

	if (!err)
		err = status_field(s, "\nUid:", 0, &r) ?: status_field(s, "\nUid:", 1, &e);
	if (!err)
		status_field(s, "\nNSpid:", -1, &ns); /* older kernels: no namespaces */
	if (!err && !strncmp(s, "Name:\t", 6))
		snprintf(p->comm, sizeof(p->comm), "%.*s", (int)strcspn(s + 6, "\n"), s + 6);
	free(s);
	if (err || r < 0 || e < 0 || ns <= 0 || ns > INT32_MAX)
		return err ? err : -EINVAL;
	p->ruid = (uid_t)r;
	p->euid = (uid_t)e;
	p->nspid = (int32_t)ns;
	p->same_root = same_root(jm, p);
	return proc_start(jm, p);
}

int dcpi_jm_ids(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	return p->nspid ? 0 : proc_ids(jm, p);
}

/* ---- opening ------------------------------------------------------------ */

void dcpi_jm_refuse(struct dcpi_jitmap *jm, struct jm_proc *p, const char *what,
		    const char *path, const char *why)
{
	jm->st.refused++;
	dcpi_jm_warn(jm, "%s %s of process %d: %s: not read", what, path, (int)p->pid, why);
}

static void refuse(struct dcpi_jitmap *jm, struct jm_proc *p, const char *why)
{
	p->gave_up = 1;
	dcpi_jm_refuse(jm, p, "perf map", p->path, why);
}

/* The map, opened inside the process's root without following links. */
static int open_map(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	char root[4200], name[64];
	struct stat st;
	int rfd, tfd, fd, e;

	snprintf(root, sizeof(root), "%s/%d/root", jm->procroot, (int)p->pid);
	snprintf(name, sizeof(name), "perf-%d.map", (int)p->nspid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 && p->same_root && (errno == ENOENT || errno == ESRCH))
		rfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC); /* it exited; same files */
	if (rfd < 0)
		return -errno;
	tfd = openat(rfd, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	e = errno;
	close(rfd);
	if (tfd < 0)
		return -e;
	/* a regular file only: never a device mounted at its name */
	fd = dcpi_file_open_regular(tfd, name, O_NOFOLLOW, &st);
	close(tfd);
	return fd;
}

int dcpi_jm_check_file(struct dcpi_jitmap *jm, struct jm_proc *p, int fd, const char *what,
		       const char *path, struct stat *st)
{
	char why[128];

	if (fstat(fd, st)) {
		snprintf(why, sizeof(why), "fstat: %s", strerror(errno));
	} else if (!S_ISREG(st->st_mode)) {
		snprintf(why, sizeof(why), "not a regular file");
	} else if (st->st_uid != 0 && st->st_uid != p->ruid && st->st_uid != p->euid) {
		snprintf(why, sizeof(why), "owned by uid %u, not by the process's user (%u) or root",
			 (unsigned)st->st_uid, (unsigned)p->euid);
	} else if (st->st_uid == 0 && p->ruid != 0 && p->euid != 0) {
		/* a root file bind-mounted at its name from the user's own
		 * mount namespace: what root writes there later is not the
		 * user's to publish */
		snprintf(why, sizeof(why), "owned by root, and the process is uid %u's",
			 (unsigned)p->euid);
	} else {
		return 0;
	}
	dcpi_jm_refuse(jm, p, what, path, why);
	return -EPERM;
}

void dcpi_jm_open(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	struct stat st;
	int64_t mtime;
	int fd, ids;

	p->next_try = dcpi_jm_now() + DCPI_JITMAP_RETRY_NS;
	if ((ids = dcpi_jm_ids(jm, p)) && jm->o.own_children) {
		/* our child (dcpi record), gone before a loaded collector looked:
		   ours, in our mount namespace, started after the jitmap was made
		   (an older map at its name is stale) */
		p->ruid = p->euid = geteuid();
		p->nspid = p->pid;
		p->same_root = 1;
		p->start_ns = jm->made_ns;
	} else if (ids) {
		p->gave_up = 1; /* gone, or no /proc entry to check it against */
		return;
	}
	snprintf(p->path, sizeof(p->path), "/tmp/perf-%d.map", (int)p->nspid);
	fd = open_map(jm, p);

	if (fd == -ENOENT || fd == -ESRCH)
		return; /* no map (yet): look again after a while */
	if (fd == -ELOOP) {
		refuse(jm, p, "a symbolic link");
		return;
	}
	if (fd == -ENOTDIR) {
		refuse(jm, p, "tmp/ is not a directory (a symbolic link?)");
		return;
	}
	if (fd < 0) {
		refuse(jm, p, fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return;
	}
	if (dcpi_jm_check_file(jm, p, fd, "perf map", p->path, &st)) {
		p->gave_up = 1;
		close(fd);
		return;
	}
	p->fd = fd;
	jm->st.maps++;
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	if (mtime < p->start_ns) {
		jm->st.stale++;
		p->pos = (uint64_t)st.st_size; /* an earlier process's: only what follows */
		dcpi_jm_warn(jm, "perf map %s of process %d was last written before the process "
			     "started: its %lld bytes are an earlier process's and not applied",
			     p->path, (int)p->pid, (long long)st.st_size);
	}
}

/* ---- reading ------------------------------------------------------------ */

/* 1 the first time only (a counter in a byte would wrap and say it again
 * every 256 times). */
static int first_time(uint8_t *flag)
{
	if (*flag)
		return 0;
	*flag = 1;
	return 1;
}

static void skip_line(struct dcpi_jitmap *jm, struct jm_proc *p, const char *why)
{
	jm->st.skipped++;
	if (p->skipped++ == 0)
		dcpi_jm_warn(jm, "JIT code of process %d (%s): %s (this and later bad entries "
			     "skipped)", (int)p->pid, p->path, why);
}

int dcpi_jm_add_entry(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t start,
		      uint64_t size, const char *name, size_t nlen, const uint8_t *code,
		      uint64_t code_off)
{
	struct jm_entry *e;
	int err;

	if (size == 0 || size > DCPI_JITMAP_MAX_FUNC) {
		skip_line(jm, p, "an entry of size zero or over the cap");
		return 0;
	}
	if (start > UINT64_MAX - size || start + size > LM_KERNEL_HALF) {
		skip_line(jm, p, "an entry wrapping around or in the kernel's half");
		return 0;
	}
	if (p->nents >= DCPI_JITMAP_MAX_ENTRIES) {
		if (first_time(&p->warned_cap))
			dcpi_jm_warn(jm, "JIT code of process %d: over %u entries, the rest "
				     "skipped", (int)p->pid, DCPI_JITMAP_MAX_ENTRIES);
		jm->st.skipped++;
		return 0;
	}
	if (nlen > DCPI_JITMAP_MAX_LINE)
		nlen = DCPI_JITMAP_MAX_LINE;
	/* the entry, its name, its place among the ranges, its code */
	err = dcpi_jm_charge(jm, p, sizeof(*e) + nlen + 1 + 2 * sizeof(struct jm_rnode) +
			     (code && p->code.len + size <= DCPI_JITMAP_MAX_CODE ? size : 0),
			     "entries");
	if (err)
		return err == -ENOSPC ? 0 : err;
	if (code && p->code.len + size <= DCPI_JITMAP_MAX_CODE) {
		code_off = p->code.len;
		if ((err = dcpi_buf_put(&p->code, code, size)))
			return err;
	} else if (code) {
		code_off = JM_NO_CODE; /* over the cap: named, not disassembled */
	}
	err = DCPI_GROW(p->ents, p->ents_cap, p->nents + 1, DCPI_JITMAP_MAX_ENTRIES, "entries");
	if (!err)
		err = dcpi_buf_grow(&p->names, nlen + 1);
	if (err)
		return err == -EFBIG ? 0 : err;
	e = &p->ents[p->nents];
	*e = (struct jm_entry){ start, size, p->names.len, JM_UNPLACED, code_off, 0, 0 };
	dcpi_buf_put(&p->names, name, nlen);
	dcpi_buf_put(&p->names, "", 1);
	err = jm_ranges_place(&p->ranges, start, start + size, (int32_t)p->nents);
	if (err)
		return err == -ENOSPC || err == -EFBIG ? 0 : err;
	p->nents++;
	jm->st.entries++;
	return 0;
}

static int one_line(struct dcpi_jitmap *jm, struct jm_proc *p, const char *s, size_t len)
{
	uint64_t start, size;
	size_t name;

	if (len == 0)
		return 0;
	if (len > DCPI_JITMAP_MAX_LINE) {
		skip_line(jm, p, "a line over the length cap");
		return 0;
	}
	if (dcpi_jitmap_parse_line(s, len, &start, &size, &name)) {
		skip_line(jm, p, "a line not of the form START SIZE NAME");
		return 0;
	}
	if (s[len - 1] == '\r') /* a CR LF line: the parse left the CR out, so does the name */
		len--;
	return dcpi_jm_add_entry(jm, p, start, size, s + name, len - name, NULL, JM_NO_CODE);
}

/* Lines of buf[0, n); *used says how many bytes: up to the last newline,
 * all when final; a line without its newline yet is left for later unless
 * it is over the length cap already (then it is skipped, and so is the
 * rest of it in the reads that follow, up to its newline: not a line of
 * its own, whatever it says). */
int dcpi_jm_lines(struct dcpi_jitmap *jm, struct jm_proc *p, const char *buf, size_t n,
		  int final, size_t *used)
{
	size_t i = 0;
	int err = 0;

	if (p->skip_rest) {
		const char *nl = memchr(buf, '\n', n);

		p->skip_rest = !nl;
		i = nl ? (size_t)(nl - buf) + 1 : n;
	}
	while (i < n && !err) {
		const char *nl = memchr(buf + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (buf + i)) : n - i;

		if (!nl && !final && len <= DCPI_JITMAP_MAX_LINE)
			break; /* a partial line: wait for the rest */
		err = one_line(jm, p, buf + i, len);
		i += len + (nl != NULL);
		p->skip_rest = !nl && !final;
	}
	*used = i;
	return err;
}

/* The last bytes read, to tell a file rewritten in place (truncated and
 * written past where we were: the JDK's snapshots) from one appended to. */
static void keep_tail(struct jm_proc *p, const char *buf, size_t used)
{
	char both[2 * sizeof(p->tail)];
	size_t n = 0, take = used < sizeof(p->tail) ? used : sizeof(p->tail), keep;

	if (used < sizeof(p->tail)) {
		memcpy(both, p->tail, p->tail_len);
		n = p->tail_len;
	}
	memcpy(both + n, buf + used - take, take);
	n += take;
	keep = n < sizeof(p->tail) ? n : sizeof(p->tail);
	memcpy(p->tail, both + n - keep, keep);
	p->tail_len = (uint8_t)keep;
}

static int same_tail(struct jm_proc *p)
{
	char now[sizeof(p->tail)];

	if (p->tail_len == 0 || p->pos < p->tail_len)
		return 1;
	if (pread(p->fd, now, p->tail_len, (off_t)(p->pos - p->tail_len)) != p->tail_len ||
	    memcmp(now, p->tail, p->tail_len)) {
		p->tail_len = 0;
		return 0;
	}
	return 1;
}

int dcpi_jm_read(struct dcpi_jitmap *jm, struct jm_proc *p, int final)
{
	char buf[CHUNK];
	struct stat st;
	uint64_t end;
	int err = 0;

	if (p->fd < 0 || fstat(p->fd, &st))
		return 0;
	p->last_read = dcpi_jm_now();
	if ((uint64_t)st.st_size < p->pos || !same_tail(p))
		p->pos = 0, p->skip_rest = 0; /* truncated or rewritten: started afresh */
	end = (uint64_t)st.st_size;
	if (end > DCPI_JITMAP_MAX_BYTES) {
		if (first_time(&p->warned_cap))
			dcpi_jm_warn(jm, "perf map %s of process %d is over %llu bytes: the rest is "
				     "not read", p->path, (int)p->pid,
				     (unsigned long long)DCPI_JITMAP_MAX_BYTES);
		end = DCPI_JITMAP_MAX_BYTES;
	}
	while (p->pos < end && !err) {
		size_t want = end - p->pos < CHUNK ? (size_t)(end - p->pos) : CHUNK, used;
		ssize_t r = pread(p->fd, buf, want, (off_t)p->pos);

		if (r <= 0)
			break;
		err = dcpi_jm_lines(jm, p, buf, (size_t)r, final && p->pos + (uint64_t)r >= end, &used);
		if (used == 0)
			break; /* a partial last line: read it when it is complete */
		p->pos += used;
		keep_tail(p, buf, used);
	}
	return err;
}

int dcpi_jitmap_feed_text(struct dcpi_jitmap *jm, int32_t pid, const char *text, size_t len)
{
	struct jm_proc *p = pid > 0 ? dcpi_jm_proc(jm, pid) : NULL;
	size_t used;

	if (!p)
		return dcpi_error(ENOSPC, "no JIT state for process %d", (int)pid);
	p->gave_up = 1; /* no file to look for */
	snprintf(p->path, sizeof(p->path), "/tmp/perf-%d.map", (int)pid);
	return dcpi_jm_lines(jm, p, text, len, 1, &used);
}
