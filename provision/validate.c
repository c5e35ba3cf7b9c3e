/* validate: see validate.h. */
#include "validate.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void validation_add(struct validation *v, const char *id, size_t node, enum check_status status,
		    const char *expected, const char *observed, const char *fix)
{
	struct check *c;

	ALLOC_GROW(v->items, v->nr + 1, v->alloc);
	c = &v->items[v->nr++];
	c->id = xstrdup(id);
	c->node = node;
	c->status = status;
	c->expected = xstrdup(expected ? expected : "");
	c->observed = xstrdup(observed ? observed : "");
	c->fix = fix ? xstrdup(fix) : NULL;
	/* Node text (a /readyz body, a pod's message, a command's last line) enters here:
	 * cleaned once, so no table, JUnit file, record or view can forget (util.h). */
	text_make_safe_str(&c->id);
	text_make_safe_str(&c->expected);
	text_make_safe_str(&c->observed);
	text_make_safe_str(&c->fix);
}

void validation_release(struct validation *v)
{
	size_t i;

	for (i = 0; i < v->nr; i++) {
		free(v->items[i].id);
		free(v->items[i].expected);
		free(v->items[i].observed);
		free(v->items[i].fix);
	}
	free(v->items);
	memset(v, 0, sizeof(*v));
}

size_t validation_failures(const struct validation *v)
{
	size_t i, n = 0;

	for (i = 0; i < v->nr; i++)
		n += v->items[i].status == CHECK_FAIL;
	return n;
}

const char *check_status_name(enum check_status s)
{
	switch (s) {
	case CHECK_PASS:
		return "pass";
	case CHECK_FAIL:
		return "fail";
	case CHECK_SKIP:
		return "skip";
	case CHECK_WARN:
		return "warn";
	}
	return "unknown";
}

void validate_facts(struct validation *v, const struct node *const *nodes,
		    const struct facts *const *facts, size_t nr, unsigned phases_ran)
{
	size_t i, k;

	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		struct strbuf obs = STRBUF_INIT;

		if (!f) {
			char *fix =
			    xasprintf("'provision run -l %s -- true' says why %s cannot be "
				      "reached (SSH, sudo); 'provision logs %s' shows the facts "
				      "script's output",
				      nodes[i]->name, nodes[i]->name, nodes[i]->name);
			validation_add(v, "reachable", i, CHECK_FAIL, "the node answers over SSH",
				       "no facts: unreachable or the facts script failed", fix);
			free(fix);
			continue;
		}
		validation_add(v, "reachable", i, CHECK_PASS, "the node answers over SSH", "answers",
			       NULL);
		if (!(nodes[i]->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER)))
			continue;
		for (k = 0; k < f->nr_swaps; k++)
			strbuf_addf(&obs, "%s%s", obs.len ? ", " : "", f->swaps[k].path);
		if (f->nr_swaps)
			validation_add(v, "swap-off", i, CHECK_FAIL, "no active swap", obs.buf,
				       "run 'provision up --phases prep' (kubelet refuses to run with swap on)");
		else
			validation_add(v, "swap-off", i, CHECK_PASS, "no active swap", "none", NULL);
		strbuf_reset(&obs);
		for (k = 0; k < f->nr_fstab_swap; k++)
			strbuf_addf(&obs, "%s%s", obs.len ? "; " : "", f->fstab_swap[k]);
		if (f->nr_fstab_swap)
			validation_add(v, "swap-off-at-boot", i, CHECK_FAIL,
				       "no swap entry in /etc/fstab", obs.buf,
				       "run 'provision up --phases prep': swap would come back at the next boot");
		else
			validation_add(v, "swap-off-at-boot", i, CHECK_PASS,
				       "no swap entry in /etc/fstab", "none", NULL);
		strbuf_release(&obs);
		if (!(phases_ran & 1u)) /* prep did not run and is not expected yet */
			continue;
		if (!f->containerd_version)
			validation_add(v, "containerd", i, CHECK_FAIL, "containerd installed and active",
				       "not installed", "run 'provision up --phases prep'");
		else if (f->systemd && (!f->containerd_active || strcmp(f->containerd_active, "active")))
			validation_add(v, "containerd", i, CHECK_FAIL, "containerd installed and active",
				       f->containerd_active ? f->containerd_active : "unknown",
				       "see 'journalctl -u containerd' on the node");
		else
			validation_add(v, "containerd", i, CHECK_PASS, "containerd installed and active",
				       f->containerd_version, NULL);
		validation_add(v, "containerd-systemd-cgroup", i,
			       f->containerd_systemd_cgroup ? CHECK_PASS : CHECK_FAIL,
			       "SystemdCgroup = true in /etc/containerd/config.toml",
			       f->containerd_systemd_cgroup ? "SystemdCgroup = true" : "not set",
			       f->containerd_systemd_cgroup
				       ? NULL
				       : "run 'provision up --phases prep'; with another cgroup driver than "
					 "the kubelet's, the control plane crash-loops");
	}
}

/*
 * Parse a list; `kubectl get -o json` says "List" (it may mix kinds), the API
 * itself "NodeList"/"PodList": both are accepted.
 */
