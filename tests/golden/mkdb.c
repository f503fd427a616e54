/* mkdb: write a profile database from a plain-text description, with
 * libdcpi's own writers, so the golden tests (the scripts in tests/golden) can check
 * the report commands on known numbers without root or a daemon.
 *
 *   mkdb SPEC        (SPEC "-": standard input)
 *
 * One command per line; '#' starts a comment line.  Numbers are C integers
 * (0x... for hex).
 *   db DIR                      the database (created 0700)
 *   epoch NAME HOST             make DB/NAME/HOST; later commands go there
 *   kallsyms PROCDIR            snapshot PROCDIR/kallsyms and PROCDIR/modules
 *                               as dcpid does (dcpi_snapshot_kernel)
 *   stats KEY N ...             epoch.stats: samples lost throttled unknown
 *                               kernel images cpus start updated labels
 *                               label_values label_other
 *   stats-event NAME PERIOD SAMPLES ENABLED RUNNING
 *   profile KIND                begin a profile: file kernel module anon unknown
 *     path TEXT                 the rest of the line, byte for byte
 *     image FILE                build-id and size of FILE
 *     buildid HEX | size N | mtime N | pid N | text START SIZE
 *     label TEXT                the profile's label (dcpid -label)
 *     event NAME PERIOD PPM     one per event, in column order
 *     row OFFSET COUNT...       one count per event
 *   end                         merge the profile into the epoch/host
 *                               (dcpi_db_merge_profile); its name on stdout
 *   stack-image ID FILE KIND MTIME TEXTSTART TEXTSIZE
 *                               an image of the epoch's call stacks: path
 *                               FILE (kind file: its build-id and size too)
 *   stack END LABEL COUNT[,COUNT...] FRAME...
 *                               a call stack (dcpi/stacks.h): END whole,
 *                               copy, norule, bad, cut, kernel; LABEL or -;
 *                               a count per stats-event; FRAME ID:OFFSET or
 *                               ? (no image), the sampled one first
 * The epoch's stats file (and epoch.stacks, when it has stacks) is written
 * when the next epoch starts or at the end of the input. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/buildid.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/profile.h"
#include "dcpi/snapshot.h"
#include "dcpi/stacks.h"
#include "dcpi/stats.h"

#define MAX_ROWS (1 << 20)  /* bench/scale: a million one-sample functions */
#define MAX_WORDS 32

struct gen {
	const char *spec;
	unsigned lineno;
	char db[1024], platdir[2048];
	struct dcpi_epoch_stats st;
	int have_stats;
	struct dcpi_profile p;
	int in_profile;
	size_t nrows;
	uint64_t offsets[MAX_ROWS], counts[MAX_ROWS * DCPI_MAX_EVENTS];
	struct dcpi_stackset stk;
	int have_stacks;
	uint32_t stack_image[64];     /* by ID: the set's index */
};

