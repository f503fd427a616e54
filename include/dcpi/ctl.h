/* The control socket between dcpictl and dcpid: DB/.dcpid-HOST.sock.
 *
 * Protocol: the client sends one request line ("status", "flush",
 * "epoch", "quit", "image PID START LENGTH OFFSET PATH"), the daemon answers with zero or more lines of text and
 * a last line "ok" or "error: MESSAGE", then closes.  Requests are at most
 * DCPI_CTL_LINE_MAX bytes.  The daemon serves only peers whose uid is 0
 * or its own (SO_PEERCRED); the socket file is 0600 as well.
 */
#ifndef DCPI_CTL_H
#define DCPI_CTL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dcpi/buf.h"

#define DCPI_CTL_LINE_MAX 256
#define DCPI_CTL_REPLY_MAX (1u << 20)

/* Create the listening socket (replacing a stale one: the caller holds the
 * database lock, so no live daemon owns it). */
int dcpi_ctl_listen(const char *root, const char *host, unsigned mode, int *fd);
/* Remove the socket file. */
void dcpi_ctl_unlink(const char *root, const char *host);

/* The daemon's side: up to DCPI_CTL_CLIENTS connections at once, all
 * non-blocking, so no client can hold up another or the sampling loop.  A
 * client has DCPI_CTL_CLIENT_MS from its connection to send its line; when
 * the table is full, the oldest connection that has not sent a whole line
 * is dropped for a new one, and when every one has, no more are accepted
 * until they are served: a flood of connections, silent or sending
 * garbage, never pushes out a request already sent. */
#define DCPI_CTL_CLIENTS 32
#define DCPI_CTL_CLIENT_MS 2000

struct dcpi_ctl_client {
	int fd; /* -1: free */
	uid_t uid;
	pid_t pid;
	int member;           /* in the server's group (not root, not its user) */
	size_t n;
	int ready;            /* its line is complete in req: to be served */
	uint64_t deadline_ms; /* CLOCK_MONOTONIC */
	char req[DCPI_CTL_LINE_MAX];
};

struct dcpi_ctl_server {
	int lfd; /* the listening socket; not owned */
	gid_t group; /* its members may make the requests dcpi_ctl_server_next
			says are theirs; 0: none (root's group is never one) */
	struct dcpi_ctl_client c[DCPI_CTL_CLIENTS];
};

void dcpi_ctl_server_init(struct dcpi_ctl_server *s, int lfd);
/* Close every pending client. */
void dcpi_ctl_server_release(struct dcpi_ctl_server *s);
/* The descriptors to poll for input (the listening socket first). */
size_t dcpi_ctl_server_pollfds(const struct dcpi_ctl_server *s, struct pollfd *fds, size_t max);
/* Never blocks: accepts what waits, reads what clients sent, drops clients
 * past their time.  Returns 1 with a complete request in req and its
 * connection in *conn (the caller answers and closes it) from root or our
 * uid, 2 the same from a member of s->group (primary or supplementary, as
 * /proc/PID/status said at its connect: the caller limits what it may ask),
 * 0 when no request is complete, -EACCES for any other peer (answered and
 * closed; *peer_uid says who), other -errno if accepting failed.  Call
 * again until it returns 0. */
int dcpi_ctl_server_next(struct dcpi_ctl_server *s, int *conn, char *req, size_t len,
			 uid_t *peer_uid);

/* Send a request and read the whole reply; -ECONNREFUSED / -ENOENT with
 * "no dcpid is running on DB for host H" when nobody answers.  timeout_ms
 * bounds the whole exchange, connecting included: -ETIMEDOUT after it. */
int dcpi_ctl_request(const char *root, const char *host, const char *req,
		     struct dcpi_buf *reply, int timeout_ms);

/* "image PID START LENGTH OFFSET PATH" (numbers decimal or 0x hex; PATH
 * the rest of the line, absolute): an image loaded into process PID at
 * [START, START + LENGTH) from file offset OFFSET, which the kernel did
 * not report (a program's own loader): dcpictl image.  Parsed into ev
 * (path points into req; prot executable).  0, or -EINVAL with a message
 * naming what is wrong. */
struct dcpi_mmap_event;
int dcpi_ctl_parse_image(const char *req, struct dcpi_mmap_event *ev);

#endif
