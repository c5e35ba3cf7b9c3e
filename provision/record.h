/*
 * record: the run record, a view of the event stream like the plain lines
 * and the TUI.  While the run goes on it writes each node's log
 * (STATE/logs/NODE.log: every step's start, output lines and result, with
 * the time since the run began) and collects facts and step timings from
 * the events; when the run is over, record_commit() adds what only the
 * run's result holds (rendered files, results, validation) and commits it
 * all to the state repository (state.h) as one run.
 *
 * Nothing reaches the record unredacted: event texts are redacted by the
 * runner before they are events, and what comes from the run's result
 * (rendered files, drift diffs) passes through the run's secrets here, then
 * state_scrub() in state.c.
 *
 * Threading: main thread only (record_event is an event consumer, runner.h).
 */
#ifndef PROVISION_RECORD_H
#define PROVISION_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "inventory.h"
#include "plan.h"
#include "record_files.h"
#include "runner.h"
#include "secrets.h"
#include "state.h"

struct record_opts {
	const char *state_dir;
	const char *command; /* "up", "check" */
	const char *inventory_path;
	const struct inventory *inv;
	const struct node *const *nodes; /* the run's nodes */
	size_t nr;
	const char *phases; /* as given (NULL: all) */
	bool steps; /* the run has phases (up); false for check: results are kept as they were */
	struct secrets *secrets;
};

struct record;

/* Start the record: the nodes' log files are begun (truncated). */
struct record *record_new(const struct record_opts *o, struct error *err);
void record_free(struct record *r);

/* An event consumer's on_event (runner.h; data = the record). */
void record_event(const struct event *ev, const struct node_status *st, void *data);

struct record_end {
	int exit_status;
	bool interrupted;
	int64_t eta_ms; /* the estimate made at the start; -1 none */
	/* The command's own files for the run (provision backup's note), or NULL. */
	const struct state_files *extra;
};

/* Commit the run; its id in id (41 bytes) when non-NULL. */
int record_commit(struct record *r, struct state *s, const struct plan_result *res,
		  const struct record_end *end, char id[41], struct error *err);

/*
 * A run that was killed left its lock and its logs behind: commit those
 * logs as a run of its own (result "killed"), so history shows it.  Does
 * nothing (returns 0) when no log changed since the last run.
 */
int record_commit_killed(struct state *s, const char *cluster, const struct state_lock_info *killed,
			 char id[41], struct error *err);

#endif