static void die(const struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die(const struct gen *g, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mkdb: %s:%u: ", g->spec, g->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t num(const struct gen *g, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = s ? strtoull(s, &end, 0) : 0;
	if (!s || errno || end == s || *end || *s == '-')
		die(g, "want a number, not '%s'", s ? s : "");
	return v;
}

static void copy_str(char **dst, const char *s)
{
	free(*dst);
	*dst = strdup(s);
	if (!*dst) {
		perror("mkdb");
		exit(1);
	}
}

/* ---- epochs and statistics ------------------------------------------------ */

static void write_stacks(struct gen *g)
{
	char path[2200];

	if (!g->have_stacks)
		return;
	g->stk.epoch = strdup(g->st.epoch);
	g->stk.platform = strdup(g->st.platform);
	if (dcpi_stacks_path(path, sizeof(path), g->platdir, g->st.platform) ||
	    dcpi_stackset_merge_file(path, &g->stk, 0600))
		die(g, "%s", dcpi_errmsg());
	dcpi_stackset_free(&g->stk);
	g->have_stacks = 0;
}

static void write_stats(struct gen *g)
{
	char path[2100];

	write_stacks(g);
	if (!g->have_stats)
		return;
	snprintf(path, sizeof(path), "%s/epoch.stats", g->platdir);
	if (dcpi_stats_write(path, &g->st, 0600))
		die(g, "%s", dcpi_errmsg());
	g->have_stats = 0;
}

static void cmd_epoch(struct gen *g, char **w, int n)
{
	if (n != 3 || !dcpi_db_is_epoch_name(w[1]) || !g->db[0])
		die(g, "want: epoch YYYYMMDDTHHMMSSZ HOST, after db");
	write_stats(g);
	if (dcpi_db_path(g->platdir, sizeof(g->platdir), g->db, w[1], w[2], NULL) ||
	    dcpi_db_init(g->platdir, 0700))
		die(g, "%s", dcpi_errmsg());
	memset(&g->st, 0, sizeof(g->st));
	snprintf(g->st.epoch, sizeof(g->st.epoch), "%s", w[1]);
	snprintf(g->st.platform, sizeof(g->st.platform), "%s", w[2]);
}

static void cmd_stats(struct gen *g, char **w, int n)
{
	static const struct { const char *key; size_t off; } keys[] = {
		{ "samples", offsetof(struct dcpi_epoch_stats, samples) },
		{ "lost", offsetof(struct dcpi_epoch_stats, lost) },
		{ "throttled", offsetof(struct dcpi_epoch_stats, throttled) },
		{ "unknown", offsetof(struct dcpi_epoch_stats, unknown) },
		{ "kernel", offsetof(struct dcpi_epoch_stats, kernel) },
		{ "images", offsetof(struct dcpi_epoch_stats, images) },
		{ "label_values", offsetof(struct dcpi_epoch_stats, label_values) },
		{ "label_other", offsetof(struct dcpi_epoch_stats, label_other) },
		{ "clock_khz", offsetof(struct dcpi_epoch_stats, clock_khz) },
	};

	for (int i = 1; i + 1 < n; i += 2) {
		size_t k = 0;

		if (!strcmp(w[i], "cpus"))
			g->st.ncpus = (uint32_t)num(g, w[i + 1]);
		else if (!strcmp(w[i], "start"))
			g->st.start = (int64_t)num(g, w[i + 1]);
		else if (!strcmp(w[i], "updated"))
			g->st.updated = (int64_t)num(g, w[i + 1]);
		else if (!strcmp(w[i], "labels"))
			snprintf(g->st.labels, sizeof(g->st.labels), "%s", w[i + 1]);
		else {
			while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(keys[k].key, w[i]))
				k++;
			if (k == sizeof(keys) / sizeof(keys[0]))
				die(g, "unknown stats key '%s'", w[i]);
			*(uint64_t *)((char *)&g->st + keys[k].off) = num(g, w[i + 1]);
		}
	}
	if (n % 2 == 0)
		die(g, "stats wants KEY VALUE pairs");
	g->have_stats = 1;
}

static void cmd_stats_event(struct gen *g, char **w, int n)
{
	struct dcpi_stats_event *e;

	if (n != 6 || g->st.nevents == DCPI_MAX_EVENTS)
		die(g, "want: stats-event NAME PERIOD SAMPLES ENABLED RUNNING");
	e = &g->st.ev[g->st.nevents++];
	snprintf(e->name, sizeof(e->name), "%s", w[1]);
	e->period = num(g, w[2]);
	e->samples = num(g, w[3]);
	e->time_enabled = num(g, w[4]);
	e->time_running = num(g, w[5]);
	g->have_stats = 1;
}

/* ---- profiles --------------------------------------------------------------- */

static void cmd_profile(struct gen *g, char **w, int n)
{
	static const char *const kinds[] = { "file", "kernel", "module", "anon", "unknown" };
	uint32_t k = 0;

	if (n != 2 || g->in_profile || !g->platdir[0])
		die(g, "want: profile KIND, after an epoch, not inside another profile");
	while (k < 5 && strcmp(kinds[k], w[1]))
		k++;
	if (k == 5)
		die(g, "unknown kind '%s'", w[1]);
	dcpi_profile_init(&g->p);
	g->p.kind = k;
	g->p.pid = -1;
	copy_str(&g->p.epoch, g->st.epoch);
	copy_str(&g->p.platform, g->st.platform);
	g->nrows = 0;
	g->in_profile = 1;
}

static void cmd_image(struct gen *g, const char *file)
{
	struct stat sb;
	int n = dcpi_buildid_elf(file, g->p.build_id, sizeof(g->p.build_id));

	if (n < 0 || stat(file, &sb))
		die(g, "%s: cannot read its build-id or size", file);
	g->p.build_id_len = (uint32_t)n;
	g->p.size = (uint64_t)sb.st_size;
}

