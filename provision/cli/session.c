/* session: see session.h. */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../plan.h"
#include "../role.h"
#include "../runner.h"
#include "../secrets.h"
#include "../state.h"
#include "../tui/tui.h"
#include "../util.h"
#include "../view.h"
#include "cmd.h"
#include "common.h"
#include "print.h"
#include "prompt.h"
#include "run_record.h"

/* The pass under way, for the queries of its `after`: its view and record. */
struct cli_session_pass {
	const struct node *const *nodes;
	size_t nr;
	const struct node_status *status;	 /* the run's, per node */
	const struct event_consumers *consumers; /* its views, estimate and record */
};

static void held_replay(struct cli_session *s, const struct node *const *nodes, size_t nr,
			const struct event_consumers *consumers);

/*
 * add-node: the named nodes take part in every phase; the control plane is
 * added for what joins them (token, labels) and refreshes the hub, and
 * nothing else; no other node is contacted.  A control plane among them
 * (several control planes: one that is not the first): every control
 * plane takes part in every phase, as in `up` (where nothing changes on
 * those already there): the first's roles/join-control-planes hands the
 * new one its token and the certificate key, and roles/api-vip renders
 * keepalived's peers and HAProxy's servers on each from the inventory.
 */
static int select_add_nodes(const struct cli_plan_args *a, const struct inventory *inv,
			    const struct node ***out, size_t *nr, unsigned **node_phases)
{
	const struct node *cp = inventory_control_plane(inv);
	bool *sel = cli_select_named(a->cmd_name, inv, a->add_nodes, a->nr_add_nodes);
	size_t i, n = 0;
	unsigned cp_phases;
	bool adds_cp = false;

	if (!sel)
		return EXIT_USAGE;
	if (cp && sel[cp - inv->nodes] && inventory_nr_control_planes(inv) > 1) {
		fprintf(stderr,
			"provision %s: '%s' is the first control plane: it makes the cluster "
			"(kubeadm init); add-node adds the other control planes, workers and "
			"storage nodes to a running cluster\n  hint: use 'provision up' for "
			"the first control plane\n",
			a->cmd_name, cp->name);
		free(sel);
		return EXIT_USAGE;
	}
	if (cp && sel[cp - inv->nodes]) {
		fprintf(
		    stderr,
		    "provision %s: '%s' is the control plane: add-node adds workers and storage "
		    "nodes to a running cluster\n  hint: use 'provision up' for the control "
		    "plane\n",
		    a->cmd_name, cp->name);
		free(sel);
		return EXIT_USAGE;
	}
	cp_phases = PHASE_BIT(PHASE_JOIN) | PHASE_BIT(PHASE_ADDONS) | PHASE_BIT(PHASE_VALIDATE);
	for (i = 0; i < inv->nr_nodes; i++)
		if (sel[i] && (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE))
			adds_cp = true;
	*out = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(**out));
	*node_phases = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(**node_phases));
	for (i = 0; i < inv->nr_nodes; i++) {
		bool other_cp = adds_cp && (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE);
		if (!sel[i] && &inv->nodes[i] != cp && !other_cp)
			continue;
		(*out)[n] = &inv->nodes[i];
		(*node_phases)[n] = sel[i] || other_cp ? ~0u : cp_phases;
		n++;
	}
	free(sel);
	*nr = n;
	return 0;
}

/*
 * The GitHub OAuth client secret of the hub (jupyterhub.auth.github.
 * client_secret_file, a file on this machine): read once, registered for
 * redaction, handed to the control plane only (roles/jupyterhub
 * 10-secrets).  Returns 0, or EXIT_USAGE when the file cannot be used.
 */
