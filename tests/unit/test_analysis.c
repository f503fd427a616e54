/* The analysis model on a database written here: which images IMAGE
 * arguments name (dcpi_select), one handle per image identity
 * (dcpi_objcache: one open, failures remembered), and the procedure table
 * (dcpi_procs: counts per procedure summed over epochs, code no symbol
 * covers named by region, an image whose symbols fail shown as one row
 * with one note).  The fixture is built twice (VARIANT 1 and 2: two
 * build-ids); a profile that claims build 2 at build 1's path is stale. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/buildid.h"
#include "dcpi/calc.h"
#include "dcpi/error.h"
#include "dcpi/evcols.h"
#include "dcpi/obj.h"
#include "dcpi/procs.h"
#include "dcpi/select.h"
#include "fixture.h"
#include "tap.h"

static char bin[PATH_MAX], db[PATH_MAX];
static uint64_t off_global, off_static, off_far;   /* file offsets */
static uint8_t id1[DCPI_BUILD_ID_MAX], id2[DCPI_BUILD_ID_MAX];
static int id1_len, id2_len;

struct spec {
	const char *epoch, *path;
	int kind, stale;
	uint64_t offs[3], counts[3];
	size_t rows;
};

static int write_prof(int k, const struct spec *s)
{
	struct dcpi_profile p;
	char dir[PATH_MAX + 64], file[PATH_MAX + 128];
	int err;

	dcpi_profile_init(&p);
	p.path = (char *)s->path;
	if (s->kind == DCPI_IMAGE_FILE) {
		memcpy(p.build_id, s->stale ? id2 : id1, DCPI_BUILD_ID_MAX);
		p.build_id_len = (uint32_t)(s->stale ? id2_len : id1_len);
	}
	p.epoch = (char *)s->epoch;
	p.platform = "h";
	p.kind = (uint32_t)s->kind;
	p.pid = -1;
	p.nevents = 1;
	p.events[0].name = "cpu-clock";
	p.events[0].period = 500000;
	p.events[0].monitored_ppm = 1000000;
	snprintf(dir, sizeof(dir), "%s/%s/h", db, s->epoch);
	snprintf(file, sizeof(file), "%s/p%d.prof", dir, k);
	err = fx_sh("mkdir -p '%s'", dir) || dcpi_profile_set_rows(&p, s->rows, s->offs, s->counts)
		? -1 : dcpi_profile_write(file, &p, 0600);
	p.path = p.epoch = p.platform = p.events[0].name = NULL; /* borrowed */
	dcpi_profile_free(&p);
	return err;
}

static int offset_of(const char *sym, uint64_t *off)
{
	struct dcpi_symtab *st;
	uint64_t addr, size;
	int err;

	if (fx_nm("nm", bin, sym, &addr, &size) || dcpi_symtab_open(bin, NULL, 0, NULL, &st))
		return -1;
	err = dcpi_symtab_vaddr2off(st, addr, off);
	dcpi_symtab_close(st);
	return err;
}

static int setup(void)
{
	const char *src = fx_path("fix.c"), *b2 = fx_path("fix2");

	snprintf(bin, sizeof(bin), "%s", fx_path("fix"));
	snprintf(db, sizeof(db), "%s", fx_path("db"));
	if (fx_sh("cp '%s/tests/workloads/symtab_fixture.c' '%s' && cc -g -O1 -o '%s' '%s' && "
		  "cc -g -O1 -DVARIANT=2 -o '%s' '%s'", fx_root, src, bin, src, b2, src))
		return -1;
	id1_len = dcpi_buildid_elf(bin, id1, sizeof(id1));
	id2_len = dcpi_buildid_elf(b2, id2, sizeof(id2));
	if (id1_len <= 0 || id2_len <= 0 || !memcmp(id1, id2, (size_t)id1_len))
		return -1;
	if (offset_of("global_fn", &off_global) || offset_of("static_fn", &off_static))
		return -1;
	off_far = 0x7ffff0; /* far past the file's code: no symbol, no section */
	return 0;
}

static const struct spec specs[] = {
	{ "20260101T000000Z", NULL, DCPI_IMAGE_FILE, 0, { 0 }, { 30, 10, 5 }, 3 },
	{ "20260102T000000Z", NULL, DCPI_IMAGE_FILE, 0, { 0 }, { 20, 0, 0 }, 1 },
	{ "20260102T000000Z", NULL, DCPI_IMAGE_FILE, 1, { 0 }, { 7, 0, 0 }, 1 },
	{ "20260103T000000Z", NULL, DCPI_IMAGE_FILE, 1, { 0 }, { 4, 0, 0 }, 1 },
	{ "20260103T000000Z", "[unknown]", DCPI_IMAGE_UNKNOWN, 0, { 0x1000 }, { 3, 0, 0 }, 1 },
};

