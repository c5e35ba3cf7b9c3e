/*
 * provision remove-node: nodes leave the running cluster.  On the control
 * plane roles/remove-node cordons, drains and deletes them; then on each
 * removed node the reset roles run (they wait for remove-node, so a node
 * whose drain failed is left as it is); one run, one record.  --force is
 * for a dead node: no drain, its pods deleted with it, and the node itself
 * is not contacted at all (which the report says).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../plan.h"
#include "../role.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "session.h"
#include "reset.h"

static bool force, keep_prep;
static int drain_timeout = 300;
static struct cli_plan_args args = {.cmd_name = "remove-node", .forks = 64, .output = "text"};
static char **names;
static int nr_names;
static char *env_nodes, *env_timeout;
static const char *env[4];
static const struct node *remove_cp; /* the (first) control plane, which removes */

static const struct opt remove_node_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	OPT_INT(0, "drain-timeout", &drain_timeout, "SECONDS", 1, 86400,
		"give up draining a node after this long (default 300)"),
	OPT_BOOL(0, "force", &force,
		 "the node is dead: delete it and its pods without draining; do not contact it"),
	OPT_BOOL(0, "keep-prep", &keep_prep, "reset the removed nodes with reset --keep-prep"),
	OPT_BOOL('y', "yes", &args.yes, "do not ask (required when not on a terminal)"),
	CLI_RUN_VIEW_OPTIONS(args),
	OPT_END,
};

static unsigned reset_bits(void)
{
	return PHASE_BIT(PHASE_RESET) | PHASE_BIT(PHASE_RESET_VERIFY) |
	       (keep_prep ? 0 : PHASE_BIT(PHASE_RESET_PREP));
}

/* The control plane, then the removed nodes (unless --force: they are not contacted). */
static int remove_select(const struct cli_plan_args *a, const struct inventory *inv,
			 const struct node ***nodes, size_t *nr)
{
	const struct node *cp = inventory_control_plane(inv), *hub;
	bool *sel = cli_select_named(a->cmd_name, inv, names, nr_names);
	struct strbuf words = STRBUF_INIT;
	size_t i, n = 0;

	if (!sel)
		return EXIT_USAGE;
	if (!cp) {
		fprintf(stderr, "provision %s: the inventory has no control plane\n", a->cmd_name);
		free(sel);
		return EXIT_USAGE;
	}
	if (sel[cp - inv->nodes] && inventory_nr_control_planes(inv) > 1) {
		/*
		 * The first control plane runs every role that acts on the whole
		 * cluster (kubeadm-init's configuration, the join tokens, the
		 * add-ons, the hub) and the remove-node role itself.
		 */
		fprintf(stderr,
			"provision %s: '%s' is the first control plane: it runs what acts on the "
			"whole cluster (join tokens, add-ons, the hub, this removal); remove-node "
			"removes the other control planes, workers and storage nodes; nothing was "
			"changed\n  hint: 'provision reset' takes the whole cluster down\n",
			a->cmd_name, cp->name);
		free(sel);
		return EXIT_USAGE;
	}
	if (sel[cp - inv->nodes]) {
		fprintf(stderr,
			"provision %s: '%s' is the control plane: remove-node removes workers and "
			"storage nodes\n  hint: 'provision reset' takes the whole cluster down\n",
			a->cmd_name, cp->name);
		free(sel);
		return EXIT_USAGE;
	}
	hub = inventory_hub_node(inv);
	if (inv->hub.enabled && hub && sel[hub - inv->nodes]) {
		/*
		 * The hub's SQLite database is on that node's disk (never NFS):
		 * removed, the node takes it along, and the hub would start again
		 * elsewhere with an empty one.
		 */
		fprintf(
		    stderr,
		    "provision %s: '%s' runs the hub and holds its database (jupyterhub.node%s): "
		    "removed, the hub would start elsewhere with an empty database (its users and "
		    "sign-ups lost); nothing was changed\n  hint: move the hub first: stop it "
			"(kubectl -n jhub scale deployment hub --replicas=0), copy "
			"/var/lib/provision/jupyterhub/jupyterhub.sqlite from '%s' to the same folder "
			"of another control plane (owner 1000, mode 0600), set jupyterhub.node to that "
			"one, run 'provision up', then remove '%s'\n",
			a->cmd_name, hub->name, inv->hub.node ? "" : ", by default", hub->name,
			hub->name);
		free(sel);
		return EXIT_USAGE;
	}
	free(*nodes);
	*nodes = xcalloc(inv->nr_nodes + 1, sizeof(**nodes));
	(*nodes)[n++] = cp;
	remove_cp = cp;
	for (i = 0; i < inv->nr_nodes; i++) {
		if (!sel[i])
			continue;
		strbuf_addf(&words, "%s%s", words.len ? " " : "", inv->nodes[i].name);
		if (!force)
			(*nodes)[n++] = &inv->nodes[i];
	}
	*nr = n;
	free(sel);
	free(env_nodes);
	env_nodes = xasprintf("PROVISION_REMOVE_NODES=%s", words.buf);
	strbuf_release(&words);
	env[0] = env_nodes;
	env[1] = env_timeout;
	env[2] = force ? "PROVISION_REMOVE_FORCE=1" : "PROVISION_REMOVE_FORCE=0";
	env[3] = NULL;
	return 0;
}

