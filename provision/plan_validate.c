/* plan_validate: the validation checks at the end of up and check. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_pods.h"
#include "http.h"

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
	runner_job_set_filter(job, plan_step_filter, &nc);
	for (i = 0; q[i].what; i++) {
		struct transport_result res = {0};
		nc.capture = q[i].out;
		nc.capture.max = 16 << 20;
		nc.capturing = nc.swallow = true;
		q[i].rc = runner_job_exec(job, PHASE_VALIDATE, q[i].what, q[i].command, NULL, 0,
					  nc.node->ssh.command_timeout * 1000, &res, &err);
		q[i].status = res.exit_status;
		q[i].out = nc.capture;
		nc.capturing = nc.swallow = false;
		if (q[i].rc < 0 || (i == 0 && q[i].status != 0))
			break;
	}
	runner_job_set_filter(job, NULL, NULL);
	plan_node_ctx_release(&nc);
	return 0;
}

void plan_post_checks(struct run *run, size_t from, size_t cluster_row)
{
	struct validation *v = &run->res->validation;
	size_t i;

	/* Redacted before any view, log or record sees them (cleaned by validation_add). */
	for (i = 0; i < v->nr; i++) {
		secrets_scrub_str(run->o->secrets, &v->items[i].expected);
		secrets_scrub_str(run->o->secrets, &v->items[i].observed);
		secrets_scrub_str(run->o->secrets, &v->items[i].fix);
	}
	for (i = from; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		size_t row = c->node == CHECK_CLUSTER ? cluster_row : c->node;
		struct event *ev = event_new(EVENT_STEP_END, row);

		ev->phase = PHASE_VALIDATE;
		ev->role = xstrdup(phase_name(PHASE_VALIDATE));
		ev->step = xstrdup(c->id);
		ev->result = c->status == CHECK_PASS	? STEP_OK
			     : c->status == CHECK_FAIL ? STEP_FAILED
			     : c->status == CHECK_WARN ? STEP_WARNED
						       : STEP_SKIPPED;
		ev->expected = xstrdup(c->expected);
		ev->observed = xstrdup(c->observed);
		ev->text = c->fix ? xasprintf("%s (hint: %s)", c->observed, c->fix)
				  : xstrdup(c->observed);
		plan_forward(run, ev, row);
		event_free(ev);
	}
}

/* STATE/private/admin.conf is there and one to use (http_kubeconfig_check): one
 * an older provision kept is checked too before this machine sends it anywhere. */
