/* common: see common.h. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "../plan.h"
#include "../role.h"
#include "../secrets.h"
#include "../state.h"
#include "../transport.h"
#include "../tui/tui.h"
#include "../util.h"
#include "../view.h"
#include "cmd.h"
#include "run_record.h"

int cli_load_inventory(const char *cmd_name, const char *path, struct inventory **out)
{
	struct diag_list dl;
	int r;

	*out = NULL;
	if (!path) {
		fprintf(stderr,
			"provision %s: missing inventory\n"
			"  hint: give the inventory file with -i FILE (see inventory/README.md)\n",
			cmd_name);
		return EXIT_USAGE;
	}
	diag_list_init(&dl);
	r = inventory_load(out, path, &dl);
	cli_print_diags(&dl);
	if (r < 0 && dl.errors)
		fprintf(stderr, "provision %s: %zu error%s in '%s'; nothing was changed\n", cmd_name,
			dl.errors, dl.errors == 1 ? "" : "s", path);
	diag_list_release(&dl);
	return r < 0 ? EXIT_USAGE : 0;
}

int cli_select_nodes(const char *cmd_name, const struct inventory *inv, const char *limit,
		     const struct node ***out, size_t *nr)
{
	bool *sel = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(*sel));
	const struct node **nodes;
	struct error err = {0};
	size_t i, n = 0;

	*out = NULL;
	*nr = 0;
	if (limit) {
		if (inventory_select(inv, limit, sel, &err) < 0) {
			fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
			if (err.hint[0])
				fprintf(stderr, "  hint: %s\n", err.hint);
			free(sel);
			return EXIT_USAGE;
		}
	} else {
		for (i = 0; i < inv->nr_nodes; i++)
			sel[i] = true;
	}
	nodes = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(*nodes));
	for (i = 0; i < inv->nr_nodes; i++)
		if (sel[i])
			nodes[n++] = &inv->nodes[i];
	free(sel);
	if (!n) {
		fprintf(stderr, "provision %s: no node selected\n", cmd_name);
		free(nodes);
		return EXIT_USAGE;
	}
	*out = nodes;
	*nr = n;
	return 0;
}

/* Read one line from the terminal without echo; NULL when there is none or it is empty. */
static char *ask_tty(const char *prompt)
{
	struct termios old, quiet;
	char buf[512];
	FILE *tty;
	size_t len;
	char *r;

	if (!isatty(STDIN_FILENO))
		return NULL;
	tty = fopen("/dev/tty", "r+");
	if (!tty)
		return NULL;
	fputs(prompt, tty);
	fflush(tty);
	tcgetattr(fileno(tty), &old);
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	if (!fgets(buf, sizeof(buf), tty))
		buf[0] = '\0';
	tcsetattr(fileno(tty), TCSAFLUSH, &old);
	fputs("\n", tty);
	fclose(tty);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	r = len ? xstrdup(buf) : NULL;
	explicit_bzero(buf, sizeof(buf));
	return r;
}

int cli_confirm(const char *cmd_name, bool yes, const char *question)
{
	char buf[64];
	FILE *tty;
	size_t len;

	if (yes)
		return 0;
	if (!isatty(STDIN_FILENO) || !(tty = fopen("/dev/tty", "r+"))) {
		fprintf(stderr,
			"provision %s: not on a terminal, so nobody can confirm; nothing was changed\n"
			"  hint: check what the command would do, then run it again with --yes\n",
			cmd_name);
		return EXIT_USAGE;
	}
	fprintf(tty, "%s [y/N] ", question);
	fflush(tty);
	if (!fgets(buf, sizeof(buf), tty))
		buf[0] = '\0';
	fclose(tty);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (!strcmp(buf, "y") || !strcmp(buf, "Y") || !strcmp(buf, "yes") || !strcmp(buf, "YES"))
		return 0;
	fprintf(stderr, "provision %s: not confirmed; nothing was changed\n", cmd_name);
	return EXIT_USAGE;
}

