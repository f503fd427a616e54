/* Value profiles: see dcpi/vprof.h and dcpiformat(5), VALUE PROFILES. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/hex.h"
#include "dcpi/profset.h"
#include "dcpi/vprof.h"
#include "internal.h"

static uint64_t sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

const char *const dcpi_vprof_source_names[DCPI_SRC_N] = {
	"L1", "LFB", "L2", "L3", "L4", "RAM", "remote-RAM", "remote-cache", "PMEM", "CXL", "IO",
	"uncached", "other",
};

/* ---- the load index: (image, off) -> load + 1 ------------------------------------ */

struct vindex {
	uint32_t *slot;
	size_t cap;             /* a power of 2, or 0 */
};

static uint64_t load_hash(uint32_t img, uint64_t off)
{
	return dcpi_hash64(off ^ (uint64_t)img * 0x9e3779b97f4a7c15ull);
}

static struct vindex *vindex(const struct dcpi_vprof *v)
{
	return v->index;
}

const struct dcpi_vprof_load *dcpi_vprof_load(const struct dcpi_vprof *v, uint32_t img,
					      uint64_t off)
{
	const struct vindex *x = vindex(v);

	if (!x || !x->cap)
		return NULL;
	for (size_t i = load_hash(img, off) & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1)) {
		const struct dcpi_vprof_load *l = &v->loads[x->slot[i] - 1];

		if (l->image == img && l->off == off)
			return l;
	}
	return NULL;
}

/* Room for one more load in the index (rebuilt at twice the size when half
 * full). */
static int index_room(struct dcpi_vprof *v)
{
	struct vindex *x = vindex(v);
	size_t cap;
	uint32_t *t;

	if (2 * (v->nloads + 1) <= x->cap)
		return 0;
	cap = x->cap ? 2 * x->cap : 1024;
	if (!(t = calloc(cap, sizeof(*t))))
		return dcpi_error(ENOMEM, "out of memory");
	for (size_t k = 0; k < v->nloads; k++) {
		size_t i = load_hash(v->loads[k].image, v->loads[k].off) & (cap - 1);

		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = (uint32_t)k + 1;
	}
	free(x->slot);
	x->slot = t;
	x->cap = cap;
	return 0;
}

/* A new load (image, off), zeroed, indexed: 0 and *out (valid until the
 * next one is added), or the error. */
static int load_add(struct dcpi_vprof *v, uint32_t img, uint64_t off,
		    struct dcpi_vprof_load **out)
{
	struct vindex *x = vindex(v);
	struct dcpi_vprof_load *l;
	size_t i;
	int err;

	if (v->nloads >= DCPI_VPROF_LOADS_MAX)
		return dcpi_error(EFBIG, "more than %u loads", DCPI_VPROF_LOADS_MAX);
	if ((err = index_room(v)) ||
	    (err = DCPI_GROW(v->loads, v->loads_cap, v->nloads + 1, SIZE_MAX, "loads")))
		return err;
	l = &v->loads[v->nloads++];
	memset(l, 0, sizeof(*l));
	l->image = img;
	l->off = off;
	for (i = load_hash(img, off) & (x->cap - 1); x->slot[i]; i = (i + 1) & (x->cap - 1))
		;
	x->slot[i] = (uint32_t)v->nloads;
	*out = l;
	return 0;
}

/* ---- building ------------------------------------------------------------------- */

int dcpi_vprof_new(struct dcpi_vprof **out)
{
	struct dcpi_vprof *v = calloc(1, sizeof(*v));

	if (!v || !(v->index = calloc(1, sizeof(struct vindex)))) {
		free(v);
		return dcpi_error(ENOMEM, "out of memory");
	}
	v->pid = -1;
	*out = v;
	return 0;
}

void dcpi_vprof_free(struct dcpi_vprof *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nimages; i++)
		free(v->images[i].path);
	free(v->images);
	free(v->loads);
	if (v->index)
		free(vindex(v)->slot);
	free(v->index);
	free(v);
}

long dcpi_vprof_image(const struct dcpi_vprof *v, const char *path, const uint8_t *id,
		      size_t len)
{
	for (size_t i = 0; i < v->nimages; i++)
		if (v->images[i].build_id_len == len && !strcmp(v->images[i].path, path) &&
		    (!len || !memcmp(v->images[i].build_id, id, len)))
			return (long)i;
	return -1;
}

static int image_add(struct dcpi_vprof *v, const char *path, const uint8_t *id, size_t len)
{
	struct dcpi_vprof_image *im;
	int err;

	if (v->nimages >= DCPI_VPROF_IMAGES_MAX)
		return dcpi_error(EFBIG, "more than %u images", DCPI_VPROF_IMAGES_MAX);
	if ((err = DCPI_GROW(v->images, v->images_cap, v->nimages + 1, SIZE_MAX, "images")))
		return err;
	im = &v->images[v->nimages];
	memset(im, 0, sizeof(*im));
	if (!(im->path = strdup(path)))
		return dcpi_error(ENOMEM, "out of memory");
	if (len)
		memcpy(im->build_id, id, len);
	im->build_id_len = (uint32_t)len;
	v->nimages++;
	return 0;
}

