/* libFuzzer target for /proc/PID/maps text.  The input, split at newlines,
 * goes line by line to dcpi_maps_parse_line (an accepted line must give an
 * entry that keeps the documented invariants); the whole input is then
 * scanned from memory as process 1's maps (dcpi_loadmap_scan_text, with
 * an empty procroot: no file is written per input), and the addresses of
 * accepted lines resolved.
 * The same bytes also go to the raw-notes parser (/sys/kernel/notes). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/buildid.h"
#include "dcpi/loadmap.h"
#include "dcpi/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

#define PROBES 16
static uint64_t probes[PROBES]; /* start addresses of accepted exec lines */
static size_t nprobes;

static void cleanup(void)
{
	rmdir(root);
}

static void setup(void)
{
	if (root[0])
		return;
	snprintf(root, sizeof(root), "/tmp/dcpi-fuzz-maps.XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
}

static void check_entry(const char *line, size_t len, const struct dcpi_maps_entry *e)
{
	if (e->start >= e->end || !e->path)
		abort();
	if (e->path < line || e->path > line + len || strchr(e->path, '\n'))
		abort();
	if (e->prot & ~(unsigned)(PROT_READ | PROT_WRITE | PROT_EXEC))
		abort();
}

static void parse_lines(const uint8_t *data, size_t size)
{
	size_t pos = 0;

	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - (data + pos)) : size - pos;
		struct dcpi_maps_entry e;
		char *line = malloc(len + 1);

		if (!line)
			abort();
		memcpy(line, data + pos, len);
		line[len] = '\0';
		if (dcpi_maps_parse_line(line, &e) == 0) {
			check_entry(line, len, &e);
			if ((e.prot & PROT_EXEC) && nprobes < PROBES)
				probes[nprobes++] = e.start;
		}
		free(line);
		pos += len + 1;
	}
}

static void scan_file(const uint8_t *data, size_t size)
{
	struct dcpi_loadmap *lm;
	uint64_t off;
	size_t i;
	int idx;

	lm = dcpi_loadmap_new(root);
	if (!lm)
		abort();
	dcpi_loadmap_scan_text(lm, 1, (const char *)data, size);
	/* Every image resolve() names must exist; no image leaves the address. */
	for (i = 0; i < nprobes; i++) {
		idx = dcpi_loadmap_resolve(lm, 1, probes[i], 0, &off);
		if (idx >= 0 ? !dcpi_loadmap_image(lm, idx) : off != probes[i])
			abort();
	}
	dcpi_loadmap_free(lm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[DCPI_BUILD_ID_MAX];
	int n;

	setup();
	nprobes = 0;
	parse_lines(data, size);
	scan_file(data, size);
	n = dcpi_buildid_notes(data, size, id, sizeof(id));
	if (n > DCPI_BUILD_ID_MAX)
		abort();
	return 0;
}
