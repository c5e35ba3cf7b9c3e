/* provision check: is the cluster what the inventory says?  (validations only) */
#include "cmd.h"
#include "session.h"
#include "bench.h"

static struct cli_plan_args args = {.cmd_name = "check", .forks = 64, .output = "text",
				    .mode = RUN_CHECK, .bench_limit = cli_bench_limit};

static const struct opt check_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	OPT_STRING('l', "limit", &args.limit, "NODES",
		   "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),
	OPT_INT('f', "forks", &args.forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
	OPT_BOOL(0, "no-tui", &args.no_tui, "plain lines even on a terminal"),
	OPT_CHOICE('o', "output", &args.output, "FORMAT", "text|json",
		   "text (a table) or json (one object per event and check)"),
	OPT_STRING(0, "junit", &args.junit, "FILE", "also write the results as JUnit XML to FILE"),
	OPT_STRING(0, "state", &args.state, "DIR",
		   "this cluster's state folder (default: beside the inventory, NAME.state)"),
	OPT_STRING(0, "roles", &args.roles, "DIR",
		   "the roles whose checks tell drift (default: the installed roles)"),
	OPT_BOOL('v', "verbose", &args.verbose, "also every step checked and its output"),
	OPT_BOOL('K', "ask-sudo-password", &args.ask_sudo,
		 "ask once for the sudo password (or set PROVISION_SUDO_PASSWORD)"),
	OPT_BOOL(0, "bench", &args.bench,
		 "also 'provision bench' on every node: host, container, limited container"),
	OPT_END,
};

static int check_exec(int nr_pos, char **pos)
{
	if (args.bench)
		args.after = cli_bench_after;
	return cli_plan_run(&args);
}

const struct cmd cmd_check = {
	.name = "check",
	.summary = "validate the cluster against the inventory, changing nothing",
	.usage = "-i FILE [-l NODES] [-o json] [--junit FILE] [--bench]",
	.description =
		"Gather every node's facts and check what the inventory promises: nodes\n"
		"reachable, swap off now and at boot, containerd active with SystemdCgroup,\n"
		"every node a Ready Node, CoreDNS and Flannel Running, the API's /readyz ok.\n"
		"Drift: every step of up's roles is checked as 'provision plan' checks it;\n"
		"what 'up' would change (a file edited by hand, a Helm release upgraded by\n"
		"hand, a held package unheld) fails that node's drift check, with the\n"
		"differing lines, keys (secret values masked) or packages.\n"
		"Each result says what was expected, what was observed and how to fix it.\n"
		"--bench adds 'provision bench' (bench-cpu, bench-memory, bench-gpu).\n"
		"Exit status 0 when every check passes, 1 otherwise.",
	.options = check_options,
	.exec = check_exec,
	.min_pos = 0,
	.max_pos = 0,
};
