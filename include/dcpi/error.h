/* Error reporting for libdcpi.
 *
 * The library never prints and never exits.  A failing function returns a
 * negative errno value (e.g. -EBADMSG for a corrupt file) and records a
 * one-line message of this thread naming the subject and the problem
 * ("profile.prof: truncated at byte 12 of 40").  Commands print it.
 */
#ifndef DCPI_ERROR_H
#define DCPI_ERROR_H

/* The message of the most recent failure in this thread; never NULL
 * (an empty string when nothing failed yet). */
const char *dcpi_errmsg(void);

/* Record a message and return -err (err is a positive errno value).
 * Usage: return dcpi_error(EBADMSG, "%s: bad magic", path); */
int dcpi_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the current message with "prefix: ", keep err; returns -err. */
int dcpi_error_prefix(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
