/*
 * provision renew-certs: the control plane's certificates renewed by kubeadm
 * (roles/renew-certs, phase renew-certs): `kubeadm certs renew all` when any
 * certificate kubeadm manages has less than cluster.cert_warning_days left,
 * the control-plane static pods restarted one at a time with /readyz awaited
 * after each, the users' ~/.kube/config refreshed, and this machine's
 * private/admin.conf read again from the first control plane (the last
 * run's `after`: the step "renew-certs › admin.conf" of its record; checked
 * as the fetch of kubeadm-init checks it, so it still names the API
 * endpoint).  Recorded like every run; a second run finds nothing to renew
 * and changes nothing.  Several control planes: each
 * has its own certificates and pods, so each is renewed in its own run, one
 * after the other in inventory order (one session: one lock, one prompt),
 * and the others' API servers answer while one restarts; the first that
 * fails stops it, the ones after it are not touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../http.h"
#include "../inventory.h"
#include "../role.h"
#include "../util.h"
#include "cmd.h"
#include "session.h"

static struct cli_plan_args args = {.cmd_name = "renew-certs", .forks = 64, .output = "text"};
/* The control plane of the current run. */
static const struct node *run_cp;

static const struct opt renew_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	CLI_RUN_VIEW_OPTIONS(args),
	OPT_END,
};

/* What the last run's `after` did to private/admin.conf, for the line after it. */
static enum { ADMIN_NONE, ADMIN_SAME, ADMIN_REFRESHED } admin_result;
static char admin_from[128];

static int admin_data(void *ctx, const void *data, size_t len)
{
	strbuf_add(ctx, data, len);
	return 0;
}

/*
 * The last run's `after`, once every control plane passed: the state
 * folder's private/admin.conf again from the first control plane (its
 * renewed client certificate), refused unless it names the API endpoint
 * and is a kubeconfig kubeadm writes (http_kubeconfig_check, as
 * plan_files.c checks kubeadm-init's fetch).  A failure fails the command;
 * the old copy stays.
 */
static int refresh_admin(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	const struct node *cp = inventory_control_plane(d->inv);
	const char *host = inventory_api_host(d->inv);
	struct strbuf got = STRBUF_INIT, old = STRBUF_INIT;
	struct error err = {0};
	char sha[65], *priv = NULL, *path = NULL;
	uint64_t size = 0;
	int ret = d->ret, rc;

	(void)a;
	if (ret != EXIT_OK || !cp || !d->state_dir)
		return ret;
	if (cli_session_get_file(d->session, cp, "renew-certs", "admin.conf",
				 "/etc/kubernetes/admin.conf", 1u << 20, admin_data, &got, sha, &size,
				 &err) < 0 ||
	    http_kubeconfig_check(got.buf, got.len, host ? host : cp->address,
				  inventory_api_port(d->inv), &err) < 0) {
		fprintf(stderr,
			"provision renew-certs: /etc/kubernetes/admin.conf of %s is not taken: %s; "
			"the state folder's private/admin.conf is unchanged\n",
			cp->name, err.msg);
		ret = EXIT_NODE_FAILED;
		goto out;
	}
	priv = xasprintf("%s/private", d->state_dir);
	path = xasprintf("%s/admin.conf", priv);
	if (read_file(path, &old) == 0 && old.len == got.len && !memcmp(old.buf, got.buf, got.len)) {
		admin_result = ADMIN_SAME;
		goto out;
	}
	rc = write_private_file(priv, "admin.conf", got.buf, got.len);
	if (rc < 0) {
		fprintf(stderr, "provision renew-certs: cannot write '%s': %s\n", path,
			strerror(-rc));
		ret = EXIT_LOCAL;
		goto out;
	}
	admin_result = ADMIN_REFRESHED;
	snprintf(admin_from, sizeof(admin_from), "%s", cp->name);
out:
	if (got.buf)
		explicit_bzero(got.buf, got.len);
	if (old.buf)
		explicit_bzero(old.buf, old.len);
	strbuf_release(&got);
	strbuf_release(&old);
	free(priv);
	free(path);
	return ret;
}

