/* Every sampled address of a profile set, named: what the exports (pprof,
 * folded stacks) write.  For each chosen profile and each of its rows:
 * the image, the address, the procedure (named as dcpi_procs_name names
 * it, so code no symbol covers keeps its place), the source frames when
 * DWARF has them (the inlined callees innermost first, then the function
 * they were inlined into), and the counts by set column.
 *
 * Nothing is dropped: a row whose address cannot be placed (symbols
 * unreadable, no segment holds the offset) is still given, with
 * has_vaddr 0 and no frames.  The totals of the walk are the set's.
 *
 * Lifetime: everything a callback gets is valid during that call only
 * (strings belong to the objs of the cache and the set, which outlive
 * the walk). */
#ifndef DCPI_ADDRS_H
#define DCPI_ADDRS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/obj.h"
#include "dcpi/profset.h"
#include "dcpi/srcline.h"

#define DCPI_ADDR_MAX_FRAMES (DCPI_SRCLINE_MAX_INLINE + 1)

struct dcpi_addr_frame {
	const char *function;   /* "??" when DWARF names none */
	const char *file;       /* "??" when unknown */
	unsigned line;          /* 0: unknown */
};

struct dcpi_addr {
	const struct dcpi_profset_entry *e;  /* the profile (path, build-id, host) */
	uint64_t offset;        /* as the profile stores it */
	uint64_t vaddr;         /* the image's virtual address (kernel: runtime) */
	int has_vaddr;
	/* The mapping that holds vaddr, as the loader makes it (pprof's
	   Mapping): a file's PT_LOAD segment (vaddr, vaddr + memsz, its file
	   offset), the kernel's or a module's text (offset 0).  has_map 0 when
	   neither is known (no symbols, anonymous code, an old profile). */
	uint64_t map_start, map_limit, map_offset;
	int has_map;
	const char *procedure;  /* never NULL */
	size_t nframes;         /* 0: no source line known */
	struct dcpi_addr_frame frames[DCPI_ADDR_MAX_FRAMES];   /* innermost first */
	uint64_t counts[DCPI_MAX_EVENTS];   /* by set column */
};

/* Call cb for every row of every entry with chosen[i] set (NULL: all), in
 * set order.  Symbols and lines come from objs.  A non-zero return from cb
 * stops the walk and is returned; otherwise 0 (or -ENOMEM). */
typedef int (*dcpi_addr_cb)(void *arg, const struct dcpi_addr *a);
int dcpi_addrs_walk(const struct dcpi_profset *set, const unsigned char *chosen,
		    struct dcpi_objcache *objs, dcpi_addr_cb cb, void *arg);

/* One address of the image e's profile describes (e need hold no rows:
 * a stack's frame), named as the walk names them; the procedure's name is
 * kept in *proc (grown with realloc; the caller frees it).  0 or -ENOMEM. */
int dcpi_addrs_one(struct dcpi_objcache *objs, const struct dcpi_profset_entry *e,
		   uint64_t offset, struct dcpi_addr *a, char **proc, size_t *pcap);

#endif