/* The first control plane removes; the removed nodes (other control planes too) are reset. */
static unsigned remove_node_phases(const struct cli_plan_args *a, const struct node *n)
{
	(void)a;
	return n == remove_cp ? PHASE_BIT(PHASE_REMOVE) : reset_bits();
}

static int remove_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	const char *removed_env = env_nodes + strlen("PROVISION_REMOVE_NODES=");
	const struct plan_node *cpn = &d->res->nodes[0];
	bool deleted = false, tried = false, refused = false;
	int ret = d->ret;
	size_t k;

	for (k = 0; k < cpn->nr_steps; k++) {
		const struct plan_step_result *s = &cpn->steps[k];
		if (s->is_file || strcmp(s->role->name, "remove-node"))
			continue;
		tried = true;
		if (!strcmp(s->step, "05-quorum"))
			refused = s->result == STEP_FAILED;
		if (!strcmp(s->step, "30-delete"))
			deleted = s->result == STEP_CHANGED || s->result == STEP_UNCHANGED;
	}
	/*
	 * Several control planes: etcd would lose its majority (or be left
	 * with one member): refused before anything was done (05-quorum is
	 * the role's first step; the reset waits for the role).
	 */
	if (refused) {
		printf("\n%s: refused: removing %s is not shown to leave etcd a safe majority "
		       "(the reason is in the remove-node › 05-quorum lines above); nothing was "
		       "changed\n",
		       a->cmd_name, removed_env);
		return EXIT_USAGE;
	}
	printf("\n%s: %s %s\n", a->cmd_name, removed_env,
	       deleted ? (force ? "deleted from the cluster with their pods (--force: not drained)"
				: "cordoned, drained and deleted from the cluster")
	       : tried ? "NOT removed from the cluster (see the remove-node lines above)"
		       : "NOT removed: the control plane was not reached");
	if (!deleted && ret == EXIT_OK)
		ret = EXIT_NODE_FAILED;
	if (force) {
		printf("%s: node-side reset skipped (--force): %s not contacted; before such a "
		       "machine joins a cluster again: provision reset -i %s -l NAME\n",
		       a->cmd_name, strchr(removed_env, ' ') ? "they were" : "it was", a->inventory);
	} else if (!deleted) {
		/* The reset roles wait for remove-node: nothing was done on the nodes. */
		printf("%s: node-side reset skipped: %s %s still in the cluster, so %s left "
		       "untouched (not reset, not verified)\n",
		       a->cmd_name, removed_env, strchr(removed_env, ' ') ? "are" : "is",
		       strchr(removed_env, ' ') ? "they were" : "it was");
	} else {
		struct cli_plan_done sub = *d;
		/* The report of the reset: the removed nodes only (they follow the control plane). */
		sub.nodes = d->nodes + 1;
		sub.nr = d->nr - 1;
		sub.ret = ret;
		{
			struct plan_result r = *d->res;
			r.nodes = d->res->nodes + 1;
			r.nr = d->res->nr - 1;
			sub.res = &r;
			ret = cli_reset_report(a->cmd_name, &sub, NULL);
		}
	}
	if (deleted)
		printf("%s: remove %s from %s now, or the next 'provision up' joins %s again\n",
		       a->cmd_name, removed_env, a->inventory,
		       strchr(removed_env, ' ') ? "them" : "it");
	return ret;
}

