/* The epoch statistics file (epoch.stats): plain "key value" lines so a
 * person can read it and the tools can show it.  See dcpi/db.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/buf.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/stats.h"
#include "dcpi/version.h"

#define STATS_MAX (1 << 20) /* a stats file is a few hundred bytes */

/* Refuse what dcpi_stats_parse would read back differently: a line break
 * in a value ends its line, a space ends an event name, a sign is not a
 * digit, and more than DCPI_MAX_EVENTS events do not fit. */
static int stats_check(const struct dcpi_epoch_stats *st)
{
	if (memchr(st->epoch, '\n', strnlen(st->epoch, sizeof(st->epoch))) ||
	    memchr(st->platform, '\n', strnlen(st->platform, sizeof(st->platform))) ||
	    strnlen(st->epoch, sizeof(st->epoch)) == sizeof(st->epoch) ||
	    strnlen(st->platform, sizeof(st->platform)) == sizeof(st->platform))
		return dcpi_error(EINVAL, "epoch or platform name with a line break or too long");
	if (st->start < 0 || st->updated < 0)
		return dcpi_error(EINVAL, "negative epoch time");
	if (st->nevents > DCPI_MAX_EVENTS)
		return dcpi_error(EINVAL, "%u events, at most %d", st->nevents, DCPI_MAX_EVENTS);
	for (uint32_t i = 0; i < st->nevents; i++) {
		const char *name = st->ev[i].name;
		size_t n = strnlen(name, sizeof(st->ev[i].name));

		if (n == 0 || n == sizeof(st->ev[i].name) || strpbrk(name, " \n"))
			return dcpi_error(EINVAL, "event name '%.64s' is empty, too long or has a "
					  "space or line break", name);
	}
	return 0;
}

