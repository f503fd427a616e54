/* Labels of processes: see dcpi/label.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libiberty/hashtab.h>

#include "dcpi/error.h"
#include "dcpi/label.h"
#include "internal.h"

#define MAX_PROCS (1u << 20)    /* processes remembered at once */
#define VALUE_MAX 256           /* one value (a cgroup path) is cut there */
#define CGROUPS_MAX (1u << 16)  /* cgroup ids remembered at once */
#define CGROUP_DEPTH 32         /* how deep a scan of the hierarchy goes */
#define FILEID_KERNFS 0xfe      /* a kernfs (cgroupfs) file handle: its u64 id */

static const struct {
	const char *name;
	unsigned key;
} keys[] = {
	{ "comm", DCPI_LABEL_COMM },
	{ "uid", DCPI_LABEL_UID },
	{ "cgroup", DCPI_LABEL_CGROUP },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

struct proc {
	int32_t pid;
	int has_id;             /* id is its label's (interned) */
	uint32_t id;
	int dead;               /* exited: kept until dcpi_labeler_reap */
	char *seen;             /* its label as /proc said at its exec, fork or
				   exit, not interned until a sample needs it;
				   NULL: none */
	char comm[16];          /* from a COMM record; "" not known */
	uint32_t uid;           /* its real uid when seen was read (its share
				   of the cap); UINT32_MAX unknown */
	int has_cg;             /* cg_id is its label in cgroup cg (of its
				   last sample that carried a cgroup) */
	uint64_t cg;
	uint32_t cg_id;
};

/* A cgroup id and its path (from a CGROUP record or a scan). */
struct cg {
	uint64_t id;
	char *path;
};

static void proc_free(void *v);

struct uid_count {
	uint32_t uid;
	size_t n;               /* labels interned for processes of this uid */
};

struct dcpi_labeler {
	unsigned keys;
	char *procroot;
	size_t cap;
	htab_t procs;           /* struct proc *, by pid */
	htab_t ids;             /* label string -> index + 1 into labels */
	char **labels;          /* labels[0] is "other" */
	size_t nlabels, labels_cap;
	struct uid_count *uids; /* labels per uid: each uid's share of the cap */
	size_t nuids, uids_cap;
	htab_t cgs;             /* struct cg *, by id */
	char *cgroot;           /* the cgroup v2 mount; NULL: not looked for
				   yet; "": none */
	int cg_scanned;         /* scanned since the last refresh */
};

int dcpi_label_parse(const char *arg, unsigned *out)
{
	const char *p = arg;

	*out = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < NKEYS; i++)
			if (strlen(keys[i].name) == n && !strncmp(p, keys[i].name, n))
				break;
		if (i == NKEYS)
			return dcpi_error(EINVAL, "'%.*s' in -label '%s' is not a label key (comm, uid, "
					  "cgroup)", (int)n, p, arg);
		*out |= keys[i].key;
		p += n;
		if (*p == ',' && *++p == 0)
			return dcpi_error(EINVAL, "-label '%s' ends with a comma", arg);
	}
	if (!*out)
		return dcpi_error(EINVAL, "-label wants keys: comm, uid, cgroup");
	return 0;
}

void dcpi_label_keys_str(unsigned k, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < NKEYS && n < len; i++)
		if (k & keys[i].key)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", keys[i].name);
}

/* ---- the labeler ------------------------------------------------------------------ */

static hashval_t cg_hash(const void *p)
{
	return (hashval_t)dcpi_hash64(((const struct cg *)p)->id);
}

static int cg_eq(const void *a, const void *b)
{
	return ((const struct cg *)a)->id == ((const struct cg *)b)->id;
}

static void cg_free(void *v)
{
	struct cg *c = v;

	if (c)
		free(c->path);
	free(c);
}

static hashval_t proc_hash(const void *p)
{
	return (hashval_t)((const struct proc *)p)->pid * 2654435761u;
}

static int proc_eq(const void *a, const void *b)
{
	return ((const struct proc *)a)->pid == ((const struct proc *)b)->pid;
}

