/* plan: see plan.h for the theory of operation. */
#include "plan.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "profiles.h"
#include "protocol.h"
#include "template.h"
#include "util.h"

#define TAIL_MAX 4096	    /* output kept for a failure message */
#define CAPTURE_MAX (256 << 10) /* a file's diff in provision plan */

struct barrier {
	size_t expected, done, failed;
};

struct run {
	const struct plan_opts *o;
	struct plan_result *res;
	size_t *map; /* pass-local index -> index into o->nodes */
	bool pass2;
	size_t seg_begin, seg_end; /* the roles of the current pipeline pass */
	bool *seen_running;	   /* per node: NODE_RUNNING already shown */
	bool validating;	   /* nodes have their final state: passes only add to it */
	struct tval **sets;	   /* per node: values handed on it, across passes */
	bool *role_done;	   /* [node * nr_roles + role] */
	struct kube_query *queries; /* the validation pass */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct barrier *barriers; /* per role */
	bool *applies;		  /* [node * nr_roles + role] */
	struct tval *published;	  /* handed values of finished roles, run-wide */
	/*
	 * run_gpu_values() of the pipeline, made once before its first pass and
	 * read-only from then on: steps and templates run only in the pipeline,
	 * and facts do not change during it (making it per step read every
	 * left-out node's recorded facts again).
	 */
	struct tval *gpu;
};

struct kube_query;

struct node_ctx {
	struct run *run;
	size_t index; /* into o->nodes */
	const struct node *node;
	struct tval *set; /* values handed on this node */
	bool *role_done;
	struct strbuf tail, capture;
	bool capturing;
	bool swallow;	 /* capture without posting (fetched files: they may hold keys) */
	char **fetches;	 /* "PATH\nNAME" asked for with ::fetch by the current step */
	size_t nr_fetches;
	char *skip_reason, *hint;
	char *protocol_error;
};

unsigned plan_all_phases(void)
{
	unsigned bits = 0;
	int i;

	for (i = 0; i < ROLE_UP_PHASES && role_phases[i]; i++)
		bits |= 1u << i;
	return bits;
}

int plan_parse_phases(const char *list, unsigned *out, struct error *err)
{
	char *copy = xstrdup(list), *save = NULL, *w;
	unsigned bits = 0;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i;
		while (*w == ' ')
			w++;
		if (!strcmp(w, "facts") || !strcmp(w, "preflight"))
			continue; /* always run */
		if (!strcmp(w, "all")) {
			bits |= plan_all_phases();
			continue;
		}
		i = role_phase_index(w);
		if (i < 0 || i >= ROLE_UP_PHASES) {
			struct strbuf names = STRBUF_INIT;
			for (i = 0; i < ROLE_UP_PHASES && role_phases[i]; i++)
				strbuf_addf(&names, "%s%s", i ? ", " : "", role_phases[i]);
			error_set(err, -1, "unknown phase '%s'", w);
			error_hint(err, "phases: facts, %s (or all)", names.buf);
			strbuf_release(&names);
			free(copy);
			return -1;
		}
		bits |= 1u << i;
	}
	free(copy);
	*out = bits;
	return 0;
}

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
static void add_hub(struct tval *v, const struct inventory *inv, const struct node *cp)
{
	static const char *const auth[] = {"native", "github", "ldap", "none"};
	const struct hub_settings *h = &inv->hub;
	struct tval *m = tval_map_at(v, "hub"), *a;

	tval_set_str(m, "enabled", "true");
	if (h->chart_version)
		tval_set_str(m, "chart_version", h->chart_version);
	tval_set_strf(m, "node_port", "%d", h->node_port);
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
	if (cp) {
		tval_set_str(m, "control_plane", cp->name);
		tval_set_str(m, "control_plane_address", cp->address);
	}

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
		add_hub(v, inv, cp);

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

static bool host_driver_works(const struct facts *f)
{
	return f->nvidia_smi && f->nvidia_smi_rc == 0 && f->nr_gpus > 0;
}

void plan_gpu_values(struct tval *v, const struct node *const *nodes,
		     const struct facts *const *facts, size_t nr)
{
	struct tval *m = tval_map_at(v, "gpu"), *list = tval_set(m, "nodes", tval_new_list());
	struct strbuf names = STRBUF_INIT;
	size_t i, n = 0, total = 0;
	bool all_drivers = true;

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
		strbuf_addf(&names, "%s%s", n ? " " : "", nodes[i]->name);
		total += count;
		n++;
	}
	tval_set_strf(m, "node_count", "%zu", n);
	tval_set_strf(m, "count", "%zu", total);
	tval_set_str(m, "host_driver", n && all_drivers ? "true" : "");
	tval_set_str(m, "names", names.buf);
	strbuf_release(&names);
}

/*
 * plan_gpu_values for every node of the inventory: the fresh facts of the
 * nodes of this run, the facts recorded by the last run that had the others
 * (STATE/nodes/NODE/facts): `add-node` and `-l` must not make the GPU
 * Operator's values forget the GPU nodes they leave out.
 */
static void run_gpu_values(struct tval *v, const struct run *run)
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
		if (k == o->nr && o->state_dir) {
			struct strbuf text = STRBUF_INIT;
			struct error err = {0};
			char *path = xasprintf("%s/nodes/%s/facts", o->state_dir, inv->nodes[i].name);
			if (read_file(path, &text) == 0) {
				if (facts_parse(&recorded[i], text.buf, text.len, &err) == 0)
					facts[i] = &recorded[i];
				else
					facts_release(&recorded[i]);
			}
			strbuf_release(&text);
			free(path);
		}
	}
	plan_gpu_values(v, nodes, facts, n);
	for (i = 0; i < n; i++)
		if (facts[i] == &recorded[i])
			facts_release(&recorded[i]);
	free(recorded);
	free(facts);
	free(nodes);
}

/* ---- environment of a step ---- */

static void export(struct strbuf *sb, const char *name, const char *value)
{
	strbuf_addf(sb, "export %s=", name);
	strbuf_add_sh_quoted(sb, value ? value : "");
	strbuf_addch(sb, '\n');
}

/*
 * The name under which a handed value reaches `node`, or NULL when it is
 * not for it: "NAME@NODE" values go to NODE only, as NAME.
 */
static const char *value_for(const char *key, const char *node, char *buf, size_t size)
{
	const char *at = strchr(key, '@');

	if (!at)
		return key;
	if (strcmp(at + 1, node))
		return NULL;
	snprintf(buf, size, "%.*s", (int)(at - key), key);
	return buf;
}

static void export_set(struct strbuf *sb, const struct tval *set, const char *node)
{
	size_t i;

	for (i = 0; set && i < set->nr; i++) {
		char name[160], key[128];
		const char *k = value_for(set->keys[i], node, key, sizeof(key));
		if (!k)
			continue;
		snprintf(name, sizeof(name), "PROVISION_SET_%s", k);
		export(sb, name, set->items[i]->str);
	}
}

