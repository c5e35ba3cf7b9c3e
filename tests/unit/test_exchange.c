/*
 * Unit tests for exchange.c (who may hand what to whom) and for the
 * `hands`/`fetches` keys of role.yaml that feed it (role.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exchange.h"
#include "inventory.h"
#include "role.h"
#include "secrets.h"

static const char inventory_text[] = "cluster:\n"
				     "  name: unit\n"
				     "  kubernetes_version: \"1.30.4\"\n"
				     "nodes:\n"
				     "  - name: cp\n"
				     "    address: 198.18.0.10\n"
				     "    roles: [control-plane]\n"
				     "  - name: w-[1-2]\n"
				     "    address: 198.18.0.[11-12]\n"
				     "    roles: [worker]\n";

static struct role_hand tokens_hands[] = {
    {(char *)"join_command", true, ROLE_TO_NODE, false, NULL}};
static struct role_hand join_hands[] = {
    {(char *)"node_labels_{self}", false, ROLE_TO_CONTROL_PLANE, true, NULL}};
static struct role_hand hub_hands[] = {{(char *)"hub_node_{n}", false, ROLE_TO_SELF, false, NULL}};
/* roles/kubeadm-join's: provision's own label keys only */
static char *label_keys[] = {(char *)"node-role.kubernetes.io/worker",
			     (char *)"provision.dev/gpu-count", (char *)"provision.dev/gpu-model",
			     NULL};
static struct role_hand kjoin_hands[] = {
    {(char *)"node_labels_{self}", false, ROLE_TO_CONTROL_PLANE, true, label_keys}};
static struct role_fetch init_fetches[] = {
    {(char *)"admin.conf", (char *)"/etc/kubernetes/admin.conf"}};
static char *join_deps[] = {(char *)"tokens", NULL};
static char *labels_after[] = {(char *)"joiner", NULL};

struct fixture {
	struct inventory *inv;
	const struct node *nodes[3];
	struct role roles[6]; /* tokens, joiner, labels, init, hub, kubeadm-join */
	struct secrets *secrets;
	struct exchange *x;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(inventory_load_buffer(&f->inv, "unit.yaml", inventory_text,
					       strlen(inventory_text), &dl),
			 0);
	diag_list_release(&dl);
	for (int i = 0; i < 3; i++)
		f->nodes[i] = &f->inv->nodes[i];
	f->roles[0] = (struct role){.name = (char *)"tokens", .hands = tokens_hands, .nr_hands = 1};
	f->roles[1] = (struct role){.name = (char *)"joiner",
				    .hands = join_hands,
				    .nr_hands = 1,
				    .depends_on = join_deps,
				    .wait_for = join_deps};
	f->roles[2] = (struct role){.name = (char *)"labels", .after = labels_after};
	f->roles[3] =
	    (struct role){.name = (char *)"init", .fetches = init_fetches, .nr_fetches = 1};
	f->roles[4] = (struct role){.name = (char *)"hub", .hands = hub_hands, .nr_hands = 1};
	f->roles[5] =
	    (struct role){.name = (char *)"kubeadm-join", .hands = kjoin_hands, .nr_hands = 1};
	f->secrets = secrets_new();
	f->x = exchange_new(f->inv, f->nodes, 3, f->secrets);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	exchange_free(f->x);
	secrets_free(f->secrets);
	inventory_free(f->inv);
	free(f);
	return 0;
}

static int hand(struct fixture *f, size_t from, int role, bool secret, const char *key,
		const char *value, struct error *err)
{
	memset(err, 0, sizeof(*err));
	return exchange_hand(f->x, from, &f->roles[role], secret, key, strlen(key), value,
			     strlen(value), err);
}

static void collect(const char *name, const char *value, bool secret, void *data)
{
	(void)secret;
	struct strbuf *sb = data;
	strbuf_addf(sb, "%s=%s\n", name, value);
}

/* What node `to` reads while running role `role` (-1: none), as NAME=VALUE lines. */
static char *seen(struct fixture *f, size_t to, int role)
{
	struct strbuf sb = STRBUF_INIT;

	exchange_each(f->x, to, role < 0 ? NULL : &f->roles[role], collect, &sb);
	return strbuf_detach(&sb, NULL);
}

