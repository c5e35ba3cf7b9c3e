/*
 * cmd_inventory: `provision inventory -i FILE [-o text|json]` validates the
 * inventory and prints what was understood -- the cluster settings and every
 * node with its resolved address, port, user, roles, GPUs, sudo and host key
 * policy -- without connecting anywhere.
 *
 * Diagnostics go to stderr, one per line (a hint on the line after), in the
 * order of the file; any error means exit status 2 and nothing on stdout.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../inventory.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "print.h"

static const char *opt_inventory_file;
static const char *opt_output = "text";

static const struct opt inventory_options[] = {
    OPT_STRING('i', "inventory", &opt_inventory_file, "FILE",
	       "the inventory file (required; see provision-inventory(5))"),
    OPT_CHOICE('o', "output", &opt_output, "FORMAT", "text|json",
	       "text (a readable table, the default) or json"),
    OPT_END,
};

static const char *const host_keys_names[] = {"strict", "accept-new"};
static const char *const sudo_names[] = {"auto", "always", "never"};
static const char *const auth_names[] = {"native", "github", "ldap", "none"};

static void roles_text(struct strbuf *sb, unsigned roles)
{
	unsigned bit;
	size_t start = sb->len;

	for (bit = NODE_ROLE_CONTROL_PLANE; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1)
		if (roles & bit)
			strbuf_addf(sb, "%s%s", sb->len > start ? "," : "",
				    node_role_name((enum node_role)bit));
}

/* Text ---------------------------------------------------------------------- */

#define FIELD "  %-18s "

static void text_list(struct strbuf *sb, const char *label, char *const *v, const char *none)
{
	size_t i;

	strbuf_addf(sb, FIELD, label);
	if (!v[0])
		strbuf_addstr(sb, none);
	for (i = 0; v[i]; i++)
		strbuf_addf(sb, "%s%s", i ? ", " : "", v[i]);
	strbuf_addch(sb, '\n');
}

/* One access of a registry: URL (CA FILE | no TLS check, user NAME). */
static void text_access(struct strbuf *sb, const char *url, const char *ca_file, bool skip_verify,
			const char *username)
{
	size_t start;

	strbuf_addf(sb, "%s", url);
	start = sb->len;
	if (ca_file)
		strbuf_addf(sb, " (CA %s", ca_file);
	else if (skip_verify)
		strbuf_addstr(sb, " (TLS certificate not checked");
	if (username)
		strbuf_addf(sb, "%s%s", sb->len > start ? ", user " : " (user ", username);
	if (sb->len > start)
		strbuf_addch(sb, ')');
}

/* "registries  HOST: MIRROR, ..., then UPSTREAM" per registry, in the order containerd tries them.
 */
static void text_registries(struct strbuf *sb, const struct cluster_settings *c)
{
	size_t i, j;

	for (i = 0; i < c->nr_registries; i++) {
		const struct registry *r = &c->registries[i];
		strbuf_addf(sb, FIELD "%s: ", i ? "" : "registries", r->host);
		for (j = 0; j < r->nr_mirrors; j++) {
			const struct registry_mirror *m = &r->mirrors[j];
			strbuf_addstr(sb, j ? ", " : "");
			text_access(sb, m->url, m->ca_file, m->skip_verify, m->username);
		}
		if (r->upstream) {
			strbuf_addstr(sb, r->nr_mirrors ? ", then " : "");
			text_access(sb, r->server, r->ca_file, r->skip_verify, r->username);
		} else {
			strbuf_addstr(sb, ", never the upstream");
		}
		strbuf_addch(sb, '\n');
	}
}

