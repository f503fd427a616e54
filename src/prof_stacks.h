/* dcpiprof's views of call stacks: see prof_stacks.c. */
#ifndef DCPI_PROF_STACKS_H
#define DCPI_PROF_STACKS_H

#include <stddef.h>

#include "dcpi/callgraph.h"
#include "dcpi/obj.h"
#include "dcpi/profset.h"
#include "report.h"

enum { PS_CALLERS = 1, PS_CALLEES, PS_INCLUSIVE, PS_STACKS };
enum { PS_TEXT, PS_JSON, PS_CSV };

struct prof_stacks {
	int mode, out;
	const char *db;
	const struct dcpi_profset *set;
	const char *label;           /* -label K=V, or NULL */
	int bypid;                   /* -pid: the stacks kept per process apart */
	struct dcpi_objcache *objs;
	struct report_warnings *w;
	const char *proc;            /* -callers/-callees PROC */
	const char *const *images;   /* IMAGE arguments: where PROC is */
	size_t nimages;
	unsigned col;                /* the sort column */
	size_t depth;                /* -depth: callers of callers */
	unsigned long long keep;     /* rows at each level */
};

/* The view ps asks for, printed; 0, or -1 after an error message. */
int prof_stacks_report(struct prof_stacks *ps);
int prof_stacks_inclusive(struct prof_stacks *ps, const struct dcpi_callgraph *g);
int prof_stacks_list(struct prof_stacks *ps, const struct dcpi_callgraph *g);

#endif
