/* What the report commands (dcpiprof, dcpilist, dcpitopcounts) share:
 * choosing images by name, the header of events and losses, warnings,
 * and JSON strings.  Printing only; the data comes from libdcpi. */
#ifndef DCPI_REPORT_H
#define DCPI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profset.h"

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
/* Warnings every report owes its reader: unreadable profiles, lost
 * samples, many samples of no image. */
void report_check_set(struct report_warnings *w, const struct dcpi_profset *set);

/* The last path component. */
const char *report_base(const char *path);
/* The image's name in labels: its file name, what stands in brackets for
 * "[vdso]", "[ext4]"; "kernel" for the kernel. */
void report_short_name(const struct dcpi_profile *p, char *buf, size_t len);
/* Whether an IMAGE argument names the profile's image: the exact path, a
 * file name without '/', a path to the same file, "kernel"/"vmlinux",
 * "unknown". */
int report_image_matches(const struct dcpi_profile *p, const char *want);

/* IMAGE arguments: whether profile p is chosen by one of images[0..n-1]
 * (all are chosen when n is 0); matched[i] is set for each that names it. */
int report_select(const struct dcpi_profile *p, const char *const *images, size_t n,
		  const char **matched);
/* An error line on stderr for each image no profile matched; 1 if any. */
int report_unmatched(const struct dcpi_profset *set, const char *const *images, size_t n,
		     const char *const *matched);

/* "Database/Epochs/Hosts", the events with total[] and periods, the
 * samples and losses, and the warnings, as dcpiprof(1) documents. */
void report_print_header(const char *db, const struct dcpi_profset *set,
			 const uint64_t *total, const struct report_warnings *w);

/* s as a JSON string literal on stdout. */
void report_json_str(const char *s);

/* Symbol options for the tools reading database db: its image cache
 * (DB/.build-id, filled by dcpid -imagecache) is searched for images
 * rebuilt since they were profiled.  Points at static storage. */
const struct dcpi_symtab_opts *report_symtab_opts(const char *db);
/* "epochs": [...], "hosts": [...], "samples"... "events": [...],
 * "warnings": [...] members (no braces), as dcpiprof's JSON has them. */
void report_json_header(const struct dcpi_profset *set, const uint64_t *total,
			const struct report_warnings *w);

double report_pct(uint64_t n, uint64_t total);

#endif
