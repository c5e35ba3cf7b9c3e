/*
 * events: the one stream every view reads (plain lines, JSON lines, the
 * TUI, logs, the run record).  Nothing deep in the code prints; workers post
 * events and the main thread, which alone owns stdout and the terminal,
 * takes them off the queue and hands them to the views.
 *
 * Ownership: an event's strings belong to the event; events_push() takes
 * ownership of a heap-allocated event, events_pop() hands it to the caller,
 * who frees it with event_free().
 *
 * Threading: any thread may push; one thread (the main thread) pops.  The
 * queue is a mutex-protected FIFO with a condition variable; producers
 * never block on the consumer (the queue is unbounded, but a worker posts
 * at most one event per output line, and output lines are capped in
 * length by the transport).
 */
#ifndef PROVISION_EVENTS_H
#define PROVISION_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "phase.h"

struct facts;

/* The life of one node in a run; a state machine with timestamps (runner.h). */
enum node_state {
	NODE_PENDING = 0, /* not started yet */
	NODE_CONNECTING,
	NODE_RUNNING,
	NODE_DONE,	  /* finished; see the node's result */
	NODE_FAILED,	  /* a step or command failed on the node */
	NODE_UNREACHABLE, /* could not connect or authenticate */
	NODE_CANCELLED,	  /* not started or stopped because the run was interrupted */
};

enum event_kind {
	EVENT_NODE_STATE, /* node changed state; `state`, `text` = reason on failure */
	EVENT_STEP_START, /* a step began: phase, step */
	EVENT_STEP_END,	  /* a step ended: phase, step, result, duration_ms */
	EVENT_LINE,	  /* one output line: stream, text */
	EVENT_MESSAGE,	  /* a note about the node from provision itself: text */
	/*
	 * A pull's progress (a step's `::progress`, roles/README.md): phase,
	 * role, step; text = the image; done, total = its bytes so far and in
	 * all (0: not known yet).  At most about two a second per node.  Step
	 * "queued" (done and total 0): before a pull role's steps, each image
	 * of the node's share that it lacks, once (the estimate's business).
	 */
	EVENT_PROGRESS,
	/*
	 * A node's facts are in (the plan parsed them once, plan.c facts_fn):
	 * `facts`, posted before the facts step's end, only when they parsed.
	 * Views take what they show from it (the live view: the GPUs, the OS,
	 * the checks; the record: facts->text; the estimate: the machine-id)
	 * and parse no node text.  Not shown as such (plain, JSON).
	 */
	EVENT_FACTS,
	/*
	 * The roles a node takes part in, as the plan decided them from its
	 * facts (plan_node_roles(): the run's phases, the node's, and whether
	 * the role applies to it, GPU or not): `roles`, nr_roles flags in role
	 * set order.  Posted after EVENT_FACTS when the run has roles to run;
	 * the live view reads it instead of deciding again.  Not shown as such.
	 */
	EVENT_ROLES,
};

/* Results of a step (roles) or command (run). */
enum step_result {
	STEP_NONE = 0,
	STEP_UNCHANGED,
	STEP_CHANGED,
	STEP_FAILED,
	STEP_SKIPPED,
	STEP_OK,	   /* ad-hoc command that exited 0 */
	STEP_WOULD_CHANGE, /* provision plan: check says apply is needed */
	STEP_WARNED,	   /* a validation check that passes with a warning */
};

struct event {
	struct event *next; /* queue link */
	enum event_kind kind;
	size_t node;	      /* index of the node in the run */
	enum node_state state;
	enum step_result result;
	int stream;	      /* 1 stdout, 2 stderr (EVENT_LINE) */
	/* EVENT_LINE: the node's line held unsafe text (util.h text_unsafe); text is it cleaned */
	bool unsafe;
	int exit_status;      /* EVENT_STEP_END, EVENT_NODE_STATE(DONE/FAILED) */
	enum phase phase;     /* PHASE_NONE: none (printed by name: phase_name) */
	char *role;	      /* may be NULL */
	char *step;	      /* may be NULL */
	char *text;	      /* line, message or failure reason; may be NULL */
	/*
	 * Validation results are EVENT_STEP_END events of PHASE_VALIDATE:
	 * step = the check's id, result ok/failed/skipped, text = the
	 * observed value and "(hint: how to fix)", and these two set.
	 */
	char *expected, *observed;
	uint64_t at_ms;	      /* monotonic time of the event */
	uint64_t duration_ms; /* EVENT_STEP_END, final EVENT_NODE_STATE */
	/*
	 * EVENT_STEP_END of a role's step: how much of duration_ms its first
	 * check took (the rest is apply and the check after it); 0 unknown.
	 * The run record keeps it so that the ETA of a converged node counts
	 * only the checks.
	 */
	uint64_t check_ms;
	uint64_t done, total; /* EVENT_PROGRESS */
	/*
	 * EVENT_FACTS: the node's facts, borrowed: the run's result owns them
	 * (plan.h struct plan_node); valid while the event is handed to the
	 * views -- a view that keeps anything copies it.
	 */
	const struct facts *facts;
	bool *roles; /* EVENT_ROLES: owned by the event */
	size_t nr_roles;
	/*
	 * EVENT_STEP_START/END of a query (runner.h runner_query: a command's
	 * own question to a node, not a role's step): views log and record it
	 * as a step, the live view counts it in no role's cell.
	 */
	bool query;
};

struct events;

struct events *events_new(void);
/* Free the queue and any events still in it; accepts NULL. */
void events_free(struct events *q);
/* Take ownership of ev and queue it (any thread). */
void events_push(struct events *q, struct event *ev);
/*
 * Take the oldest event, waiting up to timeout_ms (0: do not wait, -1: wait
 * for ever).  Returns NULL when none arrived in time.  Main thread only.
 */
struct event *events_pop(struct events *q, int timeout_ms);
/* Wake a waiting events_pop() without an event (e.g. from a worker finishing). */
void events_wake(struct events *q);

/* Allocate an event with the given kind and node (no phase: PHASE_NONE). */
struct event *event_new(enum event_kind kind, size_t node);
void event_free(struct event *ev);
/* A copy of ev with copies of its strings and roles (facts: NULL; not queued). */
struct event *event_copy(const struct event *ev);

const char *node_state_name(enum node_state s);
const char *step_result_name(enum step_result r);

#endif