static int reason_add(struct dcpi_vprof *v, const char *name, uint64_t n, int once);

void dcpi_vprof_skip(struct dcpi_vprof *v, const char *reason, uint64_t n)
{
	if (reason_add(v, reason, n, 0))
		reason_add(v, "other", n, 0);
}

int dcpi_vprof_top_bin(const struct dcpi_vprof *v, const struct dcpi_vprof_load *l)
{
	int best = -1;

	for (size_t k = 0; k < v->bins.n; k++)
		if (l->bins[k] && (best < 0 || l->bins[k] > l->bins[best]))
			best = (int)k;
	return best;
}

int dcpi_vprof_invariant(const struct dcpi_vprof_load *l, uint64_t *value)
{
	if (l->nvalues != 1 || l->verr || l->samples < DCPI_VPROF_INVARIANT_MIN ||
	    l->values[0].count != l->samples)
		return 0;
	*value = l->values[0].value;
	return 1;
}

void dcpi_vprof_clear(struct dcpi_vprof *v)
{
	struct vindex *x = vindex(v);

	for (size_t i = 0; i < v->nimages; i++)
		free(v->images[i].path);
	v->nimages = v->nloads = 0;
	if (x && x->cap)
		memset(x->slot, 0, x->cap * sizeof(*x->slot));
	v->signals = 0;
	v->nskipped = 0;
	v->processes = 0;
}

static int reason_add(struct dcpi_vprof *v, const char *name, uint64_t n, int once)
{
	size_t i;

	for (i = 0; i < v->nskipped && strcmp(v->skipped[i].name, name); i++)
		;
	if (i < v->nskipped) {
		if (once)
			return -1;
		v->skipped[i].n = v->skipped[i].n > UINT64_MAX - n ? UINT64_MAX : v->skipped[i].n + n;
		return 0;
	}
	if (v->nskipped == DCPI_VPROF_REASONS_MAX)
		return -1;
	snprintf(v->skipped[v->nskipped].name, sizeof(v->skipped[0].name), "%s", name);
	v->skipped[v->nskipped++].n = n;
	return 0;
}

/* ---- parsing -------------------------------------------------------------------- */

enum { ST_HEAD, ST_BINS, ST_IMAGES, ST_LOADS, ST_END };

struct pstate {
	struct dcpi_vprof *v;
	unsigned line;
	int state;
	unsigned seen;                   /* header keys seen, by bit */
	char bins_text[DCPI_BINS_MAX * 80];
	size_t bins_len, nbins;
	struct dcpi_vprof_load *last;    /* the load values belong to */
	int bound_seen;                  /* its bound line was read */
};

enum { H_KIND = 1, H_PID = 2, H_COMM = 4, H_PROCS = 8, H_TSC = 16, H_TIMING = 32,
       H_PERIOD = 64, H_SIGNALS = 128 };
#define H_NEEDED (H_KIND | H_TSC | H_TIMING | H_PERIOD | H_SIGNALS)

static int bad(struct pstate *p, const char *what)
{
	return dcpi_error(EBADMSG, "line %u: %s", p->line, what);
}

