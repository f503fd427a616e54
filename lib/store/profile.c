/* Profile files: encoding, decoding, merging.  See dcpi/profile.h and
 * man/dcpiformat.5 for the byte layout; the two must stay in step. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/profile.h"

#define PROFILE_MAGIC_LEN 8
#define PPM_MAX 1000000u
#define PROFILE_FILE_MAX DCPI_BUF_MAX

static uint64_t zigzag_encode(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t zigzag_decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* a * b into *r, false on overflow (git's st_mult, for size_t). */
static int size_mul(size_t a, size_t b, size_t *r)
{
	if (b && a > SIZE_MAX / b)
		return 0;
	*r = a * b;
	return 1;
}

void dcpi_profile_init(struct dcpi_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->pid = -1;
}

int dcpi_profile_label_value(const char *label, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = label; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(buf, len, "%.*s", (int)strcspn(p + klen + 1, ","), p + klen + 1);
			return 0;
		}
	}
	return -ENOENT;
}

void dcpi_profile_free(struct dcpi_profile *p)
{
	free(p->path);
	free(p->epoch);
	free(p->platform);
	free(p->label);
	for (uint32_t i = 0; i < p->nevents && i < DCPI_MAX_EVENTS; i++)
		free(p->events[i].name);
	free(p->offsets);
	free(p->counts);
	memset(p, 0, sizeof(*p));
}

int dcpi_profile_event_index(const struct dcpi_profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->nevents && i < DCPI_MAX_EVENTS; i++)
		if (p->events[i].name && !strcmp(p->events[i].name, name))
			return (int)i;
	return -1;
}

/* ---- encoding ------------------------------------------------------------ */

static int check_str(const char *what, const char *s)
{
	if (s && strlen(s) > DCPI_PROFILE_STR_MAX)
		return dcpi_error(EINVAL, "%s is longer than %d bytes", what, DCPI_PROFILE_STR_MAX);
	return 0;
}

/* The encoder refuses what the decoder would refuse, so that a profile
 * written by us can always be read back. */
static int check_header(const struct dcpi_profile *p)
{
	int err = check_str("path", p->path);

	if (!err)
		err = check_str("epoch", p->epoch);
	if (!err)
		err = check_str("platform", p->platform);
	if (err)
		return err;
	if (p->build_id_len > DCPI_BUILD_ID_MAX)
		return dcpi_error(EINVAL, "build-id of %u bytes exceeds %d", p->build_id_len,
				  DCPI_BUILD_ID_MAX);
	if (p->kind > DCPI_IMAGE_UNKNOWN)
		return dcpi_error(EINVAL, "unknown image kind %u", p->kind);
	if (p->nevents > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "%u events exceed the maximum of %d", p->nevents,
				  DCPI_MAX_EVENTS);
	for (uint32_t e = 0; e < p->nevents; e++) {
		err = check_str("event name", p->events[e].name);
		if (err)
			return err;
		if (p->events[e].monitored_ppm > PPM_MAX)
			return dcpi_error(EINVAL, "event %u: monitored %u ppm exceeds 100%%", e,
					  p->events[e].monitored_ppm);
	}
	return 0;
}

static int check_rows(const struct dcpi_profile *p)
{
	uint64_t sum[DCPI_MAX_EVENTS] = { 0 };

	for (size_t r = 0; r < p->nrows; r++) {
		if (r && p->offsets[r] <= p->offsets[r - 1])
			return dcpi_error(EINVAL, "row %zu: offset %#llx not above the previous row's",
					  r, (unsigned long long)p->offsets[r]);
		for (uint32_t e = 0; e < p->nevents; e++) {
			uint64_t c = p->counts[r * p->nevents + e];

			if (c > UINT64_MAX - sum[e])
				return dcpi_error(EOVERFLOW, "event %u: counts overflow 64 bits", e);
			sum[e] += c;
		}
	}
	for (uint32_t e = 0; e < p->nevents; e++)
		if (sum[e] != p->events[e].total)
			return dcpi_error(EINVAL, "event %u: total %llu is not the sum %llu of its rows",
					  e, (unsigned long long)p->events[e].total,
					  (unsigned long long)sum[e]);
	return 0;
}

