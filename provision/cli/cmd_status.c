/*
 * provision status: every node's key checks at a glance, read again every
 * few seconds; changes nothing on any node.
 *
 * A round is plan_execute() with no phase and the validation on: facts.sh
 * (read-only) on every node, preflight (pure), and the validation's
 * read-only queries (`kubectl get` on the control plane, when there is a
 * cluster).  Its events feed the same model as the live view of `up`
 * (tui/model.h), which keeps the matrix of checks; what the validation has
 * no check for yet (kube packages, GPUs against the inventory; kubelet,
 * GPUs allocatable and the last run as n/a) is added from the round's
 * facts.  On a terminal the matrix is shown and refreshed (tui/tui.h);
 * otherwise one round is printed as a table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../plan.h"
#include "../tui/model.h"
#include "../tui/tui.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "prompt.h"

static struct {
	const char *inventory, *limit;
	int forks, interval;
	bool no_tui, ask_sudo, channels;
} args = {.forks = 64, .interval = 5};

static const struct opt status_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
    OPT_STRING('l', "limit", &args.limit, "NODES",
	       "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),
    OPT_INT('f', "forks", &args.forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
    OPT_INT('n', "interval", &args.interval, "SECONDS", 1, 3600,
	    "read the nodes again every SECONDS on a terminal (default 5)"),
    OPT_BOOL(0, "no-tui", &args.no_tui, "print the table once even on a terminal"),
    OPT_BOOL('K', "ask-sudo-password", &args.ask_sudo,
	     "ask once for the sudo password (or set PROVISION_SUDO_PASSWORD)"),
    OPT_BOOL(0, "channel-per-command", &args.channels,
	     "do not start the remote agent; one SSH channel per command"),
    OPT_END,
};

static void model_event(const struct event *ev, const struct node_status *st, void *data)
{
	tui_model_event(data, ev);
}

/* The checks the validation has not, for every node, from the round's facts. */
static void add_status_checks(struct tui_checks *c, const struct inventory *inv,
			      const struct node *const *nodes, size_t nr,
			      const struct plan_result *res)
{
	size_t i;

	for (i = 0; i < nr; i++)
		tui_checks_status(c, i, inv, nodes[i],
				  res->nodes[i].have_facts ? &res->nodes[i].facts : NULL);
}

/*
 * With a VIP: "VIP 198.18.0.50 held by cp-1" (the round's facts: the control
 * planes that answered; none or several said so too).  Empty otherwise.
 */
static void vip_line(struct strbuf *out, const struct inventory *inv,
		     const struct node *const *nodes, size_t nr, const struct plan_result *res)
{
	size_t i, held = 0;

	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_VIP)
		return;
	strbuf_addf(out, "VIP %s held by ", inv->cluster.api_endpoint.host);
	for (i = 0; i < nr; i++)
		if ((nodes[i]->roles & NODE_ROLE_CONTROL_PLANE) && res->nodes[i].have_facts &&
		    res->nodes[i].facts.vip_held)
			strbuf_addf(out, "%s%s", held++ ? " and " : "", nodes[i]->name);
	if (!held)
		strbuf_addstr(out, "no control plane that answered");
	strbuf_addch(out, '\n');
}

static void print_table(const struct tui_checks *c, const struct node *const *nodes, size_t nr,
			const char *vip, int exit_status)
{
	struct strbuf out = STRBUF_INIT;

	tui_checks_table(&out, c, nodes, nr);
	if (vip && *vip)
		strbuf_addf(&out, "\n%s", vip);
	strbuf_addstr(&out,
		      "\nn/a: kubelet, gpu-alloc and last-run are not checked by this version; "
		      "node-ready only once there is a cluster\n");
	strbuf_addf(&out, "exit status %d: %s\n", exit_status,
		    exit_status == EXIT_OK	      ? "every check passed"
		    : exit_status == EXIT_INTERRUPTED ? "interrupted"
						      : "some check failed");
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
}

