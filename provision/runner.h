/*
 * runner: runs work on many nodes at once, in a bounded sliding window.
 *
 * Theory of operation
 * -------------------
 * runner_run() starts min(forks, nodes) worker threads.  Each worker takes
 * the next node not yet started (a shared counter under a mutex: a sliding
 * window, like git's run_processes_parallel() and pdsh), opens that node's
 * transport session, calls the caller's node_fn with a `struct runner_job`,
 * closes the session and takes the next node.  A worker owns the session of
 * the node it is working on and nothing else; a failing node ends only its
 * own job.
 *
 * Workers never print.  Everything they have to say goes through
 * runner_post*() as events on one queue; the main thread (the caller of
 * runner_run) pops them, updates each node's state record (struct
 * node_status: a state machine with timestamps) and only then hands the
 * event to the caller's event consumers (the views).  So views only
 * ever read events and the status records, on the main thread.  A caller
 * that keeps records of its own (the plan: one per node for the whole run,
 * over many passes) asks for none: the runner then keeps only each node's
 * state, and every event is applied to a record once, by that caller.
 *
 * Interrupts: runner_run() installs SIGINT/SIGTERM handlers for its
 * duration.  The first signal stops scheduling: nodes not yet started are
 * marked cancelled, running commands finish.  A second signal cancels:
 * running commands are stopped (the transport polls runner_job_cancelled())
 * and their nodes end cancelled.  summary->interrupted tells the caller to
 * exit with EXIT_INTERRUPTED.
 *
 * Timeouts are the transport's: connect timeout per node and a timeout per
 * command, so every worker ends in bounded time.
 */
#ifndef PROVISION_RUNNER_H
#define PROVISION_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "inventory.h"
#include "secrets.h"
#include "transport.h"

/* The record of one node during a run; written only by the main thread. */
struct node_status {
	enum node_state state;
	uint64_t queued_ms, started_ms, connected_ms, ended_ms; /* monotonic; 0 = not yet */
	int exit_status; /* of the last command (run), -1 when none */
	char *reason;	 /* why it failed or was cancelled; NULL otherwise */
	enum phase phase; /* what it is doing now (PHASE_NONE: nothing, no phase) */
	char *role, *step;
	unsigned steps_done, steps_changed, steps_failed, steps_skipped;
	unsigned lines; /* output lines received */
};

struct runner_job;

/*
 * A view of the event stream (plain or JSON lines, the TUI, the run record
 * and the estimate): called on the main thread with every event, after the
 * node's status record was updated, and about every 100 ms (on_tick, may
 * be NULL) while a run goes on.  A run hands its events to a list of them,
 * in the order they were added (struct event_consumers).
 */
typedef void (*event_fn)(const struct event *ev, const struct node_status *st, void *data);
typedef void (*tick_fn)(void *data);
struct event_consumer {
	event_fn on_event;
	tick_fn on_tick;
	void *data;
};
#define EVENT_CONSUMERS_MAX 4
struct event_consumers {
	struct event_consumer c[EVENT_CONSUMERS_MAX];
	size_t nr;
};
/* Add a consumer at the end of the list (dies when the list is full: a bug). */
void event_consumers_add(struct event_consumers *l, event_fn on_event, tick_fn on_tick, void *data);
/* Hand ev to every consumer, in order. */
void event_consumers_event(const struct event_consumers *l, const struct event *ev,
			   const struct node_status *st);
void event_consumers_tick(const struct event_consumers *l);

struct runner_opts {
	const struct transport_ops *ops;
	int forks; /* at most this many nodes in flight; >= 1 */
	bool use_sudo; /* commands run as root (sudo when the login user is not root) */
	/* NULL: passwordless sudo only; not for a node with its own (struct node's
	 * own_sudo_password) */
	const char *sudo_password;
	/* Passphrase of the inventory's ssh.identity (nodes using that key); NULL: none. */
	const char *identity_passphrase;
	const char *passphrase_identity; /* the key file it unlocks */
	bool per_command_channels; /* the transport's fallback mode */
	/* Each command under a shell of its own (transport_exec.own_shell): users' commands. */
	bool own_shell;
	/* Values to redact from every line and message before it becomes an event. */
	struct secrets *secrets;
	/*
	 * When non-NULL (one slot per node, in node order): sessions are taken
	 * from here when open and left here at the end instead of being
	 * closed, so a later runner_run() on the same nodes reuses them.  The
	 * caller closes what is left with runner_sessions_close().
	 */
	struct transport **sessions;
	/*
	 * Worker thread: the node's work, with its session connected.  Return
	 * 0 when the node ended well, 1 when it failed (the reason posted
	 * with runner_job_fail() or from the last command), negative when the
	 * session was lost.
	 */
	int (*node_fn)(struct runner_job *job, void *data);
	void *data; /* node_fn's */
	/*
	 * Main thread: every event goes to these consumers, in order, after
	 * the node's status was updated (st: NULL when runner_run keeps no
	 * records); their on_tick about every 100 ms while the run goes on.
	 */
	struct event_consumers consumers;
	bool handle_signals; /* install SIGINT/SIGTERM handlers (the CLI does) */
};

struct runner_summary {
	size_t nodes, ok, failed, unreachable, cancelled;
	bool interrupted;
	uint64_t elapsed_ms;
};

/*
 * Run node_fn on every node.  Returns 0 when the run took place (whatever
 * the nodes' results, which are in *summary and status[]); status, when
 * non-NULL, receives one record per node (caller frees with
 * runner_status_release()), the one the consumers are handed with each
 * event; NULL: no records are kept and the consumers' st is NULL.
 */
