/* Kernel code from the running kernel's memory (/proc/kcore) when no
 * vmlinux is at hand: a kcore-shaped ELF core file, notes and kallsyms
 * under a fake root, a kallsyms snapshot from an earlier boot whose
 * kernel sat 16 MiB higher (KASLR).  The instructions must come out at
 * the snapshot's addresses; another build-id, hidden addresses and
 * broken kcore files are refused with a note that says why. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/disasm.h"
#include "dcpi/error.h"
#include "dcpi/obj.h"
#include "dcpi/profile.h"
#include "dcpi/snapshot.h"
#include "fixture.h"
#include "tap.h"

#define RUN_TEXT 0xffffffff81000000ull  /* the running kernel's _text */
#define SNAP_TEXT 0xffffffff82000000ull /* the profiled boot's */
#define FUNC_OFF 0x10

/* push %rbp; mov %rsp,%rbp; xor %eax,%eax; pop %rbp; ret */
static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x5d, 0xc3 };
static const uint8_t id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
				18, 19, 20 };

static int put(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok = f && fwrite(data, 1, len, f) == len;

	return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

/* An ELF core like /proc/kcore: a PT_NOTE, then one PT_LOAD at RUN_TEXT
 * holding a page with code at FUNC_OFF.  cut: write only that many bytes. */
static int write_kcore(const char *path, uint16_t type, size_t cut)
{
	uint8_t f[0x2000] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)f;
	Elf64_Phdr *ph = (Elf64_Phdr *)(f + sizeof(*eh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 0x200, .p_filesz = 0x10 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0x1000,
			      .p_vaddr = RUN_TEXT, .p_filesz = 0x1000, .p_memsz = 0x1000 };
	memcpy(f + 0x1000 + FUNC_OFF, code, sizeof(code));
	return put(path, f, cut ? cut : sizeof(f));
}

static int write_notes(const char *path, const uint8_t *bid)
{
	uint8_t n[12 + 4 + 20];
	uint32_t h[3] = { 4, 20, NT_GNU_BUILD_ID };

	memcpy(n, h, sizeof(h));
	memcpy(n + 12, "GNU", 4);
	memcpy(n + 16, bid, 20);
	return put(path, n, sizeof(n));
}

static int write_kallsyms(const char *path, uint64_t text)
{
	char s[256];
	int len = snprintf(s, sizeof(s), "%016llx T _text\n%016llx T hot_func\n%016llx T _etext\n",
			   (unsigned long long)text, (unsigned long long)text + FUNC_OFF,
			   (unsigned long long)text + 0x100);

	return put(path, s, (size_t)len);
}

static void kernel_profile(struct dcpi_profile *p, const uint8_t *bid)
{
	dcpi_profile_init(p);
	p->path = (char *)"[kernel.kallsyms]";
	p->kind = DCPI_IMAGE_KERNEL;
	memcpy(p->build_id, bid, 20);
	p->build_id_len = 20;
	p->text_start = SNAP_TEXT;
	p->text_size = 0x1000;
}

/* Open the kernel obj of p against root; its code, or NULL with the note. */
static struct dcpi_obj *open_kernel(const struct dcpi_profile *p, const char *platdir,
				    const char *root, struct dcpi_disasm **dis, uint64_t *delta)
{
	struct dcpi_obj_opts o = { NULL, fx_path("no-vmlinux"), root };
	struct dcpi_obj *obj = NULL;

	*dis = NULL;
	if (dcpi_obj_open(p, platdir, &o, &obj)) {
		printf("# obj: %s\n", dcpi_errmsg());
		return NULL;
	}
	*dis = dcpi_obj_code(obj, delta);
	return obj;
}

int main(void)
{
	char root[512], platdir[512], snapproc[512], path[600];
	struct dcpi_profile p;
	struct dcpi_disasm *dis;
	struct dcpi_insn *insns = NULL;
	struct dcpi_obj *obj;
	uint64_t delta = 0;
	size_t n = 0;
	const char *note;
	uint8_t other[20];

	if (fx_setup("kcore"))
		return 1;
	snprintf(root, sizeof(root), "%s", fx_path("root"));
	snprintf(platdir, sizeof(platdir), "%s", fx_path("plat"));
	snprintf(snapproc, sizeof(snapproc), "%s", fx_path("snapproc"));
	fx_sh("mkdir -p %s/proc %s/sys/kernel %s %s", root, root, platdir, snapproc);
	snprintf(path, sizeof(path), "%s/kallsyms", snapproc);
	if (write_kallsyms(path, SNAP_TEXT) || dcpi_snapshot_kernel(platdir, snapproc, 0600)) {
		printf("Bail out! snapshot: %s\n", dcpi_errmsg());
		return 1;
	}
	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	write_kallsyms(path, RUN_TEXT);
	snprintf(path, sizeof(path), "%s/sys/kernel/notes", root);
	write_notes(path, id);
	snprintf(path, sizeof(path), "%s/proc/kcore", root);
	write_kcore(path, ET_CORE, 0);
	kernel_profile(&p, id);

	/* the running kernel is the profiled one, 16 MiB lower */
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	T_OK(dis != NULL, "kernel code from kcore without a vmlinux: %s",
	     obj && dcpi_obj_code_note(obj) ? dcpi_obj_code_note(obj) : "no note");
	T_EQ(delta, SNAP_TEXT - RUN_TEXT, "KASLR: code addresses moved by the _text difference");
	if (dis && dcpi_disasm_collect(dis, SNAP_TEXT + FUNC_OFF - delta,
				       SNAP_TEXT + FUNC_OFF - delta + sizeof(code), &insns, &n))
		printf("# collect: %s\n", dcpi_errmsg());
	T_EQ(n, 5, "hot_func: five instructions");
	T_OK(n == 5 && !strcmp(insns[0].mnemonic, "pushq") && !strcmp(insns[4].mnemonic, "retq") &&
	     insns[4].vaddr == RUN_TEXT + FUNC_OFF + 7,
	     "hot_func: push ... ret, read at the running kernel's address");
	free(insns);
	T_EQ(dis ? dcpi_disasm_range(dis, RUN_TEXT + 0x2000, RUN_TEXT + 0x2008, NULL, NULL) : 0,
	     -ERANGE, "an address no segment holds: -ERANGE");
	dcpi_obj_close(obj);

	/* another build running: refused, the note says so */
	memcpy(other, id, sizeof(other));
	other[0] = 0xee;
	snprintf(path, sizeof(path), "%s/sys/kernel/notes", root);
	write_notes(path, other);
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "the running kernel is another build (build-id ee02"),
	     "another running build: no code, %s", note ? note : "no note");
	dcpi_obj_close(obj);
	write_notes(path, id);

	/* addresses hidden (kptr_restrict, not root) */
	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	write_kallsyms(path, 0);
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "hides kernel addresses"), "hidden addresses: %s",
	     note ? note : "no note");
	dcpi_obj_close(obj);
	write_kallsyms(path, RUN_TEXT);

	/* broken kcore files: truncated, not a core, a symlink, missing */
	snprintf(path, sizeof(path), "%s/proc/kcore", root);
	write_kcore(path, ET_CORE, 40);
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "cannot read the ELF header"), "truncated kcore: %s",
	     note ? note : "no note");
	dcpi_obj_close(obj);
	write_kcore(path, ET_EXEC, 0);
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "not a 64-bit little-endian ELF core"),
	     "an executable is not kernel memory: %s", note ? note : "no note");
	dcpi_obj_close(obj);
	write_kcore(fx_path("elsewhere"), ET_CORE, 0);
	unlink(path);
	if (symlink(fx_path("elsewhere"), path))
		perror("symlink");
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "kcore"), "a symlinked kcore is not followed: %s",
	     note ? note : "no note");
	dcpi_obj_close(obj);
	unlink(path);
	obj = open_kernel(&p, platdir, root, &dis, &delta);
	note = obj ? dcpi_obj_code_note(obj) : NULL;
	T_OK(!dis && note && strstr(note, "proc/kcore: No such file"), "no kcore: %s",
	     note ? note : "no note");
	dcpi_obj_close(obj);

	fx_cleanup();
	return t_done();
}
