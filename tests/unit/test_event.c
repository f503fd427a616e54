/* Event specifications: names, encodings, periods, sets, errors, sysfs
 * PMU events and tracepoints (fixture trees and this machine's own),
 * defaults and probing against this kernel. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "dcpi/error.h"
#include "dcpi/event.h"
#include "tap.h"

#define CACHE(id, op, res) \
	((uint64_t)(id) | (uint64_t)(op) << 8 | (uint64_t)(res) << 16)

static char tmpdir[] = "/tmp/dcpi-test-event.XXXXXX";

static int has(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

/* Write root/rel, creating its directories. */
static void put(const char *root, const char *rel, const char *content)
{
	char path[4096], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%s\n", content);
	fclose(f);
}

static void check_one(const char *name, const char *canon, uint32_t type, uint64_t config)
{
	struct dcpi_event_spec ev;
	int err = dcpi_event_lookup(name, &ev);

	T_EQ(err, 0, "lookup %s", name);
	T_STREQ(ev.name, canon, "%s records as %s", name, canon);
	T_EQ(ev.type, type, "%s type", name);
	T_OK(ev.config == config, "%s config %#llx (want %#llx)", name,
	     (unsigned long long)ev.config, (unsigned long long)config);
	T_OK(ev.period >= 1, "%s has a default period", name);
}

