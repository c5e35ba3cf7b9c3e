/* run_record: see run_record.h. */
#include "run_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../artifacts.h"
#include "../pulls.h"
#include "../util.h"
#include "../view.h"
#include "cmd.h"
#include "common.h"

char *cli_node_kind(const struct node *n)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned bit;

	for (bit = 1; bit <= NODE_ROLE_NFS_SERVER; bit <<= 1)
		if (n->roles & bit)
			strbuf_addf(&sb, "%s%s", sb.len ? " " : "", node_role_name(bit));
	if (n->gpus > 0)
		strbuf_addstr(&sb, " gpu");
	return strbuf_detach(&sb, NULL);
}

/* ---- artifacts ---- */

struct progress {
	bool tty;
	uint64_t last_ms, started_ms;
	bool shown;
};

static void human_size(char *buf, size_t size, uint64_t n)
{
	if (n >= (1u << 20))
		snprintf(buf, size, "%.1f MiB", (double)n / (1 << 20));
	else if (n >= 1024)
		snprintf(buf, size, "%.1f KiB", (double)n / 1024);
	else
		snprintf(buf, size, "%llu bytes", (unsigned long long)n);
}

static void on_progress(void *ctx, const struct artifact *a, uint64_t have, uint64_t total)
{
	struct progress *p = ctx;
	uint64_t now = now_ms();
	char h[32], t[32];
	struct strbuf sb = STRBUF_INIT;

	/* A line every 5 s off a terminal; on one, the line is redrawn. */
	if (!p->tty && now - p->last_ms < 5000)
		return;
	if (!p->tty && now - p->started_ms < 2000)
		return; /* short downloads need no progress */
	p->last_ms = now;
	human_size(h, sizeof(h), have);
	human_size(t, sizeof(t), total);
	if (p->tty)
		strbuf_addch(&sb, '\r');
	if (total)
		strbuf_addf(&sb, "fetching %s: %s of %s (%llu%%)", a->name, h, t,
			    (unsigned long long)(have * 100 / total));
	else
		strbuf_addf(&sb, "fetching %s: %s", a->name, h);
	if (p->tty)
		strbuf_addstr(&sb, "\033[K");
	else
		strbuf_addch(&sb, '\n');
	(void)write_all(STDERR_FILENO, sb.buf, sb.len);
	p->shown = true;
	strbuf_release(&sb);
}

/* Whether artifact A of role R may reach one of the nodes (its arch among theirs). */
static bool artifact_may_apply(const struct role *r, const struct role_artifact *a,
			       const struct inventory *inv, const struct node *const *nodes,
			       size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (role_may_apply(r, inv, nodes[i]) && role_artifact_for(a, inv, nodes[i]))
			return true;
	return false;
}

