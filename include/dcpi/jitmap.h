/* JIT code of running processes: what the runtimes say about the code
 * they generate, kept so the samples in it get names, and written out as
 * pseudo-images (dcpi/jitimage.h) the database keeps.
 *
 * Sources: jitdumps (jitmap_dump.c; dcpi_jitmap_watch_dump) and perf
 * maps, PROCROOT/PID/root/tmp/perf-NSPID.map (NSPID: the
 * pid in the process's own namespace), lines "START SIZE name" in hex
 * with or without 0x.  A process's map is first looked at when one of its
 * samples falls in memory no image describes, and then read on from where
 * it stopped whenever such a sample misses (at most every
 * DCPI_JITMAP_REREAD_NS), and to its end when the process exits.  The file
 * is opened once and kept open, so it is read after the runtime or anyone
 * else removed it, and never reopened by name.
 *
 * Safety (the daemon runs as root, the file belongs to whoever runs the
 * JIT): the path is resolved inside the process's root without following
 * a symbolic link in tmp/ or the file name (O_NOFOLLOW), the open does not
 * block (a FIFO cannot hang us), and the file is refused unless it is a
 * regular file owned by root or the process's real or effective user.
 * Reads stop at DCPI_JITMAP_MAX_BYTES; a process keeps at most
 * DCPI_JITMAP_MAX_ENTRIES entries; an entry over DCPI_JITMAP_MAX_FUNC bytes,
 * one that wraps around or reaches the kernel's half, and malformed lines
 * are skipped and counted.  Every refusal is reported once per file
 * through on_warning, naming the file and the reason.
 *
 * Stale maps: a map last written before the process started belongs to an
 * earlier process with the same pid: what it holds is not applied, and
 * only what is appended after is read (CPython appends; node truncates
 * and the JDK rewrites, both seen as the file shrinking: then it is read
 * from the start).  A stale map appended to before we first looked cannot
 * be told from a fresh one: its old lines are applied (the newest entry
 * for an address wins, so they only name addresses the new process has
 * not described).
 *
 * Ranges may overlap (code freed and reused): the entry read last wins.
 * Perf maps carry no time, so a sample is named by what the map says when
 * the sample is processed (within about a second of it).
 *
 * Each process's pseudo-image holds the entries its samples hit, in the
 * order first hit, so offsets given out stay valid: later images only
 * append.  A process gets a new key when it execs; keys name (process,
 * program) pairs until dcpi_jitmap_reap.
 */
#ifndef DCPI_JITMAP_H
#define DCPI_JITMAP_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/buf.h"
#include "dcpi/sha1.h"

#define DCPI_JITMAP_MAX_BYTES ((uint64_t)64 << 20)
#define DCPI_JITMAP_MAX_ENTRIES (1u << 20)
#define DCPI_JITMAP_MAX_FUNC ((uint64_t)16 << 20)
#define DCPI_JITMAP_MAX_CODE ((uint64_t)64 << 20)   /* code bytes kept per process */
#define DCPI_JITMAP_MAX_DUMP ((uint64_t)1 << 30)    /* bytes of a jitdump read */
#define DCPI_JITMAP_MAX_RECORD ((uint64_t)32 << 20) /* one jitdump record */
#define DCPI_JITMAP_MAX_LINE 4096
#define DCPI_JITMAP_MAX_PROCS 65536
#define DCPI_JITMAP_REREAD_NS 50000000ull   /* 50 ms */
#define DCPI_JITMAP_RETRY_NS 1000000000ull  /* no map yet: look again after 1 s */

/* Memory for what maps and jitdumps say (entries, names, code bytes,
 * source lines), counted as the bytes each keeps: for all processes
 * together, and for all processes of one user (real uid).  An entry or
 * line past either is skipped and counted (stats: over_budget), with one
 * warning per process; a process's charge is given back when it is
 * reaped.  Why both: each process may keep up to its own caps (about
 * 93 MB for a 64 MiB map), so six processes of one user made the daemon
 * 490 MB; the user's budget stops one user, the global one all of them. */
#define DCPI_JITMAP_BUDGET ((uint64_t)512 << 20)
#define DCPI_JITMAP_BUDGET_PER_UID ((uint64_t)128 << 20)

