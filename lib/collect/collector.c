/* The collector: ordering, attribution, aggregation, merge.  See
 * dcpi/collector.h. */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/agg.h"
#include "dcpi/buf.h"
#include "dcpi/collector.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/jitmap.h"
#include "dcpi/label.h"
#include "dcpi/record.h"
#include "dcpi/stats.h"
#include "internal.h"

#define QUEUE_MAX_BYTES (64u << 20) /* past this, process without waiting */
#define REGION_SHIFT 20             /* -unknown groups by 1 MB regions */

/* A queued record: raw bytes in the arena, or (sample) a struct fsample. */
struct qent {
	uint64_t time;
	uint64_t seq;                /* ties keep ring order */
	size_t off;
	uint32_t len;
	int32_t pid;                 /* side-band: whose state it changes (-1:
					the kernel's); NO_PID for the rest */
	int sample;
};
#define NO_PID INT32_MIN

/* A sample decoded as it arrives: most are counted straight from here,
 * without being copied, sorted or decoded again (dcpi_collector_process). */
struct fsample {
	struct dcpi_sample s;
	uint64_t seq;
};

/* A distinct (process, address, event, mode) of one drain's samples,
 * attributed once: its samples are counted here and added to the
 * aggregate together (count_fast). */
struct rawkey {
	uint64_t ip;
	uint64_t cg;                 /* the samples' cgroup id (0: not given) */
	int32_t pid;
	uint16_t ev;
	uint8_t kernel;
	uint8_t slow;                /* no image: each sample takes count_sample */
	uint32_t gen;                /* the slot is used when == raw_gen */
	uint32_t pgen;               /* its process's generation (struct pidslot) */
	int32_t next;                /* its process's previous key, or -1 */
	int32_t idx;                 /* image, offset and profile pid */
	int64_t apid;
	uint64_t off, n;
};

struct pidslot;

struct dcpi_collector {
	struct dcpi_collector_opts o;
	struct dcpi_eventlist events;
	struct dcpi_loadmap *lm;
	struct dcpi_agg *agg;
	struct dcpi_buf arena;       /* raw records queued */
	struct qent *q;
	size_t nq, qcap;
	struct fsample *fs;          /* samples of the drain, in ring order */
	size_t nfs, fscap;
	struct pidslot *pidset;      /* pids with side-band queued */
	size_t pidset_cap, npidset;  /* npidset: processes in it (most drains: 0) */
	struct rawkey *raw;          /* the drain's distinct keys, open addressing */
	size_t raw_cap, nraw;
	uint32_t raw_gen;
	uint32_t *raw_used;          /* slots used in this generation */
	int prepared;                /* pidset and raw set up by a split drain */
	uint64_t seq;
	uint64_t pending;
	int unknown_image;           /* the shared unknown@host pseudo-image */
	struct dcpi_jitmap *jm;      /* NULL without a database to keep JIT code in */
	int jit_image;               /* bins of JIT code: (jit_image, jitmap key) */
	char *db;
	char **bypid;                /* our copy of o.bypid */
	int *bypid_cache;            /* per image: -1 untested, 0 no, 1 yes */
	size_t bypid_cache_len;
	struct dcpi_labeler *lab;    /* -label; NULL: profiles are not labelled */
	struct dcpi_epoch_stats stats;
};

/* JIT bins share one placeholder image; the merge writes each bin's own
 * pseudo-image and names the profile after it. */
static int new_jit(struct dcpi_collector *c, const struct dcpi_collector_opts *o)
{
	struct dcpi_jitmap_opts jo = { .procroot = o->procroot, .on_warning = o->on_warning,
				       .arg = o->arg, .budget = o->jit_budget,
				       .budget_per_uid = o->jit_budget_per_uid };
	struct dcpi_image jit = { .path = "[jit]", .kind = DCPI_IMAGE_FILE };
	int err;

	c->db = strdup(o->db);
	if (!c->db)
		return dcpi_error(ENOMEM, "out of memory");
	err = dcpi_jitmap_new(&jo, &c->jm);
	if (err)
		return err;
	c->jit_image = dcpi_loadmap_intern(c->lm, &jit);
	return c->jit_image < 0 ? c->jit_image : 0;
}

int dcpi_collector_new(const struct dcpi_collector_opts *o, struct dcpi_collector **out)
{
	struct dcpi_collector *c = calloc(1, sizeof(*c));
	struct dcpi_image unk = { .path = "[unknown]", .kind = DCPI_IMAGE_UNKNOWN };
	int err;

	if (!c)
		return dcpi_error(ENOMEM, "out of memory");
	c->o = *o;
	c->o.bypid = NULL; /* the caller's array need not outlive this call */
	c->events = *o->events;
	c->bypid = calloc(o->nbypid + 1, sizeof(*c->bypid));
	for (size_t i = 0; c->bypid && i < o->nbypid; i++)
		if (!(c->bypid[i] = strdup(o->bypid[i]))) {
			err = dcpi_error(ENOMEM, "out of memory");
			goto fail;
		}
	if (!c->bypid) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto fail;
	}
	c->lm = dcpi_loadmap_new(o->procroot ? o->procroot : "/proc");
	c->agg = dcpi_agg_new(c->events.n);
	if (!c->lm || !c->agg) {
		err = dcpi_error(ENOMEM, "out of memory");
		goto fail;
	}
	if (o->label_keys &&
	    (err = dcpi_labeler_new(o->label_keys, o->procroot, o->label_cap, &c->lab)))
		goto fail;
	dcpi_label_keys_str(o->label_keys, c->stats.labels, sizeof(c->stats.labels));
	c->unknown_image = dcpi_loadmap_intern(c->lm, &unk);
	if (c->unknown_image < 0) {
		err = c->unknown_image;
		goto fail;
	}
	c->jit_image = DCPI_NO_IMAGE;
	if (o->db) {
		err = new_jit(c, o);
		if (err)
			goto fail;
	}
	c->stats.nevents = c->events.n;
	for (unsigned i = 0; i < c->events.n; i++) {
		snprintf(c->stats.ev[i].name, sizeof(c->stats.ev[i].name), "%s", c->events.ev[i].name);
		c->stats.ev[i].period = c->events.ev[i].period;
	}
	snprintf(c->stats.platform, sizeof(c->stats.platform), "%s", o->host ? o->host : "");
	*out = c;
	return 0;
