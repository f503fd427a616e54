/* Profiles into a platform directory: their file names and the
 * read-add-write merge.  See dcpi_db_merge_profile() in dcpi/db.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/buf.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/profile.h"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int dcpi_db_profile_name(const struct dcpi_profile *img, char *out, size_t len)
{
	const char *base = strrchr(img->path, '/'), *host = img->platform ? img->platform : "";
	int64_t pid = img->pid;
	char name[101], suffix[DCPI_HOST_MAX + 32] = "";
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n = 0;
	int r;

	if (img->kind == DCPI_IMAGE_UNKNOWN) {
		if (pid < 0 && img->label)
			r = snprintf(out, len, "unknown@%s_L%08" PRIx64 ".prof", host,
				     fnv1a(0xcbf29ce484222325ull, img->label, strlen(img->label)) &
					     0xffffffffu);
		else if (pid < 0)
			r = snprintf(out, len, "unknown@%s.prof", host);
		else
			r = snprintf(out, len, "%s%" PRId64 "@0x%" PRIx64 ".prof", host, pid,
				     img->text_start);
		goto done;
	}
	base = base ? base + 1 : img->path;
	if (*base == '[') /* "[kernel.kallsyms]", "[vdso]" */
		base++;
	for (; *base && *base != ']' && n < sizeof(name) - 1; base++) {
		char ch = *base;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '+' || ch == '-'))
			ch = '_';
		if (n == 0 && ch == '.')
			ch = '_';
		name[n++] = ch;
	}
	name[n] = 0;
	h = fnv1a(h, img->path, strlen(img->path));
	h = fnv1a(h, &img->kind, sizeof(img->kind));
	if (img->build_id_len) {
		h = fnv1a(h, img->build_id, img->build_id_len);
	} else {
		h = fnv1a(h, &img->size, sizeof(img->size));
		h = fnv1a(h, &img->mtime, sizeof(img->mtime));
	}
	if (pid >= 0)
		snprintf(suffix, sizeof(suffix), "_%s%" PRId64, host, pid);
	if (img->label) /* one file per label value: "L" and the value's hash */
		snprintf(suffix + strlen(suffix), sizeof(suffix) - strlen(suffix), "_L%08" PRIx64,
			 fnv1a(0xcbf29ce484222325ull, img->label, strlen(img->label)) & 0xffffffffu);
	r = snprintf(out, len, "%s-%016" PRIx64 "%s.prof", n ? name : "image", h, suffix);
done:
	if (r < 0 || (size_t)r >= len)
		return dcpi_error(ENAMETOOLONG, "profile name too long");
	return 0;
}

/* Same image, and no event sampled at another period (counts at two
 * periods cannot be added: such a profile goes to another file). */
static int same_identity(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	for (uint32_t i = 0; i < b->nevents; i++) {
		int j = dcpi_profile_event_index(a, b->events[i].name);

		if (j >= 0 && a->events[j].period != b->events[i].period)
			return 0;
	}
	if (!a->label != !b->label || (a->label && strcmp(a->label, b->label)))
		return 0;
	return !strcmp(a->path, b->path) && a->kind == b->kind && a->pid == b->pid &&
	       a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) &&
	       (a->build_id_len || (a->size == b->size && a->mtime == b->mtime));
}

/* Something other than a regular file (a FIFO, a symlink, a device) sits
 * at path: never open it, set it aside.  */
static int not_a_file(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && !S_ISREG(st.st_mode);
}

/* p into path: at once (atomically), or into batch b. */
static int put(const char *path, const struct dcpi_profile *p, unsigned mode,
	       struct dcpi_file_batch *b)
{
	struct dcpi_buf buf = DCPI_BUF_INIT;
	int err;

	if (!b)
		return dcpi_profile_write(path, p, mode);
	err = dcpi_profile_encode(p, &buf);
	if (err)
		err = dcpi_error_prefix(err, "%s", path);
	else
		err = dcpi_file_batch_add(b, path, buf.data, buf.len, mode);
	dcpi_buf_release(&buf);
	return err;
}

/* Write p into dir/name, adding to what is there.  A file of another
 * identity under the same name (a hash collision) moves p to name~N.
 * With a batch, a path pending in it is -EAGAIN before anything is read. */
static int merge_into(const char *dir, struct dcpi_profile *p, unsigned mode,
		      struct dcpi_file_batch *b)
{
	char name[512], path[4096], aside[4200];
	struct dcpi_profile old;
	int err = dcpi_db_profile_name(p, name, sizeof(name));
	size_t nl = strlen(name);

	if (err)
		return err;
	/* a directory pooled by several hosts: each writes its own files */
	if (p->platform && *p->platform && dcpi_db_pooled(dir, p->platform) &&
	    p->kind != DCPI_IMAGE_UNKNOWN && nl > 5 &&
	    snprintf(name + nl - 5, sizeof(name) - (nl - 5), "@%s.prof", p->platform) >=
		    (int)(sizeof(name) - (nl - 5)))
		return dcpi_error(ENAMETOOLONG, "profile name too long");
	for (int attempt = 0; attempt < 8; attempt++) {
		if (attempt == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, name);
		else
			snprintf(path, sizeof(path), "%s/%.*s~%d.prof", dir,
				 (int)(strlen(name) - 5), name, attempt);
		if (b && dcpi_file_batch_has(b, path))
			return -EAGAIN;
		dcpi_profile_init(&old);
		err = not_a_file(path) ? -EBADMSG : dcpi_profile_read(path, &old);
		if (err == -ENOENT)
			return put(path, p, mode, b);
		if (err == -EBADMSG) { /* corrupt or no file: keep it for a human, start afresh */
			snprintf(aside, sizeof(aside), "%s.corrupt", path);
			rename(path, aside);
			return put(path, p, mode, b);
		}
		if (err)
			return err; /* unreadable for now (EMFILE, EIO): retry next merge */
		if (same_identity(&old, p)) {
			err = dcpi_profile_merge(&old, p);
			if (!err)
				err = put(path, &old, mode, b);
			dcpi_profile_free(&old);
			return err;
		}
		dcpi_profile_free(&old);
	}
	return dcpi_error(EEXIST, "%s/%s: too many profiles share this name", dir, name);
}

int dcpi_db_merge_profile(const char *dir, struct dcpi_profile *p, unsigned mode)
{
	return merge_into(dir, p, mode, NULL);
}

int dcpi_db_merge_profile_batch(const char *dir, struct dcpi_profile *p, unsigned mode,
				struct dcpi_file_batch *b)
{
	return merge_into(dir, p, mode, b);
}
