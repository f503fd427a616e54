/* The epoch statistics writer refuses what the parser would read back
 * differently, instead of writing a file that says something else; the
 * optional clock rate round-trips, and files without it still read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/stats.h"
#include "tap.h"

static void base(struct dcpi_epoch_stats *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->epoch, sizeof(st->epoch), "20261122T101500Z");
	snprintf(st->platform, sizeof(st->platform), "vm");
	st->start = 1795342500;
	st->nevents = 1;
	snprintf(st->ev[0].name, sizeof(st->ev[0].name), "cpu-clock");
	st->ev[0].period = 500000;
}

int main(void)
{
	struct dcpi_epoch_stats st, back;
	char dir[] = "/tmp/dcpi-test-stats.XXXXXX", path[64];

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/epoch.stats", dir);
	base(&st);
	T_EQ(dcpi_stats_write(path, &st, 0600), 0, "well-formed statistics written");
	T_EQ(dcpi_stats_read(path, &back), 0, "and read back");
	T_STREQ(back.ev[0].name, "cpu-clock", "event name kept");
	snprintf(st.ev[0].name, sizeof(st.ev[0].name), "two words");
	T_EQ(dcpi_stats_write(path, &st, 0600), -EINVAL, "event name with a space refused");
	T_OK(strstr(dcpi_errmsg(), "two words") != NULL, "message names it: %s", dcpi_errmsg());
	st.ev[0].name[0] = 0;
	T_EQ(dcpi_stats_write(path, &st, 0600), -EINVAL, "empty event name refused");
	base(&st);
	snprintf(st.platform, sizeof(st.platform), "a\nsamples 5");
	T_EQ(dcpi_stats_write(path, &st, 0600), -EINVAL, "line break in platform refused");
	base(&st);
	st.start = -1;
	T_EQ(dcpi_stats_write(path, &st, 0600), -EINVAL, "negative start refused");
	base(&st);
	st.nevents = DCPI_MAX_EVENTS + 1;
	T_EQ(dcpi_stats_write(path, &st, 0600), -EINVAL, "too many events refused");
	T_EQ(dcpi_stats_read(path, &back), 0, "the refused writes left the old file");
	T_STREQ(back.platform, "vm", "old file intact");
	/* the clock rate: optional, so files of older writers still read */
	{
		static const char old_file[] = "# dcpi epoch statistics\nwriter dcpi 0.6.0\n"
			"epoch 20261122T101500Z\nplatform vm\nstart 1795342500\nsamples 7\n"
			"event cpu-clock period 500000 samples 7 enabled 1 running 1\n";

		T_EQ(dcpi_stats_parse(old_file, sizeof(old_file) - 1, &back), 0,
		     "a file without clock_khz (older writer) reads");
		T_EQ(back.clock_khz, 0, "and has no clock rate");
		T_EQ(back.samples, 7, "but its counts");
		base(&st);
		T_EQ(dcpi_stats_write(path, &st, 0600), 0, "no clock written");
		T_EQ(dcpi_stats_read(path, &back), 0, "read back");
		T_EQ(back.clock_khz, 0, "still none");
		st.clock_khz = 3729312;
		T_EQ(dcpi_stats_write(path, &st, 0600), 0, "a clock rate written");
		T_EQ(dcpi_stats_read(path, &back), 0, "read back");
		T_EQ(back.clock_khz, 3729312, "clock_khz round-trips");
		T_EQ(dcpi_stats_parse("clock_khz -5\n", 13, &back), -EBADMSG,
		     "a negative clock is malformed");
	}
	unlink(path);
	rmdir(dir);
	return t_done();
}
