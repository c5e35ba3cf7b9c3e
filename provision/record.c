/* record: see record.h. */
#include "record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pulls.h"
#include "util.h"
#include "version.h"
#include "view.h"

struct record_node {
	int log_fd;
	char *log_path;
	char *facts;	       /* the last facts gathering's, as facts.h's facts->text; NULL none */
	struct strbuf timings; /* "role\tstep\tms\tresult[\tcheck_ms]\n" */
};

struct record {
	struct record_opts o;
	struct record_node *nodes;
	struct pulls pulls; /* the image pulls of the run, for nodes/NODE/pulls */
	uint64_t start_mono, start_wall;
	char started[40];
};

static void wall_time(char *buf, size_t size, time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S %z", &tm);
}

static const char *who(void)
{
	static char buf[160];
	struct passwd *pw = getpwuid(getuid());
	const char *sudo = getenv("SUDO_USER");
	const char *name = pw ? pw->pw_name : "unknown";

	if (sudo && *sudo && strcmp(sudo, name))
		snprintf(buf, sizeof(buf), "%s (sudo from %s)", name, sudo);
	else
		snprintf(buf, sizeof(buf), "%s", name);
	return buf;
}

static int mkdir_in(const char *dir, const char *sub)
{
	char *p = xasprintf("%s/%s", dir, sub);
	int rc = mkdir(p, 0700) < 0 && errno != EEXIST ? -errno : 0;

	free(p);
	return rc;
}

struct record *record_new(const struct record_opts *o, struct error *err)
{
	struct record *r = xcalloc(1, sizeof(*r));
	char host[128] = "";
	size_t i;
	int e;

	r->o = *o;
	r->start_mono = now_ms();
	r->start_wall = wall_ms();
	wall_time(r->started, sizeof(r->started), (time_t)(r->start_wall / 1000));
	gethostname(host, sizeof(host) - 1);
	r->nodes = xcalloc(o->nr ? o->nr : 1, sizeof(*r->nodes));
	for (i = 0; i < o->nr; i++)
		r->nodes[i].log_fd = -1;
	pulls_init(&r->pulls, o->nr);
	if ((e = mkdir_in(o->state_dir, RECORD_LOGS)) < 0) {
		error_set(err, -1, "cannot create '%s/%s': %s", o->state_dir, RECORD_LOGS,
			  strerror(-e));
		record_free(r);
		return NULL;
	}
	for (i = 0; i < o->nr; i++) {
		struct record_node *rn = &r->nodes[i];
		struct strbuf head = STRBUF_INIT;
		strbuf_init(&rn->timings, 0);
		{
			char *rel = record_log_path(o->nodes[i]->name);
			rn->log_path = xasprintf("%s/%s", o->state_dir, rel);
			free(rel);
		}
		rn->log_fd =
		    open(rn->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
		if (rn->log_fd < 0) {
			error_set(err, -1, "cannot write '%s': %s", rn->log_path, strerror(errno));
			record_free(r);
			return NULL;
		}
		strbuf_addf(
		    &head,
		    "# provision %s %s: node %s, started %s by %s on %s (pid %ld, provision %s)\n",
		    o->command, o->inv->cluster.name, o->nodes[i]->name, r->started, who(), host,
		    (long)getpid(), PROVISION_VERSION);
		(void)write_all(rn->log_fd, head.buf, head.len);
		strbuf_release(&head);
	}
	return r;
}

void record_free(struct record *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->o.nr; i++) {
		if (r->nodes[i].log_fd >= 0)
			close(r->nodes[i].log_fd);
		free(r->nodes[i].log_path);
		free(r->nodes[i].facts);
		strbuf_release(&r->nodes[i].timings);
	}
	free(r->nodes);
	pulls_release(&r->pulls);
	free(r);
}

static void log_line(struct record *r, size_t node, const struct event *ev, const struct strbuf *sb)
{
	struct strbuf line = STRBUF_INIT;
	uint64_t at = ev->at_ms > r->start_mono ? ev->at_ms - r->start_mono : 0;

	if (node >= r->o.nr || r->nodes[node].log_fd < 0)
		return;
	strbuf_addf(&line, "%4llu.%03llu ", (unsigned long long)(at / 1000),
		    (unsigned long long)(at % 1000));
	strbuf_add(&line, sb->buf, sb->len);
	strbuf_addch(&line, '\n');
	(void)write_all(r->nodes[node].log_fd, line.buf, line.len); /* one write: whole lines */
	strbuf_release(&line);
}