/* The first line of a password file only its owner can read; NULL (said) when it cannot be used. */
static char *read_password_file(const char *file)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;

	/* As OpenSSH treats a private key: others must not read it. */
	if (stat(file, &st) == 0 && ((st.st_mode & 077) || st.st_uid != getuid())) {
		fprintf(stderr,
			"provision: the sudo password file '%s' is %s (mode %04o): not used\n"
			"  hint: chmod 600 '%s' (and own it)\n",
			file, st.st_uid != getuid() ? "someone else's" : "readable by others",
			(unsigned)(st.st_mode & 07777), file);
		return NULL;
	}
	if (read_file(file, &sb) == 0) {
		sb.len = strcspn(sb.buf, "\r\n");
		sb.buf[sb.len] = '\0';
		if (sb.len)
			return strbuf_detach(&sb, NULL);
	}
	if (sb.alloc)
		explicit_bzero(sb.buf, sb.alloc);
	strbuf_release(&sb);
	fprintf(stderr, "provision: cannot read the sudo password from '%s'\n", file);
	return NULL;
}

char *cli_sudo_password(bool ask, const char *file)
{
	const char *env = getenv("PROVISION_SUDO_PASSWORD");
	char *pw;

	if (env && *env)
		return xstrdup(env);
	if (file && (pw = read_password_file(file)))
		return pw;
	return ask ? ask_tty("sudo password for the nodes: ") : NULL;
}

