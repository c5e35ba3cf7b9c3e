/* runner: see runner.h for the theory of operation. */
#include "runner.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct runner {
	const struct runner_opts *opts;
	const struct node *const *nodes;
	size_t nr;
	struct events *q;
	pthread_mutex_t lock;
	size_t next;	      /* next node to start (under lock) */
	atomic_bool stop;     /* no new nodes */
	atomic_bool cancel;   /* stop running commands too */
	atomic_size_t active; /* workers still running */
};

struct runner_job {
	struct runner *r;
	size_t index;
	const struct node *node;
	struct transport *tp;
	char *fail_reason;
	bool interrupted;
	int exit_status;
	runner_line_filter filter;
	void *filter_ctx;
};

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

size_t runner_job_index(const struct runner_job *job)
{
	return job->index;
}

const struct node *runner_job_node(const struct runner_job *job)
{
	return job->node;
}

struct transport *runner_job_transport(const struct runner_job *job)
{
	return job->tp;
}

bool runner_job_cancelled(const struct runner_job *job)
{
	return atomic_load(&job->r->cancel);
}

bool runner_job_stopping(const struct runner_job *job)
{
	return atomic_load(&job->r->stop);
}

void runner_interrupt(void)
{
	signals_seen++;
}

unsigned runner_interrupts(void)
{
	return (unsigned)signals_seen;
}

void runner_interrupt_reset(void)
{
	signals_seen = 0;
}

/*
 * Node text where it enters: every event's text is cleaned and redacted
 * (secrets.h secrets_scrub), here and nowhere later, so no view, log or
 * record can forget either.
 */
static void redact(struct runner *r, char **text)
{
	secrets_scrub_str(r->opts->secrets, text);
}

void runner_job_set_filter(struct runner_job *job, runner_line_filter fn, void *ctx)
{
	job->filter = fn;
	job->filter_ctx = ctx;
}

void runner_job_post(struct runner_job *job, struct event *ev)
{
	ev->node = job->index;
	redact(job->r, &ev->text);
	events_push(job->r->q, ev);
}

void runner_job_fail(struct runner_job *job, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	free(job->fail_reason);
	job->fail_reason = strbuf_detach(&sb, NULL);
}

void runner_job_interrupted(struct runner_job *job, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	free(job->fail_reason);
	job->fail_reason = strbuf_detach(&sb, NULL);
	job->interrupted = true;
}

void runner_job_set_exit(struct runner_job *job, int exit_status)
{
	job->exit_status = exit_status;
}

/*
 * What a command prints is posted as events (and so shown, logged and
 * recorded) up to RUNNER_OUTPUT_HEAD bytes; past that the lines are held in
 * a window that keeps about the last RUNNER_OUTPUT_TAIL bytes, and when the
 * command ends a "… N bytes cut" line and the held lines are posted.  The
 * filter (protocol lines) still sees every line.  So a node printing 1 GB,
 * or a line that never ends (the transport cuts lines at TRANSPORT_LINE_MAX),
 * costs provision a bounded amount of memory and of record.
 */
struct line_ctx {
	struct runner_job *job;
	enum phase phase;
	const char *step;
	uint64_t posted, cut; /* bytes posted; bytes held or dropped */
	struct strbuf held;   /* lines held: a stream byte, the line, '\n' each */
};

static void post_one(struct line_ctx *lc, int stream, const char *line, size_t len)
{
	struct event *ev = event_new(EVENT_LINE, lc->job->index);

	ev->stream = stream;
	ev->text = xstrndup(line, len);
	ev->unsafe = text_unsafe(ev->text, strlen(ev->text)) != NULL;
	redact(lc->job->r, &ev->text);
	ev->phase = lc->phase;
	if (lc->step)
		ev->step = xstrdup(lc->step);
	events_push(lc->job->r->q, ev);
}

