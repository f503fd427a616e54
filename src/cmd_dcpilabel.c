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
	const char *db, *epoch, *host, *by, *sort;
	int json;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpilabel [options]\n"
"The labels of the labelled profiles (dcpid -label) of an epoch, with their\n"
"samples: which commands, users or cgroups the time went to.\n\n"
"  -db DIR            the database (default $DCPIDB, else ./dcpidb if it exists)\n"
"  -epoch NAME        an epoch, 'latest' (default) or 'all' (summed)\n"
"  -host NAME         a host of a shared database, or 'all' (default: this one)\n"
"  -by KEY            one row per value of comm, uid or cgroup instead of per label\n"
"  -sort EVENT        order by this event (default: the first)\n"
"  -json              JSON output (schema in dcpilabel(1))\n"
"  -v, -verbose       every warning on a line of its own\n"
"  -h, -help          this help\n");
}

static void parse_options(struct opts *o, int argc, char **argv)
{
	enum { O_DB = 256, O_EPOCH, O_HOST, O_BY, O_SORT, O_JSON };
	static const struct option lo[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "epoch", required_argument, NULL, O_EPOCH },
		{ "host", required_argument, NULL, O_HOST },
		{ "by", required_argument, NULL, O_BY },
		{ "sort", required_argument, NULL, O_SORT },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = cli_getopt(argc, argv, "h", lo)) != -1) {
		switch (c) {
		case O_DB: o->db = optarg; break;
		case O_EPOCH: o->epoch = optarg; break;
		case O_HOST: o->host = optarg; break;
		case O_BY: o->by = cli_label_key(optarg); break;
		case O_SORT: o->sort = optarg; break;
		case O_JSON: o->json = 1; break;
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", argv[optind]);
	o->db = cli_db_read(o->db);
}

static const char *row_name(const struct dcpi_labelsum_row *w)
{
	return w->label ? w->label : "(unlabelled)";
}

static void print_text(const struct opts *o, const struct dcpi_profset *set,
		       const struct dcpi_labelsum *t, const struct report_warnings *w)
{
	const struct dcpi_epoch_stats *st = &set->stats;

	report_print_header(stdout, o->db, set, t->total, w);
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
	struct dcpi_json *j = report_json_begin(o->db);

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
	if (dcpi_profset_load(o.db, o.epoch, o.host, &set))
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
	if (o.json)
		print_json(&o, &set, &t, &w);
	else
		print_text(&o, &set, &t, &w);
	dcpi_labelsum_free(&t);
	dcpi_profset_free(&set);
	return 0;
}