static json_t *load(const char *json, size_t len, const char *kind, struct error *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, 0, &jerr);
	const char *k;

	if (!root) {
		error_set(err, -1, "not JSON at line %d column %d: %s", jerr.line, jerr.column,
			  jerr.text);
		return NULL;
	}
	k = json_string_value(json_object_get(root, "kind"));
	if (!json_is_object(root) || !k || (strcmp(k, kind) && strcmp(k, "List")) ||
	    !json_is_array(json_object_get(root, "items"))) {
		error_set(err, -1, "expected a %s with items, got '%s'", kind, k ? k : "no kind");
		json_decref(root);
		return NULL;
	}
	return root;
}

static const char *str_at(json_t *obj, const char *a, const char *b)
{
	json_t *x = json_object_get(obj, a);
	return json_string_value(b ? json_object_get(x, b) : x);
}

/* The status of a condition ("True"/"False"/"Unknown") and its message. */
static const char *condition(json_t *node, const char *type, const char **message)
{
	json_t *conds = json_object_get(json_object_get(node, "status"), "conditions");
	size_t i;
	json_t *c;

	json_array_foreach(conds, i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		if (t && !strcmp(t, type)) {
			if (message)
				*message = json_string_value(json_object_get(c, "message"));
			return json_string_value(json_object_get(c, "status"));
		}
	}
	return NULL;
}

/*
 * Nodes that are Kubernetes Nodes: the control plane and the workers.  A
 * node that only serves NFS (lab B's b-1) never joins the cluster.
 */
static bool in_cluster(const struct node *n)
{
	return n->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER);
}

int validate_kube_nodes(struct validation *v, const char *json, size_t len,
			const struct node *const *nodes, size_t nr, struct error *err)
{
	json_t *root = load(json, len, "NodeList", err), *items, *item;
	size_t i, k;

	if (!root)
		return -1;
	items = json_object_get(root, "items");
	for (i = 0; i < nr; i++) {
		json_t *found = NULL;
		const char *status, *msg = NULL;
		char obs[512];

		if (!in_cluster(nodes[i]))
			continue;

		json_array_foreach(items, k, item)
		{
			const char *name = str_at(item, "metadata", "name");
			if (name && !strcmp(name, nodes[i]->name)) {
				found = item;
				break;
			}
		}
		if (!found) {
			validation_add(v, "node-ready", i, CHECK_FAIL, "a Ready Node",
				       "not in the cluster",
				       nodes[i]->roles & NODE_ROLE_CONTROL_PLANE
					       ? "run 'provision up' (kubeadm init)"
					       : "run 'provision up' (kubeadm join)");
			continue;
		}
		status = condition(found, "Ready", &msg);
		if (status && !strcmp(status, "True")) {
			validation_add(v, "node-ready", i, CHECK_PASS, "a Ready Node", "Ready", NULL);
			continue;
		}
		/* as kubectl's STATUS column and roles/kubeadm-join 40-ready say it */
		{
			const char *reason = NULL;
			json_t *conds =
				   json_object_get(json_object_get(found, "status"), "conditions"),
			       *c;
			json_array_foreach(conds, k, c)
			{
				const char *t = json_string_value(json_object_get(c, "type"));
				if (t && !strcmp(t, "Ready"))
					reason = json_string_value(json_object_get(c, "reason"));
			}
			snprintf(obs, sizeof(obs), "%s%s%s%s%s",
				 !status		    ? "Unknown"
				 : !strcmp(status, "False") ? "NotReady"
							    : status,
				 reason ? ": " : "", reason ? reason : "", msg ? ": " : "",
				 msg ? msg : "");
		}
		validation_add(v, "node-ready", i, CHECK_FAIL, "a Ready Node", obs,
			       "look at 'journalctl -u kubelet' on the node; a missing CNI config "
			       "(Flannel not running there) is the usual cause");
	}
	json_decref(root);
	return 0;
}

static bool pod_running(json_t *pod)
{
	const char *phase = str_at(pod, "status", "phase");
	const char *ready = condition(pod, "Ready", NULL);

	return phase && !strcmp(phase, "Running") && (!ready || !strcmp(ready, "True"));
}

/*
 * A pod that is not Running and Ready, as kubectl's STATUS column and
 * roles/flannel 20-running show it: its first waiting init container
 * ("Init:ImagePullBackOff", PodInitializing left out), else its first
 * waiting container ("CrashLoopBackOff"), else "Running, not Ready", else
 * its phase; *message gets that container's message (or the Ready
 * condition's, or PodScheduled's), *image the container's image.
 */
static const char *pod_state(json_t *pod, char *buf, size_t size, const char **message,
			     const char **image)
{
	static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
	json_t *status = json_object_get(pod, "status"), *c;
	const char *phase = str_at(pod, "status", "phase");
	size_t i, k;

	*message = *image = NULL;
	for (k = 0; k < 2; k++) {
		json_array_foreach(json_object_get(status, lists[k]), i, c)
		{
			json_t *w = json_object_get(json_object_get(c, "state"), "waiting");
			const char *reason = json_string_value(json_object_get(w, "reason"));
			if (!reason || !strcmp(reason, "PodInitializing"))
				continue;
			*message = json_string_value(json_object_get(w, "message"));
			*image = json_string_value(json_object_get(c, "image"));
			snprintf(buf, size, "%s%s", k ? "" : "Init:", reason);
			return buf;
		}
	}
	if (phase && !strcmp(phase, "Running")) {
		condition(pod, "Ready", message);
		return "Running, not Ready";
	}
	if (phase && !strcmp(phase, "Pending"))
		condition(pod, "PodScheduled", message);
	return phase ? phase : "unknown";
}

