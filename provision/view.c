/* view: see view.h. */
#include "view.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static void put(struct view *v, struct strbuf *sb);

void view_init(struct view *v, const struct node *const *nodes, size_t nr, bool json, bool verbose)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->nodes = nodes;
	v->nr = nr;
	v->json = json;
	v->verbose = verbose;
	v->fd = STDOUT_FILENO;
	v->running = xcalloc(nr ? nr : 1, sizeof(*v->running));
	/* interrupts before the run are not this run's to announce */
	v->interrupts = runner_interrupts();
	for (i = 0; i < nr; i++)
		if (strlen(nodes[i]->name) > v->width)
			v->width = strlen(nodes[i]->name);
	pulls_init(&v->pulls, nr);
	v->progress_ms = xcalloc(nr ? nr : 1, sizeof(*v->progress_ms));
}

void view_release(struct view *v)
{
	size_t i;

	if (v->pulls.nodes)
		pulls_release(&v->pulls);
	free(v->progress_ms);
	v->progress_ms = NULL;
	for (i = 0; v->running && i < v->nr; i++)
		free(v->running[i]);
	free(v->running);
	v->running = NULL;
}

/* What node n is doing now, for the ^C line (events of steps). */
static void track(struct view *v, const struct event *ev)
{
	char **cur;

	if (!v->running || ev->node >= v->nr)
		return;
	cur = &v->running[ev->node];
	if (ev->kind == EVENT_STEP_START && ev->step) {
		free(*cur);
		*cur = ev->role ? xasprintf("%s › %s", ev->role, ev->step) : xstrdup(ev->step);
	} else if (ev->kind == EVENT_STEP_END ||
		   (ev->kind == EVENT_NODE_STATE && ev->state >= NODE_DONE)) {
		free(*cur);
		*cur = NULL;
	}
}

void view_tick(void *data)
{
	struct view *v = data;
	struct strbuf sb = STRBUF_INIT, now = STRBUF_INIT;
	unsigned n = runner_interrupts();
	size_t i, shown = 0, busy = 0;
	json_t *o, *list;

	if (n <= v->interrupts)
		return;
	v->interrupts = n;
	list = json_array();
	for (i = 0; v->running && i < v->nr; i++) {
		if (!v->running[i])
			continue;
		busy++;
		if (v->json) {
			json_t *r = json_object();
			json_object_set_new(r, "node", json_string(v->nodes[i]->name));
			json_object_set_new(r, "step", json_string(v->running[i]));
			json_array_append_new(list, r);
		}
		if (shown < 4) {
			strbuf_addf(&now, "%s%s: %s", shown ? ", " : "", v->nodes[i]->name,
				    v->running[i]);
			shown++;
		}
	}
	if (busy > shown)
		strbuf_addf(&now, " and %zu more", busy - shown);
	/* on a terminal, over the "^C" the terminal echoed at the start of the line */
	if (!v->json && isatty(v->fd))
		strbuf_addch(&sb, '\r');
	if (n == 1 && busy)
		strbuf_addf(&sb,
			    "^C: stopping: no new step starts; the steps running now finish first "
			    "(%s), then the run ends (exit 130).  ^C again stops them at once.",
			    now.buf);
	else if (n == 1)
		strbuf_addstr(&sb, "^C: stopping: no new step starts; the run ends (exit 130).  "
				   "^C again stops the commands running at once.");
	else
		strbuf_addf(
		    &sb,
		    "^C again: cancelling: the commands running now are stopped%s%s%s (exit "
		    "130).  Run the command again afterwards: each step checks first and "
		    "takes up what was left half done (up recovers a Helm release left "
		    "failed or pending).",
		    busy ? " (" : "", now.buf, busy ? ")" : "");
	if (v->json) {
		char *text;
		o = json_object();
		json_object_set_new(o, "event", json_string("interrupt"));
		json_object_set_new(o, "interrupts", json_integer((json_int_t)n));
		json_object_set_new(o, "action", json_string(n == 1 ? "stopping" : "cancelling"));
		json_object_set_new(o, "running", list);
		json_object_set_new(o, "text", json_string(sb.buf));
		text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
		strbuf_reset(&sb);
		strbuf_addstr(&sb, text);
		free(text);
		json_decref(o);
	} else {
		json_decref(list);
	}
	put(v, &sb);
	strbuf_release(&sb);
	strbuf_release(&now);
}

void view_duration(char *buf, size_t size, uint64_t ms)
{
	if (ms < 1000)
		snprintf(buf, size, "%llums", (unsigned long long)ms);
	else if (ms < 60000)
		snprintf(buf, size, "%.1fs", (double)ms / 1000.0);
	else
		snprintf(buf, size, "%llum%02llus", (unsigned long long)(ms / 60000),
			 (unsigned long long)(ms / 1000 % 60));
}

