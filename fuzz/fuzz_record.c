/* libFuzzer target for perf ring-buffer record decoding.  The input is one
 * raw record, exactly as the sampler hands it to the collector; nothing is
 * fixed up, so the decoder itself must refuse a header size that disagrees
 * with the length.  What decodes must keep its promises: strings and the
 * build-id point inside the record, strings end there, and the timestamp
 * the collector orders by is the one the decoder reports.
 *
 * Each record is decoded with and without DCPI_RECORD_WANT_BUILD_ID.
 * The collector's queue packs records back to back, so a record can sit at
 * any alignment there: every input is also decoded from an odd address.
 *
 * Seeds in fuzz/corpus/fuzz_record/ are written by
 * fuzz/gen-record-seeds.py (SAMPLE, MMAP2 with and without a build-id,
 * COMM, FORK, EXIT, LOST, LOST_SAMPLES, THROTTLE). */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/record.h"
#include "dcpi/stacktops.h"
#include "dcpi/vprof.h"
#include "dcpi/sampler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether [p, p + n) lies inside [base, base + size). */
static int inside(const uint8_t *base, size_t size, const void *p, size_t n)
{
	const uint8_t *q = p;

	return q >= base && (size_t)(q - base) <= size && n <= size - (size_t)(q - base);
}

static void check_string(const uint8_t *base, size_t size, const char *s)
{
	size_t room;

	if (!s)
		abort(); /* decoded without its string */
	if (!inside(base, size, s, 1))
		abort();
	room = size - (size_t)((const uint8_t *)s - base);
	if (!memchr(s, 0, room))
		abort(); /* would be read past the record */
}

static void check_decoded(const uint8_t *raw, size_t size, const struct dcpi_record *r)
{
	struct perf_event_header h;

	memcpy(&h, raw, sizeof(h)); /* decode succeeded: there is a header */
	if (h.size != size || r->type != h.type || r->misc != h.misc)
		abort();
	if (r->type == PERF_RECORD_COMM)
		check_string(raw, size, r->comm);
	if (r->type == PERF_RECORD_MMAP2) {
		check_string(raw, size, r->mmap.path);
		if (r->mmap.build_id_len > 20)
			abort();
		if (r->mmap.build_id_len && !inside(raw, size, r->mmap.build_id,
						    r->mmap.build_id_len))
			abort();
	}
	/* FORK and EXIT carry a time in their body and another in the
	 * sample_id trailer; the kernel takes them at different instants. */
	if (r->type != PERF_RECORD_FORK && r->type != PERF_RECORD_EXIT &&
	    dcpi_record_time(raw, size) != r->time)
		abort();
}

static void check_flags(const uint8_t *raw, size_t size, unsigned flags)
{
	struct dcpi_record r;
	int err = dcpi_record_decode_flags(raw, size, flags, &r);

	(void)dcpi_record_time(raw, size);
	if (size >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;

		memcpy(&h, raw, sizeof(h));
		if (h.size != size && err == 0)
			abort(); /* accepted a record whose header disagrees */
	} else if (err == 0) {
		abort(); /* accepted a record without a whole header */
	}
	if (err == 0)
		check_decoded(raw, size, &r);
	if (err == 0 && !(flags & DCPI_RECORD_WANT_BUILD_ID) && r.mmap.build_id_len)
		abort(); /* a build-id we did not ask for */
}

/* Both ways the collector decodes: with build-ids in MMAP2 records
 * (dcpid -buildid-mmap) and without, when the flag must be ignored. */
/* A sample with stacks, with and without its cgroup: what it points at
 * lies inside the record (ASan sees a read past a copy of it); compacted
 * (as the ring thread stages it), it is no longer and decodes to the same
 * sample, registers, chain and used stack. */