static int hub_secret(const char *cmd, const struct inventory *inv, struct secrets *secrets,
		      char **out)
{
	const char *path = inv->hub.github_client_secret_file;
	struct strbuf sb = STRBUF_INIT;
	int e;

	*out = NULL;
	if (!inv->hub.enabled || inv->hub.auth != HUB_AUTH_GITHUB || !path)
		return 0;
	if ((e = read_file(path, &sb)) < 0) {
		fprintf(stderr,
			"provision %s: cannot read '%s' "
			"(jupyterhub.auth.github.client_secret_file): %s\n"
			"  hint: put the GitHub OAuth app's client secret in that file, readable "
			"by you only\n",
			cmd, path, strerror(-e));
		strbuf_release(&sb);
		return EXIT_USAGE;
	}
	strbuf_rtrim(&sb);
	if (!sb.len || strchr(sb.buf, '\n') || secrets_add(secrets, sb.buf, sb.len) < 0) {
		fprintf(
		    stderr,
		    "provision %s: '%s' (jupyterhub.auth.github.client_secret_file) must hold one "
		    "line, the client secret, of at least %d characters\n",
		    cmd, path, SECRETS_MIN_LEN);
		explicit_bzero(sb.buf, sb.len);
		strbuf_release(&sb);
		return EXIT_USAGE;
	}
	*out = strbuf_detach(&sb, NULL);
	return 0;
}

/* base64 (RFC 4648, with padding) of data. */
static void base64_add(struct strbuf *sb, const unsigned char *d, size_t len)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		strbuf_addch(sb, t[d[i] >> 2]);
		strbuf_addch(sb, t[((d[i] & 3) << 4) | (d[i + 1] >> 4)]);
		strbuf_addch(sb, t[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)]);
		strbuf_addch(sb, t[d[i + 2] & 63]);
	}
	if (len - i == 1) {
		strbuf_addch(sb, t[d[i] >> 2]);
		strbuf_addch(sb, t[(d[i] & 3) << 4]);
		strbuf_addstr(sb, "==");
	} else if (len - i == 2) {
		strbuf_addch(sb, t[d[i] >> 2]);
		strbuf_addch(sb, t[((d[i] & 3) << 4) | (d[i + 1] >> 4)]);
		strbuf_addch(sb, t[(d[i + 1] & 15) << 2]);
		strbuf_addch(sb, '=');
	}
}

/*
 * One credential of cluster.registries: the password from its file (one
 * line), "NAME=Basic base64(USER:PASSWORD)" appended to *list; the
 * password, its base64 form and the header value registered as secrets.
 */
static int registry_cred(const char *cmd, const struct inventory *inv, struct secrets *secrets,
			 const char *user, const char *path, struct source_pos pos, size_t r,
			 size_t m, char ***list, size_t *nr)
{
	struct strbuf pw = STRBUF_INIT, up = STRBUF_INIT, hdr = STRBUF_INIT;
	int e, ret = 0;

	if ((e = read_file(path, &pw)) < 0) {
		fprintf(stderr,
			"%s:%u:%u: error: cannot read '%s' (password_file of registry %s): %s\n"
			"  hint: put the registry password in that file, readable by you only\n",
			inv->path, pos.line, pos.col, path, inv->cluster.registries[r].host,
			strerror(-e));
		(void)cmd;
		ret = EXIT_USAGE;
		goto out;
	}
	strbuf_rtrim(&pw);
	if (!pw.len || strchr(pw.buf, '\n') || pw.len < SECRETS_MIN_LEN) {
		fprintf(
		    stderr,
		    "%s:%u:%u: error: '%s' (password_file of registry %s) must hold one line, the "
		    "password, of at least %d characters\n",
		    inv->path, pos.line, pos.col, path, inv->cluster.registries[r].host,
		    SECRETS_MIN_LEN);
		ret = EXIT_USAGE;
		goto out;
	}
	strbuf_addf(&up, "%s:%s", user, pw.buf);
	strbuf_addstr(&hdr, "Basic ");
	base64_add(&hdr, (const unsigned char *)up.buf, up.len);
	secrets_add(secrets, pw.buf, pw.len);
	secrets_add(secrets, hdr.buf + 6, hdr.len - 6);
	secrets_add(secrets, hdr.buf, hdr.len);
	*list = xrealloc(*list, (*nr + 2) * sizeof(**list));
	(*list)[(*nr)++] = xasprintf("registry_auth_%zu_%zu=%s", r + 1, m, hdr.buf);
	(*list)[*nr] = NULL;
out:
	explicit_bzero(pw.buf, pw.len);
	explicit_bzero(up.buf, up.len);
	explicit_bzero(hdr.buf, hdr.len);
	strbuf_release(&pw);
	strbuf_release(&up);
	strbuf_release(&hdr);
	return ret;
}