static int put_header(struct dcpi_buf *b, const struct dcpi_profile *p)
{
	int err = dcpi_buf_put(b, DCPI_PROFILE_MAGIC, PROFILE_MAGIC_LEN);

	/* version 1 when there is no label: what older builds read */
	err = err ? err : dcpi_buf_put_varint(b, p->label ? DCPI_PROFILE_VERSION : 1);
	err = err ? err : dcpi_buf_put_str(b, p->path);
	err = err ? err : dcpi_buf_put_varint(b, p->build_id_len);
	err = err ? err : dcpi_buf_put(b, p->build_id, p->build_id_len);
	err = err ? err : dcpi_buf_put_varint(b, p->size);
	err = err ? err : dcpi_buf_put_varint(b, zigzag_encode(p->mtime));
	err = err ? err : dcpi_buf_put_str(b, p->epoch);
	err = err ? err : dcpi_buf_put_str(b, p->platform);
	err = err ? err : dcpi_buf_put_varint(b, p->kind);
	err = err ? err : dcpi_buf_put_varint(b, zigzag_encode(p->pid));
	if (p->label)
		err = err ? err : dcpi_buf_put_str(b, p->label);
	err = err ? err : dcpi_buf_put_varint(b, p->text_start);
	err = err ? err : dcpi_buf_put_varint(b, p->text_size);
	err = err ? err : dcpi_buf_put_varint(b, p->nevents);
	for (uint32_t e = 0; !err && e < p->nevents; e++) {
		const struct dcpi_profile_event *ev = &p->events[e];

		err = dcpi_buf_put_str(b, ev->name);
		err = err ? err : dcpi_buf_put_varint(b, ev->period);
		err = err ? err : dcpi_buf_put_varint(b, ev->total);
		err = err ? err : dcpi_buf_put_varint(b, ev->monitored_ppm);
	}
	return err;
}

static int put_rows(struct dcpi_buf *b, const struct dcpi_profile *p)
{
	int err = dcpi_buf_put_varint(b, p->nrows);

	for (size_t r = 0; !err && r < p->nrows; r++) {
		err = dcpi_buf_put_varint(b, r ? p->offsets[r] - p->offsets[r - 1] : p->offsets[0]);
		for (uint32_t e = 0; !err && e < p->nevents; e++)
			err = dcpi_buf_put_varint(b, p->counts[r * p->nevents + e]);
	}
	return err;
}

int dcpi_profile_encode(const struct dcpi_profile *p, struct dcpi_buf *out)
{
	size_t start = out->len;
	int err = check_header(p);

	err = err ? err : check_rows(p);
	err = err ? err : put_header(out, p);
	err = err ? err : put_rows(out, p);
	if (!err) {
		uLong crc = crc32(0L, out->data + start, 0);

		/* zlib's length is uInt: feed it in pieces a uInt can hold. */
		for (size_t off = start; off < out->len;) {
			size_t n = out->len - off > 0x40000000u ? 0x40000000u : out->len - off;

			crc = crc32(crc, out->data + off, (uInt)n);
			off += n;
		}
		err = dcpi_buf_put_u32le(out, (uint32_t)crc);
	}
	if (err)
		out->len = start; /* nothing half-appended */
	return err;
}

/* ---- decoding ------------------------------------------------------------ */

static int get_magic(struct dcpi_cursor *c)
{
	size_t n = c->len < PROFILE_MAGIC_LEN ? c->len : PROFILE_MAGIC_LEN;

	if (n == 0)
		return dcpi_error(EBADMSG, "truncated at byte 0: empty file");
	if (memcmp(c->data, DCPI_PROFILE_MAGIC, n))
		return dcpi_error(EBADMSG, "not a dcpi profile (bad magic at byte 0)");
	if (n < PROFILE_MAGIC_LEN)
		return dcpi_error(EBADMSG, "truncated at byte %zu, inside the magic", c->len);
	c->pos = PROFILE_MAGIC_LEN;
	return 0;
}

