/* tui model: see model.h. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../preflight.h"
#include "../view.h"

/* Per node: enough for a long apt run, small enough for 200 nodes (50 MiB at worst). */
#define LOG_MAX_LINES 4000
#define LOG_MAX_BYTES (256 << 10)

/* ---- the log ---- */

void tui_log_init(struct tui_log *log, size_t max_lines, size_t max_bytes)
{
	memset(log, 0, sizeof(*log));
	log->cap = max_lines ? max_lines : 1;
	log->max_bytes = max_bytes;
	log->ring = xcalloc(log->cap, sizeof(*log->ring));
}

void tui_log_release(struct tui_log *log)
{
	size_t i;

	for (i = 0; i < log->count; i++)
		free(log->ring[(log->head + i) % log->cap]);
	free(log->ring);
	memset(log, 0, sizeof(*log));
}

static void log_drop_oldest(struct tui_log *log)
{
	struct tui_log_line *l = log->ring[log->head];

	log->bytes -= strlen(l->text) + 1;
	free(l);
	log->ring[log->head] = NULL;
	log->head = (log->head + 1) % log->cap;
	log->count--;
}

void tui_log_add(struct tui_log *log, enum tui_line_kind kind, const char *text)
{
	size_t len = strlen(text);
	struct tui_log_line *l;

	if (!log->ring)
		return;
	while (log->count && (log->count == log->cap || log->bytes + len + 1 > log->max_bytes))
		log_drop_oldest(log);
	l = xmalloc(sizeof(*l) + len + 1);
	l->kind = (unsigned char)kind;
	memcpy(l->text, text, len + 1);
	log->ring[(log->head + log->count) % log->cap] = l;
	log->count++;
	log->bytes += len + 1;
	log->seq++;
}

uint64_t tui_log_first(const struct tui_log *log)
{
	return log->seq - log->count;
}

const struct tui_log_line *tui_log_get(const struct tui_log *log, uint64_t n)
{
	if (n < tui_log_first(log) || n >= log->seq)
		return NULL;
	return log->ring[(log->head + (size_t)(n - tui_log_first(log))) % log->cap];
}

/* ---- text helpers ---- */

char *tui_split_hint(const char *text, size_t *msg_len)
{
	const char *h = text ? strstr(text, " (hint: ") : NULL;
	const char *p, *end;

	if (!text) {
		*msg_len = 0;
		return NULL;
	}
	/* The last one: a failing step's output may itself say "(hint: ". */
	while (h && (p = strstr(h + 1, " (hint: ")))
		h = p;
	if (!h) {
		*msg_len = strlen(text);
		return NULL;
	}
	*msg_len = (size_t)(h - text);
	h += 8;
	end = h + strlen(h);
	if (end > h && end[-1] == ')')
		end--;
	return xstrndup(h, (size_t)(end - h));
}

static const char *short_model(const char *model)
{
	const char *m = gpu_short_model(model);

	if (!strncmp(m, "GeForce ", 8))
		m += 8;
	return m;
}

void tui_gpu_summary(char *buf, size_t size, const struct facts *f, bool utf8)
{
	size_t found = f->nr_nvidia_pci > f->nr_gpus ? f->nr_nvidia_pci : f->nr_gpus, k;
	bool same = true;

	if (!found) {
		snprintf(buf, size, "no GPU");
		return;
	}
	if (!f->nr_gpus) {
		snprintf(buf, size, "%zu GPU%s, no driver", found, found == 1 ? "" : "s");
		return;
	}
	for (k = 1; k < f->nr_gpus; k++)
		same = same && !strcmp(f->gpus[k].model, f->gpus[0].model);
	if (same && f->nr_gpus == 1)
		snprintf(buf, size, "%s", short_model(f->gpus[0].model));
	else if (same)
		snprintf(buf, size, "%zu%s%s", f->nr_gpus, utf8 ? "× " : "x ",
			 short_model(f->gpus[0].model));
	else if (f->nr_gpus == 2)
		snprintf(buf, size, "%s + %s", short_model(f->gpus[0].model),
			 short_model(f->gpus[1].model));
	else
		snprintf(buf, size, "%zu GPUs, mixed", f->nr_gpus);
}

const char *tui_cell_state_name(enum tui_cell_state s)
{
	switch (s) {
	case TUI_CELL_NA:
		return "does not apply";
	case TUI_CELL_PENDING:
		return "pending";
	case TUI_CELL_RUNNING:
		return "running";
	case TUI_CELL_UNCHANGED:
		return "unchanged";
	case TUI_CELL_CHANGED:
		return "changed";
	case TUI_CELL_WOULD_CHANGE:
		return "would change";
	case TUI_CELL_WARN:
		return "warnings";
	case TUI_CELL_SKIPPED:
		return "skipped";
	case TUI_CELL_NOT_REACHED:
		return "not reached";
	case TUI_CELL_FAILED:
		return "failed";
	}
	return "?";
}

/* ---- columns and applicability ---- */

static void node_roles_text(char *buf, size_t size, unsigned roles)
{
	static const struct {
		unsigned bit;
		const char *name;
	} short_names[] = {
	    {NODE_ROLE_CONTROL_PLANE, "cp"},
	    {NODE_ROLE_WORKER, "worker"},
	    {NODE_ROLE_NFS_SERVER, "nfs"},
	};
	size_t k, len = 0;

	buf[0] = '\0';
	for (k = 0; k < ARRAY_SIZE(short_names); k++)
		if (roles & short_names[k].bit)
			len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s",
						len ? "," : "", short_names[k].name);
	if (!len)
		snprintf(buf, size, "-");
}