static void text_cluster(struct strbuf *sb, const struct inventory *inv)
{
	const struct cluster_settings *c = &inv->cluster;
	const struct node *cp = inventory_control_plane(inv);
	const struct hub_settings *hub = &inv->hub;

	strbuf_addf(sb, "inventory %s (version %d)\n\n", inv->path, inv->version);
	strbuf_addf(sb, "cluster %s\n", c->name);
	strbuf_addf(sb, FIELD "%s\n", "kubernetes", c->kubernetes_version);
	if (c->api_endpoint.kind == API_ENDPOINT_NONE) {
		strbuf_addf(sb, FIELD "%s:%d (%s)\n", "api server", cp->address, c->api_port,
			    cp->name);
	} else {
		size_t i, k = 0;

		strbuf_addf(sb, FIELD "%s:%d (%s)\n", "api server", c->api_endpoint.host,
			    c->api_endpoint.port,
			    c->api_endpoint.kind == API_ENDPOINT_VIP
				? "a virtual IP: keepalived and HAProxy on the control planes"
				: "the lab's load balancer or DNS name");
		if (c->api_endpoint.kind == API_ENDPOINT_VIP)
			strbuf_addf(sb, FIELD "%d\n", "vrrp router id",
				    c->api_endpoint.virtual_router_id);
		strbuf_addf(sb, FIELD, "control planes");
		for (i = 0; i < inv->nr_nodes; i++)
			if (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE)
				strbuf_addf(sb, "%s%s:%d", k++ ? ", " : "", inv->nodes[i].address,
					    c->api_port);
		strbuf_addch(sb, '\n');
	}
	strbuf_addf(sb, FIELD "%s\n", "pod network", c->pod_cidr);
	strbuf_addf(sb, FIELD "%s\n", "service network", c->service_cidr);
	strbuf_addf(sb, FIELD "%s\n", "packages from",
		    c->apt_mirror ? c->apt_mirror : "pkgs.k8s.io");
	if (c->apt_key_fingerprint)
		strbuf_addf(sb, FIELD "%s\n", "signed by", c->apt_key_fingerprint);
	strbuf_addf(sb, FIELD "%s\n", "http proxy", c->http_proxy ? c->http_proxy : "none");
	if (c->http_proxy)
		text_list(sb, "no proxy for", c->no_proxy, "the cluster's own networks only");
	strbuf_addf(sb, FIELD "%s\n", "containerd",
		    c->containerd_release ? "2.x from its release archive (containerd: release)"
					  : "the distribution's package");
	text_registries(sb, c);
	if (c->images_source != IMAGES_SOURCE_AUTO || c->image_pull_timeout != 1800)
		strbuf_addf(sb, FIELD "%s, a pull may take %ds\n", "images",
			    c->images_source == IMAGES_SOURCE_BUNDLE     ? "from the bundle only"
			    : c->images_source == IMAGES_SOURCE_REGISTRY
				? "pulled from registries"
									 : "the bundle, then registries",
			    c->image_pull_timeout);
	if (!c->helm_major || c->helm_auto)
		strbuf_addf(sb, FIELD "%s\n", "helm",
			    "Helm 4 where one is pinned for the cluster's minor, else 3");
	else
		strbuf_addf(
		    sb, FIELD "Helm %d%s\n", "helm", c->helm_major,
		    c->helm_major == 4 ? "" : " (helm: 3; Helm 3's security fixes end 2027-02-10)");

	strbuf_addstr(sb, "\nstorage\n");
	if (inv->nfs.server)
		strbuf_addf(sb, FIELD "%s:%s to %s (%s)\n", "nfs", inv->nfs.server, inv->nfs.path,
			    inv->nfs.export_network, inv->nfs.options);
	else
		strbuf_addf(sb, FIELD "%s\n", "nfs", "none");

	strbuf_addf(sb, "\njupyterhub %s\n", hub->enabled ? "enabled" : "disabled");
	if (hub->enabled) {
		const struct node *hn = inventory_hub_node(inv);

		strbuf_addf(sb, FIELD "%s\n", "chart version",
			    hub->chart_version ? hub->chart_version : "the jupyterhub role's pin");
		if (hn) {
			strbuf_addf(sb, FIELD "%s (the hub and its database)\n", "node", hn->name);
			strbuf_addf(sb, FIELD "http://%s:%d/\n", "address", hn->address,
				    hub->node_port);
		}
		strbuf_addf(sb, FIELD "%s\n", "image",
			    hub->image ? hub->image : "the chart's default");
		strbuf_addf(sb, FIELD "%s per user, /dev/shm %s\n", "storage", hub->storage,
			    hub->shm_size);
		strbuf_addf(sb, FIELD "%ds\n", "start timeout", hub->start_timeout);
		strbuf_addf(sb, FIELD "%s", "auth", auth_names[hub->auth]);
		if (hub->auth == HUB_AUTH_GITHUB)
			strbuf_addf(sb, " (client %s, secret in %s)", hub->github_client_id,
				    hub->github_client_secret_file);
		else if (hub->auth == HUB_AUTH_LDAP)
			strbuf_addf(sb, " (%s, %s)", hub->ldap_server, hub->ldap_bind_dn_template);
		strbuf_addch(sb, '\n');
		text_list(sb, "admin users", hub->admin_users, "none");
		text_list(sb, "allowed users", hub->allowed_users,
			  hub->auth == HUB_AUTH_NATIVE	 ? "anyone an admin approves"
			  : hub->auth == HUB_AUTH_GITHUB ? "the admin users only"
							 : "anyone the LDAP server accepts");
	}
}