/* An image that cannot be pulled (the kubelet's reasons). */
static bool pull_failure(const char *state)
{
	return strstr(state, "ImagePull") || strstr(state, "InvalidImageName") ||
	       strstr(state, "ErrImageNeverPull");
}

/*
 * What to do about a pod in state (pod_state), standing alone: the node,
 * the pod or the image, the command.  A new string.
 */
static char *pod_fix(const char *state, const char *ns, const char *pod, const char *node,
		     const char *image, const char *registry)
{
	if (pull_failure(state))
		return xasprintf(
		    "%s cannot pull %s: 'crictl pull %s' on %s shows why; the node "
		    "needs %s (through cluster.http_proxy) or a registry mirror that holds "
		    "the image",
		    node ? node : "the node", image ? image : "the pod's image",
		    image ? image : "IMAGE", node ? node : "the node", registry);
	if (!strcmp(state, "Pending"))
		return xasprintf("'kubectl -n %s describe pod %s' on the control plane says why it "
				 "is not scheduled",
				 ns, pod);
	return xasprintf(
	    "'kubectl -n %s logs %s' on the control plane%s", ns, pod,
	    !strcmp(ns, "kube-flannel")
		? "; a Flannel pod that fails usually cannot find the node's interface "
		  "or its pod CIDR (cluster.pod_cidr)"
		: "");
}

static bool label_is(json_t *pod, const char *key, const char *value)
{
	const char *l =
		json_string_value(json_object_get(json_object_get(json_object_get(pod, "metadata"),
								   "labels"),
						  key));
	return l && !strcmp(l, value);
}

/*
 * A pod being deleted (kubectl's STATUS: Terminating) is going away: its
 * containers stop and it turns not Ready, so it says nothing of the node's
 * network.  After a replaced DaemonSet the controller deletes the old pods
 * once the new ones run; a check made then judged a node by its old pod
 * ("Running, not Ready") when the list gave it first.
 */
static bool terminating(json_t *pod)
{
	return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
}

int validate_kube_pods(struct validation *v, const char *json, size_t len,
		       const struct node *const *nodes, size_t nr, struct error *err)
{
	json_t *root = load(json, len, "PodList", err), *items, *pod;
	size_t i, k, dns_total = 0, dns_running = 0, dns_up = 0;
	struct strbuf obs = STRBUF_INIT, det = STRBUF_INIT;
	char *fix = NULL, buf[128];

	if (!root)
		return -1;
	items = json_object_get(root, "items");
	/*
	 * CoreDNS: each pod that is not Running and Ready says what it is
	 * (kubectl's STATUS), and the fix is the first such pod's.
	 */
	json_array_foreach(items, k, pod)
	{
		const char *ns = str_at(pod, "metadata", "namespace");
		const char *name = str_at(pod, "metadata", "name"), *msg, *image, *state;
		const char *phase = str_at(pod, "status", "phase");
		if (!ns || strcmp(ns, "kube-system") || !label_is(pod, "k8s-app", "kube-dns") ||
		    terminating(pod))
			continue;
		dns_total++;
		dns_up += phase && !strcmp(phase, "Running");
		if (pod_running(pod)) {
			dns_running++;
			continue;
		}
		state = pod_state(pod, buf, sizeof(buf), &msg, &image);
		strbuf_addf(&det, "; %s %s%s%s%s", name ? name : "?", state, msg ? " (" : "",
			    msg ? msg : "", msg ? ")" : "");
		if (!fix)
			fix = !strcmp(state, "Pending")
				  ? xstrdup("CoreDNS stays Pending until a pod network (Flannel) "
					    "runs: run 'provision up --phases cni'")
				  : pod_fix(state, "kube-system", name ? name : "POD",
					    str_at(pod, "spec", "nodeName"), image,
					    "registry.k8s.io");
	}
	/* "0 of 2 Running" said nothing of two pods that run but are not Ready */
	strbuf_addf(&obs, "%zu of %zu Running and Ready", dns_running, dns_total);
	if (dns_up > dns_running)
		strbuf_addf(&obs, " (%zu Running, not Ready)", dns_up - dns_running);
	strbuf_add(&obs, det.buf, det.len);
	strbuf_release(&det);
	validation_add(v, "coredns", CHECK_CLUSTER,
		       dns_total && dns_running == dns_total ? CHECK_PASS : CHECK_FAIL,
		       "every CoreDNS pod Running and Ready", obs.buf,
		       dns_total && dns_running == dns_total ? NULL
		       : fix				     ? fix
			     : "no CoreDNS pod (k8s-app=kube-dns in kube-system): kubeadm init "
			       "installs it; run 'provision up'");
	free(fix);
	fix = NULL;
	for (i = 0; i < nr; i++) {
		const char *state = "no Flannel pod", *msg = NULL, *image = NULL, *name = NULL;
		bool ok = false, seen = false;
		if (!in_cluster(nodes[i]))
			continue;
		/*
		 * Every Flannel pod of the node that is not being deleted is
		 * Running and Ready (as roles/flannel 20-running waits for it);
		 * the first that is not is the one said.
		 */
		json_array_foreach(items, k, pod)
		{
			const char *ns = str_at(pod, "metadata", "namespace");
			const char *on = str_at(pod, "spec", "nodeName");
			if (!ns || strcmp(ns, "kube-flannel") || !on || strcmp(on, nodes[i]->name))
				continue;
			if (terminating(pod)) {
				if (!seen)
					state = "no Flannel pod (one Terminating)";
				continue;
			}
			seen = true;
			name = str_at(pod, "metadata", "name");
			ok = pod_running(pod);
			state = ok ? "Running" : pod_state(pod, buf, sizeof(buf), &msg, &image);
			if (!ok)
				break;
		}
		strbuf_reset(&obs);
		strbuf_addstr(&obs, state);
		if (msg)
			strbuf_addf(&obs, " (%s)", msg);
		if (!ok)
			fix = name ? pod_fix(state, "kube-flannel", name, nodes[i]->name, image,
					     "the registry of Flannel's images (ghcr.io)")
				   : xasprintf("the DaemonSet kube-flannel-ds has no pod on %s: "
					       "'kubectl -n kube-flannel describe daemonset "
					       "kube-flannel-ds' on the control plane, or run "
					       "'provision up --phases cni'",
					       nodes[i]->name);
		validation_add(v, "flannel", i, ok ? CHECK_PASS : CHECK_FAIL,
			       "its Flannel pod Running and Ready", obs.buf, fix);
		free(fix);
		fix = NULL;
	}
	strbuf_release(&obs);
	json_decref(root);
	return 0;
}

