/* A storm of short-lived processes: run CHILD MILLIS, N times, PAR at a
 * time, each a fresh exec.  The image of CHILD lives only milliseconds per
 * process; a profiler must still attribute its samples.  Each child's pid
 * is printed on standard output, so a test can look at its samples alone.
 *   burst N PAR CHILD MILLIS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n, par, running = 0, failed = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: burst N PAR CHILD MILLIS\n");
		return 2;
	}
	n = atoi(argv[1]);
	par = atoi(argv[2]);
	for (int started = 0; started < n || running > 0;) {
		int st;

		if (started < n && running < par) {
			pid_t pid = fork();

			if (pid == 0) {
				execl(argv[3], argv[3], argv[4], (char *)NULL);
				_exit(127);
			}
			if (pid < 0)
				return 1;
			printf("%d\n", (int)pid);
			started++;
			running++;
			continue;
		}
		if (wait(&st) > 0) {
			running--;
			failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
	}
	return failed ? 1 : 0;
}
