/* plan_step: one step of a role on one node, and the protocol on its output. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

/* ---- the step protocol on standard output ---- */

static void tail_add(struct strbuf *tail, const char *line, size_t len)
{
	strbuf_add(tail, line, len);
	strbuf_addch(tail, '\n');
	if (tail->len > TAIL_MAX) {
		/* Keep the last lines: cut at a newline past the excess. */
		const char *cut = memchr(tail->buf + tail->len - TAIL_MAX, '\n', TAIL_MAX);
		size_t keep = cut ? tail->len - (size_t)(cut + 1 - tail->buf) : 0;
		memmove(tail->buf, tail->buf + tail->len - keep, keep);
		strbuf_setlen(tail, keep);
	}
}

/*
 * A line in protocol form that the exchange (or the parser) refused: the
 * step fails with the first such line, naming the node and the step; the
 * line itself reaches no view (it is protocol, not output).
 */
static void violation(struct node_ctx *nc, const char *why)
{
	if (nc->protocol_error)
		return;
	if (nc->role && nc->step)
		nc->protocol_error = xasprintf("protocol violation by node '%s' in %s › %s: %s",
					       nc->node->name, nc->role->name, nc->step, why);
	else
		nc->protocol_error = xasprintf("protocol violation by node '%s' (%s): %s",
					       nc->node->name, nc->role ? nc->role->name : "facts",
					       why);
}

/*
 * `::progress image=REF done=N total=N`: only from a role that pulls, only
 * for an image of the node's list; posted as EVENT_PROGRESS at most once a
 * second per image (and when it completes), so a node that prints faster
 * does not flood the views.
 */
static void progress(struct node_ctx *nc, struct runner_job *job, const struct protocol_msg *m)
{
	const struct role *r = nc->role;
	uint64_t now = now_ms();
	struct event *ev;
	size_t i;

	if (!r || !r->pulls) {
		violation(nc, "'::progress' from a role that pulls no images (role.yaml 'pulls')");
		return;
	}
	if (!nc->run->have_images ||
	    !images_node_needs(&nc->run->images, nc->index, (const char *const *)r->pulls, m->name,
			       m->name_len)) {
		violation(nc, "'::progress' for an image this node was not asked to pull");
		return;
	}
	for (i = 0; i < nc->nr_progress; i++)
		if (strlen(nc->progress_refs[i]) == m->name_len &&
		    !memcmp(nc->progress_refs[i], m->name, m->name_len))
			break;
	if (i == nc->nr_progress) {
		nc->progress_refs =
		    xrealloc(nc->progress_refs, (nc->nr_progress + 1) * sizeof(*nc->progress_refs));
		nc->progress_ms =
		    xrealloc(nc->progress_ms, (nc->nr_progress + 1) * sizeof(*nc->progress_ms));
		nc->progress_refs[i] = xstrndup(m->name, m->name_len);
		nc->progress_ms[i] = 0;
		nc->nr_progress++;
	} else if (now < nc->progress_ms[i] + 1000 && !(m->total && m->done == m->total)) {
		return;
	}
	nc->progress_ms[i] = now;
	ev = event_new(EVENT_PROGRESS, runner_job_index(job));
	ev->phase = r->phase;
	ev->role = xstrdup(r->name);
	ev->step = xstrdup(nc->step);
	ev->text = xstrndup(m->name, m->name_len);
	ev->done = m->done;
	ev->total = m->total;
	runner_job_post(job, ev);
}

