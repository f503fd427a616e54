/* Shared by the JIT fuzz targets: the pseudo-image of key is built, and
 * every offset resolve() handed out lies inside its text. */
#ifndef DCPI_FUZZ_JIT_CHECK_H
#define DCPI_FUZZ_JIT_CHECK_H

#include <stdlib.h>

#include "dcpi/jitimage.h"
#include "dcpi/jitmap.h"

static inline void jit_check_image(struct dcpi_jitmap *jm, int64_t key, const uint64_t *offs,
				   size_t nhit)
{
	struct dcpi_buf img = DCPI_BUF_INIT;
	uint8_t id[DCPI_SHA1_LEN];
	char path[300];
	int32_t pid;

	if (!nhit)
		return;
	if (dcpi_jitmap_image(jm, key, &img, id, path, sizeof(path), &pid))
		abort();
	for (size_t i = 0; i < nhit; i++)
		if (offs[i] < DCPI_JITIMAGE_TEXT || offs[i] >= img.len)
			abort();
	dcpi_buf_release(&img);
}

#endif
