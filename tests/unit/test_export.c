/* The exporters, field by field: pprof (decoded here: samples, locations,
 * mappings, functions, lines, their ids and cross-references, the string
 * table), folded stacks (';' and control bytes in names, spaces kept) and
 * DOT (labels escaped, the outside and unknown nodes left out).
 *
 * The profiles are of tests/golden/prog, the golden tests' committed
 * program, so its symbols and lines are fixed; the truth about them comes
 * from nm, readelf's view of the ELF header (read here) and addr2line. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dcpi/buildid.h"
#include "dcpi/calc.h"
#include "dcpi/db.h"
#include "dcpi/dot.h"
#include "dcpi/error.h"
#include "dcpi/folded.h"
#include "dcpi/hex.h"
#include "dcpi/obj.h"
#include "dcpi/pprof.h"
#include "dcpi/profset.h"
#include "fixture.h"
#include "tap.h"

#define EPOCH "20240102T030405Z"
#define HOST "testhost"
#define WEIRD "/no/such/a;b c\x01\x1f\x7f.so"   /* no such file: no symbols */
#define WEIRD_FOLDED "a:b c???.so"              /* ';' -> ':', control bytes -> '?' */

static char prog[PATH_MAX];

/* ---- the fixture: prog's facts and a database of profiles of it --------- */

struct fn {
	const char *name;
	uint64_t vaddr, off;     /* the symbol's address, its file offset */
	char file[512];          /* addr2line's file and line of its first insn */
	unsigned line;
};
static struct fn fns[3] = { { .name = "hot" }, { .name = "warm" }, { .name = "cold" } };
static uint64_t seg_vaddr, seg_memsz, seg_off;  /* the mapping of prog's code */

/* prog's executable PT_LOAD segment, from its ELF header, with the segments
 * below it at the same address-to-offset delta (dcpi_symtab_segment). */
static int read_segment(void)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(prog, O_RDONLY), found = 0;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (unsigned i = 0; i < eh.e_phnum && !found; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * eh.e_phentsize)) ==
			    sizeof(ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			seg_vaddr = ph.p_vaddr;
			seg_memsz = ph.p_memsz;
			seg_off = ph.p_offset;
			found = 1;
		}
	/* down over the segments below it that the loader maps with it (the
	   same address-to-offset delta: the headers, read-only data) */
	for (unsigned i = 0; i < eh.e_phnum && found; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * eh.e_phentsize)) ==
			    sizeof(ph) && ph.p_type == PT_LOAD && ph.p_vaddr < seg_vaddr &&
		    ph.p_vaddr - ph.p_offset == seg_vaddr - seg_off && ph.p_offset <= seg_off) {
			seg_memsz += seg_vaddr - ph.p_vaddr;
			seg_vaddr = ph.p_vaddr;
			seg_off = ph.p_offset;
		}
	close(fd);
	return found ? 0 : -1;
}

/* addr2line's "FILE:LINE" of addr. */
static int addr2line(uint64_t addr, char *file, size_t len, unsigned *line)
{
	char cmd[PATH_MAX + 64], out[512], *colon;
	FILE *p;
	int ok = 0;

	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%" PRIx64, prog, addr);
	p = popen(cmd, "r");
	if (p && fgets(out, sizeof(out), p) && (colon = strrchr(out, ':'))) {
		*colon = 0;
		snprintf(file, len, "%s", out);
		*line = (unsigned)strtoul(colon + 1, NULL, 10);
		ok = *line > 0;
	}
	if (p)
		pclose(p);
	return ok ? 0 : -1;
}

static int learn_prog(void)
{
	uint64_t size;

	snprintf(prog, sizeof(prog), "%s/tests/golden/prog", fx_root);
	if (read_segment())
		return -1;
	for (size_t i = 0; i < 3; i++) {
		struct fn *f = &fns[i];

		if (fx_nm("nm", prog, f->name, &f->vaddr, &size) ||
		    f->vaddr < seg_vaddr || f->vaddr >= seg_vaddr + seg_memsz ||
		    addr2line(f->vaddr, f->file, sizeof(f->file), &f->line))
			return -1;
		f->off = f->vaddr - seg_vaddr + seg_off;
	}
	return 0;
}

/* Events of every profile: cycles (period 1000), instructions (2000). */
static const char *const ev_names[2] = { "cycles", "instructions" };

static int add_profile(const char *dir, const char *path, uint32_t kind, int64_t pid, size_t n,
		       const uint64_t *offs, const uint64_t *counts)
{
	struct dcpi_profile p;
	struct stat sb;
	int err;

	dcpi_profile_init(&p);
	p.path = strdup(path);
	p.epoch = strdup(EPOCH);
	p.platform = strdup(HOST);
	p.kind = kind;
	p.pid = pid;
	if (kind == DCPI_IMAGE_FILE && !stat(path, &sb)) {
		int len = dcpi_buildid_elf(path, p.build_id, sizeof(p.build_id));

		p.build_id_len = len > 0 ? (uint32_t)len : 0;
		p.size = (uint64_t)sb.st_size;
		p.mtime = sb.st_mtime;
	}
	p.nevents = 2;
	for (unsigned e = 0; e < 2; e++) {
		p.events[e].name = strdup(ev_names[e]);
		p.events[e].period = 1000 * (e + 1);
		p.events[e].monitored_ppm = 1000000;
	}
	err = dcpi_profile_set_rows(&p, n, offs, counts);
	if (!err)
		err = dcpi_db_merge_profile(dir, &p, 0600);
	dcpi_profile_free(&p);
	return err;
}

