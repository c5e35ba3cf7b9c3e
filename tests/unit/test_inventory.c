/*
 * Unit tests for inventory.c: the API (load, defaults, overrides, find,
 * select, diagnostics).  The exact messages of invalid inventories are
 * covered case by case in tests/inventory/ (tests/t0002-inventory-cases.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "inventory.h"
#include "util.h"

static const char minimal[] = "cluster:\n"
			      "  name: t\n"
			      "  kubernetes_version: \"1.30.4\"\n"
			      "ssh:\n"
			      "  user: admin\n"
			      "jupyterhub:\n"
			      "  enabled: false\n"
			      "nodes:\n"
			      "  - name: cp\n"
			      "    address: 10.0.0.1\n"
			      "    roles: [control-plane, worker]\n";

/* All diagnostics as diag_format() prints them, one per line. */
static char *diags(const struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; i < dl->nr; i++) {
		char *line = diag_format(&dl->items[i]);
		strbuf_addf(&sb, "%s\n", line);
		free(line);
	}
	return strbuf_detach(&sb, NULL);
}

/* Load `yaml` as "t.yaml"; the diagnostics text goes to *text (caller frees). */
static int load(const char *yaml, struct inventory **inv, char **text)
{
	struct diag_list dl;
	int r;

	diag_list_init(&dl);
	r = inventory_load_buffer(inv, "t.yaml", yaml, strlen(yaml), &dl);
	/* The contract: failure exactly when there is an error. */
	assert_int_equal(r<0, dl.errors> 0);
	assert_int_equal(r < 0, *inv == NULL);
	*text = diags(&dl);
	diag_list_release(&dl);
	return r;
}

static void expect_errors(const char *yaml, const char *want)
{
	struct inventory *inv = NULL;
	char *text = NULL;

	assert_int_equal(load(yaml, &inv, &text), -1);
	assert_string_equal(text, want);
	free(text);
}

static void test_minimal_defaults(void **state)
{
	struct inventory *inv = NULL;
	const struct node *cp;
	char *text = NULL;

	assert_int_equal(load(minimal, &inv, &text), 0);
	assert_string_equal(text, "");
	assert_int_equal(inv->version, 1);
	assert_string_equal(inv->path, "t.yaml");
	assert_string_equal(inv->cluster.name, "t");
	assert_string_equal(inv->cluster.kubernetes_version, "1.30.4");
	assert_string_equal(inv->cluster.pod_cidr, "10.244.0.0/16");
	assert_string_equal(inv->cluster.service_cidr, "10.96.0.0/12");
	assert_int_equal(inv->cluster.api_port, 6443);
	assert_null(inv->cluster.apt_mirror);
	assert_null(inv->cluster.http_proxy);
	assert_null(inv->cluster.no_proxy[0]);
	assert_int_equal(inv->nr_nodes, 1);
	cp = inventory_control_plane(inv);
	assert_non_null(cp);
	assert_string_equal(cp->name, "cp");
	assert_string_equal(cp->address, "10.0.0.1");
	assert_int_equal(cp->roles, NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER);
	assert_int_equal(cp->gpus, -1);
	assert_int_equal(cp->ssh.port, 22);
	assert_string_equal(cp->ssh.user, "admin");
	assert_int_equal(cp->ssh.host_keys, HOST_KEYS_STRICT);
	assert_int_equal(cp->ssh.sudo, SUDO_AUTO);
	assert_int_equal(cp->ssh.connect_timeout, 10);
	assert_int_equal(cp->ssh.command_timeout, 600);
	assert_int_equal(cp->ssh.keepalive, 15);
	assert_null(cp->ssh.identity);
	assert_null(cp->ssh.jump);
	assert_null(cp->labels[0]);
	assert_int_equal(cp->pos.line, 9);
	assert_int_equal(cp->pos.col, 5);
	assert_int_equal(cp->address_pos.line, 10);
	assert_int_equal(cp->address_pos.col, 14);
	assert_null(inv->nfs.server);
	assert_false(inv->hub.enabled);
	assert_int_equal(inv->hub.node_port, 30080);
	assert_string_equal(inv->hub.storage, "10Gi");
	assert_string_equal(inv->hub.shm_size, "1Gi");
	assert_int_equal(inv->hub.start_timeout, 900);
	assert_int_equal(inv->hub.auth, HUB_AUTH_NATIVE);
	assert_null(inv->hub.chart_version);
	inventory_free(inv);
	inventory_free(NULL);
	free(text);
}