int dcpi_stats_write(const char *path, const struct dcpi_epoch_stats *st, unsigned mode)
{
	struct dcpi_buf b = DCPI_BUF_INIT;
	int err = stats_check(st);

	if (err)
		return dcpi_error_prefix(err, "%s", path);
	err = dcpi_buf_printf(&b,
		"# dcpi epoch statistics\n"
		"writer dcpi %s\n"
		"epoch %s\nplatform %s\nstart %" PRId64 "\nupdated %" PRId64 "\n"
		"cpus %u\nsamples %" PRIu64 "\nlost %" PRIu64 "\nthrottled %" PRIu64 "\n"
		"unknown %" PRIu64 "\nkernel %" PRIu64 "\nimages %" PRIu64 "\n",
		dcpi_version(), st->epoch, st->platform, st->start, st->updated, st->ncpus, st->samples,
		st->lost, st->throttled, st->unknown, st->kernel, st->images);
	if (!err && st->clock_khz)
		err = dcpi_buf_printf(&b, "clock_khz %" PRIu64 "\n", st->clock_khz);
	if (!err && st->collector_cpu_ns)
		err = dcpi_buf_printf(&b, "collector_cpu_ns %" PRIu64 "\n", st->collector_cpu_ns);
	if (!err && st->sample_cost_ns)
		err = dcpi_buf_printf(&b, "sample_cost_ns %" PRIu64 "\n", st->sample_cost_ns);
	if (!err && st->stack_copies_cut)
		err = dcpi_buf_printf(&b, "stack_copies_cut %" PRIu64 "\n", st->stack_copies_cut);
	if (!err && st->labels[0])
		err = dcpi_buf_printf(&b, "labels %s\nlabel_values %" PRIu64 "\nlabel_other %"
				      PRIu64 "\n", st->labels, st->label_values, st->label_other);
	for (uint32_t i = 0; !err && i < st->nevents; i++) {
		const struct dcpi_stats_event *e = &st->ev[i];

		err = dcpi_buf_printf(&b, "event %s period %" PRIu64 " samples %" PRIu64
				      " enabled %" PRIu64 " running %" PRIu64 "\n",
				      e->name, e->period, e->samples, e->time_enabled,
				      e->time_running);
	}
	if (!err)
		err = dcpi_file_write_atomic(path, b.data, b.len, mode);
	dcpi_buf_release(&b);
	return err;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int parse_event(char *rest, struct dcpi_epoch_stats *st)
{
	struct dcpi_stats_event *e;
	char *save = NULL, *name = strtok_r(rest, " ", &save), *k, *v;

	if (!name || strlen(name) >= sizeof(e->name))
		return -1;
	if (st->nevents >= DCPI_MAX_EVENTS)
		return -1;
	e = &st->ev[st->nevents];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	while ((k = strtok_r(NULL, " ", &save)) && (v = strtok_r(NULL, " ", &save))) {
		uint64_t x;

		if (parse_u64(v, &x))
			return -1;
		if (!strcmp(k, "period"))
			e->period = x;
		else if (!strcmp(k, "samples"))
			e->samples = x;
		else if (!strcmp(k, "enabled"))
			e->time_enabled = x;
		else if (!strcmp(k, "running"))
			e->time_running = x;
	}
	if (k) /* a key without a value */
		return -1;
	st->nevents++;
	return 0;
}

static int parse_line(char *line, struct dcpi_epoch_stats *st)
{
	static const struct { const char *key; size_t off; } u64s[] = {
		{ "samples", offsetof(struct dcpi_epoch_stats, samples) },
		{ "lost", offsetof(struct dcpi_epoch_stats, lost) },
		{ "throttled", offsetof(struct dcpi_epoch_stats, throttled) },
		{ "unknown", offsetof(struct dcpi_epoch_stats, unknown) },
		{ "kernel", offsetof(struct dcpi_epoch_stats, kernel) },
		{ "images", offsetof(struct dcpi_epoch_stats, images) },
		{ "label_values", offsetof(struct dcpi_epoch_stats, label_values) },
		{ "label_other", offsetof(struct dcpi_epoch_stats, label_other) },
		{ "clock_khz", offsetof(struct dcpi_epoch_stats, clock_khz) },
		{ "collector_cpu_ns", offsetof(struct dcpi_epoch_stats, collector_cpu_ns) },
		{ "sample_cost_ns", offsetof(struct dcpi_epoch_stats, sample_cost_ns) },
		{ "stack_copies_cut", offsetof(struct dcpi_epoch_stats, stack_copies_cut) },
	};
	char *val = strchr(line, ' ');
	uint64_t x;

	if (!val)
		return -1;
	*val++ = 0;
	if (!strcmp(line, "event"))
		return parse_event(val, st);
	if (!strcmp(line, "epoch"))
		return strlen(val) < sizeof(st->epoch) ? (snprintf(st->epoch, sizeof(st->epoch), "%s", val), 0) : -1;
	if (!strcmp(line, "labels"))
		return strlen(val) < sizeof(st->labels) && !strchr(val, ' ')
		       ? (snprintf(st->labels, sizeof(st->labels), "%s", val), 0) : -1;
	if (!strcmp(line, "platform"))
		return strlen(val) < sizeof(st->platform) ? (snprintf(st->platform, sizeof(st->platform), "%s", val), 0) : -1;
	for (size_t i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++)
		if (!strcmp(line, u64s[i].key))
			return parse_u64(val, (uint64_t *)((char *)st + u64s[i].off));
	if (!strcmp(line, "start") || !strcmp(line, "updated") || !strcmp(line, "cpus")) {
		if (parse_u64(val, &x) || x > INT64_MAX)
			return -1;
		if (line[0] == 's')
			st->start = (int64_t)x;
		else if (line[0] == 'u')
			st->updated = (int64_t)x;
		else
			st->ncpus = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
		return 0;
	}
	return 0; /* unknown key: a newer writer; ignore */
}

/* What no collector writes (see dcpi_stats_parse): a reader that took it
 * would print shares above 100% or convert with an impossible clock. */
static int stats_possible(const struct dcpi_epoch_stats *st)
{
	if (st->unknown > st->samples)
		return dcpi_error(EBADMSG, "unknown %" PRIu64 " exceeds samples %" PRIu64
				  " (unknown samples are among those read)", st->unknown, st->samples);
	if (st->kernel > st->samples)
		return dcpi_error(EBADMSG, "kernel %" PRIu64 " exceeds samples %" PRIu64
				  " (kernel samples are among those read)", st->kernel, st->samples);
	if (st->stack_copies_cut > st->samples)
		return dcpi_error(EBADMSG, "stack_copies_cut %" PRIu64 " exceeds samples %" PRIu64
				  " (the copies cut are samples' copies)", st->stack_copies_cut,
				  st->samples);
	if (st->lost > UINT64_MAX - st->samples)
		return dcpi_error(EBADMSG, "samples %" PRIu64 " and lost %" PRIu64
				  " add past 2^64", st->samples, st->lost);
	if (st->clock_khz > DCPI_STATS_CLOCK_KHZ_MAX)
		return dcpi_error(EBADMSG, "clock_khz %" PRIu64 " is above %llu (100 GHz)",
				  st->clock_khz, DCPI_STATS_CLOCK_KHZ_MAX);
	if (st->sample_cost_ns > DCPI_STATS_SAMPLE_COST_MAX)
		return dcpi_error(EBADMSG, "sample_cost_ns %" PRIu64 " is above %llu (1 ms: no "
				  "interrupt costs that)", st->sample_cost_ns,
				  DCPI_STATS_SAMPLE_COST_MAX);
	return 0;
}

int dcpi_stats_parse(const char *text, size_t len, struct dcpi_epoch_stats *st)
{
	char *copy, *line, *save = NULL;
	unsigned lineno = 0;
	int err = 0;

	memset(st, 0, sizeof(*st));
	if (len > STATS_MAX)
		return dcpi_error(EFBIG, "statistics larger than %d bytes", STATS_MAX);
	copy = malloc(len + 1);
	if (!copy)
		return dcpi_error(ENOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = 0;
	if (strlen(copy) != len) {
		free(copy);
		return dcpi_error(EBADMSG, "NUL byte in statistics");
	}
	/* strtok_r skips empty lines, so count lines separately for messages */
	for (line = copy; line && !err; line = save) {
		char *nl = strchr(line, '\n');

		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		lineno++;
		if (!*line || *line == '#')
			continue;
		if (parse_line(line, st))
			err = dcpi_error(EBADMSG, "line %u: malformed", lineno);
	}
	free(copy);
	return err ? err : stats_possible(st);
}

int dcpi_stats_read(const char *path, struct dcpi_epoch_stats *st)
{
	uint8_t *data;
	size_t len;
	int err = dcpi_file_read(path, STATS_MAX, &data, &len);

	if (err)
		return err;
	err = dcpi_stats_parse((const char *)data, len, st);
	free(data);
	if (err)
		return dcpi_error_prefix(err, "%s", path);
	return 0;
}

/* Add p's event totals into sum (by event name). */
static void add_totals(const struct dcpi_profile *p, const struct dcpi_epoch_stats *st,
		       uint64_t *sum)
{
	for (unsigned i = 0; i < p->nevents; i++)
		for (unsigned e = 0; e < st->nevents; e++)
			if (!strcmp(p->events[i].name, st->ev[e].name))
				sum[e] += p->events[i].total;
}

int dcpi_stats_recount(const char *platdir, const char *host, unsigned mode, uint64_t *added)
{
	struct dcpi_epoch_stats st;
	uint64_t sum[DCPI_MAX_EVENTS] = { 0 }, more = 0;
	char spath[4200], **files;
	size_t n;
	int err;

	*added = 0;
	int pooled = dcpi_db_pooled(platdir, host);

	if ((err = dcpi_db_stats_path(spath, sizeof(spath), platdir, host)))
		return err;
	if ((err = dcpi_stats_read(spath, &st)))
		return err == -ENOENT ? 0 : err;
	if ((err = dcpi_db_profiles(platdir, &files, &n)))
		return err;
	for (size_t i = 0; i < n; i++) {
		struct dcpi_profile p;

		dcpi_profile_init(&p);
		/* an unreadable one counts nothing; in a pooled directory, only
		   this host's profiles are its own */
		if (!dcpi_profile_read(files[i], &p) &&
		    (!pooled || (p.platform && !strcmp(p.platform, host))))
			add_totals(&p, &st, sum);
		dcpi_profile_free(&p);
	}
	for (unsigned e = 0; e < st.nevents; e++) {
		if (sum[e] <= st.ev[e].samples)
			continue;
		more += sum[e] - st.ev[e].samples;
		st.ev[e].samples = sum[e];
	}
	st.images = n;
	dcpi_db_names_free(files, n);
	if (!more)
		return 0;
	st.samples += more;
	*added = more;
	return dcpi_stats_write(spath, &st, mode);
}

/* ---- after a crash --------------------------------------------------------- */

/* Remove the temporary files a killed writer left in dir (those whose
 * name holds mine, when it is not ""). */
static int clean_tmp(const char *dir, const char *mine, size_t *removed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : dcpi_error(errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct stat st;

		if (!dcpi_file_is_tmp_name(de->d_name) || (*mine && !strstr(de->d_name, mine)) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			(*removed)++;
		else if (!err)
			err = dcpi_error(errno, "%s/%s: %s", dir, de->d_name, strerror(errno));
	}
	closedir(d);
	return err;
}

int dcpi_stats_recover(const char *root, const char *host, const char *platform, unsigned mode,
		    size_t *removed, uint64_t *added)
{
	char **epochs, p[4096], mine[DCPI_HOST_MAX + 2] = "";
	size_t n;
	int err = dcpi_db_epochs(root, &epochs, &n), e2 = 0;

	*removed = 0;
	*added = 0;
	if (err)
		return err;
	/* in a pooled directory, only this host's files ("@HOST.") */
	if (strcmp(platform, host))
		snprintf(mine, sizeof(mine), "@%s.", host);
	for (size_t i = 0; i < n && !err; i++)
		if (!(err = dcpi_db_path(p, sizeof(p), root, epochs[i], platform, NULL)))
			err = clean_tmp(p, mine, removed);
	/* a writer is killed in the epoch it writes, the latest */
	if (n && !(e2 = dcpi_db_path(p, sizeof(p), root, epochs[n - 1], platform, NULL)) &&
	    access(p, F_OK) == 0)
		e2 = dcpi_stats_recount(p, host, mode, added);
	dcpi_db_names_free(epochs, n);
	return err ? err : e2;
}

int dcpi_stats_overhead(const struct dcpi_epoch_stats *st, double *percent,
			double *interrupt_seconds)
{
	double monitored = st->nevents ? (double)st->ev[0].time_enabled : 0;
	double irq = (double)st->samples * (double)st->sample_cost_ns;

	if (!st->collector_cpu_ns || !(monitored > 0))
		return -ENOENT;
	*percent = 100.0 * ((double)st->collector_cpu_ns + irq) / monitored;
	*interrupt_seconds = irq / 1e9;
	return 0;
}