static int status_exec(int nr_pos, char **pos)
{
	struct inventory *inv = NULL;
	const struct node **nodes = NULL;
	struct secrets *secrets = NULL;
	struct plan_result res = {0};
	struct plan_opts po = {0};
	struct tui_model model;
	struct tui *tui = NULL;
	struct strbuf vip = STRBUF_INIT;
	char *password = NULL;
	size_t nr = 0;
	int ret;

	ret = cli_load_inventory("status", args.inventory, &inv);
	if (ret)
		return ret;
	ret = cli_select_nodes("status", inv, args.limit, &nodes, &nr);
	if (ret)
		goto out;
	secrets = secrets_new();
	password = cli_sudo_password(args.ask_sudo, inv->ssh.sudo_password_file);
	if (password && secrets_add(secrets, password, strlen(password)) < 0) {
		fprintf(stderr,
			"provision status: the sudo password is shorter than %d characters; "
			"provision cannot keep it out of its output\n",
			SECRETS_MIN_LEN);
		ret = EXIT_USAGE;
		goto out;
	}
	ret = cli_node_sudo_passwords("status", inv, secrets);
	if (ret)
		goto out;

	po.inv = inv;
	po.nodes = nodes;
	po.nr = nr;
	po.phases = 0; /* facts, preflight and the validation's queries: nothing changes */
	po.validate = true;
	po.forks = args.forks;
	po.sudo_password = password;
	po.per_command_channels = args.channels;
	po.secrets = secrets;

	if (!args.no_tui && isatty(STDOUT_FILENO)) {
		struct tui_config tc = {
		    .kind = TUI_STATUS,
		    .command = "status",
		    .inv = inv,
		    .validate = true,
		    .nodes = nodes,
		    .nr = nr,
		    .refresh_s = args.interval,
		};
		tui = tui_start(&tc, NULL);
	}
	if (tui) {
		bool rounds = false;
		event_consumers_add(&po.consumers, tui_event, tui_tick, tui);
		ret = EXIT_INTERRUPTED;
		for (;;) {
			tui_status_round(tui);
			plan_execute(&po, &res);
			if (tui_quit_requested(tui) || res.interrupted) {
				plan_result_release(&res);
				break;
			}
			add_status_checks(tui_status_checks(tui), inv, nodes, nr, &res);
			strbuf_reset(&vip);
			vip_line(&vip, inv, nodes, nr, &res);
			tui_status_done(tui);
			rounds = true;
			ret =
			    tui_checks_failed(tui_status_checks(tui)) ? EXIT_NODE_FAILED : EXIT_OK;
			plan_result_release(&res);
			if (tui_status_wait(tui))
				break;
		}
		tui_stop(tui);
		/* The last round stays on the terminal. */
		if (rounds)
			print_table(tui_status_checks(tui), nodes, nr, vip.buf, ret);
		tui_free(tui);
		goto out;
	}

	tui_model_init(&model, inv, NULL, 0, false, true, nodes, nr, now_ms());
	tui_checks_status_columns(&model.checks);
	event_consumers_add(&po.consumers, model_event, NULL, &model);
	plan_execute(&po, &res);
	tui_model_end(&model, now_ms(), res.interrupted);
	add_status_checks(&model.checks, inv, nodes, nr, &res);
	tui_checks_expire(&model.checks, model.checks.gen, "not checked");
	ret = res.interrupted			 ? EXIT_INTERRUPTED
	      : tui_checks_failed(&model.checks) ? EXIT_NODE_FAILED
						 : EXIT_OK;
	vip_line(&vip, inv, nodes, nr, &res);
	print_table(&model.checks, nodes, nr, vip.buf, ret);
	plan_result_release(&res);
	tui_model_release(&model);
out:
	strbuf_release(&vip);
	cli_free_secret(password);
	secrets_free(secrets);
	free(nodes);
	inventory_free(inv);
	return ret;
}

const struct cmd cmd_status = {
    .name = "status",
    .summary = "every node's key checks at a glance, refreshed (changes nothing)",
    .usage = "-i FILE [-l NODES] [--interval SECONDS] [--no-tui]",
    .description = "Read every node (facts, preflight, and the cluster's view when there is one)\n"
		   "and show per node: reachable, preflight, swap off now and at boot, containerd\n"
		   "active with SystemdCgroup, the kube packages at the inventory's version and\n"
		   "held, GPUs found against the inventory, node Ready; kubelet, GPUs allocatable\n"
		   "and the last run are shown as n/a (a later version checks them).  On a\n"
		   "terminal the view is read again every few seconds (r: now, q: quit);\n"
		   "otherwise one table is printed.  Nothing on any node is changed.\n"
		   "Exit status 0 when every check passes, 1 otherwise.",
    .options = status_options,
    .exec = status_exec,
    .min_pos = 0,
    .max_pos = 0,
};
