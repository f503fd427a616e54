/* Decoding of raw perf records: what the sampler's records give, and what
 * a record whose header and length disagree, or that is too short for the
 * field the collector orders by, must not give.  Records are built here
 * field by field in the layout lib/collect/sampler_perf.c asks the kernel for. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/record.h"
#include "dcpi/stacktops.h"
#include "dcpi/sampler.h"
#include "dcpi/vprof.h"
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
	n = dcpi_record_compact_stack(r.b, r.n, 1, NULL, out);
	T_EQ(n, r.n - (256 - 24), "256 bytes of copy, 20 used: 24 kept");
	T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
	     s2.ip == s.ip && s2.pid == s.pid && s2.time == s.time && s2.cgroup == 0x4242 &&
	     st2.nchain == 3 && dcpi_stack_chain_ip(&st2, 2) == dcpi_stack_chain_ip(&st, 2) &&
	     st2.sp == st.sp && st2.bp == st.bp && st2.ip == st.ip && st2.stack_len == 20 &&
	     !memcmp(st2.stack, st.stack, 20),
	     "the compacted sample decodes to the same fields, chain, registers, cgroup and stack");
	build_stack_sample(&r, 0, PERF_SAMPLE_REGS_ABI_NONE, 0, 0, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 0, NULL, out);
	T_OK(n == r.n && !memcmp(out, r.b, n), "no copy at all: the same bytes");
	/* a copy of which nothing was used (the page at sp unreadable) */
	for (int cg = 0; cg < 2; cg++) {
		build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 0, cg);
		n = dcpi_record_compact_stack(r.b, r.n, cg, NULL, out);
		T_OK(n == r.n - 64 - 8 && dcpi_record_decode_stack_sample(out, n, cg, &s2, &st2) == 0 &&
		     st2.stack_len == 0 && s2.cgroup == (cg ? 0x4242u : 0) && st2.sp == 0x7ffd0000,
		     "a copy none of which was used (cgroup %d): an empty copy, no dynamic size, decodes", cg);
	}
	/* asked with a cgroup the kernel did not give */
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 16, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 1, NULL, out);
	T_OK(n == r.n - 48 && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
	     s2.cgroup == 0 && st2.stack_len == 16, "a cgroup asked for and not given: compacted, decodes");
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 64, 0);
	n = dcpi_record_compact_stack(r.b, r.n, 0, NULL, out);
	T_OK(n == r.n && !memcmp(out, r.b, n), "a copy used whole: the same bytes");
	build_stack_sample(&r, 1, PERF_SAMPLE_REGS_ABI_64, 64, 65, 0);
	T_EQ(dcpi_record_compact_stack(r.b, r.n, 0, NULL, out), 0, "not a valid sample: 0, nothing written");
}

/* Each thread's stack top (dcpi/stacktops.h): kept per thread id,
 * rounded up to 32 bytes, refused outside the ids and addresses Linux
 * gives, one slot per id modulo the table's size (the later one holds it;
 * a drop of one id leaves another's); and the copies cut by it: at the top
 * when it lies inside the copy, marked, decoding to the same first bytes;
 * whole when the top is not the sample's thread's, lies at or below its
 * stack pointer, or past the part used. */
