/*
 * provision upgrade: the cluster to the inventory's kubernetes_version, one
 * minor at a time, as kubeadm's upgrade guide has it.  Before anything
 * changes, the control plane is asked for the version it runs and every
 * node's kubelet version: a target that goes down is refused (exit 2, the
 * inventory's file:line:col).  A target several minors up is reached minor
 * by minor, through the patch release roles/kubernetes.yaml names for each
 * minor in between (its `patch` column; a minor without a row is refused,
 * exit 2).  Each stage is one run for the control plane
 * (roles/upgrade-control-plane), and one run per batch of workers
 * (--parallel N, default 1: roles/upgrade-drain on the control plane,
 * upgrade-worker on the batch, upgrade-uncordon on the control plane);
 * with several control planes, one run per control plane before the
 * workers, in inventory order (upgrade_stage());
 * each run checks its nodes first (preflight: the cgroup and containerd
 * the stage's minor needs).  The first run that fails stops the upgrade,
 * and the nodes not reached are not touched.  Each run is recorded; the
 * steps print the versions before and after, so the records hold them.
 * The whole command is one session (session.h): one lock, one password
 * prompt, one SSH session per node for every run and question.  The
 * questions are steps of the runs ("upgrade › versions"): those before a
 * run are shown and recorded with it (session.h: held for the next pass),
 * the one after the last stage in that run's `after` (versions_after).
 * Before the first stage, an etcd backup (provision backup, cmd_backup.c);
 * when it fails nothing is upgraded (--no-backup skips it).
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../inventory.h"
#include "../role.h"
#include "../util.h"
#include "cmd.h"
#include "session.h"
#include "backup.h"
#include "upgrade.h"

static int parallel = 1, drain_timeout = 300;
static bool no_backup;
static struct cli_plan_args args = {.cmd_name = "upgrade", .forks = 64, .output = "text"};
static char *env_nodes, *env_timeout;
static const char *env[3];
static const struct node **batch;
static size_t nr_batch;
/* The control plane of this stage's current control-plane run (select_cp). */
static const struct node *stage_cp;

#define MAX_STAGES 64

static const struct opt upgrade_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	OPT_INT(0, "parallel", &parallel, "N", 1, 4096,
		"upgrade N workers at a time (default 1: one after the other)"),
	OPT_INT(0, "drain-timeout", &drain_timeout, "SECONDS", 1, 86400,
		"give up draining a node after this long (default 300)"),
	OPT_BOOL(0, "no-backup", &no_backup,
		 "do not take an etcd backup first (provision backup) before the first stage"),
	CLI_RUN_VIEW_OPTIONS(args),
	OPT_END,
};

/* The most of the control plane's answer read (a Node is at most ~1.5 MiB, etcd's limit). */
#define ANSWER_MAX (64u << 20)

bool upgrade_version_valid(const char *s)
{
	int part, n;

	if (*s == 'v')
		s++;
	for (part = 0; part < 3; part++) {
		for (n = 0; isdigit((unsigned char)*s); s++)
			if (++n > 5)
				return false;
		if (!n || *s != (part < 2 ? '.' : '\0'))
			return false;
		if (part < 2)
			s++;
	}
	return true;
}

void upgrade_versions_release(struct upgrade_versions *v)
{
	free(v->kubelet);
	memset(v, 0, sizeof(*v));
}

int upgrade_versions_parse(const struct inventory *inv, const char *text, size_t len,
			   struct upgrade_versions *v, struct error *err)
{
	json_error_t jerr;
	json_t *ver, *list = NULL, *items, *item;
	const char *git, *kind;
	size_t i, used;
	int ret = -1;

