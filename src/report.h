/* What the report commands (dcpiprof, dcpilist, dcpitopcounts) share:
 * the header of events and losses, warnings, and JSON strings.  Printing
 * only; the data (which images an argument names, the rows) comes from
 * libdcpi. */
#ifndef DCPI_REPORT_H
#define DCPI_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "cli.h"
#include "dcpi/profset.h"

struct dcpi_annot_image;
struct dcpi_json;
struct dcpi_source_opts;
struct dcpi_objcache;
struct dcpi_symtab_opts;

#define REPORT_MAX_WARNINGS 64

/* Warnings for the header; the last slot says how many more were cut.
 * Owns its strings (freed at exit: commands run once). */
struct report_warnings {
	char *v[REPORT_MAX_WARNINGS];
	size_t n, dropped;
};

void report_warn(struct report_warnings *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Adds "N more warnings not shown" when some were dropped. */
void report_warn_finish(struct report_warnings *w);
/* The warnings on standard error, "PROG: warning: PREFIX...": those about
 * images that say the same thing one line with their count ("17 images:
 * symbols from .dynsym only ... (-v lists them)"), each one with -v. */
void report_warn_print(const struct report_warnings *w, const char *prefix);
/* Warnings every report owes its reader: unreadable profiles, lost
 * samples, many samples of no image. */
void report_check_set(struct report_warnings *w, const struct dcpi_profset *set);

/* The last path component. */
const char *report_base(const char *path);
/* On stderr, the images of set whose file name starts like want's. */
void report_suggest(const struct dcpi_profset *set, const char *want);
/* An error line on stderr for each image no profile matched; 1 if any. */
int report_unmatched(const struct dcpi_profset *set, const char *const *images, size_t n,
		     const char *const *matched);
/* Whether any of the n named images matched a profile. */
int report_any_matched(const char *const *matched, size_t n);

/* "Database/Epochs/Hosts", the events with total[] and periods, the
 * samples and losses, and the warnings, as dcpiprof(1) documents. */
void report_print_header(FILE *f, const char *db, const struct dcpi_profset *set,
			 const uint64_t *total, const struct report_warnings *w);

/* Symbol options for the tools reading database db: its image cache
 * (DB/.build-id, filled by dcpid -imagecache) is searched for images
 * rebuilt since they were profiled, and DB is a debug directory
 * (DB/.build-id/xx/yyyy.debug, unpacked by dcpitar) before those of
 * $DCPI_DEBUG_PATH.  Points at static storage. */
const struct dcpi_symtab_opts *report_symtab_opts(const char *db);
/* The JSON document every report starts with: {"database": DB, ... on
 * stdout; the caller adds its members, then dcpi_json_obj_end() and
 * dcpi_json_free(). */
struct dcpi_json *report_json_begin(const char *db);
/* One obj per image for a report on database db (its image cache
 * searched, report_symtab_opts); dies on ENOMEM. */
struct dcpi_objcache *report_objcache(const char *db);
/* -label K=V[,K=V]: keep the profiles of set labelled so; a malformed
 * selection is a usage error, one that keeps nothing an error that says
 * which labels there are (exits either way). */
void report_keep_label(struct dcpi_profset *set, const char *spec);
/* "epochs": [...], "hosts": [...], "samples"... "events": [...],
 * "warnings": [...] members, as dcpiprof(1) documents them. */
void report_json_header(struct dcpi_json *j, const struct dcpi_profset *set,
			const uint64_t *total, const struct report_warnings *w);
/* "image", "procedure", "lo" and "hi" members of a one-procedure report
 * (dcpilist, dcpicalc). */
struct dcpi_annot_image;
void report_json_procedure(struct dcpi_json *j, struct dcpi_annot_image *img, const char *name,
			   uint64_t lo, uint64_t hi);
/* "name": [ one element a line ], emit run for i_ = 0 .. n-1. */
#define REPORT_JSON_ROWS(j, name, n, emit) do { \
	dcpi_json_break(j); \
	dcpi_json_key(j, name); \
	dcpi_json_arr_begin(j); \
	for (size_t i_ = 0; i_ < (n); i_++) { \
		dcpi_json_break(j); \
		emit; \
	} \
	dcpi_json_break(j); \
	dcpi_json_arr_end(j); \
} while (0)
/* "counts": [...], "percent": [...] members: c[e] and its share of total[e]. */
/* Latency bins (dcpi/bins.h) as a JSON array of {name, min, max, rep}
 * under key (dcpi bins, dcpilist -vtrace). */
