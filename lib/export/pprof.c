/* pprof export: see dcpi/pprof.h.  Wire format: a field is a varint key
 * (number << 3 | type) then a varint (type 0) or a varint length and
 * bytes (type 2); repeated integers are packed into one type-2 field. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/hashtab.h>

#include "dcpi/addrs.h"
#include "dcpi/buf.h"
#include "dcpi/callgraph.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/pprof.h"
#include "dcpi/utf8.h"
#include "internal.h"

/* ---- interning: strings, mappings, functions, locations, samples ---------- */

struct ent {
	char *key;
	uint64_t id;            /* 1-based (strings: 0-based) */
	struct dcpi_buf msg;    /* the encoded message, when it has one */
	uint64_t values[DCPI_MAX_EVENTS];   /* samples */
	uint64_t start, limit, off;         /* mappings: the address range */
	int ranged;             /* 0: none yet; RANGE_SEG: a segment's; RANGE_SEEN:
				   the addresses seen (no segment known) */
};

enum { RANGE_SEG = 1, RANGE_SEEN = 2 };

struct table {
	htab_t index;
	struct ent **v;
	size_t n, cap;
};

static hashval_t ent_hash(const void *p)
{
	return htab_hash_string(((const struct ent *)p)->key);
}

static int ent_eq(const void *a, const void *b)
{
	return !strcmp(((const struct ent *)a)->key, ((const struct ent *)b)->key);
}

static int table_init(struct table *t)
{
	memset(t, 0, sizeof(*t));
	t->index = htab_create_alloc(256, ent_hash, ent_eq, NULL, calloc, free);
	return t->index ? 0 : dcpi_error(ENOMEM, "out of memory");
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i]->key);
		dcpi_buf_release(&t->v[i]->msg);
		free(t->v[i]);
	}
	free(t->v);
	if (t->index)
		htab_delete(t->index);
}

/* The entry of key; *fresh is set when it was just made (id = n, 1-based
 * unless base0). */
static int table_get(struct table *t, const char *key, int base0, struct ent **out, int *fresh)
{
	struct ent k = { .key = (char *)key }, *e;
	void **slot;
	int err;

	*fresh = 0;
	if ((*out = htab_find(t->index, &k)))
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->key = strdup(key)) ||
	    (err = DCPI_GROW(t->v, t->cap, t->n + 1, SIZE_MAX, "pprof entries")) ||
	    !(slot = htab_find_slot(t->index, &k, INSERT))) {
		if (e)
			free(e->key);
		free(e);
		return dcpi_error(ENOMEM, "out of memory");
	}
	e->id = t->n + (base0 ? 0 : 1);
	t->v[t->n++] = e;
	*slot = *out = e;
	*fresh = 1;
	return 0;
}

/* ---- wire format --------------------------------------------------------------- */

static int put_varint_field(struct dcpi_buf *b, unsigned field, uint64_t v)
{
	int err = dcpi_buf_put_varint(b, (uint64_t)field << 3);

	return err ? err : dcpi_buf_put_varint(b, v);
}

static int put_bytes_field(struct dcpi_buf *b, unsigned field, const void *p, size_t n)
{
	int err = dcpi_buf_put_varint(b, (uint64_t)field << 3 | 2);

	if (!err)
		err = dcpi_buf_put_varint(b, n);
	return err ? err : dcpi_buf_put(b, p, n);
}

static int put_packed(struct dcpi_buf *b, unsigned field, const uint64_t *v, size_t n)
{
	struct dcpi_buf p = DCPI_BUF_INIT;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = dcpi_buf_put_varint(&p, v[i]);
	if (!err)
		err = put_bytes_field(b, field, p.data, p.len);
	dcpi_buf_release(&p);
	return err;
}

/* A string of the string table (field 6): pprof's strings are UTF-8,
 * which protobuf's parsers check, and a path is bytes: each byte that
 * begins no well-formed sequence becomes U+FFFD, as in the JSON. */
static int put_string(struct dcpi_buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	struct dcpi_buf u = DCPI_BUF_INIT;
	size_t k;
	int err = 0;

	for (; *s && !err; s += k)
		if (!(k = dcpi_utf8_len(s)))
			err = dcpi_buf_put(&u, "\xef\xbf\xbd", 3), k = 1;
		else
			err = dcpi_buf_put(&u, s, k);
	if (!err)
		err = put_bytes_field(b, 6, u.data, u.len);
	dcpi_buf_release(&u);
	return err;
}

