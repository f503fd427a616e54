/* dcpicat: print profile files in human-readable form.  The format is
 * described in dcpiformat(5); this is its reference reader for people. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dcpi/error.h"
#include "dcpi/profile.h"
#include "dcpi/stacks.h"
#include "dcpi/vprof.h"

enum cat_sort { SORT_OFFSET, SORT_COUNT };

struct cat_opts {
	enum cat_sort sort;
	int keep_set;
	unsigned long long keep;
	int header_only;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] FILE...\n"
		"Print dcpi profile files: the header, then one row per offset; and stacks\n"
		"files (epoch.stacks): their images and labels, then one line per stack;\n"
		"and value profiles (epoch.vprof), as written.\n"
		"\n"
		"  -sort count|offset  order of the rows: by count (first event, highest first;\n"
		"                      ties by the next events, then by offset) or by offset\n"
		"                      (the default)\n"
		"  -keep N             print only the first N rows (after sorting)\n"
		"  -header             print the header only\n"
		"  -v, -verbose       every warning on a line of its own\n"
		"  -h, --help          show this help\n"
		"\n"
		"Options take one dash or two.  Exit status: 0 all files printed, 1 a file\n"
		"could not be read (the others are still printed), 2 usage error.\n"
		"See dcpicat(1) and dcpiformat(5).\n",
		cli_prog);
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { "file", "kernel", "module", "anon", "unknown" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "invalid";
}

static void print_mtime(int64_t mtime)
{
	time_t t = (time_t)mtime;
	struct tm tm;
	char when[64];

	printf("mtime: %" PRId64, mtime);
	if ((int64_t)t == mtime && gmtime_r(&t, &tm) &&
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		printf(" (%s)", when);
	putchar('\n');
}

static void print_header(const struct dcpi_profile *p)
{

	printf("path: %s\nbuild-id: ", cli_safe(p->path));
	for (uint32_t i = 0; i < p->build_id_len; i++)
		printf("%02x", p->build_id[i]);
	printf("%s\nsize: %" PRIu64 "\n", p->build_id_len ? "" : "none", p->size);
	print_mtime(p->mtime);
	printf("epoch: %s\n", cli_safe(p->epoch));
	printf("platform: %s\n", cli_safe(p->platform));
	printf("kind: %s\n", kind_name(p->kind));
	if (p->pid >= 0)
		printf("pid: %" PRId64 "\n", p->pid);
	if (p->label)
		printf("label: %s\n", cli_safe(p->label));
	printf("text start: %#" PRIx64 "\ntext size: %#" PRIx64 "\n", p->text_start, p->text_size);
	for (uint32_t e = 0; e < p->nevents; e++) {
		const struct dcpi_profile_event *ev = &p->events[e];

		printf("event %s: period %" PRIu64 ", samples %" PRIu64 ", monitored %u.%04u%%\n",
		       cli_safe(ev->name), ev->period, ev->total, ev->monitored_ppm / 10000,
		       ev->monitored_ppm % 10000);
	}
	printf("rows: %zu\n", p->nrows);
}

static int column_width(const struct dcpi_profile_event *ev)
{
	size_t n = ev->name ? strlen(ev->name) : 0;

	return n > 12 ? (int)(n > 64 ? 64 : n) : 12;
}

static void print_row(const struct dcpi_profile *p, size_t r)
{
	char off[24];

	snprintf(off, sizeof(off), "0x%" PRIx64, p->offsets[r]);
	printf("%-18s", off);
	for (uint32_t e = 0; e < p->nevents; e++)
		printf("  %*" PRIu64, column_width(&p->events[e]), p->counts[r * p->nevents + e]);
	putchar('\n');
}

/* qsort has no context argument; the profile being sorted is this one. */
static const struct dcpi_profile *sort_profile;

static int by_count(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct dcpi_profile *p = sort_profile;

	for (uint32_t e = 0; e < p->nevents; e++) {
		uint64_t cx = p->counts[x * p->nevents + e], cy = p->counts[y * p->nevents + e];

		if (cx != cy)
			return cx > cy ? -1 : 1;
	}
	return x < y ? -1 : x > y; /* rows are in offset order */
}

static void print_column_header(const struct dcpi_profile *p)
{

	printf("\n%-18s", "offset");
	for (uint32_t e = 0; e < p->nevents; e++)
		printf("  %*s", column_width(&p->events[e]), cli_safe(p->events[e].name));
	putchar('\n');
}

static int print_rows(const struct dcpi_profile *p, const struct cat_opts *o)
{
	size_t n = p->nrows, *order;

	if (o->keep_set && o->keep < n)
		n = (size_t)o->keep;
	order = malloc((p->nrows ? p->nrows : 1) * sizeof(*order));
	if (!order)
		return dcpi_error(ENOMEM, "out of memory sorting %zu rows", p->nrows);
	for (size_t r = 0; r < p->nrows; r++)
		order[r] = r;
	if (o->sort == SORT_COUNT) {
		sort_profile = p;
		qsort(order, p->nrows, sizeof(*order), by_count);
	}
	print_column_header(p);
	for (size_t i = 0; i < n; i++)
		print_row(p, order[i]);
	free(order);
	return 0;
}

/* A stacks file (dcpiformat(5), CALL STACKS), raw: its header, images and
 * labels by index, then one line per stack, in file order. */
