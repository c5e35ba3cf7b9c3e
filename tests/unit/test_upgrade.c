/*
 * Unit tests for upgrade_versions_parse() (cli/cmd_upgrade.c): what
 * `provision upgrade` reads from the control plane -- the API server's
 * /version, then `kubectl get nodes -o json` -- when a worker controls its
 * own Node object (issue 31 F2).  Before, the nodes were read as
 * "NAME VERSION" text lines, the first line naming a node won, and a
 * kubeletVersion with a line break in it spoke for another node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cli/upgrade.h"
#include "inventory.h"
#include "util.h"

static const char inventory_text[] = "cluster:\n"
				     "  name: unit\n"
				     "  kubernetes_version: \"1.31.2\"\n"
				     "nodes:\n"
				     "  - name: b-0\n"
				     "    address: 198.18.0.10\n"
				     "    roles: [control-plane]\n"
				     "  - name: b-[1-2]\n"
				     "    address: 198.18.0.[11-12]\n"
				     "    roles: [worker]\n";

static const char version_json[] =
    "{\n  \"major\": \"1\",\n  \"minor\": \"31\",\n"
    "  \"gitVersion\": \"v1.31.2\",\n  \"platform\": \"linux/amd64\"\n}\n";

/* A NodeList as kubectl prints it, one item per (name, kubeletVersion) pair. */
static char *node_list(const char *const *pairs)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	strbuf_addstr(&sb, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n");
	for (i = 0; pairs[i]; i += 2)
		strbuf_addf(&sb,
			    "%s        {\"kind\": \"Node\", \"metadata\": {\"name\": \"%s\"}, "
			    "\"status\": {\"nodeInfo\": {\"kubeletVersion\": \"%s\"}}}\n",
			    i ? "," : "", pairs[i], pairs[i + 1]);
	strbuf_addstr(&sb,
		      "    ],\n    \"kind\": \"List\",\n    \"metadata\": {\"resourceVersion\": "
		      "\"\"}\n}\n");
	return strbuf_detach(&sb, NULL);
}

static struct inventory *load(void)
{
	struct inventory *inv = NULL;
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(
	    inventory_load_buffer(&inv, "unit.yaml", inventory_text, strlen(inventory_text), &dl),
	    0);
	diag_list_release(&dl);
	return inv;
}

/* Parse /version + the list of pairs; returns the result, err filled. */
static int parse(const struct inventory *inv, const char *const *pairs, struct upgrade_versions *v,
		 struct error *err)
{
	struct strbuf text = STRBUF_INIT;
	char *list = node_list(pairs);
	int rc;

	strbuf_addstr(&text, version_json);
	strbuf_addstr(&text, list);
	rc = upgrade_versions_parse(inv, text.buf, text.len, v, err);
	free(list);
	strbuf_release(&text);
	return rc;
}

static void test_honest(void **state)
{
	const char *pairs[] = {"b-0",	  "v1.31.2", "b-1",	"v1.30.4", "other",
			       "v1.29.0", "b-2",     "v1.31.2", NULL};
	struct inventory *inv = load();
	struct upgrade_versions v;
	struct error err = {0};

	(void)state;
	assert_int_equal(parse(inv, pairs, &v, &err), 0);
	assert_string_equal(v.control_plane, "1.31.2");
	assert_int_equal(v.nr, 3);
	assert_string_equal(v.kubelet[0], "1.31.2");
	assert_string_equal(v.kubelet[1], "1.30.4");
	assert_string_equal(v.kubelet[2], "1.31.2");
	upgrade_versions_release(&v);

	/* a worker that has not joined: no version */
	{
		const char *two[] = {"b-0", "v1.31.2", "b-1", "v1.31.2", NULL};
		assert_int_equal(parse(inv, two, &v, &err), 0);
		assert_string_equal(v.kubelet[2], "");
		upgrade_versions_release(&v);
	}
	inventory_free(inv);
}

