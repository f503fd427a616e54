/* libFuzzer target for the unwind-table compiler (dcpi/unwind.h): the
 * input is an ELF file (seeds: a small shared object with known CFI), read
 * from memory through a memfd as dcpid reads an image.  Whatever libelf
 * and libdw make of it, the table must come out sorted with no two
 * adjacent rows alike, each row found by its start (the entry's outermost
 * frame aside), or be refused; and the same file opened for lookups
 * (compiled FDE by FDE, its descriptor closed first) must give the same
 * rule at each row's start, looked up from the last row back. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void lazy_same(int fd, struct dcpi_unwind_table *whole)
{
	struct dcpi_unwind_table t;
	int dup_fd = dup(fd);

	if (dup_fd < 0)
		return;
	if (dcpi_unwind_table_open_fd(dup_fd, "fuzz", &t)) {
		close(dup_fd);
		abort(); /* the whole table was built: opening it cannot fail */
	}
	close(dup_fd);
	for (size_t i = whole->n; i-- > 0;) {
		const struct dcpi_unwind_row *w = dcpi_unwind_lookup(whole, whole->rows[i].start);
		const struct dcpi_unwind_row *l = dcpi_unwind_lookup(&t, whole->rows[i].start);

		if (!w != !l || (w && (w->kind != l->kind || w->cfa_off != l->cfa_off ||
				       w->bp_off != l->bp_off)))
			abort();
	}
	dcpi_unwind_table_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_unwind_table t;
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size &&
	    dcpi_unwind_table_build_fd(fd, "fuzz", &t) == 0) {
		for (size_t i = 1; i < t.n; i++) {
			const struct dcpi_unwind_row *p = &t.rows[i - 1], *q = &t.rows[i];

			if (q->start <= p->start ||
			    (p->kind == q->kind && p->cfa_off == q->cfa_off && p->bp_off == q->bp_off))
				abort();
		}
		for (size_t i = 0; i < t.n; i++) {
			const struct dcpi_unwind_row *r = dcpi_unwind_lookup(&t, t.rows[i].start);

			/* a row's start finds the row, but where no rule covers the
			   program's first 64 bytes from its entry: the outermost
			   frame (the walk ends there, as at _start) */
			if (r != &t.rows[i] &&
			    !(t.entry && t.rows[i].start - t.entry < 64 &&
			      t.rows[i].kind == DCPI_UW_NONE && r && r->kind == DCPI_UW_END))
				abort();
		}
		lazy_same(fd, &t);
		dcpi_unwind_table_free(&t);
	}
	close(fd);
	return 0;
}