static void test_stack_tops(void)
{
	struct dcpi_stack_tops *t = dcpi_stack_tops_new();
	struct dcpi_sample s, s2;
	struct dcpi_stack_sample st, st2;
	struct rec r;
	uint8_t out[4096];
	size_t n;

	T_OK(t != NULL, "a table made");
	if (!t)
		return;
	T_EQ(dcpi_stack_tops_get(t, 78), 0, "no top known at first");
	dcpi_stack_tops_set(t, 78, 0x7ffd0041);
	T_EQ(dcpi_stack_tops_get(t, 78), 0x7ffd0060, "a top, rounded up to 32 bytes");
	T_EQ(dcpi_stack_tops_get(t, 79), 0, "another thread's: not known");
	dcpi_stack_tops_set(t, 0, 0x1000);
	dcpi_stack_tops_set(t, -5, 0x1000);
	dcpi_stack_tops_set(t, 1 << 22, 0x1000);
	T_OK(!dcpi_stack_tops_get(t, 0) && !dcpi_stack_tops_get(t, -5) &&
	     !dcpi_stack_tops_get(t, 1 << 22), "thread ids outside 1..2^22-1 not kept");
	dcpi_stack_tops_set(t, 4194303, 0x7fffffffffe0ull);
	T_EQ(dcpi_stack_tops_get(t, 4194303), 0x7fffffffffe0ull,
	     "the highest thread id and the highest user top kept as given");
	dcpi_stack_tops_set(t, 81, (uint64_t)1 << 48);
	T_EQ(dcpi_stack_tops_get(t, 81), 0, "a top past user space not kept");
	dcpi_stack_tops_set(t, 78, 0x7ffd0041 - 100);
	T_EQ(dcpi_stack_tops_get(t, 78), 0x7ffd0060, "a top a little lower leaves the higher");
	dcpi_stack_tops_set(t, 78, 0x7ffd0041 - 65536);
	T_EQ(dcpi_stack_tops_get(t, 78), 0x7ffc0060, "one 64 KiB lower or more replaces it (a reused id's stack)");
	dcpi_stack_tops_set(t, 78, 0x7ffe0000);
	T_EQ(dcpi_stack_tops_get(t, 78), 0x7ffe0000, "a higher one replaces it");
	dcpi_stack_tops_set(t, 78 + 8192, 0x1000);
	T_OK(dcpi_stack_tops_get(t, 78 + 8192) == 0x1000 && dcpi_stack_tops_get(t, 78) == 0,
	     "an id on the same slot takes it: the other's is no longer known");
	dcpi_stack_tops_drop(t, 78);
	T_EQ(dcpi_stack_tops_get(t, 78 + 8192), 0x1000, "a drop of another id leaves the slot's");
	dcpi_stack_tops_drop(t, 78 + 8192);
	T_EQ(dcpi_stack_tops_get(t, 78 + 8192), 0, "dropped");
	T_OK(dcpi_stack_tops_get(NULL, 78) == 0 && (dcpi_stack_tops_set(NULL, 78, 64),
						    dcpi_stack_tops_drop(NULL, 78), 1),
	     "no table: nothing known, nothing kept");
	T_OK(dcpi_stack_tops_keep(0, 0x1000, 200) == 200 && dcpi_stack_tops_keep(0x1040, 0x1000, 200) == 64 &&
	     dcpi_stack_tops_keep(0x1000, 0x1000, 200) == 200 &&
	     dcpi_stack_tops_keep(0x0f00, 0x1000, 200) == 200 &&
	     dcpi_stack_tops_keep(0x10c8, 0x1000, 200) == 200 &&
	     dcpi_stack_tops_keep(0x2000, 0x1000, 200) == 200,
	     "kept: to the top when it lies inside the part used, else the part used");

	/* sample of thread 78, sp 0x7ffd0000, 256 bytes copied, 200 used */
	build_stack_sample(&r, 3, PERF_SAMPLE_REGS_ABI_64, 256, 200, 1);
	dcpi_record_decode_stack_sample(r.b, r.n, 1, &s, &st);
	dcpi_stack_tops_set(t, 78, 0x7ffd0040);
	n = dcpi_record_compact_stack(r.b, r.n, 1, t, out);
	T_EQ(n, r.n - (256 - 64), "cut at the thread's top: 64 bytes of copy kept");
	T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 && st2.stack_len == 64 &&
	     !memcmp(st2.stack, st.stack, 64) && s2.cgroup == 0x4242 && s2.tid == 78 &&
	     st2.sp == st.sp && dcpi_stack_chain_ip(&st2, 2) == dcpi_stack_chain_ip(&st, 2),
	     "the cut sample decodes: the copy's first 64 bytes, the rest as it was");
	T_OK((s2.misc & DCPI_MISC_STACK_CUT) && (s2.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
						    (s.misc & PERF_RECORD_MISC_CPUMODE_MASK),
	     "marked as cut, its mode kept");
	T_OK(!(s.misc & DCPI_MISC_STACK_CUT), "(the kernel's record was not marked)");
	{ /* the mark is ours: a record that came with it loses it uncut */
		uint16_t m = PERF_RECORD_MISC_USER | DCPI_MISC_STACK_CUT;

		memcpy(r.b + 4, &m, 2);
		n = dcpi_record_compact_stack(r.b, r.n, 1, NULL, out);
		T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
		     s2.misc == PERF_RECORD_MISC_USER, "a record marked before it was cut: the mark cleared");
		m = PERF_RECORD_MISC_USER;
		memcpy(r.b + 4, &m, 2);
	}
	dcpi_stack_tops_set(t, 78, 0x7ffd0000 + 224);
	n = dcpi_record_compact_stack(r.b, r.n, 1, t, out);
	T_OK(n == r.n - (256 - 200) && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 &&
	     st2.stack_len == 200 && !(s2.misc & DCPI_MISC_STACK_CUT),
	     "a top past the part used: the part used, not marked");
	dcpi_stack_tops_drop(t, 78);
	dcpi_stack_tops_set(t, 78, 0x7ffd0000);
	n = dcpi_record_compact_stack(r.b, r.n, 1, t, out);
	T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 && st2.stack_len == 200 &&
	     !(s2.misc & DCPI_MISC_STACK_CUT), "a top at the stack pointer (another stack): whole");
	dcpi_stack_tops_drop(t, 78);
	dcpi_stack_tops_set(t, 79, 0x7ffd0040);
	n = dcpi_record_compact_stack(r.b, r.n, 1, t, out);
	T_OK(n && dcpi_record_decode_stack_sample(out, n, 1, &s2, &st2) == 0 && st2.stack_len == 200 &&
	     !(s2.misc & DCPI_MISC_STACK_CUT), "another thread's top: whole");
	dcpi_stack_tops_free(t);
}

