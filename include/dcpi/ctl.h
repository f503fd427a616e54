/* The control socket between dcpictl and dcpid: DB/.dcpid-HOST.sock.
 *
 * Protocol: the client sends one request line ("status", "flush",
 * "epoch", "quit"), the daemon answers with zero or more lines of text and
 * a last line "ok" or "error: MESSAGE", then closes.  Requests are at most
 * DCPI_CTL_LINE_MAX bytes.  The daemon serves only peers whose uid is 0
 * or its own (SO_PEERCRED); the socket file is 0600 as well.
 */
#ifndef DCPI_CTL_H
#define DCPI_CTL_H

#include <stddef.h>
#include <sys/types.h>

#include "dcpi/buf.h"

#define DCPI_CTL_LINE_MAX 256
#define DCPI_CTL_REPLY_MAX (1u << 20)

/* Create the listening socket (replacing a stale one: the caller holds the
 * database lock, so no live daemon owns it). */
int dcpi_ctl_listen(const char *root, const char *host, unsigned mode, int *fd);
/* Remove the socket file. */
void dcpi_ctl_unlink(const char *root, const char *host);

/* Accept one connection and read its request line.  Returns 0 with
 * *conn >= 0 and req filled; -EACCES (conn closed) for a peer we do not
 * serve, with *peer_uid set so the daemon can log who it was. */
int dcpi_ctl_accept(int lfd, int *conn, char *req, size_t len, uid_t *peer_uid);

/* Send a request and read the whole reply; -ECONNREFUSED / -ENOENT with
 * "no dcpid is running on DB for host H" when nobody answers. */
int dcpi_ctl_request(const char *root, const char *host, const char *req,
		     struct dcpi_buf *reply, int timeout_ms);

#endif