/* Every credential of cluster.registries (plan_opts.registry_auth); 0 or EXIT_USAGE. */
static int registry_auth(const char *cmd, const struct inventory *inv, struct secrets *secrets,
			 char ***out)
{
	size_t r, m, nr = 0;
	int ret = 0;

	*out = NULL;
	for (r = 0; r < inv->cluster.nr_registries && !ret; r++) {
		const struct registry *g = &inv->cluster.registries[r];
		if (g->username && g->password_file)
			ret = registry_cred(cmd, inv, secrets, g->username, g->password_file,
					    g->password_file_pos, r, 0, out, &nr);
		for (m = 0; m < g->nr_mirrors && !ret; m++)
			if (g->mirrors[m].username && g->mirrors[m].password_file)
				ret = registry_cred(cmd, inv, secrets, g->mirrors[m].username,
						    g->mirrors[m].password_file,
						    g->mirrors[m].password_file_pos, r, m + 1, out,
						    &nr);
	}
	return ret;
}

static void registry_auth_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		cli_free_secret(v[i]);
	free(v);
}

/*
 * A warning (not an error: the cluster may be on its way out of it) when the
 * inventory's Kubernetes minor is past the end of life its row names; not
 * for the stages of an upgrade, which pass through old minors on purpose.
 */
static void warn_end_of_life(const struct cli_plan_args *a, const struct inventory *inv,
			     const struct kube_matrix *m)
{
	const struct kube_minor *row = kube_matrix_find(m, inv->cluster.kubernetes_version);
	const char *eol = row ? kube_minor_get(row, "end_of_life") : NULL;
	char today[16];
	time_t now = time(NULL);
	struct tm tm;

	if (!eol || !gmtime_r(&now, &tm) || !strftime(today, sizeof(today), "%Y-%m-%d", &tm) ||
	    strcmp(today, eol) <= 0)
		return;
	fprintf(
	    stderr,
	    "%s:%u:%u: warning: Kubernetes %s reached its end of life on %s: it gets no more "
	    "security fixes\n  hint: raise kubernetes_version (%s is the newest provision pins) "
	    "and run 'provision upgrade'\n",
	    a->inventory, inv->cluster.kubernetes_version_pos.line,
	    inv->cluster.kubernetes_version_pos.col, row->minor, eol,
	    m->default_version ? m->default_version : "roles/kubernetes.yaml");
}

