/* The labeler on a fake /proc: labels composed in key order from comm,
 * status and cgroup; values cleaned of commas and control bytes; a
 * process's label remembered until a COMM record or its exit; a gone
 * process labelled '?'; pid 0 the idle tasks; past the cap, 'other'.
 * And the -label argument. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/error.h"
#include "dcpi/label.h"
#include "fixture.h"
#include "tap.h"

static void put(const char *root, int pid, const char *file, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%d/%s", root, pid, file);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void proc(const char *root, int pid, const char *comm, int uid, const char *cgroup)
{
	char status[256], cg[256];

	snprintf(status, sizeof(status), "Name:\t%s\nUmask:\t0022\nUid:\t%d\t%d\t%d\t%d\n", comm,
		 uid, uid + 1, uid + 2, uid + 3);
	snprintf(cg, sizeof(cg), "0::%s\n", cgroup);
	put(root, pid, "comm", comm);
	put(root, pid, "status", status);
	put(root, pid, "cgroup", cg);
}

static const char *label_of(struct dcpi_labeler *l, int pid)
{
	uint32_t id = 99;

	if (dcpi_labeler_get(l, pid, &id))
		return "(error)";
	return dcpi_labeler_label(l, id);
}

static void test_parse(void)
{
	unsigned k = 0;
	char s[64];

	T_EQ(dcpi_label_parse("cgroup,comm", &k), 0, "-label cgroup,comm");
	T_EQ(k, DCPI_LABEL_COMM | DCPI_LABEL_CGROUP, "keys comm and cgroup");
	dcpi_label_keys_str(k, s, sizeof(s));
	T_STREQ(s, "comm,cgroup", "canonical order: comm,cgroup");
	T_EQ(dcpi_label_parse("comm,pid", &k), -EINVAL, "-label comm,pid refused");
	T_OK(strstr(dcpi_errmsg(), "'pid'") != NULL, "the message names pid: %s", dcpi_errmsg());
	T_EQ(dcpi_label_parse("comm,", &k), -EINVAL, "a trailing comma refused");
	T_EQ(dcpi_label_parse("", &k), -EINVAL, "nothing refused");
}

int main(void)
{
	char root[512];
	struct dcpi_labeler *l = NULL;
	uint32_t a, b;

	if (fx_setup("label"))
		return 1;
	test_parse();
	snprintf(root, sizeof(root), "%s", fx_path("proc"));
	mkdir(root, 0700);
	proc(root, 100, "xz\n", 1000, "/user.slice/session-2.scope");
	proc(root, 200, "we,ird\x01\n", 0, "/system.slice/a,b.service");

	if (dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID | DCPI_LABEL_CGROUP, root, 4, &l)) {
		printf("Bail out! %s\n", dcpi_errmsg());
		return 1;
	}
	T_STREQ(label_of(l, 100), "comm=xz,uid=1000,cgroup=/user.slice/session-2.scope",
		"comm, real uid and cgroup from /proc");
	T_STREQ(label_of(l, 200), "comm=we_ird_,uid=0,cgroup=/system.slice/a_b.service",
		"commas and control bytes replaced");
	T_STREQ(label_of(l, 0), "comm=swapper,uid=0,cgroup=/", "pid 0: the idle tasks");
	dcpi_labeler_get(l, 100, &a);
	proc(root, 100, "python3\n", 1000, "/user.slice/session-2.scope");
	dcpi_labeler_get(l, 100, &b);
	T_EQ(a, b, "remembered: /proc is read once per process");
	dcpi_labeler_comm(l, 100, "python3");
	T_STREQ(label_of(l, 100), "comm=python3,uid=1000,cgroup=/user.slice/session-2.scope",
		"after a COMM record (exec): looked up afresh");
	T_EQ(dcpi_labeler_count(l), 4, "four labels kept apart: the cap");
	T_STREQ(label_of(l, 300), "other", "a gone process past the cap: other");
	dcpi_labeler_exit(l, 200);
	put(root, 200, "comm", "sshd\n");
	T_STREQ(label_of(l, 200), "other", "pid 200 reused after its exit: a new label, past the cap");
	dcpi_labeler_free(l);

	/* fork and exec of processes gone before their first sample: the
	   child is its parent until its exec, which changes only the command */
	dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID, root, 0, &l);
	T_STREQ(label_of(l, 100), "comm=python3,uid=1000", "the parent, from /proc");
	dcpi_labeler_fork(l, 500, 100);
	T_STREQ(label_of(l, 500), "comm=python3,uid=1000", "a forked child (gone): its parent's label");
	dcpi_labeler_fork(l, 501, 100);
	dcpi_labeler_comm(l, 501, "sh,x");
	T_STREQ(label_of(l, 501), "comm=sh_x,uid=1000", "forked, then exec'd (gone): the new "
		"command, the parent's uid");
	dcpi_labeler_fork(l, 502, 200);
	T_STREQ(label_of(l, 502), "comm=sshd,uid=0", "the child of a parent not seen before: the "
		"parent looked up at the fork");
	dcpi_labeler_fork(l, 503, 999);
	T_STREQ(label_of(l, 503), "comm=?,uid=?", "the child of a process gone: '?'");
	dcpi_labeler_free(l);

	/* a gone process, without a cap to hit */
	dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID, root, 0, &l);
	dcpi_labeler_comm(l, 400, "short");
	T_STREQ(label_of(l, 400), "comm=short,uid=?", "gone before its first sample: comm from the "
		"COMM record, uid '?'");
	T_STREQ(label_of(l, 401), "comm=?,uid=?", "gone with no COMM record: all '?'");
	dcpi_labeler_free(l);
	fx_cleanup();
	return t_done();
}
