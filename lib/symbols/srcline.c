/* Source lines of addresses through libdw: see dcpi/srcline.h.
 *
 * Units are found through an index of every CU's address ranges built at
 * open, not .debug_aranges, which clang and some linkers leave out. */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/srcline.h"
#include "internal.h"

/* Ranges of one address that are checked when CU ranges overlap (only
 * broken or exotic DWARF has many). */
#define OVERLAP_SCAN 64
/* Units one range walk visits. */
#define RANGE_UNITS_MAX 4096

struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off cu_off;
};

/* Interned strings: an open-addressing set, load <= 1/2. */
struct intern {
	char **slot;
	size_t cap, n, bytes;
};

struct dcpi_srclines {
	char *path;
	int fd;
	Dwarf *dw;
	struct cu_range *r;
	size_t nr;
	uint64_t info_size;      /* uncompressed bytes of .debug_info */
	struct intern strs;
};

/* ---- interned strings --------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int intern_grow(struct intern *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256, i;
	char **ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slot[i])
			continue;
		for (j = hash_str(t->slot[i]) & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = ncap;
	return 0;
}

/* The interned copy of s, or NULL (out of memory or over the cap). */
static const char *intern(struct intern *t, const char *s)
{
	size_t j, len = strlen(s);

	if (t->n + 1 > t->cap / 2 && intern_grow(t) < 0)
		return NULL;
	for (j = hash_str(s) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (!strcmp(t->slot[j], s))
			return t->slot[j];
	if (len > DCPI_SRCLINE_MAX_STRINGS - t->bytes)
		return NULL;
	t->slot[j] = strdup(s);
	if (!t->slot[j])
		return NULL;
	t->n++;
	t->bytes += len + 1;
	return t->slot[j];
}

static void intern_free(struct intern *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->slot[i]);
	free(t->slot);
}

/* p without its "." components ("././prog.c" is "prog.c", "/a/./b"
 * "/a/b"); ".." is kept (a symbolic link makes it more than a lexical
 * step back). */
static void drop_dots(char *p)
{
	char *w = p, *r = p;

	while (*r) {
		if (r[0] == '.' && (r[1] == '/' || (!r[1] && w > p))) {
			r += r[1] ? 2 : 1;
			continue;
		}
		if (r[0] == '/' && w > p && w[-1] == '/') {
			r++;
			continue;
		}
		while (*r && *r != '/')
			*w++ = *r++;
		if (*r == '/')
			*w++ = *r++;
	}
	if (w > p + 1 && w[-1] == '/' && r[-1] != '/')
		w--;
	*w = '\0';
	if (!*p)
		strcpy(p, ".");
}

/* name joined with the unit's comp_dir when relative, without "."
 * components; "??" on failure (a name is never worth failing a lookup
 * for). */
static const char *file_name(struct dcpi_srclines *s, Dwarf_Die *cu, const char *name)
{
	Dwarf_Attribute a;
	const char *dir, *r;
	char *joined;

	if (!name || !*name)
		return intern(&s->strs, "??") ?: "??";
	dir = name[0] == '/' ? NULL : dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	if (asprintf(&joined, "%s%s%s", dir && *dir ? dir : "",
		     !dir || !*dir || dir[strlen(dir) - 1] == '/' ? "" : "/", name) < 0)
		return "??";
	drop_dots(joined);
	r = intern(&s->strs, joined);
	free(joined);
	return r ?: "??";
}

static const char *die_name(struct dcpi_srclines *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));

	return intern(&s->strs, n ? n : "??") ?: "??";
}

/* ---- the unit index ----------------------------------------------------- */

static int add_range(struct dcpi_srclines *s, size_t *cap, uint64_t lo, uint64_t hi,
		     Dwarf_Off off)
{
	if (lo >= hi)
		return 0;
	int err = DCPI_GROW(s->r, *cap, s->nr + 1, DCPI_SRCLINE_MAX_UNITS, "unit address ranges");

	if (err)
		return dcpi_error_prefix(-err, "%s", s->path);
	s->r[s->nr++] = (struct cu_range){ lo, hi, off };
	return 0;
}

