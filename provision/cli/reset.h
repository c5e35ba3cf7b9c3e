/* reset: what `reset` and `remove-node` share (cmd_reset.c). */
#ifndef PROVISION_CLI_RESET_H
#define PROVISION_CLI_RESET_H

#include <stdbool.h>

#include "session.h"

/*
 * reset and remove-node: per node, what the reset removed and whether
 * reset-verify passed and a new SSH session works; prints the report and
 * returns d->ret, made EXIT_NODE_FAILED when a node is not proven clean.
 * *cp_clean: the control plane was among them and is clean.
 */
int cli_reset_report(const char *cmd_name, const struct cli_plan_done *d, bool *cp_clean);

#endif
