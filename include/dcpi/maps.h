/* /proc/PID/maps lines: the initial scan's view of a process's mappings. */
#ifndef DCPI_MAPS_H
#define DCPI_MAPS_H

#include <stdint.h>

/* Longest maps line accepted: PATH_MAX of path plus the fixed fields. */
#define DCPI_MAPS_LINE_MAX (4096 + 128)

/* One line of /proc/PID/maps, parsed.  path points into the line. */
struct dcpi_maps_entry {
	uint64_t start, end, pgoff;
	unsigned prot;          /* PROT_READ | PROT_WRITE | PROT_EXEC */
	unsigned maj, min;
	uint64_t ino;
	const char *path;       /* "" for anonymous mappings */
};

/* Parse one maps line (without or with trailing newline; the line may be
 * modified to cut the newline).  -EBADMSG on anything malformed (the
 * message quotes the line).  path is the rest of the line after the inode
 * and its padding, verbatim: it may contain spaces and end in " (deleted)". */
int dcpi_maps_parse_line(char *line, struct dcpi_maps_entry *e);

#endif