/* Drop held lines from the front until at most `keep` bytes are held. */
static void held_trim(struct strbuf *held, size_t keep)
{
	const char *p = held->buf, *end = held->buf + held->len;

	while ((size_t)(end - p) > keep) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	memmove(held->buf, p, (size_t)(end - p));
	strbuf_setlen(held, (size_t)(end - p));
}

static void post_line(void *data, enum transport_stream stream, const char *line, size_t len,
		      unsigned flags)
{
	struct line_ctx *lc = data;
	const char *nl;

	if (lc->job->filter &&
	    lc->job->filter(lc->job->filter_ctx, lc->job, (int)stream, line, len, flags))
		return;
	/* A line piece holds no newline; a NUL would end it in the event anyway. */
	if ((nl = memchr(line, '\n', len)) != NULL)
		len = (size_t)(nl - line);
	if (!lc->cut && lc->posted + len + 1 <= RUNNER_OUTPUT_HEAD) {
		lc->posted += len + 1;
		post_one(lc, (int)stream, line, len);
		return;
	}
	lc->cut += len + 1;
	strbuf_addch(&lc->held, stream == TRANSPORT_STDERR ? '2' : '1');
	strbuf_add(&lc->held, line, len);
	strbuf_addch(&lc->held, '\n');
	if (lc->held.len > 2 * RUNNER_OUTPUT_TAIL) /* amortised: one move per TAIL bytes */
		held_trim(&lc->held, RUNNER_OUTPUT_TAIL);
}

/* The end of a command: the cut line, then the held lines. */
static void post_held(struct line_ctx *lc)
{
	const char *p, *end;
	uint64_t shown = 0;
	char note[160];

	if (!lc->cut)
		return;
	held_trim(&lc->held, RUNNER_OUTPUT_TAIL);
	for (p = lc->held.buf, end = p + lc->held.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		shown += (uint64_t)(nl - p); /* the line and its newline, less the stream byte */
		p = nl + 1;
	}
	snprintf(note, sizeof(note),
		 "… %llu bytes cut (of a command's output provision keeps the first %u and the "
		 "last %u KiB)",
		 (unsigned long long)(lc->cut - shown), RUNNER_OUTPUT_HEAD >> 10,
		 RUNNER_OUTPUT_TAIL >> 10);
	post_one(lc, 2, note, strlen(note));
	for (p = lc->held.buf; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		post_one(lc, p[0] == '2' ? 2 : 1, p + 1, (size_t)(nl - p - 1));
		p = nl + 1;
	}
}

static bool job_cancelled_cb(void *data)
{
	struct line_ctx *lc = data;
	return runner_job_cancelled(lc->job);
}

int runner_job_exec(struct runner_job *job, enum phase phase, const char *step, const char *command,
		    const void *input, size_t input_len, int timeout_ms,
		    struct transport_result *res, struct error *err)
{
	struct line_ctx lc = {job, phase, step, 0, 0, STRBUF_INIT};
	int rc;
	struct transport_exec req = {
		.command = command,
		.input = input,
		.input_len = input_len,
		.timeout_ms = timeout_ms,
		.own_shell = job->r->opts->own_shell,
		.on_line = post_line,
		.ctx = &lc,
		.cancelled = job_cancelled_cb,
	};

	rc = job->r->opts->ops->exec(job->tp, &req, res, err);
	post_held(&lc);
	strbuf_release(&lc.held);
	return rc;
}

