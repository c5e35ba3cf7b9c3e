/*
 * state: a cluster's state folder on this machine and the git repository of
 * its runs (libgit2; this is the only file that includes <git2.h>).
 *
 * The state folder (default: beside the inventory, lab-b.yaml ->
 * lab-b.state) is a git work tree:
 *
 *   summary                  what the last run was: command, who, when, result
 *   inventory.yaml           the inventory as given
 *   validation               one line per check
 *   nodes/NODE/facts         the node's facts (without the gauges that move every minute)
 *   nodes/NODE/results       role, step, result, detail; one line per step
 *   nodes/NODE/timings       role, step, milliseconds, result, and the
 *                            milliseconds of its first check when known (read by the ETA)
 *   nodes/NODE/deployed      sha256, mode, owner, path, source of every file put on the node
 *   nodes/NODE/files/PATH    every rendered file as deployed (secrets redacted)
 *   logs/NODE.log            the node's log of its last run (written live)
 *   private/                 fetched files (admin.conf): never in the repository
 *   lock                     the lock of a run in progress: never in the repository
 *
 * (The run's files, their names and formats have one owner: record_files.h.)
 *
 * Each run is one commit whose tree is the previous commit's tree with the
 * run's files laid over it (nodes outside the run keep what they had), so
 * `git diff` between two commits is what changed on the cluster.  Trees are
 * built from the files handed to state_commit() and nothing else: no file of
 * the folder is ever added by a scan, so private/ cannot slip in; .gitignore
 * keeps a person's `git add -A` out of it too.  Every blob passes through
 * state_scrub() on its way in: a last line of defence behind the run's
 * secret redaction.
 *
 * Threading: main thread only (the run record is written by the main
 * thread; workers never see a struct state).  libgit2 errors are translated
 * into struct error here, on the thread that raised them.
 *
 * Ownership: state_open() returns a handle the caller frees with
 * state_free(); strings and arrays handed out belong to the caller.
 */
#ifndef PROVISION_STATE_H
#define PROVISION_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum {
	STATE_ERR = -1,
	STATE_ERR_BUSY = -2,	 /* the lock is held by a live run */
	STATE_ERR_NOTFOUND = -3, /* no such run or file */
	STATE_ERR_EMPTY = -4,	 /* no run recorded yet */
};

struct state;

/*
 * Open the state folder `dir`; with `create`, make the folder and its
 * repository when missing (mode 0700).  Without it, a folder with no
 * repository is STATE_ERR_EMPTY.
 */
int state_open(struct state **out, const char *dir, bool create, struct error *err);
void state_free(struct state *s);
const char *state_dir(const struct state *s);

/* ---- the lock of a run ---- */

struct state_lock_info {
	bool found; /* a lock file was there */
	bool alive; /* its process is still running (on this host) */
	long pid;
	char command[32], host[128], user[64], started[40];
};

/*
 * Take the folder's lock for `command` (flock on STATE/lock, which holds
 * pid, host, user, command and start time).  Returns 0 when taken; then
 * prev->found says an earlier run left its lock behind (it was killed:
 * flock dies with its process, the file does not).  STATE_ERR_BUSY when a
 * live run holds it (prev describes that run; err says so).
 */
int state_lock(struct state *s, const char *command, struct state_lock_info *prev,
	       struct error *err);
/* Remove the lock file and release the lock; accepts a state not locked. */
void state_unlock(struct state *s);

/* ---- writing a run ---- */

struct state_file {
	char *path; /* relative to the folder, '/'-separated */
	char *data;
	size_t len;
};

struct state_files {
	struct state_file *items;
	size_t nr, alloc;
};

/* Add (or replace) a file; data is copied. */
void state_files_add(struct state_files *f, const char *path, const void *data, size_t len);
void state_files_addf(struct state_files *f, const char *path, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
void state_files_release(struct state_files *f);

/*
 * Commit the files over the last run's tree, write them into the folder
 * and bring the index in step.  `message` is the commit message; `when_ms`
 * the wall-clock time of the run's start.  The new commit's id (40 hex
 * digits) goes to id when non-NULL.
 */
int state_commit(struct state *s, const struct state_files *files, const char *message,
		 uint64_t when_ms, char id[41], struct error *err);

/*
 * Remove from `sb` what must never be recorded whatever the roles forgot to
 * declare: PEM private key blocks, the values of keys named like secrets
 * (client-key-data, token, password, secret, certificate-key), and the
 * word after --token, --certificate-key or --password (kubeadm's join
 * line).  Returns how many were removed.
 */
size_t state_scrub(struct strbuf *sb);

/* ---- reading runs ---- */

struct state_run {
	unsigned number; /* 1 for the first run */
	char id[41];
	int64_t time;  /* seconds since the epoch (the run's start) */
	char *subject; /* first line of the message */
	char *body;
};

/* Every run, newest first.  STATE_ERR_EMPTY when there is none. */
int state_runs(struct state *s, struct state_run **runs, size_t *nr, struct error *err);
void state_runs_free(struct state_run *runs, size_t nr);

/*
 * Resolve a run given by a person: N (its number in `history`), ~K (K runs
 * before the last; ~0 the last), or a commit id prefix of 4+ hex digits.
 */
int state_resolve(struct state *s, const char *spec, char id[41], struct error *err);

/* A file of a run; STATE_ERR_NOTFOUND when the run has no such file. */
int state_read(struct state *s, const char *id, const char *path, struct strbuf *out,
	       struct error *err);

/*
 * The summary is lines of "key: value": the value of the first line for
 * `key`, blanks after the separator skipped ("" for an empty value), or
 * NULL when no line has it; caller frees.  The one reader of those lines
 * (the ETA, history, show, bundle).  A node's facts are read with
 * record_facts_parse() (record_files.h).
 */
char *state_summary_get(const char *summary, const char *key);

/* The paths of a run's files under `prefix` ("" for all), sorted; caller frees. */
int state_list(struct state *s, const char *id, const char *prefix, char ***paths, size_t *nr,
	       struct error *err);

enum state_change { STATE_ADDED, STATE_DELETED, STATE_MODIFIED };

/* Called for each file that differs between two runs, in path order. */
typedef int (*state_diff_fn)(void *ctx, enum state_change what, const char *path);

/* The files that differ between runs a (older) and b (newer). */
int state_diff(struct state *s, const char *a, const char *b, state_diff_fn fn, void *ctx,
	       struct error *err);

/* A unified diff of two texts (3 lines of context), appended to out. */
int state_text_diff(const char *old, size_t old_len, const char *new_, size_t new_len,
		    const char *old_label, const char *new_label, struct strbuf *out,
		    struct error *err);

#endif
