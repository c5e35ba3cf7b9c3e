/*
 * session: one command's hold on a cluster, however many runs it makes.
 *
 * Theory of operation
 * -------------------
 * cli_session_open() loads the inventory and the roles once.  The first
 * pass (or query) asks for the secrets once (prompt.h: the sudo password
 * with -K, the nodes' own password files, the key's passphrase; the hub's
 * and the registries' credentials from their files), registers them for
 * redaction and keeps them in memory only: never in the environment.  The
 * first pass takes the state folder's lock, held until close.  Each node
 * gets one SSH session (the runner's transport), opened by the first pass
 * or query that needs it and kept for every later one.
 *
 * cli_session_pass() is one run as `up` makes it: select the nodes, ask to
 * confirm, estimate, the plan over them (plan_execute), the command's own
 * report, the record.  `upgrade` makes one pass per stage and batch,
 * `remove-node` two, the others one (cli_plan_run: open, pass, close).
 *
 * cli_session_query() is a command's own question to one node (kubectl -o
 * json, a file's bytes): run by the runner on the node's session, with
 * the run's secrets; its step and stderr go to a pass's views and record
 * like any step's: during a pass (a command's `after`) to that pass's,
 * before one (upgrade's versions, restore's upload) to the next pass's,
 * which shows and records them first (a command that stops before its
 * next pass records none of them).  Once the live view has given the
 * terminal back, an `after`'s queries go to the record only.
 *
 *   struct cli_session s;
 *   ret = cli_session_open(&s, &args);         // EXIT_* after printing why
 *   ret = cli_session_pass(&s, &args);         // as many as the command needs
 *   cli_session_close(&s);                     // sessions closed, unlocked, secrets wiped
 *
 * Main thread only.
 */
#ifndef PROVISION_CLI_SESSION_H
#define PROVISION_CLI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../inventory.h"
#include "../role.h"
#include "../util.h"

struct cli_session;
struct state;
struct transport;

/* What a pass does. */
enum run_mode {
	RUN_APPLY = 0, /* up, add-node, reset, remove-node, upgrade, backup...: the phases change nodes */
	RUN_PLAN,      /* provision plan: every step checked, nothing changed, nothing recorded */
	RUN_CHECK,     /* provision check: facts, preflight, validation and drift (bench: the bench too) */
	RUN_BENCH,     /* provision bench: facts and the bench only */
};

struct plan_result;
struct cli_plan_done;
struct state_files;

/* What `up` and `plan` share. */
struct cli_plan_args {
	const char *cmd_name;
	const char *inventory, *limit, *phases, *roles, *output, *state;
	int forks;
	bool verbose, ask_sudo, channels, no_tui;
	enum run_mode mode;
	bool bench; /* check --bench: the bench after the validation */
	int bench_repeat;	    /* 0: BENCH_REPEAT */
	unsigned bench_limit_milli; /* 0: the smallest hub profile's CPU guarantee */
	/* bench, check --bench: the limited container's CPU (bench.h cli_bench_limit) */
	unsigned (*bench_limit)(unsigned given, const char *state_dir, const struct inventory *inv);
	const char *junit; /* write the validation as JUnit XML here */
	/* provision add-node: the new nodes (names or ranges); NULL otherwise. */
	char **add_nodes;
	int nr_add_nodes;
	/* Lifecycle commands (reset, remove-node): these phases instead of up's. */
	unsigned phase_bits;
	bool skip_preflight;
	/* provision upgrade's stage on its way to the inventory's version: this
	 * version replaces cluster.kubernetes_version for the run; NULL otherwise. */
	const char *kubernetes_version;
	const char *const *env; /* plan_opts.env */
	/* After -l: the command's own choice of nodes (it may replace the array). */
	int (*select)(const struct cli_plan_args *a, const struct inventory *inv,
		      const struct node ***nodes, size_t *nr);
	/* Per selected node, the phases it takes part in (plan_opts.node_phases). */
	unsigned (*node_phases)(const struct cli_plan_args *a, const struct node *n);
	/* When set, "CONFIRM on N nodes (...)?" is asked (cli_confirm) unless yes. */
	const char *confirm;
	bool yes;
	/*
	 * After the run, before it is recorded: the command's own report and
	 * checks; returns the exit status (d->ret is the one so far).
	 */
	int (*after)(const struct cli_plan_args *a, const struct cli_plan_done *d);
	void *data; /* the command's own */
};

/* What a command's `after` gets: the run that just ended. */
struct cli_plan_done {
	const struct inventory *inv;
	const struct node *const *nodes;
	size_t nr;
	struct plan_result *res;
	const char *state_dir;
	struct cli_session *session; /* the run's session: cli_session_query() on its nodes */
	int ret; /* the exit status so far */
	/* Files `after` adds to the run's record (committed with it). */
	struct state_files *record;
};

/*
 * The options `up` and `plan` share, for a command's own `args`
 * (a struct cli_plan_args); needs ../role.h for ROLE_PHASE_LIST.
 */
