/* JIT code of running processes: the per-process tables, sample lookup
 * and pseudo-images.  See dcpi/jitmap.h; reading perf maps is in
 * jitmap_perfmap.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"
#include "internal.h"
#include "jitmap_priv.h"

void dcpi_jm_warn(struct dcpi_jitmap *jm, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!jm->o.on_warning)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jm->o.on_warning(jm->o.arg, msg);
}

uint64_t dcpi_jm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int dcpi_jitmap_new(const struct dcpi_jitmap_opts *o, struct dcpi_jitmap **out)
{
	struct dcpi_jitmap *jm = calloc(1, sizeof(*jm));

	*out = NULL;
	if (!jm)
		return dcpi_error(ENOMEM, "out of memory");
	jm->o = *o;
	jm->budget = o->budget ? o->budget : DCPI_JITMAP_BUDGET;
	jm->budget_per_uid = o->budget_per_uid ? o->budget_per_uid : DCPI_JITMAP_BUDGET_PER_UID;
	jm->procroot = strdup(o->procroot ? o->procroot : "/proc");
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		jm->made_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	}
	if (getrandom(jm->nonce, sizeof(jm->nonce), 0) != (ssize_t)sizeof(jm->nonce)) {
		uint64_t t = dcpi_jm_now() ^ (uint64_t)getpid() << 32;

		memcpy(jm->nonce, &t, sizeof(t)); /* no entropy yet: unique enough */
	}
	if (!jm->procroot) {
		free(jm);
		return dcpi_error(ENOMEM, "out of memory");
	}
	*out = jm;
	return 0;
}

/* p's user's slot, added when missing; -1 when out of memory. */
static int32_t uid_slot(struct dcpi_jitmap *jm, uid_t uid)
{
	size_t i;

	for (i = 0; i < jm->nuids && jm->uids[i].uid != uid; i++)
		;
	if (i < jm->nuids)
		return (int32_t)i;
	if (DCPI_GROW(jm->uids, jm->uids_cap, jm->nuids + 1, INT32_MAX, "users"))
		return -1;
	jm->uids[jm->nuids] = (struct jm_uid){ uid, 0 };
	return (int32_t)jm->nuids++;
}

int dcpi_jm_charge(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t n, const char *what)
{
	struct jm_uid *u;

	if (p->uid_slot < 0 && (p->uid_slot = uid_slot(jm, p->ruid)) < 0)
		return -ENOMEM;
	u = &jm->uids[p->uid_slot];
	if (n > jm->budget - jm->st.bytes || n > jm->budget_per_uid - u->bytes) {
		jm->st.over_budget++;
		jm->st.skipped++;
		if (!p->warned_budget) {
			p->warned_budget = 1;
			dcpi_jm_warn(jm, "JIT code of process %d: over the memory budget (%.1f MiB "
				     "for user %u, %.1f MiB for all): this and later %s skipped",
				     (int)p->pid, jm->budget_per_uid / 1048576.0, (unsigned)p->ruid,
				     jm->budget / 1048576.0, what);
		}
		return -ENOSPC;
	}
	jm->st.bytes += n;
	u->bytes += n;
	p->charged += n;
	return 0;
}

/* Give p's charge back. */
static void uncharge(struct dcpi_jitmap *jm, struct jm_proc *p)
{
	if (p->uid_slot >= 0)
		jm->uids[p->uid_slot].bytes -= p->charged;
	jm->st.bytes -= p->charged;
	p->charged = 0;
}

static void proc_free(struct jm_proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->dump_fd >= 0)
		close(p->dump_fd);
	dcpi_buf_release(&p->code);
	free(p->lines);
	free(p->defer);
	jm_ranges_free(&p->ranges);
	free(p->ents);
	free(p->placed);
	dcpi_buf_release(&p->names);
	free(p);
}

