/* libdcpivp.so: DCPI's value profiler as a preloadable library (issue 26;
 * libdcpivp(7)).  Private to vp/: nothing here is installed, and every
 * name is hidden (-fvisibility=hidden) except the functions the library
 * interposes (vp_intercept.c).
 *
 * The pieces, each in its file:
 *   vp.c            configuration, start, threads, fork, the flush points
 *   vp_intercept.c  the interposed libc functions (threads, signals, exec, exit)
 *   vp_signal.c     the sample and fault handlers, and chaining to the program's
 *   vp_decode.c     from the interrupted PC to the first load it will make
 *   vp_dcache.c     what was decoded, by PC, checked against the code bytes
 *   vp_probe.c      the timed load and the code copy that survive faults
 *   vp_maps.c       which addresses may be read (/proc/self/maps, mincore)
 *   vp_table.c      the per-load aggregation table shared by threads
 *   vp_write.c      the file (dcpiformat(5): "Value profiles")
 *
 * Async-signal safety: everything reached from vp_on_sample and
 * vp_on_fault makes no allocation, takes no lock it could wait for, and
 * calls only system calls and the functions of this library marked
 * "signal-safe" below (Capstone's cs_disasm_iter with a handle and an
 * instruction allocated beforehand: see vp_decode.c). */
#ifndef DCPI_VP_H
#define DCPI_VP_H

#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <capstone/capstone.h>

#include "dcpi/bins.h"

#pragma GCC visibility push(hidden)

#define VP_PREFIX "libdcpivp: "
/* ns of the thread's CPU time: 500 samples/s.  On a virtual CPU each
 * signal slows the program by 70-115 us of its own CPU time (caches and
 * TLB left cold; the handler itself is cheap): at 2,000/s that was
 * 10-13%, at 500/s it is 5-8% (libdcpivp(7) OVERHEAD, both rates). */
#define VP_PERIOD_DEFAULT 2000000ull
#define VP_PERIOD_MIN 10000ull      /* as dcpid's task-clock floor (dcpi-events(7)) */
#define VP_PERIOD_MAX 10000000000ull
#define VP_WINDOW 16                /* instructions decoded from the PC at most */
#define VP_HOT 16                   /* values kept per load (Space-Saving) */
#define VP_THREADS_MAX 4096         /* threads with an event at one time */
#define VP_FD_LOW 1024              /* the events' descriptors from here (FD_SETSIZE) */

/* Why a signal gave no sample, in the file's order (dcpiformat(5)). */
enum vp_skip {
	VP_NOLOAD,   /* no load found in the window */
	VP_NOCODE,   /* the PC's bytes unreadable */
	VP_UNMAPPED, /* the load's address not readable (or not safe to read now) */
	VP_FAULT,    /* the timed load faulted and was recovered */
	VP_BUSY,     /* the load's entry was locked by another thread */
	VP_FULL,     /* the table was full */
	VP_NOIMAGE,  /* the load is in no file image (counted at the flush) */
	VP_NSKIP
};
extern const char *const vp_skip_names[VP_NSKIP];

struct vp_config {
	uint64_t period_ns;
	int sig;                 /* the sample signal */
	int trap;                /* SIGTRAP from perf itself (sigtrap), not fasync */
	uint64_t cookie;         /* the events' sig_data: a SIGTRAP of ours says it */
	int nocheck;             /* DCPI_VTRACE_TEST_NOCHECK: tests of the fault path only */
	char dir[PATH_MAX];      /* absolute */
	struct dcpi_bins bins;
};

/* Set once by the constructor before anything runs; read-only after. */
extern struct vp_config vp_cfg;
/* 1 once the library samples this process (0 again only when its start
 * fails half-way, before the program runs). */
extern atomic_int vp_active;
extern atomic_uint_fast64_t vp_skipped[VP_NSKIP];

/* One thread's sampling state, in initial-exec TLS (no allocation, no
 * lock on access from a signal handler). */
