/*
 * cmd: the command table and the top-level dispatch.
 */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "../version.h"

/* cmd_table: every command provision has, in the order --help lists them. */
const struct cmd *const cmd_table[] = {
	&cmd_up,
	&cmd_plan,
	&cmd_check,
	&cmd_bench,
	&cmd_add_node,
	&cmd_upgrade,
	&cmd_renew_certs,
	&cmd_backup,
	&cmd_restore,
	&cmd_remove_node,
	&cmd_reset,
	&cmd_forget_host,
	&cmd_inventory,
	&cmd_run,
	&cmd_status,
	&cmd_history,
	&cmd_diff,
	&cmd_show,
	&cmd_logs,
	&cmd_bundle,
	&cmd_fetch,
	NULL,
};

const struct cmd *cmd_lookup(const char *name)
{
	size_t i;

	for (i = 0; cmd_table[i]; i++)
		if (!strcmp(cmd_table[i]->name, name))
			return cmd_table[i];
	return NULL;
}

void cmd_print_exit_codes(void)
{
	fputs("\nexit status:\n"
	      "  0    ok: every node and check succeeded (or there was nothing to do)\n"
	      "  1    some node or check failed; the others finished\n"
	      "  2    bad usage or invalid input; nothing was changed on any node\n"
	      "  3    a failure on this machine (file system, resources)\n"
	      "  130  interrupted (^C or SIGTERM)\n",
	      stdout);
}

static void print_main_help(void)
{
	size_t i;

	fputs("usage: provision <command> [options]\n"
	      "       provision --version\n\n"
	      "Turn lab machines into a GPU Kubernetes cluster with JupyterHub, over SSH,\n"
	      "from one inventory file.\n\n"
	      "commands:\n",
	      stdout);
	for (i = 0; cmd_table[i]; i++)
		printf("  %-12s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
	fputs("\n'provision <command> --help' shows a command's options.\n"
	      "The inventory format is described in provision-inventory(5) and inventory/README.md.\n",
	      stdout);
	cmd_print_exit_codes();
}

void cmd_usage_error(const struct cmd *cmd, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	strbuf_addf(&sb, "provision %s: ", cmd->name);
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strbuf_addf(&sb, "\nusage: provision %s %s\n", cmd->name, cmd->usage);
	strbuf_addf(&sb, "try 'provision %s --help' for more\n", cmd->name);
	fputs(sb.buf, stderr);
	strbuf_release(&sb);
}

void cmd_print_help(const struct cmd *cmd)
{
	char *options = opt_help_text(cmd->options);

	printf("usage: provision %s %s\n\n%s\n\noptions:\n%s", cmd->name, cmd->usage,
	       cmd->description, options);
	free(options);
	cmd_print_exit_codes();
}

/*
 * The command's words: its options (opt.h), then as many positional words
 * as it takes.  0, 1 after printing the help, -1 after a usage error.
 */
static int parse_words(const struct cmd *cmd, int argc, char **argv, char ***pos, int *nr_pos)
{
	struct strbuf err = STRBUF_INIT;
	int r = opt_parse(cmd->options, argc, argv, pos, nr_pos, &err);

	if (r > 0)
		cmd_print_help(cmd);
	else if (r < 0)
		cmd_usage_error(cmd, "%s", err.buf);
	strbuf_release(&err);
	if (r)
		return r;
	if (*nr_pos < cmd->min_pos || (cmd->max_pos >= 0 && *nr_pos > cmd->max_pos)) {
		if (*nr_pos < cmd->min_pos)
			cmd_usage_error(cmd, "missing argument");
		else
			cmd_usage_error(cmd, "unexpected argument '%s'", (*pos)[cmd->max_pos]);
		free(*pos);
		*pos = NULL;
		*nr_pos = 0;
		return -1;
	}
	return 0;
}

static const struct cmd *suggest(const char *name)
{
	const struct cmd *best = NULL;
	size_t i, best_d = 3;

	for (i = 0; cmd_table[i]; i++) {
		size_t d = edit_distance(name, cmd_table[i]->name);
		if (d < best_d) {
			best_d = d;
			best = cmd_table[i];
		}
	}
	return best;
}

int cmd_main(int argc, char **argv)
{
	const struct cmd *cmd;
	char **pos = NULL;
	int nr_pos = 0, r;

	if (argc < 2) {
		fputs("provision: missing command\n"
		      "usage: provision <command> [options]; try 'provision --help'\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && (cmd = cmd_lookup(argv[2]))) {
			cmd_print_help(cmd);
			return EXIT_OK;
		}
		print_main_help();
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("provision %s\n", PROVISION_VERSION);
		return EXIT_OK;
	}
	cmd = cmd_lookup(argv[1]);
	if (!cmd) {
		const struct cmd *s = suggest(argv[1]);
		if (s)
			fprintf(stderr, "provision: unknown command '%s' (did you mean '%s'?)\n",
				argv[1], s->name);
		else
			fprintf(stderr, "provision: unknown command '%s'; try 'provision --help'\n",
				argv[1]);
		return EXIT_USAGE;
	}
	r = parse_words(cmd, argc - 1, argv + 1, &pos, &nr_pos);
	if (r > 0)
		return EXIT_OK;
	if (r < 0)
		return EXIT_USAGE;
	r = cmd->exec(nr_pos, pos);
	free(pos);
	return r;
}