static const char *annotation(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

/* The GPUs on a node as its facts found them (nvidia-smi, or the PCI bus). */
static size_t facts_gpus(const struct facts *f)
{
	return f->nr_gpus > f->nr_nvidia_pci ? f->nr_gpus : f->nr_nvidia_pci;
}

/* "driver-validation CrashLoopBackOff" for the first init container not done; NULL when all are. */
static char *validations_left(json_t *pod)
{
	json_t *inits = json_object_get(json_object_get(pod, "status"), "initContainerStatuses"), *c;
	size_t i;

	json_array_foreach(inits, i, c)
	{
		json_t *state = json_object_get(c, "state");
		const char *done = str_at(state, "terminated", "reason");
		const char *wait = str_at(state, "waiting", "reason");
		const char *name = json_string_value(json_object_get(c, "name"));
		if (done && !strcmp(done, "Completed"))
			continue;
		return xasprintf("%s %s", name ? name : "?",
				 wait ? wait : json_object_get(state, "running") ? "running" : "not done");
	}
	return NULL;
}

int validate_gpus(struct validation *v, const char *nodes_json, size_t nodes_len,
		  const char *pods_json, size_t pods_len, const struct node *const *nodes,
		  const struct facts *const *facts, size_t nr, struct error *err)
{
	json_t *nroot = load(nodes_json, nodes_len, "NodeList", err), *proot, *item;
	size_t i, k;

	if (!nroot)
		return -1;
	proot = load(pods_json, pods_len, "PodList", err);
	if (!proot) {
		json_decref(nroot);
		return -1;
	}
	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		const char *alloc = NULL, *phase = NULL;
		json_t *pod = NULL;
		char *expected, *obs, *fix, *left = NULL;
		size_t share;
		bool found = false;

		if (!f || !facts_gpus(f))
			continue;
		json_array_foreach(json_object_get(nroot, "items"), k, item)
		{
			const char *name = str_at(item, "metadata", "name");
			if (name && !strcmp(name, nodes[i]->name)) {
				found = true;
				alloc = json_string_value(json_object_get(
					json_object_get(json_object_get(item, "status"), "allocatable"),
					"nvidia.com/gpu"));
			}
		}
		/* shared (gpu_sharing: N): the device plugin advertises every GPU N times */
		share = nodes[i]->gpu_sharing >= INVENTORY_GPU_SHARING_MIN &&
				nodes[i]->gpu_sharing <= INVENTORY_GPU_SHARING_MAX
			    ? (size_t)nodes[i]->gpu_sharing
			    : 1;
		if (share > 1) {
			expected = xasprintf("allocatable nvidia.com/gpu %zu (the %zu GPU%s in its "
					     "facts, each shared by %zu: time-slicing)",
					     facts_gpus(f) * share, facts_gpus(f),
					     facts_gpus(f) == 1 ? "" : "s", share);
			fix = xasprintf("the device plugin takes the time-slicing configuration the "
					"node's label nvidia.com/device-plugin.config=shared-%zu names "
					"(roles/node-labels): 'kubectl get node %s --show-labels', "
					"'kubectl -n gpu-operator logs' of its nvidia-device-plugin pod; "
					"run 'provision up --phases join,addons'",
					share, nodes[i]->name);
		} else {
			expected = xasprintf("allocatable nvidia.com/gpu %zu (the GPUs in its facts)",
					     facts_gpus(f));
			fix = xstrdup("the GPU Operator's device plugin registers the GPUs: 'kubectl -n "
				      "gpu-operator logs' of the node's nvidia-device-plugin pod; run "
				      "'provision up --phases addons'");
		}
		obs = xasprintf("%s", !found ? "not in the cluster" : alloc ? alloc : "none");
		validation_add(v, "gpu-allocatable", i,
			       alloc && (size_t)strtoul(alloc, NULL, 10) == facts_gpus(f) * share &&
					       strspn(alloc, "0123456789") == strlen(alloc)
				       ? CHECK_PASS
				       : CHECK_FAIL,
			       expected, obs, fix);
		free(expected);
		free(obs);
		free(fix);

		json_array_foreach(json_object_get(proot, "items"), k, item)
		{
			const char *ns = str_at(item, "metadata", "namespace");
			const char *on = str_at(item, "spec", "nodeName");
			if (ns && !strcmp(ns, "gpu-operator") && on && !strcmp(on, nodes[i]->name) &&
			    label_is(item, "app", "nvidia-operator-validator")) {
				pod = item;
				break;
			}
		}
		if (pod) {
			phase = str_at(pod, "status", "phase");
			left = validations_left(pod);
		}
		if (pod && phase && !strcmp(phase, "Running") && !left)
			obs = xstrdup("Running, driver, toolkit, cuda and plugin validations completed");
		else if (pod)
			obs = xasprintf("%s%s%s", phase ? phase : "unknown", left ? ": " : "",
					left ? left : "");
		else
			obs = xstrdup("no nvidia-operator-validator pod");
		validation_add(v, "gpu-operator-validated", i,
			       pod && phase && !strcmp(phase, "Running") && !left ? CHECK_PASS
										: CHECK_FAIL,
			       "the GPU Operator's validations complete", obs,
			       "'kubectl -n gpu-operator logs POD -c driver-validation' (or toolkit-, "
			       "cuda-, plugin-validation) of the node's nvidia-operator-validator pod");
		free(obs);
		free(left);
	}
	json_decref(nroot);
	json_decref(proot);
	return 0;
}