static unsigned role_total(const struct role *r)
{
	return (unsigned)(r->nr_steps + r->nr_templates);
}

/* Whether column c applies to node i, from what is known now. */
static bool col_applies(const struct tui_model *m, size_t c, size_t i)
{
	const struct tui_node *n = &m->nodes[i];
	const struct role *r = m->cols[c].role;

	if (!r)
		return c < 2; /* facts and preflight: every node; event columns: when seen */
	/* as the plan decided (EVENT_ROLES); before that, as the inventory says */
	if (n->plan_roles)
		return n->plan_roles[r - m->roles->roles];
	return role_applies(r, m->inv, n->node, node_has_gpu(n->node, NULL));
}

static void recount_total(struct tui_model *m, size_t i)
{
	struct tui_node *n = &m->nodes[i];
	size_t c;

	/* Steps are the facts step and the roles' steps: preflight and validation run none. */
	n->steps_total = 0;
	for (c = 0; c < m->nr_cols; c++)
		if (n->cells[c].state != TUI_CELL_NA && (c == 0 || m->cols[c].role))
			n->steps_total += n->cells[c].total ? n->cells[c].total : 1;
}

/* The plan said which roles the node takes part in: GPU roles may now apply, or no longer. */
static void reapply(struct tui_model *m, size_t i)
{
	struct tui_node *n = &m->nodes[i];
	size_t c;

	for (c = 2; c < m->nr_cols; c++) {
		struct tui_cell *cell = &n->cells[c];
		bool applies;
		if (!m->cols[c].role)
			continue;
		applies = col_applies(m, c, i);
		if (applies && cell->state == TUI_CELL_NA)
			cell->state = TUI_CELL_PENDING;
		else if (!applies && cell->state == TUI_CELL_PENDING)
			cell->state = TUI_CELL_NA;
	}
	recount_total(m, i);
}

size_t tui_model_column(struct tui_model *m, const char *name)
{
	const struct role *r = NULL;
	size_t c, i;

	for (c = 0; c < m->nr_cols; c++)
		if (!strcmp(m->cols[c].name, name))
			return c;
	if (m->roles && m->nr_cols >= 2)
		r = role_set_find(m->roles, name);
	if (m->nr_cols == m->alloc_cols) {
		size_t alloc = m->alloc_cols ? m->alloc_cols * 2 : 16;
		for (i = 0; i < m->nr; i++) {
			m->nodes[i].cells =
			    xrealloc(m->nodes[i].cells, alloc * sizeof(struct tui_cell));
			memset(m->nodes[i].cells + m->alloc_cols, 0,
			       (alloc - m->alloc_cols) * sizeof(struct tui_cell));
		}
		m->cols = xrealloc(m->cols, alloc * sizeof(*m->cols));
		m->alloc_cols = alloc;
	}
	m->cols[c].name = xstrdup(name);
	m->cols[c].role = r;
	m->cols[c].phase = r ? r->phase : role_phase_index(name);
	m->nr_cols++;
	for (i = 0; i < m->nr; i++) {
		struct tui_cell *cell = &m->nodes[i].cells[c];
		memset(cell, 0, sizeof(*cell));
		cell->total = r ? (unsigned short)role_total(r) : (c == 0 ? 1 : 0);
		/* A column first seen in an event applies to nodes as their events say. */
		cell->state = (r || c < 2) && col_applies(m, c, i) ? TUI_CELL_PENDING : TUI_CELL_NA;
	}
	if (r)
		tui_checks_column(&m->checks, r->name, NULL);
	return c;
}

/*
 * Whether role R may apply to one of the nodes, GPU or not (facts decide that
 * later): a role the inventory rules out everywhere (containerd-release
 * without containerd: release, the hub's without a hub) gets no column.
 */
static bool role_for_any(const struct role *r, const struct inventory *inv,
			 const struct node *const *nodes, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (role_may_apply(r, inv, nodes[i]))
			return true;
	return false;
}

void tui_model_init(struct tui_model *m, const struct inventory *inv, const struct role_set *rs,
		    unsigned phases, bool check_only, bool validate,
		    const struct node *const *nodes, size_t nr, uint64_t now)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	pulls_init(&m->pulls, nr);
	m->inv = inv;
	m->roles = rs;
	m->phases = phases;
	m->check_only = check_only;
	m->started_ms = now;
	m->nr = nr;
	m->nodes = xcalloc(nr ? nr : 1, sizeof(*m->nodes));
	tui_checks_init(&m->checks, nr);
	tui_checks_column(&m->checks, "reachable", "reach");
	tui_checks_column(&m->checks, "gpus", NULL);
	tui_checks_column(&m->checks, "preflight", NULL);
	for (i = 0; i < nr; i++) {
		struct tui_node *n = &m->nodes[i];
		n->node = nodes[i];
		n->cur_col = -1;
		n->last_col = -1;
		n->fail_col = -1;
		n->eta_hist_ms = -1;
		tui_log_init(&n->log, LOG_MAX_LINES, LOG_MAX_BYTES);
		node_roles_text(n->roles, sizeof(n->roles), nodes[i]->roles);
		if (nodes[i]->gpus > 0)
			snprintf(n->gpu, sizeof(n->gpu), "%d GPU%s?", nodes[i]->gpus,
				 nodes[i]->gpus == 1 ? "" : "s");
	}
	tui_model_column(m, phase_name(PHASE_FACTS));
	tui_model_column(m, phase_name(PHASE_PREFLIGHT));
	for (i = 0; rs && i < rs->nr; i++) {
		enum phase ph = rs->roles[i].phase;
		if (ph != PHASE_NONE && (phases & PHASE_BIT(ph)) &&
		    role_for_any(&rs->roles[i], inv, nodes, nr))
			tui_model_column(m, rs->roles[i].name);
	}
	if (validate) {
		/* Not a role: its results come as events, one per check, after the roles. */
		size_t c = tui_model_column(m, phase_name(PHASE_VALIDATE));
		for (i = 0; i < nr; i++)
			m->nodes[i].cells[c].state = TUI_CELL_PENDING;
	}
	for (i = 0; i < nr; i++)
		recount_total(m, i);
}