enum {
	COL_NAME,
	COL_ADDRESS,
	COL_PORT,
	COL_USER,
	COL_ROLES,
	COL_GPUS,
	COL_SUDO,
	COL_KEYS,
	NR_COLS
};

/* One table row, columns two spaces apart, no trailing blanks. */
static void add_row(struct strbuf *sb, const char *const *cells, const size_t *width)
{
	size_t c;

	for (c = 0; c + 1 < NR_COLS; c++)
		strbuf_addf(sb, "%-*s  ", (int)width[c], cells[c]);
	strbuf_addf(sb, "%s\n", cells[c]);
}

static void text_nodes(struct strbuf *sb, const struct inventory *inv)
{
	static const char *const heads[NR_COLS] = {"NAME",  "ADDRESS", "PORT", "USER",
						   "ROLES", "GPUS",    "SUDO", "HOST KEYS"};
	char ***cells = xcalloc(inv->nr_nodes, sizeof(*cells));
	size_t width[NR_COLS], i, c;
	unsigned gpus = 0, workers = 0;
	bool extra = false;

	for (c = 0; c < NR_COLS; c++)
		width[c] = strlen(heads[c]);
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];
		struct strbuf roles = STRBUF_INIT;

		roles_text(&roles, nd->roles);
		cells[i] = xcalloc(NR_COLS, sizeof(**cells));
		cells[i][COL_NAME] = xstrdup(nd->name);
		cells[i][COL_ADDRESS] = xstrdup(nd->address);
		cells[i][COL_PORT] = xasprintf("%d", nd->ssh.port);
		cells[i][COL_USER] = xstrdup(nd->ssh.user);
		cells[i][COL_ROLES] = strbuf_detach(&roles, NULL);
		cells[i][COL_GPUS] = nd->gpus < 0 ? xstrdup("-") : xasprintf("%d", nd->gpus);
		cells[i][COL_SUDO] = xstrdup(sudo_names[nd->ssh.sudo]);
		cells[i][COL_KEYS] = xstrdup(host_keys_names[nd->ssh.host_keys]);
		for (c = 0; c < NR_COLS; c++)
			if (strlen(cells[i][c]) > width[c])
				width[c] = strlen(cells[i][c]);
		if (nd->roles & NODE_ROLE_WORKER) {
			workers++;
			gpus += nd->gpus > 0 ? (unsigned)nd->gpus : 0;
		}
	}
	strbuf_addf(sb, "\nnodes %zu (%u worker%s, %u GPU%s declared)\n", inv->nr_nodes, workers,
		    workers == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
	add_row(sb, heads, width);
	for (i = 0; i < inv->nr_nodes; i++) {
		add_row(sb, (const char *const *)cells[i], width);
		for (c = 0; c < NR_COLS; c++)
			free(cells[i][c]);
		free(cells[i]);
	}
	free(cells);

	/* What the table leaves out, only where a node has it. */
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];
		const struct ssh_settings *s = &nd->ssh, *d = &inv->ssh;
		struct strbuf line = STRBUF_INIT;
		size_t l;

		if (s->identity && (!d->identity || strcmp(s->identity, d->identity)))
			strbuf_addf(&line, ", identity %s", s->identity);
		if (s->jump)
			strbuf_addf(&line, ", via %s", s->jump);
		if (strcmp(s->known_hosts, d->known_hosts))
			strbuf_addf(&line, ", known hosts %s", s->known_hosts);
		if (s->sudo_password_file && (!d->sudo_password_file ||
					      strcmp(s->sudo_password_file, d->sudo_password_file)))
			strbuf_addf(&line, ", its own sudo password from %s",
				    s->sudo_password_file);
		for (l = 0; nd->labels[l]; l++)
			strbuf_addf(&line, "%s%s", l ? " " : ", labels ", nd->labels[l]);
		if (nd->gpu_sharing)
			strbuf_addf(&line, ", each GPU shared by up to %d notebooks (time-slicing)",
				    nd->gpu_sharing);
		if (line.len) {
			if (!extra)
				strbuf_addch(sb, '\n');
			extra = true;
			strbuf_addf(sb, "%s: %s\n", nd->name, line.buf + 2);
		}
		strbuf_release(&line);
	}
	strbuf_addf(sb, "\nssh identity %s, known hosts %s\n",
		    inv->ssh.identity ? inv->ssh.identity : "from the agent or ~/.ssh",
		    inv->ssh.known_hosts);
	if (inv->ssh.sudo_password_file)
		strbuf_addf(sb, "sudo password from %s (the nodes without one of their own)\n",
			    inv->ssh.sudo_password_file);
	strbuf_addf(sb, "ssh timeouts: connect %ds, ", inv->ssh.connect_timeout);
	if (inv->ssh.command_timeout)
		strbuf_addf(sb, "command %ds, ", inv->ssh.command_timeout);
	else
		strbuf_addstr(sb, "no command timeout, ");
	if (inv->ssh.keepalive)
		strbuf_addf(sb, "keepalive every %ds\n", inv->ssh.keepalive);
	else
		strbuf_addstr(sb, "no keepalive\n");
}

