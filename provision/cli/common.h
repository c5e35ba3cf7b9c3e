/*
 * common: what several commands share: loading the inventory with its
 * diagnostics printed, selecting nodes with -l, the sudo password, and
 * writing whole lines to stdout/stderr.
 */
#ifndef PROVISION_CLI_COMMON_H
#define PROVISION_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "../inventory.h"

struct secrets;

/*
 * Load the inventory at `path` (required: -i).  Prints every diagnostic to
 * stderr; returns 0 with *out set, or EXIT_USAGE after printing.
 */
int cli_load_inventory(const char *cmd_name, const char *path, struct inventory **out);

/*
 * The nodes chosen by `limit` (NULL: all) in inventory order, as an array
 * the caller frees.  Returns 0, or EXIT_USAGE after printing the error.
 */
int cli_select_nodes(const char *cmd_name, const struct inventory *inv, const char *limit,
		     const struct node ***out, size_t *nr);

/*
 * The sudo password: $PROVISION_SUDO_PASSWORD, else the first line of
 * `file` (the inventory's ssh.sudo_password_file, may be NULL), else, when
 * `ask` is set and standard input is a terminal, read once without echo.
 * Returns NULL when none.  The caller wipes and frees it with
 * cli_free_secret().
 */
char *cli_sudo_password(bool ask, const char *file);
/*
 * The nodes' own sudo passwords: each node whose ssh.sudo_password_file is
 * not the inventory's default one gets the first line of its file in
 * node->sudo_password (own_sudo_password set), each file read once and each
 * password registered in secrets (may be NULL).  Neither
 * $PROVISION_SUDO_PASSWORD nor the terminal stand in for such a file: a file
 * that cannot be used is said, and its nodes get no password.  Returns 0,
 * or EXIT_USAGE when a password is too short to keep out of the output.
 */
int cli_node_sudo_passwords(const char *cmd_name, struct inventory *inv, struct secrets *secrets);
void cli_free_secret(char *s);

/*
 * Ask `question` (a y/N prompt) on the terminal, unless `yes` (--yes).
 * Returns 0 when confirmed; EXIT_USAGE after saying so when declined or
 * when standard input is not a terminal (then --yes is required).
 */
int cli_confirm(const char *cmd_name, bool yes, const char *question);

/*
 * The passphrase of the inventory's ssh.identity, asked once on the terminal
 * when the key is encrypted and no ssh-agent is running; NULL otherwise.
 */
char *cli_key_passphrase(const struct inventory *inv);

/* Write one whole line (a newline is added) with a single write(2). */
void cli_write_line(int fd, const char *prefix, const char *text, size_t len);
/* Each diagnostic of DL (file:line:col, message, hint) on stderr, a line each. */
void cli_print_diags(const struct diag_list *dl);

/* The roles folder: --roles, $PROVISION_ROLES, ./roles beside the binary's tree, or the installed one. */
const char *cli_roles_dir(const char *opt);
/* The bench workloads (provision-bench-ARCH): $PROVISION_BENCH_DIR, ./bench beside the binary. */
const char *cli_bench_dir(void);
struct cli_plan_done;
struct cli_plan_args;
/* bench, check --bench: the figures per node (a table, or one JSON object per node). */
int cli_bench_after(const struct cli_plan_args *a, const struct cli_plan_done *d);
/*
 * The limited container's CPU in millicores: `given` (--cpu-limit) when not
 * 0, else the smallest cpu_guarantee of the hub's profiles as the last run
 * that deployed the hub rendered them (the control plane's
 * /etc/provision/jupyterhub/values.yaml in the state folder), else 0 (the
 * bench computes it from the nodes' facts).  What it was taken from is
 * kept for the report.
 */
unsigned cli_bench_limit(unsigned given, const char *state_dir, const struct inventory *inv);

/*
 * The cluster's state folder on this machine: --state DIR, else beside the
 * inventory: lab-b.yaml -> lab-b.state.  Caller frees.
 */
char *cli_state_dir(const char *opt, const char *inventory_path);

struct plan_result;
struct cli_plan_done;
struct state_files;

/* What `up` and `plan` share. */
struct cli_plan_args {
	const char *cmd_name;
	const char *inventory, *limit, *phases, *roles, *output, *state;
	int forks;
	bool verbose, ask_sudo, channels, no_tui;
	bool check_only;
	bool check;	   /* provision check: facts, preflight and validation only */
	/* check --bench: the bench after the validation; provision bench: facts and bench only */
	bool bench, bench_only;
	int bench_repeat;	    /* 0: BENCH_REPEAT */
	unsigned bench_limit_milli; /* 0: the smallest hub profile's CPU guarantee */
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
	const char *identity_passphrase;
	const char *state_dir;
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

/* Load, validate, run and report; returns an enum exit_status. */
int cli_plan_run(const struct cli_plan_args *a);

/*
 * reset and remove-node: per node, what the reset removed and whether
 * reset-verify passed and a new SSH session works; prints the report and
 * returns d->ret, made EXIT_NODE_FAILED when a node is not proven clean.
 * *cp_clean: the control plane was among them and is clean.
 */
int cli_reset_report(const char *cmd_name, const struct cli_plan_done *d, bool *cp_clean);

#endif
