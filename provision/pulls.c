/* pulls: see pulls.h. */
#include "pulls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void pulls_init(struct pulls *p, size_t nr)
{
	size_t i;

	p->nr = nr;
	p->nodes = xcalloc(nr ? nr : 1, sizeof(*p->nodes));
	for (i = 0; i < nr; i++)
		p->nodes[i].current = SIZE_MAX;
}

void pulls_release(struct pulls *p)
{
	size_t i, k;

	for (i = 0; i < p->nr; i++) {
		for (k = 0; k < p->nodes[i].nr; k++) {
			free(p->nodes[i].images[k].ref);
			free(p->nodes[i].images[k].role);
		}
		free(p->nodes[i].images);
	}
	free(p->nodes);
	memset(p, 0, sizeof(*p));
}

static uint64_t node_bytes(const struct pull_node *n)
{
	uint64_t b = 0;
	size_t k;

	for (k = 0; k < n->nr; k++)
		b += n->images[k].done;
	return b;
}

static void sample(struct pull_node *n, uint64_t at)
{
	unsigned last = (n->head + PULLS_SAMPLES - 1) % PULLS_SAMPLES;

	/* several events in the same tenth of a second: one sample */
	if (n->samples && at < n->sample_ms[last] + 100) {
		n->sample_bytes[last] = node_bytes(n);
		return;
	}
	n->sample_ms[n->head] = at;
	n->sample_bytes[n->head] = node_bytes(n);
	n->head = (n->head + 1) % PULLS_SAMPLES;
	if (n->samples < PULLS_SAMPLES)
		n->samples++;
}

const struct pull_image *pulls_event(struct pulls *p, const struct event *ev)
{
	struct pull_node *n;
	struct pull_image *im = NULL;
	size_t k;

	if (ev->node >= p->nr)
		return NULL;
	n = &p->nodes[ev->node];
	if (ev->kind == EVENT_STEP_START || ev->kind == EVENT_STEP_END ||
	    (ev->kind == EVENT_NODE_STATE && ev->state >= NODE_DONE)) {
		/* a new step, or the end: nothing is in flight any more */
		n->active = false;
		n->samples = 0;
		n->head = 0;
		return NULL;
	}
	/* "queued": what a pull step will pull (plan_images.c), not a pull yet */
	if (ev->kind != EVENT_PROGRESS || !ev->text || (ev->step && !strcmp(ev->step, "queued")))
		return NULL;
	for (k = 0; k < n->nr; k++)
		if (!strcmp(n->images[k].ref, ev->text))
			im = &n->images[k];
	if (!im) {
		if (n->nr >= PULLS_IMAGES_MAX)
			return NULL;
		ALLOC_GROW(n->images, n->nr + 1, n->alloc);
		im = &n->images[n->nr++];
		memset(im, 0, sizeof(*im));
		im->ref = xstrdup(ev->text);
		im->role = xstrdup(ev->role ? ev->role : "");
		im->first_ms = ev->at_ms;
	}
	/* bytes only grow within a pull (a retry starts over: take what it says) */
	im->done = ev->done;
	im->total = ev->total;
	im->last_ms = ev->at_ms;
	if (im->total && im->done >= im->total && !im->done_ms)
		im->done_ms = ev->at_ms;
	else if (!(im->total && im->done >= im->total))
		im->done_ms = 0;
	n->current = (size_t)(im - n->images);
	n->active = true;
	sample(n, ev->at_ms);
	return im;
}

bool pulls_node(const struct pulls *p, size_t i, uint64_t now, struct pull_summary *out)
{
	const struct pull_node *n;
	unsigned last, k, oldest;
	size_t j;

	memset(out, 0, sizeof(*out));
	out->eta_ms = -1;
	if (i >= p->nr || !p->nodes[i].active)
		return false;
	n = &p->nodes[i];
	out->total_known = true;
	for (j = 0; j < n->nr; j++) {
		const struct pull_image *im = &n->images[j];
		if (im->done_ms) {
			out->finished++;
			continue;
		}
		out->in_flight++;
		out->done += im->done;
		out->total += im->total;
		if (!im->total)
			out->total_known = false;
	}
	if (n->current < n->nr)
		out->image = &n->images[n->current];
	/* the rate: from the oldest sample within the window to the newest */
	if (n->samples >= 2) {
		last = (n->head + PULLS_SAMPLES - 1) % PULLS_SAMPLES;
		oldest = last;
		for (k = 1; k < n->samples; k++) {
			unsigned s = (last + PULLS_SAMPLES - k) % PULLS_SAMPLES;
			if (n->sample_ms[last] - n->sample_ms[s] > PULLS_RATE_WINDOW_MS)
				break;
			oldest = s;
		}
		if (oldest != last && n->sample_ms[last] > n->sample_ms[oldest] &&
		    n->sample_bytes[last] >= n->sample_bytes[oldest])
			out->rate = (n->sample_bytes[last] - n->sample_bytes[oldest]) * 1000 /
				    (n->sample_ms[last] - n->sample_ms[oldest]);
		/* nothing heard for a while: the rate is not what it was */
		if (now > n->sample_ms[last] + PULLS_RATE_WINDOW_MS)
			out->rate = 0;
	}
	if (out->rate && out->total_known && out->in_flight && out->total >= out->done)
		out->eta_ms = (int64_t)((out->total - out->done) * 1000 / out->rate);
	return true;
}

void pulls_bytes(char *buf, size_t size, uint64_t b)
{
	if (b < 1000)
		snprintf(buf, size, "%llu B", (unsigned long long)b);
	else if (b < 1000000)
		snprintf(buf, size, "%.0f kB", (double)b / 1e3);
	else if (b < 1000000000)
		snprintf(buf, size, "%.1f MB", (double)b / 1e6);
	else
		snprintf(buf, size, "%.2f GB", (double)b / 1e9);
}
