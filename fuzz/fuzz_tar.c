/* libFuzzer target for dcpitar's unpacking (dcpi_tar_unpack): the input is
 * an archive, unpacked into a fresh directory that is removed afterwards.
 * Whatever the input, nothing may be written outside that directory and
 * nothing but regular files and directories inside it. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];

static int check_rm(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F && type != FTW_DP)
		abort(); /* a link, or something unreadable: never created by us */
	if (type == FTW_F && !S_ISREG(sb->st_mode))
		abort();
	return remove(path);
}

static void cleanup(void)
{
	nftw(base, check_rm, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[128], out[128];
	struct dcpi_tar_stats st;
	FILE *f;

	if (!base[0]) {
		/* in memory where there is a tmpfs: each input makes and removes
		   files, which a disk's journal makes the slow part */
		snprintf(base, sizeof(base), "%s/fuzz_tar.XXXXXX",
			 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
		if (!mkdtemp(base))
			abort();
		atexit(cleanup);
	}
	snprintf(in, sizeof(in), "%s/in.tar", base);
	snprintf(out, sizeof(out), "%s/out", base);
	f = fopen(in, "w");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
	dcpi_tar_unpack(in, out, 64u << 20, &st);
	nftw(out, check_rm, 16, FTW_DEPTH | FTW_PHYS);
	/* only in.tar may be left in base: anything else escaped out/ */
	{
		char probe[160];

		snprintf(probe, sizeof(probe), "%s/escaped", base);
		if (access(probe, F_OK) == 0)
			abort();
	}
	return 0;
}