int runner_run(const struct runner_opts *opts, const struct node *const *nodes, size_t nr,
	       struct runner_summary *summary, struct node_status **status);
void runner_status_release(struct node_status *status, size_t nr);
/* Update a status record with an event (what the runner does before on_event). */
void node_status_apply(struct node_status *st, const struct event *ev);

/* Worker side: the job of one node. */
size_t runner_job_index(const struct runner_job *job);
const struct node *runner_job_node(const struct runner_job *job);
struct transport *runner_job_transport(const struct runner_job *job);
/* True once the run is being cancelled (second ^C). */
bool runner_job_cancelled(const struct runner_job *job);
/* True once the run is stopping (first ^C): finish the current step, start no other. */
bool runner_job_stopping(const struct runner_job *job);

/*
 * Ask the running runner_run() to stop, as a ^C would (safe from a signal
 * handler or from the main thread, e.g. the TUI's `q`): the first call stops
 * scheduling and ends nodes after their current step, the second cancels
 * running commands.
 */
void runner_interrupt(void);
/* How many interrupts (signals and runner_interrupt calls) since the last reset. */
unsigned runner_interrupts(void);
/* Forget earlier interrupts (before a new command or status round). */
void runner_interrupt_reset(void);

/*
 * Of one command's output, the first RUNNER_OUTPUT_HEAD and about the last
 * RUNNER_OUTPUT_TAIL bytes become events (shown, logged, recorded); between
 * them one line "… N bytes cut".  Documented in roles/README.md and
 * provision(1).
 */
#define RUNNER_OUTPUT_HEAD (64u << 10)
#define RUNNER_OUTPUT_TAIL (64u << 10)

/*
 * Run a command on the job's node; every output line is posted as an
 * EVENT_LINE with the given phase/step (PHASE_NONE, NULL for ad-hoc commands), within
 * the caps above: every line still passes the job's filter.
 * Returns as transport_ops.exec.
 */
int runner_job_exec(struct runner_job *job, enum phase phase, const char *step, const char *command,
		    const void *input, size_t input_len, int timeout_ms,
		    struct transport_result *res, struct error *err);
/*
 * A filter every output line of this job passes through before it becomes
 * an event; it returns true when it consumed the line (protocol lines such
 * as `::set`).  flags: the transport's (TRANSPORT_LINE_CONT, _MORE): a piece
 * of a line longer than TRANSPORT_LINE_MAX.  NULL removes it.
 */
typedef bool (*runner_line_filter)(void *ctx, struct runner_job *job, int stream, const char *line,
				   size_t len, unsigned flags);
void runner_job_set_filter(struct runner_job *job, runner_line_filter fn, void *ctx);
/* Post an event built by the worker (takes ownership); its text is redacted. */
void runner_job_post(struct runner_job *job, struct event *ev);
/* Record why the node failed (posted with its final state). */
void runner_job_fail(struct runner_job *job, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void runner_job_set_exit(struct runner_job *job, int exit_status);
/* The node stops because the run is being interrupted; it ends cancelled, with this reason. */
void runner_job_interrupted(struct runner_job *job, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A query: one command on one node whose standard output is data for the
 * caller (kubectl -o json, a file's bytes), not lines to show.  A
 * runner_run() of that node alone with o's transport, sudo, secrets,
 * event consumers and signal handling (node_fn and sessions are the query's):
 * the node's session taken from *session and left there (connected first
 * when NULL; the caller closes it, runner_sessions_close()).  The command
 * is posted as a step (EVENT_STEP_START, then EVENT_STEP_END with result
 * ok or failed and the exit status; phase, role and step as given) with
 * its stderr lines (EVENT_LINE), within RUNNER_OUTPUT_HEAD/TAIL, so views,
 * node logs and records show it; each stdout line (without its newline,
 * flags as transport_line_fn's) goes to on_stdout on a worker thread, and
 * never into an event.  With put_path instead of command: put_file of
 * input (mode put_mode) to that path; with get_path: get_file.
 */
struct runner_query {
	enum phase phase; /* PHASE_NONE: none (a designated initializer must say so) */
	const char *role, *step;
	const char *command;
	const char *put_path;
	unsigned put_mode;
	const void *input; /* the command's stdin, or NULL; put_path: the file's bytes */
	size_t input_len;
	int timeout_ms;
	void (*on_stdout)(void *ctx, const char *line, size_t len, unsigned flags);
	void *ctx;
	/*
	 * With get_path instead of command: the transport's get_file of that
	 * path (at most get_max bytes, each piece to on_data with ctx), its
	 * SHA-256 into get_sha (65) and its size into *get_size.
	 */
	const char *get_path;
	uint64_t get_max;
	int (*on_data)(void *ctx, const void *data, size_t len);
	char *get_sha;
	uint64_t *get_size;
};
/*
 * 0 when the command ran (its exit status in *exit_status; put_path: 0),
 * or negative (enum transport_err) with the reason in err: unreachable,
 * lost, timed out.
 */
int runner_query(const struct runner_opts *o, const struct node *node, struct transport **session,
		 const struct runner_query *q, int *exit_status, struct error *err);

/*
 * forget-host: the host key node n offers now, by the handshake alone
 * (transport_host_key_scan on the node's target): no login, nothing
 * checked against known_hosts or written.  0, or negative with err.
 */
int runner_host_key(const struct node *n, struct transport_host_key *out, struct error *err);

/* Close every session left in `sessions` (nr slots); accepts NULL. */
void runner_sessions_close(const struct transport_ops *ops, struct transport **sessions, size_t nr);

/* Fill a transport target from a node and the run's options. */
void runner_target_from_node(struct transport_target *t, const struct node *node,
			     const struct runner_opts *opts);

#endif
