/* The loadmap: which image every (pid, address) belongs to.
 *
 * It is fed the initial /proc scan and then the kernel's side-band records
 * (mmap2, comm-exec, fork, exit) in time order, and answers resolve()
 * queries for samples.  Images are interned: one index per identity
 * (path + build-id, or path + size + mtime when no build-id is known), and
 * indices stay valid for the loadmap's lifetime.
 *
 * The kernel and its modules are images too (kinds DCPI_IMAGE_KERNEL and
 * DCPI_IMAGE_MODULE), registered from /proc/kallsyms and /proc/modules by
 * dcpi_loadmap_load_kernel() and by kernel mmap records (pid -1) for
 * modules loaded later.
 *
 * Offsets are what profile files store: for a file-backed mapping, the
 * file offset (ip - start + pgoff); for the kernel, the virtual address;
 * for a module, address - module base; for [vdso] and other special
 * mappings, address - mapping start.
 */
#ifndef DCPI_LOADMAP_H
#define DCPI_LOADMAP_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"

#define DCPI_NO_IMAGE (-1)

struct dcpi_image {
	char *path;
	uint8_t build_id[DCPI_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t size;
	int64_t mtime;
	uint32_t kind;          /* enum dcpi_image_kind */
	uint64_t text_start;    /* module base for modules, _stext for the kernel */
	uint64_t text_size;
};

/* One line of /proc/PID/maps, parsed.  path points into the line. */
struct dcpi_maps_entry {
	uint64_t start, end, pgoff;
	unsigned prot;          /* PROT_READ | PROT_WRITE | PROT_EXEC */
	unsigned maj, min;
	uint64_t ino;
	const char *path;       /* "" for anonymous mappings */
};

/* Parse one maps line (without or with trailing newline; the line may be
 * modified to cut the newline).  -EBADMSG on anything malformed. */
int dcpi_maps_parse_line(char *line, struct dcpi_maps_entry *e);

/* A PERF_RECORD_MMAP2, decoded. */
struct dcpi_mmap_event {
	int32_t pid, tid;       /* pid -1: a kernel mapping (module) */
	uint64_t start, len, pgoff;
	unsigned prot, flags;
	unsigned maj, min;
	uint64_t ino;
	const uint8_t *build_id;/* NULL unless the record carried one */
	uint32_t build_id_len;
	const char *path;
};

struct dcpi_loadmap;

/* procroot: normally "/proc"; tests point it at a fake tree. */
struct dcpi_loadmap *dcpi_loadmap_new(const char *procroot);
void dcpi_loadmap_free(struct dcpi_loadmap *lm);

/* Initial scan of every process under procroot; unreadable processes are
 * skipped and counted (dcpi_loadmap_stats).  Returns processes scanned. */
int dcpi_loadmap_scan(struct dcpi_loadmap *lm);
/* (Re)read one process's maps from procroot; -ESRCH if it is gone. */
int dcpi_loadmap_scan_pid(struct dcpi_loadmap *lm, int32_t pid);

/* Kernel and modules from kallsyms and modules files (normally
 * /proc/kallsyms and /proc/modules).  Returns 0 or -errno. */
int dcpi_loadmap_load_kernel(struct dcpi_loadmap *lm, const char *kallsyms,
			     const char *modules);

int dcpi_loadmap_mmap(struct dcpi_loadmap *lm, const struct dcpi_mmap_event *ev);
/* exec: forget pid's mappings (the new image's mmap records follow). */
int dcpi_loadmap_exec(struct dcpi_loadmap *lm, int32_t pid);
/* A new process (pid != ppid) inherits its parent's mappings; a new
 * thread (pid == ppid) changes nothing. */
int dcpi_loadmap_fork(struct dcpi_loadmap *lm, int32_t pid, int32_t ppid);
/* A process ended.  Its mappings stay resolvable until the next
 * dcpi_loadmap_reap(), so samples read late from another CPU's ring still
 * find them. */
int dcpi_loadmap_exit(struct dcpi_loadmap *lm, int32_t pid);
void dcpi_loadmap_reap(struct dcpi_loadmap *lm);

/* Resolve a sample: kernel != 0 for kernel-mode samples.  Returns the
 * image index and sets *offset, or DCPI_NO_IMAGE (then *offset = ip).
 * A pid never seen is looked up in procroot once (it may predate us). */
int dcpi_loadmap_resolve(struct dcpi_loadmap *lm, int32_t pid, uint64_t ip, int kernel,
			 uint64_t *offset);

/* Intern an image identity (copies tmpl's strings); returns its index. */
int dcpi_loadmap_intern(struct dcpi_loadmap *lm, const struct dcpi_image *tmpl);
const struct dcpi_image *dcpi_loadmap_image(const struct dcpi_loadmap *lm, int index);
size_t dcpi_loadmap_nimages(const struct dcpi_loadmap *lm);

struct dcpi_loadmap_stats {
	uint64_t processes;     /* live processes tracked */
	uint64_t mappings;      /* executable mappings tracked */
	uint64_t scan_failed;   /* processes whose maps could not be read */
	uint64_t id_failed;     /* images whose build-id/size could not be read */
};
void dcpi_loadmap_stats(const struct dcpi_loadmap *lm, struct dcpi_loadmap_stats *st);

/* Read the GNU build-id note of an ELF file with libelf.  Returns its
 * length (> 0), 0 when the file has none, or -errno (-ENOEXEC: not ELF). */
int dcpi_elf_build_id(const char *path, uint8_t *id, size_t max);
int dcpi_elf_build_id_fd(int fd, uint8_t *id, size_t max);

/* Hex form of a build-id into out (2*len+1 bytes). */
void dcpi_build_id_hex(const uint8_t *id, size_t len, char *out);

#endif