int validate_storage(struct validation *v, const char *sc_json, size_t sc_len,
		     const char *pvc_json, size_t pvc_len, const char *trial, struct error *err)
{
	json_t *sroot = load(sc_json, sc_len, "StorageClassList", err), *proot, *item;
	struct strbuf defaults = STRBUF_INIT, pending = STRBUF_INIT;
	size_t k, npending = 0;
	bool nfs_default = false;
	char *obs;

	if (!sroot)
		return -1;
	proot = load(pvc_json, pvc_len, "PersistentVolumeClaimList", err);
	if (!proot) {
		json_decref(sroot);
		return -1;
	}
	json_array_foreach(json_object_get(sroot, "items"), k, item)
	{
		const char *a = annotation(item, "storageclass.kubernetes.io/is-default-class");
		const char *name = str_at(item, "metadata", "name");
		if (!a || strcmp(a, "true") || !name)
			continue;
		strbuf_addf(&defaults, "%s%s", defaults.len ? ", " : "", name);
		nfs_default = nfs_default || !strcmp(name, "nfs");
	}
	validation_add(v, "default-storageclass", CHECK_CLUSTER,
		       nfs_default && !strcmp(defaults.buf, "nfs") ? CHECK_PASS : CHECK_FAIL,
		       "StorageClass nfs, the only default", defaults.len ? defaults.buf : "none",
		       "run 'provision up --phases addons' (roles/nfs-provisioner)");

	json_array_foreach(json_object_get(proot, "items"), k, item)
	{
		const char *cls = str_at(item, "spec", "storageClassName");
		const char *phase = str_at(item, "status", "phase");
		if (!cls || strcmp(cls, "nfs") || (phase && !strcmp(phase, "Bound")))
			continue;
		if (npending++ < 3)
			strbuf_addf(&pending, "%s%s/%s", pending.len ? ", " : "",
				    str_at(item, "metadata", "namespace"),
				    str_at(item, "metadata", "name"));
	}
	if (!trial || !*trial)
		obs = xstrdup("no trial claim recorded");
	else {
		const char *nl = strchr(trial, '\n');
		obs = xstrdup(nl ? nl + 1 : trial);
		obs[strcspn(obs, "\n")] = '\0';
	}
	if (npending) {
		char *t = xasprintf("%s; %zu claim%s of class nfs Pending: %s%s", obs, npending,
				    npending == 1 ? "" : "s", pending.buf, npending > 3 ? ", ..." : "");
		free(obs);
		obs = t;
	}
	validation_add(v, "nfs-claim-binds", CHECK_CLUSTER,
		       trial && strstr(trial, " bound in ") && !npending ? CHECK_PASS : CHECK_FAIL,
		       "a claim of StorageClass nfs binds", obs,
		       "'kubectl -n nfs-provisioner logs deploy/nfs-subdir-external-provisioner' on the "
		       "control plane; the export must be writable from the nodes");
	free(obs);
	strbuf_release(&defaults);
	strbuf_release(&pending);
	json_decref(sroot);
	json_decref(proot);
	return 0;
}

void validate_readyz(struct validation *v, bool fetched, const char *body)
{
	char obs[128];
	bool ok = fetched && body && !strncmp(body, "ok", 2);

	snprintf(obs, sizeof(obs), "%s", !fetched ? "no answer" : body ? body : "");
	obs[strcspn(obs, "\n")] = '\0';
	validation_add(v, "api-readyz", CHECK_CLUSTER, ok ? CHECK_PASS : CHECK_FAIL,
		       "/readyz answers ok", obs,
		       ok ? NULL
			  : "look at 'crictl ps -a' and the kube-apiserver log on the control plane");
}