/* The database: prog (hot 5/7, warm 3/1, cold 2/0), prog of pid 4242 (hot
 * 1/3), WEIRD (0x1234: 4/6) and anonymous code (0x10: 3/0).  Totals 18/17. */
static int make_db(const char *root)
{
	char dir[PATH_MAX];
	uint64_t offs[3] = { fns[0].off, fns[1].off, fns[2].off };
	uint64_t counts[6] = { 5, 7, 3, 1, 2, 0 }, pid_counts[2] = { 1, 3 };
	uint64_t woff = 0x1234, wcounts[2] = { 4, 6 }, aoff = 0x10, acounts[2] = { 3, 0 };

	if (dcpi_db_path(dir, sizeof(dir), root, EPOCH, HOST, NULL) || dcpi_db_init(dir, 0700))
		return -1;
	if (add_profile(dir, prog, DCPI_IMAGE_FILE, -1, 3, offs, counts) ||
	    add_profile(dir, prog, DCPI_IMAGE_FILE, 4242, 1, offs, pid_counts) ||
	    add_profile(dir, WEIRD, DCPI_IMAGE_FILE, -1, 1, &woff, wcounts) ||
	    add_profile(dir, "//anon", DCPI_IMAGE_ANON, -1, 1, &aoff, acounts))
		return -1;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- a protocol buffer reader ------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
	int bad;                 /* malformed input seen */
};

struct pb_field {
	unsigned num, type;
	uint64_t v;              /* type 0 */
	const uint8_t *data;     /* type 2 */
	size_t len;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end)
			break;
		*v |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return 0;
	}
	b->bad = 1;
	return -1;
}

/* The next field, or 0 at the end (or on malformed input: b->bad). */
static int pb_next(struct pb *b, struct pb_field *f)
{
	uint64_t key;

	if (b->bad || b->p >= b->end || pb_varint(b, &key))
		return 0;
	f->num = (unsigned)(key >> 3);
	f->type = (unsigned)(key & 7);
	if (f->type == 0)
		return !pb_varint(b, &f->v);
	if (f->type == 2 && !pb_varint(b, &f->v) && f->v <= (uint64_t)(b->end - b->p)) {
		f->data = b->p;
		f->len = (size_t)f->v;
		b->p += f->len;
		return 1;
	}
	b->bad = 1;   /* the writer uses no other wire type */
	return 0;
}

static struct pb pb_of(const uint8_t *p, size_t n)
{
	return (struct pb){ p, p + n, 0 };
}

/* The packed varints of a field into v (at most max); their count. */
static size_t pb_packed(const struct pb_field *f, uint64_t *v, size_t max)
{
	struct pb b = pb_of(f->data, f->len);
	size_t n = 0;
	uint64_t x;

	while (b.p < b.end && !pb_varint(&b, &x))
		if (n < max)
			v[n++] = x;
	return n;
}

/* ---- pprof, decoded --------------------------------------------------------- */

#define MAXN 32

struct pp_mapping {
	uint64_t id, start, limit, off, file, build_id, has[11];
};
struct pp_line {
	uint64_t function_id, line;
};
struct pp_location {
	uint64_t id, mapping_id, address;
	struct pp_line lines[8];
	size_t nlines;
};
struct pp_function {
	uint64_t id, name, system_name, filename;
};
struct pp_label {
	uint64_t key, str, num;
	int has_str, has_num;
};
struct pp_sample {
	uint64_t loc[4], values[4];
	size_t nloc, nvalues;
	struct pp_label labels[4];
	size_t nlabels;
};
struct pp {
	uint64_t types[4][2];        /* sample_type: type, unit */
	size_t ntypes;
	struct pp_sample samples[MAXN];
	size_t nsamples;
	struct pp_mapping maps[MAXN];
	size_t nmaps;
	struct pp_location locs[MAXN];
	size_t nlocs;
	struct pp_function funcs[MAXN];
	size_t nfuncs;
	char *strs[128];
	size_t nstrs;
	uint64_t time_nanos, duration_nanos, period_type[2], period, comments[4],
		default_type;
	size_t ncomments;
	int bad, unknown;            /* malformed; a field the schema has not */
};

static void pp_free(struct pp *p)
{
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	p->nstrs = 0;
}

/* A message of varint fields: field k into v[k] (k < n), *seen bit k set
 * (seen may be NULL); any other field is one the schema has not. */
static void dec_varints(struct pp *p, const struct pb_field *f, uint64_t *v, unsigned n,
			unsigned *seen)
{
	struct pb b = pb_of(f->data, f->len);
	struct pb_field g;

	memset(v, 0, n * sizeof(*v));
	while (pb_next(&b, &g))
		if (g.type == 0 && g.num < n) {
			v[g.num] = g.v;
			if (seen)
				*seen |= 1u << g.num;
		} else {
			p->unknown = 1;
		}
	p->bad |= b.bad;
}

static void dec_mapping(struct pp *p, const struct pb_field *f)
{
	uint64_t v[11];

	dec_varints(p, f, v, 11, NULL);
	p->maps[p->nmaps++] = (struct pp_mapping){ v[1], v[2], v[3], v[4], v[5], v[6],
						   { [7] = v[7], v[8], v[9], v[10] } };
}

static void dec_function(struct pp *p, const struct pb_field *f)
{
	uint64_t v[5];

	dec_varints(p, f, v, 5, NULL);
	p->funcs[p->nfuncs++] = (struct pp_function){ v[1], v[2], v[3], v[4] };
}

