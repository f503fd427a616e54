/* A sampler whose rings a thread of its own keeps reading: see
 * dcpi_sampler_thread_new() in dcpi/sampler.h for why, and for which
 * thread owns what.
 *
 * The copying thread wakes on a ring's watermark (half full), on its
 * interval, or to stop; it copies every ring's records into chunks of its
 * own, then appends them to the staged list.  A drain by the caller copies
 * once more (what the rings hold now), takes the whole staged list and
 * hands its records out in ring order, outside every lock.  The copying
 * thread never calls back into the caller's code, never allocates more
 * than max_bytes of records, and holds no lock while it sleeps. */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/record.h"
#include "dcpi/sampler.h"

#define CHUNK_BYTES 65536u           /* a record is at most 65535 bytes */
#define DEFAULT_MAX_BYTES ((size_t)256 << 20)
#define DEFAULT_INTERVAL_MS 100u
#define MAX_RINGS 4096u
/* Chunks the caller has consumed are kept for the copier's next passes,
 * up to this many (4 MiB): a chunk freshly allocated is pages the kernel
 * must fault in and zero, and freed ones go back to it (with stacks, a
 * pass of a busy process's samples is tens of chunks, and the faults
 * were an eighth of the collector's time on sort's threads). */
#define POOL_MAX 64u

struct chunk {
	struct chunk *next;
	size_t len;
	uint8_t data[CHUNK_BYTES];
};

/* Records in the order copied: each ring's in its order. */
struct chunks {
	struct chunk *head, *tail;
	size_t bytes;
};

struct tsampler {
	struct dcpi_sampler base;    /* first: the interface's handle */
	struct dcpi_sampler *inner;  /* owned */
	size_t max_bytes;
	unsigned interval_ms;
	int stacks, cgroup;          /* dcpi_sampler_thread_opts */
	const struct dcpi_stack_tops *tops;
	unsigned nrings;             /* inner's rings read one by one; 1 when it cannot */
	int notify_fd, stop_fd;      /* eventfds */
	pthread_t thread;
	int started;
	/* the copying thread's own */
	struct pollfd *fds;          /* stop_fd, then inner's ring fds */
	size_t nfds;
	/* under ring_lock: reading inner's rings, and the pass's tallies */
	pthread_mutex_t ring_lock;
	uint64_t *pass_lost;         /* per ring, this pass */
	int *pass_cpu;
	/* under lock */
	pthread_mutex_t lock;
	struct chunks staged;
	size_t peak;
	uint64_t *lost;              /* per ring, since the last losses() */
	int *cpu;                    /* per ring: its CPU, -1 until known */
	int err;                     /* the first error of a copy since the last drain */
	char errmsg[512];
	/* under pool_lock (taken alone): chunks to reuse */
	pthread_mutex_t pool_lock;
	struct chunk *pool;
	size_t npool;
};

static struct tsampler *of(struct dcpi_sampler *s)
{
	return (struct tsampler *)s;
}