void validate_hub_health(struct validation *v, const char *url, long status, const char *error)
{
	char exp[256], obs[256];

	snprintf(exp, sizeof(exp), "%s answers 200", url);
	if (status)
		snprintf(obs, sizeof(obs), "HTTP %ld from %s", status, url);
	else
		snprintf(obs, sizeof(obs), "no answer: %s", error && *error ? error : "unknown error");
	validation_add(v, "hub-health", CHECK_CLUSTER, status == 200 ? CHECK_PASS : CHECK_FAIL, exp,
		       obs,
		       status == 200 ? NULL
		       : status   ? "the hub answers but is not healthy: kubectl -n jhub logs deploy/hub"
				  : "is the proxy's NodePort open? kubectl -n jhub get svc proxy-public; "
				    "kubectl -n jhub get pods");
}

/* ---- several control planes (an api_endpoint) ---- */

#define ETCD_MEMBERS_MAX 16

struct etcd_member {
	char id[24];   /* decimal, as etcd's gateway gives uint64 */
	char name[64]; /* "" for a member added but not started yet */
	bool learner, started;
};

struct etcd_view {
	bool answered; /* the member list parsed */
	char *why;     /* why not (answered false) */
	struct etcd_member m[ETCD_MEMBERS_MAX];
	size_t nr;
	char self[24], leader[24]; /* the answering member's ID, its leader's ("" unknown) */
	char *error;		   /* maintenance/status's first error, or NULL */
};

/* A uint64 as etcd's JSON gateway writes it: a string of digits (a number accepted too). */
static void etcd_id(json_t *j, char *buf, size_t size)
{
	const char *s = json_string_value(j);

	buf[0] = '\0';
	if (s && *s && strlen(s) < size && strspn(s, "0123456789") == strlen(s))
		snprintf(buf, size, "%s", s);
	else if (json_is_integer(j) && json_integer_value(j) >= 0)
		snprintf(buf, size, "%lld", (long long)json_integer_value(j));
}

/*
 * One control plane's facts: etcd_members, etcd_status (facts.sh).  Bounded:
 * at most ETCD_MEMBERS_MAX members, names cut to 63 bytes (cleaned by
 * validation_add when shown).
 */
static void etcd_view_parse(struct etcd_view *ev, const struct facts *f)
{
	json_error_t jerr;
	json_t *root, *members, *m, *st;
	size_t k;

	memset(ev, 0, sizeof(*ev));
	if (!f->etcd_members || !strcmp(f->etcd_members, "none")) {
		ev->why = xstrdup("its etcd does not answer on 127.0.0.1:2379");
		return;
	}
	if (!strcmp(f->etcd_members, "no-curl")) {
		ev->why = xstrdup("curl is not installed there (provision asks etcd with it)");
		return;
	}
	root = json_loads(f->etcd_members, 0, &jerr);
	members = json_object_get(root, "members");
	if (!json_is_object(root) || !json_is_array(members)) {
		ev->why = xstrdup("its etcd's answer is not a member list");
		json_decref(root);
		return;
	}
	etcd_id(json_object_get(json_object_get(root, "header"), "member_id"), ev->self,
		sizeof(ev->self));
	json_array_foreach(members, k, m)
	{
		struct etcd_member *e;
		const char *name = json_string_value(json_object_get(m, "name"));
		if (ev->nr == ETCD_MEMBERS_MAX)
			break;
		e = &ev->m[ev->nr++];
		etcd_id(json_object_get(m, "ID"), e->id, sizeof(e->id));
		snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
		e->learner = json_is_true(json_object_get(m, "isLearner"));
		e->started = e->name[0] && json_array_size(json_object_get(m, "clientURLs")) > 0;
	}
	json_decref(root);
	ev->answered = true;
	st = f->etcd_status ? json_loads(f->etcd_status, 0, &jerr) : NULL;
	if (json_is_object(st)) {
		json_t *errs = json_object_get(st, "errors");
		etcd_id(json_object_get(st, "leader"), ev->leader, sizeof(ev->leader));
		if (!strcmp(ev->leader, "0"))
			ev->leader[0] = '\0';
		if (json_array_size(errs) && json_string_value(json_array_get(errs, 0)))
			ev->error = xstrndup(json_string_value(json_array_get(errs, 0)), 200);
	}
	json_decref(st);
}

static void etcd_view_release(struct etcd_view *ev)
{
	free(ev->why);
	free(ev->error);
}

static const struct etcd_member *etcd_find(const struct etcd_view *ev, const char *id,
					   const char *name)
{
	size_t k;

	for (k = 0; k < ev->nr; k++)
		if ((id && *id && !strcmp(ev->m[k].id, id)) || (name && !strcmp(ev->m[k].name, name)))
			return &ev->m[k];
	return NULL;
}

static int member_cmp(const void *a, const void *b)
{
	const struct etcd_member *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->id, y->id);
}

/* "a member (not started) (learner), node-1, node-2": the list, sorted, as said in a check. */
static void etcd_list_text(struct strbuf *out, const struct etcd_view *ev)
{
	struct etcd_member m[ETCD_MEMBERS_MAX];
	size_t k;

	memcpy(m, ev->m, ev->nr * sizeof(*m));
	qsort(m, ev->nr, sizeof(*m), member_cmp);
	for (k = 0; k < ev->nr; k++)
		strbuf_addf(out, "%s%s%s%s", k ? ", " : "", m[k].name[0] ? m[k].name : "a member",
			    !m[k].started ? " (not started)" : "", m[k].learner ? " (learner)" : "");
}

static bool is_control_plane(const struct node *n)
{
	return n->roles & NODE_ROLE_CONTROL_PLANE;
}