void dcpi_jitmap_free(struct dcpi_jitmap *jm)
{
	if (!jm)
		return;
	for (size_t b = 0; b < JM_BUCKETS; b++)
		for (struct jm_proc *p = jm->buckets[b], *next; p; p = next) {
			next = p->next;
			proc_free(p);
		}
	free(jm->uids);
	free(jm->procroot);
	free(jm->win);
	free(jm);
}

static size_t bucket(int32_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (JM_BUCKETS - 1);
}

static struct jm_proc *live(struct dcpi_jitmap *jm, int32_t pid)
{
	for (struct jm_proc *p = jm->buckets[bucket(pid)]; p; p = p->next)
		if (p->pid == pid && !p->retired)
			return p;
	return NULL;
}

static struct jm_proc *by_key(struct dcpi_jitmap *jm, int64_t key)
{
	int32_t pid = (int32_t)(key & 0x7fffffff);

	for (struct jm_proc *p = jm->buckets[bucket(pid)]; p; p = p->next)
		if (p->key == key)
			return p;
	return NULL;
}

static struct jm_proc *proc_add(struct dcpi_jitmap *jm, int32_t pid)
{
	struct jm_proc *p;
	size_t h = bucket(pid);

	if (jm->nprocs >= DCPI_JITMAP_MAX_PROCS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->fd = -1;
	p->dump_fd = -1;
	p->uid_slot = -1;
	p->key = (int64_t)pid | (int64_t)(++jm->gen & 0x7fffffff) << 32;
	p->created = dcpi_jm_now();
	p->next = jm->buckets[h];
	jm->buckets[h] = p;
	jm->nprocs++;
	return p;
}

struct jm_proc *dcpi_jm_proc(struct dcpi_jitmap *jm, int32_t pid)
{
	struct jm_proc *p = live(jm, pid);

