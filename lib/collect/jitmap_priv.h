/* The jitmap's private parts, shared by lib/collect/jitmap*.c only.
 *
 * Invariants: a process's ranges (struct lm_proc, from the loadmap) map
 * runtime addresses to entry indices (lm_map.image) and never overlap;
 * entries are append-only, so indices stay valid; an entry's img_off is
 * JM_UNPLACED until a sample hits it, then fixed, and placed[] lists the
 * placed entries in placement order (the pseudo-image's function order).
 */
#ifndef DCPI_JITMAP_PRIV_H
#define DCPI_JITMAP_PRIV_H

#include <stdint.h>
#include <sys/types.h>

#include "dcpi/buf.h"
#include "dcpi/jitmap.h"
#include "loadmap_priv.h"

#define JM_UNPLACED UINT64_MAX
#define JM_BUCKETS 1024u

struct jm_entry {
	uint64_t start, size;
	uint64_t name_off;      /* in names */
	uint64_t img_off;
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
	char tail[32];          /* the tail_len bytes before pos, as read */
	uint8_t tail_len;
	char path[64];          /* as the process sees it */
	struct lm_proc ranges;
	struct jm_entry *ents;
	size_t nents, ents_cap;
	struct dcpi_buf names;
	uint32_t *placed;
	size_t nplaced, placed_cap;
	uint64_t img_end;
	uint64_t skipped;
};

struct dcpi_jitmap {
	struct dcpi_jitmap_opts o;
	char *procroot;
	struct jm_proc *buckets[JM_BUCKETS];
	size_t nprocs;
	uint32_t gen;
	struct dcpi_jitmap_stats st;
};

void dcpi_jm_warn(struct dcpi_jitmap *jm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t dcpi_jm_now(void);
/* Look for p's map (first time, or again after a miss); sets fd or
 * gave_up or next_try. */
void dcpi_jm_open(struct dcpi_jitmap *jm, struct jm_proc *p);
/* Read what was appended; final: also a last line without a newline.
 * -ENOMEM only; other trouble is warned about and skipped. */
int dcpi_jm_read(struct dcpi_jitmap *jm, struct jm_proc *p, int final);
/* Lines of buf[0, n) (see dcpi_jm_read); *used: the bytes consumed. */
int dcpi_jm_lines(struct dcpi_jitmap *jm, struct jm_proc *p, const char *buf, size_t n,
		  int final, size_t *used);
/* The live state of pid, created when missing; NULL over the cap. */
struct jm_proc *dcpi_jm_proc(struct dcpi_jitmap *jm, int32_t pid);

#endif
