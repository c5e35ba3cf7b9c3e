/*
 * view: the plain-line and JSON-line views of a run (the TUI is tui/).
 *
 * Both read events and node status records only, on the main thread, and
 * write whole lines with one write(2) each, so nothing interleaves.
 *
 * Plain lines (`--no-tui` or a non-terminal):
 *   [b-2] containerd › 20-config … changed 0.4s
 * Results that are `unchanged` and output lines are shown with --verbose
 * only.  JSON lines (`-o json`): one object per event.  A pull's progress
 * (EVENT_PROGRESS) is a line at a bounded rate: per node one every
 * VIEW_PROGRESS_PLAIN_MS (plain) or VIEW_PROGRESS_JSON_MS (JSON), and one
 * when an image is complete.
 *
 * ^C: view_tick (the run's on_tick) says at once what an interrupt does,
 * one line per interrupt: the first stops the run after the steps running
 * now (named), the second stops their commands (runner.h, "Interrupts").
 */
#ifndef PROVISION_VIEW_H
#define PROVISION_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "events.h"
#include "inventory.h"
#include "pulls.h"
#include "runner.h"

#define VIEW_PROGRESS_PLAIN_MS 10000
#define VIEW_PROGRESS_JSON_MS  2000

struct view {
	const struct node *const *nodes;
	size_t nr;
	bool json;
	bool verbose;
	int fd;	     /* where lines go (stdout) */
	size_t width; /* of the widest node name, for alignment */
	struct pulls pulls;    /* the nodes' pulls, for the progress lines */
	uint64_t *progress_ms; /* per node: when its last progress line went out */
	char **running;	     /* per node: "role › step" it is in, or NULL (for ^C) */
	unsigned interrupts; /* runner_interrupts() already announced */
};

void view_init(struct view *v, const struct node *const *nodes, size_t nr, bool json, bool verbose);
/* Free what view_init made; accepts a zeroed view. */
void view_release(struct view *v);
/* An event consumer's on_event (runner.h: runner and plan options; data = struct view *). */
void view_event(const struct event *ev, const struct node_status *st, void *data);
/*
 * The on_tick callback (data = struct view *): when an interrupt came
 * since the last call, one line saying what it does now and what the next
 * one would do (plain), or {"event":"interrupt",...} (JSON).
 */
void view_tick(void *data);
/* "1.2s", "4m12s", "850ms" */
void view_duration(char *buf, size_t size, uint64_t ms);

#endif
