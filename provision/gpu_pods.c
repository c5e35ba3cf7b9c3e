/* gpu_pods: see gpu_pods.h. */
#include "gpu_pods.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"

/* provision-gpu-pod-NODE-xGPUS; -x0 is the CPU-only profile's pod on a GPU node. */
static char *pod_name(const char *node, unsigned gpus)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p;

	strbuf_addstr(&sb, "provision-gpu-pod-");
	for (p = node; *p && sb.len < 50; p++) {
		char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		strbuf_addch(&sb, (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-');
	}
	strbuf_addf(&sb, "-x%u", gpus);
	return strbuf_detach(&sb, NULL);
}

static char *manifest(const char *name, const struct hub_profile *p, const char *node)
{
	json_t *sel = json_object(), *limits = json_object(), *pod, *c;
	char gpus[16], *text;

	if (p->selector_key)
		json_object_set_new(sel, p->selector_key, json_string(p->selector_value));
	json_object_set_new(sel, "kubernetes.io/hostname", json_string(node));
	if (p->gpus) {
		snprintf(gpus, sizeof(gpus), "%u", p->gpus);
		json_object_set_new(limits, "nvidia.com/gpu", json_string(gpus));
	}
	pod = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:o, s:[{s:s, s:s, s:[s, s, s], "
	    "s:{s:o}}]}}",
	    "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
	    GPU_PODS_NAMESPACE, "labels", "app.kubernetes.io/managed-by", "provision",
	    GPU_PODS_LABEL, "gpu-pod", "spec", "restartPolicy", "Never", "nodeSelector", sel,
	    "containers", "name", "cuda", "image", GPU_PODS_IMAGE, "command", "sh", "-c",
	    "nvidia-smi -L >/dev/termination-log 2>&1; s=$?; cat /dev/termination-log; exit $s",
	    "resources", "limits", limits);
	c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
	if (p->visible_devices)
		json_object_set_new(c, "env",
				    json_pack("[{s:s, s:s}]", "name", "NVIDIA_VISIBLE_DEVICES",
					      "value", p->visible_devices));
	if (p->runtime_class)
		json_object_set_new(json_object_get(pod, "spec"), "runtimeClassName",
				    json_string(p->runtime_class));
	text = json_dumps(pod, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(pod);
	return text;
}

static size_t inventory_index(const struct node *const *nodes, size_t nr, const char *name)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(nodes[i]->name, name))
			return i;
	return (size_t)-1;
}

/*
 * The pods of profile p, one per node it lands on (a profile without GPUs:
 * on the GPU nodes only, where it must see none); rounds[] counts each
 * node's pods so far.
 */
static void add_pods(struct gpu_pod_plan *plan, size_t *alloc, unsigned *rounds,
		     const struct hub_profile *p, const struct profile_node *pn, size_t nr_pn,
		     const struct node *const *nodes, size_t nr)
{
	size_t k, j, g;

	for (k = 0; k < p->nr_nodes; k++) {
		const struct profile_node *n = NULL;
		struct gpu_pod *gp;
		size_t at = 0;

		for (j = 0; j < nr_pn; j++)
			if (!strcmp(pn[j].name, p->nodes[k]))
				n = &pn[at = j];
		if (!n || (!p->gpus && !n->nr_gpus))
			continue;
		ALLOC_GROW(plan->pods, plan->nr + 1, *alloc);
		gp = &plan->pods[plan->nr++];
		memset(gp, 0, sizeof(*gp));
		gp->node = xstrdup(n->name);
		gp->name = pod_name(n->name, p->gpus);
		gp->index = inventory_index(nodes, nr, n->name);
		gp->profile = xstrdup(p->display_name);
		gp->gpus = p->gpus;
		gp->models = xcalloc(n->nr_gpus + 1, sizeof(*gp->models));
		for (g = 0; g < n->nr_gpus; g++)
			gp->models[g] = xstrdup(n->gpus[g].model);
		gp->round = rounds[at]++;
		if (gp->round + 1 > plan->rounds)
			plan->rounds = gp->round + 1;
		gp->manifest = manifest(gp->name, p, n->name);
	}
}

int gpu_pods_plan(struct gpu_pod_plan *plan, const char *nodes_json, size_t len,
		  const struct node *const *nodes, size_t nr, struct error *err)
{
	struct profile_node *pn = NULL;
	struct hub_profile *p = NULL;
	size_t nr_pn = 0, nr_p = 0, alloc = 0, i, k, j;
	unsigned *rounds;

	memset(plan, 0, sizeof(*plan));
	if (profiles_nodes_from_json(&pn, &nr_pn, nodes_json, len, err) < 0)
		return -1;
	profiles_reserve_addons(pn, nr_pn);
	profiles_generate(&p, &nr_p, pn, nr_pn);
	rounds = xcalloc(nr_pn ? nr_pn : 1, sizeof(*rounds));
	/* The GPU profiles' pods first, then those of the profiles without a GPU. */
	for (i = 0; i < nr_p; i++)
		if (p[i].gpus)
			add_pods(plan, &alloc, rounds, &p[i], pn, nr_pn, nodes, nr);
	for (i = 0; i < nr_p; i++)
		if (!p[i].gpus)
			add_pods(plan, &alloc, rounds, &p[i], pn, nr_pn, nodes, nr);
	/* GPU nodes that no profile lands on (NotReady, cordoned, tainted). */
	for (j = 0; j < nr_pn; j++) {
		if (!pn[j].nr_gpus || rounds[j])
			continue;
		if ((k = inventory_index(nodes, nr, pn[j].name)) == (size_t)-1)
			continue;
		plan->unplaced =
		    xrealloc(plan->unplaced, (plan->nr_unplaced + 1) * sizeof(*plan->unplaced));
		plan->unplaced[plan->nr_unplaced++] = k;
	}
	free(rounds);
	profiles_free(p, nr_p);
	profiles_nodes_free(pn, nr_pn);
	return 0;
}

/*
 * The script's word for pod i's node: the first pod's number with the same
 * node (a node's name comes from the cluster and never reaches the script).
 */
static size_t i_node(const struct gpu_pod_plan *plan, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(plan->pods[j].node, plan->pods[i].node))
			return j;
	return i;
}

