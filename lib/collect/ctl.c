/* The control socket: see dcpi/ctl.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/ctl.h"
#include "dcpi/db.h"
#include "dcpi/error.h"
#include "dcpi/loadmap.h"

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

/* Where a database that cannot hold a socket (a network file system:
 * sshfs, NFS) has it instead: a local directory, RUNDIR/dcpi (0755, ours or
 * root's, no link), named by a hash of the database's real path and the
 * host.  RUNDIR is /run for root, else $XDG_RUNTIME_DIR.  create: make the
 * directory when missing.  -errno when there is none to use. */
static int local_addr(const char *root, const char *host, int create, struct sockaddr_un *sa)
{
	const char *run = geteuid() == 0 ? "/run" : getenv("XDG_RUNTIME_DIR");
	char real[4096], dir[200];
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat st;

	if (!run || run[0] != '/' || strlen(run) > 100 || !realpath(root, real))
		return -ENOENT;
	for (const char *p = real; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	snprintf(dir, sizeof(dir), "%s/dcpi", run);
	if (create && mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & 022))
		return -EPERM; /* another user's, or writable by others: not ours to use */
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%016llx-%.40s.sock", dir,
		     (unsigned long long)h, host) >= (int)sizeof(sa->sun_path))
		return -ENAMETOOLONG;
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
	if (!local_addr(root, host, 0, &sa))
		unlink(sa.sun_path);
}

/* Bind fd to sa with mode, and listen. */
static int bind_listen(int fd, const struct sockaddr_un *sa, unsigned mode)
{
	unlink(sa->sun_path);
	/* bind creates the file with the umask applied: chmod after, before
	 * listen, so nobody can connect in between */
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) || chmod(sa->sun_path, mode) ||
	    listen(fd, 128))
		return -errno;
	return 0;
}

int dcpi_ctl_listen(const char *root, const char *host, unsigned mode, int *out)
{
	struct sockaddr_un sa;
	int fd = -1, dfd, err;

	err = sock_addr(root, host, &sa, &dfd);
	if (err)
		goto out;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = dcpi_error(errno, "socket: %s", strerror(errno));
		goto out;
	}
	if ((err = bind_listen(fd, &sa, mode))) {
		struct sockaddr_un la;
		int e = err;

		/* a file system without sockets (sshfs, NFS): a local one */
		if ((e == -EPERM || e == -EOPNOTSUPP || e == -EACCES) &&
		    !local_addr(root, host, 1, &la) && !(e = bind_listen(fd, &la, mode))) {
			err = 0;
		} else {
			err = dcpi_error(-err, "%s/.dcpid-%s.sock: %s", root, host, strerror(-err));
			goto out;
		}
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

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void dcpi_ctl_server_init(struct dcpi_ctl_server *s, int lfd)
{
	memset(s, 0, sizeof(*s));
	s->lfd = lfd;
	for (size_t i = 0; i < DCPI_CTL_CLIENTS; i++)
		s->c[i].fd = -1;
}

static void drop(struct dcpi_ctl_client *c)
{
	close(c->fd);
	c->fd = -1;
}

void dcpi_ctl_server_release(struct dcpi_ctl_server *s)
{
	for (size_t i = 0; i < DCPI_CTL_CLIENTS; i++)
		if (s->c[i].fd >= 0)
			drop(&s->c[i]);
}

size_t dcpi_ctl_server_pollfds(const struct dcpi_ctl_server *s, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	if (max)
		fds[n++] = (struct pollfd){ s->lfd, POLLIN, 0 };
	for (size_t i = 0; i < DCPI_CTL_CLIENTS && n < max; i++)
		if (s->c[i].fd >= 0)
			fds[n++] = (struct pollfd){ s->c[i].fd, POLLIN, 0 };
	return n;
}

static int read_some(struct dcpi_ctl_client *c);

/* A free slot, or that of the oldest client that has not sent a whole
 * line: a flood of connections pushes out the flood, never a request
 * already sent (read here before its client could be dropped).  NULL when
 * every client has a request waiting: accept no more until they are served. */
static struct dcpi_ctl_client *slot(struct dcpi_ctl_server *s)
{
	struct dcpi_ctl_client *old = NULL;

	for (size_t i = 0; i < DCPI_CTL_CLIENTS; i++) {
		struct dcpi_ctl_client *c = &s->c[i];
		int r;

		if (c->fd < 0)
			return c;
		if ((r = read_some(c)) < 0) {
			drop(c);
			return c;
		}
		if (r == 0 && (!old || c->deadline_ms < old->deadline_ms))
			old = c;
	}
	if (old)
		drop(old);
	return old;
}

/* Whether the peer on fd had gid among its groups when it connected
 * (SO_PEERGROUPS, taken by the kernel at connect(2), as SO_PEERCRED is:
 * reading /proc/PID/status afterwards would ask whoever holds the pid
 * now, which need not be the peer). */
static int in_group(int fd, gid_t gid)
{
	gid_t g[64], *v = g;
	socklen_t len = sizeof(g);
	int found = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, v, &len) != 0) {
		if (errno != ERANGE || len == 0 || len > 65536 * sizeof(gid_t) ||
		    !(v = malloc(len)))
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, v, &len) != 0)
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t) && !found; i++)
		found = v[i] == gid;
	if (v != g)
		free(v);
	return found;
}