bool plan_step_filter(void *ctx, struct runner_job *job, int stream, const char *line, size_t len,
		      unsigned flags)
{
	struct node_ctx *nc = ctx;
	struct protocol_msg m;
	struct error err = {0};
	const struct role *r;

	/*
	 * Protocol is read at the start of a line only: a piece that continues
	 * a line longer than TRANSPORT_LINE_MAX is output (or, after a protocol
	 * line's start, more of that line: unseen, it may hold a ::secret), and
	 * a protocol line too long to read whole is a violation, never a cut
	 * value.
	 */
	if (stream == TRANSPORT_STDOUT && nc->in_cut_protocol && (flags & TRANSPORT_LINE_CONT)) {
		nc->in_cut_protocol = (flags & TRANSPORT_LINE_MORE) != 0;
		return true;
	}
	if (stream == TRANSPORT_STDOUT)
		nc->in_cut_protocol = false;
	if (stream == TRANSPORT_STDOUT && !(flags & TRANSPORT_LINE_CONT))
		protocol_parse(&m, line, len);
	else
		m.kind = PROTOCOL_NONE;
	if (m.kind != PROTOCOL_NONE && nc->swallow)
		m.kind = PROTOCOL_NONE; /* a fetched file is content, not protocol */
	if (m.kind != PROTOCOL_NONE && (flags & TRANSPORT_LINE_MORE)) {
		nc->in_cut_protocol = true;
		violation(nc,
			  "a protocol line ('::…') longer than 64 KiB (TRANSPORT_LINE_MAX): not "
			  "read");
		return true;
	}
	/* Protocol comes from a role's step, nowhere else (facts, file checks). */
	if (m.kind != PROTOCOL_NONE && m.kind != PROTOCOL_MALFORMED && !nc->step) {
		violation(nc, "a protocol line outside a role's step");
		return true;
	}
	r = nc->step ? nc->role : NULL;
	switch (m.kind) {
	case PROTOCOL_NONE:
		break;
	case PROTOCOL_MALFORMED:
		violation(nc, m.error);
		return true;
	case PROTOCOL_SET:
	case PROTOCOL_SECRET:
		if (exchange_hand(nc->run->exchange, nc->index, r, m.kind == PROTOCOL_SECRET,
				  m.name, m.name_len, m.value, m.value_len, &err) < 0)
			violation(nc, err.msg);
		return true;
	case PROTOCOL_SKIP:
		free(nc->skip_reason);
		nc->skip_reason = xstrndup(m.value, m.value_len);
		return true;
	case PROTOCOL_HINT:
		free(nc->hint);
		nc->hint = xstrndup(m.value, m.value_len);
		return true;
	case PROTOCOL_PROGRESS:
		progress(nc, job, &m);
		return true;
	case PROTOCOL_NOTE:
		free(nc->note);
		nc->note = xstrndup(m.value, m.value_len);
		return true;
	case PROTOCOL_FETCH:
		if (exchange_fetch(nc->run->exchange, nc->index, r, m.name, m.name_len, m.value,
				   m.value_len, &err) < 0) {
			violation(nc, err.msg);
			return true;
		}
		nc->fetches = xrealloc(nc->fetches, (nc->nr_fetches + 1) * sizeof(*nc->fetches));
		nc->fetches[nc->nr_fetches++] = xasprintf("%.*s\n%.*s", (int)m.name_len, m.name,
							  (int)m.value_len, m.value);
		return true;
	}
	if (nc->capturing && (stream == TRANSPORT_STDOUT || !nc->capture_stdout)) {
		strbuf_add(&nc->capture, line, len);
		if (!(flags & TRANSPORT_LINE_MORE)) /* a long line's pieces join again */
			strbuf_addch(&nc->capture, '\n');
	}
	if (nc->swallow)
		return true;
	tail_add(&nc->tail, line, len);
	return false;
}

static struct event *step_event(struct runner_job *job, enum event_kind kind, const struct role *r,
				const char *step, enum step_result result, uint64_t ms,
				const char *text)
{
	struct event *ev = event_new(kind, runner_job_index(job));

	ev->phase = r->phase;
	ev->role = xstrdup(r->name);
	ev->step = xstrdup(step);
	ev->result = result;
	ev->duration_ms = ms;
	if (text)
		ev->text = xstrdup(text);
	return ev;
}

void plan_post_step(struct runner_job *job, enum event_kind kind, const struct role *r,
		    const char *step, enum step_result result, uint64_t ms, const char *text)
{
	runner_job_post(job, step_event(job, kind, r, step, result, ms, text));
}

void plan_post_step_end(struct runner_job *job, const struct role *r, const char *step,
			enum step_result result, uint64_t ms, uint64_t check_ms, const char *text)
{
	struct event *ev = step_event(job, EVENT_STEP_END, r, step, result, ms, text);

	ev->check_ms = check_ms;
	runner_job_post(job, ev);
}

