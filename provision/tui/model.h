/*
 * tui model: what the views show, built from events alone.
 *
 * tui_model_event() is fed every event of a run (on the main thread, from
 * the runner's on_event) and keeps, per node, the state of each column
 * (facts, preflight, then one per role), the progress in steps, the
 * output log, the node's first failure and what it shows of the node's
 * facts (EVENT_FACTS: parsed by the plan, never here) and which roles it
 * takes part in (EVENT_ROLES: decided by the plan); per run, the mean step time (for the ETA)
 * and the validation matrix (checks.h).  No terminal here: the drawing is
 * tui.c's, and this file is unit-tested on its own (tests/unit/test_tui.c).
 *
 * Cost: every event is O(columns) at worst (a name lookup among a dozen
 * columns) plus one allocation for an output line; nothing here waits or
 * does I/O, so the runner's main loop is never held up.
 *
 * Ownership: the model owns copies of everything it keeps; the inventory,
 * role set and nodes it points at must outlive it.  Main thread only.
 */
#ifndef PROVISION_TUI_MODEL_H
#define PROVISION_TUI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../events.h"
#include "../facts.h"
#include "../inventory.h"
#include "../pulls.h"
#include "../role.h"
#include "../util.h"
#include "checks.h"

enum tui_cell_state {
	TUI_CELL_NA = 0,       /* the column does not apply to this node */
	TUI_CELL_PENDING,      /* will run, not started */
	TUI_CELL_RUNNING,      /* a step of it runs now */
	TUI_CELL_UNCHANGED,    /* done, nothing to change (facts, preflight: passed) */
	TUI_CELL_CHANGED,      /* done, something changed */
	TUI_CELL_WOULD_CHANGE, /* provision plan: up would change something */
	TUI_CELL_WARN,	       /* done, with warnings */
	TUI_CELL_SKIPPED,      /* skipped, with a reason */
	TUI_CELL_NOT_REACHED,  /* never ran: the node failed or the run stopped first */
	TUI_CELL_FAILED,
};

struct tui_cell {
	unsigned char state;  /* enum tui_cell_state */
	unsigned short total; /* steps (templates + scripts) this column has; 0: unknown */
	unsigned short done, changed, unchanged, skipped, failed;
};

struct tui_col {
	char *name;		 /* "facts", "preflight", a role's name, or as an event named it */
	const struct role *role; /* NULL for facts, preflight and columns known only from events */
	int phase;		 /* its phase (role_phases index); facts, preflight: -1 */
};

/* Kinds of log lines (for colour). */
enum tui_line_kind {
	TUI_LINE_OUT = 0, /* standard output of a step */
	TUI_LINE_ERR,	  /* standard error */
	TUI_LINE_STEP,	  /* "containerd › 20-config" when a step starts */
	TUI_LINE_RESULT,  /* how it ended */
	TUI_LINE_FAILED,  /* it failed, or the node did */
	TUI_LINE_NOTE,	  /* a message of provision (preflight) */
};

struct tui_log_line {
	unsigned char kind;
	char text[];
};

/*
 * A node's output: a ring of lines capped in count and bytes; the oldest
 * go first.  Line numbers are absolute (seq counts every line ever added),
 * so a position stays valid while older lines are dropped.
 */
struct tui_log {
	struct tui_log_line **ring;
	size_t cap, head, count, bytes, max_bytes;
	uint64_t seq;
};

void tui_log_init(struct tui_log *log, size_t max_lines, size_t max_bytes);
void tui_log_release(struct tui_log *log);
void tui_log_add(struct tui_log *log, enum tui_line_kind kind, const char *text);
/* The first line still held. */
uint64_t tui_log_first(const struct tui_log *log);
/* Line n (absolute), or NULL when dropped or not there yet. */
const struct tui_log_line *tui_log_get(const struct tui_log *log, uint64_t n);

struct tui_node {
	const struct node *node;
	enum node_state state;
	struct tui_cell *cells;		      /* one per column */
	int cur_col;			      /* the running column, -1 */
	char *cur_step;			      /* its step, NULL */
	int last_col;			      /* the column of the last step that ended, -1 */
	char *last_step;		      /* that step, NULL */
	enum step_result last_result;	      /* how it ended */
	uint64_t step_started_ms, step_first; /* when, and its first log line */
	bool in_step;			      /* between a step's start and end */
	uint64_t started_ms, ended_ms;
	unsigned steps_total, steps_done;
	int64_t eta_hist_ms; /* what the node took in earlier runs (eta.h); -1: unknown */
	struct tui_log log;
	bool have_facts; /* EVENT_FACTS came */
	/*
	 * The roles the node takes part in (EVENT_ROLES: the plan decided
	 * them; role set order); NULL until then: the inventory's guess.
	 */
	bool *plan_roles;
	char gpu[64];	/* "2× RTX 3090", "no GPU", "2 GPUs?" before facts */
	char roles[32]; /* "cp,nfs", "worker" */
	bool preflight_error, preflight_warn;
	/* The node's first failure, for `f` and the summary. */
	unsigned fail_order; /* 0: none; 1: the run's first failure */
	int fail_col;	     /* its grid column */
	char *fail_check;    /* its check in the matrix (a role, "preflight", a validation id) */
	char *fail_where, *fail_text, *fail_hint;
	bool in_step_failed;	       /* (while recording: the failure is a step that ran) */
	uint64_t fail_first, fail_end; /* its output: log lines [first, end) */
};

