/* Graphviz rendering: see render.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "render.h"

/* 1 when an executable "dot" is in a directory of PATH. */
static int have_dot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		if (n && n < sizeof(buf) - 5) {
			memcpy(buf, path, n);
			memcpy(buf + n, "/dot", 5);
			if (!access(buf, X_OK))
				return 1;
		}
		path += n + (path[n] == ':');
	}
	return 0;
}

/* The child's status, or -1 after killing it at the time limit. */
static int wait_bounded(pid_t pid)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	int status;

	for (int i = 0; i < RENDER_SECONDS * 50; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

void render_dot(const char *format, const char *out, void (*emit)(FILE *f, void *arg), void *arg)
{
	char fmt[32];
	int fd[2], status;
	pid_t pid;
	FILE *f;

	if (!have_dot())
		cli_die("-%s: rendering needs Graphviz's 'dot' on PATH: install the 'graphviz' "
			"package (or use -dot and render elsewhere)", format);
	snprintf(fmt, sizeof(fmt), "-T%s", format);
	if (pipe(fd))
		cli_die("pipe: %s", strerror(errno));
	if ((pid = fork()) < 0)
		cli_die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd[0], 0);
		close(fd[0]);
		close(fd[1]);
		execlp("dot", "dot", fmt, "-o", out, (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	signal(SIGPIPE, SIG_IGN);   /* dot may die before reading it all: its status says so */
	if (!(f = fdopen(fd[1], "w")))
		cli_die("fdopen: %s", strerror(errno));
	emit(f, arg);
	fclose(f);
	status = wait_bounded(pid);
	if (status == -1)
		cli_die("dot did not finish within %d s: the graph is too large to lay out (use "
			"-cutoff, or -dot and render it elsewhere)", RENDER_SECONDS);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		cli_die("dot failed to render %s (exit %d)", cli_safe(out),
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