void tui_model_release(struct tui_model *m)
{
	size_t i;

	pulls_release(&m->pulls);
	for (i = 0; i < m->nr; i++) {
		struct tui_node *n = &m->nodes[i];
		free(n->cells);
		free(n->cur_step);
		free(n->last_step);
		tui_log_release(&n->log);
		free(n->plan_roles);
		free(n->fail_check);
		free(n->fail_where);
		free(n->fail_text);
		free(n->fail_hint);
	}
	for (i = 0; i < m->nr_cols; i++)
		free(m->cols[i].name);
	free(m->cols);
	free(m->nodes);
	tui_checks_release(&m->checks);
	memset(m, 0, sizeof(*m));
}

/* ---- events ---- */

/* What a column shows once its steps are over. */
static enum tui_cell_state settled(const struct tui_model *m, const struct tui_cell *cell)
{
	if (cell->failed)
		return TUI_CELL_FAILED;
	if (cell->changed)
		return m->check_only ? TUI_CELL_WOULD_CHANGE : TUI_CELL_CHANGED;
	if (cell->skipped && !cell->unchanged)
		return TUI_CELL_SKIPPED;
	if (cell->done)
		return TUI_CELL_UNCHANGED;
	return TUI_CELL_NOT_REACHED;
}

static void role_check(struct tui_model *m, size_t i, size_t c, const char *fail_text)
{
	const struct tui_cell *cell = &m->nodes[i].cells[c];
	const char *name = m->cols[c].name;
	struct strbuf obs = STRBUF_INIT;
	enum tui_check_state st;
	char *hint = NULL;
	size_t len;

	if (!m->cols[c].role)
		return;
	strbuf_addf(&obs, "%u of %u step%s: %u unchanged, %u %s, %u skipped", cell->done,
		    cell->total, cell->total == 1 ? "" : "s", cell->unchanged, cell->changed,
		    m->check_only ? "would change" : "changed", cell->skipped);
	if (cell->failed) {
		st = TUI_CHECK_FAILED;
		hint = tui_split_hint(fail_text, &len);
		strbuf_reset(&obs);
		strbuf_add(&obs, fail_text ? fail_text : "failed", fail_text ? len : 6);
	} else if (cell->changed && m->check_only) {
		st = TUI_CHECK_WARN;
	} else {
		st = TUI_CHECK_OK;
	}
	tui_checks_set(&m->checks, name, i, st,
		       m->check_only ? "every step's check passes: nothing to change"
				     : "every step's check passes after apply",
		       obs.buf,
		       hint			? hint
		       : st == TUI_CHECK_WARN	? "provision up applies the changes"
		       : st == TUI_CHECK_FAILED ? "see the step's output (Enter: the log)"
						: NULL);
	free(hint);
	strbuf_release(&obs);
}

static void finish_col(struct tui_model *m, size_t i, int c)
{
	struct tui_node *n = &m->nodes[i];

	if (c < 0 || (size_t)c >= m->nr_cols)
		return;
	if (n->cells[c].state == TUI_CELL_RUNNING) {
		struct tui_cell *cell = &n->cells[c];
		cell->state = (unsigned char)settled(m, cell);
		/* A role skipped as a whole (it waited for one that failed) ran one step of its
		 * total. */
		if (cell->state == TUI_CELL_SKIPPED && cell->total > cell->done)
			n->steps_done += cell->total - cell->done;
	}
	if (n->cur_col == c) {
		n->cur_col = -1;
		free(n->cur_step);
		n->cur_step = NULL;
	}
}

/*
 * The node's first failure, for `f` and the summary: where (a column and,
 * in the matrix, a check), what, how to fix it, and its output in the log:
 * the failing step's lines when it was running, else the line just logged.
 */
static void record_failure(struct tui_model *m, size_t i, int c, const char *check,
			   const char *where, const char *text)
{
	struct tui_node *n = &m->nodes[i];
	size_t len;

	if (n->fail_order)
		return;
	n->fail_order = ++m->failures;
	n->fail_col = c;
	n->fail_check = xstrdup(check ? check : "");
	n->fail_where = xstrdup(where ? where : "");
	n->fail_hint = tui_split_hint(text, &len);
	n->fail_text = text ? xstrndup(text, len) : xstrdup("failed");
	n->fail_first = n->cur_col == c && c >= 0 && n->in_step_failed ? n->step_first
			: n->log.seq				       ? n->log.seq - 1
								       : 0;
	n->fail_end = n->log.seq;
}

