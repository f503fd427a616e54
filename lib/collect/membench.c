/* Load latencies by pointer chase: see dcpi/membench.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dcpi/error.h"
#include "dcpi/membench.h"

#if defined(__x86_64__)
#include <x86intrin.h>

#define LINE 64

/* A serialised read of the time-stamp counter: the loads before it done,
 * none after it started. */
static inline uint64_t tsc(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One cycle through every line of buf[0, bytes) in random order (Sattolo:
 * a single cycle, so the chase visits them all), then the least of five
 * timings of loads/5 dependent loads. */
static double chase(char *buf, uint64_t bytes, uint64_t loads, uint32_t *idx)
{
	size_t n = bytes / LINE;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ bytes;
	double t[5];
	void **p;

	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rnd(&seed) % i;
		uint32_t x = idx[i];

		idx[i] = idx[j];
		idx[j] = x;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(buf + (size_t)idx[i] * LINE) = buf + (size_t)idx[(i + 1) % n] * LINE;
	p = (void **)(buf + (size_t)idx[0] * LINE);
	for (size_t i = 0; i < n; i++) /* warm: every line once */
		p = *p;
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = tsc();

		for (uint64_t i = 0; i < loads / 5; i++)
			p = *(void **)p;
		t[k] = (double)(tsc() - t0) / (double)(loads / 5);
	}
	__asm__ volatile("" : : "r"(p) : "memory"); /* the chase is kept */
	qsort(t, 5, sizeof(t[0]), cmp_double);
	return t[0]; /* the least disturbed (by other work, interrupts) */
}

/* The levels: runs of points within DCPI_MEMBENCH_STEP of the run's first;
 * a lone point between two runs is the step itself and no level. */
static int levels(struct dcpi_membench *m)
{
	size_t i = 0;

	m->nlevels = 0;
	while (i < m->npoints) {
		size_t j = i + 1;
		double v[DCPI_MEMBENCH_MAX_POINTS];

		while (j < m->npoints && m->pt[j].cycles < m->pt[i].cycles * DCPI_MEMBENCH_STEP &&
		       m->pt[j].cycles > m->pt[i].cycles / DCPI_MEMBENCH_STEP)
			j++;
		/* a lone point is a step, but at either end of the curve (the
		   largest working set may be the only one past the caches) */
		if (j - i >= 2 || i == 0 || j == m->npoints) {
			struct dcpi_mem_level *l;

			if (m->nlevels == DCPI_MEMBENCH_MAX_LEVELS)
				return dcpi_error(ERANGE, "more than %d levels: a curve too noisy to "
						  "read", DCPI_MEMBENCH_MAX_LEVELS);
			l = &m->lv[m->nlevels++];
			for (size_t k = i; k < j; k++)
				v[k - i] = m->pt[k].cycles;
			qsort(v, j - i, sizeof(v[0]), cmp_double);
			l->cycles = (j - i) % 2 ? v[(j - i) / 2]
						: (v[(j - i) / 2 - 1] + v[(j - i) / 2]) / 2;
			l->lo = m->pt[i].bytes;
			l->hi = m->pt[j - 1].bytes;
		}
		i = j;
	}
	/* two levels less than a step apart (a lone point between them, in the
	   noise of a machine others share) are one */
	for (size_t k = 0; k + 1 < m->nlevels;) {
		struct dcpi_mem_level *a = &m->lv[k], *b = &m->lv[k + 1];
		double v[DCPI_MEMBENCH_MAX_POINTS];
		size_t n = 0;

		if (b->cycles >= a->cycles * DCPI_MEMBENCH_STEP) {
			k++;
			continue;
		}
		for (size_t p = 0; p < m->npoints; p++)
			if (m->pt[p].bytes >= a->lo && m->pt[p].bytes <= b->hi)
				v[n++] = m->pt[p].cycles;
		qsort(v, n, sizeof(v[0]), cmp_double);
		a->cycles = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		a->hi = b->hi;
		memmove(b, b + 1, (m->nlevels - k - 2) * sizeof(*b));
		m->nlevels--;
	}
	if (m->nlevels < 2)
		return dcpi_error(ERANGE, "the latencies show %zu level%s from 4 KiB to %llu KiB: "
				  "give a larger working set", m->nlevels, m->nlevels == 1 ? "" : "s",
				  (unsigned long long)(m->npoints ? m->pt[m->npoints - 1].bytes >> 10
								  : 0));
	for (size_t k = 0; k < m->nlevels; k++)
		snprintf(m->lv[k].name, sizeof(m->lv[k].name), k + 1 == m->nlevels ? "memory" : "L%zu",
			 k + 1);
	return 0;
}

