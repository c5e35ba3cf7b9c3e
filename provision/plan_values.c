/* plan_values: template values (see plan_int.h for the rooms of plan). */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "record_files.h"

/* ---- template values ---- */

static void add_roles(struct tval *map, unsigned roles)
{
	struct tval *list = tval_set(map, "roles", tval_new_list());
	struct strbuf s = STRBUF_INIT;
	unsigned bit;

	for (bit = 1; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1) {
		if (!(roles & bit))
			continue;
		tval_push(list, tval_new_str(node_role_name(bit)));
		strbuf_addf(&s, "%s%s", s.len ? " " : "", node_role_name(bit));
		tval_set_str(map, node_role_name(bit), "true");
	}
	tval_set_str(map, "roles_text", s.buf);
	strbuf_release(&s);
}

static void add_list(struct tval *map, const char *key, char **items)
{
	struct tval *list = tval_set(map, key, tval_new_list());
	size_t i;

	for (i = 0; items && items[i]; i++)
		tval_push(list, tval_new_str(items[i]));
}

/* hub.*: the inventory's jupyterhub section, as the jupyterhub role's values template reads it. */
static void add_hub(struct tval *v, const struct inventory *inv)
{
	static const char *const auth[] = {"native", "github", "ldap", "none"};
	const struct hub_settings *h = &inv->hub;
	const struct node *cp = inventory_hub_node(inv);
	struct tval *m = tval_map_at(v, "hub"), *a;

	tval_set_str(m, "enabled", "true");
	/* the release the roles install (role_set_resolve_hub_chart), and its major */
	if (h->chart_resolved || h->chart_version) {
		const char *ver = h->chart_resolved ? h->chart_resolved : h->chart_version;
		tval_set_str(m, "chart_version", ver);
		tval_set_strf(m, "chart_major", "%.*s", (int)strcspn(ver, "."), ver);
	}
	tval_set_strf(m, "node_port", "%d", h->node_port);
	if (cp)
		tval_set_str(m, "node", cp->name);
	if (cp)
		tval_set_strf(m, "url", strchr(cp->address, ':') ? "http://[%s]:%d/" : "http://%s:%d/",
			      cp->address, h->node_port);
	if (h->image) {
		/* name:tag, the tag after the last ':' of the last path element */
		const char *slash = strrchr(h->image, '/');
		const char *colon = strrchr(slash ? slash : h->image, ':');
		if (colon) {
			tval_set_strf(m, "image_name", "%.*s", (int)(colon - h->image), h->image);
			tval_set_str(m, "image_tag", colon + 1);
		} else {
			tval_set_str(m, "image_name", h->image);
			tval_set_str(m, "image_tag", "latest");
		}
	}
	tval_set_str(m, "storage", h->storage);
	tval_set_str(m, "shm_size", h->shm_size);
	tval_set_strf(m, "start_timeout", "%d", h->start_timeout);
	add_list(m, "admin_users", h->admin_users);
	add_list(m, "allowed_users", h->allowed_users);
	a = tval_map_at(m, "auth");
	tval_set_str(a, "type", auth[h->auth]);
	if (h->github_client_id)
		tval_set_str(a, "github_client_id", h->github_client_id);
	if (h->github_callback_url)
		tval_set_str(a, "github_callback_url", h->github_callback_url);
	if (h->ldap_server)
		tval_set_str(a, "ldap_server", h->ldap_server);
	if (h->ldap_bind_dn_template)
		tval_set_str(a, "ldap_bind_dn_template", h->ldap_bind_dn_template);
}

