/* Annotation on synthetic profiles: a fixture built here with cc -g -O2,
 * profiles written into a temp database with dcpi_profile_write, counts
 * placed on the instructions the disassembler finds.  Checked: counts
 * land on the instruction that starts at the address, profiles of several
 * processes and epochs are summed, per-line totals are the sums of their
 * instructions, a mid-instruction sample is reported (not dropped), a
 * missing source file still lists instructions, procedures resolve by
 * name, address and range, and cpi/freq exist only when both cycles and
 * instructions were sampled. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dcpi/annotate.h"
#include "dcpi/buildid.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/loadmap.h"
#include "fixture.h"
#include "tap.h"

#define MAXI 4096

static char bin[PATH_MAX];
static uint64_t lo, hi;            /* hot_loop's vaddrs */
static struct dcpi_insn *insns;    /* its instructions, from the disassembler */
static size_t ninsns;
static size_t stray_at;            /* insn whose byte +1 gets a stray sample */

/* Samples per instruction i of event e, in profile k: known, distinct. */
static uint64_t want(size_t i, unsigned e, int k)
{
	return (i * 7 + 3 + e * 11) % 23 + (uint64_t)k * 2;
}

/* A profile of bin with one row per instruction of hot_loop (+ a stray). */
static int write_prof(const char *db, const char *epoch, int k, int64_t pid,
		      const char *const *events, const uint64_t *periods, unsigned nev)
{
	struct dcpi_symtab *st = NULL;
	struct dcpi_profile p;
	uint64_t offs[MAXI + 1], counts[(MAXI + 1) * 4];
	char dir[PATH_MAX], file[PATH_MAX + 32];
	uint8_t bid[DCPI_BUILD_ID_MAX];
	int n = dcpi_buildid_elf(bin, bid, sizeof(bid)), err = -1;
	size_t rows = 0;

	if (n <= 0 || dcpi_symtab_open(bin, NULL, 0, NULL, &st) || ninsns > MAXI)
		goto out;
	dcpi_profile_init(&p);
	p.path = bin;
	memcpy(p.build_id, bid, (size_t)n);
	p.build_id_len = (uint32_t)n;
	p.epoch = (char *)epoch;
	p.platform = "testhost";
	p.kind = DCPI_IMAGE_FILE;
	p.pid = pid;
	p.nevents = nev;
	for (unsigned e = 0; e < nev; e++) {
		p.events[e].name = (char *)events[e];
		p.events[e].period = periods[e];
		p.events[e].monitored_ppm = 1000000;
	}
	for (size_t i = 0; i <= ninsns; i++) {
		uint64_t v = i < ninsns ? insns[i].vaddr : insns[stray_at].vaddr + 1;

		if (dcpi_symtab_vaddr2off(st, v, &offs[rows]))
			goto out;
		for (unsigned e = 0; e < nev; e++)
			counts[rows * nev + e] = i < ninsns ? want(i, e, k) : 5;
		rows++;
	}
	snprintf(dir, sizeof(dir), "%s/%s/testhost", db, epoch);
	snprintf(file, sizeof(file), "%s/img%d.prof", dir, k);
	if (fx_sh("mkdir -p '%s'", dir) || dcpi_profile_set_rows(&p, rows, offs, counts))
		goto out;
	err = dcpi_profile_write(file, &p, 0600);
	p.path = NULL; /* borrowed: only what set_rows allocated is ours */
	p.epoch = NULL;
	p.platform = NULL;
	for (unsigned e = 0; e < nev; e++)
		p.events[e].name = NULL;
	dcpi_profile_free(&p);
out:
	dcpi_symtab_close(st);
	return err;
}

static int setup_fixture(void)
{
	struct dcpi_disasm *d = NULL;
	uint64_t size;
	int err = -1;

	snprintf(bin, sizeof(bin), "%s", fx_path("hot"));
	if (fx_sh("cp '%s/tests/workloads/listloop.c' '%s' && cc -g -O2 -o '%s' '%s'", fx_root,
		  fx_path("listloop.c"), bin, fx_path("listloop.c")))
		return -1;
	if (fx_nm("nm", bin, "divide_chain", &lo, &size))
		return -1;
	hi = lo + size;
	if (dcpi_disasm_open(bin, &d) || dcpi_disasm_collect(d, lo, hi, &insns, &ninsns))
		goto out;
	for (stray_at = 0; stray_at < ninsns && insns[stray_at].size < 2; stray_at++)
		;
	err = stray_at < ninsns ? 0 : -1;
out:
	dcpi_disasm_close(d);
	return err;
}

static int open_all(const char *db, struct dcpi_profset *set, const struct dcpi_annot_opts *o,
		    struct dcpi_annot_image **img)
{
	size_t idx[16];