	memset(v, 0, sizeof(*v));
	v->nr = inv->nr_nodes;
	v->kubelet = xcalloc(v->nr ? v->nr : 1, sizeof(*v->kubelet));
	ver = json_loadb(text, len, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!ver)
		return error_set(err, -1, "the API server's /version is not JSON (%s)", jerr.text);
	used = (size_t)jerr.position;
	git = json_string_value(json_object_get(ver, "gitVersion"));
	if (!git || !upgrade_version_valid(git)) {
		error_set(err, -1, "the API server's gitVersion is not vMAJOR.MINOR.PATCH");
		goto out;
	}
	snprintf(v->control_plane, sizeof(v->control_plane), "%s", git + (*git == 'v'));
	list = used <= len ? json_loadb(text + used, len - used, 0, &jerr) : NULL;
	kind = json_string_value(json_object_get(list, "kind"));
	items = json_object_get(list, "items");
	if (!list || !kind || (strcmp(kind, "List") && strcmp(kind, "NodeList")) ||
	    !json_is_array(items)) {
		error_set(err, -1, "'kubectl get nodes -o json' did not give a list of Nodes");
		goto out;
	}
	json_array_foreach(items, i, item)
	{
		const char *name =
		    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
		const char *kv = json_string_value(
		    json_object_get(json_object_get(json_object_get(item, "status"), "nodeInfo"),
				    "kubeletVersion"));
		const struct node *n = name ? inventory_find(inv, name) : NULL;
		size_t k;

		if (!n)
			continue; /* not provision's: neither read nor shown */
		k = (size_t)(n - inv->nodes);
		if (v->kubelet[k][0]) {
			error_set(err, -1, "node '%s' is listed twice by the API server", n->name);
			goto out;
		}
		if (!kv || !upgrade_version_valid(kv)) {
			error_set(
			    err, -1,
			    "node '%s' reports a kubelet version that is not vMAJOR.MINOR.PATCH "
			    "(its Node's status.nodeInfo.kubeletVersion; not shown)",
			    n->name);
			goto out;
		}
		snprintf(v->kubelet[k], sizeof(v->kubelet[k]), "%s", kv + (*kv == 'v'));
	}
	ret = 0;
out:
	json_decref(ver);
	json_decref(list);
	return ret;
}

/*
 * On the control plane (through the session, on its SSH session): the
 * version its API server reports and every inventory node's kubelet, as
 * JSON (upgrade_versions_parse()).  0, or -1 with the reason in err.
 */
static int cluster_versions(struct cli_session *s, const struct node *cp,
			    struct upgrade_versions *out, struct error *err)
{
	struct strbuf answer = STRBUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = cli_session_capture(
	    s, cp, "upgrade", "versions",
	    "kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s "
	    "get --raw /version && kubectl --kubeconfig=/etc/kubernetes/admin.conf "
	    "--request-timeout=30s get nodes -o json",
	    60000, ANSWER_MAX, &answer, err);
	if (rc == 0 && !answer.len)
		rc = error_set(err, -1, "exit 0");
	if (rc < 0 && !strncmp(err->msg, "exit ", 5)) {
		char status[sizeof(err->msg)];
		memcpy(status, err->msg, sizeof(status));
		error_set(err, -1, "the control plane does not answer kubectl (%s): is the "
				   "cluster up? ('provision check')", status);
	}
	if (rc == 0 && answer.truncated)
		rc = error_set(err, -1, "the control plane's list of Nodes is longer than %u MiB",
			       ANSWER_MAX >> 20);
	if (rc == 0)
		rc = upgrade_versions_parse(s->inv, answer.buf, answer.len, out, err);
	strbuf_release(&answer);
	return rc < 0 ? -1 : 0;
}

static int parse_version(const char *s, long v[3])
{
	char *end;
	int i;

	if (*s == 'v')
		s++;
	for (i = 0; i < 3; i++) {
		v[i] = strtol(s, &end, 10);
		if (end == s || (i < 2 && *end != '.'))
			return -1;
		s = end + 1;
	}
	return 0;
}