void plan_containerd_no_proxy(const struct inventory *inv, struct strbuf *sb)
{
	static const char *const fixed[] = {"localhost", "127.0.0.1", "::1"};
	char **items = NULL;
	size_t nr = 0, i, j;

	items = xcalloc(ARRAY_SIZE(fixed) + inv->nr_nodes + 4 + 1, sizeof(*items));
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		items[nr++] = (char *)fixed[i];
	/* every node's address, the API server's among them */
	for (i = 0; i < inv->nr_nodes; i++)
		items[nr++] = inv->nodes[i].address;
	items[nr++] = inv->cluster.pod_cidr;
	items[nr++] = inv->cluster.service_cidr;
	items[nr++] = ".svc";
	items[nr++] = ".cluster.local";
	strbuf_reset(sb);
	for (i = 0; i < nr; i++) {
		for (j = 0; j < i && strcmp(items[j], items[i]); j++)
			;
		if (j == i)
			strbuf_addf(sb, "%s%s", sb->len ? "," : "", items[i]);
	}
	for (i = 0; inv->cluster.no_proxy && inv->cluster.no_proxy[i]; i++) {
		for (j = 0; j < nr && strcmp(items[j], inv->cluster.no_proxy[i]); j++)
			;
		if (j == nr)
			strbuf_addf(sb, ",%s", inv->cluster.no_proxy[i]);
	}
	free(items);
}

/* One way to a registry in cluster.registries: its URL, CA, TLS check, credential's name. */
static void add_access(struct tval *e, const char *url_key, const char *url, const char *ca_pem,
		       const char *ca_name, bool skip_verify, bool auth, size_t r, size_t m)
{
	tval_set_str(e, url_key, url);
	if (ca_pem) {
		tval_set_str(e, "ca_pem", ca_pem);
		tval_set_str(e, "ca_name", ca_name);
	}
	if (skip_verify)
		tval_set_str(e, "skip_verify", "true");
	if (auth)
		tval_set_strf(e, "auth", "registry_auth_%zu_%zu", r + 1, m);
}

/* cluster.registries: what roles/containerd writes into hosts.toml (templates/README.md). */
static void add_registries(struct tval *cluster, const struct inventory *inv)
{
	struct tval *list = tval_set(cluster, "registries", tval_new_list());
	size_t i, j;

	for (i = 0; i < inv->cluster.nr_registries; i++) {
		const struct registry *r = &inv->cluster.registries[i];
		struct tval *e = tval_push(list, tval_new_map()), *ml;
		bool creds = false;
		char name[32];

		tval_set_str(e, "host", r->host);
		if (r->upstream) {
			tval_set_str(e, "upstream", "true");
			tval_set_str(e, "ca_name", "upstream.crt");
			add_access(e, "server", r->server, r->ca_pem, "upstream.crt",
				   r->skip_verify, r->username != NULL, i, 0);
			creds = r->username != NULL;
		}
		ml = tval_set(e, "mirrors", tval_new_list());
		for (j = 0; j < r->nr_mirrors; j++) {
			const struct registry_mirror *m = &r->mirrors[j];
			snprintf(name, sizeof(name), "mirror-%zu.crt", j + 1);
			struct tval *me = tval_push(ml, tval_new_map());
			add_access(me, "url", m->url, m->ca_pem, name, m->skip_verify,
				   m->username != NULL, i, j + 1);
			/* mirrors only: the last one is hosts.toml's server (the template says why)
			 */
			if (!r->upstream && j + 1 == r->nr_mirrors)
				tval_set_str(me, "server", "true");
			creds = creds || m->username != NULL;
		}
		/*
		 * containerd 1.6 and 1.7 refuse a hosts.toml without a [host]
		 * table ("failed to decode hosts.toml" error="invalid `host`
		 * tree", getSortedHosts) and go to the registry's default
		 * upstream instead; 2.x reads it.  Where the file would have none
		 * (the upstream alone, or one mirror with upstream: false), its
		 * server is written as a [host] table too (tried twice only when
		 * it fails).
		 */
		if (r->upstream ? r->nr_mirrors == 0 : r->nr_mirrors == 1)
			tval_set_str(e, "server_as_host", "true");
		/* the file holds a credential: root alone reads it */
		tval_set_str(e, "mode", creds ? "0600" : "0644");
	}
}

static bool host_driver_works(const struct facts *f)
{
	return f->nvidia_smi && f->nvidia_smi_rc == 0 && f->nr_gpus > 0;
}

/*
 * cluster.api_endpoint.* (kind, host, port, virtual_router_id), the list
 * control_planes (name, address) and, on a control plane, its VRRP
 * priority: 100 for the first, one less for each next (roles/api-vip).
 * Only with an api_endpoint: a single control plane's values stay as they were.
 */
