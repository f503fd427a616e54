/* A second sampler, for tests: raw records from memory through the sampler
 * interface (dcpi/sampler.h), so the collector and the collection run are
 * tested without perf, and the interface is shown to need nothing of it.
 *
 * It has REPLAY_CPUS "rings", buffers of raw records that replay_put()
 * appends to; a drain hands out each ring's records in turn, as the perf
 * sampler does, and empties them.  Samples whose identifier is REPLAY_ID
 * are event 0.  It has no fds to poll and no periods to randomise: those
 * operations are left NULL, so the interface's defaults are exercised.
 * With replay_refuse_kernel set it refuses kernel-mode samples (EACCES), as
 * perf does under perf_event_paranoid 2.
 *
 * Its rings may be filled by one thread and drained by another (a run with
 * drain_thread): a mutex guards them, and emptied is signalled each time
 * a drain empties them (replay_wait_empty).  replay_last is the replay
 * opened last (behind a thread sampler, dcpi_run_sampler is not it).
 *   raw_sample(), raw_mmap2()   records laid out as the perf sampler asks
 *                               the kernel for them
 *   now_ns()                    CLOCK_MONOTONIC, the records' clock */
#ifndef DCPI_TEST_REPLAY_H
#define DCPI_TEST_REPLAY_H
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/sampler.h"

#define REPLAY_CPUS 2
#define REPLAY_ID 7

struct replay {
	struct dcpi_sampler base;       /* first: the interface's handle */
	struct dcpi_buf ring[REPLAY_CPUS];
	int enabled;
	int fail;                       /* the next drain fails, after its records */
	int nosplit;                    /* drain_split says -EOPNOTSUPP */
	uint64_t enabled_ns, running_ns; /* what times() says, for every event */
	pthread_mutex_t mu;             /* the rings */
	pthread_cond_t emptied;
};

static int replay_refuse_kernel;
static struct replay *replay_last;

static inline struct replay *replay_of(struct dcpi_sampler *s)
{
	return (struct replay *)s;
}

static int replay_open(const struct dcpi_eventlist *l, const struct dcpi_sampler_opts *o,
		       struct dcpi_sampler **out)
{
	struct replay *r;

	(void)l;
	if (replay_refuse_kernel && !o->exclude_kernel)
		return dcpi_error(EACCES, "replay: no kernel samples for you");
	r = calloc(1, sizeof(*r));
	if (!r)
		return dcpi_error(ENOMEM, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->emptied, NULL);
	replay_last = r;
	*out = &r->base;
	return 0;
}

static void replay_close(struct dcpi_sampler *s)
{
	for (unsigned i = 0; i < REPLAY_CPUS; i++)
		dcpi_buf_release(&replay_of(s)->ring[i]);
	pthread_mutex_destroy(&replay_of(s)->mu);
	pthread_cond_destroy(&replay_of(s)->emptied);
	if (replay_last == replay_of(s))
		replay_last = NULL;
	free(s);
}

static int replay_enable(struct dcpi_sampler *s)
{
	replay_of(s)->enabled = 1;
	return 0;
}

static int replay_disable(struct dcpi_sampler *s)
{
	replay_of(s)->enabled = 0;
	return 0;
}

static unsigned replay_ncpus(const struct dcpi_sampler *s)
{
	(void)s;
	return REPLAY_CPUS;
}

/* One pass over ring i (under mu): samples 1 only samples, 0 only the
 * rest, -1 all. */
static int replay_pass_ring(struct replay *r, unsigned i, int samples, dcpi_record_cb cb,
			    void *arg)
{
	struct dcpi_buf *b = &r->ring[i];
	struct perf_event_header h;
	int err = 0;

	for (size_t off = 0; !err && off + sizeof(h) <= b->len; off += h.size) {
		memcpy(&h, b->data + off, sizeof(h));
		if (samples < 0 || (h.type == PERF_RECORD_SAMPLE) == samples)
			err = cb(arg, b->data + off, h.size);
	}
	return err;
}

