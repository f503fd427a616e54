/* runstat: run COPIES copies of a command at once and report what they
 * cost, for bench/run.
 *   runstat [-n COPIES] [-o FILE] [-r READYFILE] [-p] -- COMMAND [ARG...]
 * Prints one line to FILE (default stderr) once every copy has ended:
 *   wall=SECONDS user=SECONDS sys=SECONDS wchar=BYTES nivcsw=N failed=N
 *   [pcpu=SECONDS]
 * wall runs from the first fork to the last exit; user and sys sum the
 * copies' rusage (with their waited-for descendants); wchar sums the bytes
 * they passed to write(2) and friends, read from /proc/PID/io while each
 * copy is a zombie (waitid WNOWAIT), so it includes the final flush.
 * SIGINT and SIGTERM sent to runstat are passed on to the copies, so a
 * profiler run under it stops cleanly and is still measured.
 * -r names a file runstat creates once all copies are started.
 * nivcsw sums the copies' involuntary context switches (rusage): how often
 * something else took their CPU.  -p adds pcpu, the CPU time runstat's
 * parent process (all its threads: a profiler that started runstat as
 * its command) used from the first fork to the last exit: what the
 * profiler took while the command ran, its start-up and its end apart. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_COPIES 1024

static pid_t kids[MAX_COPIES];
static int nkids;

static void forward(int sig)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] > 0)
			kill(kids[i], sig);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long long io_wchar(pid_t pid)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "wchar: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The CPU time of process pid (all its threads, the exited ones too), in
 * seconds; -1 when it cannot be read. */
static double proc_cpu_s(pid_t pid)
{
	clockid_t id;
	struct timespec ts;

	if (clock_getcpuclockid(pid, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: runstat [-n COPIES] [-o FILE] [-r READYFILE] [-p] -- COMMAND [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *ready = NULL;
	int copies = 1, failed = 0, parent = 0, c;
	unsigned long long wchar = 0;
	long nivcsw = 0;
	double user = 0, sys = 0, t0, t1, p0 = -1, p1 = -1;
	struct sigaction sa;
	FILE *f;

	while ((c = getopt(argc, argv, "+n:o:r:p")) != -1) {
		switch (c) {
		case 'p': parent = 1; break;
		case 'n': copies = atoi(optarg); break;
		case 'o': out = optarg; break;
		case 'r': ready = optarg; break;
		default: return usage();
		}
	}
	if (optind >= argc || copies < 1 || copies > MAX_COPIES)
		return usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (parent)
		p0 = proc_cpu_s(getppid());
	t0 = now_s();
	for (int i = 0; i < copies; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("runstat: fork");
			forward(SIGTERM);
			return 1;
		}
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "runstat: %s: %s\n", argv[optind], strerror(errno));
			_exit(127);
		}
		kids[nkids++] = pid;
	}
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			close(fd);
	}
	for (int left = copies; left > 0;) {
		siginfo_t si;
		struct rusage ru;
		int st;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			perror("runstat: waitid");
			return 1;
		}
		wchar += io_wchar(si.si_pid);
		if (wait4(si.si_pid, &st, 0, &ru) < 0)
			continue;
		for (int i = 0; i < nkids; i++)
			if (kids[i] == si.si_pid)
				kids[i] = 0;
		left--;
		user += ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
		sys += ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		nivcsw += ru.ru_nivcsw;
		/* a profiler stopped by our SIGINT may exit 130 or by the signal */
		failed += !(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 130)) &&
			  !(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
	}
	t1 = now_s();
	if (parent)
		p1 = proc_cpu_s(getppid());
	f = out ? fopen(out, "w") : stderr;
	if (!f) {
		perror(out);
		return 1;
	}
	fprintf(f, "wall=%.6f user=%.6f sys=%.6f wchar=%llu nivcsw=%ld failed=%d", t1 - t0, user,
		sys, wchar, nivcsw, failed);
	if (parent && p0 >= 0 && p1 >= p0)
		fprintf(f, " pcpu=%.6f", p1 - p0);
	fprintf(f, "\n");
	if (f != stderr)
		fclose(f);
	return failed ? 1 : 0;
}
