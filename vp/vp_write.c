/* The file: each sampled load named by (image, offset in the image's
 * file), as the sample profiles name instructions, and written in the text
 * form of dcpiformat(5) ("Value profiles"), atomically, under a new name.
 *
 * Images come from dl_iterate_phdr(): the program (its path from
 * /proc/self/exe) and every shared object with a path; a PT_LOAD segment
 * maps a PC to its file offset (pc - (base + p_vaddr) + p_offset, within
 * p_filesz), and the build-id is the NT_GNU_BUILD_ID note in memory.  A
 * load in none of them (the vDSO, JIT code, a file the program mapped
 * itself) is counted as skipped noimage.
 *
 * Nothing here allocates with malloc (mmap'd buffers, a heapsort): the
 * file may be written from _exit() or execve() called in a signal handler
 * that interrupted malloc. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "internal.h"
#include "vp.h"

#define VP_SEGS 16
#define VP_BUILDID_MAX 64 /* bytes of a build-id kept */

struct vp_image {
	char path[PATH_MAX];
	char buildid[2 * VP_BUILDID_MAX + 1]; /* "-" when none */
	uint64_t base;
	size_t nseg;
	struct {
		uint64_t lo, hi, off, filesz;
	} seg[VP_SEGS];
	int index; /* in the file, -1 until a load names it */
};

struct vp_images {
	struct vp_image *v; /* cap of them, mapped */
	size_t n, cap;
};

/* A load as written: (image, offset) and its counts. */
struct vp_row {
	int image;
	uint64_t off;
	struct vp_entry *e;
};

static void hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

/* The GNU build-id from a PT_NOTE segment in memory, into img. */
static void note_buildid(struct vp_image *img, const uint8_t *p, size_t len)
{
	while (len >= sizeof(Elf64_Nhdr)) {
		const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
		size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;

		if (name > len - sizeof(*nh) || desc > len - sizeof(*nh) - name)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    !memcmp(p + sizeof(*nh), "GNU", 4) && nh->n_descsz &&
		    nh->n_descsz <= VP_BUILDID_MAX) {
			hex(img->buildid, p + sizeof(*nh) + name, nh->n_descsz);
			return;
		}
		p += sizeof(*nh) + name + desc;
		len -= sizeof(*nh) + name + desc;
	}
}

/* The image's path, absolute: the program's from /proc/self/exe, a
 * relative one resolved; 0, or -1 (none: the vDSO has a bare name). */
static int image_path(const char *name, int first, char *out)
{
	ssize_t n;

	if (first && (!name || !*name)) {
		n = readlink("/proc/self/exe", out, PATH_MAX - 1);
		if (n <= 0)
			return -1;
		out[n] = 0;
		return 0;
	}
	if (!name || !strchr(name, '/'))
		return -1;
	if (name[0] == '/') {
		if (strlen(name) >= PATH_MAX)
			return -1;
		strcpy(out, name);
		return 0;
	}
	return realpath(name, out) ? 0 : -1;
}

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct vp_images *imgs = data;
	struct vp_image *img;
	int first = imgs->n == 0; /* the program comes first */

	(void)size;
	if (imgs->n == imgs->cap)
		return 1; /* loaded since they were counted: their PCs in no image */
	img = &imgs->v[imgs->n];
	memset(img, 0, sizeof(*img));
	img->index = -1;
	strcpy(img->buildid, "-");
	img->base = info->dlpi_addr;
	if (image_path(info->dlpi_name, first, img->path)) {
		imgs->n++; /* kept, pathless: its PCs are in no file image */
		img->path[0] = 0;
		return 0;
	}
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && img->nseg < VP_SEGS) {
			img->seg[img->nseg].lo = info->dlpi_addr + ph->p_vaddr;
			img->seg[img->nseg].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			img->seg[img->nseg].off = ph->p_offset;
			img->seg[img->nseg].filesz = ph->p_filesz;
			img->nseg++;
		} else if (ph->p_type == PT_NOTE && !strcmp(img->buildid, "-")) {
			note_buildid(img, (const uint8_t *)(info->dlpi_addr + ph->p_vaddr),
				     ph->p_filesz);
		}
	}
	imgs->n++;
	return 0;
}

