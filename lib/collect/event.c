/* Event specifications: see dcpi/event.h and man/dcpi-events.7.
 *
 * Names resolve in this order: DCPI and perf aliases, perf's generic
 * hardware and software names, perf's cache names, raw rNNNN, then (by
 * shape) PMU/NAME from sysfs and SUBSYS:EVENT tracepoints from tracefs.
 * Everything read from sysfs is treated as untrusted text: files are read
 * with a size cap, and PMU event terms we cannot encode exactly are
 * refused rather than guessed.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "dcpi/error.h"
#include "dcpi/event.h"

/* Default periods.  Aimed at 1,000-5,000 samples/s on a busy ~3 GHz CPU;
 * odd, prime-ish values so that sampling does not fall into lock-step
 * with loops whose length is a round number. */
#define P_CYCLES     1000003ULL /* ~3,000/s at 3 GHz */
#define P_INSNS      2000003ULL /* ~3,000/s at IPC 2 */
#define P_FREQUENT   1000003ULL /* loads, stores: ~1 per 3 instructions */
#define P_BRANCHES    500009ULL /* ~1 per 6 instructions */
#define P_COMMON      100003ULL /* bus cycles, cache refs, raw/PMU events */
#define P_MISSES       10007ULL /* L1 and branch misses: 10-50 M/s */
#define P_RARE          1009ULL /* LLC, TLB and node misses: ~1 M/s */
#define P_CLOCK_NS    500000ULL /* 0.5 ms: 2,000 samples/s per busy CPU */
#define P_FAULTS         101ULL /* minor faults come in bursts of 10^5/s */
#define P_EVERY            1ULL /* rare events: every one is worth a sample */

#define CLOCK_MIN_NS 10000ULL   /* below 10 us the timer itself dominates */
#define PERIOD_MAX ((uint64_t)INT64_MAX) /* the kernel refuses bit 63 */
#define SYSFILE_MAX 4096        /* longest sysfs/tracefs file we read */
#define ARG_MAX_LEN 4096        /* longest -event argument */

struct fixed_event {
	const char *name;
	uint32_t type;
	uint64_t config;
	uint64_t period;
};

static const struct fixed_event fixed_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, P_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, P_INSNS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, P_COMMON },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, P_MISSES },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
	  P_BRANCHES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, P_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, P_COMMON },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, P_CYCLES },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND, P_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, P_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, P_CLOCK_NS },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, P_CLOCK_NS },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, P_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, P_FAULTS },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, P_EVERY },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 11 },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, P_EVERY },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, P_EVERY },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, P_EVERY },
};

/* DCPI's names and perf's alternative spellings, to the name recorded. */
static const struct {
	const char *alias, *canon;
} aliases[] = {
	{ "issues", "instructions" },
	{ "retires", "instructions" },
	{ "imiss", "L1-icache-load-misses" },
	{ "dmiss", "L1-dcache-load-misses" },
	{ "branchmp", "branch-misses" },
	{ "itbmiss", "iTLB-load-misses" },
	{ "dtbmiss", "dTLB-load-misses" },
	{ "cpu-cycles", "cycles" },
	{ "branches", "branch-instructions" },
	{ "idle-cycles-frontend", "stalled-cycles-frontend" },
	{ "idle-cycles-backend", "stalled-cycles-backend" },
	{ "faults", "page-faults" },
	{ "cs", "context-switches" },
	{ "migrations", "cpu-migrations" },
};

static const struct {
	const char *name;
	uint64_t id;
	uint64_t access_period, miss_period;
} caches[] = {
	{ "L1-dcache", PERF_COUNT_HW_CACHE_L1D, P_FREQUENT, P_MISSES },
	{ "L1-icache", PERF_COUNT_HW_CACHE_L1I, P_FREQUENT, P_MISSES },
	{ "LLC", PERF_COUNT_HW_CACHE_LL, P_MISSES, P_RARE },
	{ "dTLB", PERF_COUNT_HW_CACHE_DTLB, P_FREQUENT, P_RARE },
	{ "iTLB", PERF_COUNT_HW_CACHE_ITLB, P_FREQUENT, P_RARE },
	{ "branch", PERF_COUNT_HW_CACHE_BPU, P_BRANCHES, P_MISSES },
	{ "node", PERF_COUNT_HW_CACHE_NODE, P_MISSES, P_RARE },
};

