/* Decoding perf ring-buffer records.  The layouts follow the sample_type
 * the sampler asks for: IDENTIFIER | IP | TID | TIME, then CGROUP when
 * asked for (the record's length tells), with sample_id_all, so every
 * side-band record ends in {pid, tid, time, identifier} (CGROUP is not
 * part of sample_id).
 * The kernel writes these, but a bug or a future layout must give an
 * error, not a read past the record: every field is bounds-checked. */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/record.h"
#include "dcpi/stacktops.h"
#include "dcpi/vprof.h"

#define TRAILER 24 /* pid, tid (2 x u32), time (u64), identifier (u64) */
#define SAMPLE_LEN 40 /* header, identifier, ip, pid/tid, time */
#define SAMPLE_CG_LEN (SAMPLE_LEN + 8) /* and the cgroup id */

/* A reader over one record.  pos may be set past len by a caller (a
 * record too short for a field's fixed offset), so every read checks that
 * first: the subtraction below would otherwise wrap. */
struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static int rd_u64(struct rd *r, uint64_t *v)
{
	if (r->pos > r->len || 8 > r->len - r->pos)
		return -1;
	memcpy(v, r->p + r->pos, 8);
	r->pos += 8;
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	if (r->pos > r->len || 4 > r->len - r->pos)
		return -1;
	memcpy(v, r->p + r->pos, 4);
	r->pos += 4;
	return 0;
}

static int trailer(const uint8_t *p, size_t len, struct dcpi_record *out)
{
	struct rd r = { p, len, 0 };
	uint32_t pid, tid;

	if (len < sizeof(struct perf_event_header) + TRAILER)
		return -1;
	r.pos = len - TRAILER;
	rd_u32(&r, &pid);
	rd_u32(&r, &tid);
	rd_u64(&r, &out->time);
	rd_u64(&r, &out->id);
	out->pid = (int32_t)pid;
	out->tid = (int32_t)tid;
	return 0;
}

/* A NUL-terminated string starting at pos and ending before the trailer. */
static const char *rd_str(struct rd *r, size_t end)
{
	const char *s = (const char *)r->p + r->pos;

	if (r->pos >= end || !memchr(s, 0, end - r->pos))
		return NULL;
	return s;
}

static int decode_sample(struct rd *r, struct dcpi_record *out)
{
	uint32_t pid, tid;

	if (r->len != SAMPLE_LEN && r->len != SAMPLE_CG_LEN)
		return -1;
	if (rd_u64(r, &out->id) || rd_u64(r, &out->ip) || rd_u32(r, &pid) ||
	    rd_u32(r, &tid) || rd_u64(r, &out->time) ||
	    (r->len == SAMPLE_CG_LEN && rd_u64(r, &out->cgroup)))
		return -1;
	out->pid = (int32_t)pid;
	out->tid = (int32_t)tid;
	return 0;
}

