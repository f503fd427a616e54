/* Each thread's stack top, for cutting its stack copies: see
 * dcpi/stacktops.h.
 *
 * A slot is one 64-bit word: the thread id in the top 22 bits (Linux
 * thread ids are below PID_MAX_LIMIT, 2^22), the top in 32-byte units in
 * the low 42 (user addresses are below 2^47).  0 is an empty slot. */
#include <stdatomic.h>
#include <stdlib.h>

#include "dcpi/stacktops.h"

#define SLOTS 8192u             /* 64 KiB */
#define TID_BITS 22
#define TOP_BITS 42
#define TOP_UNIT 32u
#define USER_END ((uint64_t)1 << 47)
#define NEAR 65536u              /* the largest copy perf takes */

struct dcpi_stack_tops {
	_Atomic uint64_t slot[SLOTS];
};

struct dcpi_stack_tops *dcpi_stack_tops_new(void)
{
	struct dcpi_stack_tops *t = calloc(1, sizeof(*t));

	if (t)
		for (unsigned i = 0; i < SLOTS; i++)
			atomic_init(&t->slot[i], 0);
	return t;
}

void dcpi_stack_tops_free(struct dcpi_stack_tops *t)
{
	free(t);
}

static int tid_ok(int32_t tid)
{
	return tid > 0 && tid < (1 << TID_BITS);
}

static _Atomic uint64_t *slot_of(const struct dcpi_stack_tops *t, int32_t tid)
{
	/* neighbouring ids (a process's threads) land in neighbouring slots */
	return (_Atomic uint64_t *)&t->slot[(uint32_t)tid % SLOTS];
}

uint64_t dcpi_stack_tops_get(const struct dcpi_stack_tops *t, int32_t tid)
{
	uint64_t v;

	if (!t || !tid_ok(tid))
		return 0;
	v = atomic_load_explicit(slot_of(t, tid), memory_order_relaxed);
	if (v >> TOP_BITS != (uint64_t)tid)
		return 0;
	return (v & (((uint64_t)1 << TOP_BITS) - 1)) * TOP_UNIT;
}

void dcpi_stack_tops_set(struct dcpi_stack_tops *t, int32_t tid, uint64_t top)
{
	uint64_t units, had;

	if (!t || !tid_ok(tid) || !top || top > USER_END)
		return;
	units = (top + TOP_UNIT - 1) / TOP_UNIT;
	/* a walk that ends a little lower than another (ld.so's entry point
	   and the program's are both outermost) leaves the higher: only a
	   top far from the last (a reused id's new stack) replaces it */
	had = dcpi_stack_tops_get(t, tid);
	if (had > top && had - top < NEAR)
		return;
	atomic_store_explicit(slot_of(t, tid), (uint64_t)tid << TOP_BITS | units,
			      memory_order_relaxed);
}

void dcpi_stack_tops_drop(struct dcpi_stack_tops *t, int32_t tid)
{
	_Atomic uint64_t *s;
	uint64_t v;

	if (!t || !tid_ok(tid))
		return;
	s = slot_of(t, tid);
	v = atomic_load_explicit(s, memory_order_relaxed);
	/* only the thread's own: another may hold the slot by now */
	if (v >> TOP_BITS == (uint64_t)tid)
		atomic_compare_exchange_strong_explicit(s, &v, 0, memory_order_relaxed,
							memory_order_relaxed);
}

uint64_t dcpi_stack_tops_keep(uint64_t top, uint64_t sp, uint64_t dyn)
{
	/* a top at or below sp: another stack than the one the top was
	   seen on (a signal stack, a coroutine's, a reused id): whole */
	if (!top || top <= sp || top - sp >= dyn)
		return dyn;
	return top - sp;
}
