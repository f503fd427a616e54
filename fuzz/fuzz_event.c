/* libFuzzer target for event specifications.  The first byte picks what
 * the rest is: an -event argument (resolved against a fixture sysfs and
 * tracefs tree), or the text of a sysfs PMU format file and event file
 * ("FORMAT\nTERMS").  Nothing may crash, and a parse that succeeds must
 * leave a list that keeps the invariants of dcpi/event.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static void put(const char *rel, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(text, 1, len, f);
	fclose(f);
}

static void mkdirs(const char *rel)
{
	char path[256], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(path, 0700);
		*p = '/';
	}
	mkdir(path, 0700);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/dcpi-fuzz-event.%d", (int)getpid());
	if (mkdir(root, 0700) && errno != EEXIST)
		abort();
	mkdirs("sys/bus/event_source/devices/fz/format");
	mkdirs("sys/bus/event_source/devices/fz/events");
	mkdirs("sys/kernel/tracing/events/sched/sched_switch");
	put("sys/bus/event_source/devices/fz/type", "42\n", 3);
	put("sys/bus/event_source/devices/fz/format/event", "config:0-7\n", 11);
	put("sys/bus/event_source/devices/fz/format/umask", "config:8-15\n", 12);
	put("sys/bus/event_source/devices/fz/events/loads", "event=0xcd,umask=1\n", 19);
	put("sys/kernel/tracing/events/sched/sched_switch/id", "316\n", 4);
	if (dcpi_event_sysroot(root))
		abort();
	atexit(cleanup);
}

static void check_list(const struct dcpi_eventlist *l)
{
	unsigned i, j;

	if (l->n > DCPI_MAX_EVENTS || l->nsets > l->n)
		abort();
	for (i = 0; i < l->n; i++) {
		const struct dcpi_event_spec *e = &l->ev[i];

		if (!memchr(e->name, 0, sizeof(e->name)) || !e->name[0])
			abort();
		if (e->period < 1 || e->period > (uint64_t)INT64_MAX)
			abort();
		if (e->set >= l->nsets || (i && e->set < l->ev[i - 1].set))
			abort();
		for (j = 0; j < i; j++)
			if (!strcmp(e->name, l->ev[j].name))
				abort();
	}
}

static void fuzz_arg(const uint8_t *data, size_t size)
{
	struct dcpi_eventlist l = { 0 };
	char *arg = malloc(size + 1);

	if (!arg)
		return;
	memcpy(arg, data, size);
	arg[size] = 0;
	if (dcpi_event_parse(&l, arg) == 0)
		check_list(&l);
	if (dcpi_event_parse(&l, arg) == 0) /* parsing it twice means duplicates */
		abort();
	check_list(&l);
	free(arg);
}

static void fuzz_sysfs(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	struct dcpi_event_spec ev;
	size_t flen = nl ? (size_t)(nl - data) : size;

	put("sys/bus/event_source/devices/fz/format/a", (const char *)data, flen);
	put("sys/bus/event_source/devices/fz/events/e", nl ? (const char *)nl + 1 : "",
	    nl ? size - flen - 1 : 0);
	if (dcpi_event_lookup("fz/e", &ev) == 0 && strcmp(ev.name, "fz/e"))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0])
		setup();
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_sysfs(data + 1, size - 1);
	else
		fuzz_arg(data + 1, size - 1);
	return 0;
}