static int replay_pass(struct replay *r, int samples, dcpi_record_cb cb, void *arg)
{
	int err = 0;

	for (unsigned i = 0; i < REPLAY_CPUS && !err; i++)
		err = replay_pass_ring(r, i, samples, cb, arg);
	return err;
}

/* Empty rings from..to-1 (under mu); fail now if asked to. */
static int replay_consumed_range(struct replay *r, unsigned from, unsigned to, int err)
{
	for (unsigned i = from; i < to; i++)
		r->ring[i].len = 0;
	pthread_cond_broadcast(&r->emptied);
	if (!err && r->fail) {
		r->fail = 0;
		err = dcpi_error(EBADMSG, "replay: corrupt ring");
	}
	return err;
}

static int replay_consumed(struct replay *r, int err)
{
	return replay_consumed_range(r, 0, REPLAY_CPUS, err);
}

static int replay_drain(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg)
{
	struct replay *r = replay_of(s);
	int err;

	pthread_mutex_lock(&r->mu);
	err = replay_consumed(r, replay_pass(r, -1, cb, arg));
	pthread_mutex_unlock(&r->mu);
	return err;
}

/* Ring i alone; its CPU is i. */
static int replay_drain_ring(struct dcpi_sampler *s, unsigned i, int *cpu, dcpi_record_cb cb,
			     void *arg)
{
	struct replay *r = replay_of(s);
	int err;

	if (i >= REPLAY_CPUS)
		return dcpi_error(EINVAL, "replay: no ring %u", i);
	*cpu = (int)i;
	pthread_mutex_lock(&r->mu);
	err = replay_consumed_range(r, i, i + 1, replay_pass_ring(r, i, -1, cb, arg));
	pthread_mutex_unlock(&r->mu);
	return err;
}

/* The split drain (dcpi_sampler_drain_split): every ring's side-band
 * records, mid, every ring's samples; unless nosplit. */

static int replay_drain_split(struct dcpi_sampler *s, dcpi_record_cb side, int (*mid)(void *arg),
			      dcpi_record_cb samples, void *arg)
{
	struct replay *r = replay_of(s);
	int err;

	if (r->nosplit)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->mu);
	err = replay_pass(r, 0, side, arg);
	if (!err)
		err = mid(arg);
	if (!err) /* else nothing consumed */
		err = replay_consumed(r, replay_pass(r, 1, samples, arg));
	pthread_mutex_unlock(&r->mu);
	return err;
}

static int replay_event_of(const struct dcpi_sampler *s, uint64_t id)
{
	(void)s;
	return id == REPLAY_ID ? 0 : -1;
}

static int replay_times(const struct dcpi_sampler *s, unsigned ev, uint64_t *enabled,
			uint64_t *running)
{
	const struct replay *r = (const struct replay *)s;

	(void)ev;
	*enabled = r->enabled_ns;
	*running = r->running_ns;
	return 0;
}

static const struct dcpi_sampler_ops replay_ops = {
	.name = "replay",
	.open = replay_open,
	.close = replay_close,
	.enable = replay_enable,
	.disable = replay_disable,
	.ncpus = replay_ncpus,
	.drain = replay_drain,
	.drain_split = replay_drain_split,
	.event_of = replay_event_of,
	.times = replay_times,
	.drain_ring = replay_drain_ring,
};


static inline void replay_put(struct dcpi_sampler *s, unsigned cpu, const void *raw, size_t len)
{
	struct replay *r = replay_of(s);

	pthread_mutex_lock(&r->mu);
	if (dcpi_buf_put(&r->ring[cpu % REPLAY_CPUS], raw, len))
		abort();
	pthread_mutex_unlock(&r->mu);
}

/* Wait until a drain has emptied every ring, at most secs seconds (a
 * bound for a failing test only: a passing one waits for the drain, not
 * for a time).  1 when empty. */