/* The second run: only the control plane, only the add-ons (the hub's profiles). */
static int select_control_plane(const struct cli_plan_args *a, const struct inventory *inv,
				const struct node ***nodes, size_t *nr)
{
	(void)a;
	free(*nodes);
	*nodes = xcalloc(1, sizeof(**nodes));
	(*nodes)[0] = inventory_control_plane(inv);
	*nr = 1;
	/* Only when there is a hub whose profiles may have named the removed nodes. */
	printf("\nremove-node: %s\n", inv->hub.enabled
					    ? "the hub's profiles, regenerated from the nodes left"
					    : "no hub in the inventory: no profiles to regenerate");
	fflush(stdout);
	return inv->hub.enabled ? 0 : -1;
}

static int remove_node_exec(int nr_pos, char **pos)
{
	names = pos;
	nr_names = nr_pos;
	env_timeout = xasprintf("PROVISION_DRAIN_TIMEOUT=%d", drain_timeout);
	args.phase_bits = PHASE_BIT(PHASE_REMOVE) | (force ? 0 : reset_bits());
	args.skip_preflight = true;
	args.env = env;
	args.select = remove_select;
	args.node_phases = remove_node_phases;
	args.confirm = force ? "remove-node --force: delete the nodes and their pods from the "
			       "cluster without draining, not contacting them,"
			     : "remove-node: cordon, drain and delete the nodes, then reset them,";
	args.after = remove_after;
	/* One session for both runs: one password prompt, one SSH session per node. */
	struct cli_session s;
	int r = cli_session_open(&s, &args);
	if (!r)
		r = cli_session_pass(&s, &args);
	/*
	 * The hub's profiles come from the Nodes the API has (roles/jupyterhub,
	 * phase addons, as add-node refreshes them): a second run on the control
	 * plane regenerates them without the removed nodes, e.g. drops a GPU
	 * model that only they had.
	 */
	if (r == EXIT_OK) {
		args.phase_bits = PHASE_BIT(PHASE_ADDONS);
		args.select = select_control_plane;
		args.node_phases = NULL;
		args.confirm = NULL;
		args.after = NULL;
		r = cli_session_pass(&s, &args);
		if (r == -1)
			r = EXIT_OK;
	}
	cli_session_close(&s);
	free(env_timeout);
	free(env_nodes);
	return r;
}

const struct cmd cmd_remove_node = {
	.name = "remove-node",
	.summary = "drain and delete nodes from the cluster, then reset them",
	.usage = "-i FILE [--drain-timeout SECONDS] [--force] [--keep-prep] [--yes] NAME...",
	.description =
		"Take the named workers (names or ranges) out of the running cluster: on the\n"
		"control plane cordon, drain (DaemonSet pods stay; a pod without a controller\n"
		"is not forced out, and the drain then fails naming the pods that would not\n"
		"leave) and delete the Node objects; then reset each removed node as\n"
		"'provision reset' does, and verify it.  A node whose drain failed is\n"
		"neither deleted nor reset.  --force is for a dead node: no drain, the Node\n"
		"and its pods are deleted, and the node is not contacted (the report says so).\n"
		"With several control planes a control plane other than the first can be\n"
		"removed: refused first (exit 2, nothing changed) when etcd would keep fewer\n"
		"than 2 members or not a majority of healthy ones; its etcd member is removed\n"
		"(and shown gone) before the node is reset.\n"
		"With a hub in the inventory, a second run on the control plane regenerates\n"
		"its profiles from the nodes left, on the same SSH session (-K asks once).\n"
		"The runs are recorded.  Asks first on a terminal; otherwise --yes is required.",
	.options = remove_node_options,
	.exec = remove_node_exec,
	.min_pos = 1,
	.max_pos = -1,
};