	if (dcpi_profset_load(db, "all", "all", set) || set->n > 16)
		return -1;
	for (size_t i = 0; i < set->n; i++)
		idx[i] = i;
	return dcpi_annot_image_open(set, idx, set->n, o, img);
}

static void check_counts(const struct dcpi_annotation *a, int nprof)
{
	int bad_counts = 0, bad_lines = 0, bad_addr = 0;
	uint64_t sum = 0, want_total = 5 * (uint64_t)nprof;

	T_EQ(a->ninsns, ninsns, "one row per instruction (%zu)", ninsns);
	for (size_t i = 0; i < a->ninsns && i < ninsns; i++) {
		uint64_t w = 0;

		for (int k = 0; k < nprof; k++)
			w += want(i, 0, k);
		want_total += w;
		bad_addr += a->insns[i].insn.vaddr != insns[i].vaddr;
		bad_counts += a->insns[i].counts[0] != w;
	}
	T_EQ(bad_addr, 0, "instruction addresses are the disassembler's");
	T_EQ(bad_counts, 0, "each instruction has the samples at its start, summed over %d "
	     "profile(s)", nprof);
	for (size_t l = 0; l < a->nlines; l++) {
		uint64_t s = 0;
		size_t n = 0;

		for (size_t i = 0; i < a->ninsns; i++)
			if (a->insns[i].line_index == l) {
				s += a->insns[i].counts[0];
				n++;
			}
		bad_lines += s != a->lines[l].counts[0] || n != a->lines[l].ninsns;
		sum += a->lines[l].counts[0];
	}
	T_OK(a->nlines > 1, "several source lines (%zu)", a->nlines);
	T_EQ(bad_lines, 0, "every line's total is the sum of its instructions");
	T_EQ(a->nstrays, 1, "the mid-instruction sample is reported");
	if (a->nstrays == 1) {
		T_EQ(a->strays[0].vaddr, insns[stray_at].vaddr + 1, "stray at its address");
		T_EQ(a->strays[0].containing_vaddr, insns[stray_at].vaddr,
		     "stray names the instruction it fell in");
		T_EQ(a->strays[0].counts[0], 5 * (uint64_t)nprof, "stray keeps its samples");
		sum += a->strays[0].counts[0];
	}
	T_EQ(a->total[0], want_total, "procedure total = all samples in range");
	T_EQ(sum, a->total[0], "lines + strays = procedure total");
}

static void test_listing(void)
{
	static const char *ev[] = { "cpu-clock" };
	static const uint64_t per[] = { 1000000 };
	const char *db = fx_path("db1");
	struct dcpi_profset set;
	struct dcpi_annot_image *img = NULL;
	struct dcpi_annotation a;
	unsigned hot = fx_marked_line("listloop.c", "HOTLOOP");
	int found = 0, cy, in;
	double cpi = -1, freq = -1;

	T_OK(write_prof(db, "20260101T000000Z", 0, -1, ev, per, 1) == 0 &&
	     write_prof(db, "20260101T000000Z", 1, 4242, ev, per, 1) == 0 &&
	     write_prof(db, "20260102T000000Z", 2, -1, ev, per, 1) == 0,
	     "three profiles (two processes, two epochs) written");
	T_OK(open_all(db, &set, NULL, &img) == 0, "image opened: %s", dcpi_errmsg());
	if (!img)
		return;
	T_OK(dcpi_annot_image_has_code(img), "image has code");
	T_OK(dcpi_annotate(img, lo, hi, &a) == 0, "annotate divide_chain: %s", dcpi_errmsg());
	check_counts(&a, 3);
	T_OK(a.has_code && a.has_lines, "code and lines");
	for (size_t l = 0; l < a.nlines; l++)
		if (a.lines[l].line == hot && a.lines[l].text && strstr(a.lines[l].text, "HOTLOOP"))
			found = 1;
	T_OK(hot > 0 && found, "the HOTLOOP line (%u) is a row, with its source text", hot);
	T_OK(!dcpi_annot_derived_cols(&set, &cy, &in), "cpu-clock only: no cpi/freq columns");
	T_OK(!dcpi_annot_cpi(&set, a.total, &cpi, &freq) && cpi == -1 && freq == -1,
	     "cpu-clock only: no cpi or freq invented");
	dcpi_annotation_free(&a);
	dcpi_annot_image_close(img);
	dcpi_profset_free(&set);

	/* the source gone: instructions still listed, with a note */
	fx_sh("mv '%s' '%s'", fx_path("listloop.c"), fx_path("moved.c"));
	img = NULL;
	T_OK(open_all(db, &set, NULL, &img) == 0 && dcpi_annotate(img, lo, hi, &a) == 0,
	     "annotate without the source file");
	if (!img)
		return;
	found = 0;
	for (size_t l = 0; l < a.nlines; l++)
		found |= a.lines[l].text != NULL;
	T_OK(a.ninsns == ninsns && !found, "instructions listed, lines without text");
	found = 0;
	for (size_t i = 0; i < a.nnotes; i++)
		found |= strstr(a.notes[i], "source file not found") != NULL;
	T_OK(found, "a note says the source file was not found");
	dcpi_annotation_free(&a);
	fx_sh("mv '%s' '%s'", fx_path("moved.c"), fx_path("listloop.c"));
	dcpi_annot_image_close(img);
	dcpi_profset_free(&set);
}

