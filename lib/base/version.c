/* The build's version: see dcpi/version.h. */
#include "dcpi/version.h"

#ifndef DCPI_VERSION
#define DCPI_VERSION "unknown" /* built without the Makefile */
#endif

const char *dcpi_version(void)
{
	return DCPI_VERSION;
}