int cli_fetch_artifacts(const char *cmd_name, const struct role_set *rs,
			const struct inventory *inv, const struct node *const *nodes, size_t nr,
			unsigned phases, const char *cache, bool record, bool all)
{
	const struct artifact_manifest *m = &rs->artifacts;
	bool *need = xcalloc(m->nr ? m->nr : 1, sizeof(*need));
	size_t i, k, failed = 0, pending = 0;
	int ret = EXIT_OK;

	for (i = 0; i < m->nr; i++)
		need[i] = all;
	for (i = 0; i < rs->nr && !all; i++) {
		const struct role *r = &rs->roles[i];
		if (!r->nr_artifacts || r->phase == PHASE_NONE || !(phases & PHASE_BIT(r->phase)))
			continue;
		for (k = 0; k < r->nr_artifacts; k++) {
			const struct artifact *a = artifact_find(m, r->artifacts[k].name);
			if (a && artifact_may_apply(r, &r->artifacts[k], inv, nodes, nr))
				need[a - m->items] = true;
		}
	}
	for (i = 0; i < m->nr && !cache; i++) {
		if (!need[i])
			continue;
		fprintf(stderr,
			"provision %s: no artifact cache: HOME is not set, and the cache is not "
			"put in /tmp; nothing was changed\n"
			"  hint: set PROVISION_CACHE (or HOME), or give 'provision fetch' --cache "
			"DIR\n",
			cmd_name);
		free(need);
		return EXIT_USAGE;
	}
	if (!record) {
		for (i = 0; i < m->nr; i++) {
			const struct artifact *a = &m->items[i];
			if (!need[i] || a->sha256)
				continue;
			fprintf(stderr,
				"provision %s: artifact '%s' (%s) has no pinned sha256 in '%s' "
				"(line %u)\n",
				cmd_name, a->name, a->url, m->path, a->line);
			pending++;
		}
		if (pending) {
			fprintf(stderr,
				"  hint: on a machine that can reach the URL%s, run 'provision "
				"fetch -i FILE --record', "
				"review the hash%s it writes into the manifest, and commit %s; "
				"nothing was changed\n",
				pending == 1 ? "" : "s", pending == 1 ? "" : "es",
				pending == 1 ? "it" : "them");
			free(need);
			return EXIT_USAGE;
		}
	}
	for (i = 0; i < m->nr; i++) {
		const struct artifact *a = &m->items[i];
		struct progress p = {.tty = isatty(STDERR_FILENO) == 1, .started_ms = now_ms()};
		struct artifact_fetch_opts o = {.cache = cache, .progress = on_progress, .ctx = &p};
		struct artifact_fetch_result res;
		struct error err = {0};
		const char *t = getenv("PROVISION_FETCH_TIMEOUT");
		const char *ms = getenv("PROVISION_FETCH_MAX_SIZE"),
			   *mt = getenv("PROVISION_FETCH_MAX_TIME");
		char size[32];

		if (!need[i])
			continue;
		if (t && *t)
			o.stall_timeout_s = atoi(t);
		if (ms && *ms)
			o.max_size = strtoull(ms, NULL, 10);
		if (mt && *mt)
			o.max_time_s = atoi(mt);
		if (artifact_fetch(a, &o, &res, &err) < 0) {
			if (p.shown && p.tty)
				fputs("\n", stderr);
			fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
			if (err.hint[0])
				fprintf(stderr, "  hint: %s\n", err.hint);
			failed++;
			continue;
		}
		if (p.shown && p.tty)
			fputs("\r\033[K", stderr);
		if (res.cached)
			continue;
		human_size(size, sizeof(size), res.size);
		if (!a->sha256) {
			struct error rerr = {0};
			if (artifact_manifest_record(m, a, res.sha256, &rerr) < 0) {
				fprintf(stderr, "provision %s: %s\n", cmd_name, rerr.msg);
				failed++;
				continue;
			}
			/* Nothing vouches for these bytes but the server that sent them. */
			fprintf(stderr,
				"recorded %s: sha256 %s (%s) in '%s'\n"
				"  warning: this hash trusts whatever %s sent; compare it with the "
				"checksum the project publishes before you commit it\n",
				a->name, res.sha256, size, m->path, a->url);
			continue;
		}
		if (res.attempts > 1)
			fprintf(stderr,
				"fetched %s: %s, sha256 verified (%u attempts; resumed at %llu "
				"bytes)\n",
				a->name, size, res.attempts, (unsigned long long)res.resumed_from);
		else
			fprintf(stderr, "fetched %s: %s, sha256 verified\n", a->name, size);
	}
	if (failed) {
		fprintf(stderr, "provision %s: %zu artifact%s could not be fetched into '%s'\n",
			cmd_name, failed, failed == 1 ? "" : "s", cache);
		ret = EXIT_LOCAL;
	}
	free(need);
	return ret;
}

/* ---- the run ---- */

/* The run's estimate made again, after the model learnt something of a node. */
static void eta_again(struct cli_run *cr)
{
	const char **sel = xcalloc(cr->b.nr + 1, sizeof(*sel));
	size_t i;

	for (i = 0; i < cr->b.nr; i++)
		sel[i] = cr->b.nodes[i]->name;
	cr->eta_ms = eta_total_ms(cr->eta, sel, cr->b.nr, cr->b.forks);
	free(sel);
}

/*
 * A node's facts name its machine: when the record last saw another machine
 * under that name, the node was reinstalled, and the estimate made at the
 * start (which took it for converged) is made again with its steps doing
 * work.  The machine-id is node text: compared, never shown.  It comes
 * parsed, with the node's facts (EVENT_FACTS).
 */
static void eta_machine_cb(struct cli_run *cr, const struct event *ev)
{
	const char *name;

	if (ev->kind != EVENT_FACTS || !ev->facts || !ev->facts->machine_id ||
	    ev->node >= cr->b.nr || !cr->eta)
		return;
	name = cr->b.nodes[ev->node]->name;
	if (!eta_machine(cr->eta, name, ev->facts->machine_id))
		return;
	eta_again(cr);
	if (cr->on_eta) {
		cr->on_eta(ev->node, eta_node_ms(cr->eta, name), cr->eta_data);
	} else if (cr->b.text && cr->eta_ms >= 0) {
		char dur[32];
		view_duration(dur, sizeof(dur), (uint64_t)cr->eta_ms);
		printf("%s %s: %s is another machine than the record last saw there (its "
		       "machine-id): estimated as a new node, the run now %s\n",
		       cr->b.cmd_name, cr->b.inv->cluster.name, name, dur);
		fflush(stdout);
	}
}

