/*
 * provision fetch: the artifacts a cluster's roles need, from their URLs
 * into this machine's cache, verified against the manifest's SHA-256
 * (roles/artifacts.yaml).  `up` does the same before it touches a node.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../artifacts.h"
#include "../plan.h"
#include "../role.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "run_record.h"

static struct {
	const char *inventory, *roles, *cache, *phases;
	const char *max_size;
	bool record, all;
	int timeout, max_time;
} args;

static const struct opt fetch_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
    OPT_STRING(0, "roles", &args.roles, "DIR", "the roles folder (default: the installed roles)"),
    OPT_STRING('p', "phases", &args.phases, "LIST",
	       "only the artifacts of these phases' roles (default: all)"),
    OPT_STRING(0, "cache", &args.cache, "DIR",
	       "the artifact cache (default: $PROVISION_CACHE or ~/.cache/provision/artifacts)"),
    OPT_BOOL(0, "all", &args.all, "every artifact of the manifest, needed or not"),
    OPT_BOOL(
	0, "record", &args.record,
	"also fetch artifacts whose hash is pending and write their SHA-256 into the manifest"),
    OPT_INT(0, "timeout", &args.timeout, "SECONDS", 1, 86400,
	    "give up on a download after SECONDS without data (default 60)"),
    OPT_STRING(0, "max-size", &args.max_size, "SIZE",
	       "refuse an artifact larger than SIZE bytes (K, M, G: KiB, MiB, GiB; default 1G)"),
    OPT_INT(0, "max-time", &args.max_time, "SECONDS", 1, 604800,
	    "give up on an artifact after SECONDS in all, resumed attempts included (default "
	    "1800)"),
    OPT_END,
};

/* "1048576", "512K", "64M", "1G" (KiB, MiB, GiB) as bytes; 0 when it is none of those. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long n;
	unsigned shift = 0;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10, end++;
		break;
	case 'M':
	case 'm':
		shift = 20, end++;
		break;
	case 'G':
	case 'g':
		shift = 30, end++;
		break;
	}
	if (*end || n > (UINT64_MAX >> shift))
		return 0;
	return (uint64_t)n << shift;
}

static int fetch_exec(int nr_pos, char **pos)
{
	struct inventory *inv = NULL;
	const struct node **nodes = NULL;
	struct role_set rs = {0};
	struct diag_list dl;
	struct error err = {0};
	unsigned phases = plan_all_phases();
	char *cache = NULL;
	size_t nr = 0, i;
	int ret;

	if (args.phases && plan_parse_phases(args.phases, &phases, &err) < 0) {
		fprintf(stderr, "provision fetch: %s\n  hint: %s\n", err.msg, err.hint);
		return EXIT_USAGE;
	}
	ret = cli_load_inventory("fetch", args.inventory, &inv);
	if (ret)
		return ret;
	diag_list_init(&dl);
	if (role_set_load(&rs, cli_roles_dir(args.roles), &dl) < 0) {
		for (i = 0; i < dl.nr; i++) {
			char *line = diag_format(&dl.items[i]);
			fprintf(stderr, "%s\n", line);
			free(line);
		}
		diag_list_release(&dl);
		inventory_free(inv);
		return EXIT_USAGE;
	}
	diag_list_release(&dl);
	ret = cli_select_nodes("fetch", inv, NULL, &nodes, &nr);
	if (ret)
		goto out;
	if (args.timeout) {
		char t[16];
		snprintf(t, sizeof(t), "%d", args.timeout);
		setenv("PROVISION_FETCH_TIMEOUT", t, 1);
	}
	if (args.max_time) {
		char t[16];
		snprintf(t, sizeof(t), "%d", args.max_time);
		setenv("PROVISION_FETCH_MAX_TIME", t, 1);
	}
	if (args.max_size) {
		char t[32];
		uint64_t n = parse_size(args.max_size);
		if (!n) {
			fprintf(
			    stderr,
			    "provision fetch: --max-size '%s' is not a size (bytes, or a number "
			    "and K, M or G); nothing was fetched\n",
			    args.max_size);
			ret = EXIT_USAGE;
			goto out;
		}
		snprintf(t, sizeof(t), "%llu", (unsigned long long)n);
		setenv("PROVISION_FETCH_MAX_SIZE", t, 1);
	}
	cache = artifact_cache_dir(args.cache);
	if (!cache) {
		fprintf(stderr,
			"provision fetch: no artifact cache: HOME is not set, and the cache is not "
			"put in /tmp; nothing was fetched\n"
			"  hint: give --cache DIR, or set PROVISION_CACHE (or HOME)\n");
		ret = EXIT_USAGE;
		goto out;
	}
	ret =
	    cli_fetch_artifacts("fetch", &rs, inv, nodes, nr, phases, cache, args.record, args.all);
	if (ret == EXIT_OK)
		printf("artifacts of '%s' are in %s\n", inv->cluster.name, cache);
out:
	free(cache);
	free(nodes);
	role_set_release(&rs);
	inventory_free(inv);
	return ret;
}

const struct cmd cmd_fetch = {
    .name = "fetch",
    .summary = "download the artifacts the roles need into this machine's cache",
    .usage = "-i FILE [--roles DIR] [--cache DIR] [--all] [--record] [--timeout SECONDS] "
	     "[--max-size SIZE] [--max-time SECONDS]",
    .description =
	"Fetch every artifact (manifests, release archives, chart archives, apt keys)\n"
	"that the roles of this inventory's nodes name, from the URL in the artifact\n"
	"manifest (roles/artifacts.yaml) into the cache, and verify its SHA-256.  An\n"
	"interrupted download resumes where it stopped; proxies come from the usual\n"
	"variables (https_proxy, http_proxy, no_proxy).  'up' fetches the same before it\n"
	"touches a node, and pushes them over SSH: nodes never need the internet.\n"
	"With --record, artifacts whose hash is still pending are fetched too and their\n"
	"SHA-256 is written into the manifest, for review.",
    .options = fetch_options,
    .exec = fetch_exec,
    .min_pos = 0,
    .max_pos = 0,
};
