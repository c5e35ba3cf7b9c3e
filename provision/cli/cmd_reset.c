/*
 * provision reset: take nodes out of Kubernetes and undo what provision did
 * on them, then prove it.  The work is three role phases (roles/reset-cluster,
 * reset-prep, reset-verify) run by the same engine as up, so the TUI, the
 * logs and the run record are the same; this file adds the confirmation,
 * a new SSH session per node afterwards (still reachable) and the per-node
 * report of what was removed and what was verified.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../plan.h"
#include "../role.h"
#include "../runner.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "prompt.h"
#include "session.h"
#include "reset.h"

static bool keep_prep;
static struct cli_plan_args args = {.cmd_name = "reset", .forks = 64, .output = "text"};

static const struct opt reset_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
    OPT_STRING('l', "limit", &args.limit, "NODES",
	       "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),
    OPT_BOOL(
	0, "keep-prep", &keep_prep,
	"keep node preparation (swap off, kernel, containerd, packages): only leave Kubernetes"),
    OPT_BOOL('y', "yes", &args.yes, "do not ask (required when not on a terminal)"),
    OPT_INT('f', "forks", &args.forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
    CLI_RUN_VIEW_OPTIONS(args),
    OPT_END,
};

/* "10-kubeadm" -> "kubeadm" */
static const char *step_label(const char *step)
{
	const char *dash = strchr(step, '-');
	return dash ? dash + 1 : step;
}

int cli_reset_report(const char *cmd_name, const struct cli_plan_done *d, bool *clean_out)
{
	struct strbuf out = STRBUF_INIT;
	size_t i, k, w = 4;
	int ret = d->ret;
	bool cp_clean = false;

	for (i = 0; i < d->nr; i++)
		if (strlen(d->nodes[i]->name) > w)
			w = strlen(d->nodes[i]->name);
	strbuf_addf(&out, "\n%s: per node\n", cmd_name);
	for (i = 0; i < d->nr; i++) {
		const struct plan_node *pn = &d->res->nodes[i];
		struct strbuf removed = STRBUF_INIT;
		struct error err = {0};
		int verified = -1; /* -1: not reached, -2: skipped */
		bool ssh, ran = false;

		for (k = 0; k < pn->nr_steps; k++) {
			const struct plan_step_result *s = &pn->steps[k];
			if (s->is_file)
				continue;
			if (!strcmp(s->role->name, "reset-verify")) {
				verified = s->result == STEP_SKIPPED ? -2 : s->result == STEP_UNCHANGED;
				continue;
			}
			if (s->result != STEP_SKIPPED)
				ran = true;
			if (s->result == STEP_CHANGED)
				strbuf_addf(&removed, "%s%s%s", removed.len ? ", " : "",
					    !strcmp(s->role->name, "reset-prep") ? "prep " : "",
					    step_label(s->step));
		}
		ssh = cli_session_login_check(d->session, d->nodes[i], "reset-verify", "new SSH session",
					      &err) == 0;
		strbuf_addf(&out, "%-*s  removed: %s\n", (int)w, d->nodes[i]->name,
			    removed.len ? removed.buf
			    : ran	? "nothing (it was clean)"
					: "nothing: the reset did not run (see the skipped lines above)");
		strbuf_addf(&out, "%-*s  verified: %s; %s\n", (int)w, "",
			    verified == 1
				? "clean (ports, processes, folders, interfaces, chains, kubelet)"
			    : verified == 0  ? "NOT clean (see the reset-verify lines above)"
			    : verified == -2 ? "not checked (the reset was skipped)"
					     : "not reached (the node failed earlier)",
			    ssh ? "reachable over SSH (a new session)" : "NOT reachable over SSH");
		if (!ssh)
			strbuf_addf(&out, "%-*s  %s\n", (int)w, "", err.msg);
		if (verified != 1 || !ssh) {
			if (ret == EXIT_OK)
				ret = EXIT_NODE_FAILED;
		} else if (d->nodes[i] == inventory_control_plane(d->inv)) {
			cp_clean = true;
		}
		strbuf_release(&removed);
	}
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
	if (clean_out)
		*clean_out = cp_clean;
	return ret;
}

