/* Block and line coverage: see dcpi/coverage.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/coverage.h"
#include "dcpi/error.h"

static double freq_at(const double *freq, size_t stride, size_t b)
{
	return *(const double *)(const void *)((const char *)freq + b * stride);
}

/* The one block node v leads to (out) or comes from (!out), its edges to
 * itself aside, else SIZE_MAX. */
static size_t only_neighbour(const struct dcpi_cfg *g, size_t v, int out)
{
	size_t n, e0, found = SIZE_MAX;

	if (out) {
		e0 = dcpi_cfg_out_edges(g, v, &n);
		for (size_t e = e0; e < e0 + n; e++) {
			if (g->edges[e].to == v)
				continue;
			if (g->edges[e].to >= g->nblocks || (found != SIZE_MAX && found != g->edges[e].to))
				return SIZE_MAX;
			found = g->edges[e].to;
		}
		return found;
	}
	for (size_t e = 0; e < g->nedges; e++) {   /* edges are sorted by from, not to */
		if (g->edges[e].to != v || g->edges[e].from == v)
			continue;
		if (g->edges[e].from >= g->nblocks || (found != SIZE_MAX && found != g->edges[e].from))
			return SIZE_MAX;
		found = g->edges[e].from;
	}
	return found;
}

/* Blocks the graph says ran, given those counted; bounded by nblocks
 * passes, each adding at least one block. */
static void imply(const struct dcpi_cfg *g, unsigned char *ran)
{
	int changed = 1, any = 0;

	for (size_t b = 0; b < g->nblocks; b++)
		any |= ran[b] != 0;
	if (any && !ran[0])
		ran[0] = 2;
	for (size_t pass = 0; changed && pass < g->nblocks; pass++) {
		changed = 0;
		for (size_t b = 0; b < g->nblocks; b++) {
			size_t v;

			if (!ran[b])
				continue;
			v = only_neighbour(g, b, 0);   /* it came from there */
			if (v != SIZE_MAX && !ran[v])
				ran[v] = 2, changed = 1;
			v = only_neighbour(g, b, 1);   /* and went on there */
			if (v != SIZE_MAX && !ran[v])
				ran[v] = 2, changed = 1;
		}
	}
}

int dcpi_coverage_of(const struct dcpi_annotation *a, const struct dcpi_cfg *g,
		     const double *freq, size_t freq_stride, struct dcpi_coverage *out)
{
	memset(out, 0, sizeof(*out));
	out->block_ran = calloc(g->nblocks ? g->nblocks : 1, 1);
	out->line_ran = calloc(a->nlines ? a->nlines : 1, 1);
	if (!out->block_ran || !out->line_ran) {
		dcpi_coverage_free(out);
		return dcpi_error(ENOMEM, "out of memory");
	}
	out->nblocks = g->nblocks;
	out->ninsns = a->ninsns;
	for (size_t b = 0; freq && b < g->nblocks; b++)
		out->block_ran[b] = freq_at(freq, freq_stride, b) >= DCPI_COVERAGE_MIN;
	imply(g, out->block_ran);
	for (size_t b = 0; b < g->nblocks; b++) {
		const struct dcpi_cfg_block *bl = &g->blocks[b];

		if (!out->block_ran[b])
			continue;
		out->blocks_ran++;
		out->blocks_implied += out->block_ran[b] == 2;
		out->insns_ran += bl->ninsns;
		for (size_t i = bl->first; i < bl->first + bl->ninsns && i < a->ninsns; i++)
			if (a->insns[i].line_index < a->nlines)
				out->line_ran[a->insns[i].line_index] = 1;
	}
	for (size_t l = 0; l < a->nlines; l++) {
		if (!a->lines[l].line || !a->lines[l].ninsns)
			continue;
		out->nlines++;
		out->lines_ran += out->line_ran[l];
	}
	return 0;
}

int dcpi_coverage_of_calc(const struct dcpi_annotation *a, const struct dcpi_calc *c,
			  struct dcpi_coverage *out)
{
	double *f = calloc(c->cfg.nblocks ? c->cfg.nblocks : 1, sizeof(double));
	int err;

	if (!f) {
		memset(out, 0, sizeof(*out));
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (size_t b = 0; b < c->cfg.nblocks; b++)
		f[b] = c->blocks[b].why & DCPI_CALC_WHY_RAN ? DCPI_COVERAGE_MIN : c->blocks[b].freq;
	err = dcpi_coverage_of(a, &c->cfg, f, sizeof(f[0]), out);
	free(f);
	return err;
}

void dcpi_coverage_free(struct dcpi_coverage *c)
{
	free(c->block_ran);
	free(c->line_ran);
	memset(c, 0, sizeof(*c));
}