static int name_ok(const char *s, int lower_only)
{
	size_t n = strlen(s);

	if (!n || n > DCPI_VPROF_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (lower_only ? !((*s >= 'a' && *s <= 'z') || *s == '_')
			       : (unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* The escaped PATH (\\ and \n) unescaped in place: 0, or -1. */
static int unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		if (s[1] == '\\')
			*o++ = '\\';
		else if (s[1] == 'n')
			*o++ = '\n';
		else
			return -1;
		s++;
	}
	*o = 0;
	return 0;
}

static int build_id(const char *t, uint8_t *id, size_t *len)
{
	size_t n = strlen(t);

	*len = 0;
	if (!strcmp(t, "-"))
		return 0;
	if (!n || n % 2 || n / 2 > DCPI_BUILD_ID_MAX)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		char two[3] = { t[i], t[i + 1], 0 };
		uint64_t b;

		if (dcpi_hex_u64(two, &b))
			return -1;
		id[i / 2] = (uint8_t)b;
	}
	*len = n / 2;
	return 0;
}

static int head_key(struct pstate *p, unsigned bit, char **tok, size_t n, uint64_t *val)
{
	if (p->state != ST_HEAD)
		return bad(p, "a header line after the bins");
	if (p->seen & bit)
		return bad(p, "a header line given twice");
	if (n != 2)
		return bad(p, "KEY VALUE wanted");
	if (val && dcpi_dec_u64(tok[1], val))
		return bad(p, "a decimal number wanted");
	p->seen |= bit;
	return 0;
}

static int line_bin(struct pstate *p, char **tok, size_t n)
{
	uint64_t i;
	int len;

	if (p->state == ST_HEAD) {
		if ((p->seen & H_NEEDED) != H_NEEDED)
			return bad(p, "kind, tsc_hz, timing, period and signals come before the bins");
		if ((p->seen & (H_PID | H_PROCS)) == (H_PID | H_PROCS))
			return bad(p, "pid and processes both given");
		if (p->seen & H_COMM && !(p->seen & H_PID))
			return bad(p, "comm without pid");
		p->state = ST_BINS;
	}
	if (p->state != ST_BINS)
		return bad(p, "a bin after the images");
	if (n != 6 || dcpi_dec_u64(tok[1], &i) || i != p->nbins)
		return bad(p, "bin I MIN MAX REP NAME wanted, I counting from 0");
	if (p->nbins == DCPI_BINS_MAX)
		return bad(p, "more than 32 bins");
	len = snprintf(p->bins_text + p->bins_len, sizeof(p->bins_text) - p->bins_len,
		       "%s %s %s %s\n", tok[2], tok[3], tok[4], tok[5]);
	if (len < 0 || (size_t)len >= sizeof(p->bins_text) - p->bins_len)
		return bad(p, "a bin too long");
	p->bins_len += (size_t)len;
	p->nbins++;
	return 0;
}

static int end_bins(struct pstate *p)
{
	if (p->state == ST_BINS) {
		if (dcpi_bins_parse(p->bins_text, p->bins_len, &p->v->bins))
			return dcpi_error(EBADMSG, "line %u: the bins: %s", p->line, dcpi_errmsg());
		p->state = ST_IMAGES;
	}
	return 0;
}

static int line_image(struct pstate *p, char *rest)
{
	char *sp1, *sp2;
	uint8_t id[DCPI_BUILD_ID_MAX];
	size_t len;
	uint64_t i;
	int err;

	if ((err = end_bins(p)))
		return err;
	if (p->state != ST_IMAGES)
		return bad(p, p->state == ST_HEAD ? "an image before the bins"
						  : "an image after the loads");
	if (!(sp1 = strchr(rest, ' ')) || !(sp2 = strchr(sp1 + 1, ' ')))
		return bad(p, "image I BUILDID PATH wanted");
	*sp1 = *sp2 = 0;
	if (dcpi_dec_u64(rest, &i) || i != p->v->nimages)
		return bad(p, "image I counting from 0 wanted");
	if (build_id(sp1 + 1, id, &len))
		return bad(p, "a BUILDID of hex byte pairs, or '-', wanted");
	if (unescape(sp2 + 1) || sp2[1] != '/')
		return bad(p, "an absolute PATH wanted (escapes \\\\ and \\n only)");
	if (dcpi_vprof_image(p->v, sp2 + 1, id, len) >= 0)
		return bad(p, "an image given twice");
	if ((err = image_add(p->v, sp2 + 1, id, len)))
		return err == -ENOMEM ? err : bad(p, dcpi_errmsg());
	return 0;
}

static int line_bound(struct pstate *p, char **tok, size_t n)
{
	struct dcpi_vprof_load *l = p->last;
	uint64_t img, off, e;

	if (p->state != ST_LOADS || !l)
		return bad(p, "a bound before any load");
	if (n != 4 || dcpi_dec_u64(tok[1], &img) || dcpi_hex_u64(tok[2], &off) ||
	    dcpi_dec_u64(tok[3], &e))
		return bad(p, "bound I OFF ERR wanted (OFF in hex)");
	if (img != l->image || off != l->off)
		return bad(p, "a bound not of the load before it");
	if (p->bound_seen || e > l->samples)
		return bad(p, "a bound given twice, or past SAMPLES");
	l->verr = e;
	p->bound_seen = 1;
	return 0;
}

/* The load before the next: its default bound where none was given. */
static void load_done(struct pstate *p)
{
	struct dcpi_vprof_load *l = p->last;

	if (l && !p->bound_seen && l->nvalues == DCPI_VPROF_VALUES)
		l->verr = l->values[DCPI_VPROF_VALUES - 1].count;
	p->bound_seen = 0;
}

static int line_load(struct pstate *p, char **tok, size_t n)
{
	struct dcpi_vprof *v = p->v;
	struct dcpi_vprof_load *l;
	uint64_t img, off, x, sum;
	int err;

	if ((err = end_bins(p)))
		return err;
	if (p->state == ST_HEAD)
		return bad(p, "a load before the bins");
	p->state = ST_LOADS;
	if (n != 6 + v->bins.n)
		return bad(p, "load I OFF SAMPLES CYCLES OUTSIDE and a count per bin wanted");
	if (dcpi_dec_u64(tok[1], &img) || img >= v->nimages)
		return bad(p, "a load of no image");
	if (dcpi_hex_u64(tok[2], &off))
		return bad(p, "OFF in hex wanted");
	load_done(p);
	if (dcpi_vprof_load(v, (uint32_t)img, off))
		return bad(p, "a load given twice");
	if ((err = load_add(v, (uint32_t)img, off, &l)))
		return err == -ENOMEM ? err : bad(p, dcpi_errmsg());
	p->last = l;
	if (dcpi_dec_u64(tok[3], &l->samples) || dcpi_dec_u64(tok[4], &l->cycles) ||
	    dcpi_dec_u64(tok[5], &l->outside))
		return bad(p, "SAMPLES, CYCLES and OUTSIDE are decimal numbers");
	if (!l->samples || l->samples > DCPI_VPROF_COUNT_MAX)
		return bad(p, "a load of no samples, or more than 2^62");
	sum = l->outside;
	for (size_t b = 0; b < v->bins.n; b++) {
		if (dcpi_dec_u64(tok[6 + b], &x))
			return bad(p, "a bin's count is a decimal number");
		l->bins[b] = x;
		if (x > l->samples - sum)
			return bad(p, "OUTSIDE and the bins' counts add up to more than SAMPLES");
		sum += x;
	}
	if (sum != l->samples)
		return bad(p, "OUTSIDE and the bins' counts do not add up to SAMPLES");
	return 0;
}

static int line_value(struct pstate *p, char **tok, size_t n)
{
	struct dcpi_vprof_load *l = p->last;
	uint64_t img, off, val, cnt;
	unsigned i;

	if (p->state != ST_LOADS || !l)
		return bad(p, "a value before any load");
	if (n != 5 || dcpi_dec_u64(tok[1], &img) || dcpi_hex_u64(tok[2], &off) ||
	    dcpi_hex_u64(tok[3], &val) || dcpi_dec_u64(tok[4], &cnt))
		return bad(p, "value I OFF VALUE COUNT wanted (OFF and VALUE in hex)");
	if (img != l->image || off != l->off)
		return bad(p, "a value not of the load before it");
	if (p->bound_seen)
		return bad(p, "a value after its load's bound");
	if (l->nvalues == DCPI_VPROF_VALUES)
		return bad(p, "more than 16 values of one load");
	if (!cnt || cnt > l->samples)
		return bad(p, "a value's COUNT not in 1..SAMPLES");
	for (i = 0; i < l->nvalues; i++)
		if (l->values[i].value == val)
			return bad(p, "a value given twice");
	/* kept most frequent first */
	for (i = l->nvalues; i > 0 && l->values[i - 1].count < cnt; i--)
		l->values[i] = l->values[i - 1];
	l->values[i] = (struct dcpi_vprof_value){ val, cnt };
	l->nvalues++;
	return 0;
}

static int line_source(struct pstate *p, char **tok, size_t n)
{
	struct dcpi_vprof_load *l = p->last;
	uint64_t img, off, cnt, sum = 0;
	int k;

	if (p->state != ST_LOADS || !l)
		return bad(p, "a source before any load");
	if (n != 5 || dcpi_dec_u64(tok[1], &img) || dcpi_hex_u64(tok[2], &off) ||
	    dcpi_dec_u64(tok[4], &cnt))
		return bad(p, "source I OFF LEVEL COUNT wanted (OFF in hex)");
	if (img != l->image || off != l->off)
		return bad(p, "a source not of the load before it");
	for (k = 0; k < DCPI_SRC_N && strcmp(tok[3], dcpi_vprof_source_names[k]); k++)
		;
	if (k == DCPI_SRC_N)
		return bad(p, "an unknown source LEVEL");
	if (l->sources[k])
		return bad(p, "a source given twice");
	for (int i = 0; i < DCPI_SRC_N; i++)
		sum += l->sources[i];
	if (!cnt || cnt > l->samples - sum)
		return bad(p, "sources' counts not in 1..SAMPLES in all");
	l->sources[k] = cnt;
	return 0;
}

static int parse_line(struct pstate *p, char *buf)
{
	struct dcpi_vprof *v = p->v;
	char *tok[6 + DCPI_BINS_MAX + 1], *save = NULL, *t;
	size_t n = 0;
	uint64_t x;
	int err;

	if (p->state == ST_END)
		return bad(p, "a line after end");
	if (!strncmp(buf, "image ", 6))
		return line_image(p, buf + 6); /* its PATH may hold spaces */
	for (t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == sizeof(tok) / sizeof(tok[0]))
			return bad(p, "too many fields");
		tok[n++] = t;
	}
	if (!n)
		return bad(p, "an empty record");
	if (!strcmp(tok[0], "kind")) {
		if ((err = head_key(p, H_KIND, tok, n, NULL)))
			return err;
		if (!name_ok(tok[1], 1))
			return bad(p, "a kind of lower-case letters wanted");
		snprintf(v->kind, sizeof(v->kind), "%s", tok[1]);
	} else if (!strcmp(tok[0], "pid")) {
		if ((err = head_key(p, H_PID, tok, n, &x)))
			return err;
		if (!x || x > INT32_MAX)
			return bad(p, "a pid from 1 wanted");
		v->pid = (int64_t)x;
		v->processes = 1;
	} else if (!strcmp(tok[0], "comm")) {
		if ((err = head_key(p, H_COMM, tok, n, NULL)))
			return err;
		if (!name_ok(tok[1], 0))
			return bad(p, "a comm of 1 to 31 printable characters wanted");
		snprintf(v->comm, sizeof(v->comm), "%s", tok[1]);
	} else if (!strcmp(tok[0], "processes")) {
		if ((err = head_key(p, H_PROCS, tok, n, &v->processes)))
			return err;
	} else if (!strcmp(tok[0], "tsc_hz")) {
		return head_key(p, H_TSC, tok, n, &v->tsc_hz);
	} else if (!strcmp(tok[0], "timing")) {
		return head_key(p, H_TIMING, tok, n, &v->timing);
	} else if (!strcmp(tok[0], "period")) {
		return head_key(p, H_PERIOD, tok, n, &v->period);
	} else if (!strcmp(tok[0], "signals")) {
		return head_key(p, H_SIGNALS, tok, n, &v->signals);
	} else if (!strcmp(tok[0], "skipped")) {
		if (p->state != ST_HEAD)
			return bad(p, "a header line after the bins");
		if (n != 3 || !name_ok(tok[1], 1) || dcpi_dec_u64(tok[2], &x))
			return bad(p, "skipped REASON N wanted");
		if (reason_add(v, tok[1], x, 1))
			return bad(p, "a reason given twice, or more than 16");
	} else if (!strcmp(tok[0], "bin")) {
		return line_bin(p, tok, n);
	} else if (!strcmp(tok[0], "load")) {
		return line_load(p, tok, n);
	} else if (!strcmp(tok[0], "value")) {
		return line_value(p, tok, n);
	} else if (!strcmp(tok[0], "source")) {
		return line_source(p, tok, n);
	} else if (!strcmp(tok[0], "bound")) {
		return line_bound(p, tok, n);
	} else if (!strcmp(tok[0], "end")) {
		if (n != 1)
			return bad(p, "end alone wanted");
		if ((err = end_bins(p)))
			return err;
		if (p->state == ST_HEAD)
			return bad(p, "end before the bins");
		load_done(p);
		p->state = ST_END;
	} else {
		return bad(p, "an unknown record");
	}
	return 0;
}