static void test_dcpi_aliases(void)
{
	check_one("cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	check_one("issues", "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	check_one("retires", "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	check_one("imiss", "L1-icache-load-misses", PERF_TYPE_HW_CACHE,
		  CACHE(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_OP_READ,
			PERF_COUNT_HW_CACHE_RESULT_MISS));
	check_one("dmiss", "L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
		  CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
			PERF_COUNT_HW_CACHE_RESULT_MISS));
	check_one("branchmp", "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES);
	check_one("itbmiss", "iTLB-load-misses", PERF_TYPE_HW_CACHE,
		  CACHE(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ,
			PERF_COUNT_HW_CACHE_RESULT_MISS));
	check_one("dtbmiss", "dTLB-load-misses", PERF_TYPE_HW_CACHE,
		  CACHE(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ,
			PERF_COUNT_HW_CACHE_RESULT_MISS));
}

static void test_generic(void)
{
	static const struct {
		const char *name, *canon;
		uint32_t type;
		uint64_t config;
	} t[] = {
		{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
		{ "instructions", "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
		{ "cache-references", "cache-references", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_CACHE_REFERENCES },
		{ "cache-misses", "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
		{ "branch-instructions", "branch-instructions", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branches", "branch-instructions", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branch-misses", "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
		{ "bus-cycles", "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
		{ "stalled-cycles-frontend", "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
		{ "idle-cycles-frontend", "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
		{ "stalled-cycles-backend", "stalled-cycles-backend", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
		{ "ref-cycles", "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
		{ "cpu-clock", "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
		{ "task-clock", "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
		{ "page-faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
		{ "faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
		{ "minor-faults", "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
		{ "major-faults", "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
		{ "context-switches", "context-switches", PERF_TYPE_SOFTWARE,
		  PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cs", "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cpu-migrations", "cpu-migrations", PERF_TYPE_SOFTWARE,
		  PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "migrations", "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "alignment-faults", "alignment-faults", PERF_TYPE_SOFTWARE,
		  PERF_COUNT_SW_ALIGNMENT_FAULTS },
		{ "emulation-faults", "emulation-faults", PERF_TYPE_SOFTWARE,
		  PERF_COUNT_SW_EMULATION_FAULTS },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		check_one(t[i].name, t[i].canon, t[i].type, t[i].config);
}

/* Every cache x op x result, names built here from perf's spelling. */
static void test_cache(void)
{
	static const struct {
		const char *name;
		uint64_t id;
	} c[] = {
		{ "L1-dcache", PERF_COUNT_HW_CACHE_L1D }, { "L1-icache", PERF_COUNT_HW_CACHE_L1I },
		{ "LLC", PERF_COUNT_HW_CACHE_LL },        { "dTLB", PERF_COUNT_HW_CACHE_DTLB },
		{ "iTLB", PERF_COUNT_HW_CACHE_ITLB },     { "branch", PERF_COUNT_HW_CACHE_BPU },
		{ "node", PERF_COUNT_HW_CACHE_NODE },
	};
	static const struct {
		const char *access, *miss;
		uint64_t id;
	} o[] = {
		{ "loads", "load-misses", PERF_COUNT_HW_CACHE_OP_READ },
		{ "stores", "store-misses", PERF_COUNT_HW_CACHE_OP_WRITE },
		{ "prefetches", "prefetch-misses", PERF_COUNT_HW_CACHE_OP_PREFETCH },
	};
	char name[64];
	size_t i, j;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		for (j = 0; j < sizeof(o) / sizeof(o[0]); j++) {
			snprintf(name, sizeof(name), "%s-%s", c[i].name, o[j].access);
			check_one(name, name, PERF_TYPE_HW_CACHE,
				  CACHE(c[i].id, o[j].id, PERF_COUNT_HW_CACHE_RESULT_ACCESS));
			snprintf(name, sizeof(name), "%s-%s", c[i].name, o[j].miss);
			check_one(name, name, PERF_TYPE_HW_CACHE,
				  CACHE(c[i].id, o[j].id, PERF_COUNT_HW_CACHE_RESULT_MISS));
		}
	}
	check_one("l1-DCACHE-Load-Misses", "L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
		  CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
			PERF_COUNT_HW_CACHE_RESULT_MISS));
}

static void expect_lookup_fails(const char *name, int err, const char *msg)
{
	struct dcpi_event_spec ev;

	T_EQ(dcpi_event_lookup(name, &ev), err, "lookup '%s' fails", name);
	T_OK(has(dcpi_errmsg(), msg), "message for '%s' says \"%s\": %s", name, msg,
	     dcpi_errmsg());
}

static void test_raw(void)
{
	check_one("r01c2", "r01c2", PERF_TYPE_RAW, 0x1c2);
	check_one("r01C2", "r01c2", PERF_TYPE_RAW, 0x1c2);
	check_one("rffffffffffffffff", "rffffffffffffffff", PERF_TYPE_RAW, UINT64_MAX);
	check_one("ref-cycles", "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES);
	expect_lookup_fails("r1ffffffffffffffff", -ENOENT, "unknown event 'r1ffffffffffffffff'");
	expect_lookup_fails("r", -ENOENT, "unknown event 'r'");
	expect_lookup_fails("r12g4", -ENOENT, "unknown event 'r12g4'");
	expect_lookup_fails("R1c2", -ENOENT, "unknown event 'R1c2'");
}

static void expect_parse_fails(struct dcpi_eventlist *l, const char *arg, int err,
			       const char *msg)
{
	unsigned n = l->n, nsets = l->nsets;

	T_EQ(dcpi_event_parse(l, arg), err, "-event '%s' is refused", arg);
	T_OK(has(dcpi_errmsg(), msg), "message for '%s' says \"%s\": %s", arg, msg,
	     dcpi_errmsg());
	T_OK(l->n == n && l->nsets == nsets, "-event '%s' left the list unchanged", arg);
}

static uint64_t default_period(const char *name)
{
	struct dcpi_event_spec ev;

	return dcpi_event_lookup(name, &ev) ? 0 : ev.period;
}

static void test_sets_and_periods(void)
{
	struct dcpi_eventlist l = { 0 };

	T_EQ(dcpi_event_parse(&l, "cycles:F64K+issues+branchmp:R3M"), 0, "parse a set of three");
	T_EQ(dcpi_event_parse(&l, "cpu-clock"), 0, "parse a second set");
	T_EQ(dcpi_event_parse(&l, "dmiss:1000+imiss:F7"), 0, "parse a third set");
	T_EQ(l.n, 6, "six events");
	T_EQ(l.nsets, 3, "three sets");
	T_EQ(l.ev[0].set, 0, "cycles in set 0");
	T_EQ(l.ev[1].set, 0, "issues in set 0");
	T_EQ(l.ev[2].set, 0, "branchmp in set 0");
	T_EQ(l.ev[3].set, 1, "cpu-clock in set 1");
	T_EQ(l.ev[4].set, 2, "dmiss in set 2");
	T_EQ(l.ev[5].set, 2, "imiss in set 2");
	T_STREQ(l.ev[1].name, "instructions", "issues recorded as instructions");
	T_EQ(l.ev[0].period, 64 * 1024, "F64K is 65536");
	T_EQ(l.ev[0].randomize, 0, "F is fixed");
	T_EQ(l.ev[1].period, default_period("instructions"), "no period: the default");
	T_EQ(l.ev[2].period, 3 * 1024 * 1024, "R3M is 3*1024*1024");
	T_EQ(l.ev[2].randomize, 1, "R randomises");
	T_EQ(l.ev[3].period, default_period("cpu-clock"), "cpu-clock default period");
	T_EQ(l.ev[4].period, 1000, "plain digits");
	T_EQ(l.ev[5].period, 7, "F7");

	memset(&l, 0, sizeof(l));
	T_EQ(dcpi_event_parse(&l, "cpu-clock:10000"), 0, "cpu-clock at 10 us is accepted");
	T_EQ(dcpi_event_parse(&l, "task-clock:10K"), 0, "task-clock at 10K ns is accepted");
	T_EQ(l.ev[1].period, 10240, "10K is 10240");
	T_EQ(dcpi_event_parse(&l, "cycles:9223372036854775807"), 0, "INT64_MAX period");
	T_OK(l.ev[2].period == (uint64_t)INT64_MAX, "INT64_MAX kept");
}

static void test_default_periods(void)
{
	/* What the daemon does when no period is given: at least 1, and for
	 * the clock events a rate that the man page promises. */
	T_EQ(default_period("cpu-clock"), 500000, "cpu-clock: 500000 ns = 2000 samples/s");
	T_EQ(default_period("task-clock"), 500000, "task-clock: 500000 ns");
	T_OK(default_period("cycles") % 2 == 1, "cycles period is odd (no lock-step)");
	T_OK(default_period("instructions") > default_period("cycles"),
	     "instructions sampled less often per event than cycles");
	T_OK(default_period("L1-dcache-load-misses") < default_period("cycles"),
	     "misses sampled more often per event than cycles");
}

/* The man page's table of defaults and the code agree: each row
 * "NAME<TAB>...<TAB>PERIOD" between .TS and .TE whose last column is a
 * number is checked by lookup. */
static void test_man_page_periods(void)
{
	const char *root = getenv("DCPI_ROOT");
	char path[4096], line[512], *tab, *end;
	int in_table = 0, rows = 0, bad = 0;
	unsigned long long want;
	FILE *f;

	snprintf(path, sizeof(path), "%s/man/dcpi-events.7", root ? root : ".");
	f = fopen(path, "r");
	T_OK(f != NULL, "man page %s exists", path);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, ".TS", 3) || !strncmp(line, ".TE", 3)) {
			in_table = line[2] == 'S';
			continue;
		}
		tab = strrchr(line, '\t');
		if (!in_table || !tab || !strchr(line, '\t'))
			continue;
		want = strtoull(tab + 1, &end, 10);
		if (end == tab + 1 || *end)
			continue;
		*strchr(line, '\t') = 0;
		rows++;
		if (default_period(line) != want) {
			bad++;
			printf("# %s: man page says %llu, lookup gives %llu\n", line, want,
			       (unsigned long long)default_period(line));
		}
	}
	fclose(f);
	T_OK(rows >= 40, "man page lists default periods (%d rows)", rows);
	T_EQ(bad, 0, "every default period in the man page matches the code");
}

static void test_errors(void)
{
	struct dcpi_eventlist l = { 0 };
	char arg[512], big[8000];
	int i;

	expect_parse_fails(&l, "cylces:F64K", -ENOENT, "unknown event 'cylces' in -event "
			   "'cylces:F64K'");
	expect_parse_fails(&l, "cycles:F6x4", -EINVAL, "bad period 'F6x4' for event 'cycles'");
	expect_parse_fails(&l, "cycles:F", -EINVAL, "bad period 'F' for event 'cycles'");
	expect_parse_fails(&l, "cycles:RK", -EINVAL, "bad period 'RK' for event 'cycles'");
	expect_parse_fails(&l, "cycles:64KK", -EINVAL, "bad period '64KK' for event 'cycles'");
	expect_parse_fails(&l, "cycles:-5", -ENOENT, "unknown event 'cycles:-5'");
	expect_parse_fails(&l, "cycles:", -EINVAL, "bad period '' for event 'cycles'");
	expect_parse_fails(&l, "cycles:0", -EINVAL, "must be at least 1");
	expect_parse_fails(&l, "cycles:F0K", -EINVAL, "bad period 'F0K'");
	expect_parse_fails(&l, "cycles:9223372036854775808", -EINVAL, "larger than");
	expect_parse_fails(&l, "cycles:99999999999999999999999", -EINVAL, "larger than");
	expect_parse_fails(&l, "cycles:9007199254740992M", -EINVAL, "larger than");
	expect_parse_fails(&l, "cpu-clock:9999", -EINVAL,
			   "bad period '9999' for event 'cpu-clock'");
	expect_parse_fails(&l, "cpu-clock:9999", -EINVAL, "at least 10000");
	expect_parse_fails(&l, "task-clock:F9K", -EINVAL, "bad period 'F9K' for event "
			   "'task-clock'");
	expect_parse_fails(&l, "", -EINVAL, "empty -event");
	expect_parse_fails(&l, "cycles+", -EINVAL, "empty event name in -event 'cycles+'");
	expect_parse_fails(&l, "+cycles", -EINVAL, "empty event name");
	expect_parse_fails(&l, "cycles++instructions", -EINVAL, "empty event name");
	expect_parse_fails(&l, ":F64K", -EINVAL, "empty event name");
	/* a repeat inside one set is DCPI's weighting, which a group cannot do */
	expect_parse_fails(&l, "cycles+cycles", -EEXIST, "event 'cycles' twice in -event "
			   "'cycles+cycles': the events of a set are counted at the same time");
	expect_parse_fails(&l, "imiss+imiss+dmiss", -EEXIST, "does not weight it as in DCPI");
	expect_parse_fails(&l, "issues+retires", -EEXIST, "event 'retires' twice");
	expect_parse_fails(&l, "r1c2+r01c2", -EEXIST, "event 'r01c2' twice");
	expect_parse_fails(&l, "cycles+instructions+nosuch", -ENOENT, "unknown event 'nosuch'");
	T_EQ(l.n, 0, "failed -events added nothing");

	T_EQ(dcpi_event_parse(&l, "cycles"), 0, "cycles alone");
	expect_parse_fails(&l, "cpu-cycles", -EEXIST, "duplicate event 'cpu-cycles' (same as "
			   "'cycles')");
	expect_parse_fails(&l, "cycles:F1M", -EEXIST, "duplicate event 'cycles'");

	/* -mux: every event its own set, in order */
	memset(&l, 0, sizeof(l));
	T_EQ(dcpi_event_parse(&l, "cycles+imiss+dmiss"), 0, "cycles+imiss+dmiss");
	T_EQ(dcpi_event_parse(&l, "branchmp"), 0, "branchmp");
	T_OK(l.nsets == 2 && l.ev[2].set == 0 && l.ev[3].set == 1, "two sets before -mux");
	dcpi_event_mux(&l);
	T_OK(l.n == 4 && l.nsets == 4 && l.ev[0].set == 0 && l.ev[1].set == 1 &&
	     l.ev[2].set == 2 && l.ev[3].set == 3 && !strcmp(l.ev[1].name,
							     "L1-icache-load-misses"),
	     "-mux: four sets of one, in the order given");
	memset(&l, 0, sizeof(l));
	T_EQ(dcpi_event_parse(&l, "cycles"), 0, "cycles alone");

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	expect_parse_fails(&l, big, -EINVAL, "longer than");
	memset(big, 'x', 100);
	big[100] = 0;
	expect_parse_fails(&l, big, -ENOENT, "longer than 63 bytes");

	/* 16 events in all, then one more. */
	memset(&l, 0, sizeof(l));
	for (i = 0; i < DCPI_MAX_EVENTS; i++) {
		snprintf(arg, sizeof(arg), "r%x", i + 1);
		if (dcpi_event_parse(&l, arg))
			break;
	}
	T_EQ(l.n, DCPI_MAX_EVENTS, "%d events fit", DCPI_MAX_EVENTS);
	T_EQ(l.nsets, DCPI_MAX_EVENTS, "each in its own set");
	expect_parse_fails(&l, "cycles", -E2BIG, "too many events in -event 'cycles': at most 16");
	memset(&l, 0, sizeof(l));
	arg[0] = 0;
	for (i = 0; i <= DCPI_MAX_EVENTS; i++)
		snprintf(arg + strlen(arg), sizeof(arg) - strlen(arg), "%sr%x", i ? "+" : "",
			 i + 1);
	expect_parse_fails(&l, arg, -E2BIG, "too many events");
}

/* A fake sysfs/tracefs tree exercises PMU formats this machine lacks. */
static void build_fixture(const char *root)
{
	static const char *const files[][2] = {
		{ "type", "42" },
		{ "format/event", "config:0-7" },
		{ "format/umask", "config:8-15" },
		{ "format/edge", "config:18" },
		{ "format/inv", "config:23" },
		{ "format/cmask", "config:24-31" },
		{ "format/ldlat", "config1:0-15" },
		{ "format/split", "config:32-35,40-43" },
		{ "format/wide", "config2:0-63" },
		{ "format/weird", "config3:0-7" },
		{ "format/backward", "config:7-3" },
		{ "format/bigbit", "config:60-64" },
		{ "events/loads", "event=0xcd,umask=0x1,ldlat=3" },
		{ "events/split", "event=0x1,split=0xab" },
		{ "events/flags", "event=0x2,edge,inv,cmask=2" },
		{ "events/wide", "wide=0xffffffffffffffff" },
		{ "events/direct", "config=0x1234,config1=5" },
		{ "events/decimal", "event=08" },
		{ "events/param", "event=0x3,umask=?" },
		{ "events/toobig", "umask=0x1ff" },
		{ "events/splitbig", "split=0x100" },
		{ "events/nofmt", "event=1,foo=2" },
		{ "events/badfmt", "weird=1" },
		{ "events/backward", "backward=1" },
		{ "events/bigbit", "bigbit=1" },
	};
	char rel[256], fifo[4096];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/fake/%s", files[i][0]);
		put(root, rel, files[i][1]);
	}
	put(root, "sys/bus/event_source/devices/fake/events/empty", "");
	snprintf(fifo, sizeof(fifo), "%s/sys/bus/event_source/devices/fake/events/fifo", root);
	if (mkfifo(fifo, 0600))
		perror(fifo);
	put(root, "sys/kernel/tracing/events/sched/sched_switch/id", "316");
	put(root, "sys/kernel/tracing/events/rcu/rcu_utilization/id", "17");
	put(root, "sys/kernel/debug/tracing/events/olddebug/only_here/id", "7");
}

static void check_pmu(const char *name, const char *canon, uint64_t c, uint64_t c1,
		      uint64_t c2)
{
	struct dcpi_event_spec ev;

	T_EQ(dcpi_event_lookup(name, &ev), 0, "lookup %s: %s", name, dcpi_errmsg());
	T_STREQ(ev.name, canon, "%s recorded as %s", name, canon);
	T_EQ(ev.type, 42, "%s has the PMU's type", name);
	T_OK(ev.config == c && ev.config1 == c1 && ev.config2 == c2,
	     "%s encodes to %#llx/%#llx/%#llx (got %#llx/%#llx/%#llx)", name,
	     (unsigned long long)c, (unsigned long long)c1, (unsigned long long)c2,
	     (unsigned long long)ev.config, (unsigned long long)ev.config1,
	     (unsigned long long)ev.config2);
}

static void test_fixture_pmu(void)
{
	struct dcpi_eventlist l = { 0 };

	check_pmu("fake/loads", "fake/loads", 0xcd | 0x1 << 8, 3, 0);
	check_pmu("fake/loads/", "fake/loads", 0xcd | 0x1 << 8, 3, 0);
	check_pmu("fake/split", "fake/split", 0x1 | 0xbULL << 32 | 0xaULL << 40, 0, 0);
	check_pmu("fake/flags", "fake/flags", 0x2 | 1ULL << 18 | 1ULL << 23 | 2ULL << 24, 0, 0);
	check_pmu("fake/wide", "fake/wide", 0, 0, UINT64_MAX);
	check_pmu("fake/direct", "fake/direct", 0x1234, 5, 0);
	check_pmu("fake/decimal", "fake/decimal", 8, 0, 0);
	expect_lookup_fails("fake/param", -EINVAL, "term 'umask=?' cannot be encoded");
	expect_lookup_fails("fake/toobig", -EINVAL, "value 0x1ff of term 'umask' does not fit");
	expect_lookup_fails("fake/splitbig", -EINVAL, "does not fit");
	expect_lookup_fails("fake/nofmt", -EINVAL, "term 'foo' cannot be encoded");
	expect_lookup_fails("fake/badfmt", -EINVAL, "format 'config3:0-7'");
	expect_lookup_fails("fake/backward", -EINVAL, "format 'config:7-3'");
	expect_lookup_fails("fake/bigbit", -EINVAL, "format 'config:60-64'");
	expect_lookup_fails("fake/empty", -EINVAL, "event 'fake/empty': empty definition");
	expect_lookup_fails("fake/fifo", -EINVAL, "event 'fake/fifo': empty definition");
	expect_lookup_fails("fake/none", -ENOENT, "unknown event 'fake/none' (PMU 'fake' has "
			    "no event 'none'");
	expect_lookup_fails("nope/loads", -ENOENT, "no PMU 'nope'");
	expect_lookup_fails("fake/../type", -ENOENT, "unknown event 'fake/../type'");
	expect_lookup_fails("../fake/loads", -ENOENT, "unknown event");
	expect_lookup_fails("fake/", -ENOENT, "unknown event 'fake/'");
	expect_lookup_fails("/loads", -ENOENT, "unknown event '/loads'");

	T_EQ(dcpi_event_parse(&l, "fake/loads:F1000+fake/split/"), 0, "PMU events in a set");
	T_EQ(l.ev[0].period, 1000, "PMU event with a period");
	T_STREQ(l.ev[1].name, "fake/split", "trailing slash dropped");
	expect_parse_fails(&l, "fake/loads/", -EEXIST, "duplicate event");
}

static void test_fixture_tracepoints(const char *root)
{
	struct dcpi_eventlist l = { 0 };
	char other[4096];

	T_EQ(dcpi_event_parse(&l, "sched:sched_switch"), 0, "tracepoint without period");
	T_EQ(l.ev[0].type, PERF_TYPE_TRACEPOINT, "tracepoint type");
	T_EQ(l.ev[0].config, 316, "tracepoint id from tracefs");
	T_EQ(l.ev[0].period, 1, "tracepoints default to every event");
	T_STREQ(l.ev[0].name, "sched:sched_switch", "tracepoint name");
	T_EQ(dcpi_event_parse(&l, "rcu:rcu_utilization:F5+cycles:R64K"), 0,
	     "tracepoint whose event starts with r, and a period");
	T_EQ(l.ev[1].config, 17, "rcu tracepoint id");
	T_EQ(l.ev[1].period, 5, "tracepoint period F5");
	T_EQ(l.ev[2].period, 65536, "cycles after a tracepoint in the set");
	T_EQ(dcpi_event_parse(&l, "olddebug:only_here:3"), 0, "debugfs tracing fallback");
	T_EQ(l.ev[3].config, 7, "id from /sys/kernel/debug/tracing");
	T_EQ(l.ev[3].period, 3, "period after a debugfs tracepoint");
	expect_parse_fails(&l, "sched:nosuch", -ENOENT, "unknown event 'sched:nosuch' (no such "
			   "tracepoint) in -event 'sched:nosuch'");
	expect_parse_fails(&l, "sched:../../x", -ENOENT, "unknown event");
	expect_parse_fails(&l, "a:b:c", -ENOENT, "unknown event 'a:b:c'");

	snprintf(other, sizeof(other), "%s/empty", root);
	mkdir(other, 0755);
	dcpi_event_sysroot(other);
	expect_lookup_fails("sched:sched_switch", -ENOENT, "tracefs is not mounted");
	dcpi_event_sysroot(root);
}

/* ldlat: the PMU's precise load-latency event, where sysfs shows one:
 * Intel's mem-loads (PEBS, precise_ip), else AMD's IBS op, else refused
 * saying so. */
static void test_fixture_ldlat(const char *root)
{
	struct dcpi_event_spec ev;
	struct perf_event_attr a;
	char dir[4200];

	expect_lookup_fails("ldlat", -ENOENT, "no precise load-latency event");
	put(root, "sys/bus/event_source/devices/ibs_op/type", "11");
	T_EQ(dcpi_event_lookup("ldlat", &ev), 0, "ldlat with IBS op: %s", dcpi_errmsg());
	T_OK(ev.type == 11 && ev.config == 0 && ev.mem == DCPI_EVENT_MEM_IBS &&
	     !strcmp(ev.name, "ldlat"), "the ibs_op PMU, named ldlat, a memory event");
	dcpi_event_attr(&ev, &a);
	T_EQ(a.precise_ip, 0, "IBS: no precise_ip asked");
	put(root, "sys/bus/event_source/devices/cpu/type", "4");
	put(root, "sys/bus/event_source/devices/cpu/format/event", "config:0-7");
	put(root, "sys/bus/event_source/devices/cpu/format/umask", "config:8-15");
	put(root, "sys/bus/event_source/devices/cpu/format/ldlat", "config1:0-15");
	put(root, "sys/bus/event_source/devices/cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3");
	T_EQ(dcpi_event_lookup("ldlat", &ev), 0, "ldlat with PEBS: %s", dcpi_errmsg());
	T_OK(ev.type == 4 && ev.config == 0x1cd && ev.config1 == 3 && ev.mem == DCPI_EVENT_MEM_PEBS &&
	     !strcmp(ev.name, "ldlat"), "Intel's mem-loads first: event 0xcd, umask 1, ldlat 3");
	dcpi_event_attr(&ev, &a);
	T_EQ(a.precise_ip, 2, "PEBS: precise_ip 2");
	put(root, "sys/bus/event_source/devices/cpu/events/mem-loads-aux", "event=0x03,umask=0x82");
	expect_lookup_fails("ldlat", -ENOTSUP, "must be led by mem-loads-aux");
	snprintf(dir, sizeof(dir), "%s/sys/bus/event_source/devices/cpu/events/mem-loads-aux", root);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/sys/bus/event_source/devices/cpu/events/mem-loads", root);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/sys/bus/event_source/devices/ibs_op/type", root);
	unlink(dir);
}

static void test_fixtures(void)
{
	char longroot[5000];

	if (!mkdtemp(tmpdir)) {
		T_OK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	build_fixture(tmpdir);
	T_EQ(dcpi_event_sysroot(tmpdir), 0, "sysroot set to the fixture");
	test_fixture_pmu();
	test_fixture_tracepoints(tmpdir);
	test_fixture_ldlat(tmpdir);
	memset(longroot, '/', sizeof(longroot) - 1);
	longroot[sizeof(longroot) - 1] = 0;
	T_EQ(dcpi_event_sysroot(longroot), -ENAMETOOLONG, "overlong sysroot refused");
	T_EQ(dcpi_event_sysroot(NULL), 0, "sysroot back to /");
}

/* ---- this machine ----------------------------------------------------------- */

static void test_real_tracepoint(void)
{
	static const char *const ids[] = { "/sys/kernel/tracing/events/sched/sched_switch/id",
					   "/sys/kernel/debug/tracing/events/sched/sched_switch/id" };
	struct dcpi_event_spec ev;
	unsigned long long id = 0;
	FILE *f = NULL;
	size_t i;

	for (i = 0; i < 2 && !f; i++)
		f = fopen(ids[i], "r");
	if (!f) {
		T_SKIP("tracefs is not mounted here (no sched/sched_switch/id)");
		return;
	}
	if (fscanf(f, "%llu", &id) != 1)
		id = 0;
	fclose(f);
	T_EQ(dcpi_event_lookup("sched:sched_switch", &ev), 0, "real tracepoint resolves");
	T_OK(ev.config == id && id, "sched:sched_switch id %llu matches tracefs",
	     (unsigned long long)ev.config);
}

/* The first sysfs PMU event of this machine that lookup accepts. */
static void test_real_pmu(void)
{
	const char *base = "/sys/bus/event_source/devices";
	char path[4096], name[256];
	struct dcpi_event_spec ev;
	struct dirent *p, *e;
	DIR *pmus, *evs;
	unsigned type;
	FILE *f;
	int found = 0;

	pmus = opendir(base);
	while (pmus && !found && (p = readdir(pmus))) {
		snprintf(path, sizeof(path), "%s/%s/events", base, p->d_name);
		evs = p->d_name[0] == '.' ? NULL : opendir(path);
		while (evs && !found && (e = readdir(evs))) {
			if (e->d_name[0] == '.' || strchr(e->d_name, '.') ||
			    strlen(p->d_name) + strlen(e->d_name) > 60)
				continue;
			snprintf(name, sizeof(name), "%s/%s", p->d_name, e->d_name);
			found = dcpi_event_lookup(name, &ev) == 0;
		}
		if (evs)
			closedir(evs);
		if (!found)
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", base, p->d_name);
		f = fopen(path, "r");
		T_OK(f && fscanf(f, "%u", &type) == 1 && type == ev.type,
		     "%s has the type in %s (%u)", name, path, ev.type);
		if (f)
			fclose(f);
		T_STREQ(ev.name, name, "PMU event recorded as PMU/NAME");
	}
	if (pmus)
		closedir(pmus);
	if (!found)
		T_SKIP("no sysfs PMU here has an events/ entry we can encode");
}

static int open_cycles(void)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.sample_period = 1000003;
	a.disabled = 1;
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

static void test_defaults_and_probe(void)
{
	struct dcpi_eventlist l;
	struct dcpi_event_spec ev;
	char why[256], want[256];
	int cycles = open_cycles(), err;

	T_EQ(dcpi_event_defaults(&l, why, sizeof(why)), 0, "defaults");
	printf("# defaults: %s\n", why);
	dcpi_event_lookup("cycles", &ev);
	T_EQ(dcpi_event_probe(&ev), cycles, "probe(cycles) agrees with perf_event_open here");
	if (cycles == 0) {
		T_EQ(l.n, 2, "PMU: two default events");
		T_EQ(l.nsets, 2, "PMU: in two sets");
		T_STREQ(l.ev[0].name, "cycles", "PMU: cycles first");
		T_STREQ(l.ev[1].name, "instructions", "PMU: then instructions");
	} else {
		T_EQ(l.n, 1, "no PMU: one default event");
		T_EQ(l.nsets, 1, "no PMU: one set");
		T_STREQ(l.ev[0].name, "cpu-clock", "no PMU: cpu-clock");
		T_EQ(l.ev[0].period, default_period("cpu-clock"), "cpu-clock default period");
		snprintf(want, sizeof(want), "cycles cannot be sampled (perf_event_open: %s); "
			 "using cpu-clock", strerror(-cycles));
		T_OK(has(why, want), "why says \"%s\"", want);
		T_OK(cycles != -ENOENT || has(why, "no hardware PMU"), "why names the missing PMU");
		T_OK(has(dcpi_errmsg(), "perf_event_open of 'cycles' on CPU 0"),
		     "probe failure message: %s", dcpi_errmsg());
	}
	T_EQ(dcpi_event_defaults(&l, NULL, 0), 0, "defaults without why");
	if (geteuid() != 0) {
		T_SKIP("not root: cannot sample cpu-clock system-wide");
		return;
	}
	dcpi_event_lookup("cpu-clock", &ev);
	err = dcpi_event_probe(&ev);
	T_EQ(err, 0, "probe(cpu-clock) as root%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
}

static void test_attr(void)
{
	struct dcpi_event_spec ev;
	struct perf_event_attr a;

	memset(&ev, 0, sizeof(ev));
	ev.type = 42;
	ev.config = 0x1cd;
	ev.config1 = 3;
	ev.config2 = 9;
	ev.period = 12345;
	memset(&a, 0xff, sizeof(a));
	dcpi_event_attr(&ev, &a);
	T_EQ(a.size, sizeof(a), "attr size");
	T_EQ(a.type, 42, "attr type");
	T_EQ(a.config, 0x1cd, "attr config");
	T_EQ(a.config1, 3, "attr config1");
	T_EQ(a.config2, 9, "attr config2");
	T_EQ(a.sample_period, 12345, "attr sample_period");
	T_EQ(a.sample_type, 0, "sampling flags left to the caller");
	T_EQ(a.disabled, 0, "the rest zeroed");
}

int main(void)
{
	char cmd[4200];

	test_dcpi_aliases();
	test_generic();
	test_cache();
	test_raw();
	test_sets_and_periods();
	test_default_periods();
	test_man_page_periods();
	test_errors();
	test_fixtures();
	test_real_tracepoint();
	test_real_pmu();
	test_defaults_and_probe();
	test_attr();
	if (tmpdir[strlen(tmpdir) - 1] != 'X') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return t_done();
}