static void print_stacks(const struct dcpi_stackset *s, const struct cat_opts *o)
{
	printf("stacks file\nepoch: %s\nplatform: %s\n", cli_safe(s->epoch), cli_safe(s->platform));
	for (unsigned e = 0; e < s->nevents; e++)
		printf("event %s: period %" PRIu64 "\n", cli_safe(s->events[e]), s->periods[e]);
	for (size_t i = 0; i < s->nlabels; i++)
		printf("label %zu: %s\n", i, i ? cli_safe(s->labels[i]) : "(none)");
	for (size_t i = 0; i < s->nimages; i++) {
		const struct dcpi_profile *p = &s->images[i];

		printf("image %zu: %s %s build-id ", i + 1, kind_name(p->kind), cli_safe(p->path));
		for (uint32_t k = 0; k < p->build_id_len; k++)
			printf("%02x", p->build_id[k]);
		printf("%s\n", p->build_id_len ? "" : "none");
	}
	printf("stacks: %zu\n", s->nstacks);
	if (o->header_only)
		return;
	for (size_t i = 0; i < s->nstacks && (!o->keep_set || i < o->keep); i++) {
		const struct dcpi_stack *st = &s->stacks[i];

		for (unsigned e = 0; e < s->nevents; e++)
			printf("%" PRIu64 " ", s->counts[i * s->nevents + e]);
		printf("label %u, ", st->label);
		if (st->pid >= 0)
			printf("pid %" PRId64 ", ", st->pid);
		printf("%s:", dcpi_stack_end_name(st->end));
		for (uint32_t k = 0; k < st->nframes; k++) {
			const struct dcpi_stack_frame *f = &s->frames[st->first + k];

			if (f->image == DCPI_FRAME_UNKNOWN)
				printf(" ?");
			else
				printf(" %u+%#" PRIx64, f->image + 1, f->off);
		}
		putchar('\n');
	}
}

/* Whether path is a regular file that starts with magic (a stacks file's
 * "DCPISTKS", a value profile's "dcpi-vprof ").  A FIFO or a device is not
 * opened for reading here (it could block): the profile reader refuses it
 * with its own message. */
static int starts_with(const char *path, const char *magic)
{
	char buf[16];
	size_t n = strlen(magic);
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), yes;

	if (fd < 0)
		return 0;
	yes = !fstat(fd, &st) && S_ISREG(st.st_mode) && read(fd, buf, n) == (ssize_t)n &&
	      !memcmp(buf, magic, n);
	close(fd);
	return yes;
}

/* A value profile (dcpiformat(5), VALUE PROFILES), raw: as written, without
 * its comments (DCPI's dcpivcat). */
static int print_vprof(const char *path)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	struct dcpi_vprof *v;
	int err = dcpi_vprof_read(path, &v);

	if (!err && !(err = dcpi_vprof_format(v, &b)))
		fwrite(b.data, 1, b.len, stdout);
	dcpi_buf_release(&b);
	dcpi_vprof_free(v);
	return err;
}

/* One file; 0 printed, -1 reported on stderr.  *printed counts the files
 * shown so far, for tail's "==> FILE <==" separators. */
static int cat_file(const char *path, const struct cat_opts *o, int nfiles, int *printed)
{
	struct dcpi_profile p;
	int err;

	if (starts_with(path, "dcpi-vprof ")) {
		if (nfiles > 1)
			printf("%s==> %s <==\n", *printed ? "\n" : "", path);
		if (!(err = print_vprof(path)))
			(*printed)++;
		dcpi_profile_init(&p);
	} else if (starts_with(path, "DCPISTKS")) {
		struct dcpi_stackset ss;

		if (!(err = dcpi_stackset_read(path, &ss))) {
			if (nfiles > 1)
				printf("%s==> %s <==\n", *printed ? "\n" : "", path);
			print_stacks(&ss, o);
			(*printed)++;
			dcpi_stackset_free(&ss);
		}
		dcpi_profile_init(&p);
	} else if (!(err = dcpi_profile_read(path, &p))) {
		if (nfiles > 1)
			printf("%s==> %s <==\n", *printed ? "\n" : "", path);
		print_header(&p);
		if (!o->header_only)
			err = print_rows(&p, o);
		(*printed)++;
	}
	dcpi_profile_free(&p);
	if (err) {
		fflush(stdout); /* keep stdout and stderr in order on a terminal */
		fprintf(stderr, "%s: error: %s\n", cli_prog, dcpi_errmsg());
		return -1;
	}
	return 0;
}

static void parse_sort(struct cat_opts *o, const char *arg)
{
	if (!strcmp(arg, "count"))
		o->sort = SORT_COUNT;
	else if (!strcmp(arg, "offset"))
		o->sort = SORT_OFFSET;
	else
		cli_usage_error("-sort wants count or offset, not '%s'", arg);
}

static void parse_options(int argc, char **argv, struct cat_opts *o)
{
	static const struct option longopts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "keep", required_argument, NULL, 'k' },
		{ "header", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0; /* our own messages, in our format */
	while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 's': parse_sort(o, optarg); break;
		case 'k': o->keep = cli_parse_count("keep", optarg); o->keep_set = 1; break;
		case 'H': o->header_only = 1; break;
		case 'h': usage(stdout); exit(0);
		default:
			if (optopt == 's' || optopt == 'k')
				cli_usage_error("option '%s' wants an argument", argv[optind - 1]);
			cli_usage_error("unknown or ambiguous option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		cli_usage_error("no profile file given");
}

int cmd_dcpicat(int argc, char **argv)
{
	struct cat_opts o = { SORT_OFFSET, 0, 0, 0 };
	int printed = 0, failed = 0;

	parse_options(argc, argv, &o);
	for (int i = optind; i < argc; i++)
		failed |= cat_file(argv[i], &o, argc - optind, &printed) < 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: error: writing the output failed\n", cli_prog);
		return 1;
	}
	return failed ? 1 : 0;
}