char *gpu_pods_script(const struct gpu_pod_plan *plan, unsigned timeout_s)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	unsigned r;

	if (!plan->nr)
		return NULL;
	strbuf_addf(
	    &sb,
	    "KC='kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s'\n"
	    "NS=%s T=%u created= stuck=\n"
	    "$KC -n \"$NS\" delete pods -l %s=gpu-pod --ignore-not-found >/dev/null 2>&1 || true\n"
	    /* A node whose pod of an earlier round was scheduled but did not
	     * start within T (its runtime or image is missing: every later pod
	     * there would wait T as well) gets no later pod. */
	    "gp_create() {\n"
	    "\tcase \" $stuck \" in *\" $2 \"*)\n"
	    "\t\tcat >/dev/null\n"
	    "\t\tprintf '%%s%%s\\n--- skipped\\n%%s\\n' '%s' \"$1\" '%s'\n"
	    "\t\treturn\n"
	    "\t\t;;\n"
	    "\tesac\n"
	    "\tif msg=$($KC apply -f - 2>&1); then\n"
	    "\t\tcreated=\"$created $1:$2\"\n"
	    "\telse\n"
	    "\t\tprintf '%%s%%s\\n--- rejected\\n%%s\\n%%s\\n' '%s' \"$1\" \"$msg\" '%s'\n"
	    "\tfi\n"
	    "}\n"
	    "gp_finish() {\n"
	    "\tend=$(($(date +%%s) + T))\n"
	    "\tfor pn in $created; do\n"
	    "\t\tp=${pn%%%%:*}\n"
	    "\t\twhile :; do\n"
	    "\t\t\tph=$($KC -n \"$NS\" get pod \"$p\" -o "
	    "'jsonpath={.status.phase}/{.spec.nodeName}' "
	    "2>/dev/null) || ph=\n"
	    "\t\t\tcase $ph in Succeeded/* | Failed/*) break ;; esac\n"
	    "\t\t\tif [ \"$(date +%%s)\" -ge \"$end\" ]; then\n"
	    "\t\t\t\tcase $ph in */?*) stuck=\"$stuck ${pn#*:}\" ;; esac\n"
	    "\t\t\t\tbreak\n"
	    "\t\t\tfi\n"
	    "\t\t\tsleep 2\n"
	    "\t\tdone\n"
	    "\tdone\n"
	    "\tfor pn in $created; do\n"
	    "\t\tp=${pn%%%%:*}\n"
	    "\t\tprintf '%%s%%s\\n' '%s' \"$p\"\n"
	    "\t\t$KC -n \"$NS\" get pod \"$p\" -o json 2>&1 || true\n"
	    "\t\tprintf '%%s\\n' '%s'\n"
	    "\t\t$KC -n \"$NS\" delete pod \"$p\" --ignore-not-found >/dev/null 2>&1 || true\n"
	    "\tdone\n"
	    "\tcreated=\n"
	    "}\n",
	    GPU_PODS_NAMESPACE, timeout_s, GPU_PODS_LABEL, GPU_PODS_BEGIN, GPU_PODS_END,
	    GPU_PODS_BEGIN, GPU_PODS_END, GPU_PODS_BEGIN, GPU_PODS_END);
	for (r = 0; r < plan->rounds; r++) {
		for (i = 0; i < plan->nr; i++) {
			if (plan->pods[i].round != r)
				continue;
			strbuf_addf(
			    &sb, "gp_create %s n%zu <<'PROVISION_GPU_POD'\n%s\nPROVISION_GPU_POD\n",
			    plan->pods[i].name, i_node(plan, i), plan->pods[i].manifest);
		}
		strbuf_addstr(&sb, "gp_finish\n");
	}
	return strbuf_detach(&sb, NULL);
}

