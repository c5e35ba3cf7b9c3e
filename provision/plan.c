/* plan: the executor (see plan.h for the theory of operation, plan_int.h for its rooms). */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned plan_all_phases(void)
{
	unsigned bits = 0;
	int i;

	for (i = 0; i < ROLE_UP_PHASES; i++)
		bits |= PHASE_BIT(i);
	return bits;
}

int plan_parse_phases(const char *list, unsigned *out, struct error *err)
{
	char *copy = xstrdup(list), *save = NULL, *w;
	unsigned bits = 0;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		enum phase p;
		while (*w == ' ')
			w++;
		if (phase_is(w, PHASE_FACTS) || phase_is(w, PHASE_PREFLIGHT))
			continue; /* always run */
		if (!strcmp(w, "all")) {
			bits |= plan_all_phases();
			continue;
		}
		p = role_phase_index(w);
		if (p == PHASE_NONE || p >= ROLE_UP_PHASES) {
			struct strbuf names = STRBUF_INIT;
			int i;
			for (i = 0; i < ROLE_UP_PHASES; i++)
				strbuf_addf(&names, "%s%s", i ? ", " : "", role_phases[i]);
			error_set(err, -1, "unknown phase '%s'", w);
			error_hint(err, "phases: facts, %s (or all)", names.buf);
			strbuf_release(&names);
			free(copy);
			return -1;
		}
		bits |= PHASE_BIT(p);
	}
	free(copy);
	*out = bits;
	return 0;
}

/* ---- barriers between nodes ---- */

static size_t role_index(const struct run *run, const struct role *r)
{
	return (size_t)(r - run->o->roles->roles);
}

/*
 * r ended on this node: failed (its steps failed, or, with skip_why, it did
 * not run: it waited for a role that failed, or the node stopped earlier).
 */
static void role_finished(struct node_ctx *nc, const struct role *r, bool failed,
			  const char *skip_why)
{
	struct run *run = nc->run;
	size_t ri = role_index(run, r);
	struct barrier *b;

	if (nc->role_done[ri])
		return;
	nc->role_done[ri] = true;
	/* Before the barrier counts it: a role waiting for r then sees its values. */
	exchange_role_done(run->exchange, nc->index, r, !failed);
	pthread_mutex_lock(&run->lock);
	b = &run->barriers[ri];
	b->done++;
	if (failed)
		b->failed++;
	if (failed && skip_why) {
		b->skipped++;
		if (!b->skip_why) {
			b->skip_why = xstrdup(skip_why);
			b->skip_node = xstrdup(nc->node->name);
		}
	}
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
		size_t failed, skipped, missing;
		char *why = NULL, more[48] = "";

		pthread_mutex_lock(&run->lock);
		skipped = b->skipped;
		failed = b->failed - skipped;
		missing = b->expected - b->done;
		if (skipped > 1)
			snprintf(more, sizeof(more), " and %zu more", skipped - 1);
		if (!failed && skipped)
			/* it did not fail: it did not run, and that has its own reason */
			why = xasprintf("waits for role '%s', which was skipped on %s%s (%s)",
					w->name, b->skip_node, more, b->skip_why);
		pthread_mutex_unlock(&run->lock);
		if (failed)
			return xasprintf("waits for role '%s', which failed on %zu node%s", w->name,
					 failed, failed == 1 ? "" : "s");
		if (why)
			return why;
		if (missing)
			return xasprintf(
			    "waits for role '%s', which was skipped on %zu node%s (not "
			    "reached: the run stopped, or the node was not reachable)",
			    w->name, missing, missing == 1 ? "" : "s");
	}
	return NULL;
}

/*
 * A role this node skipped (it waited for one that failed or did not run)
 * is not there for the roles that depend on it here: gpu-operator without
 * the helm it depends on would fail on 'helm: not found'.  Returns NULL, or
 * why r is skipped too.
 */
static char *depends_skipped(const struct run *run, size_t idx, const struct role *r)
{
	const struct role_set *rs = run->o->roles;
	size_t i;

	for (i = 0; r->depends_on && r->depends_on[i]; i++) {
		const struct role *d = role_set_find(rs, r->depends_on[i]);
		if (d && run->role_skipped[idx * rs->nr + role_index(run, d)])
			return xasprintf("needs role '%s', which was skipped on %s", d->name,
					 run->o->nodes[idx]->name);
	}
	return NULL;
}

