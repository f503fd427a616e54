/* Which addresses the handler may read: a table of the process's readable
 * mappings of ordinary memory, from /proc/self/maps, read with open/read
 * (signal-safe) into one of two buffers while the other serves lookups.
 *
 * The table is a hint, never the last word: a mapping can go or lose its
 * permission between the read and the load (mincore() then says unmapped,
 * or the probe faults and is recovered: vp_probe.c).  It is reread when an
 * address is in no readable mapping (new mappings: a thread's malloc arena
 * made readable piece by piece), at most every VP_MAPS_EVERY_NS, so that a
 * program whose loads miss the table (a wild pointer the decoder computed,
 * an exec-only page) costs one read of the file per 20 ms, not per sample.
 *
 * Never read, although readable: device files (a load from a device's
 * registers can have effects), the vDSO's data pages (some of them fault
 * with SIGBUS when read, by design) and anonymous-inode mappings (rings
 * and buffers of drivers). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vp.h"

#define VP_MAPS_MAX 16384
#define VP_MAPS_EVERY_NS 20000000ull
#define VP_LINE_MAX 160 /* of a line, kept: the path's start decides */

struct vp_range {
	uint64_t lo, hi;
};

struct vp_maps {
	atomic_uint seq; /* odd while being written */
	size_t n;
	struct vp_range r[VP_MAPS_MAX];
};

static struct vp_maps *maps[2];
static atomic_uint gen;          /* maps[gen & 1] is the current table */
static atomic_int rereading;     /* held by the one thread rereading */
static atomic_uint_fast64_t last_read;
/* The reader's buffers: static, as the lock above guards them (a
 * handler's stack may be a small one). */
static char chunk[4096], line[VP_LINE_MAX + 1];

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Ordinary memory: not a device, the vDSO's data, a driver's buffer, or
 * a file of sysfs or procfs (a PCI BAR's resource file, a mapping that
 * reads a register). */
static int ordinary(const char *path)
{
	if (starts(path, "/sys/") || starts(path, "/proc/"))
		return 0;
	if (starts(path, "/dev/"))
		return starts(path, "/dev/shm/") || !strcmp(path, "/dev/zero") ||
		       starts(path, "/dev/zero ");
	return !starts(path, "[vvar") && !starts(path, "[vsyscall]") &&
	       !starts(path, "anon_inode:");
}

static int hexnum(const char **p, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = *p;
	int n = 0;

	for (;; s++, n++) {
		int c = *s, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			break;
		if (n == 16)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	*p = s;
	*v = x;
	return n ? 0 : -1;
}

/* One line, "lo-hi perms offset dev inode   path", into m. */
static void take_line(struct vp_maps *m, const char *s)
{
	uint64_t lo, hi;
	int field;

	if (hexnum(&s, &lo) || *s++ != '-' || hexnum(&s, &hi) || *s++ != ' ' || hi <= lo)
		return;
	if (s[0] != 'r')
		return;
	for (field = 0; *s && field < 4; field++) { /* perms, offset, dev, inode */
		while (*s && *s != ' ')
			s++;
		while (*s == ' ')
			s++;
	}
	if (!ordinary(s))
		return;
	if (m->n && m->r[m->n - 1].hi == lo) { /* adjoining: one range */
		m->r[m->n - 1].hi = hi;
		return;
	}
	if (m->n == VP_MAPS_MAX)
		return; /* the rest stays unknown: not readable to us */
	m->r[m->n].lo = lo;
	m->r[m->n].hi = hi;
	m->n++;
}

static void read_into(struct vp_maps *m)
{
	size_t at = 0;
	int fd;
	ssize_t got;

	m->n = 0;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < got; i++) {
			if (chunk[i] == '\n') {
				line[at] = 0;
				take_line(m, line);
				at = 0;
			} else if (at < VP_LINE_MAX) { /* a long path: its start is kept */
				line[at++] = chunk[i];
			}
		}
	}
	close(fd);
}

static void reread(void)
{
	uint64_t now = vp_now_ns(), last;
	struct vp_maps *m;
	unsigned g;

	if (atomic_exchange_explicit(&rereading, 1, memory_order_acquire))
		return; /* another thread is at it: never wait in a handler */
	last = atomic_load_explicit(&last_read, memory_order_relaxed);
	if (!last || now - last >= VP_MAPS_EVERY_NS) {
		atomic_store_explicit(&last_read, now, memory_order_relaxed);
		g = atomic_load_explicit(&gen, memory_order_relaxed);
		m = maps[(g + 1) & 1];
		atomic_fetch_add_explicit(&m->seq, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		read_into(m);
		atomic_fetch_add_explicit(&m->seq, 1, memory_order_release);
		atomic_store_explicit(&gen, g + 1, memory_order_release);
	}
	atomic_store_explicit(&rereading, 0, memory_order_release);
}

/* Bytes readable from addr (up to want) by the current table; 0 when not,
 * or when the table changed under the lookup. */
static size_t lookup(uint64_t addr, size_t want)
{
	unsigned g = atomic_load_explicit(&gen, memory_order_acquire);
	struct vp_maps *m = maps[g & 1];
	unsigned s1 = atomic_load_explicit(&m->seq, memory_order_acquire);
	size_t lo = 0, hi, got = 0;

	if (s1 & 1)
		return 0;
	hi = m->n < VP_MAPS_MAX ? m->n : VP_MAPS_MAX;
	while (lo < hi) { /* the first range ending past addr */
		size_t mid = lo + (hi - lo) / 2;

		if (m->r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < VP_MAPS_MAX && lo < m->n && m->r[lo].lo <= addr && addr < m->r[lo].hi)
		got = m->r[lo].hi - addr < want ? m->r[lo].hi - addr : want;
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&m->seq, memory_order_relaxed) != s1)
		return 0;
	return got;
}

size_t vp_maps_readable(uint64_t addr, size_t want)
{
	size_t got = lookup(addr, want);

	if (got)
		return got;
	reread();
	return lookup(addr, want);
}

int vp_maps_init(void)
{
	for (int i = 0; i < 2; i++) {
		void *p = mmap(NULL, sizeof(struct vp_maps), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return -errno;
		maps[i] = p;
	}
	reread();
	return 0;
}

void vp_maps_reset(void)
{
	/* a thread of the parent may have been rereading at the fork */
	atomic_store(&maps[0]->seq, 0);
	atomic_store(&maps[1]->seq, 0);
	atomic_store(&rereading, 0);
	atomic_store(&last_read, 0);
	reread();
}