/* Preflight is over for everyone: nodes it had nothing against passed it. */
static void preflight_done(struct tui_model *m)
{
	size_t i;

	if (m->after_facts)
		return;
	m->after_facts = true;
	for (i = 0; i < m->nr; i++) {
		struct tui_node *n = &m->nodes[i];
		if (!n->have_facts || n->cells[1].state != TUI_CELL_PENDING)
			continue;
		n->cells[1].state = n->preflight_warn ? TUI_CELL_WARN : TUI_CELL_UNCHANGED;
		if (!n->preflight_warn)
			tui_checks_set(&m->checks, "preflight", i, TUI_CHECK_OK,
				       "no problem with the node against the inventory",
				       "no problem found", NULL);
	}
}

/*
 * With a VIP (cluster.api_endpoint.vip), the control plane that holds it
 * says so in its roles ("cp,VIP"), from each fresh facts (a failover moves
 * the mark); a node without facts (unreachable) does not say it.
 */
static void vip_mark(struct tui_model *m, struct tui_node *n, const struct facts *f)
{
	size_t len;

	if (!m->inv || m->inv->cluster.api_endpoint.kind != API_ENDPOINT_VIP ||
	    !(n->node->roles & NODE_ROLE_CONTROL_PLANE))
		return;
	node_roles_text(n->roles, sizeof(n->roles), n->node->roles);
	len = strlen(n->roles);
	if (f && f->vip_held)
		snprintf(n->roles + len, sizeof(n->roles) - len, ",VIP");
}

/* The node's facts, as the plan parsed them (EVENT_FACTS): what the views show of them. */
static void facts_in(struct tui_model *m, size_t i, const struct facts *f)
{
	struct tui_node *n = &m->nodes[i];

	if (f)
		vip_mark(m, n, f);
	if (n->have_facts || !f)
		return;
	n->have_facts = true;
	tui_gpu_summary(n->gpu, sizeof(n->gpu), f, true);
	tui_checks_set(&m->checks, "reachable", i, TUI_CHECK_OK,
		       "an SSH session as the inventory says, and facts gathered",
		       f->os_pretty ? f->os_pretty : "facts gathered", NULL);
	tui_checks_gpus(&m->checks, i, n->node, f);
}

/* The roles node i takes part in, as the plan decided them (EVENT_ROLES). */
static void roles_in(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];

	if (!m->roles || !ev->roles || ev->nr_roles != m->roles->nr)
		return;
	free(n->plan_roles);
	n->plan_roles = xmalloc(ev->nr_roles * sizeof(*n->plan_roles));
	memcpy(n->plan_roles, ev->roles, ev->nr_roles * sizeof(*n->plan_roles));
	reapply(m, i);
}

/* No facts from the node: the facts step failed, or the node could not be reached. */
static void facts_failed(struct tui_model *m, size_t i, const char *why)
{
	vip_mark(m, &m->nodes[i], NULL);
	tui_checks_set(&m->checks, "reachable", i, TUI_CHECK_FAILED,
		       "an SSH session as the inventory says, and facts gathered",
		       why ? why : "no facts",
		       "check the address, that sshd runs, the key and known_hosts");
}

static void line_event(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	struct strbuf clean = STRBUF_INIT;

	if (!ev->text)
		return;
	text_clean_line(&clean, ev->text);
	tui_log_add(&n->log, ev->stream == 2 ? TUI_LINE_ERR : TUI_LINE_OUT, clean.buf);
	strbuf_release(&clean);
}

static void step_start(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	const char *name = ev->role		   ? ev->role
			   : phase_name(ev->phase) ? phase_name(ev->phase)
						   : "?";
	size_t c = tui_model_column(m, name);
	struct strbuf line = STRBUF_INIT;

	if (c >= 2)
		preflight_done(m);
	if (n->cur_col >= 0 && (size_t)n->cur_col != c)
		finish_col(m, i, n->cur_col);
	n->cells[c].state = TUI_CELL_RUNNING;
	n->cur_col = (int)c;
	free(n->cur_step);
	n->cur_step = xstrdup(ev->step ? ev->step : "");
	n->step_started_ms = ev->at_ms;
	n->in_step = true;
	if (!n->started_ms)
		n->started_ms = ev->at_ms;
	strbuf_addf(&line, "%s \xe2\x80\xba %s", name, n->cur_step);
	n->step_first = n->log.seq;
	tui_log_add(&n->log, TUI_LINE_STEP, line.buf);
	strbuf_release(&line);
}

/*
 * A result that is not a role's step: a validation check (phase "validate",
 * expected and observed set) or a later phase's step; each is one cell of
 * the matrix, named by the step.
 */
static void check_event(struct tui_model *m, size_t i, const struct event *ev)
{
	size_t len;
	char *hint = tui_split_hint(ev->text, &len);
	char *obs = ev->observed ? xstrdup(ev->observed)
		    : ev->text	 ? xstrndup(ev->text, len)
				 : xstrdup(step_result_name(ev->result));
	enum tui_check_state st = ev->result == STEP_FAILED    ? TUI_CHECK_FAILED
				  : ev->result == STEP_SKIPPED ? TUI_CHECK_NA
				  : ev->result == STEP_WARNED  ? TUI_CHECK_WARN
							       : TUI_CHECK_OK;

	tui_checks_set(&m->checks, ev->step ? ev->step : "?", i, st,
		       ev->expected ? ev->expected : "passes", obs, hint);
	free(obs);
	free(hint);
}