static void print_text(const struct inventory *inv)
{
	struct strbuf sb = STRBUF_INIT;

	text_cluster(&sb, inv);
	text_nodes(&sb, inv);
	fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
}

/* JSON ---------------------------------------------------------------------- */

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *jstrv(char *const *v)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *json_ssh(const struct ssh_settings *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "user", jstr(s->user));
	json_object_set_new(o, "port", json_integer(s->port));
	json_object_set_new(o, "identity", jstr(s->identity));
	json_object_set_new(o, "known_hosts", jstr(s->known_hosts));
	json_object_set_new(o, "host_keys", json_string(host_keys_names[s->host_keys]));
	json_object_set_new(o, "sudo", json_string(sudo_names[s->sudo]));
	json_object_set_new(o, "sudo_password_file", jstr(s->sudo_password_file));
	json_object_set_new(o, "jump", jstr(s->jump));
	json_object_set_new(o, "connect_timeout", json_integer(s->connect_timeout));
	json_object_set_new(o, "command_timeout", json_integer(s->command_timeout));
	json_object_set_new(o, "keepalive", json_integer(s->keepalive));
	return o;
}

static json_t *json_node(const struct node *nd)
{
	json_t *o = json_object(), *roles = json_array(), *labels = json_object();
	unsigned bit;
	size_t i;

	for (bit = NODE_ROLE_CONTROL_PLANE; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1)
		if (nd->roles & bit)
			json_array_append_new(roles,
					      json_string(node_role_name((enum node_role)bit)));
	for (i = 0; nd->labels[i]; i++) {
		const char *eq = strchr(nd->labels[i], '=');
		char *key = xstrndup(nd->labels[i], (size_t)(eq - nd->labels[i]));
		json_object_set_new(labels, key, json_string(eq + 1));
		free(key);
	}
	json_object_set_new(o, "name", json_string(nd->name));
	json_object_set_new(o, "address", json_string(nd->address));
	json_object_set_new(o, "port", json_integer(nd->ssh.port));
	json_object_set_new(o, "user", json_string(nd->ssh.user));
	json_object_set_new(o, "roles", roles);
	json_object_set_new(o, "gpus", nd->gpus < 0 ? json_null() : json_integer(nd->gpus));
	json_object_set_new(o, "gpu_sharing",
			    nd->gpu_sharing ? json_integer(nd->gpu_sharing) : json_null());
	json_object_set_new(o, "arch", json_string(nd->arch ? nd->arch : "amd64"));
	json_object_set_new(o, "sudo", json_string(sudo_names[nd->ssh.sudo]));
	json_object_set_new(o, "host_keys", json_string(host_keys_names[nd->ssh.host_keys]));
	json_object_set_new(o, "ssh", json_ssh(&nd->ssh));
	json_object_set_new(o, "labels", labels);
	json_object_set_new(o, "line", json_integer(nd->pos.line));
	return o;
}