static int cmp_version(const long a[3], const long b[3])
{
	int i;

	for (i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int select_cp(const struct cli_plan_args *a, const struct inventory *inv,
		     const struct node ***nodes, size_t *nr)
{
	(void)a;
	free(*nodes);
	*nodes = xcalloc(1, sizeof(**nodes));
	(*nodes)[0] = stage_cp ? stage_cp : inventory_control_plane(inv);
	*nr = 1;
	return 0;
}

static int select_batch(const struct cli_plan_args *a, const struct inventory *inv,
			const struct node ***nodes, size_t *nr)
{
	size_t i;

	(void)a;
	free(*nodes);
	*nodes = xcalloc(nr_batch + 1, sizeof(**nodes));
	(*nodes)[0] = inventory_control_plane(inv);
	for (i = 0; i < nr_batch; i++)
		(*nodes)[i + 1] = batch[i];
	*nr = nr_batch + 1;
	return 0;
}

/* The versions, clean values only: the inventory's nodes in the cluster, in its order. */
static void print_versions(const char *when, const struct inventory *inv,
			   const struct upgrade_versions *v)
{
	size_t i, shown = 0;

	printf("upgrade: versions %s: control plane v%s; kubelets:", when, v->control_plane);
	for (i = 0; i < v->nr; i++)
		if (v->kubelet[i][0])
			printf("%s %s v%s", shown++ ? "," : "", inv->nodes[i].name, v->kubelet[i]);
	putchar('\n');
	fflush(stdout);
}

/*
 * The workers in the cluster whose kubelet (in V, cluster_versions()) is not
 * at VERSION, in inventory order, into OUT (may be NULL); with SAY, the
 * workers not in the cluster are named.  Returns how many.
 */
static size_t workers_not_at(const struct inventory *inv, const struct node *cp,
			     const struct upgrade_versions *v, const char *version,
			     const struct node **out, bool say)
{
	size_t i, nr = 0;

	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *n = &inv->nodes[i];
		/* every control plane is upgraded by its own run, before the workers */
		if (n == cp || (n->roles & NODE_ROLE_CONTROL_PLANE) ||
		    !(n->roles & NODE_ROLE_WORKER))
			continue;
		if (!v->kubelet[i][0]) {
			if (say)
				printf("upgrade: %s is not in the cluster: skipped (provision add-node "
				       "joins it)\n",
				       n->name);
			continue;
		}
		if (strcmp(v->kubelet[i], version)) {
			if (out)
				out[nr] = n;
			nr++;
		}
	}
	return nr;
}

/* The versions after the upgrade, asked in its last run (versions_after). */
static struct upgrade_versions after_versions;
static bool have_after_versions;

/*
 * The last run's `after`: the versions once it succeeded, asked on its
 * session so that they are steps of that run (shown, logged, recorded).
 */
static int versions_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	const struct node *cp = inventory_control_plane(d->inv);
	struct error err = {0};

	(void)a;
	if (d->ret == EXIT_OK && cp)
		have_after_versions = cluster_versions(d->session, cp, &after_versions, &err) == 0;
	return d->ret;
}

/*
 * One stage: the control planes one at a time in inventory order (CP, the
 * first, runs `kubeadm upgrade apply`; each other `kubeadm upgrade node`,
 * roles/upgrade-control-plane 20-apply), each in its own run, so that the
 * others' API servers answer while one restarts; then the workers whose
 * kubelet is not at TARGET yet (from V, cluster_versions()), in inventory
 * order;
 * *nr_workers is how many were upgraded.  LAST: the upgrade's last stage
 * (its last run asks for the versions after).
 */
