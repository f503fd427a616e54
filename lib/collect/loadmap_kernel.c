/* The kernel and its modules as images.  See dcpi/loadmap.h.
 *
 * The kernel's text range comes from _stext/_etext in kallsyms, its
 * build-id from SYSFS/kernel/notes; modules from the modules file, their
 * build-ids from SYSFS/module/NAME/notes/.note.gnu.build-id.  Module loads
 * after startup produce no perf record (only bpf programs and trampolines
 * get PERF_RECORD_KSYMBOL), so a caller that wants them reloads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/loadmap.h"
#include "internal.h"
#include "loadmap_priv.h"

#define KERNEL_PATH "[kernel.kallsyms]"
#define MOD_NAME_MAX 64   /* the kernel's MODULE_NAME_LEN is 56 */
#define KSYM_LINE_MAX 1024 /* KSYM_NAME_LEN is 512, plus address and module */

/* Lowest text symbol address of each module tagged in kallsyms. */
struct modsym {
	char name[MOD_NAME_MAX];
	uint64_t min;
};

struct ksyms {
	uint64_t stext, text, etext;
	struct modsym *mods;
	size_t n, cap, last;
};

static struct modsym *modsym_get(struct ksyms *k, const char *name)
{
	size_t i;

	/* Symbols come grouped by module: the last one usually matches. */
	if (k->last < k->n && !strcmp(k->mods[k->last].name, name))
		return &k->mods[k->last];
	for (i = 0; i < k->n; i++)
		if (!strcmp(k->mods[i].name, name))
			return &k->mods[k->last = i];
	if (DCPI_GROW(k->mods, k->cap, k->n + 1, LM_MODULES_MAX, "modules"))
		return NULL;
	snprintf(k->mods[k->n].name, MOD_NAME_MAX, "%s", name);
	k->mods[k->n].min = UINT64_MAX;
	return &k->mods[k->last = k->n++];
}

static int ksyms_module_sym(struct ksyms *k, char *tag, char type, uint64_t addr)
{
	size_t n = strlen(tag);
	struct modsym *m;

	if (n < 3 || tag[0] != '[' || tag[n - 1] != ']' || n - 2 >= MOD_NAME_MAX)
		return -1;
	if (type != 't' && type != 'T')
		return 0;
	tag[n - 1] = '\0';
	m = modsym_get(k, tag + 1);
	if (!m)
		return -2;
	if (addr < m->min)
		m->min = addr;
	return 0;
}

/* "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]".  -1 malformed, -2 no memory. */
static int ksyms_line(struct ksyms *k, char *line)
{
	const char *p = line;
	char type, *name, *tab;
	uint64_t addr;

	if (dcpi_hex_scan_u64(&p, NULL, &addr) || p[0] != ' ' || !p[1] || p[2] != ' ')
		return -1;
	type = p[1];
	name = (char *)p + 3;
	tab = strchr(name, '\t');
	if (tab) {
		*tab = '\0';
		return ksyms_module_sym(k, tab + 1, type, addr);
	}
	if (!strcmp(name, "_stext"))
		k->stext = addr;
	else if (!strcmp(name, "_text"))
		k->text = addr;
	else if (!strcmp(name, "_etext"))
		k->etext = addr;
	return 0;
}

static int ksyms_read(struct ksyms *k, FILE *f, const char *path)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > KSYM_LINE_MAX) {
			rc = dcpi_error(EBADMSG, "%s:%zu: line too long", path, lineno);
			goto out;
		}
		rc = ksyms_line(k, line);
		if (rc == -2) {
			rc = dcpi_error(ENOMEM, "%s: too many modules", path);
			goto out;
		}
		if (rc < 0) {
			rc = dcpi_error(EBADMSG, "%s:%zu: malformed line \"%.80s\"", path, lineno,
					line);
			goto out;
		}
	}
	if (ferror(f))
		rc = dcpi_error(EIO, "%s: read error", path);
out:
	free(line);
	return rc;
}

/* ---- images ---------------------------------------------------------------- */