static void test_lab_b_file(void **state)
{
	static const char *const names[] = {"b-0", "b-1", "b-2", "b-3", "b-4"};
	const char *dir = getenv("PROVISION_TEST_SRC");
	struct inventory *inv = NULL;
	struct diag_list dl;
	char *path = xasprintf("%s/inventory/lab-b.yaml", dir ? dir : ".");
	size_t i;

	diag_list_init(&dl);
	assert_int_equal(inventory_load(&inv, path, &dl), 0);
	assert_int_equal(dl.nr, 0);
	assert_int_equal(inv->nr_nodes, 5);
	for (i = 0; i < 5; i++)
		assert_string_equal(inv->nodes[i].name, names[i]);
	assert_int_equal(inv->nodes[0].roles, NODE_ROLE_CONTROL_PLANE);
	assert_int_equal(inv->nodes[1].roles, NODE_ROLE_NFS_SERVER);
	for (i = 2; i < 5; i++) {
		assert_int_equal(inv->nodes[i].roles, NODE_ROLE_WORKER);
		assert_int_equal(inv->nodes[i].gpus, 1);
		/* One entry for the range: they share its position. */
		assert_int_equal(inv->nodes[i].pos.line, inv->nodes[2].pos.line);
	}
	assert_string_equal(inv->nodes[4].address, "192.168.10.54");
	assert_string_equal(inv->nfs.server, "b-1");
	assert_string_equal(inv->nfs.export_network, "192.168.10.0/24");
	assert_string_equal(inventory_control_plane(inv)->name, "b-0");
	inventory_free(inv);
	diag_list_release(&dl);
	free(path);
}

static void test_ssh_overrides(void **state)
{
	static const char yaml[] =
	    "cluster: {name: t, kubernetes_version: 1.30.4}\n"
	    "jupyterhub: {enabled: false}\n"
	    "ssh:\n"
	    "  user: admin\n"
	    "  port: 2200\n"
	    "  sudo: always\n"
	    "  identity: keys/id_ed25519\n"
	    "  known_hosts: /etc/provision/known_hosts\n"
	    "nodes:\n"
	    "  - name: cp\n"
	    "    address: 10.0.0.1\n"
	    "    roles: [control-plane, worker]\n"
	    "  - name: w[1-2]\n"
	    "    address: 10.0.0.[11-12]\n"
	    "    roles: [worker]\n"
	    "    gpus: 0\n"
	    "    ssh: {port: 22, user: root, host_keys: accept-new, sudo: never,\n"
	    "          jump: gw@10.0.0.254:2222, connect_timeout: 3,\n"
	    "          command_timeout: 0, keepalive: 0}\n"
	    "    labels: {rack: \"3\", example.com/gpu: rtx3070, empty: ''}\n";
	struct diag_list dl;
	struct inventory *inv = NULL;
	const struct node *w2, *cp;

	diag_list_init(&dl);
	assert_int_equal(inventory_load_buffer(&inv, "lab/t.yaml", yaml, strlen(yaml), &dl), 0);
	assert_int_equal(dl.nr, 0);
	cp = inventory_find(inv, "cp");
	w2 = inventory_find(inv, "w2");
	assert_non_null(cp);
	assert_non_null(w2);
	assert_null(inventory_find(inv, "w3"));
	assert_int_equal(cp->ssh.port, 2200);
	assert_string_equal(cp->ssh.user, "admin");
	assert_int_equal(cp->ssh.sudo, SUDO_ALWAYS);
	/* Relative paths are taken from the inventory's directory. */
	assert_string_equal(cp->ssh.identity, "lab/keys/id_ed25519");
	assert_string_equal(cp->ssh.known_hosts, "/etc/provision/known_hosts");
	assert_int_equal(w2->ssh.port, 22);
	assert_string_equal(w2->ssh.user, "root");
	assert_int_equal(w2->ssh.host_keys, HOST_KEYS_ACCEPT_NEW);
	assert_int_equal(w2->ssh.sudo, SUDO_NEVER);
	assert_string_equal(w2->ssh.jump, "gw@10.0.0.254:2222");
	assert_string_equal(w2->ssh.identity, "lab/keys/id_ed25519");
	assert_int_equal(w2->ssh.connect_timeout, 3);
	assert_int_equal(w2->ssh.command_timeout, 0);
	assert_int_equal(w2->ssh.keepalive, 0);
	assert_int_equal(w2->gpus, 0);
	assert_string_equal(w2->labels[0], "rack=3");
	assert_string_equal(w2->labels[1], "example.com/gpu=rtx3070");
	assert_string_equal(w2->labels[2], "empty=");
	assert_null(w2->labels[3]);
	/* The defaults themselves are untouched by a node's override. */
	assert_int_equal(inv->ssh.port, 2200);
	assert_string_equal(inv->ssh.user, "admin");
	inventory_free(inv);
	diag_list_release(&dl);
}