static void build_env(struct strbuf *sb, struct node_ctx *nc)
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
	export(sb, "PROVISION_NODE", n->name);
	for (bit = 1; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1)
		if (n->roles & bit)
			strbuf_addf(&roles, "%s%s", roles.len ? " " : "", node_role_name(bit));
	export(sb, "PROVISION_ROLES", roles.buf);
	strbuf_release(&roles);
	export(sb, "PROVISION_ADDRESS", n->address);
	export(sb, "PROVISION_CLUSTER", inv->cluster.name);
	export(sb, "PROVISION_K8S_VERSION", inv->cluster.kubernetes_version);
	{
		const struct kube_minor *km =
			kube_matrix_find(&o->roles->kube, inv->cluster.kubernetes_version);
		char name[96];
		size_t j, c;
		for (j = 0; km && j < km->nr; j++) {
			snprintf(name, sizeof(name), "PROVISION_KUBE_%s", km->keys[j]);
			for (c = strlen("PROVISION_KUBE_"); name[c]; c++)
				if (name[c] >= 'a' && name[c] <= 'z')
					name[c] = (char)(name[c] - 'a' + 'A');
			export(sb, name, km->vals[j]);
		}
	}
	export(sb, "PROVISION_POD_CIDR", inv->cluster.pod_cidr);
	export(sb, "PROVISION_SERVICE_CIDR", inv->cluster.service_cidr);
	snprintf(num, sizeof(num), "%zu", f->nr_gpus > f->nr_nvidia_pci ? f->nr_gpus : f->nr_nvidia_pci);
	export(sb, "PROVISION_GPUS", num);
	if (n->gpus >= 0) {
		snprintf(num, sizeof(num), "%d", n->gpus);
		export(sb, "PROVISION_GPUS_DECLARED", num);
	}
	export(sb, "PROVISION_OS_ID", f->os_id);
	export(sb, "PROVISION_OS_VERSION", f->os_version);
	export(sb, "PROVISION_APT_MIRROR", inv->cluster.apt_mirror);
	export(sb, "PROVISION_HTTP_PROXY", inv->cluster.http_proxy);
	{
		struct strbuf np = STRBUF_INIT;
		size_t k;
		for (k = 0; inv->cluster.no_proxy && inv->cluster.no_proxy[k]; k++)
			strbuf_addf(&np, "%s%s", k ? "," : "", inv->cluster.no_proxy[k]);
		export(sb, "PROVISION_NO_PROXY", np.buf);
		strbuf_release(&np);
	}
	if (inv->nfs.server) {
		const struct node *s = inventory_find(inv, inv->nfs.server);
		export(sb, "PROVISION_NFS_SERVER", inv->nfs.server);
		export(sb, "PROVISION_NFS_ADDRESS", s ? s->address : "");
		export(sb, "PROVISION_NFS_PATH", inv->nfs.path);
		export(sb, "PROVISION_NFS_NETWORK", inv->nfs.export_network);
		export(sb, "PROVISION_NFS_OPTIONS", inv->nfs.options);
	}
	if (inv->hub.enabled && inv->hub.chart_version)
		export(sb, "PROVISION_HUB_CHART_VERSION", inv->hub.chart_version);
	export(sb, "PROVISION_BACKUP_DIR", "/var/lib/provision/backup");
	export(sb, "PROVISION_GPU_NODES", tval_lookup(nc->run->gpu, "gpu.names")->str);
	export(sb, "PROVISION_GPU_HOST_DRIVER", tval_lookup(nc->run->gpu, "gpu.host_driver")->str);
	for (i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		char *name = eq ? xstrndup(o->env[i], (size_t)(eq - o->env[i])) : NULL;
		if (name)
			export(sb, name, eq + 1);
		free(name);
	}
	pthread_mutex_lock(&nc->run->lock);
	export_set(sb, nc->run->published, n->name);
	pthread_mutex_unlock(&nc->run->lock);
	export_set(sb, nc->set, n->name);
}

/* ---- the step protocol on standard output ---- */

static void tail_add(struct strbuf *tail, const char *line, size_t len)
{
	strbuf_add(tail, line, len);
	strbuf_addch(tail, '\n');
	if (tail->len > TAIL_MAX) {
		/* Keep the last lines: cut at a newline past the excess. */
		const char *cut = memchr(tail->buf + tail->len - TAIL_MAX, '\n', TAIL_MAX);
		size_t keep = cut ? tail->len - (size_t)(cut + 1 - tail->buf) : 0;
		memmove(tail->buf, tail->buf + tail->len - keep, keep);
		strbuf_setlen(tail, keep);
	}
}

static bool step_filter(void *ctx, struct runner_job *job, int stream, const char *line, size_t len)
{
	struct node_ctx *nc = ctx;
	struct protocol_msg m;

	if (stream == TRANSPORT_STDOUT)
		protocol_parse(&m, line, len);
	else
		m.kind = PROTOCOL_NONE;
	if (m.kind != PROTOCOL_NONE && nc->swallow)
		m.kind = PROTOCOL_NONE; /* a fetched file is content, not protocol */
	switch (m.kind) {
	case PROTOCOL_NONE:
		break;
	case PROTOCOL_MALFORMED:
		free(nc->protocol_error);
		nc->protocol_error = xstrdup(m.error);
		return true;
	case PROTOCOL_SET:
	case PROTOCOL_SECRET: {
		char *name = xstrndup(m.name, m.name_len);
		char *value = xstrndup(m.value, m.value_len);
		if (m.kind == PROTOCOL_SECRET &&
		    secrets_add(nc->run->o->secrets, value, strlen(value)) < 0) {
			free(nc->protocol_error);
			nc->protocol_error = xasprintf(
				"secret '%s' is shorter than %d characters: too short to redact safely",
				name, SECRETS_MIN_LEN);
		} else {
			tval_set_str(nc->set, name, value);
		}
		explicit_bzero(value, strlen(value));
		free(value);
		free(name);
		return true;
	}
	case PROTOCOL_SKIP:
		free(nc->skip_reason);
		nc->skip_reason = xstrndup(m.value, m.value_len);
		return true;
	case PROTOCOL_HINT:
		free(nc->hint);
		nc->hint = xstrndup(m.value, m.value_len);
		return true;
	case PROTOCOL_FETCH:
		nc->fetches = xrealloc(nc->fetches, (nc->nr_fetches + 1) * sizeof(*nc->fetches));
		nc->fetches[nc->nr_fetches++] = xasprintf("%.*s\n%.*s", (int)m.name_len, m.name,
							  (int)m.value_len, m.value);
		return true;
	}
	if (nc->capturing) {
		strbuf_add(&nc->capture, line, len);
		strbuf_addch(&nc->capture, '\n');
	}
	if (nc->swallow)
		return true;
	tail_add(&nc->tail, line, len);
	return false;
}

/* ---- steps and files ---- */

static void post_step(struct runner_job *job, enum event_kind kind, const struct role *r,
		      const char *step, enum step_result result, uint64_t ms, const char *text)
{
	struct event *ev = event_new(kind, runner_job_index(job));

	ev->phase = xstrdup(r->phase);
	ev->role = xstrdup(r->name);
	ev->step = xstrdup(step);
	ev->result = result;
	ev->duration_ms = ms;
	if (text)
		ev->text = xstrdup(text);
	runner_job_post(job, ev);
}

static void record(struct node_ctx *nc, const struct role *r, const char *step, bool is_file,
		   enum step_result result, uint64_t ms, const char *detail)
{
	struct plan_node *pn = &nc->run->res->nodes[nc->index];
	struct plan_step_result *s;
	struct strbuf d = STRBUF_INIT;

	ALLOC_GROW(pn->steps, pn->nr_steps + 1, pn->alloc_steps);
	s = &pn->steps[pn->nr_steps++];
	memset(s, 0, sizeof(*s));
	s->role = r;
	s->step = step;
	s->is_file = is_file;
	s->result = result;
	s->duration_ms = ms;
	if (detail) {
		strbuf_addstr(&d, detail);
		secrets_redact(nc->run->o->secrets, &d);
		s->detail = strbuf_detach(&d, NULL);
	}
	switch (result) {
	case STEP_CHANGED:
	case STEP_WOULD_CHANGE:
		pn->changed++;
		break;
	case STEP_UNCHANGED:
		pn->unchanged++;
		break;
	case STEP_FAILED:
		pn->failed++;
		break;
	case STEP_SKIPPED:
		pn->skipped++;
		break;
	default:
		break;
	}
}

/* What a file step deployed (or compared), on the step just recorded. */
static void record_file(struct node_ctx *nc, const char *sha, unsigned mode, const char *owner,
			const char *source, bool artifact, const struct strbuf *content, char *drift)
{
	struct plan_node *pn = &nc->run->res->nodes[nc->index];
	struct plan_step_result *s = &pn->steps[pn->nr_steps - 1];

	snprintf(s->sha256, sizeof(s->sha256), "%s", sha ? sha : "");
	s->mode = mode;
	s->owner = owner;
	s->source = source;
	s->is_artifact = artifact;
	if (content && sha) {
		s->content = xmalloc(content->len + 1);
		memcpy(s->content, content->buf, content->len);
		s->content[content->len] = '\0';
		s->content_len = content->len;
	}
	s->drift = drift;
}