void runner_target_from_node(struct transport_target *t, const struct node *node,
			     const struct runner_opts *opts)
{
	memset(t, 0, sizeof(*t));
	t->name = node->name;
	t->host = node->address;
	t->port = node->ssh.port;
	t->user = node->ssh.user;
	t->identity = node->ssh.identity;
	t->known_hosts = node->ssh.known_hosts;
	t->host_keys = node->ssh.host_keys == HOST_KEYS_ACCEPT_NEW ? TRANSPORT_HOST_KEYS_ACCEPT_NEW
								   : TRANSPORT_HOST_KEYS_STRICT;
	if (!opts->use_sudo || node->ssh.sudo == SUDO_NEVER)
		t->sudo = TRANSPORT_SUDO_NEVER;
	else if (node->ssh.sudo == SUDO_ALWAYS)
		t->sudo = TRANSPORT_SUDO_ALWAYS;
	else
		t->sudo = TRANSPORT_SUDO_AUTO;
	/* A node with a password of its own gets that one (or none): never the others'. */
	t->sudo_password = node->own_sudo_password ? node->sudo_password : opts->sudo_password;
	if (opts->identity_passphrase && node->ssh.identity && opts->passphrase_identity &&
	    !strcmp(node->ssh.identity, opts->passphrase_identity))
		t->identity_passphrase = opts->identity_passphrase;
	t->jump = node->ssh.jump;
	t->connect_timeout_ms = node->ssh.connect_timeout * 1000;
	t->keepalive_s = node->ssh.keepalive;
	t->per_command_channels = opts->per_command_channels;
}

static void post_state(struct runner *r, size_t index, enum node_state state, const char *text,
		       int exit_status)
{
	struct event *ev = event_new(EVENT_NODE_STATE, index);

	ev->state = state;
	ev->exit_status = exit_status;
	if (text)
		ev->text = xstrdup(text);
	redact(r, &ev->text);
	events_push(r->q, ev);
}

static void work_one(struct runner *r, size_t index)
{
	const struct runner_opts *o = r->opts;
	struct runner_job job = {.r = r, .index = index, .node = r->nodes[index], .exit_status = -1};
	struct transport_target target;
	struct error err = {0};
	struct strbuf why = STRBUF_INIT;
	int rc;

	post_state(r, index, NODE_CONNECTING, NULL, -1);
	runner_target_from_node(&target, job.node, o);
	if (o->sessions && o->sessions[index]) {
		job.tp = o->sessions[index];
		o->sessions[index] = NULL;
		rc = 0;
	} else {
		rc = o->ops->connect(&job.tp, &target, &err);
	}
	if (rc < 0) {
		strbuf_addstr(&why, err.msg);
		if (err.hint[0])
			strbuf_addf(&why, " (%s)", err.hint);
		post_state(r, index, NODE_UNREACHABLE, why.buf, -1);
		strbuf_release(&why);
		return;
	}
	post_state(r, index, NODE_RUNNING, NULL, -1);
	rc = o->node_fn(&job, o->data);
	if (o->sessions && rc >= 0)
		o->sessions[index] = job.tp; /* kept for the next pass */
	else
		o->ops->close(job.tp);
	job.tp = NULL;
	if (rc == 0) {
		post_state(r, index, NODE_DONE, NULL, job.exit_status);
	} else if (job.interrupted || atomic_load(&r->cancel)) {
		/* Stopped by the interrupt (its command cut short), not lost. */
		post_state(r, index, NODE_CANCELLED,
			   job.fail_reason ? job.fail_reason : "interrupted", job.exit_status);
	} else {
		post_state(r, index, rc < 0 ? NODE_UNREACHABLE : NODE_FAILED,
			   job.fail_reason ? job.fail_reason : "failed", job.exit_status);
	}
	free(job.fail_reason);
}

