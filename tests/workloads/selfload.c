/* A program with its own loader, for dcpictl image: copies the file
 * argv[1] into anonymous memory (the kernel reports no mapping of the
 * file, only //anon), writes "PID BASE" to argv[3] when ready, waits
 * argv[4] ms (for dcpictl image), then calls the function at file offset
 * argv[2] (hex) for argv[5] ms.  The function takes a count and spins. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef long (*spin_fn)(long);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct stat st;
	unsigned char *mem;
	FILE *f;
	double t0;
	long x = 0;
	int fd;

	if (argc != 6)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED || read(fd, mem, (size_t)st.st_size) != st.st_size ||
	    mprotect(mem, (size_t)st.st_size, PROT_READ | PROT_EXEC))
		return 1;
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%d %p\n", (int)getpid(), (void *)mem);
	fclose(f);
	usleep((useconds_t)(atof(argv[4]) * 1000));
	t0 = now_ms();
	while (now_ms() - t0 < atof(argv[5]))
		x += ((spin_fn)(void *)(mem + strtoul(argv[2], NULL, 16)))(100000);
	return x == 42;
}
