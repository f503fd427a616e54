/* The control socket: see dcpi/ctl.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "dcpi/ctl.h"
#include "dcpi/db.h"
#include "dcpi/error.h"

/* A sockaddr for DB/.dcpid-HOST.sock.  sun_path holds 108 bytes; for a
 * longer database path we go through an O_PATH descriptor of the database
 * directory ("/proc/self/fd/N/NAME"), which Linux resolves like any path.
 * *dirfd must be closed by the caller when >= 0. */
static int sock_addr(const char *root, const char *host, struct sockaddr_un *sa, int *dirfd)
{
	char name[DCPI_HOST_MAX + 16];
	int n;

	*dirfd = -1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(name, sizeof(name), ".dcpid-%s.sock", host);
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", root, name);
	if (n > 0 && (size_t)n < sizeof(sa->sun_path))
		return 0;
	*dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return dcpi_error(errno, "%s: %s", root, strerror(errno));
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", *dirfd, name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return dcpi_error(ENAMETOOLONG, "host name too long for a socket name");
	return 0;
}

void dcpi_ctl_unlink(const char *root, const char *host)
{
	struct sockaddr_un sa;
	int dfd;

	if (!sock_addr(root, host, &sa, &dfd))
		unlink(sa.sun_path);
	if (dfd >= 0)
		close(dfd);
}

int dcpi_ctl_listen(const char *root, const char *host, unsigned mode, int *out)
{
	struct sockaddr_un sa;
	int fd = -1, dfd, err;

	err = sock_addr(root, host, &sa, &dfd);
	if (err)
		goto out;
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = dcpi_error(errno, "socket: %s", strerror(errno));
		goto out;
	}
	/* bind creates the file with the umask applied: chmod after, before
	 * listen, so nobody can connect in between */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, mode) ||
	    listen(fd, 16)) {
		err = dcpi_error(errno, "%s/.dcpid-%s.sock: %s", root, host, strerror(errno));
		goto out;
	}
	*out = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return err;
}

int dcpi_ctl_accept(int lfd, int *out, char *req, size_t len, uid_t *peer_uid)
{
	struct timeval tv = { 1, 0 }; /* a client that sends nothing cannot stall us */
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	size_t n = 0;
	int fd;

	*out = -1;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return dcpi_error(errno, "accept: %s", strerror(errno));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
		close(fd);
		return dcpi_error(errno, "SO_PEERCRED: %s", strerror(errno));
	}
	*peer_uid = cred.uid;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* read the request even from a peer we refuse: closing a socket with
	 * unread data resets it, and the peer would not see our answer */
	while (n < len - 1) {
		ssize_t r = read(fd, req + n, len - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(req, '\n', n))
			break;
	}
	req[n] = 0;
	req[strcspn(req, "\r\n")] = 0;
	if (cred.uid != 0 && cred.uid != geteuid()) {
		static const char no[] = "error: permission denied\n";

		(void)!write(fd, no, sizeof(no) - 1);
		close(fd);
		return dcpi_error(EACCES, "refused control connection from uid %u (pid %d)",
				  (unsigned)cred.uid, (int)cred.pid);
	}
	*out = fd;
	return 0;
}

int dcpi_ctl_request(const char *root, const char *host, const char *req,
		     struct dcpi_buf *reply, int timeout_ms)
{
	struct sockaddr_un sa;
	int fd = -1, dfd, err;
	char line[DCPI_CTL_LINE_MAX];

	err = sock_addr(root, host, &sa, &dfd);
	if (err)
		goto out;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = dcpi_error(errno, "socket: %s", strerror(errno));
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			err = dcpi_error(errno, "no dcpid is running on %s for host %s", root, host);
		else
			err = dcpi_error(errno, "%s: %s", sa.sun_path, strerror(errno));
		goto out;
	}
	snprintf(line, sizeof(line), "%s\n", req);
	if (write(fd, line, strlen(line)) < 0) {
		err = dcpi_error(errno, "sending to dcpid: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;
		int pr = poll(&p, 1, timeout_ms);

		if (pr == 0) {
			err = dcpi_error(ETIMEDOUT, "dcpid did not answer '%s' within %d s", req,
					 timeout_ms / 1000);
			goto out;
		}
		if ((err = dcpi_buf_grow(reply, 4096)))
			goto out;
		r = read(fd, reply->data + reply->len, reply->cap - reply->len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = dcpi_error(errno, "reading from dcpid: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		reply->len += (size_t)r;
		if (reply->len > DCPI_CTL_REPLY_MAX) {
			err = dcpi_error(EFBIG, "reply from dcpid too long");
			goto out;
		}
	}
	reply->data[reply->len] = 0;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return err;
}
