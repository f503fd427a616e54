/* pprof export: a gzipped perftools.profiles.Profile protocol buffer, the
 * format of Go's pprof, Google Cloud Profiler, Pyroscope and others.
 *
 * What it holds, from the chosen profiles of a set:
 *  - one sample type per event: type = the event's name, unit "count"
 *    (the values are samples); period_type and period are the first
 *    event's ("nanoseconds" for clock events, else "count"), and a comment
 *    per event gives its period; default_sample_type is the column the
 *    caller names (dcpiprof's sort column), as pprof otherwise shows the
 *    last;
 *  - one mapping per image identity (path, build-id in hex), with
 *    has_functions / has_filenames / has_line_numbers / has_inline_frames
 *    saying what the symbols and DWARF gave, and the address range of the
 *    image's executable PT_LOAD segment (extended down over the segments
 *    below it that map file offsets to addresses by the same difference,
 *    as dcpi_symtab_segment does) as the loader maps it at its link
 *    addresses (memory_start = p_vaddr, memory_limit = p_vaddr + p_memsz,
 *    file_offset = p_offset), so that pprof's -disasm and -weblist find
 *    the code (the kernel and modules: their text; code no segment is
 *    known of: the addresses sampled);
 *  - one location per sampled address of an image (its virtual address,
 *    inside its mapping), whose lines are the source frames innermost
 *    first, the last being the function the others were inlined into and
 *    named as dcpiprof names it; an address without a line has one line
 *    naming its procedure (line 0);
 *  - one sample per (location, host, process) with a value per event and
 *    the labels "host" and, for per-process profiles, "pid".
 * The values add up to the set's totals: nothing is left out.
 *
 * Encoded by hand over libdcpi's varint buffer (a few dozen lines of
 * protobuf wire format) rather than with protobuf-c, whose generated code
 * would need the .proto at build time for six small messages; the test
 * decodes the output with protoc against the published schema. */
#ifndef DCPI_PPROF_H
#define DCPI_PPROF_H

#include <stdint.h>

#include "dcpi/obj.h"
#include "dcpi/profset.h"

#define DCPI_PPROF_MAX_BYTES ((size_t)1 << 30)   /* uncompressed */

struct dcpi_pprof_opts {
	int64_t time_nanos;      /* when the profile starts (0: unknown) */
	int64_t duration_nanos;  /* how long it covers (0: unknown) */
	unsigned mode;           /* of the file written; 0: 0644 */
	unsigned default_col;    /* the set column pprof shows first (dcpiprof's
				    sort column); 0: the first */
};

/* Write the pprof profile of the entries with chosen[i] set (NULL: all)
 * to path, atomically.  0, or -ENOMEM, -EFBIG (over DCPI_PPROF_MAX_BYTES),
 * or the write's error, with a message. */
int dcpi_pprof_write(const char *path, const struct dcpi_profset *set,
		     const unsigned char *chosen, struct dcpi_objcache *objs,
		     const struct dcpi_pprof_opts *o);

/* The call stacks of set's epochs and hosts instead (dcpi/callgraph.h),
 * of the labels label (K=V pairs; NULL: all): one sample per distinct
 * (stack, host) whose locations are its frames, leaf first, each located
 * and named as above (a caller's frame is its return address less one:
 * the call); a stack whose walk stopped short of the outermost frame has
 * the label "unwind" saying why ("copy ran out", ...).  Stacks files that
 * cannot be read are left out and counted in *nbad. */
int dcpi_pprof_write_stacks(const char *path, const struct dcpi_profset *set, const char *label,
			    struct dcpi_objcache *objs, const struct dcpi_pprof_opts *o,
			    size_t *nbad);

#endif
