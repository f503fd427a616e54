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

#include "dcpi/maps.h"
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

/* A PERF_RECORD_MMAP2, decoded.  prot must carry PROT_EXEC for executable
 * mappings: a decoded PERF_RECORD_MMAP (no prot field; without mmap_data
 * it only reports executable mappings) should set it.  Mappings without
 * PROT_EXEC only clear what they cover. */
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

/* procroot: normally "/proc"; tests point it at a fake tree.  NULL on
 * allocation failure. */
struct dcpi_loadmap *dcpi_loadmap_new(const char *procroot);
void dcpi_loadmap_free(struct dcpi_loadmap *lm);
/* Where the kernel's note files are: SYSFS/kernel/notes for the kernel's
 * build-id, SYSFS/module/NAME/notes/.note.gnu.build-id for modules.
 * Default "/sys"; call before dcpi_loadmap_load_kernel().  0 or -errno. */
int dcpi_loadmap_set_sysfs(struct dcpi_loadmap *lm, const char *sysfs);

/* Initial scan of every process under procroot; unreadable processes are
 * skipped and counted (dcpi_loadmap_stats).  Returns processes scanned. */
int dcpi_loadmap_scan(struct dcpi_loadmap *lm);
/* (Re)read one process's maps from procroot; -ESRCH if it is gone. */
int dcpi_loadmap_scan_pid(struct dcpi_loadmap *lm, int32_t pid);
/* The same from maps text in memory (len bytes, need not end in a NUL), as
 * if read from PROCROOT/PID/maps: for tests and fuzzing, no file needed. */
int dcpi_loadmap_scan_text(struct dcpi_loadmap *lm, int32_t pid, const char *text, size_t len);

/* Kernel and modules from kallsyms and modules files (normally
 * /proc/kallsyms and /proc/modules).  Returns 0 or -errno.  modules may be
 * NULL, or name a missing file (a kernel without module support): then
 * there are no modules.  Module addresses shown as 0 (no privilege) are
 * taken from the module's text symbols in kallsyms.  Calling it again
 * replaces the module list (modules loaded since: the kernel emits no
 * record for them), keeping image indices of unchanged identities. */
int dcpi_loadmap_load_kernel(struct dcpi_loadmap *lm, const char *kallsyms,
			     const char *modules);
/* The same from kallsyms text already in memory (name: for messages). */
int dcpi_loadmap_load_kernel_text(struct dcpi_loadmap *lm, const char *text, size_t len,
				  const char *name, const char *modules);

/* A mapping of pid.  pid -1 is a kernel mapping: the kernel emits none for
 * module loads, but synthesized records name a module "[name]" or by its
 * .ko path, and are registered as that module; other kernel mappings are
 * ignored (kernel samples in them resolve to the kernel image). */
int dcpi_loadmap_mmap(struct dcpi_loadmap *lm, const struct dcpi_mmap_event *ev);
/* exec: forget pid's mappings (the new image's mmap records follow). */
int dcpi_loadmap_exec(struct dcpi_loadmap *lm, int32_t pid);
/* A new process (pid != ppid) inherits its parent's mappings; a new
 * thread (pid == ppid) changes nothing. */
int dcpi_loadmap_fork(struct dcpi_loadmap *lm, int32_t pid, int32_t ppid);
/* A process ended (call it for the exit of the group leader, pid == tid,
 * not for each thread).  Its mappings stay resolvable until the next
 * dcpi_loadmap_reap(), so samples read late from another CPU's ring still
 * find them. */
int dcpi_loadmap_exit(struct dcpi_loadmap *lm, int32_t pid);
void dcpi_loadmap_reap(struct dcpi_loadmap *lm);
/* Free the images that no tracked process, module or kernel maps, except
 * the npinned indices in pinned[], and renumber the rest (keeping their
 * order); pinned[] is updated, *forgotten says how many went.  Every image
 * index and pointer held elsewhere is invalid afterwards: call it only when
 * nothing else holds one (after a merge emptied the aggregate, and a reap).
 * So the loadmap's memory is bounded by what is mapped now, not by every
 * file ever mapped. */
int dcpi_loadmap_forget(struct dcpi_loadmap *lm, int32_t *pinned, size_t npinned,
			size_t *forgotten);
/* Reap also forgets pids whose lazy lookup failed, so each unknown pid
 * costs one procroot lookup per reap interval, not one per sample. */

/* Resolve a sample: kernel != 0 for kernel-mode samples.  Returns the
 * image index and sets *offset, or DCPI_NO_IMAGE (then *offset = ip).
 * A pid never seen is looked up in procroot once (it may predate us). */
int dcpi_loadmap_resolve(struct dcpi_loadmap *lm, int32_t pid, uint64_t ip, int kernel,
			 uint64_t *offset);

/* Intern an image identity (copies tmpl's strings); returns its index or
 * -errno.  The identity is kind + path + build-id when build_id_len > 0,
 * else kind + path + size + mtime; the other fields of the first interned
 * copy are kept. */
int dcpi_loadmap_intern(struct dcpi_loadmap *lm, const struct dcpi_image *tmpl);
/* NULL for an index out of range.  Images never move: the pointer stays
 * valid until dcpi_loadmap_free(). */
const struct dcpi_image *dcpi_loadmap_image(const struct dcpi_loadmap *lm, int index);
size_t dcpi_loadmap_nimages(const struct dcpi_loadmap *lm);

struct dcpi_loadmap_stats {
	uint64_t processes;     /* live processes tracked */
	uint64_t mappings;      /* executable mappings tracked */
	uint64_t scan_failed;   /* processes whose maps could not be read */
	uint64_t id_failed;     /* images whose build-id/size could not be read */
	uint64_t lazy_scans;    /* pids first met in a record or sample, looked up */
	uint64_t images;        /* images interned (and not forgotten) */
	uint64_t forgotten;     /* images forgotten so far */
};
void dcpi_loadmap_stats(const struct dcpi_loadmap *lm, struct dcpi_loadmap_stats *st);

#endif