int cli_session_pass(struct cli_session *s, const struct cli_plan_args *a)
{
	struct inventory *inv = s->inv;
	const struct node **nodes = NULL;
	struct plan_result res = {0};
	struct error err = {0};
	struct diag_list dl;
	struct view view = {0};
	struct tui *tui = NULL;		 /* the live view (tui/tui.h), on a terminal */
	struct cli_run cr = {0};	 /* the state folder: artifacts, ETA, run record */
	struct transport **conns = NULL; /* the pass's nodes' sessions, in its order */
	char *version = inv->cluster.kubernetes_version; /* the inventory's, back at the end */
	unsigned phases = a->mode == RUN_CHECK || a->mode == RUN_BENCH ? 0
			  : a->phase_bits			       ? a->phase_bits
								       : plan_all_phases();
	unsigned *node_phases = NULL, bench_limit = 0;
	int64_t *eta_hist = NULL;
	bool view_done = false;
	size_t nr = 0, k;
	int ret;

	if (a->mode != RUN_CHECK && a->mode != RUN_BENCH && a->phases &&
	    plan_parse_phases(a->phases, &phases, &err) < 0) {
		fprintf(stderr, "provision %s: %s\n  hint: %s\n", a->cmd_name, err.msg, err.hint);
		return EXIT_USAGE;
	}
	/* upgrade's stage: this version for the pass (the inventory's pointer is put back) */
	if (a->kubernetes_version)
		inv->cluster.kubernetes_version = (char *)a->kubernetes_version;
	if (s->rs.kube.nr && !kube_matrix_find(&s->rs.kube, inv->cluster.kubernetes_version)) {
		char *minors = kube_matrix_minors(&s->rs.kube);
		fprintf(stderr,
			"%s:%u:%u: error: cluster.kubernetes_version %s: its minor is not in %s "
			"(minors: %s)\n  hint: use a Kubernetes version of one of those minors, or "
			"add its row (kubeadm's pause image of that minor) to %s\n"
			"provision %s: nothing was changed\n",
			a->inventory, inv->cluster.kubernetes_version_pos.line,
			inv->cluster.kubernetes_version_pos.col, inv->cluster.kubernetes_version,
			s->rs.kube.path, minors, s->rs.kube.path, a->cmd_name);
		free(minors);
		ret = EXIT_USAGE;
		goto out;
	}
	if (!a->kubernetes_version)
		warn_end_of_life(a, inv, &s->rs.kube);
	/*
	 * The Helm of the cluster's minor (the inventory's major, or the newest
	 * pinned), and the hub's chart release: the inventory's pins must be
	 * ones the roles offer.  Per pass: an upgrade's stages change the minor.
	 */
	diag_list_init(&dl);
	if (role_set_resolve_helm(&s->rs, inv, &dl) < 0 ||
	    (inv->hub.enabled && role_set_resolve_hub_chart(&s->rs, inv, &dl) < 0)) {
		cli_print_diags(&dl);
		diag_list_release(&dl);
		fprintf(stderr, "provision %s: nothing was changed\n", a->cmd_name);
		ret = EXIT_USAGE;
		goto out;
	}
	diag_list_release(&dl);
	if (a->add_nodes) {
		ret = select_add_nodes(a, inv, &nodes, &nr, &node_phases);
		if (ret)
			goto out;
	} else {
		ret = cli_select_nodes(a->cmd_name, inv, a->limit, &nodes, &nr);
		if (ret)
			goto out;
	}
	if (a->select) {
		ret = a->select(a, inv, &nodes, &nr);
		if (ret)
			goto out;
	}
	if (a->node_phases) {
		node_phases = xcalloc(nr ? nr : 1, sizeof(*node_phases));
		for (k = 0; k < nr; k++)
			node_phases[k] = a->node_phases(a, nodes[k]);
	}
	if (a->confirm) {
		struct strbuf q = STRBUF_INIT;
		strbuf_addf(&q, "%s on %zu node%s (", a->confirm, nr, nr == 1 ? "" : "s");
		for (k = 0; k < nr && k < 8; k++)
			strbuf_addf(&q, "%s%s", k ? ", " : "", nodes[k]->name);
		strbuf_addf(&q, "%s)?", nr > 8 ? ", ..." : "");
		ret = cli_confirm(a->cmd_name, a->yes, q.buf);
		strbuf_release(&q);
		if (ret)
			goto out;
	}
	ret = cli_session_secrets(s);
	if (ret)
		goto out;
	if (a->bench_limit && (a->bench || a->mode == RUN_BENCH))
		bench_limit = a->bench_limit(a->bench_limit_milli, s->state_dir, inv);
	if (!s->state) {
		ret = cli_run_lock(s->cmd_name, s->state_dir, inv, &s->state);
		if (ret)
			goto out;
	}
	view_init(&view, nodes, nr, a->output && !strcmp(a->output, "json"), a->verbose);
	view_done = true;
	{
		struct cli_run_begin b = {
		    .cmd_name = a->cmd_name,
		    .inventory_path = a->inventory,
		    .phases_text = a->phases,
		    .state_dir = s->state_dir,
		    .inv = inv,
		    .roles = &s->rs,
		    .nodes = nodes,
		    .nr = nr,
		    .phases = phases,
		    .node_phases = node_phases,
		    .forks = a->forks,
		    .record = a->mode != RUN_PLAN,
		    .text = !view.json && a->mode != RUN_PLAN,
		    .secrets = s->secrets,
		    .state = s->state,
		};
		ret = cli_run_begin(&cr, &b);
		if (ret)
			goto out;
	}
	/* the pass's nodes take their sessions from the session's (and give them back) */
	conns = xcalloc(nr ? nr : 1, sizeof(*conns));
	for (k = 0; k < nr; k++) {
		size_t i = (size_t)(nodes[k] - inv->nodes);
		conns[k] = s->conns[i];
		s->conns[i] = NULL;
	}
	struct plan_opts po = {
	    .inv = inv,
	    .roles = &s->rs,
	    .nodes = nodes,
	    .nr = nr,
	    .phases = phases,
	    .node_phases = node_phases,
	    .check_only = a->mode != RUN_APPLY,
	    .drift = a->mode == RUN_CHECK,
	    .skip_preflight = a->skip_preflight,
	    .env = a->env,
	    .validate = a->mode == RUN_CHECK ||
			(a->mode != RUN_PLAN && (phases & PHASE_BIT(PHASE_VALIDATE))),
	    .bench = a->bench || a->mode == RUN_BENCH,
	    .bench_repeat = a->bench_repeat > 0 ? (unsigned)a->bench_repeat : 0,
	    .bench_limit_milli = bench_limit,
	    .bench_dir = cli_bench_dir(),
	    .forks = a->forks,
	    .sudo_password = s->password,
	    .identity_passphrase = s->passphrase,
	    .per_command_channels = s->channels,
	    .secrets = s->secrets,
	    .state_dir = s->state_dir,
	    .hub_github_secret = s->hub_github_secret,
	    .registry_auth = s->reg_auth,
	    .sessions = conns,
	};
	/* ---- TUI (tui/tui.h): on a terminal, for text output, unless --no-tui ---- */
	if (!a->no_tui && !view.json && isatty(STDOUT_FILENO)) {
		/* Each node's time in earlier runs: the TUI's ETA (eta.c). */
		eta_hist = xcalloc(nr ? nr : 1, sizeof(*eta_hist));
		for (k = 0; k < nr; k++)
			eta_hist[k] = cr.eta ? eta_node_ms(cr.eta, nodes[k]->name) : -1;
		struct tui_config tc = {
		    .kind = TUI_RUN,
		    .command = a->cmd_name,
		    .inv = inv,
		    .roles = &s->rs,
		    .phases = po.phases,
		    .check_only = po.check_only,
		    .validate = po.validate || po.bench,
		    .checks_first = a->mode == RUN_CHECK || a->mode == RUN_BENCH,
		    .nodes = nodes,
		    .nr = nr,
		    .eta_hist_ms = eta_hist,
		};
		/* NULL when the terminal cannot be used: the plain lines then. */
		tui = tui_start(&tc, NULL);
		if (tui) {
			cr.on_eta = tui_node_eta;
			cr.eta_data = tui;
		}
	}
	/* ---- end TUI ---- */
	/* the events' consumers: the live view or the lines (view_tick says what a ^C
	 * does; the TUI has its own), then the estimate and the record */
	if (tui)
		event_consumers_add(&po.consumers, tui_event, tui_tick, tui);
	else
		event_consumers_add(&po.consumers, view_event, view_tick, &view);
	cli_run_wrap(&cr, &po);
	held_replay(s, nodes, nr, &po.consumers);
	plan_execute(&po, &res);
	for (k = 0; k < nr; k++) {
		size_t i = (size_t)(nodes[k] - inv->nodes);
		s->conns[i] = conns[k];
		conns[k] = NULL;
	}
	/* ---- TUI: stays on a failure until q, then gives the terminal back ---- */
	if (tui) {
		tui_run_end(tui, res.interrupted);
		tui_stop(tui);
		/* the queries of `after` are recorded, not printed below it as plain lines */
		po.consumers.c[0].on_event = NULL;
		po.consumers.c[0].on_tick = NULL;
		po.consumers.c[0].data = NULL;
	}
	/* ---- end TUI ---- */
	if (!view.json) {
		if (a->mode == RUN_PLAN)
			cli_print_plan(&res, nodes);
		if (res.validation.nr)
			cli_print_validation(&res.validation, nodes, a->mode != RUN_CHECK);
		if (a->mode != RUN_CHECK && a->mode != RUN_BENCH)
			cli_print_summary(a->cmd_name, a->mode == RUN_PLAN, inv, &res, nodes);
		if (a->mode == RUN_APPLY)
			cli_offer_renew_certs(&res.validation, a->inventory);
	}
	if (a->junit && cli_write_junit(a->junit, inv, &res.validation, nodes) < 0) {
		fprintf(stderr, "provision %s: cannot write '%s': %s\n", a->cmd_name, a->junit,
			strerror(errno));
		ret = EXIT_LOCAL;
	} else if (res.interrupted)
		ret = EXIT_INTERRUPTED;
	else if (res.failed || res.unreachable || res.cancelled ||
		 validation_failures(&res.validation))
		ret = EXIT_NODE_FAILED;
	else
		ret = EXIT_OK;
	if (a->after) {
		struct cli_session_pass p = {
		    .nodes = nodes,
		    .nr = nr,
		    .status = res.status,
		    .consumers = &po.consumers,
		};
		struct cli_plan_done d = {
		    .inv = inv,
		    .nodes = nodes,
		    .nr = nr,
		    .res = &res,
		    .state_dir = s->state_dir,
		    .ret = ret,
		    .record = &cr.extra,
		    .session = s,
		};
		s->pass = &p;
		ret = a->after(a, &d);
		s->pass = NULL;
	}
	ret = cli_run_end(&cr, &res, ret);
	/* ---- TUI: what changed, what failed and the exit status, left on the terminal ---- */
	if (tui) {
		tui_print_summary(tui, ret);
		tui_free(tui);
	}
	/* ---- end TUI ---- */
	plan_result_release(&res);
out:
	inv->cluster.kubernetes_version = version;
	if (view_done)
		view_release(&view);
	cli_run_release(&cr);
	free(conns);
	free(node_phases);
	free(eta_hist);
	free(nodes);
	return ret;
}