/* Accept what is waiting (a bounded number per call), while there is room. */
static int accept_some(struct dcpi_ctl_server *s)
{
	for (int k = 0; k < DCPI_CTL_CLIENTS; k++) {
		struct dcpi_ctl_client *c = slot(s);
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		int fd;

		if (!c)
			return 0;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED
				       ? 0 : dcpi_error(errno, "accept: %s", strerror(errno));
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
			close(fd);
			return dcpi_error(errno, "SO_PEERCRED: %s", strerror(errno));
		}
		c->fd = fd;
		c->uid = cred.uid;
		c->pid = cred.pid;
		c->member = s->group && (cred.gid == s->group || in_group(fd, s->group));
		c->n = 0;
		c->ready = 0;
		c->deadline_ms = now_ms() + DCPI_CTL_CLIENT_MS;
	}
	return 0;
}

/* 1 once c's request line is complete (or the peer stopped sending), and
 * from then on; 0 while it is not; -1 when the connection failed. */
static int read_some(struct dcpi_ctl_client *c)
{
	if (c->ready)
		return 1;
	for (;;) {
		ssize_t r = read(c->fd, c->req + c->n, sizeof(c->req) - 1 - c->n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN ? 0 : -1;
		c->n += (size_t)r;
		if (r == 0 || memchr(c->req, '\n', c->n) || c->n == sizeof(c->req) - 1)
			break;
	}
	c->req[c->n] = 0;
	c->req[strcspn(c->req, "\r\n")] = 0;
	c->ready = 1;
	return 1;
}

int dcpi_ctl_server_next(struct dcpi_ctl_server *s, int *conn, char *req, size_t len,
			 uid_t *peer_uid)
{
	uint64_t now = now_ms();
	int err = accept_some(s);

	*conn = -1;
	if (err)
		return err;
	for (size_t i = 0; i < DCPI_CTL_CLIENTS; i++) {
		struct dcpi_ctl_client *c = &s->c[i];
		int r;

		if (c->fd < 0)
			continue;
		r = read_some(c);
		if (r == 0 && now >= c->deadline_ms)
			r = -1; /* silent too long */
		if (r < 0)
			drop(c);
		if (r <= 0)
			continue;
		*peer_uid = c->uid;
		if (c->uid != 0 && c->uid != geteuid() && !c->member) {
			static const char no[] = "error: permission denied\n";

			(void)!write(c->fd, no, sizeof(no) - 1);
			drop(c);
			return dcpi_error(EACCES, "refused control connection from uid %u (pid %d)",
					  (unsigned)c->uid, (int)c->pid);
		}
		snprintf(req, len, "%s", c->req);
		*conn = c->fd;
		c->fd = -1;
		return c->uid != 0 && c->uid != geteuid() ? 2 : 1;
	}
	return 0;
}

/* Connect within the deadline: a daemon whose backlog is full (or a
 * socket nobody accepts on) makes a non-blocking connect fail with EAGAIN,
 * so retry until the time is up. */
static int connect_by(int fd, const struct sockaddr_un *sa, uint64_t deadline)
{
	while (connect(fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		poll(NULL, 0, 10);
	}
	return 0;
}

static int ms_left(uint64_t deadline)
{
	uint64_t now = now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

int dcpi_ctl_request(const char *root, const char *host, const char *req,
		     struct dcpi_buf *reply, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	struct sockaddr_un sa;
	int fd = -1, dfd, err;
	char line[DCPI_CTL_LINE_MAX];

	err = sock_addr(root, host, &sa, &dfd);
	if (err)
		goto out;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = dcpi_error(errno, "socket: %s", strerror(errno));
		goto out;
	}
	err = connect_by(fd, &sa, deadline);
	if (err == -ENOENT || err == -ECONNREFUSED) { /* a daemon on a network file system */
		struct sockaddr_un la;

		if (!local_addr(root, host, 0, &la)) {
			int e = connect_by(fd, &la, deadline);

			if (e == 0 || e == -ETIMEDOUT) {
				err = e;
				sa = la;
			}
		}
	}
	if (err) {
		if (err == -ENOENT || err == -ECONNREFUSED)
			err = dcpi_error(-err, "no dcpid is running on %s for host %s", root, host);
		else if (err == -ETIMEDOUT)
			err = dcpi_error(ETIMEDOUT, "dcpid did not accept '%s' within %d s", req,
					 timeout_ms / 1000);
		else
			err = dcpi_error(-err, "%s: %s", sa.sun_path, strerror(-err));
		goto out;
	}
	/* one short line: it fits in an empty socket buffer */
	snprintf(line, sizeof(line), "%s\n", req);
	if (write(fd, line, strlen(line)) < 0) {
		err = dcpi_error(errno, "sending to dcpid: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;
		int pr = poll(&p, 1, ms_left(deadline));

		if (pr == 0) {
			err = dcpi_error(ETIMEDOUT, "dcpid did not answer '%s' within %d s", req,
					 timeout_ms / 1000);
			goto out;
		}
		if ((err = dcpi_buf_grow(reply, 4096)))
			goto out;
		r = read(fd, reply->data + reply->len, reply->cap - reply->len - 1);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
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

/* ---- requests with arguments -------------------------------------------------- */

static int get_num(const char **p, uint64_t *v)
{
	char *end;

	while (**p == ' ')
		(*p)++;
	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(*p, &end, 0);
	if (errno || (*end != ' ' && *end != '\0'))
		return -EINVAL;
	*p = end;
	return 0;
}

int dcpi_ctl_parse_image(const char *req, struct dcpi_mmap_event *ev)
{
	const char *p = req;
	uint64_t pid, start, len, off;

	if (strncmp(p, "image ", 6))
		return dcpi_error(EINVAL, "not an image request");
	p += 6;
	if (get_num(&p, &pid) || get_num(&p, &start) || get_num(&p, &len) || get_num(&p, &off))
		return dcpi_error(EINVAL, "image: want PID START LENGTH OFFSET PATH (numbers)");
	while (*p == ' ')
		p++;
	if (pid == 0 || pid > INT32_MAX)
		return dcpi_error(EINVAL, "image: no process %llu", (unsigned long long)pid);
	if (len == 0 || len > UINT64_MAX - start || start + len > 0xffff800000000000ull)
		return dcpi_error(EINVAL, "image: %#llx+%#llx is no user-space range",
				  (unsigned long long)start, (unsigned long long)len);
	if (*p != '/')
		return dcpi_error(EINVAL, "image: PATH must be absolute");
	memset(ev, 0, sizeof(*ev));
	ev->pid = ev->tid = (int32_t)pid;
	ev->start = start;
	ev->len = len;
	ev->pgoff = off;
	ev->prot = PROT_READ | PROT_EXEC;
	ev->path = p;
	return 0;
}
