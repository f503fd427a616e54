/* Decoding of raw perf records: what the sampler's records give, and what
 * a record whose header and length disagree, or that is too short for the
 * field the collector orders by, must not give.  Records are built here
 * field by field in the layout lib/collect/sampler_perf.c asks the kernel for. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/record.h"
#include "dcpi/sampler.h"
#include "tap.h"

struct rec {
	uint8_t b[512];
	size_t n;
};

static void put(struct rec *r, const void *p, size_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void put32(struct rec *r, uint32_t v) { put(r, &v, 4); }
static void put64(struct rec *r, uint64_t v) { put(r, &v, 8); }

static void begin(struct rec *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { type, misc, 0 };

	memset(r, 0, sizeof(*r));
	put(r, &h, sizeof(h));
}

/* sample_id_all trailer, then the header's size */
static void finish(struct rec *r, int trailer, uint64_t time)
{
	uint16_t size;

	if (trailer) {
		put32(r, 77);
		put32(r, 78);
		put64(r, time);
		put64(r, 0x51);
	}
	size = (uint16_t)r->n;
	memcpy(r->b + 6, &size, 2);
}

/* IDENTIFIER | IP | TID | TIME of a user sample, not finished */
static void sample_head(struct rec *r)
{
	begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(r, 0x51);
	put64(r, 0x401234);
	put32(r, 77);
	put32(r, 78);
	put64(r, 5000);
}

static void build_sample(struct rec *r)
{
	sample_head(r);
	finish(r, 0, 0);
}

static void test_sample(void)
{
	struct dcpi_record d;
	struct rec r;

	build_sample(&r);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "sample decodes");
	T_EQ(d.ip, 0x401234, "sample ip");
	T_EQ(d.pid, 77, "sample pid");
	T_EQ(d.time, 5000, "sample time");
	T_EQ(dcpi_record_time(r.b, r.n), 5000, "sample time for ordering");
	T_EQ(dcpi_record_decode(r.b, r.n - 8, &d), -EBADMSG, "header size above length refused");
	/* a record cut before its time field but claiming that length */
	r.b[6] = 22;
	T_EQ(dcpi_record_decode(r.b, 22, &d), -EBADMSG, "sample without its time refused");
	T_EQ(dcpi_record_time(r.b, 22), 0, "and has no time, read from nowhere");
}

/* With PERF_SAMPLE_CGROUP the sample is 8 bytes longer: the length says
 * which layout it is; any other length is refused. */
static void test_sample_cgroup(void)
{
	struct dcpi_record d;
	struct dcpi_sample s;
	struct rec r;

	build_sample(&r);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "a sample without a cgroup decodes");
	T_EQ(d.cgroup, 0, "and has cgroup 0, not known");
	T_EQ(dcpi_record_decode_sample(r.b, r.n, &s), 0, "per-sample path too");
	T_EQ(s.cgroup, 0, "cgroup 0 there too");
	put64(&r, 0x4242);
	finish(&r, 0, 0);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "a sample with its cgroup decodes");
	T_EQ(d.cgroup, 0x4242, "its cgroup id");
	T_EQ(d.time, 5000, "the fields before it unchanged");
	T_EQ(dcpi_record_decode_sample(r.b, r.n, &s), 0, "per-sample path too");
	T_EQ(s.cgroup, 0x4242, "the cgroup id there too");
	T_EQ(s.ip, 0x401234, "and the ip");
	put32(&r, 1);
	finish(&r, 0, 0);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), -EBADMSG, "a sample of 52 bytes refused");
	T_EQ(dcpi_record_decode_sample(r.b, r.n, &s), -EBADMSG, "per-sample path too");
	r.n -= 8;
	finish(&r, 0, 0);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), -EBADMSG, "a sample of 44 bytes refused");
	T_EQ(dcpi_record_decode_sample(r.b, r.n, &s), -EBADMSG, "per-sample path too");

	begin(&r, PERF_RECORD_CGROUP, 0);
	put64(&r, 0x77);
	put(&r, "/jobs/a\0", 8);
	finish(&r, 1, 6500);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "a cgroup record decodes");
	T_EQ(d.cgroup, 0x77, "its id");
	T_STREQ(d.cgroup_path, "/jobs/a", "its path");
	T_EQ(d.time, 6500, "its time, from the trailer");
	r.b[sizeof(struct perf_event_header) + 8 + 7] = 'x';
	T_EQ(dcpi_record_decode(r.b, r.n, &d), -EBADMSG, "an unterminated cgroup path refused");
}