void plan_record(struct node_ctx *nc, const struct role *r, const char *step, bool is_file,
		   enum step_result result, uint64_t ms, const char *detail)
{
	struct plan_node *pn = &nc->run->res->nodes[nc->index];
	struct plan_step_result *s;
	struct strbuf d = STRBUF_INIT;

	ALLOC_GROW(pn->steps, pn->nr_steps + 1, pn->alloc_steps);
	s = &pn->steps[pn->nr_steps++];
	memset(s, 0, sizeof(*s));
	s->role = r;
	s->step = step;
	s->is_file = is_file;
	s->result = result;
	s->duration_ms = ms;
	if (detail) {
		/* node text: cleaned and redacted once, here (secrets.h) */
		strbuf_addstr(&d, detail);
		secrets_scrub(nc->run->o->secrets, &d);
		s->detail = strbuf_detach(&d, NULL);
	}
	switch (result) {
	case STEP_CHANGED:
	case STEP_WOULD_CHANGE:
		pn->changed++;
		break;
	case STEP_UNCHANGED:
		pn->unchanged++;
		break;
	case STEP_FAILED:
		pn->failed++;
		break;
	case STEP_SKIPPED:
		pn->skipped++;
		break;
	default:
		break;
	}
}

/* What a file step deployed (or compared), on the step just recorded. */
void plan_record_file(struct node_ctx *nc, const char *sha, unsigned mode, const char *owner,
			const char *source, bool artifact, const struct strbuf *content, char *drift)
{
	struct plan_node *pn = &nc->run->res->nodes[nc->index];
	struct plan_step_result *s = &pn->steps[pn->nr_steps - 1];

	snprintf(s->sha256, sizeof(s->sha256), "%s", sha ? sha : "");
	s->mode = mode;
	s->owner = owner;
	s->source = source;
	s->is_artifact = artifact;
	if (content && sha) {
		s->content = xmalloc(content->len + 1);
		memcpy(s->content, content->buf, content->len);
		s->content[content->len] = '\0';
		s->content_len = content->len;
	}
	/* what the file was on the node: node text, cleaned and redacted once, here */
	secrets_scrub_str(nc->run->o->secrets, &drift);
	s->drift = drift;
}

/*
 * A step's command timeout: the node's command_timeout; a pull step
 * (role.yaml `pulls`) bounds each image itself (pull timeout, stall), so
 * it gets that much more per image it may pull (0: no timeout stays none).
 */
static int plan_step_timeout_ms(struct node_ctx *nc, const struct role *r)
{
	int t = nc->node->ssh.command_timeout;
	struct strbuf refs = STRBUF_INIT;
	size_t n;

	if (!t || !r->pulls || !nc->run->have_images)
		return t * 1000;
	n = images_node_refs(&nc->run->images, nc->index, (const char *const *)r->pulls, &refs);
	strbuf_release(&refs);
	/* the images go PLAN_PULLS_PER_NODE at a time, each bounded by the pull timeout */
	t += (int)((n + PLAN_PULLS_PER_NODE - 1) / PLAN_PULLS_PER_NODE + 1) *
	     nc->run->o->inv->cluster.image_pull_timeout;
	return t > INT32_MAX / 1000 ? INT32_MAX : t * 1000;
}

/* Run one call of a step ("check" or "apply"); *status gets its exit status. */
static int call_step(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		     const struct role_step *s, const char *what, int *status, struct error *err)
{
	const struct role_set *rs = nc->run->o->roles;
	struct strbuf input = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	int rc;

	plan_step_input(&input, nc, rs->lib, rs->lib_len, s->script, s->len);
	/* The shell that runs the command reads the script itself: no second sh to start. */
	strbuf_addf(&cmd, "set -- %s && . /dev/stdin", what);
	rc = runner_job_exec(job, r->phase, s->name, cmd.buf, input.buf, input.len,
			     plan_step_timeout_ms(nc, r), &res, err);
	explicit_bzero(input.buf, input.len); /* it may hold handed secrets */
	strbuf_release(&input);
	strbuf_release(&cmd);
	*status = res.exit_status;
	return rc;
}

