/* dcpi bins: this machine's load-latency bins, measured (issue 26; the
 * tool DCPI's value profiler wanted and did not ship): a pointer chase
 * over growing working sets, its latency curve cut into levels (L1, L2,
 * ..., memory), written as a bins file (dcpi/bins.h, dcpi-bins(1)). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "dcpi/bins.h"
#include "dcpi/buf.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/json.h"
#include "dcpi/membench.h"

enum { O_OUT = 256, O_MAX };

struct opts {
	struct cli_common co;        /* -json */
	const char *out;
	unsigned long long max;      /* bytes */
};

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	if (c == 'o') {
		o->out = arg;
	} else {
		o->max = cli_parse_count("max-mib", arg);
		if (o->max == 0 || o->max > 65536)
			cli_usage_error("-max-mib: 1 to 65536 (MiB) wanted, not '%s'", cli_safe(arg));
		o->max <<= 20;
	}
}

static const struct option own_opts[] = {
	{ "o", required_argument, NULL, 'o' },
	{ "max-mib", required_argument, NULL, O_MAX },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpi bins", .synopsis = "[options]",
	.about = "Measure this machine's load latencies (a pointer chase over working sets from\n"
		 "4 KiB up) and write them as latency bins: one per level of the memory\n"
		 "hierarchy the curve shows (L1, L2, ..., memory), MIN MAX REP NAME in\n"
		 "time-stamp counter cycles, as DCPI's value profiler's bins file.\n",
	.common = CLI_JSON,
	.help = "  -o FILE            write the bins file there (default: standard output)\n"
		"  -max-mib N         the largest working set, MiB (default 512: past the caches)\n",
	.shortopts = "o:", .opts = own_opts, .opt = own_option,
};

static void size_str(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30) && !(b & ((1ull << 30) - 1)))
		snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
	else if (b >= (1ull << 20) && !(b & ((1ull << 20) - 1)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
}

/* The measurement as comments, then the bins. */
static int text(const struct dcpi_membench *m, const struct dcpi_bins *b, struct dcpi_buf *out)
{
	char s1[32], s2[32];
	int err = dcpi_buf_printf(out, "# measured by dcpi bins: a dependent pointer chase, %" PRIu64
				  " loads a working set\n#  working set  cycles/load\n", m->loads);

	for (size_t i = 0; i < m->npoints && !err; i++) {
		size_str(s1, sizeof(s1), m->pt[i].bytes);
		err = dcpi_buf_printf(out, "# %12s %12.1f\n", s1, m->pt[i].cycles);
	}
	for (size_t k = 0; k < m->nlevels && !err; k++) {
		size_str(s1, sizeof(s1), m->lv[k].lo);
		size_str(s2, sizeof(s2), m->lv[k].hi);
		err = dcpi_buf_printf(out, "# level %-6s %8.1f cycles (working sets %s to %s)\n",
				      m->lv[k].name, m->lv[k].cycles, s1, s2);
	}
	return err ? err : dcpi_bins_format(b, out);
}

static void json(const struct dcpi_membench *m, const struct dcpi_bins *b)
{
	struct dcpi_json *j = dcpi_json_new(stdout);

	dcpi_json_obj_begin(j);
	dcpi_json_key_u64(j, "loads", m->loads);
	dcpi_json_key(j, "points");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < m->npoints; i++) {
		dcpi_json_obj_begin(j);
		dcpi_json_key_u64(j, "bytes", m->pt[i].bytes);
		dcpi_json_key(j, "cycles");
		dcpi_json_fixed(j, m->pt[i].cycles, 2);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_key(j, "levels");
	dcpi_json_arr_begin(j);
	for (size_t k = 0; k < m->nlevels; k++) {
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "name", m->lv[k].name);
		dcpi_json_key(j, "cycles");
		dcpi_json_fixed(j, m->lv[k].cycles, 2);
		dcpi_json_key_u64(j, "from_bytes", m->lv[k].lo);
		dcpi_json_key_u64(j, "to_bytes", m->lv[k].hi);
		dcpi_json_obj_end(j);
	}
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	report_json_bins(j, "bins", b);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

int bins_measure(const char *path, unsigned mode)
{
	static struct dcpi_membench m;
	struct dcpi_buf out = DCPI_BUF_INIT;
	struct dcpi_bins b;
	int err = dcpi_membench_run(&(struct dcpi_membench_opts){ 0, 0 }, &m);

	if (!err && !(err = dcpi_membench_bins(&m, &b)) && !(err = text(&m, &b, &out)))
		err = dcpi_file_write_atomic(path, out.data, out.len, mode);
	dcpi_buf_release(&out);
	return err;
}

int cmd_bins(int argc, char **argv)
{
	struct opts o = { .max = 0 };
	struct dcpi_membench_opts mo = { 0, 0 };
	static struct dcpi_membench m;
	struct dcpi_bins b;
	struct dcpi_buf out = DCPI_BUF_INIT;

	cli_parse(&cli, argc, argv, &o.co, &o);
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", cli_safe(argv[optind]));
	mo.max_bytes = o.max;
	if (dcpi_membench_run(&mo, &m) || dcpi_membench_bins(&m, &b))
		cli_die("%s", dcpi_errmsg());
	if (text(&m, &b, &out))
		cli_die("%s", dcpi_errmsg());
	if (o.out && dcpi_file_write_atomic(o.out, out.data, out.len, 0644))
		cli_die("%s: %s", cli_safe(o.out), dcpi_errmsg());
	if (o.co.json)
		json(&m, &b);
	else if (!o.out)
		fwrite(out.data, 1, out.len, stdout);
	dcpi_buf_release(&out);
	if (fflush(stdout) || ferror(stdout))
		cli_die("writing the report failed");
	if (o.out && !o.co.json)
		fprintf(stderr, "%s: %zu bins written to %s\n", cli_prog, b.n, cli_safe(o.out));
	return 0;
}