static void test_home_expansion(void **state)
{
	static const char yaml[] =
	    "cluster: {name: t, kubernetes_version: 1.30.4}\n"
	    "jupyterhub: {enabled: false}\n"
	    "ssh: {user: a, identity: ~/.ssh/lab, sudo_password_file: /root/pw}\n"
	    "nodes: [{name: cp, address: cp.lab, roles: [control-plane, worker]}]\n";
	struct inventory *inv = NULL;
	char *text = NULL;

	setenv("HOME", "/home/tester", 1);
	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(inv->ssh.identity, "/home/tester/.ssh/lab");
	assert_string_equal(inv->nodes[0].ssh.identity, "/home/tester/.ssh/lab");
	assert_string_equal(inv->nodes[0].ssh.sudo_password_file, "/root/pw");
	assert_string_equal(inv->nodes[0].address, "cp.lab");
	inventory_free(inv);
	free(text);
}

static void test_storage_and_hub(void **state)
{
	static const char yaml[] =
	    "cluster: {name: t, kubernetes_version: 1.30.4}\n"
	    "ssh: {user: a}\n"
	    "storage: {nfs: {path: /srv/nfs}}\n"
	    "jupyterhub:\n"
	    "  chart_version: 3.3.8\n"
	    "  node_port: 32000\n"
	    "  image: quay.io/jupyter/pytorch-notebook:cuda12-python-3.11\n"
	    "  storage: 5Gi\n"
	    "  admin_users: [sensei]\n"
	    "  allowed_users: [a, b]\n"
	    "  start_timeout: 1200\n"
	    "  shm_size: 512Mi\n"
	    "  auth:\n"
	    "    type: github\n"
	    "    github: {client_id: abc, client_secret_file: /etc/provision/gh,\n"
	    "             callback_url: 'https://hub.example.ac.jp/hub/oauth_callback'}\n"
	    "nodes:\n"
	    "  - {name: s-0, address: 192.168.30.5, roles: [control-plane, nfs-server]}\n"
	    "  - {name: s-1, address: 192.168.31.200, roles: [worker], gpus: 4}\n";
	struct inventory *inv = NULL;
	char *text = NULL;

	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(text, "");
	assert_string_equal(inv->nfs.server, "s-0");
	assert_string_equal(inv->nfs.path, "/srv/nfs");
	assert_string_equal(inv->nfs.options, "rw,sync,no_root_squash,no_subtree_check");
	/* Worked out from the addresses: the smallest network holding both. */
	assert_string_equal(inv->nfs.export_network, "192.168.30.0/23");
	assert_true(inv->hub.enabled);
	assert_string_equal(inv->hub.chart_version, "3.3.8");
	assert_int_equal(inv->hub.node_port, 32000);
	assert_string_equal(inv->hub.storage, "5Gi");
	assert_string_equal(inv->hub.admin_users[0], "sensei");
	assert_null(inv->hub.admin_users[1]);
	assert_string_equal(inv->hub.allowed_users[1], "b");
	assert_int_equal(inv->hub.start_timeout, 1200);
	assert_string_equal(inv->hub.shm_size, "512Mi");
	assert_int_equal(inv->hub.auth, HUB_AUTH_GITHUB);
	assert_string_equal(inv->hub.github_client_id, "abc");
	assert_string_equal(inv->hub.github_client_secret_file, "/etc/provision/gh");
	assert_string_equal(inv->hub.github_callback_url,
			    "https://hub.example.ac.jp/hub/oauth_callback");
	inventory_free(inv);
	free(text);
}

