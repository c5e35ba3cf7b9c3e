/* Unit tests for template.c: the language, its errors and its escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

static struct tval *vars(void)
{
	struct tval *root = tval_new_map(), *node, *nodes, *n, *gpus;

	node = tval_map_at(root, "node");
	tval_set_str(node, "name", "b-2");
	tval_set_str(node, "gpu", "true");
	tval_set_str(node, "empty", "");
	tval_set_str(node, "quote", "say \"hi\"\\ it's\n");
	/* a GPU model as a hostile node prints it: CR, NEL, U+2028/9, a stray byte */
	tval_set_str(node, "model", "RTX\rx:\xc2\x85" "y\xe2\x80\xa8" "z\xe2\x80\xa9\xff \xc3\xa9");
	gpus = tval_set(node, "gpus", tval_new_list());
	tval_push(gpus, tval_new_str("GTX 1080 Ti"));
	tval_push(gpus, tval_new_str("RTX 3070"));
	nodes = tval_set(root, "nodes", tval_new_list());
	n = tval_push(nodes, tval_new_map());
	tval_set_str(n, "name", "b-0");
	tval_set_str(n, "role", "control-plane");
	n = tval_push(nodes, tval_new_map());
	tval_set_str(n, "name", "b-1");
	tval_set_str(n, "role", "worker");
	tval_set_str(tval_map_at(root, "cluster"), "pod_cidr", "10.244.0.0/16");
	return root;
}

static char *render(const char *text, struct error *err, int *rc)
{
	struct tval *v = vars();
	struct strbuf out = STRBUF_INIT;

	*rc = template_render_text("t.tmpl", text, strlen(text), v, &out, err);
	tval_free(v);
	return strbuf_detach(&out, NULL);
}

static void expect_render(const char *text, const char *want)
{
	struct error err = {0};
	int rc;
	char *got = render(text, &err, &rc);

	if (rc)
		fail_msg("render failed: %s", err.msg);
	assert_string_equal(got, want);
	free(got);
}

static void expect_error(const char *text, const char *want)
{
	struct error err = {0};
	int rc;
	char *got = render(text, &err, &rc);

	assert_int_equal(rc, -1);
	assert_string_equal(err.msg, want);
	free(got);
}

static void test_plain_text(void **state)
{
	expect_render("", "");
	expect_render("no tags here\n", "no tags here\n");
	expect_render("a { b } c %} d", "a { b } c %} d");
}

static void test_values(void **state)
{
	expect_render("name={{ node.name }}\n", "name=b-2\n");
	expect_render("{{node.name}}{{ cluster.pod_cidr }}", "b-210.244.0.0/16");
	expect_render("{{ node.gpus.1 }}", "RTX 3070");
	expect_render("{{ nodes.0.name }}", "b-0");
}

static void test_filters(void **state)
{
	expect_render("{{ node.quote | yaml }}", "\"say \\\"hi\\\"\\\\ it's\\n\"");
	expect_render("{{ node.quote | toml }}", "\"say \\\"hi\\\"\\\\ it's\\n\"");
	expect_render("{{ node.quote | sh }}", "'say \"hi\"\\ it'\\''s\n'");
	expect_render("{{ node.name | upper }}", "B-2");
	/* nothing that ends a YAML line or comment, nor a byte that is not UTF-8 */
	expect_render("# {{ node.model | yaml }}",
		      "# \"RTX\\rx:\\x85y\\u2028z\\u2029\\ufffd \xc3\xa9\"");
	expect_render("{{ node.model | json }}",
		      "\"RTX\\rx:\\u0085y\\u2028z\\u2029\\ufffd \xc3\xa9\"");
	expect_render("{{ node.name | upper | lower | json }}", "\"b-2\"");
}

static void test_conditions(void **state)
{
	expect_render("{% if node.gpu %}gpu{% endif %}", "gpu");
	expect_render("{% if node.empty %}x{% else %}empty{% endif %}", "empty");
	expect_render("{% if node.missing %}x{% elif node.name == \"b-2\" %}b2{% endif %}", "b2");
	expect_render("{% if not node.missing %}ok{% endif %}", "ok");
	expect_render("{% if node.name != 'b-3' %}ne{% endif %}", "ne");
	expect_render("{% if node.gpus %}list{% endif %}", "list");
}