int cli_session_open(struct cli_session *s, const struct cli_plan_args *a)
{
	struct diag_list dl;
	struct error err = {0};
	unsigned phases;
	int ret;

	memset(s, 0, sizeof(*s));
	s->cmd_name = a->cmd_name;
	s->inventory_path = a->inventory;
	s->ask_sudo = a->ask_sudo;
	s->channels = a->channels;
	if (a->mode != RUN_CHECK && a->mode != RUN_BENCH && a->phases &&
	    plan_parse_phases(a->phases, &phases, &err) < 0) {
		fprintf(stderr, "provision %s: %s\n  hint: %s\n", a->cmd_name, err.msg, err.hint);
		return EXIT_USAGE;
	}
	ret = cli_load_inventory(a->cmd_name, a->inventory, &s->inv);
	if (ret)
		return ret;
	/* Every role and template is checked before any node is touched. */
	diag_list_init(&dl);
	if (role_set_load(&s->rs, cli_roles_dir(a->roles), &dl) < 0) {
		cli_print_diags(&dl);
		fprintf(stderr, "provision %s: %zu error%s in the roles; nothing was changed\n",
			a->cmd_name, dl.errors, dl.errors == 1 ? "" : "s");
		diag_list_release(&dl);
		return EXIT_USAGE;
	}
	s->have_roles = true;
	cli_print_diags(&dl);
	diag_list_release(&dl);
	s->state_dir = cli_state_dir(a->state, a->inventory);
	s->conns = xcalloc(s->inv->nr_nodes ? s->inv->nr_nodes : 1, sizeof(*s->conns));
	return 0;
}

