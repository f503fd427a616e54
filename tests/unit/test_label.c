/* The labeler on a fake /proc: labels composed in key order from comm,
 * status and cgroup; values cleaned of commas and control bytes; a
 * process's label remembered until a COMM record or its exit; a gone
 * process labelled '?'; pid 0 the idle tasks; past the cap, 'other'.
 * And the -label argument. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	/* keys are whole words: no prefix, no longer word, no other case */
	T_EQ(dcpi_label_parse("co", &k), -EINVAL, "-label co (a prefix of comm) refused");
	T_EQ(dcpi_label_parse("uid,c", &k), -EINVAL, "-label uid,c refused");
	T_EQ(dcpi_label_parse("comms", &k), -EINVAL, "-label comms refused");
	T_EQ(dcpi_label_parse("UID", &k), -EINVAL, "-label UID refused");
	T_EQ(dcpi_label_parse(",comm", &k), -EINVAL, "a leading comma refused");
	T_EQ(dcpi_label_parse("uid,uid", &k), 0, "a key twice is that key");
	T_EQ(k, DCPI_LABEL_UID, "... uid alone");
}

/* The label follows the process, not its parent: su/setpriv/runuser (a
 * setuid, then an exec), a cgroup move before an exec, a daemon dropping
 * its privileges without an exec (seen at the next merge's refresh), and
 * an exited process's samples named later (JIT code at the merge). */
static void test_follows(const char *root)
{
	struct dcpi_labeler *l = NULL;

	dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID | DCPI_LABEL_CGROUP, root, 0, &l);
	proc(root, 600, "su\n", 0, "/user.slice/session-1.scope");
	T_STREQ(label_of(l, 600), "comm=su,uid=0,cgroup=/user.slice/session-1.scope", "su, root");
	dcpi_labeler_fork(l, 601, 600);
	proc(root, 601, "su\n", 1000, "/user.slice/session-1.scope"); /* setuid(1000) */
	dcpi_labeler_comm(l, 601, "job", 1);
	T_STREQ(label_of(l, 601), "comm=job,uid=1000,cgroup=/user.slice/session-1.scope",
		"su's child after setuid and exec: its own uid, not its parent's");
	dcpi_labeler_fork(l, 602, 600);
	proc(root, 602, "su\n", 0, "/system.slice/batch.service"); /* moved, then exec */
	dcpi_labeler_comm(l, 602, "batch", 1);
	T_STREQ(label_of(l, 602), "comm=batch,uid=0,cgroup=/system.slice/batch.service",
		"a cgroup move before the exec: the new cgroup");
	proc(root, 603, "httpd\n", 0, "/system.slice/httpd.service");
	T_STREQ(label_of(l, 603), "comm=httpd,uid=0,cgroup=/system.slice/httpd.service",
		"a daemon, root at first");
	proc(root, 603, "httpd\n", 33, "/system.slice/httpd.service"); /* setuid(33), no exec */
	T_STREQ(label_of(l, 603), "comm=httpd,uid=0,cgroup=/system.slice/httpd.service",
		"until the next merge, its label stays");
	dcpi_labeler_refresh(l);
	T_STREQ(label_of(l, 603), "comm=httpd,uid=33,cgroup=/system.slice/httpd.service",
		"after the merge's refresh: the uid it dropped to");
	proc(root, 604, "java\n", 1000, "/user.slice/session-1.scope");
	dcpi_labeler_comm(l, 604, "java", 1);
	dcpi_labeler_exit(l, 604);
	fx_sh("rm -rf '%s/604'", root);
	T_STREQ(label_of(l, 604), "comm=java,uid=1000,cgroup=/user.slice/session-1.scope",
		"exited before its first sample, named at the merge (JIT code): its label, not '?'");
	dcpi_labeler_reap(l);
	T_STREQ(label_of(l, 604), "comm=?,uid=?,cgroup=?", "after the reap it is forgotten");
	dcpi_labeler_free(l);
}

