/*
 * provision fetch: the artifacts a cluster's roles need, from their URLs
 * into this machine's cache, verified against the manifest's SHA-256
 * (roles/artifacts.yaml).  `up` does the same before it touches a node.
 * With --images, the container images the nodes will run too (images.h:
 * the list; oci.h: the registry client and the bundle), for each node
 * architecture, into the same cache: `up` imports them into each node that
 * lacks them, so that a lab without registry access comes up.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../artifacts.h"
#include "../facts.h"
#include "../images.h"
#include "../oci.h"
#include "../plan.h"
#include "../pulls.h"
#include "../record_files.h"
#include "../role.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "print.h"
#include "run_record.h"

static struct {
	const char *inventory, *roles, *cache, *phases, *state;
	const char *max_size;
	bool record, all, images, list;
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
    OPT_BOOL(0, "images", &args.images,
	     "the container images the nodes will run too, for their architectures (the offline "
	     "bundle 'up' imports)"),
    OPT_BOOL(0, "list", &args.list,
	     "with --images: print which node runs which image, and fetch no image"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder, for the nodes' recorded facts (default: beside the "
	       "inventory)"),
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

/* ---- --images ---- */

struct endpoints;

/* What oci_fetch's callbacks share: the progress line, the registries' endpoints. */
struct img_progress {
	bool tty, shown;
	uint64_t last_ms, started_ms;
	struct endpoints *eps;
};

static void img_progress(void *ctx, const char *ref, const char *digest, uint64_t have,
			 uint64_t total)
{
	struct img_progress *p = ctx;
	uint64_t now = now_ms();
	struct strbuf sb = STRBUF_INIT;

	/* a line every 5 s off a terminal (after 2 s), redrawn on one */
	if ((!p->tty && (now - p->last_ms < 5000 || now - p->started_ms < 2000)) ||
	    (p->tty && now - p->last_ms < 200))
		return;
	p->last_ms = now;
	if (p->tty)
		strbuf_addch(&sb, '\r');
	strbuf_addf(&sb, "fetching %s: %.19s %llu of %llu bytes", ref, digest,
		    (unsigned long long)have, (unsigned long long)total);
	strbuf_addstr(&sb, p->tty ? "\033[K" : "\n");
	(void)write_all(STDERR_FILENO, sb.buf, sb.len);
	p->shown = true;
	strbuf_release(&sb);
}

/* The facts the last run recorded for each node (the driver image's OS, GPUs), or NULL. */
static void recorded_facts(const char *state_dir, const struct node *const *nodes, size_t nr,
			   struct facts *facts, const struct facts **fp)
{
	size_t i;

	for (i = 0; i < nr; i++)
		fp[i] =
		    record_facts_read(state_dir, nodes[i]->name, &facts[i]) == 0 ? &facts[i] : NULL;
}

/*
 * Where this machine reaches each registry: cluster.registries as the
 * nodes do (mirrors in order, then the upstream unless `upstream: false`),
 * passwords read from their files now and kept in memory only; a registry
 * the inventory does not name: https://HOST.
 */
struct endpoints {
	const struct inventory *inv;
	struct oci_endpoint *v;
	char **passwords;
	size_t nr;
};

static char *read_password(const char *path)
{
	struct strbuf pw = STRBUF_INIT;

	if (read_file(path, &pw) < 0) {
		strbuf_release(&pw);
		return NULL;
	}
	strbuf_rtrim(&pw);
	return strbuf_detach(&pw, NULL);
}

static size_t endpoints_of(struct endpoints *e, const char *host, const struct oci_endpoint **out)
{
	const struct registry *g = NULL;
	size_t i;

	for (i = 0; i < e->inv->cluster.nr_registries && !g; i++)
		if (!strcmp(e->inv->cluster.registries[i].host, host))
			g = &e->inv->cluster.registries[i];
	for (i = 0; i < e->nr; i++)
		if (e->passwords[i]) {
			explicit_bzero(e->passwords[i], strlen(e->passwords[i]));
			free(e->passwords[i]);
		}
	free(e->v);
	free(e->passwords);
	e->v = NULL;
	e->passwords = NULL;
	e->nr = 0;
	if (!g)
		return 0;
	e->v = xcalloc(g->nr_mirrors + 1, sizeof(*e->v));
	e->passwords = xcalloc(g->nr_mirrors + 1, sizeof(char *));
	for (i = 0; i <= g->nr_mirrors; i++) {
		const struct registry_mirror *m = i < g->nr_mirrors ? &g->mirrors[i] : NULL;
		struct oci_endpoint *p = &e->v[e->nr];
		const char *pwfile = m ? m->password_file : g->password_file;
		if (!m && !g->upstream)
			break;
		p->url = m ? m->url : g->server;
		p->ca_pem = m ? m->ca_pem : g->ca_pem;
		p->ca_len = p->ca_pem ? strlen(p->ca_pem) : 0;
		p->insecure = m ? m->skip_verify : g->skip_verify;
		p->username = m ? m->username : g->username;
		if (p->username && pwfile)
			p->password = e->passwords[e->nr] = read_password(pwfile);
		e->nr++;
	}
	*out = e->v;
	return e->nr;
}