/* Precise memory samples: the layout field by field, the lengths refused,
 * and data sources by level (the level number, else the old bits). */
static void test_mem_sample(void)
{
	uint8_t b[80] = { 0 };
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 64 };
	uint64_t id = 9, ip = 0x401000, t = 77, addr = 0x7ffd0000, w = 0x0002000100000123ull, ds = 5;
	uint64_t cg = 1234;
	uint32_t pt[2] = { 10, 11 };
	struct dcpi_sample s;
	struct dcpi_mem_sample m;
	union perf_mem_data_src d = { .val = 0 };

	memcpy(b, &h, 8);
	memcpy(b + 8, &id, 8);
	memcpy(b + 16, &ip, 8);
	memcpy(b + 24, pt, 8);
	memcpy(b + 32, &t, 8);
	memcpy(b + 40, &addr, 8);
	memcpy(b + 48, &w, 8);
	memcpy(b + 56, &ds, 8);
	T_EQ(dcpi_record_decode_mem_sample(b, 64, 0, &s, &m), 0, "a memory sample decodes");
	T_OK(s.id == 9 && s.ip == ip && s.pid == 10 && s.tid == 11 && s.time == 77 && s.cgroup == 0,
	     "its own fields");
	T_OK(m.addr == addr && m.latency == 0x123 && m.data_src == 5,
	     "address, latency (WEIGHT_STRUCT's first word only), data source");
	T_EQ(dcpi_record_decode_mem_sample(b, 63, 0, &s, &m), -EBADMSG, "63 bytes refused");
	h.size = 72;
	memcpy(b, &h, 8);
	memcpy(b + 64, &cg, 8);
	T_EQ(dcpi_record_decode_mem_sample(b, 72, 0, &s, &m), -EBADMSG,
	     "72 bytes refused when no cgroup was asked for");
	T_OK(dcpi_record_decode_mem_sample(b, 72, 1, &s, &m) == 0 && s.cgroup == 1234,
	     "72 with the cgroup");
	T_EQ(dcpi_record_decode_mem_sample(b, 64, 1, &s, &m), -EBADMSG, "a header size that differs");
	T_EQ(dcpi_record_decode_mem_sample(b, 40, 1, &s, &m), -EBADMSG, "a plain sample is not one");
	T_EQ(dcpi_mem_source(0), DCPI_SRC_OTHER, "nothing said: other");
	d.mem_lvl_num = PERF_MEM_LVLNUM_L2;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_L2, "level number L2");
	d.mem_lvl_num = PERF_MEM_LVLNUM_RAM;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_RAM, "RAM");
	d.mem_remote = 1;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_REMOTE_RAM, "remote RAM");
	d.mem_lvl_num = PERF_MEM_LVLNUM_L3;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_REMOTE_CACHE, "a remote L3: remote cache");
	d.val = 0;
	d.mem_lvl_num = PERF_MEM_LVLNUM_LFB;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_LFB, "the fill buffer");
	d.val = 0;
	d.mem_lvl = PERF_MEM_LVL_HIT | PERF_MEM_LVL_L3;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_L3, "old bits: an L3 hit");
	d.mem_lvl = PERF_MEM_LVL_MISS | PERF_MEM_LVL_L3;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_OTHER, "old bits: a miss says not where: other");
	d.mem_lvl = PERF_MEM_LVL_HIT | PERF_MEM_LVL_UNC;
	T_EQ(dcpi_mem_source(d.val), DCPI_SRC_UNCACHED, "uncached");
}