static int get_version(struct dcpi_cursor *c, uint64_t *v)
{
	size_t at = c->pos;
	int err = dcpi_buf_get_varint(c, v);

	if (err)
		return dcpi_error_prefix(err, "version");
	if (*v < 1 || *v > DCPI_PROFILE_VERSION)
		return dcpi_error(EBADMSG, "unsupported version %llu at byte %zu (this build reads 1 "
				  "to %d)", (unsigned long long)*v, at, DCPI_PROFILE_VERSION);
	return 0;
}

static int get_u64(struct dcpi_cursor *c, const char *what, uint64_t *v)
{
	int err = dcpi_buf_get_varint(c, v);

	return err ? dcpi_error_prefix(err, "%s", what) : 0;
}

/* A varint that must be at most max; at names the field's first byte. */
static int get_bounded(struct dcpi_cursor *c, const char *what, uint64_t max, uint64_t *v)
{
	size_t at = c->pos;
	int err = get_u64(c, what, v);

	if (!err && *v > max)
		err = dcpi_error(EBADMSG, "%s %llu at byte %zu exceeds %llu", what,
				 (unsigned long long)*v, at, (unsigned long long)max);
	return err;
}

static int get_string(struct dcpi_cursor *c, const char *what, char **s)
{
	int err = dcpi_buf_get_str(c, s, DCPI_PROFILE_STR_MAX);

	return err ? dcpi_error_prefix(err, "%s", what) : 0;
}

static int get_build_id(struct dcpi_cursor *c, struct dcpi_profile *p)
{
	const uint8_t *bytes;
	uint64_t n;
	int err = get_bounded(c, "build-id length", DCPI_BUILD_ID_MAX, &n);

	if (err)
		return err;
	err = dcpi_buf_get_bytes(c, &bytes, n);
	if (err)
		return dcpi_error_prefix(err, "build-id");
	memcpy(p->build_id, bytes, n);
	p->build_id_len = (uint32_t)n;
	return 0;
}

static int get_event(struct dcpi_cursor *c, struct dcpi_profile_event *ev)
{
	uint64_t ppm;
	int err = get_string(c, "event name", &ev->name);

	err = err ? err : get_u64(c, "event period", &ev->period);
	err = err ? err : get_u64(c, "event total", &ev->total);
	err = err ? err : get_bounded(c, "event monitored ppm", PPM_MAX, &ppm);
	if (!err)
		ev->monitored_ppm = (uint32_t)ppm;
	return err;
}

static int get_header(struct dcpi_cursor *c, struct dcpi_profile *p, uint64_t version)
{
	uint64_t v;
	int err = get_string(c, "path", &p->path);

	err = err ? err : get_build_id(c, p);
	err = err ? err : get_u64(c, "size", &p->size);
	err = err ? err : get_u64(c, "mtime", &v);
	if (err)
		return err;
	p->mtime = zigzag_decode(v);
	err = get_string(c, "epoch", &p->epoch);
	err = err ? err : get_string(c, "platform", &p->platform);
	err = err ? err : get_bounded(c, "image kind", DCPI_IMAGE_UNKNOWN, &v);
	if (err)
		return err;
	p->kind = (uint32_t)v;
	err = get_u64(c, "pid", &v);
	if (!err && version >= 2)
		err = get_string(c, "label", &p->label);
	err = err ? err : get_u64(c, "text start", &p->text_start);
	err = err ? err : get_u64(c, "text size", &p->text_size);
	if (err)
		return err;
	p->pid = zigzag_decode(v);
	err = get_bounded(c, "event count", DCPI_MAX_EVENTS, &v);
	/* nevents grows one event at a time so that free() sees only names
	 * that were set, whatever fails. */
	for (uint64_t e = 0; !err && e < v; e++) {
		p->nevents = (uint32_t)e + 1;
		err = get_event(c, &p->events[e]);
	}
	return err;
}