/* An interned label: its string (owned by labels[]) and id. */
struct lab {
	const char *s;
	uint32_t id;
};

static hashval_t lab_hash(const void *p)
{
	return htab_hash_string(((const struct lab *)p)->s);
}

static int lab_eq(const void *a, const void *b)
{
	return !strcmp(((const struct lab *)a)->s, ((const struct lab *)b)->s);
}

int dcpi_labeler_new(unsigned k, const char *procroot, size_t cap, struct dcpi_labeler **out)
{
	struct dcpi_labeler *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return dcpi_error(ENOMEM, "out of memory");
	l->keys = k;
	l->cap = cap ? cap : DCPI_LABEL_MAX;
	l->procroot = strdup(procroot ? procroot : "/proc");
	l->procs = htab_create_alloc(256, proc_hash, proc_eq, proc_free, calloc, free);
	l->ids = htab_create_alloc(256, lab_hash, lab_eq, free, calloc, free);
	l->cgs = htab_create_alloc(64, cg_hash, cg_eq, cg_free, calloc, free);
	if (!l->procroot || !l->procs || !l->ids || !l->cgs ||
	    DCPI_GROW(l->labels, l->labels_cap, 1, SIZE_MAX, "labels") ||
	    !(l->labels[0] = strdup(DCPI_LABEL_OTHER))) {
		dcpi_labeler_free(l);
		return dcpi_error(ENOMEM, "out of memory");
	}
	l->nlabels = 1;
	*out = l;
	return 0;
}

void dcpi_labeler_free(struct dcpi_labeler *l)
{
	if (!l)
		return;
	if (l->procs)
		htab_delete(l->procs);
	if (l->ids)
		htab_delete(l->ids);
	if (l->cgs)
		htab_delete(l->cgs);
	free(l->cgroot);
	for (size_t i = 0; i < l->nlabels; i++)
		free(l->labels[i]);
	free(l->labels);
	free(l->uids);
	free(l->procroot);
	free(l);
}

