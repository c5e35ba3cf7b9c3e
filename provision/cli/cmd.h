/*
 * cmd: the command table.  `grep cmd_table` finds every command.
 *
 * Each command lives in cli/cmd_NAME.c and exports one const descriptor.
 * Only commands that work are in the table: `provision --help`, the man page
 * and the bash completion are checked against it by tests/t0001-cli.sh.
 */
#ifndef PROVISION_CMD_H
#define PROVISION_CMD_H

#include "opt.h"

/* Exit statuses of the provision binary; documented in --help and provision(1). */
enum exit_status {
	EXIT_OK = 0,	       /* every node ok (or nothing to do) */
	EXIT_NODE_FAILED = 1,  /* at least one node or check failed */
	EXIT_USAGE = 2,	       /* bad usage or invalid input; nothing was changed */
	EXIT_LOCAL = 3,	       /* a failure on this machine (I/O, resources) */
	EXIT_INTERRUPTED = 130 /* stopped by ^C or SIGTERM */
};

struct cmd {
	const char *name;
	const char *summary; /* one line for the command list */
	const char *usage;   /* after "provision NAME ", e.g. "-i FILE [-o text|json]" */
	const char *description;
	const struct opt *options;
	/* Run with the positional words; returns an enum exit_status. */
	int (*exec)(int nr_pos, char **pos);
	int min_pos, max_pos; /* accepted count of positional words; max -1: any */
};

extern const struct cmd *const cmd_table[];
extern const struct cmd cmd_inventory;
extern const struct cmd cmd_run;
extern const struct cmd cmd_up;
extern const struct cmd cmd_plan;
extern const struct cmd cmd_status;
extern const struct cmd cmd_check;
extern const struct cmd cmd_bench;
extern const struct cmd cmd_add_node;
extern const struct cmd cmd_forget_host;
extern const struct cmd cmd_reset;
extern const struct cmd cmd_remove_node;
extern const struct cmd cmd_upgrade;
extern const struct cmd cmd_renew_certs;
extern const struct cmd cmd_history;
extern const struct cmd cmd_diff;
extern const struct cmd cmd_show;
extern const struct cmd cmd_logs;
extern const struct cmd cmd_bundle;
extern const struct cmd cmd_fetch;
extern const struct cmd cmd_backup;
extern const struct cmd cmd_restore;

const struct cmd *cmd_lookup(const char *name);
/* The exit-status section shared by every --help. */
void cmd_print_exit_codes(void);
/* Print the command's help (usage, description, options, exit codes) to stdout. */
void cmd_print_help(const struct cmd *cmd);
/* Print "provision CMD: MESSAGE", "usage: ..." and where the help is on stderr. */
void cmd_usage_error(const struct cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Entry point used by main(). */
int cmd_main(int argc, char **argv);

#endif
