/* print: see print.h. */
#include "print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../plan.h"
#include "../util.h"
#include "../validate.h"
#include "../view.h"

void cli_write_line(int fd, const char *prefix, const char *text, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	if (prefix) {
		strbuf_addstr(&sb, prefix);
		strbuf_addstr(&sb, ": ");
	}
	strbuf_add(&sb, text, len);
	strbuf_addch(&sb, '\n');
	(void)write_all(fd, sb.buf, sb.len);
	strbuf_release(&sb);
}

void cli_print_diags(const struct diag_list *dl)
{
	size_t i;

	for (i = 0; i < dl->nr; i++) {
		char *line = diag_format(&dl->items[i]);
		cli_write_line(STDERR_FILENO, NULL, line, strlen(line));
		free(line);
	}
}

static void indent_lines(struct strbuf *out, const char *text, const char *prefix)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		strbuf_addstr(out, prefix);
		strbuf_add(out, p, len);
		strbuf_addch(out, '\n');
		p += len + (nl ? 1 : 0);
	}
}

void cli_print_plan(const struct plan_result *res, const struct node *const *nodes)
{
	struct strbuf out = STRBUF_INIT;
	size_t i, k;

	strbuf_addstr(&out, "\n");
	for (i = 0; i < res->nr; i++) {
		const struct plan_node *pn = &res->nodes[i];
		const struct node_status *st = &res->status[i];
		if (st->state != NODE_DONE) {
			strbuf_addf(&out, "%s: %s: %s\n", nodes[i]->name,
				    node_state_name(st->state), st->reason ? st->reason : "");
			continue;
		}
		if (!pn->changed) {
			strbuf_addf(&out, "%s: no changes (%u steps checked)\n", nodes[i]->name,
				    pn->unchanged + pn->skipped);
			continue;
		}
		strbuf_addf(&out, "%s: %u change%s\n", nodes[i]->name, pn->changed,
			    pn->changed == 1 ? "" : "s");
		for (k = 0; k < pn->nr_steps; k++) {
			const struct plan_step_result *s = &pn->steps[k];
			if (s->result != STEP_WOULD_CHANGE)
				continue;
			/* A file's diff, or what a step's check said (node text: cleaned). */
			strbuf_addf(&out, "  ~ %s › %s\n", s->role->name, s->step);
			if (s->detail) {
				struct strbuf clean = STRBUF_INIT;
				text_clean(&clean, s->detail, strlen(s->detail));
				indent_lines(&out, clean.buf, "      ");
				strbuf_release(&clean);
			}
		}
	}
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
}

void cli_print_summary(const char *cmd_name, bool to_change, const struct inventory *inv,
		       const struct plan_result *res, const struct node *const *nodes)
{
	struct strbuf out = STRBUF_INIT;
	unsigned changed = 0;
	size_t i, w = 4;
	char dur[32];

	for (i = 0; i < res->nr; i++)
		if (strlen(nodes[i]->name) > w)
			w = strlen(nodes[i]->name);
	strbuf_addstr(&out, "\n");
	for (i = 0; i < res->nr; i++) {
		const struct plan_node *pn = &res->nodes[i];
		const struct node_status *st = &res->status[i];
		view_duration(dur, sizeof(dur),
			      st->ended_ms > st->queued_ms ? st->ended_ms - st->queued_ms : 0);
		changed += pn->changed;
		strbuf_addf(&out,
			    "%-*s  %-11s %3u changed %3u unchanged %3u failed %3u skipped  %s",
			    (int)w, nodes[i]->name, node_state_name(st->state), pn->changed,
			    pn->unchanged, pn->failed, pn->skipped, dur);
		if (st->state != NODE_DONE && st->reason)
			strbuf_addf(&out, "\n%-*s  %s", (int)w, "", st->reason);
		strbuf_addch(&out, '\n');
	}
	view_duration(dur, sizeof(dur), res->elapsed_ms);
	strbuf_addf(&out, "%s %s: %zu node%s, %u %s, %zu failed, %zu unreachable%s, %s\n", cmd_name,
		    inv->cluster.name, res->nr, res->nr == 1 ? "" : "s", changed,
		    to_change ? "to change" : "changed", res->failed, res->unreachable,
		    res->interrupted ? ", interrupted" : "", dur);
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
}

/*
 * Text as XML character data or an attribute value.  The checks' texts are
 * cleaned where they enter (validate.h); this writer does not rely on it:
 * a byte that is not UTF-8, a control character (TAB and newline aside), a
 * C1 control and U+FFFE/U+FFFF (which XML 1.0 forbids) are '?'.
 */
static void xml_escaped(struct strbuf *sb, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	while (n) {
		unsigned cp;
		size_t k = text_utf8(s, n, &cp);

		if (!k) {
			strbuf_addch(sb, '?');
			s++, n--;
			continue;
		}
		switch (cp) {
		case '<':
			strbuf_addstr(sb, "&lt;");
			break;
		case '>':
			strbuf_addstr(sb, "&gt;");
			break;
		case '&':
			strbuf_addstr(sb, "&amp;");
			break;
		case '"':
			strbuf_addstr(sb, "&quot;");
			break;
		default:
			if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
			    cp == 0xfffe || cp == 0xffff)
				strbuf_addch(sb, '?');
			else
				strbuf_add(sb, s, k);
		}
		s += k, n -= k;
	}
}