/* Run one call of a step ("check" or "apply"); *status gets its exit status. */
static int call_step(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		     const struct role_step *s, const char *what, int *status, struct error *err)
{
	const struct role_set *rs = nc->run->o->roles;
	struct strbuf input = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	int rc;

	build_env(&input, nc);
	strbuf_add(&input, rs->lib, rs->lib_len);
	strbuf_addch(&input, '\n');
	strbuf_add(&input, s->script, s->len);
	/* The shell that runs the command reads the script itself: no second sh to start. */
	strbuf_addf(&cmd, "set -- %s && . /dev/stdin", what);
	rc = runner_job_exec(job, r->phase, s->name, cmd.buf, input.buf, input.len,
			     nc->node->ssh.command_timeout * 1000, &res, err);
	explicit_bzero(input.buf, input.len); /* it may hold handed secrets */
	strbuf_release(&input);
	strbuf_release(&cmd);
	*status = res.exit_status;
	return rc;
}

static char *failure_text(struct node_ctx *nc, const char *what)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, what);
	strbuf_rtrim(&nc->tail);
	if (nc->tail.len) {
		const char *last = strrchr(nc->tail.buf, '\n');
		strbuf_addf(&sb, ": %s", last ? last + 1 : nc->tail.buf);
	}
	if (nc->hint)
		strbuf_addf(&sb, " (hint: %s)", nc->hint);
	return strbuf_detach(&sb, NULL);
}

static void clear_fetches(struct node_ctx *nc)
{
	size_t i;

	for (i = 0; i < nc->nr_fetches; i++)
		free(nc->fetches[i]);
	free(nc->fetches);
	nc->fetches = NULL;
	nc->nr_fetches = 0;
}

/* Write data to dir/name atomically with mode 0600; 0 or -errno. */
static int write_private(const char *dir, const char *name, const char *data, size_t len)
{
	char *tmp = xasprintf("%s/.%s.XXXXXX", dir, name), *dst = xasprintf("%s/%s", dir, name);
	int fd, e = 0;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		e = -errno;
	if (!e && (fd = mkstemp(tmp)) < 0)
		e = -errno;
	if (!e) {
		if (fchmod(fd, 0600) < 0 || (e = write_all(fd, data, len)) < 0 || fsync(fd) < 0)
			e = e ? e : -errno;
		close(fd);
		if (!e && rename(tmp, dst) < 0)
			e = -errno;
		if (e)
			unlink(tmp);
	}
	free(tmp);
	free(dst);
	return e;
}

/* Copy the files the step asked for into the state folder; 0, or 1 with *detail set. */
static int do_fetches(struct node_ctx *nc, struct runner_job *job, char **detail)
{
	const char *state = nc->run->o->state_dir;
	struct transport_result res = {0};
	struct error err = {0};
	size_t i;
	int rc, ret = 0;

	for (i = 0; i < nc->nr_fetches && !ret; i++) {
		char *nl = strchr(nc->fetches[i], '\n');
		struct strbuf cmd = STRBUF_INIT;
		char *priv;

		*nl = '\0';
		if (!state) {
			*detail = xasprintf("cannot keep '%s': no state folder", nc->fetches[i]);
			ret = 1;
			break;
		}
		strbuf_addstr(&cmd, "cat -- ");
		strbuf_add_sh_quoted(&cmd, nc->fetches[i]);
		strbuf_reset(&nc->capture);
		nc->capture.max = 1 << 20;
		nc->capturing = nc->swallow = true;
		rc = runner_job_exec(job, NULL, NULL, cmd.buf, NULL, 0,
				     nc->node->ssh.command_timeout * 1000, &res, &err);
		nc->capturing = nc->swallow = false;
		strbuf_release(&cmd);
		if (rc < 0 || res.exit_status != 0 || nc->capture.truncated) {
			*detail = xasprintf("cannot read '%s' on the node%s%s", nc->fetches[i],
					    rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
			ret = 1;
			break;
		}
		priv = xasprintf("%s/private", state);
		(void)mkdir(state, 0700);
		rc = write_private(priv, nl + 1, nc->capture.buf, nc->capture.len);
		if (rc < 0) {
			*detail = xasprintf("cannot write '%s/%s': %s", priv, nl + 1, strerror(-rc));
			ret = 1;
		}
		explicit_bzero(nc->capture.buf, nc->capture.len);
		strbuf_reset(&nc->capture);
		free(priv);
	}
	clear_fetches(nc);
	return ret;
}

/* Returns 0 when the node may go on, 1 when the step failed, -1 when the session was lost. */
static int run_step(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		    const struct role_step *s)
{
	bool check_only = nc->run->o->check_only;
	struct error err = {0};
	enum step_result result;
	char *detail = NULL;
	uint64_t t0 = now_ms();
	int status = 0, rc, ret = 0;

	strbuf_reset(&nc->tail);
	free(nc->skip_reason);
	free(nc->hint);
	free(nc->protocol_error);
	nc->skip_reason = nc->hint = nc->protocol_error = NULL;
	clear_fetches(nc);
	post_step(job, EVENT_STEP_START, r, s->name, STEP_NONE, 0, NULL);

	rc = call_step(nc, job, r, s, "check", &status, &err);
	if (rc < 0)
		goto lost;
	if (nc->protocol_error) {
		result = STEP_FAILED;
		detail = xstrdup(nc->protocol_error);
	} else if (nc->skip_reason) {
		result = STEP_SKIPPED;
		detail = xstrdup(nc->skip_reason);
	} else if (status == 0) {
		result = STEP_UNCHANGED;
	} else if (status != 1) {
		char what[64];
		snprintf(what, sizeof(what), "check failed (exit %d)", status);
		result = STEP_FAILED;
		detail = failure_text(nc, what);
	} else if (check_only) {
		result = STEP_WOULD_CHANGE;
	} else {
		strbuf_reset(&nc->tail);
		rc = call_step(nc, job, r, s, "apply", &status, &err);
		if (rc < 0)
			goto lost;
		if (status != 0 || nc->protocol_error) {
			char what[64];
			snprintf(what, sizeof(what), "apply failed (exit %d)", status);
			result = STEP_FAILED;
			detail = nc->protocol_error ? xstrdup(nc->protocol_error)
						    : failure_text(nc, what);
		} else {
			strbuf_reset(&nc->tail);
			rc = call_step(nc, job, r, s, "check", &status, &err);
			if (rc < 0)
				goto lost;
			if (status == 0) {
				result = STEP_CHANGED;
			} else {
				char what[96];
				snprintf(what, sizeof(what),
					 "still not as desired after apply (check exit %d)", status);
				result = STEP_FAILED;
				detail = failure_text(nc, what);
			}
		}
	}
	if ((result == STEP_CHANGED || result == STEP_UNCHANGED) && nc->nr_fetches &&
	    do_fetches(nc, job, &detail))
		result = STEP_FAILED;
	goto done;
lost:
	result = STEP_FAILED;
	detail = xstrdup(err.msg);
	ret = -1;
done:
	clear_fetches(nc);
	if (result == STEP_FAILED && ret == 0)
		ret = 1;
	post_step(job, EVENT_STEP_END, r, s->name, result, now_ms() - t0, detail);
	record(nc, r, s->name, false, result, now_ms() - t0, detail);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, s->name, detail ? detail : "failed");
	free(detail);
	return ret;
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
	/* The kubelet's allocatable leaves the add-ons' DaemonSet pods out: keep room for them. */
	for (i = 0; i < nr_nodes; i++) {
		nodes[i].cpu_milli = nodes[i].cpu_milli > PROFILES_ADDONS_CPU_MILLI
					     ? nodes[i].cpu_milli - PROFILES_ADDONS_CPU_MILLI
					     : 0;
		nodes[i].mem_mib = nodes[i].mem_mib > PROFILES_ADDONS_MEM_MIB
					   ? nodes[i].mem_mib - PROFILES_ADDONS_MEM_MIB
					   : 0;
	}
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

static struct tval *node_values(struct node_ctx *nc)
{
	const struct plan_opts *o = nc->run->o;
	struct tval *v = plan_values(o->inv, nc->node, &nc->run->res->nodes[nc->index].facts,
				     kube_matrix_find(&o->roles->kube, o->inv->cluster.kubernetes_version));
	struct tval *set = tval_map_at(v, "set");
	size_t i;
	char key[128];
	const char *k;

	tval_set(v, "gpu", tval_copy(tval_lookup(nc->run->gpu, "gpu")));

	pthread_mutex_lock(&nc->run->lock);
	for (i = 0; i < nc->run->published->nr; i++)
		if ((k = value_for(nc->run->published->keys[i], nc->node->name, key, sizeof(key))))
			tval_set(set, k, tval_copy(nc->run->published->items[i]));
	pthread_mutex_unlock(&nc->run->lock);
	for (i = 0; i < nc->set->nr; i++)
		if ((k = value_for(nc->set->keys[i], nc->node->name, key, sizeof(key))))
			tval_set(set, k, tval_copy(nc->set->items[i]));
	return v;
}

/*
 * The command of a file step's request: "set -- DEST SHA MODE OWNER", then
 * roles/lib.sh and the script (tail) that uses them, all run by the agent's
 * subshell; the request's stdin is left for the content.
 */
static void file_command(struct strbuf *cmd, const struct role_set *rs, const char *dest,
			 const char *sha, const char *mode, const char *owner, const char *tail)
{
	strbuf_addstr(cmd, "set -- ");
	strbuf_add_sh_quoted(cmd, dest);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, sha);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, mode);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, owner);
	strbuf_addch(cmd, '\n');
	strbuf_add(cmd, rs->lib, rs->lib_len);
	strbuf_addch(cmd, '\n');
	strbuf_addstr(cmd, tail);
}

