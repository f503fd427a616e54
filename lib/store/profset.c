/* Choosing and loading profiles from the database: see dcpi/profset.h. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/error.h"
#include "dcpi/profset.h"
#include "dcpi/stats.h"
#include "internal.h"

void dcpi_profset_free(struct dcpi_profset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].file);
		free(s->v[i].platdir);
		dcpi_profile_free(&s->v[i].prof);
	}
	free(s->v);
	dcpi_db_names_free(s->epochs, s->nepochs);
	dcpi_db_names_free(s->hosts, s->nhosts);
	for (unsigned e = 0; e < s->nevents; e++)
		free(s->events[e]);
	free(s->first_bad);
	free(s->first_bad_stats);
	for (size_t i = 0; i < s->nbad_kept; i++)
		free(s->bad[i]);
	free(s->bad);
	memset(s, 0, sizeof(*s));
}

/* The next KEY=VALUE of a selection at *p, into key and val; *p moves past
 * it and its comma.  0, or -1 when it is not KEY=VALUE. */
static int next_pair(const char **p, char *key, size_t klen, char *val, size_t vlen)
{
	size_t n = strcspn(*p, ","), k = strcspn(*p, "=");

	if (k >= n || k == 0 || k >= klen || n - k - 1 >= vlen)
		return -1;
	snprintf(key, klen, "%.*s", (int)k, *p);
	snprintf(val, vlen, "%.*s", (int)(n - k - 1), *p + k + 1);
	*p += n + ((*p)[n] == ',');
	return 0;
}

int dcpi_profset_label_has(const char *label, const char *spec)
{
	char key[64], want[512], have[512];

	for (const char *p = spec; *p;)
		if (next_pair(&p, key, sizeof(key), want, sizeof(want)) ||
		    dcpi_profile_label_value(label, key, have, sizeof(have)) || strcmp(have, want))
			return 0;
	return 1;
}

/* Keep the profiles keep() says yes to; the rest are freed, their samples
 * taken out of the sums. */
static void keep_if(struct dcpi_profset *s, int (*keep)(const struct dcpi_profile *p,
							const void *arg), const void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct dcpi_profset_entry *e = &s->v[i];

		if (keep(&e->prof, arg)) {
			s->v[n++] = *e;
			continue;
		}
		for (unsigned k = 0; k < e->prof.nevents; k++)
			s->sum[e->col[k]] -= e->prof.events[k].total;
		free(e->file);
		free(e->platdir);
		dcpi_profile_free(&e->prof);
	}
	s->n = n;
}

static int labelled_so(const struct dcpi_profile *p, const void *spec)
{
	return p->label && dcpi_profset_label_has(p->label, spec);
}

static int of_pid(const struct dcpi_profile *p, const void *pid)
{
	return p->pid == *(const int64_t *)pid;
}

int dcpi_profset_keep_label(struct dcpi_profset *s, const char *spec)
{
	char key[64], val[512];

	for (const char *p = spec; *p;)
		if (next_pair(&p, key, sizeof(key), val, sizeof(val)))
			return dcpi_error(EINVAL, "'%s' is not KEY=VALUE[,KEY=VALUE...] (comm=xz, "
					  "uid=1000, cgroup=/system.slice/ssh.service)", spec);
	if (!*spec)
		return dcpi_error(EINVAL, "an empty label selection");
	keep_if(s, labelled_so, spec);
	return 0;
}

int dcpi_profset_keep_pid(struct dcpi_profset *s, int64_t pid)
{
	keep_if(s, of_pid, &pid);
	return 0;
}

int dcpi_profset_event(const struct dcpi_profset *s, const char *name)
{
	for (unsigned e = 0; e < s->nevents; e++)
		if (!strcmp(s->events[e], name))
			return (int)e;
	return -1;
}

double dcpi_profset_cpu_seconds(const struct dcpi_profset *s, unsigned col)
{
	if (col >= s->nevents)
		return 0;
	for (unsigned k = 0; k < s->stats.nevents && k < DCPI_MAX_EVENTS; k++)
		if (!strcmp(s->stats.ev[k].name, s->events[col]))
			return (double)s->stats.ev[k].time_enabled / 1e9;
	return 0;
}

