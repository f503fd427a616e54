/* A JIT with a big perf map: anonymous executable memory (64 MiB) holding a
 * counted loop every 4 KiB, a /tmp/perf-PID.map of MIB MiB (argv[1],
 * default 64) naming 64-byte functions in it, then calls into the memory at
 * many places for SECONDS (argv[2], default 10; 0: until killed), so that a
 * profiler's samples miss every image and it reads the map.  Prints its
 * pid once the map is written; removes the map at the end.  Not x86-64:
 * exits 77 (skip).  Used by tests/e2e/jit_budget.sh and bench/loss. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REGION (64ul << 20)

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* mov ecx, 200000; 1: dec ecx; jnz 1b; ret */
	static const unsigned char code[] = { 0xb9, 0x40, 0x0d, 0x03, 0x00, 0xff, 0xc9, 0x75, 0xfc,
					      0xc3 };
	size_t want = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20, bytes = 0;
	long secs = argc > 2 ? atol(argv[2]) : 10;
	unsigned char *r = mmap(NULL, REGION, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	time_t end = time(NULL) + secs;
	char path[64];
	FILE *f;

	if (r == MAP_FAILED)
		return 1;
	for (size_t off = 0; off < REGION; off += 4096)
		memcpy(r + off, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (!(f = fopen(path, "w")))
		return 1;
	for (size_t i = 0; bytes < want; i++)
		bytes += (size_t)fprintf(f, "%lx 40 jit_function_number_%zu\n",
					 (unsigned long)(r + (i * 64) % REGION), i);
	fclose(f);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (size_t k = 0; secs == 0 || time(NULL) < end; k++)
		((void (*)(void))(r + (k * 7919 % (REGION / 4096)) * 4096))();
	unlink(path);
	return 0;
#else
	(void)argc, (void)argv;
	return 77;
#endif
}
