/* The perf_events sampler: counters and their ring buffers behind the
 * sampler interface (dcpi/sampler.h, dcpi_sampler_perf). */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/record.h"
#include "dcpi/sampler.h"

#define MAX_CPUS 4096
#define RECORD_MAX 65536 /* perf_event_header.size is 16 bits */

struct ring {
	int cpu;
	int fd;                 /* the fd the ring is mapped on */
	void *base;             /* metadata page + data pages */
	size_t data_size;
	uint64_t snap;          /* data_head as a split drain began */
};

struct counter {
	int fd;
	uint64_t id;
	unsigned ev;
};

struct perf_sampler {
	struct dcpi_sampler base; /* first: the interface's handle */
	struct dcpi_eventlist events;
	unsigned ncpus;
	struct ring *rings;     /* ncpus */
	struct counter *ctrs;   /* ncpus * events.n; ctrs[cpu * n + ev] */
	struct counter *by_id;  /* sorted by id, for event_of */
	size_t page;
	uint8_t scratch[RECORD_MAX];
	uint64_t rng;
};

static long sys_perf_event_open(struct perf_event_attr *a, int pid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

int dcpi_sampler_online_cpus(int *cpus, unsigned max, unsigned *n)
{
	char buf[4096], *p, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	size_t len;

	*n = 0;
	if (!f)
		goto fallback;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0)
			return dcpi_error(EBADMSG, "cannot parse the online CPU list '%s'", buf);
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return dcpi_error(EBADMSG, "cannot parse the online CPU list '%s'", buf);
			p = end;
		}
		for (long c = a; c <= b; c++) {
			if (*n >= max)
				return dcpi_error(E2BIG, "more than %u CPUs", max);
			cpus[(*n)++] = (int)c;
		}
		if (*p == ',')
			p++;
	}
	if (*n)
		return 0;
fallback:
	for (long c = 0, m = sysconf(_SC_NPROCESSORS_ONLN); c < m && *n < max; c++)
		cpus[(*n)++] = (int)c;
	return 0;
}

static void fill_attr(const struct dcpi_event_spec *ev, const struct dcpi_sampler_opts *o,
		      int sideband, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	dcpi_event_attr(ev, a);
	a->size = sizeof(*a);
	a->sample_period = ev->period;
	a->freq = 0;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME;
	if (o->stack_bytes) {
		/* the kernel's part of the chain only: the user part is
		   unwound from the registers and the stack copy */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
				  PERF_SAMPLE_STACK_USER;
		a->exclude_callchain_user = 1;
		a->sample_regs_user = DCPI_STACK_REGS;
		a->sample_stack_user = o->stack_bytes;
	}
	if (o->mem && !o->stack_bytes)
		a->sample_type |= PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
	if (o->cgroup) /* last in the layout: see dcpi/record.h */
		a->sample_type |= PERF_SAMPLE_CGROUP;
	a->sample_id_all = 1;
	a->disabled = 1;
	a->inherit = o->inherit ? 1 : 0;
	a->exclude_kernel = o->exclude_kernel ? 1 : 0;
	a->exclude_hv = 1;
	a->exclude_guest = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a->watermark = 1;
	if (sideband) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->build_id = o->mmap_build_id ? 1 : 0;
		a->cgroup = o->cgroup ? 1 : 0;
	}
}

static int open_counter(const struct dcpi_event_spec *ev, const struct dcpi_sampler_opts *o,
			int sideband, int cpu, int group, size_t wakeup, int *fd)
{
	struct perf_event_attr a;
	long r;

	fill_attr(ev, o, sideband, &a);
	a.wakeup_watermark = (uint32_t)wakeup;
	r = sys_perf_event_open(&a, o->pid, cpu, group);
	if (r < 0 && errno == EINVAL && a.build_id) { /* kernels before 5.12: no build_id */
		a.build_id = 0;
		r = sys_perf_event_open(&a, o->pid, cpu, group);
	}
	if (r < 0 && errno == EINVAL && (a.sample_type & PERF_SAMPLE_CGROUP)) {
		/* before 5.7, or no cgroup v2 perf_event controller: samples
		   without it (their length says so) */
		a.sample_type &= ~(uint64_t)PERF_SAMPLE_CGROUP;
		a.cgroup = 0;
		r = sys_perf_event_open(&a, o->pid, cpu, group);
	}
	if (r < 0) {
		int e = errno;

		if (e == EACCES || e == EPERM)
			return dcpi_error(e, "cannot sample %s on CPU %d: %s (system-wide sampling "
					  "needs root or CAP_PERFMON, or "
					  "/proc/sys/kernel/perf_event_paranoid <= %d)",
					  ev->name, cpu, strerror(e), o->pid == -1 ? 0 : 2);
		if (e == ENOENT || e == EOPNOTSUPP)
			return dcpi_error(e, "cannot sample %s on CPU %d: %s (this CPU or VM has no "
					  "such event)", ev->name, cpu, strerror(e));
		return dcpi_error(e, "cannot sample %s on CPU %d: %s", ev->name, cpu, strerror(e));
	}
	*fd = (int)r;
	return 0;
}