static bool kubeconfig_ok(struct run *run, const char *path)
{
	const struct inventory *inv = run->o->inv;
	const struct node *cp = inventory_control_plane(inv);
	struct strbuf text = STRBUF_INIT;
	struct error err = {0};
	bool ok;

	ok = cp && access(path, R_OK) == 0 && read_file(path, &text) == 0 &&
	     http_kubeconfig_check(text.buf, text.len, inventory_api_host(inv),
				   inventory_api_port(inv), &err) ==
		 0;
	if (text.len)
		explicit_bzero(text.buf, text.len);
	strbuf_release(&text);
	return ok;
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

	if (kc && kubeconfig_ok(run, kc) &&
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
 * the hub's node's address (inventory_hub_node: a NodePort answers on every
 * node; that one is up whenever the hub is), as a user's browser would
 * reach it.  Skipped when this run did not include the
 * addons phase (`up --phases init`); `check` (no phases) always asks.
 */
static void hub_check(struct run *run)
{
	const struct inventory *inv = run->o->inv;
	const struct node *hn = inventory_hub_node(inv);
	struct strbuf body = STRBUF_INIT;
	struct error err = {0};
	long status = 0;
	char *url;

	if (!inv->hub.enabled || !hn)
		return;
	if (run->o->phases && !(run->o->phases & PHASE_BIT(PHASE_ADDONS))) {
		validation_add(&run->res->validation, "hub-health", CHECK_CLUSTER, CHECK_SKIP,
			       "/hub/health answers 200", "the addons phase did not run",
			       "run 'provision up' with the addons phase");
		return;
	}
	url = xasprintf(strchr(hn->address, ':') ? "http://[%s]:%d/hub/health"
						 : "http://%s:%d/hub/health",
			hn->address, inv->hub.node_port);
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
	bool expected = !o->phases || (o->phases & PHASE_BIT(PHASE_ADDONS));
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

/*
 * "A GPU pod sees its GPU" (gpu_pods.h): pods with the hub's GPU profiles'
 * spec, made from the Nodes of query 1, in a second pass on the control
 * plane; when `up` ran phases without addons, not expected yet.
 */
static void gpu_pod_check(struct run *run, struct runner_opts *ro, struct transport **sessions,
			  size_t cp, const struct kube_query *nodes_q)
{
	const struct plan_opts *o = run->o;
	struct kube_query q[] = {{"gpu-pods", NULL, STRBUF_INIT, 0, 0}, {NULL, NULL, STRBUF_INIT, 0, 0}};
	const struct node *pass_node[1] = {o->nodes[cp]};
	struct transport *pass_session[1] = {sessions[cp]};
	struct gpu_pod_plan plan;
	struct runner_summary sum;
	struct error err = {0};
	char *script;

	if ((o->phases && !(o->phases & PHASE_BIT(PHASE_ADDONS))) || nodes_q->status != 0 ||
	    gpu_pods_plan(&plan, nodes_q->out.buf, nodes_q->out.len, o->nodes, o->nr, &err) < 0)
		return;
	script = gpu_pods_script(&plan, GPU_PODS_TIMEOUT_S);
	if (script) {
		q[0].command = script;
		run->queries = q;
		run->map[0] = cp;
		sessions[cp] = NULL;
		ro->node_fn = validate_fn;
		ro->sessions = pass_session;
		runner_run(ro, pass_node, 1, &sum, NULL);
		sessions[cp] = pass_session[0];
		run->queries = NULL;
	}
	gpu_pods_validate(&run->res->validation, &plan, q[0].rc < 0 ? NULL : q[0].out.buf,
			  q[0].out.len, q[0].rc < 0 ? -1 : q[0].status, GPU_PODS_TIMEOUT_S);
	strbuf_release(&q[0].out);
	free(script);
	gpu_pods_release(&plan);
}

void plan_run_validation(struct run *run, struct runner_opts *ro, struct transport **sessions)
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
	size_t i, cp = (size_t)-1, first = res->validation.nr;
	unsigned ran = 0;
	struct error err = {0};

	if (o->phases & PHASE_BIT(PHASE_PREP))
		ran |= 1u;
	/*
	 * The control plane the cluster is asked through: the last selected
	 * one (one control plane: that one); with several, the first that
	 * answered, so that losing one does not lose the cluster's checks
	 * (the hub's too: its NodePort answers on every node).
	 */
	for (i = 0; i < o->nr; i++) {
		facts[i] = res->nodes[i].have_facts ? &res->nodes[i].facts : NULL;
		if (o->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE)
			cp = i;
	}
	for (i = 0; o->inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE && i < o->nr; i++)
		if ((o->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE) && facts[i]) {
			cp = i;
			break;
		}
	/* `check` on its own, or `up` having touched nothing: prep is expected done. */
	validate_facts(&res->validation, o->nodes, facts, o->nr, o->phases ? ran : 1u);

	if (cp == (size_t)-1) {
		validation_add(&res->validation, "cluster", CHECK_CLUSTER, CHECK_SKIP,
			       "the control plane answers", "not among the selected nodes",
			       "run without -l, or include the control plane");
	} else if (!res->nodes[cp].have_facts) {
		char *fix =
		    xasprintf("'provision run -l %s -- true' says why the control plane cannot "
			      "be reached (SSH, sudo)",
			      o->nodes[cp]->name);
		validation_add(&res->validation, "cluster", CHECK_CLUSTER, CHECK_FAIL,
			       "the control plane answers", "unreachable", fix);
		free(fix);
		validate_control_planes(&res->validation, o->inv, o->nodes, facts, o->nr);
	} else {
		run->queries = q;
		run->map[0] = cp;
		pass_node[0] = o->nodes[cp];
		pass_session[0] = sessions[cp];
		sessions[cp] = NULL;
		ro->node_fn = validate_fn;
		ro->sessions = pass_session;
		runner_run(ro, pass_node, 1, &sum, NULL);
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
			validate_control_planes(&res->validation, o->inv, o->nodes, facts, o->nr);
			hub_check(run);
			addon_checks(run, q, facts);
			gpu_pod_check(run, ro, sessions, cp, &q[1]);
			plan_run_certs(run, ro, sessions, cp);
		}
	}
	free(facts);
	for (i = 0; q[i].what; i++)
		strbuf_release(&q[i].out);
	plan_post_checks(run, first, cp == (size_t)-1 ? 0 : cp);
}
