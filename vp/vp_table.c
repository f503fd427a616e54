/* The samples by load PC: one fixed table, mapped at start and shared by
 * the process's threads, filled from their signal handlers.
 *
 * Open addressing keyed by the load's PC (hashed with a random key of the
 * run: the PCs are the program's choice), at most VP_PROBES slots looked
 * at; a key is claimed by compare-and-swap from 0, and never released
 * until the process forks (the child's table starts empty).  Each entry
 * has a lock taken by exchange and never waited for in a handler: a
 * handler finding it held counts the sample as busy.  Only the flush
 * waits, a bounded time, for a handler that holds one.
 *
 * Hot values: Space-Saving (Metwally, Agrawal and El Abbadi, 2005) with
 * VP_HOT counters.  A value seen is counted on its counter; an unseen one
 * takes the least counter's place and its count plus one.  Every value
 * more frequent than 1/VP_HOT of the samples is kept, and a kept count
 * over-estimates the value's true count by at most the least count. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "vp.h"

#define VP_SLOTS 8192 /* a power of two */
#define VP_PROBES 32

static struct vp_entry *table;
static uint64_t seed;

int vp_table_init(void)
{
	void *p = mmap(NULL, VP_SLOTS * sizeof(struct vp_entry), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	table = p;
	seed = vp_random();
	return 0;
}

void vp_table_reset(void)
{
	/* fresh zero pages in place: cheaper than clearing the parent's copy */
	mmap(table, VP_SLOTS * sizeof(struct vp_entry), PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	seed = vp_random();
}

void vp_hot_add(struct vp_hot *h, unsigned *nhot, uint64_t v, uint64_t count)
{
	unsigned least = 0;

	for (unsigned i = 0; i < *nhot; i++) {
		if (h[i].value == v) {
			h[i].count += count;
			return;
		}
		if (h[i].count < h[least].count)
			least = i;
	}
	if (*nhot < VP_HOT) {
		h[*nhot].value = v;
		h[*nhot].count = count;
		(*nhot)++;
		return;
	}
	h[least].value = v;
	h[least].count += count;
}

static struct vp_entry *find(uint64_t pc)
{
	uint64_t h = dcpi_mix64(pc ^ seed);

	for (unsigned i = 0; i < VP_PROBES; i++) {
		struct vp_entry *e = &table[(h + i) & (VP_SLOTS - 1)];
		uint_fast64_t k = atomic_load_explicit(&e->pc, memory_order_acquire);

		if (k == pc)
			return e;
		if (k == 0) {
			uint_fast64_t zero = 0;

			if (atomic_compare_exchange_strong_explicit(&e->pc, &zero, pc,
								    memory_order_acq_rel,
								    memory_order_acquire) ||
			    zero == pc)
				return e;
		}
	}
	return NULL;
}

enum vp_skip vp_table_add(uint64_t pc, uint64_t cycles, uint64_t value)
{
	struct vp_entry *e = find(pc);
	int b;

	if (!e)
		return VP_FULL;
	if (atomic_exchange_explicit(&e->lock, 1, memory_order_acquire))
		return VP_BUSY;
	/* samples last: an entry read half-updated (by a flush in a handler
	 * that interrupted this one, which finds it locked) never has more
	 * in its bins or values than in samples */
	e->cycles = dcpi_sat_add(e->cycles, cycles);
	b = dcpi_bins_find(&vp_cfg.bins, cycles);
	if (b < 0)
		e->outside++;
	else
		e->bin[b]++;
	vp_hot_add(e->hot, &e->nhot, value, 1);
	atomic_signal_fence(memory_order_seq_cst);
	e->samples++;
	atomic_store_explicit(&e->lock, 0, memory_order_release);
	return VP_NSKIP;
}

size_t vp_table_snapshot_size(void)
{
	return VP_SLOTS * sizeof(struct vp_entry);
}

struct vp_entry *vp_table_snapshot(size_t *n, uint64_t *busy)
{
	struct vp_entry *out = vp_map(vp_table_snapshot_size()); /* touched as filled */

	*n = 0;
	*busy = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < VP_SLOTS; i++) {
		struct vp_entry *e = &table[i];
		int tries = 0;

		if (!atomic_load_explicit(&e->pc, memory_order_acquire))
			continue;
		/* a handler holds it for a few hundred nanoseconds; a thread
		 * stopped in one (a debugger, or this thread's own handler
		 * that the flush interrupted) is not waited for past ~1000
		 * yields, and its entry is left out, its samples busy */
		while (atomic_exchange_explicit(&e->lock, 1, memory_order_acquire) && ++tries < 1000)
			sched_yield();
		if (tries >= 1000) {
			*busy += e->samples;
			continue;
		}
		memcpy(&out[*n], e, sizeof(*e));
		atomic_store_explicit(&e->lock, 0, memory_order_release);
		(*n)++;
	}
	return out;
}