char *plan_failure_text(struct node_ctx *nc, const char *what)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, what);
	strbuf_rtrim(&nc->tail);
	if (nc->tail.len) {
		const char *last = strrchr(nc->tail.buf, '\n');
		strbuf_addf(&sb, ": %s", last ? last + 1 : nc->tail.buf);
	}
	if (nc->hint)
		strbuf_addf(&sb, " (hint: %s)", nc->hint);
	return strbuf_detach(&sb, NULL);
}

/* Returns 0 when the node may go on, 1 when the step failed, -1 when the session was lost. */
int plan_run_step(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		    const struct role_step *s)
{
	bool check_only = nc->run->o->check_only;
	struct error err = {0};
	enum step_result result;
	char *detail = NULL;
	uint64_t t0 = now_ms(), check_ms = 0;
	int status = 0, rc, ret = 0;

	strbuf_reset(&nc->tail);
	free(nc->skip_reason);
	free(nc->hint);
	free(nc->note);
	free(nc->protocol_error);
	nc->skip_reason = nc->hint = nc->note = nc->protocol_error = NULL;
	nc->in_cut_protocol = false;
	plan_clear_fetches(nc);
	nc->role = r;
	nc->step = s->name;
	plan_post_step(job, EVENT_STEP_START, r, s->name, STEP_NONE, 0, NULL);

	rc = call_step(nc, job, r, s, "check", &status, &err);
	check_ms = now_ms() - t0;
	if (!check_ms)
		check_ms = 1; /* 0 says unknown (events.h) */
	if (rc < 0)
		goto lost;
	if (nc->protocol_error) {
		result = STEP_FAILED;
		detail = xstrdup(nc->protocol_error);
	} else if (nc->skip_reason) {
		result = STEP_SKIPPED;
		detail = xstrdup(nc->skip_reason);
	} else if (status == 0) {
		result = STEP_UNCHANGED;
	} else if (status != 1) {
		char what[64];
		snprintf(what, sizeof(what), "check failed (exit %d)", status);
		result = STEP_FAILED;
		detail = plan_failure_text(nc, what);
	} else if (check_only) {
		/* What the check said is why it would change (plan shows it, check's drift too). */
		result = STEP_WOULD_CHANGE;
		strbuf_rtrim(&nc->tail);
		if (nc->tail.len)
			detail = xstrdup(nc->tail.buf);
	} else {
		strbuf_reset(&nc->tail);
		rc = call_step(nc, job, r, s, "apply", &status, &err);
		if (rc < 0)
			goto lost;
		if (status != 0 || nc->protocol_error) {
			char what[64];
			snprintf(what, sizeof(what), "apply failed (exit %d)", status);
			result = STEP_FAILED;
			detail = nc->protocol_error ? xstrdup(nc->protocol_error)
						    : plan_failure_text(nc, what);
		} else {
			strbuf_reset(&nc->tail);
			rc = call_step(nc, job, r, s, "check", &status, &err);
			if (rc < 0)
				goto lost;
			if (status == 0) {
				result = STEP_CHANGED;
				/* what the step said of how it changed (::note) */
				if (nc->note)
					detail = xstrdup(nc->note);
			} else {
				char what[96];
				snprintf(what, sizeof(what),
					 "still not as desired after apply (check exit %d)", status);
				result = STEP_FAILED;
				detail = plan_failure_text(nc, what);
			}
		}
	}
	if (nc->protocol_error) {
		/* Whatever the step's exit said: a node that broke the protocol failed it. */
		result = STEP_FAILED;
		free(detail);
		detail = xstrdup(nc->protocol_error);
	}
	/* plan changes nothing, on this machine either: no fetched file replaced. */
	if ((result == STEP_CHANGED || result == STEP_UNCHANGED) && nc->nr_fetches &&
	    !check_only && plan_do_fetches(nc, job, &detail))
		result = STEP_FAILED;
	goto done;
lost:
	result = STEP_FAILED;
	detail = xstrdup(err.msg);
	ret = -1;
done:
	nc->step = NULL;
	plan_clear_fetches(nc);
	if (result == STEP_FAILED && ret == 0)
		ret = 1;
	plan_post_step_end(job, r, s->name, result, now_ms() - t0, check_ms, detail);
	plan_record(nc, r, s->name, false, result, now_ms() - t0, detail);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, s->name, detail ? detail : "failed");
	free(detail);
	return ret;
}