static void step_end(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	const char *name = ev->role		   ? ev->role
			   : phase_name(ev->phase) ? phase_name(ev->phase)
						   : "?";
	size_t c = tui_model_column(m, name);
	struct tui_cell *cell = &n->cells[c];
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	char dur[32];

	cell->done++;
	n->in_step = false;
	n->last_col = (int)c;
	free(n->last_step);
	n->last_step = xstrdup(ev->step ? ev->step : "");
	n->last_result = ev->result;
	if (c == 0 || m->cols[c].role)
		n->steps_done++;
	switch (ev->result) {
	case STEP_CHANGED:
	case STEP_WOULD_CHANGE:
		cell->changed++;
		break;
	case STEP_FAILED:
		cell->failed++;
		break;
	case STEP_SKIPPED:
		cell->skipped++;
		break;
	default:
		cell->unchanged++;
		break;
	}
	if (c >= 2 && !m->cols[c].role)
		check_event(m, i, ev);
	if (c >= 2 && m->cols[c].role && ev->result != STEP_OK) {
		m->step_ms_sum += ev->duration_ms;
		m->step_count++;
	}
	view_duration(dur, sizeof(dur), ev->duration_ms);
	if (c >= 2 && !m->cols[c].role && ev->expected)
		strbuf_addf(&line, "%s \xe2\x80\xba %s: %s", name, ev->step ? ev->step : "",
			    step_result_name(ev->result));
	else
		strbuf_addf(&line, "%s %s", step_result_name(ev->result), dur);
	if (ev->text && ev->result != STEP_WOULD_CHANGE) {
		text_clean_line(&clean, ev->text);
		strbuf_addf(&line, ": %s", clean.buf);
	}
	tui_log_add(&n->log, ev->result == STEP_FAILED ? TUI_LINE_FAILED : TUI_LINE_RESULT,
		    line.buf);
	if (ev->result == STEP_FAILED) {
		char *where = xasprintf("%s \xe2\x80\xba %s", name, ev->step ? ev->step : "");
		/* A step that ran (it had a start) shows its own lines; a check its result. */
		n->in_step_failed = cell->state == TUI_CELL_RUNNING;
		record_failure(m, i, (int)c,
			       m->cols[c].role || c < 2 ? name
			       : ev->step		? ev->step
							: name,
			       where, ev->text);
		n->in_step_failed = false;
		free(where);
	}
	if (c == 0 && ev->result == STEP_FAILED)
		facts_failed(m, i, ev->text);
	if (cell->state != TUI_CELL_RUNNING)
		cell->state =
		    (unsigned char)settled(m, cell); /* a result without a start: a check */
	if (cell->total && cell->done >= cell->total)
		finish_col(m, i, (int)c);
	if (cell->failed || (cell->total && cell->done >= cell->total) || c == 0)
		role_check(m, i, c, ev->text);
	strbuf_release(&line);
	strbuf_release(&clean);
}

/*
 * A command's own question to the node (events.h `query`: upgrade's
 * versions, backup's download, restore's upload): lines of the node's log,
 * "ROLE › STEP" and how it ended; no role's cell counts it.
 */
static void query_step(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	char dur[32];

	if (ev->kind == EVENT_STEP_START) {
		strbuf_addf(&line, "%s \xe2\x80\xba %s", ev->role ? ev->role : "?",
			    ev->step ? ev->step : "");
		tui_log_add(&n->log, TUI_LINE_STEP, line.buf);
	} else {
		view_duration(dur, sizeof(dur), ev->duration_ms);
		strbuf_addf(&line, "%s %s", step_result_name(ev->result), dur);
		if (ev->text) {
			text_clean_line(&clean, ev->text);
			strbuf_addf(&line, ": %s", clean.buf);
		}
		tui_log_add(&n->log, ev->result == STEP_FAILED ? TUI_LINE_FAILED : TUI_LINE_RESULT,
			    line.buf);
	}
	strbuf_release(&line);
	strbuf_release(&clean);
}

static void message(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	bool preflight = phase_is(ev->role, PHASE_PREFLIGHT);
	bool error = ev->result == STEP_FAILED;
	struct strbuf line = STRBUF_INIT;

	strbuf_addf(&line, "%s: %s%s", ev->role ? ev->role : "note", error ? "error: " : "",
		    ev->text ? ev->text : "");
	tui_log_add(&n->log, error ? TUI_LINE_FAILED : TUI_LINE_NOTE, line.buf);
	strbuf_release(&line);
	if (!preflight)
		return;
	if (error)
		n->preflight_error = true;
	else
		n->preflight_warn = true;
	n->cells[1].state = error ? TUI_CELL_FAILED : TUI_CELL_WARN;
	{
		/* Every problem of the node in one cell: the matrix has one preflight column. */
		size_t col = tui_checks_column(&m->checks, "preflight", NULL), len;
		const struct tui_check *old = tui_checks_get(&m->checks, col, i);
		char *hint = tui_split_hint(ev->text, &len);
		struct strbuf obs = STRBUF_INIT, fix = STRBUF_INIT;
		if (old && old->observed && old->state != TUI_CHECK_OK)
			strbuf_addf(&obs, "%s; ", old->observed);
		strbuf_add(&obs, ev->text ? ev->text : "", ev->text ? len : 0);
		if (old && old->fix)
			strbuf_addf(&fix, "%s; ", old->fix);
		if (hint)
			strbuf_addstr(&fix, hint);
		tui_checks_set(&m->checks, "preflight", i,
			       n->preflight_error ? TUI_CHECK_FAILED : TUI_CHECK_WARN,
			       "no problem with the node against the inventory", obs.buf,
			       fix.len ? fix.buf : NULL);
		if (error)
			record_failure(m, i, 1, "preflight", "preflight", ev->text);
		free(hint);
		strbuf_release(&obs);
		strbuf_release(&fix);
	}
}