static void test_resolve(void)
{
	static const char *ev[] = { "cpu-clock" };
	static const uint64_t per[] = { 1000000 };
	const char *db = fx_path("db2");
	const struct dcpi_sym *c[20];
	struct dcpi_profset set;
	struct dcpi_annot_image *img = NULL;
	const struct dcpi_symtab *st;
	char spec[64];
	const char *name;
	uint64_t l, h;
	size_t nc;
	int found = 0;

	if (write_prof(db, "20260101T000000Z", 0, -1, ev, per, 1) || open_all(db, &set, NULL, &img)) {
		T_OK(0, "profile for resolve tests: %s", dcpi_errmsg());
		return;
	}
	st = dcpi_annot_image_symtab(img);
	T_OK(dcpi_annot_resolve(st, "divide_chain", &l, &h, &name, c, 20, &nc) == 0 && l == lo &&
	     h == hi && !strcmp(name, "divide_chain"), "by name");
	snprintf(spec, sizeof(spec), "0x%" PRIx64, lo + 3);
	T_OK(dcpi_annot_resolve(st, spec, &l, &h, &name, c, 20, &nc) == 0 && l == lo && h == hi,
	     "by an address inside it");
	snprintf(spec, sizeof(spec), "0x%" PRIx64 "-0x%" PRIx64, lo + 4, lo + 9);
	T_OK(dcpi_annot_resolve(st, spec, &l, &h, &name, c, 20, &nc) == 0 && l == lo + 4 &&
	     h == lo + 9, "by a range");
	snprintf(spec, sizeof(spec), "0x%" PRIx64 "-0x%" PRIx64, lo + 9, lo + 4);
	T_EQ(dcpi_annot_resolve(st, spec, &l, &h, &name, c, 20, &nc), -EINVAL, "reversed range");
	T_EQ(dcpi_annot_resolve(st, "0xzz", &l, &h, &name, c, 20, &nc), -ENOENT,
	     "'0xzz' is a name, and none");
	T_EQ(dcpi_annot_resolve(st, "divide", &l, &h, &name, c, 20, &nc), -ENOENT,
	     "unknown name");
	for (size_t i = 0; i < nc && i < 20; i++)
		found |= !strcmp(c[i]->name, "divide_chain");
	T_OK(found, "candidates for 'divide' include divide_chain (%zu)", nc);
	dcpi_annot_image_close(img);
	dcpi_profset_free(&set);
}

static void test_derived(void)
{
	static const char *ev[] = { "cycles", "instructions" };
	static const uint64_t per[] = { 1000, 2000 };
	const char *db = fx_path("db3");
	struct dcpi_profset set;
	struct dcpi_annot_image *img = NULL;
	struct dcpi_annotation a;
	int cy, in, bad = 0, some = 0;

	if (write_prof(db, "20260101T000000Z", 0, -1, ev, per, 2) || open_all(db, &set, NULL, &img)) {
		T_OK(0, "cycles+instructions profile: %s", dcpi_errmsg());
		return;
	}
	T_OK(dcpi_annot_derived_cols(&set, &cy, &in) && cy >= 0 && in >= 0,
	     "cycles and instructions: cpi/freq columns");
	T_OK(dcpi_annotate(img, lo, hi, &a) == 0, "annotate");
	for (size_t i = 0; i < a.ninsns; i++) {
		const uint64_t *c = a.insns[i].counts;
		double cpi = -1, freq = -1;
		int got = dcpi_annot_cpi(&set, c, &cpi, &freq);

		if (c[in] == 0) {
			bad += got;
			continue;
		}
		some++;
		bad += !got || cpi != (double)c[cy] * 1000 / ((double)c[in] * 2000) ||
		       freq != (double)c[in] * 2000;
	}
	T_OK(some > 0 && bad == 0, "cpi = cycles*period / (instructions*period), freq = "
	     "instructions*period, on %d instructions", some);
	dcpi_annotation_free(&a);
	dcpi_annot_image_close(img);
	dcpi_profset_free(&set);
}

int main(void)
{
	if (fx_setup("annotate") || setup_fixture()) {
		T_SKIP("cannot build the fixture with cc -g -O2");
		fx_cleanup();
		return t_done();
	}
	test_listing();
	test_resolve();
	test_derived();
	free(insns);
	fx_cleanup();
	return t_done();
}