static void cmd_buildid(struct gen *g, const char *hex)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > sizeof(g->p.build_id))
		die(g, "bad build-id '%s'", hex);
	for (size_t i = 0; i < n / 2; i++) {
		char byte[3] = { hex[2 * i], hex[2 * i + 1], 0 };

		g->p.build_id[i] = (uint8_t)strtoul(byte, NULL, 16);
	}
	g->p.build_id_len = (uint32_t)(n / 2);
}

static void cmd_event(struct gen *g, char **w, int n)
{
	struct dcpi_profile_event *e;

	if (n != 4 || g->p.nevents == DCPI_MAX_EVENTS || g->nrows)
		die(g, "want: event NAME PERIOD PPM, before the rows");
	e = &g->p.events[g->p.nevents++];
	copy_str(&e->name, w[1]);
	e->period = num(g, w[2]);
	e->monitored_ppm = (uint32_t)num(g, w[3]);
}

static void cmd_row(struct gen *g, char **w, int n)
{
	if ((uint32_t)(n - 2) != g->p.nevents || g->nrows == MAX_ROWS)
		die(g, "want: row OFFSET and one count per event (%u)", g->p.nevents);
	g->offsets[g->nrows] = num(g, w[1]);
	for (uint32_t e = 0; e < g->p.nevents; e++)
		g->counts[g->nrows * g->p.nevents + e] = num(g, w[2 + e]);
	g->nrows++;
}

static void cmd_end(struct gen *g)
{
	char name[512];

	if (dcpi_profile_set_rows(&g->p, g->nrows, g->offsets, g->counts) ||
	    dcpi_db_profile_name(&g->p, name, sizeof(name)) ||
	    dcpi_db_merge_profile(g->platdir, &g->p, 0600))
		die(g, "%s", dcpi_errmsg());
	printf("%s\n", name);
	dcpi_profile_free(&g->p);
	g->in_profile = 0;
}

/* A line of a profile; the ones not handled here are split into words. */
static void profile_line(struct gen *g, char **w, int n)
{
	if (!strcmp(w[0], "image") && n == 2)
		cmd_image(g, w[1]);
	else if (!strcmp(w[0], "buildid") && n == 2)
		cmd_buildid(g, w[1]);
	else if (!strcmp(w[0], "size") && n == 2)
		g->p.size = num(g, w[1]);
	else if (!strcmp(w[0], "mtime") && n == 2)
		g->p.mtime = (int64_t)num(g, w[1]);
	else if (!strcmp(w[0], "pid") && n == 2)
		g->p.pid = (int64_t)num(g, w[1]);
	else if (!strcmp(w[0], "label") && n == 2)
		g->p.label = strdup(w[1]);
	else if (!strcmp(w[0], "text") && n == 3) {
		g->p.text_start = num(g, w[1]);
		g->p.text_size = num(g, w[2]);
	} else if (!strcmp(w[0], "event"))
		cmd_event(g, w, n);
	else if (!strcmp(w[0], "row"))
		cmd_row(g, w, n);
	else if (!strcmp(w[0], "end") && n == 1)
		cmd_end(g);
	else
		die(g, "'%s' is not a profile command (or has the wrong arguments)", w[0]);
}

/* ---- call stacks ---------------------------------------------------------------- */

static void stacks_begin(struct gen *g)
{
	const char *names[DCPI_MAX_EVENTS];
	uint64_t periods[DCPI_MAX_EVENTS];

	if (g->have_stacks)
		return;
	if (!g->st.nevents)
		die(g, "stacks before the epoch's stats-event lines");
	for (unsigned e = 0; e < g->st.nevents; e++) {
		names[e] = g->st.ev[e].name;
		periods[e] = g->st.ev[e].period;
	}
	if (dcpi_stackset_init(&g->stk, g->st.nevents, names, periods))
		die(g, "%s", dcpi_errmsg());
	g->have_stacks = 1;
}

static void cmd_stack_image(struct gen *g, char **w, int n)
{
	static const char *const kinds[] = { "file", "kernel", "module", "anon", "unknown" };
	struct dcpi_profile id;
	uint64_t k = 0, i;

	if (n != 7 || (i = num(g, w[1])) >= 64)
		die(g, "want: stack-image ID(<64) FILE KIND MTIME TEXTSTART TEXTSIZE");
	while (k < 5 && strcmp(kinds[k], w[3]))
		k++;
	if (k == 5)
		die(g, "unknown kind '%s'", w[3]);
	stacks_begin(g);
	dcpi_profile_init(&g->p);
	copy_str(&g->p.path, w[2]);
	if (k == DCPI_IMAGE_FILE)
		cmd_image(g, w[2]);
	id = g->p;
	id.kind = (uint32_t)k;
	id.mtime = (int64_t)num(g, w[4]);
	id.text_start = num(g, w[5]);
	id.text_size = num(g, w[6]);
	if (dcpi_stackset_image(&g->stk, &id, &g->stack_image[i]))
		die(g, "%s", dcpi_errmsg());
	dcpi_profile_free(&g->p);
}

