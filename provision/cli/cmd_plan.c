/* provision plan: what `up` would change, changing nothing. */
#include "cmd.h"
#include "../role.h"
#include "common.h"

static struct cli_plan_args args = {.cmd_name = "plan", .forks = 64, .output = "text",
				    .check_only = true};

static const struct opt plan_options[] = {
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

static int plan_exec(int nr_pos, char **pos)
{
	return cli_plan_run(&args);
}

const struct cmd cmd_plan = {
	.name = "plan",
	.summary = "show what 'up' would change, changing nothing",
	.usage = "-i FILE [-l NODES] [--phases LIST] [--forks N] [-o json]",
	.description =
		"Gather facts, run preflight and every step's check, and compare every file\n"
		"'up' would write with the one on the node.  Then list, per node, the steps\n"
		"that would run and a diff of each file that would change.  Nothing on any\n"
		"node is changed.",
	.options = plan_options,
	.exec = plan_exec,
	.min_pos = 0,
	.max_pos = 0,
};