static int unit_ranges(struct dcpi_srclines *s, Dwarf_Die *cu, size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int err;

	while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
		err = add_range(s, cap, lo, hi, dwarf_dieoffset(cu));
		if (err)
			return err;
	}
	/* A unit whose ranges are corrupt is left out: its addresses look
	 * up as "no line", the other units still answer. */
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int index_units(struct dcpi_srclines *s)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;
	size_t cap = 0, units = 0;
	int r, err;

	while ((r = dwarf_get_units(s->dw, cu, &cu, NULL, &type, &cudie, NULL)) == 0) {
		if (++units > DCPI_SRCLINE_MAX_UNITS)
			return dcpi_error(EFBIG, "%s: more than %u compilation units", s->path,
					  DCPI_SRCLINE_MAX_UNITS);
		if (type == DW_UT_type || type == DW_UT_split_type)
			continue;
		err = unit_ranges(s, &cudie, &cap);
		if (err)
			return err;
	}
	if (r < 0 && units == 0)
		return dcpi_error(EBADMSG, "%s: corrupt DWARF: %s", s->path, dwarf_errmsg(-1));
	if (s->nr > 1)
		qsort(s->r, s->nr, sizeof(*s->r), cmp_range);
	return 0;
}

/* The unit whose ranges hold vaddr. */
static int find_unit(struct dcpi_srclines *s, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi = s->nr, i, k;

	while (lo < hi) {   /* first range starting after vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, k = 0; i > 0 && k < OVERLAP_SCAN; i--, k++) {
		if (vaddr >= s->r[i - 1].hi)
			continue;
		if (!dwarf_offdie(s->dw, s->r[i - 1].cu_off, cu))
			return dcpi_error(EBADMSG, "%s: corrupt unit at 0x%" PRIx64 ": %s", s->path,
					  (uint64_t)s->r[i - 1].cu_off, dwarf_errmsg(-1));
		return 0;
	}
	return dcpi_error(ENOENT, "%s: no debug info covers 0x%" PRIx64, s->path, vaddr);
}

/* ---- open/close --------------------------------------------------------- */

/* A GNU .zdebug section starts "ZLIB" and the big-endian size. */
static uint64_t gnu_zlib_size(Elf_Scn *scn)
{
	Elf_Data *d = elf_rawdata(scn, NULL);
	const unsigned char *p;
	uint64_t n = 0;
	int i;

	if (!d || !d->d_buf || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4))
		return 0;
	p = (const unsigned char *)d->d_buf + 4;
	for (i = 0; i < 8; i++)
		n = n << 8 | p[i];
	return n;
}

/* Bytes of .debug_info once uncompressed: it bounds how many DIEs exist. */
static uint64_t info_size(Dwarf *dw)
{
	Elf *elf = dwarf_getelf(dw);
	Elf_Scn *scn = NULL;
	size_t strndx;
	uint64_t total = 0;

	if (!elf || elf_getshdrstrndx(elf, &strndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;
		uint64_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, strndx, sh.sh_name);
		if (!name || (strcmp(name, ".debug_info") && strcmp(name, ".zdebug_info")))
			continue;
		n = (sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch) ? ch.ch_size
									 : sh.sh_size;
		if (name[1] == 'z')
			n = gnu_zlib_size(scn);
		total = n > UINT64_MAX - total ? UINT64_MAX : total + n;
	}
	return total;
}

static int open_dwarf(struct dcpi_srclines *s, const uint8_t *id, size_t idlen)
{
	unsigned char magic[SELFMAG];
	struct stat st;

	s->fd = dcpi_file_open_regular(AT_FDCWD, s->path, 0, &st);
	if (s->fd < 0)
		return s->fd;
	if (!dcpi_buildid_fd_is(s->fd, id, idlen))
		return dcpi_error(ESTALE, "%s: not the debug file of the image profiled any more "
				  "(another build-id)", s->path);
	if (pread(s->fd, magic, SELFMAG, 0) != SELFMAG || memcmp(magic, ELFMAG, SELFMAG))
		return dcpi_error(ENOEXEC, "%s: not an ELF file", s->path);
	s->dw = dwarf_begin(s->fd, DWARF_C_READ);
	if (!s->dw) {
		const char *m = dwarf_errmsg(-1);

		if (m && strstr(m, "no DWARF"))
			return dcpi_error(ENODATA, "%s: no DWARF debug info", s->path);
		return dcpi_error(EBADMSG, "%s: cannot read DWARF: %s", s->path, m ? m : "?");
	}
	s->info_size = info_size(s->dw);
	return index_units(s);
}

int dcpi_srcline_open(const char *debug_file, struct dcpi_srclines **out)
{
	return dcpi_srcline_open_image(debug_file, NULL, 0, out);
}

int dcpi_srcline_open_image(const char *debug_file, const uint8_t *id, size_t idlen,
			    struct dcpi_srclines **out)
{
	struct dcpi_srclines *s;
	int err;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return dcpi_error(ENOMEM, "%s: out of memory", debug_file);
	s->fd = -1;
	s->path = strdup(debug_file);
	if (!s->path) {
		err = dcpi_error(ENOMEM, "%s: out of memory", debug_file);
		goto fail;
	}
	err = open_dwarf(s, id, idlen);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	dcpi_srcline_close(s);
	return err;
}

void dcpi_srcline_close(struct dcpi_srclines *s)
{
	if (!s)
		return;
	if (s->dw)
		dwarf_end(s->dw);
	if (s->fd >= 0)
		close(s->fd);
	intern_free(&s->strs);
	free(s->r);
	free(s->path);
	free(s);
}

/* ---- lookups ------------------------------------------------------------ */

static void call_site(struct dcpi_srclines *s, Dwarf_Die *cu, Dwarf_Die *die,
		      struct dcpi_inline_site *site)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	Dwarf_Files *files;
	size_t nfiles;
	const char *f = NULL;

	site->callee = die_name(s, die);
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &v) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles)
		f = dwarf_filesrc(files, v, NULL, NULL);
	site->call_file = file_name(s, cu, f);
	site->call_line = dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v) == 0 &&
			  v <= UINT32_MAX ? (unsigned)v : 0;
	site->call_column = dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &a), &v) == 0 &&
			    v <= UINT32_MAX ? (unsigned)v : 0;
}

