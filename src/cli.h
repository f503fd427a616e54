/* What the commands share: messages, exit codes, the database option.
 * Commands own every message and exit code; libdcpi returns errors.
 * Exit codes: 0 success, 1 error, 2 usage error. */
#ifndef DCPI_CLI_H
#define DCPI_CLI_H

#include <stddef.h>
#include <stdio.h>

#define EXIT_USAGE 2

extern const char *cli_prog; /* the name the user typed: "dcpicat", "dcpi cat" */

/* "dcpicat: error: <msg>" on stderr, exit 1. */
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same with libdcpi's last message appended: "dcpicat: error: <msg>: <errmsg>". */
_Noreturn void cli_die_lib(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "dcpicat: <msg>" + "Try 'dcpicat --help'." on stderr, exit 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "dcpicat: error: <msg>" on stderr, and -1: for code that must not exit. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line to syslog (the journal under systemd), as "dcpid": for what a
 * daemon's own log could not take.  err: LOG_ERR, else LOG_INFO. */
void cli_syslog(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* s for a terminal or a text report: control bytes but tab, DEL, '\\',
 * the C1 controls' UTF-8 (U+0080..U+009F: C2 80..C2 9F) and every byte
 * that begins no well-formed UTF-8 sequence (a lone 0x9b is CSI on an
 * 8-bit terminal) as \xNN, byte by byte, so that a hostile name (a path,
 * a symbol, an event in a profile) cannot forge lines or drive the
 * terminal.  NULL reads as "".  Returns one of
 * CLI_SAFE_SLOTS rotating static buffers: valid until that many more
 * calls, enough for one printf's arguments. */
#define CLI_SAFE_SLOTS 8
const char *cli_safe(const char *s);
/* The same into out (cap bytes, cap > 0; cut at a whole escape). */
void cli_escape(char *out, size_t cap, const char *s);
/* How many bytes at s cli_escape passes as they are (a whole UTF-8
 * character, 1 for the NUL), or 0 when it writes the byte at s \xNN. */
size_t cli_plain_len(const char *s);
/* The database directory: the -db argument if given, else $DCPIDB, else
 * a usage error naming both. */
const char *cli_db(const char *db_opt);

/* Parse a non-negative integer option with optional K (1024) or M
 * (1024*1024) suffix, as event periods take them; usage error naming the
 * option on anything else. */
unsigned long long cli_parse_count(const char *opt, const char *arg);
/* -stack-bytes N: a count (K suffix too), a multiple of 8 from 8 to
 * DCPI_STACK_MAX_COPY (what perf copies at most); usage error else. */
#define CLI_STACK_BYTES 16384 /* the default: docs/performance.md, stack depth */
unsigned cli_parse_stack_bytes(const char *opt, const char *arg);
/* A duration: N with s, m, h or d (a bare N is seconds), as seconds; a
 * usage error naming the option on anything else. */
unsigned cli_parse_duration(const char *opt, const char *arg);
/* -rate second|cpu (dcpidiff, dcpistats): what amounts are per; a usage
 * error on anything else. */
enum { CLI_RATE_NONE, CLI_RATE_SECOND, CLI_RATE_CPU };
int cli_parse_rate(const char *arg);
/* -by KEY: a label key (comm, uid, cgroup), else a usage error. */
const char *cli_label_key(const char *arg);
/* For the tools that only read: the same, but with neither given, the
 * ./dcpidb that dcpi record writes by default, when it exists. */
#define CLI_LOCAL_DB "./dcpidb"
const char *cli_db_read(const char *db_opt);

/* getopt_long_only without its guesses: every option must be spelled out
 * (getopt would take -i for -imagecache, -m for -merge: DCPI's one-letter
 * options meant other things), an unknown or incomplete option is one
 * usage error naming it (and the long options it could have meant), never
 * two messages.  Options are checked up to "--" (and, with a '+'
 * optstring, up to the first operand); then getopt_long_only runs as
 * usual.  Needs <getopt.h>. */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *lo);
/* -v (-verbose), which cli_getopt takes for every command: say everything
 * (every warning, not one line per kind). */
extern int cli_verbose;

/* ---- the option spine of the report commands ------------------------------- */

/* The options report commands share, parsed once (cli_parse), with one
 * help line each wherever they appear. */
enum {
	CLI_DB = 1u << 0,       /* -db DIR (resolved by cli_db_read) */
	CLI_EPOCH = 1u << 1,    /* -epoch NAME */
	CLI_HOST = 1u << 2,     /* -host NAME */
	CLI_LABEL = 1u << 3,    /* -label K=V[,K=V]: the profiles labelled so */
	CLI_JSON = 1u << 4,     /* -json */
	CLI_CSV = 1u << 5,      /* -csv */
	CLI_IMAGES = 1u << 6,   /* the operands are IMAGE... */
	CLI_SELECT = CLI_DB | CLI_EPOCH | CLI_HOST | CLI_LABEL,
};
#define CLI_MAX_IMAGES 256

struct cli_common {
	const char *db, *epoch, *host, *label;
	int json, csv;
	const char *images[CLI_MAX_IMAGES]; /* CLI_IMAGES */
	size_t nimages;
};

/* A report command's options.  Its own have codes from 256 to 999 (or
 * short letters in shortopts) and reach opt; help is their help lines,
 * printed after the common selection options and before -json/-csv. */
struct cli_cmd {
	const char *name;       /* "dcpiwhatcg": the usage line and -json's schema */
	const char *synopsis;   /* "[options] [IMAGE...]" */
	const char *about;      /* what it does, lines ending in '\n' */
	unsigned common;        /* CLI_* */
	const char *help;       /* its own options' lines, or NULL */
	const char *after;      /* lines after -json/-csv (other outputs), or NULL */
	const char *footer;     /* after the options, or NULL */
	const char *host_help;  /* -host's line when not the usual one, or NULL */
	const char *shortopts;  /* its own short options ("n:"), or NULL */
	const struct option *opts; /* its own, ending in { NULL }, or NULL */
	void (*opt)(void *ctx, int c, const char *arg);
};

/* Parse argv: the common options into co, the command's own through
 * cmd->opt(ctx, ...); -h prints cli_help and exits 0; -json with -csv is a
 * usage error; with CLI_IMAGES the operands go to co->images (else they
 * are left at optind); -db is resolved for reading (cli_db_read). */
void cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_common *co,
	       void *ctx);
/* The --help text: usage line, about, the options in one order. */
void cli_help(const struct cli_cmd *cmd, FILE *f);

/* The commands of the multi-call binary. */
int cmd_dcpid(int argc, char **argv);
int cmd_dcpictl(int argc, char **argv);
int cmd_dcpicat(int argc, char **argv);
int cmd_dcpiprof(int argc, char **argv);
int cmd_dcpilist(int argc, char **argv);
int cmd_dcpicalc(int argc, char **argv);
int cmd_dcpix(int argc, char **argv);
int cmd_dcpitopcounts(int argc, char **argv);
int cmd_dcpitopstalls(int argc, char **argv);
int cmd_dcpiwhatcg(int argc, char **argv);
int cmd_dcpicoverage(int argc, char **argv);
int cmd_dcpidiff(int argc, char **argv);
int cmd_dcpistats(int argc, char **argv);
int cmd_dcpilabel(int argc, char **argv);
int cmd_dcpitar(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bins(int argc, char **argv);

#endif