/*
 * A pull role says which images a node lacks ("queued"), then starts its
 * pull step: that step is now expected to take what those bytes took at
 * the node's rate in earlier runs (eta_pull_ms), not the check the
 * estimate counted for a node the last run left complete -- the run's
 * estimate is made again, and said.  Images the record never saw pulled
 * leave the estimate as it was.
 */
static void eta_pull_cb(struct cli_run *cr, const struct event *ev)
{
	const char *name;
	int64_t ms;
	size_t n = ev->node;

	if (!cr->eta || n >= cr->b.nr || !cr->queued)
		return;
	if (ev->kind == EVENT_PROGRESS && ev->step && !strcmp(ev->step, "queued") && ev->text) {
		uint64_t b = eta_image_bytes(cr->eta, ev->text);
		cr->queued[n]++;
		cr->queued_bytes[n] += b;
		cr->queued_unknown[n] += !b;
		return;
	}
	if (ev->kind != EVENT_STEP_START || !cr->queued[n] || !ev->role || !ev->step ||
	    !strcmp(ev->step, "import"))
		return;
	name = cr->b.nodes[n]->name;
	ms = cr->queued_unknown[n] ? -1 : eta_pull_ms(cr->eta, name, cr->queued_bytes[n]);
	if (ms >= 0 && eta_expect(cr->eta, name, ev->role, ev->step, ms)) {
		eta_again(cr);
		if (cr->on_eta) {
			cr->on_eta(n, eta_node_ms(cr->eta, name), cr->eta_data);
		} else if (cr->b.text && cr->eta_ms >= 0) {
			char dur[32], pull[32], b[32];
			view_duration(dur, sizeof(dur), (uint64_t)cr->eta_ms);
			view_duration(pull, sizeof(pull), (uint64_t)ms);
			pulls_bytes(b, sizeof(b), cr->queued_bytes[n]);
			printf("%s %s: %s pulls %u image%s (%s as last pulled): %s at its earlier "
			       "pulls' rate; the run now %s\n",
			       cr->b.cmd_name, cr->b.inv->cluster.name, name, cr->queued[n],
			       cr->queued[n] == 1 ? "" : "s", b, pull, dur);
			fflush(stdout);
		}
	}
	cr->queued[n] = cr->queued_unknown[n] = 0;
	cr->queued_bytes[n] = 0;
}

/* The estimate's consumer of the run's events. */
static void eta_cb(const struct event *ev, const struct node_status *st, void *data)
{
	struct cli_run *cr = data;

	(void)st;
	eta_machine_cb(cr, ev);
	eta_pull_cb(cr, ev);
}

/*
 * The steps the run will run on node i, for the estimate: the facts, then
 * the steps of each role of its phases that applies to it (a GPU role where
 * the inventory declares GPUs: the facts are not in yet).
 */
static void eta_steps_of(struct eta *eta, const struct cli_run_begin *b, size_t i)
{
	const struct node *n = b->nodes[i];
	unsigned phases = b->phases & (b->node_phases ? b->node_phases[i] : ~0u);
	const char **steps = NULL;
	size_t nr = 1, alloc = 0, ri, k;

	ALLOC_GROW(steps, nr, alloc);
	steps[0] = xstrdup("facts\tgather");
	for (ri = 0; ri < b->roles->nr; ri++) {
		const struct role *r = &b->roles->roles[ri];
		if (r->phase == PHASE_NONE || !(phases & PHASE_BIT(r->phase)) ||
		    !role_applies(r, b->inv, n, n->gpus > 0))
			continue;
		for (k = 0; k < r->nr_steps; k++) {
			ALLOC_GROW(steps, nr + 1, alloc);
			steps[nr++] = xasprintf("%s\t%s", r->name, r->steps[k].name);
		}
	}
	eta_run_steps(eta, n->name, steps, nr);
	for (k = 0; k < nr; k++)
		free((char *)steps[k]);
	free(steps);
}

int cli_run_lock(const char *cmd_name, const char *state_dir, const struct inventory *inv,
		 struct state **out)
{
	struct state_lock_info prev;
	struct error err = {0};
	int rc;