int dcpi_vprof_parse(const char *text, size_t len, struct dcpi_vprof **out)
{
	struct pstate *p;
	size_t at = 0;
	char *buf;
	int err = 0;

	*out = NULL;
	if (len > DCPI_VPROF_FILE_MAX)
		return dcpi_error(EFBIG, "larger than %u bytes", DCPI_VPROF_FILE_MAX);
	if (!(p = calloc(1, sizeof(*p))) || !(buf = malloc(DCPI_VPROF_LINE_MAX + 1))) {
		free(p);
		return dcpi_error(ENOMEM, "out of memory");
	}
	if ((err = dcpi_vprof_new(&p->v)))
		goto out;
	while (!err && at < len) {
		size_t end = at;

		while (end < len && text[end] != '\n')
			end++;
		p->line++;
		if (end == len) {
			err = bad(p, "no newline at the end");
			break;
		}
		if (end - at > DCPI_VPROF_LINE_MAX) {
			err = bad(p, "a line longer than 16384 bytes");
			break;
		}
		memcpy(buf, text + at, end - at);
		buf[end - at] = 0;
		if (memchr(buf, 0, end - at)) {
			err = bad(p, "a NUL byte");
			break;
		}
		at = end + 1;
		if (p->line == 1) {
			if (strcmp(buf, "dcpi-vprof 1"))
				err = bad(p, "not a value profile (\"dcpi-vprof 1\" wanted)");
			continue;
		}
		if (!buf[0] || buf[0] == '#')
			continue;
		err = parse_line(p, buf);
	}
	if (!err && p->line == 0)
		err = dcpi_error(EBADMSG, "empty");
	if (!err && p->state != ST_END)
		err = dcpi_error(EBADMSG, "truncated: no end line");
out:
	if (err)
		dcpi_vprof_free(p->v);
	else
		*out = p->v;
	free(buf);
	free(p);
	return err;
}