static void dec_location(struct pp *p, const struct pb_field *f)
{
	struct pb b = pb_of(f->data, f->len);
	struct pp_location *l = &p->locs[p->nlocs++];
	struct pb_field g;
	uint64_t v[3];

	while (pb_next(&b, &g)) {
		if (g.num == 1)
			l->id = g.v;
		else if (g.num == 2)
			l->mapping_id = g.v;
		else if (g.num == 3)
			l->address = g.v;
		else if (g.num == 4 && g.type == 2 && l->nlines < 8) {
			dec_varints(p, &g, v, 3, NULL);
			l->lines[l->nlines++] = (struct pp_line){ v[1], v[2] };
		} else
			p->unknown = 1;
	}
	p->bad |= b.bad;
}

static void dec_sample(struct pp *p, const struct pb_field *f)
{
	struct pb b = pb_of(f->data, f->len);
	struct pp_sample *s = &p->samples[p->nsamples++];
	struct pb_field g;

	while (pb_next(&b, &g)) {
		if (g.num == 1 && g.type == 2)
			s->nloc = pb_packed(&g, s->loc, 4);
		else if (g.num == 2 && g.type == 2)
			s->nvalues = pb_packed(&g, s->values, 4);
		else if (g.num == 3 && g.type == 2 && s->nlabels < 4) {
			unsigned seen = 0;
			uint64_t v[4];

			dec_varints(p, &g, v, 4, &seen);
			s->labels[s->nlabels++] = (struct pp_label){ v[1], v[2], v[3], !!(seen & 4),
								     !!(seen & 8) };
		} else
			p->unknown = 1;
	}
	p->bad |= b.bad;
}

static int decode(const uint8_t *data, size_t n, struct pp *p)
{
	struct pb b = pb_of(data, n);
	struct pb_field f;
	uint64_t v[3];

	memset(p, 0, sizeof(*p));
	while (pb_next(&b, &f)) {
		if (f.type == 2 && f.num >= 2 && f.num <= 5 &&
		    (f.num == 2 ? p->nsamples : f.num == 3 ? p->nmaps : f.num == 4 ? p->nlocs
										    : p->nfuncs) >= MAXN) {
			p->bad = 1;
			break;
		}
		switch (f.num) {
		case 1:
			if (p->ntypes < 4) {
				dec_varints(p, &f, v, 3, NULL);
				memcpy(p->types[p->ntypes++], v + 1, sizeof(p->types[0]));
			}
			break;
		case 2: dec_sample(p, &f); break;
		case 3: dec_mapping(p, &f); break;
		case 4: dec_location(p, &f); break;
		case 5: dec_function(p, &f); break;
		case 6:
			if (p->nstrs < 128)
				p->strs[p->nstrs++] = strndup((const char *)f.data, f.len);
			break;
		case 9: p->time_nanos = f.v; break;
		case 10: p->duration_nanos = f.v; break;
		case 11:
			dec_varints(p, &f, v, 3, NULL);
			memcpy(p->period_type, v + 1, sizeof(p->period_type));
			break;
		case 12: p->period = f.v; break;
		case 13: if (p->ncomments < 4) p->comments[p->ncomments++] = f.v; break;
		case 14: p->default_type = f.v; break;
		default: p->unknown = 1;
		}
	}
	p->bad |= b.bad;
	return p->bad ? -1 : 0;
}

/* The string of index i, or "(out of range)". */
static const char *str(const struct pp *p, uint64_t i)
{
	return i < p->nstrs && p->strs[i] ? p->strs[i] : "(out of range)";
}

static const struct pp_mapping *mapping_named(const struct pp *p, const char *file)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (!strcmp(str(p, p->maps[i].file), file))
			return &p->maps[i];
	return NULL;
}

static const struct pp_location *location_id(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->nlocs; i++)
		if (p->locs[i].id == id)
			return &p->locs[i];
	return NULL;
}

static const struct pp_function *function_id(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->nfuncs; i++)
		if (p->funcs[i].id == id)
			return &p->funcs[i];
	return NULL;
}

static const struct pp_mapping *mapping_id(const struct pp *p, uint64_t id)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].id == id)
			return &p->maps[i];
	return NULL;
}

/* The location at address addr of mapping m, or NULL. */
static const struct pp_location *location_at(const struct pp *p, const struct pp_mapping *m,
					     uint64_t addr)
{
	for (size_t i = 0; i < p->nlocs; i++)
		if (m && p->locs[i].mapping_id == m->id && p->locs[i].address == addr)
			return &p->locs[i];
	return NULL;
}

/* A gzip file, inflated. */
static uint8_t *gunzip_file(const char *path, size_t *n)
{
	gzFile g = gzopen(path, "rb");
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	int r;

	*n = 0;
	if (!g || !out) {
		if (g)
			gzclose(g);
		free(out);
		return NULL;
	}
	while ((r = gzread(g, out + *n, (unsigned)(cap - *n))) > 0) {
		*n += (size_t)r;
		if (*n == cap) {
			uint8_t *bigger = realloc(out, cap *= 2);

			if (!bigger)
				break;
			out = bigger;
		}
	}
	gzclose(g);
	return out;
}

/* Ids 1..n, each once, in the table's order (the writer numbers them so). */
static int ids_dense(const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] != i + 1)
			return 0;
	return 1;
}