static int deploy_file(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		       const struct role_template *t)
{
	const struct plan_opts *o = nc->run->o;
	struct transport *tp = runner_job_transport(job);
	struct strbuf content = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	struct tval *vals;
	enum step_result result;
	char *detail = NULL, *drift = NULL, sha[65] = "", mode[8];
	uint64_t t0 = now_ms();
	int rc, ret = 0;

	post_step(job, EVENT_STEP_START, r, t->dest, STEP_NONE, 0, NULL);
	vals = node_values(nc);
	rc = plan_add_profiles(vals, &err);
	if (rc < 0) {
		tval_free(vals);
		result = STEP_FAILED;
		detail = xasprintf("cannot work out the hub's profiles from the handed nodes: %s",
				   err.msg);
		ret = 1;
		goto done;
	}
	rc = template_render(t->tmpl, vals, &content, &err);
	tval_free(vals);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xasprintf("cannot render: %s", err.msg);
		ret = 1;
		goto done;
	}
	transport_sha256_hex(sha, content.buf, content.len);
	snprintf(mode, sizeof(mode), "%o", t->mode);
	/* First the cheap question, without the content: is the node's copy
	 * already this one?  On a no-change run that is all (no upload, no
	 * second shell); otherwise the content goes up for the diff below. */
	file_command(&cmd, o->roles, t->dest, sha, mode, t->owner, "pv_same \"$@\"\n");
	strbuf_reset(&nc->tail);
	rc = runner_job_exec(job, r->phase, t->dest, cmd.buf, NULL, 0,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	strbuf_reset(&cmd);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
		goto done;
	}
	if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
		goto done;
	}
	/* The content is the command's stdin, for the diff; when the node's copy
	 * is replaced, that diff goes to the run record (the drift). */
	file_command(&cmd, o->roles, t->dest, sha, mode, t->owner,
		     o->check_only ? "pv_diff \"$1\"\n"
				   : "pv_prepare \"$1\" \"$2\" \"$3\" \"$4\" && exit 0\n"
				     "s=$?; [ \"$s\" = 1 ] || exit \"$s\"; pv_diff \"$1\"; exit 1\n");
	strbuf_reset(&nc->tail);
	strbuf_reset(&nc->capture);
	nc->capturing = true;
	rc = runner_job_exec(job, r->phase, t->dest, cmd.buf, content.buf, content.len,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	nc->capturing = false;
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
	} else if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
	} else if (res.exit_status != 1) {
		result = STEP_FAILED;
		detail = failure_text(nc, "cannot inspect the file on the node");
		ret = 1;
	} else if (o->check_only) {
		result = STEP_WOULD_CHANGE;
		detail = strbuf_detach(&nc->capture, NULL);
	} else {
		bool skipped = false;
		rc = o->ops->put_file(tp, t->dest, content.buf, content.len, t->mode, t->owner,
				      &skipped, &err);
		if (rc < 0) {
			result = STEP_FAILED;
			detail = xasprintf("cannot write the file: %s", err.msg);
			ret = rc == TRANSPORT_ERR_LOST ? -1 : 1;
		} else {
			result = STEP_CHANGED;
			drift = strbuf_detach(&nc->capture, NULL);
		}
	}
done:
	post_step(job, EVENT_STEP_END, r, t->dest, result, now_ms() - t0, detail);
	record(nc, r, t->dest, true, result, now_ms() - t0, detail);
	record_file(nc, sha[0] ? sha : NULL, t->mode, t->owner, t->src, false, &content, drift);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, t->dest, detail ? detail : "failed");
	free(detail);
	explicit_bzero(content.buf, content.len);
	strbuf_release(&content);
	strbuf_release(&cmd);
	return ret;
}

/*
 * An artifact of the manifest, from this machine's cache to the node: put
 * only when the node's copy differs (hash, mode, owner), like a template.
 */
static int deploy_artifact(struct node_ctx *nc, struct runner_job *job, const struct role *r,
			   const struct role_artifact *ra)
{
	const struct plan_opts *o = nc->run->o;
	const struct artifact *a = artifact_find(&o->roles->artifacts, ra->name);
	struct strbuf content = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	enum step_result result;
	char *detail = NULL, mode[8];
	uint64_t t0 = now_ms();
	int rc, ret = 0;

	post_step(job, EVENT_STEP_START, r, ra->dest, STEP_NONE, 0, NULL);
	if (!a || !a->sha256) {
		result = STEP_FAILED;
		detail = xasprintf("artifact '%s' has no pinned sha256", ra->name);
		ret = 1;
		goto done;
	}
	snprintf(mode, sizeof(mode), "%o", ra->mode);
	file_command(&cmd, o->roles, ra->dest, a->sha256, mode, ra->owner,
		     o->check_only ? "[ -f \"$1\" ] && [ \"$(sha256sum <\"$1\" | cut -c1-64)\" = \"$2\" ]\n"
				   : "pv_prepare \"$1\" \"$2\" \"$3\" \"$4\"\n");
	strbuf_reset(&nc->tail);
	rc = runner_job_exec(job, r->phase, ra->dest, cmd.buf, NULL, 0,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
	} else if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
	} else if (res.exit_status != 1) {
		result = STEP_FAILED;
		detail = failure_text(nc, "cannot inspect the file on the node");
		ret = 1;
	} else if (o->check_only) {
		result = STEP_WOULD_CHANGE;
		detail = xasprintf("artifact %s (sha256 %.12s…)", a->name, a->sha256);
	} else if (!o->artifact_cache ||
		   artifact_read(o->artifact_cache, a, &content, &err) < 0) {
		result = STEP_FAILED;
		detail = o->artifact_cache ? xstrdup(err.msg) : xstrdup("no artifact cache");
		ret = 1;
	} else {
		bool skipped = false;
		rc = o->ops->put_file(runner_job_transport(job), ra->dest, content.buf, content.len,
				      ra->mode, ra->owner, &skipped, &err);
		if (rc < 0) {
			result = STEP_FAILED;
			detail = xasprintf("cannot write the file: %s", err.msg);
			ret = rc == TRANSPORT_ERR_LOST ? -1 : 1;
		} else {
			result = STEP_CHANGED;
		}
	}