/*
 * The finding: b-1's own kubeletVersion says "v1.30.4\nb-2 v1.31.2".  Read
 * as lines, b-2 (listed after b-1, really at v1.30.4) looked upgraded and
 * was skipped.  Now b-1's version is refused, naming b-1, and b-2's own
 * stays what it reports.
 */
static void test_version_speaking_for_another_node(void **state)
{
	const char *pairs[] = {"b-0", "v1.31.2", "b-1", "v1.30.4\\nb-2 v1.31.2",
			       "b-2", "v1.30.4", NULL};
	const char *esc[] = {"b-0", "v1.31.2", "b-1", "v1.30.4\\u001b[2J", NULL};
	const char *twice[] = {"b-0", "v1.31.2", "b-2", "v1.31.2", "b-2", "v1.30.4", NULL};
	struct inventory *inv = load();
	struct upgrade_versions v;
	struct error err = {0};

	(void)state;
	assert_int_equal(parse(inv, pairs, &v, &err), -1);
	assert_string_equal(err.msg,
			    "node 'b-1' reports a kubelet version that is not "
			    "vMAJOR.MINOR.PATCH (its Node's status.nodeInfo.kubeletVersion; "
			    "not shown)");
	upgrade_versions_release(&v);
	assert_int_equal(parse(inv, esc, &v, &err), -1);
	assert_non_null(strstr(err.msg, "node 'b-1'"));
	assert_null(strchr(err.msg, '\033'));
	upgrade_versions_release(&v);
	assert_int_equal(parse(inv, twice, &v, &err), -1);
	assert_string_equal(err.msg, "node 'b-2' is listed twice by the API server");
	upgrade_versions_release(&v);
	inventory_free(inv);
}

static void test_not_json(void **state)
{
	struct inventory *inv = load();
	struct upgrade_versions v;
	struct error err = {0};
	static const char lines[] = "1.31.2\nb-0 v1.31.2\nb-1 v1.31.2\n";
	static const char bad_version[] =
	    "{\"gitVersion\": \"v1.31.2 evil\"}\n{\"kind\": \"List\", "
	    "\"items\": []}\n";
	static const char no_list[] = "{\"gitVersion\": \"v1.31.2\"}\n{\"kind\": \"Node\"}\n";

	(void)state;
	assert_int_equal(upgrade_versions_parse(inv, lines, strlen(lines), &v, &err), -1);
	assert_non_null(strstr(err.msg, "/version is not JSON"));
	upgrade_versions_release(&v);
	assert_int_equal(upgrade_versions_parse(inv, bad_version, strlen(bad_version), &v, &err),
			 -1);
	assert_string_equal(err.msg, "the API server's gitVersion is not vMAJOR.MINOR.PATCH");
	upgrade_versions_release(&v);
	assert_int_equal(upgrade_versions_parse(inv, no_list, strlen(no_list), &v, &err), -1);
	assert_string_equal(err.msg, "'kubectl get nodes -o json' did not give a list of Nodes");
	upgrade_versions_release(&v);
	inventory_free(inv);
}

static void test_version_valid(void **state)
{
	static const char *const good[] = {"v1.30.4", "1.30.4", "v10.200.30000", NULL};
	static const char *const bad[] = {"",
					  "v",
					  "v1.30",
					  "v1.30.4.5",
					  "v1.30.4-rc.1",
					  "v1.30.4+k3s1",
					  "v1..4",
					  "v1.30.x",
					  "v1.30.4 ",
					  " v1.30.4",
					  "v123456.1.1",
					  "vv1.30.4",
					  "v1.30.4\nb-2",
					  NULL};
	size_t i;

	(void)state;
	for (i = 0; good[i]; i++)
		if (!upgrade_version_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (i = 0; bad[i]; i++)
		if (upgrade_version_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_honest),
	    cmocka_unit_test(test_version_speaking_for_another_node),
	    cmocka_unit_test(test_not_json),
	    cmocka_unit_test(test_version_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
