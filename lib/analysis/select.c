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

/* An argument, with what dcpi_select_matches would work out for each
 * profile worked out once: realpath() of a path (a system call per profile
 * and argument was most of dcpiprof's time on 65,000 profiles). */
struct arg {
	const char *want;
	char *real;             /* realpath of a path with '/'; NULL otherwise or none */
};

static int arg_matches(const struct dcpi_profile *p, const struct arg *a)
{
	if (!strchr(a->want, '/') || p->kind == DCPI_IMAGE_KERNEL || p->kind == DCPI_IMAGE_UNKNOWN ||
	    !strcmp(p->path, a->want))
		return dcpi_select_matches(p, a->want); /* no realpath on these paths */
	return a->real && !strcmp(p->path, a->real);
}

static int named(struct dcpi_selection *s, const struct dcpi_profile *p,
		 const struct arg *args, size_t nargs)
{
	int any = 0;

	if (nargs == 0)
		return 1;
	for (size_t i = 0; i < nargs; i++)
		if (arg_matches(p, &args[i])) {
			s->matched[i] = p->path;
			any = 1;
		}
	return any;
}

static uint64_t profile_samples(const struct dcpi_profile *p)
{
	uint64_t t = 0;

	for (uint32_t e = 0; e < p->nevents; e++)
		t = dcpi_sat_add(t, p->events[e].total);
	return t;
}

/* A chosen entry, for sorting by image identity. */
struct ident {
	const struct dcpi_profile *p;
	size_t i;
};

/* Image identity (dcpi_profile_same_image: kind, path, build-id, or size
 * without one) ordered; 0 exactly when it says the same image. */
static int ident_cmp(const struct dcpi_profile *a, const struct dcpi_profile *b)
{
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = strcmp(a->path, b->path)))
		return c;
	if (a->build_id_len != b->build_id_len)
		return a->build_id_len < b->build_id_len ? -1 : 1;
	if ((c = memcmp(a->build_id, b->build_id, a->build_id_len)))
		return c;
	if (!a->build_id_len && a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return 0;
}

/* By identity, then set order (so a group's entries are in set order). */
static int ident_sort(const void *x, const void *y)
{
	const struct ident *a = x, *b = y;
	int c = ident_cmp(a->p, b->p);

	return c ? c : a->i < b->i ? -1 : a->i > b->i;
}

static int group_first(const void *x, const void *y)
{
	const struct dcpi_image_group *a = x, *b = y;

	return a->idx[0] < b->idx[0] ? -1 : a->idx[0] > b->idx[0];
}

/* The chosen entries grouped by identity, groups in order of their first
 * entry: a sort, O(n log n) (a scan of the groups per entry was
 * quadratic: 36 s for dcpiprof on 65,000 profiles). */
static int group_all(struct dcpi_selection *s, const struct dcpi_profset *set)
{
	struct ident *v = malloc((s->nchosen ? s->nchosen : 1) * sizeof(*v));
	size_t n = 0, cap = 0;
	int err = 0;

	if (!v)
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t i = 0; i < set->n; i++)
		if (s->chosen[i])
			v[n++] = (struct ident){ &set->v[i].prof, i };
	qsort(v, n, sizeof(*v), ident_sort);
	for (size_t k = 0; k < n && !err; k++) {
		struct dcpi_image_group *g;

		if (!k || ident_cmp(v[k - 1].p, v[k].p)) {
			if ((err = DCPI_GROW(s->groups, cap, s->ngroups + 1, SIZE_MAX, "images")))
				break;
			memset(&s->groups[s->ngroups++], 0, sizeof(*g));
		}
		g = &s->groups[s->ngroups - 1];
		if ((err = DCPI_GROW(g->idx, g->cap, g->n + 1, SIZE_MAX, "profiles")))
			break;
		g->idx[g->n++] = v[k].i;
		g->samples += profile_samples(v[k].p);
	}
	free(v);
	if (!err && s->ngroups)
		qsort(s->groups, s->ngroups, sizeof(*s->groups), group_first);
	return err;
}

int dcpi_select(const struct dcpi_profset *set, const char *const *args, size_t nargs,
		struct dcpi_selection *out)
{
	struct arg *a;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->chosen = calloc(set->n ? set->n : 1, 1);
	out->matched = calloc(nargs ? nargs : 1, sizeof(*out->matched));
	a = calloc(nargs ? nargs : 1, sizeof(*a));
	if (!out->chosen || !out->matched || !a) {
		free(a);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nargs; i++) {
		a[i].want = args[i];
		a[i].real = strchr(args[i], '/') ? realpath(args[i], NULL) : NULL;
	}
	for (size_t i = 0; i < set->n; i++) {
		if (!named(out, &set->v[i].prof, a, nargs))
			continue;
		out->chosen[i] = 1;
		out->nchosen++;
	}
	for (size_t i = 0; i < nargs; i++)
		free(a[i].real);
	free(a);
	err = group_all(out, set);
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