static int write_db(void)
{
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		struct spec s = specs[k];

		if (!s.path)
			s.path = bin;
		if (s.kind == DCPI_IMAGE_FILE) {
			s.offs[0] = off_global;
			s.offs[1] = off_static;
			s.offs[2] = off_far;
			if (s.rows > 1 && s.offs[1] < s.offs[0]) { /* rows ascend */
				s.offs[0] = off_static, s.offs[1] = off_global;
				s.counts[0] = specs[k].counts[1], s.counts[1] = specs[k].counts[0];
			}
		}
		if (write_prof((int)k, &s))
			return -1;
	}
	return 0;
}

static void test_select(const struct dcpi_profset *set)
{
	const char *args[] = { "fix", "nosuch", "unknown" };
	const struct dcpi_image_group *big;
	struct dcpi_selection s;
	int err = dcpi_select(set, args, 3, &s);

	T_EQ(err, 0, "select");
	T_EQ(set->n, 5, "five profiles in all epochs");
	T_EQ(s.nchosen, 5, "the file name and 'unknown' name every profile");
	T_OK(s.matched[0] && !strcmp(s.matched[0], bin), "'fix' matched %s",
	     s.matched[0] ? s.matched[0] : "nothing");
	T_OK(s.matched[1] == NULL, "'nosuch' matched nothing");
	T_OK(s.matched[2] != NULL, "'unknown' matched the unknown profile");
	T_EQ(s.ngroups, 3, "three identities: two builds of one path, and unknown");
	big = dcpi_selection_largest(&s);
	T_OK(big && big->n == 2 && big->samples == 65, "the largest identity: build 1 in two "
	     "epochs, 65 samples (got %zu profiles, %" PRIu64 ")", big ? big->n : 0,
	     big ? big->samples : 0);
	dcpi_selection_free(&s);

	dcpi_select(set, NULL, 0, &s);
	T_EQ(s.nchosen, set->n, "no arguments: everything");
	dcpi_selection_free(&s);
	T_OK(!dcpi_select_matches(&set->v[0].prof, "fi"), "a prefix of the name is no match");
	T_OK(dcpi_select_matches(&set->v[0].prof, bin), "the full path matches");
	{
		struct dcpi_profile lib = { .path = (char *)"/usr/lib/liblzma.so.5.4.1" };

		T_OK(dcpi_select_matches(&lib, "liblzma.so.5") &&
		     dcpi_select_matches(&lib, "liblzma.so.5.4") &&
		     dcpi_select_matches(&lib, "liblzma.so"), "sonames name the library");
		T_OK(!dcpi_select_matches(&lib, "liblzma") && !dcpi_select_matches(&lib, "liblzma.so.54") &&
		     !dcpi_select_matches(&lib, "liblzma.so.5.4.1.2"),
		     "but not a stem without .so, another version or a longer name");
	}
}

static const struct dcpi_profset_entry *entry(const struct dcpi_profset *set, int stale)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].prof.kind == DCPI_IMAGE_FILE &&
		    !memcmp(set->v[i].prof.build_id, stale ? id2 : id1, DCPI_BUILD_ID_MAX))
			return &set->v[i];
	return NULL;
}

static void test_objcache(const struct dcpi_profset *set)
{
	struct dcpi_objcache *c = dcpi_objcache_new(NULL);
	const struct dcpi_profset_entry *good = entry(set, 0), *stale = entry(set, 1);
	struct dcpi_obj *a = NULL, *b = NULL, *x = NULL;
	char first[512];
	int e1, e2;

	T_OK(c && good && stale, "cache and entries");
	if (!c || !good || !stale)
		return;
	T_EQ(dcpi_objcache_get(c, &good->prof, good->platdir, &a), 0, "open build 1");
	T_EQ(dcpi_objcache_get(c, &good->prof, good->platdir, &b), 0, "ask again");
	T_OK(a && a == b, "one obj per identity");
	T_OK(a && dcpi_obj_code(a, NULL) != NULL, "its code opens");
	T_OK(a && dcpi_obj_lines(a) != NULL, "its DWARF lines open");
	e1 = dcpi_objcache_get(c, &stale->prof, stale->platdir, &x);
	snprintf(first, sizeof(first), "%s", dcpi_errmsg());
	dcpi_error(EIO, "something else happened since");
	e2 = dcpi_objcache_get(c, &stale->prof, stale->platdir, &x);
	T_EQ(e1, -ESTALE, "a profile of another build at that path: -ESTALE");
	T_EQ(e2, e1, "the failure is remembered");
	T_STREQ(dcpi_errmsg(), first, "with the same message");
	T_OK(x == NULL, "and no obj");
	dcpi_objcache_free(c);
}

