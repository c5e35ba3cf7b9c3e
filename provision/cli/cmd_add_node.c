/* provision add-node: prepare and join new nodes, refresh the hub's profiles. */
#include "../role.h"
#include "cmd.h"
#include "session.h"

static struct cli_plan_args args = {.cmd_name = "add-node", .forks = 64, .output = "text"};

static const struct opt add_node_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	OPT_STRING('p', "phases", &args.phases, "LIST",
		   "only these phases, comma-separated: " ROLE_PHASE_LIST " (default: all)"),
	OPT_INT('f', "forks", &args.forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
	OPT_BOOL(0, "no-tui", &args.no_tui, "plain lines even on a terminal"),
	OPT_CHOICE('o', "output", &args.output, "FORMAT", "text|json",
		   "text (lines) or json (one object per event)"),
	OPT_BOOL('v', "verbose", &args.verbose, "also show unchanged steps and every output line"),
	OPT_STRING(0, "roles", &args.roles, "DIR", "the roles folder (default: the installed roles)"),
	OPT_STRING(0, "state", &args.state, "DIR",
		   "this cluster's state folder (default: beside the inventory, NAME.state)"),
	OPT_BOOL('K', "ask-sudo-password", &args.ask_sudo,
		 "ask once for the sudo password (or set PROVISION_SUDO_PASSWORD)"),
	OPT_END,
};

static int add_node_exec(int nr_pos, char **pos)
{
	args.add_nodes = pos;
	args.nr_add_nodes = nr_pos;
	return cli_plan_run(&args);
}

const struct cmd cmd_add_node = {
	.name = "add-node",
	.summary = "prepare and join new nodes, refresh the hub's profiles",
	.usage = "-i FILE [--phases LIST] [--no-tui] [-o json] NAME...",
	.description =
		"Add the named nodes (names or ranges, already in the inventory) to the\n"
		"running cluster: facts, preflight, node preparation, NFS client and join\n"
		"for them; on the control plane only what joins them and regenerates the\n"
		"JupyterHub profiles from the new capacity; then validation.  No other node\n"
		"is contacted.  A control plane (several control planes, not the first)\n"
		"joins with --control-plane, every control plane taking part as in up.",
	.options = add_node_options,
	.exec = add_node_exec,
	.min_pos = 1,
	.max_pos = -1,
};
