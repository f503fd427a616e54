/* The jitmap's private parts, shared by lib/collect/jitmap*.c only.
 *
 * Invariants: a process's ranges (struct jm_ranges, a treap) map
 * runtime addresses to entry indices (lm_map.image) and never overlap;
 * entries are append-only, so indices stay valid; an entry's img_off is
 * JM_UNPLACED until a sample hits it, then fixed, and placed[] lists the
 * placed entries in placement order (the pseudo-image's function order).
 */
#ifndef DCPI_JITMAP_PRIV_H
#define DCPI_JITMAP_PRIV_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dcpi/buf.h"
#include "dcpi/jitmap.h"
#include "loadmap_priv.h"

#define JM_UNPLACED UINT64_MAX
#define JM_BUCKETS 1024u

#define JM_NO_CODE UINT64_MAX

struct jm_entry {
	uint64_t start, size;
	uint64_t name_off;      /* in names */
	uint64_t img_off;
	uint64_t code_off;      /* size bytes in code, or JM_NO_CODE */
	uint32_t line0, nlines; /* its source lines: lines[line0, line0 + nlines) */
};

/* A source line: offset in its code (or, pending, the address), line,
 * and the file's name in names. */
struct jm_line {
	uint64_t off;
	uint64_t file_off;
	uint32_t line;
};

#define JM_MAX_LINES (1u << 20) /* per process */
#define JM_NO_FILE UINT64_MAX

/* A process's ranges: disjoint, sorted by start, each naming its entry
 * (lm_map.image); a treap in n[1, len) (jitmap_ranges.c), 0 being nil. */
#define JM_RANGES_MAX (2u * DCPI_JITMAP_MAX_ENTRIES + 2u)

struct jm_rnode {
	struct lm_map m;
	uint32_t l, r, prio;
};

struct jm_ranges {
	struct jm_rnode *n;
	size_t len, cap;
	uint32_t root, free, count;
	uint64_t seed;
};

/* Place [start, end) for entry image: what it overlaps of earlier ranges
 * is theirs no more.  0, -ENOSPC over JM_RANGES_MAX, -ENOMEM; on error
 * the ranges are as they were. */
int jm_ranges_place(struct jm_ranges *r, uint64_t start, uint64_t end, int32_t image);
/* The range holding ip, or NULL; valid until the next placement. */
const struct lm_map *jm_ranges_lookup(const struct jm_ranges *r, uint64_t ip);
void jm_ranges_free(struct jm_ranges *r);

struct jm_deferred {
	uint64_t ip, time;
	unsigned ev;
};

struct jm_proc {
	struct jm_proc *next;   /* hash chain, by pid */
	int32_t pid, nspid;
	int64_t key;            /* pid | generation << 32 */
	uint8_t retired;        /* exec'd or exited: waits for the reap */
	uint8_t gave_up;        /* its map was refused: not looked at again */
	uint8_t warned_cap;
	uint8_t same_root;      /* its root was ours: the map can be opened after it exits */
	uint64_t created;       /* CLOCK_MONOTONIC ns */
	int fd;                 /* the map, or -1 */
	uid_t ruid, euid;
	int64_t start_ns;       /* process start, wall clock */
	uint64_t next_try, last_read;
	uint64_t pos;           /* next byte of the map to read */
	uint8_t skip_rest;      /* pos is inside a line over the cap: skip to its newline */
	char tail[32];          /* the tail_len bytes before pos, as read */
	uint8_t tail_len;
	char path[64];          /* as the process sees it */
	char comm[17];          /* its command (status "Name:"), or "" */
	struct jm_ranges ranges;
	struct jm_entry *ents;
	size_t nents, ents_cap;
	struct dcpi_buf names;
	struct dcpi_buf code;   /* code bytes of jitdump entries */
	struct jm_line *lines;
	size_t nlines, lines_cap;
	size_t pending0;        /* lines[pending0, nlines): the last DEBUG_INFO's, */
	uint64_t pending_addr;  /* for the LOAD of this address */
	/* jitdump (jit-PID.dump): opened through the process's mapping of it */
	int dump_fd;
	uint64_t dump_pos;      /* next record */
	uint64_t dump_next;     /* time of the record at dump_pos, 0: not read */
	uint64_t dump_checked;  /* when the file was last looked at for growth */
	uint8_t dump_done;      /* CLOSE seen, or corrupt: nothing more read */
	uint8_t dump_timeless;  /* timestamps not CLOCK_MONOTONIC: applied in file order */
	uint8_t dump_headless;  /* open, its header not written yet: checked on each read */
	char dump_path[256];
	struct jm_deferred *defer;
	size_t ndefer, defer_cap;
	uint32_t *placed;
	size_t nplaced, placed_cap;
	uint64_t img_end;
	/* the pseudo-image stored last (dcpi_jitmap_image_stored) */
	size_t img_stored;      /* its functions (placed[0, img_stored)); 0: none */
	uint64_t img_size;      /* its bytes */
	uint8_t img_id[DCPI_SHA1_LEN];
	uint8_t img_grown;      /* img_id is this process's own (grown) id */
	size_t img_built;       /* functions of the image built last */
	uint8_t img_built_id[DCPI_SHA1_LEN];
	uint64_t img_built_size;
	uint64_t skipped;
	uint64_t charged;       /* bytes counted against the budgets */
	int32_t uid_slot;       /* its user's in dcpi_jitmap.uids; -1 until charged */
	uint8_t warned_budget;
};