/* The block of pod name in out (between the markers), or NULL. */
static char *block_of(const char *out, size_t len, const char *name)
{
	struct strbuf head = STRBUF_INIT;
	const char *p, *end = out + len, *body, *stop;
	char *ret = NULL;

	strbuf_addf(&head, "%s%s\n", GPU_PODS_BEGIN, name);
	for (p = out; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if ((size_t)(end - p) < head.len || memcmp(p, head.buf, head.len)) {
			p = nl ? nl + 1 : end;
			continue;
		}
		body = p + head.len;
		for (stop = body; stop < end;) {
			const char *eol = memchr(stop, '\n', (size_t)(end - stop));
			size_t l = eol ? (size_t)(eol - stop) : (size_t)(end - stop);
			if (l == strlen(GPU_PODS_END) && !memcmp(stop, GPU_PODS_END, l))
				break;
			stop = eol ? eol + 1 : end;
		}
		ret = xstrndup(body, (size_t)(stop - body));
		break;
	}
	strbuf_release(&head);
	return ret;
}

static char *first_line(const char *s)
{
	const char *nl;

	while (*s == '\n' || *s == ' ')
		s++;
	nl = strchr(s, '\n');
	return nl ? xstrndup(s, (size_t)(nl - s)) : xstrdup(*s ? s : "(no output)");
}

static bool is_model(const struct gpu_pod *gp, const char *m, size_t len)
{
	size_t i;

	for (i = 0; gp->models[i]; i++)
		if (strlen(gp->models[i]) == len && !memcmp(gp->models[i], m, len))
			return true;
	return false;
}

/*
 * `nvidia-smi -L` lines "GPU i: MODEL (UUID: GPU-...)": how many, and
 * whether every one is a model of the node.
 */
static unsigned listed_gpus(const struct gpu_pod *gp, const char *msg, bool *models_ok)
{
	const char *p = msg;
	unsigned n = 0;

	*models_ok = true;
	while (p && *p) {
		const char *nl = strchr(p, '\n'), *colon, *uuid;
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l > 4 && !memcmp(p, "GPU ", 4) && (colon = memchr(p, ':', l)) &&
		    (uuid = strstr(p, " (UUID: ")) && uuid < p + l && colon + 2 <= uuid) {
			n++;
			if (!is_model(gp, colon + 2, (size_t)(uuid - colon - 2)))
				*models_ok = false;
		}
		p = nl ? nl + 1 : NULL;
	}
	return n;
}