static json_t *json_access(const char *url_key, const char *url, const char *ca_file,
			   bool skip_verify, const char *username, const char *password_file)
{
	json_t *o = json_object();

	json_object_set_new(o, url_key, json_string(url));
	json_object_set_new(o, "ca_file", jstr(ca_file));
	json_object_set_new(o, "skip_verify", json_boolean(skip_verify));
	json_object_set_new(o, "username", jstr(username));
	json_object_set_new(o, "password_file", jstr(password_file));
	return o;
}

/* cluster.registries as an object by host; mirrors in order; no password, only its file. */
static json_t *json_registries(const struct cluster_settings *c)
{
	json_t *all = json_object();
	size_t i, j;

	for (i = 0; i < c->nr_registries; i++) {
		const struct registry *r = &c->registries[i];
		json_t *o, *mirrors = json_array();
		for (j = 0; j < r->nr_mirrors; j++) {
			const struct registry_mirror *m = &r->mirrors[j];
			json_array_append_new(mirrors,
					      json_access("url", m->url, m->ca_file, m->skip_verify,
							  m->username, m->password_file));
		}
		if (r->upstream) {
			o = json_access("server", r->server, r->ca_file, r->skip_verify,
					r->username, r->password_file);
		} else {
			o = json_object();
			json_object_set_new(o, "server", json_null());
		}
		json_object_set_new(o, "upstream", json_boolean(r->upstream));
		json_object_set_new(o, "mirrors", mirrors);
		json_object_set_new(all, r->host, o);
	}
	return all;
}

static void print_json(const struct inventory *inv)
{
	const struct cluster_settings *c = &inv->cluster;
	const struct hub_settings *hub = &inv->hub;
	const struct node *cp = inventory_control_plane(inv), *hub_node = inventory_hub_node(inv);
	json_t *root = json_object(), *cl = json_object(), *nfs = json_null(),
	       *storage = json_object(), *h = json_object(), *auth = json_object(),
	       *nodes = json_array();
	char *text;
	size_t i;

	json_object_set_new(cl, "name", json_string(c->name));
	json_object_set_new(cl, "kubernetes_version", json_string(c->kubernetes_version));
	json_object_set_new(cl, "pod_cidr", json_string(c->pod_cidr));
	json_object_set_new(cl, "service_cidr", json_string(c->service_cidr));
	json_object_set_new(cl, "api_port", json_integer(c->api_port));
	json_object_set_new(cl, "control_plane", json_string(cp->name));
	if (c->api_endpoint.kind != API_ENDPOINT_NONE) {
		json_t *ep = json_object(), *cps = json_array();

		json_object_set_new(
		    ep, "kind",
		    json_string(c->api_endpoint.kind == API_ENDPOINT_VIP ? "vip" : "address"));
		json_object_set_new(ep, "host", json_string(c->api_endpoint.host));
		json_object_set_new(ep, "port", json_integer(c->api_endpoint.port));
		if (c->api_endpoint.kind == API_ENDPOINT_VIP)
			json_object_set_new(ep, "virtual_router_id",
					    json_integer(c->api_endpoint.virtual_router_id));
		json_object_set_new(cl, "api_endpoint", ep);
		for (i = 0; i < inv->nr_nodes; i++)
			if (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE)
				json_array_append_new(cps, json_string(inv->nodes[i].name));
		json_object_set_new(cl, "control_planes", cps);
	}
	json_object_set_new(cl, "apt_mirror", jstr(c->apt_mirror));
	json_object_set_new(cl, "apt_key_fingerprint", jstr(c->apt_key_fingerprint));
	json_object_set_new(cl, "http_proxy", jstr(c->http_proxy));
	json_object_set_new(cl, "no_proxy", jstrv(c->no_proxy));
	json_object_set_new(cl, "containerd",
			    json_string(c->containerd_release ? "release" : "distribution"));
	json_object_set_new(cl, "registries", json_registries(c));
	{
		static const char *const src[] = {"auto", "registry", "bundle"};
		json_t *im = json_object();
		json_object_set_new(im, "source", json_string(src[c->images_source]));
		json_object_set_new(im, "pull_timeout", json_integer(c->image_pull_timeout));
		json_object_set_new(cl, "images", im);
	}
	json_object_set_new(cl, "helm",
			    !c->helm_major || c->helm_auto ? json_string("auto")
								       : json_integer(c->helm_major));

	if (inv->nfs.server) {
		nfs = json_object();
		json_object_set_new(nfs, "server", json_string(inv->nfs.server));
		json_object_set_new(nfs, "path", json_string(inv->nfs.path));
		json_object_set_new(nfs, "export_network", jstr(inv->nfs.export_network));
		json_object_set_new(nfs, "options", json_string(inv->nfs.options));
	}
	json_object_set_new(storage, "nfs", nfs);

	json_object_set_new(auth, "type", json_string(auth_names[hub->auth]));
	if (hub->auth == HUB_AUTH_GITHUB) {
		json_object_set_new(auth, "client_id", jstr(hub->github_client_id));
		json_object_set_new(auth, "client_secret_file",
				    jstr(hub->github_client_secret_file));
		json_object_set_new(auth, "callback_url", jstr(hub->github_callback_url));
	} else if (hub->auth == HUB_AUTH_LDAP) {
		json_object_set_new(auth, "server", jstr(hub->ldap_server));
		json_object_set_new(auth, "bind_dn_template", jstr(hub->ldap_bind_dn_template));
	}
	json_object_set_new(h, "enabled", json_boolean(hub->enabled));
	json_object_set_new(h, "chart_version", jstr(hub->chart_version));
	json_object_set_new(h, "node_port", json_integer(hub->node_port));
	json_object_set_new(h, "node", jstr(hub_node ? hub_node->name : NULL));
	json_object_set_new(h, "image", jstr(hub->image));
	json_object_set_new(h, "storage", json_string(hub->storage));
	json_object_set_new(h, "admin_users", jstrv(hub->admin_users));
	json_object_set_new(h, "allowed_users", jstrv(hub->allowed_users));
	json_object_set_new(h, "auth", auth);
	json_object_set_new(h, "start_timeout", json_integer(hub->start_timeout));
	json_object_set_new(h, "shm_size", json_string(hub->shm_size));

	for (i = 0; i < inv->nr_nodes; i++)
		json_array_append_new(nodes, json_node(&inv->nodes[i]));

	json_object_set_new(root, "inventory", json_string(inv->path));
	json_object_set_new(root, "version", json_integer(inv->version));
	json_object_set_new(root, "cluster", cl);
	json_object_set_new(root, "ssh", json_ssh(&inv->ssh));
	json_object_set_new(root, "storage", storage);
	json_object_set_new(root, "jupyterhub", h);
	json_object_set_new(root, "nodes", nodes);
	text = json_dumps(root, JSON_INDENT(2));
	if (!text)
		die("out of memory formatting JSON");
	fputs(text, stdout);
	fputc('\n', stdout);
	free(text);
	json_decref(root);
}

