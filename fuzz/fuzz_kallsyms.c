/* libFuzzer target: dcpi_symtab_open_kallsyms() on arbitrary bytes, for
 * vmlinux and for a module, through a memfd. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const struct dcpi_symtab *st)
{
	char name[128];
	size_t i;

	for (i = 0; i < dcpi_symtab_count(st); i++) {
		const struct dcpi_sym *s = dcpi_symtab_sym(st, i);
		const struct dcpi_sym *out[2];

		dcpi_symtab_lookup_vaddr(st, s->vaddr + s->size / 2);
		if (i < 4)
			dcpi_symtab_find(st, s->name, out, 2);
	}
	dcpi_symtab_describe(st, 0x1234, name, sizeof(name));
	dcpi_symtab_lookup(st, 0x40);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *modules[2] = { NULL, "mod" };
	struct dcpi_symtab *st = NULL;
	char path[64];
	int fd = memfd_create("fuzz_kallsyms", MFD_CLOEXEC), i;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		for (i = 0; i < 2; i++) {
			if (!dcpi_symtab_open_kallsyms(path, modules[i], 0xffffffffc0000000, &st))
				exercise(st);
			dcpi_symtab_close(st);
			st = NULL;
		}
	}
	close(fd);
	return 0;
}
