/* Kernel symbol snapshots in a platform directory. */
#ifndef DCPI_SNAPSHOT_H
#define DCPI_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"

/* Snapshot the kernel's symbols into a platform directory: procdir's
 * kallsyms gzip-compressed as kallsyms.gz (a fifth of its size: it is
 * most of an epoch's disk otherwise) and modules as it is (absent on a
 * kernel without modules, which is not an error).  procdir is normally
 * "/proc".  All writes atomic. */
#define DCPI_SNAPSHOT_MAX ((size_t)256 << 20)
/* The kernel's padding before each function (CONFIG_FUNCTION_PADDING):
 * "__pfx_NAME", half of kallsyms' lines on 6.x kernels.  Snapshots leave
 * them out and the readers skip them (as perf does): a sample in a
 * padding, which holds no code unless call-depth tracking is on, is
 * counted to the function before it. */
#define DCPI_KALLSYMS_PADDING "__pfx_"
int dcpi_snapshot_kernel(const char *platdir, const char *procdir, unsigned mode);
/* The same with procdir's kallsyms already read (dcpi_snapshot_read):
 * /proc/kallsyms takes the kernel tens of milliseconds to print, and a
 * daemon that reads it to find the kernel's images need not twice. */
int dcpi_snapshot_kernel_text(const char *platdir, const struct dcpi_buf *kallsyms,
			      const char *procdir, unsigned mode);
/* The same, and *kept (when not NULL; released first) the text written,
 * uncompressed, for dcpi_snapshot_prune when the epoch closes. */
int dcpi_snapshot_kernel_keep(const char *platdir, const struct dcpi_buf *kallsyms,
			      const char *procdir, unsigned mode, struct dcpi_buf *kept);
/* dcpi_snapshot_kernel_keep in two steps, so that the first (tens of
 * milliseconds of CPU) can be done ahead, before a command starts:
 * _make leaves in *text the text to keep and in *gz the compressed file
 * (both released first; untouched on error), _write writes gz and
 * procdir's modules into platdir. */
int dcpi_snapshot_kernel_make(const struct dcpi_buf *kallsyms, struct dcpi_buf *text,
			      struct dcpi_buf *gz);
int dcpi_snapshot_kernel_write(const char *platdir, const struct dcpi_buf *gz,
			       const char *procdir, unsigned mode);
/* procdir's file name read whole, as a stream (/proc files report size
 * 0), up to DCPI_SNAPSHOT_MAX; appended to out. */
int dcpi_snapshot_read(const char *procdir, const char *name, struct dcpi_buf *out);

/* The kallsyms snapshot of a platform directory: kallsyms.gz, or the
 * uncompressed kallsyms older databases hold.  -ENOENT when neither. */
int dcpi_snapshot_kallsyms_path(const char *platdir, char *out, size_t len);


/* Cutting a snapshot down when its epoch closes: kallsyms holds every
 * kernel procedure, and an epoch samples a few (0.7 MB gzipped on a 6.18
 * kernel, most of a short run's database).  dcpi_snapshot_prune_text
 * appends to out the lines of text (kallsyms' form) that name the
 * procedures at the sorted addresses addrs: for each, the symbols at the
 * greatest address at or below it and the next symbol of the same owner
 * (vmlinux, or the module in brackets), which bounds the procedure's size
 * for the readers as in the whole file; and _text, _stext and _etext
 * (the KASLR slide), and any line not of kallsyms' form, in their order. */
int dcpi_snapshot_prune_text(const struct dcpi_buf *text, const uint64_t *addrs, size_t naddrs,
			     struct dcpi_buf *out);
/* The kernel addresses sampled in a platform directory, sorted (repeats
 * kept): every profile's rows of kind kernel or module (a module's from its
 * base), every host's, and every kernel frame of its stacks files.  An
 * unreadable profile or stacks file is an error: nothing is cut then. */
int dcpi_snapshot_sampled(const char *platdir, uint64_t **addrs, size_t *naddrs);
/* kallsyms.gz of platdir rewritten (atomically) as text cut down to what
 * platdir's files sampled.  text is the whole snapshot the epoch began
 * with (dcpi_snapshot_kernel_keep's kept): pruning twice loses nothing. */
int dcpi_snapshot_prune(const char *platdir, const struct dcpi_buf *text, unsigned mode);

#endif