/* ---- node work ---- */

void plan_node_roles(const struct role_set *rs, const struct inventory *inv, const struct node *n,
		     const struct facts *f, unsigned phases, bool *out)
{
	bool gpu = node_has_gpu(n, f);
	size_t ri;

	for (ri = 0; ri < rs->nr; ri++) {
		const struct role *r = &rs->roles[ri];
		out[ri] = r->phase != PHASE_NONE && (phases & PHASE_BIT(r->phase)) &&
			  role_applies(r, inv, n, gpu);
	}
}

/* The phases node idx takes part in, of the run's. */
static unsigned node_run_phases(const struct plan_opts *o, size_t idx)
{
	unsigned run_phases = o->drift ? plan_all_phases() : o->phases;

	return run_phases & (o->node_phases ? o->node_phases[idx] : ~0u);
}

static int facts_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	size_t idx = run->map[runner_job_index(job)];
	const struct plan_opts *o = run->o;
	struct plan_node *pn = &run->res->nodes[idx];
	struct strbuf peers = STRBUF_INIT, cmd = STRBUF_INIT, input = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	struct node_ctx nc = {.run = run, .index = idx, .node = o->nodes[idx]};
	uint64_t t0 = now_ms();
	struct event *ev;
	size_t i;
	int rc;

	strbuf_init(&nc.capture, 0);
	nc.capture.max = FACTS_MAX + 1; /* facts_parse refuses more than FACTS_MAX */
	nc.capturing = true;
	nc.capture_stdout = true; /* facts are the script's output; its errors are not */
	runner_job_set_filter(job, plan_step_filter, &nc);
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
	strbuf_addf(&input, "\nPROVISION_PORTS='%d 10250 %d'\n", o->inv->cluster.api_port,
		    FLANNEL_HEALTHZ_PORT);
	/* Several control planes, a VIP: what preflight checks of them (facts.sh) */
	if (o->nodes[idx]->roles & NODE_ROLE_CONTROL_PLANE) {
		const struct inventory *inv = o->inv;
		struct strbuf reach = STRBUF_INIT;

		if (inv->cluster.api_endpoint.kind == API_ENDPOINT_VIP) {
			strbuf_addstr(&input, "PROVISION_VIP=");
			strbuf_add_sh_quoted(&input, inv->cluster.api_endpoint.host);
			strbuf_addch(&input, '\n');
		}
		for (i = 0; inventory_nr_control_planes(inv) > 1 && i < inv->nr_nodes; i++)
			if ((inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE) &&
			    &inv->nodes[i] != o->nodes[idx])
				strbuf_addf(&reach, "%s%s:2379 %s:2380 %s:%d", reach.len ? " " : "",
					    inv->nodes[i].address, inv->nodes[i].address,
					    inv->nodes[i].address, inv->cluster.api_port);
		/* the cluster is checked (check, status, up's validation): its members, API servers */
		if (inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE && o->validate &&
		    (!o->phases || run->validating))
			strbuf_addstr(&input, "PROVISION_CHECK_CP=1\n");
		if (reach.len) {
			strbuf_addstr(&input, "PROVISION_REACH=");
			strbuf_add_sh_quoted(&input, reach.buf);
			strbuf_addch(&input, '\n');
		}
		strbuf_release(&reach);
	}
	strbuf_add(&input, facts_script, facts_script_len);
	strbuf_addstr(&cmd, ". /dev/stdin");
	ev = event_new(EVENT_STEP_START, 0);
	ev->phase = PHASE_FACTS;
	ev->role = xstrdup(phase_name(PHASE_FACTS));
	ev->step = xstrdup("gather");
	runner_job_post(job, ev);
	rc = runner_job_exec(job, PHASE_FACTS, "gather", cmd.buf, input.buf, input.len,
			     o->nodes[idx]->ssh.command_timeout * 1000, &res, &err);
	runner_job_set_filter(job, NULL, NULL);
	/*
	 * Node text that reaches the views is redacted (runner.h); the facts
	 * reach them parsed, so they are parsed from the redacted output.
	 */
	if (!nc.capture.truncated) /* (more than FACTS_MAX stays more: it fails below) */
		secrets_redact(o->secrets, &nc.capture);
	ev = event_new(EVENT_STEP_END, 0);
	ev->phase = PHASE_FACTS;
	ev->role = xstrdup(phase_name(PHASE_FACTS));
	ev->step = xstrdup("gather");
	ev->duration_ms = now_ms() - t0;
	if (nc.protocol_error) {
		/* A node that speaks protocol in its facts is not giving facts. */
		ev->result = STEP_FAILED;
		runner_job_fail(job, "facts: %s", nc.protocol_error);
		ev->text = xstrdup(nc.protocol_error);
	} else if (rc == 0 && res.exit_status == 0 &&
		   facts_parse(&pn->facts, nc.capture.buf, nc.capture.len, &err) == 0) {
		struct event *fev = event_new(EVENT_FACTS, 0);
		pn->have_facts = true;
		ev->result = STEP_OK;
		/* parsed once, here: the views read them from this event (events.h) */
		fev->phase = PHASE_FACTS;
		fev->facts = &pn->facts;
		runner_job_post(job, fev);
		if (run->node_roles && !run->validating) {
			/* and which roles it takes part in: decided here, once */
			bool *row = &run->node_roles[idx * o->roles->nr];
			plan_node_roles(o->roles, o->inv, o->nodes[idx], &pn->facts,
					node_run_phases(o, idx), row);
			fev = event_new(EVENT_ROLES, 0);
			fev->phase = PHASE_FACTS;
			fev->roles = xmalloc(o->roles->nr * sizeof(*row));
			memcpy(fev->roles, row, o->roles->nr * sizeof(*row));
			fev->nr_roles = o->roles->nr;
			runner_job_post(job, fev);
		}
	} else {
		ev->result = STEP_FAILED;
		if (rc == 0 && res.exit_status != 0)
			error_set(&err, -1, "facts script exited %d", res.exit_status);
		runner_job_fail(job, "facts: %s", err.msg);
		ev->text = xstrdup(err.msg);
	}
	runner_job_post(job, ev);
	strbuf_release(&nc.capture);
	plan_node_ctx_release(&nc);
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
	const struct role *failed_at = NULL;
	int ret = 0;

	nc.role_done = &run->role_done[idx * rs->nr];
	strbuf_init(&nc.tail, 0);
	strbuf_init(&nc.capture, 0);
	nc.capture.max = CAPTURE_MAX;
	runner_job_set_filter(job, plan_step_filter, &nc);

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
		if (!why)
			why = depends_skipped(run, idx, r);
		if (why) {
			run->role_skipped[idx * rs->nr + ri] = true;
			plan_post_step(job, EVENT_STEP_START, r, "wait", STEP_NONE, 0, NULL);
			plan_post_step(job, EVENT_STEP_END, r, "wait", STEP_SKIPPED, 0, why);
			plan_record(&nc, r, "wait", false, STEP_SKIPPED, 0, why);
			role_finished(&nc, r, true, why);
			free(why);
			continue;
		}
		if (r->pulls)
			ret = plan_import_images(&nc, job, r);
		for (si = 0; si < r->nr_steps && ret == 0; si++) {
			if (si && runner_job_stopping(job)) {
				runner_job_interrupted(job, "interrupted before %s › %s", r->name,
						r->steps[si].name);
				ret = 1;
				break;
			}
			for (ti = 0; ti < r->nr_artifacts && ret == 0; ti++) {
				const struct role_artifact *a = &r->artifacts[ti];
				if (!role_artifact_for(a, o->inv, nc.node))
					continue;
				if (a->before ? !strcmp(a->before, r->steps[si].name) : si == 0)
					ret = plan_deploy_artifact(&nc, job, r, a);
			}
			for (ti = 0; ti < r->nr_templates && ret == 0; ti++) {
				const struct role_template *t = &r->templates[ti];
				bool now = t->before ? !strcmp(t->before, r->steps[si].name) : si == 0;
				if (now)
					ret = plan_deploy_file(&nc, job, r, t);
			}
			if (ret == 0)
				ret = plan_run_step(&nc, job, r, &r->steps[si]);
		}
		role_finished(&nc, r, ret != 0, NULL);
		if (ret != 0)
			failed_at = r;
	}
	/* A failed node reaches no later role: they count as not run for the barriers. */
	if (ret != 0) {
		char *why = failed_at
				? xasprintf("%s stopped earlier: role '%s' failed there",
					    nc.node->name, failed_at->name)
				: xasprintf("%s stopped earlier (interrupted)", nc.node->name);
		for (ri = 0; ri < rs->nr; ri++)
			if (run->applies[idx * rs->nr + ri])
				role_finished(&nc, &rs->roles[ri], true, why);
		free(why);
	}

	runner_job_set_filter(job, NULL, NULL);
	strbuf_release(&nc.capture);
	plan_node_ctx_release(&nc);
	return ret;
}