static void test_warnings_do_not_fail(void **state)
{
	static const char yaml[] =
	    "cluster: {name: t, kubernetes_version: 1.30.4}\n"
	    "ssh: {user: a}\n"
	    "nodes:\n"
	    "  - {name: cp, address: 10.0.0.1, roles: [control-plane, control-plane], gpus: 1}\n";
	struct inventory *inv = NULL;
	char *text = NULL;

	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(
	    text,
	    "t.yaml: warning: jupyterhub needs storage but no node has the nfs-server role\n"
	    "  hint: give one node the nfs-server role, or set jupyterhub.enabled: false\n"
	    "t.yaml: warning: jupyterhub has no admin_users: nobody can approve sign-ups\n"
	    "  hint: list at least one user in jupyterhub.admin_users\n"
	    "t.yaml:3:1: warning: no node has the worker role: nothing can run notebooks\n"
	    "  hint: add worker to the roles of the compute nodes (the control plane may be a "
	    "worker too)\n"
	    "t.yaml:4:58: warning: role 'control-plane' is listed twice\n"
	    "t.yaml:4:80: warning: node 'cp' declares 1 GPU but is not a worker\n"
	    "  hint: add worker to its roles to offer its GPUs\n");
	inventory_free(inv);
	free(text);
}

static void test_every_error_in_order(void **state)
{
	expect_errors("cluster:\n"
		      "  name: t\n"
		      "  kubernetes_version: 1.30.4\n"
		      "  pod_cidr: 10.96.0.0/16\n"
		      "jupyterhub: {enabled: false}\n"
		      "nodes:\n"
		      "  - name: b-[1-2]\n"
		      "    adress: 10.0.0.[1-2]\n"
		      "    roles: [control-plane]\n"
		      "  - name: b-2\n"
		      "    address: 10.0.0.9\n"
		      "    roles: [worker]\n"
		      "    gpus: many\n",
		      "t.yaml:4:13: error: 'pod_cidr' 10.96.0.0/16 overlaps 'service_cidr' "
		      "10.96.0.0/12 (the default)\n"
		      "  hint: the pod and service networks must not share addresses\n"
		      "t.yaml:8:5: error: unknown key 'adress' (did you mean 'address'?)\n"
		      "t.yaml:10:11: error: duplicate node name 'b-2' (first at 7:11)\n"
		      "  hint: node names must be unique\n"
		      "t.yaml:13:11: error: 'gpus' must be a non-negative integer, not 'many'\n");
}

static void test_syntax_error_stops(void **state)
{
	expect_errors("cluster:\n  name: t\n   bad: [1, 2\nnodes: 3\n",
		      "t.yaml:3:7: error: invalid YAML: mapping values are not allowed in this "
		      "context\n");
	expect_errors("cluster:\n\tname: t\n",
		      "t.yaml:2:1: error: invalid YAML: found character that cannot start any "
		      "token (while scanning for the next token at 2:1)\n"
		      "  hint: indent with spaces: YAML does not allow tabs\n");
}

static void test_file_level_errors(void **state)
{
	struct inventory *inv = (struct inventory *)1;
	struct diag_list dl;
	char *text;

	expect_errors("", "t.yaml: error: the inventory is empty\n"
			  "  hint: start from inventory/seed.yaml\n");
	expect_errors("# nothing but a comment\n---\n", "t.yaml: error: the inventory is empty\n"
							"  hint: start from inventory/seed.yaml\n");
	/* the list's own position, like every other inventory error */
	expect_errors(
	    "# a list\n- a\n- b\n",
	    "t.yaml:2:1: error: the inventory must be a mapping with 'cluster' and 'nodes', "
	    "not a list\n"
	    "  hint: start from inventory/seed.yaml\n");

	diag_list_init(&dl);
	assert_int_equal(inventory_load(&inv, "/nonexistent/lab.yaml", &dl), -1);
	assert_null(inv);
	assert_int_equal(dl.errors, 1);
	text = diags(&dl);
	assert_string_equal(text, "/nonexistent/lab.yaml: error: inventory file not found\n");
	free(text);
	diag_list_release(&dl);

	diag_list_init(&dl);
	assert_int_equal(inventory_load(&inv, "/", &dl), -1);
	text = diags(&dl);
	assert_string_equal(text, "/: error: inventory is a directory, not a file\n");
	free(text);
	diag_list_release(&dl);
}