static int add_event(struct dcpi_profset *s, const struct dcpi_profile_event *pe, unsigned *col)
{
	int e = dcpi_profset_event(s, pe->name);

	if (e < 0) {
		if (s->nevents == DCPI_MAX_EVENTS)
			return dcpi_error(E2BIG, "more than %d distinct events", DCPI_MAX_EVENTS);
		e = (int)s->nevents;
		s->events[e] = strdup(pe->name);
		if (!s->events[e])
			return dcpi_error(ENOMEM, "out of memory");
		s->periods[e] = pe->period;
		s->nevents++;
	} else if (s->periods[e] != pe->period) {
		s->periods[e] = 0; /* mixed periods: samples are not comparable as time */
	}
	*col = (unsigned)e;
	return 0;
}

/* One more statistics file's clock into the set's (see clock_mixed). */
static void add_clock(struct dcpi_profset *s, uint64_t khz)
{
	double mean = (double)s->stats.clock_khz;

	if (s->clock_mixed)
		return;
	if (!khz || (s->nstats && !mean) ||
	    (s->nstats && fabs((double)khz - mean) > DCPI_PROFSET_CLOCK_SPREAD * mean)) {
		s->clock_mixed = 1;
		s->stats.clock_khz = 0;
		return;
	}
	s->stats.clock_khz = (uint64_t)((mean * (double)s->nstats + (double)khz) /
					(double)(s->nstats + 1) + 0.5);
}

/* One more statistics file's events into the set's, matched by name:
 * samples and times add up (time_enabled is CPU time monitored). */
static void add_stats_events(struct dcpi_profset *s, const struct dcpi_epoch_stats *st)
{
	for (unsigned i = 0; i < st->nevents && i < DCPI_MAX_EVENTS; i++) {
		const struct dcpi_stats_event *e = &st->ev[i];
		unsigned k;

		for (k = 0; k < s->stats.nevents; k++)
			if (!strcmp(s->stats.ev[k].name, e->name))
				break;
		if (k == DCPI_MAX_EVENTS)
			continue;
		if (k == s->stats.nevents) {
			s->stats.ev[k] = *e;
			s->stats.nevents++;
			continue;
		}
		s->stats.ev[k].samples += e->samples; /* stats_overflow checked */
		s->stats.ev[k].time_enabled += e->time_enabled;
		s->stats.ev[k].time_running += e->time_running;
		if (s->stats.ev[k].period != e->period)
			s->stats.ev[k].period = 0;
	}
}

/* The wall time one epoch's statistics cover, from the earliest start to
 * the latest merge of its hosts. */
struct span {
	int64_t start, updated;
};

/* One refused file more: the first one's message is kept (it names the file). */
static void refuse(size_t *n, char **first)
{
	if (!(*n)++)
		*first = strdup(dcpi_errmsg());
}

/* Whether st's counts would carry one of the set's sums past 2^64; the
 * set's lost share is lost / (samples + lost), so that sum too. */
static int stats_overflow(const struct dcpi_profset *s, const struct dcpi_epoch_stats *st)
{
	const struct dcpi_epoch_stats *t = &s->stats;
	uint64_t samples = dcpi_sat_add(t->samples, st->samples), lost = dcpi_sat_add(t->lost, st->lost);

	if (samples == UINT64_MAX || lost == UINT64_MAX || dcpi_sat_add(samples, lost) == UINT64_MAX ||
	    dcpi_sat_add(t->throttled, st->throttled) == UINT64_MAX ||
	    dcpi_sat_add(t->images, st->images) == UINT64_MAX ||
	    dcpi_sat_add(t->label_values, st->label_values) == UINT64_MAX ||
	    dcpi_sat_add(t->label_other, st->label_other) == UINT64_MAX)
		return 1;
	for (unsigned i = 0; i < st->nevents && i < DCPI_MAX_EVENTS; i++)
		for (unsigned k = 0; k < t->nevents; k++)
			if (!strcmp(t->ev[k].name, st->ev[i].name) &&
			    (dcpi_sat_add(t->ev[k].samples, st->ev[i].samples) == UINT64_MAX ||
			     dcpi_sat_add(t->ev[k].time_enabled, st->ev[i].time_enabled) == UINT64_MAX ||
			     dcpi_sat_add(t->ev[k].time_running, st->ev[i].time_running) == UINT64_MAX))
				return 1;
	return 0;
}