	return p ? p : proc_add(jm, pid);
}

/* Read the perf map on: its first look, or more after a miss. */
static void map_more(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t now)
{
	if (p->gave_up)
		return;
	if (p->fd < 0) {
		if (now < p->next_try)
			return;
		dcpi_jm_open(jm, p);
	} else if (now - p->last_read < DCPI_JITMAP_REREAD_NS) {
		return;
	}
	dcpi_jm_read(jm, p, 0);
}

/* The entry holding ip at time, reading the sources on when they say
 * nothing yet.  The jitdump is read up to time on every sample whose time
 * passed its next record's, so code replaced later is not applied early. */
static const struct lm_map *find(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t ip,
				 uint64_t time)
{
	const struct lm_map *m;
	uint64_t now;

	if (p->dump_fd >= 0 && p->dump_next && time >= p->dump_next)
		dcpi_jm_dump_read(jm, p, time);
	m = jm_ranges_lookup(&p->ranges, ip);
	if (m)
		return m;
	now = dcpi_jm_now();
	map_more(jm, p, now);
	if (p->dump_fd >= 0 && !p->dump_done && now - p->dump_checked >= DCPI_JITMAP_REREAD_NS)
		dcpi_jm_dump_read(jm, p, time);
	return jm_ranges_lookup(&p->ranges, ip);
}

static int place(struct jm_proc *p, struct jm_entry *e)
{
	uint64_t at = dcpi_jitimage_place(p->img_end);
	int err;

	if (e->img_off != JM_UNPLACED)
		return 0;
	if (p->nplaced >= DCPI_JITIMAGE_MAX_FUNCS || at > DCPI_JITIMAGE_MAX_TEXT ||
	    e->size > DCPI_JITIMAGE_MAX_TEXT - at)
		return -ENOSPC;
	err = DCPI_GROW(p->placed, p->placed_cap, p->nplaced + 1, DCPI_JITIMAGE_MAX_FUNCS,
			"functions");
	if (err)
		return err;
	p->placed[p->nplaced++] = (uint32_t)(e - p->ents);
	e->img_off = at;
	p->img_end = at + e->size;
	return 0;
}

/* The offset of ip in m's entry, placing the entry on its first hit. */
static int hit(struct dcpi_jitmap *jm, struct jm_proc *p, const struct lm_map *m, uint64_t ip,
	       int64_t *key, uint64_t *offset)
{
	struct jm_entry *e = &p->ents[m->image];
	int err;

	err = place(p, e);
	if (err)
		return err == -ENOMEM ? err : 0;
	*key = p->key;
	*offset = e->img_off + (ip - m->start + m->pgoff);
	jm->st.hits++;
	return 1;
}

int dcpi_jitmap_resolve(struct dcpi_jitmap *jm, int32_t pid, uint64_t ip, uint64_t time,
			int64_t *key, uint64_t *offset)
{
	struct jm_proc *p;
	const struct lm_map *m;

	if (pid <= 0)
		return 0;
	p = dcpi_jm_proc(jm, pid);
	if (!p)
		return 0; /* over the cap: the sample stays unknown */
	m = find(jm, p, ip, time);
	return m ? hit(jm, p, m, ip, key, offset) : 0;
}

int dcpi_jitmap_pending(struct dcpi_jitmap *jm, int32_t pid, int64_t *key)
{
	struct jm_proc *p = pid > 0 ? live(jm, pid) : NULL;

	if (!p || (p->fd < 0 && p->dump_fd < 0 && (p->gave_up || !p->nspid)))
		return 0;
	*key = p->key;
	return 1;
}

int dcpi_jitmap_resolve_key(struct dcpi_jitmap *jm, int64_t key, uint64_t ip, int64_t *key2,
			    uint64_t *offset)
{
	struct jm_proc *p = by_key(jm, key);
	const struct lm_map *m;

	if (!p)
		return 0;
	if (!p->retired) { /* (an exited one was read to its end at exit) */
		dcpi_jm_read(jm, p, 0);
		dcpi_jm_dump_read(jm, p, UINT64_MAX);
	}
	m = jm_ranges_lookup(&p->ranges, ip);
	return m ? hit(jm, p, m, ip, key2, offset) : 0;
}

int dcpi_jitmap_defer(struct dcpi_jitmap *jm, int32_t pid, uint64_t ip, uint64_t time,
		      unsigned ev)
{
	struct jm_proc *p = pid > 0 ? live(jm, pid) : NULL;

	/* a process with a source open, or one known (it mapped anonymous
	   executable memory) whose map may come at exit (the JDK's) */
	if (!p || (p->fd < 0 && p->dump_fd < 0 && (p->gave_up || !p->nspid)) ||
	    p->ndefer >= DCPI_JITMAP_MAX_DEFER || jm->ndefer >= DCPI_JITMAP_MAX_DEFER_ALL ||
	    DCPI_GROW(p->defer, p->defer_cap, p->ndefer + 1, DCPI_JITMAP_MAX_DEFER, "samples"))
		return 0;
	p->defer[p->ndefer++] = (struct jm_deferred){ ip, time, ev };
	jm->ndefer++;
	jm->st.deferred++;
	return 1;
}

static int settle_proc(struct dcpi_jitmap *jm, struct jm_proc *p, dcpi_jitmap_settle_fn fn,
		       void *arg)
{
	int err = 0;

	if (!p->retired) {
		dcpi_jm_read(jm, p, 0);
		dcpi_jm_dump_read(jm, p, UINT64_MAX);
	}
	for (size_t i = 0; i < p->ndefer && !err; i++) {
		const struct jm_deferred *d = &p->defer[i];
		const struct lm_map *m = jm_ranges_lookup(&p->ranges, d->ip);
		int64_t key = 0;
		uint64_t off = 0;
		int h = m ? hit(jm, p, m, d->ip, &key, &off) : 0;

		if (h < 0)
			return h;
		err = fn(arg, p->pid, d->ip, d->ev, h, key, off);
	}
	jm->ndefer -= p->ndefer;
	p->ndefer = 0;
	return err;
}

int dcpi_jitmap_settle(struct dcpi_jitmap *jm, dcpi_jitmap_settle_fn fn, void *arg)
{
	int err = 0;

	for (size_t b = 0; b < JM_BUCKETS && !err; b++)
		for (struct jm_proc *p = jm->buckets[b]; p && !err; p = p->next)
			if (p->ndefer)
				err = settle_proc(jm, p, fn, arg);
	return err;
}

void dcpi_jitmap_watch(struct dcpi_jitmap *jm, int32_t pid)
{
	struct jm_proc *p = pid > 0 ? dcpi_jm_proc(jm, pid) : NULL;

	if (p && !p->nspid && !p->gave_up && p->fd < 0)
		dcpi_jm_open(jm, p);
}

void dcpi_jitmap_exec(struct dcpi_jitmap *jm, int32_t pid, uint64_t time)
{
	struct jm_proc *p = live(jm, pid);

	if (p && p->created < time)
		p->retired = 1;
}

void dcpi_jitmap_exit(struct dcpi_jitmap *jm, int32_t pid)
{
	struct jm_proc *p = live(jm, pid);

	if (!p)
		return;
	/* the JDK writes its map at exit: a last look (through our root if
	   the process is gone, when it shared it) */
	if (p->fd < 0 && !p->gave_up && p->nspid)
		dcpi_jm_open(jm, p);
	dcpi_jm_read(jm, p, 1);
	dcpi_jm_dump_last(jm, p);
	p->retired = 1;
}

void dcpi_jitmap_reap(struct dcpi_jitmap *jm)
{
	for (size_t b = 0; b < JM_BUCKETS; b++) {
		struct jm_proc **pp = &jm->buckets[b], *p;

		while ((p = *pp) != NULL) {
			if (!p->retired) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			uncharge(jm, p);
			proc_free(p);
			jm->nprocs--;
		}
	}
}

/* p's image of its first n placed functions, appended to out: under id
 * when given, else named by its content (set into id). */
static int build_image(struct jm_proc *p, size_t n, struct dcpi_buf *out, uint8_t *id,
		       int given)
{
	struct dcpi_jit_func *f;
	struct dcpi_jit_line *lines = NULL;
	size_t nl = 0;
	int err;

	for (size_t i = 0; i < n; i++)
		nl += p->ents[p->placed[i]].nlines;
	f = calloc(n ? n : 1, sizeof(*f));
	lines = calloc(nl ? nl : 1, sizeof(*lines));
	if (!f || !lines) {
		free(f);
		free(lines);
		return dcpi_error(ENOMEM, "out of memory");
	}
	nl = 0;
	for (size_t i = 0; i < n; i++) {
		const struct jm_entry *e = &p->ents[p->placed[i]];

		f[i] = (struct dcpi_jit_func){ (const char *)p->names.data + e->name_off, e->size,
					       e->code_off == JM_NO_CODE ? NULL
								  : p->code.data + e->code_off,
					       lines + nl, e->nlines };
		for (uint32_t l = 0; l < e->nlines; l++) {
			const struct jm_line *x = &p->lines[e->line0 + l];

			lines[nl++] = (struct dcpi_jit_line){ x->off, x->line,
				(const char *)p->names.data + x->file_off };
		}
	}
	err = given ? dcpi_jitimage_build_as(f, n, out, id) : dcpi_jitimage_build(f, n, out, id);
	free(f);
	free(lines);
	return err;
}

/* What p's image is shown under: named after the source that described
 * it, the map unless only a jitdump did. */
static void image_path(const struct jm_proc *p, char *path, size_t pathlen, int32_t *pid)
{
	snprintf(path, pathlen, "%s", p->fd < 0 && p->dump_path[0] ? p->dump_path : p->path);
	*pid = p->pid;
}

int dcpi_jitmap_image(struct dcpi_jitmap *jm, int64_t key, struct dcpi_buf *out,
		      uint8_t id[DCPI_SHA1_LEN], char *path, size_t pathlen, int32_t *pid)
{
	struct jm_proc *p = by_key(jm, key);

	if (!p)
		return dcpi_error(ENOENT, "no JIT code known for key %lld", (long long)key);
	image_path(p, path, pathlen, pid);
	return build_image(p, p->nplaced, out, id, 0);
}

/* The id of p's grown images: its first image's, the process's identity
 * and this jitmap's nonce (a daemon started again places afresh: its
 * grown images must not replace the last run's). */
static void grown_id(const struct dcpi_jitmap *jm, const struct jm_proc *p,
		     uint8_t id[DCPI_SHA1_LEN])
{
	struct dcpi_sha1 s;

	dcpi_sha1_init(&s);
	dcpi_sha1_update(&s, "dcpi-jit-grown-1", 16);
	dcpi_sha1_update(&s, p->img_id, DCPI_SHA1_LEN);
	dcpi_sha1_update(&s, jm->nonce, sizeof(jm->nonce));
	dcpi_sha1_update(&s, &p->key, sizeof(p->key));
	dcpi_sha1_update(&s, &p->start_ns, sizeof(p->start_ns));
	dcpi_sha1_final(&s, id);
}

int dcpi_jitmap_image_next(struct dcpi_jitmap *jm, int64_t key, struct dcpi_buf *out,
			   uint8_t id[DCPI_SHA1_LEN], char *path, size_t pathlen, int32_t *pid,
			   uint64_t *size, int *replace)
{
	struct jm_proc *p = by_key(jm, key);
	size_t len0 = out->len;
	int err;

	if (!p)
		return dcpi_error(ENOENT, "no JIT code known for key %lld", (long long)key);
	image_path(p, path, pathlen, pid);
	if (p->img_stored && p->img_stored == p->nplaced) {
		memcpy(id, p->img_id, DCPI_SHA1_LEN);
		*size = p->img_size;
		*replace = 0;
		return 1;
	}
	*replace = p->img_stored != 0;
	if (*replace) {
		if (p->img_grown)
			memcpy(id, p->img_id, DCPI_SHA1_LEN);
		else
			grown_id(jm, p, id);
	}
	err = build_image(p, p->nplaced, out, id, *replace);
	if (err)
		return err;
	*size = out->len - len0;
	p->img_built = p->nplaced;
	p->img_built_size = *size;
	memcpy(p->img_built_id, id, DCPI_SHA1_LEN);
	return 0;
}

void dcpi_jitmap_image_stored(struct dcpi_jitmap *jm, int64_t key)
{
	struct jm_proc *p = by_key(jm, key);

	if (!p || !p->img_built)
		return;
	p->img_grown = p->img_stored != 0;
	p->img_stored = p->img_built;
	p->img_size = p->img_built_size;
	memcpy(p->img_id, p->img_built_id, DCPI_SHA1_LEN);
	p->img_built = 0;
}

int dcpi_jitmap_comm(struct dcpi_jitmap *jm, int32_t pid, char *buf, size_t len)
{
	for (struct jm_proc *p = jm->buckets[bucket(pid)]; p; p = p->next)
		if (p->pid == pid && p->comm[0]) {
			snprintf(buf, len, "%s", p->comm);
			return 1;
		}
	return 0;
}

int dcpi_jitmap_is_dump(const char *path)
{
	const char *base = strrchr(path, '/'), *d;

	base = base ? base + 1 : path;
	if (strncmp(base, "jit-", 4))
		return 0;
	for (d = base + 4; *d >= '0' && *d <= '9'; d++)
		;
	return d > base + 4 && !strcmp(d, ".dump");
}

void dcpi_jitmap_stats(const struct dcpi_jitmap *jm, struct dcpi_jitmap_stats *st)
{
	*st = jm->st;
}

size_t dcpi_jitmap_users(const struct dcpi_jitmap *jm, struct dcpi_jitmap_user *out, size_t max)
{
	for (size_t i = 0; i < jm->nuids && i < max; i++)
		out[i] = (struct dcpi_jitmap_user){ (uint32_t)jm->uids[i].uid, jm->uids[i].bytes };
	return jm->nuids;
}