/* One pod's result: true when it listed its GPUs; *observed and *fix set. */
static bool pod_result(const struct gpu_pod *gp, const char *out, size_t len, unsigned timeout_s,
		       char **observed, char **fix)
{
	char *blk = block_of(out, len, gp->name), *line = NULL;
	json_t *pod = NULL, *cs, *state, *term, *wait;
	const char *phase, *msg, *reason;
	bool ok = false, models_ok;
	unsigned n;

	*fix = NULL;
	if (!blk) {
		*observed = xasprintf("%s: no result (the check did not get to it)", gp->profile);
		*fix = xstrdup(
		    "run 'provision check' again; see kubectl get pods -n " GPU_PODS_NAMESPACE);
		return false;
	}
	if (!strncmp(blk, "--- skipped\n", 12)) {
		*observed =
		    xasprintf("%s: not run: an earlier check pod on %s did not start within %us",
			      gp->profile, gp->node, timeout_s);
		goto out;
	}
	if (!strncmp(blk, "--- rejected\n", 13)) {
		line = first_line(blk + 13);
		*observed = xasprintf("%s: not created: %s", gp->profile, line);
		*fix =
		    xstrdup("the GPU Operator makes RuntimeClass nvidia (kubectl get runtimeclass; "
			    "kubectl -n gpu-operator get pods); run 'provision up'");
		goto out;
	}
	pod = json_loads(blk, 0, NULL);
	if (!json_is_object(pod)) {
		line = first_line(blk);
		*observed = xasprintf("%s: kubectl get pod: %s", gp->profile, line);
		*fix = xstrdup("run 'kubectl get pods -n " GPU_PODS_NAMESPACE
			       "' on the control plane");
		goto out;
	}
	phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	cs =
	    json_array_get(json_object_get(json_object_get(pod, "status"), "containerStatuses"), 0);
	state = json_object_get(cs, "state");
	term = json_object_get(state, "terminated");
	wait = json_object_get(state, "waiting");
	if (term) {
		long long code = (long long)json_integer_value(json_object_get(term, "exitCode"));

		msg = json_string_value(json_object_get(term, "message"));
		n = listed_gpus(gp, msg ? msg : "", &models_ok);
		line = first_line(msg ? msg : "");
		if (!gp->gpus) { /* the CPU-only profile: it must see none */
			ok = !n;
			if (ok) {
				*observed =
				    xasprintf("%s: no GPU listed (exit %lld)", gp->profile, code);
				goto out;
			}
			*observed =
			    xasprintf("%s: nvidia-smi -L lists %u GPU(s) without a GPU request: %s",
				      gp->profile, n, line);
			*fix = xasprintf(
			    "a notebook without a GPU sees %s's GPUs: its default runtime is "
			    "nvidia and the CUDA image sets NVIDIA_VISIBLE_DEVICES=all; the hub's "
			    "profiles without a GPU set "
			    "NVIDIA_VISIBLE_DEVICES=" PROFILES_NO_GPU_DEVICES
			    " (roles/jupyterhub): run 'provision up'",
			    gp->node);
			goto out;
		}
		if (code == 0 && n == gp->gpus && models_ok) {
			*observed = xasprintf("%s: nvidia-smi -L lists %u× %s", gp->profile, n,
					      gp->models[0] ? gp->models[0] : "?");
			ok = true;
			goto out;
		}
		*observed =
		    xasprintf("%s: exit %lld, %u GPU(s) listed: %s", gp->profile, code, n, line);
		*fix = xasprintf(
		    "the pod got nvidia.com/gpu but not the GPU: it must run under the "
		    "NVIDIA runtime (RuntimeClass nvidia, handler nvidia; in "
		    "/etc/containerd/config.toml on %s the nvidia runtime with BinaryName "
		    "/usr/local/nvidia/toolkit/nvidia-container-runtime, written by "
		    "roles/containerd); run 'provision up'",
		    gp->node);
		goto out;
	}
	reason = json_string_value(json_object_get(wait, "reason"));
	if (!reason) {
		json_t *c;
		size_t i;
		json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i,
				   c)
		{
			const char *t = json_string_value(json_object_get(c, "type"));
			const char *st = json_string_value(json_object_get(c, "status"));
			if (t && st && !strcmp(t, "PodScheduled") && !strcmp(st, "False"))
				reason = json_string_value(json_object_get(c, "message"));
		}
	}
	*observed = xasprintf("%s: still %s after %us%s%s", gp->profile, phase ? phase : "unknown",
			      timeout_s, reason ? ": " : "", reason ? reason : "");
	*fix = xasprintf("kubectl describe pod on the control plane while 'provision check' runs: "
			 "FailedCreatePodSandBox names what containerd on %s lacks (the nvidia "
			 "runtime, its binary from the GPU Operator's toolkit); Insufficient "
			 "nvidia.com/gpu means its GPUs are in use",
			 gp->node);