static int upgrade_stage(struct cli_session *s, const struct node *cp, const char *target,
			 const struct upgrade_versions *v, bool last, size_t *nr_workers)
{
	const struct inventory *inv = s->inv;
	const struct node **todo = xcalloc(inv->nr_nodes + 1, sizeof(*todo));
	size_t nr_todo = workers_not_at(inv, cp, v, target, todo, true), i;
	size_t nr_cps = inventory_nr_control_planes(inv), nth = 0;
	int ret;

	env[0] = env_timeout;
	env[1] = NULL;
	args.env = env;
	args.kubernetes_version = target;
	args.phase_bits = PHASE_BIT(PHASE_UPGRADE);
	args.select = select_cp;
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *n = &inv->nodes[i];
		size_t k;

		if (!(n->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		nth++;
		stage_cp = n;
		args.after = last && !nr_todo && nth == nr_cps ? versions_after : NULL;
		if (nr_cps == 1)
			printf("upgrade: the control plane %s to %s\n", n->name, target);
		else
			printf(
			    "%supgrade: control plane %s to %s (%zu of %zu: kubeadm upgrade %s)\n",
			    nth > 1 ? "\n" : "", n->name, target, nth, nr_cps,
			    n == cp ? "apply" : "node");
		fflush(stdout);
		ret = cli_session_pass(s, &args);
		if (ret) {
			stage_cp = NULL;
			if (nr_cps == 1) {
				printf(
				    "upgrade: stopped: the control plane did not upgrade to %s; no "
				    "worker was touched\n",
				    target);
			} else {
				printf(
				    "upgrade: stopped: control plane %s did not upgrade to %s; not "
				    "touched:",
				    n->name, target);
				for (k = i + 1; k < inv->nr_nodes; k++)
					if (inv->nodes[k].roles & NODE_ROLE_CONTROL_PLANE)
						printf(" %s", inv->nodes[k].name);
				printf("%sno worker\n", nth < nr_cps ? " and " : " ");
			}
			free(todo);
			return ret;
		}
	}
	stage_cp = NULL;
	args.phase_bits = PHASE_BIT(PHASE_UPGRADE_WORKERS);
	args.select = select_batch;
	for (i = 0; i < nr_todo; i += nr_batch) {
		struct strbuf names = STRBUF_INIT;
		size_t k;
		batch = todo + i;
		nr_batch = nr_todo - i < (size_t)parallel ? nr_todo - i : (size_t)parallel;
		for (k = 0; k < nr_batch; k++)
			strbuf_addf(&names, "%s%s", k ? " " : "", batch[k]->name);
		free(env_nodes);
		env_nodes = xasprintf("PROVISION_UPGRADE_NODES=%s", names.buf);
		env[1] = env_nodes;
		env[2] = NULL;
		args.after = last && i + nr_batch >= nr_todo ? versions_after : NULL;
		printf("\nupgrade: worker%s %s to %s (%zu of %zu)\n", nr_batch == 1 ? "" : "s",
		       names.buf, target, i + nr_batch, nr_todo);
		fflush(stdout);
		ret = cli_session_pass(s, &args);
		if (ret) {
			printf("upgrade: stopped at %s; ", names.buf);
			if (i + nr_batch < nr_todo) {
				printf("not touched:");
				for (k = i + nr_batch; k < nr_todo; k++)
					printf(" %s", todo[k]->name);
				printf("\n");
			} else {
				printf("no other worker was left\n");
			}
			strbuf_release(&names);
			free(todo);
			return ret;
		}
		strbuf_release(&names);
	}
	*nr_workers = nr_todo;
	free(todo);
	return 0;
}

static int upgrade_exec(int nr_pos, char **pos)
{
	struct cli_session s;
	struct inventory *inv;
	const struct node *cp;
	struct upgrade_versions before = {0};
	struct error err = {0};
	char cur[64];
	const char *stages[MAX_STAGES];
	size_t nr_stages = 0, nr_workers = 0, i, st;
	long want[3], have[3];
	int ret;

	(void)nr_pos;
	(void)pos;
	/*
	 * One session for the whole upgrade: the backup, every stage's runs and
	 * the versions asked between them share one password prompt, one lock
	 * and one SSH session per node.
	 */
	ret = cli_session_open(&s, &args);
	if (ret)
		goto out;
	inv = s.inv;
	cp = inventory_control_plane(inv);
	if (!cp) {
		fprintf(stderr, "provision upgrade: the inventory has no control plane\n");
		ret = EXIT_USAGE;
		goto out;
	}
	ret = cli_session_secrets(&s);
	if (ret)
		goto out;
	if (cluster_versions(&s, cp, &before, &err) < 0) {
		fprintf(stderr, "provision upgrade: %s: %s; nothing was changed\n", cp->name, err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		ret = EXIT_NODE_FAILED;
		goto out;
	}
	snprintf(cur, sizeof(cur), "%s", before.control_plane);
	if (parse_version(inv->cluster.kubernetes_version, want) < 0 ||
	    parse_version(cur, have) < 0) {
		fprintf(stderr, "provision upgrade: cannot compare '%s' with the cluster's '%s'\n",
			inv->cluster.kubernetes_version, cur);
		ret = EXIT_NODE_FAILED;
		goto out;
	}
	print_versions("before", inv, &before);
	if (cmp_version(want, have) < 0) {
		fprintf(stderr,
			"%s:%u:%u: error: kubernetes_version %s is older than the cluster's %s: "
			"provision does not downgrade; nothing was changed\n"
			"  hint: kubeadm supports no downgrade; set kubernetes_version back to %s (or "
			"newer), or rebuild the cluster (provision reset, then up)\n",
			args.inventory, inv->cluster.kubernetes_version_pos.line,
			inv->cluster.kubernetes_version_pos.col, inv->cluster.kubernetes_version, cur,
			cur);
		ret = EXIT_USAGE;
		goto out;
	}
	/*
	 * The stages: the cluster's own version first when a worker is not at it
	 * yet (an upgrade that stopped half-way: its workers catch up before
	 * the control plane moves on), the patch of each minor in between, then
	 * the target.
	 */
	if (cmp_version(want, have) > 0 && workers_not_at(inv, cp, &before, cur, NULL, false))
		stages[nr_stages++] = cur;
	if (want[1] > have[1] + 1) {
		const struct role_set *rs = &s.rs;
		long m;

		for (m = have[1] + 1; m < want[1] && nr_stages < MAX_STAGES - 1; m++) {
			char minor[32];
			const struct kube_minor *row;
			const char *patch;

			snprintf(minor, sizeof(minor), "%ld.%ld", want[0], m);
			row = kube_matrix_find(&rs->kube, minor);
			patch = kube_minor_get(row, "patch");
			if (!patch) {
				fprintf(stderr,
					"%s:%u:%u: error: kubernetes_version %s skips %s: the cluster runs %s, "
					"kubeadm upgrades one minor version at a time, and %s names no patch "
					"release of %s to pass through; nothing was changed\n"
					"  hint: set kubernetes_version to the latest %s.z, run provision "
					"upgrade, then set %s and run it again (or add %s's row to %s)\n",
					args.inventory, inv->cluster.kubernetes_version_pos.line,
					inv->cluster.kubernetes_version_pos.col, inv->cluster.kubernetes_version,
					minor, cur, rs->kube.path, minor, minor,
					inv->cluster.kubernetes_version, minor, rs->kube.path);
				ret = EXIT_USAGE;
				goto out;
			}
			stages[nr_stages++] = patch;
		}
	}
	stages[nr_stages++] = inv->cluster.kubernetes_version;
	if (nr_stages > 1) {
		printf("upgrade: %s to %s, one minor at a time:", cur, inv->cluster.kubernetes_version);
		for (i = 0; i < nr_stages; i++)
			printf(" %s%s", stages[i], i + 1 < nr_stages ? "," : "");
		printf("\n");
		fflush(stdout);
	}
	if (!no_backup) {
		printf("upgrade: an etcd backup first (provision backup; --no-backup skips it)\n");
		fflush(stdout);
		ret = cli_backup_pass(&s, &args);
		if (ret) {
			printf("upgrade: stopped: the backup before the upgrade failed; nothing was "
			       "upgraded\n");
			goto out;
		}
	}
	env_timeout = xasprintf("PROVISION_DRAIN_TIMEOUT=%d", drain_timeout);
	for (st = 0; st < nr_stages; st++) {
		const char *target = stages[st];

		if (st > 0) {
			upgrade_versions_release(&before);
			if (cluster_versions(&s, cp, &before, &err) < 0) {
				fprintf(stderr, "provision upgrade: %s: %s; stopped before %s\n", cp->name,
					err.msg, target);
				ret = EXIT_NODE_FAILED;
				goto out;
			}
			printf("\nupgrade: stage %zu of %zu: %s\n", st + 1, nr_stages, target);
			fflush(stdout);
		}
		ret = upgrade_stage(&s, cp, target, &before, st + 1 == nr_stages, &nr_workers);
		if (ret)
			goto out;
	}
	if (have_after_versions)
		print_versions("after", inv, &after_versions);
	if (inventory_nr_control_planes(inv) > 1)
		printf("upgrade %s: done: the %zu control planes and %zu worker%s upgraded to %s\n",
		       inv->cluster.name, inventory_nr_control_planes(inv), nr_workers,
		       nr_workers == 1 ? "" : "s", inv->cluster.kubernetes_version);
	else
		printf("upgrade %s: done: the control plane and %zu worker%s upgraded to %s\n",
		       inv->cluster.name, nr_workers, nr_workers == 1 ? "" : "s",
		       inv->cluster.kubernetes_version);
	ret = EXIT_OK;
out:
	free(env_timeout);
	free(env_nodes);
	env_timeout = env_nodes = NULL;
	upgrade_versions_release(&before);
	upgrade_versions_release(&after_versions);
	have_after_versions = false;
	args.after = NULL;
	cli_session_close(&s);
	return ret;
}

const struct cmd cmd_upgrade = {
	.name = "upgrade",
	.summary = "upgrade the cluster to the inventory's kubernetes_version, one node at a time",
	.usage = "-i FILE [--parallel N] [--drain-timeout SECONDS] [--no-backup] [--no-tui] [-o json]",
	.description =
		"After cluster.kubernetes_version was raised in the inventory: refuse a\n"
		"version that goes down or skips a minor (exit 2, nothing changed); take an\n"
		"etcd backup (provision backup; --no-backup skips it); then the\n"
		"control plane (kubeadm at the new version, kubeadm upgrade plan and upgrade\n"
		"apply, the node drained, kubelet and kubectl upgraded and held, kubelet\n"
		"restarted, uncordoned), then the workers one at a time (--parallel N for\n"
		"more): drained, kubeadm, kubeadm upgrade node, kubelet and kubectl upgraded\n"
		"and held, kubelet restarted, Ready with the new version, uncordoned.  The\n"
		"first node that fails stops the upgrade; the workers after it are not\n"
		"touched.  Several control planes: one at a time before the workers, the\n"
		"first with kubeadm upgrade apply, each other with kubeadm upgrade node.\n"
		"Every step is recorded with the versions before and after.",
	.options = upgrade_options,
	.exec = upgrade_exec,
	.min_pos = 0,
	.max_pos = 0,
};
