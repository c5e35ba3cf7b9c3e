/*
 * common: what several commands share: loading the inventory with its
 * diagnostics printed, selecting nodes with -l, and the folders provision
 * reads from and writes to (roles, bench workloads, a cluster's state).
 * The printers are print.h's, the prompts prompt.h's, a run session.h's.
 */
#ifndef PROVISION_CLI_COMMON_H
#define PROVISION_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "../inventory.h"

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
 * The nodes named on the command line (NAMES, NR of them: names or ranges
 * as -l takes them), as a selection array of inv->nr_nodes flags the caller
 * frees; NULL after printing the error (EXIT_USAGE for the caller).
 */
bool *cli_select_named(const char *cmd_name, const struct inventory *inv, char *const *names,
		       int nr);

/* The roles folder: --roles, $PROVISION_ROLES, ./roles beside the binary's tree, or the installed one. */
const char *cli_roles_dir(const char *opt);
/* The bench workloads (provision-bench-ARCH): $PROVISION_BENCH_DIR, ./bench beside the binary. */
const char *cli_bench_dir(void);

/*
 * The cluster's state folder on this machine: --state DIR, else beside the
 * inventory: lab-b.yaml -> lab-b.state.  Caller frees.
 */
char *cli_state_dir(const char *opt, const char *inventory_path);

#endif