struct vp_thread {
	int fd;           /* its perf event, -1 when none */
	int last_fd;      /* the one before: a signal it sent may still be pending */
	uint64_t id;      /* PERF_EVENT_IOC_ID of fd: fd is still ours when it matches */
	int slot;         /* in the registry of open events (vp.c), -1 none */
	csh cs;           /* this thread's Capstone handle (0 none) */
	cs_insn *insn;    /* cs_malloc'd for cs */
	unsigned char *arena; /* Capstone's allocations while decoding (vp_decode.c) */
	size_t arena_used;
	int decoding;     /* set while the handler decodes: Capstone allocates in arena */
	int flushing;     /* set while this thread writes the file */
};
extern __thread struct vp_thread vp_self __attribute__((tls_model("initial-exec")));

/* ---- vp.c ---- */
/* Start sampling in the calling thread (a new thread, or the main one):
 * 0, or -errno with a message in dcpi_errmsg(). */
int vp_thread_begin(void);
/* Stop sampling in the calling thread and close its event (thread end). */
void vp_thread_end(void);
/* Stop (1) or restart (0) sampling in the calling thread without closing
 * its event, and with its signal mask as it was: for the flush. */
void vp_thread_pause(int stop);
/* Write the file now (exit, exec), once per process: 1 when this call
 * stopped the calling thread's sampling to write it (written, or said on
 * stderr why not), the path written in path ("" when none); 0 when there
 * was nothing to do (not active, not the process sampled, written). */
int vp_flush_now(char *path, size_t len);
/* After an exec that failed, when vp_flush_now() returned 1: the file
 * removed (path, when not ""), sampling resumed, the next flush to come
 * writing everything. */
void vp_flush_undo(const char *path);
/* This process is the one the library samples (not a vfork child). */
int vp_owner(void);
void vp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t vp_now_ns(void);

/* ---- vp_signal.c ---- */
void vp_on_sample(int sig, siginfo_t *si, void *uc);
void vp_on_fault(int sig, siginfo_t *si, void *uc);
/* Install the library's handlers, recording what the program had as its
 * own: 0, or -errno. */
int vp_signals_install(void);
/* With the sample signal blocked and the thread's event disabled: take
 * the sample signals pending (the thread's events'), the program's own
 * pending again.  Before an exec, which would keep them pending for a
 * program with no handler of them. */
void vp_signals_drain(struct vp_thread *t);
/* Back to the program's dispositions (a start that failed half-way). */
void vp_signals_uninstall(void);
/* The timing code's cost measured by vp_signals_install(), cycles. */
uint64_t vp_signals_timing(void);
/* The program's sigaction for sig, when the library keeps it (the sample
 * signal, SIGSEGV, SIGBUS, the library active, and the caller the process
 * sampled, not a vfork child): 1 and *old filled,
 * act (when not NULL) recorded as the program's new one; else 0. */
int vp_signals_swap(int sig, const struct sigaction *act, struct sigaction *old);
/* The interposed functions' next definitions looked up (the constructor). */
void vp_intercept_init(void);
/* The real sigaction (libc's, past this library's). */
int vp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* ---- vp_decode.c, vp_dcache.c ---- */
struct vp_load {
	uint64_t pc;      /* the load instruction */
	uint64_t addr;    /* what it will read */
	unsigned size;    /* bytes to time: 1, 2, 4 or 8 (the first 8 of wider ones) */
};
#define VP_NONE 0xff     /* no register */
#define VP_RIP 16        /* the register family of RIP (0-15: the general ones) */
#define VP_NO_LOAD 0xffff
/* The first load from a PC as the code there gives it, whatever the
 * registers hold: offsets from the PC, register families (0-15 in
 * ucontext order of vp_decode.c's table, VP_RIP, VP_NONE). */
struct vp_op {
	uint16_t len;     /* the code bytes from the PC this rests on */
	uint16_t load;    /* the load instruction's offset; VP_NO_LOAD: none */
	uint16_t next;    /* the offset of the instruction after it */
	uint8_t size, base, index, scale;
	uint8_t fs, addr32, base_w4, index_w4;
	int64_t disp;
};
/* Load Capstone (once, at start): 0, or -errno with a message. */
int vp_decode_load(void);
/* Open a Capstone handle for the calling thread (allocates: not in a
 * handler): 0, or -1. */
int vp_decode_open(struct vp_thread *t);
void vp_decode_close(struct vp_thread *t);
/* The first load at or after pc whose address the registers at pc give,
 * from n bytes of code copied from pc: 0, or -1 (op says none).  op->len
 * is set either way.  Signal-safe. */