static void put(struct view *v, struct strbuf *sb)
{
	strbuf_addch(sb, '\n');
	(void)write_all(v->fd, sb->buf, sb->len);
}

static const char *kind_name(enum event_kind k)
{
	switch (k) {
	case EVENT_NODE_STATE:
		return "node";
	case EVENT_STEP_START:
		return "step_start";
	case EVENT_STEP_END:
		return "step_end";
	case EVENT_LINE:
		return "line";
	case EVENT_MESSAGE:
		return "message";
	case EVENT_PROGRESS:
		return "progress";
	case EVENT_FACTS:
		return "facts";
	case EVENT_ROLES:
		return "roles";
	}
	return "unknown";
}

/*
 * A progress event: a line when the node's last one is older than
 * `every` ms, or when the image is complete (its own line, once).
 */
static bool progress_due(struct view *v, const struct event *ev, const struct pull_image *im,
			 uint64_t every)
{
	bool complete = ev->total && ev->done == ev->total;

	if (!im || ev->node >= v->nr)
		return false;
	if (complete)
		return im->done_ms == ev->at_ms; /* the first event that said so */
	if (v->progress_ms[ev->node] && ev->at_ms < v->progress_ms[ev->node] + every)
		return false;
	v->progress_ms[ev->node] = ev->at_ms;
	return true;
}

/* The event's phase, role and step, those it has, into JSON object o. */
static void json_where(json_t *o, const struct event *ev)
{
	if (ev->phase != PHASE_NONE)
		json_object_set_new(o, "phase", json_string(phase_name(ev->phase)));
	if (ev->role)
		json_object_set_new(o, "role", json_string(ev->role));
	if (ev->step)
		json_object_set_new(o, "step", json_string(ev->step));
}

static void json_progress(struct view *v, const struct event *ev, const struct pull_image *im)
{
	json_t *o = json_object();
	struct pull_summary ps;
	struct strbuf sb = STRBUF_INIT;
	char *text;

	pulls_node(&v->pulls, ev->node, ev->at_ms, &ps);
	json_object_set_new(o, "event", json_string("progress"));
	json_object_set_new(o, "node", json_string(v->nodes[ev->node]->name));
	json_where(o, ev);
	json_object_set_new(o, "image", json_string(ev->text));
	json_object_set_new(o, "done", json_integer((json_int_t)ev->done));
	json_object_set_new(o, "total", json_integer((json_int_t)ev->total));
	if (im->done_ms)
		json_object_set_new(o, "duration_ms",
				    json_integer((json_int_t)(im->done_ms - im->first_ms)));
	json_object_set_new(o, "node_rate", json_integer((json_int_t)ps.rate));
	if (ps.eta_ms >= 0)
		json_object_set_new(o, "node_eta_ms", json_integer((json_int_t)ps.eta_ms));
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	strbuf_addstr(&sb, text);
	put(v, &sb);
	strbuf_release(&sb);
	free(text);
	json_decref(o);
}

/* "[n] images-init › 10-pull … pulling REF: 12.3 MB of 250.0 MB, 4.1 MB/s, ~57s left" */
static void plain_progress(struct view *v, const struct event *ev, const struct pull_image *im,
			   struct strbuf *sb)
{
	struct pull_summary ps;
	char a[32], b[32], r[32], d[32];

	pulls_node(&v->pulls, ev->node, ev->at_ms, &ps);
	strbuf_addf(sb, "%s › %s … ", ev->role ? ev->role : "", ev->step ? ev->step : "");
	if (im->done_ms) {
		uint64_t ms = im->done_ms - im->first_ms;
		pulls_bytes(a, sizeof(a), ev->total);
		view_duration(d, sizeof(d), ms);
		strbuf_addstr(sb, "pulled ");
		text_clean_append(sb, ev->text);
		strbuf_addf(sb, " (%s in %s", a, d);
		if (ms >= 1000) {
			pulls_bytes(r, sizeof(r), ev->total * 1000 / ms);
			strbuf_addf(sb, ", %s/s", r);
		}
		strbuf_addch(sb, ')');
		return;
	}
	pulls_bytes(a, sizeof(a), ev->done);
	strbuf_addstr(sb, "pulling ");
	text_clean_append(sb, ev->text);
	if (ev->total) {
		pulls_bytes(b, sizeof(b), ev->total);
		strbuf_addf(sb, ": %s of %s", a, b);
	} else {
		strbuf_addf(sb, ": %s", a);
	}
	if (ps.rate) {
		pulls_bytes(r, sizeof(r), ps.rate);
		strbuf_addf(sb, ", %s/s", r);
	}
	if (ps.eta_ms >= 0) {
		view_duration(d, sizeof(d), (uint64_t)ps.eta_ms);
		strbuf_addf(sb, ", ~%s left", d);
	}
	if (ps.in_flight > 1)
		strbuf_addf(sb, " (%u images at once)", ps.in_flight);
}