fail:
	dcpi_collector_free(c);
	return err;
}

void dcpi_collector_free(struct dcpi_collector *c)
{
	if (!c)
		return;
	if (c->lm)
		dcpi_loadmap_free(c->lm);
	dcpi_agg_free(c->agg);
	dcpi_labeler_free(c->lab);
	dcpi_jitmap_free(c->jm);
	free(c->db);
	dcpi_buf_release(&c->arena);
	free(c->q);
	free(c->fs);
	free(c->pidset);
	free(c->raw);
	free(c->raw_used);
	free(c->bypid_cache);
	for (size_t i = 0; c->bypid && i < c->o.nbypid; i++)
		free(c->bypid[i]);
	free(c->bypid);
	free(c);
}

struct dcpi_loadmap *dcpi_collector_loadmap(struct dcpi_collector *c)
{
	return c->lm;
}

struct dcpi_epoch_stats *dcpi_collector_stats(struct dcpi_collector *c)
{
	return &c->stats;
}

uint64_t dcpi_collector_pending(const struct dcpi_collector *c)
{
	return c->pending;
}

int dcpi_collector_jit_stats(const struct dcpi_collector *c, struct dcpi_jitmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!c->jm)
		return -ENOENT;
	dcpi_jitmap_stats(c->jm, st);
	return 0;
}

/* ---- attribution -------------------------------------------------------- */

static int path_matches(const char *path, const char *want)
{
	const char *base = strrchr(path, '/');

	return !strcmp(path, want) || (base && !strcmp(base + 1, want));
}

/* Whether image idx is one the user asked to profile per process. */
static int is_bypid(struct dcpi_collector *c, int idx)
{
	const struct dcpi_image *img;
	int yes = 0;

	if (c->o.nbypid == 0 || idx < 0)
		return 0;
	if ((size_t)idx >= c->bypid_cache_len) {
		size_t old = c->bypid_cache_len;

		if (DCPI_GROW(c->bypid_cache, c->bypid_cache_len, (size_t)idx + 1, SIZE_MAX,
			      "images"))
			return 0; /* only a cache: answer without it */
		for (size_t i = old; i < c->bypid_cache_len; i++)
			c->bypid_cache[i] = -1; /* not yet known */
	}
	if (c->bypid_cache[idx] >= 0)
		return c->bypid_cache[idx];
	img = dcpi_loadmap_image(c->lm, idx);
	for (size_t i = 0; img && i < c->o.nbypid && !yes; i++)
		yes = path_matches(img->path, c->bypid[i]);
	c->bypid_cache[idx] = yes;
	return yes;
}

static int unknown_region_image(struct dcpi_collector *c, uint64_t ip)
{
	char path[64];
	uint64_t region = ip >> REGION_SHIFT << REGION_SHIFT;
	struct dcpi_image t = { .path = path, .kind = DCPI_IMAGE_UNKNOWN, .text_start = region,
				.text_size = 1u << REGION_SHIFT };

	snprintf(path, sizeof(path), "[unknown 0x%" PRIx64 "]", region);
	return dcpi_loadmap_intern(c->lm, &t);
}

/* Count n samples of process rpid (in cgroup cg, 0 when the samples did
 * not say) at (idx, pid, off), under rpid's label when profiles are
 * labelled. */
static int agg_add(struct dcpi_collector *c, int idx, int64_t pid, int32_t rpid, uint64_t cg,
		   uint64_t off, unsigned ev, uint64_t n)
{
	uint32_t label = 0;
	int err;

	if (c->lab) {
		if ((err = dcpi_labeler_get_cgroup(c->lab, rpid, cg, &label)))
			return err;
		if (label == 0)
			c->stats.label_other += n; /* past the cap: counted, and said */
	}
	err = dcpi_agg_add(c->agg, idx, pid, label, off, ev, n);

	if (err == -ENOSPC) {
		c->stats.lost += n; /* counted, never silent */
		return 0;
	}
	if (!err)
		c->pending += n;
	return err;
}

static int anon_region_image(struct dcpi_collector *c, const char *comm, uint64_t ip)
{
	char path[96];
	uint64_t region = ip >> REGION_SHIFT << REGION_SHIFT;
	struct dcpi_image t = { .path = path, .kind = DCPI_IMAGE_ANON, .text_start = region,
				.text_size = 1u << REGION_SHIFT };

	snprintf(path, sizeof(path), "[anon:%s@0x%" PRIx64 "]", comm, region);
	return dcpi_loadmap_intern(c->lm, &t);
}