static void cmd_stack(struct gen *g, char **w, int n)
{
	static const char *const ends[] = { "whole", "copy", "norule", "bad", "cut", "kernel" };
	struct dcpi_stack_frame f[MAX_WORDS];
	uint32_t label;
	unsigned end = 0;
	char *c, *save = NULL;
	int nf = 0;

	if (n < 5)
		die(g, "want: stack END LABEL COUNT[,COUNT...] FRAME...");
	while (end < 6 && strcmp(ends[end], w[1]))
		end++;
	if (end == 6)
		die(g, "unknown stack end '%s'", w[1]);
	stacks_begin(g);
	if (dcpi_stackset_label(&g->stk, strcmp(w[2], "-") ? w[2] : "", &label))
		die(g, "%s", dcpi_errmsg());
	for (int k = 4; k < n; k++, nf++) {
		char *colon = strchr(w[k], ':');

		if (!strcmp(w[k], "?")) {
			f[nf] = (struct dcpi_stack_frame){ DCPI_FRAME_UNKNOWN, 0 };
			continue;
		}
		if (!colon)
			die(g, "a frame is ID:OFFSET or ?, not '%s'", w[k]);
		*colon = 0;
		f[nf] = (struct dcpi_stack_frame){ g->stack_image[num(g, w[k]) & 63], num(g, colon + 1) };
	}
	c = strtok_r(w[3], ",", &save);
	for (unsigned e = 0; c; e++, c = strtok_r(NULL, ",", &save)) {
		uint64_t v = num(g, c);

		if (e >= g->st.nevents)
			die(g, "more counts than stats-event lines");
		if (v && dcpi_stackset_add(&g->stk, label, -1, end, f, (size_t)nf, e, v))
			die(g, "%s", dcpi_errmsg());
	}
}

/* ---- the description ---------------------------------------------------------- */

static void line(struct gen *g, char *s)
{
	char *w[MAX_WORDS], *save = NULL;
	int n = 0;

	if (!strncmp(s, "path ", 5)) {
		if (!g->in_profile)
			die(g, "path outside a profile");
		copy_str(&g->p.path, s + 5);
		return;
	}
	for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == MAX_WORDS)
			die(g, "too many words");
		w[n++] = t;
	}
	if (n == 0 || w[0][0] == '#')
		return;
	if (g->in_profile)
		profile_line(g, w, n);
	else if (!strcmp(w[0], "db") && n == 2) {
		snprintf(g->db, sizeof(g->db), "%s", w[1]);
		if (dcpi_db_init(g->db, 0700))
			die(g, "%s", dcpi_errmsg());
	} else if (!strcmp(w[0], "epoch"))
		cmd_epoch(g, w, n);
	else if (!strcmp(w[0], "kallsyms") && n == 2) {
		if (dcpi_snapshot_kernel(g->platdir, w[1], 0600))
			die(g, "%s", dcpi_errmsg());
	} else if (!strcmp(w[0], "stats"))
		cmd_stats(g, w, n);
	else if (!strcmp(w[0], "stats-event"))
		cmd_stats_event(g, w, n);
	else if (!strcmp(w[0], "profile"))
		cmd_profile(g, w, n);
	else if (!strcmp(w[0], "stack-image"))
		cmd_stack_image(g, w, n);
	else if (!strcmp(w[0], "stack"))
		cmd_stack(g, w, n);
	else
		die(g, "unknown command '%s'", w[0]);
}

int main(int argc, char **argv)
{
	static struct gen g;
	char buf[8192];
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: mkdb SPEC\n");
		return 2;
	}
	g.spec = argv[1];
	f = strcmp(argv[1], "-") ? fopen(argv[1], "r") : stdin;
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		g.lineno++;
		buf[strcspn(buf, "\n")] = 0;
		line(&g, buf);
	}
	if (g.in_profile)
		die(&g, "a profile without its 'end'");
	write_stats(&g);
	return 0;
}