static int reset_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	bool cp_clean = false;
	int ret = cli_reset_report(a->cmd_name, d, &cp_clean);

	/* The cluster is gone with its control plane: so is this machine's admin.conf. */
	if (cp_clean) {
		char *p = xasprintf("%s/private/admin.conf", d->state_dir);
		if (!unlink(p))
			printf("removed %s (the cluster it opened is gone)\n", p);
		free(p);
	}
	return ret;
}

/* Several control planes: the nodes of the pass under way. */
static const struct node **stage;
static size_t stage_nr;

static int select_stage(const struct cli_plan_args *a, const struct inventory *inv,
			const struct node ***nodes, size_t *nr)
{
	(void)a;
	(void)inv;
	if (!stage_nr)
		return -1;
	free(*nodes);
	*nodes = xcalloc(stage_nr, sizeof(**nodes));
	memcpy(*nodes, stage, stage_nr * sizeof(*stage));
	*nr = stage_nr;
	return 0;
}

/*
 * Several control planes: one pass per stage on one session: the workers
 * and storage nodes first, then each other control plane alone, the last
 * in the inventory first (its kubeadm reset removes its etcd member while
 * the members left keep a majority), the first control plane last (the
 * last member: its data goes with it).  -l takes every control plane or
 * none: a part of them is remove-node's (quorum checked).  A stage whose
 * node failed (unreachable, say: a dead control plane remove-node --force
 * took out) does not stop the others: the whole cluster is going, and the
 * members left keep a majority as each leaves; the exit status says it.
 */
static int reset_staged(const struct cli_plan_args *a)
{
	struct cli_session s;
	const struct node **sel = NULL, *first;
	struct strbuf q = STRBUF_INIT;
	size_t nsel = 0, ncp = 0, k;
	int r = cli_session_open(&s, a), i;
	bool failed = false;

	if (r)
		goto out;
	if (inventory_nr_control_planes(s.inv) < 2) { /* one control plane: one pass, as always */
		r = cli_session_pass(&s, a);
		goto out;
	}
	first = inventory_control_plane(s.inv);
	r = cli_select_nodes(a->cmd_name, s.inv, a->limit, &sel, &nsel);
	if (r)
		goto out;
	for (k = 0; k < nsel; k++)
		if (sel[k]->roles & NODE_ROLE_CONTROL_PLANE)
			ncp++;
	if (ncp && ncp < inventory_nr_control_planes(s.inv)) {
		fprintf(
		    stderr,
		    "provision %s: -l %s takes %zu of the %zu control planes: reset takes every "
		    "control plane (the whole cluster) or none; nothing was changed\n"
		    "  hint: provision remove-node -i %s NAME takes one control plane out "
		    "(its etcd member removed first, the majority checked)\n",
		    a->cmd_name, a->limit, ncp, inventory_nr_control_planes(s.inv), a->inventory);
		r = EXIT_USAGE;
		goto out;
	}
	strbuf_addf(&q, "%s on %zu node%s (", a->confirm, nsel, nsel == 1 ? "" : "s");
	for (k = 0; k < nsel && k < 8; k++)
		strbuf_addf(&q, "%s%s", k ? ", " : "", sel[k]->name);
	strbuf_addf(&q, "%s)%s?", nsel > 8 ? ", ..." : "",
		    ncp ? ", workers first, then one control plane at a time, the first last" : "");
	r = cli_confirm(a->cmd_name, a->yes, q.buf);
	if (r)
		goto out;
	{
		struct cli_plan_args b = *a;
		b.confirm = NULL;
		b.select = select_stage;
		stage = xcalloc(nsel ? nsel : 1, sizeof(*stage));
		/* stage -1: the others; then the control planes from the last to the first */
		for (i = -1; i < (int)s.inv->nr_nodes; i++) {
			const struct node *cp = NULL;
			stage_nr = 0;
			if (i >= 0) {
				cp = &s.inv->nodes[s.inv->nr_nodes - 1 - (size_t)i];
				if (!(cp->roles & NODE_ROLE_CONTROL_PLANE) || !ncp)
					continue;
				stage[stage_nr++] = cp;
				printf("\n%s: control plane %s%s\n", a->cmd_name, cp->name,
				       cp == first ? ", the first, last (the last etcd member)"
						   : " (kubeadm reset removes its etcd member)");
			} else {
				for (k = 0; k < nsel; k++)
					if (!(sel[k]->roles & NODE_ROLE_CONTROL_PLANE))
						stage[stage_nr++] = sel[k];
				if (stage_nr && ncp)
					printf("\n%s: the workers and storage nodes first\n",
					       a->cmd_name);
			}
			fflush(stdout);
			r = cli_session_pass(&s, &b);
			if (r == -1)
				r = EXIT_OK;
			if (r == EXIT_NODE_FAILED) {
				/* the rest of the cluster goes on: its members keep a majority */
				failed = true;
				if (cp != first)
					printf("\n%s: %s failed (see above); the reset goes on with "
					       "the rest of the cluster: run it again for %s\n",
					       a->cmd_name, cp ? cp->name : "a node", cp ? "it" : "them");
				continue;
			}
			if (r != EXIT_OK)
				break; /* interrupted, or a failure on this machine */
		}
		if (r == EXIT_OK && failed)
			r = EXIT_NODE_FAILED;
	}
out:
	strbuf_release(&q);
	free(sel);
	free(stage);
	stage = NULL;
	cli_session_close(&s);
	return r;
}

