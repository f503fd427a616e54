/* libFuzzer target for the disassembler's ELF handling.  The input is
 * written to a memfd and opened by path (/proc/self/fd/N); ranges at the
 * ELF entry point (read from the input's header) and at fixed addresses
 * are disassembled in both syntaxes.  The same bytes are then opened as
 * kernel memory (dcpi_disasm_open_kcore, from a regular temporary file:
 * it refuses symlinks) and walked at the entry point and at the first
 * program header's address.  Every instruction must keep the
 * header's invariants: contiguous, 1..16 bytes, inside the range, a
 * direct target only on a jump or call. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/disasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	uint64_t next, hi;
};

static int check(const struct dcpi_insn *in, void *arg)
{
	struct ctx *c = arg;

	if (in->vaddr != c->next || in->size == 0 || in->size > DCPI_INSN_MAX_BYTES ||
	    in->size > c->hi - in->vaddr)
		abort();
	if ((in->flags & DCPI_INSN_DIRECT) && !(in->flags & (DCPI_INSN_JUMP | DCPI_INSN_CALL)))
		abort();
	if (!memchr(in->mnemonic, '\0', sizeof(in->mnemonic)) ||
	    !memchr(in->operands, '\0', sizeof(in->operands)))
		abort();
	c->next += in->size;
	return 0;
}

static void walk(struct dcpi_disasm *d, uint64_t lo, uint64_t len)
{
	struct ctx c = { lo, lo + len };

	if (lo + len < lo)
		return;
	if (dcpi_disasm_range(d, lo, lo + len, check, &c) == 0 && c.next != lo + len)
		abort();
}

static char path[64];

static void remove_path(void)
{
	unlink(path);
}

static void kcore(const uint8_t *data, size_t size, uint64_t entry)
{
	struct dcpi_disasm *d;
	uint64_t phoff = 0, vaddr = 0;
	int fd;

	if (!path[0]) {
		/* in memory where there is a tmpfs: each input rewrites the
		   file, which a disk's journal makes the slow part on a busy
		   machine (fuzz_tar's case) */
		snprintf(path, sizeof(path), "%s/fuzz_kcore.XXXXXX",
			 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
		fd = mkstemp(path);
		atexit(remove_path);
	} else {
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	}
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd))
		abort();
	if (size >= 40)
		memcpy(&phoff, data + 32, sizeof(phoff));    /* e_phoff */
	if (phoff < size && size - phoff >= 24)
		memcpy(&vaddr, data + phoff + 16, sizeof(vaddr)); /* p_vaddr */
	if (dcpi_disasm_open_kcore(path, &d) == 0) {
		walk(d, entry, 256);
		walk(d, vaddr, 512);
		dcpi_disasm_close(d);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_disasm *d;
	uint64_t entry = 0;
	char path[64];
	int fd = memfd_create("fuzz_disasm", MFD_CLOEXEC), k;

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (size >= 32)
		memcpy(&entry, data + 24, sizeof(entry));   /* e_entry of ELF64 LE */
	if (dcpi_disasm_open(path, &d) == 0) {
		for (k = 0; k < 2; k++) {
			dcpi_disasm_set_syntax(d, k ? DCPI_SYNTAX_INTEL : DCPI_SYNTAX_ATT);
			walk(d, entry, 256);
			walk(d, 0x401000, 512);
			walk(d, 0x210120, 128);
			walk(d, 0, 64);
		}
		dcpi_disasm_close(d);
	}
	close(fd);
	kcore(data, size, entry);
	return 0;
}