int vp_decode(struct vp_thread *t, const uint8_t *code, size_t n, uint64_t pc, struct vp_op *op);
/* op applied to the registers of a sample at pc: 0, or -1 (no load). */
int vp_op_address(const struct vp_op *op, uint64_t pc, const void *uc, struct vp_load *out);
/* What decoding at pc found before, when the code there is still the
 * same (at most avail bytes readable from pc): 1 and *op; else 0.
 * Signal-safe. */
int vp_dcache_get(uint64_t pc, size_t avail, struct vp_op *op);
/* Keep what decoding code (copied from pc) found.  Signal-safe. */
void vp_dcache_put(uint64_t pc, const uint8_t *code, const struct vp_op *op);
int vp_dcache_init(void);

/* ---- vp_probe.c ---- */
/* Copy up to n bytes from src; the bytes copied (fewer where src faults).
 * Signal-safe. */
size_t vp_probe_copy(void *dst, const void *src, size_t n);
/* Time one load of size bytes at addr: its cycles (timing included), the
 * value in *value; UINT64_MAX when it faulted.  Signal-safe. */
uint64_t vp_probe_load(uint64_t addr, unsigned size, uint64_t *value);
/* Where a fault at rip resumes when rip is a probe's load, else 0. */
uintptr_t vp_probe_fixup(uintptr_t rip);
/* The timing code's own cost: the least of many timings of a load from L1. */
uint64_t vp_probe_calibrate(void);
uint64_t vp_rdtsc(void);
/* The CPU has what the probe uses (rdtscp). */
int vp_probe_supported(void);

/* ---- vp_maps.c ---- */
int vp_maps_init(void);
/* Bytes readable from addr on, in ordinary memory (no device, no vvar),
 * up to want; 0 when addr is not.  May reread /proc/self/maps (rate-
 * limited).  Signal-safe. */
size_t vp_maps_readable(uint64_t addr, size_t want);
void vp_maps_reset(void); /* in a fork child */

/* ---- vp_table.c ---- */
struct vp_hot {
	uint64_t value, count;
};
struct vp_entry {
	atomic_uint_fast64_t pc; /* 0: empty */
	atomic_int lock;         /* held while updated or read whole */
	unsigned nhot;
	uint64_t samples, cycles, outside;
	uint64_t bin[DCPI_BINS_MAX];
	struct vp_hot hot[VP_HOT]; /* nhot of them */
};
int vp_table_init(void);
void vp_table_reset(void); /* a fork child's table: empty */
/* One sample of the load at pc: VP_NSKIP when recorded, else why not.
 * Signal-safe. */
enum vp_skip vp_table_add(uint64_t pc, uint64_t cycles, uint64_t value);
/* A copy of every entry (*n of them, in vp_map'd memory of
 * vp_table_snapshot_size() bytes), each read under its lock (waiting a
 * bounded time for a handler that holds it, then leaving it out, its
 * samples added to *busy); NULL when out of memory. */
struct vp_entry *vp_table_snapshot(size_t *n, uint64_t *busy);
size_t vp_table_snapshot_size(void);
/* Space-Saving: count one more value v in h (nhot entries, at most VP_HOT). */
void vp_hot_add(struct vp_hot *h, unsigned *nhot, uint64_t v, uint64_t count);

/* ---- vp_write.c ---- */
struct vp_run {
	uint64_t tsc_hz, timing;
	uint64_t busy; /* samples of entries the snapshot left out */
};
struct vp_text {
	char *p;          /* vp_map'd, cap bytes; len of text */
	size_t len, cap;
};
/* The file's text for these entries: 0, or -1 (no memory). */
int vp_write_text(struct vp_entry *e, size_t n, const struct vp_run *run, struct vp_text *text);
/* text into DIR/vp.PID.N.vprof, created atomically: 0 and the path in
 * path, or -errno. */
int vp_write_file(const char *text, size_t len, char *path, size_t pathlen);

/* ---- helpers (vp.c) ---- */
uint64_t vp_random(void);
/* Memory for the flush, from mmap: never malloc, as the flush may run in
 * a signal handler that interrupted it (_exit, execve).  NULL when none. */
void *vp_map(size_t bytes);
void vp_unmap(void *p, size_t bytes); /* p NULL: nothing */
/* Heapsort: no allocation. */
void vp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#pragma GCC visibility pop

#endif