static int map_ring(struct perf_sampler *s, struct ring *rg, unsigned pages)
{
	size_t len = (1 + (size_t)pages) * s->page;

	rg->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rg->fd, 0);
	if (rg->base == MAP_FAILED) {
		rg->base = NULL;
		return dcpi_error(errno, "cannot map the ring buffer of CPU %d (%zu KiB): %s%s",
				  rg->cpu, len / 1024, strerror(errno),
				  errno == EPERM ? " (see /proc/sys/kernel/perf_event_mlock_kb)" : "");
	}
	rg->data_size = (size_t)pages * s->page;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct counter *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Open every event on one CPU: groups per set, all writing to one ring. */
static int open_cpu(struct perf_sampler *s, const struct dcpi_sampler_opts *o, unsigned ci,
		    int cpu, unsigned pages)
{
	size_t wakeup = (size_t)pages * s->page / 2;
	int leader = -1, err;
	unsigned lastset = ~0u;

	s->rings[ci].cpu = cpu;
	for (unsigned e = 0; e < s->events.n; e++) {
		const struct dcpi_event_spec *ev = &s->events.ev[e];
		struct counter *c = &s->ctrs[ci * s->events.n + e];

		if (ev->set != lastset)
			leader = -1;
		lastset = ev->set;
		err = open_counter(ev, o, e == 0 && o->sideband, cpu, leader, wakeup, &c->fd);
		if (err)
			return err;
		c->ev = e;
		if (leader < 0)
			leader = c->fd;
		if (ioctl(c->fd, PERF_EVENT_IOC_ID, &c->id))
			return dcpi_error(errno, "PERF_EVENT_IOC_ID: %s", strerror(errno));
		if (e == 0) {
			s->rings[ci].fd = c->fd;
			err = map_ring(s, &s->rings[ci], pages);
			if (err)
				return err;
		} else if (ioctl(c->fd, PERF_EVENT_IOC_SET_OUTPUT, s->rings[ci].fd)) {
			return dcpi_error(errno, "cannot share CPU %d's ring with %s: %s", cpu,
					  ev->name, strerror(errno));
		}
	}
	return 0;
}

static void perf_close(struct dcpi_sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;

	for (unsigned i = 0; s->rings && i < s->ncpus; i++)
		if (s->rings[i].base)
			munmap(s->rings[i].base, s->rings[i].data_size + s->page);
	for (size_t i = 0; s->ctrs && i < (size_t)s->ncpus * s->events.n; i++)
		if (s->ctrs[i].fd >= 0)
			close(s->ctrs[i].fd);
	free(s->rings);
	free(s->ctrs);
	free(s->by_id);
	free(s);
}

/* The sampler's memory, every fd -1: perf_close() can release it at any
 * point of opening. */
static int perf_alloc(const struct dcpi_eventlist *l, unsigned ncpus, struct perf_sampler **out)
{
	struct perf_sampler *s = calloc(1, sizeof(*s));
	size_t nctrs = (size_t)ncpus * l->n;

	if (!s)
		return dcpi_error(ENOMEM, "out of memory");
	s->events = *l;
	s->ncpus = ncpus;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	s->rng = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
	s->rings = calloc(ncpus, sizeof(*s->rings));
	s->ctrs = calloc(nctrs, sizeof(*s->ctrs));
	s->by_id = calloc(nctrs, sizeof(*s->by_id));
	*out = s;
	if (!s->rings || !s->ctrs || !s->by_id)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < nctrs; i++)
		s->ctrs[i].fd = -1;
	for (unsigned i = 0; i < ncpus; i++)
		s->rings[i].fd = -1;
	return 0;
}

static int perf_open(const struct dcpi_eventlist *l, const struct dcpi_sampler_opts *o,
		     struct dcpi_sampler **out)
{
	static int cpus[MAX_CPUS];
	struct perf_sampler *s = NULL;
	/* a sample with its stack copy is ~16 KiB, not 40 bytes: rings of 2
	   MiB (a wake-up every 64 such samples) rather than 512 KiB */
	unsigned ncpus, pages = o->ring_pages ? o->ring_pages : o->stack_bytes ? 512 : 128;
	int err;