	*out = NULL;
	if (state_open(out, state_dir, true, &err) < 0) {
		fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
		return EXIT_LOCAL;
	}
	rc = state_lock(*out, cmd_name, &prev, &err);
	if (rc < 0) {
		fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		state_free(*out);
		*out = NULL;
		return EXIT_LOCAL;
	}
	if (prev.found) {
		char id[41] = "";
		fprintf(stderr,
			"provision %s: the previous run (%s, pid %ld on %s, started %s) did not "
			"finish: "
			"it was killed%s; this run starts again from the facts\n",
			cmd_name, prev.command, prev.pid, prev.host, prev.started,
			prev.alive ? " (or its pid was reused)" : "");
		if (record_commit_killed(*out, inv->cluster.name, &prev, id, &err) < 0)
			fprintf(stderr, "provision %s: cannot record the killed run: %s\n",
				cmd_name, err.msg);
		else if (id[0])
			fprintf(stderr, "provision %s: its logs are recorded as run %.8s\n",
				cmd_name, id);
	}
	return 0;
}

int cli_run_begin(struct cli_run *cr, const struct cli_run_begin *b)
{
	struct error err = {0};
	char **names = NULL, **kinds = NULL;
	const char **sel = NULL;
	size_t i;
	int rc;

	memset(cr, 0, sizeof(*cr));
	cr->b = *b;
	cr->eta_ms = -1;
	cr->queued_bytes = xcalloc(b->nr ? b->nr : 1, sizeof(*cr->queued_bytes));
	cr->queued = xcalloc(b->nr ? b->nr : 1, sizeof(*cr->queued));
	cr->queued_unknown = xcalloc(b->nr ? b->nr : 1, sizeof(*cr->queued_unknown));
	if (b->state) {
		cr->state = b->state; /* the session's, locked */
	} else {
		rc = cli_run_lock(b->cmd_name, b->state_dir, b->inv, &cr->state);
		if (rc)
			return rc;
	}
	/* Artifacts: into the cache before any node is touched (up only: plan compares hashes). */
	cr->cache = artifact_cache_dir(NULL);
	if (!strcmp(b->cmd_name, "up") || !strcmp(b->cmd_name, "add-node")) {
		rc = cli_fetch_artifacts(b->cmd_name, b->roles, b->inv, b->nodes, b->nr, b->phases,
					 cr->cache, false, false);
		if (rc)
			return rc;
	}
	/* The estimate, from the earlier runs of the same command. */
	names = xcalloc(b->inv->nr_nodes + 1, sizeof(*names));
	kinds = xcalloc(b->inv->nr_nodes + 1, sizeof(*kinds));
	for (i = 0; i < b->inv->nr_nodes; i++) {
		names[i] = b->inv->nodes[i].name;
		kinds[i] = cli_node_kind(&b->inv->nodes[i]);
	}
	cr->eta = eta_load(cr->state, b->cmd_name, (const char *const *)names,
			   (const char *const *)kinds, b->inv->nr_nodes);
	sel = xcalloc(b->nr + 1, sizeof(*sel));
	for (i = 0; i < b->nr; i++)
		sel[i] = b->nodes[i]->name;
	/* the run's phases and steps, not those of each node's last run (issue 33) */
	eta_phases(cr->eta, b->phases_text ? b->phases_text : "all");
	for (i = 0; i < b->nr && b->phases && b->roles; i++)
		eta_steps_of(cr->eta, b, i);
	cr->eta_ms = eta_total_ms(cr->eta, sel, b->nr, b->forks);
	if (b->text) {
		char dur[32];
		struct strbuf what = STRBUF_INIT;
		cr->eta_unknown = eta_unknown(cr->eta, sel, b->nr, &what);
		if (cr->eta_ms >= 0 && cr->eta_unknown) {
			/* a step no earlier run saw do work: not a tiny number, "no history" */
			view_duration(dur, sizeof(dur), (uint64_t)cr->eta_ms);
			printf("%s %s: estimated at least %s (median step times of %zu earlier "
			       "run%s); "
			       "no history of %s doing work\n",
			       b->cmd_name, b->inv->cluster.name, dur, eta_runs(cr->eta),
			       eta_runs(cr->eta) == 1 ? "" : "s", what.buf);
		} else if (cr->eta_ms >= 0) {
			view_duration(dur, sizeof(dur), (uint64_t)cr->eta_ms);
			printf("%s %s: estimated %s (median step times of %zu earlier run%s)\n",
			       b->cmd_name, b->inv->cluster.name, dur, eta_runs(cr->eta),
			       eta_runs(cr->eta) == 1 ? "" : "s");
		} else {
			printf("%s %s: no earlier run to estimate the time from\n", b->cmd_name,
			       b->inv->cluster.name);
		}
		strbuf_release(&what);
		fflush(stdout);
	}
	for (i = 0; i < b->inv->nr_nodes; i++)
		free(kinds[i]);
	free(kinds);
	free(names);
	free(sel);
	if (b->record) {
		struct record_opts ro = {
		    .state_dir = b->state_dir,
		    .command = b->cmd_name,
		    .inventory_path = b->inventory_path,
		    .inv = b->inv,
		    .nodes = b->nodes,
		    .nr = b->nr,
		    .phases = b->phases_text,
		    .steps = b->phases != 0,
		    .secrets = b->secrets,
		};
		cr->rec = record_new(&ro, &err);
		if (!cr->rec) {
			fprintf(stderr, "provision %s: %s\n", b->cmd_name, err.msg);
			return EXIT_LOCAL;
		}
	}
	return 0;
}

