/* What decoding found, by PC: Capstone takes 5-10 us to decode the few
 * instructions from a PC to its load, two thirds of the handler's time,
 * while a program's samples fall on the same few PCs again and again.
 *
 * One direct-mapped table shared by the threads, each slot a PC, the code
 * bytes the result rests on (at most VP_DCACHE_BYTES: longer windows are
 * not kept) and the result.  A hit needs the same bytes at the PC now,
 * compared whole, so code that changed (JIT code, a library unloaded and
 * another mapped at its address) is decoded again.  Slots are written
 * under a sequence count taken by compare-and-swap (a writer finding it
 * taken gives up: never wait in a handler) and read optimistically: a
 * read that saw the count move is a miss. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "vp.h"

#define VP_DCACHE_SLOTS 4096 /* a power of two */
#define VP_DCACHE_BYTES 64

struct vp_dslot {
	atomic_uint seq; /* odd while written */
	uint64_t pc;     /* 0: empty */
	struct vp_op op;
	uint8_t code[VP_DCACHE_BYTES];
};

static struct vp_dslot *slots;
static uint64_t key;

int vp_dcache_init(void)
{
	void *p = mmap(NULL, VP_DCACHE_SLOTS * sizeof(struct vp_dslot), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	slots = p;
	key = vp_random();
	return 0;
}

static struct vp_dslot *slot_of(uint64_t pc)
{
	return &slots[dcpi_mix64(pc ^ key) & (VP_DCACHE_SLOTS - 1)];
}

int vp_dcache_get(uint64_t pc, size_t avail, struct vp_op *op)
{
	struct vp_dslot *s = slot_of(pc);
	unsigned seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	uint8_t want[VP_DCACHE_BYTES], now[VP_DCACHE_BYTES];
	uint64_t spc;

	if (seq & 1)
		return 0;
	spc = s->pc;
	memcpy(op, &s->op, sizeof(*op));
	memcpy(want, s->code, sizeof(want));
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq || spc != pc ||
	    !op->len || op->len > VP_DCACHE_BYTES || op->len > avail)
		return 0;
	return vp_probe_copy(now, (const void *)(uintptr_t)pc, op->len) == op->len &&
	       !memcmp(now, want, op->len);
}

void vp_dcache_put(uint64_t pc, const uint8_t *code, const struct vp_op *op)
{
	struct vp_dslot *s = slot_of(pc);
	unsigned seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	if (!op->len || op->len > VP_DCACHE_BYTES || (seq & 1) ||
	    !atomic_compare_exchange_strong_explicit(&s->seq, &seq, seq + 1, memory_order_acquire,
						     memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	s->pc = pc;
	memcpy(&s->op, op, sizeof(*op));
	memcpy(s->code, code, op->len);
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}
