/* stackdepth: how much of the user stack a sample must copy for its walk to
 * reach the outermost frame, on a real program (issue 25: choose dcpid's
 * default -stack-bytes).  Runs CMD, samples it and its children with
 * task-clock at 4 kHz asking for the user registers and the largest stack
 * copy perf makes (65528 bytes), follows their mappings from the side-band
 * records, and walks each sample with the images' unwind tables
 * (dcpi/unwind.h).  Prints how many walks reached the outermost frame, why
 * the others stopped, the bytes from the sampled rsp to the outermost
 * frame (percentiles), and the share of samples a copy of 4, 8, 16 and 32
 * KiB would have unwound whole.
 *
 *   stackdepth CMD [ARGS...] */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/loadmap.h"
#include "dcpi/record.h"
#include "dcpi/sampler.h"
#include "dcpi/unwind.h"

#define MAX_IMAGES 4096
#define MAX_DEPTH 512
#define MAX_SAMPLES 2000000

struct ctx {
	struct dcpi_loadmap *lm;
	struct dcpi_unwind_table *tables[MAX_IMAGES];
	int built[MAX_IMAGES];
	size_t samples, kernel_only, result[5];
	uint32_t *need;          /* bytes to the outermost frame, of whole walks */
	size_t nneed;
	uint64_t frames;
};

static struct dcpi_unwind_table *table_of(struct ctx *x, int idx)
{
	const struct dcpi_image *im = dcpi_loadmap_image(x->lm, idx);

	if (idx < 0 || idx >= MAX_IMAGES || !im || im->kind != DCPI_IMAGE_FILE)
		return NULL;
	if (!x->built[idx]) {
		x->built[idx] = 2;
		if ((x->tables[idx] = calloc(1, sizeof(*x->tables[idx]))) &&
		    !dcpi_unwind_table_build(im->path, x->tables[idx]))
			x->built[idx] = 1;
	}
	return x->built[idx] == 1 ? x->tables[idx] : NULL;
}

static void walk(struct ctx *x, const struct dcpi_sample *s, const struct dcpi_stack_sample *st)
{
	struct dcpi_unwind_regs r = { st->ip, st->sp, st->bp };
	struct dcpi_unwind_stack stk = { st->stack, st->stack_len, st->sp, NULL };
	int res = DCPI_UW_STOP_NORULE, last = -1;
	uint64_t lastoff = 0;

	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		const struct dcpi_unwind_row *row = NULL;
		struct dcpi_unwind_table *t;
		uint64_t off;
		int idx = dcpi_loadmap_resolve(x->lm, s->pid, depth ? r.ip - 1 : r.ip, 0, &off);

		if (idx >= 0 && (t = table_of(x, idx)))
			row = dcpi_unwind_lookup_off(t, off);
		last = idx;
		lastoff = off;
		x->frames++;
		if ((res = dcpi_unwind_step(row, &r, &stk, 1)) != DCPI_UW_OK)
			break;
	}
	x->result[res]++;
	if (res == DCPI_UW_STOP_NORULE && getenv("STACKDEPTH_WHY")) { /* where walks stop */
		const struct dcpi_image *im = last >= 0 ? dcpi_loadmap_image(x->lm, last) : NULL;

		fprintf(stderr, "no rule: %s +0x%" PRIx64 "\n", im ? im->path : "(no image)", lastoff);
	}
	if (res == DCPI_UW_STOP_END && x->nneed < MAX_SAMPLES)
		x->need[x->nneed++] = (uint32_t)(r.sp - st->sp);
}

static int on_record(void *arg, const void *raw, size_t len)
{
	struct ctx *x = arg;
	struct dcpi_record rec;
	struct dcpi_sample s;
	struct dcpi_stack_sample st;
	uint32_t type;

	if (len < 8)
		return 0;
	memcpy(&type, raw, 4);
	if (type == PERF_RECORD_SAMPLE) {
		if (dcpi_record_decode_stack_sample(raw, len, 0, &s, &st))
			return 0;
		x->samples++;
		if (st.abi == PERF_SAMPLE_REGS_ABI_NONE ||
		    (s.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL) {
			x->kernel_only++; /* in the kernel: the user part starts at its regs */
			if (st.abi == PERF_SAMPLE_REGS_ABI_NONE)
				return 0;
		}
		walk(x, &s, &st);
		return 0;
	}
	if (dcpi_record_decode_flags(raw, len, 0, &rec))
		return 0;
	if (rec.type == PERF_RECORD_MMAP2)
		dcpi_loadmap_mmap(x->lm, &rec.mmap);
	else if (rec.type == PERF_RECORD_FORK)
		dcpi_loadmap_fork(x->lm, rec.pid, rec.ppid);
	else if (rec.type == PERF_RECORD_COMM && rec.exec)
		dcpi_loadmap_exec(x->lm, rec.pid);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const why[] = { "ok", "whole", "copy ran out", "no rule", "refused" };
	struct dcpi_eventlist ev;
	struct dcpi_sampler_opts so = { .inherit = 1, .ring_pages = 512, .sideband = 1,
					.exclude_kernel = 0, .stack_bytes = DCPI_STACK_MAX_COPY };
	struct dcpi_sampler *smp;
	static struct ctx x;
	int go[2], status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: stackdepth CMD [ARGS...]\n");
		return 2;
	}
	memset(&ev, 0, sizeof(ev));
	if (dcpi_event_parse(&ev, "task-clock:F250000") || pipe(go) ||
	    !(x.need = malloc(MAX_SAMPLES * sizeof(*x.need))) || !(x.lm = dcpi_loadmap_new(NULL)))
		return 1;
	if ((pid = fork()) == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(go[0]);
	so.pid = pid;
	if (dcpi_sampler_open(&dcpi_sampler_perf, &ev, &so, &smp) || dcpi_sampler_enable(smp)) {
		fprintf(stderr, "stackdepth: %s\n", dcpi_errmsg());
		kill(pid, SIGKILL);
		return 1;
	}
	dcpi_loadmap_scan_pid(x.lm, pid);
	if (write(go[1], "x", 1) != 1)
		return 1;
	close(go[1]);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct timespec ts = { 0, 10000000 };

		dcpi_sampler_drain(smp, on_record, &x);
		nanosleep(&ts, NULL);
	}
	dcpi_sampler_drain(smp, on_record, &x);
	dcpi_sampler_close(smp);
	qsort(x.need, x.nneed, sizeof(*x.need), cmp_u32);
	printf("%s: %zu samples (%zu in the kernel), %.1f frames a walk\n", argv[1], x.samples,
	       x.kernel_only, x.samples ? (double)x.frames / (double)x.samples : 0.0);
	for (int i = 1; i < 5; i++)
		printf("  %-14s %7zu  %5.1f%%\n", why[i], x.result[i],
		       x.samples ? 100.0 * (double)x.result[i] / (double)x.samples : 0.0);
	if (x.nneed) {
		static const double q[] = { 50, 90, 95, 99, 100 };
		static const unsigned kib[] = { 4, 8, 16, 32 };

		printf("  bytes from rsp to the outermost frame:");
		for (int i = 0; i < 5; i++)
			printf(" p%.0f %" PRIu32, q[i],
			       x.need[(size_t)((double)(x.nneed - 1) * q[i] / 100)]);
		printf("\n  whole with a copy of:");
		for (int i = 0; i < 4; i++) {
			size_t n = 0;

			while (n < x.nneed && x.need[n] <= kib[i] * 1024)
				n++;
			printf(" %u KiB %.1f%%", kib[i],
			       x.samples ? 100.0 * (double)n / (double)x.samples : 0.0);
		}
		printf("\n");
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
