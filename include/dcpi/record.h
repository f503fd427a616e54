/* perf_events records, decoded: what the sampler's rings hold (samples and
 * the side-band mmap2/comm/fork/exit/lost records). */
#ifndef DCPI_RECORD_H
#define DCPI_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/loadmap.h"

/* Record types we act on (values of PERF_RECORD_*). */
struct dcpi_record {
	uint32_t type;          /* PERF_RECORD_SAMPLE, _MMAP2, _COMM, ... */
	uint16_t misc;
	int32_t pid, tid;       /* from the sample or sample_id trailer */
	uint64_t time;          /* ns, CLOCK_MONOTONIC */
	uint64_t id;            /* the event's kernel id (IDENTIFIER) */
	uint64_t ip;            /* SAMPLE */
	uint64_t cgroup;        /* SAMPLE: its task's cgroup id, when the sampler
				   asked for PERF_SAMPLE_CGROUP (0: not known);
				   CGROUP: the new cgroup's id */
	const char *cgroup_path; /* CGROUP: its path from the hierarchy's root
				   (NUL-terminated inside the raw record) */
	struct dcpi_mmap_event mmap; /* MMAP2: path points into the raw record */
	const char *comm;       /* COMM (NUL-terminated inside the raw record) */
	int exec;               /* COMM: it was an exec */
	int32_t ppid, ptid;     /* FORK/EXIT */
	uint64_t lost;          /* LOST, LOST_SAMPLES */
};

/* Samples are IDENTIFIER | IP | TID | TIME (40 bytes with the header), or
 * those then CGROUP (48 bytes) when the sampler asked for the cgroup: the
 * length says which; any other length is refused.
 *
 * Decode one raw record of len bytes (as read from the ring).  Strings and
 * build-ids point into raw.  -EBADMSG when a record is shorter than its
 * type requires or a string is unterminated. */
int dcpi_record_decode(const void *raw, size_t len, struct dcpi_record *r);

/* The same, saying whether our events asked for build-ids in MMAP2
 * records (attr.build_id).  When they did not, the build-id flag of an
 * MMAP2 record is ignored and its maj/min/ino read: some kernels (seen on
 * 6.18) leave PERF_RECORD_MISC_MMAP_BUILD_ID set in the records of every
 * listener once one listener asked for build-ids. */
#define DCPI_RECORD_WANT_BUILD_ID 1u
int dcpi_record_decode_flags(const void *raw, size_t len, unsigned flags,
			     struct dcpi_record *r);
/* A sample's own fields, for the per-sample path: no struct dcpi_record
 * to clear.  Fails (-EBADMSG, no message) where dcpi_record_decode would. */
struct dcpi_sample {
	uint64_t id, ip, time;
	uint64_t cgroup;        /* 0: the sample did not carry it */
	int32_t pid, tid;
	uint16_t misc;
};
int dcpi_record_decode_sample(const void *raw, size_t len, struct dcpi_sample *s);

/* Samples with stacks (issue 25: the sampler asked for the kernel's call
 * chain, the user registers and a copy of the user stack):
 *   IDENTIFIER | IP | TID | TIME | CALLCHAIN | REGS_USER | STACK_USER [| CGROUP]
 * with the user registers DCPI_STACK_REGS (bp, sp, ip: perf's x86 register
 * numbers 6, 7, 8, which come in that order).  Pointers point into the raw
 * record, at any alignment: read them with memcpy (dcpi_stack_chain_ip).
 * The kernel writes these; a record that does not add up to its length
 * exactly, a chain longer than DCPI_STACK_MAX_CHAIN, a copy larger than
 * DCPI_STACK_MAX_COPY or a dynamic size past the copy is -EBADMSG.  With
 * cgroup, a record that ends before the cgroup (the kernel refused
 * PERF_SAMPLE_CGROUP and the sampler opened without it) has cgroup 0. */
#define DCPI_STACK_REGS ((1ull << 6) | (1ull << 7) | (1ull << 8))
#define DCPI_STACK_MAX_CHAIN 512
#define DCPI_STACK_MAX_COPY 65528   /* the largest copy perf makes */
struct dcpi_stack_sample {
	uint64_t nchain;        /* entries of the kernel's chain, context markers
				   (PERF_CONTEXT_*) included */
	const uint8_t *chain;   /* nchain u64s */
	uint64_t abi;           /* PERF_SAMPLE_REGS_ABI_*; NONE: no registers (a
				   kernel thread) */
	uint64_t bp, sp, ip;    /* the user registers, when abi is not NONE */
	uint64_t stack_len;     /* bytes of the copy that are the stack (the
				   copy's dynamic size) */
	const uint8_t *stack;   /* the copy, from sp up */
};
/* cgroup: the sampler also asked for PERF_SAMPLE_CGROUP. */
int dcpi_record_decode_stack_sample(const void *raw, size_t len, int cgroup,
				    struct dcpi_sample *s, struct dcpi_stack_sample *st);
/* Entry i of the chain. */
uint64_t dcpi_stack_chain_ip(const struct dcpi_stack_sample *st, uint64_t i);
/* The sample raw (of the layout above) into out (len bytes of room) with
 * its stack copy cut to the part the stack used (rounded up to 8): most
 * samples use a few hundred bytes of a 16 KiB copy.  With tops (may be
 * NULL), cut further to where the sampled thread's walks stop, when that
 * is known and lies inside the copy (dcpi/stacktops.h): the record's
 * dyn_size then says the cut length, and its header's misc has
 * DCPI_MISC_STACK_CUT.  Its new length, or 0 (out untouched) when raw is
 * not such a sample. */
/* A bit of a sample's misc the kernel leaves clear (it has meanings in
 * other records only): set in records dcpi_record_compact_stack cut at
 * their thread's stack top. */
#define DCPI_MISC_STACK_CUT (1u << 12)
struct dcpi_stack_tops;
size_t dcpi_record_compact_stack(const void *raw, size_t len, int cgroup,
				 const struct dcpi_stack_tops *tops, void *out);

/* Samples of precise memory events (issue 26: a load-latency event, Intel
 * PEBS load latency or AMD IBS op, dcpi-events(7) ldlat): every event of
 * the sampler then has the layout
 *   IDENTIFIER | IP | TID | TIME | ADDR | WEIGHT_STRUCT | DATA_SRC [| CGROUP]
 * (64 bytes with the header, 72 with the cgroup; other events' samples
 * carry zeros there).  -EBADMSG for any other length. */
struct dcpi_mem_sample {
	uint64_t addr;          /* the data address */
	uint32_t latency;       /* WEIGHT_STRUCT's first word: the load's
				   latency in core cycles (0: not measured) */
	uint64_t data_src;      /* union perf_mem_data_src */
};
int dcpi_record_decode_mem_sample(const void *raw, size_t len, int cgroup,
				  struct dcpi_sample *s, struct dcpi_mem_sample *m);
/* Where a data source says the data came from: an enum dcpi_vprof_source
 * (dcpi/vprof.h), DCPI_SRC_OTHER when it does not say. */
int dcpi_mem_source(uint64_t data_src);

/* Only the timestamp (for ordering); 0 when the record has none. */
uint64_t dcpi_record_time(const void *raw, size_t len);

#endif