/* A user or kernel sample no image describes. */
static int count_unknown(struct dcpi_collector *c, int32_t rpid, uint64_t cg, uint64_t ip,
			 int kernel, unsigned ev)
{
	char comm[32];

	c->stats.unknown++;
	if (c->o.on_unknown)
		c->o.on_unknown(c->o.arg, rpid, ip, kernel);
	if (!kernel && rpid > 0 && c->jm && dcpi_jitmap_comm(c->jm, rpid, comm, sizeof(comm))) {
		/* anonymous code nothing describes: kept per process and region,
		   under its command */
		int idx = anon_region_image(c, comm, ip);

		if (idx < 0)
			return idx;
		return agg_add(c, idx, rpid, rpid, cg, ip - (ip >> REGION_SHIFT << REGION_SHIFT), ev,
			       1);
	}
	if (c->o.unknown_per_pid && rpid > 0) {
		int idx = unknown_region_image(c, ip);

		if (idx < 0)
			return idx;
		return agg_add(c, idx, rpid, rpid, cg, ip - (ip >> REGION_SHIFT << REGION_SHIFT), ev,
			       1);
	}
	return agg_add(c, c->unknown_image, -1, rpid, cg, ip, ev, 1);
}

static int count_sample(struct dcpi_collector *c, const struct dcpi_record *r, int ev)
{
	int kernel = (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	uint64_t off;
	int64_t pid = -1;
	int idx, err;

	if (ev < 0 || (unsigned)ev >= c->events.n)
		return 0; /* not one of ours: cannot happen with our own rings */
	c->stats.samples++;
	c->stats.ev[ev].samples++;
	if (kernel)
		c->stats.kernel++;
	idx = dcpi_loadmap_resolve(c->lm, r->pid, r->ip, kernel, &off);
	if (idx < 0 && !kernel && c->jm) {
		err = dcpi_jitmap_resolve(c->jm, r->pid, r->ip, r->time, &pid, &off);
		if (err < 0)
			return err;
		if (err == 1)
			idx = c->jit_image;
		else if (dcpi_jitmap_defer(c->jm, r->pid, r->ip, r->time, (unsigned)ev))
			return 0; /* named or counted unknown at the next merge */
	}
	if (idx < 0)
		return count_unknown(c, r->pid, r->cgroup, r->ip, kernel, (unsigned)ev);
	if (idx != c->jit_image && is_bypid(c, idx))
		pid = r->pid;
	return agg_add(c, idx, pid, r->pid, r->cgroup, off, (unsigned)ev, 1);
}

int dcpi_collector_feed(struct dcpi_collector *c, const struct dcpi_record *r, int ev)
{
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		return count_sample(c, r, ev);
	case PERF_RECORD_MMAP2:
		return dcpi_loadmap_mmap(c->lm, &r->mmap);
	case PERF_RECORD_COMM:
		if (c->lab && r->pid == r->tid)
			dcpi_labeler_comm(c->lab, r->pid, r->comm, r->exec);
		if (r->exec && c->jm)
			dcpi_jitmap_exec(c->jm, r->pid, r->time);
		return r->exec ? dcpi_loadmap_exec(c->lm, r->pid) : 0;
	case PERF_RECORD_FORK:
		if (c->lab && r->pid == r->tid)
			dcpi_labeler_fork(c->lab, r->pid, r->ppid);
		return dcpi_loadmap_fork(c->lm, r->pid, r->ppid);
	case PERF_RECORD_EXIT:
		if (r->pid != r->tid)
			return 0;
		if (c->lab)
			dcpi_labeler_exit(c->lab, r->pid);
		if (c->jm)
			dcpi_jitmap_exit(c->jm, r->pid);
		return dcpi_loadmap_exit(c->lm, r->pid);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		c->stats.lost += r->lost;
		return 0;
	case PERF_RECORD_THROTTLE:
		c->stats.throttled++;
		return 0;
	case PERF_RECORD_CGROUP:
		if (c->lab)
			dcpi_labeler_cgroup(c->lab, r->cgroup, r->cgroup_path);
		return 0;
	default:
		return 0;
	}
}

/* ---- ordering ----------------------------------------------------------- */

/* A JIT maps anonymous executable memory for its code, and its jitdump
 * (executable, for the purpose): look at the process while it surely runs
 * (dcpi_jitmap_watch, dcpi_jitmap_watch_dump). */
static void watch_jit(struct dcpi_collector *c, const void *raw, size_t len)
{
	const struct perf_event_header *h = raw;
	struct dcpi_record r;

	if (len < sizeof(*h) || h->type != PERF_RECORD_MMAP2 ||
	    dcpi_record_decode_flags(raw, len, c->o.mmap_build_id ? DCPI_RECORD_WANT_BUILD_ID : 0,
				     &r))
		return;
	if (!(r.mmap.prot & PROT_EXEC) || r.mmap.pid <= 0 || !r.mmap.path)
		return;
	if (!r.mmap.path[0] || !strcmp(r.mmap.path, "//anon"))
		dcpi_jitmap_watch(c->jm, r.mmap.pid);
	else if (dcpi_jitmap_is_dump(r.mmap.path) && r.mmap.len <= UINT64_MAX - r.mmap.start)
		dcpi_jitmap_watch_dump(c->jm, r.mmap.pid, r.mmap.start,
				       r.mmap.start + r.mmap.len, r.mmap.path);
}

/* The process whose attribution state a side-band record changes (the
 * kernel's: -1), or NO_PID. */
static int32_t sideband_pid(const struct dcpi_record *r)
{
	switch (r->type) {
	case PERF_RECORD_MMAP2:
		return r->mmap.pid;
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return r->pid;
	default:
		return NO_PID;
	}
}