static void expect_seen(struct fixture *f, size_t to, int role, const char *want)
{
	char *got = seen(f, to, role);
	assert_string_equal(got, want);
	free(got);
}

static void test_declared_only(void **state)
{
	struct fixture *f = *state;
	struct error err;

	assert_int_equal(hand(f, 1, 1, false, "join_command@w-2", "kubeadm join evil", &err), -1);
	assert_non_null(strstr(err.msg, "'join_command' is not a value role 'joiner' hands"));
	assert_int_equal(hand(f, 0, 0, false, "join_command@w-2", "kubeadm join ok", &err), -1);
	assert_non_null(strstr(err.msg, "is a secret: hand it with ::secret"));
	assert_int_equal(hand(f, 0, 0, true, "join_command", "kubeadm join ok", &err), -1);
	assert_non_null(strstr(err.msg, "hand it as join_command@NODE"));
	assert_int_equal(hand(f, 0, 0, true, "join_command@nobody", "kubeadm join ok", &err), -1);
	assert_non_null(strstr(err.msg, "no node 'nobody' in the inventory"));
	assert_int_equal(hand(f, 1, 1, true, "node_labels_w_1", "w-1 a=b", &err), -1);
	assert_non_null(strstr(err.msg, "is not declared secret"));
	/* {self} is the sender's own name, and about: self its first word */
	assert_int_equal(hand(f, 1, 1, false, "node_labels_w_2", "w-2 a=b", &err), -1);
	assert_int_equal(hand(f, 1, 1, false, "node_labels_w_1", "cp a=b", &err), -1);
	assert_non_null(strstr(err.msg, "must be about 'w-1'"));
	assert_int_equal(hand(f, 1, 1, false, "node_labels_w_1", "w-10 a=b", &err), -1);
	assert_int_equal(hand(f, 1, 1, false, "node_labels_w_1", "w-1 a=b", &err), 0);
	/* {n}: digits only */
	assert_int_equal(hand(f, 0, 4, false, "hub_node_12", "{}", &err), 0);
	assert_int_equal(hand(f, 0, 4, false, "hub_node_", "{}", &err), -1);
	assert_int_equal(hand(f, 0, 4, false, "hub_node_1x", "{}", &err), -1);
	/* a NUL inside a value (fuzz_exchange found its copy cut short) */
	assert_int_equal(
	    exchange_hand(f->x, 0, &f->roles[4], false, "hub_node_2", 10, "a\0bcdef", 7, &err), -1);
	assert_non_null(strstr(err.msg, "NUL"));
	/* outside a role's step (facts) */
	assert_int_equal(exchange_hand(f->x, 0, NULL, false, "x", 1, "y", 1, &err), -1);
	assert_int_equal(secrets_count(f->secrets), 0);
}

static void test_who_reads(void **state)
{
	struct fixture *f = *state;
	struct error err;

	assert_int_equal(hand(f, 0, 0, true, "join_command@w-2", "kubeadm join for-w-2", &err), 0);
	assert_int_equal(secrets_count(f->secrets), 1);
	/* not before tokens finished on cp, then only w-2, only in roles that read from tokens */
	expect_seen(f, 2, 1, "");
	exchange_role_done(f->x, 0, &f->roles[0], true);
	expect_seen(f, 2, 1, "join_command=kubeadm join for-w-2\n");
	expect_seen(f, 1, 1, "");
	expect_seen(f, 2, 2, "");
	expect_seen(f, 2, -1, "");

	assert_int_equal(hand(f, 1, 1, false, "node_labels_w_1", "w-1 a=b", &err), 0);
	assert_int_equal(hand(f, 2, 1, false, "node_labels_w_2", "w-2 c=d", &err), 0);
	exchange_role_done(f->x, 1, &f->roles[1], true);
	exchange_role_done(f->x, 2, &f->roles[1], false); /* failed: never published */
	expect_seen(f, 0, 2, "node_labels_w_1=w-1 a=b\n");
	expect_seen(f, 1, 2, ""); /* to: control-plane */

	/* own earlier steps: at once, and only on the same node */
	assert_int_equal(hand(f, 0, 4, false, "hub_node_1", "{}", &err), 0);
	expect_seen(f, 0, 4, "hub_node_1={}\n");
	expect_seen(f, 1, 4, "");

	/* what provision gives reaches every role of its node */
	exchange_give(f->x, 0, "hub_github_client_secret", "client-secret-42");
	expect_seen(f, 0, -1, "hub_github_client_secret=client-secret-42\n");
	expect_seen(f, 1, -1, "");
}

