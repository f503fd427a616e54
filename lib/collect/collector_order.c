/* The collector's ordering: the rings' records in time order, counted by
 * a fast path where order cannot change their meaning.  See
 * dcpi/collector.h and collector_priv.h. */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "collector_priv.h"
#include "internal.h"

#define QUEUE_MAX_BYTES (64u << 20) /* past this, process without waiting */

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

/* A sample with more than its own fields: its stack (c->stk), or its
 * memory access (c->mem). */
struct rich {
	struct dcpi_stack_sample st;
	struct dcpi_mem_sample m;
};

static int decode_rich(const struct dcpi_collector *c, const void *raw, size_t len,
		       struct dcpi_sample *s, struct rich *x)
{
	if (c->stk)
		return dcpi_record_decode_stack_sample(raw, len, c->sample_cgroup, s, &x->st);
	return dcpi_record_decode_mem_sample(raw, len, c->sample_cgroup, s, &x->m);
}

int dcpi_collector_queue(struct dcpi_collector *c, const void *raw, size_t len)
{
	const struct perf_event_header *h = raw;
	unsigned flags = c->o.mmap_build_id ? DCPI_RECORD_WANT_BUILD_ID : 0;
	struct dcpi_record r;
	size_t off = c->arena.len;
	int32_t pid = NO_PID;
	int err;

	if (len >= sizeof(*h) && h->type == PERF_RECORD_SAMPLE && (c->stk || c->mem)) {
		/* with its stack or memory access: kept whole, taken in time
		   order (take_queued) */
		struct dcpi_sample smp;
		struct rich x;

		if (decode_rich(c, raw, len, &smp, &x))
			return 0; /* malformed: skip it, never crash on it */
		if ((err = DCPI_GROW(c->q, c->qcap, c->nq + 1, SIZE_MAX, "queued records")) ||
		    (err = dcpi_buf_put(&c->arena, raw, len)))
			return err;
		c->q[c->nq++] = (struct qent){ smp.time, c->seq++, off, (uint32_t)len, NO_PID,
					       QE_STACK };
		return 0;
	}
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
				       pid, QE_RAW };
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
	return (size_t)dcpi_hash64(ip ^ (uint64_t)(uint32_t)pid << 40 ^ (uint64_t)ev << 20 ^
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
		k->apid = dcpi_col_is_bypid(c, k->idx, s->pid) ? s->pid : -1;
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
	e = dcpi_col_agg_add(c, k->idx, k->apid, k->pid, k->cg, k->off, k->ev, k->n);
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
	err = dcpi_col_count_sample(c, &r, ev);
	return err == -ENOMEM ? err : 0; /* a record we could not use is not fatal */
}

/* A sample taken from the queue in time order. */
static int count_queued(struct dcpi_collector *c, const struct fsample *f, int ev)
{
	struct dcpi_record r;
	int err;

	if (sample_kernel(&f->s) && pidset_find(c, -1)) {
		/* the kernel's images change in this pass: one by one */
		fsample_record(f, &r);
		err = dcpi_collector_feed(c, &r, ev);
		return err == -ENOMEM ? err : 0;
	}
	return count_one(c, f, ev, pidset_find(c, f->s.pid));
}

/* A sample with its stack or memory access: counted flat as any
 * (ordered: taken from the queue in time order), then its stack walked,
 * or its access added to the value profile (a precise memory event's),
 * against the loadmap as it is now, the state of its time. */
static int count_rich(struct dcpi_collector *c, const struct fsample *f, const struct rich *x,
		      int ev, int ordered)
{
	int err = ordered ? count_queued(c, f, ev) : count_one(c, f, ev, NULL);

	/* the stack's or access's failure (memory) loses it, never the sample,
	   which is counted already: an error here would have it retried and
	   counted twice */
	if (err || ev < 0 || (unsigned)ev >= c->events.n)
		return err == -ENOMEM ? err : 0;
	if (c->stk)
		dcpi_col_stack_count(c, &f->s, &x->st, (unsigned)ev);
	else if (c->events.ev[ev].mem)
		dcpi_col_mem_count(c, &f->s, &x->m);
	return 0;
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
			c->q[c->nq++] = (struct qent){ f->s.time, f->seq, off, sizeof(*f), NO_PID,
						       QE_SAMPLE };
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

	if (q->sample == QE_STACK) {
		struct rich x;
		struct fsample f = { .seq = q->seq };

		if (decode_rich(c, raw, q->len, &f.s, &x))
			return 0;
		return count_rich(c, &f, &x, event_of(arg, f.s.id), 1);
	}
	if (q->sample == QE_SAMPLE) {
		struct fsample f;

		memcpy(&f, raw, sizeof(f));
		return count_queued(c, &f, event_of(arg, f.s.id));
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
	struct dcpi_buf rest = c->spare;  /* its room kept from the last call */
	size_t i = 0, keep = 0;
	int err, ferr;

	rest.len = 0;

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
	/* the two buffers swap: no allocation, no fresh pages each drain
	   (a big one, past 4 MiB, is let go: a burst's room is not kept) */
	c->spare = c->arena;
	c->spare.len = 0;
	if (c->spare.cap > ((size_t)4 << 20))
		dcpi_buf_release(&c->spare);
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

	if (x->c->stk || x->c->mem) { /* at once when nothing can change it */
		struct rich r;

		if (decode_rich(x->c, raw, len, &f.s, &r) || must_wait(x->c, &f.s, x->horizon))
			return dcpi_collector_queue(x->c, raw, len);
		return count_rich(x->c, &f, &r,
				  event_cached(&x->ec, f.s.id, sampler_event_of, x->s), 0);
	}
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