	if (l->n == 0 || l->n > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "no events to sample");
	if (pages & (pages - 1))
		return dcpi_error(EINVAL, "ring size of %u pages is not a power of 2", pages);
	err = dcpi_sampler_online_cpus(cpus, MAX_CPUS, &ncpus);
	if (!err)
		err = perf_alloc(l, ncpus, &s);
	for (unsigned i = 0; !err && i < ncpus; i++)
		err = open_cpu(s, o, i, cpus[i], pages);
	if (err) {
		if (s)
			perf_close(&s->base);
		return err;
	}
	memcpy(s->by_id, s->ctrs, (size_t)ncpus * l->n * sizeof(*s->by_id));
	qsort(s->by_id, (size_t)ncpus * l->n, sizeof(*s->by_id), cmp_id);
	*out = &s->base;
	return 0;
}

static int ioctl_all(struct perf_sampler *s, unsigned long req)
{
	for (size_t i = 0; i < (size_t)s->ncpus * s->events.n; i++)
		if (ioctl(s->ctrs[i].fd, req, 0))
			return dcpi_error(errno, "perf ioctl: %s", strerror(errno));
	return 0;
}

static int perf_enable(struct dcpi_sampler *s)
{
	return ioctl_all((struct perf_sampler *)s, PERF_EVENT_IOC_ENABLE);
}

static int perf_disable(struct dcpi_sampler *s)
{
	return ioctl_all((struct perf_sampler *)s, PERF_EVENT_IOC_DISABLE);
}

static size_t perf_pollfds(const struct dcpi_sampler *base, struct pollfd *fds, size_t max)
{
	const struct perf_sampler *s = (const struct perf_sampler *)base;
	size_t n = 0;

	for (unsigned i = 0; i < s->ncpus && n < max; i++) {
		fds[n].fd = s->rings[i].fd;
		fds[n].events = POLLIN;
		fds[n].revents = 0;
		n++;
	}
	return n;
}

static unsigned perf_ncpus(const struct dcpi_sampler *s)
{
	return ((const struct perf_sampler *)s)->ncpus;
}

enum pick { PICK_ALL, PICK_SIDE, PICK_SAMPLES };

/* Hand cb the records of one ring from its tail up to head, those pick
 * says; *end: where the walk stopped (head, or after the record whose cb
 * failed).  The kernel publishes data_head with a release store; the
 * caller reads it with acquire. */
static int walk_ring(struct perf_sampler *s, struct ring *rg, uint64_t head, enum pick pick,
		     dcpi_record_cb cb, void *arg, uint64_t *end)
{
	const uint8_t *data = (const uint8_t *)rg->base + s->page;
	uint64_t tail = ((struct perf_event_mmap_page *)rg->base)->data_tail;
	size_t mask = rg->data_size - 1;
	int err = 0;

	while (tail < head) {
		struct perf_event_header h;
		size_t at = tail & mask, first;
		const void *rec;

		first = rg->data_size - at;
		/* the kernel wrote these lines on other CPUs: ask for them
		   ahead, while the records before are being counted */
		__builtin_prefetch(data + ((at + 512) & mask));
		if (first >= sizeof(h)) {
			memcpy(&h, data + at, sizeof(h));
		} else {
			memcpy(&h, data + at, first);
			memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail) {
			err = dcpi_error(EBADMSG, "corrupt perf ring on CPU %d (record size %u)",
					 rg->cpu, h.size);
			tail = head; /* resynchronise: drop what is there */
			break;
		}
		if (pick != PICK_ALL && (h.type == PERF_RECORD_SAMPLE) != (pick == PICK_SAMPLES)) {
			tail += h.size;
			continue;
		}
		if (h.size <= first) {
			rec = data + at;
		} else {
			memcpy(s->scratch, data + at, first);
			memcpy(s->scratch + first, data, h.size - first);
			rec = s->scratch;
		}
		err = cb(arg, rec, h.size);
		tail += h.size;
		if (err)
			break;
	}
	*end = tail;
	return err;
}

/* Let the kernel write over what has been read (release: after our reads). */
static void consume(struct ring *rg, uint64_t tail)
{
	__atomic_store_n(&((struct perf_event_mmap_page *)rg->base)->data_tail, tail,
			 __ATOMIC_RELEASE);
}

static uint64_t ring_head(const struct ring *rg)
{
	return __atomic_load_n(&((struct perf_event_mmap_page *)rg->base)->data_head,
			       __ATOMIC_ACQUIRE);
}