static void check_pprof_tables(const struct pp *p)
{
	uint64_t ids[MAXN];
	int refs_ok = 1, strs_ok = 1;

	T_OK(!p->bad, "the profile decodes as protocol buffer fields");
	T_OK(!p->unknown, "no field the perftools.profiles schema does not have");
	T_OK(p->nstrs > 0 && !strcmp(p->strs[0], ""), "string 0 is \"\"");
	for (size_t i = 1; i < p->nstrs; i++)
		for (size_t k = 0; k < i; k++)
			strs_ok &= strcmp(p->strs[i], p->strs[k]) != 0;
	T_OK(strs_ok, "every string is in the table once");

	for (size_t i = 0; i < p->nmaps; i++)
		ids[i] = p->maps[i].id;
	T_OK(ids_dense(ids, p->nmaps), "mapping ids are 1..%zu", p->nmaps);
	for (size_t i = 0; i < p->nlocs; i++)
		ids[i] = p->locs[i].id;
	T_OK(ids_dense(ids, p->nlocs), "location ids are 1..%zu", p->nlocs);
	for (size_t i = 0; i < p->nfuncs; i++)
		ids[i] = p->funcs[i].id;
	T_OK(ids_dense(ids, p->nfuncs), "function ids are 1..%zu", p->nfuncs);

	for (size_t i = 0; i < p->nlocs; i++) {
		const struct pp_location *l = &p->locs[i];
		const struct pp_mapping *m = mapping_id(p, l->mapping_id);

		refs_ok &= m && l->address >= m->start && l->address < m->limit && l->nlines > 0;
		for (size_t k = 0; k < l->nlines; k++)
			refs_ok &= function_id(p, l->lines[k].function_id) != NULL;
	}
	T_OK(refs_ok, "every location names a mapping holding its address, and lines of "
	     "existing functions");
	refs_ok = 1;
	for (size_t i = 0; i < p->nsamples; i++)
		refs_ok &= p->samples[i].nloc == 1 && location_id(p, p->samples[i].loc[0]) &&
			   p->samples[i].nvalues == 2;
	T_OK(refs_ok, "every sample has one existing location and a value per event");
	strs_ok = 1;
	for (size_t i = 0; i < p->nfuncs; i++)
		strs_ok &= p->funcs[i].name < p->nstrs && p->funcs[i].system_name < p->nstrs &&
			   p->funcs[i].filename < p->nstrs;
	for (size_t i = 0; i < p->nmaps; i++)
		strs_ok &= p->maps[i].file < p->nstrs && p->maps[i].build_id < p->nstrs;
	T_OK(strs_ok, "every string index of functions and mappings is in the table");
}

static void check_pprof_header(const struct pp *p)
{
	T_EQ(p->ntypes, 2, "a sample type per event");
	T_OK(p->ntypes == 2 && !strcmp(str(p, p->types[0][0]), "cycles") &&
	     !strcmp(str(p, p->types[0][1]), "count") &&
	     !strcmp(str(p, p->types[1][0]), "instructions") &&
	     !strcmp(str(p, p->types[1][1]), "count"),
	     "sample types: cycles/count, instructions/count");
	T_STREQ(str(p, p->period_type[0]), "cycles", "period type: the first event");
	T_STREQ(str(p, p->period_type[1]), "count", "period unit: count (not a clock event)");
	T_EQ(p->period, 1000, "period: the first event's");
	T_EQ(p->time_nanos, 1700000000000000000ull, "time_nanos as given");
	T_EQ(p->duration_nanos, 60000000000ull, "duration_nanos as given");
	T_STREQ(str(p, p->default_type), "instructions", "default sample type: the column asked");
	T_OK(p->ncomments == 2 &&
	     !strcmp(str(p, p->comments[0]), "cycles: one sample every 1000 events") &&
	     !strcmp(str(p, p->comments[1]), "instructions: one sample every 2000 events"),
	     "a comment per event gives its period");
}

static void check_pprof_prog(const struct pp *p)
{
	const struct pp_mapping *m = mapping_named(p, prog);
	uint8_t id[DCPI_BUILD_ID_MAX];
	char hex[2 * DCPI_BUILD_ID_MAX + 1];
	int n = dcpi_buildid_elf(prog, id, sizeof(id));

	dcpi_hex(id, n > 0 ? (size_t)n : 0, hex);
	T_OK(m != NULL, "a mapping names prog's path");
	if (!m)
		return;
	T_STREQ(str(p, m->build_id), hex, "prog's mapping: its build-id in hex");
	T_EQ(m->start, seg_vaddr, "prog's mapping starts at its code's segment's p_vaddr");
	T_EQ(m->limit, seg_vaddr + seg_memsz, "prog's mapping ends at p_vaddr + p_memsz");
	T_EQ(m->off, seg_off, "prog's mapping: file_offset = p_offset");
	T_OK(fns[0].off != fns[0].vaddr, "(prog's file offsets are not its addresses)");
	T_OK(m->has[7] && m->has[8] && m->has[9] && m->has[10],
	     "prog's mapping has functions, file names, line numbers, inline frames");
	for (size_t i = 0; i < 3; i++) {
		const struct fn *f = &fns[i];
		const struct pp_location *l = location_at(p, m, f->vaddr);
		const struct pp_function *fn = l && l->nlines ? function_id(p, l->lines[0].function_id)
							       : NULL;

		T_OK(l != NULL, "%s: a location at its address 0x%" PRIx64 " in prog's mapping",
		     f->name, f->vaddr);
		if (!l || !fn) {
			T_OK(0, "%s: its location has a line of an existing function", f->name);
			continue;
		}
		T_EQ(l->nlines, 1, "%s: one line (nothing inlined)", f->name);
		T_EQ(l->lines[0].line, f->line, "%s: line %u, as addr2line says", f->name, f->line);
		T_STREQ(str(p, fn->name), f->name, "%s: the function's name", f->name);
		T_STREQ(str(p, fn->system_name), f->name, "%s: the function's system name", f->name);
		T_STREQ(base_name(str(p, fn->filename)), base_name(f->file),
			"%s: the function's file", f->name);
	}
}

