/* Real stacks, unwound: a child built here without frame pointers runs
 * main -> outer -> middle -> leaf (leaf a hot loop), sampled by perf with
 * the user registers and a copy of the stack (dcpi_sampler with
 * stack_bytes); each sample is decoded, its addresses resolved through the
 * loadmap of the child's mappings, and walked with the images' unwind
 * tables.  The walk must pass through middle and outer to main for
 * (nearly) every sample in leaf, since that is how the program is built;
 * the samples whose copy ran out are counted apart.  Every walk is also
 * compared with libdw's own unwinder (dwfl_getthread_frames over the same
 * registers and stack copy, the child's modules reported from /proc):
 * both must give the same frames.  Skips where perf_event_open refuses. */
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

#include <elfutils/libdwfl.h>

#include "dcpi/error.h"
#include "dcpi/event.h"
#include "dcpi/loadmap.h"
#include "dcpi/record.h"
#include "dcpi/sampler.h"
#include "dcpi/stacktops.h"
#include "dcpi/symtab.h"
#include "dcpi/unwind.h"
#include "fixture.h"
#include "tap.h"

static const char prog_c[] =
	"#include <stdlib.h>\n"
	"volatile unsigned long sink;\n"
	"__attribute__((noinline)) void leaf(unsigned long n) {\n"
	"	for (unsigned long i = 0; i < n; i++) sink += i * i; }\n"
	"__attribute__((noinline)) void middle(unsigned long n) { leaf(n); sink++; }\n"
	"__attribute__((noinline)) void outer(unsigned long n) { middle(n); sink++; }\n"
	"int main(int argc, char **argv) {\n"
	"	unsigned long n = strtoul(argv[1], 0, 10);\n"
	"	for (int r = 0; r < 20; r++) outer(n);\n"
	"	return 0; }\n";

#define MAX_IMAGES 64
#define MAX_DEPTH 64

struct ctx {
	struct dcpi_loadmap *lm;
	int32_t pid;
	struct dcpi_unwind_table tables[MAX_IMAGES];
	int built[MAX_IMAGES];
	struct dcpi_symtab *syms[MAX_IMAGES];
	size_t records, samples, in_leaf, whole, through, truncated, norule, bad;
	uint64_t max_depth_bytes;
	/* libdw's unwinder on the same sample */
	Dwfl *dwfl;
	const struct dcpi_stack_sample *cur;
	uint64_t dw_pc[MAX_DEPTH];
	int dw_n;
	size_t compared, same, same_len;
	/* each walk again on its copy cut where the thread's whole walks
	   ended their reads (dcpi/stacktops.h, as the collector keeps it) */
	struct dcpi_stack_tops *tops;
	size_t cut, cut_same;
};


static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return ((struct ctx *)arg)->pid;
}

/* libdw reads memory through here: the sampled stack copy, nothing else */
static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct dcpi_stack_sample *st = ((struct ctx *)arg)->cur;

	(void)dwfl;
	if (addr < st->sp || addr - st->sp > st->stack_len || st->stack_len - (addr - st->sp) < 8)
		return false;
	memcpy(result, st->stack + (addr - st->sp), 8);
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct dcpi_stack_sample *st = ((struct ctx *)arg)->cur;
	Dwarf_Word regs[2] = { st->bp, st->sp }; /* DWARF registers 6 (rbp) and 7 (rsp) */

	dwfl_thread_state_register_pc(thread, st->ip);
	return dwfl_thread_state_registers(thread, 6, 2, regs);
}

static const Dwfl_Thread_Callbacks dw_thread_cb = {
	.next_thread = dw_next_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

static int dw_frame(Dwfl_Frame *frame, void *arg)
{
	struct ctx *x = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(frame, &pc, NULL) || x->dw_n >= MAX_DEPTH)
		return DWARF_CB_ABORT;
	x->dw_pc[x->dw_n++] = pc;
	return DWARF_CB_OK;
}