int dcpi_vprof_read(const char *path, struct dcpi_vprof **out)
{
	uint8_t *data;
	size_t len;
	int err = dcpi_file_read(path, DCPI_VPROF_FILE_MAX, &data, &len);

	*out = NULL;
	if (err)
		return err;
	err = dcpi_vprof_parse((const char *)data, len, out);
	free(data);
	if (err && err != -ENOMEM)
		return dcpi_error(-err, "%s: %s", path, dcpi_errmsg());
	return err;
}

/* ---- adding samples ------------------------------------------------------------ */

/* Space-Saving: a value in the list is counted; a new one takes a free
 * entry, or replaces the least counted and inherits its count + 1. */
static void hot_add(struct dcpi_vprof_load *l, uint64_t value)
{
	unsigned i, min = 0;

	for (i = 0; i < l->nvalues && l->values[i].value != value; i++)
		if (l->values[i].count < l->values[min].count)
			min = i;
	if (i < l->nvalues)
		l->values[i].count++;
	else if (l->nvalues < DCPI_VPROF_VALUES)
		l->values[i = l->nvalues++] = (struct dcpi_vprof_value){ value, 1 };
	else
		l->values[i = min] = (struct dcpi_vprof_value){ value, l->values[min].count + 1 };
	while (i > 0 && l->values[i - 1].count < l->values[i].count) { /* most frequent first */
		struct dcpi_vprof_value t = l->values[i - 1];

		l->values[i - 1] = l->values[i];
		l->values[i--] = t;
	}	/* a full list's counts are over by at most its least count */
	if (l->nvalues == DCPI_VPROF_VALUES && l->values[DCPI_VPROF_VALUES - 1].count > l->verr)
		l->verr = l->values[DCPI_VPROF_VALUES - 1].count;
}

