/* dcpi_dyn: see dcpi_dyn.h.  Standalone: a JIT links this file (or
 * libdcpidyn.a) and nothing else of dcpi. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dcpi_dyn.h"

#define JD_MAGIC 0x4A695444u
#define JD_VERSION 1u
enum { JD_LOAD = 0, JD_DEBUG_INFO = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static pid_t owner;             /* the process the file is for */
static void *marker;
static long page;
static int in_batch, disabled = -1;
static uint64_t code_index;
static unsigned char *buf;
static size_t len, cap;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int put(const void *p, size_t n)
{
	if (n > DCPI_DYN_BATCH_MAX - len)
		return -E2BIG;
	if (len + n > cap) {
		size_t ncap = cap ? cap : 4096;
		unsigned char *nb;

		while (ncap < len + n)
			ncap *= 2;
		nb = realloc(buf, ncap);
		if (!nb)
			return -ENOMEM;
		buf = nb;
		cap = ncap;
	}
	memcpy(buf + len, p, n);
	len += n;
	return 0;
}

static int put32(uint32_t v) { return put(&v, 4); }
static int put64(uint64_t v) { return put(&v, 8); }

#if defined(__x86_64__)
#define ELF_MACH 62
#elif defined(__aarch64__)
#define ELF_MACH 183
#else
#define ELF_MACH 0
#endif

/* The jitdump header: magic, version, size, machine, pad, pid, time, flags. */
static int write_header(void)
{
	uint32_t h[6] = { JD_MAGIC, JD_VERSION, 40, ELF_MACH, 0, (uint32_t)getpid() };
	struct timespec ts;
	uint64_t t[2] = { 0, 0 };

	clock_gettime(CLOCK_REALTIME, &ts);
	t[0] = (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
	if (write(fd, h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    write(fd, t, sizeof(t)) != (ssize_t)sizeof(t))
		return errno ? -errno : -EIO;
	return 0;
}

static void drop_file(void)
{
	if (marker)
		munmap(marker, (size_t)page);
	if (fd >= 0)
		close(fd);
	marker = NULL;
	fd = -1;
}

/* DIR/jit-PID.dump, new, ours, mapped executable (the marker dcpid and
 * perf look for). */
static int open_file(void)
{
	const char *dir = getenv("DCPI_DYN_DIR");
	char path[4096];
	int err;

	drop_file(); /* a parent's, after fork */
	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid()) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && unlink(path) == 0) /* an earlier process's, ours */
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	page = sysconf(_SC_PAGESIZE);
	err = write_header();
	if (!err) {
		marker = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (marker == MAP_FAILED) {
			marker = NULL;
			err = -errno;
		}
	}
	if (err) {
		drop_file();
		unlink(path);
		return err;
	}
	owner = getpid();
	return 0;
}

int dcpi_dyn_begin(void)
{
	int err = 0;

	if (disabled < 0) {
		const char *e = getenv("DCPI_DYN");
		disabled = e && !strcmp(e, "0");
	}
	if (disabled)
		return 0;
	pthread_mutex_lock(&lock);
	if (fd < 0 || owner != getpid())
		err = open_file();
	if (err) {
		pthread_mutex_unlock(&lock);
		return err;
	}
	in_batch = 1;
	len = 0;
	return 0;
}

/* DEBUG_INFO: code address, entries of (address, line, discriminator, file). */
static int add_lines(const struct dcpi_dyn_code *c, uint64_t ts)
{
	size_t size = 16 + 16;
	int err;

	for (size_t i = 0; i < c->nlines; i++) {
		if (!c->lines[i].file || c->lines[i].offset >= c->size)
			return -EINVAL;
		size += 16 + strlen(c->lines[i].file) + 1;
	}
	if (size > UINT32_MAX)
		return -E2BIG;
	err = put32(JD_DEBUG_INFO) ?: put32((uint32_t)size) ?: put64(ts) ?:
	      put64((uint64_t)(uintptr_t)c->start) ?: put64(c->nlines);
	for (size_t i = 0; i < c->nlines && !err; i++)
		err = put64((uint64_t)(uintptr_t)c->start + c->lines[i].offset) ?:
		      put32(c->lines[i].line) ?: put32(0) ?:
		      put(c->lines[i].file, strlen(c->lines[i].file) + 1);
	return err;
}

/* LOAD: pid, tid, vma, code address, size, index, name, code bytes. */
static int add_load(const struct dcpi_dyn_code *c, uint64_t ts)
{
	size_t size = 16 + 40 + strlen(c->name) + 1 + c->size;
	uint64_t at = (uint64_t)(uintptr_t)c->start;

	if (size > UINT32_MAX)
		return -E2BIG;
	return put32(JD_LOAD) ?: put32((uint32_t)size) ?: put64(ts) ?:
	       put32((uint32_t)getpid()) ?: put32((uint32_t)syscall(SYS_gettid)) ?: put64(at) ?: put64(at) ?:
	       put64(c->size) ?: put64(code_index++) ?: put(c->name, strlen(c->name) + 1) ?:
	       put(c->start, c->size);
}

int dcpi_dyn_add(const struct dcpi_dyn_code *c)
{
	size_t keep = len;
	uint64_t ts;
	int err;

	if (disabled > 0)
		return 0;
	if (!in_batch)
		return -EPERM;
	if (!c || !c->start || !c->size || c->size > DCPI_DYN_CODE_MAX || !c->name ||
	    !*c->name || (c->nlines && !c->lines))
		return -EINVAL;
	ts = now_ns();
	err = (c->nlines ? add_lines(c, ts) : 0) ?: add_load(c, ts);
	if (err)
		len = keep; /* nothing of a refused piece is published */
	return err;
}

int dcpi_dyn_end(void)
{
	size_t off = 0;
	int err = 0;

	if (disabled > 0)
		return 0;
	if (!in_batch)
		return -EPERM;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	len = 0;
	in_batch = 0;
	pthread_mutex_unlock(&lock);
	return err;
}