static int perf_drain_ring(struct dcpi_sampler *base, unsigned i, int *cpu, dcpi_record_cb cb,
			   void *arg)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	uint64_t end;
	int err;

	if (i >= s->ncpus)
		return dcpi_error(EINVAL, "no ring %u", i);
	*cpu = s->rings[i].cpu;
	err = walk_ring(s, &s->rings[i], ring_head(&s->rings[i]), PICK_ALL, cb, arg, &end);
	consume(&s->rings[i], end);
	return err;
}

static int perf_drain(struct dcpi_sampler *base, dcpi_record_cb cb, void *arg)
{
	int err = 0, cpu;

	for (unsigned i = 0; i < ((struct perf_sampler *)base)->ncpus && !err; i++)
		err = perf_drain_ring(base, i, &cpu, cb, arg);
	return err;
}

/* Every ring's side-band records, then mid, then every ring's samples, up
 * to the heads read first: a record written meanwhile waits for the next
 * drain, so the samples handed out are exactly those of the side-band
 * records handed out before them. */
static int perf_drain_split(struct dcpi_sampler *base, dcpi_record_cb side, int (*mid)(void *arg),
			    dcpi_record_cb samples, void *arg)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	int err = 0, corrupt = 0;

	for (unsigned i = 0; i < s->ncpus; i++)
		s->rings[i].snap = ring_head(&s->rings[i]);
	for (unsigned i = 0; i < s->ncpus && !err; i++) {
		uint64_t end;

		err = walk_ring(s, &s->rings[i], s->rings[i].snap, PICK_SIDE, side, arg, &end);
		if (err == -EBADMSG) { /* resynchronised: what it held is dropped, as perf_drain */
			consume(&s->rings[i], end);
			corrupt = err;
			err = 0;
		}
	}
	if (!err)
		err = mid(arg);
	for (unsigned i = 0; i < s->ncpus; i++) {
		uint64_t end;
		int e = err ? 0 : walk_ring(s, &s->rings[i], s->rings[i].snap, PICK_SAMPLES, samples,
					    arg, &end);

		if (err)
			continue; /* nothing consumed: all of it again next time */
		consume(&s->rings[i], end);
		if (e == -EBADMSG) /* resynchronised: the other rings go on */
			corrupt = e;
		else
			err = e;
	}
	return err ? err : corrupt;
}

static int perf_event_of(const struct dcpi_sampler *base, uint64_t id)
{
	const struct perf_sampler *s = (const struct perf_sampler *)base;
	size_t lo = 0, hi = (size_t)s->ncpus * s->events.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->by_id[mid].id == id)
			return (int)s->by_id[mid].ev;
		if (s->by_id[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int perf_times(const struct dcpi_sampler *base, unsigned ev, uint64_t *enabled,
		      uint64_t *running)
{
	const struct perf_sampler *s = (const struct perf_sampler *)base;

	if (ev >= s->events.n)
		return dcpi_error(EINVAL, "no event %u", ev);
	for (unsigned i = 0; i < s->ncpus; i++) {
		uint64_t v[3];

		if (read(s->ctrs[i * s->events.n + ev].fd, v, sizeof(v)) != sizeof(v))
			return dcpi_error(errno ? errno : EIO, "reading counter: %s",
					  strerror(errno ? errno : EIO));
		*enabled += v[1];
		*running += v[2];
	}
	return 0;
}

static void perf_rerandomize(struct dcpi_sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;

	for (size_t i = 0; i < (size_t)s->ncpus * s->events.n; i++) {
		const struct dcpi_event_spec *ev = &s->events.ev[s->ctrs[i].ev];
		uint64_t spread = ev->period / 8, p;

		if (!ev->randomize || spread == 0)
			continue;
		/* xorshift64: statistical quality is all we need */
		s->rng ^= s->rng << 13;
		s->rng ^= s->rng >> 7;
		s->rng ^= s->rng << 17;
		p = ev->period - spread + s->rng % (2 * spread + 1);
		ioctl(s->ctrs[i].fd, PERF_EVENT_IOC_PERIOD, &p);
	}
}

const struct dcpi_sampler_ops dcpi_sampler_perf = {
	.name = "perf",
	.open = perf_open,
	.close = perf_close,
	.enable = perf_enable,
	.disable = perf_disable,
	.pollfds = perf_pollfds,
	.ncpus = perf_ncpus,
	.drain = perf_drain,
	.drain_split = perf_drain_split,
	.event_of = perf_event_of,
	.times = perf_times,
	.rerandomize = perf_rerandomize,
	.drain_ring = perf_drain_ring,
};
