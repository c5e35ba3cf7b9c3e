/*
 * provision renew-certs: the control plane's certificates renewed by kubeadm
 * (roles/renew-certs, phase renew-certs): `kubeadm certs renew all` when any
 * certificate kubeadm manages has less than cluster.cert_warning_days left,
 * the control-plane static pods restarted one at a time with /readyz awaited
 * after each, the users' ~/.kube/config refreshed (this machine's
 * private/admin.conf is not: kubeadm-init alone fetches it; the next `up` does).  Recorded like every run; a second run
 * finds nothing to renew and changes nothing.
 */
#include <stdlib.h>

#include "../inventory.h"
#include "../role.h"
#include "cmd.h"
#include "session.h"

static struct cli_plan_args args = {.cmd_name = "renew-certs", .forks = 64, .output = "text"};

static const struct opt renew_options[] = {
	OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
	CLI_RUN_VIEW_OPTIONS(args),
	OPT_END,
};

/* Only the control plane: kubeadm's certificates live there. */
static int select_control_plane(const struct cli_plan_args *a, const struct inventory *inv,
				const struct node ***nodes, size_t *nr)
{
	(void)a;
	free(*nodes);
	*nodes = xcalloc(1, sizeof(**nodes));
	(*nodes)[0] = inventory_control_plane(inv);
	*nr = 1;
	return 0;
}

static int renew_exec(int nr_pos, char **pos)
{
	(void)nr_pos;
	(void)pos;
	args.phase_bits = PHASE_BIT(PHASE_RENEW_CERTS);
	args.select = select_control_plane;
	return cli_plan_run(&args);
}

const struct cmd cmd_renew_certs = {
	.name = "renew-certs",
	.summary = "renew the control plane's certificates and restart its pods one at a time",
	.usage = "-i FILE [--no-tui] [-o json]",
	.description =
		"When any certificate kubeadm manages on the control plane has less than\n"
		"cluster.cert_warning_days (default 30) left: kubeadm certs renew all, then\n"
		"etcd, kube-apiserver, kube-controller-manager and kube-scheduler restarted\n"
		"one at a time (each manifest moved out of /etc/kubernetes/manifests and\n"
		"back, as kubeadm's certificate guide says), /readyz awaited after each,\n"
		"and the renewed admin.conf copied to root's and the login user's\n"
		"~/.kube/config (the state folder's private/admin.conf is refreshed by the\n"
		"next 'provision up').  The CAs and the kubelets' client certificates are\n"
		"not renewed (kubeadm does not; the kubelet rotates its own).  Recorded\n"
		"like every run; run again, it finds nothing due and changes nothing.\n"
		"'provision check' shows the expiry.",
	.options = renew_options,
	.exec = renew_exec,
	.min_pos = 0,
	.max_pos = 0,
};