static bool same_path(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

int cli_node_sudo_passwords(const char *cmd_name, struct inventory *inv, struct secrets *secrets)
{
	size_t i, k;

	for (i = 0; i < inv->nr_nodes; i++) {
		struct node *n = &inv->nodes[i];

		if (n->own_sudo_password ||
		    same_path(n->ssh.sudo_password_file, inv->ssh.sudo_password_file))
			continue;
		n->own_sudo_password = true;
		/* Each file once; the nodes that name it share what it holds. */
		for (k = 0; k < i; k++)
			if (inv->nodes[k].own_sudo_password &&
			    same_path(inv->nodes[k].ssh.sudo_password_file,
				      n->ssh.sudo_password_file))
				break;
		if (k < i) {
			n->sudo_password = inv->nodes[k].sudo_password
					       ? xstrdup(inv->nodes[k].sudo_password)
					       : NULL;
			continue;
		}
		n->sudo_password = read_password_file(n->ssh.sudo_password_file);
		if (n->sudo_password && secrets &&
		    secrets_add(secrets, n->sudo_password, strlen(n->sudo_password)) < 0) {
			fprintf(
			    stderr,
			    "provision %s: the sudo password in '%s' (node %s) is shorter than %d "
			    "characters; provision cannot keep it out of its output\n",
			    cmd_name, n->ssh.sudo_password_file, n->name, SECRETS_MIN_LEN);
			return EXIT_USAGE;
		}
	}
	return 0;
}

char *cli_key_passphrase(const struct inventory *inv)
{
	char *prompt, *r;

	/* ssh-agent may hold the key: then nobody is asked. */
	if (!inv->ssh.identity || getenv("SSH_AUTH_SOCK") ||
	    transport_identity_encrypted(inv->ssh.identity) != 1)
		return NULL;
	prompt = xasprintf("passphrase for %s: ", inv->ssh.identity);
	r = ask_tty(prompt);
	free(prompt);
	return r;
}

void cli_free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

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

static bool dir_exists(const char *p)
{
	struct stat st;
	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

/*
 * A folder of provision's data: $ENV_NAME, else `rel` from the binary's own
 * folder (a build tree), else DATADIR/name where installed, else `name`.
 */
static const char *data_dir(char *buf, size_t size, const char *env_name, const char *rel,
			    const char *name)
{
	const char *env = getenv(env_name);
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", buf, size - 1);
	if (n > 0) {
		char *slash;
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + strlen(rel) < size) {
			strcpy(slash, rel);
			if (dir_exists(buf))
				return buf;
		}
	}
#ifdef PROVISION_DATADIR
	snprintf(buf, size, "%s/%s", PROVISION_DATADIR, name);
	if (dir_exists(buf))
		return buf;
#endif
	return name;
}

const char *cli_roles_dir(const char *opt)
{
	static char buf[4096];

	/* build/provision -> build/../roles */
	return opt ? opt : data_dir(buf, sizeof(buf), "PROVISION_ROLES", "/../roles", "roles");
}

const char *cli_bench_dir(void)
{
	static char buf[4096];

	/* build/provision -> build/bench (the workloads, built per architecture) */
	return data_dir(buf, sizeof(buf), "PROVISION_BENCH_DIR", "/bench", "bench");
}

char *cli_state_dir(const char *opt, const char *inventory_path)
{
	const char *slash, *dot;
	size_t base;

	if (opt)
		return xstrdup(opt);
	slash = strrchr(inventory_path, '/');
	dot = strrchr(inventory_path, '.');
	base = dot && (!slash || dot > slash + 1) ? (size_t)(dot - inventory_path)
						   : strlen(inventory_path);
	return xasprintf("%.*s.state", (int)base, inventory_path);
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

static void print_plan(const struct plan_result *res, const struct node *const *nodes)
{
	struct strbuf out = STRBUF_INIT;
	size_t i, k;

	strbuf_addstr(&out, "\n");
	for (i = 0; i < res->nr; i++) {
		const struct plan_node *pn = &res->nodes[i];
		const struct node_status *st = &res->status[i];
		if (st->state != NODE_DONE) {
			strbuf_addf(&out, "%s: %s: %s\n", nodes[i]->name, node_state_name(st->state),
				    st->reason ? st->reason : "");
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

static void print_summary(const struct cli_plan_args *a, const struct inventory *inv,
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
		strbuf_addf(&out, "%-*s  %-11s %3u changed %3u unchanged %3u failed %3u skipped  %s",
			    (int)w, nodes[i]->name, node_state_name(st->state), pn->changed,
			    pn->unchanged, pn->failed, pn->skipped, dur);
		if (st->state != NODE_DONE && st->reason)
			strbuf_addf(&out, "\n%-*s  %s", (int)w, "", st->reason);
		strbuf_addch(&out, '\n');
	}
	view_duration(dur, sizeof(dur), res->elapsed_ms);
	strbuf_addf(&out, "%s %s: %zu node%s, %u %s, %zu failed, %zu unreachable%s, %s\n", a->cmd_name,
		    inv->cluster.name, res->nr, res->nr == 1 ? "" : "s", changed,
		    a->check_only ? "to change" : "changed", res->failed, res->unreachable,
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
static int write_junit(const char *path, const struct inventory *inv, const struct validation *v,
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

static void print_validation(const struct validation *v, const struct node *const *nodes,
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
static void offer_renew_certs(const struct validation *v, const char *inventory)
{
	size_t i;

	for (i = 0; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		char *line;

		if (strcmp(c->id, "certificates") || (c->status != CHECK_WARN && c->status != CHECK_FAIL))
			continue;
		line = xasprintf("certificates: %s; renew them with 'provision renew-certs -i %s'\n",
				 c->status == CHECK_FAIL ? "some have expired or are missing"
							 : "some expire within the warning period",
				 inventory);
		(void)write_all(STDOUT_FILENO, line, strlen(line));
		free(line);
		return;
	}
}

/*
 * add-node: the named nodes take part in every phase; the control plane is
 * added for what joins them (token, labels) and refreshes the hub, and
 * nothing else; no other node is contacted.
 */
static int select_add_nodes(const struct cli_plan_args *a, const struct inventory *inv,
			    const struct node ***out, size_t *nr, unsigned **node_phases)
{
	const struct node *cp = inventory_control_plane(inv);
	bool *sel = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(*sel));
	struct strbuf list = STRBUF_INIT;
	struct error err = {0};
	size_t i, n = 0;
	unsigned cp_phases = 0;
	int k;

	for (k = 0; k < a->nr_add_nodes; k++)
		strbuf_addf(&list, "%s%s", k ? "," : "", a->add_nodes[k]);
	if (inventory_select(inv, list.buf, sel, &err) < 0) {
		fprintf(stderr, "provision %s: %s\n", a->cmd_name, err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		strbuf_release(&list);
		free(sel);
		return EXIT_USAGE;
	}
	strbuf_release(&list);
	if (cp && sel[cp - inv->nodes]) {
		fprintf(stderr,
			"provision %s: '%s' is the control plane: add-node adds workers and storage "
			"nodes to a running cluster\n  hint: use 'provision up' for the control plane\n",
			a->cmd_name, cp->name);
		free(sel);
		return EXIT_USAGE;
	}
	for (k = 0; role_phases[k]; k++)
		if (!strcmp(role_phases[k], "join") || !strcmp(role_phases[k], "addons") ||
		    !strcmp(role_phases[k], "validate"))
			cp_phases |= 1u << k;
	*out = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(**out));
	*node_phases = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(**node_phases));
	for (i = 0; i < inv->nr_nodes; i++) {
		if (!sel[i] && &inv->nodes[i] != cp)
			continue;
		(*out)[n] = &inv->nodes[i];
		(*node_phases)[n] = &inv->nodes[i] == cp ? cp_phases : ~0u;
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
			"provision %s: cannot read '%s' (jupyterhub.auth.github.client_secret_file): %s\n"
			"  hint: put the GitHub OAuth app's client secret in that file, readable by you only\n",
			cmd, path, strerror(-e));
		strbuf_release(&sb);
		return EXIT_USAGE;
	}
	strbuf_rtrim(&sb);
	if (!sb.len || strchr(sb.buf, '\n') || secrets_add(secrets, sb.buf, sb.len) < 0) {
		fprintf(stderr,
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
	fprintf(stderr,
		"%s:%u:%u: warning: Kubernetes %s reached its end of life on %s: it gets no more "
		"security fixes\n  hint: raise kubernetes_version (%s is the newest provision pins) "
		"and run 'provision upgrade'\n",
		a->inventory, inv->cluster.kubernetes_version_pos.line,
		inv->cluster.kubernetes_version_pos.col, row->minor, eol,
		m->default_version ? m->default_version : "roles/kubernetes.yaml");
}

int cli_plan_run(const struct cli_plan_args *a)
{
	struct inventory *inv = NULL;
	const struct node **nodes = NULL;
	struct role_set rs = {0};
	struct diag_list dl;
	struct plan_result res = {0};
	struct secrets *secrets = NULL;
	struct error err = {0};
	struct view view = {0};
	char *password = NULL, *state_dir = NULL, *passphrase = NULL, *hub_github_secret = NULL;
	struct tui *tui = NULL; /* the live view (tui/tui.h), on a terminal */
	char **reg_auth = NULL;	 /* cluster.registries' credentials (plan_opts.registry_auth) */
	struct cli_run cr = {0}; /* the state folder: lock, artifacts, ETA, run record */
	unsigned phases = a->check || a->bench_only ? 0
			  : a->phase_bits		? a->phase_bits
							: plan_all_phases();
	unsigned *node_phases = NULL, bench_limit = 0;
	int64_t *eta_hist = NULL;
	bool have_roles = false;
	size_t nr = 0;
	int ret;

	if (!a->check && !a->bench_only && a->phases &&
	    plan_parse_phases(a->phases, &phases, &err) < 0) {
		fprintf(stderr, "provision %s: %s\n  hint: %s\n", a->cmd_name, err.msg, err.hint);
		return EXIT_USAGE;
	}
	ret = cli_load_inventory(a->cmd_name, a->inventory, &inv);
	if (ret)
		return ret;
	if (a->kubernetes_version) {
		free(inv->cluster.kubernetes_version);
		inv->cluster.kubernetes_version = xstrdup(a->kubernetes_version);
	}
	/* Every role and template is checked before any node is touched. */
	diag_list_init(&dl);
	if (role_set_load(&rs, cli_roles_dir(a->roles), &dl) < 0) {
		cli_print_diags(&dl);
		fprintf(stderr, "provision %s: %zu error%s in the roles; nothing was changed\n",
			a->cmd_name, dl.errors, dl.errors == 1 ? "" : "s");
		diag_list_release(&dl);
		ret = EXIT_USAGE;
		goto out;
	}
	have_roles = true;
	cli_print_diags(&dl);
	diag_list_release(&dl);
	if (rs.kube.nr && !kube_matrix_find(&rs.kube, inv->cluster.kubernetes_version)) {
		char *minors = kube_matrix_minors(&rs.kube);
		fprintf(stderr,
			"%s:%u:%u: error: cluster.kubernetes_version %s: its minor is not in %s "
			"(minors: %s)\n  hint: use a Kubernetes version of one of those minors, or "
			"add its row (kubeadm's pause image of that minor) to %s\n"
			"provision %s: nothing was changed\n",
			a->inventory, inv->cluster.kubernetes_version_pos.line,
			inv->cluster.kubernetes_version_pos.col, inv->cluster.kubernetes_version,
			rs.kube.path, minors, rs.kube.path, a->cmd_name);
		free(minors);
		ret = EXIT_USAGE;
		goto out;
	}
	if (!a->kubernetes_version)
		warn_end_of_life(a, inv, &rs.kube);
	/*
	 * The Helm of the cluster's minor (the inventory's major, or the newest
	 * pinned), and the hub's chart release: the inventory's pins must be
	 * ones the roles offer.
	 */
	diag_list_init(&dl);
	if (role_set_resolve_helm(&rs, inv, &dl) < 0 ||
	    (inv->hub.enabled && role_set_resolve_hub_chart(&rs, inv, &dl) < 0)) {
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
		size_t k;
		node_phases = xcalloc(nr ? nr : 1, sizeof(*node_phases));
		for (k = 0; k < nr; k++)
			node_phases[k] = a->node_phases(a, nodes[k]);
	}
	if (a->confirm) {
		struct strbuf q = STRBUF_INIT;
		size_t k;
		strbuf_addf(&q, "%s on %zu node%s (", a->confirm, nr, nr == 1 ? "" : "s");
		for (k = 0; k < nr && k < 8; k++)
			strbuf_addf(&q, "%s%s", k ? ", " : "", nodes[k]->name);
		strbuf_addf(&q, "%s)?", nr > 8 ? ", ..." : "");
		ret = cli_confirm(a->cmd_name, a->yes, q.buf);
		strbuf_release(&q);
		if (ret)
			goto out;
	}

	secrets = secrets_new();
	password = cli_sudo_password(a->ask_sudo, inv->ssh.sudo_password_file);
	if (password && secrets_add(secrets, password, strlen(password)) < 0) {
		fprintf(stderr, "provision %s: the sudo password is shorter than %d characters; "
				"provision cannot keep it out of its output\n",
			a->cmd_name, SECRETS_MIN_LEN);
		ret = EXIT_USAGE;
		goto out;
	}
	ret = cli_node_sudo_passwords(a->cmd_name, inv, secrets);
	if (ret)
		goto out;
	passphrase = cli_key_passphrase(inv);
	if (passphrase)
		secrets_add(secrets, passphrase, strlen(passphrase));
	ret = hub_secret(a->cmd_name, inv, secrets, &hub_github_secret);
	if (ret)
		goto out;
	ret = registry_auth(a->cmd_name, inv, secrets, &reg_auth);
	if (ret)
		goto out;
	state_dir = cli_state_dir(a->state, a->inventory);
	if (a->bench || a->bench_only)
		bench_limit = cli_bench_limit(a->bench_limit_milli, state_dir, inv);
	view_init(&view, nodes, nr, a->output && !strcmp(a->output, "json"), a->verbose);
	{
		struct cli_run_begin b = {
			.cmd_name = a->cmd_name,
			.inventory_path = a->inventory,
			.phases_text = a->phases,
			.state_dir = state_dir,
			.inv = inv,
			.roles = &rs,
			.nodes = nodes,
			.nr = nr,
			.phases = phases,
			.node_phases = node_phases,
			.forks = a->forks,
			.record = !a->check_only,
			.text = !view.json && !a->check_only,
			.secrets = secrets,
		};
		ret = cli_run_begin(&cr, &b);
		if (ret)
			goto out;
	}
	{
		struct plan_opts po = {
			.inv = inv,
			.roles = &rs,
			.nodes = nodes,
			.nr = nr,
			.phases = phases,
			.node_phases = node_phases,
			.check_only = a->check_only || a->check || a->bench_only,
			.drift = a->check,
			.skip_preflight = a->skip_preflight,
			.env = a->env,
			.validate = a->check || (!a->check_only && (phases & (1u << role_phase_index("validate")))),
			.bench = a->bench || a->bench_only,
			.bench_repeat = a->bench_repeat > 0 ? (unsigned)a->bench_repeat : 0,
			.bench_limit_milli = bench_limit,
			.bench_dir = cli_bench_dir(),
			.forks = a->forks,
			.sudo_password = password,
			.identity_passphrase = passphrase,
			.per_command_channels = a->channels,
			.secrets = secrets,
			.state_dir = state_dir,
			.hub_github_secret = hub_github_secret,
			.registry_auth = reg_auth,
		};
		/* ---- TUI (tui/tui.h): on a terminal, for text output, unless --no-tui ---- */
		if (!a->no_tui && !view.json && isatty(STDOUT_FILENO)) {
			size_t k;
			/* Each node's time in earlier runs: the TUI's ETA (eta.c). */
			eta_hist = xcalloc(nr ? nr : 1, sizeof(*eta_hist));
			for (k = 0; k < nr; k++)
				eta_hist[k] = cr.eta ? eta_node_ms(cr.eta, nodes[k]->name) : -1;
			struct tui_config tc = {
				.kind = TUI_RUN,
				.command = a->cmd_name,
				.inv = inv,
				.roles = &rs,
				.phases = po.phases,
				.check_only = po.check_only,
				.validate = po.validate || po.bench,
				.checks_first = a->check || a->bench_only,
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
		plan_execute(&po, &res);
	}
	/* ---- TUI: stays on a failure until q, then gives the terminal back ---- */
	if (tui) {
		tui_run_end(tui, res.interrupted);
		tui_stop(tui);
	}
	/* ---- end TUI ---- */
	if (!view.json) {
		if (a->check_only)
			print_plan(&res, nodes);
		if (res.validation.nr)
			print_validation(&res.validation, nodes, !a->check);
		if (!a->check && !a->bench_only)
			print_summary(a, inv, &res, nodes);
		if (!a->check && !a->check_only)
			offer_renew_certs(&res.validation, a->inventory);
	}
	if (a->junit && write_junit(a->junit, inv, &res.validation, nodes) < 0) {
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
		struct cli_plan_done d = {
			.inv = inv,
			.nodes = nodes,
			.nr = nr,
			.res = &res,
			.identity_passphrase = passphrase,
			.state_dir = state_dir,
			.ret = ret,
			.record = &cr.extra,
		};
		ret = a->after(a, &d);
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
	view_release(&view);
	cli_run_release(&cr);
	if (have_roles)
		role_set_release(&rs);
	cli_free_secret(password);
	cli_free_secret(passphrase);
	cli_free_secret(hub_github_secret);
	registry_auth_free(reg_auth);
	free(node_phases);
	free(eta_hist);
	secrets_free(secrets);
	free(state_dir);
	free(nodes);
	inventory_free(inv);
	return ret;
}