struct dcpi_jitmap_opts {
	const char *procroot;           /* NULL: "/proc" */
	/* a complete one-line message: a map refused or partly skipped */
	void (*on_warning)(void *arg, const char *msg);
	void *arg;
	uint64_t budget;                /* 0: DCPI_JITMAP_BUDGET */
	uint64_t budget_per_uid;        /* 0: DCPI_JITMAP_BUDGET_PER_UID */
	/* the processes are our own children (dcpi record), in our mount
	   namespace and of our user: a jitdump whose process exited before
	   its mapping was looked at is opened by its path, if it is a
	   regular file of ours (a loaded machine delays the look) */
	int own_children;
};

struct dcpi_jitmap;

int dcpi_jitmap_new(const struct dcpi_jitmap_opts *o, struct dcpi_jitmap **out);
void dcpi_jitmap_free(struct dcpi_jitmap *jm);

/* A user-space sample at ip of pid that no image describes.  1: JIT code,
 * *key names the (process, program) and *offset the file offset in its
 * pseudo-image; 0: nothing describes it.  time (the sample's, CLOCK_MONOTONIC
 * ns) bounds the jitdump records applied: the code live then is named; -errno only when out of memory. */
int dcpi_jitmap_resolve(struct dcpi_jitmap *jm, int32_t pid, uint64_t ip, uint64_t time,
			int64_t *key, uint64_t *offset);
/* pid mapped anonymous executable memory (a JIT's code space): look at
 * the process now, while it surely runs, rather than when its samples are
 * processed (about a second later, when a short run may be over).  Call it
 * as records are read, not in time order.  What is learnt (user, start
 * time, the map if it exists) is kept; a map created later is still
 * opened once the process is gone if the process shared our root. */
void dcpi_jitmap_watch(struct dcpi_jitmap *jm, int32_t pid);
/* A sample resolve() could not name, of a process whose map or jitdump is
 * open: runtimes write those through a buffer, so what describes it may
 * reach the file only later (node's jitdump: at exit).  Kept (ip, time
 * and event; at most DCPI_JITMAP_MAX_DEFER per process) to be named by
 * dcpi_jitmap_settle; so are those of a process that mapped anonymous
 * executable memory and has no map yet (the JDK writes its at exit).
 * 1: kept; 0: not (nothing to expect, or over a cap). */
#define DCPI_JITMAP_MAX_DEFER (1u << 18)
#define DCPI_JITMAP_MAX_DEFER_ALL (1u << 20)
/* Whether what resolve() could not name in pid now may be named later,
 * before the next merge (what dcpi_jitmap_defer would keep): 1 and *key,
 * the process's key (this run of the process, not its pid), else 0.  A
 * frame of a call stack, which cannot wait, is then resolved at the merge
 * by dcpi_jitmap_resolve_key. */
int dcpi_jitmap_pending(struct dcpi_jitmap *jm, int32_t pid, int64_t *key);
/* resolve() for the process of key, exited or not (before
 * dcpi_jitmap_reap), with its sources read to their end: 1 and *key2,
 * *offset as resolve() gives them, 0, or -ENOMEM. */
int dcpi_jitmap_resolve_key(struct dcpi_jitmap *jm, int64_t key, uint64_t ip, int64_t *key2,
			    uint64_t *offset);
int dcpi_jitmap_defer(struct dcpi_jitmap *jm, int32_t pid, uint64_t ip, uint64_t time,
		      unsigned ev);
/* Read every source to its end and call fn for each kept sample: hit 1
 * with its key and offset, or 0 (then it is unknown).  Before a merge. */
typedef int (*dcpi_jitmap_settle_fn)(void *arg, int32_t pid, uint64_t ip, unsigned ev, int hit,
				     int64_t key, uint64_t offset);
int dcpi_jitmap_settle(struct dcpi_jitmap *jm, dcpi_jitmap_settle_fn fn, void *arg);

/* pid mapped path, executable, at [start, end), and its name is
 * jit-N.dump: the jitdump convention.  The file is opened through
 * PROCROOT/PID/map_files (the file mapped, whatever its path says), checked
 * like a perf map, and its records are read as samples need them.  Call it
 * as records are read.  The runtime maps the file before it writes to it
 * (node: through a stdio buffer, its first write some milliseconds later,
 * longer on a loaded machine), so a file still shorter than a header is
 * kept open and its header checked as it grows; one still without a
 * header when its process exits is refused. */
int dcpi_jitmap_watch_dump(struct dcpi_jitmap *jm, int32_t pid, uint64_t start, uint64_t end,
			   const char *path);
/* The command of pid if it was looked at (it mapped anonymous executable
 * memory, or a sample there missed): 1 and buf, else 0. */