int cli_session_secrets(struct cli_session *s)
{
	const char *cmd = s->cmd_name;
	int ret;

	if (s->have_secrets)
		return 0;
	s->have_secrets = true;
	s->secrets = secrets_new();
	s->password = cli_sudo_password(s->ask_sudo, s->inv->ssh.sudo_password_file);
	if (s->password && secrets_add(s->secrets, s->password, strlen(s->password)) < 0) {
		fprintf(stderr,
			"provision %s: the sudo password is shorter than %d characters; "
			"provision cannot keep it out of its output\n",
			cmd, SECRETS_MIN_LEN);
		return EXIT_USAGE;
	}
	ret = cli_node_sudo_passwords(cmd, s->inv, s->secrets);
	if (ret)
		return ret;
	s->passphrase = cli_key_passphrase(s->inv);
	if (s->passphrase)
		secrets_add(s->secrets, s->passphrase, strlen(s->passphrase));
	ret = hub_secret(cmd, s->inv, s->secrets, &s->hub_github_secret);
	if (ret)
		return ret;
	return registry_auth(cmd, s->inv, s->secrets, &s->reg_auth);
}

/* The runner's options for the session's nodes: as root, with the session's secrets. */
static void session_runner_opts(const struct cli_session *s, struct runner_opts *ro)
{
	memset(ro, 0, sizeof(*ro));
	ro->ops = &transport_ssh_ops;
	ro->forks = 1;
	ro->use_sudo = true;
	ro->sudo_password = s->password;
	ro->identity_passphrase = s->passphrase;
	ro->passphrase_identity = s->inv->ssh.identity;
	ro->per_command_channels = s->channels;
	ro->secrets = s->secrets;
	ro->handle_signals = true;
}