static const struct {
	const char *op, *ops; /* "load-misses", "loads" */
	uint64_t id;
} cache_ops[] = {
	{ "load", "loads", PERF_COUNT_HW_CACHE_OP_READ },
	{ "store", "stores", PERF_COUNT_HW_CACHE_OP_WRITE },
	{ "prefetch", "prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- sysfs access -------------------------------------------------------- */

static char sysroot[PATH_MAX / 2]; /* "" means "/" */

int dcpi_event_sysroot(const char *root)
{
	size_t len = root ? strlen(root) : 0;

	if (len >= sizeof(sysroot))
		return dcpi_error(ENAMETOOLONG, "sysroot '%s' is too long", root);
	while (len > 0 && root[len - 1] == '/')
		len--;
	if (len)
		memcpy(sysroot, root, len);
	sysroot[len] = 0;
	return 0;
}

/* path = sysroot + the formatted absolute path. */
__attribute__((format(printf, 3, 4)))
static int sys_path(char *path, size_t size, const char *fmt, ...)
{
	size_t rlen = strlen(sysroot);
	va_list ap;
	int n;

	if (rlen >= size)
		return -ENAMETOOLONG;
	memcpy(path, sysroot, rlen);
	va_start(ap, fmt);
	n = vsnprintf(path + rlen, size - rlen, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size - rlen)
		return -ENAMETOOLONG;
	return 0;
}

/* Read a small text file whole into buf (NUL-terminated, trailing
 * whitespace removed).  -EFBIG when it does not fit. */
static int read_small(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t got;
	int fd, err = 0;

	/* O_NONBLOCK: a FIFO planted in a fixture tree must not hang us. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	for (;;) {
		got = read(fd, buf + len, size - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len == size - 1) {
			err = -EFBIG;
			goto out;
		}
	}
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = 0;
out:
	close(fd);
	return err;
}

/* Decimal, or hex after 0x, the whole string, no sign (as perf reads
 * sysfs terms: "07" is seven, "08" eight). */
static int parse_u64(const char *s, uint64_t *v)
{
	int base = 10;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	if (!isxdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, base);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

/* A sysfs or tracefs path component: no separators, no "." or "..". */
static int valid_component(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return 0;
	return 1;
}

/* ---- PMU events from sysfs ----------------------------------------------- */

/* The three config words an event's terms are encoded into. */
struct pmu_config {
	uint64_t word[3];
};

/* A bit number 0..63 at *p; advances *p past it. */
static int parse_bit(const char **p, unsigned *bit)
{
	unsigned v = 0;
	int digits = 0;

	while (isdigit((unsigned char)**p) && digits < 3) {
		v = v * 10 + (unsigned)(*(*p)++ - '0');
		digits++;
	}
	if (!digits || v > 63)
		return -EINVAL;
	*bit = v;
	return 0;
}

/* Put value into the bits lo..hi of *word; returns what is left of value
 * for the next range (its low bits went here). */
static uint64_t put_bits(uint64_t *word, unsigned lo, unsigned hi, uint64_t value)
{
	unsigned width = hi - lo + 1;

	if (width == 64) {
		*word |= value;
		return 0;
	}
	*word |= (value & ((1ULL << width) - 1)) << lo;
	return value >> width;
}

/* Put value into the bit ranges of a format ("config1:0-7,32-35"),
 * low bits into the first range.  -EINVAL when the format cannot be
 * read, -ERANGE when value has more bits than the format holds. */
static int apply_format(const char *fmt, uint64_t value, struct pmu_config *cfg)
{
	const char *p;
	unsigned word, lo, hi;

	if (!strncmp(fmt, "config:", 7))
		word = 0, p = fmt + 7;
	else if (!strncmp(fmt, "config1:", 8))
		word = 1, p = fmt + 8;
	else if (!strncmp(fmt, "config2:", 8))
		word = 2, p = fmt + 8;
	else
		return -EINVAL;
	for (;;) {
		if (parse_bit(&p, &lo) < 0)
			return -EINVAL;
		hi = lo;
		if (*p == '-' && (p++, parse_bit(&p, &hi) < 0))
			return -EINVAL;
		if (lo > hi)
			return -EINVAL;
		value = put_bits(&cfg->word[word], lo, hi, value);
		if (*p == 0)
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	return value ? -ERANGE : 0;
}

/* Encode one "term=value" (or bare "term", meaning 1) of PMU pmu. */
static int apply_term(const char *pmu, const char *ev, char *term, struct pmu_config *cfg)
{
	char path[PATH_MAX], fmt[SYSFILE_MAX];
	char *eq = strchr(term, '=');
	uint64_t value = 1;
	int err;

	if (eq) {
		*eq = 0;
		if (parse_u64(eq + 1, &value) < 0)
			return dcpi_error(EINVAL, "event '%s': term '%s=%s' cannot be encoded "
					  "(not a number)", ev, term, eq + 1);
	}
	if (!strcmp(term, "config") || !strcmp(term, "config1") || !strcmp(term, "config2")) {
		cfg->word[term[6] ? term[6] - '0' : 0] |= value;
		return 0;
	}
	if (!valid_component(term, strlen(term)))
		return dcpi_error(EINVAL, "event '%s': term '%s' cannot be encoded", ev, term);
	err = sys_path(path, sizeof(path), "/sys/bus/event_source/devices/%s/format/%s", pmu,
		       term);
	if (!err)
		err = read_small(path, fmt, sizeof(fmt));
	if (err < 0)
		return dcpi_error(EINVAL, "event '%s': term '%s' cannot be encoded (%s: %s)", ev,
				  term, path, strerror(-err));
	err = apply_format(fmt, value, cfg);
	if (err == -ERANGE)
		return dcpi_error(EINVAL, "event '%s': value %#llx of term '%s' does not fit "
				  "its format '%s'", ev, (unsigned long long)value, term, fmt);
	if (err < 0)
		return dcpi_error(EINVAL, "event '%s': format '%s' of term '%s' cannot be "
				  "encoded", ev, fmt, term);
	return 0;
}

/* Encode the terms of an events/NAME file ("event=0x3c,umask=0x1"). */
static int apply_terms(const char *pmu, const char *ev, char *terms, struct pmu_config *cfg)
{
	char *term, *save = NULL;
	int err;

	for (term = strtok_r(terms, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		err = apply_term(pmu, ev, term, cfg);
		if (err < 0)
			return err;
	}
	return 0;
}

static int pmu_type(const char *pmu, const char *ev, uint32_t *type)
{
	char path[PATH_MAX], buf[64];
	uint64_t v;
	int err;

	err = sys_path(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	if (!err)
		err = read_small(path, buf, sizeof(buf));
	if (err < 0)
		return dcpi_error(ENOENT, "unknown event '%s' (no PMU '%s': %s)", ev, pmu,
				  strerror(-err));
	if (parse_u64(buf, &v) < 0 || v > UINT32_MAX)
		return dcpi_error(EINVAL, "event '%s': bad PMU type '%s' in %s", ev, buf, path);
	*type = (uint32_t)v;
	return 0;
}

/* PMU/NAME or PMU/NAME/ */
static int lookup_pmu(const char *name, struct dcpi_event_spec *out)
{
	char path[PATH_MAX], terms[SYSFILE_MAX], pmu[DCPI_EVENT_NAME_MAX];
	const char *slash = strchr(name, '/'), *ev = slash + 1;
	size_t evlen = strlen(ev);
	struct pmu_config cfg = { { 0, 0, 0 } };
	int err;

	if (evlen > 0 && ev[evlen - 1] == '/')
		evlen--;
	if (!valid_component(name, (size_t)(slash - name)) || !valid_component(ev, evlen))
		return dcpi_error(ENOENT, "unknown event '%s'", name);
	memcpy(pmu, name, (size_t)(slash - name));
	pmu[slash - name] = 0;
	/* The caller checked that name fits; drop the optional trailing '/'. */
	memcpy(out->name, name, (size_t)(ev - name) + evlen);
	out->name[(ev - name) + evlen] = 0;
	err = pmu_type(pmu, out->name, &out->type);
	if (err < 0)
		return err;
	err = sys_path(path, sizeof(path), "/sys/bus/event_source/devices/%s/events/%.*s", pmu,
		       (int)evlen, ev);
	if (!err)
		err = read_small(path, terms, sizeof(terms));
	if (err < 0)
		return dcpi_error(ENOENT, "unknown event '%s' (PMU '%s' has no event '%.*s': %s)",
				  out->name, pmu, (int)evlen, ev, strerror(-err));
	if (!terms[0])
		return dcpi_error(EINVAL, "event '%s': empty definition in %s", out->name, path);
	err = apply_terms(pmu, out->name, terms, &cfg);
	if (err < 0)
		return err;
	out->config = cfg.word[0];
	out->config1 = cfg.word[1];
	out->config2 = cfg.word[2];
	out->period = P_COMMON;
	return 0;
}

/* ---- tracepoints ----------------------------------------------------------- */

static int tracepoint_id(const char *sub, size_t sublen, const char *ev, uint64_t *id)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[PATH_MAX], buf[64];
	size_t i;
	int err = -ENOENT;

	for (i = 0; i < NELEM(roots); i++) {
		err = sys_path(path, sizeof(path), "%s/events/%.*s/%s/id", roots[i],
			       (int)sublen, sub, ev);
		if (!err)
			err = read_small(path, buf, sizeof(buf));
		if (err == -ENOENT)
			continue;
		if (err < 0)
			return err;
		return parse_u64(buf, id);
	}
	return err;
}

/* Whether tracefs seems to be mounted at either place: to tell "no such
 * tracepoint" from "no tracefs". */
static int tracefs_mounted(void)
{
	char path[PATH_MAX];

	if (!sys_path(path, sizeof(path), "/sys/kernel/tracing/events") && !access(path, X_OK))
		return 1;
	return !sys_path(path, sizeof(path), "/sys/kernel/debug/tracing/events") &&
	       !access(path, X_OK);
}

/* SUBSYS:EVENT */
static int lookup_tracepoint(const char *name, struct dcpi_event_spec *out)
{
	const char *colon = strchr(name, ':'), *ev = colon + 1;
	uint64_t id;
	int err;

	if (!valid_component(name, (size_t)(colon - name)) || !valid_component(ev, strlen(ev)))
		return dcpi_error(ENOENT, "unknown event '%s'", name);
	err = tracepoint_id(name, (size_t)(colon - name), ev, &id);
	if (err == -ENOENT && !tracefs_mounted())
		return dcpi_error(ENOENT, "unknown event '%s' (tracefs is not mounted at "
				  "/sys/kernel/tracing or /sys/kernel/debug/tracing)", name);
	if (err == -ENOENT)
		return dcpi_error(ENOENT, "unknown event '%s' (no such tracepoint)", name);
	if (err < 0)
		return dcpi_error(-err, "tracepoint '%s': cannot read its id: %s", name,
				  strerror(-err));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->type = PERF_TYPE_TRACEPOINT;
	out->config = id;
	out->period = P_EVERY;
	return 0;
}

/* ---- built-in names ---------------------------------------------------------- */

static int lookup_fixed(const char *name, struct dcpi_event_spec *out)
{
	size_t i;

	for (i = 0; i < NELEM(fixed_events); i++) {
		if (strcmp(name, fixed_events[i].name))
			continue;
		snprintf(out->name, sizeof(out->name), "%s", fixed_events[i].name);
		out->type = fixed_events[i].type;
		out->config = fixed_events[i].config;
		out->period = fixed_events[i].period;
		return 0;
	}
	return -ENOENT;
}

/* The op part of a cache name: "loads" (accesses) or "load-misses". */
static int match_cache_op(const char *rest, size_t *op, int *miss)
{
	size_t i, len;

	for (i = 0; i < NELEM(cache_ops); i++) {
		if (!strcasecmp(rest, cache_ops[i].ops)) {
			*op = i, *miss = 0;
			return 0;
		}
		len = strlen(cache_ops[i].op);
		if (!strncasecmp(rest, cache_ops[i].op, len) &&
		    !strcasecmp(rest + len, "-misses")) {
			*op = i, *miss = 1;
			return 0;
		}
	}
	return -ENOENT;
}

/* CACHE-OPs and CACHE-OP-misses, case-insensitively. */
static int lookup_cache(const char *name, struct dcpi_event_spec *out)
{
	size_t c, op, len;
	int miss;

	for (c = 0; c < NELEM(caches); c++) {
		len = strlen(caches[c].name);
		if (strncasecmp(name, caches[c].name, len) || name[len] != '-')
			continue;
		if (match_cache_op(name + len + 1, &op, &miss) < 0)
			continue;
		snprintf(out->name, sizeof(out->name), "%s-%s%s", caches[c].name,
			 miss ? cache_ops[op].op : cache_ops[op].ops, miss ? "-misses" : "");
		out->type = PERF_TYPE_HW_CACHE;
		out->config = caches[c].id | cache_ops[op].id << 8 |
			      (uint64_t)(miss ? PERF_COUNT_HW_CACHE_RESULT_MISS
					      : PERF_COUNT_HW_CACHE_RESULT_ACCESS) << 16;
		out->period = miss ? caches[c].miss_period : caches[c].access_period;
		return 0;
	}
	return -ENOENT;
}

/* rNNNN: 1 to 16 hex digits.  The name keeps the digits as given, in
 * lower case; two spellings of one code are caught as duplicates by
 * their encoding. */
static int lookup_raw(const char *name, struct dcpi_event_spec *out)
{
	size_t i, len = strlen(name);

	if (name[0] != 'r' || len < 2 || len > 17)
		return -ENOENT;
	for (i = 1; i < len; i++)
		if (!isxdigit((unsigned char)name[i]))
			return -ENOENT;
	for (i = 0; i < len; i++)
		out->name[i] = (char)tolower((unsigned char)name[i]);
	out->name[len] = 0;
	out->type = PERF_TYPE_RAW;
	out->config = strtoull(name + 1, NULL, 16);
	out->period = P_COMMON;
	return 0;
}

static const char *resolve_alias(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(aliases); i++)
		if (!strcmp(name, aliases[i].alias))
			return aliases[i].canon;
	return name;
}

/* ldlat: the machine's precise load-latency event.  Intel: the core PMU's
 * mem-loads (PEBS load latency: event 0xcd, its ldlat threshold from
 * sysfs), sampled with precise_ip; AMD: the IBS op PMU.  The profiles name
 * it ldlat whichever it is. */
static int lookup_ldlat(struct dcpi_event_spec *out)
{
	static const char *const intel[] = { "cpu_core/mem-loads", "cpu/mem-loads" };
	char path[PATH_MAX];

	for (size_t i = 0; i < NELEM(intel); i++)
		if (!sys_path(path, sizeof(path), "/sys/bus/event_source/devices/%.*s/events/mem-loads",
			      (int)(strchr(intel[i], '/') - intel[i]), intel[i]) &&
		    !access(path, R_OK)) {
			/* Sapphire Rapids and hybrid P-cores take mem-loads only in
			   a group led by mem-loads-aux: not built yet, so said */
			if (!sys_path(path, sizeof(path), "/sys/bus/event_source/devices/%.*s/events/"
				      "mem-loads-aux", (int)(strchr(intel[i], '/') - intel[i]), intel[i]) &&
			    !access(path, F_OK))
				return dcpi_error(ENOTSUP, "event 'ldlat': this CPU's PEBS load latency "
						  "(%.*s) must be led by mem-loads-aux in its group, which "
						  "dcpi does not do yet", (int)(strchr(intel[i], '/') - intel[i]),
						  intel[i]);
			if (lookup_pmu(intel[i], out))
				return dcpi_error_prefix(EINVAL, "ldlat");
			out->mem = DCPI_EVENT_MEM_PEBS;
			snprintf(out->name, sizeof(out->name), "ldlat");
			return 0;
		}
	if (!pmu_type("ibs_op", "ldlat", &out->type)) {
		out->config = 0;
		out->mem = DCPI_EVENT_MEM_IBS;
		out->period = P_COMMON;
		snprintf(out->name, sizeof(out->name), "ldlat");
		return 0;
	}
	return dcpi_error(ENOENT, "unknown event 'ldlat' here: this machine's PMU has no precise "
			  "load-latency event (neither Intel PEBS load latency, cpu/events/mem-loads, "
			  "nor AMD IBS, ibs_op; Arm SPE is not read yet)");
}

int dcpi_event_lookup(const char *name, struct dcpi_event_spec *out)
{
	const char *canon = resolve_alias(name);

	memset(out, 0, sizeof(*out));
	if (strlen(name) >= DCPI_EVENT_NAME_MAX)
		return dcpi_error(ENOENT, "unknown event '%.*s...' (name longer than %d bytes)",
				  DCPI_EVENT_NAME_MAX, name, DCPI_EVENT_NAME_MAX - 1);
	if (strchr(name, '/'))
		return lookup_pmu(name, out);
	if (!strcmp(name, "ldlat"))
		return lookup_ldlat(out);
	if (strchr(name, ':'))
		return lookup_tracepoint(name, out);
	if (!lookup_fixed(canon, out) || !lookup_cache(canon, out) || !lookup_raw(name, out))
		return 0;
	return dcpi_error(ENOENT, "unknown event '%s'", name);
}

/* ---- -event arguments ---------------------------------------------------------- */

static int is_clock(const struct dcpi_event_spec *ev)
{
	return ev->type == PERF_TYPE_SOFTWARE && (ev->config == PERF_COUNT_SW_CPU_CLOCK ||
						  ev->config == PERF_COUNT_SW_TASK_CLOCK);
}

/* [F|R]DIGITS[K|M] into ev->period and ev->randomize. */
static int parse_period(const char *s, struct dcpi_event_spec *ev)
{
	const char *p = s;
	uint64_t v = 0, mult = 1;
	int randomize = 0;

	if (*p == 'F' || *p == 'R')
		randomize = *p++ == 'R';
	if (!isdigit((unsigned char)*p))
		return dcpi_error(EINVAL, "bad period '%s' for event '%s'", s, ev->name);
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (PERIOD_MAX - (uint64_t)(*p - '0')) / 10)
			return dcpi_error(EINVAL, "bad period '%s' for event '%s': larger than %llu",
					  s, ev->name, (unsigned long long)PERIOD_MAX);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p == 'K' || *p == 'M')
		mult = *p++ == 'K' ? 1024 : 1024 * 1024;
	if (*p)
		return dcpi_error(EINVAL, "bad period '%s' for event '%s'", s, ev->name);
	if (v > PERIOD_MAX / mult)
		return dcpi_error(EINVAL, "bad period '%s' for event '%s': larger than %llu", s,
				  ev->name, (unsigned long long)PERIOD_MAX);
	if (v == 0)
		return dcpi_error(EINVAL, "bad period '%s' for event '%s': must be at least 1", s,
				  ev->name);
	if (is_clock(ev) && v * mult < CLOCK_MIN_NS)
		return dcpi_error(EINVAL, "bad period '%s' for event '%s': clock periods are in "
				  "nanoseconds and must be at least %llu (10 us)", s, ev->name,
				  CLOCK_MIN_NS);
	ev->period = v * mult;
	ev->randomize = randomize;
	return 0;
}

/* The period part of "name:PERIOD": the last colon part, when it starts
 * with F, R or a digit (tracepoint names "sub:event" start with neither),
 * or is empty (so that "cycles:" is a bad period, not an unknown name). */
static char *split_period(char *part)
{
	char *colon = strrchr(part, ':');

	if (!colon || !(colon[1] == 'F' || colon[1] == 'R' || colon[1] == 0 ||
			isdigit((unsigned char)colon[1])))
		return NULL;
	*colon = 0;
	return colon + 1;
}

static int same_encoding(const struct dcpi_event_spec *a, const struct dcpi_event_spec *b)
{
	return a->type == b->type && a->config == b->config && a->config1 == b->config1 &&
	       a->config2 == b->config2;
}

static int check_duplicate(const struct dcpi_eventlist *l, const struct dcpi_event_spec *ev,
			   const char *given, const char *arg, unsigned set)
{
	unsigned i;

	for (i = 0; i < l->n; i++) {
		/* DCPI's imiss+imiss+dmiss gave imiss two thirds of one counter's
		   time; a perf group counts its events at once, so repeating one
		   cannot weight it */
		if (l->ev[i].set == set && (!strcmp(l->ev[i].name, ev->name) ||
					    same_encoding(&l->ev[i], ev)))
			return dcpi_error(EEXIST, "event '%s' twice in -event '%s': the events "
					  "of a set are counted at the same time, so repeating "
					  "one does not weight it as in DCPI; give it a shorter "
					  "period to sample it more often", given, arg);
		if (!strcmp(l->ev[i].name, ev->name) && !strcmp(given, ev->name))
			return dcpi_error(EEXIST, "duplicate event '%s' in -event '%s'", given, arg);
		if (!strcmp(l->ev[i].name, ev->name) || same_encoding(&l->ev[i], ev))
			return dcpi_error(EEXIST, "duplicate event '%s' (same as '%s') in -event "
					  "'%s'", given, l->ev[i].name, arg);
	}
	return 0;
}

/* Append one "name[:period]" of arg to l in set. */
static int parse_one(struct dcpi_eventlist *l, char *part, const char *arg, unsigned set)
{
	char msg[1024];
	struct dcpi_event_spec ev;
	char *period;
	int err;

	if (!*part)
		return dcpi_error(EINVAL, "empty event name in -event '%s'", arg);
	period = split_period(part);
	if (!*part)
		return dcpi_error(EINVAL, "empty event name in -event '%s'", arg);
	err = dcpi_event_lookup(part, &ev);
	if (err < 0) {
		snprintf(msg, sizeof(msg), "%s", dcpi_errmsg());
		return dcpi_error(-err, "%s in -event '%s'", msg, arg);
	}
	if (period && (err = parse_period(period, &ev)) < 0)
		return err;
	err = check_duplicate(l, &ev, part, arg, set);
	if (err < 0)
		return err;
	if (l->n >= DCPI_MAX_EVENTS)
		return dcpi_error(E2BIG, "too many events in -event '%s': at most %d in all",
				  arg, DCPI_MAX_EVENTS);
	ev.set = set;
	l->ev[l->n++] = ev;
	return 0;
}

int dcpi_event_parse(struct dcpi_eventlist *l, const char *arg)
{
	struct dcpi_eventlist tmp = *l;
	char buf[ARG_MAX_LEN], *part, *next;
	size_t len = strlen(arg);
	int err;

	if (len == 0)
		return dcpi_error(EINVAL, "empty -event");
	if (len >= sizeof(buf))
		return dcpi_error(EINVAL, "-event '%.40s...' is longer than %d bytes", arg,
				  ARG_MAX_LEN - 1);
	memcpy(buf, arg, len + 1);
	for (part = buf; part; part = next) {
		next = strchr(part, '+');
		if (next)
			*next++ = 0;
		err = parse_one(&tmp, part, arg, l->nsets);
		if (err < 0)
			return err;
	}
	tmp.nsets++;
	*l = tmp;
	return 0;
}

void dcpi_event_mux(struct dcpi_eventlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		l->ev[i].set = i;
	l->nsets = l->n;
}

/* ---- the kernel ------------------------------------------------------------------ */

void dcpi_event_attr(const struct dcpi_event_spec *ev, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = ev->type;
	attr->config = ev->config;
	attr->config1 = ev->config1;
	attr->config2 = ev->config2;
	attr->sample_period = ev->period;
	if (ev->mem == DCPI_EVENT_MEM_PEBS)
		attr->precise_ip = 2; /* PEBS: the load's own address and latency */
}

int dcpi_event_probe(const struct dcpi_event_spec *ev)
{
	struct perf_event_attr attr;
	long fd;
	int err;

	dcpi_event_attr(ev, &attr);
	attr.disabled = 1;
	attr.sample_type = PERF_SAMPLE_IP;
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		err = errno;
		return dcpi_error(err, "perf_event_open of '%s' on CPU 0: %s", ev->name,
				  strerror(err));
	}
	close((int)fd);
	return 0;
}

static void append_default(struct dcpi_eventlist *l, const char *name)
{
	/* Built-in names: the lookup cannot fail. */
	dcpi_event_lookup(name, &l->ev[l->n]);
	l->ev[l->n++].set = l->nsets++;
}

int dcpi_event_defaults(struct dcpi_eventlist *l, char *why, size_t whylen)
{
	struct dcpi_event_spec cycles;
	const char *what;
	int err;

	memset(l, 0, sizeof(*l));
	dcpi_event_lookup("cycles", &cycles);
	err = dcpi_event_probe(&cycles);
	if (!err) {
		append_default(l, "cycles");
		append_default(l, "instructions");
		if (whylen)
			snprintf(why, whylen, "hardware PMU present: sampling cycles and "
				 "instructions (two groups)");
		return 0;
	}
	append_default(l, "cpu-clock");
	if (err == -ENOENT || err == -ENODEV)
		what = "no hardware PMU: ";
	else if (err == -EOPNOTSUPP)
		what = "hardware PMU cannot sample: ";
	else
		what = "";
	if (whylen)
		snprintf(why, whylen, "%scycles cannot be sampled (perf_event_open: %s); "
			 "using cpu-clock", what, strerror(-err));
	return 0;
}