/* ---- the profile being built ---------------------------------------------------- */

struct pp {
	const struct dcpi_profset *set;
	struct table strings, mappings, functions, locations, samples;
	struct dcpi_buf key;
};

static int str_id(struct pp *p, const char *s, uint64_t *id)
{
	struct ent *e;
	int fresh, err = table_get(&p->strings, s, 1, &e, &fresh);

	*id = err ? 0 : e->id;
	return err;
}

static int value_type(struct pp *p, struct dcpi_buf *b, unsigned field, const char *type,
		      const char *unit)
{
	struct dcpi_buf m = DCPI_BUF_INIT;
	uint64_t t, u;
	int err = str_id(p, type, &t);

	if (!err)
		err = str_id(p, unit, &u);
	if (!err)
		err = put_varint_field(&m, 1, t);
	if (!err)
		err = put_varint_field(&m, 2, u);
	if (!err)
		err = put_bytes_field(b, field, m.data, m.len);
	dcpi_buf_release(&m);
	return err;
}

/* Widen mapping e's range to hold a: the segment that holds it (a second
 * segment only when it keeps the same address-to-offset delta, or pprof
 * would misplace one of them), else the addresses themselves (and for the
 * kernel and modules, whose addresses are their own, an address outside
 * their text too). */
static void widen(struct ent *e, uint64_t lo, uint64_t hi)
{
	e->start = !e->ranged || lo < e->start ? lo : e->start;
	e->limit = !e->ranged || hi > e->limit ? hi : e->limit;
}

static void map_range(struct ent *e, const struct dcpi_addr *a)
{
	uint32_t kind = a->e->prof.kind;

	if (kind == DCPI_IMAGE_KERNEL || kind == DCPI_IMAGE_MODULE) {
		if (a->has_map)
			widen(e, a->map_start, a->map_limit);
		widen(e, a->vaddr, a->vaddr < UINT64_MAX ? a->vaddr + 1 : a->vaddr);
		e->ranged = RANGE_SEG;
	} else if (a->has_map && e->ranged != RANGE_SEG) {
		e->start = a->map_start;
		e->limit = a->map_limit;
		e->off = a->map_offset;
		e->ranged = RANGE_SEG;
	} else if (a->has_map) {
		if (a->map_start - a->map_offset != e->start - e->off)
			return;
		if (a->map_start < e->start) {
			e->off -= e->start - a->map_start;
			e->start = a->map_start;
		}
		e->limit = a->map_limit > e->limit ? a->map_limit : e->limit;
	} else if (e->ranged != RANGE_SEG) {
		widen(e, a->vaddr, a->vaddr < UINT64_MAX ? a->vaddr + 1 : a->vaddr);
		e->ranged = RANGE_SEEN;
	}
}

static int mapping_of(struct pp *p, const struct dcpi_addr *a, uint64_t *id)
{
	const struct dcpi_profile *pr = &a->e->prof;
	char hex[2 * DCPI_BUILD_ID_MAX + 1];
	struct ent *e;
	uint64_t fn, bid;
	int fresh, err;

	dcpi_hex(pr->build_id, pr->build_id_len, hex);
	p->key.len = 0;
	if ((err = dcpi_buf_printf(&p->key, "%u\n%s\n%s", pr->kind, pr->path, hex)) ||
	    (err = table_get(&p->mappings, (char *)p->key.data, 0, &e, &fresh)))
		return err;
	*id = e->id;
	e->values[1] |= a->nframes > 0; /* has_filenames .. has_inline_frames, at the end */
	map_range(e, a);
	if (!fresh)
		return 0;
	e->values[0] = pr->kind != DCPI_IMAGE_UNKNOWN && pr->kind != DCPI_IMAGE_ANON;
	if ((err = str_id(p, pr->path, &fn)) || (err = str_id(p, hex, &bid)))
		return err;
	err = put_varint_field(&e->msg, 1, e->id);
	if (!err)
		err = put_varint_field(&e->msg, 5, fn);
	if (!err && *hex)
		err = put_varint_field(&e->msg, 6, bid);
	return err;
}