/*
 * Issue 31 F1: the labels a worker hands become arguments of the control
 * plane's `kubectl --kubeconfig=admin.conf label` (roles/node-labels).
 * Before, only the first word was checked: NodeRestriction's own labels
 * and kubectl's --profile-output=FILE (FILE truncated as root) passed.
 * Now only KEY=VALUE / KEY- of the declared keys, with label values.
 */
static void test_labels(void **state)
{
	struct fixture *f = *state;
	struct error err;
	size_t i;
	static const char *const good[] = {
	    "w-1",
	    "w-1 node-role.kubernetes.io/worker= provision.dev/gpu-count=0 "
	    "provision.dev/gpu-model-",
	    "w-1 provision.dev/gpu-count=2 provision.dev/gpu-model=NVIDIA-GeForce-RTX-3070",
	    "w-1 provision.dev/gpu-model=a.b_c-D9", NULL};
	static const struct {
		const char *value, *msg;
	} bad[] = {
	    {"w-1 node-role.kubernetes.io/control-plane= node-restriction.kubernetes.io/x=y "
	     "--profile=cpu --profile-output=/etc/kubernetes/pki/ca.key",
	     "'node_labels_w_1': label 'node-role.kubernetes.io/control-plane=' refused: not one "
	     "of "
	     "the label keys it may set (keys: node-role.kubernetes.io/worker, "
	     "provision.dev/gpu-count, provision.dev/gpu-model)"},
	    {"w-1 node-role.kubernetes.io/worker= --profile-output=/etc/kubernetes/pki/ca.key",
	     "label '--profile-output=/etc/kubernetes/pki/ca.key' refused: a word starting with "
	     "'-'"},
	    {"w-1 provision.dev/gpu-count=1 --", "label '--' refused: a word starting with '-'"},
	    {"w-1 -provision.dev/gpu-count=1", "a word starting with '-'"},
	    {"w-1 node-restriction.kubernetes.io/x=y", "not one of the label keys"},
	    {"w-1 node-role.kubernetes.io/control-plane-", "neither KEY=VALUE nor KEY-"},
	    {"w-1 provision.dev/gpu-count", "neither KEY=VALUE nor KEY-"},
	    {"w-1 provision.dev/gpu-model=a;touch${IFS}/x", "not a label value"},
	    {"w-1 provision.dev/gpu-model=-a", "not a label value"},
	    {"w-1 provision.dev/gpu-model=a-", "not a label value"},
	    {"w-1 provision.dev/gpu-model=a\033[2Jb", "not a label value"},
	    {"w-1 provision.dev/gpu-model="
	     "a123456789012345678901234567890123456789012345678901234567890123",
	     "not a label value"},
	    {"w-1  provision.dev/gpu-count=1", "an empty word"},
	    {"w-1 provision.dev/gpu-count=1 ", "an empty word"},
	    {NULL, NULL}};

	(void)state;
	for (i = 0; good[i]; i++)
		if (hand(f, 1, 5, false, "node_labels_w_1", good[i], &err) < 0)
			fail_msg("'%s' refused: %s", good[i], err.msg);
	for (i = 0; bad[i].value; i++) {
		if (hand(f, 1, 5, false, "node_labels_w_1", bad[i].value, &err) == 0)
			fail_msg("'%s' accepted", bad[i].value);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].value, err.msg, bad[i].msg);
		assert_null(strchr(err.msg, '\033'));
	}
	/* what reaches the control plane: the last accepted value, no refused one */
	exchange_role_done(f->x, 1, &f->roles[5], true);
	f->roles[2].after = (char *[]){(char *)"kubeadm-join", NULL};
	expect_seen(f, 0, 2, "node_labels_w_1=w-1 provision.dev/gpu-model=a.b_c-D9\n");
}