/* Replace what would break a label apart (',' and control bytes). */
static void clean(char *s)
{
	for (; *s; s++)
		if (*s == ',' || (unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '_';
}

/* The first line of procroot/pid/name, or "" (the process is gone). */
static void read_line(const struct dcpi_labeler *l, int32_t pid, const char *name, char *buf,
		      size_t len)
{
	char path[4200];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/%" PRId32 "/%s", l->procroot, pid, name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The value of "Key:\tV..." in procroot/pid/status ("Uid" gives the real uid). */
static void status_field(const struct dcpi_labeler *l, int32_t pid, const char *key, char *buf,
			 size_t len)
{
	char path[4200], line[512];
	size_t klen = strlen(key);
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/%" PRId32 "/status", l->procroot, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1 + strspn(line + klen + 1, " \t");

			snprintf(buf, len, "%.*s", (int)strcspn(v, " \t\n"), v);
			break;
		}
	fclose(f);
}

/* The cgroup v2 path: the "0::PATH" line of procroot/pid/cgroup. */
static void cgroup_path(const struct dcpi_labeler *l, int32_t pid, char *buf, size_t len)
{
	char path[4200], line[VALUE_MAX + 8];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/%" PRId32 "/cgroup", l->procroot, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, len, "%.*s", (int)(len - 1), line + 3);
			break;
		}
	fclose(f);
}

/* The label of p, from what /proc says now (pid 0, the idle tasks, has
 * no directory: "swapper", root, "/"), and the process's real uid (for
 * its share of the cap; UINT32_MAX when unknown).  Returns whether /proc
 * still had the process. */
static int compose(const struct dcpi_labeler *l, const struct proc *p, char *out, size_t len,
		   uint32_t *uid)
{
	char v[VALUE_MAX], u[32];
	size_t n = 0;

	out[0] = 0;
	if (p->pid == 0)
		snprintf(u, sizeof(u), "0");
	else
		status_field(l, p->pid, "Uid", u, sizeof(u));
	*uid = u[0] ? (uint32_t)strtoul(u, NULL, 10) : UINT32_MAX;
	for (size_t i = 0; i < NKEYS && n < len; i++) {
		if (!(l->keys & keys[i].key))
			continue;
		if (keys[i].key == DCPI_LABEL_COMM) {
			if (p->comm[0])
				snprintf(v, sizeof(v), "%s", p->comm);
			else if (p->pid == 0)
				snprintf(v, sizeof(v), "swapper");
			else
				read_line(l, p->pid, "comm", v, sizeof(v));
		} else if (keys[i].key == DCPI_LABEL_UID) {
			snprintf(v, sizeof(v), "%s", u);
		} else {
			if (p->pid == 0)
				snprintf(v, sizeof(v), "/");
			else
				cgroup_path(l, p->pid, v, sizeof(v));
		}
		if (!v[0])
			snprintf(v, sizeof(v), "?");
		clean(v);
		n += (size_t)snprintf(out + n, len - n, "%s%s=%s", n ? "," : "", keys[i].name, v);
	}
	return u[0] != 0;
}

static struct proc *proc_of(struct dcpi_labeler *l, int32_t pid, int create)
{
	struct proc key = { .pid = pid }, *p;
	void **slot;

	p = htab_find(l->procs, &key);
	if (p || !create || htab_elements(l->procs) >= MAX_PROCS)
		return p;
	slot = htab_find_slot(l->procs, &key, INSERT);
	if (!slot || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	*slot = p;
	return p;
}

static void proc_free(void *v)
{
	struct proc *p = v;

	if (p)
		free(p->seen);
	free(p);
}

/* The count of labels uid has interned (created at 0). */
static size_t *uid_share(struct dcpi_labeler *l, uint32_t uid)
{
	for (size_t i = 0; i < l->nuids; i++)
		if (l->uids[i].uid == uid)
			return &l->uids[i].n;
	if (DCPI_GROW(l->uids, l->uids_cap, l->nuids + 1, SIZE_MAX, "uids"))
		return NULL;
	l->uids[l->nuids] = (struct uid_count){ uid, 0 };
	return &l->uids[l->nuids++].n;
}

/* The id of label, made when new: past the cap, or past uid's share of it
 * (a quarter: one user renaming a process in a loop cannot make every
 * other user's processes "other"), it is 0, other. */
static int intern(struct dcpi_labeler *l, const char *label, uint32_t uid, uint32_t *id)
{
	struct lab key = { label, 0 }, *e = htab_find(l->ids, &key);
	size_t share = l->cap / DCPI_LABEL_UID_SHARE > 0 ? l->cap / DCPI_LABEL_UID_SHARE : 1;
	size_t *mine;
	void **slot;
	int err;

	if (e) {
		*id = e->id;
		return 0;
	}
	mine = uid_share(l, uid);
	if (l->nlabels - 1 >= l->cap || !mine || *mine >= share) {
		*id = 0;
		return 0;
	}
	if ((err = DCPI_GROW(l->labels, l->labels_cap, l->nlabels + 1, SIZE_MAX, "labels")))
		return err;
	e = calloc(1, sizeof(*e));
	if (!e || !(l->labels[l->nlabels] = strdup(label))) {
		free(e);
		return dcpi_error(ENOMEM, "out of memory");
	}
	e->s = l->labels[l->nlabels];
	e->id = (uint32_t)l->nlabels;
	slot = htab_find_slot(l->ids, e, INSERT);
	if (!slot) {
		free(l->labels[l->nlabels]);
		free(e);
		return dcpi_error(ENOMEM, "out of memory");
	}
	*slot = e;
	(*mine)++;
	*id = (uint32_t)l->nlabels++;
	return 0;
}

/* p's label is label (not interned yet), of uid's. */
static void set_seen(struct proc *p, const char *label, uint32_t uid)
{
	char *s = strdup(label);

	if (!s)
		return; /* looked up again at its next sample */
	free(p->seen);
	p->seen = s;
	p->uid = uid;
	p->has_id = 0;
	p->has_cg = 0;
}

/* What /proc says of p now, as its label to be; nothing when /proc no
 * longer has it (what is known stays). */
static void look(struct dcpi_labeler *l, struct proc *p)
{
	char label[3 * (VALUE_MAX + 8)];
	uint32_t uid;

	if (compose(l, p, label, sizeof(label), &uid) || (!p->has_id && !p->seen))
		set_seen(p, label, uid);
}

int dcpi_labeler_get(struct dcpi_labeler *l, int32_t pid, uint32_t *id)
{
	struct proc *p = proc_of(l, pid, 1), tmp = { .pid = pid };
	char label[3 * (VALUE_MAX + 8)];
	uint32_t uid;
	int err;

	if (p && p->has_id) {
		*id = p->id;
		return 0;
	}
	if (p && p->seen) {
		uid = p->uid;
		err = intern(l, p->seen, uid, id);
	} else {
		compose(l, p ? p : &tmp, label, sizeof(label), &uid);
		err = intern(l, label, uid, id);
	}
	if (!err && p) {
		p->id = *id;
		p->uid = uid;
		p->has_id = 1;
		p->has_cg = 0;
		free(p->seen);
		p->seen = NULL;
	}
	return err;
}

const char *dcpi_labeler_label(const struct dcpi_labeler *l, uint32_t id)
{
	return id < l->nlabels ? l->labels[id] : DCPI_LABEL_OTHER;
}

size_t dcpi_labeler_count(const struct dcpi_labeler *l)
{
	return l->nlabels - 1;
}

/* label with its key value replaced by v, cleaned, into out (the other
 * values stay: a rename keeps the user and the cgroup).  Values hold no
 * ',', so ",key=" is found only where a value starts. */
static void replace_value(const char *label, const char *key, const char *v, char *out,
			  size_t len)
{
	char pat[16], val[VALUE_MAX];
	size_t klen = (size_t)snprintf(pat, sizeof(pat), ",%s=", key);
	const char *at = strstr(label, pat), *rest;
	size_t head;

	if (!strncmp(label, pat + 1, klen - 1))
		head = klen - 1;                  /* the first value */
	else if (at)
		head = (size_t)(at - label) + klen;
	else {
		snprintf(out, len, "%s", label);
		return;
	}
	snprintf(val, sizeof(val), "%s", v);
	clean(val);
	rest = label + head + strcspn(label + head, ",");
	snprintf(out, len, "%.*s%s%s", (int)head, label, val, rest);
}

/* The label p had, interned or seen; NULL when none is known. */
static const char *known(const struct dcpi_labeler *l, const struct proc *p)
{
	return p->has_id ? l->labels[p->id] : p->seen;
}

void dcpi_labeler_comm(struct dcpi_labeler *l, int32_t pid, const char *comm, int exec)
{
	struct proc *p = proc_of(l, pid, 1);
	char label[3 * (VALUE_MAX + 8)];

	if (!p)
		return;
	snprintf(p->comm, sizeof(p->comm), "%s", comm ? comm : "");
	p->dead = 0;
	if (exec) /* a new program: its user and cgroup as they are now (su,
		     setpriv, runuser, a move made before the exec) */
		look(l, p);
	/* the command is the record's, also when /proc no longer has it; a
	   rename changes nothing else, and nothing is interned until a sample
	   needs it */
	if (known(l, p) && (p->seen || p->id != 0) && (l->keys & DCPI_LABEL_COMM)) {
		replace_value(known(l, p), "comm", p->comm, label, sizeof(label));
		set_seen(p, label, p->uid);
	} else if (!p->seen) {
		p->has_id = 0;
	}
}

void dcpi_labeler_fork(struct dcpi_labeler *l, int32_t pid, int32_t ppid)
{
	struct proc key = { .pid = ppid }, *parent = htab_find(l->procs, &key), *child;

	/* a parent not seen yet is alive now (it forks): look it up */
	if ((!parent || !known(l, parent)) && ppid > 0 && (parent = proc_of(l, ppid, 1)))
		look(l, parent);
	if (!parent || pid == ppid || !(child = proc_of(l, pid, 1)))
		return;
	/* a child is its parent's command, user and cgroup until it changes them */
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	child->dead = 0;
	free(child->seen);
	child->seen = NULL;
	child->has_id = parent->has_id;
	child->id = parent->id;
	child->has_cg = 0;
	child->uid = parent->uid;
	if (!parent->has_id && parent->seen)
		set_seen(child, parent->seen, parent->uid);
}

void dcpi_labeler_exit(struct dcpi_labeler *l, int32_t pid)
{
	struct proc key = { .pid = pid }, *p = htab_find(l->procs, &key);

	if (!p)
		return;
	/* samples of it may still come (JIT code named at the next merge):
	   what it was is kept, read now while /proc may still show it */
	if (!known(l, p))
		look(l, p);
	p->dead = 1;
}

static int reap_one(void **slot, void *arg)
{
	struct dcpi_labeler *l = arg;
	struct proc *p = *slot;

	if (p->dead)
		htab_clear_slot(l->procs, slot);
	return 1;
}

void dcpi_labeler_reap(struct dcpi_labeler *l)
{
	htab_traverse_noresize(l->procs, reap_one, l);
}

static int refresh_one(void **slot, void *arg)
{
	struct dcpi_labeler *l = arg;
	struct proc *p = *slot;
	char label[3 * (VALUE_MAX + 8)];
	const char *was = known(l, p);
	uint32_t uid;

	/* a live process known before: what /proc says now (a daemon that
	   dropped its privileges without an exec, a move to another cgroup) */
	if (!p->dead && was && p->pid > 0 && compose(l, p, label, sizeof(label), &uid) &&
	    strcmp(label, was))
		set_seen(p, label, uid);
	return 1;
}

void dcpi_labeler_refresh(struct dcpi_labeler *l)
{
	htab_traverse_noresize(l->procs, refresh_one, l);
	l->cg_scanned = 0;
}

/* ---- cgroups by id (PERF_SAMPLE_CGROUP) ------------------------------------------- */

static void cg_put(struct dcpi_labeler *l, uint64_t id, const char *path)
{
	struct cg key = { .id = id }, *c;
	void **slot;

	if (htab_elements(l->cgs) >= CGROUPS_MAX)
		htab_empty(l->cgs); /* ids of cgroups long gone, mostly: found again */
	slot = htab_find_slot(l->cgs, &key, INSERT);
	if (!slot)
		return;
	if (*slot) {
		c = *slot;
	} else if (!(c = calloc(1, sizeof(*c)))) {
		htab_clear_slot(l->cgs, slot);
		return;
	} else {
		c->id = id;
		*slot = c;
	}
	free(c->path);
	c->path = strndup(path, VALUE_MAX - 1);
	if (!c->path)
		htab_clear_slot(l->cgs, slot);
}

void dcpi_labeler_cgroup(struct dcpi_labeler *l, uint64_t id, const char *path)
{
	if (id && path && (l->keys & DCPI_LABEL_CGROUP))
		cg_put(l, id, path[0] ? path : "/");
}

/* Where the cgroup v2 hierarchy is mounted, from procroot/self/mountinfo:
 * "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE ...". */
static void find_cgroot(struct dcpi_labeler *l)
{
	char path[4200], line[4200], root[4096], mnt[4096], fstype[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/self/mountinfo", l->procroot);
	l->cgroot = strdup("");
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s", fstype) != 1)
			continue;
		/* the whole hierarchy, at a path without escapes (\040...) */
		if (!strcmp(fstype, "cgroup2") && !strcmp(root, "/") && !strchr(mnt, '\\')) {
			free(l->cgroot);
			l->cgroot = strdup(mnt);
			break;
		}
	}
	fclose(f);
}

/* The cgroup id of the directory name in dir: the kernfs id, as
 * PERF_SAMPLE_CGROUP gives it (its file handle; the inode number where
 * handles are refused, the same on 64-bit kernels). */
static uint64_t cg_id(int dir, const char *name, int fd)
{
	union {
		struct file_handle h;
		char b[sizeof(struct file_handle) + 64];
	} u;
	struct stat st;
	uint64_t id;
	int mnt;

	u.h.handle_bytes = 64;
	if (!name_to_handle_at(dir, name, &u.h, &mnt, 0) && u.h.handle_type == FILEID_KERNFS &&
	    u.h.handle_bytes == 8) {
		memcpy(&id, u.h.f_handle, 8);
		return id;
	}
	return fstat(fd, &st) ? 0 : (uint64_t)st.st_ino;
}

/* Every cgroup under fd (the directory at rel), depth levels at most:
 * opened without following links, so nothing outside the hierarchy. */
static void scan_dir(struct dcpi_labeler *l, int fd, char *rel, size_t len, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) && htab_elements(l->cgs) < CGROUPS_MAX) {
		size_t n = strlen(rel);
		int sub;

		if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
		    n + 1 + strlen(e->d_name) >= len)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		snprintf(rel + n, len - n, "/%s", e->d_name);
		cg_put(l, cg_id(dirfd(d), e->d_name, sub), rel);
		if (depth > 1)
			scan_dir(l, sub, rel, len, depth - 1);
		else
			close(sub);
		rel[n] = 0;
	}
	closedir(d);
}