static const struct dcpi_proc_row *row(const struct dcpi_procs *t, const char *proc)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i]->proc && !strcmp(t->rows[i]->proc, proc))
			return t->rows[i];
	return NULL;
}

static void test_procs(const struct dcpi_profset *set)
{
	struct dcpi_objcache *c = dcpi_objcache_new(NULL);
	struct dcpi_procs_opts o = { 1, 0, c, NULL };
	const struct dcpi_proc_row *g, *s, *far, *one, *unk;
	struct dcpi_procs t;
	char farname[128];

	T_EQ(dcpi_procs_build(&t, set, NULL, 1, &o), 0, "build the procedure table");
	g = row(&t, "global_fn");
	s = row(&t, "static_fn");
	/* an offset no segment maps: its label is the offset's ('+') */
	snprintf(farname, sizeof(farname), "[fix+0x%" PRIx64 "-0x%" PRIx64 "]",
		 off_far / DCPI_PROCS_REGION * DCPI_PROCS_REGION,
		 off_far / DCPI_PROCS_REGION * DCPI_PROCS_REGION + DCPI_PROCS_REGION - 1);
	far = row(&t, farname);
	one = row(&t, "[fix]");
	unk = row(&t, "[unknown]");
	T_OK(g && g->c[0] == 50, "global_fn: 30 + 20 over two epochs (%" PRIu64 ")",
	     g ? g->c[0] : 0);
	T_OK(s && s->c[0] == 10, "static_fn: 10");
	T_OK(far && far->c[0] == 5, "code of no symbol named by its region %s", farname);
	T_OK(one && one->c[0] == 11, "the stale build: one row [fix] of 7 + 4");
	T_OK(unk && unk->c[0] == 3 && !strcmp(unk->image, "unknown"), "unknown samples kept");
	T_EQ(t.total[0], 79, "the total is every sample");
	T_EQ(t.nnotes, 1, "one note for the stale build, though it has two profiles");
	T_OK(t.nnotes && strstr(t.notes[0], "its samples are shown as one row"), "note: %s",
	     t.nnotes ? t.notes[0] : "");
	T_OK(t.failed_chosen, "strict: a named image whose symbols fail is flagged");
	dcpi_procs_sort(&t, 0);
	T_OK(t.n >= 2 && t.rows[0] == g && t.rows[1] == one, "sorted: global_fn, then [fix]");
	T_EQ(dcpi_procs_shown(&t, 0, 3, 0), 3, "keep 3");
	T_EQ(dcpi_procs_shown(&t, 0, UINT64_MAX, 13.0), 2,
	     "cutoff 13%%: 50/79 and 11/79 (13.9%%) shown, 10/79 (12.7%%) not");
	dcpi_procs_free(&t);

	o.procs = 0;
	T_EQ(dcpi_procs_build(&t, set, NULL, 0, &o), 0, "image mode");
	T_EQ(t.n, 2, "two rows: the path (both builds summed by path) and unknown");
	T_OK(t.n && t.rows[0]->c[0] + t.rows[1]->c[0] == 79 && !t.failed_chosen,
	     "image mode opens no symbols and loses nothing");
	dcpi_procs_free(&t);
	dcpi_objcache_free(c);
}

/* dcpi_select's grouping (a sort by identity) against the definition: a
 * scan of the groups for each entry with dcpi_profile_same_image, on a set
 * of 3,000 profiles of 4 paths x 3 sizes x 3 build-ids (none, two ids)
 * x 2 kinds in a scrambled order.  Groups come in order of their first
 * entry, each group's entries in set order. */
static void test_select_groups(void)
{
	static const char *const paths[] = { "/a", "/b", "/a/b", "/c" };
	struct dcpi_profset set = { 0 };
	struct dcpi_selection s;
	size_t n = 3000, ngroups = 0, bad = 0, *first = calloc(n, sizeof(*first));
	size_t *group_of = calloc(n, sizeof(*group_of)), *count = calloc(n, sizeof(*count));
	uint64_t x = 12345;

	set.v = calloc(n, sizeof(*set.v));
	if (!set.v || !first || !group_of || !count) {
		T_OK(0, "memory for the grouping test");
		return;
	}
	set.n = n;
	for (size_t i = 0; i < n; i++) {
		struct dcpi_profile *p = &set.v[i].prof;
		unsigned r;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		r = (unsigned)(x >> 33);
		dcpi_profile_init(p);
		p->path = strdup(paths[r % 4]);
		p->size = 100 + (r / 4) % 3;
		p->build_id_len = (r / 12) % 3 ? 4 : 0;
		memset(p->build_id, (int)((r / 12) % 3), p->build_id_len);
		p->kind = (r / 36) % 2 ? DCPI_IMAGE_FILE : DCPI_IMAGE_MODULE;
	}
	/* the definition, quadratic */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < ngroups && !dcpi_profile_same_image(&set.v[first[k]].prof, &set.v[i].prof))
			k++;
		if (k == ngroups)
			first[ngroups++] = i;
		group_of[i] = k;
		count[k]++;
	}
	T_EQ(dcpi_select(&set, NULL, 0, &s), 0, "select all 3000");
	T_EQ(s.ngroups, ngroups, "as many groups as the definition gives (%zu)", ngroups);
	for (size_t k = 0; k < s.ngroups && k < ngroups; k++) {
		const struct dcpi_image_group *g = &s.groups[k];

		bad += g->n != count[k] || g->idx[0] != first[k];
		for (size_t j = 0; j < g->n; j++)
			bad += group_of[g->idx[j]] != k || (j && g->idx[j] <= g->idx[j - 1]);
	}
	T_EQ(bad, 0, "each group the definition's, in order of first entry, entries in set order");
	dcpi_selection_free(&s);
	for (size_t i = 0; i < n; i++)
		dcpi_profile_free(&set.v[i].prof);
	free(set.v);
	free(first);
	free(group_of);
	free(count);
}