static int function_of(struct pp *p, const char *name, const char *file, uint64_t *id)
{
	struct ent *e;
	uint64_t n, f;
	int fresh, err;

	p->key.len = 0;
	if ((err = dcpi_buf_printf(&p->key, "%s\n%s", name, file)) ||
	    (err = table_get(&p->functions, (char *)p->key.data, 0, &e, &fresh)))
		return err;
	*id = e->id;
	if (!fresh)
		return 0;
	if ((err = str_id(p, name, &n)) || (err = str_id(p, file, &f)))
		return err;
	err = put_varint_field(&e->msg, 1, e->id);
	if (!err)
		err = put_varint_field(&e->msg, 2, n);
	if (!err)
		err = put_varint_field(&e->msg, 3, n);
	return err ? err : put_varint_field(&e->msg, 4, f);
}

static int put_line(struct pp *p, struct dcpi_buf *loc, const char *fn, const char *file,
		    unsigned line)
{
	struct dcpi_buf m = DCPI_BUF_INIT;
	uint64_t fid;
	int err = function_of(p, fn, file, &fid);

	if (!err)
		err = put_varint_field(&m, 1, fid);
	if (!err && line)
		err = put_varint_field(&m, 2, line);
	if (!err)
		err = put_bytes_field(loc, 4, m.data, m.len);
	dcpi_buf_release(&m);
	return err;
}

static int location_of(struct pp *p, const struct dcpi_addr *a, uint64_t *id)
{
	struct ent *e;
	uint64_t mid;
	int fresh, err = mapping_of(p, a, &mid);

	p->key.len = 0;
	if (err || (err = dcpi_buf_printf(&p->key, "%" PRIu64 "\n%" PRIx64 "\n%s", mid,
					  a->vaddr, a->procedure)) ||
	    (err = table_get(&p->locations, (char *)p->key.data, 0, &e, &fresh)))
		return err;
	*id = e->id;
	if (!fresh)
		return 0;
	err = put_varint_field(&e->msg, 1, e->id);
	if (!err)
		err = put_varint_field(&e->msg, 2, mid);
	if (!err)
		err = put_varint_field(&e->msg, 3, a->vaddr);
	/* innermost first; the outermost, the function the code is in, named
	   as dcpiprof names it (its symbol), not as DWARF does (an alias) */
	for (size_t k = 0; k < a->nframes && !err; k++)
		err = put_line(p, &e->msg, k + 1 == a->nframes ? a->procedure : a->frames[k].function,
			       a->frames[k].file, a->frames[k].line);
	if (!err && !a->nframes)
		err = put_line(p, &e->msg, a->procedure, "", 0);
	return err;
}

static int add_addr(void *arg, const struct dcpi_addr *a)
{
	struct pp *p = arg;
	const char *host = a->e->prof.platform ? a->e->prof.platform : "";
	struct ent *e;
	uint64_t loc, hid;
	int fresh, err = location_of(p, a, &loc);

	p->key.len = 0;
	if (err || (err = dcpi_buf_printf(&p->key, "%" PRIu64 "\n%s\n%" PRId64, loc, host,
					  a->e->prof.pid)) ||
	    (err = table_get(&p->samples, (char *)p->key.data, 0, &e, &fresh)))
		return err;
	if (fresh) { /* id: its location; msg: the host's string id and pid + 1, the labels */
		e->id = loc;
		if ((err = str_id(p, host, &hid)) || (err = dcpi_buf_put_varint(&e->msg, hid)) ||
		    (err = dcpi_buf_put_varint(&e->msg, (uint64_t)(a->e->prof.pid + 1))))
			return err;
	}
	for (unsigned c = 0; c < p->set->nevents; c++)
		e->values[c] += a->counts[c];
	return 0;
}

/* ---- encoding the profile ---------------------------------------------------------- */

static int label(struct pp *p, struct dcpi_buf *b, const char *key, uint64_t str, int64_t num)
{
	struct dcpi_buf m = DCPI_BUF_INIT;
	uint64_t k;
	int err = str_id(p, key, &k);

	if (!err)
		err = put_varint_field(&m, 1, k);
	if (!err)
		err = str ? put_varint_field(&m, 2, str) : put_varint_field(&m, 3, (uint64_t)num);
	if (!err)
		err = put_bytes_field(b, 3, m.data, m.len);
	dcpi_buf_release(&m);
	return err;
}

