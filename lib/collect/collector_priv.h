/* The collector's private parts, shared by lib/collect/collector*.c only:
 * collector.c (life and attribution: a sample to an image, offset and
 * label), collector_order.c (ordering: the rings' records in time order,
 * counted by a fast path where order cannot matter) and collector_merge.c
 * (merge: the aggregate into profiles, JIT code into pseudo-images). */
#ifndef DCPI_COLLECTOR_PRIV_H
#define DCPI_COLLECTOR_PRIV_H

#include <stdint.h>

#include "dcpi/agg.h"
#include "dcpi/buf.h"
#include "dcpi/collector.h"
#include "dcpi/jitmap.h"
#include "dcpi/label.h"
#include "dcpi/record.h"
#include "dcpi/stats.h"
#include "dcpi/vprof.h"


/* A queued record: raw bytes in the arena, or (sample) a struct fsample. */
struct qent {
	uint64_t time;
	uint64_t seq;                /* ties keep ring order */
	size_t off;
	uint32_t len;
	int32_t pid;                 /* side-band: whose state it changes (-1:
					the kernel's); NO_PID for the rest */
	int sample;                  /* QE_RAW, QE_SAMPLE, QE_STACK */
};
enum { QE_RAW, QE_SAMPLE /* a struct fsample */, QE_STACK /* a raw sample with its stack or memory access */ };
#define NO_PID INT32_MIN

/* A sample decoded as it arrives: most are counted straight from here,
 * without being copied, sorted or decoded again (dcpi_collector_process). */
struct fsample {
	struct dcpi_sample s;
	uint64_t seq;
};

/* A distinct (process, address, event, mode) of one drain's samples,
 * attributed once: its samples are counted here and added to the
 * aggregate together (count_fast). */
struct rawkey {
	uint64_t ip;
	uint64_t cg;                 /* the samples' cgroup id (0: not given) */
	int32_t pid;
	uint16_t ev;
	uint8_t kernel;
	uint8_t slow;                /* no image: each sample takes count_sample */
	uint32_t gen;                /* the slot is used when == raw_gen */
	uint32_t pgen;               /* its process's generation (struct pidslot) */
	int32_t next;                /* its process's previous key, or -1 */
	int32_t idx;                 /* image, offset and profile pid */
	int64_t apid;
	uint64_t off, n;
};

struct pidslot;

struct dcpi_collector {
	struct dcpi_collector_opts o;
	struct dcpi_eventlist events;
	struct dcpi_loadmap *lm;
	struct dcpi_agg *agg;
	struct dcpi_buf arena;       /* raw records queued */
	struct dcpi_buf spare;       /* the last arena, emptied: the next one */
	struct qent *q;
	size_t nq, qcap;
	struct fsample *fs;          /* samples of the drain, in ring order */
	size_t nfs, fscap;
	struct pidslot *pidset;      /* pids with side-band queued */
	size_t pidset_cap, npidset;  /* npidset: processes in it (most drains: 0) */
	struct rawkey *raw;          /* the drain's distinct keys, open addressing */
	size_t raw_cap, nraw;
	uint32_t raw_gen;
	uint32_t *raw_used;          /* slots used in this generation */
	int prepared;                /* pidset and raw set up by a split drain */
	uint64_t seq;
	uint64_t pending;
	int unknown_image;           /* the shared unknown@host pseudo-image */
	struct dcpi_jitmap *jm;      /* NULL without a database to keep JIT code in */
	int jit_image;               /* bins of JIT code: (jit_image, jitmap key) */
	char *db;
	char **bypid;                /* our copy of o.bypid */
	int *bypid_cache;            /* per image: -1 untested, 0 no, 1 yes */
	int bypid_labels;            /* some -bypid is K=V: by the process's label */
	size_t bypid_cache_len;
	struct dcpi_labeler *lab;    /* -label; NULL: profiles are not labelled */
	struct col_stacks *stk;      /* the epoch's stacks; NULL: samples carry none */
	int sample_cgroup;           /* stack samples carry PERF_SAMPLE_CGROUP */
	int mem;                     /* samples are of the memory layout */
	struct dcpi_vprof *vp;       /* the epoch's value profile of the precise
					memory events; NULL: none */
	struct dcpi_epoch_stats stats;
};

/* collector.c: attribution.  Count n samples of process rpid (in cgroup
 * cg, 0 when the samples did not say) at (idx, pid, off), under rpid's
 * label when profiles are labelled. */
int dcpi_col_agg_add(struct dcpi_collector *c, int idx, int64_t pid, int32_t rpid, uint64_t cg,
		     uint64_t off, unsigned ev, uint64_t n);
/* A user or kernel sample no image describes. */
int dcpi_col_count_unknown(struct dcpi_collector *c, int32_t rpid, uint64_t cg, uint64_t ip,
			   int kernel, unsigned ev);
/* One sample, attributed on its own. */
int dcpi_col_count_sample(struct dcpi_collector *c, const struct dcpi_record *r, int ev);
/* Whether image idx's samples in process rpid are kept per process
 * (-bypid IMAGE, or -bypid K=V matching rpid's label). */
int dcpi_col_is_bypid(struct dcpi_collector *c, int idx, int32_t rpid);

/* collector_merge.c: the identity of JIT key's pseudo-image as its
 * profiles carry it (p: initialised here; the caller frees it), the image
 * stored now when no merge stored it yet.  -ENOENT: the key is not known. */
int dcpi_col_jit_identity(struct dcpi_collector *c, int64_t key, struct dcpi_profile *p);

/* collector_stacks.c: the stacks of samples that carry them. */
int dcpi_col_stacks_new(struct dcpi_collector *c);
void dcpi_col_stacks_free(struct dcpi_collector *c);
/* Loadmap image indices moved (dcpi_collector_forget). */
void dcpi_col_stacks_forget(struct dcpi_collector *c);
/* Walk sample s's stack st (loadmap: the state of its time) and count it. */
int dcpi_col_stack_count(struct dcpi_collector *c, const struct dcpi_sample *s,
			 const struct dcpi_stack_sample *st, unsigned ev);
/* The stacks into platdir's epoch.stacks, then forgotten; a failure is
 * said (on_warning) and never fails the merge: the stacks are kept for
 * the next one when the cause may pass (memory, disk), else dropped. */
int dcpi_col_stacks_merge(struct dcpi_collector *c, const char *platdir);

/* collector_vprof.c: value profiles of precise memory samples. */
int dcpi_col_vprof_new(struct dcpi_collector *c);
void dcpi_col_vprof_free(struct dcpi_collector *c);
struct dcpi_mem_sample;
int dcpi_col_mem_count(struct dcpi_collector *c, const struct dcpi_sample *s,
		       const struct dcpi_mem_sample *m);
int dcpi_col_vprof_merge(struct dcpi_collector *c, const char *platdir);

#endif
