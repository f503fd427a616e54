/* dcpi_dyn: telling dcpi about code generated at run time, as JITs do;
 * DCPI's DBG$DYN_BEGIN, DBG$DYN_ADD and DBG$DYN_END for Linux.
 *
 *   if (dcpi_dyn_begin() == 0) {          one batch at a time per process
 *           dcpi_dyn_add(&code1);         each piece: where, how long, name,
 *           dcpi_dyn_add(&code2);         optionally source lines
 *           dcpi_dyn_end();               the batch is published here
 *   }
 *
 * How it reaches the daemon: the first batch of a process creates
 * DIR/jit-PID.dump (DIR: $DCPI_DYN_DIR, else /tmp), mode 0600, and maps
 * it executable, the jitdump convention of the Linux perf tool: dcpid
 * finds the file through that mapping of the running process, as it finds
 * a runtime's jitdump, whatever user the JIT runs as (no socket, no
 * privilege).  Each batch is appended with one write(2) as jitdump records
 * (a DEBUG_INFO record for the lines, then a LOAD record with a copy of
 * the code bytes), so dcpid never sees half a batch; dcpid names the
 * samples in the code, keeps the code in its database, and dcpilist
 * disassembles it after the process and the file are gone.  perf
 * inject --jit reads the same file.
 *
 * Cost: dcpi_dyn_add copies the name, lines and code into a buffer;
 * dcpi_dyn_end makes one write(2).  Nothing else, whether or not a daemon
 * runs.  DCPI_DYN=0 in the environment makes every call a no-op that
 * returns 0.
 *
 * Threads: dcpi_dyn_begin takes a process-wide lock that dcpi_dyn_end
 * releases; do not nest batches.  After fork(2), the child's first batch
 * creates the child's own file.  The code must stay at start for as long
 * as it may run; code freed or moved is described again by a new add (the
 * newest description of an address wins).
 *
 * Every function returns 0 or a negative errno value; nothing is printed.
 */
#ifndef DCPI_DYN_H
#define DCPI_DYN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dcpi_dyn_line {
	size_t offset;          /* from the code's start: where the line's code begins */
	uint32_t line;          /* 1-based */
	const char *file;       /* NUL-terminated */
};

struct dcpi_dyn_code {
	const void *start;      /* the code as it runs */
	size_t size;            /* bytes, > 0 and at most DCPI_DYN_CODE_MAX */
	const char *name;       /* the procedure's name, NUL-terminated, not empty */
	const struct dcpi_dyn_line *lines; /* nlines entries, or NULL */
	size_t nlines;
};

#define DCPI_DYN_CODE_MAX ((size_t)16 << 20)
#define DCPI_DYN_BATCH_MAX ((size_t)64 << 20) /* bytes of records in one batch */

/* Start a batch (creating the process's file on the first one). */
int dcpi_dyn_begin(void);
/* Add one piece of code to the batch: -EINVAL for a bad description,
 * -E2BIG past DCPI_DYN_BATCH_MAX, -EPERM outside a batch. */
int dcpi_dyn_add(const struct dcpi_dyn_code *code);
/* Publish the batch and end it. */
int dcpi_dyn_end(void);

#ifdef __cplusplus
}
#endif

#endif
