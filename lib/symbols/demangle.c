/* Demangling with libiberty: see dcpi/demangle.h. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "dcpi/demangle.h"

/* A demangled name being written by libiberty's callback.  Substitutions
 * let a name of a few hundred bytes demangle to gigabytes (each level of
 * nested back-references doubles it), so past DCPI_DEMANGLE_MAX bytes the
 * callback jumps out of the demangler: it is the printing, not the
 * output, that takes the time.  The callback interfaces allocate nothing
 * on the heap (their trees and printing state live on the stack), so the
 * jump leaks nothing. */
struct dm_out {
	char *buf;
	size_t len, cap;
	jmp_buf out;
};

static void dm_put(const char *s, size_t n, void *opaque)
{
	struct dm_out *o = opaque;

	if (n > DCPI_DEMANGLE_MAX - o->len)
		longjmp(o->out, 1);
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 128;
		char *b;

		while (cap < o->len + n + 1)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (!b)
			longjmp(o->out, 1);
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* One demangler's try into o (emptied first); nonzero on success.  The
 * setjmp is here, where nothing local changes after it: o lives in the
 * caller. */
static int dm_try(struct dm_out *o, const char *raw, int opts, int rust)
{
	o->len = 0;
	if (setjmp(o->out))
		return 0;
	if (rust)
		return rust_demangle_callback(raw, opts | DMGL_RUST, dm_put, o);
	return cplus_demangle_v3_callback(raw, opts, dm_put, o);
}

/* Only names that can be mangled reach the demangler: it is the costly
 * part of loading a large C symbol table, and C names never demangle.
 * "_Z" is Itanium C++ and legacy Rust (which libiberty recognises by its
 * hash suffix when asked for Rust); "_R" is Rust v0. */
char *dcpi_demangle(const char *raw)
{
	int opts = DMGL_PARAMS | DMGL_ANSI;
	struct dm_out o = { 0 };
	int ok;

	if (strncmp(raw, "_Z", 2) && strncmp(raw, "_R", 2))
		return NULL;
	ok = dm_try(&o, raw, opts, 1);
	if (!ok && raw[1] == 'Z')
		ok = dm_try(&o, raw, opts, 0);
	if (!ok || !o.len) {
		free(o.buf);
		return NULL;
	}
	o.buf[o.len] = '\0';
	return o.buf;
}