int dcpi_jitmap_comm(struct dcpi_jitmap *jm, int32_t pid, char *buf, size_t len);
/* Whether path names a jitdump (its last component is jit-DIGITS.dump). */
int dcpi_jitmap_is_dump(const char *path);
/* pid exec'd at time (CLOCK_MONOTONIC ns): what its map said belongs to
 * the old program (state created after time, by a watch, is kept). */
void dcpi_jitmap_exec(struct dcpi_jitmap *jm, int32_t pid, uint64_t time);
/* pid exited: read its map to the end (the last entries the runtime
 * wrote), then keep it until dcpi_jitmap_reap. */
void dcpi_jitmap_exit(struct dcpi_jitmap *jm, int32_t pid);
/* Free what exited or exec'd; call once every key given out was used. */
void dcpi_jitmap_reap(struct dcpi_jitmap *jm);

/* The pseudo-image of key: appended to out, with its build-id and the
 * path it is shown under (the map file's path as the process saw it);
 * *pid is the process.  -ENOENT for a key not (or no longer) known. */
int dcpi_jitmap_image(struct dcpi_jitmap *jm, int64_t key, struct dcpi_buf *out,
		      uint8_t id[DCPI_SHA1_LEN], char *path, size_t pathlen, int32_t *pid);

/* The same for a merge, stored incrementally.  A process's first image
 * is named by its content (identical code from many processes: one
 * image); once it grows, the grown image gets an id of the process's own
 * (derived from the first, the process and this jitmap), and each later
 * merge's image, a superset at the same offsets, replaces the one stored
 * under that id (*replace set): one image per long-lived process, not
 * one per merge.  Returns 1, with id, path, pid and *size of the image
 * stored last and out untouched, when no function was placed since it was
 * stored: nothing to write.  Call dcpi_jitmap_image_stored once the image
 * built is on disk. */
int dcpi_jitmap_image_next(struct dcpi_jitmap *jm, int64_t key, struct dcpi_buf *out,
			   uint8_t id[DCPI_SHA1_LEN], char *path, size_t pathlen, int32_t *pid,
			   uint64_t *size, int *replace);
/* The image dcpi_jitmap_image_next built last for key is stored. */
void dcpi_jitmap_image_stored(struct dcpi_jitmap *jm, int64_t key);

struct dcpi_jitmap_stats {
	uint64_t maps;          /* map files opened */
	uint64_t refused;       /* map files refused (symlink, not regular, owner, ...) */
	uint64_t stale;         /* map files found stale */
	uint64_t entries;       /* entries read */
	uint64_t skipped;       /* lines skipped: malformed, huge, wrapping, over a cap */
	uint64_t hits;          /* samples named */
	uint64_t deferred;      /* samples kept until the next settle */
	uint64_t dumps;         /* jitdump files opened */
	uint64_t debug_entries; /* jitdump source-line entries seen (not kept yet) */
	uint64_t over_budget;   /* entries and lines skipped for the memory budgets */
	uint64_t bytes;         /* charged to the budget now, all processes */
};
void dcpi_jitmap_stats(const struct dcpi_jitmap *jm, struct dcpi_jitmap_stats *st);
/* What each user's processes hold against the budgets: up to max users
 * into out (those holding nothing too); returns how many there are. */
struct dcpi_jitmap_user {
	uint32_t uid;           /* real uid */
	uint64_t bytes;
};
size_t dcpi_jitmap_users(const struct dcpi_jitmap *jm, struct dcpi_jitmap_user *out, size_t max);

/* Perf-map text in memory (len bytes, need not end in a NUL or newline)
 * read as if appended to pid's map, whose path is then shown as
 * "/tmp/perf-PID.map": for tests and fuzzing, no file or /proc needed.
 * 0, or -ENOMEM. */
int dcpi_jitmap_feed_text(struct dcpi_jitmap *jm, int32_t pid, const char *text, size_t len);

/* A jitdump in memory taken as pid's (a memfd stands for the file): its
 * header is checked now (shorter than one: at pid's exit, as a file
 * being written), its records read as samples need them, as from a file.  For tests and fuzzing.  0, or -errno when no memfd could be
 * made. */
int dcpi_jitmap_feed_dump(struct dcpi_jitmap *jm, int32_t pid, const void *data, size_t len);

/* One perf-map line (no newline; need not be NUL-terminated): "START SIZE
 * NAME", START and SIZE in hex with an optional 0x, single spaces or tabs
 * between, NAME the rest of the line (not empty, may hold spaces).  0 and
 * the fields, or -EINVAL. */
int dcpi_jitmap_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size,
			   size_t *name_off);

#endif
