/* Helpers for unit tests that build fixtures with the system toolchain in
 * a private temp dir and ask binutils for the truth.
 *   fx_setup("name")    makes /tmp/dcpi-test-name.XXXXXX, reads $DCPI_ROOT
 *   fx_path("f")        a path in it (8 rotating buffers)
 *   fx_sh(fmt, ...)     system() of a formatted command
 *   fx_nm(nm, bin, sym, &addr, &size)   from `nm -S`
 *   fx_marked_line("f.c", "MARK")      the line of tests/workloads/f.c with
 *                                      the comment MARK, found by grep
 *   fx_cleanup()        removes the temp dir (kept when $DCPI_TEST_KEEP is set) */
#ifndef DCPI_TEST_FIXTURE_H
#define DCPI_TEST_FIXTURE_H
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char fx_tmp[128];
static const char *fx_root = ".";

static inline int fx_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int fx_sh(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static inline int fx_setup(const char *name)
{
	snprintf(fx_tmp, sizeof(fx_tmp), "/tmp/dcpi-test-%s.XXXXXX", name);
	if (!mkdtemp(fx_tmp)) {
		perror("mkdtemp");
		return -1;
	}
	if (getenv("DCPI_ROOT"))
		fx_root = getenv("DCPI_ROOT");
	return 0;
}

static inline void fx_cleanup(void)
{
	if (fx_tmp[0] && !getenv("DCPI_TEST_KEEP"))
		fx_sh("rm -rf '%s'", fx_tmp);
}

static inline const char *fx_path(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int k;
	char *b = bufs[k++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", fx_tmp, name);
	return b;
}

static inline int fx_nm(const char *nm, const char *bin, const char *name, uint64_t *addr,
			uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[512], n[256], t[8];
	unsigned long long a, s;
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "%s -S '%s'", nm, bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %llx %7s %255s", &a, &s, t, n) == 4 && !strcmp(n, name)) {
			*addr = a;
			*size = s;
			found = 1;
		}
	if (p)
		pclose(p);
	return found ? 0 : -1;
}
static inline unsigned fx_marked_line(const char *src, const char *mark)
{
	char cmd[PATH_MAX + 128], line[64];
	unsigned n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "grep -n -F '/* %s */' '%s/tests/workloads/%s'", mark, fx_root,
		 src);
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p))
		n = (unsigned)strtoul(line, NULL, 10);
	if (p)
		pclose(p);
	return n;
}
#endif
