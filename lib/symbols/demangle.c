/* Demangling with libiberty: see dcpi/demangle.h. */
#include <string.h>

#include <libiberty/demangle.h>

#include "dcpi/demangle.h"

/* Only names that can be mangled reach the demangler: it is the costly
 * part of loading a large C symbol table, and C names never demangle.
 * "_Z" is Itanium C++ and legacy Rust (which libiberty recognises by its
 * hash suffix when asked for Rust); "_R" is Rust v0. */
char *dcpi_demangle(const char *raw)
{
	int opts = DMGL_PARAMS | DMGL_ANSI;
	char *d;

	if (strncmp(raw, "_Z", 2) && strncmp(raw, "_R", 2))
		return NULL;
	if (raw[1] == 'R')
		return cplus_demangle(raw, opts | DMGL_RUST);
	d = cplus_demangle(raw, opts | DMGL_RUST);
	if (d)
		return d;
	return cplus_demangle(raw, opts | DMGL_GNU_V3);
}