static void add_api_endpoint(struct tval *v, struct tval *cluster, const struct inventory *inv,
			     const struct node *n)
{
	const struct api_endpoint *e = &inv->cluster.api_endpoint;
	struct tval *m = tval_map_at(cluster, "api_endpoint"), *list;
	size_t i, k = 0;

	tval_set_str(m, "kind", e->kind == API_ENDPOINT_VIP ? "vip" : "address");
	tval_set_str(m, "host", e->host);
	tval_set_strf(m, "port", "%d", e->port);
	if (e->kind == API_ENDPOINT_VIP)
		tval_set_strf(m, "virtual_router_id", "%d", e->virtual_router_id);
	list = tval_set(v, "control_planes", tval_new_list());
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *c = &inv->nodes[i];
		struct tval *item;

		if (!(c->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		item = tval_push(list, tval_new_map());
		tval_set_str(item, "name", c->name);
		tval_set_str(item, "address", c->address);
		tval_set_str(item, "self", c == n ? "true" : "");
		if (c == n)
			tval_set_strf(tval_map_at(v, "node"), "vrrp_priority", "%zu", 100 - k);
		k++;
	}
}

struct tval *plan_values(const struct inventory *inv, const struct node *n, const struct facts *f,
			 const struct kube_minor *kube)
{
	struct tval *v = tval_new_map(), *m, *list;
	const struct node *cp = inventory_control_plane(inv);
	const char *ver = inv->cluster.kubernetes_version;
	const char *dot1 = strchr(ver, '.');
	const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	size_t i;

	m = tval_map_at(v, "node");
	tval_set_str(m, "name", n->name);
	tval_set_str(m, "address", n->address);
	add_roles(m, n->roles);
	if (n->gpus >= 0)
		tval_set_strf(m, "gpus", "%d", n->gpus);

	m = tval_map_at(v, "cluster");
	tval_set_str(m, "name", inv->cluster.name);
	tval_set_str(m, "kubernetes_version", ver);
	if (dot2)
		tval_set_strf(m, "kubernetes_minor", "%.*s", (int)(dot2 - ver), ver);
	tval_set_str(m, "pod_cidr", inv->cluster.pod_cidr);
	tval_set_str(m, "service_cidr", inv->cluster.service_cidr);
	tval_set_strf(m, "api_port", "%d", inv->cluster.api_port);
	if (kube) {
		struct tval *k = tval_map_at(v, "kube");
		for (i = 0; i < kube->nr; i++)
			tval_set_str(k, kube->keys[i], kube->vals[i]);
	}
	if (inv->cluster.apt_mirror)
		tval_set_str(m, "apt_mirror", inv->cluster.apt_mirror);
	if (inv->cluster.http_proxy)
		tval_set_str(m, "http_proxy", inv->cluster.http_proxy);
	{
		struct strbuf np = STRBUF_INIT;
		plan_containerd_no_proxy(inv, &np);
		tval_set_str(m, "containerd_no_proxy", np.buf);
		strbuf_release(&np);
	}
	add_registries(m, inv);
	if (cp) {
		tval_set_str(m, "control_plane", cp->name);
		tval_set_str(m, "control_plane_address", cp->address);
	}
	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE)
		add_api_endpoint(v, m, inv, n);

	list = tval_set(v, "nodes", tval_new_list());
	for (i = 0; i < inv->nr_nodes; i++) {
		struct tval *e = tval_push(list, tval_new_map());
		tval_set_str(e, "name", inv->nodes[i].name);
		tval_set_str(e, "address", inv->nodes[i].address);
		add_roles(e, inv->nodes[i].roles);
	}

	if (inv->nfs.server) {
		const struct node *s = inventory_find(inv, inv->nfs.server);
		m = tval_map_at(v, "nfs");
		tval_set_str(m, "server", inv->nfs.server);
		if (s)
			tval_set_str(m, "address", s->address);
		tval_set_str(m, "path", inv->nfs.path);
		if (inv->nfs.export_network)
			tval_set_str(m, "export_network", inv->nfs.export_network);
		tval_set_str(m, "options", inv->nfs.options);
	}

	if (inv->hub.enabled)
		add_hub(v, inv);

	if (f) {
		m = tval_map_at(v, "facts");
		if (f->os_id)
			tval_set_str(m, "os_id", f->os_id);
		if (f->os_version)
			tval_set_str(m, "os_version", f->os_version);
		if (f->kernel)
			tval_set_str(m, "kernel", f->kernel);
		tval_set_strf(m, "cpus", "%u", f->cpus);
		tval_set_strf(m, "mem_kib", "%llu", (unsigned long long)f->mem_kib);
		tval_set_strf(m, "gpu_count", "%zu", f->nr_gpus);
		/* nvidia-smi answers with GPUs: no GPU Operator driver container here */
		tval_set_str(m, "host_driver", host_driver_works(f) ? "true" : "");
		if (f->containerd_version) {
			char major[16] = "";
			tval_set_str(m, "containerd_version", f->containerd_version);
			snprintf(major, sizeof(major), "%.*s", (int)strcspn(f->containerd_version, "."),
				 f->containerd_version);
			tval_set_str(m, "containerd_major", major);
		}
		if (f->cuda_version)
			tval_set_str(m, "cuda_version", f->cuda_version);
		if (f->default_iface)
			tval_set_str(m, "default_iface", f->default_iface);
		tval_set_str(m, "kubelet_resolv_conf", facts_kubelet_resolv_conf(f));
		list = tval_set(m, "gpus", tval_new_list());
		for (i = 0; i < f->nr_gpus; i++) {
			struct tval *g = tval_push(list, tval_new_map());
			tval_set_str(g, "model", f->gpus[i].model);
			tval_set_strf(g, "memory_mib", "%u", f->gpus[i].memory_mib);
			if (f->gpus[i].driver)
				tval_set_str(g, "driver", f->gpus[i].driver);
		}
	}
	tval_map_at(v, "set");
	return v;
}