done:
	post_step(job, EVENT_STEP_END, r, ra->dest, result, now_ms() - t0, detail);
	record(nc, r, ra->dest, true, result, now_ms() - t0, detail);
	record_file(nc, a ? a->sha256 : NULL, ra->mode, ra->owner, ra->name, true, NULL, NULL);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, ra->dest, detail ? detail : "failed");
	free(detail);
	strbuf_release(&content);
	strbuf_release(&cmd);
	return ret;
}

/* ---- barriers between nodes ---- */

static size_t role_index(const struct run *run, const struct role *r)
{
	return (size_t)(r - run->o->roles->roles);
}

static void role_finished(struct node_ctx *nc, const struct role *r, bool failed)
{
	struct run *run = nc->run;
	size_t ri = role_index(run, r), i;

	if (nc->role_done[ri])
		return;
	nc->role_done[ri] = true;
	pthread_mutex_lock(&run->lock);
	run->barriers[ri].done++;
	if (failed)
		run->barriers[ri].failed++;
	else
		for (i = 0; i < nc->set->nr; i++)
			tval_set(run->published, nc->set->keys[i], tval_copy(nc->set->items[i]));
	pthread_cond_broadcast(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

/*
 * The roles r waits for have finished everywhere (they ran in an earlier
 * pass: see plan_segments()); returns NULL, or why r cannot run: one of
 * them failed somewhere.  (The roles r comes `after` only order it: their
 * failures elsewhere do not stop r here.)
 */
static char *wait_for(struct node_ctx *nc, const struct role *r)
{
	struct run *run = nc->run;
	size_t i;

	for (i = 0; r->wait_for && r->wait_for[i]; i++) {
		const struct role *w = role_set_find(run->o->roles, r->wait_for[i]);
		struct barrier *b = &run->barriers[role_index(run, w)];
		size_t failed;

		pthread_mutex_lock(&run->lock);
		failed = b->failed + (b->expected - b->done);
		pthread_mutex_unlock(&run->lock);
		if (failed)
			return xasprintf("waits for role '%s', which failed on %zu node%s", w->name,
					 failed, failed == 1 ? "" : "s");
	}
	return NULL;
}

/* ---- node work ---- */

static int facts_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	size_t idx = run->map[runner_job_index(job)];
	const struct plan_opts *o = run->o;
	struct plan_node *pn = &run->res->nodes[idx];
	struct strbuf peers = STRBUF_INIT, cmd = STRBUF_INIT, input = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	struct node_ctx nc = {.run = run, .index = idx};
	uint64_t t0 = now_ms();
	struct event *ev;
	size_t i;
	int rc;

	strbuf_init(&nc.capture, 0);
	nc.capture.max = 1 << 20;
	nc.capturing = true;
	runner_job_set_filter(job, step_filter, &nc);
	for (i = 0; i < o->inv->nr_nodes; i++)
		if (&o->inv->nodes[i] != o->nodes[idx])
			strbuf_addf(&peers, "%s%s", peers.len ? " " : "", o->inv->nodes[i].address);
	/*
	 * The peers go with the script on stdin, not on the command line: the
	 * agent reads command lines a byte at a time (so as not to read past
	 * them), and this list grows with the inventory.
	 */
	strbuf_addstr(&input, "PROVISION_PEERS=");
	strbuf_add_sh_quoted(&input, peers.buf);
	strbuf_addf(&input, "\nPROVISION_PORTS='%d 10250'\n", o->inv->cluster.api_port);
	strbuf_add(&input, facts_script, facts_script_len);
	strbuf_addstr(&cmd, ". /dev/stdin");
	ev = event_new(EVENT_STEP_START, 0);
	ev->phase = xstrdup("facts");
	ev->role = xstrdup("facts");
	ev->step = xstrdup("gather");
	runner_job_post(job, ev);
	rc = runner_job_exec(job, "facts", "gather", cmd.buf, input.buf, input.len,
			     o->nodes[idx]->ssh.command_timeout * 1000, &res, &err);
	runner_job_set_filter(job, NULL, NULL);
	ev = event_new(EVENT_STEP_END, 0);
	ev->phase = xstrdup("facts");
	ev->role = xstrdup("facts");
	ev->step = xstrdup("gather");
	ev->duration_ms = now_ms() - t0;
	if (rc == 0 && res.exit_status == 0 &&
	    facts_parse(&pn->facts, nc.capture.buf, nc.capture.len, &err) == 0) {
		pn->have_facts = true;
		ev->result = STEP_OK;
	} else {
		ev->result = STEP_FAILED;
		if (rc == 0 && res.exit_status != 0)
			error_set(&err, -1, "facts script exited %d", res.exit_status);
		runner_job_fail(job, "facts: %s", err.msg);
		ev->text = xstrdup(err.msg);
	}
	runner_job_post(job, ev);
	strbuf_release(&nc.capture);
	strbuf_release(&nc.tail);
	free(nc.skip_reason);
	free(nc.hint);
	free(nc.protocol_error);
	strbuf_release(&peers);
	strbuf_release(&cmd);
	strbuf_release(&input);
	if (rc < 0)
		return -1;
	return pn->have_facts ? 0 : 1;
}

static int pipeline_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	const struct plan_opts *o = run->o;
	const struct role_set *rs = o->roles;
	size_t idx = run->map[runner_job_index(job)], ri, si, ti;
	struct node_ctx nc = {.run = run, .index = idx, .node = o->nodes[idx]};
	int ret = 0;

	nc.set = run->sets[idx];
	nc.role_done = &run->role_done[idx * rs->nr];
	strbuf_init(&nc.tail, 0);
	strbuf_init(&nc.capture, 0);
	nc.capture.max = CAPTURE_MAX;
	runner_job_set_filter(job, step_filter, &nc);

	for (ri = run->seg_begin; ri < run->seg_end && ret == 0; ri++) {
		const struct role *r = &rs->roles[ri];
		char *why;

		if (!run->applies[idx * rs->nr + ri])
			continue;
		if (runner_job_stopping(job)) {
			runner_job_interrupted(job, "interrupted before role '%s'", r->name);
			ret = 1;
			break;
		}
		why = wait_for(&nc, r);
		if (why) {
			post_step(job, EVENT_STEP_START, r, "wait", STEP_NONE, 0, NULL);
			post_step(job, EVENT_STEP_END, r, "wait", STEP_SKIPPED, 0, why);
			record(&nc, r, "wait", false, STEP_SKIPPED, 0, why);
			free(why);
			role_finished(&nc, r, true);
			continue;
		}
		for (si = 0; si < r->nr_steps && ret == 0; si++) {
			if (si && runner_job_stopping(job)) {
				runner_job_interrupted(job, "interrupted before %s › %s", r->name,
						r->steps[si].name);
				ret = 1;
				break;
			}
			for (ti = 0; ti < r->nr_artifacts && ret == 0; ti++) {
				const struct role_artifact *a = &r->artifacts[ti];
				if (a->before ? !strcmp(a->before, r->steps[si].name) : si == 0)
					ret = deploy_artifact(&nc, job, r, a);
			}
			for (ti = 0; ti < r->nr_templates && ret == 0; ti++) {
				const struct role_template *t = &r->templates[ti];
				bool now = t->before ? !strcmp(t->before, r->steps[si].name) : si == 0;
				if (now)
					ret = deploy_file(&nc, job, r, t);
			}
			if (ret == 0)
				ret = run_step(&nc, job, r, &r->steps[si]);
		}
		role_finished(&nc, r, ret != 0);
	}
	/* A failed node reaches no later role: they count as failed for the barriers. */
	if (ret != 0)
		for (ri = 0; ri < rs->nr; ri++)
			if (run->applies[idx * rs->nr + ri])
				role_finished(&nc, &rs->roles[ri], true);

	runner_job_set_filter(job, NULL, NULL);
	strbuf_release(&nc.tail);
	strbuf_release(&nc.capture);
	free(nc.skip_reason);
	free(nc.hint);
	free(nc.protocol_error);
	clear_fetches(&nc);
	return ret;
}

