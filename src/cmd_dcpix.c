/* dcpix: run a command under callgrind and store the exact execution
 * count of every instruction (and jump) of each image it ran into the
 * database, keyed by build-id, for dcpicalc -exact.  The library parses
 * and converts (callgrind.h, calc.h, exact.h); this runs valgrind. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "dcpi/calc.h"
#include "dcpi/callgrind.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "dcpi/file.h"
#include "dcpi/obj.h"
#include "dcpi/procs.h"
#include "dcpi/profset.h"
#include "dcpi/select.h"
#include "dcpi/symtab.h"
#include "report.h"

#define MAX_OUT ((size_t)2 << 30)

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpix [options] -- COMMAND [ARGS...]\n"
"Run COMMAND under valgrind's callgrind and store the exact execution count\n"
"of every instruction and jump of each image it ran, by build-id, in the\n"
"database (for dcpicalc -exact).  COMMAND runs 20-100 times slower.\n\n"
"  -db DIR            the database (default $DCPIDB, else ./dcpidb; created)\n"
"  -quiet             no per-image lines, only the summary\n"
"  -v, -verbose       every warning on a line of its own\n"
"  -h, -help          this help\n\n"
"Exit status: COMMAND's; 1 when counting failed; 127 when valgrind is missing.\n");
}

/* An executable NAME in PATH (or NAME itself when it holds a slash). */
static int find_program(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int found = 0;

	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return access(out, X_OK) == 0;
	}
	copy = strdup(path ? path : "/usr/bin:/bin");
	for (dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *dir ? dir : ".", name);
		found = access(out, X_OK) == 0;
	}
	free(copy);
	return found;
}

/* Whether the file at path is a script whose interpreter is a shell or
 * env: a wrapper that execs the program meant (a pyenv shim, #!/usr/bin/env
 * python3).  valgrind does not follow exec, so callgrind would count the
 * wrapper and nothing of the program.  A script of another interpreter
 * (#!/usr/bin/python3) is fine: the interpreter runs it, as profiled.
 * The interpreter's name goes into interp (len bytes). */
static int is_wrapper(const char *path, char *interp, size_t len)
{
	static const char *const wrappers[] = { "sh", "bash", "dash", "ksh", "mksh", "zsh",
						"env", NULL };
	char line[256], *p, *end, *base;
	FILE *f = fopen(path, "rb");
	int yes = 0;

	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && line[0] == '#' && line[1] == '!') {
		for (p = line + 2; *p == ' ' || *p == '\t'; p++)
			;
		end = p + strcspn(p, " \t\r\n");
		*end = 0;
		base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
		snprintf(interp, len, "%s", p);
		for (size_t i = 0; wrappers[i]; i++)
			yes |= !strcmp(base, wrappers[i]);
	}
	fclose(f);
	return yes;
}

