/* The images IMAGE arguments name: see dcpi/select.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/error.h"
#include "dcpi/select.h"
#include "internal.h"

int dcpi_select_region(const struct dcpi_profile *p, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (p->kind != DCPI_IMAGE_UNKNOWN || p->pid < 0 || !p->text_size ||
	    p->text_start + (p->text_size - 1) < p->text_start)
		return -ENOENT;
	snprintf(buf, len, "[unknown 0x%" PRIx64 "-0x%" PRIx64 "]", p->text_start,
		 p->text_start + (p->text_size - 1));
	return 0;
}

int dcpi_select_matches(const struct dcpi_profile *p, const char *want)
{
	char real[PATH_MAX], region[64];
	const char *base;

	if (!strcmp(p->path, want))
		return 1;
	if (p->kind == DCPI_IMAGE_KERNEL)
		return !strcmp(want, "kernel") || !strcmp(want, "vmlinux");
	if (p->kind == DCPI_IMAGE_UNKNOWN)
		return !strcmp(want, "unknown") ||
		       (!dcpi_select_region(p, region, sizeof(region)) && !strcmp(want, region));
	if (!strchr(want, '/')) {
		size_t n = strlen(want);

		base = strrchr(p->path, '/');
		base = base ? base + 1 : p->path;
		/* the file name, or a soname it carries: liblzma.so.5 for
		 * liblzma.so.5.4.1 (a prefix ending where a version part starts) */
		return !strcmp(base, want) ||
		       (strstr(want, ".so") && !strncmp(base, want, n) && base[n] == '.');
	}
	return realpath(want, real) && !strcmp(p->path, real);
}

static int named(struct dcpi_selection *s, const struct dcpi_profile *p,
		 const char *const *args, size_t nargs)
{
	int any = 0;

	if (nargs == 0)
		return 1;
	for (size_t i = 0; i < nargs; i++)
		if (dcpi_select_matches(p, args[i])) {
			s->matched[i] = p->path;
			any = 1;
		}
	return any;
}

static uint64_t profile_samples(const struct dcpi_profile *p)
{
	uint64_t t = 0;

	for (uint32_t e = 0; e < p->nevents; e++)
		t += p->events[e].total;
	return t;
}

/* Entry i joins the group of its identity, or starts one. */
static int group_add(struct dcpi_selection *s, size_t *cap, const struct dcpi_profset *set,
		     size_t i)
{
	struct dcpi_image_group *g = NULL;
	int err;

	for (size_t k = 0; k < s->ngroups && !g; k++)
		if (dcpi_profile_same_image(&set->v[s->groups[k].idx[0]].prof, &set->v[i].prof))
			g = &s->groups[k];
	if (!g) {
		if ((err = DCPI_GROW(s->groups, *cap, s->ngroups + 1, SIZE_MAX, "images")))
			return err;
		g = &s->groups[s->ngroups++];
		memset(g, 0, sizeof(*g));
	}
	if ((err = DCPI_GROW(g->idx, g->cap, g->n + 1, SIZE_MAX, "profiles")))
		return err;
	g->idx[g->n++] = i;
	g->samples += profile_samples(&set->v[i].prof);
	return 0;
}

int dcpi_select(const struct dcpi_profset *set, const char *const *args, size_t nargs,
		struct dcpi_selection *out)
{
	size_t cap = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->chosen = calloc(set->n ? set->n : 1, 1);
	out->matched = calloc(nargs ? nargs : 1, sizeof(*out->matched));
	if (!out->chosen || !out->matched)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < set->n && !err; i++) {
		if (!named(out, &set->v[i].prof, args, nargs))
			continue;
		out->chosen[i] = 1;
		out->nchosen++;
		err = group_add(out, &cap, set, i);
	}
	return err;
}

void dcpi_selection_free(struct dcpi_selection *s)
{
	for (size_t k = 0; k < s->ngroups; k++)
		free(s->groups[k].idx);
	free(s->groups);
	free(s->chosen);
	free(s->matched);
	memset(s, 0, sizeof(*s));
}

const struct dcpi_image_group *dcpi_selection_largest(const struct dcpi_selection *s)
{
	const struct dcpi_image_group *best = NULL;

	for (size_t k = 0; k < s->ngroups; k++)
		if (!best || s->groups[k].samples > best->samples)
			best = &s->groups[k];
	return best;
}