void cli_run_wrap(struct cli_run *cr, struct plan_opts *po)
{
	event_consumers_add(&po->consumers, eta_cb, NULL, cr);
	if (cr->rec)
		event_consumers_add(&po->consumers, record_event, NULL, cr->rec);
	po->artifact_cache = cr->cache;
}

int cli_run_end(struct cli_run *cr, const struct plan_result *res, int exit_status)
{
	struct error err = {0};
	char id[41] = "", dur[32], eta[32];

	if (cr->rec) {
		struct record_end end = {exit_status, res->interrupted, cr->eta_ms, &cr->extra};
		if (record_commit(cr->rec, cr->state, res, &end, id, &err) < 0) {
			fprintf(stderr, "provision %s: cannot record the run in '%s': %s\n",
				cr->b.cmd_name, cr->b.state_dir, err.msg);
			if (exit_status == EXIT_OK)
				exit_status = EXIT_LOCAL;
		} else if (cr->b.text) {
			struct state_run *runs = NULL;
			size_t nr = 0;
			state_runs(cr->state, &runs, &nr, NULL);
			printf("%s %s: recorded as run %u (%.8s) in '%s'\n", cr->b.cmd_name,
			       cr->b.inv->cluster.name, nr ? runs[0].number : 0, id,
			       cr->b.state_dir);
			state_runs_free(runs, nr);
		}
	}
	if (cr->b.text && cr->eta_ms > 0 && !res->interrupted) {
		double off =
		    ((double)res->elapsed_ms - (double)cr->eta_ms) * 100.0 / (double)cr->eta_ms;
		view_duration(dur, sizeof(dur), res->elapsed_ms);
		view_duration(eta, sizeof(eta), (uint64_t)cr->eta_ms);
		if (cr->eta_unknown)
			printf(
			    "%s %s: took %s, estimated at least %s (%zu step%s with no history)\n",
			    cr->b.cmd_name, cr->b.inv->cluster.name, dur, eta, cr->eta_unknown,
			    cr->eta_unknown == 1 ? "" : "s");
		else
			printf("%s %s: took %s, estimated %s (%+.0f%%)\n", cr->b.cmd_name,
			       cr->b.inv->cluster.name, dur, eta, off);
	}
	fflush(stdout);
	return exit_status;
}

void cli_run_release(struct cli_run *cr)
{
	record_free(cr->rec);
	free(cr->queued_bytes);
	free(cr->queued);
	free(cr->queued_unknown);
	state_files_release(&cr->extra);
	eta_free(cr->eta);
	if (!cr->b.state)
		state_free(cr->state); /* unlocks */
	free(cr->cache);
	memset(cr, 0, sizeof(*cr));
}

int cli_state_open_ro(const char *cmd_name, const char *inventory, const char *state_opt,
		      struct state **out)
{
	struct error err = {0};
	char *dir;
	int rc;

	*out = NULL;
	if (!inventory && !state_opt) {
		fprintf(stderr,
			"provision %s: missing inventory\n"
			"  hint: give the inventory with -i FILE, or its state folder with --state "
			"DIR\n",
			cmd_name);
		return EXIT_USAGE;
	}
	dir = cli_state_dir(state_opt, inventory);
	rc = state_open(out, dir, false, &err);
	free(dir);
	if (rc < 0) {
		fprintf(stderr, "provision %s: %s\n", cmd_name, err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		return rc == STATE_ERR_EMPTY ? EXIT_USAGE : EXIT_LOCAL;
	}
	return 0;
}

void cli_run_time(char *buf, size_t size, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}