static void etcd_checks(struct validation *v, const struct inventory *inv,
			const struct node *const *nodes, const struct facts *const *facts,
			size_t nr)
{
	struct etcd_view *ev = xcalloc(nr ? nr : 1, sizeof(*ev));
	struct strbuf obs = STRBUF_INIT, first = STRBUF_INIT, t = STRBUF_INIT, lost = STRBUF_INIT;
	struct strbuf expected = STRBUF_INIT;
	const struct etcd_view *ref = NULL;
	const char *leader = NULL;
	size_t i, k, nr_cp = 0, answered = 0;
	bool ok = true, agree = true, leaders_agree = true;

	for (i = 0; i < inv->nr_nodes; i++)
		if (is_control_plane(&inv->nodes[i]))
			strbuf_addf(&expected, "%s%s", expected.len ? ", " : "", inv->nodes[i].name);
	for (i = 0; i < nr; i++) {
		const struct etcd_member *self;
		char *fix = NULL;

		if (!is_control_plane(nodes[i]))
			continue;
		nr_cp++;
		strbuf_reset(&obs);
		if (!facts[i]) {
			ev[i].why = xasprintf("no answer: %s is unreachable", nodes[i]->name);
			fix = xasprintf("bring %s back: the cluster runs on the other members while "
					"they are a majority",
					nodes[i]->name);
		} else {
			etcd_view_parse(&ev[i], facts[i]);
			fix = xasprintf("'crictl ps -a --name etcd' and that container's log on %s",
					nodes[i]->name);
		}
		if (!ev[i].answered) {
			strbuf_addf(&lost, "%s%s", lost.len ? ", " : "", nodes[i]->name);
			validation_add(v, "etcd-member", i, CHECK_FAIL,
				       "its etcd member started and voting, a leader known", ev[i].why,
				       fix);
			free(fix);
			continue;
		}
		answered++;
		self = etcd_find(&ev[i], ev[i].self, nodes[i]->name);
		if (!self)
			strbuf_addf(&obs, "no member named %s in its list", nodes[i]->name);
		else if (!self->started)
			strbuf_addstr(&obs, "not started");
		else if (self->learner)
			strbuf_addstr(&obs, "a learner (not voting yet)");
		else if (ev[i].error)
			strbuf_addf(&obs, "its status says: %s", ev[i].error);
		else if (!ev[i].leader[0])
			strbuf_addstr(&obs, "no leader");
		if (obs.len) {
			validation_add(v, "etcd-member", i, CHECK_FAIL,
				       "its etcd member started and voting, a leader known", obs.buf,
				       fix);
		} else {
			const struct etcd_member *l = etcd_find(&ev[i], ev[i].leader, NULL);
			strbuf_addf(&obs, "started, voting; leader %s", l && l->name[0] ? l->name : "?");
			validation_add(v, "etcd-member", i, CHECK_PASS,
				       "its etcd member started and voting, a leader known", obs.buf,
				       NULL);
		}
		free(fix);
		/* the same list from every member, and the same leader */
		strbuf_reset(&t);
		etcd_list_text(&t, &ev[i]);
		if (!ref) {
			ref = &ev[i];
			strbuf_add(&first, t.buf, t.len);
		} else if (strcmp(first.buf, t.buf)) {
			agree = false;
		}
		if (ev[i].leader[0]) {
			if (!leader)
				leader = ev[i].leader;
			else if (strcmp(leader, ev[i].leader))
				leaders_agree = false;
		}
	}
	if (!nr_cp)
		goto out;
	strbuf_reset(&obs);
	if (!ref) {
		ok = false;
		strbuf_addf(&obs, "no member answers (%s)", lost.buf);
	} else if (!agree) {
		ok = false;
		strbuf_addstr(&obs, "the members disagree:");
		for (i = 0; i < nr; i++) {
			if (!ev[i].answered)
				continue;
			strbuf_addf(&obs, " %s lists ", nodes[i]->name);
			etcd_list_text(&obs, &ev[i]);
			strbuf_addch(&obs, ';');
		}
		strbuf_setlen(&obs, obs.len - 1);
	} else {
		const struct etcd_member *l = leader ? etcd_find(ref, leader, NULL) : NULL;
		strbuf_addf(&obs, "%zu member%s: %s", ref->nr, ref->nr == 1 ? "" : "s", first.buf);
		for (k = 0; k < ref->nr; k++)
			if (!ref->m[k].started || ref->m[k].learner)
				ok = false;
		/* a member per control plane, no other */
		for (i = 0; i < inv->nr_nodes; i++)
			if (is_control_plane(&inv->nodes[i]) &&
			    !etcd_find(ref, NULL, inv->nodes[i].name)) {
				ok = false;
				strbuf_addf(&obs, "; no member for %s", inv->nodes[i].name);
			}
		for (k = 0; k < ref->nr; k++) {
			bool known = false;
			for (i = 0; i < inv->nr_nodes; i++)
				known = known || (is_control_plane(&inv->nodes[i]) &&
						  !strcmp(inv->nodes[i].name, ref->m[k].name));
			if (!known) {
				ok = false;
				strbuf_addf(&obs, "; %s is no control plane of the inventory",
					    ref->m[k].name[0] ? ref->m[k].name : "a member not started");
			}
		}
		if (!leaders_agree) {
			ok = false;
			strbuf_addstr(&obs, "; the members name different leaders");
		} else if (!l) {
			ok = false;
			strbuf_addstr(&obs, "; no leader");
		} else {
			strbuf_addf(&obs, "; leader %s", l->name[0] ? l->name : "?");
		}
		if (lost.len) {
			ok = false;
			strbuf_addf(&obs, "; lost: %s (%zu of %zu answer%s)", lost.buf, answered,
				    ref->nr, 2 * answered > ref->nr ? ", a majority: writes work"
								    : ", no majority: no writes");
		} else if (ok) {
			strbuf_addstr(&obs, "; all started and voting, the same list from each");
		}
	}
	strbuf_reset(&t);
	strbuf_addf(&t, "a started, voting member per control plane (%s), the same list from each, "
			"one leader",
		    expected.buf);
	validation_add(v, "etcd-cluster", CHECK_CLUSTER, ok ? CHECK_PASS : CHECK_FAIL, t.buf,
		       obs.buf,
		       ok ? NULL
			  : "'etcdctl member list' on a control plane (kubeadm's etcd certificates "
			    "in /etc/kubernetes/pki/etcd); a lost member's machine back, or "
			    "'provision remove-node' of it");
out:
	for (i = 0; i < nr; i++)
		etcd_view_release(&ev[i]);
	free(ev);
	strbuf_release(&obs);
	strbuf_release(&first);
	strbuf_release(&t);
	strbuf_release(&lost);
	strbuf_release(&expected);
}