/* valgrind --tool=callgrind ... -- argv; its exit status. */
static int run_callgrind(const char *vg, const char *outfile, char **argv, int argc)
{
	char of[PATH_MAX + 32];
	char **av = calloc((size_t)argc + 12, sizeof(*av));
	int n = 0, st;
	pid_t pid;

	if (!av)
		cli_die("out of memory");
	snprintf(of, sizeof(of), "--callgrind-out-file=%s", outfile);
	av[n++] = (char *)vg;
	av[n++] = "--tool=callgrind";
	av[n++] = "--dump-instr=yes";
	av[n++] = "--collect-jumps=yes";
	/* a PLT stub's instructions are its own, not its call site's (by
	   default callgrind charges them to the call: every call through the
	   PLT counted twice) */
	av[n++] = "--skip-plt=no";
	av[n++] = "--compress-strings=no";
	av[n++] = "--compress-pos=no";
	av[n++] = "--quiet";
	av[n++] = of;
	av[n++] = "--";
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	pid = fork();
	if (pid < 0)
		cli_die("fork: %s", strerror(errno));
	if (pid == 0) {
		execv(vg, av);
		fprintf(stderr, "dcpix: %s: %s\n", vg, strerror(errno));
		_exit(127);
	}
	free(av);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			cli_die("waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Images worth keeping: files with symbols, not valgrind's own. */
static int skip_object(const char *path)
{
	return path[0] != '/' || strstr(path, "/valgrind/") || strstr(path, "vgpreload");
}

/* The counts of earlier runs of the same build added to e's (DCPI's
 * dcpisumxct): several runs of one program are one sum. */
static int add_earlier(const char *db, struct dcpi_exact *e)
{
	struct dcpi_exact old;
	int err = dcpi_exact_read(db, e->build_id, e->build_id_len, &old);

	if (err == -ENOENT) {
		e->runs = 1;
		return 0;
	}
	if (!err)
		err = dcpi_exact_merge(e, &old);
	dcpi_exact_free(&old);
	return err;
}

static int store(const char *db, const struct dcpi_callgrind *cg, int quiet)
{
	size_t stored = 0;

	for (size_t i = 0; i < cg->nobjs; i++) {
		const struct dcpi_callgrind_obj *o = &cg->objs[i];
		struct dcpi_symtab *st;
		struct dcpi_exact e;

		if (skip_object(o->counts.path))
			continue;
		if (dcpi_symtab_open(o->counts.path, NULL, 0, NULL, &st)) {
			cli_warn("%s: skipped: %s", cli_safe(o->counts.path), dcpi_errmsg());
			continue;
		}
		if (dcpi_calc_exact_import(o, st, &e) || add_earlier(db, &e) ||
		    dcpi_exact_write(db, &e)) {
			cli_warn("%s: skipped: %s", cli_safe(o->counts.path), dcpi_errmsg());
		} else {
			stored++;
			if (!quiet)
				printf("%s: %zu instructions, %zu jumps, %" PRIu64 " run%s\n",
				       o->counts.path, e.ninsns, e.njumps, e.runs,
				       e.runs == 1 ? "" : "s added up");
		}
		dcpi_exact_free(&e);
		dcpi_symtab_close(st);
	}
	return stored ? 0 : -1;
}

/* ---- string-function variants -------------------------------------------------- */

/* glibc's string functions come in variants (ifuncs) chosen by the CPU's
 * features: __strlen_evex, __strlen_avx2, __strlen_sse2.  valgrind runs no
 * AVX-512 (nor RTM) code, so under it glibc picks other variants than a
 * real run on such a CPU, and the exact counts of those functions are of
 * other code than the samples.  That cannot be changed from here; it is
 * said. */
#define MAX_VARIANTS 256

/* The name's length up to its variant suffix, or 0 for no variant. */
static size_t variant_base(const char *name)
{
	static const char *const tags[] = { "_sse2", "_ssse3", "_sse4", "_avx", "_evex" };
	size_t best = 0;

	if (strncmp(name, "__", 2))
		return 0;
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		const char *t = strstr(name + 2, tags[i]);

		if (t && (!best || (size_t)(t - name) < best))
			best = (size_t)(t - name);
	}
	return best;
}

static int is_libc(const char *path)
{
	const char *b = strrchr(path, '/');

	return b && !strncmp(b + 1, "libc.so", 7);
}

/* The variants the profiled run (the database's latest epoch) sampled in
 * libc, into v; how many. */
static size_t sampled_variants(const char *db, const char **v, char **own, size_t max)
{
	struct dcpi_procs_opts po = { 1, 0, NULL, NULL };
	const char *libc = "libc.so.6";
	struct dcpi_selection sel;
	struct dcpi_profset set;
	struct dcpi_procs t;
	size_t n = 0;

	if (dcpi_profset_load(db, "latest", NULL, &set))
		return 0;
	if (!(po.objs = dcpi_objcache_new(NULL)) || dcpi_select(&set, &libc, 1, &sel)) {
		dcpi_objcache_free(po.objs);
		dcpi_profset_free(&set);
		return 0;
	}
	if (!dcpi_procs_build(&t, &set, sel.chosen, 0, &po)) {
		for (size_t i = 0; i < t.n && n < max; i++)
			if (t.rows[i]->proc && variant_base(t.rows[i]->proc) &&
			    (own[n] = strdup(t.rows[i]->proc)))
				v[n] = own[n], n++;
		dcpi_procs_free(&t);
	}
	dcpi_selection_free(&sel);
	dcpi_objcache_free(po.objs);
	dcpi_profset_free(&set);
	return n;
}

static void warn_variants(const char *db, const struct dcpi_callgrind *cg)
{
	const char *sampled[MAX_VARIANTS];
	char *own[MAX_VARIANTS];
	size_t ns = sampled_variants(db, sampled, own, MAX_VARIANTS), nwarn = 0;

	for (size_t i = 0; i < ns; i++) {
		size_t b = variant_base(sampled[i]);
		const char *ran = NULL;
		int same = 0;

		for (size_t o = 0; o < cg->nobjs && !same; o++) {
			const struct dcpi_callgrind_obj *ob = &cg->objs[o];

			if (!is_libc(ob->counts.path))
				continue;
			for (size_t f = 0; f < ob->nfns && !same; f++) {
				const char *fn = ob->fns[f].name;

				if (!strcmp(fn, sampled[i]))
					same = 1;
				else if (variant_base(fn) == b && !strncmp(fn, sampled[i], b))
					ran = fn;
			}
		}
		if (!same && ran && nwarn++ < 5)
			cli_warn("the profiled run used libc's %s, valgrind ran %s: the exact counts "
				 "are of other code than the samples", cli_safe(sampled[i]), cli_safe(ran));
	}
	if (nwarn)
		cli_warn("%zu libc function%s ran another variant under valgrind (it runs no "
			 "AVX-512 code): see dcpix(1), STRING FUNCTIONS", nwarn, nwarn == 1 ? "" : "s");
	for (size_t i = 0; i < ns; i++)
		free(own[i]);
}

int cmd_dcpix(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	char vg[PATH_MAX], cmd[PATH_MAX], interp[256], tmpl[] = "/tmp/dcpix.XXXXXX", out[sizeof(tmpl) + 16];
	struct dcpi_callgrind cg;
	uint8_t *text = NULL;
	size_t len = 0;
	int c, quiet = 0, rc, err;

	while ((c = cli_getopt(argc, argv, "+h", lo)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: cli_usage_error("bad option");
		}
	}
	if (optind >= argc)
		cli_usage_error("want a COMMAND to run");
	db = cli_db(db);
	if (!find_program("valgrind", vg, sizeof(vg))) {
		fprintf(stderr, "%s: error: valgrind not found in PATH: dcpix needs callgrind, "
			"from the 'valgrind' package (apt-get install valgrind)\n", cli_prog);
		return 127;
	}
	if (!find_program(argv[optind], cmd, sizeof(cmd))) {
		fprintf(stderr, "%s: error: %s: command not found\n", cli_prog,
			cli_safe(argv[optind]));
		return 127;
	}
	if (is_wrapper(cmd, interp, sizeof(interp))) {
		fprintf(stderr, "%s: error: %s is a script of %s (#!): a wrapper such as a "
			"pyenv shim execs the program it stands for, and valgrind does not follow "
			"exec, so callgrind would count %s and nothing of that program; give the "
			"program itself (e.g. /usr/bin/python3)\n", cli_prog, cli_safe(cmd),
			cli_safe(interp), cli_safe(interp));
		return 1;
	}
	if (dcpi_db_init(db, 0700))
		cli_die("%s", dcpi_errmsg());
	if (!mkdtemp(tmpl))
		cli_die("mkdtemp: %s", strerror(errno));
	snprintf(out, sizeof(out), "%s/cg.out", tmpl);
	rc = run_callgrind(vg, out, argv + optind, argc - optind);
	err = dcpi_file_read(out, MAX_OUT, &text, &len);
	unlink(out);
	rmdir(tmpl);
	if (err || len == 0) {
		fprintf(stderr, "%s: error: callgrind wrote no output (exit %d): %s\n", cli_prog,
			rc, err ? cli_safe(dcpi_errmsg())
				: "an empty file (did the command exec another program? valgrind "
				  "does not follow exec)");
		free(text);
		return rc ? rc : 1;
	}
	if (dcpi_callgrind_parse((const char *)text, len, &cg))
		cli_die("%s", dcpi_errmsg());
	free(text);
	if (store(db, &cg, quiet))
		cli_die("no image's counts could be stored");
	warn_variants(db, &cg);
	fprintf(stderr, "dcpix: %" PRIu64 " instructions counted in %zu objects, stored in %s/exact\n",
		cg.total, cg.nobjs, db);
	dcpi_callgrind_free(&cg);
	return rc;
}