out:
	free(line);
	json_decref(pod);
	free(blk);
	return ok;
}

void gpu_pods_validate(struct validation *v, const struct gpu_pod_plan *plan, const char *out,
		       size_t len, int status, unsigned timeout_s)
{
	size_t i, j;
	bool *done = xcalloc(plan->nr ? plan->nr : 1, sizeof(*done));

	for (;;) {
		struct strbuf exp = STRBUF_INIT, obs = STRBUF_INIT, fix = STRBUF_INIT;
		bool ok = true;

		/* The nodes in the inventory's order: the first node not done yet. */
		for (i = plan->nr, j = 0; j < plan->nr; j++)
			if (!done[j] && plan->pods[j].index != (size_t)-1 &&
			    (i == plan->nr || plan->pods[j].index < plan->pods[i].index))
				i = j;
		if (i == plan->nr)
			break;
		strbuf_addstr(&exp, "a pod of each GPU profile landing here (runtimeClassName "
				    "nvidia, nvidia.com/gpu limit, the profile's nodeSelector) "
				    "lists its GPUs with nvidia-smi -L, a pod of the CPU-only "
				    "profile none:");
		for (j = i; j < plan->nr; j++) {
			char *o = NULL, *f = NULL;
			if (done[j] || strcmp(plan->pods[j].node, plan->pods[i].node))
				continue;
			done[j] = true;
			strbuf_addf(&exp, " %s", plan->pods[j].profile);
			if (!pod_result(&plan->pods[j], out ? out : "", out ? len : 0, timeout_s,
					&o, &f))
				ok = false;
			strbuf_addf(&obs, "%s%s", obs.len ? "; " : "", o);
			if (f && !fix.len)
				strbuf_addstr(&fix, f);
			free(o);
			free(f);
		}
		if (!ok && status != 0 && !fix.len)
			strbuf_addstr(&fix, "the check's script failed on the control plane");
		validation_add(v, "gpu-pod", plan->pods[i].index, ok ? CHECK_PASS : CHECK_FAIL,
			       exp.buf, obs.buf, ok ? NULL : fix.buf);
		strbuf_release(&exp);
		strbuf_release(&obs);
		strbuf_release(&fix);
	}
	for (i = 0; i < plan->nr_unplaced; i++)
		validation_add(
		    v, "gpu-pod", plan->unplaced[i], CHECK_SKIP,
		    "a pod of each GPU profile landing here lists its GPUs with nvidia-smi -L",
		    "no GPU profile lands on this node: not Ready, cordoned or tainted NoSchedule",
		    "make the node schedulable (kubectl uncordon), then check again");
	free(done);
}

void gpu_pods_release(struct gpu_pod_plan *plan)
{
	size_t i, g;

	for (i = 0; i < plan->nr; i++) {
		free(plan->pods[i].name);
		free(plan->pods[i].node);
		free(plan->pods[i].profile);
		for (g = 0; plan->pods[i].models[g]; g++)
			free(plan->pods[i].models[g]);
		free(plan->pods[i].models);
		free(plan->pods[i].manifest);
	}
	free(plan->pods);
	free(plan->unplaced);
	memset(plan, 0, sizeof(*plan));
}