/* The path of cgroup id: known, or found by a scan of the hierarchy (one
 * a merge at most: a cgroup made since, whose CGROUP record was lost or
 * not asked for); NULL when not found. */
static const char *cg_path(struct dcpi_labeler *l, uint64_t id)
{
	struct cg key = { .id = id }, *c = htab_find(l->cgs, &key);
	char rel[VALUE_MAX];
	int fd;

	if (c || l->cg_scanned)
		return c ? c->path : NULL;
	l->cg_scanned = 1;
	if (!l->cgroot)
		find_cgroot(l);
	if (!l->cgroot || !l->cgroot[0])
		return NULL;
	fd = open(l->cgroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	rel[0] = 0;
	cg_put(l, cg_id(AT_FDCWD, l->cgroot, fd), "/");
	scan_dir(l, fd, rel, sizeof(rel), CGROUP_DEPTH);
	c = htab_find(l->cgs, &key);
	return c ? c->path : NULL;
}

int dcpi_labeler_cgroup_root(struct dcpi_labeler *l, const char *dir)
{
	char *d = strdup(dir ? dir : "");

	if (!d)
		return dcpi_error(ENOMEM, "out of memory");
	free(l->cgroot);
	l->cgroot = d;
	return 0;
}

int dcpi_labeler_get_cgroup(struct dcpi_labeler *l, int32_t pid, uint64_t cgroup, uint32_t *id)
{
	char label[3 * (VALUE_MAX + 8)];
	const char *path;
	struct proc *p;
	int err = dcpi_labeler_get(l, pid, id);

	if (err || !cgroup || *id == 0 || !(l->keys & DCPI_LABEL_CGROUP))
		return err;
	p = proc_of(l, pid, 0);
	if (p && p->has_cg && p->cg == cgroup) {
		*id = p->cg_id;
		return 0;
	}
	if (!(path = cg_path(l, cgroup)))
		return 0; /* not found: the cgroup /proc gave */
	replace_value(l->labels[*id], "cgroup", path, label, sizeof(label));
	if ((err = intern(l, label, p ? p->uid : UINT32_MAX, id)))
		return err;
	if (p) {
		p->has_cg = 1;
		p->cg = cgroup;
		p->cg_id = *id;
	}
	return 0;
}

int dcpi_label_cgroup_samples(const char *procroot)
{
	char path[4200], line[256], name[64];
	int hier, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroups", procroot ? procroot : "/proc");
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %d", name, &hier) == 2 && !strcmp(name, "perf_event")) {
			found = hier == 0; /* not bound to a v1 hierarchy: the v2 one */
			break;
		}
	fclose(f);
	return found;
}