static void add_stats_file(struct dcpi_profset *s, const char *path, struct span *sp)
{
	struct dcpi_epoch_stats st;
	int err = dcpi_stats_read(path, &st);

	if (err == -ENOENT)
		return;
	if (!err && stats_overflow(s, &st))
		err = dcpi_error(EOVERFLOW, "%s: its counts and those of the statistics read "
				 "before add past 2^64", path);
	if (err) {
		refuse(&s->nbad_stats, &s->first_bad_stats);
		return;
	}
	if (st.start > 0 && (!sp->start || st.start < sp->start))
		sp->start = st.start;
	if (st.updated > sp->updated)
		sp->updated = st.updated;
	add_stats_events(s, &st);
	s->stats.collector_cpu_ns = dcpi_sat_add(s->stats.collector_cpu_ns, st.collector_cpu_ns);
	if (st.sample_cost_ns && st.samples) { /* the mean over samples of what one cost */
		double w = (double)s->cost_samples;

		s->stats.sample_cost_ns = (uint64_t)(((double)s->stats.sample_cost_ns * w +
						      (double)st.sample_cost_ns * (double)st.samples) /
						     (w + (double)st.samples) + 0.5);
		s->cost_samples += st.samples;
	}
	/* (stats_overflow: none of these sums wraps; unknown and kernel are
	   at most samples) */
	s->stats.samples += st.samples;
	s->stats.lost += st.lost;
	s->stats.throttled += st.throttled;
	s->stats.unknown += st.unknown;
	s->stats.kernel += st.kernel;
	s->stats.images += st.images;
	s->stats.label_values += st.label_values;
	s->stats.label_other += st.label_other;
	if (st.labels[0] && !s->stats.labels[0])
		snprintf(s->stats.labels, sizeof(s->stats.labels), "%s", st.labels);
	/* the span the statistics cover: the earliest start, the latest merge */
	if (st.start > 0 && (!s->stats.start || st.start < s->stats.start))
		s->stats.start = st.start;
	if (st.updated > s->stats.updated)
		s->stats.updated = st.updated;
	add_clock(s, st.clock_khz);
	s->nstats++;
}

/* The statistics of platdir: epoch.stats and, in a directory several hosts
 * pool (see dcpi/db.h), each host's epoch@HOST.stats; only host's when
 * host is not NULL. */
static void add_stats(struct dcpi_profset *s, const char *platdir, const char *host,
		      struct span *sp)
{
	char path[4200];
	struct dirent *de;
	DIR *d;

	if (host) {
		if (!dcpi_db_stats_path(path, sizeof(path), platdir, host))
			add_stats_file(s, path, sp);
		return;
	}
	if (!(d = opendir(platdir)))
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (strcmp(de->d_name, "epoch.stats") &&
		    (strncmp(de->d_name, "epoch@", 6) || n < 12 || strcmp(de->d_name + n - 6, ".stats")))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", platdir, de->d_name) < (int)sizeof(path))
			add_stats_file(s, path, sp);
	}
	closedir(d);
}

/* One unreadable profile more (dcpi_errmsg() says why, naming it). */
static void refuse_profile(struct dcpi_profset *s)
{
	char *msg;

	refuse(&s->nbad, &s->first_bad);
	if (!DCPI_GROW(s->bad, s->bad_cap, s->nbad_kept + 1, SIZE_MAX, "profiles") &&
	    (msg = strdup(dcpi_errmsg())))
		s->bad[s->nbad_kept++] = msg;
}

const char *dcpi_profset_bad_of(const struct dcpi_profset *s, const char *image)
{
	const char *want = strrchr(image, '/') ? strrchr(image, '/') + 1 : image;
	size_t n = strlen(want);

	for (size_t i = 0; i < s->nbad_kept; i++) {
		const char *m = s->bad[i], *colon = strstr(m, ".prof: "), *base;

		if (!colon)
			continue;
		/* the file's base name, NAME-HASH.prof, ends at colon */
		for (base = colon; base > m && base[-1] != '/'; base--)
			;
		if (n && !strncmp(base, want, n) && base[n] == '-')
			return m;
	}
	return NULL;
}

/* Whether e's totals would carry a column's sum past 2^64 (two events of
 * one name share a column): every report sums subsets of these counts. */
