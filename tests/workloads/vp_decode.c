/* Workload for e2e/vtrace_lib (libdcpivp(7)): instructions the decoder
 * must not read through.  Each function is assembly, its parts symbols of
 * their own (nm -S gives their extent):
 *   loop_body   add; loop back: a branch Capstone 4 puts in no group
 *   loop_after  the load after the loop, reached once per 4096 turns
 *   bt_at       bt [rdi], rsi: a bit offset in a register, whose address
 *               is not [rdi] (rsi / 8 past it)
 *   vp_decode [SCALE]   SCALE times 0.3 s of CPU time in each */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t loop_fn(const uint64_t *p);
void bt_fn(const uint64_t *p, uint64_t bit);

__asm__(".text\n"
	".globl loop_fn\n.type loop_fn,@function\n"
	"loop_fn:\n"
	"	mov $4096, %ecx\n"
	"	xor %eax, %eax\n"
	".globl loop_body\n.type loop_body,@function\n"
	"loop_body:\n"
	"	add $1, %rax\n"
	"	loop loop_body\n"
	".size loop_body, .-loop_body\n"
	".globl loop_after\n.type loop_after,@function\n"
	"loop_after:\n"
	"	mov (%rdi), %rax\n"
	".size loop_after, .-loop_after\n"
	"	ret\n"
	".size loop_fn, .-loop_fn\n"
	".globl bt_fn\n.type bt_fn,@function\n"
	"bt_fn:\n"
	"	mov $4096, %ecx\n"
	"1:\n"
	".globl bt_at\n.type bt_at,@function\n"
	"bt_at:\n"
	"	bt %rsi, (%rdi)\n"
	".size bt_at, .-bt_at\n"
	"	dec %ecx\n"
	"	jnz 1b\n"
	"	ret\n"
	".size bt_fn, .-bt_fn\n");

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t buf[64];

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1, t = cpu_seconds();
	volatile uint64_t sink = 0;

	while (cpu_seconds() - t < 0.3 * scale)
		sink += loop_fn(buf);
	t = cpu_seconds();
	while (cpu_seconds() - t < 0.3 * scale)
		bt_fn(buf, 8 * 64 - 1); /* the last bit of buf */
	printf("done %llu\n", (unsigned long long)sink);
	return 0;
}