void plan_gpu_values(struct tval *v, const struct node *const *nodes,
		     const struct facts *const *facts, size_t nr)
{
	struct tval *m = tval_map_at(v, "gpu"), *list = tval_set(m, "nodes", tval_new_list());
	struct tval *factors = tval_set(m, "sharing_factors", tval_new_list());
	struct strbuf names = STRBUF_INIT, sharing = STRBUF_INIT, driver = STRBUF_INIT;
	bool used[INVENTORY_GPU_SHARING_MAX + 1] = {false};
	size_t i, n = 0, total = 0;
	bool all_drivers = true;
	int k;

	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		struct tval *e;
		size_t count;

		if (!f || !node_has_gpu(nodes[i], f))
			continue;
		count = f->nr_gpus > f->nr_nvidia_pci ? f->nr_gpus : f->nr_nvidia_pci;
		e = tval_push(list, tval_new_map());
		tval_set_str(e, "name", nodes[i]->name);
		tval_set_strf(e, "count", "%zu", count);
		if (f->nr_gpus)
			tval_set_str(e, "model", f->gpus[0].model);
		else /* nvidia-smi does not answer: what the PCI bus says */
			tval_set_strf(e, "model", "NVIDIA PCI device %s",
				      f->nr_nvidia_pci && strchr(f->nvidia_pci[0], ' ')
					      ? strchr(f->nvidia_pci[0], ' ') + 1
					      : "?");
		tval_set_strf(e, "memory_mib", "%u", f->nr_gpus ? f->gpus[0].memory_mib : 0);
		tval_set_str(e, "driver",
			     host_driver_works(f) && f->gpus[0].driver ? f->gpus[0].driver : "");
		all_drivers = all_drivers && host_driver_works(f);
		if (!host_driver_works(f)) /* the operator's driver container, there only */
			strbuf_addf(&driver, "%s%s", driver.len ? " " : "", nodes[i]->name);
		/* the inventory bounds it; a struct made elsewhere is checked again */
		if (nodes[i]->gpu_sharing >= INVENTORY_GPU_SHARING_MIN &&
		    nodes[i]->gpu_sharing <= INVENTORY_GPU_SHARING_MAX) {
			tval_set_strf(e, "sharing", "%d", nodes[i]->gpu_sharing);
			strbuf_addf(&sharing, "%s%s:%zu:%d", sharing.len ? " " : "", nodes[i]->name,
				    count, nodes[i]->gpu_sharing);
			used[nodes[i]->gpu_sharing] = true;
		} else {
			tval_set_str(e, "sharing", "");
		}
		strbuf_addf(&names, "%s%s", n ? " " : "", nodes[i]->name);
		total += count;
		n++;
	}
	tval_set_strf(m, "node_count", "%zu", n);
	tval_set_strf(m, "count", "%zu", total);
	tval_set_str(m, "host_driver", n && all_drivers ? "true" : "");
	tval_set_str(m, "names", names.buf);
	tval_set_str(m, "driver_nodes", driver.buf);
	tval_set_str(m, "sharing", sharing.buf);
	for (k = INVENTORY_GPU_SHARING_MIN; k <= INVENTORY_GPU_SHARING_MAX; k++) {
		char num[16];
		if (!used[k])
			continue;
		snprintf(num, sizeof(num), "%d", k);
		tval_push(factors, tval_new_str(num));
	}
	strbuf_release(&names);
	strbuf_release(&driver);
	strbuf_release(&sharing);
}