static void test_mmap2(void)
{
	static const char path[] = "/usr/lib/libfoo.so\0\0\0\0\0";
	struct dcpi_record d;
	struct rec r;
	uint8_t bid[24] = { 20 };
	uint8_t *odd;

	for (int i = 0; i < 20; i++)
		bid[4 + i] = (uint8_t)(0xa0 + i);
	begin(&r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	put32(&r, 77);
	put32(&r, 78);
	put64(&r, 0x7f0000000000);
	put64(&r, 0x3000);
	put64(&r, 0x1000);
	put(&r, bid, sizeof(bid));
	put32(&r, 5);
	put32(&r, 2);
	put(&r, path, 24);
	finish(&r, 1, 6000);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "mmap2 with build-id decodes");
	T_STREQ(d.mmap.path, "/usr/lib/libfoo.so", "mmap2 path");
	T_EQ(d.mmap.build_id_len, 20, "build-id length");
	T_OK(d.mmap.build_id == r.b + 44 && d.mmap.build_id[19] == 0xb3, "build-id in place");
	T_EQ(d.time, 6000, "time from the trailer");
	/* the same bytes one byte off alignment, as in the collector's queue */
	odd = malloc(r.n + 1);
	memcpy(odd + 1, r.b, r.n);
	T_EQ(dcpi_record_decode(odd + 1, r.n, &d), 0, "decodes at an odd address");
	T_EQ(dcpi_record_time(odd + 1, r.n), 6000, "time at an odd address");
	free(odd);
	memset(r.b + r.n - 24 - 24, 'x', 24); /* path loses its NUL */
	T_EQ(dcpi_record_decode(r.b, r.n, &d), -EBADMSG, "unterminated path refused");
}

static void test_sideband(void)
{
	struct dcpi_record d;
	struct rec r;

	begin(&r, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put32(&r, 77);
	put32(&r, 77);
	put(&r, "spin\0\0\0\0", 8);
	finish(&r, 1, 7000);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "comm decodes");
	T_STREQ(d.comm, "spin", "comm name");
	T_EQ(d.exec, 1, "exec flag");
	begin(&r, PERF_RECORD_LOST, 0);
	put64(&r, 0x51);
	put64(&r, 12345);
	finish(&r, 1, 8000);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "lost decodes");
	T_EQ(d.lost, 12345, "lost count");
	begin(&r, PERF_RECORD_FORK, 0);
	put32(&r, 80);
	put32(&r, 77);
	put32(&r, 80);
	put32(&r, 77);
	put64(&r, 9000);
	finish(&r, 1, 9001);
	T_EQ(dcpi_record_decode(r.b, r.n, &d), 0, "fork decodes");
	T_EQ(d.pid, 80, "child pid");
	T_EQ(d.ppid, 77, "parent pid");
	T_EQ(dcpi_record_decode(r.b, 8, &d), -EBADMSG, "a bare header of another size refused");
}

/* A sample with stacks: chain of n entries, registers (abi), a copy of
 * copy bytes of which dyn are used, then the cgroup when cg. */
static void build_stack_sample(struct rec *r, uint64_t n, uint64_t abi, uint64_t copy,
			       uint64_t dyn, int cg)
{
	sample_head(r);
	put64(r, n);
	for (uint64_t i = 0; i < n; i++)
		put64(r, i == 0 ? 0xfffffffffffffe00ull : 0xffffffff81000000ull + i); /* CONTEXT_KERNEL, ips */
	put64(r, abi);
	if (abi) {
		put64(r, 0x7ffd0010); /* bp */
		put64(r, 0x7ffd0000); /* sp */
		put64(r, 0x401234);   /* ip */
	}
	put64(r, copy);
	for (uint64_t i = 0; i < copy; i++)
		r->b[r->n++] = (uint8_t)i;
	if (copy)
		put64(r, dyn);
	if (cg)
		put64(r, 0x4242);
	finish(r, 0, 0);
}