/* The row count is checked against the bytes left before anything is
 * allocated: each row takes at least one byte per varint, so a corrupt
 * count can never make us allocate more than a few times the input. */
static int alloc_rows(struct dcpi_cursor *c, struct dcpi_profile *p, uint64_t nrows)
{
	size_t left = c->len - c->pos, per_row = 1 + (size_t)p->nevents, ncounts, bytes;

	if (left < 4)
		return dcpi_error(EBADMSG, "truncated at byte %zu: no room for the rows and checksum",
				  c->len);
	if (nrows > (left - 4) / per_row)
		return dcpi_error(EBADMSG, "truncated or corrupt: %llu rows at byte %zu cannot fit "
				  "in the %zu bytes left", (unsigned long long)nrows, c->pos, left);
	if (!size_mul((size_t)nrows, p->nevents, &ncounts) ||
	    !size_mul(ncounts, sizeof(uint64_t), &bytes))
		return dcpi_error(EBADMSG, "row count %llu overflows", (unsigned long long)nrows);
	p->offsets = malloc(nrows ? (size_t)nrows * sizeof(uint64_t) : 1);
	p->counts = malloc(bytes ? bytes : 1);
	if (!p->offsets || !p->counts)
		return dcpi_error(ENOMEM, "out of memory for %llu rows", (unsigned long long)nrows);
	return 0;
}

static int get_offset(struct dcpi_cursor *c, size_t r, uint64_t prev, uint64_t *off)
{
	size_t at = c->pos;
	uint64_t delta;
	int err = get_u64(c, "row offset", &delta);

	if (err)
		return err;
	if (r && delta == 0)
		return dcpi_error(EBADMSG, "row %zu at byte %zu: offset not above the previous row's",
				  r, at);
	if (r && delta > UINT64_MAX - prev)
		return dcpi_error(EBADMSG, "row %zu at byte %zu: offset overflows 64 bits", r, at);
	*off = r ? prev + delta : delta;
	return 0;
}

static int get_rows(struct dcpi_cursor *c, struct dcpi_profile *p)
{
	uint64_t nrows;
	int err = get_u64(c, "row count", &nrows);

	err = err ? err : alloc_rows(c, p, nrows);
	if (err)
		return err;
	for (size_t r = 0; r < nrows; r++) {
		err = get_offset(c, r, r ? p->offsets[r - 1] : 0, &p->offsets[r]);
		for (uint32_t e = 0; !err && e < p->nevents; e++)
			err = get_u64(c, "row count value", &p->counts[r * p->nevents + e]);
		if (err)
			return err;
		p->nrows = r + 1;
	}
	return 0;
}

static int get_checksum(struct dcpi_cursor *c)
{
	size_t body = c->pos;
	uint32_t want;
	uLong got;
	int err = dcpi_buf_get_u32le(c, &want);

	if (err)
		return dcpi_error_prefix(err, "checksum");
	if (c->pos != c->len)
		return dcpi_error(EBADMSG, "%zu bytes of trailing garbage at byte %zu",
				  c->len - c->pos, c->pos);
	got = crc32(0L, c->data, 0);
	for (size_t off = 0; off < body;) {
		size_t n = body - off > 0x40000000u ? 0x40000000u : body - off;

		got = crc32(got, c->data + off, (uInt)n);
		off += n;
	}
	if ((uint32_t)got != want)
		return dcpi_error(EBADMSG, "checksum mismatch at byte %zu: stored %08x, computed %08x",
				  body, want, (uint32_t)got);
	return 0;
}

/* With a good checksum this catches a writer that produced inconsistent
 * totals: they are what the tools print as the profile's sample count. */
static int check_totals(const struct dcpi_profile *p)
{
	int err = check_rows(p);

	return err ? dcpi_error(EBADMSG, "corrupt: %s", dcpi_errmsg()) : 0;
}