static void chunks_free(struct chunks *c)
{
	for (struct chunk *k = c->head, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	memset(c, 0, sizeof(*c));
}

/* Append b to a (b is emptied). */
static void chunks_append(struct chunks *a, struct chunks *b)
{
	if (!b->head)
		return;
	if (a->tail)
		a->tail->next = b->head;
	else
		a->head = b->head;
	a->tail = b->tail;
	a->bytes += b->bytes;
	memset(b, 0, sizeof(*b));
}

/* A chunk to fill: one kept from earlier, else a new one. */
static struct chunk *chunk_get(struct tsampler *t)
{
	struct chunk *k;

	pthread_mutex_lock(&t->pool_lock);
	if ((k = t->pool)) {
		t->pool = k->next;
		t->npool--;
	}
	pthread_mutex_unlock(&t->pool_lock);
	return k ? k : malloc(sizeof(*k));
}

/* Consumed chunks: kept for reuse up to POOL_MAX, the rest freed. */
static void chunks_recycle(struct tsampler *t, struct chunks *c)
{
	struct chunk *k = c->head, *next;

	pthread_mutex_lock(&t->pool_lock);
	for (; k && t->npool < POOL_MAX; k = next) {
		next = k->next;
		k->next = t->pool;
		t->pool = k;
		t->npool++;
	}
	pthread_mutex_unlock(&t->pool_lock);
	c->head = k;
	chunks_free(c);
}

/* ---- copying (under ring_lock) ------------------------------------------- */

struct copy {
	struct tsampler *t;
	struct chunks *into;
	unsigned ring;
};

/* What a LOST or LOST_SAMPLES record says was lost (0 for the rest). */
static uint64_t lost_in(const void *raw, size_t len)
{
	const struct perf_event_header *h = raw;
	uint64_t n = 0;

	if (h->type == PERF_RECORD_LOST && len >= 24)
		memcpy(&n, (const uint8_t *)raw + 16, 8); /* header, id, lost */
	else if (h->type == PERF_RECORD_LOST_SAMPLES && len >= 16)
		memcpy(&n, (const uint8_t *)raw + 8, 8);  /* header, lost */
	return n;
}

static int copy_record(void *arg, const void *raw, size_t len)
{
	struct copy *c = arg;
	struct chunk *k = c->into->tail;

	if (len > CHUNK_BYTES)
		return 0; /* cannot be: the header's size is 16 bits */
	if (!k || CHUNK_BYTES - k->len < len) {
		if (!(k = chunk_get(c->t)))
			return dcpi_error(ENOMEM, "out of memory copying the rings");
		k->next = NULL;
		k->len = 0;
		if (c->into->tail)
			c->into->tail->next = k;
		else
			c->into->head = k;
		c->into->tail = k;
	}
	c->t->pass_lost[c->ring] += lost_in(raw, len);
	/* a sample's stack copy, cut to what the stack used */
	if (c->t->stacks && len >= 8 && ((const struct perf_event_header *)raw)->type ==
					    PERF_RECORD_SAMPLE) {
		size_t n = dcpi_record_compact_stack(raw, len, c->t->cgroup, c->t->tops,
						     k->data + k->len);

		if (n) {
			k->len += n;
			c->into->bytes += n;
			return 0;
		}
	}
	memcpy(k->data + k->len, raw, len);
	k->len += len;
	c->into->bytes += len;
	return 0;
}

/* Every ring's records into into; the first error (a corrupt ring is
 * resynchronised by the inner sampler and the other rings go on). */
static int copy_rings(struct tsampler *t, struct chunks *into)
{
	struct copy c = { t, into, 0 };
	int err = 0;

	if (!t->inner->ops->drain_ring)
		return dcpi_sampler_drain(t->inner, copy_record, &c);
	for (unsigned i = 0; i < t->nrings; i++) {
		int e;

		c.ring = i;
		e = t->inner->ops->drain_ring(t->inner, i, &t->pass_cpu[i], copy_record, &c);
		if (e && !err)
			err = e;
	}
	return err;
}

/* A pass: copy, then publish what was copied, its losses and its error. */
static size_t pass(struct tsampler *t)
{
	struct chunks mine = { NULL, NULL, 0 };
	size_t bytes;
	int err;

	pthread_mutex_lock(&t->ring_lock);
	err = copy_rings(t, &mine);
	bytes = mine.bytes;
	pthread_mutex_lock(&t->lock);
	chunks_append(&t->staged, &mine);
	if (t->staged.bytes > t->peak)
		t->peak = t->staged.bytes;
	for (unsigned i = 0; i < t->nrings; i++) {
		t->lost[i] += t->pass_lost[i];
		t->pass_lost[i] = 0;
		if (t->pass_cpu[i] >= 0)
			t->cpu[i] = t->pass_cpu[i];
	}
	if (err && !t->err) {
		t->err = err;
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", dcpi_errmsg());
	}
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&t->ring_lock);
	return bytes;
}

static size_t staged_bytes(struct tsampler *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->staged.bytes;
	pthread_mutex_unlock(&t->lock);
	return n;
}

static void *copier(void *arg)
{
	struct tsampler *t = arg;
	uint64_t one = 1;

	for (;;) {
		/* full: sleep on the stop fd alone (a ring over its watermark
		   would wake us at once, forever) */
		int full = staged_bytes(t) >= t->max_bytes, woke = 0;
		int r = poll(t->fds, full ? 1 : t->nfds, (int)t->interval_ms);

		if (r < 0 && errno != EINTR)
			break; /* cannot be: our own fds */
		if (t->fds[0].revents)
			break;
		for (size_t i = 1; r > 0 && !full && i < t->nfds; i++) {
			woke |= t->fds[i].revents & POLLIN;
			if (t->fds[i].revents & (POLLHUP | POLLERR))
				t->fds[i].fd = -1; /* its task has exited: never readable again */
		}
		if (full)
			continue;
		if (pass(t) && woke)
			(void)!write(t->notify_fd, &one, sizeof(one));
	}
	return NULL;
}

