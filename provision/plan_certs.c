/*
 * plan_certs: the certificate checks of check and up (certs.h), in a pass
 * of their own after the other validation queries: every selected node
 * that is in the cluster reads its kubelet client certificate's end date
 * with openssl; the control plane also runs `kubeadm certs check-expiration`.
 * Only end dates leave the node: kubelet-client-current.pem holds the
 * kubelet's private key too, and openssl is told to print the date alone.
 */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs.h"

struct certs_query {
	struct strbuf kubeadm, kubelet;
	int kubeadm_rc, kubeadm_status, kubelet_rc, kubelet_status;
};

#define KUBELET_CERT "/var/lib/kubelet/pki/kubelet-client-current.pem"

static int capture(struct runner_job *job, struct node_ctx *nc, const char *what,
		   const char *command, struct strbuf *out, int *status)
{
	struct transport_result res = {0};
	struct error err = {0};
	int rc;

	nc->capture = *out;
	nc->capture.max = CERTS_TEXT_MAX + 1; /* one byte more: the parser says "too long" */
	nc->capturing = nc->swallow = true;
	rc = runner_job_exec(job, PHASE_VALIDATE, what, command, NULL, 0,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	*status = res.exit_status;
	*out = nc->capture;
	nc->capturing = nc->swallow = false;
	return rc;
}

static int certs_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	struct node_ctx nc = {.run = run, .index = run->map[runner_job_index(job)]};
	struct certs_query *q = &run->certs[nc.index];

	nc.node = run->o->nodes[nc.index];
	strbuf_init(&nc.tail, 0);
	runner_job_set_filter(job, plan_step_filter, &nc);
	q->kubelet_rc = capture(job, &nc, "kubelet-client-cert",
				"f=" KUBELET_CERT "; if [ -e \"$f\" ]; then "
				"openssl x509 -noout -enddate -in \"$f\"; else echo absent; fi",
				&q->kubelet, &q->kubelet_status);
	if (q->kubelet_rc >= 0 && nc.node->roles & NODE_ROLE_CONTROL_PLANE)
		q->kubeadm_rc = capture(job, &nc, "certificates", "kubeadm certs check-expiration",
					&q->kubeadm, &q->kubeadm_status);
	runner_job_set_filter(job, NULL, NULL);
	plan_node_ctx_release(&nc);
	return 0;
}

/* The last non-empty line of s (for a failure), at most 200 bytes. */
static char *last_line(const struct strbuf *s)
{
	size_t end = s->len, start;

	while (end && (s->buf[end - 1] == '\n' || s->buf[end - 1] == ' '))
		end--;
	start = end;
	while (start && s->buf[start - 1] != '\n')
		start--;
	if (end - start > 200)
		end = start + 200;
	return end > start ? xstrndup(s->buf + start, end - start) : xstrdup("no output");
}

static void results(struct run *run, size_t i, int64_t now)
{
	const struct plan_opts *o = run->o;
	struct validation *v = &run->res->validation;
	struct certs_query *q = &run->certs[i];
	int warn = o->inv->cluster.cert_warning_days;
	struct error err = {0};
	int64_t t = 0;

	if (q->kubelet_rc < 0) {
		validation_add(v, "kubelet-client-cert", i, CHECK_FAIL, "the node answers",
			       "the session was lost", "run 'provision check' again");
		return;
	}
	if (q->kubelet_status == 0 && !strcmp(q->kubelet.buf, "absent\n"))
		validate_kubelet_cert(v, i, true, 0, NULL, now, warn);
	else if (q->kubelet_status != 0) {
		char *why = last_line(&q->kubelet);
		validate_kubelet_cert(v, i, false, 0, why, now, warn);
		free(why);
	} else if (certs_parse_enddate(&t, q->kubelet.buf, q->kubelet.len, &err) < 0)
		validate_kubelet_cert(v, i, false, 0, err.msg, now, warn);
	else
		validate_kubelet_cert(v, i, false, t, NULL, now, warn);

	if (!(o->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE))
		return;
	if (q->kubeadm_rc < 0) {
		validation_add(v, "certificates", i, CHECK_FAIL, "the control plane answers",
			       "the session was lost", "run 'provision check' again");
	} else if (q->kubeadm_status != 0) {
		char *why = last_line(&q->kubeadm);
		char *obs = xasprintf("kubeadm certs check-expiration failed: %s", why);
		validation_add(v, "certificates", i, CHECK_FAIL,
			       "kubeadm certs check-expiration lists the certificates", obs,
			       "run 'kubeadm certs check-expiration' on the control plane");
		free(obs);
		free(why);
	} else {
		struct cert_list *l = xcalloc(1, sizeof(*l));
		if (certs_parse_kubeadm(l, q->kubeadm.buf, q->kubeadm.len, &err) < 0)
			validation_add(v, "certificates", i, CHECK_FAIL,
				       "kubeadm certs check-expiration lists the certificates",
				       err.msg, "run 'kubeadm certs check-expiration' on the control plane");
		else {
			const struct node *first = inventory_control_plane(o->inv);
			/*
			 * super-admin.conf is kubeadm init's alone: a control plane
			 * that joined with --control-plane has none, and kubeadm
			 * lists it "!MISSING!" there.
			 */
			if (first && strcmp(first->name, o->inv->nodes[i].name)) {
				size_t k, n = 0;
				for (k = 0; k < l->nr; k++)
					if (!(l->items[k].missing &&
					      !strcmp(l->items[k].name, "super-admin.conf")))
						l->items[n++] = l->items[k];
				l->nr = n;
			}
			validate_certs(v, i, l, now, warn);
		}
		free(l);
	}
}

void plan_run_certs(struct run *run, struct runner_opts *ro, struct transport **sessions,
		    size_t cp)
{
	const struct plan_opts *o = run->o;
	const struct node **nodes = xcalloc(o->nr, sizeof(*nodes));
	struct transport **pass = xcalloc(o->nr, sizeof(*pass));
	size_t *map = run->map, *idx = xcalloc(o->nr, sizeof(*idx));
	struct runner_summary sum;
	size_t i, n = 0;
	int64_t now = (int64_t)time(NULL);

	run->certs = xcalloc(o->nr, sizeof(*run->certs));
	for (i = 0; i < o->nr; i++) {
		strbuf_init(&run->certs[i].kubeadm, 0);
		strbuf_init(&run->certs[i].kubelet, 0);
		/* The control plane first: its row is the one the cluster's checks use. */
		if (i == cp || !run->res->nodes[i].have_facts ||
		    !(o->nodes[i]->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER)))
			continue;
		idx[++n] = i;
	}
	idx[0] = cp;
	n++;
	for (i = 0; i < n; i++) {
		nodes[i] = o->nodes[idx[i]];
		pass[i] = sessions[idx[i]];
		sessions[idx[i]] = NULL;
		map[i] = idx[i];
	}
	ro->node_fn = certs_fn;
	ro->sessions = pass;
	runner_run(ro, nodes, n, &sum, NULL);
	for (i = 0; i < n; i++) {
		sessions[idx[i]] = pass[i];
		results(run, idx[i], now);
	}
	for (i = 0; i < o->nr; i++) {
		strbuf_release(&run->certs[i].kubeadm);
		strbuf_release(&run->certs[i].kubelet);
	}
	free(run->certs);
	run->certs = NULL;
	free(nodes);
	free(pass);
	free(idx);
}