/*
 * plan_gpu_values for every node of the inventory: the fresh facts of the
 * nodes of this run, the facts recorded by the last run that had the others
 * (STATE/nodes/NODE/facts): `add-node` and `-l` must not make the GPU
 * Operator's values forget the GPU nodes they leave out.
 */
void plan_run_gpu_values(struct tval *v, const struct run *run)
{
	const struct plan_opts *o = run->o;
	const struct inventory *inv = o->inv;
	size_t n = inv->nr_nodes, i, k;
	const struct node **nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	const struct facts **facts = xcalloc(n ? n : 1, sizeof(*facts));
	struct facts *recorded = xcalloc(n ? n : 1, sizeof(*recorded));

	for (i = 0; i < n; i++) {
		nodes[i] = &inv->nodes[i];
		for (k = 0; k < o->nr; k++)
			if (!strcmp(o->nodes[k]->name, inv->nodes[i].name)) {
				facts[i] = run->res->nodes[k].have_facts ? &run->res->nodes[k].facts
									 : NULL;
				break;
			}
		/* parsed again, rejected again: poisoned facts are not reused */
		if (k == o->nr && o->state_dir &&
		    record_facts_read(o->state_dir, inv->nodes[i].name, &recorded[i]) == 0)
			facts[i] = &recorded[i];
	}
	plan_gpu_values(v, nodes, facts, n);
	for (i = 0; i < n; i++)
		if (facts[i] == &recorded[i])
			facts_release(&recorded[i]);
	free(recorded);
	free(facts);
	free(nodes);
}

static void fmt_cores(struct tval *map, const char *key, unsigned milli)
{
	char frac[8];
	size_t n;

	if (!(milli % 1000)) {
		tval_set_strf(map, key, "%u", milli / 1000);
		return;
	}
	snprintf(frac, sizeof(frac), "%03u", milli % 1000);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	tval_set_strf(map, key, "%u.%s", milli / 1000, frac);
}

/*
 * plan_add_profiles (plan.h): the hub's profile list from the cluster's measured capacity.
 * A step on the control plane (roles/jupyterhub 20-capacity) hands the
 * Nodes as the API reports them -- `::set hub_nodes=N`, then one
 * `::set hub_node_K=JSON` per Node (K = 1..N; one line each, so that no
 * line comes near the transport's line limit however many nodes there
 * are) -- and they become a NodeList for profiles_nodes_from_json().
 * Without hub_nodes `profiles` is an empty list (provision plan before the
 * cluster exists).  Returns -1 with err set when the
 * handed text is not what kubectl gives.
 */
