/* Messages and small option helpers for the commands: see cli.h. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>

#include "cli.h"
#include "dcpi/record.h"
#include "dcpi/utf8.h"
#include "dcpi/error.h"
#include "dcpi/version.h"

const char *cli_prog = "dcpi";

__attribute__((format(printf, 2, 0)))
static void vmsg(const char *kind, const char *fmt, va_list ap, const char *tail)
{
	fprintf(stderr, "%s: %s", cli_prog, kind);
	vfprintf(stderr, fmt, ap);
	if (tail && *tail)
		fprintf(stderr, ": %s", tail);
	fputc('\n', stderr);
}

void cli_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap, NULL);
	va_end(ap);
	exit(1);
}

void cli_die_lib(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap, dcpi_errmsg());
	va_end(ap);
	exit(1);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap, NULL);
	va_end(ap);
	fprintf(stderr, "Try '%s --help'.\n", cli_prog);
	exit(EXIT_USAGE);
}

int cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap, NULL);
	va_end(ap);
	return -1;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap, NULL);
	va_end(ap);
}

#define SAFE_MAX (4 * 4096 + 1) /* a profile's longest string, every byte escaped */

size_t cli_plain_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = dcpi_utf8_len(p);

	if (k == 1 && ((*p < 0x20 && *p != '\t') || *p == 0x7f || *p == '\\'))
		return 0;
	if (k == 2 && p[0] == 0xc2 && p[1] < 0xa0) /* U+0080..U+009F: C1 controls */
		return 0;
	return k;
}

void cli_escape(char *out, size_t cap, const char *s)
{
	size_t n = 0, k;

	for (const char *p = s ? s : ""; *p; p += k) {
		k = cli_plain_len(p);
		if (k) {
			if (n + k + 1 > cap)
				break;
			memcpy(out + n, p, k);
			n += k;
		} else {
			if (n + 5 > cap)
				break;
			n += (size_t)snprintf(out + n, 5, "\\x%02x", (unsigned char)*p);
			k = 1;
		}
	}
	out[n] = 0;
}

void cli_syslog(int err, const char *fmt, ...)
{
	static int opened;
	va_list ap;

	if (!opened) {
		openlog(cli_prog, LOG_PID | LOG_NDELAY, LOG_DAEMON);
		opened = 1;
	}
	va_start(ap, fmt);
	vsyslog(err ? LOG_ERR : LOG_INFO, fmt, ap);
	va_end(ap);
}

const char *cli_safe(const char *s)
{
	static char bufs[CLI_SAFE_SLOTS][SAFE_MAX];
	static unsigned k;
	char *out = bufs[k++ % CLI_SAFE_SLOTS];

	cli_escape(out, SAFE_MAX, s);
	return out;
}

const char *cli_db(const char *db_opt)
{
	const char *env = getenv("DCPIDB");

	if (db_opt && *db_opt)
		return db_opt;
	if (env && *env)
		return env;
	cli_usage_error("no database: give -db DIR or set DCPIDB");
}

const char *cli_db_read(const char *db_opt)
{
	const char *env = getenv("DCPIDB");
	struct stat sb;

	if ((db_opt && *db_opt) || (env && *env))
		return cli_db(db_opt);
	if (stat(CLI_LOCAL_DB, &sb) == 0 && S_ISDIR(sb.st_mode))
		return CLI_LOCAL_DB;
	cli_usage_error("no database: give -db DIR or set DCPIDB (or run where dcpi record "
			"made ./dcpidb)");
}

unsigned cli_parse_stack_bytes(const char *opt, const char *arg)
{
	unsigned long long v = cli_parse_count(opt, arg);

	if (v < 8 || v > DCPI_STACK_MAX_COPY || v % 8)
		cli_usage_error("-%s wants a multiple of 8 from 8 to %d bytes, not '%s'", opt,
				DCPI_STACK_MAX_COPY, arg);
	return (unsigned)v;
}

unsigned long long cli_parse_count(const char *opt, const char *arg)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	if (!arg || !*arg || *arg == '-')
		cli_usage_error("-%s wants a non-negative number, not '%s'", opt, arg ? arg : "");
	v = strtoull(arg, &end, 10);
	if (end == arg) /* no digits ("K" alone is not 0) */
		cli_usage_error("-%s wants a non-negative number, not '%s'", opt, arg);
	/* K and M as in event periods (and DCPI): 1024 and 1024*1024; G for sizes */
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024 * 1024 * 1024, end++;
	if (errno || end == arg || *end || (mul > 1 && v > ~0ULL / mul))
		cli_usage_error("-%s wants a non-negative number, not '%s'", opt, arg);
	return v * mul;
}