void record_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct record *r = data;
	struct record_node *rn;
	struct strbuf sb = STRBUF_INIT;
	const char *role = ev->role ? ev->role : st && st->role ? st->role : phase_name(ev->phase);
	char dur[32];

	if (ev->node >= r->o.nr)
		return;
	rn = &r->nodes[ev->node];
	pulls_event(&r->pulls, ev);
	switch (ev->kind) {
	case EVENT_PROGRESS:
		/* the figures go to nodes/NODE/pulls; the log gets an image's end */
		if (!ev->total || ev->done != ev->total) {
			strbuf_release(&sb);
			return;
		}
		pulls_bytes(dur, sizeof(dur), ev->total);
		strbuf_addf(&sb, "%s › %s: pulled ", role ? role : "", ev->step ? ev->step : "");
		text_clean_append(&sb, ev->text ? ev->text : "");
		strbuf_addf(&sb, " (%s)", dur);
		break;
	case EVENT_FACTS:
		/* parsed by the plan: what the record keeps of them is facts->text */
		free(rn->facts);
		rn->facts = ev->facts && ev->facts->text ? xstrdup(ev->facts->text) : NULL;
		return;
	case EVENT_ROLES:
		return;
	case EVENT_STEP_START:
		if (ev->phase == PHASE_FACTS) {
			/* a new gathering: facts that do not come (it failed) are not kept */
			free(rn->facts);
			rn->facts = NULL;
		}
		strbuf_addf(&sb, "%s › %s: start", role ? role : "", ev->step ? ev->step : "");
		break;
	case EVENT_STEP_END:
		view_duration(dur, sizeof(dur), ev->duration_ms);
		strbuf_addf(&sb, "%s › %s: %s %s", role ? role : "", ev->step ? ev->step : "",
			    step_result_name(ev->result), dur);
		/* node text, in a log a person will cat: the one filter (util.h) */
		if (ev->expected) {
			strbuf_addstr(&sb, ": expected ");
			text_clean_append(&sb, ev->expected);
			strbuf_addstr(&sb, ", observed ");
			text_clean_append(&sb, ev->observed ? ev->observed : "");
		} else if (ev->text) {
			strbuf_addstr(&sb, ": ");
			text_clean_append(&sb, ev->text);
		}
		if (ev->phase != PHASE_VALIDATE) {
			strbuf_addf(&rn->timings, "%s\t%s\t%llu\t%s", role ? role : "",
				    ev->step ? ev->step : "", (unsigned long long)ev->duration_ms,
				    step_result_name(ev->result));
			/* the first check's share, when the step says (role steps do) */
			if (ev->check_ms)
				strbuf_addf(&rn->timings, "\t%llu",
					    (unsigned long long)ev->check_ms);
			strbuf_addch(&rn->timings, '\n');
		}
		break;
	case EVENT_LINE:
		/* facts are recorded in nodes/NODE/facts (EVENT_FACTS), not in the log */
		if (ev->phase == PHASE_FACTS && ev->stream == 1 && ev->text)
			return;
		strbuf_addf(&sb, "%s › %s %s ", role ? role : "", ev->step ? ev->step : "",
			    ev->stream == 2 ? "!" : "|");
		text_clean_append(&sb, ev->text ? ev->text : "");
		break;
	case EVENT_MESSAGE:
		strbuf_addf(&sb, "%s: %s", ev->role ? ev->role : "note",
			    ev->result == STEP_FAILED ? "error: " : "");
		text_clean_append(&sb, ev->text ? ev->text : "");
		break;
	case EVENT_NODE_STATE:
		strbuf_addf(&sb, "node: %s", node_state_name(ev->state));
		if (ev->text) {
			strbuf_addstr(&sb, ": ");
			text_clean_append(&sb, ev->text);
		}
		break;
	}
	log_line(r, ev->node, ev, &sb);
	strbuf_release(&sb);
}

/* ---- the files of a run ---- */

static void add_indented(struct strbuf *out, const char *text, const char *prefix)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		strbuf_addstr(out, prefix);
		strbuf_add(out, p, len);
		strbuf_addch(out, '\n');
		p = nl ? nl + 1 : NULL;
	}
}