static void json_event(struct view *v, const struct event *ev)
{
	json_t *o = json_object();
	struct strbuf sb = STRBUF_INIT;
	char *text;

	json_object_set_new(o, "event", json_string(kind_name(ev->kind)));
	json_object_set_new(o, "node", json_string(v->nodes[ev->node]->name));
	if (ev->kind == EVENT_NODE_STATE)
		json_object_set_new(o, "state", json_string(node_state_name(ev->state)));
	json_where(o, ev);
	if (ev->kind == EVENT_STEP_END || ev->kind == EVENT_MESSAGE)
		json_object_set_new(o, "result", json_string(step_result_name(ev->result)));
	if (ev->kind == EVENT_STEP_END)
		json_object_set_new(o, "duration_ms", json_integer((json_int_t)ev->duration_ms));
	if (ev->kind == EVENT_LINE)
		json_object_set_new(o, "stream", json_string(ev->stream == 2 ? "stderr" : "stdout"));
	if (ev->text)
		json_object_set_new(o, ev->kind == EVENT_LINE ? "line" : "text", json_string(ev->text));
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	strbuf_addstr(&sb, text);
	put(v, &sb);
	strbuf_release(&sb);
	free(text);
	json_decref(o);
}

void view_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct view *v = data;
	struct strbuf sb = STRBUF_INIT;
	const struct pull_image *im = pulls_event(&v->pulls, ev);
	char dur[32];

	if (ev->kind == EVENT_FACTS || ev->kind == EVENT_ROLES)
		return; /* what the views decide no more: not shown as such */
	track(v, ev);
	if (ev->kind == EVENT_PROGRESS) {
		if (!progress_due(v, ev, im,
				  v->json ? VIEW_PROGRESS_JSON_MS : VIEW_PROGRESS_PLAIN_MS))
			return;
		if (v->json) {
			json_progress(v, ev, im);
			return;
		}
		strbuf_addf(&sb, "[%s] ", v->nodes[ev->node]->name);
		plain_progress(v, ev, im, &sb);
		put(v, &sb);
		strbuf_release(&sb);
		return;
	}
	if (v->json) {
		if (ev->kind != EVENT_LINE || v->verbose)
			json_event(v, ev);
		return;
	}
	strbuf_addf(&sb, "[%s] ", v->nodes[ev->node]->name);
	switch (ev->kind) {
	case EVENT_STEP_START:
		strbuf_release(&sb);
		return;
	case EVENT_STEP_END:
		if (ev->result == STEP_UNCHANGED && !v->verbose) {
			strbuf_release(&sb);
			return;
		}
		if (ev->result == STEP_OK && !v->verbose) {
			strbuf_release(&sb);
			return;
		}
		view_duration(dur, sizeof(dur), ev->duration_ms);
		strbuf_addf(&sb, "%s › %s … %s %s", ev->role ? ev->role : "", ev->step ? ev->step : "",
			    step_result_name(ev->result), dur);
		if (ev->text && ev->result != STEP_WOULD_CHANGE) {
			strbuf_addstr(&sb, ": ");
			text_clean_append(&sb, ev->text); /* node text: the one filter (util.h) */
		}
		break;
	case EVENT_PROGRESS:
	case EVENT_FACTS:
	case EVENT_ROLES:
		break; /* above */
	case EVENT_LINE:
		if (!v->verbose) {
			strbuf_release(&sb);
			return;
		}
		strbuf_addf(&sb, "%s ", ev->stream == 2 ? "!" : "│");
		text_clean_append(&sb, ev->text ? ev->text : "");
		break;
	case EVENT_MESSAGE:
		strbuf_addf(&sb, "%s: %s", ev->role ? ev->role : "note",
			    ev->result == STEP_FAILED ? "error: " : "");
		text_clean_append(&sb, ev->text ? ev->text : "");
		break;
	case EVENT_NODE_STATE:
		if (ev->state == NODE_CONNECTING || ev->state == NODE_RUNNING ||
		    ev->state == NODE_PENDING) {
			strbuf_release(&sb);
			return;
		}
		view_duration(dur, sizeof(dur),
			      st->ended_ms - (st->started_ms ? st->started_ms : st->queued_ms));
		if (ev->state == NODE_DONE)
			strbuf_addf(&sb, "done: %u changed, %u failed, %u skipped (%s)",
				    st->steps_changed, st->steps_failed, st->steps_skipped, dur);
		else
		{
			strbuf_addf(&sb, "%s: ", node_state_name(ev->state));
			text_clean_append(&sb, ev->text ? ev->text : "no reason given");
		}
		break;
	}
	put(v, &sb);
	strbuf_release(&sb);
}
