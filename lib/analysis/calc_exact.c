/* Exact counts for the calc engine: callgrind's, moved to the image's
 * addresses, and read back per annotated instruction.  See dcpi/calc.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/calc.h"
#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "dcpi/hex.h"

#define MAX_VOTES 4096

struct vote {
	uint64_t delta;
	size_t n;
};

/* "0x0000000000001159": callgrind names a function no symbol names by its
 * start, in the same addresses as its positions. */
static int by_address(const char *name, uint64_t *addr)
{
	char *end;

	if (strncmp(name, "0x", 2) || !name[2])
		return 0;
	*addr = strtoull(name + 2, &end, 16);
	return *end == '\0';
}

/* runtime - vaddr that most functions agree on; 0 votes: -ENOENT. */
static int load_delta(const struct dcpi_callgrind_obj *o, const struct dcpi_symtab *st,
		      uint64_t *delta)
{
	struct vote v[64];
	size_t nv = 0, best = 0;

	for (size_t i = 0; i < o->nfns && i < MAX_VOTES; i++) {
		const struct dcpi_sym *s;
		uint64_t d, a;
		size_t k;

		if (by_address(o->fns[i].name, &a)) /* callgrind's name for a function
						       of a stripped image: its address */
			d = o->fns[i].lo - a;
		else if (dcpi_symtab_find(st, o->fns[i].name, &s, 1) == 1)
			d = o->fns[i].lo - s->vaddr;
		else
			continue;
		for (k = 0; k < nv && v[k].delta != d; k++)
			;
		if (k == nv && nv < sizeof(v) / sizeof(v[0]))
			v[nv++] = (struct vote){ d, 0 };
		if (k < nv)
			v[k].n++;
	}
	for (size_t k = 1; k < nv; k++)
		if (v[k].n > v[best].n)
			best = k;
	if (nv == 0)
		return dcpi_error(ENOENT, "%s: none of its functions in callgrind's output is a "
				  "symbol of the image", dcpi_symtab_path(st));
	*delta = v[best].delta;
	return 0;
}

int dcpi_calc_exact_import(const struct dcpi_callgrind_obj *o, const struct dcpi_symtab *st,
			   struct dcpi_exact *out)
{
	size_t bl;
	const uint8_t *bid = dcpi_symtab_build_id(st, &bl);
	uint64_t d;
	int err;

	memset(out, 0, sizeof(*out));
	if (!bid || bl == 0 || bl > DCPI_EXACT_MAX_BUILDID)
		return dcpi_error(EINVAL, "%s: no build-id: exact counts are keyed by it",
				  dcpi_symtab_path(st));
	err = load_delta(o, st, &d);
	if (err)
		return err;
	out->path = strdup(o->counts.path);
	if (!out->path)
		return dcpi_error(ENOMEM, "out of memory");
	memcpy(out->build_id, bid, bl);
	out->build_id_len = bl;
	for (size_t i = 0; i < o->counts.ninsns && !err; i++)
		err = dcpi_exact_add_insn(out, o->counts.insns[i].vaddr - d, o->counts.insns[i].count);
	for (size_t i = 0; i < o->counts.njumps && !err; i++)
		err = dcpi_exact_add_jump(out, o->counts.jumps[i].from - d, o->counts.jumps[i].to - d,
					  o->counts.jumps[i].count);
	if (err)
		dcpi_exact_free(out);
	else
		dcpi_exact_sort(out);
	return err;
}

int dcpi_calc_exact_load(const char *db, struct dcpi_annot_image *img,
			 const struct dcpi_annotation *a, uint64_t **counts)
{
	const struct dcpi_symtab *st = dcpi_annot_image_symtab(img);
	struct dcpi_exact e;
	size_t bl;
	const uint8_t *bid = dcpi_symtab_build_id(st, &bl);
	char hex[2 * DCPI_EXACT_MAX_BUILDID + 1];
	int err;

	*counts = NULL;
	if (!bid || bl == 0 || bl > DCPI_EXACT_MAX_BUILDID)
		return dcpi_error(EINVAL, "%s: no build-id: exact counts are keyed by it",
				  dcpi_symtab_path(st));
	err = dcpi_exact_read(db, bid, bl, &e);
	if (err == -ENOENT) {
		dcpi_hex(bid, bl, hex);
		return dcpi_error(ENOENT, "no exact counts for %s (build-id %s) in %s: run the "
				  "program under dcpix(1) first", dcpi_symtab_path(st), hex, db);
	}
	if (err)
		return err;
	*counts = calloc(a->ninsns ? a->ninsns : 1, sizeof(**counts));
	if (!*counts) {
		dcpi_exact_free(&e);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < a->ninsns; i++)
		(*counts)[i] = dcpi_exact_count(&e, a->insns[i].insn.vaddr);
	dcpi_exact_free(&e);
	return 0;
}
