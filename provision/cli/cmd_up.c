/* provision up: bring the nodes to the state the inventory and roles describe. */
#include "cmd.h"
#include "../role.h"
#include "common.h"

static struct cli_plan_args args = {.cmd_name = "up", .forks = 64, .output = "text"};

static const struct opt up_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	OPT_STRING('l', "limit", &args.limit, "NODES",
		   "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),
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
	OPT_BOOL(0, "channel-per-command", &args.channels,
		 "do not start the remote agent; one SSH channel per command"),
	OPT_END,
};

static int up_exec(int nr_pos, char **pos)
{
	return cli_plan_run(&args);
}

const struct cmd cmd_up = {
	.name = "up",
	.summary = "bring every node to the desired state (idempotent)",
	.usage = "-i FILE [-l NODES] [--phases LIST] [--forks N] [--no-tui] [-o json]",
	.description =
		"Gather facts on every node, check them against the inventory (preflight),\n"
		"then run the phases' roles on each node: render and upload files, and for\n"
		"each step check, apply when needed, check again.  A node that fails stops\n"
		"only itself.  A second run on the same nodes changes nothing.",
	.options = up_options,
	.exec = up_exec,
	.min_pos = 0,
	.max_pos = 0,
};