/* A process renaming itself in a loop: nothing interned without samples,
 * and with samples only its uid's share of the cap, so other users'
 * processes keep labels of their own. */
static void test_shares(const char *root)
{
	struct dcpi_labeler *l = NULL;
	char name[16];
	uint32_t id;
	int others = 0;

	dcpi_labeler_new(DCPI_LABEL_COMM, root, 16, &l);
	proc(root, 700, "spin\n", 1000, "/user.slice");
	T_STREQ(label_of(l, 700), "comm=spin", "the renamer, as it starts");
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		dcpi_labeler_comm(l, 700, name, 0);
	}
	T_EQ(dcpi_labeler_count(l), 1, "100 renames without a sample: nothing interned");
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		dcpi_labeler_comm(l, 700, name, 0);
		dcpi_labeler_get(l, 700, &id);
		others += id == 0;
	}
	T_EQ(dcpi_labeler_count(l), 16 / DCPI_LABEL_UID_SHARE,
	     "100 renames with samples: uid 1000 interns its share of the cap (%zu), no more",
	     dcpi_labeler_count(l));
	T_EQ(others, 100 - (16 / DCPI_LABEL_UID_SHARE - 1), "the rest of its samples: other");
	proc(root, 701, "sshd\n", 0, "/system.slice");
	T_STREQ(label_of(l, 701), "comm=sshd", "another user's process keeps a label of its own");
	/* the cap itself: 16 labels, 4 a uid; uids 1000 (4), 0, 1, 2 fill it */
	for (int u = 0; u < 3; u++)
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof(name), "u%di%d\n", u, i);
			proc(root, 710 + 10 * u + i, name, u, "/");
			dcpi_labeler_get(l, 710 + 10 * u + i, &id);
		}
	T_EQ(dcpi_labeler_count(l), 16, "the cap: 16 labels");
	proc(root, 790, "late\n", 7, "/");
	T_STREQ(label_of(l, 790), "other", "past the cap, any uid's new label: other");
	dcpi_labeler_free(l);
}

static const char *label_cg(struct dcpi_labeler *l, int pid, uint64_t cg)
{
	uint32_t id = 99;

	if (dcpi_labeler_get_cgroup(l, pid, cg, &id))
		return "(error)";
	return dcpi_labeler_label(l, id);
}

/* A sample's own cgroup (PERF_SAMPLE_CGROUP) wins over /proc's: its id
 * named by a CGROUP record, or by a scan of the hierarchy (once a merge,
 * without following links); an id found nowhere gives /proc's label. */