static int decode_mmap2(struct rd *r, struct dcpi_record *out, size_t end, int want_id)
{
	struct dcpi_mmap_event *m = &out->mmap;
	uint32_t pid, tid, maj, min, prot, flags;
	uint64_t ino, gen;

	if (rd_u32(r, &pid) || rd_u32(r, &tid) || rd_u64(r, &m->start) || rd_u64(r, &m->len) ||
	    rd_u64(r, &m->pgoff))
		return -1;
	if (want_id && (out->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		uint8_t n;

		if (r->len - r->pos < 24)
			return -1;
		n = r->p[r->pos];
		if (n > 20)
			return -1;
		m->build_id = r->p + r->pos + 4;
		m->build_id_len = n;
		r->pos += 24;
		maj = min = 0;
		ino = 0;
	} else {
		if (rd_u32(r, &maj) || rd_u32(r, &min) || rd_u64(r, &ino) || rd_u64(r, &gen))
			return -1;
		m->build_id = NULL;
		m->build_id_len = 0;
	}
	if (rd_u32(r, &prot) || rd_u32(r, &flags))
		return -1;
	m->pid = (int32_t)pid;
	m->tid = (int32_t)tid;
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->prot = prot;
	m->flags = flags;
	m->path = rd_str(r, end);
	return m->path ? 0 : -1;
}

static int decode_task(struct rd *r, struct dcpi_record *out)
{
	uint32_t pid, ppid, tid, ptid;
	uint64_t t;

	if (rd_u32(r, &pid) || rd_u32(r, &ppid) || rd_u32(r, &tid) || rd_u32(r, &ptid) ||
	    rd_u64(r, &t))
		return -1;
	out->pid = (int32_t)pid;
	out->ppid = (int32_t)ppid;
	out->tid = (int32_t)tid;
	out->ptid = (int32_t)ptid;
	out->time = t;
	return 0;
}

/* A sample's own fields, IDENTIFIER | IP | TID | TIME, after its header
 * (which must say len bytes); cgroup 0.  -EBADMSG. */
static int own_fields(const uint8_t *p, size_t len, struct dcpi_sample *s)
{
	struct perf_event_header h;
	uint32_t pt[2];

	memcpy(&h, p, sizeof(h));
	if (h.size != len || h.type != PERF_RECORD_SAMPLE)
		return -EBADMSG;
	memcpy(&s->id, p + 8, 8);
	memcpy(&s->ip, p + 16, 8);
	memcpy(pt, p + 24, 8);
	memcpy(&s->time, p + 32, 8);
	s->cgroup = 0;
	s->pid = (int32_t)pt[0];
	s->tid = (int32_t)pt[1];
	s->misc = h.misc;
	return 0;
}

int dcpi_record_decode_sample(const void *raw, size_t len, struct dcpi_sample *s)
{
	const uint8_t *p = raw;

	/* IDENTIFIER | IP | TID | TIME [| CGROUP], as decode_sample reads them */
	if (len != SAMPLE_LEN && len != SAMPLE_CG_LEN)
		return -EBADMSG;
	if (own_fields(p, len, s))
		return -EBADMSG;
	if (len == SAMPLE_CG_LEN)
		memcpy(&s->cgroup, p + 40, 8);
	return 0;
}

int dcpi_record_decode_stack_sample(const void *raw, size_t len, int cgroup,
				    struct dcpi_sample *s, struct dcpi_stack_sample *st)
{
	struct rd r = { raw, len, 0 };
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t size, dyn;

	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, raw, sizeof(h));
	if (h.size != len || h.type != PERF_RECORD_SAMPLE)
		return -EBADMSG;
	r.pos = sizeof(h);
	memset(st, 0, sizeof(*st));
	if (rd_u64(&r, &s->id) || rd_u64(&r, &s->ip) || rd_u32(&r, &pid) || rd_u32(&r, &tid) ||
	    rd_u64(&r, &s->time) || rd_u64(&r, &st->nchain) || st->nchain > DCPI_STACK_MAX_CHAIN ||
	    st->nchain * 8 > r.len - r.pos)
		return -EBADMSG;
	st->chain = r.p + r.pos;
	r.pos += st->nchain * 8;
	if (rd_u64(&r, &st->abi) || st->abi > PERF_SAMPLE_REGS_ABI_64)
		return -EBADMSG;
	if (st->abi != PERF_SAMPLE_REGS_ABI_NONE &&
	    (rd_u64(&r, &st->bp) || rd_u64(&r, &st->sp) || rd_u64(&r, &st->ip)))
		return -EBADMSG;
	/* the copy: its size, the bytes, then (when not empty) the part used */
	if (rd_u64(&r, &size) || size > DCPI_STACK_MAX_COPY || size > r.len - r.pos)
		return -EBADMSG;
	st->stack = r.p + r.pos;
	r.pos += size;
	if (size && (rd_u64(&r, &dyn) || dyn > size))
		return -EBADMSG;
	st->stack_len = size ? dyn : 0;
	s->cgroup = 0;
	/* the cgroup is last: a kernel that refused PERF_SAMPLE_CGROUP (the
	   sampler then opens without it) gives records that end here */
	if ((cgroup && r.pos < r.len && rd_u64(&r, &s->cgroup)) || r.pos != r.len)
		return -EBADMSG;
	s->pid = (int32_t)pid;
	s->tid = (int32_t)tid;
	s->misc = h.misc;
	return 0;
}

#define MEM_LEN 64
#define MEM_CG_LEN 72

int dcpi_record_decode_mem_sample(const void *raw, size_t len, int cgroup,
				  struct dcpi_sample *s, struct dcpi_mem_sample *m)
{
	const uint8_t *p = raw;

