/* The images IMAGE arguments name: one definition for every report.
 *
 * An argument names a profile's image when it is the exact profiled path,
 * a file name without '/' equal to the path's last component or, for a
 * shared library, a soname it begins with (liblzma.so.5 names
 * liblzma.so.5.4.1: the name up to a '.' that starts a version), a path to
 * the same file (after realpath), "kernel" or "vmlinux" for the kernel,
 * "unknown" for samples of no image.  No arguments name every profile.
 *
 * The named profiles are then grouped by image identity (kind, path,
 * build-id, or size when there is no build-id: dcpi_profile_same_image):
 * a binary rebuilt during an epoch is two images, summed by nobody.
 *
 * Ownership: a selection owns its arrays; matched[] points at paths of the
 * set, which must outlive it.
 */
#ifndef DCPI_SELECT_H
#define DCPI_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profset.h"

/* One image identity: the set entries of it, in set order. */
struct dcpi_image_group {
	size_t *idx;
	size_t n, cap;
	uint64_t samples;        /* all events of its profiles, summed */
};

struct dcpi_selection {
	unsigned char *chosen;   /* per set entry: 1 when an argument names it */
	size_t nchosen;
	const char **matched;    /* per argument: the path of a profile it named,
				    or NULL when it named none */
	struct dcpi_image_group *groups;   /* of the chosen entries, ordered by
					      their first entry */
	size_t ngroups;
};

/* Whether the argument want names profile p (see the top of this file);
 * a per-process profile of unattributable samples (dcpid -unknown) is
 * also named by its region label (dcpi_select_region). */
int dcpi_select_matches(const struct dcpi_profile *p, const char *want);

/* The label of a per-process profile of unattributable samples, the 1 MiB
 * region of the address space it covers: "[unknown 0xLO-0xHI]" (HI the
 * last byte).  0, or -ENOENT for any other profile (buf then ""). */
int dcpi_select_region(const struct dcpi_profile *p, char *buf, size_t len);

/* Select from set what args[0..nargs-1] name and group it.  0, or -ENOMEM;
 * out is zeroed first and may be freed after a failure. */
int dcpi_select(const struct dcpi_profset *set, const char *const *args, size_t nargs,
		struct dcpi_selection *out);
void dcpi_selection_free(struct dcpi_selection *s);

/* The group with the most samples (ties: the first), or NULL when none. */
const struct dcpi_image_group *dcpi_selection_largest(const struct dcpi_selection *s);

#endif