static int inventory_exec(int nr_pos, char **pos)
{
	struct inventory *inv = NULL;
	struct diag_list dl;
	int r;

	if (!opt_inventory_file) {
		cmd_usage_error(&cmd_inventory, "missing inventory: give it with -i FILE");
		return EXIT_USAGE;
	}
	diag_list_init(&dl);
	r = inventory_load(&inv, opt_inventory_file, &dl);
	cli_print_diags(&dl);
	diag_list_release(&dl);
	if (r < 0)
		return EXIT_USAGE;
	if (!strcmp(opt_output, "json"))
		print_json(inv);
	else
		print_text(inv);
	inventory_free(inv);
	if (fflush(stdout) != 0) {
		perror("provision inventory: writing the output");
		return EXIT_LOCAL;
	}
	return EXIT_OK;
}

const struct cmd cmd_inventory = {
    .name = "inventory",
    .summary = "validate the inventory and show what it describes",
    .usage = "-i FILE [-o text|json]",
    .description =
	"Read the inventory, check all of it (keys, types, ranges, roles, networks,\n"
	"duplicates) and print the cluster and every node as provision understood\n"
	"them: address, ssh port and user, roles, expected GPUs, sudo, host key policy.\n"
	"Nothing is contacted.  Every problem is reported on stderr as\n"
	"FILE:LINE:COL: error: MESSAGE; warnings do not change the exit status.\n"
	"The format is described in provision-inventory(5).",
    .options = inventory_options,
    .exec = inventory_exec,
    .min_pos = 0,
    .max_pos = 0,
};