struct dcpi_bins;
void report_json_bins(struct dcpi_json *j, const char *key, const struct dcpi_bins *b);

void report_json_counts(struct dcpi_json *j, unsigned nevents, const uint64_t *c,
			const uint64_t *total);

double report_pct(uint64_t n, uint64_t total);

/* One CSV field on f (RFC 4180): quoted, quotes doubled, when it holds a
 * comma or a quote; what cli_escape escapes (control bytes, DEL, '\\',
 * C1 controls, bytes not UTF-8), and a tab, as \xNN, so that a field
 * is one cell of one line and no byte of it drives a terminal; NULL is an
 * empty field. */
void report_csv_field(FILE *f, const char *s);

/* dcpi bins' measurement of this machine written to path as its bins file
 * (with the measurement as comments): dcpi record -vtrace makes DB/bins so.
 * 0, or the library's error. */
int bins_measure(const char *path, unsigned mode);

/* dcpiprof's text report of one epoch of db to f, as `dcpiprof -db DB
 * -epoch EPOCH [-i] [-keep N] [-sort EVENT]` prints it (dcpi record's
 * report).  Exits like dcpiprof on errors; returns its exit status. */
int prof_text_report(FILE *f, const char *db, const char *epoch, int procs,
		     const char *keep, const char *sort);

/* The image IMAGE names in set, opened for one procedure's listing
 * (profiles of anonymous and unknown images left out, the identity with
 * the most samples taken).  Exits with an error, and suggestions on
 * stderr, when no profile matches or it cannot be opened.  src is kept
 * by the image. */
struct dcpi_annot_image *report_annot_open(const struct dcpi_profset *set, const char *db,
					   const char *image, const struct dcpi_source_opts *src);
/* PROCEDURE (every form dcpi_annot_resolve takes) in img: *lo, *hi and
 * *name, or exit 1 with the error and the candidates on stderr. */
void report_annot_resolve(struct dcpi_annot_image *img, const char *proc, uint64_t *lo,
			  uint64_t *hi, const char **name);

/* Which columns of set feed the calc engine (calc.h): the cycles event,
 * else cpu-clock or task-clock, as time; "instructions" as retired; mode
 * (enum dcpi_calc_mode), or -1: retired when sampled, else time.  Exits
 * with an error when the mode's column is missing. */
struct dcpi_calc_cols;
struct dcpi_selection;
void report_calc_cols(const struct dcpi_profset *set, int mode, struct dcpi_calc_cols *c);

/* Open each image group of sel that has code (anonymous memory and
 * unknown images left out) into imgs, at most max; the rest are warned
 * about in w.  Returns how many were opened. */
size_t report_open_images(const struct dcpi_profset *set, const struct dcpi_selection *sel,
			  struct dcpi_objcache *objs, struct dcpi_annot_image **imgs, size_t max,
			  struct report_warnings *w);

/* The profile set of db/epoch/host, kept to label's profiles when label
 * is not NULL; exits when it cannot be read or holds no samples. */
void report_set_load(struct dcpi_profset *set, const char *db, const char *epoch,
		     const char *host, const char *label);

/* The images an analysis command (dcpitopstalls, dcpiwhatcg) works on:
 * the profile set of db/epoch/host (label-filtered), its calc columns
 * (a time column required: why says what needs it), and each image the
 * arguments select opened (report_open_images).  Exits on errors;
 * status is report_unmatched's.  Free with report_images_free. */