/* pc's image (its index in imgs) and file offset: 0, or -1. */
static int locate(const struct vp_images *imgs, uint64_t pc, size_t *img, uint64_t *off)
{
	for (size_t i = 0; i < imgs->n; i++) {
		const struct vp_image *m = &imgs->v[i];

		for (size_t s = 0; s < m->nseg; s++)
			if (pc >= m->seg[s].lo && pc < m->seg[s].hi) {
				if (!m->path[0] || pc - m->seg[s].lo >= m->seg[s].filesz)
					return -1;
				*img = i;
				*off = pc - m->seg[s].lo + m->seg[s].off;
				return 0;
			}
	}
	return -1;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(*(size_t *)data)++;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct vp_row *x = a, *y = b;

	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int hot_cmp(const void *a, const void *b)
{
	const struct vp_hot *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* What the format requires of a load, whatever the copy read: OUTSIDE +
 * the bins == SAMPLES (the bins the measure: samples is counted last),
 * and each value's COUNT in 1..SAMPLES. */
static void settle(struct vp_entry *e)
{
	uint64_t sum = e->outside;
	unsigned k = 0;

	for (size_t b = 0; b < vp_cfg.bins.n; b++)
		sum += e->bin[b];
	e->samples = sum;
	if (e->nhot > VP_HOT)
		e->nhot = VP_HOT;
	for (unsigned i = 0; i < e->nhot; i++) {
		if (!e->hot[i].count)
			continue;
		e->hot[k] = e->hot[i];
		if (e->hot[k].count > sum)
			e->hot[k].count = sum;
		k++;
	}
	e->nhot = sum ? k : 0;
}

/* Two PCs at one (image, offset): the image mapped twice.  One row. */
static void merge_into(struct vp_entry *to, const struct vp_entry *from)
{
	to->samples += from->samples;
	to->cycles = dcpi_sat_add(to->cycles, from->cycles);
	to->outside += from->outside;
	for (size_t b = 0; b < DCPI_BINS_MAX; b++)
		to->bin[b] += from->bin[b];
	for (unsigned i = 0; i < from->nhot; i++)
		vp_hot_add(to->hot, &to->nhot, from->hot[i].value, from->hot[i].count);
}

/* The process's name, from /proc/self/comm: blanks, controls and every
 * byte past ASCII as '_' (the format's fields are ASCII). */
static void comm(char *out, size_t len)
{
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && out[n - 1] == '\n')
		n--;
	out[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)out[i] <= ' ' || (unsigned char)out[i] >= 0x7f)
			out[i] = '_';
}

/* The text, into a buffer mapped at its largest size beforehand. */
struct vp_out {
	char *p;
	size_t len, cap;
	int over; /* it did not fit (a bound below is wrong): nothing written */
};

__attribute__((format(printf, 2, 3))) static void put(struct vp_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len)
		o->over = 1;
	else
		o->len += (size_t)n;
}

static void put_path(struct vp_out *o, const char *p)
{
	for (; *p; p++)
		put(o, "%s", *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : (char[2]){ *p, 0 });
}

static void put_header(struct vp_out *o, const struct vp_run *run, uint64_t signals,
		       const uint64_t *skipped)
{
	char name[64];

	comm(name, sizeof(name));
	put(o, "dcpi-vprof 1\nkind ldlatency\npid %d\n", (int)getpid());
	if (name[0])
		put(o, "comm %s\n", name);
	put(o, "tsc_hz %" PRIu64 "\ntiming %" PRIu64 "\nperiod %" PRIu64 "\nsignals %" PRIu64 "\n",
	    run->tsc_hz, run->timing, vp_cfg.period_ns, signals);
	for (int i = 0; i < VP_NSKIP; i++)
		put(o, "skipped %s %" PRIu64 "\n", vp_skip_names[i], skipped[i]);
	for (size_t i = 0; i < vp_cfg.bins.n; i++) {
		const struct dcpi_bin *x = &vp_cfg.bins.v[i];

		put(o, "bin %zu %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", i, x->min, x->max, x->rep,
		    x->name);
	}
}