/* The node's run is over: what waits will not run, what runs has stopped. */
static void node_ended(struct tui_model *m, size_t i, const struct event *ev)
{
	struct tui_node *n = &m->nodes[i];
	bool done = ev->state == NODE_DONE;
	struct strbuf line = STRBUF_INIT;
	size_t c;

	n->ended_ms = ev->at_ms;
	if (ev->state == NODE_UNREACHABLE ||
	    (ev->state == NODE_FAILED && !n->have_facts && n->cells[0].state != TUI_CELL_FAILED)) {
		n->cells[0].state = TUI_CELL_FAILED;
		facts_failed(m, i, ev->text);
	}
	if (n->cur_col >= 0) {
		struct tui_cell *cell = &n->cells[n->cur_col];
		int cc = n->cur_col;
		finish_col(m, i, cc);
		/* Stopped in the middle (interrupted, connection lost): not a full result. */
		if (!done && cell->state != TUI_CELL_FAILED && cell->total &&
		    cell->done < cell->total)
			cell->state =
			    cell->done ? (unsigned char)settled(m, cell) : TUI_CELL_NOT_REACHED;
	}
	for (c = 0; c < m->nr_cols; c++) {
		struct tui_cell *cell = &n->cells[c];
		if (cell->state != TUI_CELL_PENDING)
			continue;
		if (c == 1 && done && n->have_facts)
			cell->state = n->preflight_warn ? TUI_CELL_WARN : TUI_CELL_UNCHANGED;
		else if (done && c >= 2 && !m->cols[c].role)
			continue; /* validation comes after the nodes are done */
		else
			cell->state = done ? TUI_CELL_NA : TUI_CELL_NOT_REACHED;
	}
	if (done)
		recount_total(m, i);
	/* The matrix says so too, rather than leaving the role's check unknown. */
	for (c = 2; c < m->nr_cols; c++) {
		if (!m->cols[c].role)
			continue;
		if (n->cells[c].state == TUI_CELL_NA)
			tui_checks_set(&m->checks, m->cols[c].name, i, TUI_CHECK_NA,
				       "applies to this node", "does not apply to this node", NULL);
		else if (n->cells[c].state == TUI_CELL_NOT_REACHED)
			tui_checks_set(&m->checks, m->cols[c].name, i, TUI_CHECK_NA,
				       "every step's check passes",
				       "not reached: the node stopped before this role", NULL);
	}
	strbuf_addf(&line, "%s%s%s", node_state_name(ev->state), ev->text ? ": " : "",
		    ev->text ? ev->text : "");
	tui_log_add(&n->log,
		    done			  ? TUI_LINE_RESULT
		    : ev->state == NODE_CANCELLED ? TUI_LINE_NOTE
						  : TUI_LINE_FAILED,
		    line.buf);
	if (ev->state == NODE_FAILED || ev->state == NODE_UNREACHABLE)
		record_failure(m, i, 0, "reachable",
			       ev->state == NODE_UNREACHABLE ? "connect" : "node", ev->text);
	strbuf_release(&line);
}

void tui_model_event(struct tui_model *m, const struct event *ev)
{
	struct tui_node *n;

	if (ev->node >= m->nr)
		return;
	n = &m->nodes[ev->node];
	pulls_event(&m->pulls, ev);
	switch (ev->kind) {
	case EVENT_PROGRESS:
		if (ev->total && ev->done == ev->total && ev->text) {
			char b[32];
			struct strbuf line = STRBUF_INIT;
			pulls_bytes(b, sizeof(b), ev->total);
			strbuf_addstr(&line, "pulled ");
			text_clean_append(&line, ev->text);
			strbuf_addf(&line, " (%s)", b);
			tui_log_add(&n->log, TUI_LINE_NOTE, line.buf);
			strbuf_release(&line);
		}
		break;
	case EVENT_NODE_STATE:
		/*
		 * A node's end is final within a run: later passes (the facts
		 * again before validation) may connect it again, which does not
		 * make it run again.  Only a worse end replaces a good one.
		 */
		if (n->state >= NODE_DONE && (ev->state < NODE_DONE || n->state != NODE_DONE))
			break;
		if (ev->state == NODE_CONNECTING && !n->started_ms)
			n->started_ms = ev->at_ms;
		if (ev->state >= NODE_DONE) {
			if (ev->state == NODE_FAILED && ev->text &&
			    !strcmp(ev->text, "preflight failed"))
				preflight_done(m);
			else if (ev->state == NODE_DONE || ev->state == NODE_CANCELLED)
				preflight_done(m);
			node_ended(m, ev->node, ev);
		}
		n->state = ev->state;
		break;
	case EVENT_STEP_START:
		if (ev->query)
			query_step(m, ev->node, ev);
		else
			step_start(m, ev->node, ev);
		break;
	case EVENT_STEP_END:
		if (ev->query)
			query_step(m, ev->node, ev);
		else
			step_end(m, ev->node, ev);
		break;
	case EVENT_LINE:
		line_event(m, ev->node, ev);
		break;
	case EVENT_MESSAGE:
		message(m, ev->node, ev);
		break;
	case EVENT_FACTS:
		facts_in(m, ev->node, ev->facts);
		break;
	case EVENT_ROLES:
		roles_in(m, ev->node, ev);
		break;
	}
}

