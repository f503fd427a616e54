/* Thread-local error messages: see dcpi/error.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/error.h"

#define ERRMSG_MAX 1024 /* messages longer than this are cut, never overflow */

static __thread char errmsg[ERRMSG_MAX];

const char *dcpi_errmsg(void)
{
	return errmsg;
}

int dcpi_error(int err, const char *fmt, ...)
{
	char msg[ERRMSG_MAX];
	va_list ap;

	/* formatted apart first: an argument may be dcpi_errmsg() itself */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(errmsg, msg, sizeof(errmsg));
	return err > 0 ? -err : err;
}

int dcpi_error_prefix(int err, const char *fmt, ...)
{
	char prefix[ERRMSG_MAX], old[ERRMSG_MAX];
	va_list ap;

	memcpy(old, errmsg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	snprintf(errmsg, sizeof(errmsg), "%.400s: %.600s", prefix, old);
	return err > 0 ? -err : err;
}