static void test_stack_sample(void)
{
	struct dcpi_sample s;
	struct dcpi_stack_sample st;
	struct rec r;

	build_stack_sample(&r, 3, PERF_SAMPLE_REGS_ABI_64, 32, 24, 0);
	T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), 0, "a sample with its stack decodes");
	T_OK(s.ip == 0x401234 && s.pid == 77 && s.tid == 78 && s.time == 5000 && s.cgroup == 0,
	     "its own fields");
	T_OK(st.nchain == 3 && dcpi_stack_chain_ip(&st, 0) == 0xfffffffffffffe00ull &&
	     dcpi_stack_chain_ip(&st, 2) == 0xffffffff81000002ull && dcpi_stack_chain_ip(&st, 3) == 0,
	     "the kernel's chain, its context marker first; past its end 0");
	T_OK(st.abi == PERF_SAMPLE_REGS_ABI_64 && st.bp == 0x7ffd0010 && st.sp == 0x7ffd0000 &&
	     st.ip == 0x401234, "the user registers bp, sp, ip");
	T_OK(st.stack_len == 24 && st.stack[0] == 0 && st.stack[23] == 23,
	     "the copy's used part (dynamic size 24 of 32)");
	T_OK(dcpi_record_decode_stack_sample(r.b, r.n, 1, &s, &st) == 0 && s.cgroup == 0 &&
	     st.stack_len == 24,
	     "read as if with a cgroup the kernel did not give: the same sample, cgroup 0");
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 16, 16, 1);
	T_OK(dcpi_record_decode_stack_sample(r.b, r.n, 1, &s, &st) == 0 && s.cgroup == 0x4242,
	     "with its cgroup, after the stack");
	build_stack_sample(&r, 0, PERF_SAMPLE_REGS_ABI_NONE, 0, 0, 0);
	T_OK(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st) == 0 && st.abi == 0 &&
	     st.stack_len == 0 && st.nchain == 0,
	     "a kernel thread's: no registers, no copy, no dynamic size");
	build_stack_sample(&r, 2, PERF_SAMPLE_REGS_ABI_64, 16, 17, 0);
	T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), -EBADMSG,
	     "a dynamic size past the copy refused");
	build_stack_sample(&r, 2, 3, 16, 8, 0);
	T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), -EBADMSG, "an unknown ABI refused");
	build_stack_sample(&r, 2, PERF_SAMPLE_REGS_ABI_64, 16, 8, 0);
	{
		uint64_t huge = DCPI_STACK_MAX_CHAIN + 1;

		memcpy(r.b + 40, &huge, 8);
		T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), -EBADMSG,
		     "a chain longer than %d refused", DCPI_STACK_MAX_CHAIN);
		huge = 1000;          /* its entries would run past the record */
		memcpy(r.b + 40, &huge, 8);
		T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), -EBADMSG,
		     "a chain running past the record refused");
	}
	build_stack_sample(&r, 2, PERF_SAMPLE_REGS_ABI_64, 16, 8, 0);
	r.n -= 4;
	finish(&r, 0, 0);
	T_EQ(dcpi_record_decode_stack_sample(r.b, r.n, 0, &s, &st), -EBADMSG, "a record cut short refused");
	T_EQ(dcpi_record_decode_stack_sample(r.b, 4, 0, &s, &st), -EBADMSG, "a header alone refused");
}

/* Compacting: the copy cut to its used part (rounded up to 8), the rest
 * as it was; what is not such a sample is left alone. */
static void test_compact_stack(void)
{
	struct dcpi_sample s, s2;
	struct dcpi_stack_sample st, st2;
	struct rec r;
	uint8_t out[4096];
	size_t n;

	build_stack_sample(&r, 3, PERF_SAMPLE_REGS_ABI_64, 256, 20, 1);
	dcpi_record_decode_stack_sample(r.b, r.n, 1, &s, &st);
	n = dcpi_record_compact_stack(r.b, r.n, 1, out);
	T_EQ(n, r.n - (256 - 24), "256 bytes of copy, 20 used: 24 kept");
	T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
	     s2.ip == s.ip && s2.pid == s.pid && s2.time == s.time && s2.cgroup == 0x4242 &&
	     st2.nchain == 3 && dcpi_stack_chain_ip(&st2, 2) == dcpi_stack_chain_ip(&st, 2) &&
	     st2.sp == st.sp && st2.bp == st.bp && st2.ip == st.ip && st2.stack_len == 20 &&
	     !memcmp(st2.stack, st.stack, 20),
	     "the compacted sample decodes to the same fields, chain, registers, cgroup and stack");
	build_stack_sample(&r, 0, PERF_SAMPLE_REGS_ABI_NONE, 0, 0, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 0, out);
	T_OK(n == r.n && !memcmp(out, r.b, n), "no copy at all: the same bytes");
	/* a copy of which nothing was used (the page at sp unreadable) */
	for (int cg = 0; cg < 2; cg++) {
		build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 0, cg);
		n = dcpi_record_compact_stack(r.b, r.n, cg, out);
		T_OK(n == r.n - 64 - 8 && dcpi_record_decode_stack_sample(out, n, cg, &s2, &st2) == 0 &&
		     st2.stack_len == 0 && s2.cgroup == (cg ? 0x4242u : 0) && st2.sp == 0x7ffd0000,
		     "a copy none of which was used (cgroup %d): an empty copy, no dynamic size, decodes", cg);
	}
	/* asked with a cgroup the kernel did not give */
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 16, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 1, out);
	T_OK(n == r.n - 48 && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
	     s2.cgroup == 0 && st2.stack_len == 16, "a cgroup asked for and not given: compacted, decodes");
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 64, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 0, out);
	T_OK(n == r.n && !memcmp(out, r.b, n), "a copy used whole: the same bytes");
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 65, 0);
	T_EQ(dcpi_record_compact_stack(r.b, r.n, 0, out), 0, "not a valid sample: 0, nothing written");
}

int main(void)
{
	test_sample();
	test_stack_sample();
	test_compact_stack();
	test_sample_cgroup();
	test_mmap2();
	test_sideband();
	return t_done();
}
