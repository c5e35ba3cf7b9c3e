/*
 * tests/tools/render.c: the role side of provision without the network, for
 * the role tests.  Links build/libprovision.a and calls the same functions
 * `provision plan/up` call, so a template renders here exactly as it would
 * for a node.
 *
 *   render check ROLES_DIR
 *       load and validate every role (role.yaml keys, steps, template syntax,
 *       declared vars): the errors provision reports before touching a node.
 *   render template ROLES_DIR ROLE SRC INVENTORY NODE [FACTS|-] [NAME=VALUE...]
 *       render roles/ROLE/templates/SRC for NODE of INVENTORY, with the
 *       node's facts (a facts.sh output file, or - for none) and NAME=VALUE
 *       as handed values (set.NAME); the text goes to standard output.
 *       With FACTS, the run's GPU values (gpu.*) are those of NODE alone,
 *       as provision makes them from the facts of the run's nodes.
 *       Handed hub_nodes/hub_node_K (roles/jupyterhub 20-capacity) give
 *       `profiles`, as in provision up.  A VALUE of @FILE is FILE's text.
 *   render list ROLES_DIR
 *       every template: "ROLE SRC DEST MODE OWNER BEFORE", one a line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "inventory.h"
#include "plan.h"
#include "role.h"
#include "template.h"
#include "util.h"

static int print_diags(struct diag_list *dl)
{
	size_t i;

	for (i = 0; i < dl->nr; i++) {
		char *s = diag_format(&dl->items[i]);
		fprintf(stderr, "%s\n", s);
		free(s);
	}
	return dl->errors ? 1 : 0;
}

static int cmd_check(const char *dir)
{
	struct role_set rs;
	struct diag_list dl;
	int rc;

	diag_list_init(&dl);
	rc = role_set_load(&rs, dir, &dl);
	print_diags(&dl);
	diag_list_release(&dl);
	if (rc < 0)
		return 1;
	for (size_t i = 0; i < rs.nr; i++)
		printf("%s %s %zu step%s %zu template%s\n", rs.roles[i].name,
		       phase_name(rs.roles[i].phase), rs.roles[i].nr_steps,
		       rs.roles[i].nr_steps == 1 ? "" : "s", rs.roles[i].nr_templates,
		       rs.roles[i].nr_templates == 1 ? "" : "s");
	role_set_release(&rs);
	return 0;
}

static int cmd_list(const char *dir)
{
	struct role_set rs;
	struct diag_list dl;

	diag_list_init(&dl);
	if (role_set_load(&rs, dir, &dl) < 0) {
		print_diags(&dl);
		diag_list_release(&dl);
		return 1;
	}
	diag_list_release(&dl);
	for (size_t i = 0; i < rs.nr; i++)
		for (size_t j = 0; j < rs.roles[i].nr_templates; j++) {
			const struct role_template *t = &rs.roles[i].templates[j];
			printf("%s %s %s %04o %s %s\n", rs.roles[i].name, t->src, t->dest, t->mode,
			       t->owner, t->before ? t->before : rs.roles[i].steps[0].name);
		}
	role_set_release(&rs);
	return 0;
}

static int cmd_template(int argc, char **argv)
{
	const char *dir = argv[0], *role = argv[1], *src = argv[2], *inv_path = argv[3];
	const char *node_name = argv[4], *facts_path = argc > 5 ? argv[5] : "-";
	struct role_set rs;
	struct diag_list dl;
	struct inventory *inv = NULL;
	struct facts facts;
	bool have_facts = false;
	const struct role *r;
	const struct node *n;
	struct tval *vals, *set;
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	int i, rc = 1;

	diag_list_init(&dl);
	memset(&facts, 0, sizeof(facts));
	if (role_set_load(&rs, dir, &dl) < 0 || inventory_load(&inv, inv_path, &dl) < 0 ||
	    (inv->hub.enabled && role_set_resolve_hub_chart(&rs, inv, &dl) < 0)) {
		print_diags(&dl);
		diag_list_release(&dl);
		return 1;
	}
	diag_list_release(&dl);
	if (strcmp(facts_path, "-")) {
		struct strbuf text = STRBUF_INIT;
		if (read_file(facts_path, &text) < 0 ||
		    facts_parse(&facts, text.buf, text.len, &err) < 0) {
			fprintf(stderr, "render: %s: cannot read facts %s\n", facts_path,
				err.msg);
			strbuf_release(&text);
			goto out;
		}
		strbuf_release(&text);
		have_facts = true;
	}
	r = role_set_find(&rs, role);
	n = inventory_find(inv, node_name);
	if (!r || !n) {
		fprintf(stderr, "render: no %s '%s'\n", r ? "node" : "role", r ? node_name : role);
		goto out;
	}
	vals = plan_values(inv, n, have_facts ? &facts : NULL,
			   kube_matrix_find(&rs.kube, inv->cluster.kubernetes_version));
	if (have_facts) {
		const struct facts *fp = &facts;
		plan_gpu_values(vals, &n, &fp, 1);
	}
	set = tval_map_at(vals, "set");
	for (i = 6; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "render: expected NAME=VALUE, got '%s'\n", argv[i]);
			tval_free(vals);
			goto out;
		}
		*eq = '\0';
		if (eq[1] == '@') {
			struct strbuf file = STRBUF_INIT;
			if (read_file(eq + 2, &file) < 0) {
				fprintf(stderr, "render: cannot read '%s'\n", eq + 2);
				strbuf_release(&file);
				tval_free(vals);
				goto out;
			}
			strbuf_rtrim(&file);
			tval_set_str(set, argv[i], file.buf);
			strbuf_release(&file);
		} else {
			tval_set_str(set, argv[i], eq + 1);
		}
	}
	if (plan_add_profiles(vals, &err) < 0) {
		fprintf(stderr, "render: hub profiles: %s\n", err.msg);
		tval_free(vals);
		goto out;
	}
	for (size_t j = 0; j < r->nr_templates; j++) {
		if (strcmp(r->templates[j].src, src))
			continue;
		if (template_render(r->templates[j].tmpl, vals, &out, &err) < 0)
			fprintf(stderr, "render: %s\n", err.msg);
		else {
			fwrite(out.buf, 1, out.len, stdout);
			rc = 0;
		}
		break;
	}
	if (rc && !err.msg[0])
		fprintf(stderr, "render: role '%s' has no template '%s'\n", role, src);
	tval_free(vals);
out:
	strbuf_release(&out);
	if (have_facts)
		facts_release(&facts);
	inventory_free(inv);
	role_set_release(&rs);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "check"))
		return cmd_check(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "list"))
		return cmd_list(argv[2]);
	if (argc >= 7 && !strcmp(argv[1], "template"))
		return cmd_template(argc - 2, argv + 2);
	fprintf(stderr, "usage: render check|list ROLES_DIR\n"
			"       render template ROLES_DIR ROLE SRC INVENTORY NODE [FACTS|-] [NAME=VALUE...]\n");
	return 2;
}
