/* The pseudo-image writer's private parts (lib/collect/jitimage*.c). */
#ifndef DCPI_JITIMAGE_PRIV_H
#define DCPI_JITIMAGE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"
#include "dcpi/jitimage.h"

/* The DWARF 4 sections of f[0..n) placed at at[i], text ending at end:
 * dw[0] .debug_abbrev, dw[1] .debug_info, dw[2] .debug_line; *any says
 * whether some function has lines (else the buffers stay empty).
 * -ENOMEM only. */
int dcpi_jitimage_dwarf(const struct dcpi_jit_func *f, size_t n, const uint64_t *at,
			uint64_t end, struct dcpi_buf dw[3], int *any);

#endif
