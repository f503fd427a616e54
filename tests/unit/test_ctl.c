/* The control socket's server side (dcpi/ctl.h) under a flood: clients
 * that send garbage lines, connected before and after a legitimate one,
 * more than the table holds.  The legitimate request must be served: the
 * server once dropped the oldest connection for each new one, request
 * sent or not, while it served one request per call, so a flood pushed
 * out requests already waiting ("Connection reset by peer"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dcpi/ctl.h"
#include "dcpi/error.h"
#include "tap.h"

static char root[] = "/tmp/dcpi-test-ctl.XXXXXX";

static int client(const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/.dcpid-h.sock", root);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (line && write(fd, line, strlen(line)) != (ssize_t)strlen(line))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int main(void)
{
	enum { N = 100, LEGIT = 10 };
	int lfd, legit[LEGIT], nlegit = 0, flood[N], nflood = 0, served = 0, garbage = 0, rounds = 0;
	int answered = 0;
	struct dcpi_ctl_server s;
	char cmd[128], big[4096];

	if (!mkdtemp(root))
		return 1;
	T_EQ(dcpi_ctl_listen(root, "h", 0600, &lfd), 0, "listening");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	/* every tenth a request, the rest garbage, lines past the limit among them */
	for (int i = 0; i < N; i++)
		if (i % 10 == 5)
			legit[nlegit++] = client("status\n");
		else
			flood[nflood++] = client(i % 3 ? "garbage\n" : big);
	for (int i = 0; i < nlegit; i++)
		T_OK(legit[i] >= 0, "request %d sent", i);
	dcpi_ctl_server_init(&s, lfd);
	/* as dcpid serves: each request answered and closed, until none is left */
	for (int r; rounds < 1000; rounds++) {
		char req[DCPI_CTL_LINE_MAX];
		uid_t uid;
		int conn;

		r = dcpi_ctl_server_next(&s, &conn, req, sizeof(req), &uid);
		if (r <= 0 && served + garbage >= N)
			break;
		if (r != 1)
			continue;
		if (!strcmp(req, "status"))
			served++;
		else
			garbage++;
		(void)!write(conn, "ok\n", 3);
		close(conn);
	}
	T_EQ(served, LEGIT, "every legitimate request was served");
	for (int i = 0; i < nlegit; i++) {
		char reply[16] = "";
		ssize_t n = legit[i] >= 0 ? read(legit[i], reply, sizeof(reply) - 1) : -1;

		answered += n == 3 && !strncmp(reply, "ok\n", 3);
		if (legit[i] >= 0)
			close(legit[i]);
	}
	T_EQ(answered, LEGIT, "and each client read its answer (no connection reset)");
	T_EQ(garbage, nflood, "every flood line was taken as a request too (%d)", garbage);
	dcpi_ctl_server_release(&s);
	for (int i = 0; i < nflood; i++)
		if (flood[i] >= 0)
			close(flood[i]);
	close(lfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("# could not remove %s\n", root);
	return t_done();
}