static void test_diag_format(void **state)
{
	struct diag_list dl;
	char *s;

	diag_list_init(&dl);
	diag_add(&dl, DIAG_ERROR, "f.yaml", 3, 7, "do this", "bad '%s'", "x");
	diag_add(&dl, DIAG_WARNING, "f.yaml", 0, 0, NULL, "odd");
	diag_add(&dl, DIAG_ERROR, NULL, 0, 0, "", "plain");
	assert_int_equal(dl.nr, 3);
	assert_int_equal(dl.errors, 2);
	s = diag_format(&dl.items[0]);
	assert_string_equal(s, "f.yaml:3:7: error: bad 'x'\n  hint: do this");
	free(s);
	s = diag_format(&dl.items[1]);
	assert_string_equal(s, "f.yaml: warning: odd");
	free(s);
	s = diag_format(&dl.items[2]);
	assert_string_equal(s, "error: plain");
	free(s);
	diag_list_release(&dl);
	assert_int_equal(dl.nr, 0);
}

static void test_roles(void **state)
{
	assert_string_equal(node_role_name(NODE_ROLE_CONTROL_PLANE), "control-plane");
	assert_string_equal(node_role_name(NODE_ROLE_WORKER), "worker");
	assert_string_equal(node_role_name(NODE_ROLE_NFS_SERVER), "nfs-server");
	assert_null(node_role_name((enum node_role)0));
	assert_int_equal(node_role_parse("worker"), NODE_ROLE_WORKER);
	assert_int_equal(node_role_parse("nfs-server"), NODE_ROLE_NFS_SERVER);
	assert_int_equal(node_role_parse("master"), 0);
}

static struct inventory *lab(void)
{
	static const char yaml[] =
	    "cluster: {name: t, kubernetes_version: 1.30.4}\n"
	    "ssh: {user: a}\n"
	    "jupyterhub: {admin_users: [a]}\n"
	    "nodes:\n"
	    "  - {name: b-0, address: 10.0.0.1, roles: [control-plane]}\n"
	    "  - {name: b-1, address: 10.0.0.2, roles: [nfs-server]}\n"
	    "  - {name: 'b-[2-4]', address: '10.0.0.[3-5]', roles: [worker]}\n";
	struct inventory *inv = NULL;
	char *text = NULL;

	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(text, "");
	free(text);
	return inv;
}

static void expect_select(const struct inventory *inv, const char *limit, const char *want)
{
	struct strbuf got = STRBUF_INIT;
	struct error err = {0};
	bool sel[8];
	size_t i;
	int n, words;

	n = inventory_select(inv, limit, sel, &err);
	if (n < 0)
		fail_msg("selecting '%s' failed: %s", limit, err.msg);
	for (i = 0; i < inv->nr_nodes; i++)
		if (sel[i])
			strbuf_addf(&got, "%s%s", got.len ? " " : "", inv->nodes[i].name);
	assert_string_equal(got.buf, want);
	/* The count returned is the number of nodes chosen. */
	for (i = 0, words = 1; want[i]; i++)
		words += want[i] == ' ';
	assert_int_equal(n, words);
	strbuf_release(&got);
}

static void expect_select_error(const struct inventory *inv, const char *limit, const char *msg,
				const char *hint)
{
	struct error err = {0};
	bool sel[8];
	size_t i;

	assert_int_equal(inventory_select(inv, limit, sel, &err), -1);
	assert_string_equal(err.msg, msg);
	assert_string_equal(err.hint, hint);
	for (i = 0; i < inv->nr_nodes; i++)
		assert_false(sel[i]);
}