/* One line per step, details and drift indented below; the node's end state last. */
static void results_file(struct strbuf *out, const struct plan_node *pn,
			 const struct node_status *st, struct secrets *secrets)
{
	size_t k;

	for (k = 0; k < pn->nr_steps; k++) {
		const struct plan_step_result *s = &pn->steps[k];
		strbuf_addf(out, "%s › %s\t%s\n", s->role->name, s->step,
			    step_result_name(s->result));
		if (s->detail && s->result != STEP_WOULD_CHANGE)
			add_indented(out, s->detail, "\t: ");
		if (s->drift && *s->drift) {
			struct strbuf d = STRBUF_INIT;
			strbuf_addstr(&d, s->drift);
			secrets_redact(secrets, &d);
			strbuf_addstr(out, "\tfound on the node, and put back:\n");
			add_indented(out, d.buf, "\t| ");
			strbuf_release(&d);
		}
	}
	strbuf_addf(out, "node\t%s\n", node_state_name(st->state));
	if (st->reason && st->state != NODE_DONE)
		add_indented(out, st->reason, "\t: ");
}

static void summary_file(struct strbuf *out, const struct record *r, const struct plan_result *res,
			 const struct record_end *end, unsigned nodes_changed,
			 unsigned steps_changed, uint64_t elapsed)
{
	char host[128] = "";
	size_t i;

	gethostname(host, sizeof(host) - 1);
	strbuf_addf(out, "command: %s\n", r->o.command);
	strbuf_addf(out, "cluster: %s\n", r->o.inv->cluster.name);
	strbuf_addf(out, "inventory: %s\n", r->o.inventory_path);
	strbuf_addf(out, "user: %s\n", who());
	strbuf_addf(out, "host: %s\n", host);
	strbuf_addf(out, "pid: %ld\n", (long)getpid());
	strbuf_addf(out, "started: %s\n", r->started);
	strbuf_addf(out, "duration_ms: %llu\n", (unsigned long long)elapsed);
	strbuf_addf(out, "result: %s\n",
		    end->interrupted	    ? "interrupted"
		    : end->exit_status == 0 ? "ok"
					    : "failed");
	strbuf_addf(out, "exit_status: %d\n", end->exit_status);
	strbuf_addf(out, "provision: %s\n", PROVISION_VERSION);
	strbuf_addf(out, "phases: %s\n", r->o.phases ? r->o.phases : "all");
	strbuf_addf(out, "nodes: %zu\n", r->o.nr);
	strbuf_addstr(out, "ran:");
	for (i = 0; i < r->o.nr; i++)
		strbuf_addf(out, " %s", r->o.nodes[i]->name);
	strbuf_addch(out, '\n');
	strbuf_addf(out, "changed: %u\n", nodes_changed);
	strbuf_addf(out, "steps_changed: %u\n", steps_changed);
	strbuf_addf(out, "failed: %zu\n", res->failed + res->unreachable);
	if (end->eta_ms >= 0)
		strbuf_addf(out, "eta_ms: %lld\n", (long long)end->eta_ms);
}

static void validation_file(struct strbuf *out, const struct validation *v,
			    const struct node *const *nodes)
{
	size_t i;

	for (i = 0; i < v->nr; i++) {
		const struct check *c = &v->items[i];
		strbuf_addf(out, "%s\t%s\t%s\t%s\t%s\n", c->id,
			    c->node == CHECK_CLUSTER ? "(cluster)" : nodes[c->node]->name,
			    check_status_name(c->status), c->observed ? c->observed : "",
			    c->expected ? c->expected : "");
	}
}

