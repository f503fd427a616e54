/* Kernel symbol snapshots in the database: see dcpi_snapshot_kernel
 * in dcpi/db.h.  The tools read them with zlib's gz* calls, which read
 * compressed and plain files alike. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/buf.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/profile.h"
#include "dcpi/snapshot.h"
#include "dcpi/stacks.h"

/* /proc files report size 0: read them as a stream, to a cap. */
static int slurp(const char *path, struct dcpi_buf *b)
{
	char chunk[65536];
	size_t n;
	FILE *f = fopen(path, "re");
	int err = 0;

	if (!f)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	while (!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		err = b->len + n > DCPI_SNAPSHOT_MAX
			? dcpi_error(EFBIG, "%s: larger than %zu bytes", path, DCPI_SNAPSHOT_MAX)
			: dcpi_buf_put(b, chunk, n);
	if (!err && ferror(f))
		err = dcpi_error(EIO, "%s: read error", path);
	fclose(f);
	return err;
}

int dcpi_snapshot_read(const char *procdir, const char *name, struct dcpi_buf *out)
{
	char path[4200];

	if (snprintf(path, sizeof(path), "%s/%s", procdir, name) >= (int)sizeof(path))
		return dcpi_error(ENAMETOOLONG, "%s: path too long", procdir);
	return slurp(path, out);
}

/* kallsyms without its padding symbols (DCPI_KALLSYMS_PADDING). */
static int drop_padding(const struct dcpi_buf *in, struct dcpi_buf *out)
{
	const char *p = (const char *)in->data, *end = p + in->len;
	int err = dcpi_buf_grow(out, in->len);

	while (!err && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end, *name;

		/* "ADDR T NAME [MODULE]": the name after the second space */
		name = memchr(p, ' ', (size_t)(next - p));
		name = name ? memchr(name + 1, ' ', (size_t)(next - name - 1)) : NULL;
		if (!name || (size_t)(next - name - 1) < sizeof(DCPI_KALLSYMS_PADDING) - 1 ||
		    memcmp(name + 1, DCPI_KALLSYMS_PADDING, sizeof(DCPI_KALLSYMS_PADDING) - 1))
			err = dcpi_buf_put(out, p, (size_t)(next - p));
		p = next;
	}
	return err;
}

int dcpi_snapshot_kernel_text(const char *platdir, const struct dcpi_buf *kallsyms,
			      const char *procdir, unsigned mode)
{
	return dcpi_snapshot_kernel_keep(platdir, kallsyms, procdir, mode, NULL);
}

int dcpi_snapshot_kernel_make(const struct dcpi_buf *kallsyms, struct dcpi_buf *text,
			      struct dcpi_buf *gz)
{
	struct dcpi_buf raw = DCPI_BUF_INIT, z = DCPI_BUF_INIT;
	/* level 1: 40% of level 6's CPU (40 vs 100 ms for 5 MB here) for a
	   file a fifth larger, written at every start and every epoch */
	int err = drop_padding(kallsyms, &raw);

	if (!err)
		err = dcpi_buf_gzip(&raw, 1, &z);
	if (err) {
		dcpi_buf_release(&raw);
		dcpi_buf_release(&z);
		return err;
	}
	dcpi_buf_release(text);
	dcpi_buf_release(gz);
	*text = raw;
	*gz = z;
	return 0;
}

int dcpi_snapshot_kernel_write(const char *platdir, const struct dcpi_buf *gz,
			       const char *procdir, unsigned mode)
{
	struct dcpi_buf raw = DCPI_BUF_INIT;
	char from[4096], to[4200];
	int err;

	snprintf(to, sizeof(to), "%s/kallsyms.gz", platdir);
	err = dcpi_file_write_atomic(to, gz->data, gz->len, mode);
	if (err)
		return err;
	snprintf(from, sizeof(from), "%s/modules", procdir);
	snprintf(to, sizeof(to), "%s/modules", platdir);
	if (access(from, F_OK))
		return 0; /* a kernel without modules */
	err = slurp(from, &raw);
	if (!err)
		err = dcpi_file_write_atomic(to, raw.data, raw.len, mode);
	dcpi_buf_release(&raw);
	return err;
}

int dcpi_snapshot_kernel_keep(const char *platdir, const struct dcpi_buf *kallsyms,
			      const char *procdir, unsigned mode, struct dcpi_buf *kept)
{
	struct dcpi_buf text = DCPI_BUF_INIT, gz = DCPI_BUF_INIT;
	int err = dcpi_snapshot_kernel_make(kallsyms, &text, &gz);

	if (!err && kept) {
		dcpi_buf_release(kept);
		*kept = text;
		text = (struct dcpi_buf)DCPI_BUF_INIT;
	}
	dcpi_buf_release(&text);
	if (!err)
		err = dcpi_snapshot_kernel_write(platdir, &gz, procdir, mode);
	dcpi_buf_release(&gz);
	return err;
}

int dcpi_snapshot_kernel(const char *platdir, const char *procdir, unsigned mode)
{
	struct dcpi_buf ks = DCPI_BUF_INIT;
	int err = dcpi_snapshot_read(procdir, "kallsyms", &ks);

	if (!err)
		err = dcpi_snapshot_kernel_text(platdir, &ks, procdir, mode);
	dcpi_buf_release(&ks);
	return err;
}

int dcpi_snapshot_kallsyms_path(const char *platdir, char *out, size_t len)
{
	static const char *const names[] = { "kallsyms.gz", "kallsyms" };

	for (size_t i = 0; i < 2; i++) {
		if (snprintf(out, len, "%s/%s", platdir, names[i]) >= (int)len)
			return dcpi_error(ENAMETOOLONG, "%s: path too long", platdir);
		if (access(out, F_OK) == 0)
			return 0;
	}
	return dcpi_error(ENOENT, "%s: no kallsyms snapshot (kallsyms.gz)", platdir);
}

/* ---- cutting a snapshot down to the sampled procedures ----------------------------- */

/* One line of the text: its address, where it is, and its owner (the
 * module in brackets, or none: vmlinux) as a slice of the line. */
struct kl {
	uint64_t addr;
	size_t off, len, own, ownlen;
	size_t line; /* its index in the text */
};

/* "ADDR TYPE NAME [MODULE]" */
static int parse_kl(const char *text, size_t off, size_t len, struct kl *k)
{
	const char *p = text + off, *end = p + len, *q, *name;

	q = p;
	if (dcpi_hex_scan_u64(&q, end, &k->addr) || q + 3 > end || q[0] != ' ' || q[2] != ' ')
		return -1;
	name = q + 3;
	q = memchr(name, ' ', (size_t)(end - name));
	k->off = off;
	k->len = len;
	k->own = k->ownlen = 0;
	if (q) {
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		k->own = (size_t)(q - text);
		k->ownlen = (size_t)(end - q);
	}
	return 0;
}

static int same_owner(const char *text, const struct kl *a, const struct kl *b)
{
	return a->ownlen == b->ownlen && !memcmp(text + a->own, text + b->own, a->ownlen);
}

static int is_named(const char *text, const struct kl *k, const char *name)
{
	const char *n = text + k->off, *end = n + k->len;
	size_t l = strlen(name);

	n = memchr(n, ' ', k->len);
	n = n && n + 3 <= end ? n + 3 : NULL;
	return n && (size_t)(end - n) >= l && !memcmp(n, name, l) &&
	       ((size_t)(end - n) == l || n[l] == ' ' || n[l] == '\t');
}

static int cmp_kl(const void *a, const void *b)
{
	const struct kl *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

int dcpi_snapshot_prune_text(const struct dcpi_buf *in, const uint64_t *addrs, size_t naddrs,
			     struct dcpi_buf *out)
{
	const char *text = (const char *)in->data;
	size_t nl = 0, cap = 0, n = 0;
	struct kl *k = NULL;
	uint8_t *keep = NULL;
	int err = 0;

	for (size_t i = 0; i < in->len; i++)
		nl += text[i] == '\n';
	nl += in->len && text[in->len - 1] != '\n';
	cap = nl ? nl : 1;
	k = calloc(cap, sizeof(*k));
	keep = calloc(cap, 1);
	if (!k || !keep) {
		free(k), free(keep);
		return dcpi_error(ENOMEM, "out of memory");
	}
	/* the lines, each with its index; a line not of the form is kept */
	for (size_t off = 0, line = 0; off < in->len; line++) {
		const char *e = memchr(text + off, '\n', in->len - off);
		size_t len = e ? (size_t)(e - (text + off)) : in->len - off;

		if (parse_kl(text, off, len, &k[n]) == 0) {
			k[n].line = line;
			if (is_named(text, &k[n], "_text") || is_named(text, &k[n], "_stext") ||
			    is_named(text, &k[n], "_etext"))
				keep[line] = 1;
			n++;
		} else {
			keep[line] = 1;
		}
		off += len + 1;
	}
	qsort(k, n, sizeof(*k), cmp_kl);
	/* each sampled address: the symbols at the greatest address at or
	 * below it, and the next symbol of the same owner after them (which
	 * bounds the procedure's size for the readers) */
	for (size_t i = 0; i < naddrs && n; i++) {
		size_t lo = 0, hi = n, j;

		if (i && addrs[i] == addrs[i - 1])
			continue; /* sorted: a repeat keeps what its first kept */

		while (lo < hi) { /* the first line past addrs[i] */
			size_t m = lo + (hi - lo) / 2;

			if (k[m].addr <= addrs[i])
				lo = m + 1;
			else
				hi = m;
		}
		if (lo == 0)
			continue;
		j = lo - 1;
		while (j > 0 && k[j - 1].addr == k[lo - 1].addr)
			j--;
		for (size_t a = j; a < lo; a++) {
			keep[k[a].line] = 1;
			for (size_t b = lo; b < n; b++)
				if (same_owner(text, &k[a], &k[b])) {
					keep[k[b].line] = 1;
					break;
				}
		}
	}
	for (size_t off = 0, line = 0; off < in->len && !err; line++) {
		const char *e = memchr(text + off, '\n', in->len - off);
		size_t len = e ? (size_t)(e - (text + off)) : in->len - off;

		if (keep[line]) {
			err = dcpi_buf_put(out, text + off, len);
			if (!err)
				err = dcpi_buf_put(out, "\n", 1);
		}
		off += len + 1;
	}
	free(k);
	free(keep);
	return err;
}

static int add_addr(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 1024;
		uint64_t *p = realloc(*a, c * sizeof(*p));

		if (!p)
			return dcpi_error(ENOMEM, "out of memory");
		*a = p;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* A kernel address of an image's offset: vmlinux's are addresses already,
 * a module's are from its base. */
static int kernel_addr(const struct dcpi_profile *p, uint64_t off, uint64_t *a)
{
	if (p->kind == DCPI_IMAGE_KERNEL)
		*a = off;
	else if (p->kind == DCPI_IMAGE_MODULE)
		*a = p->text_start + off;
	else
		return 0;
	return 1;
}

static int is_stacks_file(const char *name)
{
	size_t n = strlen(name);

	return n >= 12 && !strcmp(name + n - 7, ".stacks") &&
	       (!strcmp(name, "epoch.stacks") || !strncmp(name, "epoch@", 6));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int dcpi_snapshot_sampled(const char *platdir, uint64_t **addrs, size_t *naddrs)
{
	char **paths = NULL, path[4200];
	size_t np = 0, n = 0, cap = 0;
	uint64_t *a = NULL, v;
	struct dirent *de;
	DIR *d = NULL;
	int err = dcpi_db_profiles(platdir, &paths, &np);

	for (size_t i = 0; i < np && !err; i++) {
		struct dcpi_profile p;

		dcpi_profile_init(&p);
		err = dcpi_profile_read(paths[i], &p);
		for (size_t r = 0; !err && r < p.nrows; r++)
			if (kernel_addr(&p, p.offsets[r], &v))
				err = add_addr(&a, &n, &cap, v);
		dcpi_profile_free(&p);
	}
	dcpi_db_names_free(paths, np);
	if (!err && !(d = opendir(platdir)))
		err = dcpi_error(errno, "%s: %s", platdir, strerror(errno));
	while (!err && (de = readdir(d))) {
		struct dcpi_stackset s;

		if (!is_stacks_file(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", platdir, de->d_name) >= (int)sizeof(path)) {
			err = dcpi_error(ENAMETOOLONG, "%s: path too long", platdir);
			break;
		}
		memset(&s, 0, sizeof(s));
		err = dcpi_stackset_read(path, &s);
		for (size_t f = 0; !err && f < s.nframes; f++)
			if (s.frames[f].image < s.nimages &&
			    kernel_addr(&s.images[s.frames[f].image], s.frames[f].off, &v))
				err = add_addr(&a, &n, &cap, v);
		dcpi_stackset_free(&s);
	}
	if (d)
		closedir(d);
	if (err) {
		free(a);
		return err;
	}
	if (n)
		qsort(a, n, sizeof(*a), cmp_u64);
	*addrs = a;
	*naddrs = n;
	return 0;
}

int dcpi_snapshot_prune(const char *platdir, const struct dcpi_buf *text, unsigned mode)
{
	struct dcpi_buf cut = DCPI_BUF_INIT, gz = DCPI_BUF_INIT;
	uint64_t *addrs = NULL;
	size_t n = 0;
	char to[4200];
	int err = dcpi_snapshot_sampled(platdir, &addrs, &n);

	if (!err)
		err = dcpi_snapshot_prune_text(text, addrs, n, &cut);
	free(addrs);
	if (!err)
		err = dcpi_buf_gzip(&cut, 1, &gz);
	dcpi_buf_release(&cut);
	if (!err && snprintf(to, sizeof(to), "%s/kallsyms.gz", platdir) >= (int)sizeof(to))
		err = dcpi_error(ENAMETOOLONG, "%s: path too long", platdir);
	if (!err)
		err = dcpi_file_write_atomic(to, gz.data, gz.len, mode);
	dcpi_buf_release(&gz);
	return err;
}