static int sum_overflows(const struct dcpi_profset *s, const struct dcpi_profset_entry *e)
{
	uint64_t sum[DCPI_MAX_EVENTS];

	memcpy(sum, s->sum, sizeof(sum));
	for (unsigned i = 0; i < e->prof.nevents; i++) {
		sum[e->col[i]] = dcpi_sat_add(sum[e->col[i]], e->prof.events[i].total);
		if (sum[e->col[i]] == UINT64_MAX)
			return 1;
	}
	return 0;
}

static int add_profile(struct dcpi_profset *s, const char *file, const char *platdir,
		       const char *host)
{
	struct dcpi_profset_entry *e;
	int err;

	if ((err = DCPI_GROW(s->v, s->cap, s->n + 1, SIZE_MAX, "profiles")))
		return err;
	e = &s->v[s->n];
	memset(e, 0, sizeof(*e));
	dcpi_profile_init(&e->prof);
	if (dcpi_profile_read(file, &e->prof)) {
		refuse_profile(s);
		return 0;
	}
	if (host && (!e->prof.platform || strcmp(e->prof.platform, host))) {
		dcpi_profile_free(&e->prof); /* another host's, in a pooled directory */
		return 0;
	}
	for (unsigned i = 0; i < e->prof.nevents; i++) {
		err = add_event(s, &e->prof.events[i], &e->col[i]);
		if (err) {
			dcpi_profile_free(&e->prof);
			return err;
		}
	}
	if (sum_overflows(s, e)) {
		dcpi_error(EOVERFLOW, "%s: its samples and those of the profiles read before add "
			   "past 2^64", file);
		refuse_profile(s);
		dcpi_profile_free(&e->prof);
		return 0;
	}
	for (unsigned i = 0; i < e->prof.nevents; i++)
		s->sum[e->col[i]] += e->prof.events[i].total;
	e->file = strdup(file);
	e->platdir = strdup(platdir);
	if (!e->file || !e->platdir) {
		free(e->file);
		free(e->platdir);
		dcpi_profile_free(&e->prof);
		return dcpi_error(ENOMEM, "out of memory");
	}
	s->n++;
	return 0;
}

static int add_host(struct dcpi_profset *s, const char *name)
{
	int err;

	for (size_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i], name))
			return 0;
	if ((err = DCPI_GROW(s->hosts, s->hosts_cap, s->nhosts + 1, SIZE_MAX, "hosts")))
		return err;
	if (!(s->hosts[s->nhosts] = strdup(name)))
		return dcpi_error(ENOMEM, "out of memory");
	s->nhosts++;
	return 0;
}

/* The platform directory of host in an epoch whose directories are
 * hosts[]: its own, or the one DB/hosts pools it into (then *pooled).
 * NULL when neither is there. */
static const char *dir_of(const char *db, const char *host, char **hosts, size_t nh,
			  char *plat, size_t len, int *pooled)
{
	*pooled = 0;
	for (size_t i = 0; i < nh; i++)
		if (!strcmp(hosts[i], host))
			return hosts[i];
	if (dcpi_db_platform(db, host, plat, len) || !strcmp(plat, host))
		return NULL;
	for (size_t i = 0; i < nh; i++)
		if (!strcmp(hosts[i], plat)) {
			*pooled = 1;
			return hosts[i];
		}
	return NULL;
}

/* The hosts of one epoch to read: the one asked, or this host, or all. */
static int load_epoch(struct dcpi_profset *s, const char *db, const char *epoch,
		      const char *host)
{
	char **hosts = NULL, myhost[DCPI_HOST_MAX], platdir[4096], plat[DCPI_HOST_MAX];
	const char *dir = NULL;
	struct span sp = { 0, 0 };
	size_t nh = 0;
	int err, want_all = host && !strcmp(host, "all"), pooled = 0;

	err = dcpi_db_hosts(db, epoch, &hosts, &nh);
	if (err)
		return err;
	if (!host && !dcpi_db_host(myhost, sizeof(myhost))) {
		dir = dir_of(db, myhost, hosts, nh, plat, sizeof(plat), &pooled);
		host = dir ? myhost : NULL; /* no profiles of ours: all hosts */
		want_all = !dir;
	} else if (!want_all && host) {
		dir = dir_of(db, host, hosts, nh, plat, sizeof(plat), &pooled);
	}
	for (size_t i = 0; i < nh && !err; i++) {
		char **files;
		size_t nf;

		if (!want_all && (!dir || strcmp(hosts[i], dir)))
			continue;
		err = dcpi_db_path(platdir, sizeof(platdir), db, epoch, hosts[i], NULL);
		if (!err)
			err = add_host(s, pooled ? host : hosts[i]);
		if (!err)
			err = dcpi_db_profiles(platdir, &files, &nf);
		if (err)
			break;
		add_stats(s, platdir, pooled ? host : NULL, &sp);
		for (size_t f = 0; f < nf && !err; f++)
			err = add_profile(s, files[f], platdir, pooled ? host : NULL);
		dcpi_db_names_free(files, nf);
	}
	dcpi_db_names_free(hosts, nh);
	if (sp.start > 0 && sp.updated > sp.start)
		s->seconds += (double)(sp.updated - sp.start);
	return err;
}