int dcpi_membench_run(const struct dcpi_membench_opts *o, struct dcpi_membench *m)
{
	uint64_t max = o && o->max_bytes ? o->max_bytes : DCPI_MEMBENCH_DEFAULT_BYTES;
	uint64_t loads = o && o->loads ? o->loads : 1000000;
	size_t huge = 2u << 20;
	uint32_t *idx;
	char *map, *buf;

	memset(m, 0, sizeof(*m));
	if (max < (64u << 10) || max > (64ull << 30))
		return dcpi_error(EINVAL, "a working set of 64 KiB to 64 GiB wanted");
	if (loads < 5)
		loads = 5;
	m->loads = loads;
	map = mmap(NULL, max + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return dcpi_error(ENOMEM, "cannot map %llu MiB to chase through",
				  (unsigned long long)(max >> 20));
	/* 2 MiB pages where the kernel gives them: fewer TLB misses, so the
	   steps are the caches' */
	buf = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(buf, max, MADV_HUGEPAGE);
	if (!(idx = malloc((max / LINE) * sizeof(*idx)))) {
		munmap(map, max + huge);
		return dcpi_error(ENOMEM, "out of memory");
	}
	for (uint64_t w = 4096; w <= max && m->npoints < DCPI_MEMBENCH_MAX_POINTS; w *= 2) {
		m->pt[m->npoints].bytes = w;
		m->pt[m->npoints].cycles = chase(buf, w, loads, idx);
		m->npoints++;
	}
	free(idx);
	munmap(map, max + huge);
	return levels(m);
}

#else

int dcpi_membench_run(const struct dcpi_membench_opts *o, struct dcpi_membench *m)
{
	(void)o;
	memset(m, 0, sizeof(*m));
	return dcpi_error(ENOTSUP, "timing loads needs the x86-64 time-stamp counter");
}

#endif

int dcpi_membench_bins(const struct dcpi_membench *m, struct dcpi_bins *b)
{
	memset(b, 0, sizeof(*b));
	if (m->nlevels < 2 || m->nlevels > DCPI_BINS_MAX)
		return dcpi_error(EINVAL, "no levels to make bins of");
	for (size_t k = 0; k < m->nlevels; k++) {
		struct dcpi_bin *x = &b->v[k];
		uint64_t rep = (uint64_t)llround(m->lv[k].cycles);

		if (k && m->lv[k].cycles <= m->lv[k - 1].cycles)
			return dcpi_error(ERANGE, "level %s (%.1f cycles) is not slower than %s (%.1f)",
					  m->lv[k].name, m->lv[k].cycles, m->lv[k - 1].name,
					  m->lv[k - 1].cycles);
		x->rep = rep ? rep : 1;
		x->min = k ? b->v[k - 1].max + 1 : 0;
		x->max = k + 1 == m->nlevels
				 ? UINT64_MAX
				 : (uint64_t)floor(sqrt(m->lv[k].cycles * m->lv[k + 1].cycles));
		if (x->max < x->rep)
			x->max = x->rep;
		if (x->min > x->rep)
			return dcpi_error(ERANGE, "levels %s and %s are too close to tell apart",
					  m->lv[k - 1].name, m->lv[k].name);
		snprintf(x->name, sizeof(x->name), "%s", m->lv[k].name);
	}
	b->n = m->nlevels;
	return 0;
}