/* A user's charge (dcpi_jm_charge). */
struct jm_uid {
	uid_t uid;
	uint64_t bytes;
};

struct dcpi_jitmap {
	struct dcpi_jitmap_opts o;
	char *procroot;
	struct jm_proc *buckets[JM_BUCKETS];
	size_t nprocs;
	size_t ndefer;          /* samples kept, all processes */
	uint32_t gen;
	struct dcpi_jitmap_stats st;
	uint64_t budget, budget_per_uid;
	struct jm_uid *uids;    /* users charged so far (few: a linear list) */
	size_t nuids, uids_cap;
	uint8_t nonce[16];      /* this jitmap's: grown ids are never another
				   daemon run's */
	int64_t made_ns;        /* when it was made (CLOCK_REALTIME ns): own
				   children started after it */
	/* the jitdump being read: a window of JM_DUMP_WINDOW bytes from
	   win_off, valid within one dcpi_jm_dump_read only */
	uint8_t *win;
	uint64_t win_off;
	size_t win_len, win_cap;
};

#define JM_DUMP_WINDOW ((size_t)1 << 20)
/* Bytes of a jitdump one dcpi_jm_dump_read goes through at most; the rest
 * on the next sample that wants it (a 1 GiB dump of tiny records held the
 * daemon a minute when read at once). */
#define JM_DUMP_STEP ((uint64_t)64 << 20)

/* Count n more bytes of p against the global and its user's budget: 0, or
 * -ENOSPC (nothing counted; a warning the first time for p) when either
 * would be passed.  what names the thing skipped, for that warning. */
int dcpi_jm_charge(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t n, const char *what);

void dcpi_jm_warn(struct dcpi_jitmap *jm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t dcpi_jm_now(void);
/* Look for p's map (first time, or again after a miss); sets fd or
 * gave_up or next_try. */
void dcpi_jm_open(struct dcpi_jitmap *jm, struct jm_proc *p);
/* Read what was appended; final: also a last line without a newline.
 * -ENOMEM only; other trouble is warned about and skipped. */
int dcpi_jm_read(struct dcpi_jitmap *jm, struct jm_proc *p, int final);
/* Apply the jitdump's records stamped up to time (all: UINT64_MAX). */
int dcpi_jm_dump_read(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t time);
/* The process is gone: apply the rest of its jitdump; one still without
 * a header now is refused (warned about) and closed. */
void dcpi_jm_dump_last(struct dcpi_jitmap *jm, struct jm_proc *p);
/* Add an entry (name: nlen bytes, not NUL-terminated; code: NULL or size
 * bytes, or code_off already in p->code when code is NULL and code_off is
 * not JM_NO_CODE).  Skipped entries are counted and warned about once. */
int dcpi_jm_add_entry(struct dcpi_jitmap *jm, struct jm_proc *p, uint64_t start,
		      uint64_t size, const char *name, size_t nlen, const uint8_t *code,
		      uint64_t code_off);
/* fd: a regular file of root or the process's user?  Else one warning
 * ("WHAT PATH of process N: why: not read") and -EPERM. */
int dcpi_jm_check_file(struct dcpi_jitmap *jm, struct jm_proc *p, int fd, const char *what,
		       const char *path, struct stat *st);
void dcpi_jm_refuse(struct dcpi_jitmap *jm, struct jm_proc *p, const char *what,
		    const char *path, const char *why);
/* Fetch the process's ids (user, start, namespace pid) once; 0 or -errno. */
int dcpi_jm_ids(struct dcpi_jitmap *jm, struct jm_proc *p);
/* Lines of buf[0, n) (see dcpi_jm_read); *used: the bytes consumed. */
int dcpi_jm_lines(struct dcpi_jitmap *jm, struct jm_proc *p, const char *buf, size_t n,
		  int final, size_t *used);
/* The live state of pid, created when missing; NULL over the cap. */
struct jm_proc *dcpi_jm_proc(struct dcpi_jitmap *jm, int32_t pid);

#endif