/* ---- validation ---- */

static void forward(struct run *run, const struct event *ev, size_t idx);

struct kube_query {
	const char *what, *command;
	struct strbuf out;
	int rc, status;
};

/* On the control plane: what kubectl says of the cluster (captured, not shown). */
static int validate_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	struct kube_query *q = run->queries;
	struct node_ctx nc = {.run = run, .index = run->map[runner_job_index(job)]};
	struct error err = {0};
	size_t i;

	nc.node = run->o->nodes[nc.index];
	strbuf_init(&nc.tail, 0);
	runner_job_set_filter(job, step_filter, &nc);
	for (i = 0; q[i].what; i++) {
		struct transport_result res = {0};
		nc.capture = q[i].out;
		nc.capture.max = 16 << 20;
		nc.capturing = nc.swallow = true;
		q[i].rc = runner_job_exec(job, "validate", q[i].what, q[i].command, NULL, 0,
					  nc.node->ssh.command_timeout * 1000, &res, &err);
		q[i].status = res.exit_status;
		q[i].out = nc.capture;
		nc.capturing = nc.swallow = false;
		if (q[i].rc < 0 || (i == 0 && q[i].status != 0))
			break;
	}
	runner_job_set_filter(job, NULL, NULL);
	strbuf_release(&nc.tail);
	free(nc.skip_reason);
	free(nc.hint);
	free(nc.protocol_error);
	clear_fetches(&nc);
	return 0;
}

static void post_checks(struct run *run, size_t from, size_t cluster_row)
{
	struct validation *v = &run->res->validation;
	size_t i;

	for (i = from; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		size_t row = c->node == CHECK_CLUSTER ? cluster_row : c->node;
		struct event *ev = event_new(EVENT_STEP_END, row);

		ev->phase = xstrdup("validate");
		ev->role = xstrdup("validate");
		ev->step = xstrdup(c->id);
		ev->result = c->status == CHECK_PASS	? STEP_OK
			     : c->status == CHECK_FAIL ? STEP_FAILED
						       : STEP_SKIPPED;
		ev->expected = xstrdup(c->expected);
		ev->observed = xstrdup(c->observed);
		ev->text = c->fix ? xasprintf("%s (hint: %s)", c->observed, c->fix)
				  : xstrdup(c->observed);
		forward(run, ev, row);
		event_free(ev);
	}
}

/*
 * /readyz: from this machine over HTTPS with the cluster's admin client
 * certificate (STATE/private/admin.conf, fetched by kubeadm-init), as the
 * admin's kubectl would see it; without that file, what `kubectl get --raw
 * /readyz` on the control plane said.
 */
static void readyz_check(struct run *run, const struct kube_query *on_node)
{
	const char *state = run->o->state_dir;
	char *kc = state ? xasprintf("%s/private/admin.conf", state) : NULL;
	struct http_tls tls = {0};
	struct strbuf body = STRBUF_INIT;
	struct error err = {0};
	char *server = NULL;

	if (kc && access(kc, R_OK) == 0 &&
	    http_tls_from_kubeconfig(kc, &server, &tls, &err) == 0) {
		char *url = xasprintf("%s/readyz", server);
		struct http_get g = {.url = url, .tls = &tls, .timeout_ms = 10000};
		long status = 0;
		if (http_get(&g, &status, &body, &err) < 0)
			/* This machine cannot reach the API: the node's own view. */
			validate_readyz(&run->res->validation, on_node->status == 0,
					on_node->out.buf);
		else if (status != 200)
			validate_readyz(&run->res->validation, true,
					body.len ? body.buf : "not ok");
		else
			validate_readyz(&run->res->validation, true, body.buf);
		free(url);
	} else {
		validate_readyz(&run->res->validation, on_node->status == 0, on_node->out.buf);
	}
	http_tls_release(&tls);
	strbuf_release(&body);
	free(server);
	free(kc);
}

/*
 * The hub's /hub/health from this machine, through the proxy's NodePort on
 * the control plane's address (a NodePort answers on every node), as a
 * user's browser would reach it.  Skipped when this run did not include the
 * addons phase (`up --phases init`); `check` (no phases) always asks.
 */
static void hub_check(struct run *run, const struct node *cp)
{
	const struct inventory *inv = run->o->inv;
	struct strbuf body = STRBUF_INIT;
	struct error err = {0};
	long status = 0;
	char *url;
	int addons = role_phase_index("addons");

	if (!inv->hub.enabled)
		return;
	if (run->o->phases && addons >= 0 && !(run->o->phases & (1u << addons))) {
		validation_add(&run->res->validation, "hub-health", CHECK_CLUSTER, CHECK_SKIP,
			       "/hub/health answers 200", "the addons phase did not run",
			       "run 'provision up' with the addons phase");
		return;
	}
	url = xasprintf(strchr(cp->address, ':') ? "http://[%s]:%d/hub/health"
						 : "http://%s:%d/hub/health",
			cp->address, inv->hub.node_port);
	{
		struct http_get g = {.url = url, .timeout_ms = 10000, .max_body = 4096};
		if (http_get(&g, &status, &body, &err) < 0)
			status = 0;
	}
	validate_hub_health(&run->res->validation, url, status, err.msg);
	strbuf_release(&body);
	free(url);
}

/*
 * The add-ons (GPU Operator on the GPU nodes, NFS storage when the
 * inventory has it), from queries 1, 2, 4, 5, 6 of run_validation; when
 * `up` ran phases without addons, they are not expected yet.
 */
static void addon_checks(struct run *run, struct kube_query *q, const struct facts **facts)
{
	const struct plan_opts *o = run->o;
	struct validation *v = &run->res->validation;
	struct error err = {0};
	bool expected = !o->phases || (o->phases & (1u << role_phase_index("addons")));
	size_t i;

	if (!expected) {
		for (i = 0; i < o->nr; i++)
			if (facts[i] && node_has_gpu(o->nodes[i], facts[i]))
				validation_add(v, "gpu-operator-validated", i, CHECK_SKIP,
					       "the GPU Operator's validations complete",
					       "the addons phase did not run",
					       "run 'provision up' with the addons phase");
		if (o->inv->nfs.server)
			validation_add(v, "default-storageclass", CHECK_CLUSTER, CHECK_SKIP,
				       "StorageClass nfs, the only default",
				       "the addons phase did not run",
				       "run 'provision up' with the addons phase");
		return;
	}
	if (q[1].status == 0 && q[2].status == 0 &&
	    validate_gpus(v, q[1].out.buf, q[1].out.len, q[2].out.buf, q[2].out.len, o->nodes,
			  facts, o->nr, &err) < 0)
		validation_add(v, "gpu-list", CHECK_CLUSTER, CHECK_FAIL,
			       "kubectl get nodes/pods answers", err.msg,
			       "run 'kubectl get nodes' on the control plane");
	if (!o->inv->nfs.server)
		return;
	if (q[4].status != 0 || q[5].status != 0 ||
	    validate_storage(v, q[4].out.buf, q[4].out.len, q[5].out.buf, q[5].out.len,
			     q[6].out.buf, &err) < 0)
		validation_add(v, "storage-list", CHECK_CLUSTER, CHECK_FAIL,
			       "kubectl get storageclasses/pvc answers",
			       q[4].status || q[5].status ? "kubectl failed" : err.msg,
			       "run 'kubectl get storageclasses' on the control plane");
}

