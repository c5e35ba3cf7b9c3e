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

/* PROVISION_SET_NAME for a value the exchange lets the step read. */
static void export_handed(const char *name, const char *value, void *data)
{
	char var[160];

	snprintf(var, sizeof(var), "PROVISION_SET_%s", name);
	plan_env_export(data, var, value);
}

void plan_env_build(struct strbuf *sb, struct node_ctx *nc)
{
	const struct plan_opts *o = nc->run->o;
	const struct inventory *inv = o->inv;
	const struct facts *f = &nc->run->res->nodes[nc->index].facts;
	const struct node *n = nc->node;
	struct strbuf roles = STRBUF_INIT;
	char num[32];
	unsigned bit;
	size_t i;

	strbuf_addstr(sb, "cd / || exit 125\n");
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
	exchange_each(nc->run->exchange, nc->index, nc->role, export_handed, sb);
}
