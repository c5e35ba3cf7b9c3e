/* events: see events.h. */
#include "events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct events {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct event *head, *tail;
	unsigned wakeups;
};

struct events *events_new(void)
{
	struct events *q = xcalloc(1, sizeof(*q));
	pthread_condattr_t attr;

	pthread_mutex_init(&q->lock, NULL);
	/* Timed waits on the monotonic clock: wall-clock jumps must not stall a run. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	return q;
}

void events_free(struct events *q)
{
	struct event *ev, *next;

	if (!q)
		return;
	for (ev = q->head; ev; ev = next) {
		next = ev->next;
		event_free(ev);
	}
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

void events_push(struct events *q, struct event *ev)
{
	ev->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = ev;
	else
		q->head = ev;
	q->tail = ev;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void events_wake(struct events *q)
{
	pthread_mutex_lock(&q->lock);
	q->wakeups++;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

struct event *events_pop(struct events *q, int timeout_ms)
{
	struct event *ev;
	struct timespec deadline;

	if (timeout_ms > 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->wakeups && timeout_ms != 0) {
		int r;
		if (timeout_ms < 0)
			r = pthread_cond_wait(&q->cond, &q->lock);
		else
			r = pthread_cond_timedwait(&q->cond, &q->lock, &deadline);
		if (r == ETIMEDOUT)
			break;
	}
	ev = q->head;
	if (ev) {
		q->head = ev->next;
		if (!q->head)
			q->tail = NULL;
		ev->next = NULL;
	} else if (q->wakeups) {
		q->wakeups = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return ev;
}

struct event *event_new(enum event_kind kind, size_t node)
{
	struct event *ev = xcalloc(1, sizeof(*ev));

	ev->kind = kind;
	ev->node = node;
	ev->phase = PHASE_NONE;
	ev->at_ms = now_ms();
	return ev;
}

void event_free(struct event *ev)
{
	if (!ev)
		return;
	free(ev->role);
	free(ev->step);
	free(ev->text);
	free(ev->expected);
	free(ev->observed);
	free(ev->roles);
	free(ev);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct event *event_copy(const struct event *ev)
{
	struct event *c = xmalloc(sizeof(*c));

	*c = *ev;
	c->next = NULL;
	c->role = dup_or_null(ev->role);
	c->step = dup_or_null(ev->step);
	c->text = dup_or_null(ev->text);
	c->expected = dup_or_null(ev->expected);
	c->observed = dup_or_null(ev->observed);
	c->facts = NULL;
	c->roles = NULL;
	if (ev->roles && ev->nr_roles) {
		c->roles = xcalloc(ev->nr_roles, sizeof(*c->roles));
		memcpy(c->roles, ev->roles, ev->nr_roles * sizeof(*c->roles));
	}
	return c;
}

const char *node_state_name(enum node_state s)
{
	switch (s) {
	case NODE_PENDING:
		return "pending";
	case NODE_CONNECTING:
		return "connecting";
	case NODE_RUNNING:
		return "running";
	case NODE_DONE:
		return "done";
	case NODE_FAILED:
		return "failed";
	case NODE_UNREACHABLE:
		return "unreachable";
	case NODE_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

const char *step_result_name(enum step_result r)
{
	switch (r) {
	case STEP_NONE:
		return "none";
	case STEP_UNCHANGED:
		return "unchanged";
	case STEP_CHANGED:
		return "changed";
	case STEP_FAILED:
		return "failed";
	case STEP_SKIPPED:
		return "skipped";
	case STEP_OK:
		return "ok";
	case STEP_WOULD_CHANGE:
		return "would change";
	case STEP_WARNED:
		return "warning";
	}
	return "unknown";
}
