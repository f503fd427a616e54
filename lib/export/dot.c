/* The annotated CFG as Graphviz DOT: see dcpi/dot.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/dot.h"
#include "dcpi/error.h"

/* A DOT string's body: quotes and backslashes escaped, control bytes
 * dropped. */
static void dot_str(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
}

static int entered_from_outside(const struct dcpi_cfg *g, size_t b)
{
	size_t n, e0 = dcpi_cfg_out_edges(g, DCPI_CFG_OUTSIDE(g), &n);

	for (size_t e = e0; e < e0 + n; e++)
		if (g->edges[e].to == b)
			return 1;
	return 0;
}

static void dot_block(FILE *f, const struct dcpi_calc *c, const struct dcpi_dot_opts *o, size_t b,
		      double maxfreq, uint64_t total, uint64_t maxs)
{
	const struct dcpi_cfg_block *bl = &c->cfg.blocks[b];
	const struct dcpi_calc_block *cb = &c->blocks[b];
	uint64_t s = o->block_samples ? o->block_samples[b] : cb->time;
	double pct = total ? 100.0 * (double)s / (double)total : 0;
	double heat = maxs ? (double)s / (double)maxs : 0;
	double font = 9 + 15 * (maxfreq > 0 ? cb->freq / maxfreq : 0);
	double side = 1 + 3 * sqrt(total ? (double)s / (double)total : 0);
	char est[32], cpi[32];

	if (pct < o->cutoff || (o->cutoff > 0 && !s)) {
		fprintf(f, "  B%zu [label=\"B%zu\", shape=box, fontsize=8, width=0.3, height=0.2, "
			"style=dashed];\n", b, b);
		return;
	}
	fprintf(f, "  B%zu [label=\"B%zu%s  0x%" PRIx64 "\\n%zu insns  %s %s (%c)\\n", b, b,
		entered_from_outside(&c->cfg, b) ? " entry" : "", bl->start, bl->ninsns,
		c->absolute ? "freq" : "rel.freq", dcpi_block_count_str(cb, est, sizeof(est)),
		cb->conf);
	if (cb->cpi >= 0)
		fprintf(f, "cpi %s  best %.2f\\n",
			dcpi_quantum_str(cb->cpi, dcpi_digits_quantum(cb->cpi, cb->cpi_digits), 2,
					 cpi, sizeof(cpi)),
			cb->best_cpi);
	else
		fprintf(f, "best cpi %.2f\\n", cb->best_cpi);
	fprintf(f, "%.1f%% of samples", pct);
	for (const char *l = o->block_src ? o->block_src[b] : NULL; l && *l;) { /* dcpisource */
		const char *nl = strchr(l, '\n');
		char line[128];

		snprintf(line, sizeof(line), "%.*s", (int)(nl ? (size_t)(nl - l) : strlen(l)), l);
		fprintf(f, "\\n");
		dot_str(f, line);
		l = nl ? nl + 1 : "";
	}
	fprintf(f, "\", shape=box, style=filled, fillcolor=\"0.000 %.3f 1.000\", "
		"fontsize=%.1f, width=%.2f, height=%.2f];\n", heat, font, side * 1.6, side * 0.6);
}

int dcpi_dot_write(FILE *f, const struct dcpi_calc *c, const struct dcpi_dot_opts *o)
{
	const struct dcpi_cfg *g = &c->cfg;
	double maxfreq = 0, maxcount = 0;
	uint64_t total = 0, maxs = 0;
	char est[32];

	for (size_t b = 0; b < g->nblocks; b++) {
		uint64_t s = o->block_samples ? o->block_samples[b] : c->blocks[b].time;

		maxfreq = fmax(maxfreq, c->blocks[b].freq);
		total += s;
		maxs = s > maxs ? s : maxs;
	}
	for (size_t e = 0; e < g->nedges; e++)
		maxcount = fmax(maxcount, c->edges[e].count);
	fprintf(f, "digraph cfg {\n  label=\"");
	dot_str(f, o->title ? o->title : "(address range)");
	/* a large graph laid out for time, not beauty: straight edges and
	   short placement searches (a 298-block procedure: 2.3 s to 0.34 s) */
	if (g->nblocks > DCPI_DOT_LARGE)
		fprintf(f, "\";\n  labelloc=t;\n  nslimit=2;\n  mclimit=0.2;\n  splines=line;\n"
			"  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\", fontsize=9];\n");
	else
		fprintf(f, "\";\n  labelloc=t;\n  nslimit=20;\n  mclimit=2;\n"
			"  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\", fontsize=9];\n");
	for (size_t b = 0; b < g->nblocks; b++)
		dot_block(f, c, o, b, maxfreq, total, maxs);
	for (size_t e = 0; e < g->nedges; e++) {
		const struct dcpi_cfg_edge *ge = &g->edges[e];
		double w = maxcount > 0 ? c->edges[e].count / maxcount : 0;

		if (ge->from >= g->nblocks || ge->to >= g->nblocks)
			continue;
		fprintf(f, "  B%zu -> B%zu [label=\"%s\", penwidth=%.2f%s];\n", ge->from, ge->to,
			dcpi_edge_count_str(&c->edges[e], est, sizeof(est)),
			0.5 + 4.5 * w,
			ge->kind == DCPI_EDGE_FALL ? "" : ", style=bold");
	}
	fprintf(f, "}\n");
	return ferror(f) ? dcpi_error(EIO, "writing the graph failed") : 0;
}