/* The latest epoch with a directory of host (NULL: this one), or pooled
 * into another's by DB/hosts: a daemon adopts an epoch another host's
 * daemon started only at its next merge, and until then its samples are
 * still in the epoch before.  The newest epoch of all when host is "all"
 * or has no directory anywhere. */
static size_t latest_of(const char *db, char **all, size_t n, const char *host)
{
	char myhost[DCPI_HOST_MAX], plat[DCPI_HOST_MAX];

	if (host && !strcmp(host, "all"))
		return n - 1;
	if (!host) {
		if (dcpi_db_host(myhost, sizeof(myhost)))
			return n - 1;
		host = myhost;
	}
	for (size_t i = n; i-- > 0;) {
		char **hosts = NULL;
		size_t nh = 0;
		int pooled, found;

		if (dcpi_db_hosts(db, all[i], &hosts, &nh))
			continue;
		found = dir_of(db, host, hosts, nh, plat, sizeof(plat), &pooled) != NULL;
		dcpi_db_names_free(hosts, nh);
		if (found)
			return i;
	}
	return n - 1;
}

/* The start of epoch name (its "YYYYMMDDTHHMMSSZ" prefix), or -1. */
static time_t epoch_start(const char *name)
{
	struct tm tm = { 0 };
	const char *end = strptime(name, "%Y%m%dT%H%M%SZ", &tm);

	return end && (!*end || *end == '-') ? timegm(&tm) : (time_t)-1;
}

/* One time of a spec: "YYYY-MM-DD[THH[:MM[:SS]]]" or "HH:MM[:SS]" (today),
 * local time; *len is how long the precision given spans. */
static int parse_time(const char *a, time_t now, time_t *t, time_t *len)
{
	static const struct {
		const char *fmt;
		time_t len;
	} forms[] = {
		{ "%Y-%m-%dT%H:%M:%S", 1 }, { "%Y-%m-%dT%H:%M", 60 }, { "%Y-%m-%dT%H", 3600 },
		{ "%Y-%m-%d", 86400 }, { "%H:%M:%S", 1 }, { "%H:%M", 60 },
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct tm tm;
		const char *end;

		localtime_r(&now, &tm); /* today, for the forms without a date */
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		end = strptime(a, forms[i].fmt, &tm);
		if (!end || *end)
			continue;
		tm.tm_isdst = -1;
		if ((*t = mktime(&tm)) == (time_t)-1)
			return -1;
		*len = forms[i].len;
		return 0;
	}
	return -1;
}

