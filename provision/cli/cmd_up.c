/* provision up: bring the nodes to the state the inventory and roles describe. */
#include "cmd.h"
#include "../role.h"
#include "session.h"

static struct cli_plan_args args = {.cmd_name = "up", .forks = 64, .output = "text"};

static const struct opt up_options[] = {
	CLI_PLAN_OPTIONS(args),
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