static inline int replay_wait_empty(struct replay *r, int secs)
{
	struct timespec until;
	int empty = 0, err = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_mutex_lock(&r->mu);
	while (!err) {
		empty = 1;
		for (unsigned i = 0; i < REPLAY_CPUS; i++)
			empty &= r->ring[i].len == 0;
		if (empty)
			break;
		err = pthread_cond_timedwait(&r->emptied, &r->mu, &until);
	}
	pthread_mutex_unlock(&r->mu);
	return empty;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Raw perf records, laid out as the sampler asks for them. */
static inline size_t raw_sample(uint8_t *b, uint64_t id, uint64_t ip, uint32_t pid,
				uint64_t time)
{
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 40 };
	uint32_t pt[2] = { pid, pid };

	memcpy(b, &h, 8);
	memcpy(b + 8, &id, 8);
	memcpy(b + 16, &ip, 8);
	memcpy(b + 24, pt, 8);
	memcpy(b + 32, &time, 8);
	return 40;
}

/* A sample of the memory layout (dcpi_record_decode_mem_sample). */
static inline size_t raw_mem_sample(uint8_t *b, uint64_t id, uint64_t ip, uint32_t pid,
				    uint64_t time, uint64_t addr, uint32_t latency,
				    uint64_t data_src)
{
	uint64_t w = latency;

	raw_sample(b, id, ip, pid, time);
	((struct perf_event_header *)b)->size = 64;
	memcpy(b + 40, &addr, 8);
	memcpy(b + 48, &w, 8);
	memcpy(b + 56, &data_src, 8);
	return 64;
}

static inline size_t raw_mmap2(uint8_t *b, uint32_t pid, uint64_t start, uint64_t len,
			       const char *path, uint64_t time)
{
	size_t plen = (strlen(path) + 8) & ~(size_t)7, n = 8 + 8 + 24 + 24 + 8 + plen + 24;
	struct perf_event_header h = { PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID,
				       (uint16_t)n };
	uint32_t u32[2] = { pid, pid }, prot[2] = { PROT_READ | PROT_EXEC, MAP_PRIVATE };
	uint64_t z = 0, id = REPLAY_ID;
	uint8_t bid[24] = { 20, 0, 0, 0, 0xcc, 9 };
	size_t o = 0;

	memset(b, 0, n);
	memcpy(b, &h, 8), o = 8;
	memcpy(b + o, u32, 8), o += 8;
	memcpy(b + o, &start, 8), o += 8;
	memcpy(b + o, &len, 8), o += 8;
	memcpy(b + o, &z, 8), o += 8;
	memcpy(b + o, bid, 24), o += 24;
	memcpy(b + o, prot, 8), o += 8;
	memcpy(b + o, path, strlen(path)), o += plen;
	memcpy(b + o, u32, 8), o += 8;
	memcpy(b + o, &time, 8), o += 8;
	memcpy(b + o, &id, 8);
	return n;
}

/* A LOST record: the kernel dropped n records of this ring. */
static inline size_t raw_lost(uint8_t *b, uint64_t n, uint64_t time)
{
	struct perf_event_header h = { PERF_RECORD_LOST, 0, 48 };
	uint64_t id = REPLAY_ID, z = 0;

	memcpy(b, &h, 8);
	memcpy(b + 8, &id, 8);
	memcpy(b + 16, &n, 8);
	memcpy(b + 24, &z, 8);   /* sample_id: pid, tid */
	memcpy(b + 32, &time, 8);
	memcpy(b + 40, &id, 8);
	return 48;
}

/* A COMM record (exec: an exec's), with the sample_id trailer. */
static inline size_t raw_comm(uint8_t *b, uint32_t pid, const char *comm, int exec,
			      uint64_t time)
{
	size_t clen = (strlen(comm) + 8) & ~(size_t)7, n = 8 + 8 + clen + 24;
	struct perf_event_header h = { PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0,
				       (uint16_t)n };
	uint32_t u32[2] = { pid, pid };
	uint64_t id = REPLAY_ID;

	memset(b, 0, n);
	memcpy(b, &h, 8);
	memcpy(b + 8, u32, 8);
	memcpy(b + 16, comm, strlen(comm));
	memcpy(b + 16 + clen, u32, 8);
	memcpy(b + 24 + clen, &time, 8);
	memcpy(b + 32 + clen, &id, 8);
	return n;
}

#endif