int dcpi_profile_decode(const uint8_t *data, size_t len, struct dcpi_profile *p)
{
	struct dcpi_cursor c = { data, len, 0 };
	uint64_t version = 0;
	int err;

	dcpi_profile_init(p);
	if (len > PROFILE_FILE_MAX)
		return dcpi_error(EFBIG, "profile of %zu bytes is too large", len);
	err = get_magic(&c);
	err = err ? err : get_version(&c, &version);
	err = err ? err : get_header(&c, p, version);
	err = err ? err : get_rows(&c, p);
	err = err ? err : get_checksum(&c);
	err = err ? err : check_totals(p);
	if (err) {
		dcpi_profile_free(p);
		dcpi_profile_init(p);
	}
	return err;
}

/* ---- files --------------------------------------------------------------- */

int dcpi_profile_read(const char *path, struct dcpi_profile *p)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int err;

	dcpi_profile_init(p);
	err = dcpi_file_read(path, PROFILE_FILE_MAX, &data, &len);
	if (err)
		return err; /* dcpi_file_read names the file */
	err = dcpi_profile_decode(data, len, p);
	if (err)
		dcpi_error_prefix(err, "%s", path);
	free(data);
	return err;
}

int dcpi_profile_write(const char *path, const struct dcpi_profile *p, unsigned mode)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	int err = dcpi_profile_encode(p, &b);

	if (err)
		err = dcpi_error_prefix(err, "%s", path);
	else
		err = dcpi_file_write_atomic(path, b.data, b.len, mode);
	dcpi_buf_release(&b);
	return err;
}

/* ---- rows: set and merge ------------------------------------------------- */

struct row_ref {
	uint64_t offset;
	size_t index;
};

static int row_ref_cmp(const void *a, const void *b)
{
	const struct row_ref *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int add_count(uint64_t *dst, uint64_t v)
{
	if (v > UINT64_MAX - *dst)
		return dcpi_error(EOVERFLOW, "sample count overflows 64 bits");
	*dst += v;
	return 0;
}

/* Row and count arrays for n rows of nevents, or -ENOMEM/-EOVERFLOW. */
static int alloc_matrix(size_t n, uint32_t nevents, uint64_t **offsets, uint64_t **counts)
{
	size_t ncounts, obytes, cbytes;

	*offsets = *counts = NULL;
	if (!size_mul(n, nevents, &ncounts) || !size_mul(ncounts, sizeof(uint64_t), &cbytes) ||
	    !size_mul(n, sizeof(uint64_t), &obytes))
		return dcpi_error(EOVERFLOW, "%zu rows of %u events overflow", n, nevents);
	*offsets = malloc(obytes ? obytes : 1);
	*counts = calloc(1, cbytes ? cbytes : 1);
	if (!*offsets || !*counts) {
		free(*offsets);
		free(*counts);
		*offsets = *counts = NULL;
		return dcpi_error(ENOMEM, "out of memory for %zu rows", n);
	}
	return 0;
}

static void replace_rows(struct dcpi_profile *p, size_t n, uint64_t *offsets, uint64_t *counts)
{
	free(p->offsets);
	free(p->counts);
	p->offsets = offsets;
	p->counts = counts;
	p->nrows = n;
}

/* Merge the sorted refs into rows, adding duplicates; *out_n rows result. */
static int fold_sorted(const struct row_ref *refs, size_t n, uint32_t ne, const uint64_t *in,
		       uint64_t *offsets, uint64_t *counts, size_t *out_n)
{
	size_t m = 0;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		if (!m || offsets[m - 1] != refs[i].offset)
			offsets[m++] = refs[i].offset;
		for (uint32_t e = 0; !err && e < ne; e++)
			err = add_count(&counts[(m - 1) * ne + e], in[refs[i].index * ne + e]);
	}
	*out_n = m;
	return err;
}