int cli_parse_rate(const char *arg)
{
	if (!strcmp(arg, "second"))
		return CLI_RATE_SECOND;
	if (!strcmp(arg, "cpu"))
		return CLI_RATE_CPU;
	cli_usage_error("-rate takes 'second' or 'cpu', not '%s'", arg);
}

const char *cli_label_key(const char *arg)
{
	if (strcmp(arg, "comm") && strcmp(arg, "uid") && strcmp(arg, "cgroup"))
		cli_usage_error("-by wants comm, uid or cgroup, not '%s'", arg);
	return arg;
}

/* ---- options ---------------------------------------------------------------- */

static const struct option *exact_long(const struct option *lo, const char *name, size_t n)
{
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && !strncmp(lo->name, name, n))
			return lo;
	return NULL;
}

/* "-i", "-n20", "-n 20": single-dash letters getopt knows as short
 * options; *takes_arg when the last one's value is the next argument. */
static int short_ok(const char *shortopts, const char *name, int *takes_arg)
{
	const char *s = strchr(shortopts, name[0]);

	if (!name[0] || name[0] == ':' || name[0] == '+' || !s)
		return 0;
	if (s[1] == ':') { /* takes a value: the rest of the word, or the next one */
		*takes_arg = !name[1];
		return 1;
	}
	*takes_arg = 0;
	return !name[1] || short_ok(shortopts, name + 1, takes_arg);
}

static _Noreturn void unknown_option(const char *arg, const char *name, size_t n,
				     const struct option *lo)
{
	char hint[256] = "";
	size_t k = 0;

	for (; lo->name && k < sizeof(hint) - 64; lo++)
		if (n && !strncmp(lo->name, name, n))
			k += (size_t)snprintf(hint + k, sizeof(hint) - k, "%s-%s", k ? ", " : "",
					      lo->name);
	if (k)
		cli_usage_error("unknown option '%s' (options are not abbreviated: %s?)",
				cli_safe(arg), hint);
	cli_usage_error("unknown option '%s'", cli_safe(arg));
}

static void check_options(int argc, char **argv, const char *shortopts,
			  const struct option *lo)
{
	int plus = shortopts[0] == '+';

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *name;
		const struct option *o;
		int takes_arg = 0;
		size_t n;

		if (!strcmp(a, "--"))
			return;
		if (!strcmp(a, "-version") || !strcmp(a, "--version")) {
			printf("%s (dcpi) %s\n", cli_prog, dcpi_version());
			exit(0);
		}
		if (a[0] != '-' || !a[1]) {
			if (plus)
				return;
			continue;
		}
		name = a + 1 + (a[1] == '-');
		n = strcspn(name, "=");
		if ((o = exact_long(lo, name, n)))
			takes_arg = o->has_arg == required_argument && !name[n];
		else if (a[1] == '-' || !short_ok(shortopts, name, &takes_arg))
			unknown_option(a, name, n, lo);
		if (takes_arg && ++i >= argc)
			cli_usage_error("option '%s' needs a value", cli_safe(a));
	}
}

unsigned cli_parse_duration(const char *opt, const char *arg)
{
	static const char units[] = "smhd";
	static const unsigned secs[] = { 1, 60, 3600, 86400 };
	char *end;
	unsigned long long n = strtoull(arg, &end, 10);
	const char *u = *end ? strchr(units, *end) : units;

	if (end == arg || arg[0] == '-' || !u || !*u || (*end && end[1]) ||
	    n > UINT32_MAX / secs[u - units])
		cli_usage_error("-%s wants a duration (N s, m, h or d), not '%s'", opt,
				cli_safe(arg));
	return (unsigned)n * secs[u - units];
}

int cli_verbose;

/* lo with -v / -verbose added (every command takes them). */
#define CLI_OPT_VERBOSE 0x7ffe
#define CLI_MAX_OPTIONS 128
static const struct option *with_verbose(const struct option *lo)
{
	static struct option all[CLI_MAX_OPTIONS + 3];
	const struct option *own = NULL;
	size_t n = 0;

	/* made again each time: a process may parse two commands' options
	 * (dcpi report runs the tools in children of its own) */

	for (; lo[n].name && n < CLI_MAX_OPTIONS; n++) {
		all[n] = lo[n];
		if (!strcmp(lo[n].name, "verbose"))
			own = &lo[n]; /* a command's own -verbose (dcpid's): -v is it */
	}
	all[n++] = (struct option){ "v", no_argument, own ? own->flag : NULL,
				    own ? own->val : CLI_OPT_VERBOSE };
	if (!own)
		all[n++] = (struct option){ "verbose", no_argument, NULL, CLI_OPT_VERBOSE };
	all[n] = (struct option){ NULL, 0, NULL, 0 };
	return all;
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *lo)
{
	static char **checked;
	const struct option *all = with_verbose(lo);
	int c;

	if (checked != argv) {
		checked = argv;
		opterr = 0; /* every message is ours, and said once */
		check_options(argc, argv, shortopts, all);
	}
	while ((c = getopt_long_only(argc, argv, shortopts, all, NULL)) == CLI_OPT_VERBOSE)
		cli_verbose = 1;
	return c;
}

