/* Kernel symbol snapshots in the database: see dcpi_snapshot_kernel
 * in dcpi/db.h.  The tools read them with zlib's gz* calls, which read
 * compressed and plain files alike. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/buf.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/snapshot.h"

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
	struct dcpi_buf raw = DCPI_BUF_INIT, gz = DCPI_BUF_INIT;
	char from[4096], to[4200];
	int err;

	snprintf(to, sizeof(to), "%s/kallsyms.gz", platdir);
	/* level 1: 40% of level 6's CPU (40 vs 100 ms for 5 MB here) for a
	   file a fifth larger, written at every start and every epoch */
	err = drop_padding(kallsyms, &raw);
	if (!err)
		err = dcpi_buf_gzip(&raw, 1, &gz);
	dcpi_buf_release(&raw);
	if (!err)
		err = dcpi_file_write_atomic(to, gz.data, gz.len, mode);
	dcpi_buf_release(&gz);
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
