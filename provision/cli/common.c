/* common: see common.h. */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util.h"
#include "cmd.h"
#include "print.h"

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

bool *cli_select_named(const char *cmd_name, const struct inventory *inv, char *const *names,
		       int nr)
{
	bool *sel = xcalloc(inv->nr_nodes ? inv->nr_nodes : 1, sizeof(*sel));
	struct strbuf list = STRBUF_INIT;
	struct error err = {0};
	int k, rc;

	for (k = 0; k < nr; k++)
		strbuf_addf(&list, "%s%s", k ? "," : "", names[k]);
	rc = inventory_select(inv, list.buf, sel, &err);
	strbuf_release(&list);
	if (rc < 0) {
		fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		free(sel);
		return NULL;
	}
	return sel;
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