static void check_stack(const uint8_t *raw, size_t size)
{
	static struct dcpi_stack_tops *tops; /* empty between inputs */

	if (!tops)
		tops = dcpi_stack_tops_new();
	for (int cg = 0; cg < 2; cg++) {
		struct dcpi_sample s;
		struct dcpi_stack_sample st;
		volatile uint8_t sink = 0;

		if (dcpi_record_decode_stack_sample(raw, size, cg, &s, &st))
			continue;
		if (st.nchain > DCPI_STACK_MAX_CHAIN || st.stack_len > DCPI_STACK_MAX_COPY ||
		    (st.nchain && (st.chain < raw || st.chain + 8 * st.nchain > raw + size)) ||
		    (st.stack_len && (st.stack < raw || st.stack + st.stack_len > raw + size)))
			abort();
		for (uint64_t i = 0; i < st.nchain; i++)
			sink ^= (uint8_t)dcpi_stack_chain_ip(&st, i);
		for (uint64_t i = 0; i < st.stack_len; i++)
			sink ^= st.stack[i];
		(void)sink;
		{
			uint8_t *c = malloc(size ? size : 1);
			struct dcpi_sample s2;
			struct dcpi_stack_sample st2;
			size_t n;

			if (!c)
				return;
			n = dcpi_record_compact_stack(raw, size, cg, NULL, c);
			if (!n || n > size || dcpi_record_decode_stack_sample(c, n, cg, &s2, &st2) ||
			    s2.ip != s.ip || s2.pid != s.pid || s2.time != s.time ||
			    s2.misc != (s.misc & ~DCPI_MISC_STACK_CUT) ||
			    s2.cgroup != s.cgroup || st2.nchain != st.nchain || st2.abi != st.abi ||
			    st2.sp != st.sp || st2.bp != st.bp || st2.ip != st.ip ||
			    st2.stack_len != st.stack_len ||
			    (st.stack_len && memcmp(st2.stack, st.stack, st.stack_len)) ||
			    (st.nchain && memcmp(st2.chain, st.chain, 8 * st.nchain)))
				abort();
			/* cut at a top the input's last bytes choose, near its sp:
			   still a sample of the same fields, its copy the first
			   bytes of the whole one, marked when shorter */
			if (tops && st.stack_len) {
				uint64_t want;

				dcpi_stack_tops_set(tops, s.tid, st.sp + raw[size - 1] * 8u + 1);
				want = dcpi_stack_tops_keep(dcpi_stack_tops_get(tops, s.tid), st.sp,
							    st.stack_len);
				n = dcpi_record_compact_stack(raw, size, cg, tops, c);
				dcpi_stack_tops_drop(tops, s.tid);
				if (dcpi_stack_tops_get(tops, s.tid) != 0 || !n || n > size ||
				    dcpi_record_decode_stack_sample(c, n, cg, &s2, &st2) ||
				    s2.ip != s.ip || s2.pid != s.pid || s2.tid != s.tid ||
				    s2.cgroup != s.cgroup || st2.sp != st.sp ||
				    st2.nchain != st.nchain ||
				    st2.stack_len != want ||
				    memcmp(st2.stack, st.stack, st2.stack_len) ||
				    !(s2.misc & DCPI_MISC_STACK_CUT) != !(st2.stack_len < st.stack_len))
					abort();
			}
			free(c);
		}
	}
}

/* A precise memory sample, with and without its cgroup: only its two
 * lengths decode, and its data source maps to a level. */
static void check_mem(const uint8_t *raw, size_t size)
{
	for (int cg = 0; cg < 2; cg++) {
		struct dcpi_sample s;
		struct dcpi_mem_sample m;
		int src;

		if (dcpi_record_decode_mem_sample(raw, size, cg, &s, &m))
			continue;
		src = dcpi_mem_source(m.data_src);
		if ((size != 64 && size != 72) || (size == 72 && !cg) || src < 0 || src >= DCPI_SRC_N)
			abort();
	}
}

static void check(const uint8_t *raw, size_t size)
{
	check_mem(raw, size);
	check_flags(raw, size, DCPI_RECORD_WANT_BUILD_ID);
	check_flags(raw, size, 0);
	check_stack(raw, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *odd;

	check(data, size);
	if (size > 65536) /* perf_event_header.size is 16 bits */
		return 0;
	odd = malloc(size + 1);
	if (!odd)
		return 0;
	memcpy(odd + 1, data, size);
	check(odd + 1, size);
	free(odd);
	return 0;
}