/* Lines of renew-certs' own only with -o text: -o json is events alone. */
static bool text_output(void)
{
	return !args.output || !strcmp(args.output, "text");
}

static void say_admin(void)
{
	if (admin_result == ADMIN_REFRESHED && text_output())
		printf("renew-certs: the state folder's private/admin.conf refreshed from %s\n",
		       admin_from);
	fflush(stdout);
}

/* Only one control plane a run: kubeadm's certificates live there. */
static int select_control_plane(const struct cli_plan_args *a, const struct inventory *inv,
				const struct node ***nodes, size_t *nr)
{
	(void)a;
	free(*nodes);
	*nodes = xcalloc(1, sizeof(**nodes));
	(*nodes)[0] = run_cp ? run_cp : inventory_control_plane(inv);
	*nr = 1;
	return 0;
}

static int renew_exec(int nr_pos, char **pos)
{
	struct cli_session s;
	size_t i, k, nth = 0, nr_cps;
	int ret;

	(void)nr_pos;
	(void)pos;
	args.phase_bits = PHASE_BIT(PHASE_RENEW_CERTS);
	args.select = select_control_plane;
	run_cp = NULL;
	admin_result = ADMIN_NONE;
	args.after = refresh_admin;
	ret = cli_session_open(&s, &args);
	if (ret || (nr_cps = inventory_nr_control_planes(s.inv)) <= 1) {
		if (!ret)
			ret = cli_session_pass(&s, &args);
		cli_session_close(&s);
		say_admin();
		return ret;
	}
	for (i = 0; i < s.inv->nr_nodes && !ret; i++) {
		const struct node *n = &s.inv->nodes[i];

		if (!(n->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		run_cp = n;
		args.after = nth + 1 == nr_cps ? refresh_admin : NULL;
		if (text_output())
			printf("%srenew-certs: control plane %s (%zu of %zu)\n", nth ? "\n" : "",
			       n->name, nth + 1, nr_cps);
		fflush(stdout);
		nth++;
		ret = cli_session_pass(&s, &args);
		if (ret && nth < nr_cps && text_output()) {
			printf("renew-certs: stopped at %s; not touched:", n->name);
			for (k = i + 1; k < s.inv->nr_nodes; k++)
				if (s.inv->nodes[k].roles & NODE_ROLE_CONTROL_PLANE)
					printf(" %s", s.inv->nodes[k].name);
			printf("\n");
		}
	}
	run_cp = NULL;
	args.after = NULL;
	cli_session_close(&s);
	say_admin();
	return ret;
}

const struct cmd cmd_renew_certs = {
	.name = "renew-certs",
	.summary = "renew the control planes' certificates and restart their pods one at a time",
	.usage = "-i FILE [--no-tui] [-o json]",
	.description =
		"When any certificate kubeadm manages on the control plane has less than\n"
		"cluster.cert_warning_days (default 30) left: kubeadm certs renew all, then\n"
		"etcd, kube-apiserver, kube-controller-manager and kube-scheduler restarted\n"
		"one at a time (each manifest moved out of /etc/kubernetes/manifests and\n"
		"back, as kubeadm's certificate guide says), /readyz awaited after each,\n"
		"and the renewed admin.conf copied to root's and the login user's\n"
		"~/.kube/config and, from the first control plane, to the state folder's\n"
		"private/admin.conf.  The CAs and the kubelets' client certificates are not\n"
		"renewed (kubeadm does not; the kubelet rotates its own).  Several control\n"
		"planes: each in turn, in inventory order, the next only once the one\n"
		"before is done (its API server ready again).  Recorded like every run;\n"
		"run again, it finds nothing due and changes nothing.\n"
		"'provision check' shows the expiry.",
	.options = renew_options,
	.exec = renew_exec,
	.min_pos = 0,
	.max_pos = 0,
};