int dcpi_collector_queue(struct dcpi_collector *c, const void *raw, size_t len)
{
	const struct perf_event_header *h = raw;
	unsigned flags = c->o.mmap_build_id ? DCPI_RECORD_WANT_BUILD_ID : 0;
	struct dcpi_record r;
	size_t off = c->arena.len;
	int32_t pid = NO_PID;
	int err;

	if (len >= sizeof(*h) && h->type == PERF_RECORD_SAMPLE) {
		struct fsample *f;

		if (c->nfs == c->fscap &&
		    (err = DCPI_GROW(c->fs, c->fscap, c->nfs + 1, SIZE_MAX, "queued samples")))
			return err;
		f = &c->fs[c->nfs];
		if (dcpi_record_decode_sample(raw, len, &f->s))
			return 0; /* malformed: skip it, never crash on it */
		f->seq = c->seq++;
		c->nfs++;
		return 0;
	}
	if (c->jm)
		watch_jit(c, raw, len);
	if (!dcpi_record_decode_flags(raw, len, flags, &r)) {
		if (r.type == PERF_RECORD_CGROUP) /* an id's path, whenever it came */
			return dcpi_collector_feed(c, &r, -1);
		pid = sideband_pid(&r);
	}
	if ((err = DCPI_GROW(c->q, c->qcap, c->nq + 1, SIZE_MAX, "queued records")))
		return err;
	err = dcpi_buf_put(&c->arena, raw, len);
	if (err)
		return err;
	c->q[c->nq++] = (struct qent){ dcpi_record_time(raw, len), c->seq++, off, (uint32_t)len,
				       pid, 0 };
	return 0;
}