void tui_model_end(struct tui_model *m, uint64_t now, bool interrupted)
{
	size_t i, c;

	m->ended_ms = now;
	m->interrupted = interrupted;
	preflight_done(m);
	for (i = 0; i < m->nr; i++) {
		struct tui_node *n = &m->nodes[i];
		if (n->state < NODE_DONE) {
			struct event ev = {
			    .kind = EVENT_NODE_STATE, .node = i, .phase = PHASE_NONE, .at_ms = now};
			ev.state = interrupted ? NODE_CANCELLED : NODE_DONE;
			node_ended(m, i, &ev);
			n->state = ev.state;
		}
		for (c = 0; c < m->nr_cols; c++)
			if (n->cells[c].state == TUI_CELL_PENDING)
				n->cells[c].state =
				    interrupted ? TUI_CELL_NOT_REACHED : TUI_CELL_NA;
	}
	/* A check no result came for (a cluster check is on the control plane's row only). */
	tui_checks_expire(&m->checks, m->checks.gen, "not checked on this node");
}

void tui_model_restart(struct tui_model *m, uint64_t now)
{
	size_t i, c;

	m->started_ms = now;
	m->ended_ms = 0;
	m->after_facts = false;
	m->interrupted = false;
	m->failures = 0;
	m->step_ms_sum = 0;
	m->step_count = 0;
	for (i = 0; i < m->nr; i++) {
		struct tui_node *n = &m->nodes[i];
		n->state = NODE_PENDING;
		n->cur_col = -1;
		n->in_step = false;
		free(n->cur_step);
		n->cur_step = NULL;
		n->started_ms = n->ended_ms = 0;
		n->steps_done = 0;
		n->have_facts = false;
		free(n->plan_roles);
		n->plan_roles = NULL;
		n->preflight_error = n->preflight_warn = false;
		n->fail_order = 0;
		n->fail_col = -1;
		free(n->fail_check);
		free(n->fail_where);
		free(n->fail_text);
		free(n->fail_hint);
		n->fail_check = n->fail_where = n->fail_text = n->fail_hint = NULL;
		for (c = 0; c < m->nr_cols; c++) {
			unsigned short total = n->cells[c].total;
			memset(&n->cells[c], 0, sizeof(n->cells[c]));
			n->cells[c].total = total;
			n->cells[c].state = col_applies(m, c, i) ? TUI_CELL_PENDING : TUI_CELL_NA;
		}
		recount_total(m, i);
	}
}

/* ---- figures ---- */

bool tui_node_finished(const struct tui_node *n)
{
	return n->state >= NODE_DONE ||
	       (n->steps_total && n->steps_done >= n->steps_total && n->cur_col < 0);
}

unsigned tui_model_permille(const struct tui_model *m, size_t i)
{
	const struct tui_node *n = &m->nodes[i];

	if (n->state == NODE_DONE)
		return 1000;
	if (!n->steps_total)
		return 0;
	if (n->steps_done >= n->steps_total)
		return 1000;
	return (unsigned)((uint64_t)n->steps_done * 1000 / n->steps_total);
}

uint64_t tui_model_mean_step(const struct tui_model *m)
{
	return m->step_count ? m->step_ms_sum / m->step_count : 0;
}

void tui_model_set_history(struct tui_model *m, size_t i, int64_t ms)
{
	if (i < m->nr)
		m->nodes[i].eta_hist_ms = ms;
}

bool tui_model_eta(const struct tui_model *m, size_t i, uint64_t now, uint64_t *eta_ms)
{
	const struct tui_node *n = &m->nodes[i];
	uint64_t mean = tui_model_mean_step(m), left, eta, ran = 0;
	struct pull_summary ps;
	/* a pull under way: at least the time its bytes left take at its rate */
	uint64_t pull =
	    pulls_node(&m->pulls, i, now, &ps) && ps.eta_ms >= 0 ? (uint64_t)ps.eta_ms : 0;

	*eta_ms = 0;
	if (tui_node_finished(n))
		return false;
	if (n->eta_hist_ms >= 0 && n->started_ms) {
		uint64_t spent = now > n->started_ms ? now - n->started_ms : 0;
		*eta_ms = (uint64_t)n->eta_hist_ms > spent ? (uint64_t)n->eta_hist_ms - spent : 0;
		if (pull > *eta_ms)
			*eta_ms = pull;
		return true;
	}
	if (!m->step_count) {
		*eta_ms = pull;
		return pull > 0;
	}
	left = n->steps_total > n->steps_done ? n->steps_total - n->steps_done : 0;
	eta = left * mean;
	if (n->in_step && now > n->step_started_ms) {
		/* The current step is one of those left; what it has run already is not. */
		ran = now - n->step_started_ms;
		if (ran > mean)
			ran = mean;
	}
	*eta_ms = eta > ran ? eta - ran : 0;
	if (pull > *eta_ms)
		*eta_ms = pull;
	return true;
}