static const char *check_node_name(const struct check *c, const struct node *const *nodes)
{
	return c->node == CHECK_CLUSTER ? "(cluster)" : nodes[c->node]->name;
}

/* JUnit XML: one testcase per check, classname = the node. */
int cli_write_junit(const char *path, const struct inventory *inv, const struct validation *v,
		    const struct node *const *nodes)
{
	struct strbuf x = STRBUF_INIT;
	size_t i, failed = 0, skipped = 0;
	FILE *f;
	int ok;

	for (i = 0; i < v->nr; i++) {
		failed += v->items[i].status == CHECK_FAIL;
		skipped += v->items[i].status == CHECK_SKIP;
	}
	strbuf_addstr(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	strbuf_addstr(&x, "<testsuites>\n  <testsuite name=\"provision check ");
	xml_escaped(&x, inv->cluster.name);
	strbuf_addf(&x, "\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n", v->nr, failed,
		    skipped);
	for (i = 0; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		strbuf_addstr(&x, "    <testcase classname=\"");
		xml_escaped(&x, check_node_name(c, nodes));
		strbuf_addstr(&x, "\" name=\"");
		xml_escaped(&x, c->id);
		strbuf_addstr(&x, "\">");
		if (c->status == CHECK_FAIL) {
			strbuf_addstr(&x, "\n      <failure message=\"");
			xml_escaped(&x, c->observed);
			strbuf_addstr(&x, "\">expected: ");
			xml_escaped(&x, c->expected);
			strbuf_addstr(&x, "\nobserved: ");
			xml_escaped(&x, c->observed);
			if (c->fix) {
				strbuf_addstr(&x, "\nfix: ");
				xml_escaped(&x, c->fix);
			}
			strbuf_addstr(&x, "</failure>\n    ");
		} else if (c->status == CHECK_SKIP) {
			strbuf_addstr(&x, "\n      <skipped message=\"");
			xml_escaped(&x, c->observed);
			strbuf_addstr(&x, "\"/>\n    ");
		} else if (c->status == CHECK_WARN) {
			/* JUnit has no warning: a passed test case that says so */
			strbuf_addstr(&x, "\n      <system-out>warning: ");
			xml_escaped(&x, c->observed);
			if (c->fix) {
				strbuf_addstr(&x, "\nfix: ");
				xml_escaped(&x, c->fix);
			}
			strbuf_addstr(&x, "</system-out>\n    ");
		}
		strbuf_addstr(&x, "</testcase>\n");
	}
	strbuf_addstr(&x, "  </testsuite>\n</testsuites>\n");
	f = fopen(path, "w");
	ok = f && fwrite(x.buf, 1, x.len, f) == x.len;
	if (f && fclose(f))
		ok = 0;
	strbuf_release(&x);
	return ok ? 0 : -1;
}

void cli_print_validation(const struct validation *v, const struct node *const *nodes,
			  bool failures_only)
{
	struct strbuf out = STRBUF_INIT;
	size_t i, w = 9, pass = 0, fail = 0, skip = 0, warn = 0;

	for (i = 0; i < v->nr; i++)
		if (strlen(check_node_name(&v->items[i], nodes)) > w)
			w = strlen(check_node_name(&v->items[i], nodes));
	strbuf_addch(&out, '\n');
	if (!failures_only)
		strbuf_addf(&out, "%-26s %-*s %-6s %s\n", "CHECK", (int)w, "NODE", "RESULT",
			    "OBSERVED (EXPECTED)");
	for (i = 0; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		pass += c->status == CHECK_PASS;
		fail += c->status == CHECK_FAIL;
		skip += c->status == CHECK_SKIP;
		warn += c->status == CHECK_WARN;
		if (failures_only && c->status != CHECK_FAIL && c->status != CHECK_WARN)
			continue;
		strbuf_addf(&out, "%-26s %-*s %-6s %s", c->id, (int)w, check_node_name(c, nodes),
			    check_status_name(c->status), c->observed);
		if (c->status != CHECK_PASS)
			strbuf_addf(&out, " (expected: %s)", c->expected);
		strbuf_addch(&out, '\n');
		if (c->fix && c->status != CHECK_PASS)
			strbuf_addf(&out, "%-26s %-*s        fix: %s\n", "", (int)w, "", c->fix);
	}
	strbuf_addf(&out, "validation: %zu passed, %zu failed, %zu skipped", pass, fail, skip);
	if (warn) /* only when there are: the line stays as it was for a clean cluster */
		strbuf_addf(&out, ", %zu warning%s", warn, warn == 1 ? "" : "s");
	strbuf_addch(&out, '\n');
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
}

/*
 * up: one line (never a question: nothing asks on standard input) offering
 * renew-certs when the control plane's certificates are close to expiry or
 * expired (the check's warning or failure says which).
 */
void cli_offer_renew_certs(const struct validation *v, const char *inventory)
{
	size_t i;

	for (i = 0; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		char *line;

		if (strcmp(c->id, "certificates") ||
		    (c->status != CHECK_WARN && c->status != CHECK_FAIL))
			continue;
		line =
		    xasprintf("certificates: %s; renew them with 'provision renew-certs -i %s'\n",
			      c->status == CHECK_FAIL ? "some have expired or are missing"
						      : "some expire within the warning period",
			      inventory);
		(void)write_all(STDOUT_FILENO, line, strlen(line));
		free(line);
		return;
	}
}