/* facts' apiserver_readyz: "CODE TEXT" (facts.sh). */
static void apiserver_check(struct validation *v, size_t i, const struct node *n,
			    const struct facts *f, int api_port)
{
	char exp[96], obs[256], *fix;
	const char *r = f ? f->apiserver_readyz : NULL;
	size_t digits = r ? strspn(r, "0123456789") : 0;
	bool ok = false;

	snprintf(exp, sizeof(exp), "its API server's /readyz (port %d) answers ok", api_port);
	if (!f)
		snprintf(obs, sizeof(obs), "no answer: %s is unreachable", n->name);
	else if (!r)
		snprintf(obs, sizeof(obs), "not asked");
	else if (digits != 3 || !strncmp(r, "000", 3) || (r[3] && r[3] != ' '))
		snprintf(obs, sizeof(obs), "no answer on 127.0.0.1:%d", api_port);
	else {
		ok = !strncmp(r, "200 ok", 6);
		snprintf(obs, sizeof(obs), ok ? "ok" : "HTTP %.3s: %s", r, r + 4);
	}
	fix = ok ? NULL
		 : xasprintf("'crictl ps -a --name kube-apiserver' and that container's log on %s",
			     n->name);
	validation_add(v, "apiserver-ready", i, ok ? CHECK_PASS : CHECK_FAIL, exp, obs, fix);
	free(fix);
}

void validate_control_planes(struct validation *v, const struct inventory *inv,
			     const struct node *const *nodes, const struct facts *const *facts,
			     size_t nr)
{
	struct strbuf holders = STRBUF_INIT, lost = STRBUF_INIT, exp = STRBUF_INIT;
	size_t i, nr_held = 0, nr_cp = 0;

	if (inv->cluster.api_endpoint.kind == API_ENDPOINT_NONE)
		return;
	etcd_checks(v, inv, nodes, facts, nr);
	for (i = 0; i < nr; i++)
		if (is_control_plane(nodes[i]))
			apiserver_check(v, i, nodes[i], facts[i], inv->cluster.api_port);
	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_VIP)
		return;
	for (i = 0; i < nr; i++) {
		if (!is_control_plane(nodes[i]))
			continue;
		nr_cp++;
		if (!facts[i])
			strbuf_addf(&lost, "%s%s", lost.len ? ", " : "", nodes[i]->name);
		else if (facts[i]->vip_held && ++nr_held)
			strbuf_addf(&holders, "%s%s", holders.len ? " and " : "", nodes[i]->name);
	}
	if (!nr_cp) {
		strbuf_release(&holders);
		strbuf_release(&lost);
		return;
	}
	strbuf_addf(&exp, "the VIP %s held by exactly one control plane", inv->cluster.api_endpoint.host);
	if (nr_held == 1) {
		char *obs = xasprintf("held by %s", holders.buf);
		validation_add(v, "vip-holder", CHECK_CLUSTER, CHECK_PASS, exp.buf, obs, NULL);
		free(obs);
	} else {
		struct strbuf obs = STRBUF_INIT;
		if (nr_held)
			strbuf_addf(&obs, "held by %s", holders.buf);
		else
			strbuf_addstr(&obs, "held by no control plane");
		if (lost.len)
			strbuf_addf(&obs, " (%s unreachable)", lost.buf);
		validation_add(
		    v, "vip-holder", CHECK_CLUSTER, CHECK_FAIL, exp.buf, obs.buf,
		    nr_held ? "two keepalived masters: they do not hear each other's VRRP adverts "
			      "(unicast, IP protocol 112; a firewall between the control planes?); "
			      "'journalctl -u keepalived' on each"
			    : "'systemctl status keepalived haproxy' on the control planes; "
			      "'provision up --phases prep' installs and starts them");
		strbuf_release(&obs);
	}
	strbuf_release(&holders);
	strbuf_release(&lost);
	strbuf_release(&exp);
}