/* ---- the caller's side --------------------------------------------------- */

/* Copy what the rings hold now, then take everything copied. */
static int take(struct tsampler *t, struct chunks *out)
{
	uint64_t v;
	int err;

	(void)!read(t->notify_fd, &v, sizeof(v)); /* non-blocking: reset the wake-up */
	pass(t);
	pthread_mutex_lock(&t->lock);
	*out = t->staged;
	memset(&t->staged, 0, sizeof(t->staged));
	err = t->err;
	t->err = 0;
	if (err)
		dcpi_error(err, "%s", t->errmsg);
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* Put taken records back before what was copied since. */
static void give_back(struct tsampler *t, struct chunks *c)
{
	pthread_mutex_lock(&t->lock);
	chunks_append(c, &t->staged);
	t->staged = *c;
	memset(c, 0, sizeof(*c));
	pthread_mutex_unlock(&t->lock);
}

enum pick { PICK_ALL, PICK_SIDE, PICK_SAMPLES };

static int walk(const struct chunks *c, enum pick pick, dcpi_record_cb cb, void *arg)
{
	for (const struct chunk *k = c->head; k; k = k->next) {
		struct perf_event_header h;

		for (size_t off = 0; off + sizeof(h) <= k->len; off += h.size) {
			int err;

			memcpy(&h, k->data + off, sizeof(h));
			if (h.size < sizeof(h) || h.size > k->len - off)
				break; /* cannot be: copied whole */
			if (pick != PICK_ALL && (h.type == PERF_RECORD_SAMPLE) != (pick == PICK_SAMPLES))
				continue;
			if ((err = cb(arg, k->data + off, h.size)))
				return err;
		}
	}
	return 0;
}

static int t_drain(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg)
{
	struct chunks c;
	int terr = take(of(s), &c), err = walk(&c, PICK_ALL, cb, arg);

	chunks_recycle(of(s), &c);
	return err ? err : terr;
}

static int t_drain_split(struct dcpi_sampler *s, dcpi_record_cb side, int (*mid)(void *arg),
			 dcpi_record_cb samples, void *arg)
{
	struct chunks c;
	int terr = take(of(s), &c), err = walk(&c, PICK_SIDE, side, arg);

	if (!err)
		err = mid(arg);
	if (err) {
		give_back(of(s), &c); /* nothing consumed: all of it again next time */
		return err;
	}
	err = walk(&c, PICK_SAMPLES, samples, arg);
	chunks_recycle(of(s), &c);
	return err ? err : terr;
}

static size_t t_losses(struct dcpi_sampler *s, struct dcpi_sampler_loss *out, size_t max)
{
	struct tsampler *t = of(s);
	size_t n = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nrings && n < max; i++)
		if (t->lost[i]) {
			out[n++] = (struct dcpi_sampler_loss){ t->cpu[i], t->lost[i] };
			t->lost[i] = 0;
		}
	pthread_mutex_unlock(&t->lock);
	return n;
}

static const struct dcpi_sampler_ops thread_ops;

void dcpi_sampler_thread_staged(struct dcpi_sampler *s, size_t *now, size_t *peak)
{
	struct tsampler *t = of(s);

	*now = *peak = 0;
	if (s->ops != &thread_ops)
		return; /* not a thread sampler: nothing waits */
	pthread_mutex_lock(&t->lock);
	*now = t->staged.bytes;
	*peak = t->peak;
	pthread_mutex_unlock(&t->lock);
}

/* ---- forwarded ------------------------------------------------------------ */

static int t_open(const struct dcpi_eventlist *l, const struct dcpi_sampler_opts *o,
		  struct dcpi_sampler **out)
{
	(void)l, (void)o, (void)out;
	return dcpi_error(EINVAL, "the thread sampler wraps another: dcpi_sampler_thread_new");
}

static int t_enable(struct dcpi_sampler *s)
{
	return dcpi_sampler_enable(of(s)->inner);
}

static int t_disable(struct dcpi_sampler *s)
{
	return dcpi_sampler_disable(of(s)->inner);
}

static size_t t_pollfds(const struct dcpi_sampler *s, struct pollfd *fds, size_t max)
{
	if (!max)
		return 0;
	fds[0] = (struct pollfd){ ((const struct tsampler *)s)->notify_fd, POLLIN, 0 };
	return 1;
}