/* The sample of location l with (pid label: pid, or none when pid < 0). */
static const struct pp_sample *sample_of(const struct pp *p, const struct pp_location *l,
					 int64_t pid)
{
	for (size_t i = 0; l && i < p->nsamples; i++) {
		const struct pp_sample *s = &p->samples[i];
		int64_t got = -1;

		if (s->loc[0] != l->id)
			continue;
		for (size_t k = 0; k < s->nlabels; k++)
			if (!strcmp(str(p, s->labels[k].key), "pid") && s->labels[k].has_num)
				got = (int64_t)s->labels[k].num;
		if (got == pid)
			return s;
	}
	return NULL;
}

static void check_sample(const struct pp *p, const char *what, const struct pp_location *l,
			 int64_t pid, uint64_t v0, uint64_t v1)
{
	const struct pp_sample *s = sample_of(p, l, pid);
	int host = 0, pids = 0;

	T_OK(s && s->values[0] == v0 && s->values[1] == v1, "%s: a sample of %" PRIu64 "/%" PRIu64
	     "%s", what, v0, v1, pid >= 0 ? " labelled with its pid" : "");
	for (size_t k = 0; s && k < s->nlabels; k++) {
		host += !strcmp(str(p, s->labels[k].key), "host") && s->labels[k].has_str &&
			!strcmp(str(p, s->labels[k].str), HOST);
		pids += !strcmp(str(p, s->labels[k].key), "pid");
	}
	T_OK(s && host == 1 && pids == (pid >= 0) && s->nlabels == 1u + (pid >= 0),
	     "%s: labels host=%s%s and no others", what, HOST, pid >= 0 ? " and pid" : "");
}

static void check_pprof_samples(const struct pp *p)
{
	const struct pp_mapping *m = mapping_named(p, prog), *w = mapping_named(p, WEIRD),
				*a = mapping_named(p, "//anon");
	uint64_t sum[2] = { 0, 0 };

	T_EQ(p->nmaps, 3, "three mappings: prog, the missing file, the anonymous code");
	T_EQ(p->nlocs, 5, "five locations: hot, warm, cold, one in each other image");
	T_EQ(p->nfuncs, 5, "five functions");
	T_EQ(p->nsamples, 6, "six samples: one per (location, host, process)");
	for (size_t i = 0; i < p->nsamples; i++)
		for (int e = 0; e < 2; e++)
			sum[e] += p->samples[i].values[e];
	T_OK(sum[0] == 18 && sum[1] == 17, "the values add up to the totals 18/17 (got %" PRIu64
	     "/%" PRIu64 ")", sum[0], sum[1]);
	check_sample(p, "hot", location_at(p, m, fns[0].vaddr), -1, 5, 7);
	check_sample(p, "hot of pid 4242", location_at(p, m, fns[0].vaddr), 4242, 1, 3);
	check_sample(p, "warm", location_at(p, m, fns[1].vaddr), -1, 3, 1);
	check_sample(p, "cold", location_at(p, m, fns[2].vaddr), -1, 2, 0);

	T_OK(w && !w->build_id && w->has[7] && !w->has[8] && !w->has[9] && !w->has[10],
	     "the missing file's mapping: no build-id, functions but no lines");
	T_OK(w && w->start <= 0x1234 && w->limit > 0x1234,
	     "the missing file's mapping covers the address sampled");
	T_OK(a && !a->has[7] && !a->has[8], "the anonymous code's mapping: no functions, no lines");
	for (int k = 0; k < 2; k++) {
		const struct pp_mapping *x = k ? a : w;
		const struct pp_location *l = NULL;
		const struct pp_function *fn;

		for (size_t i = 0; x && i < p->nlocs; i++)
			if (p->locs[i].mapping_id == x->id)
				l = &p->locs[i];
		fn = l && l->nlines == 1 ? function_id(p, l->lines[0].function_id) : NULL;
		T_OK(fn && l->lines[0].line == 0 && !strcmp(str(p, fn->filename), "") &&
		     str(p, fn->name)[0] == '[',
		     "%s: one line 0 naming its procedure, no file", k ? "anon" : "missing file");
		check_sample(p, k ? "anon" : "missing file", l, -1, k ? 3 : 4, k ? 0 : 6);
	}
}