static int encode_sample(struct pp *p, struct dcpi_buf *out, const struct ent *e)
{
	struct dcpi_cursor c = { e->msg.data, e->msg.len, 0 };
	struct dcpi_buf m = DCPI_BUF_INIT;
	uint64_t host = 0, pid1 = 0, end1 = 0, locs[DCPI_STACK_MAX_FRAMES];
	size_t nlocs = 0;
	int err;

	dcpi_buf_get_varint(&c, &host);
	dcpi_buf_get_varint(&c, &pid1);
	/* a stack's: how its walk ended + 1, then its locations, leaf first */
	if (!dcpi_buf_get_varint(&c, &end1))
		while (nlocs < DCPI_STACK_MAX_FRAMES && !dcpi_buf_get_varint(&c, &locs[nlocs]))
			nlocs++;
	err = nlocs ? put_packed(&m, 1, locs, nlocs) : put_packed(&m, 1, &e->id, 1);
	if (!err)
		err = put_packed(&m, 2, e->values, p->set->nevents);
	if (!err)
		err = label(p, &m, "host", host, 0);
	if (!err && pid1)
		err = label(p, &m, "pid", 0, (int64_t)pid1 - 1);
	if (!err && end1 && end1 - 1 != DCPI_STACK_END_WHOLE && end1 - 1 != DCPI_STACK_END_KERNEL) {
		uint64_t why;

		if (!(err = str_id(p, dcpi_stack_end_name((unsigned)(end1 - 1)), &why)))
			err = label(p, &m, "unwind", why, 0);
	}
	if (!err)
		err = put_bytes_field(out, 2, m.data, m.len);
	dcpi_buf_release(&m);
	return err;
}

static int is_clock(const char *ev)
{
	return !strcmp(ev, "cpu-clock") || !strcmp(ev, "task-clock");
}

static int encode_header(struct pp *p, struct dcpi_buf *out)
{
	const struct dcpi_profset *s = p->set;
	int err = 0;

	for (unsigned c = 0; c < s->nevents && !err; c++)
		err = value_type(p, out, 1, s->events[c], "count");
	for (unsigned c = 0; c < s->nevents && !err; c++) {
		char text[160];
		uint64_t id;

		snprintf(text, sizeof(text), "%s: one sample every %" PRIu64 " %s", s->events[c],
			 s->periods[c], is_clock(s->events[c]) ? "ns" : "events");
		if (!(err = str_id(p, s->periods[c] ? text : "period differs between profiles",
				   &id)))
			err = put_varint_field(out, 13, id);
	}
	return err;
}

static int encode_tail(struct pp *p, struct dcpi_buf *out, const struct dcpi_pprof_opts *o)
{
	const struct dcpi_profset *s = p->set;
	int err = 0;

	if (o && o->time_nanos)
		err = put_varint_field(out, 9, (uint64_t)o->time_nanos);
	if (!err && o && o->duration_nanos)
		err = put_varint_field(out, 10, (uint64_t)o->duration_nanos);
	if (!err && s->nevents)
		err = value_type(p, out, 11, s->events[0],
				 is_clock(s->events[0]) ? "nanoseconds" : "count");
	if (!err && s->nevents)
		err = put_varint_field(out, 12, s->periods[0]);
	if (!err && s->nevents) { /* pprof shows the last type unless told */
		unsigned c = o && o->default_col < s->nevents ? o->default_col : 0;
		uint64_t id;

		if (!(err = str_id(p, s->events[c], &id)))
			err = put_varint_field(out, 14, id);
	}
	return err;
}

/* memory_start, memory_limit and file_offset (2-4) from the range;
 * has_functions (7) from the image's kind, has_filenames, has_line_numbers
 * and has_inline_frames (8-10) when any of its addresses had a line. */
