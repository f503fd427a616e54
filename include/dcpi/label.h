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
 *   cgroup  the cgroup v2 path (/proc/PID/cgroup "0::PATH"): a container
 *           or a systemd service
 * Values never hold ',' or a control byte (they are replaced by '_'), so
 * a label splits back into its values.  A process gone before it could be
 * looked at gets "?" for what /proc no longer says.
 *
 * A labeler remembers each process's label until its exec or exit, and
 * interns the labels; past the cap on distinct labels every new one is
 * "other" (id 0), and the caller counts those samples as the cap's cost.
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

/* A COMM record: pid is now comm (an exec or a rename); its label is
 * looked up afresh at its next sample, with this comm. */
void dcpi_labeler_comm(struct dcpi_labeler *l, int32_t pid, const char *comm);
/* A FORK record: pid inherits ppid's label (ppid, alive when it forks, is
 * looked up now if it was not yet). */
void dcpi_labeler_fork(struct dcpi_labeler *l, int32_t pid, int32_t ppid);
/* pid exited: forget it. */
void dcpi_labeler_exit(struct dcpi_labeler *l, int32_t pid);

#endif