/*
 * A query's events: to the pass under way (its view and record), as the
 * node's events of that pass; its node's state changes are the query's own
 * business (the node's state in the pass stays what the plan made it).
 */
static void query_event_cb(const struct event *ev, const struct node_status *st, void *data)
{
	struct cli_session *s = ((void **)data)[0];
	const struct node *n = ((void **)data)[1];
	struct cli_session_pass *p = s->pass;
	struct event e;
	size_t k;

	(void)st;
	if (ev->kind == EVENT_NODE_STATE)
		return;
	if (!p) { /* for the next pass (held_replay) */
		struct event *h = event_copy(ev), **tail = &s->held;
		h->node = (size_t)(n - s->inv->nodes);
		while (*tail)
			tail = &(*tail)->next;
		*tail = h;
		return;
	}
	for (k = 0; k < p->nr && p->nodes[k] != n; k++)
		;
	if (k == p->nr)
		return;
	e = *ev;
	e.node = k;
	event_consumers_event(p->consumers, &e, &p->status[k]);
}

/*
 * The queries made since the last pass (cli_session.held), to this pass's
 * consumers as its node's events, before its first step; those of nodes
 * not in the pass are dropped.
 */
static void held_replay(struct cli_session *s, const struct node *const *nodes, size_t nr,
			const struct event_consumers *consumers)
{
	const struct node_status idle = {.exit_status = -1, .phase = PHASE_NONE};
	struct event *ev, *next;
	size_t k;

	for (ev = s->held; ev; ev = next) {
		next = ev->next;
		for (k = 0; k < nr && (size_t)(nodes[k] - s->inv->nodes) != ev->node; k++)
			;
		if (k < nr) {
			ev->node = k;
			event_consumers_event(consumers, ev, &idle);
		}
		event_free(ev);
	}
	s->held = NULL;
}

/* A query's phase: its role's, when it names one of the roles (etcd-backup: backup). */
static enum phase query_phase(const struct cli_session *s, const char *role)
{
	const struct role *r = role && s->have_roles ? role_set_find(&s->rs, role) : NULL;

	return r ? r->phase : PHASE_NONE;
}

static int session_query(struct cli_session *s, const struct node *n, const struct runner_query *rq,
			 int *exit_status, struct error *err)
{
	struct runner_opts ro;
	void *ctx[2] = {s, (void *)n};
	size_t i = (size_t)(n - s->inv->nodes);
	int rc;

	if (i >= s->inv->nr_nodes)
		return error_set(err, -1, "'%s' is not a node of the inventory", n->name);
	if (cli_session_secrets(s))
		return error_set(err, -1, "the secrets could not be read (see above)");
	session_runner_opts(s, &ro);
	event_consumers_add(&ro.consumers, query_event_cb, NULL, ctx);
	rc = runner_query(&ro, n, &s->conns[i], rq, exit_status, err);
	return rc < 0 ? -1 : 0;
}

int cli_session_query(struct cli_session *s, const struct node *n, const struct cli_query *q,
		      int *exit_status, struct error *err)
{
	struct runner_query rq = {
	    .phase = query_phase(s, q->role),
	    .role = q->role,
	    .step = q->step,
	    .command = q->command,
	    .input = q->input,
	    .input_len = q->input_len,
	    .timeout_ms = q->timeout_ms,
	    .on_stdout = q->on_stdout,
	    .ctx = q->ctx,
	};

	return session_query(s, n, &rq, exit_status, err);
}