static void *worker_main(void *data)
{
	struct runner *r = data;
	sigset_t all;

	/* Signals go to the main thread only. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		size_t index;

		pthread_mutex_lock(&r->lock);
		if (atomic_load(&r->stop) || r->next >= r->nr) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		index = r->next++;
		pthread_mutex_unlock(&r->lock);
		work_one(r, index);
	}
	atomic_fetch_sub(&r->active, 1);
	events_wake(r->q);
	return NULL;
}

void node_status_apply(struct node_status *st, const struct event *ev)
{
	switch (ev->kind) {
	case EVENT_NODE_STATE:
		st->state = ev->state;
		if (ev->state == NODE_CONNECTING)
			st->started_ms = ev->at_ms;
		else if (ev->state == NODE_RUNNING)
			st->connected_ms = ev->at_ms;
		if (ev->state >= NODE_DONE) {
			st->ended_ms = ev->at_ms;
			st->exit_status = ev->exit_status;
			free(st->reason);
			st->reason = ev->text ? xstrdup(ev->text) : NULL;
		}
		break;
	case EVENT_STEP_START:
		free(st->role);
		free(st->step);
		st->phase = ev->phase;
		st->role = ev->role ? xstrdup(ev->role) : NULL;
		st->step = ev->step ? xstrdup(ev->step) : NULL;
		break;
	case EVENT_STEP_END:
		st->steps_done++;
		if (ev->result == STEP_CHANGED || ev->result == STEP_WOULD_CHANGE)
			st->steps_changed++;
		else if (ev->result == STEP_FAILED)
			st->steps_failed++;
		else if (ev->result == STEP_SKIPPED)
			st->steps_skipped++;
		break;
	case EVENT_LINE:
		st->lines++;
		break;
	case EVENT_MESSAGE:
	case EVENT_PROGRESS:
	case EVENT_FACTS:
	case EVENT_ROLES:
		break;
	}
}

void event_consumers_add(struct event_consumers *l, event_fn on_event, tick_fn on_tick, void *data)
{
	if (l->nr == EVENT_CONSUMERS_MAX)
		die("more than %d event consumers", EVENT_CONSUMERS_MAX);
	l->c[l->nr++] = (struct event_consumer){on_event, on_tick, data};
}

void event_consumers_event(const struct event_consumers *l, const struct event *ev,
			   const struct node_status *st)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->c[i].on_event)
			l->c[i].on_event(ev, st, l->c[i].data);
}

void event_consumers_tick(const struct event_consumers *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->c[i].on_tick)
			l->c[i].on_tick(l->c[i].data);
}

/*
 * keep: the caller takes the records (runner_run's status_out), so each
 * event is applied to them; else the runner keeps only each node's state
 * (its summary) and the caller, who keeps records of its own (the plan's
 * run-wide ones), applies the event once, there.
 */
static void dispatch(const struct runner_opts *o, struct node_status *status, bool keep,
		     struct event *ev)
{
	struct node_status *st = &status[ev->node];

	if (keep)
		node_status_apply(st, ev);
	else if (ev->kind == EVENT_NODE_STATE)
		st->state = ev->state;
	event_consumers_event(&o->consumers, ev, keep ? st : NULL);
	event_free(ev);
}

void runner_status_release(struct node_status *status, size_t nr)
{
	size_t i;

	if (!status)
		return;
	for (i = 0; i < nr; i++) {
		free(status[i].reason);
		free(status[i].role);
		free(status[i].step);
	}
	free(status);
}

/* ---- a query (runner_query) ---- */

struct query_run {
	const struct runner_query *q;
	const struct runner_opts *o; /* the caller's: its event consumers */
	int rc, exit_status;
	bool ran;
	struct error err;
};

/* stdout is the caller's data: consumed here, never an event */
static bool query_filter(void *ctx, struct runner_job *job, int stream, const char *line,
			 size_t len, unsigned flags)
{
	struct query_run *qr = ctx;

	(void)job;
	if (stream != TRANSPORT_STDOUT)
		return false;
	if (qr->q->on_stdout)
		qr->q->on_stdout(qr->q->ctx, line, len, flags);
	return true;
}

static struct event *query_event(struct runner_job *job, const struct runner_query *q,
				 enum event_kind kind)
{
	struct event *ev = event_new(kind, job->index);

	ev->query = true;
	ev->phase = q->phase;
	ev->role = q->role ? xstrdup(q->role) : NULL;
	ev->step = q->step ? xstrdup(q->step) : NULL;
	return ev;
}

static int query_fn(struct runner_job *job, void *data)
{
	struct query_run *qr = data;
	const struct runner_query *q = qr->q;
	struct transport_result res = {0};
	uint64_t t0 = now_ms();
	struct event *ev;
	bool skipped;

	runner_job_set_filter(job, query_filter, qr);
	runner_job_post(job, query_event(job, q, EVENT_STEP_START));
	if (q->put_path)
		qr->rc = job->r->opts->ops->put_file(job->tp, q->put_path, q->input, q->input_len,
						     q->put_mode, NULL, &skipped, &qr->err);
	else if (q->get_path && !job->r->opts->ops->get_file)
		qr->rc = error_set(&qr->err, TRANSPORT_ERR_GENERIC,
				   "the %s transport cannot read files", job->r->opts->ops->name);
	else if (q->get_path)
		qr->rc = job->r->opts->ops->get_file(job->tp, q->get_path, q->get_max, q->on_data,
						     q->ctx, q->get_sha, q->get_size,
						     q->timeout_ms, &qr->err);
	else
		qr->rc = runner_job_exec(job, q->phase, q->step, q->command, q->input,
					 q->input_len, q->timeout_ms, &res, &qr->err);
	qr->ran = true;
	qr->exit_status =
	    qr->rc < 0 || q->put_path || q->get_path ? (qr->rc < 0 ? -1 : 0) : res.exit_status;
	ev = query_event(job, q, EVENT_STEP_END);
	ev->result = qr->rc == 0 && qr->exit_status == 0 ? STEP_OK : STEP_FAILED;
	ev->exit_status = qr->exit_status;
	ev->duration_ms = now_ms() - t0;
	if (qr->rc < 0)
		ev->text = xstrdup(qr->err.msg);
	runner_job_post(job, ev);
	runner_job_set_filter(job, NULL, NULL);
	runner_job_set_exit(job, qr->exit_status);
	if (qr->rc == TRANSPORT_ERR_LOST)
		return -1;
	return qr->rc < 0 ? 1 : 0;
}

static void query_on_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct query_run *qr = data;

	/* not reached: the reason (the runner's words, redacted) */
	if (ev->kind == EVENT_NODE_STATE && ev->state == NODE_UNREACHABLE && !qr->ran)
		error_set(&qr->err, TRANSPORT_ERR_GENERIC, "%s", ev->text ? ev->text : "unreachable");
	event_consumers_event(&qr->o->consumers, ev, st);
}