#define CLI_PLAN_OPTIONS(args)                                                                     \
	OPT_STRING('i', "inventory", &(args).inventory, "FILE", "the inventory file (required)"), \
	OPT_STRING('l', "limit", &(args).limit, "NODES",                                           \
		   "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),               \
	OPT_STRING('p', "phases", &(args).phases, "LIST",                                          \
		   "only these phases, comma-separated: " ROLE_PHASE_LIST " (default: all)"),      \
	OPT_INT('f', "forks", &(args).forks, "N", 1, 4096, "at most N nodes at once (default 64)"), \
	CLI_RUN_VIEW_OPTIONS(args),                                                                \
	OPT_BOOL(0, "channel-per-command", &(args).channels,                                       \
		 "do not start the remote agent; one SSH channel per command")

/*
 * What every command that runs roles shows and where it reads from, for a
 * command's own `args` (a struct cli_plan_args): reset, remove-node, upgrade.
 */
#define CLI_RUN_VIEW_OPTIONS(args)                                                                 \
	OPT_BOOL(0, "no-tui", &(args).no_tui, "plain lines even on a terminal"),                   \
	OPT_CHOICE('o', "output", &(args).output, "FORMAT", "text|json",                           \
		   "text (lines) or json (one object per event)"),                                 \
	OPT_BOOL('v', "verbose", &(args).verbose, "also show unchanged steps and every output line"), \
	OPT_STRING(0, "roles", &(args).roles, "DIR",                                               \
		   "the roles folder (default: the installed roles)"),                             \
	OPT_STRING(0, "state", &(args).state, "DIR",                                               \
		   "this cluster's state folder (default: beside the inventory, NAME.state)"),     \
	OPT_BOOL('K', "ask-sudo-password", &(args).ask_sudo,                                       \
		 "ask once for the sudo password (or set PROVISION_SUDO_PASSWORD)")


struct cli_session {
	const char *cmd_name, *inventory_path;
	struct inventory *inv;
	struct role_set rs;
	bool have_roles, have_secrets;
	struct secrets *secrets;
	char *password, *passphrase, *hub_github_secret;
	char **reg_auth; /* cluster.registries' credentials (plan_opts.registry_auth) */
	char *state_dir;
	struct state *state;	  /* locked from the first pass on; NULL before */
	struct transport **conns; /* per inventory node: its SSH session, kept */
	bool ask_sudo, channels;
	/* During a pass's `after`: where a query's events go (the view and the record). */
	struct cli_session_pass *pass;
	/*
	 * A query's events outside a pass (upgrade's versions, restore's
	 * upload), held for the next pass: its views and record get them at its
	 * start, as its node's steps.  Dropped when no pass follows.
	 */
	struct event *held;
};

/* Load the inventory and the roles.  0, or an EXIT_* status after printing why. */
int cli_session_open(struct cli_session *s, const struct cli_plan_args *a);
/* The secrets (once; a pass and a query ask for them).  0, or EXIT_USAGE after printing why. */
int cli_session_secrets(struct cli_session *s);
/* One run (a's inventory, roles, state, ask_sudo and channels are the session's). */
int cli_session_pass(struct cli_session *s, const struct cli_plan_args *a);

/*
 * Run `command` on node n (one of the inventory's) on the node's session,
 * as root; every stdout line (without its newline; flags as the
 * transport's: a piece of a longer line) goes to on_stdout, never to a
 * view or log.  Shown, logged and recorded as the step ROLE › STEP of the
 * pass under way (in its `after`) or of the next one, its stderr lines
 * with it.  Returns 0
 * when the command ran (its exit status in *exit_status), or -1 with the
 * reason in err.
 */
struct cli_query {
	const char *role, *step;
	const char *command;
	const void *input; /* the command's stdin, or NULL */
	size_t input_len;
	int timeout_ms;
	void (*on_stdout)(void *ctx, const char *line, size_t len, unsigned flags);
	void *ctx;
};
int cli_session_query(struct cli_session *s, const struct node *n, const struct cli_query *q,
		      int *exit_status, struct error *err);
/*
 * The same, stdout gathered in out (at most max bytes; out->truncated
 * beyond); a command that exits non-zero is an error ("exit N").
 */
int cli_session_capture(struct cli_session *s, const struct node *n, const char *role,
			const char *step, const char *command, int timeout_ms, size_t max,
			struct strbuf *out, struct error *err);
/* Write a file on node n as put_file does (transport.h), as the step ROLE › STEP; 0, or -1 with err. */
int cli_session_put_file(struct cli_session *s, const struct node *n, const char *role,
			 const char *step, const char *path, const void *data, size_t len,
			 unsigned mode, struct error *err);
/*
 * Read a file of node n as get_file does (transport.h: streamed to
 * on_data, at most max bytes, checked against the node's SHA-256 and
 * size), as the step ROLE › STEP; 0, or -1 with err.
 */
int cli_session_get_file(struct cli_session *s, const struct node *n, const char *role,
			 const char *step, const char *path, uint64_t max,
			 int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
			 char sha_hex[65], uint64_t *size, struct error *err);

/*
 * A new SSH session to node n (not the kept one), as its login user, `true`
 * run there and the session closed: the node still takes logins (reset's
 * proof).  Shown and recorded as the step ROLE › STEP.  0, or -1 with err.
 */
int cli_session_login_check(struct cli_session *s, const struct node *n, const char *role,
			    const char *step, struct error *err);

/* Close the nodes' sessions, unlock, wipe the secrets; accepts a session whose open failed. */
void cli_session_close(struct cli_session *s);

/* Open, one pass, close; returns an enum exit_status. */
int cli_plan_run(const struct cli_plan_args *a);

#endif