#define REPORT_MAX_OPEN 4096
struct report_images {
	struct dcpi_profset set;
	struct dcpi_selection *sel;
	struct dcpi_objcache *objs;
	struct dcpi_annot_image **imgs;
	size_t nimgs;
	struct dcpi_calc_cols *cols;
	int status;
};
void report_images_load(struct report_images *r, const char *db, const char *epoch,
			const char *host, const char *label, const char *const *images,
			size_t nimages, struct report_warnings *w, const char *why);
void report_images_free(struct report_images *r);

/* ---- what comparisons share (dcpidiff, dcpistats) ------------------------------------ */

/* -event NAME, -keep N, -rate second|cpu, -shares: their option codes
 * (above a command's own), table entries and values. */
enum { REPORT_O_EVENT = 900, REPORT_O_KEEP, REPORT_O_RATE, REPORT_O_SHARES };
#define REPORT_COMPARE_OPTIONS                                                 \
	{ "event", required_argument, NULL, REPORT_O_EVENT },                  \
	{ "keep", required_argument, NULL, REPORT_O_KEEP },                    \
	{ "rate", required_argument, NULL, REPORT_O_RATE },                    \
	{ "shares", no_argument, NULL, REPORT_O_SHARES }
struct report_compare {
	const char *event;              /* NULL: the first */
	unsigned long long keep;        /* rows; set ULLONG_MAX before parsing */
	int per;                        /* CLI_RATE_* */
	int shares;
};
/* One of those options (opt a REPORT_O_* code) into c. */
void report_compare_option(struct report_compare *c, int opt, const char *arg);

/* ---- a profile set named by one argument ------------------------------------------ */

/* EPOCH[@HOST][/SELECTION]: EPOCH a name, latest, all, a time or range
 * (dcpi_profset_time_range); HOST one host or all; SELECTION pid=N (the
 * per-process profiles of one process) and KEY=VALUE labels,
 * comma-separated.  dcpidiff's sides, dcpistats' epochs. */
struct report_side {
	char epoch[256];
	char hostbuf[256];
	const char *host;               /* hostbuf, or the -host given */
	long long pid;                  /* -1: every process */
	char labels[512];               /* "" or K=V,... */
};
/* Parse arg and load its set, with -label too (label, NULL: none); dies
 * with a message naming what (side "A"; NULL: the library's message
 * alone, which names the epoch) when it names nothing. */
void report_side_load(const char *db, const char *arg, const char *host, const char *label,
		      const char *what, struct report_side *sel, struct dcpi_profset *set);

struct dcpi_callgraph;
struct dcpi_objcache;
/* The call graph of a side that report_side_load chose (-label's pairs,
 * label, NULL: none, and the side's own; its process's stacks alone when it
 * names one), for inclusive comparisons.  Dies when the side has no stacks
 * of event col; warns in w of stacks files it could not read.  what names
 * the side in those messages ("A EPOCH"). */
void report_side_callgraph(const char *label, const struct report_side *sel,
			   const struct dcpi_profset *set, struct dcpi_objcache *objs, int col,
			   const char *what, struct report_warnings *w, struct dcpi_callgraph *g);

/* ---- the skeleton of a report over images -------------------------------------------- */

/* What every report over images holds: its common options, the images
 * loaded, the warnings gathered.  A command's state starts with one. */
struct report_base {
	struct cli_common o;
	struct report_images r;
	struct report_warnings w;
};
/* A report command: its options, and the steps between loading and
 * printing, each given the command's state. */
struct report_kind {
	const struct cli_cmd *cli;
	const char *none;               /* report_images_load's why, no samples */
	void (*analyse)(void *ctx);     /* rows from b->r (sorted) */
	void (*text)(void *ctx);
	void (*json)(void *ctx);
	void (*csv)(void *ctx);         /* NULL: the command has no -csv */
	void (*done)(void *ctx);        /* frees the rows, or NULL */
};
/* The whole run: options (cli_parse), the images' profiles loaded, the
 * analysis, the warnings summed up, the output in the format asked for,
 * and the exit status (report_unmatched's). */
int report_main(const struct report_kind *k, struct report_base *b, void *ctx, int argc,
		char **argv);

#endif