static void put_row(struct vp_out *o, const struct vp_row *r)
{
	struct vp_entry *e = r->e;

	settle(e); /* (merged rows too) */
	put(o, "load %d %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64, r->image, r->off, e->samples,
	    e->cycles, e->outside);
	for (size_t i = 0; i < vp_cfg.bins.n; i++)
		put(o, " %" PRIu64, e->bin[i]);
	put(o, "\n");
	vp_sort(e->hot, e->nhot, sizeof(e->hot[0]), hot_cmp);
	for (unsigned i = 0; i < e->nhot; i++)
		put(o, "value %d %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", r->image, r->off,
		    e->hot[i].value, e->hot[i].count);
}

/* The most the text can take: a header line is under 128 bytes, a bin's
 * under 128, an image's 2 * PATH_MAX + 192, a load's (3 + bins) * 21 +
 * 64, a value's 96. */
static size_t text_bound(size_t nimg, size_t nrows)
{
	return 4096 + DCPI_BINS_MAX * 128 + nimg * (2 * PATH_MAX + 192) +
	       nrows * ((3 + DCPI_BINS_MAX) * 21 + 64 + VP_HOT * 96);
}

/* The rows of the entries with samples, sorted, one per (image, offset);
 * the samples of loads in no image added to skipped[VP_NOIMAGE]. */
static void make_rows(struct vp_entry *e, size_t n, struct vp_images *imgs, struct vp_row *rows,
		      size_t *nrows, uint64_t *skipped)
{
	size_t k = 0, w = 0;

	for (size_t i = 0; i < n; i++) {
		size_t img;
		uint64_t off;

		settle(&e[i]);
		if (!e[i].samples)
			continue; /* claimed, never counted (busy) */
		if (locate(imgs, atomic_load_explicit(&e[i].pc, memory_order_relaxed), &img, &off)) {
			skipped[VP_NOIMAGE] += e[i].samples;
			continue;
		}
		rows[k++] = (struct vp_row){ (int)img, off, &e[i] };
	}
	vp_sort(rows, k, sizeof(*rows), row_cmp);
	for (size_t i = 0; i < k; i++) {
		if (w && rows[w - 1].image == rows[i].image && rows[w - 1].off == rows[i].off)
			merge_into(rows[w - 1].e, rows[i].e);
		else
			rows[w++] = rows[i];
	}
	*nrows = w;
}

int vp_write_text(struct vp_entry *e, size_t n, const struct vp_run *run, struct vp_text *text)
{
	struct vp_images imgs = { 0 };
	struct vp_out o = { 0 };
	struct vp_row *rows;
	uint64_t skipped[VP_NSKIP], signals = 0;
	size_t nrows = 0, nobj = 0;
	int next = 0;

	for (int i = 0; i < VP_NSKIP; i++)
		skipped[i] = atomic_load(&vp_skipped[i]);
	skipped[VP_BUSY] += run->busy;
	dl_iterate_phdr(count_object, &nobj);
	imgs.cap = nobj + 8;
	imgs.v = vp_map(imgs.cap * sizeof(*imgs.v));
	rows = vp_map((n ? n : 1) * sizeof(*rows));
	if (!imgs.v || !rows) {
		vp_unmap(imgs.v, imgs.cap * sizeof(*imgs.v));
		vp_unmap(rows, (n ? n : 1) * sizeof(*rows));
		return -1;
	}
	dl_iterate_phdr(each_object, &imgs);
	make_rows(e, n, &imgs, rows, &nrows, skipped);
	o.cap = text_bound(imgs.n, nrows);
	o.p = vp_map(o.cap);
	/* every signal handled ends in one place: a load's samples or a reason */
	for (int i = 0; i < VP_NSKIP; i++)
		signals += skipped[i];
	for (size_t i = 0; i < nrows; i++)
		signals += rows[i].e->samples;
	if (o.p) {
		put_header(&o, run, signals, skipped);
		/* images numbered in the order the rows (sorted by image) first name them */
		for (size_t i = 0; i < nrows; i++) {
			struct vp_image *m = &imgs.v[rows[i].image];

			if (m->index < 0) {
				m->index = next++;
				put(&o, "image %d %s ", m->index, m->buildid);
				put_path(&o, m->path);
				put(&o, "\n");
			}
			rows[i].image = m->index;
		}
		for (size_t i = 0; i < nrows; i++)
			put_row(&o, &rows[i]);
		put(&o, "end\n");
	}
	vp_unmap(rows, (n ? n : 1) * sizeof(*rows));
	vp_unmap(imgs.v, imgs.cap * sizeof(*imgs.v));
	if (!o.p || o.over) {
		vp_unmap(o.p, o.cap);
		return -1;
	}
	*text = (struct vp_text){ o.p, o.len, o.cap };
	return 0;
}