size_t tui_model_slowest(const struct tui_model *m, uint64_t now, uint64_t *ms, bool *finished)
{
	size_t i, best = SIZE_MAX;
	uint64_t best_ms = 0;

	*ms = 0;
	*finished = false;
	for (i = 0; i < m->nr; i++) {
		uint64_t eta;
		if (tui_model_eta(m, i, now, &eta) && (best == SIZE_MAX || eta > best_ms)) {
			best = i;
			best_ms = eta;
		}
	}
	if (best != SIZE_MAX) {
		*ms = best_ms;
		return best;
	}
	for (i = 0; i < m->nr; i++) {
		const struct tui_node *n = &m->nodes[i];
		uint64_t took;
		if (!tui_node_finished(n) || !n->started_ms)
			continue;
		took = (n->ended_ms ? n->ended_ms : now) - n->started_ms;
		if (best == SIZE_MAX || took > best_ms) {
			best = i;
			best_ms = took;
		}
	}
	*ms = best_ms;
	*finished = best != SIZE_MAX;
	return best;
}

void tui_model_counts(const struct tui_model *m, struct tui_counts *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < m->nr; i++) {
		const struct tui_node *n = &m->nodes[i];
		switch (n->state) {
		case NODE_FAILED:
		case NODE_UNREACHABLE:
			c->failed++;
			break;
		case NODE_CANCELLED:
			c->cancelled++;
			break;
		case NODE_DONE:
			/* Done, but a check of it failed (the validation): not a success. */
			if (n->fail_order)
				c->failed++;
			else
				c->done++;
			break;
		case NODE_PENDING:
			if (n->fail_order)
				c->failed++;
			else
				c->pending++;
			break;
		default:
			if (n->fail_order)
				c->failed++;
			else if (tui_node_finished(n))
				c->done++;
			else
				c->running++;
			break;
		}
	}
}

size_t tui_model_next_failure(const struct tui_model *m, size_t after)
{
	unsigned want =
	    after < m->nr && m->nodes[after].fail_order ? m->nodes[after].fail_order + 1 : 1;
	size_t i, best = SIZE_MAX;

	if (!m->failures)
		return SIZE_MAX;
	if (want > m->failures)
		want = 1; /* round again */
	for (i = 0; i < m->nr; i++)
		if (m->nodes[i].fail_order == want)
			best = i;
	return best;
}

/* ---- the grid's columns: phases ---- */

/* The grid's short names of the phases whose name is too wide (role.h names them all). */
static const char *const phase_short[PHASE_ROLES] = {
    [PHASE_KUBE_PACKAGES] = "kube",
    [PHASE_ADDONS] = "addon",
    [PHASE_VALIDATE] = "valid",
};

const char *tui_phase_label(int phase, bool short_form)
{
	if (phase < 0 || phase >= PHASE_ROLES)
		return "?";
	if (short_form && phase_short[phase])
		return phase_short[phase];
	return role_phases[phase];
}

size_t tui_model_phases(const struct tui_model *m, int *phases)
{
	size_t nr = 0, c;
	int p;

	for (p = 0; role_phases[p] && nr < TUI_MAX_PHASES; p++)
		for (c = 0; c < m->nr_cols; c++)
			if (m->cols[c].phase == p) {
				phases[nr++] = p;
				break;
			}
	return nr;
}

bool tui_model_col_in_phase(const struct tui_model *m, size_t c, const int *phases, size_t k)
{
	if (m->cols[c].phase < 0)
		return k == 0;
	return m->cols[c].phase == phases[k];
}

void tui_model_phase_cell(const struct tui_model *m, size_t i, const int *phases, size_t k,
			  struct tui_cell *out)
{
	const struct tui_node *n = &m->nodes[i];
	size_t c, seen[TUI_CELL_FAILED + 1] = {0}, applies = 0;

	memset(out, 0, sizeof(*out));
	for (c = 0; c < m->nr_cols; c++) {
		const struct tui_cell *cell = &n->cells[c];
		if (!tui_model_col_in_phase(m, c, phases, k) || cell->state == TUI_CELL_NA)
			continue;
		applies++;
		seen[cell->state]++;
		out->total += cell->total;
		out->done += cell->done;
		out->changed += cell->changed;
		out->unchanged += cell->unchanged;
		out->skipped += cell->skipped;
		out->failed += cell->failed;
	}
	if (!applies)
		out->state = TUI_CELL_NA;
	else if (seen[TUI_CELL_FAILED])
		out->state = TUI_CELL_FAILED;
	else if (seen[TUI_CELL_RUNNING] ||
		 ((seen[TUI_CELL_PENDING] || seen[TUI_CELL_NOT_REACHED]) &&
		  seen[TUI_CELL_PENDING] + seen[TUI_CELL_NOT_REACHED] < applies))
		/* some done, some to run: the phase runs (a node between two roles) */
		out->state = seen[TUI_CELL_PENDING] || seen[TUI_CELL_RUNNING] ? TUI_CELL_RUNNING
									: TUI_CELL_NOT_REACHED;
	else if (seen[TUI_CELL_NOT_REACHED])
		out->state = TUI_CELL_NOT_REACHED;
	else if (seen[TUI_CELL_PENDING])
		out->state = TUI_CELL_PENDING;
	else if (seen[TUI_CELL_WOULD_CHANGE])
		out->state = TUI_CELL_WOULD_CHANGE;
	else if (seen[TUI_CELL_CHANGED])
		out->state = TUI_CELL_CHANGED;
	else if (seen[TUI_CELL_WARN])
		out->state = TUI_CELL_WARN;
	else if (seen[TUI_CELL_UNCHANGED])
		out->state = TUI_CELL_UNCHANGED;
	else
		out->state = TUI_CELL_SKIPPED;
}