/* Which event is what (dcpi/evcols.h): cycles before clocks, an event of
 * two periods counts for nothing, clock samples to cycles at the measured
 * rate, and the calc engine's columns and mode from the same policy. */
static void test_evcols(void)
{
	struct dcpi_profset s = { 0 };
	struct dcpi_calc_cols c;

	s.nevents = 3;
	s.events[0] = "cpu-clock";
	s.periods[0] = 500000;
	s.events[1] = "instructions";
	s.periods[1] = 0;               /* two periods: no column */
	s.events[2] = "task-clock";
	s.periods[2] = 250000;
	s.stats.clock_khz = 2000000;    /* 2 GHz */
	T_EQ(dcpi_evcols_cycles(&s), -1, "no cycles event");
	T_EQ(dcpi_evcols_time(&s), 0, "time: cpu-clock before task-clock");
	T_EQ(dcpi_evcols_retired(&s), -1, "instructions at two periods: not a column");
	T_OK(dcpi_evcols_cycles_per_sample(&s, 0) == 1e6,
	     "500000 ns of cpu-clock at 2 GHz: 1e6 cycles a sample (%g)",
	     dcpi_evcols_cycles_per_sample(&s, 0));
	T_EQ(dcpi_calc_cols_choose(&s, -1, &c), 0, "calc columns chosen");
	T_OK(c.time == 0 && c.retired == -1 && c.mode == DCPI_CALC_TIME,
	     "time mode on cpu-clock (time %d, retired %d, mode %d)", c.time, c.retired, c.mode);
	T_OK(c.timer, "cpu-clock is a timer (its estimates at most M)");
	T_EQ(dcpi_calc_cols_choose(&s, DCPI_CALC_RETIRED, &c), -EINVAL,
	     "retired mode without instructions refused");
	s.events[1] = "cycles";
	s.periods[1] = 100000;
	T_EQ(dcpi_evcols_cycles(&s), 1, "cycles found");
	T_EQ(dcpi_evcols_time(&s), 1, "time: cycles before any clock");
	T_OK(dcpi_evcols_cycles_per_sample(&s, 1) == 100000, "cycles: the period itself");
	T_EQ(dcpi_calc_cols_choose(&s, -1, &c), 0, "calc columns chosen with cycles");
	T_OK(c.time == 1 && !c.timer, "cycles: not a timer");
	s.stats.clock_khz = 0;
	T_OK(dcpi_evcols_cycles_per_sample(&s, 0) == 0, "a clock without a measured rate: 0");
	s.events[1] = "instructions";
	s.periods[1] = 1000;
	T_EQ(dcpi_calc_cols_choose(&s, -1, &c), 0, "with instructions");
	T_OK(c.retired == 1 && c.mode == DCPI_CALC_RETIRED && c.retired_period == 1000,
	     "retired mode by default when instructions were sampled");
	s.nevents = 1;
	s.events[0] = "page-faults";
	T_EQ(dcpi_calc_cols_choose(&s, -1, &c), -EINVAL, "no time event: nothing to estimate from");
}

int main(void)
{
	struct dcpi_profset set;

	test_evcols();
	test_select_groups();

	if (fx_setup("analysis") || setup() || write_db()) {
		T_OK(0, "fixture built (cc, nm)");
		fx_cleanup();
		return t_done();
	}
	if (dcpi_profset_load(db, "all", "all", &set)) {
		T_OK(0, "load: %s", dcpi_errmsg());
		fx_cleanup();
		return t_done();
	}
	test_select(&set);
	test_objcache(&set);
	test_procs(&set);
	dcpi_profset_free(&set);
	fx_cleanup();
	return t_done();
}