/* The child's modules, from its maps, for libdw to unwind with. */
static void dw_attach(struct ctx *x)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};

	if (!(x->dwfl = dwfl_begin(&cb)))
		return;
	dwfl_report_begin(x->dwfl);
	if (dwfl_linux_proc_report(x->dwfl, x->pid) || dwfl_report_end(x->dwfl, NULL, NULL) ||
	    !dwfl_attach_state(x->dwfl, NULL, x->pid, &dw_thread_cb, x)) {
		dwfl_end(x->dwfl);
		x->dwfl = NULL;
	}
}

static const char *name_of(struct ctx *x, int idx, uint64_t off)
{
	const struct dcpi_image *im = dcpi_loadmap_image(x->lm, idx);
	const struct dcpi_sym *s;

	if (idx < 0 || idx >= MAX_IMAGES || !im)
		return "?";
	if (!x->syms[idx] && dcpi_symtab_open(im->path, NULL, 0, NULL, &x->syms[idx]))
		return "?";
	s = dcpi_symtab_lookup(x->syms[idx], off);
	return s ? s->name : "?";
}

static struct dcpi_unwind_table *table_of(struct ctx *x, int idx)
{
	const struct dcpi_image *im = dcpi_loadmap_image(x->lm, idx);

	if (idx < 0 || idx >= MAX_IMAGES || !im)
		return NULL;
	if (!x->built[idx]) {
		x->built[idx] = 1 + !!dcpi_unwind_table_build(im->path, &x->tables[idx]);
	}
	return x->built[idx] == 1 ? &x->tables[idx] : NULL;
}

/* The walk of r on stk: its frames' pcs (the sampled one, then return
 * addresses, as libdw gives them; a caller is looked up at its return
 * address less one), how it ended (*r: the last frame's registers). */
static int walk_pcs(struct ctx *x, struct dcpi_unwind_regs *rp, const struct dcpi_unwind_stack *stk,
		    uint64_t *pcs, int *n)
{
	struct dcpi_unwind_regs r = *rp;
	int res = DCPI_UW_OK;

	for (*n = 0; *n < MAX_DEPTH;) {
		const struct dcpi_unwind_row *row = NULL;
		struct dcpi_unwind_table *t;
		uint64_t look = *n ? r.ip - 1 : r.ip, off;
		int idx = dcpi_loadmap_resolve(x->lm, x->pid, look, 0, &off);

		pcs[(*n)++] = r.ip;
		if (idx >= 0 && (t = table_of(x, idx)))
			row = dcpi_unwind_lookup_off(t, off);
		if ((res = dcpi_unwind_step(row, &r, stk, 0)) != DCPI_UW_OK)
			break;
	}
	*rp = r;
	return res;
}