static void run_validation(struct run *run, struct runner_opts *ro, struct transport **sessions)
{
	const struct plan_opts *o = run->o;
	struct plan_result *res = run->res;
	const struct facts **facts = xcalloc(o->nr ? o->nr : 1, sizeof(*facts));
	struct kube_query q[] = {
		{"cluster", "test -f /etc/kubernetes/admin.conf", STRBUF_INIT, 0, 0},
		{"nodes", "kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes -o json",
		 STRBUF_INIT, 0, 0},
		{"pods", "kubectl --kubeconfig=/etc/kubernetes/admin.conf get pods -A -o json",
		 STRBUF_INIT, 0, 0},
		{"readyz", "kubectl --kubeconfig=/etc/kubernetes/admin.conf get --raw /readyz",
		 STRBUF_INIT, 0, 0},
		{"storageclasses",
		 "kubectl --kubeconfig=/etc/kubernetes/admin.conf get storageclasses -o json",
		 STRBUF_INIT, 0, 0},
		{"pvcs", "kubectl --kubeconfig=/etc/kubernetes/admin.conf get pvc -A -o json",
		 STRBUF_INIT, 0, 0},
		{"nfs-trial", "cat /var/lib/provision/helm/nfs-trial 2>/dev/null || true", STRBUF_INIT,
		 0, 0},
		{NULL, NULL, STRBUF_INIT, 0, 0},
	};
	const struct node *pass_node[1];
	struct transport *pass_session[1] = {NULL};
	struct runner_summary sum;
	struct node_status *st = NULL;
	size_t i, cp = (size_t)-1, first = res->validation.nr;
	unsigned ran = 0;
	struct error err = {0};

	for (i = 0; role_phases[i]; i++)
		if (o->phases & (1u << i) && !strcmp(role_phases[i], "prep"))
			ran |= 1u;
	for (i = 0; i < o->nr; i++) {
		facts[i] = res->nodes[i].have_facts ? &res->nodes[i].facts : NULL;
		if (o->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE)
			cp = i;
	}
	/* `check` on its own, or `up` having touched nothing: prep is expected done. */
	validate_facts(&res->validation, o->nodes, facts, o->nr, o->phases ? ran : 1u);

	if (cp == (size_t)-1) {
		validation_add(&res->validation, "cluster", CHECK_CLUSTER, CHECK_SKIP,
			       "the control plane answers", "not among the selected nodes",
			       "run without -l, or include the control plane");
	} else if (!res->nodes[cp].have_facts) {
		validation_add(&res->validation, "cluster", CHECK_CLUSTER, CHECK_FAIL,
			       "the control plane answers", "unreachable",
			       "see the control plane's error above");
	} else {
		run->queries = q;
		run->map[0] = cp;
		pass_node[0] = o->nodes[cp];
		pass_session[0] = sessions[cp];
		sessions[cp] = NULL;
		ro->node_fn = validate_fn;
		ro->sessions = pass_session;
		runner_run(ro, pass_node, 1, &sum, &st);
		runner_status_release(st, 1);
		sessions[cp] = pass_session[0];
		run->queries = NULL;
		if (q[0].rc < 0 || q[1].rc < 0 || q[2].rc < 0 || q[3].rc < 0 || q[4].rc < 0 ||
		    q[5].rc < 0 || q[6].rc < 0) {
			validation_add(&res->validation, "cluster", CHECK_CLUSTER, CHECK_FAIL,
				       "the control plane answers", "the session was lost",
				       "run 'provision check' again");
		} else if (q[0].status != 0) {
			validation_add(&res->validation, "cluster", CHECK_CLUSTER,
				       o->phases ? CHECK_SKIP : CHECK_FAIL,
				       "a cluster (/etc/kubernetes/admin.conf on the control plane)",
				       "no cluster yet", "run 'provision up' (kubeadm init)");
		} else {
			if (q[1].status != 0 ||
			    validate_kube_nodes(&res->validation, q[1].out.buf, q[1].out.len, o->nodes,
						o->nr, &err) < 0)
				validation_add(&res->validation, "node-list", CHECK_CLUSTER, CHECK_FAIL,
					       "kubectl get nodes answers",
					       q[1].status ? "kubectl failed" : err.msg,
					       "run 'kubectl get nodes' on the control plane");
			if (q[2].status != 0 ||
			    validate_kube_pods(&res->validation, q[2].out.buf, q[2].out.len, o->nodes,
					       o->nr, &err) < 0)
				validation_add(&res->validation, "pod-list", CHECK_CLUSTER, CHECK_FAIL,
					       "kubectl get pods answers",
					       q[2].status ? "kubectl failed" : err.msg,
					       "run 'kubectl get pods -A' on the control plane");
			readyz_check(run, &q[3]);
			hub_check(run, o->nodes[cp]);
			addon_checks(run, q, facts);
		}
	}
	free(facts);
	for (i = 0; q[i].what; i++)
		strbuf_release(&q[i].out);
	post_checks(run, first, cp == (size_t)-1 ? 0 : cp);
}

/* ---- events to the views ---- */

static void forward(struct run *run, const struct event *ev, size_t idx)
{
	node_status_apply(&run->res->status[idx], ev);
	if (run->o->on_event)
		run->o->on_event(ev, &run->res->status[idx], run->o->data);
}

static void pass_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct run *run = data;
	size_t idx = run->map[ev->node];
	struct event copy = *ev;

	/* The end of a pass is not the end of the node: plan_execute says when. */
	if (ev->kind == EVENT_NODE_STATE && run->validating && ev->state <= NODE_DONE)
		return;
	if (ev->kind == EVENT_NODE_STATE) {
		if (ev->state == NODE_DONE)
			return;
		if (ev->state == NODE_RUNNING && (!run->pass2 || run->seen_running[idx]))
			return;
		if (ev->state == NODE_RUNNING)
			run->seen_running[idx] = true;
		if (run->pass2 && ev->state == NODE_CONNECTING)
			return; /* connected in the facts pass, or reconnecting quietly */
	}
	copy.node = idx;
	forward(run, &copy, idx);
}

static void pass_tick(void *data)
{
	struct run *run = data;

	if (run->o->on_tick)
		run->o->on_tick(run->o->data);
}

static void synth_state(struct run *run, size_t idx, enum node_state state, const char *text)
{
	struct event *ev = event_new(EVENT_NODE_STATE, idx);

	ev->state = state;
	ev->exit_status = -1;
	if (text)
		ev->text = xstrdup(text);
	forward(run, ev, idx);
	event_free(ev);
}

size_t plan_segment_end(const struct role_set *rs, size_t begin)
{
	size_t end, j, k;

	for (end = begin + 1; end < rs->nr; end++) {
		const struct role *r = &rs->roles[end];
		for (j = 0; r->wait_for && r->wait_for[j]; j++)
			for (k = begin; k < end; k++)
				if (!strcmp(rs->roles[k].name, r->wait_for[j]))
					return end;
		for (j = 0; r->after && r->after[j]; j++)
			for (k = begin; k < end; k++)
				if (!strcmp(rs->roles[k].name, r->after[j]))
					return end;
	}
	return rs->nr;
}