/* ---- events to the views ---- */

void plan_forward(struct run *run, const struct event *ev, size_t idx)
{
	node_status_apply(&run->res->status[idx], ev);
	event_consumers_event(&run->o->consumers, ev, &run->res->status[idx]);
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
	plan_forward(run, &copy, idx);
}

static void pass_tick(void *data)
{
	struct run *run = data;

	event_consumers_tick(&run->o->consumers);
}

static void synth_state(struct run *run, size_t idx, enum node_state state, const char *text)
{
	struct event *ev = event_new(EVENT_NODE_STATE, idx);

	ev->state = state;
	ev->exit_status = -1;
	if (text)
		ev->text = xstrdup(text);
	plan_forward(run, ev, idx);
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
	struct transport **sessions =
	    o->sessions ? o->sessions : xcalloc(o->nr ? o->nr : 1, sizeof(*sessions));
	const struct node **pass_nodes = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_nodes));
	struct transport **pass_sessions = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_sessions));
	const struct facts **facts = xcalloc(o->nr ? o->nr : 1, sizeof(*facts));
	struct runner_summary sum;
	struct runner_opts ro = {0};
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
		res->status[i].phase = PHASE_NONE;
		res->status[i].queued_ms = t0;
	}
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	run.exchange = exchange_new(o->inv, o->nodes, o->nr, o->secrets);
	for (i = 0; o->hub_github_secret && inventory_control_plane(o->inv) && i < o->nr; i++)
		if (!strcmp(o->nodes[i]->name, inventory_control_plane(o->inv)->name))
			exchange_give(run.exchange, i, "hub_github_client_secret",
				      o->hub_github_secret);
	for (i = 0; i < o->nr; i++) {
		size_t k;
		for (k = 0; o->registry_auth && o->registry_auth[k]; k++) {
			const char *eq = strchr(o->registry_auth[k], '=');
			char *name =
			    xstrndup(o->registry_auth[k], (size_t)(eq - o->registry_auth[k]));
			exchange_give(run.exchange, i, name, eq + 1);
			free(name);
		}
	}
	run.map = xcalloc(o->nr ? o->nr : 1, sizeof(*run.map));
	for (i = 0; i < o->nr; i++)
		run.map[i] = i;
	if ((o->phases || o->drift) && rs && rs->nr)
		run.node_roles = xcalloc((o->nr ? o->nr : 1) * rs->nr, sizeof(bool));

	ro.ops = ops;
	ro.forks = o->forks;
	ro.use_sudo = true;
	ro.sudo_password = o->sudo_password;
	ro.identity_passphrase = o->identity_passphrase;
	ro.passphrase_identity = o->inv->ssh.identity;
	ro.per_command_channels = o->per_command_channels;
	ro.secrets = o->secrets;
	ro.sessions = sessions;
	ro.data = &run; /* facts_fn's, pipeline_fn's */
	/* the runner's one consumer: pass_event maps the pass's nodes to the run's, applies
	 * each event to the run-wide records and hands it on to o->consumers */
	event_consumers_add(&ro.consumers, pass_event, pass_tick, &run);
	ro.handle_signals = true;

	/* 1. facts */
	ro.node_fn = facts_fn;
	runner_run(&ro, o->nodes, o->nr, &sum, NULL); /* records: res->status (plan_forward) */
	res->interrupted = sum.interrupted;

	/* 2. preflight */
	for (i = 0; i < o->nr; i++)
		facts[i] = res->nodes[i].have_facts ? &res->nodes[i].facts : NULL;
	if (!o->skip_preflight)
		preflight_run(&res->preflight, o->inv,
			      /* status runs without roles: no matrix row to check against */
			      o->roles ? kube_matrix_find(&o->roles->kube,
							  o->inv->cluster.kubernetes_version)
				       : NULL,
			      o->nodes, facts, o->nr);
	/* Helm's skew: for the runs that drive the add-ons (up, check, add-node: phase addons) */
	if (!o->skip_preflight && o->roles &&
	    ((o->drift ? plan_all_phases() : o->phases) & PHASE_BIT(PHASE_ADDONS))) {
		const struct node *cp = inventory_control_plane(o->inv);
		char *helm = cp ? role_set_helm_version(o->roles, o->inv, cp) : NULL;

		preflight_helm(&res->preflight, o->inv,
			       kube_matrix_find(&o->roles->kube, o->inv->cluster.kubernetes_version),
			       helm, o->nodes, facts, o->nr);
		free(helm);
	}
	for (i = 0; i < res->preflight.nr; i++) {
		const struct preflight_problem *p = &res->preflight.items[i];
		struct event *ev = event_new(EVENT_MESSAGE, p->node);
		ev->phase = PHASE_PREFLIGHT;
		ev->role = xstrdup(phase_name(PHASE_PREFLIGHT));
		ev->step = xstrdup(p->fatal ? "error" : "warning");
		ev->result = p->fatal ? STEP_FAILED : STEP_OK;
		ev->text = p->hint ? xasprintf("%s (hint: %s)", p->msg, p->hint) : xstrdup(p->msg);
		plan_forward(&run, ev, p->node);
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
	if ((o->phases || o->drift) && !res->interrupted) {
		run.barriers = xcalloc(rs->nr ? rs->nr : 1, sizeof(*run.barriers));
		run.applies = xcalloc((o->nr ? o->nr : 1) * (rs->nr ? rs->nr : 1), sizeof(bool));
		run.role_done = xcalloc((o->nr ? o->nr : 1) * (rs->nr ? rs->nr : 1), sizeof(bool));
		run.role_skipped =
		    xcalloc((o->nr ? o->nr : 1) * (rs->nr ? rs->nr : 1), sizeof(bool));
		for (i = 0; i < o->nr; i++) {
			bool ok = res->nodes[i].have_facts && !res->nodes[i].preflight_failed;
			/* the roles facts_fn decided (and told the views) */
			for (ri = 0; ri < rs->nr && ok && run.node_roles; ri++) {
				if (!run.node_roles[i * rs->nr + ri])
					continue;
				run.applies[i * rs->nr + ri] = true;
				run.barriers[ri].expected++;
			}
		}
		run.gpu = tval_new_map();
		plan_run_gpu_values(run.gpu, &run);
		plan_run_images(&run);
		/* cluster.images.source: bundle -- a node the bundle cannot serve stops here */
		for (i = 0; i < o->nr; i++) {
			if (!res->nodes[i].preflight_failed || !res->nodes[i].have_facts ||
			    res->status[i].state >= NODE_DONE)
				continue;
			for (ri = 0; ri < rs->nr; ri++)
				if (run.applies[i * rs->nr + ri]) {
					run.applies[i * rs->nr + ri] = false;
					run.barriers[ri].expected--;
				}
			synth_state(&run, i, NODE_FAILED, "preflight failed");
		}
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
			runner_run(&ro, pass_nodes, n2, &sum, NULL);
			res->interrupted = res->interrupted || sum.interrupted;
			for (i = 0; i < n2; i++) {
				sessions[run.map[i]] = pass_sessions[i];
				pass_sessions[i] = NULL;
			}
		}
		free(run.role_done);
		free(run.role_skipped);
		tval_free(run.gpu);
		run.gpu = NULL;
		images_plan_release(&run.images);
		run.have_images = false;
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
			if (n2)
				runner_run(&ro, pass_nodes, n2, &sum, NULL);
			for (i = 0; i < n2; i++) {
				sessions[run.map[i]] = pass_sessions[i];
				pass_sessions[i] = NULL;
			}
		}
		if (o->drift)
			plan_drift_checks(&run);
		plan_run_validation(&run, &ro, sessions);
	}
	if (o->bench && !res->interrupted) {
		run.pass2 = true;
		run.validating = true;
		plan_run_bench(&run, &ro, sessions);
	}
	if (!o->sessions)
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

	for (i = 0; run.barriers && rs && i < rs->nr; i++) {
		free(run.barriers[i].skip_why);
		free(run.barriers[i].skip_node);
	}
	free(run.barriers);
	free(run.applies);
	free(run.node_roles);
	free(run.seen_running); /* read by pass_event until the last pass */
	free(run.map);
	exchange_free(run.exchange);
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	if (!o->sessions)
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
	for (i = 0; res->bench && i < res->nr; i++)
		bench_node_release(&res->bench[i]);
	free(res->bench);
	memset(res, 0, sizeof(*res));
}