static void test_fetch(void **state)
{
	struct fixture *f = *state;
	struct error err = {0};
	const char *path = "/etc/kubernetes/admin.conf";

#define FETCH(from, role, p, name)                                                                 \
	exchange_fetch(f->x, from, role < 0 ? NULL : &f->roles[role], p, strlen(p), name,          \
		       strlen(name), &err)
	assert_int_equal(FETCH(1, 2, path, "admin.conf"), -1);
	assert_non_null(strstr(err.msg, "not a file role 'labels' fetches"));
	assert_int_equal(FETCH(0, 3, "/etc/shadow", "admin.conf"), -1);
	assert_non_null(strstr(err.msg, "comes from '/etc/kubernetes/admin.conf'"));
	assert_int_equal(FETCH(0, -1, path, "admin.conf"), -1);
	assert_int_equal(FETCH(0, 3, path, "admin.conf"), 0);
	assert_int_equal(FETCH(0, 3, path, "admin.conf"), 0);
	assert_int_equal(FETCH(1, 3, path, "admin.conf"), -1); /* a worker running init's role */
	assert_non_null(strstr(err.msg, "fetched from node 'cp' in this run already"));
#undef FETCH
}

static void put(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	free(path);
}

static char *load_diags(const char *dir, struct role_set *rs, int want)
{
	struct diag_list dl;
	struct strbuf all = STRBUF_INIT;
	size_t i;

	diag_list_init(&dl);
	assert_int_equal(role_set_load(rs, dir, &dl), want);
	for (i = 0; i < dl.nr; i++) {
		char *d = diag_format(&dl.items[i]);
		strbuf_addf(&all, "%s\n", d);
		free(d);
	}
	diag_list_release(&dl);
	if (getenv("DBG"))
		fputs(all.buf, stderr);
	return strbuf_detach(&all, NULL);
}