static void test_select(void **state)
{
	struct inventory *inv = lab();
	struct error err = {0};
	bool sel[8];

	expect_select(inv, "b-0", "b-0");
	expect_select(inv, "b-[2-3],b-0", "b-0 b-2 b-3");
	expect_select(inv, "@worker", "b-2 b-3 b-4");
	expect_select(inv, " @nfs-server , b-4", "b-1 b-4");
	expect_select(inv, "b-[0-4]", "b-0 b-1 b-2 b-3 b-4");
	expect_select(inv, "b-2,b-2", "b-2");
	assert_int_equal(inventory_select(inv, "@worker,b-0", sel, &err), 4);
	expect_select_error(inv, "gpu-9", "no node named 'gpu-9' in the inventory", "");
	expect_select_error(inv, "b2", "no node named 'b2' in the inventory",
			    "did you mean 'b-2'?");
	expect_select_error(inv, "b-[3-6]", "no node named 'b-5' in the inventory", "");
	expect_select_error(inv, "@workers", "unknown role '@workers' in the limit",
			    "did you mean '@worker'?");
	expect_select_error(inv, "@gpu", "unknown role '@gpu' in the limit",
			    "roles are @control-plane, @worker and @nfs-server");
	expect_select_error(inv, "b-0,,b-1", "empty item in the limit 'b-0,,b-1'",
			    "separate names, ranges and @roles with single commas");
	expect_select_error(inv, "", "empty item in the limit ''",
			    "separate names, ranges and @roles with single commas");
	expect_select_error(
	    inv, "b-[2-", "missing ']' in 'b-[2-'",
	    "a range is [N-M] or a list like [2-4,7] of decimal numbers, e.g. b-[2-4]");
	inventory_free(inv);
}

static void test_select_role_without_nodes(void **state)
{
	struct inventory *inv = NULL;
	struct error err = {0};
	char *text = NULL;
	bool sel[2];

	assert_int_equal(load(minimal, &inv, &text), 0);
	assert_int_equal(inventory_select(inv, "@nfs-server", sel, &err), -1);
	assert_string_equal(err.msg, "no node has the role 'nfs-server'");
	inventory_free(inv);
	free(text);
}

/*
 * Robustness: every prefix of a valid inventory and every one-byte change
 * of it either loads or reports at least one error, with positions inside
 * the text; never a crash or a leak (run under ASan).
 */
static void test_mutations(void **state)
{
	static const char seed[] = "version: 1\n"
				   "cluster: {name: t, kubernetes_version: 1.30.4}\n"
				   "ssh: {user: a, port: 22}\n"
				   "storage: {nfs: {server: b-1, export_network: 10.0.0.0/24}}\n"
				   "jupyterhub: {admin_users: [a], auth: {type: native}}\n"
				   "nodes:\n"
				   "  - {name: b-0, address: 10.0.0.1, roles: [control-plane]}\n"
				   "  - {name: b-1, address: 10.0.0.2, roles: [nfs-server]}\n"
				   "  - name: b-[2-4]\n"
				   "    address: 10.0.0.[3-5]\n"
				   "    roles: [worker]\n"
				   "    labels: {a: b}\n";
	static const char repl[] = "x-[]:{} ,'\"\n\t0#&*!|>%@";
	size_t len = strlen(seed), i, j, lines = 13;
	char *buf = xmalloc(len + 1);

	for (i = 0; i <= len; i++) {
		for (j = 0; j <= strlen(repl); j++) {
			struct inventory *inv = NULL;
			struct diag_list dl;
			size_t n = j == strlen(repl) ? i : len, k;
			int r;

			memcpy(buf, seed, len + 1);
			if (j < strlen(repl)) {
				if (i == len)
					continue;
				buf[i] = repl[j];
			}
			diag_list_init(&dl);
			r = inventory_load_buffer(&inv, "m.yaml", buf, n, &dl);
			assert_int_equal(r<0, dl.errors> 0);
			for (k = 0; k < dl.nr; k++) {
				assert_true(dl.items[k].line <= lines + 1);
				assert_non_null(dl.items[k].msg);
			}
			inventory_free(inv);
			diag_list_release(&dl);
		}
	}
	free(buf);
}