/* ---- the option spine of the report commands ------------------------------- */

enum { C_DB = 1000, C_EPOCH, C_HOST, C_LABEL, C_JSON, C_CSV };

static const struct {
	unsigned flag;
	struct option o;
	const char *help;
} common_opts[] = {
	{ CLI_DB, { "db", required_argument, NULL, C_DB },
	  "  -db DIR            the database (default $DCPIDB, else ./dcpidb if it exists)\n" },
	{ CLI_EPOCH, { "epoch", required_argument, NULL, C_EPOCH },
	  "  -epoch NAME        an epoch, 'latest' (default) or 'all' (summed)\n"
	  "                     or a time: 2026-11-25T03, 03:00..04:00, last-24h\n" },
	{ CLI_HOST, { "host", required_argument, NULL, C_HOST },
	  "  -host NAME         a host of a shared database, or 'all' (default: this one)\n" },
	{ CLI_LABEL, { "label", required_argument, NULL, C_LABEL },
	  "  -label K=V[,K=V]  only the profiles labelled so (dcpid -label; see dcpilabel)\n" },
	{ CLI_JSON, { "json", no_argument, NULL, C_JSON }, NULL },
	{ CLI_CSV, { "csv", no_argument, NULL, C_CSV }, "  -csv               CSV output\n" },
};
#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

void cli_help(const struct cli_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: %s %s\n%s\n", cmd->name, cmd->synopsis, cmd->about);
	/* the selection, the command's own options, the output formats */
	for (size_t i = 0; i < NCOMMON; i++) {
		unsigned flag = common_opts[i].flag;

		if (flag == CLI_JSON && cmd->help)
			fputs(cmd->help, f);
		if (!(cmd->common & flag))
			continue;
		if (flag == CLI_JSON) {
			/* "dcpi bins" is documented in dcpi-bins(1) */
			const char *sp = strchr(cmd->name, ' ');

			fprintf(f, "  -json              JSON output (schema in %.*s%s%s(1))\n",
				sp ? (int)(sp - cmd->name) : (int)strlen(cmd->name), cmd->name,
				sp ? "-" : "", sp ? sp + 1 : "");
		}
		else if (flag == CLI_HOST && cmd->host_help)
			fputs(cmd->host_help, f);
		else
			fputs(common_opts[i].help, f);
	}
	if (cmd->after)
		fputs(cmd->after, f);
	fputs("  -v, -verbose       every warning on a line of its own\n"
	      "  -h, -help          this help\n", f);
	if (cmd->footer)
		fprintf(f, "\n%s", cmd->footer);
}

void cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_common *co,
	       void *ctx)
{
	static struct option lo[CLI_MAX_OPTIONS];
	char shortopts[64];
	size_t n = 0;
	int c;

	for (size_t i = 0; i < NCOMMON; i++)
		if (cmd->common & common_opts[i].flag)
			lo[n++] = common_opts[i].o;
	for (const struct option *o = cmd->opts; o && o->name && n < CLI_MAX_OPTIONS - 2; o++)
		lo[n++] = *o;
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	snprintf(shortopts, sizeof(shortopts), "%sh", cmd->shortopts ? cmd->shortopts : "");
	while ((c = cli_getopt(argc, argv, shortopts, lo)) != -1) {
		switch (c) {
		case C_DB: co->db = optarg; break;
		case C_EPOCH: co->epoch = optarg; break;
		case C_HOST: co->host = optarg; break;
		case C_LABEL: co->label = optarg; break;
		case C_JSON: co->json = 1; break;
		case C_CSV: co->csv = 1; break;
		case 'h': cli_help(cmd, stdout); exit(0);
		case '?': case ':': cli_usage_error("bad option");
		default:
			if (!cmd->opt)
				cli_usage_error("bad option");
			cmd->opt(ctx, c, optarg);
		}
	}
	if (co->json && co->csv)
		cli_usage_error("-json and -csv: one output format at a time");
	if (cmd->common & CLI_IMAGES)
		for (; optind < argc; optind++) {
			if (co->nimages == CLI_MAX_IMAGES)
				cli_usage_error("at most %d images", CLI_MAX_IMAGES);
			co->images[co->nimages++] = argv[optind];
		}
	if (cmd->common & CLI_DB)
		co->db = cli_db_read(co->db);
}