int dcpi_vprof_add(struct dcpi_vprof *v, const char *path, const uint8_t *id, size_t len,
		   uint64_t off, uint64_t cycles, int has_value, uint64_t value, int src)
{
	long img = dcpi_vprof_image(v, path, id, len);
	struct dcpi_vprof_load *l;
	int b, err;

	if (img < 0) {
		if ((err = image_add(v, path, id, len)))
			return err;
		img = (long)v->nimages - 1;
	}
	l = (struct dcpi_vprof_load *)dcpi_vprof_load(v, (uint32_t)img, off);
	if (!l && (err = load_add(v, (uint32_t)img, off, &l)))
		return err;
	l->samples = sat(l->samples, 1);
	l->cycles = sat(l->cycles, cycles);
	if ((b = dcpi_bins_find(&v->bins, cycles)) >= 0)
		l->bins[b] = sat(l->bins[b], 1);
	else
		l->outside = sat(l->outside, 1);
	if (has_value)
		hot_add(l, value);
	if (src >= 0 && src < DCPI_SRC_N)
		l->sources[src] = sat(l->sources[src], 1);
	return 0;
}

/* ---- merging -------------------------------------------------------------------- */

static int by_count(const void *a, const void *b)
{
	const struct dcpi_vprof_value *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

static void values_join(struct dcpi_vprof_load *l, const struct dcpi_vprof_load *f)
{
	struct dcpi_vprof_value all[2 * DCPI_VPROF_VALUES];
	unsigned n = l->nvalues;

	memcpy(all, l->values, n * sizeof(all[0]));
	for (unsigned i = 0; i < f->nvalues; i++) {
		unsigned k;

		for (k = 0; k < n && all[k].value != f->values[i].value; k++)
			;
		if (k < n)
			all[k].count = sat(all[k].count, f->values[i].count);
		else
			all[n++] = f->values[i];
	}
	qsort(all, n, sizeof(all[0]), by_count);
	/* a value one list kept and the other did not may have had up to that
	   one's bound there: the bounds add, and a value dropped here may have
	   up to its count more */
	l->verr = sat(l->verr, f->verr);
	if (n > DCPI_VPROF_VALUES)
		l->verr = sat(l->verr, all[DCPI_VPROF_VALUES].count);
	l->nvalues = n < DCPI_VPROF_VALUES ? n : DCPI_VPROF_VALUES;
	memcpy(l->values, all, l->nvalues * sizeof(all[0]));
}

static int same_bins(const struct dcpi_bins *a, const struct dcpi_bins *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].min != b->v[i].min || a->v[i].max != b->v[i].max ||
		    a->v[i].rep != b->v[i].rep || strcmp(a->v[i].name, b->v[i].name))
			return 0;
	return 1;
}

static uint64_t agree(uint64_t into, uint64_t from, int first)
{
	return first || into == from ? from : 0;
}

int dcpi_vprof_merge(struct dcpi_vprof *into, const struct dcpi_vprof *from)
{
	int first = !into->kind[0];
	uint32_t *map;
	int err = 0;

	if (!first && strcmp(into->kind, from->kind))
		return dcpi_error(EINVAL, "a value profile of kind %s with one of kind %s",
				  from->kind, into->kind);
	if (!first && !same_bins(&into->bins, &from->bins))
		return dcpi_error(EINVAL, "value profiles of other latency bins");
	/* what would not fit is refused before anything changes */
	{
		size_t added = 0;

		for (size_t i = 0; i < from->nloads; i++) {
			const struct dcpi_vprof_load *f = &from->loads[i], *l = NULL;
			const struct dcpi_vprof_image *im = &from->images[f->image];
			long k = dcpi_vprof_image(into, im->path, im->build_id, im->build_id_len);

			if (k >= 0)
				l = dcpi_vprof_load(into, (uint32_t)k, f->off);
			if (!l)
				added++;
			else if (l->samples > DCPI_VPROF_COUNT_MAX - f->samples)
				return dcpi_error(EOVERFLOW, "a load's samples would pass 2^62");
		}
		if (added > DCPI_VPROF_LOADS_MAX - into->nloads)
			return dcpi_error(EFBIG, "more than %u loads", DCPI_VPROF_LOADS_MAX);
	}
	if (!(map = calloc(from->nimages + 1, sizeof(*map))))
		return dcpi_error(ENOMEM, "out of memory");
	/* images first: loads name them */
	for (size_t i = 0; !err && i < from->nimages; i++) {
		const struct dcpi_vprof_image *im = &from->images[i];
		long k = dcpi_vprof_image(into, im->path, im->build_id, im->build_id_len);

		if (k < 0 && !(err = image_add(into, im->path, im->build_id, im->build_id_len)))
			k = (long)into->nimages - 1;
		map[i] = (uint32_t)k;
	}
	for (size_t i = 0; !err && i < from->nloads; i++) {
		const struct dcpi_vprof_load *f = &from->loads[i];
		struct dcpi_vprof_load *l =
			(struct dcpi_vprof_load *)dcpi_vprof_load(into, map[f->image], f->off);

		if (!l && (err = load_add(into, map[f->image], f->off, &l)))
			break;
		l->samples = sat(l->samples, f->samples);
		l->cycles = sat(l->cycles, f->cycles);
		l->outside = sat(l->outside, f->outside);
		for (size_t b = 0; b < from->bins.n; b++)
			l->bins[b] = sat(l->bins[b], f->bins[b]);
		for (int k = 0; k < DCPI_SRC_N; k++)
			l->sources[k] = sat(l->sources[k], f->sources[k]);
		values_join(l, f);
	}
	free(map);
	if (err)
		return err;
	if (first) {
		snprintf(into->kind, sizeof(into->kind), "%s", from->kind);
		into->bins = from->bins;
	}
	into->tsc_hz = agree(into->tsc_hz, from->tsc_hz, first);
	into->timing = agree(into->timing, from->timing, first);
	into->period = agree(into->period, from->period, first);
	into->signals = sat(into->signals, from->signals);
	into->processes = sat(into->processes, from->pid >= 0 ? 1 : from->processes);
	for (size_t i = 0; i < from->nskipped; i++)
		dcpi_vprof_skip(into, from->skipped[i].name, from->skipped[i].n);
	return 0;
}

