/* Basic blocks of an annotated procedure: see dcpi/blocks.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "dcpi/blocks.h"
#include "dcpi/error.h"

/* The instruction starting exactly at v, or a->ninsns. */
static size_t insn_index(const struct dcpi_annotation *a, uint64_t v)
{
	size_t i = dcpi_annot_insn_at(a, v);

	return i < a->ninsns && a->insns[i].insn.vaddr == v ? i : a->ninsns;
}

static void mark_leaders(const struct dcpi_annotation *a, unsigned char *lead)
{
	lead[0] = 1;
	for (size_t i = 0; i < a->ninsns; i++) {
		const struct dcpi_insn *in = &a->insns[i].insn;
		size_t t;

		if (!a->has_code)
			break;
		if ((in->flags & (DCPI_INSN_JUMP | DCPI_INSN_RET | DCPI_INSN_TRAP)) &&
		    i + 1 < a->ninsns)
			lead[i + 1] = 1;
		if ((in->flags & DCPI_INSN_JUMP) && (in->flags & DCPI_INSN_DIRECT) &&
		    (t = insn_index(a, in->target)) < a->ninsns)
			lead[t] = 1;
	}
}

int dcpi_blocks_split(const struct dcpi_annotation *a, size_t **starts, size_t *n)
{
	unsigned char *lead;
	size_t k = 0;

	*starts = NULL;
	*n = 0;
	if (a->ninsns == 0)
		return 0;
	lead = calloc(a->ninsns, 1);
	*starts = calloc(a->ninsns, sizeof(**starts));
	if (!lead || !*starts) {
		free(lead);
		free(*starts);
		*starts = NULL;
		return dcpi_error(ENOMEM, "out of memory");
	}
	mark_leaders(a, lead);
	for (size_t i = 0; i < a->ninsns; i++)
		if (lead[i])
			(*starts)[k++] = i;
	*n = k;
	free(lead);
	return 0;
}