struct capture {
	struct strbuf *out;
};

static void capture_line(void *ctx, const char *line, size_t len, unsigned flags)
{
	struct capture *c = ctx;

	strbuf_add(c->out, line, len);
	if (!(flags & TRANSPORT_LINE_MORE)) /* a long line's pieces join again */
		strbuf_addch(c->out, '\n');
}

int cli_session_capture(struct cli_session *s, const struct node *n, const char *role,
			const char *step, const char *command, int timeout_ms, size_t max,
			struct strbuf *out, struct error *err)
{
	struct capture c = {out};
	struct cli_query q = {
	    .role = role,
	    .step = step,
	    .command = command,
	    .timeout_ms = timeout_ms,
	    .on_stdout = capture_line,
	    .ctx = &c,
	};
	int status = -1;

	out->max = max;
	if (cli_session_query(s, n, &q, &status, err) < 0)
		return -1;
	if (status)
		return error_set(err, -1, "exit %d", status);
	return 0;
}

int cli_session_put_file(struct cli_session *s, const struct node *n, const char *role,
			 const char *step, const char *path, const void *data, size_t len,
			 unsigned mode, struct error *err)
{
	struct runner_query rq = {
	    .phase = query_phase(s, role),
	    .role = role,
	    .step = step,
	    .put_path = path,
	    .put_mode = mode,
	    .input = data,
	    .input_len = len,
	};

	return session_query(s, n, &rq, NULL, err);
}

int cli_session_get_file(struct cli_session *s, const struct node *n, const char *role,
			 const char *step, const char *path, uint64_t max,
			 int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
			 char sha_hex[65], uint64_t *size, struct error *err)
{
	struct runner_query rq = {
	    .phase = query_phase(s, role),
	    .role = role,
	    .step = step,
	    .timeout_ms = 3600 * 1000,
	    .get_path = path,
	    .get_max = max,
	    .on_data = on_data,
	    .ctx = ctx,
	    .get_sha = sha_hex,
	    .get_size = size,
	};

	return session_query(s, n, &rq, NULL, err);
}

int cli_session_login_check(struct cli_session *s, const struct node *n, const char *role,
			    const char *step, struct error *err)
{
	struct runner_query rq = {
	    .phase = query_phase(s, role),
	    .role = role,
	    .step = step,
	    .command = "true",
	    .timeout_ms = 30000,
	};
	struct runner_opts ro;
	void *ctx[2] = {s, (void *)n};
	int status = -1;

	if (cli_session_secrets(s))
		return error_set(err, -1, "the secrets could not be read (see above)");
	session_runner_opts(s, &ro);
	ro.use_sudo = false;
	event_consumers_add(&ro.consumers, query_event_cb, NULL, ctx);
	if (runner_query(&ro, n, NULL, &rq, &status, err) < 0)
		return -1;
	if (status)
		return error_set(err, -1, "'true' exited with status %d", status);
	return 0;
}

void cli_session_close(struct cli_session *s)
{
	struct event *ev, *next;

	for (ev = s->held; ev; ev = next) { /* no pass came: nothing shows or records them */
		next = ev->next;
		event_free(ev);
	}
	if (s->conns)
		runner_sessions_close(&transport_ssh_ops, s->conns, s->inv ? s->inv->nr_nodes : 0);
	free(s->conns);
	state_free(s->state); /* unlocks */
	if (s->have_roles)
		role_set_release(&s->rs);
	cli_free_secret(s->password);
	cli_free_secret(s->passphrase);
	cli_free_secret(s->hub_github_secret);
	registry_auth_free(s->reg_auth);
	secrets_free(s->secrets);
	free(s->state_dir);
	inventory_free(s->inv);
	memset(s, 0, sizeof(*s));
}

int cli_plan_run(const struct cli_plan_args *a)
{
	struct cli_session s;
	int ret = cli_session_open(&s, a);

	if (!ret)
		ret = cli_session_pass(&s, a);
	cli_session_close(&s);
	return ret;
}