static int cmp_qent(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A process with side-band records queued: its generation counts those
 * applied in this pass, and its raw keys of the current generation are
 * chained from head (raw_used indices), to be added to the aggregate
 * before the next of its records changes what they mean. */
struct pidslot {
	int32_t pid;                 /* 0: empty */
	uint32_t gen;
	int32_t head;                /* -1: none */
};

static struct pidslot *pid_slot(const struct dcpi_collector *c, int32_t pid)
{
	size_t mask = c->pidset_cap - 1, h = ((uint32_t)pid * 0x9E3779B1u) & mask;

	while (c->pidset[h].pid && c->pidset[h].pid != pid)
		h = (h + 1) & mask;
	return &c->pidset[h];
}

/* The set of processes with side-band records queued.  Pid 0 (the idle
 * task) has none; the kernel's -1 is stored as is. */
static int pidset_build(struct dcpi_collector *c)
{
	size_t want = 16;

	while (want < c->nq * 2)
		want *= 2;
	if (want > c->pidset_cap) {
		struct pidslot *n = calloc(want, sizeof(*n));

		if (!n)
			return dcpi_error(ENOMEM, "out of memory");
		free(c->pidset);
		c->pidset = n;
		c->pidset_cap = want;
	} else {
		memset(c->pidset, 0, c->pidset_cap * sizeof(*c->pidset));
	}
	c->npidset = 0;
	for (size_t i = 0; i < c->nq; i++) {
		struct pidslot *s;

		if (c->q[i].pid == NO_PID || c->q[i].pid == 0)
			continue;
		s = pid_slot(c, c->q[i].pid);
		if (!s->pid)
			c->npidset++;
		*s = (struct pidslot){ c->q[i].pid, 0, -1 };
	}
	return 0;
}

/* pid's slot when it has side-band records queued, else NULL. */
static struct pidslot *pidset_find(const struct dcpi_collector *c, int32_t pid)
{
	struct pidslot *s;

	if (pid == 0 || !c->npidset)
		return NULL;
	s = pid_slot(c, pid);
	return s->pid == pid ? s : NULL;
}

static int sample_kernel(const struct dcpi_sample *s)
{
	return (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

/* Whether a sample must wait for the time-ordered pass: it is within the
 * horizon (a side-band record before it may not be read yet), or its
 * process's mappings, labels or JIT state change in this pass (for a
 * kernel sample, the kernel's images). */
static int must_wait(const struct dcpi_collector *c, const struct dcpi_sample *s,
		     uint64_t horizon)
{
	return s->time > horizon || pidset_find(c, s->pid) ||
	       (sample_kernel(s) && pidset_find(c, -1));
}

/* The event index of the last id asked, kept: a ring's samples come in
 * runs of one counter's id. */
struct evcache {
	uint64_t id;
	int ev;                      /* -2: none yet */
};

static int event_cached(struct evcache *e, uint64_t id,
			int (*event_of)(const void *arg, uint64_t id), const void *arg)
{
	if (e->ev == -2 || id != e->id) {
		e->id = id;
		e->ev = event_of(arg, id);
	}
	return e->ev;
}

static void fsample_record(const struct fsample *f, struct dcpi_record *r)
{
	r->type = PERF_RECORD_SAMPLE;
	r->misc = f->s.misc;
	r->pid = f->s.pid;
	r->tid = f->s.tid;
	r->time = f->s.time;
	r->id = f->s.id;
	r->ip = f->s.ip;
	r->cgroup = f->s.cgroup;
}

static size_t raw_hash(uint64_t ip, int32_t pid, unsigned ev, int kernel, uint32_t pgen,
		       uint64_t cg)
{
	return (size_t)dcpi_mix64(ip ^ (uint64_t)(uint32_t)pid << 40 ^ (uint64_t)ev << 20 ^
			     (uint64_t)kernel ^ (uint64_t)pgen << 8 ^ cg * 0x9e3779b97f4a7c15u);
}

/* A table of cap slots (a power of 2), the used ones of this generation
 * moved over in order (pid chains name them by that order). */
static int raw_resize(struct dcpi_collector *c, size_t cap)
{
	struct rawkey *t = calloc(cap, sizeof(*t));
	uint32_t *u = malloc(cap / 2 * sizeof(*u));

	if (!t || !u) {
		free(t);
		free(u);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < c->nraw; i++) {
		const struct rawkey *k = &c->raw[c->raw_used[i]];
		size_t h = raw_hash(k->ip, k->pid, k->ev, k->kernel, k->pgen, k->cg) & (cap - 1);

		while (t[h].gen)
			h = (h + 1) & (cap - 1);
		t[h] = *k;
		t[h].gen = 1;
		u[i] = (uint32_t)h;
	}
	free(c->raw);
	free(c->raw_used);
	c->raw = t;
	c->raw_used = u;
	c->raw_cap = cap;
	c->raw_gen = 1;
	return 0;
}

/* A new generation: the table empty at no cost. */
static int raw_reset(struct dcpi_collector *c)
{
	c->nraw = 0;
	if (!c->raw)
		return raw_resize(c, 4096);
	if (++c->raw_gen == 0) { /* wrapped: old slots could look used */
		memset(c->raw, 0, c->raw_cap * sizeof(*c->raw));
		c->raw_gen = 1;
	}
	return 0;
}

/* The key's slot, attributed when first met, against the loadmap as it is
 * now (so it must be the state of the sample's time); chained to ps, the
 * process's slot, if it has side-band records.  NULL when out of memory. */
static struct rawkey *raw_get(struct dcpi_collector *c, const struct dcpi_sample *s, int ev,
			      int kernel, struct pidslot *ps)
{
	uint32_t pgen = ps ? ps->gen : 0;
	size_t mask = c->raw_cap - 1,
	       h = raw_hash(s->ip, s->pid, (unsigned)ev, kernel, pgen, s->cgroup) & mask;
	struct rawkey *k;

	for (;; h = (h + 1) & mask) {
		k = &c->raw[h];
		if (k->gen != c->raw_gen)
			break;
		if (k->ip == s->ip && k->pid == s->pid && k->ev == ev && k->kernel == kernel &&
		    k->pgen == pgen && k->cg == s->cgroup)
			return k;
	}
	if (c->nraw + 1 > c->raw_cap / 2) {
		if (c->raw_cap >= (size_t)1 << 31 || raw_resize(c, c->raw_cap * 2))
			return NULL;
		return raw_get(c, s, ev, kernel, ps);
	}
	*k = (struct rawkey){ .ip = s->ip, .cg = s->cgroup, .pid = s->pid, .ev = (uint16_t)ev,
			      .kernel = (uint8_t)kernel, .gen = c->raw_gen, .pgen = pgen,
			      .next = -1 };
	if (ps) {
		k->next = ps->head;
		ps->head = (int32_t)c->nraw;
	}
	c->raw_used[c->nraw++] = (uint32_t)h;
	k->idx = dcpi_loadmap_resolve(c->lm, s->pid, s->ip, kernel, &k->off);
	if (k->idx < 0)
		k->slow = 1; /* JIT code or unknown: per sample, as they need */
	else
		k->apid = is_bypid(c, k->idx) ? s->pid : -1;
	return k;
}

/* Add a key's samples to the aggregate; only running out of memory is an
 * error (kept in *err, the first). */
static void raw_flush_key(struct dcpi_collector *c, struct rawkey *k, int *err)
{
	int e;

	if (k->slow || !k->n)
		return;
	c->stats.samples += k->n;
	c->stats.ev[k->ev].samples += k->n;
	if (k->kernel)
		c->stats.kernel += k->n;
	e = agg_add(c, k->idx, k->apid, k->pid, k->cg, k->off, k->ev, k->n);
	if (!*err && e == -ENOMEM)
		*err = e;
	k->n = 0;
}

/* Before a side-band record of ps's process is applied: its keys so far
 * go to the aggregate, later samples take new ones. */
static void raw_flush_pid(struct dcpi_collector *c, struct pidslot *ps, int *err)
{
	for (int32_t u = ps->head; u >= 0;) {
		struct rawkey *k = &c->raw[c->raw_used[u]];

		raw_flush_key(c, k, err);
		u = k->next;
	}
	ps->head = -1;
	ps->gen++;
}

static int raw_flush(struct dcpi_collector *c)
{
	int err = 0;

	for (size_t u = 0; u < c->nraw; u++)
		raw_flush_key(c, &c->raw[c->raw_used[u]], &err);
	c->nraw = 0;
	return err;
}

/* Count one sample (of the fast path, or of the ordered one, in time
 * order): by its key, or, where its key has no image, on its own. */
static int count_one(struct dcpi_collector *c, const struct fsample *f, int ev,
		     struct pidslot *ps)
{
	struct dcpi_record r;
	struct rawkey *k;
	int err;

	if (ev < 0 || (unsigned)ev >= c->events.n)
		return 0; /* not one of ours: cannot happen with our own rings */
	k = raw_get(c, &f->s, ev, sample_kernel(&f->s), ps);
	if (k && !k->slow) {
		k->n++;
		return 0;
	}
	fsample_record(f, &r);
	err = count_sample(c, &r, ev);
	return err == -ENOMEM ? err : 0; /* a record we could not use is not fatal */
}

/* Count the drain's samples that nothing queued can change the meaning
 * of: older than the horizon (so every side-band record before them has
 * been read) and of a process with no side-band record queued (so its
 * loadmap, labels and JIT state are those of the sample's time; for a
 * kernel sample, the kernel's too).  Counting commutes, so these need no
 * ordering: each distinct (process, address, event, mode) is attributed
 * once and its samples added together.  The rest join the queue, to be
 * taken in time order. */
static int count_fast(struct dcpi_collector *c, uint64_t horizon,
		      int (*event_of)(const void *arg, uint64_t id), const void *arg)
{
	struct evcache ec = { 0, -2 };
	int err = 0;

	for (size_t i = 0; i < c->nfs && !err; i++) {
		const struct fsample *f = &c->fs[i];
		size_t off = c->arena.len;

		if (must_wait(c, &f->s, horizon)) {
			if ((err = DCPI_GROW(c->q, c->qcap, c->nq + 1, SIZE_MAX, "queued records")) ||
			    (err = dcpi_buf_put(&c->arena, f, sizeof(*f))))
				break;
			c->q[c->nq++] = (struct qent){ f->s.time, f->seq, off, sizeof(*f), NO_PID, 1 };
			continue;
		}
		err = count_one(c, f, event_cached(&ec, f->s.id, event_of, arg), NULL);
	}
	c->nfs = 0; /* on an error, what is left is dropped (out of memory) */
	return err;
}

/* A queued record, in time order: a sample by its key (generation: its
 * process's side-band records applied so far), a side-band record after
 * the keys it would change the meaning of are counted. */
static int take_queued(struct dcpi_collector *c, const struct qent *q,
		       int (*event_of)(const void *arg, uint64_t id), const void *arg)
{
	const uint8_t *raw = c->arena.data + q->off;
	struct dcpi_record r;
	struct pidslot *ps;
	int err = 0;

	if (q->sample) {
		struct fsample f;

		memcpy(&f, raw, sizeof(f));
		if (sample_kernel(&f.s) && pidset_find(c, -1)) {
			/* the kernel's images change in this pass: one by one */
			fsample_record(&f, &r);
			err = dcpi_collector_feed(c, &r, event_of(arg, f.s.id));
			return err == -ENOMEM ? err : 0;
		}
		return count_one(c, &f, event_of(arg, f.s.id), pidset_find(c, f.s.pid));
	}
	if (dcpi_record_decode_flags(raw, q->len,
				     c->o.mmap_build_id ? DCPI_RECORD_WANT_BUILD_ID : 0, &r))
		return 0; /* malformed: skip it, never crash on it */
	if (q->pid != NO_PID && (ps = pidset_find(c, q->pid)))
		raw_flush_pid(c, ps, &err);
	if (!err)
		err = dcpi_collector_feed(c, &r, -1);
	return err == -ENOMEM ? err : 0; /* a record we could not use is not fatal */
}

int dcpi_collector_process(struct dcpi_collector *c, uint64_t horizon,
			   int (*event_of)(const void *arg, uint64_t id), const void *arg)
{
	struct dcpi_buf rest = DCPI_BUF_INIT;
	size_t i = 0, keep = 0;
	int err, ferr;

	if (c->arena.len > QUEUE_MAX_BYTES)
		horizon = UINT64_MAX; /* bounded memory beats perfect order */
	if (c->prepared) { /* by a split drain, which counted most samples already */
		c->prepared = 0;
		err = 0;
	} else {
		err = pidset_build(c);
		if (!err)
			err = raw_reset(c);
	}
	if (!err)
		err = count_fast(c, horizon, event_of, arg);
	if (c->nq)
		qsort(c->q, c->nq, sizeof(*c->q), cmp_qent);
	for (; !err && i < c->nq && c->q[i].time <= horizon; i++)
		if ((err = take_queued(c, &c->q[i], event_of, arg)))
			break; /* kept, for the next call */
	ferr = raw_flush(c);
	if (!err)
		err = ferr;
	/* keep the records past the horizon, compacted */
	for (; i < c->nq; i++) {
		struct qent e = c->q[i];
		int perr = dcpi_buf_put(&rest, c->arena.data + e.off, e.len);

		if (perr) {
			err = perr;
			break;
		}
		e.off = rest.len - e.len;
		c->q[keep++] = e;
	}
	c->nq = keep;
	dcpi_buf_release(&c->arena);
	c->arena = rest;
	return err;
}

static int queue_cb(void *arg, const void *raw, size_t len)
{
	return dcpi_collector_queue(arg, raw, len);
}

static int sampler_event_of(const void *arg, uint64_t id)
{
	return dcpi_sampler_event_of(arg, id);
}

/* A split drain (dcpi_sampler_drain_split): the side-band records are
 * queued first, so that as each sample is read it is known whether it
 * can be counted at once (count_fast's test), with no copy at all. */
struct split {
	struct dcpi_collector *c;
	const struct dcpi_sampler *s;
	uint64_t horizon;
	struct evcache ec;
};

static int split_side(void *arg, const void *raw, size_t len)
{
	return dcpi_collector_queue(((struct split *)arg)->c, raw, len);
}

static int split_mid(void *arg)
{
	struct split *x = arg;
	int err = pidset_build(x->c);

	if (!err)
		err = raw_reset(x->c);
	if (!err)
		x->c->prepared = 1;
	return err;
}

static int split_sample(void *arg, const void *raw, size_t len)
{
	struct split *x = arg;
	struct fsample f;

	if (dcpi_record_decode_sample(raw, len, &f.s) || must_wait(x->c, &f.s, x->horizon))
		return dcpi_collector_queue(x->c, raw, len); /* as it would have been */
	return count_one(x->c, &f, event_cached(&x->ec, f.s.id, sampler_event_of, x->s), NULL);
}

int dcpi_collector_drain(struct dcpi_collector *c, struct dcpi_sampler *s, int all)
{
	struct timespec ts;
	struct split x = { c, s, 0, { 0, -2 } };
	int err, perr;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock the sampler stamps with */
	x.horizon = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	x.horizon = all || x.horizon < DCPI_HORIZON_SLACK_NS ? UINT64_MAX
							      : x.horizon - DCPI_HORIZON_SLACK_NS;
	err = dcpi_sampler_drain_split(s, split_side, split_mid, split_sample, &x);
	if (err == -EOPNOTSUPP)
		err = dcpi_sampler_drain(s, queue_cb, c);
	perr = dcpi_collector_process(c, x.horizon, sampler_event_of, s);
	return err ? err : perr;
}

/* ---- merge -------------------------------------------------------------- */

static void set_identity(struct dcpi_collector *c, const struct dcpi_image *img, int64_t pid,
			 uint32_t label, struct dcpi_profile *p)
{
	p->path = strdup(img->path);
	p->label = c->lab ? strdup(dcpi_labeler_label(c->lab, label)) : NULL;
	memcpy(p->build_id, img->build_id, img->build_id_len);
	p->build_id_len = img->build_id_len;
	p->size = img->size;
	p->mtime = img->mtime;
	p->epoch = strdup(c->stats.epoch);
	p->platform = strdup(c->stats.platform);
	p->kind = img->kind;
	p->pid = pid;
	p->text_start = img->text_start;
	p->text_size = img->text_size;
	p->nevents = c->events.n;
	for (unsigned e = 0; e < c->events.n; e++) {
		const struct dcpi_stats_event *se = &c->stats.ev[e];

		p->events[e].name = strdup(c->events.ev[e].name);
		p->events[e].period = c->events.ev[e].period;
		p->events[e].monitored_ppm = se->time_enabled
			? (uint32_t)((double)se->time_running / se->time_enabled * 1e6 + 0.5)
			: 1000000;
	}
}

/* A JIT bin (pid holds the jitmap key): its pseudo-image stored in the
 * database (by content, or replacing its process's grown image: see
 * dcpi_jitmap_image_next), the profile named after it, per process. */
static int jit_identity(struct dcpi_collector *c, int64_t key, struct dcpi_profile *p,
			struct dcpi_file_batch *fb)
{
	struct dcpi_buf elf = DCPI_BUF_INIT;
	uint8_t id[DCPI_SHA1_LEN];
	char path[128];
	int32_t pid;
	uint64_t size = 0;
	int replace = 0;
	int err = dcpi_jitmap_image_next(c->jm, key, &elf, id, path, sizeof(path), &pid, &size,
					 &replace);
	unsigned dmode = c->o.dirmode ? c->o.dirmode : 0700;
	unsigned fmode = c->o.filemode ? c->o.filemode : 0600;

	if (err == 0 && replace)
		err = dcpi_db_replace_image_batch(c->db, id, sizeof(id), elf.data, elf.len, dmode,
						  fmode, fb);
	else if (err == 0)
		err = dcpi_db_put_image_batch(c->db, id, sizeof(id), elf.data, elf.len, dmode,
					      fmode, fb);
	else if (err == 1) /* stored already, whole */
		err = 0;
	if (!err) {
		free(p->path);
		p->path = strdup(path);
		memcpy(p->build_id, id, sizeof(id));
		p->build_id_len = sizeof(id);
		p->size = size;
		p->pid = pid;
		if (!p->path)
			err = dcpi_error(ENOMEM, "out of memory");
	}
	dcpi_buf_release(&elf);
	return err;
}

static int count_profiles(const char *platdir, uint64_t *n)
{
	char **v;
	size_t k;
	int err = dcpi_db_profiles(platdir, &v, &k);

	if (err)
		return err;
	dcpi_db_names_free(v, k);
	*n = k;
	return 0;
}

/* A JIT sample kept for later (dcpi_jitmap_defer), now named or not. */
static int settled(void *arg, int32_t pid, uint64_t ip, unsigned ev, int hit, int64_t key,
		   uint64_t off)
{
	struct dcpi_collector *c = arg;

	/* (a deferred sample's cgroup is not kept: its process's is used) */
	return hit ? agg_add(c, c->jit_image, key, pid, 0, off, ev, 1) :
		     count_unknown(c, pid, 0, ip, 0, ev);
}

/* The bins whose profiles wait in the batch, and the batch. */
struct pending {
	struct dcpi_file_batch fb;
	struct written {
		size_t bin;
		int idx;
		size_t file;         /* its profile's place in the batch (which
					also holds pseudo-images) */
	} *w;
	size_t n, cap;
};

/* Commit the batch; the bins now on disk are cleared (and on_merged told),
 * the others keep their samples for the next merge. */
static int commit(struct dcpi_collector *c, struct pending *pd)
{
	size_t done = 0;
	int err;

	if (!dcpi_file_batch_pending(&pd->fb))
		return 0;
	if (c->o.on_commit)
		c->o.on_commit(c->o.arg, dcpi_file_batch_pending(&pd->fb));
	err = dcpi_file_batch_commit(&pd->fb, &done);
	for (size_t i = 0; i < pd->n; i++) {
		const struct written *w = &pd->w[i];

		if (w->file >= done)
			continue; /* not in place: kept for the next merge */
		if (w->idx == c->jit_image) { /* its pseudo-image, before it, too */
			int idx;
			int64_t key;
			uint32_t label;

			dcpi_agg_bin_key(c->agg, w->bin, &idx, &key, &label);
			dcpi_jitmap_image_stored(c->jm, key);
		}
		dcpi_agg_bin_clear(c->agg, w->bin);
		if (c->o.on_merged && w->idx != c->jit_image)
			c->o.on_merged(c->o.arg, w->idx, dcpi_loadmap_image(c->lm, w->idx));
	}
	pd->n = 0;
	return err;
}

/* A JIT pseudo-image that cannot be stored (a full disk, a .build-id we
 * may not write): its samples are counted as unknown, the merge goes on. */
static void jit_not_stored(struct dcpi_collector *c, size_t b, struct dcpi_profile *p)
{
	char msg[600];

	snprintf(msg, sizeof(msg), "a JIT pseudo-image was not stored, its samples "
		 "are counted as unknown: %s", dcpi_errmsg());
	if (!dcpi_agg_bin_rows(c->agg, b, p))
		for (uint32_t e = 0; e < p->nevents; e++)
			c->stats.unknown += p->events[e].total;
	if (c->o.on_warning)
		c->o.on_warning(c->o.arg, msg);
	dcpi_agg_bin_clear(c->agg, b);
}

/* Bin b's profile into the batch (committing first if its file is
 * pending there already). */
static int merge_bin(struct dcpi_collector *c, const char *platdir, size_t b, struct pending *pd)
{
	unsigned mode = c->o.filemode ? c->o.filemode : 0600;
	struct dcpi_profile p;
	const struct dcpi_image *img;
	int idx, err = 0;
	int64_t pid;
	uint32_t label;

	dcpi_agg_bin_key(c->agg, b, &idx, &pid, &label);
	img = dcpi_loadmap_image(c->lm, idx);
	if (!img || dcpi_agg_bin_nrows(c->agg, b) == 0)
		return 0;
	dcpi_profile_init(&p);
	set_identity(c, img, pid, label, &p);
	if (idx == c->jit_image)
		err = jit_identity(c, pid, &p, &pd->fb);
	if (err == -ENOENT) { /* cannot happen: keys live until a full merge */
		c->stats.lost += dcpi_agg_bin_nrows(c->agg, b);
		dcpi_agg_bin_clear(c->agg, b);
		err = 0;
	} else if (err && err != -ENOMEM && idx == c->jit_image) {
		jit_not_stored(c, b, &p);
		err = 0;
	} else if (!err && !(err = dcpi_agg_bin_rows(c->agg, b, &p)) &&
		   !(err = DCPI_GROW(pd->w, pd->cap, pd->n + 1, SIZE_MAX, "profiles"))) {
		err = dcpi_db_merge_profile_batch(platdir, &p, mode, &pd->fb);
		if (err == -EAGAIN && !(err = commit(c, pd)))
			err = dcpi_db_merge_profile_batch(platdir, &p, mode, &pd->fb);
		if (!err)
			pd->w[pd->n++] = (struct written){ b, idx,
							   dcpi_file_batch_pending(&pd->fb) - 1 };
	}
	dcpi_profile_free(&p);
	return err;
}

int dcpi_collector_merge(struct dcpi_collector *c, const char *platdir)
{
	unsigned mode = c->o.filemode ? c->o.filemode : 0600;
	struct pending pd = { .w = NULL };
	char spath[4096];
	int err = c->jm ? dcpi_jitmap_settle(c->jm, settled, c) : 0, cerr;

	/* The profiles (and the JIT pseudo-images they name, each added
	 * before its profile) are written unsynced, then committed together:
	 * one sync for the merge, each file renamed into place only once its
	 * data is on disk (dcpi_file_batch_commit).  Each bin is cleared once
	 * its file is in place, so a merge that fails half way (a full disk)
	 * neither loses nor double-counts: the next retries what is left. */
	dcpi_file_batch_init(&pd.fb);
	for (size_t b = 0; b < dcpi_agg_nbins(c->agg) && !err; b++)
		err = merge_bin(c, platdir, b, &pd);
	cerr = commit(c, &pd); /* what was written before a failure, too */
	if (!err)
		err = cerr;
	dcpi_file_batch_release(&pd.fb);
	free(pd.w);
	if (err)
		return err; /* keep the aggregate: the next merge retries */
	dcpi_agg_clear(c->agg);
	if (c->jm)
		dcpi_jitmap_reap(c->jm); /* no bin names an exited process's key now */
	if (c->lab) { /* nor one of its labels; the live ones read again */
		dcpi_labeler_reap(c->lab);
		dcpi_labeler_refresh(c->lab);
	}
	c->pending = 0;
	c->stats.updated = (int64_t)time(NULL);
	if (c->lab)
		c->stats.label_values = dcpi_labeler_count(c->lab);
	count_profiles(platdir, &c->stats.images);
	if ((err = dcpi_db_stats_path(spath, sizeof(spath), platdir, c->stats.platform)))
		return err;
	/* after the profiles: a crash in between leaves epoch.stats behind
	 * them, which dcpid's recovery recounts (dcpi_db_recover) */
	return dcpi_stats_write(spath, &c->stats, mode);
}

int dcpi_collector_forget(struct dcpi_collector *c)
{
	int32_t pin[2] = { c->unknown_image, c->jit_image };
	size_t n;
	int err;

	if (dcpi_agg_nbins(c->agg))
		return 0; /* the aggregate still names images: not now */
	err = dcpi_loadmap_forget(c->lm, pin, 2, &n);
	c->unknown_image = pin[0];
	c->jit_image = pin[1];
	if (n) { /* indices moved: test again when met */
		free(c->bypid_cache);
		c->bypid_cache = NULL;
		c->bypid_cache_len = 0;
	}
	return err;
}
