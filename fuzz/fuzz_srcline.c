/* libFuzzer target for DWARF source lines.  The input is written to a
 * memfd and opened by path (/proc/self/fd/N) as a debug file: the range
 * walk over every address visits each line-table row, and the first rows'
 * addresses (and their neighbours) are looked up, which walks the DIE
 * scopes for inline chains.  Answers must keep the header's invariants.
 * The same bytes are also read as a source file and every line checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/source.h"
#include "dcpi/srcline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LOOKUPS 64   /* rows whose addresses are looked up, per input */

struct ctx {
	struct dcpi_srclines *s;
	int looked;
	uint64_t prev;
};

static void check_loc(const struct dcpi_srcloc *l)
{
	size_t k;

	if (!l->file || !l->function || !l->outer || l->ninline > DCPI_SRCLINE_MAX_INLINE)
		abort();
	for (k = 0; k < l->ninline; k++)
		if (!l->inl[k].callee || !l->inl[k].call_file)
			abort();
}

static void lookup(struct dcpi_srclines *s, uint64_t vaddr)
{
	struct dcpi_srcloc l;

	if (dcpi_srcline_lookup(s, vaddr, &l) == 0)
		check_loc(&l);
}

static int on_row(const struct dcpi_srcrow *r, void *arg)
{
	struct ctx *c = arg;

	if (!r->file || r->vaddr == UINT64_MAX)
		abort();
	if (c->looked++ < LOOKUPS) {
		lookup(c->s, r->vaddr);
		lookup(c->s, r->vaddr + 1);
	}
	c->prev = r->vaddr;
	return 0;
}

static void as_source(const char *path)
{
	struct dcpi_source *src;
	size_t i, len;

	if (dcpi_source_open(path, NULL, &src) != 0)
		return;
	for (i = 1; i <= dcpi_source_nlines(src); i++) {
		const char *ln = dcpi_source_line(src, i, &len);

		if (!ln || strlen(ln) > len)
			abort();
	}
	if (dcpi_source_line(src, i, NULL))
		abort();
	dcpi_source_close(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { NULL, 0, 0 };
	char path[64];
	int fd = memfd_create("fuzz_srcline", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (dcpi_srcline_open(path, &c.s) == 0) {
		dcpi_srcline_range(c.s, 0, UINT64_MAX, on_row, &c);
		lookup(c.s, 0);
		lookup(c.s, 0x401000);
		dcpi_srcline_close(c.s);
	}
	as_source(path);
	close(fd);
	return 0;
}