int plan_add_profiles(struct tval *v, struct error *err)
{
	const struct tval *count = tval_lookup(v, "set.hub_nodes"), *item;
	struct strbuf json = STRBUF_INIT;
	struct profile_node *nodes = NULL;
	struct hub_profile *p = NULL;
	struct tval *list, *e, *sel, *ns;
	size_t nr_nodes = 0, nr = 0, i, k;
	unsigned long n;
	char key[64], *end;
	int ret = 0;

	if (!count || count->kind != TVAL_STR) {
		/* Nothing handed (provision plan before the cluster exists): no profile yet. */
		if (!tval_lookup(v, "profiles"))
			tval_set(v, "profiles", tval_new_list());
		return 0;
	}
	n = strtoul(count->str, &end, 10);
	if (*end || end == count->str || n > 100000)
		return error_set(err, -1, "hub_nodes is '%s', not a count of nodes", count->str);
	strbuf_addstr(&json, "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[");
	for (i = 1; i <= n; i++) {
		snprintf(key, sizeof(key), "set.hub_node_%zu", i);
		item = tval_lookup(v, key);
		if (!item || item->kind != TVAL_STR) {
			ret = error_set(err, -1, "hub_nodes says %lu nodes but %s was not handed", n,
					key + 4);
			goto out;
		}
		strbuf_addf(&json, "%s%s", i > 1 ? "," : "", item->str);
	}
	strbuf_addstr(&json, "]}");
	if (profiles_nodes_from_json(&nodes, &nr_nodes, json.buf, json.len, err) < 0) {
		ret = -1;
		goto out;
	}
	profiles_reserve_addons(nodes, nr_nodes);
	profiles_generate(&p, &nr, nodes, nr_nodes);
	list = tval_set(v, "profiles", tval_new_list());
	for (i = 0; i < nr; i++) {
		e = tval_push(list, tval_new_map());
		tval_set_str(e, "slug", p[i].slug);
		tval_set_str(e, "display_name", p[i].display_name);
		tval_set_str(e, "description", p[i].description);
		tval_set_str(e, "reasoning", p[i].reasoning);
		tval_set_strf(e, "gpus", "%u", p[i].gpus);
		if (p[i].selector_key) {
			sel = tval_map_at(e, "node_selector");
			tval_set_str(sel, p[i].selector_key, p[i].selector_value);
		}
		if (p[i].runtime_class)
			tval_set_str(e, "runtime_class", p[i].runtime_class);
		if (p[i].visible_devices)
			tval_set_str(e, "visible_devices", p[i].visible_devices);
		fmt_cores(e, "cpu_guarantee", p[i].cpu_guarantee_milli);
		fmt_cores(e, "cpu_limit", p[i].cpu_limit_milli);
		tval_set_strf(e, "mem_guarantee", "%lluM", (unsigned long long)p[i].mem_guarantee_mib);
		tval_set_strf(e, "mem_limit", "%lluM", (unsigned long long)p[i].mem_limit_mib);
		ns = tval_set(e, "nodes", tval_new_list());
		for (k = 0; k < p[i].nr_nodes; k++)
			tval_push(ns, tval_new_str(p[i].nodes[k]));
		if (i == 0)
			tval_set_str(e, "default", "true");
	}
out:
	profiles_free(p, nr);
	profiles_nodes_free(nodes, nr_nodes);
	strbuf_release(&json);
	return ret;
}

/* set.NAME for a value the exchange lets the role read. */
static void set_handed(const char *name, const char *value, bool secret, void *data)
{
	(void)secret;
	tval_set_str(data, name, value);
}

struct tval *plan_node_values(struct node_ctx *nc)
{
	const struct plan_opts *o = nc->run->o;
	struct tval *v = plan_values(o->inv, nc->node, &nc->run->res->nodes[nc->index].facts,
				     kube_matrix_find(&o->roles->kube, o->inv->cluster.kubernetes_version));
	struct tval *set = tval_map_at(v, "set");

	tval_set(v, "gpu", tval_copy(tval_lookup(nc->run->gpu, "gpu")));
	exchange_each(nc->run->exchange, nc->index, nc->role, set_handed, set);
	return v;
}