static void test_loops(void **state)
{
	expect_render("{% for n in nodes %}{{ loop.index }}:{{ n.name }}({{ n.role }}){% if not "
		      "loop.last %},{% endif %}{% endfor %}",
		      "1:b-0(control-plane),2:b-1(worker)");
	expect_render("{% for g in node.gpus %}{% for n in nodes %}{{ g }}@{{ n.name }} {% endfor "
		      "%}{% endfor %}",
		      "GTX 1080 Ti@b-0 GTX 1080 Ti@b-1 RTX 3070@b-0 RTX 3070@b-1 ");
}

static void test_statement_lines_vanish(void **state)
{
	expect_render("a\n{% if node.gpu %}\n  gpu: yes\n{% endif %}\nb\n", "a\n  gpu: yes\nb\n");
	expect_render("  {# a comment #}\nx\n", "x\n");
	expect_render("x {# inline #} y\n", "x  y\n");
	expect_render("[\n{% for n in nodes %}\n  {{ n.name }}\n{% endfor %}\n]\n",
		      "[\n  b-0\n  b-1\n]\n");
}

static void test_errors(void **state)
{
	expect_error("line1\n  {{ node.nope }}\n", "t.tmpl:2:3: no value named 'node.nope'");
	expect_error("{{ node.gpus }}", "t.tmpl:1:1: 'node.gpus' is a list, not a string (use a for loop)");
	expect_error("{% for x in node.name %}{% endfor %}", "t.tmpl:1:1: 'node.name' is a string, not a list");
	expect_error("\n\n{% if node.gpu %}", "t.tmpl:3:1: 'if' is never closed (expected '{% endif %}')");
	expect_error("x {{ node.name ", "t.tmpl:1:3: unterminated '{{': no closing '}}'");
	expect_error("{% endif %}", "t.tmpl:1:1: 'endif' without a matching 'if'");
	expect_error("{% while x %}", "t.tmpl:1:1: unknown statement 'while' (statements: if, elif, else, endif, for, endfor)");
	expect_error("{{ node.name | shout }}", "t.tmpl:1:1: unknown filter 'shout' (filters: yaml, toml, json, sh, upper, lower)");
	expect_error("{% if not x == 'a' %}{% endif %}", "t.tmpl:1:1: 'not' cannot be combined with a comparison");
	expect_error("{% for loop in nodes %}{% endfor %}", "t.tmpl:1:1: 'loop' is reserved; choose another name");
	expect_error("{{ }}", "t.tmpl:1:1: expected a value name inside '{{ }}'");
	expect_error("{% else x %}", "t.tmpl:1:1: 'else' without a matching 'if'");
}

static void test_names(void **state)
{
	const char *text = "{{ cluster.pod_cidr }}{% for n in nodes %}{{ n.name }}{{ loop.index "
			   "}}{{ node.name }}{% endfor %}{% if hub.enabled %}{% endif %}";
	struct template *t;
	struct error err = {0};
	char **names = NULL;
	size_t nr = 0, i;

	assert_int_equal(template_parse(&t, "n.tmpl", text, strlen(text), &err), 0);
	template_names(t, &names, &nr);
	assert_int_equal(nr, 4);
	assert_string_equal(names[0], "cluster.pod_cidr");
	assert_string_equal(names[1], "nodes");
	assert_string_equal(names[2], "node.name");
	assert_string_equal(names[3], "hub.enabled");
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	template_free(t);
}

static void test_nul_byte(void **state)
{
	struct template *t = NULL;
	struct error err = {0};

	assert_int_equal(template_parse(&t, "z.tmpl", "ab\0cd", 5, &err), -1);
	assert_null(t);
	assert_string_equal(err.msg, "z.tmpl:1:3: NUL byte in template");
}

static void test_tval(void **state)
{
	struct tval *m = tval_new_map(), *c;

	tval_set_str(m, "a", "1");
	tval_set_str(m, "a", "2");
	assert_int_equal(m->nr, 1);
	assert_string_equal(tval_lookup(m, "a")->str, "2");
	tval_set_str(tval_map_at(tval_map_at(m, "x"), "y"), "z", "deep");
	assert_string_equal(tval_lookup(m, "x.y.z")->str, "deep");
	assert_null(tval_lookup(m, "x.q"));
	c = tval_copy(m);
	tval_set_str(m, "a", "3");
	assert_string_equal(tval_lookup(c, "a")->str, "2");
	tval_free(c);
	tval_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_text),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_statement_lines_vanish),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_tval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
