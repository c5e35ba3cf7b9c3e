/* plan_env: the environment of a step (roles/README.md, "Environment of a step"). */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void plan_env_export(struct strbuf *sb, const char *name, const char *value)
{
	strbuf_addf(sb, "export %s=", name);
	strbuf_add_sh_quoted(sb, value ? value : "");
	strbuf_addch(sb, '\n');
}

/*
 * The handed secrets' private folder on the node (roles/README.md,
 * "Secrets on the node").  Every step first removes the folders of step
 * shells that are gone (killed before their EXIT trap ran: the shell's pid
 * is the name's first part; /run is a tmpfs, so a reboot empties it too).
 */
#define SECRETS_BASE "/run/provision/secrets"

static const char sweep_secrets[] = "for _pv_d in " SECRETS_BASE "/*.*; do\n"
				    "\t[ -d \"$_pv_d\" ] || continue\n"
				    "\t_pv_p=${_pv_d##*/}\n"
				    "\t[ -d \"/proc/${_pv_p%%.*}\" ] || rm -rf \"$_pv_d\"\n"
				    "done\n";

/*
 * A step that reads secrets: this shell makes the step's folder (0700, its
 * files 0600), writes them there with the builtin printf (the values come
 * on this script's standard input, never on a command line), runs the
 * step in a subshell (its own traps and exits cannot skip ours) and
 * removes the folder when it ends, however it ends: exit, failure, or the
 * TERM of a timeout (a KILL leaves it to the next step's sweep).
 */
static const char secrets_open[] =
    "PROVISION_SECRETS=\n"
    "trap '[ -z \"$PROVISION_SECRETS\" ] || rm -rf \"$PROVISION_SECRETS\"' EXIT\n"
    "trap 'exit 129' HUP\n"
    "trap 'exit 130' INT\n"
    "trap 'exit 143' TERM\n"
    "read -r _pv_p _pv_d </proc/self/stat || exit 125\n"
    "[ -d " SECRETS_BASE " ] || mkdir -p -m 0700 " SECRETS_BASE " || exit 125\n"
    "PROVISION_SECRETS=$(mktemp -d \"" SECRETS_BASE "/$_pv_p.XXXXXXXX\") || exit 125\n"
    "export PROVISION_SECRETS\n"
    "(\n"
    "umask 077\n";

/* PROVISION_SET_NAME for a value the exchange lets the step read; a secret to the folder. */
static void export_handed(const char *name, const char *value, bool secret, void *data)
{
	struct strbuf **out = data;
	char var[160];

	if (secret) {
		strbuf_addstr(out[1], "printf '%s' ");
		strbuf_add_sh_quoted(out[1], value ? value : "");
		strbuf_addf(out[1], " >\"$PROVISION_SECRETS/%s\" || exit 125\n", name);
		return;
	}
	snprintf(var, sizeof(var), "PROVISION_SET_%s", name);
	plan_env_export(out[0], var, value);
}

void plan_step_input(struct strbuf *input, struct node_ctx *nc, const char *lib, size_t lib_len,
		     const char *script, size_t len)
{
	struct strbuf secrets = STRBUF_INIT;

	plan_env_build(input, nc, &secrets);
	if (secrets.len) {
		strbuf_addstr(input, secrets_open);
		strbuf_add(input, secrets.buf, secrets.len);
		strbuf_addstr(input, ") || exit 125\n(\n");
	}
	strbuf_add(input, lib, lib_len);
	strbuf_addch(input, '\n');
	strbuf_add(input, script, len);
	if (secrets.len)
		strbuf_addstr(input, "\n)\nexit\n");
	explicit_bzero(secrets.buf, secrets.len);
	strbuf_release(&secrets);
}