static void query_on_tick(void *data)
{
	struct query_run *qr = data;

	event_consumers_tick(&qr->o->consumers);
}

int runner_query(const struct runner_opts *o, const struct node *node, struct transport **session,
		 const struct runner_query *q, int *exit_status, struct error *err)
{
	struct query_run qr = {.q = q, .o = o, .rc = TRANSPORT_ERR_GENERIC, .exit_status = -1};
	struct runner_opts ro = *o;
	struct runner_summary sum;
	const struct node *nodes[1] = {node};
	struct transport *slot[1] = {session ? *session : NULL};

	ro.forks = 1;
	ro.sessions = slot;
	ro.node_fn = query_fn;
	ro.data = &qr;
	memset(&ro.consumers, 0, sizeof(ro.consumers));
	event_consumers_add(&ro.consumers, query_on_event, query_on_tick, &qr);
	runner_run(&ro, nodes, 1, &sum, NULL);
	if (session)
		*session = slot[0];
	else
		runner_sessions_close(o->ops, slot, 1);
	if (exit_status)
		*exit_status = qr.exit_status;
	if (qr.rc < 0 || !qr.ran) {
		if (err)
			*err = qr.err;
		return qr.rc < 0 ? qr.rc : TRANSPORT_ERR_GENERIC;
	}
	return 0;
}

int runner_host_key(const struct node *n, struct transport_host_key *out, struct error *err)
{
	struct runner_opts ro = {0};
	struct transport_target target;

	runner_target_from_node(&target, n, &ro);
	return transport_host_key_scan(&target, out, err);
}

void runner_sessions_close(const struct transport_ops *ops, struct transport **sessions, size_t nr)
{
	size_t i;

	if (!sessions)
		return;
	for (i = 0; i < nr; i++) {
		ops->close(sessions[i]);
		sessions[i] = NULL;
	}
}

