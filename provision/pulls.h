/*
 * pulls: the image pulls of a run's nodes as their EVENT_PROGRESS events
 * tell them (a pull step's `::progress image=REF done=BYTES total=BYTES`),
 * kept per node: the images in flight and done, bytes so far and in all,
 * the node's download rate over the last seconds, the time left.  The
 * views (plain and JSON lines, the live view) and the run record each keep
 * one, fed the same events.
 *
 * Bounded whatever a node prints: at most PULLS_IMAGES_MAX images per node
 * (a node only reports the images provision asked it to pull; more are
 * ignored), a fixed ring of rate samples.
 *
 * Ownership: the tracker owns copies of the references.  Main thread only.
 */
#ifndef PROVISION_PULLS_H
#define PROVISION_PULLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

#define PULLS_IMAGES_MAX 256
#define PULLS_SAMPLES	 32
/* The rate is measured over about this much of the recent past. */
#define PULLS_RATE_WINDOW_MS 8000

struct pull_image {
	char *ref;
	char *role;	      /* whose step pulls it */
	uint64_t done, total; /* total 0: not known yet */
	uint64_t first_ms, last_ms;
	uint64_t done_ms; /* when done reached total (0: not yet) */
};

struct pull_node {
	struct pull_image *images;
	size_t nr, alloc;
	size_t current; /* the image reported last (index), SIZE_MAX: none */
	bool active;	/* a pull step runs (its progress came after its start) */
	/* (time, bytes done over every image) samples, a ring */
	uint64_t sample_ms[PULLS_SAMPLES], sample_bytes[PULLS_SAMPLES];
	unsigned samples, head;
};

struct pulls {
	struct pull_node *nodes;
	size_t nr;
};

void pulls_init(struct pulls *p, size_t nr);
void pulls_release(struct pulls *p);

/*
 * Feed an event: EVENT_PROGRESS updates the node; the end of a step (or
 * of the node) ends its pulls in flight.  Returns the image it updated, or
 * NULL (another kind of event, or one past the bounds).
 */
const struct pull_image *pulls_event(struct pulls *p, const struct event *ev);

struct pull_summary {
	const struct pull_image *image; /* the one to show (reported last), or NULL */
	unsigned in_flight, finished;	/* images still pulling, and done */
	uint64_t done, total;		/* bytes over the images in flight (total: known ones) */
	bool total_known;		/* every image in flight knows its total */
	uint64_t rate;			/* bytes per second, recent; 0: not known yet */
	int64_t eta_ms;			/* time left at that rate; -1: not known */
};

/* What node i is pulling now; false when nothing (no pull step runs). */
bool pulls_node(const struct pulls *p, size_t i, uint64_t now, struct pull_summary *out);

/* "12.3 MB", "950 kB", "1.20 GB" (SI units, as registries and ctr show sizes). */
void pulls_bytes(char *buf, size_t size, uint64_t bytes);

#endif
