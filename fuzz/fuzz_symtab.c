/* libFuzzer target: dcpi_symtab_open() on arbitrary bytes as an ELF file.
 * The input goes to a memfd opened through /proc/self/fd/N, so the real
 * file path is exercised; every search outside the file is pointed at
 * nothing, so a run touches no other file and never the network. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const struct dcpi_symtab *st, const uint8_t *data, size_t size)
{
	static const uint64_t offs[] = { 0, 0x40, 0x1000, 0x1139, 0x2000, UINT64_MAX };
	char name[128];
	const struct dcpi_sym *out[4];
	uint64_t v, o;
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		const struct dcpi_sym *s = dcpi_symtab_lookup(st, offs[i]);

		if (!s)
			dcpi_symtab_describe(st, offs[i], name, sizeof(name));
		if (!dcpi_symtab_off2vaddr(st, offs[i], &v))
			dcpi_symtab_vaddr2off(st, v, &o);
	}
	if (size >= 8) { /* an offset taken from the input */
		memcpy(&v, data + size - 8, 8);
		dcpi_symtab_lookup(st, v);
	}
	for (i = 0; i < dcpi_symtab_count(st); i++) {
		const struct dcpi_sym *s = dcpi_symtab_sym(st, i);

		if (i < 8)
			dcpi_symtab_find(st, dcpi_sym_demangled(s), out, 4);
		dcpi_symtab_lookup_vaddr(st, s->vaddr + s->size / 2);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcpi_symtab_opts opts = { .debug_path = "", .sys_debug_dir = "/nonexistent",
					 .no_debuginfod = 1 };
	struct dcpi_symtab *st = NULL;
	char path[64];
	int fd = memfd_create("fuzz_symtab", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!dcpi_symtab_open(path, NULL, 0, &opts, &st))
			exercise(st, data, size);
		dcpi_symtab_close(st);
	}
	close(fd);
	return 0;
}