static int reset_exec(int nr_pos, char **pos)
{
	(void)nr_pos;
	(void)pos;
	args.phase_bits = PHASE_BIT(PHASE_RESET) | PHASE_BIT(PHASE_RESET_VERIFY);
	if (!keep_prep)
		args.phase_bits |= PHASE_BIT(PHASE_RESET_PREP);
	args.skip_preflight = true;
	args.confirm = keep_prep ? "reset: kubeadm reset; CNI config and state, cni0/flannel.1, "
				   "kube iptables chains and kubeconfigs removed; kubelet "
				   "stopped and disabled; node preparation kept,"
				 : "reset: kubeadm reset; CNI config and state, cni0/flannel.1, "
				   "kube iptables chains and kubeconfigs removed; kubelet "
				   "stopped and disabled; files provision changed restored, "
				   "packages it installed purged,";
	args.after = reset_after;
	return reset_staged(&args);
}

const struct cmd cmd_reset = {
    .name = "reset",
    .summary = "undo up on nodes (kubeadm reset and what it leaves), then verify them clean",
    .usage = "-i FILE [-l NODES] [--keep-prep] [--yes] [--no-tui] [-o json]",
    .description = "On each selected node: kubeadm reset, then what it leaves: the CNI\n"
		   "configuration and state, the cni0 and flannel.1 interfaces, the KUBE-*,\n"
		   "FLANNEL-* and CNI-* iptables chains (no table is flushed), the kubeconfigs\n"
		   "provision wrote; the kubelet stopped and disabled.  Then, unless --keep-prep,\n"
		   "what node preparation did: every file provision replaced restored from its\n"
		   "backup, every file it created removed, swap units unmasked, the packages it\n"
		   "installed purged.  Nodes where only part of up ran are fine.  Then each node\n"
		   "is verified (ports 6443/10250 free, no Kubernetes process, folders and\n"
		   "interfaces gone) and reached with a new SSH session; the report says per\n"
		   "node what was removed and what was verified.  Several control planes: -l\n"
		   "takes all of them or none; workers first, then each other control plane\n"
		   "alone (its etcd member leaves), the first last.  Asks first on a terminal;\n"
		   "otherwise --yes is required.",
    .options = reset_options,
    .exec = reset_exec,
    .min_pos = 0,
    .max_pos = 0,
};