	if ((len != MEM_LEN && !(cgroup && len == MEM_CG_LEN)) || own_fields(p, len, s))
		return -EBADMSG;
	memcpy(&m->addr, p + 40, 8);
	memcpy(&m->latency, p + 48, 4); /* var1_dw; var2_w and var3_w after it */
	memcpy(&m->data_src, p + 56, 8);
	if (len == MEM_CG_LEN)
		memcpy(&s->cgroup, p + 64, 8);
	return 0;
}

int dcpi_mem_source(uint64_t data_src)
{
	union perf_mem_data_src d = { .val = data_src };

	if (d.mem_lvl_num && d.mem_lvl_num != PERF_MEM_LVLNUM_NA) {
		switch (d.mem_lvl_num) {
		case PERF_MEM_LVLNUM_L1: return d.mem_remote ? DCPI_SRC_REMOTE_CACHE : DCPI_SRC_L1;
		case PERF_MEM_LVLNUM_L2: return d.mem_remote ? DCPI_SRC_REMOTE_CACHE : DCPI_SRC_L2;
		case PERF_MEM_LVLNUM_L3: return d.mem_remote ? DCPI_SRC_REMOTE_CACHE : DCPI_SRC_L3;
		case PERF_MEM_LVLNUM_L4: return d.mem_remote ? DCPI_SRC_REMOTE_CACHE : DCPI_SRC_L4;
		case PERF_MEM_LVLNUM_ANY_CACHE: return d.mem_remote ? DCPI_SRC_REMOTE_CACHE : DCPI_SRC_OTHER;
		case PERF_MEM_LVLNUM_LFB: return DCPI_SRC_LFB;
		case PERF_MEM_LVLNUM_RAM: return d.mem_remote ? DCPI_SRC_REMOTE_RAM : DCPI_SRC_RAM;
		case PERF_MEM_LVLNUM_PMEM: return DCPI_SRC_PMEM;
		case PERF_MEM_LVLNUM_CXL: return DCPI_SRC_CXL;
		case PERF_MEM_LVLNUM_IO: return DCPI_SRC_IO;
		default: return DCPI_SRC_OTHER;
		}
	}
	/* older kernels: the mem_lvl bits (a hit at the first level named) */
	if (!(d.mem_lvl & PERF_MEM_LVL_HIT))
		return DCPI_SRC_OTHER;
	if (d.mem_lvl & PERF_MEM_LVL_L1)
		return DCPI_SRC_L1;
	if (d.mem_lvl & PERF_MEM_LVL_LFB)
		return DCPI_SRC_LFB;
	if (d.mem_lvl & PERF_MEM_LVL_L2)
		return DCPI_SRC_L2;
	if (d.mem_lvl & PERF_MEM_LVL_L3)
		return DCPI_SRC_L3;
	if (d.mem_lvl & PERF_MEM_LVL_LOC_RAM)
		return DCPI_SRC_RAM;
	if (d.mem_lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2))
		return DCPI_SRC_REMOTE_RAM;
	if (d.mem_lvl & (PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_REM_CCE2))
		return DCPI_SRC_REMOTE_CACHE;
	if (d.mem_lvl & PERF_MEM_LVL_IO)
		return DCPI_SRC_IO;
	if (d.mem_lvl & PERF_MEM_LVL_UNC)
		return DCPI_SRC_UNCACHED;
	return DCPI_SRC_OTHER;
}

size_t dcpi_record_compact_stack(const void *raw, size_t len, int cgroup,
				 const struct dcpi_stack_tops *tops, void *out)
{
	const uint8_t *p = raw;
	uint8_t *o = out;
	struct dcpi_sample s;
	struct dcpi_stack_sample st;
	size_t at, size, rest, keep, n;
	uint64_t k, used;
	uint16_t nlen, misc;
	int cg;

	if (dcpi_record_decode_stack_sample(raw, len, cgroup, &s, &st))
		return 0;
	/* after the copy's size field: size bytes, dyn_size (when size is
	   not 0), then the cgroup (when asked for and the kernel gave it) */
	at = (size_t)(st.stack - p);
	rest = len - at;
	memcpy(&k, p + at - 8, 8);
	size = (size_t)k;
	cg = rest - size - (size ? 8 : 0) == 8; /* the record adds up (decoded) */
	/* what the stack used, or less: where the thread's walks stop */
	used = dcpi_stack_tops_keep(dcpi_stack_tops_get(tops, s.tid), st.sp, st.stack_len);
	keep = (used + 7) & ~(size_t)7;
	if (keep > size)
		keep = size;
	memcpy(o, p, at - 8);
	k = keep;
	memcpy(o + at - 8, &k, 8);
	memcpy(o + at, st.stack, keep);
	n = at + keep;
	if (keep) { /* dyn_size: only after a copy that is not empty */
		if (used < st.stack_len)
			memcpy(o + n, &used, 8);
		else
			memcpy(o + n, p + at + size, 8);
		n += 8;
	}
	if (cg) {
		memcpy(o + n, p + at + size + (size ? 8 : 0), 8);
		n += 8;
	}
	nlen = (uint16_t)n;
	memcpy(o + 6, &nlen, 2);              /* perf_event_header.size */
	/* the mark is ours alone: cleared where the kernel's record had it */
	misc = (uint16_t)((s.misc & ~DCPI_MISC_STACK_CUT) |
			  (used < st.stack_len ? DCPI_MISC_STACK_CUT : 0));
	memcpy(o + 4, &misc, 2);              /* perf_event_header.misc */
	return n;
}

