/* The multi-call binary: `dcpi prof ...` and `dcpiprof ...` are one thing.
 * Dispatch on the name it was called by, as git and perf do. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dcpi/version.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "dcpid", cmd_dcpid, "the collection daemon: sample every CPU into a database" },
	{ "dcpictl", cmd_dcpictl, "control a running dcpid: status, flush, epoch, quit" },
	{ "dcpiepoch", cmd_dcpictl, "same as dcpictl epoch" },
	{ "dcpiflush", cmd_dcpictl, "same as dcpictl flush" },
	{ "dcpiquit", cmd_dcpictl, "same as dcpictl quit" },
	{ "dcpicat", cmd_dcpicat, "print a profile file" },
	{ "dcpiprof", cmd_dcpiprof, "where the time went: by image, by procedure" },
	{ "dcpilist", cmd_dcpilist, "a procedure's samples by source line and instruction" },
	{ "dcpicalc", cmd_dcpicalc, "a procedure's basic blocks: estimated counts, cycles per instruction" },
	{ "dcpix", cmd_dcpix, "run a command under callgrind: exact counts for dcpicalc -exact" },
	{ "dcpitopcounts", cmd_dcpitopcounts, "the instructions with the most samples" },
	{ "dcpitopstalls", cmd_dcpitopstalls, "the instructions with the most stall cycles, and why" },
	{ "dcpiwhatcg", cmd_dcpiwhatcg, "where an image's cycles went: execution, stalls by culprit" },
	{ "dcpicoverage", cmd_dcpicoverage, "which blocks and source lines ran, and which did not" },
	{ "dcpidiff", cmd_dcpidiff, "two epochs compared: images, procedures, lines, blocks" },
	{ "dcpistats", cmd_dcpistats, "variation over epochs, and whether a change is significant" },
	{ "dcpilabel", cmd_dcpilabel, "the labels of labelled profiles, with their samples" },
	{ "dcpitar", cmd_dcpitar, "pack an epoch with the code it needs; unpack it elsewhere" },
	{ "dcpi-record", cmd_record, "run a command and profile it" },
	{ "dcpi-report", cmd_report, "an epoch as pages to open in a browser (HTML)" },
	{ "dcpi-bins", cmd_bins, "measure this machine's load latencies: latency bins (-vtrace)" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *lookup(const char *name)
{
	char full[64];

	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	snprintf(full, sizeof(full), "dcpi%s", name); /* "dcpi prof" */
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, full))
			return &commands[i];
	snprintf(full, sizeof(full), "dcpi-%s", name); /* "dcpi record" */
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, full))
			return &commands[i];
	return NULL;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: dcpi COMMAND [ARGS...]   (or call a command by its own name)\n\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nEach command has --help and a man page; dcpi --version (-V) prints the "
		"version.\n");
	return f == stdout ? 0 : EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static char prog[80];
	const char *base = strrchr(argv[0], '/');
	const struct command *c;

	base = base ? base + 1 : argv[0];
	if (strcmp(base, "dcpi") != 0) {
		c = lookup(base);
		if (!c) {
			fprintf(stderr, "dcpi: unknown command name '%s'\n", base);
			return EXIT_USAGE;
		}
		cli_prog = c->name;
		return c->fn(argc, argv);
	}
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-version") ||
	    !strcmp(argv[1], "-V")) {
		printf("dcpi %s\n", dcpi_version());
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	c = lookup(argv[1]);
	if (!c) {
		fprintf(stderr, "dcpi: '%s' is not a dcpi command\n", argv[1]);
		return usage(stderr);
	}
	snprintf(prog, sizeof(prog), "%s", c->name);
	cli_prog = prog;
	return c->fn(argc - 1, argv + 1);
}