/* The concrete scopes holding vaddr, outermost first, found by descending
 * from the unit DIE.  Done here rather than with dwarf_getscopes, which
 * leaks its array when corrupt DWARF fails its second pass (elfutils
 * 0.188), and which returns the abstract origin's scopes above an inlined
 * instance where we want the callers.  Bounded: SCOPE_DEPTH levels, and
 * no more DIEs visited than .debug_info has bytes (a DIE takes at least
 * one), whatever the sibling links say. */
#define SCOPE_DEPTH 64

struct scopes {
	Dwarf_Die die[SCOPE_DEPTH];
	int n;
	uint64_t visits, max_visits;
};

static bool is_code_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_entry_point;
}

/* Namespaces hold code (GCC puts C++ functions in them); class bodies
 * only declarations, the definitions sit at unit or namespace level. */
static bool is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

static void find_scopes(Dwarf_Die *parent, uint64_t vaddr, struct scopes *sc)
{
	Dwarf_Die die;

	if (sc->n >= SCOPE_DEPTH || dwarf_child(parent, &die) != 0)
		return;
	do {
		int tag = dwarf_tag(&die);

		if (++sc->visits > sc->max_visits)
			return;
		if (is_code_scope(tag) && dwarf_haspc(&die, vaddr) == 1) {
			sc->die[sc->n++] = die;
			find_scopes(&sc->die[sc->n - 1], vaddr, sc);
			return;
		}
		if (is_container(tag)) {
			int before = sc->n;

			find_scopes(&die, vaddr, sc);
			if (sc->n > before)
				return;
		}
	} while (dwarf_siblingof(&die, &die) == 0);
}

/* Innermost first: the inlined instances, up to the real function. */
static void inline_chain(struct dcpi_srclines *s, Dwarf_Die *cu, uint64_t vaddr,
			 struct dcpi_srcloc *loc)
{
	struct scopes *sc = calloc(1, sizeof(*sc));
	int i;