static int finish_mappings(struct table *t)
{
	int err = 0;

	for (size_t i = 0; i < t->n && !err; i++) {
		struct ent *e = t->v[i];

		err = put_varint_field(&e->msg, 2, e->start);
		if (!err)
			err = put_varint_field(&e->msg, 3, e->limit);
		if (!err && e->off)
			err = put_varint_field(&e->msg, 4, e->off);
		for (unsigned f = 7; f <= 10 && !err; f++)
			if (f == 7 ? e->values[0] : e->values[1])
				err = put_varint_field(&e->msg, f, 1);
	}
	return err;
}

static int encode_table(struct dcpi_buf *out, unsigned field, const struct table *t)
{
	int err = 0;

	for (size_t i = 0; i < t->n && !err; i++)
		err = put_bytes_field(out, field, t->v[i]->msg.data, t->v[i]->msg.len);
	return err;
}

static int encode(struct pp *p, struct dcpi_buf *out, const struct dcpi_pprof_opts *o)
{
	int err = encode_header(p, out);

	for (size_t i = 0; i < p->samples.n && !err; i++)
		err = encode_sample(p, out, p->samples.v[i]);
	if (!err)
		err = finish_mappings(&p->mappings);
	if (!err)
		err = encode_table(out, 3, &p->mappings);
	if (!err)
		err = encode_table(out, 4, &p->locations);
	if (!err)
		err = encode_table(out, 5, &p->functions);
	if (!err)
		err = encode_tail(p, out, o);
	/* last: the tail and the labels above may still add strings */
	for (size_t i = 0; i < p->strings.n && !err; i++)
		err = put_string(out, p->strings.v[i]->key);
	return err;
}

/* p encoded, gzipped and written to path atomically. */
static int write_profile(struct pp *p, const char *path, const struct dcpi_pprof_opts *o)
{
	struct dcpi_buf raw = DCPI_BUF_INIT, gz = DCPI_BUF_INIT;
	int err = encode(p, &raw, o);

	if (!err && raw.len > DCPI_PPROF_MAX_BYTES)
		err = dcpi_error(EFBIG, "the pprof profile would exceed %zu bytes",
				 DCPI_PPROF_MAX_BYTES);
	if (!err)
		err = dcpi_buf_gzip(&raw, 6, &gz);
	if (!err)
		err = dcpi_file_write_atomic(path, gz.data, gz.len, o && o->mode ? o->mode : 0644);
	dcpi_buf_release(&raw);
	dcpi_buf_release(&gz);
	return err;
}

static int pp_init(struct pp *p, const struct dcpi_profset *set)
{
	struct ent *e;
	int err, fresh;

	memset(p, 0, sizeof(*p));
	p->set = set;
	if ((err = table_init(&p->strings)) || (err = table_init(&p->mappings)) ||
	    (err = table_init(&p->functions)) || (err = table_init(&p->locations)) ||
	    (err = table_init(&p->samples)))
		return err;
	/* string 0 is "" (the table was just made: strings are 0-based) */
	return table_get(&p->strings, "", 1, &e, &fresh);
}

static void pp_free(struct pp *p)
{
	table_free(&p->strings);
	table_free(&p->mappings);
	table_free(&p->functions);
	table_free(&p->locations);
	table_free(&p->samples);
	dcpi_buf_release(&p->key);
}

int dcpi_pprof_write(const char *path, const struct dcpi_profset *set,
		     const unsigned char *chosen, struct dcpi_objcache *objs,
		     const struct dcpi_pprof_opts *o)
{
	struct pp p;
	int err = pp_init(&p, set);

	if (!err)
		err = dcpi_addrs_walk(set, chosen, objs, add_addr, &p);
	if (!err)
		err = write_profile(&p, path, o);
	pp_free(&p);
	return err;
}

/* ---- call stacks ---------------------------------------------------------------- */

struct pp_stacks {
	struct pp *p;
	const char *label;
	struct dcpi_objcache *objs;
	char *proc;
	size_t pcap;
};