int dcpi_profset_time_range(const char *spec, time_t now, time_t *from, time_t *to)
{
	const char *dots = strstr(spec, "..");
	char a[64];
	time_t len, t2, len2;
	unsigned long long n;
	char unit;
	int used = 0;

	if (sscanf(spec, "last-%llu%c%n", &n, &unit, &used) == 2 && !spec[used] && n > 0) {
		static const char units[] = "smhd";
		static const time_t secs[] = { 1, 60, 3600, 86400 };
		const char *u = strchr(units, unit);

		if (!u || n > (unsigned long long)(now / secs[u - units]))
			return dcpi_error(EINVAL, "-epoch %s: want last-N with N s, m, h or d", spec);
		*from = now - (time_t)n * secs[u - units];
		*to = now + 1;
		return 0;
	}
	if (dots) {
		if ((size_t)(dots - spec) >= sizeof(a))
			return dcpi_error(EINVAL, "-epoch %s: not a time range", spec);
		snprintf(a, sizeof(a), "%.*s", (int)(dots - spec), spec);
		if (parse_time(a, now, from, &len) || parse_time(dots + 2, now, &t2, &len2))
			return dcpi_error(EINVAL, "-epoch %s: want FROM..TO, each YYYY-MM-DD[THH[:MM]] "
					  "or HH:MM", spec);
		*to = t2;
		if (*to <= *from)
			return dcpi_error(EINVAL, "-epoch %s: the range ends before it starts", spec);
		return 0;
	}
	if (parse_time(spec, now, from, &len))
		return dcpi_error(EINVAL, "-epoch %s: not an epoch name, 'latest', 'all', a time "
				  "(YYYY-MM-DD[THH[:MM]], HH:MM), a range (FROM..TO) or last-N{s,m,h,d}",
				  spec);
	*to = *from + len;
	return 0;
}

/* The epochs of all[0..n) (oldest first) that overlap [from, to): each
 * lasts until the next one starts, the newest until now. */
static int epochs_between(struct dcpi_profset *s, char **all, size_t n, time_t from, time_t to,
			  time_t now)
{
	for (size_t i = 0; i < n; i++) {
		time_t start = epoch_start(all[i]), end = i + 1 < n ? epoch_start(all[i + 1]) : now + 1;

		if (start == (time_t)-1 || end == (time_t)-1 || end <= from || start >= to)
			continue;
		s->epochs[s->nepochs++] = all[i];
		all[i] = NULL;
	}
	return s->nepochs ? 0 : -ENOENT;
}

static int choose_epochs(struct dcpi_profset *s, const char *db, const char *epoch,
			 const char *host)
{
	char **all;
	size_t n;
	int err = dcpi_db_epochs(db, &all, &n);

	if (err)
		return err;
	if (n == 0) {
		free(all);
		return dcpi_error(ENOENT, "%s: no epochs in this database", db);
	}
	if (epoch && !strcmp(epoch, "all")) {
		s->epochs = all;
		s->nepochs = n;
		return 0;
	}
	s->epochs = calloc(n, sizeof(char *));
	if (!s->epochs) {
		dcpi_db_names_free(all, n);
		return dcpi_error(ENOMEM, "out of memory");
	}
	if (epoch && strcmp(epoch, "latest") && epoch_start(epoch) == (time_t)-1) {
		time_t from, to, now = time(NULL);
		char a[32], b[32];
		struct tm tm;

		err = dcpi_profset_time_range(epoch, now, &from, &to);
		if (!err && epochs_between(s, all, n, from, to, now)) {
			strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%S", localtime_r(&from, &tm));
			strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", localtime_r(&to, &tm));
			err = dcpi_error(ENOENT, "%s: no epoch between %s and %s (-epoch %s)", db, a, b,
					 epoch);
		}
		dcpi_db_names_free(all, n);
		return err;
	}
	if (!epoch || !strcmp(epoch, "latest")) {
		size_t k = latest_of(db, all, n, host);

		s->epochs[0] = all[k];
		all[k] = NULL;
	} else {
		for (size_t i = 0; i < n && !s->epochs[0]; i++)
			if (!strcmp(all[i], epoch)) {
				s->epochs[0] = all[i];
				all[i] = NULL;
			}
	}
	dcpi_db_names_free(all, n);
	if (!s->epochs[0])
		return dcpi_error(ENOENT, "%s: no epoch '%s' (dcpictl status names the current "
				  "one; -epoch all sums them)", db, epoch);
	s->nepochs = 1;
	return 0;
}

int dcpi_profset_load(const char *db, const char *epoch, const char *host,
		      struct dcpi_profset *s)
{
	int err;

	memset(s, 0, sizeof(*s));
	err = choose_epochs(s, db, epoch, host);
	for (size_t i = 0; !err && i < s->nepochs; i++)
		err = load_epoch(s, db, s->epochs[i], host);
	if (!err && host && strcmp(host, "all") && s->nhosts == 0)
		err = dcpi_error(ENOENT, "%s: no profiles of host '%s' in the chosen epoch(s)", db,
				 host);
	if (err)
		dcpi_profset_free(s);
	return err;
}