/* RLIMIT_FSIZE: a write past it sends SIGXFSZ (to the process, which any
 * thread not blocking it takes, by default dying): a file that would
 * not fit is not written, and SIGXFSZ is blocked in this thread while it
 * is and taken afterwards when the writes raised one (a limit lowered
 * meanwhile by another thread still reaches the others). */
static int over_fsize(size_t len)
{
	struct rlimit r;

	return getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_cur != RLIM_INFINITY && len > r.rlim_cur;
}

static int write_file(int dfd, const char *text, size_t len, char *name, size_t namelen);

int vp_write_file(const char *text, size_t len, char *path, size_t pathlen)
{
	char name[64] = "";
	sigset_t xfsz, old, pend;
	int dfd, err, before;

	if (over_fsize(len))
		return dcpi_error(EFBIG, "%s: not written: %zu bytes, over RLIMIT_FSIZE", vp_cfg.dir,
				  len);
	dfd = open(vp_cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return dcpi_error(errno, "%s: %s", vp_cfg.dir, strerror(errno));
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	before = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
	err = write_file(dfd, text, len, name, sizeof(name));
	if (!before && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
		struct timespec zero = { 0, 0 };

		sigtimedwait(&xfsz, NULL, &zero); /* the writes' own */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err) {
		if (path && pathlen)
			snprintf(path, pathlen, "%s/%s", vp_cfg.dir, name);
	}
	close(dfd);
	if (err)
		return dcpi_error(-err, "%s/%s: cannot write: %s", vp_cfg.dir, name, strerror(-err));
	return 0;
}

/* The file, under a new name in dfd (into name): 0, or -errno (nothing left). */
static int write_file(int dfd, const char *text, size_t len, char *name, size_t namelen)
{
	char tmp[96];
	int fd, err = -EEXIST, linked = 0;

	/* a new name each try: a pid used again later never meets its
	 * predecessor's file (RENAME_NOREPLACE), nor a symbolic link planted
	 * under the temporary name (O_EXCL | O_NOFOLLOW) */
	for (int tries = 0; tries < 16 && err == -EEXIST; tries++) {
		uint32_t n = (uint32_t)vp_random();

		snprintf(name, namelen, "vp.%d.%" PRIu32 ".vprof", (int)getpid(), n);
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", name, (int)getpid());
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		err = dcpi_write_all(fd, text, len);
		if (close(fd) < 0 && !err)
			err = -errno;
		if (!err && syscall(SYS_renameat2, dfd, tmp, dfd, name, 1 /* RENAME_NOREPLACE */) < 0) {
			err = -errno;
			if (err == -EINVAL || err == -ENOSYS) { /* no NOREPLACE here */
				err = linkat(dfd, tmp, dfd, name, 0) < 0 ? -errno : 0;
				linked = 1;
			}
		}
		if (err || linked)
			unlinkat(dfd, tmp, 0);
	}
	return err;
}