static int merge_file(const char *path, struct dcpi_vprof *into, size_t *nfiles, size_t *nbad,
		      char **first_bad);

static int is_process_file(const char *name)
{
	size_t n = strlen(name);

	return n > 9 && !strncmp(name, "vp.", 3) && !strcmp(name + n - 6, ".vprof");
}

int dcpi_vprof_merge_dir(const char *dir, struct dcpi_vprof *into, size_t *nfiles, size_t *nbad,
			 char **first_bad)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	*nfiles = *nbad = 0;
	*first_bad = NULL;
	if (!d)
		return dcpi_error(errno, "%s: %s", dir, strerror(errno));
	while (!err && (de = readdir(d))) {
		char path[4200];

		if (!is_process_file(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		err = merge_file(path, into, nfiles, nbad, first_bad);
	}
	closedir(d);
	return err;
}

/* Merge the file at path into into, counting it in *nfiles or *nbad. */
static int merge_file(const char *path, struct dcpi_vprof *into, size_t *nfiles, size_t *nbad,
		      char **first_bad)
{
	struct dcpi_vprof *v;
	int err = dcpi_vprof_read(path, &v);

	if (!err) {
		err = dcpi_vprof_merge(into, v);
		if (err && err != -ENOMEM)
			dcpi_error_prefix(-err, "%s", path);
		dcpi_vprof_free(v);
	}
	if (err && err != -ENOMEM) {
		(*nbad)++;
		if (!*first_bad)
			*first_bad = strdup(dcpi_errmsg());
		return 0;
	}
	if (!err)
		(*nfiles)++;
	return err;
}

/* A platform directory's value-profile files: epoch.vprof, and
 * epoch@HOST.vprof of a chosen host where hosts share the directory. */
static int of_dir(const struct dcpi_profset *set, const char *platdir, struct dcpi_vprof *into,
		  size_t *nfiles, size_t *nbad, char **first_bad)
{
	DIR *d = opendir(platdir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0; /* gone since the set was loaded */
	while (!err && (de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		char path[4200];
		int chosen = !set->nhosts;

		if (strcmp(n, "epoch.vprof") &&
		    (strncmp(n, "epoch@", 6) || len < 13 || strcmp(n + len - 6, ".vprof")))
			continue;
		for (size_t h = 0; !chosen && h < set->nhosts; h++)
			chosen = n[5] == '.' || (strlen(set->hosts[h]) == len - 12 &&
						 !strncmp(n + 6, set->hosts[h], len - 12));
		if (!chosen)
			continue;
		snprintf(path, sizeof(path), "%s/%s", platdir, n);
		err = merge_file(path, into, nfiles, nbad, first_bad);
	}
	closedir(d);
	return err;
}

int dcpi_vprof_of_set(const struct dcpi_profset *set, struct dcpi_vprof **out, size_t *nfiles,
		      size_t *nbad, char **first_bad)
{
	int err = dcpi_vprof_new(out);

	*nfiles = *nbad = 0;
	*first_bad = NULL;
	for (size_t i = 0; !err && i < set->n; i++) {
		int seen = 0;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(set->v[k].platdir, set->v[i].platdir);
		if (!seen)
			err = of_dir(set, set->v[i].platdir, *out, nfiles, nbad, first_bad);
	}
	if (err) {
		dcpi_vprof_free(*out);
		*out = NULL;
	}
	return err;
}

int dcpi_vprof_merge_file(const char *path, const struct dcpi_vprof *v, unsigned mode)
{
	struct dcpi_vprof *all = NULL, *old = NULL;
	struct dcpi_buf b = DCPI_BUF_INIT;
	char aside[4200];
	struct stat st;
	int err = dcpi_vprof_new(&all);

	if (err)
		return err;
	if (!lstat(path, &st) && !S_ISREG(st.st_mode))
		err = -EBADMSG; /* not a file of ours */
	else if (!(err = dcpi_vprof_read(path, &old)) && v->kind[0] &&
		 (strcmp(old->kind, v->kind) || !same_bins(&old->bins, &v->bins)))
		err = -EINVAL; /* of another kind or other bins: not to be added to */
	else if (!err)
		err = dcpi_vprof_merge(all, old);
	if (err == -EBADMSG || err == -EFBIG || err == -EINVAL || err == -EOVERFLOW) {
		/* kept for a human; a fresh file */
		snprintf(aside, sizeof(aside), "%s.corrupt", path);
		rename(path, aside);
		dcpi_vprof_free(all);
		all = NULL;
		err = dcpi_vprof_new(&all);
	} else if (err == -ENOENT) {
		err = 0;
	}
	if (!err)
		err = dcpi_vprof_merge(all, v);
	if (!err)
		err = dcpi_vprof_format(all, &b);
	if (!err && b.len > DCPI_VPROF_FILE_MAX)
		err = dcpi_error(EFBIG, "%s: would pass %u bytes", path, DCPI_VPROF_FILE_MAX);
	if (!err)
		err = dcpi_file_write_atomic(path, b.data, b.len, mode);
	dcpi_buf_release(&b);
	dcpi_vprof_free(old);
	dcpi_vprof_free(all);
	return err;
}

int dcpi_vprof_path(char *out, size_t len, const char *platdir, const char *host)
{
	return dcpi_db_epoch_file(out, len, platdir, host, "vprof");
}

/* ---- writing -------------------------------------------------------------------- */

static int put_path(struct dcpi_buf *out, const char *s)
{
	int err = 0;

	for (; !err && *s; s++)
		err = *s == '\\' ? dcpi_buf_put(out, "\\\\", 2)
		      : *s == '\n' ? dcpi_buf_put(out, "\\n", 2) : dcpi_buf_put(out, s, 1);
	return err;
}

int dcpi_vprof_format(const struct dcpi_vprof *v, struct dcpi_buf *out)
{
	int err = dcpi_buf_printf(out, "dcpi-vprof 1\nkind %s\n", v->kind);

	if (!err && v->pid >= 0)
		err = dcpi_buf_printf(out, "pid %" PRId64 "\n", v->pid);
	if (!err && v->pid >= 0 && v->comm[0])
		err = dcpi_buf_printf(out, "comm %s\n", v->comm);
	if (!err && v->pid < 0)
		err = dcpi_buf_printf(out, "processes %" PRIu64 "\n", v->processes);
	if (!err)
		err = dcpi_buf_printf(out, "tsc_hz %" PRIu64 "\ntiming %" PRIu64 "\nperiod %" PRIu64
				      "\nsignals %" PRIu64 "\n", v->tsc_hz, v->timing, v->period,
				      v->signals);
	for (size_t i = 0; !err && i < v->nskipped; i++)
		err = dcpi_buf_printf(out, "skipped %s %" PRIu64 "\n", v->skipped[i].name,
				      v->skipped[i].n);
	for (size_t i = 0; !err && i < v->bins.n; i++)
		err = dcpi_buf_printf(out, "bin %zu %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", i,
				      v->bins.v[i].min, v->bins.v[i].max, v->bins.v[i].rep,
				      v->bins.v[i].name);
	for (size_t i = 0; !err && i < v->nimages; i++) {
		char id[2 * DCPI_BUILD_ID_MAX + 1] = "-";

		if (v->images[i].build_id_len)
			dcpi_hex(v->images[i].build_id, v->images[i].build_id_len, id);
		if (!(err = dcpi_buf_printf(out, "image %zu %s ", i, id)) &&
		    !(err = put_path(out, v->images[i].path)))
			err = dcpi_buf_put(out, "\n", 1);
	}
	for (size_t i = 0; !err && i < v->nloads; i++) {
		const struct dcpi_vprof_load *l = &v->loads[i];

		err = dcpi_buf_printf(out, "load %" PRIu32 " %" PRIx64 " %" PRIu64 " %" PRIu64
				      " %" PRIu64, l->image, l->off, l->samples, l->cycles,
				      l->outside);
		for (size_t b = 0; !err && b < v->bins.n; b++)
			err = dcpi_buf_printf(out, " %" PRIu64, l->bins[b]);
		if (!err)
			err = dcpi_buf_put(out, "\n", 1);
		for (unsigned k = 0; !err && k < l->nvalues; k++)
			err = dcpi_buf_printf(out, "value %" PRIu32 " %" PRIx64 " %" PRIx64 " %" PRIu64
					      "\n", l->image, l->off, l->values[k].value,
					      l->values[k].count);
		if (!err && l->verr != (l->nvalues == DCPI_VPROF_VALUES ?
					l->values[DCPI_VPROF_VALUES - 1].count : 0))
			err = dcpi_buf_printf(out, "bound %" PRIu32 " %" PRIx64 " %" PRIu64 "\n", l->image,
					      l->off, l->verr);
		for (int k = 0; !err && k < DCPI_SRC_N; k++)
			if (l->sources[k])
				err = dcpi_buf_printf(out, "source %" PRIu32 " %" PRIx64 " %s %" PRIu64
						      "\n", l->image, l->off,
						      dcpi_vprof_source_names[k], l->sources[k]);
	}
	return err ? err : dcpi_buf_put(out, "end\n", 4);
}

int dcpi_vprof_write(const char *path, const struct dcpi_vprof *v, unsigned mode)
{
	struct dcpi_buf b = { 0 };
	int err = dcpi_vprof_format(v, &b);

	if (!err)
		err = dcpi_file_write_atomic(path, b.data, b.len, mode);
	dcpi_buf_release(&b);
	return err;
}
