/*
 * run_record: what `up`, `plan` and `check` do around a run for its state
 * folder (state.h, record.h, artifacts.h): take the folder's lock (and say
 * so when the last run was killed), fetch the artifacts the run's roles
 * need, estimate the run's duration from earlier runs, record every event,
 * and commit the run at the end.  Main thread only.
 *
 *   struct cli_run cr;
 *   ret = cli_run_begin(&cr, &begin);      // EXIT_* on refusal, after printing why
 *   cli_run_wrap(&cr, &plan_opts);          // events to the view and to the record
 *   plan_execute(&plan_opts, &res);
 *   cli_run_end(&cr, &res, exit_status);    // commit, the estimate against the real time
 *   cli_run_release(&cr);                   // unlock
 */
#ifndef PROVISION_CLI_RUN_RECORD_H
#define PROVISION_CLI_RUN_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../inventory.h"
#include "../plan.h"
#include "../record.h"
#include "../role.h"
#include "../secrets.h"
#include "../eta.h"
#include "../state.h"

struct cli_run_begin {
	const char *cmd_name; /* "up", "plan", "check" */
	const char *inventory_path, *phases_text, *state_dir;
	const struct inventory *inv;
	const struct role_set *roles;
	const struct node *const *nodes;
	size_t nr;
	unsigned phases;
	const unsigned *node_phases; /* per node, the phases it may run (add-node); NULL all */
	int forks;
	bool record; /* commit the run (up, check; not plan) */
	bool text;   /* plain text output: print the estimate and its accuracy */
	struct secrets *secrets;
	/* The state folder, open and locked (a session's: not unlocked here); NULL: locked here. */
	struct state *state;
};

struct cli_run {
	struct cli_run_begin b;
	struct state *state;
	struct record *rec;
	struct eta *eta;
	int64_t eta_ms;
	size_t eta_unknown; /* steps with no history: eta_ms is a lower bound */
	char *cache;	    /* the artifact cache */
	/*
	 * The view's ETA of node i changed (a reinstalled node: eta_machine);
	 * NULL: a line says so on stdout (text output).
	 */
	void (*on_eta)(size_t node, int64_t ms, void *data);
	void *eta_data;
	/* Files the command adds to the run's record (cli_plan_done.record). */
	struct state_files extra;
	/*
	 * Per node, the images a pull role is about to pull (EVENT_PROGRESS
	 * "queued"): their bytes as the record last saw them, and how many the
	 * record does not know; counted into the estimate when the role's pull
	 * step starts.
	 */
	uint64_t *queued_bytes;
	unsigned *queued, *queued_unknown;
};

/*
 * Open the state folder and take its lock (saying so, and recording the
 * killed run, when the last run was killed).  0, or an EXIT_* status
 * after printing why.  state_free() unlocks.
 */
int cli_run_lock(const char *cmd_name, const char *state_dir, const struct inventory *inv,
		 struct state **out);
/* Lock (unless b->state), fetch, estimate, start the record.  0, or an EXIT_* status after printing why. */
int cli_run_begin(struct cli_run *cr, const struct cli_run_begin *b);
/* Add the estimate and the record to po's event consumers (after the view). */
void cli_run_wrap(struct cli_run *cr, struct plan_opts *po);
/* Commit the run (when recording); prints where it went.  Returns exit_status or EXIT_LOCAL. */
int cli_run_end(struct cli_run *cr, const struct plan_result *res, int exit_status);
/* Unlock and free; accepts a cr whose begin failed. */
void cli_run_release(struct cli_run *cr);

/* The kind of a node for the ETA: its roles, and "gpu" when it declares GPUs. */
char *cli_node_kind(const struct node *n);

/*
 * Fetch the artifacts that the roles of `phases` may need on these nodes
 * (every artifact of the manifest with `all`) into cache.  `record`: fetch
 * pending ones too and write their hashes into the manifest.  Prints
 * progress and errors on stderr; returns an EXIT_* status.
 */
int cli_fetch_artifacts(const char *cmd_name, const struct role_set *rs,
			const struct inventory *inv, const struct node *const *nodes, size_t nr,
			unsigned phases, const char *cache, bool record, bool all);

/*
 * Open the state folder of a cluster for reading (history, diff, show, logs,
 * bundle): --state DIR, else beside the inventory.  Returns 0, or an EXIT_*
 * status after printing why (no folder, no run yet).
 */
int cli_state_open_ro(const char *cmd_name, const char *inventory, const char *state_opt,
		      struct state **out);

/* "2026-11-22 10:00:00" for a run's time. */
void cli_run_time(char *buf, size_t size, int64_t t);

#endif