static int on_record(void *arg, const void *raw, size_t len)
{
	struct ctx *x = arg;
	struct dcpi_sample s;
	struct dcpi_stack_sample st;
	struct dcpi_unwind_regs r;
	struct dcpi_unwind_stack stk;
	const char *names[MAX_DEPTH];
	uint64_t ours[MAX_DEPTH];     /* the walk on the whole copy */
	int n = 0, end;
	int depth = 0, res = DCPI_UW_OK, leaf = 0, seen_middle = 0, seen_outer = 0, seen_main = 0;
	uint64_t off;
	int idx;

	uint32_t type;

	if (len < 8)
		return 0;
	memcpy(&type, raw, 4);
	if (type != PERF_RECORD_SAMPLE)
		return 0;
	x->records++;
	if (dcpi_record_decode_stack_sample(raw, len, 0, &s, &st) || s.pid != x->pid ||
	    st.abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;
	x->samples++;
	r = (struct dcpi_unwind_regs){ st.ip, st.sp, st.bp };
	stk = (struct dcpi_unwind_stack){ st.stack, st.stack_len, st.sp, NULL };
	end = walk_pcs(x, &r, &stk, ours, &n);
	{
		int k;

		if (x->dwfl) {
			x->cur = &st;
			x->dw_n = 0;
			dwfl_getthread_frames(x->dwfl, x->pid, dw_frame, x);
			for (k = 0; k < n && k < x->dw_n && ours[k] == x->dw_pc[k]; k++)
				;
			x->compared++;
			x->same += k == (n < x->dw_n ? n : x->dw_n) && k > 0;
			x->same_len += k == n && k == x->dw_n;
			if (k != (n < x->dw_n ? n : x->dw_n) && getenv("DCPI_TEST_VERBOSE"))
				printf("# differs at frame %d of %d/%d: ours %#" PRIx64 ", libdw's %#" PRIx64 "\n",
				       k, n, x->dw_n, k < n ? ours[k] : 0, k < x->dw_n ? x->dw_pc[k] : 0);
		}
		r = (struct dcpi_unwind_regs){ st.ip, st.sp, st.bp };
	}
	while (depth < MAX_DEPTH) {
		const struct dcpi_unwind_row *row = NULL;
		struct dcpi_unwind_table *t;
		uint64_t look = depth ? r.ip - 1 : r.ip;

		idx = dcpi_loadmap_resolve(x->lm, x->pid, look, 0, &off);
		names[depth] = idx >= 0 ? name_of(x, idx, off) : "?";
		if (idx >= 0 && (t = table_of(x, idx)))
			row = dcpi_unwind_lookup_off(t, off);
		depth++;
		res = dcpi_unwind_step(row, &r, &stk, 0);
		if (res != DCPI_UW_OK)
			break;
		if (r.sp - st.sp > x->max_depth_bytes)
			x->max_depth_bytes = r.sp - st.sp;
	}
	{ /* on the copy cut at the thread's top, when known: the same walk */
		uint64_t reach = 0, b[MAX_DEPTH];
		uint64_t keep = dcpi_stack_tops_keep(dcpi_stack_tops_get(x->tops, s.tid), st.sp,
						     st.stack_len);
		struct dcpi_unwind_stack cut = { st.stack, keep, st.sp, &reach };
		struct dcpi_unwind_regs rb = { st.ip, st.sp, st.bp };
		int nb, eb = walk_pcs(x, &rb, &cut, b, &nb);

		if (keep < st.stack_len) {
			x->cut++;
			x->cut_same += end == eb && n == nb && !memcmp(ours, b, sizeof(b[0]) * (size_t)n);
		}
		if (eb == DCPI_UW_STOP_END)
			dcpi_stack_tops_set(x->tops, s.tid, reach > rb.sp ? reach : rb.sp);
		else if (eb == DCPI_UW_STOP_TRUNCATED && keep < st.stack_len)
			dcpi_stack_tops_drop(x->tops, s.tid);
	}
	for (int i = 0; i < depth; i++) {
		leaf |= i == 0 && !strcmp(names[i], "leaf");
		seen_middle |= !strcmp(names[i], "middle");
		seen_outer |= !strcmp(names[i], "outer");
		seen_main |= !strcmp(names[i], "main");
	}
	if (!leaf)
		return 0;
	x->in_leaf++;
	x->through += seen_middle && seen_outer && seen_main;
	x->whole += res == DCPI_UW_STOP_END;
	x->truncated += res == DCPI_UW_STOP_TRUNCATED;
	x->norule += res == DCPI_UW_STOP_NORULE;
	x->bad += res == DCPI_UW_STOP_BAD;
	return 0;
}

int main(void)
{
	struct dcpi_eventlist ev;
	struct dcpi_sampler_opts so = { .ring_pages = 256, .sideband = 1, .exclude_kernel = 1,
					.stack_bytes = 8192 };
	struct dcpi_sampler *smp = NULL;
	static struct ctx x;
	const char *prog = NULL;
	int go[2], status;
	pid_t pid;

	if (fx_setup("stacks"))
		return 1;
	prog = fx_path("prog");
	{
		FILE *f = fopen(fx_path("prog.c"), "w");

		if (!f || fputs(prog_c, f) < 0 || fclose(f) ||
		    fx_sh("cc -O2 -fomit-frame-pointer -o '%s' '%s'", prog, fx_path("prog.c"))) {
			T_SKIP("cannot build the workload");
			return t_done();
		}
	}
	memset(&ev, 0, sizeof(ev));
	if (dcpi_event_parse(&ev, "task-clock:F250000") || pipe(go))
		return 1;
	if ((pid = fork()) == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execl(prog, prog, "20000000", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	so.pid = pid;
	so.inherit = 1;
	if (dcpi_sampler_open(&dcpi_sampler_perf, &ev, &so, &smp) || dcpi_sampler_enable(smp)) {
		T_SKIP("perf_event_open refused: %s", dcpi_errmsg());
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return t_done();
	}
	x.lm = dcpi_loadmap_new(NULL);
	x.tops = dcpi_stack_tops_new();
	x.pid = pid;
	if (write(go[1], "x", 1) != 1)
		return 1;
	close(go[1]);
	/* the child's mappings once it has exec'd and runs */
	for (int i = 0; i < 200; i++) {
		struct timespec ts = { 0, 5000000 };
		char link[64], target[4096];
		ssize_t n;

		nanosleep(&ts, NULL);
		/* the exec happened when /proc says the program runs */
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = 0, !strcmp(target, prog)))
			break;
	}
	dcpi_loadmap_scan_pid(x.lm, pid);
	dw_attach(&x);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct timespec ts = { 0, 20000000 };

		dcpi_sampler_drain(smp, on_record, &x);
		nanosleep(&ts, NULL);
	}
	dcpi_sampler_drain(smp, on_record, &x);
	dcpi_sampler_close(smp);
	printf("# %zu sample records, %zu samples, %zu in leaf: %zu through middle, outer and main, %zu whole to the "
	       "end, %zu truncated, %zu without a rule, %zu refused; deepest %" PRIu64 " bytes\n",
	       x.records, x.samples, x.in_leaf, x.through, x.whole, x.truncated, x.norule, x.bad,
	       x.max_depth_bytes);
	T_OK(x.in_leaf >= 20, "samples in leaf (%zu)", x.in_leaf);
	T_OK(x.in_leaf && x.through * 100 >= x.in_leaf * 95,
	     "%zu of %zu leaf samples unwound through middle and outer to main", x.through,
	     x.in_leaf);
	T_OK(x.in_leaf && x.whole * 100 >= x.in_leaf * 95,
	     "%zu of %zu reach the outermost frame (_start)", x.whole, x.in_leaf);
	printf("# %zu of %zu samples' copies cut at the thread's top: %zu of them walked the same\n",
	       x.cut, x.samples, x.cut_same);
	T_OK(x.cut * 10 >= x.samples * 9, "the copies cut at the thread's top once known (%zu of %zu)",
	     x.cut, x.samples);
	T_OK(x.cut && x.cut_same == x.cut,
	     "every walk the same on its copy cut at the thread's top as on the whole copy "
	     "(%zu of %zu)", x.cut_same, x.cut);
	printf("# libdw unwound %zu of the samples too: %zu the same frames as far as both went, %zu "
	       "the same frames and as many\n", x.compared, x.same, x.same_len);
	T_OK(x.dwfl && x.compared >= 20, "libdw unwinds the same samples (%zu)", x.compared);
	T_OK(x.compared && x.same * 100 >= x.compared * 98,
	     "libdw's unwinder gives the same frames as ours: %zu of %zu samples", x.same, x.compared);
	T_OK(x.compared && x.same_len * 100 >= x.compared * 90,
	     "... and stops where ours does: %zu of %zu", x.same_len, x.compared);
	if (x.dwfl)
		dwfl_end(x.dwfl);
	for (int i = 0; i < MAX_IMAGES; i++) {
		if (x.built[i] == 1)
			dcpi_unwind_table_free(&x.tables[i]);
		if (x.syms[i])
			dcpi_symtab_close(x.syms[i]);
	}
	dcpi_loadmap_free(x.lm);
	dcpi_stack_tops_free(x.tops);
	fx_cleanup();
	return t_done();
}