/* One stacks file's stacks as samples of their locations, leaf first. */
static int add_stacks(void *arg, const struct dcpi_stackset *s, const char *platdir)
{
	struct pp_stacks *x = arg;
	struct pp *p = x->p;
	struct dcpi_profset_entry *ents = calloc(s->nimages + 1, sizeof(*ents));
	uint64_t *memo_key = NULL, *memo_loc = NULL, locs[DCPI_STACK_MAX_FRAMES];
	size_t memo_cap = 64;
	int col[DCPI_MAX_EVENTS], err = 0;

	while (memo_cap < 2 * (s->nframes + 1))
		memo_cap *= 2;
	if (!ents || !(memo_key = calloc(memo_cap, sizeof(*memo_key))) ||
	    !(memo_loc = calloc(memo_cap, sizeof(*memo_loc))))
		err = dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nimages && !err; i++) { /* each image as a profile of no rows */
		ents[i].prof = s->images[i];
		ents[i].prof.platform = s->platform;
		ents[i].platdir = (char *)platdir;
	}
	for (unsigned e = 0; e < s->nevents; e++)
		col[e] = dcpi_profset_event(p->set, s->events[e]);
	for (size_t i = 0; i < s->nstacks && !err; i++) {
		const struct dcpi_stack *st = &s->stacks[i];
		const char *host = s->platform ? s->platform : "";
		struct ent *e;
		uint64_t hid;
		int fresh;

		if (!dcpi_callgraph_label_kept(s->labels[st->label], x->label))
			continue;
		for (uint32_t k = 0; k < st->nframes && !err; k++) {
			const struct dcpi_stack_frame *f = &s->frames[st->first + k];
			uint64_t key = f->image == DCPI_FRAME_UNKNOWN ? UINT64_MAX
								       : ((uint64_t)f->image << 44) ^ f->off;
			size_t h = dcpi_hash64(key) & (memo_cap - 1);
			struct dcpi_addr a;

			while (memo_loc[h] && memo_key[h] != key)
				h = (h + 1) & (memo_cap - 1);
			if (!memo_loc[h]) {
				static const struct dcpi_profset_entry none = {
					.prof = { .path = "[unknown]", .kind = DCPI_IMAGE_UNKNOWN, .pid = -1 } };

				if (f->image == DCPI_FRAME_UNKNOWN) {
					memset(&a, 0, sizeof(a));
					a.e = &none;
					a.procedure = "[unknown]";
				} else if ((err = dcpi_addrs_one(x->objs, &ents[f->image], f->off, &a,
								 &x->proc, &x->pcap))) {
					break;
				}
				if ((err = location_of(p, &a, &memo_loc[h])))
					break;
				memo_key[h] = key;
			}
			locs[k] = memo_loc[h];
		}
		p->key.len = 0;
		for (uint32_t k = 0; k < st->nframes && !err; k++)
			err = dcpi_buf_printf(&p->key, "%" PRIu64 ",", locs[k]);
		if (err || (err = dcpi_buf_printf(&p->key, "\n%s\n%u", host, st->end)) ||
		    (err = table_get(&p->samples, (char *)p->key.data, 0, &e, &fresh)))
			break;
		if (fresh) {
			e->id = locs[0];
			if ((err = str_id(p, host, &hid)) || (err = dcpi_buf_put_varint(&e->msg, hid)) ||
			    (err = dcpi_buf_put_varint(&e->msg, 0)) ||
			    (err = dcpi_buf_put_varint(&e->msg, (uint64_t)st->end + 1)))
				break;
			for (uint32_t k = 0; k < st->nframes && !err; k++)
				err = dcpi_buf_put_varint(&e->msg, locs[k]);
		}
		for (unsigned ev = 0; ev < s->nevents && !err; ev++)
			if (col[ev] >= 0)
				e->values[col[ev]] = dcpi_sat_add(e->values[col[ev]],
								  s->counts[i * s->nevents + ev]);
	}
	free(ents);
	free(memo_key);
	free(memo_loc);
	return err;
}

int dcpi_pprof_write_stacks(const char *path, const struct dcpi_profset *set, const char *label,
			    struct dcpi_objcache *objs, const struct dcpi_pprof_opts *o,
			    size_t *nbad)
{
	struct pp p;
	struct pp_stacks x = { &p, label, objs, NULL, 0 };
	char *first_bad = NULL;
	int err = pp_init(&p, set);

	if (!err)
		err = dcpi_callgraph_files(set, add_stacks, &x, nbad, &first_bad);
	if (!err)
		err = write_profile(&p, path, o);
	free(first_bad);
	free(x.proc);
	pp_free(&p);
	return err;
}
