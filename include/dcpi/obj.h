/* One handle per image: everything the tools read about the code a
 * profile describes, opened once and shared (elfutils' Dwfl_Module is the
 * model).
 *
 * An obj is opened from a profile's identity (kind, path, build-id, size)
 * and its platform directory (whose kallsyms snapshot the kernel and its
 * modules are read from):
 *  - symbols at once: the ELF image with its build-id checked and its
 *    debug file searched (dcpi_symtab_open), or the kallsyms snapshot;
 *  - code (a Capstone disassembler) and DWARF lines on first use: for the
 *    kernel only from a vmlinux whose build-id is the profiled kernel's,
 *    else (code only) from the running kernel's memory if it is that
 *    kernel (/proc/kcore, as root).
 * What cannot be had is remembered with the sentence that says why
 * (dcpi_obj_code_note, dcpi_obj_lines_note), and asking again neither
 * retries nor says it twice.
 *
 * An objcache hands out one obj per identity for a whole report: the
 * commands and the analysis ask it instead of opening files themselves.
 * A failed open is remembered too: the same error and message come back
 * without touching the file system again.
 *
 * Ownership: an obj owns its symtab, disassembler and DWARF; pointers it
 * returns live until dcpi_obj_close() (for a cached obj, until
 * dcpi_objcache_free()).  Not thread-safe.
 */
#ifndef DCPI_OBJ_H
#define DCPI_OBJ_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/disasm.h"
#include "dcpi/profile.h"
#include "dcpi/srcline.h"
#include "dcpi/symtab.h"

#define DCPI_OBJCACHE_MAX 65536   /* identities one cache holds */

/* The obj keeps the pointers given here: what they point to must outlive
 * it (and the cache). */
struct dcpi_obj_opts {
	const struct dcpi_symtab_opts *sym;  /* NULL: defaults */
	const char *vmlinux;   /* kernel image to disassemble; NULL: $DCPI_VMLINUX,
				  then /usr/lib/debug/boot/vmlinux-RELEASE and
				  /boot/vmlinux-RELEASE (build-id must match) */
	const char *kroot;     /* the running kernel, when no vmlinux is found: its
				  code from KROOT/proc/kcore, if KROOT/sys/kernel/notes
				  has the profiled build-id, moved by the difference of
				  the _text in KROOT/proc/kallsyms and in the snapshot
				  (KASLR); NULL: "" (the live system) */
};

struct dcpi_obj;

/* Open the image profile p describes; platdir is the platform directory p
 * was read from (its kallsyms snapshot serves KERNEL and MODULE
 * profiles).  Errors: -EINVAL for anonymous and unknown-image profiles
 * (they have no symbols), and dcpi_symtab_open's (-ENOENT, -ESTALE,
 * -ENOEXEC, -EBADMSG), each with a message naming the file. */
int dcpi_obj_open(const struct dcpi_profile *p, const char *platdir,
		  const struct dcpi_obj_opts *o, struct dcpi_obj **out);
void dcpi_obj_close(struct dcpi_obj *obj);

/* The symbols (never NULL for an open obj). */
struct dcpi_symtab *dcpi_obj_symtab(const struct dcpi_obj *obj);
/* The profile path the obj was opened for. */
const char *dcpi_obj_path(const struct dcpi_obj *obj);
enum dcpi_image_kind dcpi_obj_kind(const struct dcpi_obj *obj);

/* The disassembler of the image's code, opened on first call, or NULL
 * when there is no code to show (then dcpi_obj_code_note says why).
 * *delta (may be NULL) is symtab vaddr - code vaddr: nonzero for a
 * KASLR-slid kernel read from its vmlinux. */
struct dcpi_disasm *dcpi_obj_code(struct dcpi_obj *obj, uint64_t *delta);
/* The DWARF line tables, opened on first call (after dcpi_obj_code for the
 * kernel, whose lines come from its vmlinux), or NULL (then
 * dcpi_obj_lines_note says why, or is NULL when there is nothing to say:
 * an image with no debug file at all). */
struct dcpi_srclines *dcpi_obj_lines(struct dcpi_obj *obj);
/* Sentences for the tools to show, or NULL. */
const char *dcpi_obj_code_note(const struct dcpi_obj *obj);
const char *dcpi_obj_lines_note(const struct dcpi_obj *obj);

/* The identity key of p's image as the cache uses it (file: kind, path,
 * build-id, size; kernel and modules: kind, path, platform directory,
 * base), malloc'd; NULL on ENOMEM. */
char *dcpi_obj_identity(const struct dcpi_profile *p, const char *platdir);

/* ---- the cache ----------------------------------------------------------- */

struct dcpi_objcache;

/* o is kept (see dcpi_obj_opts); NULL: defaults.  NULL on ENOMEM. */
struct dcpi_objcache *dcpi_objcache_new(const struct dcpi_obj_opts *o);
void dcpi_objcache_free(struct dcpi_objcache *c);

/* The obj of p's identity (file: path + build-id + size; kernel and
 * modules: path + platform directory + base), opened on the first ask.
 * Returns 0 and *out (owned by the cache), or the error of the first open
 * with its message restored; -ENOSPC past DCPI_OBJCACHE_MAX identities. */
int dcpi_objcache_get(struct dcpi_objcache *c, const struct dcpi_profile *p,
		      const char *platdir, struct dcpi_obj **out);

#endif
