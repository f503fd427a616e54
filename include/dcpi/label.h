/* Labelled profiles (dcpid -label): which program, user or container a
 * sample's process belongs to, so that "who spent that time in libc?" can
 * be asked after the fact, as DCPI 2.22's labelled profiles allowed.
 *
 * A label is one value per chosen key, in the order comm, uid, cgroup:
 * "comm=xz,uid=1000,cgroup=/user.slice/user-1000.slice/session-2.scope".
 *   comm    the command name (the kernel's, at most 15 bytes), from the
 *           COMM records of exec and prctl, else /proc/PID/comm
 *   uid     the real user id (/proc/PID/status), a number: names are
 *           looked up where the profile is read, if at all
 *   cgroup  the cgroup v2 path: a container or a systemd service; the
 *           sample's own cgroup where the sampler gives it
 *           (PERF_SAMPLE_CGROUP: dcpi_labeler_get_cgroup), its id named by
 *           CGROUP records or a scan of the hierarchy; else, and for
 *           samples without it, /proc/PID/cgroup "0::PATH" as below
 * Values never hold ',' or a control byte (they are replaced by '_'), so
 * a label splits back into its values.  A process gone before it could be
 * looked at gets "?" for what /proc no longer says.
 *
 * A labeler follows each process, not its parent: a child has its
 * parent's label until its exec, when its user and cgroup are read again
 * (su, setpriv, runuser and cron change them before exec); a rename
 * changes the command only; dcpi_labeler_refresh, at each merge, reads
 * every live process's user and cgroup again (a daemon that drops its
 * privileges without an exec, a move to another cgroup).  Where samples
 * carry their cgroup, a move is seen at the first sample after it.  An exited
 * process's label is kept until dcpi_labeler_reap, so that its samples
 * named later (JIT code, at the merge) are still its.
 *
 * Labels are interned only when a sample needs one; past the cap on
 * distinct labels, or past a uid's share of it (cap / DCPI_LABEL_UID_SHARE:
 * one user renaming a process in a loop cannot use the others' share),
 * every new one is "other" (id 0), and the caller counts those samples as
 * the cap's cost.
 *
 * Ownership: a labeler owns its strings; a value pointer lives until the
 * labeler is freed.  Not thread-safe.
 */
#ifndef DCPI_LABEL_H
#define DCPI_LABEL_H

#include <stddef.h>
#include <stdint.h>

enum dcpi_label_key {
	DCPI_LABEL_COMM = 1 << 0,
	DCPI_LABEL_UID = 1 << 1,
	DCPI_LABEL_CGROUP = 1 << 2,
};

#define DCPI_LABEL_MAX 1024          /* default cap on distinct labels */
#define DCPI_LABEL_OTHER "other"     /* the label past the cap (id 0) */
#define DCPI_LABEL_UID_SHARE 4       /* a uid interns at most cap / this */

/* "comm", "uid,cgroup", ...: the keys, or -EINVAL with a message naming
 * the word that is none of them. */
int dcpi_label_parse(const char *arg, unsigned *keys);
/* The keys as dcpi_label_parse takes them, in canonical order. */
void dcpi_label_keys_str(unsigned keys, char *buf, size_t len);
/* (A value of a label is read with dcpi_profile_label_value, profile.h.) */

struct dcpi_labeler;

/* keys nonzero; procroot NULL: "/proc"; cap 0: DCPI_LABEL_MAX. */
int dcpi_labeler_new(unsigned keys, const char *procroot, size_t cap,
		     struct dcpi_labeler **out);
void dcpi_labeler_free(struct dcpi_labeler *l);

/* The label id of pid's samples (looked up once per process); 0 is
 * "other".  -ENOMEM only. */
int dcpi_labeler_get(struct dcpi_labeler *l, int32_t pid, uint32_t *id);
/* The label of an id dcpi_labeler_get returned. */
const char *dcpi_labeler_label(const struct dcpi_labeler *l, uint32_t id);
/* Labels kept apart so far (other not counted). */
size_t dcpi_labeler_count(const struct dcpi_labeler *l);

/* The label of a sample of pid that carried its task's cgroup id (0: it
 * did not: dcpi_labeler_get): pid's label with that cgroup's path, found
 * among the CGROUP records seen or, once a merge at most, by a scan of the
 * hierarchy; an id not found gives pid's label as /proc said.  -ENOMEM
 * only. */
int dcpi_labeler_get_cgroup(struct dcpi_labeler *l, int32_t pid, uint64_t cgroup,
			    uint32_t *id);
/* A CGROUP record: cgroup id is at path (from the hierarchy's root). */
void dcpi_labeler_cgroup(struct dcpi_labeler *l, uint64_t id, const char *path);
/* Where the cgroup v2 hierarchy is to be scanned for ids (default: its
 * mount, from PROCROOT/self/mountinfo; "": none).  -ENOMEM only. */
int dcpi_labeler_cgroup_root(struct dcpi_labeler *l, const char *dir);
/* Whether samples can carry the v2 cgroup's id: PERF_SAMPLE_CGROUP gives
 * the perf_event controller's cgroup, which is the v2 one unless
 * PROCROOT/cgroups binds perf_event to a v1 hierarchy (then: 0, and
 * cgroups come from /proc).  procroot NULL: "/proc". */
int dcpi_label_cgroup_samples(const char *procroot);

/* A COMM record: pid is now comm.  exec: a new program, whose user and
 * cgroup are read from /proc now; else a rename (prctl), which changes
 * the command only. */
void dcpi_labeler_comm(struct dcpi_labeler *l, int32_t pid, const char *comm, int exec);
/* A FORK record: pid inherits ppid's label (ppid, alive when it forks, is
 * looked up now if it was not yet). */
void dcpi_labeler_fork(struct dcpi_labeler *l, int32_t pid, int32_t ppid);
/* pid exited: its label is kept (read now if not yet) until the next
 * dcpi_labeler_reap, for its samples named later. */
void dcpi_labeler_exit(struct dcpi_labeler *l, int32_t pid);
/* Forget the processes that exited (after a merge named their samples). */
void dcpi_labeler_reap(struct dcpi_labeler *l);
/* Read every live process's user and cgroup again; a changed one is its
 * label from its next sample on.  One pass over the processes known, two
 * small /proc reads each. */
void dcpi_labeler_refresh(struct dcpi_labeler *l);

#endif