static void recompute_totals(struct dcpi_profile *p)
{
	for (uint32_t e = 0; e < p->nevents; e++)
		p->events[e].total = 0;
	/* No overflow: every column sum was checked while folding. */
	for (size_t r = 0; r < p->nrows; r++)
		for (uint32_t e = 0; e < p->nevents; e++)
			p->events[e].total += p->counts[r * p->nevents + e];
}

static int column_sums_fit(const uint64_t *counts, size_t n, uint32_t ne)
{
	uint64_t sum[DCPI_MAX_EVENTS] = { 0 };
	int err = 0;

	for (size_t r = 0; !err && r < n; r++)
		for (uint32_t e = 0; !err && e < ne; e++)
			err = add_count(&sum[e], counts[r * ne + e]);
	return err;
}

int dcpi_profile_set_rows(struct dcpi_profile *p, size_t n, const uint64_t *offsets,
			  const uint64_t *counts)
{
	struct row_ref *refs = NULL;
	uint64_t *noff = NULL, *ncnt = NULL;
	size_t m = 0, rbytes;
	int err;

	if (p->nevents > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "%u events exceed the maximum of %d", p->nevents,
				  DCPI_MAX_EVENTS);
	err = alloc_matrix(n, p->nevents, &noff, &ncnt);
	if (err)
		goto out;
	if (!size_mul(n, sizeof(*refs), &rbytes) || !(refs = malloc(rbytes ? rbytes : 1))) {
		err = dcpi_error(ENOMEM, "out of memory sorting %zu rows", n);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		refs[i] = (struct row_ref){ offsets[i], i };
	qsort(refs, n, sizeof(*refs), row_ref_cmp);
	err = fold_sorted(refs, n, p->nevents, counts, noff, ncnt, &m);
	if (!err)
		err = column_sums_fit(ncnt, m, p->nevents);
	if (err)
		goto out;
	replace_rows(p, m, noff, ncnt);
	noff = ncnt = NULL;
	recompute_totals(p);
out:
	free(refs);
	free(noff);
	free(ncnt);
	return err;
}

/* map[e] = dst's index of src's event e, with the events dst would gain
 * numbered past dst->nevents; *ne is the merged event count. */
static int map_events(const struct dcpi_profile *dst, const struct dcpi_profile *src,
		      uint32_t map[DCPI_MAX_EVENTS], uint32_t *ne)
{
	uint32_t n = dst->nevents;

	if (dst->nevents > DCPI_MAX_EVENTS || src->nevents > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "more than %d events", DCPI_MAX_EVENTS);
	for (uint32_t e = 0; e < src->nevents; e++) {
		const struct dcpi_profile_event *ev = &src->events[e];
		int i = dcpi_profile_event_index(dst, ev->name ? ev->name : "");

		if (i >= 0 && dst->events[i].period != ev->period)
			return dcpi_error(EINVAL, "event %s: period %llu cannot merge with %llu",
					  ev->name, (unsigned long long)ev->period,
					  (unsigned long long)dst->events[i].period);
		if (i >= 0) {
			map[e] = (uint32_t)i;
			continue;
		}
		if (n == DCPI_MAX_EVENTS)
			return dcpi_error(E2BIG, "merging event %s would exceed %d events",
					  ev->name ? ev->name : "", DCPI_MAX_EVENTS);
		map[e] = n++;
	}
	*ne = n;
	return 0;
}

/* Copy row r of p (nevents columns, mapped through map or identity) into
 * out row o of ne columns, adding to what is there. */
static int add_row(const struct dcpi_profile *p, size_t r, const uint32_t *map, uint32_t ne,
		   uint64_t *out, size_t o)
{
	int err = 0;

	for (uint32_t e = 0; !err && e < p->nevents; e++)
		err = add_count(&out[o * ne + (map ? map[e] : e)], p->counts[r * p->nevents + e]);
	return err;
}

/* The two-pointer merge of two sorted row lists: O(n + m). */
static int merge_rows(const struct dcpi_profile *dst, const struct dcpi_profile *src,
		      const uint32_t *map, uint32_t ne, uint64_t *offsets, uint64_t *counts,
		      size_t *out_n)
{
	size_t i = 0, j = 0, o = 0;
	int err = 0;

	while (!err && (i < dst->nrows || j < src->nrows)) {
		int take_dst = j == src->nrows ||
			       (i < dst->nrows && dst->offsets[i] <= src->offsets[j]);
		int take_src = i == dst->nrows ||
			       (j < src->nrows && src->offsets[j] <= dst->offsets[i]);

		offsets[o] = take_dst ? dst->offsets[i] : src->offsets[j];
		if (take_dst)
			err = add_row(dst, i++, NULL, ne, counts, o);
		if (!err && take_src)
			err = add_row(src, j++, map, ne, counts, o);
		o++;
	}
	*out_n = o;
	return err;
}

static int merged_totals(const struct dcpi_profile *dst, const struct dcpi_profile *src,
			 const uint32_t *map, uint64_t totals[DCPI_MAX_EVENTS])
{
	int err = 0;

	memset(totals, 0, DCPI_MAX_EVENTS * sizeof(*totals));
	for (uint32_t e = 0; e < dst->nevents; e++)
		totals[e] = dst->events[e].total;
	for (uint32_t e = 0; !err && e < src->nevents; e++)
		err = add_count(&totals[map[e]], src->events[e].total);
	return err;
}

/* Everything that can fail is done before dst changes, so a failed merge
 * leaves dst as it was (and src may be dst itself). */
int dcpi_profile_merge(struct dcpi_profile *dst, const struct dcpi_profile *src)
{
	uint64_t *noff = NULL, *ncnt = NULL, totals[DCPI_MAX_EVENTS];
	uint32_t map[DCPI_MAX_EVENTS], ne = 0, old_ne = dst->nevents;
	char *names[DCPI_MAX_EVENTS] = { NULL };
	size_t n = 0;
	int err = map_events(dst, src, map, &ne);

	if (!err && dst->nrows > SIZE_MAX - src->nrows)
		err = dcpi_error(EOVERFLOW, "row counts overflow");
	err = err ? err : alloc_matrix(dst->nrows + src->nrows, ne, &noff, &ncnt);
	err = err ? err : merge_rows(dst, src, map, ne, noff, ncnt, &n);
	err = err ? err : merged_totals(dst, src, map, totals);
	for (uint32_t e = 0; !err && e < src->nevents; e++) {
		if (map[e] >= old_ne && !(names[map[e]] = strdup(src->events[e].name ?
								   src->events[e].name : "")))
			err = dcpi_error(ENOMEM, "out of memory");
	}
	if (err)
		goto out;
	for (uint32_t e = 0; e < src->nevents; e++) {
		struct dcpi_profile_event *d = &dst->events[map[e]];

		if (map[e] >= old_ne) {
			d->name = names[map[e]];
			names[map[e]] = NULL;
			d->period = src->events[e].period;
		}
		d->monitored_ppm = src->events[e].monitored_ppm;
	}
	dst->nevents = ne;
	for (uint32_t e = 0; e < ne; e++)
		dst->events[e].total = totals[e];
	replace_rows(dst, n, noff, ncnt);
	noff = ncnt = NULL;
out:
	for (uint32_t e = 0; e < DCPI_MAX_EVENTS; e++)
		free(names[e]);
	free(noff);
	free(ncnt);
	return err;
}

int dcpi_profile_same_image(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	return a->kind == b->kind && !strcmp(a->path, b->path) &&
	       a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) &&
	       (a->build_id_len || a->size == b->size);
}

void dcpi_profile_short_name(const struct dcpi_profile *p, char *buf, size_t len)
{
	const char *b = strrchr(p->path, '/');

	b = b ? b + 1 : p->path;
	if (p->kind == DCPI_IMAGE_KERNEL)
		snprintf(buf, len, "kernel");
	else if (b[0] == '[')
		snprintf(buf, len, "%.*s", (int)strcspn(b + 1, "]"), b + 1);
	else
		snprintf(buf, len, "%s", b);
}
