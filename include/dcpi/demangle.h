/* C++ and Rust symbol names, demangled with libiberty. */
#ifndef DCPI_DEMANGLE_H
#define DCPI_DEMANGLE_H

/* The longest demangled name, in bytes. */
#define DCPI_DEMANGLE_MAX (64 * 1024)

/* Demangle a C++ (Itanium) or Rust (legacy and v0) name with libiberty,
 * with parameter types, in the non-verbose form (Rust without the
 * "::h<hash>" suffix or crate disambiguators: noise in a report).
 * Returns a malloc'd string the caller frees, or NULL when raw is not a
 * mangled name, when its demangled form would pass DCPI_DEMANGLE_MAX
 * bytes (back-references let a short name demangle to gigabytes: the
 * demangler stops there, in time and memory bounded by the limit), or on
 * allocation failure.  The caller shows the raw name then. */
char *dcpi_demangle(const char *raw);

#endif