uint64_t dcpi_stack_chain_ip(const struct dcpi_stack_sample *st, uint64_t i)
{
	uint64_t v = 0;

	if (i < st->nchain)
		memcpy(&v, st->chain + 8 * i, 8);
	return v;
}

/* The header, copied: records sit back to back in the collector's queue,
 * at any alignment. */
static int header(const void *raw, size_t len, struct perf_event_header *h)
{
	if (len < sizeof(*h))
		return -1;
	memcpy(h, raw, sizeof(*h));
	return 0;
}

int dcpi_record_decode(const void *raw, size_t len, struct dcpi_record *out)
{
	return dcpi_record_decode_flags(raw, len, DCPI_RECORD_WANT_BUILD_ID, out);
}

int dcpi_record_decode_flags(const void *raw, size_t len, unsigned flags,
			     struct dcpi_record *out)
{
	struct perf_event_header hdr, *h = &hdr;
	struct rd r = { raw, len, sizeof(*h) };
	size_t end = len - TRAILER; /* used only once trailer() has checked len */
	uint64_t skip;
	int bad = 0;

	memset(out, 0, sizeof(*out));
	if (header(raw, len, h) || h->size != len)
		return dcpi_error(EBADMSG, "perf record of %zu bytes with header size %u", len,
				  len >= sizeof(*h) ? h->size : 0);
	out->type = h->type;
	out->misc = h->misc;
	if (h->type == PERF_RECORD_SAMPLE)
		bad = decode_sample(&r, out);
	else if (trailer(raw, len, out))
		bad = 1;
	else switch (h->type) {
	case PERF_RECORD_MMAP2:
		bad = decode_mmap2(&r, out, end, !!(flags & DCPI_RECORD_WANT_BUILD_ID));
		break;
	case PERF_RECORD_COMM: {
		uint32_t pid = 0, tid = 0;

		bad = rd_u32(&r, &pid) || rd_u32(&r, &tid) || !(out->comm = rd_str(&r, end));
		out->pid = (int32_t)pid;
		out->tid = (int32_t)tid;
		out->exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		bad = decode_task(&r, out);
		break;
	case PERF_RECORD_CGROUP:
		bad = rd_u64(&r, &out->cgroup) || !(out->cgroup_path = rd_str(&r, end));
		break;
	case PERF_RECORD_LOST:
		bad = rd_u64(&r, &skip) || rd_u64(&r, &out->lost);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		bad = rd_u64(&r, &out->lost);
		break;
	default:
		break; /* THROTTLE etc.: the header and trailer are all we need */
	}
	if (bad)
		return dcpi_error(EBADMSG, "malformed perf record of type %u (%zu bytes)", h->type,
				  len);
	return 0;
}

uint64_t dcpi_record_time(const void *raw, size_t len)
{
	struct perf_event_header h;
	struct dcpi_record r;

	if (header(raw, len, &h))
		return 0;
	if (h.type == PERF_RECORD_SAMPLE) {
		struct rd rr = { raw, len, sizeof(struct perf_event_header) + 8 + 8 + 8 };
		uint64_t t = 0;

		return rd_u64(&rr, &t) ? 0 : t;
	}
	memset(&r, 0, sizeof(r));
	return trailer(raw, len, &r) ? 0 : r.time;
}