int runner_run(const struct runner_opts *opts, const struct node *const *nodes, size_t nr,
	       struct runner_summary *summary, struct node_status **status_out)
{
	struct runner r = {.opts = opts, .nodes = nodes, .nr = nr};
	struct node_status *status = xcalloc(nr ? nr : 1, sizeof(*status));
	bool keep = status_out != NULL;
	struct sigaction sa = {0}, old_int, old_term;
	pthread_t *threads = NULL;
	pthread_attr_t attr;
	size_t nthreads, i, started;
	uint64_t t0 = now_ms();
	unsigned handled_signals = 0;
	struct event *ev;

	if (opts->forks < 1)
		die("runner_run called with forks %d", opts->forks);
	memset(summary, 0, sizeof(*summary));
	for (i = 0; i < nr; i++) {
		status[i].exit_status = -1;
		status[i].phase = PHASE_NONE;
		status[i].queued_ms = t0;
	}
	r.q = events_new();
	pthread_mutex_init(&r.lock, NULL);
	atomic_init(&r.stop, false);
	atomic_init(&r.cancel, false);
	nthreads = (size_t)opts->forks < nr ? (size_t)opts->forks : nr;
	atomic_init(&r.active, nthreads);

	/*
	 * signals_seen is not reset here: a ^C (or the TUI's q) between two
	 * passes of one run must stop the next pass too.  runner_interrupt_reset()
	 * starts afresh (a new command, a new status round).
	 */
	handled_signals = (unsigned)signals_seen;
	if (handled_signals) {
		summary->interrupted = true;
		atomic_store(&r.stop, true);
		if (handled_signals >= 2)
			atomic_store(&r.cancel, true);
	}
	if (opts->handle_signals) {
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
	}

	/* Small stacks: 256 workers must stay well under the memory target. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	threads = xcalloc(nthreads ? nthreads : 1, sizeof(*threads));
	for (started = 0; started < nthreads; started++) {
		if (pthread_create(&threads[started], &attr, worker_main, &r)) {
			/* Fewer workers is still correct: the window is just smaller. */
			atomic_fetch_sub(&r.active, nthreads - started);
			if (!started)
				die("cannot start any worker thread");
			break;
		}
	}
	pthread_attr_destroy(&attr);

	for (;;) {
		ev = events_pop(r.q, 100);
		if (ev)
			dispatch(opts, status, keep, ev);
		if (signals_seen != (sig_atomic_t)handled_signals) {
			handled_signals = (unsigned)signals_seen;
			summary->interrupted = true;
			atomic_store(&r.stop, true);
			if (handled_signals >= 2)
				atomic_store(&r.cancel, true);
		}
		if (!ev)
			event_consumers_tick(&opts->consumers);
		if (!ev && atomic_load(&r.active) == 0)
			break;
	}
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	/* Events posted between the last pop and the join. */
	while ((ev = events_pop(r.q, 0)))
		dispatch(opts, status, keep, ev);

	for (i = 0; i < nr; i++) {
		if (status[i].state == NODE_PENDING) {
			struct event *c = event_new(EVENT_NODE_STATE, i);
			c->state = NODE_CANCELLED;
			c->text = xstrdup("not started: the run was interrupted");
			dispatch(opts, status, keep, c);
		}
		switch (status[i].state) {
		case NODE_DONE:
			summary->ok++;
			break;
		case NODE_FAILED:
			summary->failed++;
			break;
		case NODE_UNREACHABLE:
			summary->unreachable++;
			break;
		default:
			summary->cancelled++;
			break;
		}
	}
	summary->nodes = nr;
	summary->elapsed_ms = now_ms() - t0;

	if (opts->handle_signals) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	free(threads);
	pthread_mutex_destroy(&r.lock);
	events_free(r.q);
	if (status_out)
		*status_out = status;
	else
		runner_status_release(status, nr);
	return 0;
}