int plan_execute(const struct plan_opts *o, struct plan_result *res)
{
	struct run run = {.o = o, .res = res};
	const struct transport_ops *ops = o->ops ? o->ops : &transport_ssh_ops;
	struct plan_opts oo = *o;
	const struct role_set *rs = o->roles;
	struct transport **sessions = xcalloc(o->nr ? o->nr : 1, sizeof(*sessions));
	const struct node **pass_nodes = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_nodes));
	struct transport **pass_sessions = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_sessions));
	const struct facts **facts = xcalloc(o->nr ? o->nr : 1, sizeof(*facts));
	struct runner_summary sum;
	struct runner_opts ro = {0};
	struct node_status *st = NULL;
	uint64_t t0 = now_ms();
	size_t i, ri, n2;

	oo.ops = ops;
	run.o = &oo;
	run.seen_running = xcalloc(o->nr ? o->nr : 1, sizeof(bool));
	memset(res, 0, sizeof(*res));
	res->nr = o->nr;
	res->nodes = xcalloc(o->nr ? o->nr : 1, sizeof(*res->nodes));
	res->status = xcalloc(o->nr ? o->nr : 1, sizeof(*res->status));
	for (i = 0; i < o->nr; i++) {
		res->status[i].exit_status = -1;
		res->status[i].queued_ms = t0;
	}
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	run.published = tval_new_map();
	if (o->hub_github_secret && inventory_control_plane(o->inv)) {
		char *key = xasprintf("hub_github_client_secret@%s", inventory_control_plane(o->inv)->name);
		tval_set_str(run.published, key, o->hub_github_secret);
		free(key);
	}
	run.map = xcalloc(o->nr ? o->nr : 1, sizeof(*run.map));
	for (i = 0; i < o->nr; i++)
		run.map[i] = i;

	ro.ops = ops;
	ro.forks = o->forks;
	ro.use_sudo = true;
	ro.sudo_password = o->sudo_password;
	ro.identity_passphrase = o->identity_passphrase;
	ro.passphrase_identity = o->inv->ssh.identity;
	ro.per_command_channels = o->per_command_channels;
	ro.secrets = o->secrets;
	ro.sessions = sessions;
	ro.on_event = pass_event;
	ro.on_tick = pass_tick;
	ro.data = &run;
	ro.handle_signals = true;

	/* 1. facts */
	ro.node_fn = facts_fn;
	runner_run(&ro, o->nodes, o->nr, &sum, &st);
	res->interrupted = sum.interrupted;
	runner_status_release(st, o->nr);
	st = NULL;

	/* 2. preflight */
	for (i = 0; i < o->nr; i++)
		facts[i] = res->nodes[i].have_facts ? &res->nodes[i].facts : NULL;
	if (!o->skip_preflight)
		preflight_run(&res->preflight, o->inv, o->nodes, facts, o->nr);
	for (i = 0; i < res->preflight.nr; i++) {
		const struct preflight_problem *p = &res->preflight.items[i];
		struct event *ev = event_new(EVENT_MESSAGE, p->node);
		ev->phase = xstrdup("preflight");
		ev->role = xstrdup("preflight");
		ev->step = xstrdup(p->fatal ? "error" : "warning");
		ev->result = p->fatal ? STEP_FAILED : STEP_OK;
		ev->text = p->hint ? xasprintf("%s (hint: %s)", p->msg, p->hint) : xstrdup(p->msg);
		forward(&run, ev, p->node);
		event_free(ev);
	}
	for (i = 0; i < o->nr; i++) {
		if (!res->nodes[i].have_facts)
			continue;
		if (preflight_node_failed(&res->preflight, i)) {
			res->nodes[i].preflight_failed = true;
			synth_state(&run, i, NODE_FAILED, "preflight failed");
		}
	}

	/* 3. the pipeline, one pass per segment of roles (see plan_segments) */
	if (o->phases && !res->interrupted) {
		run.barriers = xcalloc(rs->nr ? rs->nr : 1, sizeof(*run.barriers));
		run.applies = xcalloc((o->nr ? o->nr : 1) * (rs->nr ? rs->nr : 1), sizeof(bool));
		run.role_done = xcalloc((o->nr ? o->nr : 1) * (rs->nr ? rs->nr : 1), sizeof(bool));
		run.sets = xcalloc(o->nr ? o->nr : 1, sizeof(*run.sets));
		for (i = 0; i < o->nr; i++) {
			bool ok = res->nodes[i].have_facts && !res->nodes[i].preflight_failed;
			run.sets[i] = tval_new_map();
			unsigned ph = o->phases & (o->node_phases ? o->node_phases[i] : ~0u);
			for (ri = 0; ri < rs->nr && ok; ri++) {
				const struct role *r = &rs->roles[ri];
				if (!(ph & (1u << role_phase_index(r->phase))))
					continue;
				if (!role_applies(r, o->inv, o->nodes[i],
						  node_has_gpu(o->nodes[i], &res->nodes[i].facts)))
					continue;
				run.applies[i * rs->nr + ri] = true;
				run.barriers[ri].expected++;
			}
		}
		run.gpu = tval_new_map();
		run_gpu_values(run.gpu, &run);
		run.pass2 = true;
		ro.node_fn = pipeline_fn;
		ro.sessions = pass_sessions;
		for (run.seg_begin = 0; run.seg_begin < rs->nr && !res->interrupted;
		     run.seg_begin = run.seg_end) {
			run.seg_end = plan_segment_end(rs, run.seg_begin);
			n2 = 0;
			for (i = 0; i < o->nr; i++) {
				bool any = false;
				if (!res->nodes[i].have_facts || res->nodes[i].preflight_failed ||
				    res->status[i].state >= NODE_DONE)
					continue;
				for (ri = run.seg_begin; ri < run.seg_end; ri++)
					any = any || run.applies[i * rs->nr + ri];
				if (!any)
					continue;
				run.map[n2] = i;
				pass_nodes[n2] = o->nodes[i];
				pass_sessions[n2] = sessions[i];
				sessions[i] = NULL;
				n2++;
			}
			if (!n2)
				continue;
			runner_run(&ro, pass_nodes, n2, &sum, &st);
			res->interrupted = res->interrupted || sum.interrupted;
			runner_status_release(st, n2);
			st = NULL;
			for (i = 0; i < n2; i++) {
				sessions[run.map[i]] = pass_sessions[i];
				pass_sessions[i] = NULL;
			}
		}
		for (i = 0; i < o->nr; i++)
			tval_free(run.sets[i]);
		free(run.sets);
		free(run.role_done);
		tval_free(run.gpu);
		run.gpu = NULL;
	}
	for (i = 0; i < o->nr; i++)
		if (res->nodes[i].have_facts && !res->nodes[i].preflight_failed &&
		    res->status[i].state < NODE_DONE)
			synth_state(&run, i, res->interrupted ? NODE_CANCELLED : NODE_DONE,
				    res->interrupted ? "the run was interrupted" : NULL);
	if (o->validate && !res->interrupted) {
		/* Nodes already have their final state: the next passes must not change it. */
		run.pass2 = true;
		run.validating = true;
		/* Fresh facts after the changes (the run's first ones are stale now). */
		if (o->phases) {
			n2 = 0;
			for (i = 0; i < o->nr; i++) {
				if (!res->nodes[i].have_facts)
					continue;
				facts_release(&res->nodes[i].facts);
				res->nodes[i].have_facts = false;
				run.map[n2] = i;
				pass_nodes[n2] = o->nodes[i];
				pass_sessions[n2] = sessions[i];
				sessions[i] = NULL;
				n2++;
			}
			ro.node_fn = facts_fn;
			ro.sessions = pass_sessions;
			if (n2) {
				runner_run(&ro, pass_nodes, n2, &sum, &st);
				runner_status_release(st, n2);
				st = NULL;
			}
			for (i = 0; i < n2; i++) {
				sessions[run.map[i]] = pass_sessions[i];
				pass_sessions[i] = NULL;
			}
		}
		run_validation(&run, &ro, sessions);
	}
	runner_sessions_close(ops, sessions, o->nr);

	for (i = 0; i < o->nr; i++) {
		switch (res->status[i].state) {
		case NODE_DONE:
			res->ok++;
			break;
		case NODE_FAILED:
			res->failed++;
			break;
		case NODE_UNREACHABLE:
			res->unreachable++;
			break;
		default:
			res->cancelled++;
			break;
		}
	}
	res->elapsed_ms = now_ms() - t0;

	free(run.barriers);
	free(run.applies);
	free(run.seen_running); /* read by pass_event until the last pass */
	free(run.map);
	tval_free(run.published);
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	free(sessions);
	free(pass_sessions);
	free(pass_nodes);
	free(facts);
	return 0;
}

void plan_result_release(struct plan_result *res)
{
	size_t i, k;

	for (i = 0; i < res->nr; i++) {
		struct plan_node *pn = &res->nodes[i];
		if (pn->have_facts)
			facts_release(&pn->facts);
		for (k = 0; k < pn->nr_steps; k++) {
			free(pn->steps[k].detail);
			free(pn->steps[k].drift);
			if (pn->steps[k].content)
				explicit_bzero(pn->steps[k].content, pn->steps[k].content_len);
			free(pn->steps[k].content);
		}
		free(pn->steps);
	}
	free(res->nodes);
	runner_status_release(res->status, res->nr);
	preflight_release(&res->preflight);
	validation_release(&res->validation);
	memset(res, 0, sizeof(*res));
}