struct tui_model {
	const struct inventory *inv;
	const struct role_set *roles; /* NULL: no role columns */
	unsigned phases;
	bool check_only;
	struct tui_col *cols;
	size_t nr_cols, alloc_cols;
	struct tui_node *nodes;
	size_t nr;
	uint64_t started_ms, ended_ms; /* ended_ms 0: running */
	uint64_t step_ms_sum;	       /* finished role steps, for the mean */
	unsigned step_count;
	unsigned failures;
	bool after_facts; /* facts are in and preflight has run */
	bool interrupted;
	struct tui_checks checks;
	struct pulls pulls; /* the nodes' image pulls (EVENT_PROGRESS) */
};

struct tui_counts {
	size_t pending, running, done, failed, cancelled;
};

/*
 * Columns: facts, preflight, then every role whose phase bit is in
 * `phases` (role set order), then "validate" when the run validates; later
 * columns are added as events name them.
 */
void tui_model_init(struct tui_model *m, const struct inventory *inv, const struct role_set *rs,
		    unsigned phases, bool check_only, bool validate,
		    const struct node *const *nodes, size_t nr, uint64_t now);
void tui_model_release(struct tui_model *m);
/* Feed one event (its at_ms is the time used). */
void tui_model_event(struct tui_model *m, const struct event *ev);
/* The run is over: what still runs or waits is settled. */
void tui_model_end(struct tui_model *m, uint64_t now, bool interrupted);
/* A new round on the same nodes (provision status): states back to pending; logs stay. */
void tui_model_restart(struct tui_model *m, uint64_t now);

/* The column named `name`, added when new (rs role when it is one). */
size_t tui_model_column(struct tui_model *m, const char *name);

/* Whether the node has nothing left to run (its state may not say so until the run ends). */
bool tui_node_finished(const struct tui_node *n);
/* Progress in thousandths. */
unsigned tui_model_permille(const struct tui_model *m, size_t i);
/* Mean duration of a finished step; 0 when none finished yet. */
uint64_t tui_model_mean_step(const struct tui_model *m);
/*
 * Time left for node i: steps left x mean step time, less what the current
 * step has already run.  False when it cannot be told yet (no step has
 * finished) or the node is finished.
 */
/*
 * The node's time left: from earlier runs when they are known (the
 * median time the node took, minus what it has run so far), else steps left
 * times the mean step time of this run.
 */
bool tui_model_eta(const struct tui_model *m, size_t i, uint64_t now, uint64_t *eta_ms);
/* Give node i the duration earlier runs measured (-1: none). */
void tui_model_set_history(struct tui_model *m, size_t i, int64_t ms);
/*
 * The slowest node: among unfinished nodes the one with the most time left;
 * when all are finished, the one that took longest.  Returns its index and
 * that time in *ms, or SIZE_MAX when there is none.
 */
size_t tui_model_slowest(const struct tui_model *m, uint64_t now, uint64_t *ms, bool *finished);
void tui_model_counts(const struct tui_model *m, struct tui_counts *c);
/* The index of the first failure after (in failure order) node `after` (SIZE_MAX: the first). */
size_t tui_model_next_failure(const struct tui_model *m, size_t after);

const char *tui_cell_state_name(enum tui_cell_state s);

/*
 * The grid's columns are the phases of the run (role_phases: prep,
 * kube-packages, ..., validate), in that order, those that have a column
 * above; facts and preflight count in the first.  Fills phases[] (at most
 * TUI_MAX_PHASES) with role_phases indexes and returns how many.
 */
#define TUI_MAX_PHASES 32
size_t tui_model_phases(const struct tui_model *m, int *phases);
/* Whether column c counts in the phase of grid column k of phases[0..nr). */
bool tui_model_col_in_phase(const struct tui_model *m, size_t c, const int *phases, size_t k);
/*
 * Node i's cell of a phase: the columns of that phase together (failed if
 * one failed, running while one runs or some are done and some still to
 * run, changed with the sum of changed steps, ...); NA when none applies.
 */
void tui_model_phase_cell(const struct tui_model *m, size_t i, const int *phases, size_t k,
			  struct tui_cell *out);
/* The phase's name, whole, or its short form (kube-packages: kube), as the help lists them. */
const char *tui_phase_label(int phase, bool short_form);

/*
 * Split a failure text "what: output (hint: how)" into the message and
 * the hint (a new string, or NULL when there is none); *msg_len is the
 * length of the part before " (hint: ".
 */
char *tui_split_hint(const char *text, size_t *msg_len);
/* A short GPU summary from facts: "2× RTX 3090", "RTX 3090 + T4", "no GPU", "1 GPU, no driver". */
void tui_gpu_summary(char *buf, size_t size, const struct facts *f, bool utf8);

#endif
