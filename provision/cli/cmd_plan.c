/* provision plan: what `up` would change, changing nothing. */
#include "cmd.h"
#include "../role.h"
#include "session.h"

static struct cli_plan_args args = {.cmd_name = "plan", .forks = 64, .output = "text",
				    .mode = RUN_PLAN};

static const struct opt plan_options[] = {
	CLI_PLAN_OPTIONS(args),
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
