/* dcpitar: an epoch packed with the code it needs, to analyse it on
 * another machine; and unpacked there into a database. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/error.h"
#include "dcpi/tar.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpitar [options] OUT.tar\n"
"       dcpitar -x IN.tar [DIR]\n"
"Pack an epoch with everything analysis needs elsewhere: its profiles,\n"
"statistics and kallsyms snapshots, and the images and debug files they name,\n"
"found by build-id.  -x unpacks into a new database DIR (default: the archive's\n"
"name without .tar, in the current directory).\n\n"
"  -db DIR            the database (default $DCPIDB, else ./dcpidb if it exists)\n"
"  -epoch NAME        the epoch to pack (default: the latest)\n"
"  -x                 unpack instead of packing\n"
"  -max-size N        -x: refuse an archive that unpacks to more than N bytes\n"
"                     (K, M, G: KiB, MiB, GiB; default 16G)\n"
"  -v, -verbose       every warning on a line of its own\n"
"  -h, -help          this help\n");
}

int cmd_dcpitar(int argc, char **argv)
{
	enum { O_DB = 256, O_EPOCH, O_MAX };
	static const struct option lo[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "epoch", required_argument, NULL, O_EPOCH },
		{ "x", no_argument, NULL, 'x' },
		{ "max-size", required_argument, NULL, O_MAX },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL, *epoch = NULL;
	struct dcpi_tar_stats st;
	unsigned long long max = 0;
	char dir[4096];
	int c, extract = 0;

	while ((c = cli_getopt(argc, argv, "xh", lo)) != -1) {
		switch (c) {
		case O_DB: db = optarg; break;
		case O_EPOCH: epoch = optarg; break;
		case 'x': extract = 1; break;
		case O_MAX:
			if (!(max = cli_parse_count("max-size", optarg)))
				cli_usage_error("-max-size wants a size above 0");
			break;
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	if (optind >= argc)
		cli_usage_error("no archive named");
	if (!extract) {
		if (max)
			cli_usage_error("-max-size goes with -x");
		if (optind + 1 < argc)
			cli_usage_error("unexpected argument '%s'", argv[optind + 1]);
		db = cli_db_read(db);
		if (dcpi_tar_pack(db, epoch, argv[optind], &st))
			cli_die("%s", dcpi_errmsg());
		fprintf(stderr, "%s: %s: %zu files, %zu images and %zu debug files by build-id, "
			"%" PRIu64 " bytes\n", cli_prog, argv[optind], st.files, st.images, st.debug,
			st.bytes);
		if (st.missing)
			fprintf(stderr, "%s: warning: no code found for %zu image%s (first: %s): "
				"their samples will be shown without procedures\n", cli_prog,
				st.missing, st.missing == 1 ? "" : "s", cli_safe(st.first_missing));
		return 0;
	}
	if (db || epoch)
		cli_usage_error("-x takes no -db or -epoch: give the new directory");
	if (optind + 2 < argc)
		cli_usage_error("unexpected argument '%s'", argv[optind + 2]);
	if (optind + 1 < argc) {
		snprintf(dir, sizeof(dir), "%s", argv[optind + 1]);
	} else {
		const char *base = strrchr(argv[optind], '/');
		size_t n;

		base = base ? base + 1 : argv[optind];
		n = strlen(base);
		if (n > 4 && !strcmp(base + n - 4, ".tar"))
			n -= 4;
		snprintf(dir, sizeof(dir), "%.*s", (int)n, base);
		if (!strcmp(dir, base))
			cli_usage_error("%s does not end in .tar: name the directory to unpack into",
					argv[optind]);
	}
	if (dcpi_tar_unpack(argv[optind], dir, max, &st))
		cli_die("%s", dcpi_errmsg());
	fprintf(stderr, "%s: %s: %zu files, %" PRIu64 " bytes: a database (dcpiprof -db %s)\n",
		cli_prog, dir, st.files, st.bytes, cli_safe(dir));
	return 0;
}