void plan_env_build(struct strbuf *sb, struct node_ctx *nc, struct strbuf *secrets)
{
	struct strbuf *out[2] = {sb, secrets};
	const struct plan_opts *o = nc->run->o;
	const struct inventory *inv = o->inv;
	const struct facts *f = &nc->run->res->nodes[nc->index].facts;
	const struct node *n = nc->node;
	struct strbuf roles = STRBUF_INIT;
	char num[32];
	unsigned bit;
	size_t i;

	strbuf_addstr(sb, "cd / || exit 125\n");
	strbuf_addstr(sb, sweep_secrets);
	plan_env_export(sb, "PROVISION_NODE", n->name);
	if (nc->role)
		plan_env_export(sb, "PROVISION_ROLE", nc->role->name);
	for (bit = 1; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1)
		if (n->roles & bit)
			strbuf_addf(&roles, "%s%s", roles.len ? " " : "", node_role_name(bit));
	plan_env_export(sb, "PROVISION_ROLES", roles.buf);
	strbuf_release(&roles);
	plan_env_export(sb, "PROVISION_ADDRESS", n->address);
	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE) {
		/* the API's one address (roles/api-vip); absent with one control plane, as before */
		plan_env_export(sb, "PROVISION_API_HOST", inv->cluster.api_endpoint.host);
		snprintf(num, sizeof(num), "%d", inv->cluster.api_endpoint.port);
		plan_env_export(sb, "PROVISION_API_PORT", num);
		{
			/* "NAME=ADDRESS ..." of the control planes, the first first (kubeadm init) */
			struct strbuf cps = STRBUF_INIT;
			for (i = 0; i < inv->nr_nodes; i++)
				if (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE)
					strbuf_addf(&cps, "%s%s=%s", cps.len ? " " : "",
						    inv->nodes[i].name, inv->nodes[i].address);
			plan_env_export(sb, "PROVISION_CONTROL_PLANES", cps.buf);
			strbuf_release(&cps);
		}
	}
	plan_env_export(sb, "PROVISION_CLUSTER", inv->cluster.name);
	plan_env_export(sb, "PROVISION_K8S_VERSION", inv->cluster.kubernetes_version);
	{
		/* roles/kubernetes.yaml's row for the cluster's minor: PROVISION_KUBE_COLUMN */
		const struct kube_minor *km =
		    kube_matrix_find(&o->roles->kube, inv->cluster.kubernetes_version);
		char name[96];
		size_t j, c;
		for (j = 0; km && j < km->nr; j++) {
			snprintf(name, sizeof(name), "PROVISION_KUBE_%s", km->keys[j]);
			for (c = strlen("PROVISION_KUBE_"); name[c]; c++)
				if (name[c] >= 'a' && name[c] <= 'z')
					name[c] = (char)(name[c] - 'a' + 'A');
			plan_env_export(sb, name, km->vals[j]);
		}
	}
	{
		char days[16];
		snprintf(days, sizeof(days), "%d", inv->cluster.cert_warning_days);
		plan_env_export(sb, "PROVISION_CERT_WARNING_DAYS", days);
	}
	plan_env_export(sb, "PROVISION_POD_CIDR", inv->cluster.pod_cidr);
	plan_env_export(sb, "PROVISION_SERVICE_CIDR", inv->cluster.service_cidr);
	snprintf(num, sizeof(num), "%zu",
		 f->nr_gpus > f->nr_nvidia_pci ? f->nr_gpus : f->nr_nvidia_pci);
	plan_env_export(sb, "PROVISION_GPUS", num);
	if (n->gpus >= 0) {
		snprintf(num, sizeof(num), "%d", n->gpus);
		plan_env_export(sb, "PROVISION_GPUS_DECLARED", num);
	}
	plan_env_export(sb, "PROVISION_OS_ID", f->os_id);
	plan_env_export(sb, "PROVISION_OS_VERSION", f->os_version);
	plan_env_export(sb, "PROVISION_APT_MIRROR", inv->cluster.apt_mirror);
	plan_env_export(sb, "PROVISION_APT_KEY_FINGERPRINT", inv->cluster.apt_key_fingerprint);
	plan_env_export(sb, "PROVISION_HTTP_PROXY", inv->cluster.http_proxy);
	{
		struct strbuf np = STRBUF_INIT;
		size_t k;
		for (k = 0; inv->cluster.no_proxy && inv->cluster.no_proxy[k]; k++)
			strbuf_addf(&np, "%s%s", k ? "," : "", inv->cluster.no_proxy[k]);
		plan_env_export(sb, "PROVISION_NO_PROXY", np.buf);
		strbuf_release(&np);
	}
	{
		struct strbuf np = STRBUF_INIT;
		plan_containerd_no_proxy(inv, &np);
		plan_env_export(sb, "PROVISION_CONTAINERD_NO_PROXY", np.buf);
		strbuf_release(&np);
	}
	if (inv->nfs.server) {
		const struct node *s = inventory_find(inv, inv->nfs.server);
		plan_env_export(sb, "PROVISION_NFS_SERVER", inv->nfs.server);
		plan_env_export(sb, "PROVISION_NFS_ADDRESS", s ? s->address : "");
		plan_env_export(sb, "PROVISION_NFS_PATH", inv->nfs.path);
		plan_env_export(sb, "PROVISION_NFS_NETWORK", inv->nfs.export_network);
		plan_env_export(sb, "PROVISION_NFS_OPTIONS", inv->nfs.options);
	}
	/* the chart release provision pushes (roles/jupyterhub 30-install checks the archive) */
	if (inv->hub.enabled && (inv->hub.chart_resolved || inv->hub.chart_version))
		plan_env_export(sb, "PROVISION_HUB_CHART_VERSION",
				inv->hub.chart_resolved ? inv->hub.chart_resolved
							: inv->hub.chart_version);
	plan_env_export(sb, "PROVISION_BACKUP_DIR", "/var/lib/provision/backup");
	plan_env_export(sb, "PROVISION_GPU_NODES", tval_lookup(nc->run->gpu, "gpu.names")->str);
	plan_env_export(sb, "PROVISION_GPU_HOST_DRIVER",
			tval_lookup(nc->run->gpu, "gpu.host_driver")->str);
	/* the GPU nodes whose host driver does not answer (their facts) */
	plan_env_export(sb, "PROVISION_GPU_DRIVER_NODES",
			tval_lookup(nc->run->gpu, "gpu.driver_nodes")->str);
	/* "NODE:GPUS:N" for each shared GPU node (the inventory's gpu_sharing) */
	plan_env_export(sb, "PROVISION_GPU_SHARING", tval_lookup(nc->run->gpu, "gpu.sharing")->str);
	for (i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		char *name = eq ? xstrndup(o->env[i], (size_t)(eq - o->env[i])) : NULL;
		if (name)
			plan_env_export(sb, name, eq + 1);
		free(name);
	}
	if (nc->role && nc->role->pulls)
		plan_env_images(sb, nc, nc->role);
	exchange_each(nc->run->exchange, nc->index, nc->role, export_handed, out);
}