int record_commit(struct record *r, struct state *s, const struct plan_result *res,
		  const struct record_end *end, char id[41], struct error *err)
{
	struct state_files files = {0};
	struct strbuf sb = STRBUF_INIT, msg = STRBUF_INIT, body = STRBUF_INIT;
	unsigned nodes_changed = 0, steps_changed = 0;
	uint64_t elapsed = now_ms() - r->start_mono;
	char dur[32];
	size_t i, k;
	int rc;

	if (read_file(r->o.inventory_path, &sb) == 0)
		state_files_add(&files, RECORD_INVENTORY, sb.buf, sb.len);
	strbuf_reset(&sb);
	for (i = 0; i < r->o.nr && i < res->nr; i++) {
		const char *name = r->o.nodes[i]->name;
		const struct plan_node *pn = &res->nodes[i];
		const struct node_status *st = &res->status[i];
		struct strbuf deployed = STRBUF_INIT;
		char *path;

		if (r->nodes[i].facts && *r->nodes[i].facts) {
			path = record_node_path(name, RECORD_FACTS);
			state_files_add(&files, path, r->nodes[i].facts, strlen(r->nodes[i].facts));
			free(path);
		}
		if (res->bench && (res->bench[i].ran || res->bench[i].error)) {
			strbuf_reset(&sb);
			bench_record(&sb, &res->bench[i]);
			secrets_redact(r->o.secrets, &sb);
			path = record_node_path(name, RECORD_BENCH);
			state_files_add(&files, path, sb.buf, sb.len);
			free(path);
		}
		if (r->o.steps) {
			strbuf_reset(&sb);
			results_file(&sb, pn, st, r->o.secrets);
			path = record_node_path(name, RECORD_RESULTS);
			state_files_add(&files, path, sb.buf, sb.len);
			free(path);
		}
		path = record_node_path(name, RECORD_TIMINGS);
		state_files_add(&files, path, r->nodes[i].timings.buf, r->nodes[i].timings.len);
		free(path);
		if (r->o.steps) {
			/*
			 * The pulls' figures, for the next ETA: "role\tref\tbytes\tms\tresult",
			 * ms from the first progress to the last byte (result done) or
			 * to the last progress heard (incomplete).
			 */
			const struct pull_node *pnode = &r->pulls.nodes[i];
			strbuf_reset(&sb);
			for (k = 0; k < pnode->nr; k++) {
				const struct pull_image *im = &pnode->images[k];
				uint64_t last = im->done_ms ? im->done_ms : im->last_ms;
				strbuf_addf(
				    &sb, "%s\t%s\t%llu\t%llu\t%s\n", im->role, im->ref,
				    (unsigned long long)(im->done_ms ? im->total : im->done),
				    (unsigned long long)(last - im->first_ms),
				    im->done_ms ? "done" : "incomplete");
			}
			path = record_node_path(name, RECORD_PULLS);
			state_files_add(&files, path, sb.buf, sb.len);
			free(path);
		}
		for (k = 0; k < pn->nr_steps; k++) {
			const struct plan_step_result *ps = &pn->steps[k];
			if (!ps->is_file || !ps->sha256[0] ||
			    (ps->result != STEP_CHANGED && ps->result != STEP_UNCHANGED))
				continue;
			strbuf_addf(&deployed, "%s %04o %s %s %s %s/%s\n", ps->sha256, ps->mode,
				    ps->owner ? ps->owner : "", ps->step,
				    ps->is_artifact ? "artifact" : "template", ps->role->name,
				    ps->source ? ps->source : "");
			if (ps->content) {
				struct strbuf c = STRBUF_INIT;
				strbuf_add(&c, ps->content, ps->content_len);
				secrets_redact(r->o.secrets, &c);
				path = record_file_path(name, ps->step);
				state_files_add(&files, path, c.buf, c.len);
				free(path);
				explicit_bzero(c.buf, c.len);
				strbuf_release(&c);
			}
		}
		if (deployed.len) {
			path = record_node_path(name, RECORD_DEPLOYED);
			state_files_add(&files, path, deployed.buf, deployed.len);
			free(path);
		}
		strbuf_release(&deployed);
		strbuf_reset(&sb);
		if (read_file(r->nodes[i].log_path, &sb) == 0) {
			path = record_log_path(name);
			state_files_add(&files, path, sb.buf, sb.len);
			free(path);
		}
		steps_changed += pn->changed;
		nodes_changed += pn->changed > 0;
		view_duration(dur, sizeof(dur),
			      st->ended_ms > st->queued_ms ? st->ended_ms - st->queued_ms : 0);
		strbuf_addf(&body, "%s: %s, %u changed, %u unchanged, %u failed, %u skipped, %s\n",
			    name, node_state_name(st->state), pn->changed, pn->unchanged,
			    pn->failed, pn->skipped, dur);
		if (st->reason && st->state != NODE_DONE)
			strbuf_addf(&body, "  %s\n", st->reason);
	}
	if (res->validation.nr) {
		strbuf_reset(&sb);
		validation_file(&sb, &res->validation, r->o.nodes);
		secrets_scrub(r->o.secrets, &sb); /* observed values are node text */
		state_files_add(&files, RECORD_VALIDATION, sb.buf, sb.len);
		strbuf_addf(&body, "validation: %zu checks, %zu failed\n", res->validation.nr,
			    validation_failures(&res->validation));
	}
	strbuf_reset(&sb);
	summary_file(&sb, r, res, end, nodes_changed, steps_changed, elapsed);
	state_files_add(&files, RECORD_SUMMARY, sb.buf, sb.len);
	for (i = 0; end->extra && i < end->extra->nr; i++)
		state_files_add(&files, end->extra->items[i].path, end->extra->items[i].data,
				end->extra->items[i].len);

	view_duration(dur, sizeof(dur), elapsed);
	strbuf_addf(&msg, "%s %s: %zu node%s, %u changed, %zu failed, %s%s\n\n%s", r->o.command,
		    r->o.inv->cluster.name, r->o.nr, r->o.nr == 1 ? "" : "s", nodes_changed,
		    res->failed + res->unreachable, dur, end->interrupted ? ", interrupted" : "",
		    body.buf);
	rc = state_commit(s, &files, msg.buf, r->start_wall, id, err);
	state_files_release(&files);
	strbuf_release(&sb);
	strbuf_release(&msg);
	strbuf_release(&body);
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int record_commit_killed(struct state *s, const char *cluster, const struct state_lock_info *killed,
			 char id[41], struct error *err)
{
	struct state_files files = {0};
	struct strbuf ran = STRBUF_INIT, msg = STRBUF_INIT, sb = STRBUF_INIT;
	char *dir = xasprintf("%s/%s", state_dir(s), RECORD_LOGS), head[41] = "", **names = NULL;
	size_t nr_names = 0, i;
	bool have_head = state_resolve(s, "~0", head, NULL) == 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	while (d && (de = readdir(d))) {
		char *node = record_log_node(de->d_name);
		if (!node)
			continue;
		free(node);
		names = xrealloc(names, (nr_names + 1) * sizeof(*names));
		names[nr_names++] = xstrdup(de->d_name); /* sorted as the files were */
	}
	if (d)
		closedir(d);
	if (nr_names)
		qsort(names, nr_names, sizeof(*names), cmp_name);
	for (i = 0; i < nr_names; i++) {
		char *node = record_log_node(names[i]);
		struct strbuf old = STRBUF_INIT;
		char *path, *rel;
		rel = record_log_path(node);
		path = xasprintf("%s/%s", state_dir(s), rel);
		strbuf_reset(&sb);
		if (read_file(path, &sb) == 0 &&
		    !(have_head && state_read(s, head, rel, &old, NULL) == 0 && old.len == sb.len &&
		      !memcmp(old.buf, sb.buf, sb.len))) {
			strbuf_addf(&sb, "     (the run was killed here)\n");
			state_files_add(&files, rel, sb.buf, sb.len);
			strbuf_addf(&ran, " %s", node);
		}
		strbuf_release(&old);
		free(path);
		free(rel);
		free(node);
		free(names[i]);
	}
	free(names);
	if (files.nr) {
		strbuf_reset(&sb);
		strbuf_addf(&sb,
			    "command: %s\ncluster: %s\nuser: %s\nhost: %s\npid: %ld\nstarted: %s\n"
			    "result: killed\nexit_status: -1\nprovision: %s\nran:%s\n",
			    killed->command, cluster, killed->user, killed->host, killed->pid,
			    killed->started, PROVISION_VERSION, ran.buf);
		state_files_add(&files, RECORD_SUMMARY, sb.buf, sb.len);
		strbuf_addf(&msg,
			    "%s %s: killed (pid %ld, started %s)\n\nThe run ended without "
			    "finishing (SIGKILL, a crash or a power cut): it left its lock "
			    "behind.  The logs it had written, of%s, are recorded here.\n",
			    killed->command, cluster, killed->pid, killed->started, ran.buf);
		rc = state_commit(s, &files, msg.buf, wall_ms(), id, err);
	} else if (id) {
		id[0] = '\0';
	}
	state_files_release(&files);
	strbuf_release(&ran);
	strbuf_release(&msg);
	strbuf_release(&sb);
	free(dir);
	return rc;
}