static unsigned t_ncpus(const struct dcpi_sampler *s)
{
	return dcpi_sampler_ncpus(((const struct tsampler *)s)->inner);
}

static int t_event_of(const struct dcpi_sampler *s, uint64_t id)
{
	return dcpi_sampler_event_of(((const struct tsampler *)s)->inner, id);
}

static int t_times(const struct dcpi_sampler *s, unsigned ev, uint64_t *enabled,
		   uint64_t *running)
{
	return dcpi_sampler_times(((const struct tsampler *)s)->inner, ev, enabled, running);
}

static void t_rerandomize(struct dcpi_sampler *s)
{
	dcpi_sampler_rerandomize(of(s)->inner);
}

static void t_close(struct dcpi_sampler *s)
{
	struct tsampler *t = of(s);
	uint64_t one = 1;

	if (t->started) {
		(void)!write(t->stop_fd, &one, sizeof(one));
		pthread_join(t->thread, NULL);
	}
	if (t->notify_fd >= 0)
		close(t->notify_fd);
	if (t->stop_fd >= 0)
		close(t->stop_fd);
	chunks_free(&t->staged);
	chunks_free(&(struct chunks){ t->pool, NULL, 0 });
	dcpi_sampler_close(t->inner);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->ring_lock);
	pthread_mutex_destroy(&t->pool_lock);
	free(t->fds);
	free(t->pass_lost);
	free(t->pass_cpu);
	free(t->lost);
	free(t->cpu);
	free(t);
}

static const struct dcpi_sampler_ops thread_ops = {
	.name = "thread",
	.open = t_open,
	.close = t_close,
	.enable = t_enable,
	.disable = t_disable,
	.pollfds = t_pollfds,
	.ncpus = t_ncpus,
	.drain = t_drain,
	.drain_split = t_drain_split,
	.event_of = t_event_of,
	.times = t_times,
	.rerandomize = t_rerandomize,
	.losses = t_losses,
};

/* The copying thread takes no signal: a daemon's signalfd must get them. */
static int start(struct tsampler *t)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t->thread, NULL, copier, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return dcpi_error(err, "cannot start the ring-reading thread: %s", strerror(err));
	t->started = 1;
	return 0;
}

static int alloc_rings(struct tsampler *t)
{
	unsigned n = dcpi_sampler_ncpus(t->inner);

	t->nrings = t->inner->ops->drain_ring && n ? (n > MAX_RINGS ? MAX_RINGS : n) : 1;
	t->pass_lost = calloc(t->nrings, sizeof(*t->pass_lost));
	t->lost = calloc(t->nrings, sizeof(*t->lost));
	t->pass_cpu = malloc(t->nrings * sizeof(*t->pass_cpu));
	t->cpu = malloc(t->nrings * sizeof(*t->cpu));
	t->fds = calloc(1 + MAX_RINGS, sizeof(*t->fds));
	if (!t->pass_lost || !t->lost || !t->pass_cpu || !t->cpu || !t->fds)
		return dcpi_error(ENOMEM, "out of memory");
	for (unsigned i = 0; i < t->nrings; i++)
		t->pass_cpu[i] = t->cpu[i] = -1;
	t->fds[0] = (struct pollfd){ t->stop_fd, POLLIN, 0 };
	t->nfds = 1 + dcpi_sampler_pollfds(t->inner, t->fds + 1, MAX_RINGS);
	return 0;
}

int dcpi_sampler_thread_new(struct dcpi_sampler *inner, const struct dcpi_sampler_thread_opts *o,
			    struct dcpi_sampler **out)
{
	struct tsampler *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return dcpi_error(ENOMEM, "out of memory");
	t->base.ops = &thread_ops;
	t->inner = inner;
	t->max_bytes = o && o->max_bytes ? o->max_bytes : DEFAULT_MAX_BYTES;
	t->interval_ms = o && o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
	t->stacks = o && o->stacks;
	t->cgroup = o && o->cgroup;
	t->tops = o ? o->tops : NULL;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->ring_lock, NULL);
	pthread_mutex_init(&t->pool_lock, NULL);
	t->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->notify_fd < 0 || t->stop_fd < 0)
		err = dcpi_error(errno, "eventfd: %s", strerror(errno));
	else
		err = alloc_rings(t);
	if (!err)
		err = start(t);
	if (err) {
		t->inner = NULL; /* the caller's still */
		t_close(&t->base);
		return err;
	}
	*out = &t->base;
	return 0;
}
