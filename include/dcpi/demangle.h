/* C++ and Rust symbol names, demangled with libiberty. */
#ifndef DCPI_DEMANGLE_H
#define DCPI_DEMANGLE_H

/* Demangle a C++ (Itanium) or Rust (legacy and v0) name with libiberty,
 * with parameter types, in the non-verbose form (Rust without the
 * "::h<hash>" suffix or crate disambiguators: noise in a report).
 * Returns a malloc'd string the caller frees, or NULL when raw is not a
 * mangled name (or on allocation failure). */
char *dcpi_demangle(const char *raw);

#endif