/* cluster.api_endpoint: the API's one address; none: the control plane's own. */
static void test_api_endpoint(void **state)
{
	static const char ha[] = "cluster:\n"
				 "  name: t\n"
				 "  kubernetes_version: \"1.30.4\"\n"
				 "  api_endpoint:\n"
				 "    %s\n"
				 "jupyterhub:\n"
				 "  enabled: false\n"
				 "nodes:\n"
				 "  - name: cp-[1-3]\n"
				 "    address: 10.0.0.[11-13]\n"
				 "    roles: [control-plane, worker]\n";
	struct inventory *inv = NULL;
	char *text = NULL, *yaml;

	(void)state;
	assert_int_equal(load(minimal, &inv, &text), 0);
	assert_int_equal(inv->cluster.api_endpoint.kind, API_ENDPOINT_NONE);
	assert_int_equal(inventory_nr_control_planes(inv), 1);
	assert_string_equal(inventory_api_host(inv), "10.0.0.1");
	assert_int_equal(inventory_api_port(inv), 6443);
	inventory_free(inv);
	free(text);

	yaml = xasprintf(ha, "vip: 10.0.0.50");
	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(text, "");
	assert_int_equal(inv->cluster.api_endpoint.kind, API_ENDPOINT_VIP);
	assert_int_equal(inventory_nr_control_planes(inv), 3);
	assert_string_equal(inventory_api_host(inv), "10.0.0.50");
	assert_int_equal(inventory_api_port(inv), INVENTORY_VIP_PORT);
	assert_int_equal(inv->cluster.api_endpoint.virtual_router_id, 51);
	assert_int_equal(inv->cluster.api_port, 6443);
	inventory_free(inv);
	free(text);
	free(yaml);

	yaml = xasprintf(ha, "address: \"[fd00::5]:7443\"");
	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_int_equal(inv->cluster.api_endpoint.kind, API_ENDPOINT_ADDRESS);
	assert_string_equal(inventory_api_host(inv), "fd00::5");
	assert_int_equal(inventory_api_port(inv), 7443);
	inventory_free(inv);
	free(text);
	free(yaml);

	yaml = xasprintf(ha, "address: lb.example.org");
	assert_int_equal(load(yaml, &inv, &text), 0);
	assert_string_equal(inventory_api_host(inv), "lb.example.org");
	assert_int_equal(inventory_api_port(inv), 6443); /* api_port */
	inventory_free(inv);
	free(text);
	free(yaml);

	/* Refused: loopback, multicast, 0.0.0.0 and a broken IPv6 bracket. */
	yaml = xasprintf(ha, "vip: 127.0.0.5");
	assert_int_equal(load(yaml, &inv, &text), -1);
	assert_non_null(
	    strstr(text, "t.yaml:5:10: error: 'vip' must be an IPv4 address a host can hold"));
	free(text);
	free(yaml);
	yaml = xasprintf(ha, "vip: 224.0.0.18");
	assert_int_equal(load(yaml, &inv, &text), -1);
	free(text);
	free(yaml);
	yaml = xasprintf(ha, "vip: 0.0.0.0");
	assert_int_equal(load(yaml, &inv, &text), -1);
	free(text);
	free(yaml);
	yaml = xasprintf(ha, "address: \"[fd00::5\"");
	assert_int_equal(load(yaml, &inv, &text), -1);
	assert_non_null(strstr(text, "'address' must be HOST or HOST:PORT"));
	free(text);
	free(yaml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_minimal_defaults),
	    cmocka_unit_test(test_lab_b_file),
	    cmocka_unit_test(test_ssh_overrides),
	    cmocka_unit_test(test_home_expansion),
	    cmocka_unit_test(test_storage_and_hub),
	    cmocka_unit_test(test_warnings_do_not_fail),
	    cmocka_unit_test(test_every_error_in_order),
	    cmocka_unit_test(test_syntax_error_stops),
	    cmocka_unit_test(test_file_level_errors),
	    cmocka_unit_test(test_diag_format),
	    cmocka_unit_test(test_roles),
	    cmocka_unit_test(test_select),
	    cmocka_unit_test(test_select_role_without_nodes),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_api_endpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
