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

/* Only the timestamp (for ordering); 0 when the record has none. */
uint64_t dcpi_record_time(const void *raw, size_t len);

#endif