static void test_pprof(const char *root)
{
	struct dcpi_profset set;
	struct dcpi_objcache *objs = dcpi_objcache_new(NULL);
	struct dcpi_pprof_opts o = { 1700000000000000000ll, 60000000000ll, 0600, 1 };
	const char *out = fx_path("p.pb.gz");
	struct pp p = { .nstrs = 0 };
	struct stat sb;
	uint8_t *raw;
	size_t n;
	int err = dcpi_profset_load(root, "latest", HOST, &set);

	T_EQ(err, 0, "the profiles load%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	if (err || !objs) {
		dcpi_objcache_free(objs);
		return;
	}
	err = dcpi_pprof_write(out, &set, NULL, objs, &o);
	T_EQ(err, 0, "pprof written%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	T_OK(!stat(out, &sb) && (sb.st_mode & 0777) == 0600, "with the mode asked");
	raw = gunzip_file(out, &n);
	T_OK(raw && n > 0, "gzipped");
	if (raw && !decode(raw, n, &p)) {
		check_pprof_tables(&p);
		check_pprof_header(&p);
		check_pprof_prog(&p);
		check_pprof_samples(&p);
	} else {
		T_OK(0, "the profile decodes");
	}
	pp_free(&p);
	free(raw);

	/* chosen: only the per-process profile */
	{
		unsigned char *chosen = calloc(set.n ? set.n : 1, 1);

		for (size_t i = 0; chosen && i < set.n; i++)
			chosen[i] = set.v[i].prof.pid == 4242;
		err = chosen ? dcpi_pprof_write(out, &set, chosen, objs, NULL) : -ENOMEM;
		raw = err ? NULL : gunzip_file(out, &n);
		T_OK(raw && !decode(raw, n, &p) && p.nsamples == 1 && p.nmaps == 1 && p.nlocs == 1 &&
		     p.nfuncs == 1 && p.samples[0].values[0] == 1 && p.samples[0].values[1] == 3,
		     "only the chosen profile: one sample, location, mapping and function");
		T_STREQ(raw ? str(&p, p.default_type) : NULL, "cycles",
			"no options: the default sample type is the first event");
		T_EQ(raw ? p.time_nanos + p.duration_nanos : 1, 0, "no options: no time, no duration");
		pp_free(&p);
		free(raw);
		free(chosen);
	}
	err = dcpi_pprof_write(fx_path("no/such/dir/p.pb.gz"), &set, NULL, objs, NULL);
	T_OK(err < 0 && strstr(dcpi_errmsg(), "no/such/dir"),
	     "an unwritable path: refused with a message naming it (%s)", err ? dcpi_errmsg() : "");
	dcpi_objcache_free(objs);
	dcpi_profset_free(&set);
}

/* ---- folded stacks ---------------------------------------------------------- */

static char *folded(const struct dcpi_profset *set, struct dcpi_objcache *objs, int col)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return NULL;
	err = dcpi_folded_write(f, set, NULL, objs, col);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void test_folded(const char *root)
{
	struct dcpi_profset set;
	struct dcpi_objcache *objs = dcpi_objcache_new(NULL);
	char want[2048];
	char *got;
	int err = dcpi_profset_load(root, "latest", HOST, &set);

	if (err || !objs) {
		T_OK(0, "the profiles load: %s", err ? dcpi_errmsg() : "no memory");
		dcpi_objcache_free(objs);
		return;
	}
	/* sorted; hot's samples of pid 4242 summed with the others; the
	   missing file and the anonymous code are named by their image */
	snprintf(want, sizeof(want),
		 WEIRD_FOLDED ";[" WEIRD_FOLDED "] 4\n"
		 "anon;[anon] 3\n"
		 "prog;cold;%s:%u 2\n"
		 "prog;hot;%s:%u 6\n"
		 "prog;warm;%s:%u 3\n",
		 base_name(fns[2].file), fns[2].line, base_name(fns[0].file), fns[0].line,
		 base_name(fns[1].file), fns[1].line);
	got = folded(&set, objs, 0);
	T_STREQ(got, want, "cycles: one line per stack, ';' and control bytes replaced, "
		"spaces kept, counts summed over processes");
	free(got);
	snprintf(want, sizeof(want),
		 WEIRD_FOLDED ";[" WEIRD_FOLDED "] 6\n"
		 "prog;hot;%s:%u 10\n"
		 "prog;warm;%s:%u 1\n",
		 base_name(fns[0].file), fns[0].line, base_name(fns[1].file), fns[1].line);
	got = folded(&set, objs, 1);
	T_STREQ(got, want, "instructions: stacks without samples of the event left out");
	free(got);
	{
		FILE *ro = fopen("/dev/null", "r");

		err = ro ? dcpi_folded_write(ro, &set, NULL, objs, 0) : 0;
		T_EQ(err, -EIO, "a stream that cannot be written: -EIO");
		if (ro)
			fclose(ro);
	}
	dcpi_objcache_free(objs);
	dcpi_profset_free(&set);
}

/* A program built here from sub/w.c by its absolute path: DWARF names the
 * file with its directories, and the folded line names only w.c. */
static void test_folded_file_name(void)
{
	char root[PATH_MAX], dir[PATH_MAX], file[512], *got;
	const char *bin = fx_path("w");
	struct dcpi_profset set;
	struct dcpi_objcache *objs;
	uint64_t vaddr, size, off, count[2] = { 9, 0 };
	unsigned line;

	fx_sh("mkdir -p '%s'", fx_path("sub"));   /* (prog's facts are not needed after this) */
	fx_sh("printf 'int wfunc(int x)\\n{\\n\\treturn x * 3;\\n}\\nint main(void)\\n{\\n"
	      "\\treturn wfunc(2);\\n}\\n' > '%s'", fx_path("sub/w.c"));
	if (fx_sh("cc -g -O1 -fno-inline -fno-pie -no-pie -o '%s' '%s' 2>/dev/null", bin,
		  fx_path("sub/w.c")) ||
	    fx_nm("nm", bin, "wfunc", &vaddr, &size)) {
		T_SKIP("no C compiler building a program here");
		return;
	}
	snprintf(prog, sizeof(prog), "%s", bin);   /* for read_segment and addr2line */
	if (read_segment() || vaddr < seg_vaddr || vaddr >= seg_vaddr + seg_memsz) {
		T_OK(0, "folded: wfunc in the program's code segment");
		return;
	}
	off = vaddr - seg_vaddr + seg_off;
	snprintf(root, sizeof(root), "%s", fx_path("wdb"));
	if (addr2line(vaddr, file, sizeof(file), &line) || !strchr(file, '/') ||
	    dcpi_db_path(dir, sizeof(dir), root, EPOCH, HOST, NULL) || dcpi_db_init(dir, 0700) ||
	    add_profile(dir, bin, DCPI_IMAGE_FILE, -1, 1, &off, count) ||
	    dcpi_profset_load(root, "latest", HOST, &set)) {
		T_OK(0, "folded: the program's profile (%s)", dcpi_errmsg());
		return;
	}
	objs = dcpi_objcache_new(NULL);
	got = objs ? folded(&set, objs, 0) : NULL;
	snprintf(file, sizeof(file), "w;wfunc;w.c:%u 9\n", line);
	T_STREQ(got, file, "folded: the source file's base name, not its directories");
	free(got);
	dcpi_objcache_free(objs);
	dcpi_profset_free(&set);
}

/* ---- DOT ---------------------------------------------------------------------- */

/* Three blocks: B0 (entered from outside) -> B1 (fall) and B2 (jump); B1
 * -> B2 (fall) and to the unknown node; B2 exits. */
static char *dot_of(double cutoff, const uint64_t *samples, const char *title)
{
	struct dcpi_cfg_block blocks[3] = {
		{ .start = 0x1000, .end = 0x1010, .first = 0, .ninsns = 4 },
		{ .start = 0x1010, .end = 0x1020, .first = 4, .ninsns = 3 },
		{ .start = 0x1020, .end = 0x1028, .first = 7, .ninsns = 2 },
	};
	struct dcpi_cfg_edge edges[6] = {
		{ 0, 1, DCPI_EDGE_FALL }, { 0, 2, DCPI_EDGE_JUMP }, { 1, 2, DCPI_EDGE_FALL },
		{ 1, 3, DCPI_EDGE_UNKNOWN }, { 2, 4, DCPI_EDGE_EXIT }, { 4, 0, DCPI_EDGE_ENTRY },
	};
	struct dcpi_calc_block cb[3] = {
		{ .freq = 100, .conf = 'H', .digits = 3, .time = 60, .best_cpi = 0.5, .cpi = 1.25 },
		{ .freq = 40, .conf = 'M', .digits = 2, .time = 30, .best_cpi = 0.75, .cpi = -1 },
		{ .freq = 100, .conf = 'L', .digits = 1, .time = 10, .best_cpi = 1, .cpi = 2 },
	};
	struct dcpi_calc_edge ce[6] = { { 40, 0.4, 'H', 3 }, { 60, 0.6, 'H', 3 }, { 30, 0.75, 'M', 2 },
					{ 10, 0.25, 'M', 2 }, { 100, 1, 'L', 1 }, { 100, 1, 'H', 3 } };
	struct dcpi_calc c;
	static const char *const src[3] = { "13: for (i = 0; i < n; i++)\n14: acc += \"q\" \\ x",
					    NULL, "lib.h:7: return *p;" };
	struct dcpi_dot_opts o = { title, samples, cutoff, src };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	memset(&c, 0, sizeof(c));
	c.cfg.blocks = blocks;
	c.cfg.nblocks = 3;
	c.cfg.edges = edges;
	c.cfg.nedges = 6;
	c.blocks = cb;
	c.edges = ce;
	c.absolute = 1;
	if (!f)
		return NULL;
	if (dcpi_dot_write(f, &c, &o)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* A graph of n blocks and no edges, as DOT. */
static char *dot_blocks(size_t n)
{
	struct dcpi_cfg_block *blocks = calloc(n, sizeof(*blocks));
	struct dcpi_calc_block *cb = calloc(n, sizeof(*cb));
	struct dcpi_dot_opts o = { "big", NULL, 0, NULL };
	struct dcpi_calc c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	memset(&c, 0, sizeof(c));
	for (size_t i = 0; blocks && cb && i < n; i++) {
		blocks[i].start = 0x1000 + 4 * i;
		blocks[i].ninsns = 1;
		cb[i] = (struct dcpi_calc_block){ .freq = 1, .conf = 'M', .best_cpi = 1, .cpi = -1 };
	}
	c.cfg.blocks = blocks;
	c.cfg.nblocks = n;
	c.blocks = cb;
	if (f && blocks && cb)
		dcpi_dot_write(f, &c, &o);
	if (f)
		fclose(f);
	free(blocks);
	free(cb);
	return buf;
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (; s && (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static void test_dot(void)
{
	char *g = dot_of(0, NULL, "f(\"x\")\\y\n\tz");
	uint64_t samples[3] = { 90, 9, 1 };

	T_OK(g && !strncmp(g, "digraph cfg {\n  label=\"f(\\\"x\\\")\\\\yz\";\n", 38),
	     "the title: quotes and backslashes escaped, control bytes dropped");
	T_OK(strstr(g, "  B0 [label=\"B0 entry  0x1000\\n4 insns  freq 100 (H)\\n"
		     "cpi 1.25  best 0.50\\n60.0% of samples\\n13: for (i = 0; i < n; i++)\\n"
		     "14: acc += \\\"q\\\" \\\\ x\""),
	     "B0: entered from outside, its address, size, frequency, CPIs, share, source lines "
	     "(quotes and backslashes escaped)");
	T_OK(strstr(g, "  B1 [label=\"B1  0x1010\\n3 insns  freq 40 (M)\\nbest cpi 0.75\\n"
		     "30.0% of samples\""), "B1: no entry, no CPI (none known), its share");
	T_OK(strstr(g, "  B2 [label=\"B2  0x1020\\n2 insns  freq ~100 (L)\\ncpi 2.00  best 1.00\\n"
		     "10.0% of samples\\nlib.h:7: return *p;\""),
	     "B2: its fields, the estimate to its confidence's digits (L: ~), its source line");
	T_OK(strstr(g, "  B0 -> B1 [label=\"40.0\", penwidth=2.30];\n") &&
	     strstr(g, "  B0 -> B2 [label=\"60.0\", penwidth=3.20, style=bold];\n") &&
	     strstr(g, "  B1 -> B2 [label=\"30\", penwidth=1.85];\n"),
	     "edges between blocks: counts to their confidence's digits (H 40.0, M 30), widths, "
	     "jumps bold");
	T_EQ(count_of(g, "->"), 3, "no edge to or from the outside and unknown nodes");
	T_OK(!strstr(g, "B3") && !strstr(g, "B4"), "the outside and unknown nodes not drawn");
	T_OK(g && strlen(g) > 2 && !strcmp(g + strlen(g) - 2, "}\n"), "the graph is closed");
	free(g);

	g = dot_blocks(DCPI_DOT_LARGE);
	T_OK(g && strstr(g, "nslimit=20;") && !strstr(g, "splines"),
	     "%d blocks: laid out for beauty (nslimit 20, splines)", DCPI_DOT_LARGE);
	free(g);
	g = dot_blocks(DCPI_DOT_LARGE + 1);
	T_OK(g && strstr(g, "nslimit=2;\n  mclimit=0.2;\n  splines=line;"),
	     "%d blocks: laid out for time (nslimit 2, mclimit 0.2, straight edges)",
	     DCPI_DOT_LARGE + 1);
	free(g);

	g = dot_of(10, samples, NULL);
	T_OK(g && strstr(g, "label=\"(address range)\""), "no title: \"(address range)\"");
	T_OK(strstr(g, "  B0 [label=\"B0 entry") && strstr(g, "90.0% of samples") &&
	     strstr(g, "fillcolor=\"0.000 1.000 1.000\""),
	     "the caller's samples give the share and heat");
	T_OK(strstr(g, "  B1 [label=\"B1\", shape=box, fontsize=8, width=0.3, height=0.2, "
		     "style=dashed];\n") &&
	     strstr(g, "  B2 [label=\"B2\", shape=box, fontsize=8, width=0.3, height=0.2, "
		     "style=dashed];\n"),
	     "blocks under the cutoff: stubs with their name only");
	free(g);
}

/* Folded call stacks from a graph made by hand: root first, frames as
 * IMAGE`PROCEDURE, ';' and control bytes escaped, a stopped walk marked,
 * stacks of the same procedures summed, lines sorted, the chosen column. */
static void test_folded_stacks(void)
{
	struct dcpi_cg_proc procs[4] = {
		{ .image = "/usr/bin/prog", .proc = "leaf" },
		{ .image = "/usr/bin/prog", .proc = "main" },
		{ .image = "/lib/libc.so.6", .proc = "a;b\001c" },
		{ .image = "[kernel.kallsyms]", .proc = "schedule" },
	};
	uint32_t frames[] = { 0, 1, /* */ 0, 1, /* */ 2, 0, /* */ 3 };
	struct dcpi_cg_stack stacks[4] = {
		{ .first = 0, .n = 2, .end = DCPI_STACK_END_WHOLE, .c = { 5, 1 } },
		{ .first = 2, .n = 2, .end = DCPI_STACK_END_WHOLE, .c = { 2, 0 } },
		{ .first = 4, .n = 2, .end = DCPI_STACK_END_COPY, .c = { 3, 7 } },
		{ .first = 6, .n = 1, .end = DCPI_STACK_END_KERNEL, .c = { 0, 4 } },
	};
	struct dcpi_callgraph g = { .nevents = 2, .procs = procs, .nprocs = 4, .stacks = stacks,
				    .nstacks = 4, .frames = frames, .nframes = 7 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	T_EQ(dcpi_folded_write_stacks(f, &g, 0), 0, "folded stacks, column 0");
	fclose(f);
	T_STREQ(buf, "[copy ran out];prog`leaf;libc.so.6`a:b?c 3\n"
		     "prog`main;prog`leaf 7\n",
		"root first, the same stacks summed, ';' and control bytes escaped, a stopped walk "
		"marked, a stack without samples of the column left out, sorted");
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	dcpi_folded_write_stacks(f, &g, 1);
	fclose(f);
	T_STREQ(buf, "[copy ran out];prog`leaf;libc.so.6`a:b?c 7\n"
		     "[kernel.kallsyms]`schedule 4\n"
		     "prog`main;prog`leaf 1\n", "column 1: its own counts; a kernel thread's stack is whole");
	free(buf);
	T_EQ(dcpi_folded_write_stacks(stdout, &g, 2), -EINVAL, "a column the graph lacks: refused");
}

int main(void)
{
	char root[PATH_MAX];

	if (fx_setup("export"))
		return 1;
	test_dot();
	test_folded_stacks();
	if (learn_prog()) {
		T_SKIP("tests/golden/prog, nm or addr2line not usable");
		fx_cleanup();
		return t_done();
	}
	snprintf(root, sizeof(root), "%s", fx_path("db"));
	T_EQ(make_db(root), 0, "the database is written (%s)", dcpi_errmsg());
	test_pprof(root);
	test_folded(root);
	test_folded_file_name();
	fx_cleanup();
	return t_done();
}
