/* common: see common.h. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "../util.h"
#include "cmd.h"

int cli_load_inventory(const char *cmd_name, const char *path, struct inventory **out)
{
	struct diag_list dl;
	size_t i;
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
	for (i = 0; i < dl.nr; i++) {
		char *line = diag_format(&dl.items[i]);
		cli_write_line(STDERR_FILENO, NULL, line, strlen(line));
		free(line);
	}
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

char *cli_sudo_password(bool ask)
{
	const char *env = getenv("PROVISION_SUDO_PASSWORD");
	struct termios old, quiet;
	char buf[512];
	FILE *tty;
	size_t len;

	if (env && *env)
		return xstrdup(env);
	if (!ask || !isatty(STDIN_FILENO))
		return NULL;
	tty = fopen("/dev/tty", "r+");
	if (!tty)
		return NULL;
	fputs("sudo password for the nodes: ", tty);
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
	{
		char *r = len ? xstrdup(buf) : NULL;
		explicit_bzero(buf, sizeof(buf));
		return r;
	}
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