static int kernel_intern(struct dcpi_loadmap *lm, const struct ksyms *k)
{
	struct dcpi_image tmpl = { .path = KERNEL_PATH, .kind = DCPI_IMAGE_KERNEL };
	char notes[4096];
	int rc, idx;

	snprintf(notes, sizeof(notes), "%s/kernel/notes", lm->sysfs);
	rc = dcpi_buildid_notes_file(notes, tmpl.build_id, sizeof(tmpl.build_id));
	tmpl.build_id_len = rc > 0 ? (uint32_t)rc : 0;
	tmpl.text_start = k->stext ? k->stext : k->text;
	if (k->etext > tmpl.text_start)
		tmpl.text_size = k->etext - tmpl.text_start;
	idx = dcpi_loadmap_intern(lm, &tmpl);
	if (idx < 0)
		return idx;
	if (rc <= 0)
		lm->id_failed++;
	lm->kernel_image = idx;
	return 0;
}

static int module_intern(struct dcpi_loadmap *lm, const char *name, uint64_t base,
			 uint64_t size, const uint8_t *id, uint32_t id_len)
{
	struct dcpi_image tmpl = { .kind = DCPI_IMAGE_MODULE, .text_start = base,
				   .text_size = size };
	char path[MOD_NAME_MAX + 2], notes[4096];
	int rc;

	snprintf(path, sizeof(path), "[%s]", name);
	tmpl.path = path;
	if (id_len > 0) {
		memcpy(tmpl.build_id, id, id_len);
		tmpl.build_id_len = id_len;
		return dcpi_loadmap_intern(lm, &tmpl);
	}
	snprintf(notes, sizeof(notes), "%s/module/%s/notes/.note.gnu.build-id", lm->sysfs, name);
	rc = dcpi_buildid_notes_file(notes, tmpl.build_id, sizeof(tmpl.build_id));
	tmpl.build_id_len = rc > 0 ? (uint32_t)rc : 0;
	return dcpi_loadmap_intern(lm, &tmpl);
}

static int module_cmp(const void *a, const void *b)
{
	const struct lm_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The modules file's size covers all of a module's memory, which since
 * 6.4 is several separate allocations: clip each range at the next
 * module's base so ranges never overlap. */
static void modules_sort_clip(struct lm_map *m, size_t n)
{
	size_t i;

	if (n == 0)
		return; /* m may be NULL: qsort's argument must not be */
	qsort(m, n, sizeof(*m), module_cmp);
	for (i = 0; i + 1 < n; i++)
		if (m[i].end > m[i + 1].start)
			m[i].end = m[i + 1].start;
}

/* ---- the modules file ---------------------------------------------------------- */

struct modline {
	char *name;
	uint64_t size, addr;
};

/* "name size refcount deps state 0xADDR [taint]" */
static int modline_parse(char *line, struct modline *ml)
{
	char *tok[6], *save = NULL, *end;
	size_t i;

	for (i = 0; i < 6; i++) {
		tok[i] = strtok_r(i ? NULL : line, " \n", &save);
		if (!tok[i])
			return -1;
	}
	if (strlen(tok[0]) >= MOD_NAME_MAX)
		return -1;
	errno = 0;
	ml->name = tok[0];
	ml->size = strtoull(tok[1], &end, 10);
	if (errno || *end || tok[1][0] < '0' || tok[1][0] > '9')
		return -1;
	if (strncmp(tok[5], "0x", 2))
		return -1;
	end = tok[5] + 2;
	if (dcpi_hex_scan_u64((const char **)&end, NULL, &ml->addr) || *end)
		return -1;
	return 0;
}

static uint64_t modsym_base(const struct ksyms *k, const char *name)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (!strcmp(k->mods[i].name, name))
			return k->mods[i].min == UINT64_MAX ? 0 : k->mods[i].min;
	return 0;
}

/* The module mappings being read, before they replace lm->kmods. */
struct modvec {
	struct lm_map *v;
	size_t n, cap;
};

static int module_push(struct dcpi_loadmap *lm, struct modvec *mv, const struct modline *ml,
		       uint64_t base)
{
	int idx, err;

	if (mv->n >= LM_MODULES_MAX || ml->size == 0 || ml->size > UINT64_MAX - base)
		return 0; /* ignored: nothing sane to map */
	idx = module_intern(lm, ml->name, base, ml->size, NULL, 0);
	if (idx < 0)
		return idx;
	err = DCPI_GROW(mv->v, mv->cap, mv->n + 1, LM_MODULES_MAX, "modules");
	if (err)
		return err;
	mv->v[mv->n++] = (struct lm_map){ base, base + ml->size, 0, idx };
	return 0;
}

