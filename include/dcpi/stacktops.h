/* Where each thread's stack ends, as far as a walk needs it.
 *
 * A sample's user-stack copy is the -stack-bytes above its stack pointer
 * (16 KiB by default), whatever the stack holds.  A process's first thread
 * has little above its frames (the copy stops where its stack mapping
 * does), but another thread's stack sits below other mappings: its every
 * copy runs the whole 16 KiB, most of it above the thread's outermost
 * frame, where no walk reads.  Once a walk of a thread's sample has
 * reached its outermost frame, the highest byte it read is where the
 * thread's stack ends for every later walk (the outermost frame does not
 * move), and the thread's later copies can be cut there as they are
 * staged, before the collector sees them.
 *
 * The collector sets a thread's top after a whole walk and drops it after
 * a walk that ran out of copy (a thread id reused by a thread whose stack
 * lies elsewhere: one sample's walk is cut short, the next copies are
 * whole); the ring-reading thread reads the tops as it copies.  The table
 * is a fixed array of slots, one word each, read and written with relaxed
 * atomics: no lock, no allocation after it is made, and a thread whose
 * slot another holds is simply not cut. */
#ifndef DCPI_STACKTOPS_H
#define DCPI_STACKTOPS_H

#include <stdint.h>

struct dcpi_stack_tops;

/* NULL when out of memory. */
struct dcpi_stack_tops *dcpi_stack_tops_new(void);
void dcpi_stack_tops_free(struct dcpi_stack_tops *t);

/* Thread tid's top: the address (rounded up to 32 bytes) below which its
 * walks read; 0 when not known.  t may be NULL (then 0). */
uint64_t dcpi_stack_tops_get(const struct dcpi_stack_tops *t, int32_t tid);
/* Set it from a whole walk (a thread id outside 1..2^22-1 or a top past
 * user space is not kept): a top lower than the one known by less than
 * 64 KiB leaves it (walks that end in different outermost frames, ld.so's
 * entry and the program's, end their reads a few bytes apart), any other
 * replaces it.  Drop it.  t may be NULL (then nothing). */
void dcpi_stack_tops_set(struct dcpi_stack_tops *t, int32_t tid, uint64_t top);
void dcpi_stack_tops_drop(struct dcpi_stack_tops *t, int32_t tid);

/* How many bytes of a copy taken at sp, dyn bytes long, a walk can need
 * given the thread's top (0: not known): dyn, or less when the top lies
 * inside the copy. */
uint64_t dcpi_stack_tops_keep(uint64_t top, uint64_t sp, uint64_t dyn);

#endif