static void test_cgroup_ids(const char *root)
{
	struct dcpi_labeler *l = NULL;
	char cg[600], dir[700];
	struct stat st;
	uint32_t a, b;

	dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID | DCPI_LABEL_CGROUP, root, 0, &l);
	snprintf(cg, sizeof(cg), "%s", fx_path("cgroot"));
	mkdir(cg, 0700);
	T_EQ(dcpi_labeler_cgroup_root(l, cg), 0, "a hierarchy to scan");
	proc(root, 800, "web\n", 33, "/system.slice/web.service");
	T_STREQ(label_cg(l, 800, 0), "comm=web,uid=33,cgroup=/system.slice/web.service",
		"a sample without a cgroup: /proc's");
	dcpi_labeler_cgroup(l, 0x99, "/jobs/b,atch");
	T_STREQ(label_cg(l, 800, 0x99), "comm=web,uid=33,cgroup=/jobs/b_atch",
		"a sample in cgroup 0x99 (a CGROUP record's): that cgroup, cleaned");
	dcpi_labeler_get_cgroup(l, 800, 0x99, &a);
	dcpi_labeler_get_cgroup(l, 800, 0x99, &b);
	T_EQ(a, b, "the same label again");
	T_STREQ(label_cg(l, 800, 0), "comm=web,uid=33,cgroup=/system.slice/web.service",
		"a sample without one still gets /proc's");
	T_STREQ(label_cg(l, 800, 0x12345678), "comm=web,uid=33,cgroup=/system.slice/web.service",
		"an id found nowhere (not in the records, not in the scan): /proc's");
	snprintf(dir, sizeof(dir), "%s/k8s", cg);
	mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/k8s/pod1", cg);
	mkdir(dir, 0700);
	stat(dir, &st);
	T_STREQ(label_cg(l, 800, (uint64_t)st.st_ino),
		"comm=web,uid=33,cgroup=/system.slice/web.service",
		"a cgroup made since the last scan: not looked for again before the next merge");
	dcpi_labeler_refresh(l);
	T_STREQ(label_cg(l, 800, (uint64_t)st.st_ino), "comm=web,uid=33,cgroup=/k8s/pod1",
		"after the merge: found by the scan");
	snprintf(dir, sizeof(dir), "%s/link", cg);
	T_EQ(symlink("/etc", dir), 0, "a link in the hierarchy");
	stat("/etc/ssl", &st);
	dcpi_labeler_refresh(l);
	T_STREQ(label_cg(l, 800, (uint64_t)st.st_ino),
		"comm=web,uid=33,cgroup=/system.slice/web.service", "a link is not followed");
	dcpi_labeler_comm(l, 800, "web2", 0);
	T_STREQ(label_cg(l, 800, 0x99), "comm=web2,uid=33,cgroup=/jobs/b_atch",
		"a rename: the cgroup label made again with the new command");
	dcpi_labeler_free(l);

	dcpi_labeler_new(DCPI_LABEL_COMM, root, 0, &l);
	dcpi_labeler_cgroup(l, 0x99, "/jobs/batch");
	T_STREQ(label_cg(l, 800, 0x99), "comm=web", "without the cgroup key: the cgroup is no part");
	dcpi_labeler_free(l);
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

	if (dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID | DCPI_LABEL_CGROUP, root, 8, &l)) {
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
	dcpi_labeler_comm(l, 100, "python3", 1);
	T_STREQ(label_of(l, 100), "comm=python3,uid=1000,cgroup=/user.slice/session-2.scope",
		"after a COMM record (exec): looked up afresh");
	T_EQ(dcpi_labeler_count(l), 4, "four labels kept apart");
	T_STREQ(label_of(l, 300), "comm=?,uid=?,cgroup=?", "a gone process: '?'");
	dcpi_labeler_exit(l, 200);
	put(root, 200, "comm", "sshd\n");
	T_STREQ(label_of(l, 200), "comm=we_ird_,uid=0,cgroup=/system.slice/a_b.service",
		"exited: its label kept for its samples named later");
	dcpi_labeler_reap(l);
	T_STREQ(label_of(l, 200), "other", "pid 200 reused after the reap: a new label, past uid 0's "
		"share of the cap (2 of 8)");
	dcpi_labeler_free(l);

	/* fork and exec of processes gone before their first sample: the
	   child is its parent until its exec, which changes only the command */
	dcpi_labeler_new(DCPI_LABEL_COMM | DCPI_LABEL_UID, root, 0, &l);
	T_STREQ(label_of(l, 100), "comm=python3,uid=1000", "the parent, from /proc");
	dcpi_labeler_fork(l, 500, 100);
	T_STREQ(label_of(l, 500), "comm=python3,uid=1000", "a forked child (gone): its parent's label");
	dcpi_labeler_fork(l, 501, 100);
	dcpi_labeler_comm(l, 501, "sh,x", 1);
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
	dcpi_labeler_comm(l, 400, "short", 1);
	T_STREQ(label_of(l, 400), "comm=short,uid=?", "gone before its first sample: comm from the "
		"COMM record, uid '?'");
	T_STREQ(label_of(l, 401), "comm=?,uid=?", "gone with no COMM record: all '?'");
	dcpi_labeler_free(l);
	test_follows(root);
	test_shares(root);
	test_cgroup_ids(root);
	fx_cleanup();
	return t_done();
}