static int modules_read(struct dcpi_loadmap *lm, const char *path, const struct ksyms *k,
			struct modvec *mv)
{
	struct modline ml;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	FILE *f;
	int rc = 0;

	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : dcpi_error(errno, "%s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		uint64_t base;
		lineno++;
		if (modline_parse(line, &ml) < 0) {
			rc = dcpi_error(EBADMSG, "%s:%zu: malformed line", path, lineno);
			goto out;
		}
		base = ml.addr ? ml.addr : modsym_base(k, ml.name);
		if (base == 0)
			continue; /* hidden address and no symbols: cannot place it */
		rc = module_push(lm, mv, &ml, base);
		if (rc < 0)
			goto out;
	}
out:
	free(line);
	fclose(f);
	return rc;
}

static int load_kernel(struct dcpi_loadmap *lm, FILE *f, const char *kallsyms,
		       const char *modules)
{
	struct ksyms k = { 0 };
	struct modvec mv = { 0 };
	int rc;

	rc = ksyms_read(&k, f, kallsyms);
	if (rc < 0)
		goto out;
	rc = kernel_intern(lm, &k);
	if (rc < 0)
		goto out;
	if (modules) {
		rc = modules_read(lm, modules, &k, &mv);
		if (rc < 0)
			goto out;
	}
	modules_sort_clip(mv.v, mv.n);
	free(lm->kmods.maps);
	lm->kmods.maps = mv.v;
	lm->kmods.nmaps = mv.n;
	lm->kmods.cap = mv.cap;
	mv.v = NULL;
out:
	free(mv.v);
	free(k.mods);
	return rc;
}

/* ---- kernel mmap records and resolution -------------------------------------- */

/* "[ext4]" → ext4; "/lib/modules/.../nf-tables.ko.zst" → nf_tables (the
 * kernel's name uses '_' for '-').  0 if path names no module. */
static int module_name_of(const char *path, char *out, size_t outsz)
{
	const char *b, *e;
	size_t n, i;

	if (path[0] == '[') {
		e = strchr(path, ']');
		if (!e || e[1] || !strncmp(path, KERNEL_PATH, strlen(KERNEL_PATH) - 1))
			return 0;
		b = path + 1;
	} else {
		b = strrchr(path, '/');
		b = b ? b + 1 : path;
		e = strstr(b, ".ko");
		if (!e || (e[3] && e[3] != '.'))
			return 0;
	}
	n = (size_t)(e - b);
	if (n == 0 || n >= outsz)
		return 0;
	for (i = 0; i < n; i++)
		out[i] = b[i] == '-' ? '_' : b[i];
	out[n] = '\0';
	return 1;
}

int dcpi_lm_kernel_mmap(struct dcpi_loadmap *lm, const struct dcpi_mmap_event *ev)
{
	char name[MOD_NAME_MAX];
	int idx;

	if (!module_name_of(ev->path, name, sizeof(name)))
		return 0;
	idx = module_intern(lm, name, ev->start, ev->len, ev->build_id, ev->build_id_len);
	if (idx < 0)
		return idx;
	/* A module loaded where an unloaded one was replaces it. */
	return dcpi_lm_place(&lm->kmods, ev->start, ev->start + ev->len, 0, idx);
}

int dcpi_lm_kernel_resolve(const struct dcpi_loadmap *lm, uint64_t ip, uint64_t *offset)
{
	const struct lm_map *m = dcpi_lm_lookup(&lm->kmods, ip);

	if (m) {
		*offset = ip - m->start;
		return m->image;
	}
	*offset = ip;
	return lm->kernel_image;
}

int dcpi_loadmap_load_kernel(struct dcpi_loadmap *lm, const char *kallsyms,
			     const char *modules)
{
	FILE *f = fopen(kallsyms, "re");
	int rc;

	if (!f)
		return dcpi_error(errno, "%s: %s", kallsyms, strerror(errno));
	rc = load_kernel(lm, f, kallsyms, modules);
	fclose(f);
	return rc;
}

int dcpi_loadmap_load_kernel_text(struct dcpi_loadmap *lm, const char *text, size_t len,
				  const char *name, const char *modules)
{
	FILE *f;
	int rc;

	if (len == 0)
		return dcpi_error(EBADMSG, "%s: empty", name);
	f = fmemopen((void *)text, len, "r");
	if (!f)
		return dcpi_error(errno, "%s: %s", name, strerror(errno));
	rc = load_kernel(lm, f, name, modules);
	fclose(f);
	return rc;
}