/* role.yaml `hands` and `fetches`: every mistake with its file:line:col. */
static void test_role_yaml(void **state)
{
	char dir[] = "/tmp/test_exchange.XXXXXX";
	struct role_set rs;
	char *all, *path, *cmd;

	assert_non_null(mkdtemp(dir));
	put(dir, "lib.sh", "# helpers\n");
	path = xasprintf("%s/r", dir);
	mkdir(path, 0755);
	free(path);
	put(dir, "r/role.yaml",
	    "description: hands badly\n"
	    "phase: prep\n"
	    "hands:\n"
	    "  - {name: ok, to: self}\n"
	    "  - {name: \"bad-name\", to: self}\n"
	    "  - {name: x, to: everyone}\n"
	    "  - {name: y, to: self, secret: maybe}\n"
	    "  - {name: z, to: self, about: other}\n"
	    "  - {name: ok, to: self}\n"
	    "  - {name: \"a_{self}_{n}\", to: self}\n"
	    "  - {name: w, to: self, from: cp}\n"
	    "  - {name: v}\n"
	    "  - {name: u, to: self, labels: [a/b, \"-x\", \"a//b\"]}\n"
	    "  - {name: t, to: self, labels: []}\n"
	    "fetches:\n"
	    "  - {name: .hidden, path: /etc/x}\n"
	    "  - {name: admin.conf, path: etc/kubernetes/admin.conf}\n"
	    "  - {name: a.conf, path: /a, path: /b}\n"
	    "description: hands twice\n"
	    "phase: init\n");
	/* roles/kubernetes.yaml is read by the same reader */
	put(dir, "kubernetes.yaml",
	    "minors:\n  \"1.30\":\n    patch: \"1.30.1\"\n    patch: \"1.30.2\"\n");
	all = load_diags(dir, &rs, -1);
	assert_non_null(strstr(all, "/r/role.yaml:5:12: error: 'name' must be a ::set name"));
	assert_non_null(strstr(all, "/r/role.yaml:6:19: error: unknown receiver 'everyone'"));
	assert_non_null(strstr(all, "/r/role.yaml:7:33: error: 'secret' must be true or false"));
	assert_non_null(strstr(all, "/r/role.yaml:8:32: error: unknown 'about' 'other'"));
	assert_non_null(strstr(all, "/r/role.yaml:9:5: error: 'ok' is already in 'hands'"));
	assert_non_null(strstr(all, "/r/role.yaml:10:12: error: 'name' must be a ::set name"));
	assert_non_null(strstr(all, "/r/role.yaml:11:25: error: unknown key 'from'"));
	assert_non_null(strstr(all, "/r/role.yaml:12:5: error: a 'hands' entry needs both"));
	assert_non_null(strstr(all, "/r/role.yaml:13:"));
	assert_non_null(strstr(all, "error: '-x' is not a Kubernetes label key"));
	assert_non_null(strstr(all, "error: 'a//b' is not a Kubernetes label key"));
	assert_null(strstr(all, "'a/b' is not"));
	assert_non_null(strstr(all, "/r/role.yaml:14:"));
	assert_non_null(strstr(all, "error: 'labels' must name the label keys"));
	assert_non_null(strstr(all, "/r/role.yaml:16:12: error: 'name' must be a file name"));
	assert_non_null(strstr(all, "/r/role.yaml:17:30: error: 'path' must be an absolute"));
	/* A key given twice: an error at the second, which is not read (it leaked before). */
	assert_non_null(strstr(all, "/r/role.yaml:18:30: error: duplicate key 'path' (first "
				    "at 18:20)\n  hint: remove one of them"));
	assert_non_null(strstr(all, "/r/role.yaml:19:1: error: duplicate key 'description' "
				    "(first at 1:1)"));
	assert_non_null(strstr(all, "/r/role.yaml:20:1: error: duplicate key 'phase' (first "
				    "at 2:1)"));
	assert_non_null(strstr(all, "/kubernetes.yaml:4:5: error: duplicate key 'patch' (first "
				    "at 3:5)"));
	free(all);
	cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

/*
 * role.yaml's values and unknown keys are checked by the schema reader in
 * the inventory's words (schema.h): "'KEY' must be ..., not X", "unknown
 * key 'K' (did you mean 'L'?)" or "... in SECTION" with what it takes.
 */
static void test_role_yaml_words(void **state)
{
	char dir[] = "/tmp/test_exchange.XXXXXX";
	struct role_set rs;
	char *all, *cmd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put(dir, "lib.sh", "# helpers\n");
	cmd = xasprintf("mkdir -p '%s/r/steps' '%s/p/steps'", dir, dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	put(dir, "r/steps/10-x.sh", "check() { :; }\napply() { :; }\n");
	put(dir, "r/role.yaml",
	    "description: [a, b]\n"
	    "phase: prep\n"
	    "dependz_on: [p]\n"
	    "colour: red\n"
	    "after: p\n"
	    "wait_for:\n  - {a: 1}\n  - ''\n"
	    "templates:\n  - {src: x, dest: /y, mdoe: \"0644\"}\n");
	all = load_diags(dir, &rs, -1);
	assert_non_null(strstr(all, "/r/role.yaml:1:14: error: 'description' must be a non-empty "
				    "string, not a list\n"));
	assert_non_null(strstr(all, "/r/role.yaml:3:1: error: unknown key 'dependz_on' (did you "
				    "mean 'depends_on'?)\n"));
	assert_non_null(strstr(all, "/r/role.yaml:4:1: error: unknown key 'colour' in role.yaml\n"
				    "  hint: role.yaml takes description, phase, "));
	assert_non_null(strstr(all, "/r/role.yaml:5:8: error: 'after' must be a list, not 'p'\n"
				    "  hint: write [p] for a list of one\n"));
	assert_non_null(strstr(all, "/r/role.yaml:7:5: error: items of 'wait_for' must be single "
				    "values, not a mapping\n"));
	assert_non_null(strstr(all, "/r/role.yaml:8:5: error: an item of 'wait_for' is empty\n"));
	assert_non_null(strstr(all, "/r/role.yaml:10:24: error: unknown key 'mdoe' (did you mean "
				    "'mode'?)\n"));
	free(all);
	/* No names (`[]` or nothing) is no list: `pulls: []` makes no pull role. */
	put(dir, "r/role.yaml", "description: r\nphase: prep\npulls: []\ndepends_on:\n");
	put(dir, "p/steps/10-x.sh", "check() { :; }\napply() { :; }\n");
	put(dir, "p/role.yaml", "description: p\nphase: prep\npulls: [r]\n");
	all = load_diags(dir, &rs, 0);
	assert_string_equal(all, "");
	assert_null(role_set_find(&rs, "r")->pulls);
	assert_null(role_set_find(&rs, "r")->depends_on);
	assert_string_equal(role_set_find(&rs, "p")->pulls[0], "r");
	role_set_release(&rs);
	free(all);
	cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_declared_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_who_reads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch, setup, teardown),
	    cmocka_unit_test(test_role_yaml),
	    cmocka_unit_test(test_role_yaml_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
