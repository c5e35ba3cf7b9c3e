/*
 * tui: the live terminal view of a run (`up`, `plan`; later `add-node`,
 * `check`) and the status view (`provision status`).  The third view of
 * the event stream beside the plain and JSON lines (view.h); the theory of
 * operation is at the top of tui.c.
 *
 * Use (main thread only):
 *
 *   t = tui_start(&cfg, &err);           NULL: no usable terminal, use view.h
 *   event_consumers_add(&plan_opts.consumers, tui_event, tui_tick, t);
 *   plan_execute(...);
 *   tui_run_end(t, res.interrupted);     stays while a person looks at a failure
 *   tui_stop(t);                         the terminal is given back
 *   ...print the usual summary...
 *   tui_print_summary(t, exit_status);   which nodes changed, failed, the status
 *   tui_free(t);
 */
#ifndef PROVISION_TUI_H
#define PROVISION_TUI_H

#include <stdbool.h>
#include <stddef.h>

#include "../events.h"
#include "../inventory.h"
#include "../role.h"
#include "../runner.h"
#include "../util.h"
#include "checks.h"

enum tui_kind {
	TUI_RUN,    /* live progress of a run: the grid of phases */
	TUI_STATUS, /* provision status: the grid of checks, refreshed */
};

struct tui_config {
	enum tui_kind kind;
	const char *command; /* "up", "plan", "status": the title */
	const struct inventory *inv;
	const struct role_set *roles; /* NULL: no role columns */
	unsigned phases;	      /* the phases that run (plan.h bits) */
	bool check_only;	      /* plan: "would change" */
	bool validate;		      /* the run ends with the validation checks */
	bool checks_first;	      /* open on the checks (provision check) */
	const struct node *const *nodes;
	size_t nr;
	int refresh_s; /* TUI_STATUS: seconds between rounds */
	/* Per node, what earlier runs of the command took (eta.h); NULL or -1: unknown. */
	const int64_t *eta_hist_ms;
};

struct tui;

/* Take the terminal and draw the first frame; NULL (reason in err) when it cannot. */
struct tui *tui_start(const struct tui_config *cfg, struct error *err);
/* An event consumer's on_event (runner.h; data = the tui). */
void tui_event(const struct event *ev, const struct node_status *st, void *data);
/* Its on_tick: keys and at most ~10 frames a second. */
void tui_tick(void *data);
/* Node i's expected time changed (run_record.h on_eta): its ETA from now on. */
void tui_node_eta(size_t i, int64_t ms, void *data);
/*
 * The run is over.  When a node failed and the run was not interrupted, the
 * view stays on the first failure until the person leaves with q.
 */
void tui_run_end(struct tui *t, bool interrupted);
/* Give the terminal back (and what stderr held); safe to call twice. */
void tui_stop(struct tui *t);
/* After the command's own summary: nodes that changed and failed, and the exit status. */
void tui_print_summary(struct tui *t, int exit_status);
void tui_free(struct tui *t);

/* ---- provision status ---- */

/* The checks the status view shows; the caller fills them after each round. */
struct tui_checks *tui_status_checks(struct tui *t);
/* A round begins (states back to pending). */
void tui_status_round(struct tui *t);
/* A round is over and its checks are in (what it did not check becomes n/a). */
void tui_status_done(struct tui *t);
/*
 * Until the next round is due (refresh_s after the last), `r`, or `q`.
 * Returns true when the person quit.
 */
bool tui_status_wait(struct tui *t);
/* The person asked to leave (q, ^C). */
bool tui_quit_requested(const struct tui *t);

#endif
