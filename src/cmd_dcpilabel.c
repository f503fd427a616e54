/* dcpilabel: the labels of an epoch's labelled profiles (dcpid -label)
 * with their samples, as DCPI's dcpilabel listed them. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dcpi/error.h"
#include "dcpi/json.h"
#include "dcpi/labelsum.h"
#include "dcpi/profset.h"
#include "report.h"

struct opts {
	struct cli_common co;        /* -db -epoch -host -json */
	const char *by, *sort;
};

static void own_option(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	if (c == 256)
		o->by = cli_label_key(arg);
	else
		o->sort = arg;
}

static const struct option own_opts[] = {
	{ "by", required_argument, NULL, 256 },
	{ "sort", required_argument, NULL, 257 },
	{ NULL, 0, NULL, 0 },
};

static const struct cli_cmd cli = {
	.name = "dcpilabel", .synopsis = "[options]",
	.about = "The labels of the labelled profiles (dcpid -label) of an epoch, with their\n"
		 "samples: which commands, users or cgroups the time went to.\n",
	.common = CLI_DB | CLI_EPOCH | CLI_HOST | CLI_JSON,
	.help = "  -by KEY            one row per value of comm, uid or cgroup instead of per label\n"
		"  -sort EVENT        order by this event (default: the first)\n",
	.opts = own_opts, .opt = own_option,
};

static void parse_options(struct opts *o, int argc, char **argv)
{
	cli_parse(&cli, argc, argv, &o->co, o);
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", cli_safe(argv[optind]));
}

static const char *row_name(const struct dcpi_labelsum_row *w)
{
	return w->label ? w->label : "(unlabelled)";
}

static void print_text(const struct opts *o, const struct dcpi_profset *set,
		       const struct dcpi_labelsum *t, const struct report_warnings *w)
{
	const struct dcpi_epoch_stats *st = &set->stats;

	report_print_header(stdout, o->co.db, set, t->total, w);
	if (st->labels[0])
		printf("Labels: %s, %" PRIu64 " kept apart, %" PRIu64 " samples past the cap "
		       "counted as 'other'\n", st->labels, st->label_values, st->label_other);
	putchar('\n');
	for (unsigned e = 0; e < set->nevents; e++)
		printf("%12s %7s ", cli_safe(set->events[e]), "%");
	printf(" %s\n", o->by ? o->by : "label");
	for (size_t i = 0; i < t->n; i++) {
		for (unsigned e = 0; e < set->nevents; e++)
			printf("%12" PRIu64 " %6.2f%% ", t->rows[i].c[e],
			       report_pct(t->rows[i].c[e], t->total[e]));
		printf(" %s\n", cli_safe(row_name(&t->rows[i])));
	}
}

static void print_json(const struct opts *o, const struct dcpi_profset *set,
		       const struct dcpi_labelsum *t, const struct report_warnings *w)
{
	struct dcpi_json *j = report_json_begin(o->co.db);

	report_json_header(j, set, t->total, w);
	dcpi_json_key_str(j, "by", o->by ? o->by : "label");
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (size_t i = 0; i < t->n; i++) {
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key(j, o->by ? o->by : "label");
		dcpi_json_str(j, t->rows[i].label);
		dcpi_json_key(j, "profiles");
		dcpi_json_u64(j, t->rows[i].profiles);
		report_json_counts(j, set->nevents, t->rows[i].c, t->total);
		dcpi_json_obj_end(j);
	}
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	dcpi_json_free(j);
}

int cmd_dcpilabel(int argc, char **argv)
{
	struct opts o = { 0 };
	struct dcpi_profset set;
	struct dcpi_labelsum t;
	static struct report_warnings w; /* its strings live until exit */
	int col = 0, labelled = 0;

	parse_options(&o, argc, argv);
	if (dcpi_profset_load(o.co.db, o.co.epoch, o.co.host, &set))
		cli_die("%s", dcpi_errmsg());
	if (o.sort && (col = dcpi_profset_event(&set, o.sort)) < 0)
		cli_usage_error("-sort %s: no profile has that event", o.sort);
	for (size_t i = 0; i < set.n; i++)
		labelled |= set.v[i].prof.label != NULL;
	if (!labelled)
		report_warn(&w, "no profile of the chosen epoch(s) is labelled: dcpid -label "
			    "comm|uid|cgroup (or dcpi record -label) labels them");
	report_check_set(&w, &set);
	report_warn_finish(&w);
	if (dcpi_labelsum_build(&t, &set, o.by))
		cli_die("%s", dcpi_errmsg());
	dcpi_labelsum_sort(&t, col);
	if (o.co.json)
		print_json(&o, &set, &t, &w);
	else
		print_text(&o, &set, &t, &w);
	dcpi_labelsum_free(&t);
	dcpi_profset_free(&set);
	return 0;
}
