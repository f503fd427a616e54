/* dcpictl: control a running dcpid (status, flush, epoch, image, quit).
 * dcpiepoch, dcpiflush and dcpiquit are the same command with the verb
 * in its name, as in DCPI. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dcpi/ctl.h"
#include "dcpi/db.h"
#include "dcpi/error.h"

static const char *const verbs[] = { "status", "flush", "epoch", "image", "quit" };

static void usage(FILE *f)
{
	fprintf(f,
"usage: dcpictl [-db DIR] [-host NAME] [-timeout SECONDS] COMMAND\n"
"       dcpiepoch | dcpiflush | dcpiquit  [-db DIR] [-host NAME] [-timeout SECONDS]\n"
"Control the dcpid running on a database (-db DIR or $DCPIDB).\n\n"
"Commands:\n"
"  status   events, periods, samples so far, lost, unknown, images\n"
"  flush    write every buffered sample to the database; returns when done\n"
"  epoch    flush, close this epoch and start a new one\n"
"  image PID START PATH [LENGTH [OFFSET]]\n"
"           PATH was loaded into process PID at address START (LENGTH bytes\n"
"           from file offset OFFSET; default the whole file from offset 0)\n"
"           by a loader the kernel does not report: samples there are\n"
"           attributed to it\n"
"  quit     flush and stop the daemon\n\n"
"  -host NAME        the daemon of another host sharing the database\n"
"  -timeout SECONDS  how long to wait for an answer (default 120)\n"
"  -v, -verbose      every warning on a line of its own\n"
"  -h, -help         this help\n");
}

static const char *verb_from_name(void)
{
	static const char *const names[][2] = {
		{ "dcpiepoch", "epoch" }, { "dcpiflush", "flush" }, { "dcpiquit", "quit" },
	};

	for (size_t i = 0; i < 3; i++)
		if (!strcmp(cli_prog, names[i][0]))
			return names[i][1];
	return NULL;
}

/* "image PID START LENGTH OFFSET PATH" from the arguments; the length of
 * the file as this process sees it when none is given. */
static const char *image_request(int argc, char **argv, char *req, size_t len)
{
	unsigned long long pid, start, length = 0, off = 0;
	char path[4096];
	struct stat st;

	if (argc < 3 || argc > 5)
		cli_usage_error("image wants PID START PATH [LENGTH [OFFSET]]");
	pid = cli_parse_count("PID", argv[0]);
	start = strtoull(argv[1], NULL, 0);
	if (!realpath(argv[2], path))
		cli_die("%s: %s", argv[2], strerror(errno));
	if (argc > 3)
		length = strtoull(argv[3], NULL, 0);
	else if (stat(path, &st) == 0)
		length = (unsigned long long)st.st_size;
	if (argc > 4)
		off = strtoull(argv[4], NULL, 0);
	if ((size_t)snprintf(req, len, "image %llu %#llx %#llx %#llx %s", pid, start, length, off,
			     path) >= len)
		cli_usage_error("image: the path is too long for a request");
	return req;
}

int cmd_dcpictl(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "host", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dcpi_buf reply = DCPI_BUF_INIT;
	const char *db = NULL, *host = NULL, *verb = verb_from_name(), *last;
	char myhost[DCPI_HOST_MAX], req[DCPI_CTL_LINE_MAX];
	unsigned long long timeout = 120;
	int c, ok;

	while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'H': host = optarg; break;
		case 't': timeout = cli_parse_count("timeout", optarg); break;
		case 'h': usage(stdout); return 0;
		default: cli_usage_error("bad option");
		}
	}
	if (!verb) {
		if (optind >= argc)
			cli_usage_error("no command: status, flush, epoch, image or quit");
		verb = argv[optind++];
		ok = 0;
		for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
			ok |= !strcmp(verb, verbs[i]);
		if (!ok)
			cli_usage_error("unknown command '%s': status, flush, epoch, image or quit",
					verb);
	}
	if (!strcmp(verb, "image"))
		verb = image_request(argc - optind, argv + optind, req, sizeof(req)), optind = argc;
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (timeout == 0 || timeout > 86400)
		cli_usage_error("-timeout wants 1 to 86400 seconds");
	db = cli_db(db);
	if (!host) {
		if (dcpi_db_host(myhost, sizeof(myhost)))
			cli_die_lib("host name");
		host = myhost;
	}
	if (dcpi_ctl_request(db, host, verb, &reply, (int)timeout * 1000))
		cli_die("%s", dcpi_errmsg());
	/* The last line says how it went: "ok" or "error: ..." */
	while (reply.len && reply.data[reply.len - 1] == '\n')
		reply.data[--reply.len] = 0;
	last = strrchr((char *)reply.data, '\n');
	last = last ? last + 1 : (const char *)reply.data;
	fwrite(reply.data, 1, (size_t)(last - (const char *)reply.data), stdout);
	ok = !strcmp(last, "ok");
	if (!ok)
		fprintf(stderr, "%s: %s\n", cli_prog, last);
	dcpi_buf_release(&reply);
	return ok ? 0 : 1;
}