struct mem_count {
	size_t samples, decoded, timed;
};

static int on_mem_record(void *arg, const void *raw, size_t len)
{
	struct mem_count *x = arg;
	struct dcpi_sample s;
	struct dcpi_mem_sample m;

	if (len < 8 || ((const struct perf_event_header *)raw)->type != PERF_RECORD_SAMPLE)
		return 0;
	x->samples++;
	if (!dcpi_record_decode_mem_sample(raw, len, 0, &s, &m)) {
		x->decoded++;
		x->timed += m.latency != 0;
	}
	return 0;
}

/* The kernel's own records of the memory layout: a software event opened
 * as a precise memory event's sampler would be (no PMU here: the layout
 * is what can be checked; its latency is 0, no load timed). */
static void test_mem_layout_kernel(void)
{
	struct dcpi_eventlist ev = { 0 };
	struct dcpi_sampler_opts so = { .pid = 0, .exclude_kernel = 1, .mem = 1 };
	struct dcpi_sampler *smp = NULL;
	struct mem_count x = { 0, 0, 0 };
	struct timespec t0, t;
	volatile uint64_t sink = 0;

	if (dcpi_event_parse(&ev, "task-clock:F100000") ||
	    dcpi_sampler_open(&dcpi_sampler_perf, &ev, &so, &smp) || dcpi_sampler_enable(smp)) {
		T_SKIP("perf_event_open refused: %s", dcpi_errmsg());
		dcpi_sampler_close(smp);
		return;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do { /* 50 ms of this thread's CPU: some 500 samples */
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * 7;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000000L);
	(void)sink;
	dcpi_sampler_drain(smp, on_mem_record, &x);
	dcpi_sampler_close(smp);
	T_OK(x.samples >= 10, "the kernel wrote samples (%zu)", x.samples);
	T_EQ(x.decoded, x.samples, "every one of the memory layout");
	T_EQ(x.timed, 0, "none timed: a software event times no load");
}

int main(void)
{
	test_mem_layout_kernel();
	test_mem_sample();
	test_sample();
	test_stack_sample();
	test_compact_stack();
	test_stack_tops();
	test_sample_cgroup();
	test_mmap2();
	test_sideband();
	return t_done();
}