static size_t registry_endpoints(void *ctx, const char *host, const struct oci_endpoint **out)
{
	return endpoints_of(((struct img_progress *)ctx)->eps, host, out);
}

static const char *arch_of(const struct node *n)
{
	return n->arch ? n->arch : "amd64";
}

/*
 * Which node runs which image; with list, print it; else fetch each
 * image for each architecture of the nodes that run it, and say what the
 * bundle holds and what could not be had.
 */
static int fetch_images(struct inventory *inv, const struct role_set *rs,
			const struct node *const *nodes, size_t nr, const char *cache)
{
	struct facts *facts = xcalloc(nr ? nr : 1, sizeof(*facts));
	const struct facts **fp = xcalloc(nr ? nr : 1, sizeof(*fp));
	char *state_dir = cli_state_dir(args.state, args.inventory);
	struct images_plan plan;
	struct endpoints eps = {inv, NULL, NULL, 0};
	struct error err = {0};
	size_t i, k, failed = 0, fetched = 0, images = 0;
	uint64_t bytes = 0;
	int ret = EXIT_OK;

	recorded_facts(state_dir, nodes, nr, facts, fp);
	if (plan_images(&plan, inv, rs, cache, nodes, fp, nr, NULL, &err) < 0) {
		fprintf(stderr, "provision fetch: the image list: %s\n", err.msg);
		ret = EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < plan.nr; i++) {
		const struct images_entry *e = &plan.items[i];
		static const char *const archs[] = {"amd64", "arm64"};
		size_t a;
		bool dup = false;

		for (k = 0; k < i && !dup; k++)
			dup = !strcmp(plan.items[k].ref, e->ref);
		if (dup)
			continue;
		for (a = 0; a < 2; a++) {
			struct strbuf on = STRBUF_INIT;
			struct oci_image img;
			/* the nodes of this architecture that run it, from any role */
			for (k = 0; k < nr; k++) {
				size_t j;
				bool runs = false;
				for (j = 0; j < plan.nr && !runs; j++)
					runs = plan.items[j].on[k] &&
					       !strcmp(plan.items[j].ref, e->ref);
				if (runs && !strcmp(arch_of(nodes[k]), archs[a]))
					strbuf_addf(&on, "%s%s", on.len ? "," : "", nodes[k]->name);
			}
			if (!on.len) {
				strbuf_release(&on);
				continue;
			}
			images++;
			if (args.list) {
				printf("%s\tlinux/%s\t%s\t%s\n", e->ref, archs[a], on.buf,
				       oci_bundle_find(cache, e->ref, archs[a], &img)
					   ? "in the bundle"
					   : "not in the bundle");
			} else {
				struct img_progress p = {.tty = isatty(STDERR_FILENO) == 1,
							 .started_ms = now_ms(),
							 .eps = &eps};
				struct oci_opts o = {.cache = cache,
						     .endpoints = registry_endpoints,
						     .progress = img_progress,
						     .ctx = &p};
				const char *t = getenv("PROVISION_FETCH_TIMEOUT"),
					   *mt = getenv("PROVISION_FETCH_MAX_TIME"),
					   *ms = getenv("PROVISION_FETCH_MAX_SIZE");
				struct error ferr = {0};
				if (t && *t)
					o.stall_timeout_s = atoi(t);
				if (mt && *mt)
					o.blob_timeout_s = atoi(mt);
				if (ms && *ms)
					o.max_blob_size = strtoull(ms, NULL, 10);
				if (oci_fetch(&o, e->ref, archs[a], &img, &ferr) < 0) {
					error_make_safe(&ferr); /* it may quote a registry */
					if (p.shown && p.tty)
						fputs("\r\033[K", stderr);
					fprintf(stderr,
						"provision fetch: cannot fetch %s (linux/%s, for "
						"%s): %s\n",
						e->ref, archs[a], on.buf, ferr.msg);
					failed++;
				} else {
					char size[32];
					if (p.shown && p.tty)
						fputs("\r\033[K", stderr);
					pulls_bytes(size, sizeof(size), img.bytes);
					printf(
					    "%s\tlinux/%s\t%s\t%s %s\t%s\n", e->ref, archs[a], size,
					    img.fetched ? "fetched from" : "already in the bundle,",
					    img.fetched ? img.endpoint : "verified", on.buf);
					fetched += img.fetched;
					bytes += img.bytes;
				}
			}
			strbuf_release(&on);
		}
	}
	for (i = 0; i < plan.nr_unresolved; i++)
		fprintf(stderr, "provision fetch: cannot tell which images: %s\n",
			plan.unresolved[i]);
	if (!args.list) {
		char size[32];
		pulls_bytes(size, sizeof(size), bytes);
		printf("images of '%s': %zu in %s/images (%s), %zu fetched now%s%s\n",
		       inv->cluster.name, images - failed, cache, size, fetched, failed ? ", " : "",
		       failed ? "some could not be fetched (above)" : "");
	}
	if (failed || plan.nr_unresolved)
		ret = EXIT_NODE_FAILED;
	images_plan_release(&plan);
	{
		const struct oci_endpoint *none;
		endpoints_of(&eps, "", &none); /* frees what the last registry had */
	}
out:
	for (i = 0; i < nr; i++)
		if (fp[i])
			facts_release(&facts[i]);
	free(facts);
	free(fp);
	free(state_dir);
	return ret;
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
	size_t nr = 0;
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
		cli_print_diags(&dl);
		diag_list_release(&dl);
		inventory_free(inv);
		return EXIT_USAGE;
	}
	if (role_set_resolve_helm(&rs, inv, &dl) < 0 ||
	    (inv->hub.enabled && role_set_resolve_hub_chart(&rs, inv, &dl) < 0)) {
		cli_print_diags(&dl);
		diag_list_release(&dl);
		ret = EXIT_USAGE;
		goto out;
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
	if (args.list && !args.images) {
		fprintf(stderr, "provision fetch: --list goes with --images\n");
		ret = EXIT_USAGE;
		goto out;
	}
	/* --list fetches nothing: the charts in the cache say what they can */
	ret = args.list ? EXIT_OK
			: cli_fetch_artifacts("fetch", &rs, inv, nodes, nr, phases, cache,
					      args.record, args.all);
	if (ret == EXIT_OK && !args.list)
		printf("artifacts of '%s' are in %s\n", inv->cluster.name, cache);
	if (ret == EXIT_OK && args.images)
		ret = fetch_images(inv, &rs, nodes, nr, cache);
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
    .usage = "-i FILE [--roles DIR] [--cache DIR] [--all] [--record] [--images [--list]] "
	     "[--timeout SECONDS] [--max-size SIZE] [--max-time SECONDS]",
    .description =
	"Fetch every artifact (manifests, release archives, chart archives, apt keys)\n"
	"that the roles of this inventory's nodes name, from the URL in the artifact\n"
	"manifest (roles/artifacts.yaml) into the cache, and verify its SHA-256.  An\n"
	"interrupted download resumes where it stopped; proxies come from the usual\n"
	"variables (https_proxy, http_proxy, no_proxy).  'up' fetches the same before it\n"
	"touches a node, and pushes them over SSH: nodes never need the internet.\n"
	"With --record, artifacts whose hash is still pending are fetched too and their\n"
	"SHA-256 is written into the manifest, for review.\n"
	"With --images, every container image the nodes will run (kubeadm's, Flannel's,\n"
	"the charts' for the values provision renders) is fetched from its registry for\n"
	"the nodes' architectures into CACHE/images, each blob verified by its digest,\n"
	"and listed; 'up' imports what a node lacks from there.  What cannot be resolved\n"
	"or fetched is said (exit 1).  --list prints which node runs which image and\n"
	"whether the bundle has it, fetching nothing.",
    .options = fetch_options,
    .exec = fetch_exec,
    .min_pos = 0,
    .max_pos = 0,
};
