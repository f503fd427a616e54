/* Latency bins files (dcpi/bins.h): a file read, written back the same,
 * looked up at each edge; its refusals one by one; bins made from measured
 * levels (dcpi/membench.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/bins.h"
#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/membench.h"
#include "tap.h"

static const char good[] = "# DCPI's example, with a comment\n"
			   "\n"
			   "0 5 3 L1   # to the end of the line\n"
			   "6 20 12 L2\n"
			   "\t40 200 120 L3\r\n"
			   "201 18446744073709551615 437 memory";

static void test_parse(void)
{
	struct dcpi_bins b, c;
	struct dcpi_buf out = DCPI_BUF_INIT;

	T_EQ(dcpi_bins_parse(good, strlen(good), &b), 0, "parsed: %s", dcpi_errmsg());
	T_EQ(b.n, (size_t)4, "four bins");
	T_OK(b.v[0].min == 0 && b.v[0].max == 5 && b.v[0].rep == 3 && !strcmp(b.v[0].name, "L1"),
	     "the first field by field");
	T_OK(b.v[2].min == 40 && b.v[2].max == 200 && b.v[2].rep == 120 && !strcmp(b.v[2].name, "L3"),
	     "a line with a tab before and CR after");
	T_OK(b.v[3].max == UINT64_MAX && !strcmp(b.v[3].name, "memory"), "the last to 2^64 - 1, "
	     "no newline at the end");
	T_EQ(dcpi_bins_find(&b, 0), 0, "0 cycles: L1");
	T_EQ(dcpi_bins_find(&b, 5), 0, "5: L1 (its MAX)");
	T_EQ(dcpi_bins_find(&b, 6), 1, "6: L2 (its MIN)");
	T_EQ(dcpi_bins_find(&b, 30), -1, "30: between L2 and L3, no bin");
	T_EQ(dcpi_bins_find(&b, 200), 2, "200: L3");
	T_EQ(dcpi_bins_find(&b, UINT64_MAX), 3, "2^64 - 1: memory");
	T_EQ(dcpi_bins_format(&b, &out), 0, "written");
	T_EQ(dcpi_bins_parse((const char *)out.data, out.len, &c), 0, "read back");
	{
		int same = c.n == b.n;

		for (size_t i = 0; same && i < b.n; i++)
			same = c.v[i].min == b.v[i].min && c.v[i].max == b.v[i].max &&
			       c.v[i].rep == b.v[i].rep && !strcmp(c.v[i].name, b.v[i].name);
		T_OK(same, "the same bins");
	}
	T_OK(out.len > 0 && out.data[0] == '#', "a header comment first");
	dcpi_buf_release(&out);
}

static void refused_n(const char *text, size_t len, const char *want)
{
	struct dcpi_bins b;
	int err = dcpi_bins_parse(text, len, &b);

	T_OK(err == -EBADMSG && strstr(dcpi_errmsg(), want) && b.n == 0, "refused (%s): %s", want,
	     err ? dcpi_errmsg() : "accepted");
}

static void refused(const char *text, const char *want)
{
	refused_n(text, strlen(text), want);
}

static void test_refusals(void)
{
	char longline[400], many[2000];
	size_t at = 0;

	refused("", "no bins");
	refused("# only a comment\n\n", "no bins");
	refused("0 5 3\n", "line 1: MIN MAX REP NAME wanted");
	refused("0 5 3 L1 extra\n", "MIN MAX REP NAME wanted");
	refused("0 5 x L1\n", "decimal cycles");
	refused("-1 5 3 L1\n", "decimal cycles");
	refused("0x0 5 3 L1\n", "decimal cycles");
	refused("0 18446744073709551616 3 L1\n", "decimal cycles");
	refused("6 5 5 L1\n", "MIN above MAX");
	refused("0 5 9 L1\n", "REP outside");
	refused("0 5 3 L<1>\n", "letters, digits");
	refused("0 5 3 a234567890123456789012345678901x\n", "1 to 31 characters");
	refused("0 5 3 L1\n5 9 7 L2\n", "line 2: a range not above the one before it");
	refused("6 9 7 L2\n0 5 3 L1\n", "not above");
	refused("0 5 3 L1\n6 9 7 L1\n", "a NAME given twice");
	refused_n("0 5 3 L1\n6 9 7 L\0002\n", 19, "line 2: a NUL byte");
	memset(longline, '7', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = 0;
	refused(longline, "longer than 255 bytes");
	for (int i = 0; i < 33; i++)
		at += (size_t)snprintf(many + at, sizeof(many) - at, "%d %d %d b%d\n", 2 * i, 2 * i,
				       2 * i, i);
	refused(many, "more than 32 bins");
	{
		struct dcpi_bins b;
		struct dcpi_buf out = DCPI_BUF_INIT;

		memset(&b, 0, sizeof(b));
		T_EQ(dcpi_bins_format(&b, &out), -EINVAL, "no bins: not written");
		b.n = 1;
		b.v[0] = (struct dcpi_bin){ 5, 4, 4, "x" };
		T_EQ(dcpi_bins_format(&b, &out), -EINVAL, "MIN above MAX: not written");
		T_EQ(out.len, (size_t)0, "nothing appended");
		dcpi_buf_release(&out);
		T_EQ(dcpi_bins_read("/nonexistent/bins", &b), -ENOENT, "a file that is not there");
		T_OK(dcpi_bins_read("/", &b) < 0 && b.n == 0, "a directory: %s", dcpi_errmsg());
	}
}

/* Levels as dcpi bins measures them, into bins: ranges meet halfway
 * (geometric) between the levels. */
static void test_levels(void)
{
	struct dcpi_membench m = { 0 };
	struct dcpi_bins b;

	m.nlevels = 3;
	m.lv[0] = (struct dcpi_mem_level){ "L1", 4096, 32768, 3.4 };
	m.lv[1] = (struct dcpi_mem_level){ "L2", 65536, 1 << 20, 12.3 };
	m.lv[2] = (struct dcpi_mem_level){ "memory", 64 << 20, 256 << 20, 436.6 };
	T_EQ(dcpi_membench_bins(&m, &b), 0, "bins made: %s", dcpi_errmsg());
	T_OK(b.n == 3 && b.v[0].min == 0 && b.v[0].max == 6 && b.v[0].rep == 3 &&
	     b.v[1].min == 7 && b.v[1].max == 73 && b.v[1].rep == 12 && b.v[2].min == 74 &&
	     b.v[2].rep == 437 && b.v[2].max == UINT64_MAX,
	     "L1 0-6 (3), L2 7-73 (12), memory 74- (437): %llu %llu %llu",
	     (unsigned long long)b.v[0].max, (unsigned long long)b.v[1].max,
	     (unsigned long long)b.v[2].rep);
	m.lv[1].cycles = 3.0;
	T_EQ(dcpi_membench_bins(&m, &b), -ERANGE, "a level not slower than the one below: refused");
	m.nlevels = 1;
	T_EQ(dcpi_membench_bins(&m, &b), -EINVAL, "one level: no bins");
}

int main(void)
{
	test_parse();
	test_refusals();
	test_levels();
	return t_done();
}