	if (!sc)
		return;
	sc->max_visits = s->info_size;
	find_scopes(cu, vaddr, sc);
	for (i = sc->n - 1; i >= 0; i--) {
		int tag = dwarf_tag(&sc->die[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
			loc->outer = die_name(s, &sc->die[i]);
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (loc->ninline == DCPI_SRCLINE_MAX_INLINE) {
			loc->inline_cut = 1;
			continue;
		}
		call_site(s, cu, &sc->die[i], &loc->inl[loc->ninline++]);
	}
	loc->function = loc->ninline ? loc->inl[0].callee : loc->outer;
	free(sc);
}

static void row_fields(struct dcpi_srclines *s, Dwarf_Die *cu, Dwarf_Line *l,
		       uint64_t *vaddr, const char **file, unsigned *line, unsigned *col)
{
	Dwarf_Addr a = 0;
	int ln = 0, c = 0;

	dwarf_lineaddr(l, &a);
	dwarf_lineno(l, &ln);
	dwarf_linecol(l, &c);
	*vaddr = a;
	*file = file_name(s, cu, dwarf_linesrc(l, NULL, NULL));
	*line = ln > 0 ? (unsigned)ln : 0;
	*col = c > 0 ? (unsigned)c : 0;
}

int dcpi_srcline_lookup(struct dcpi_srclines *s, uint64_t vaddr, struct dcpi_srcloc *loc)
{
	Dwarf_Die cu;
	Dwarf_Lines *lines;
	Dwarf_Line *l;
	size_t n;
	int err;

	memset(loc, 0, sizeof(*loc));
	loc->file = loc->function = loc->outer = "??";
	err = find_unit(s, vaddr, &cu);
	if (err)
		return err;
	if (dwarf_getsrclines(&cu, &lines, &n) != 0)
		return dcpi_error(EBADMSG, "%s: corrupt line table: %s", s->path, dwarf_errmsg(-1));
	l = dwarf_getsrc_die(&cu, vaddr);
	if (!l)
		return dcpi_error(ENOENT, "%s: no line for 0x%" PRIx64, s->path, vaddr);
	row_fields(s, &cu, l, &loc->row_vaddr, &loc->file, &loc->line, &loc->column);
	inline_chain(s, &cu, vaddr, loc);
	return 0;
}

/* ---- range walks -------------------------------------------------------- */

/* First row at or after lo (libdw keeps a unit's rows sorted by address). */
static size_t first_row(Dwarf_Lines *lines, size_t n, uint64_t lo)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		Dwarf_Addr addr = 0;

		dwarf_lineaddr(dwarf_onesrcline(lines, mid), &addr);
		if (addr < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

static int walk_unit(struct dcpi_srclines *s, Dwarf_Off off, uint64_t lo, uint64_t hi,
		     dcpi_srcrow_fn fn, void *arg)
{
	Dwarf_Die cu;
	Dwarf_Lines *lines;
	size_t n, i;
	int err;

	if (!dwarf_offdie(s->dw, off, &cu) || dwarf_getsrclines(&cu, &lines, &n) != 0)
		return dcpi_error(EBADMSG, "%s: corrupt line table: %s", s->path, dwarf_errmsg(-1));
	for (i = first_row(lines, n, lo); i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct dcpi_srcrow row;
		bool end = false, stmt = false;

		if (!l)
			break;
		row_fields(s, &cu, l, &row.vaddr, &row.file, &row.line, &row.column);
		if (row.vaddr >= hi)
			break;
		if (row.vaddr < lo || (dwarf_lineendsequence(l, &end) == 0 && end))
			continue;
		row.is_stmt = dwarf_linebeginstatement(l, &stmt) == 0 && stmt;
		err = fn(&row, arg);
		if (err)
			return err;
	}
	return 0;
}

int dcpi_srcline_range(struct dcpi_srclines *s, uint64_t lo, uint64_t hi,
		       dcpi_srcrow_fn fn, void *arg)
{
	Dwarf_Off seen[RANGE_UNITS_MAX];
	size_t i, j, nseen = 0;
	int err;

	if (lo > hi)
		return dcpi_error(EINVAL, "%s: empty range 0x%" PRIx64 "-0x%" PRIx64, s->path, lo, hi);
	for (i = 0; i < s->nr && s->r[i].lo < hi && nseen < RANGE_UNITS_MAX; i++) {
		if (s->r[i].hi <= lo)
			continue;
		for (j = 0; j < nseen && seen[j] != s->r[i].cu_off; j++)
			;
		if (j < nseen)
			continue;
		seen[nseen++] = s->r[i].cu_off;
		err = walk_unit(s, s->r[i].cu_off, lo, hi, fn, arg);
		if (err)
			return err;
	}
	return 0;
}
