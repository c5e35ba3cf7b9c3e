/*
 * print: what the commands write on the screen at the end of a run, in
 * plain text (the live view has its own, tui/): the diagnostics of a file,
 * the changes `plan` found, the summary table of a run, the validation's
 * table and its JUnit XML, and whole lines with a single write(2).
 * Main thread only.
 */
#ifndef PROVISION_CLI_PRINT_H
#define PROVISION_CLI_PRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "../inventory.h"

struct plan_result;
struct validation;

/* Write one whole line (a newline is added) with a single write(2). */
void cli_write_line(int fd, const char *prefix, const char *text, size_t len);
/* Each diagnostic of DL (file:line:col, message, hint) on stderr, a line each. */
void cli_print_diags(const struct diag_list *dl);

/* provision plan: per node, what would change (files' diffs, checks' words). */
void cli_print_plan(const struct plan_result *res, const struct node *const *nodes);
/*
 * A run's table (per node: state, steps changed, unchanged, failed,
 * skipped, time) and its last line "CMD CLUSTER: N nodes, N changed, ...";
 * to_change: "to change" instead of "changed" (plan).
 */
void cli_print_summary(const char *cmd_name, bool to_change, const struct inventory *inv,
		       const struct plan_result *res, const struct node *const *nodes);
/* The validation's checks (failures_only: the failed and warned ones) and their count. */
void cli_print_validation(const struct validation *v, const struct node *const *nodes,
			  bool failures_only);
/* The validation as JUnit XML in `path`: one testcase per check.  0, or -1 (errno). */
int cli_write_junit(const char *path, const struct inventory *inv, const struct validation *v,
		    const struct node *const *nodes);
/* up: one line offering renew-certs when the certificates check warned or failed. */
void cli_offer_renew_certs(const struct validation *v, const char *inventory);

#endif
