/* One handle per image: see dcpi/obj.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <libiberty/hashtab.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "dcpi/buildid.h"
#include "dcpi/error.h"
#include "dcpi/hex.h"
#include "dcpi/obj.h"
#include "dcpi/snapshot.h"

struct dcpi_obj {
	char *path;
	enum dcpi_image_kind kind;
	uint8_t build_id[DCPI_BUILD_ID_MAX];
	uint32_t build_id_len;
	struct dcpi_obj_opts o;
	struct dcpi_symtab *st;
	struct dcpi_symtab *vmlinux;  /* kernel: the image its code comes from */
	struct dcpi_disasm *dis;
	uint64_t code_delta;          /* symtab vaddr - code vaddr (KASLR) */
	struct dcpi_srclines *sl;
	int code_tried, lines_tried;
	char *code_note, *lines_note;
};

static void set_note(char **note, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_note(char **note, const char *fmt, ...)
{
	va_list ap;

	free(*note);
	*note = NULL;
	va_start(ap, fmt);
	if (vasprintf(note, fmt, ap) < 0)
		*note = NULL;
	va_end(ap);
}

/* ---- symbols -------------------------------------------------------------- */

static int open_kallsyms(const struct dcpi_profile *p, const char *platdir,
			 struct dcpi_symtab **out)
{
	char ks[4200], mod[256];
	int err = dcpi_snapshot_kallsyms_path(platdir, ks, sizeof(ks));

	if (err)
		return err;
	if (p->kind == DCPI_IMAGE_KERNEL)
		return dcpi_symtab_open_kallsyms(ks, NULL, 0, out);
	snprintf(mod, sizeof(mod), "%.*s", (int)strcspn(p->path + 1, "]"), p->path + 1);
	return dcpi_symtab_open_kallsyms(ks, mod, p->text_start, out);
}

static int open_symbols(const struct dcpi_profile *p, const char *platdir,
			const struct dcpi_symtab_opts *o, struct dcpi_symtab **out)
{
	*out = NULL;
	if (p->kind == DCPI_IMAGE_KERNEL || p->kind == DCPI_IMAGE_MODULE)
		return open_kallsyms(p, platdir, out);
	if (p->kind != DCPI_IMAGE_FILE)
		return dcpi_error(EINVAL, "%s: %s samples have no symbols", p->path,
				  p->kind == DCPI_IMAGE_ANON ? "anonymous-memory" : "unknown-image");
	return dcpi_symtab_open(p->path, p->build_id, p->build_id_len, o, out);
}

int dcpi_obj_open(const struct dcpi_profile *p, const char *platdir,
		  const struct dcpi_obj_opts *o, struct dcpi_obj **out)
{
	struct dcpi_obj *obj = calloc(1, sizeof(*obj));
	int err;

	*out = NULL;
	if (!obj || !(obj->path = strdup(p->path))) {
		free(obj);
		return dcpi_error(ENOMEM, "out of memory");
	}
	if (o)
		obj->o = *o;
	obj->kind = p->kind;
	memcpy(obj->build_id, p->build_id, p->build_id_len);
	obj->build_id_len = p->build_id_len;
	err = open_symbols(p, platdir, obj->o.sym, &obj->st);
	if (err) {
		dcpi_obj_close(obj);
		return err;
	}
	*out = obj;
	return 0;
}

void dcpi_obj_close(struct dcpi_obj *obj)
{
	if (!obj)
		return;
	dcpi_srcline_close(obj->sl);
	dcpi_disasm_close(obj->dis);
	dcpi_symtab_close(obj->vmlinux);
	dcpi_symtab_close(obj->st);
	free(obj->code_note);
	free(obj->lines_note);
	free(obj->path);
	free(obj);
}

struct dcpi_symtab *dcpi_obj_symtab(const struct dcpi_obj *obj)
{
	return obj->st;
}

const char *dcpi_obj_path(const struct dcpi_obj *obj)
{
	return obj->path;
}

enum dcpi_image_kind dcpi_obj_kind(const struct dcpi_obj *obj)
{
	return obj->kind;
}

const char *dcpi_obj_code_note(const struct dcpi_obj *obj)
{
	return obj->code_note;
}

const char *dcpi_obj_lines_note(const struct dcpi_obj *obj)
{
	return obj->lines_note;
}

/* ---- code and lines --------------------------------------------------------- */

/* The lines of file, the debug file of st, checked to have st's build-id
 * on the descriptor read (the path may be another file's by now). */
static void open_lines_of(struct dcpi_obj *obj, const struct dcpi_symtab *st)
{
	const char *file = dcpi_symtab_debug_file(st);
	size_t idlen;
	const uint8_t *id = dcpi_symtab_build_id(st, &idlen);

	if (!file)
		return;
	if (dcpi_srcline_open_image(file, id, idlen, &obj->sl)) {
		obj->sl = NULL;
		set_note(&obj->lines_note, "no source lines: %s", dcpi_errmsg());
	}
}

/* The vmlinux candidates: the one named, else the usual places. */
static size_t vmlinux_candidates(const struct dcpi_obj *obj, char cands[3][512])
{
	const char *env = getenv("DCPI_VMLINUX");
	struct utsname u;
	size_t nc = 0;

	if (obj->o.vmlinux)
		snprintf(cands[nc++], 512, "%s", obj->o.vmlinux);
	else if (env && *env)
		snprintf(cands[nc++], 512, "%s", env);
	if (!uname(&u)) {
		snprintf(cands[nc++], 512, "/usr/lib/debug/boot/vmlinux-%s", u.release);
		snprintf(cands[nc++], 512, "/boot/vmlinux-%s", u.release);
	}
	return nc;
}

/* Take the candidate if it is the profiled kernel (same build-id) and its
 * code can be read; the KASLR slide from the two _text symbols. */
static int try_vmlinux(struct dcpi_obj *obj, const char *path)
{
	const struct dcpi_sym *k[1], *v[1];
	struct dcpi_symtab *st;

	if (!obj->build_id_len ||
	    dcpi_symtab_open(path, obj->build_id, obj->build_id_len, obj->o.sym, &st))
		return 0;
	if (dcpi_symtab_status(st) == DCPI_SYMTAB_OK &&
	    dcpi_symtab_find(obj->st, "_text", k, 1) == 1 &&
	    dcpi_symtab_find(st, "_text", v, 1) == 1 &&
	    !dcpi_disasm_open_image(dcpi_symtab_image_file(st), obj->build_id, obj->build_id_len,
				    &obj->dis)) {
		obj->vmlinux = st;
		obj->code_delta = k[0]->vaddr - v[0]->vaddr;
		return 1;
	}
	dcpi_symtab_close(st);
	return 0;
}

/* The running kernel's _text from KROOT/proc/kallsyms: 0 and *text, or
 * an error saying why not (addresses hidden from non-root read as 0). */
static int running_text(const char *path, uint64_t *text)
{
	char line[512];
	FILE *f = fopen(path, "re");
	int err = -ENOENT;

	if (!f)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	while (err == -ENOENT && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[64];

		if (sscanf(line, "%llx %c %63s", &a, &type, name) == 3 && !strcmp(name, "_text"))
			err = a ? (*text = a, 0)
				: dcpi_error(EPERM, "%s hides kernel addresses (kptr_restrict)", path);
	}
	fclose(f);
	return err == -ENOENT ? dcpi_error(ENOENT, "%s: no _text symbol", path) : err;
}

/* The code of the running kernel (KROOT/proc/kcore), when it is the
 * profiled one: same build-id; the KASLR slide from the two _text
 * addresses (the snapshot's and the running kernel's), since a reboot
 * since the profile may have moved it.  0, or an error saying why not. */
static int try_kcore(struct dcpi_obj *obj)
{
	const char *root = obj->o.kroot ? obj->o.kroot : "";
	char path[4200], have[2 * DCPI_BUILD_ID_MAX + 1];
	uint8_t id[DCPI_BUILD_ID_MAX];
	const struct dcpi_sym *k[1];
	uint64_t text = 0;
	int n, err;

	snprintf(path, sizeof(path), "%s/sys/kernel/notes", root);
	n = dcpi_buildid_notes_file(path, id, sizeof(id));
	if (n < 0)
		return n;
	if ((uint32_t)n != obj->build_id_len || memcmp(id, obj->build_id, (size_t)n)) {
		dcpi_hex(id, (size_t)n, have);
		return dcpi_error(ESTALE, "the running kernel is another build (build-id %s)",
				  n ? have : "none");
	}
	if (dcpi_symtab_find(obj->st, "_text", k, 1) != 1)
		return dcpi_error(ENOENT, "the kallsyms snapshot has no _text symbol");
	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	if ((err = running_text(path, &text)))
		return err;
	snprintf(path, sizeof(path), "%s/proc/kcore", root);
	if ((err = dcpi_disasm_open_kcore(path, &obj->dis))) {
		obj->dis = NULL;
		return err;
	}
	obj->code_delta = k[0]->vaddr - text;
	return 0;
}

static void open_vmlinux(struct dcpi_obj *obj)
{
	char cands[3][512], hex[2 * DCPI_BUILD_ID_MAX + 1] = "", why[1024];
	size_t nc = vmlinux_candidates(obj, cands);

	for (size_t i = 0; i < nc && !obj->vmlinux; i++)
		try_vmlinux(obj, cands[i]);
	if (obj->vmlinux)
		return;
	dcpi_hex(obj->build_id, obj->build_id_len, hex);
	if (!obj->build_id_len)
		snprintf(why, sizeof(why), "no build-id was recorded");
	else if (try_kcore(obj) == 0)
		return;
	else
		snprintf(why, sizeof(why), "%s", dcpi_errmsg());
	set_note(&obj->code_note, "kernel instructions are not shown: no readable kernel image "
		 "with build-id %s (looked for %s%s%s; set DCPI_VMLINUX), and not the running "
		 "kernel's memory: %s; addresses and samples are from the kallsyms snapshot",
		 *hex ? hex : "(none recorded)", cands[0], nc > 1 ? " and " : "",
		 nc > 1 ? cands[nc - 1] : "", why);
}

static void open_code(struct dcpi_obj *obj)
{
	const char *file = dcpi_symtab_image_file(obj->st);

	if (obj->kind == DCPI_IMAGE_KERNEL) {
		open_vmlinux(obj);
		return;
	}
	if (obj->kind == DCPI_IMAGE_MODULE) {
		set_note(&obj->code_note, "module instructions are not shown: only the kallsyms "
			 "snapshot is read for modules");
		return;
	}
	if (!file)
		set_note(&obj->code_note, "%s: no copy of the image, only its debug file: "
			 "instructions are not shown", obj->path);
	else if (dcpi_disasm_open_image(file, obj->build_id, obj->build_id_len, &obj->dis)) {
		obj->dis = NULL;
		set_note(&obj->code_note, "instructions are not shown: %s", dcpi_errmsg());
	}
}

struct dcpi_disasm *dcpi_obj_code(struct dcpi_obj *obj, uint64_t *delta)
{
	if (!obj->code_tried) {
		obj->code_tried = 1;
		open_code(obj);
	}
	if (delta)
		*delta = obj->code_delta;
	return obj->dis;
}

struct dcpi_srclines *dcpi_obj_lines(struct dcpi_obj *obj)
{
	if (obj->lines_tried)
		return obj->sl;
	obj->lines_tried = 1;
	if (obj->kind == DCPI_IMAGE_KERNEL) {
		dcpi_obj_code(obj, NULL);
		if (obj->vmlinux)
			open_lines_of(obj, obj->vmlinux);
	} else if (obj->kind != DCPI_IMAGE_MODULE) {
		open_lines_of(obj, obj->st);
	}
	return obj->sl;
}

/* ---- the cache ------------------------------------------------------------------- */

struct slot {
	char *key;
	struct dcpi_obj *obj;   /* NULL: the open failed with err, msg */
	int err;
	char *msg;
};

struct dcpi_objcache {
	struct dcpi_obj_opts o;
	htab_t index;           /* of struct slot, by key */
	size_t n;
};

static hashval_t slot_hash(const void *p)
{
	return htab_hash_string(((const struct slot *)p)->key);
}

static int slot_eq(const void *a, const void *b)
{
	return !strcmp(((const struct slot *)a)->key, ((const struct slot *)b)->key);
}

static void slot_free(void *p)
{
	struct slot *s = p;

	dcpi_obj_close(s->obj);
	free(s->msg);
	free(s->key);
	free(s);
}

struct dcpi_objcache *dcpi_objcache_new(const struct dcpi_obj_opts *o)
{
	struct dcpi_objcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (o)
		c->o = *o;
	c->index = htab_create_alloc(64, slot_hash, slot_eq, slot_free, calloc, free);
	if (!c->index) {
		free(c);
		return NULL;
	}
	return c;
}

void dcpi_objcache_free(struct dcpi_objcache *c)
{
	if (!c)
		return;
	htab_delete(c->index);
	free(c);
}

/* The identity: a file by path, build-id and size; the kernel and its
 * modules by path, the snapshot they are read from and their base. */
char *dcpi_obj_identity(const struct dcpi_profile *p, const char *platdir)
{
	char hex[2 * DCPI_BUILD_ID_MAX + 1];
	char *key;
	int r;

	dcpi_hex(p->build_id, p->build_id_len, hex);
	if (p->kind == DCPI_IMAGE_FILE)
		r = asprintf(&key, "%u\n%s\n%s\n%" PRIu64, p->kind, p->path, hex, p->size);
	else
		r = asprintf(&key, "%u\n%s\n%s\n%" PRIx64, p->kind, p->path, platdir,
			     p->text_start);
	return r < 0 ? NULL : key;
}

static int slot_open(struct dcpi_objcache *c, struct slot *s, const struct dcpi_profile *p,
		     const char *platdir)
{
	s->err = dcpi_obj_open(p, platdir, &c->o, &s->obj);
	if (s->err)
		s->msg = strdup(dcpi_errmsg());
	return s->err;
}

/* A failure seen before: the same error, the same message. */
static int slot_result(const struct slot *s, struct dcpi_obj **out)
{
	*out = s->obj;
	return s->obj ? 0 : dcpi_error(-s->err, "%s", s->msg ? s->msg : "open failed");
}

int dcpi_objcache_get(struct dcpi_objcache *c, const struct dcpi_profile *p,
		      const char *platdir, struct dcpi_obj **out)
{
	struct slot key = { dcpi_obj_identity(p, platdir), NULL, 0, NULL }, *s;
	void **at;

	*out = NULL;
	if (!key.key)
		return dcpi_error(ENOMEM, "out of memory");
	s = htab_find(c->index, &key);
	if (s) {
		free(key.key);
		return slot_result(s, out);
	}
	if (c->n >= DCPI_OBJCACHE_MAX) {
		free(key.key);
		return dcpi_error(ENOSPC, "more than %u images in one report", DCPI_OBJCACHE_MAX);
	}
	s = calloc(1, sizeof(*s));
	at = s ? htab_find_slot(c->index, &key, INSERT) : NULL;
	if (!at) {
		free(s);
		free(key.key);
		return dcpi_error(ENOMEM, "out of memory");
	}
	s->key = key.key;
	*at = s;
	c->n++;
	slot_open(c, s, p, platdir);
	return slot_result(s, out);
}
