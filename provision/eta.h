/*
 * eta: how long a run will take, from the run record of earlier runs
 * (state.h).  The ETA reads, for the last runs of the same command (at most
 * 9: the recent ones follow a machine whose load changes), each run's
 * summary (command, result, duration_ms, ran), each node's timings (role,
 * step, milliseconds, result and its first check's milliseconds) and pulls
 * (image, bytes), and the facts' machine_id of the newest run that met each
 * node, whatever its command.
 *
 * Theory of operation.  Each step's times become samples of a class (its
 * check, its apply, the whole of it) under three scopes: the node's own,
 * its kind's (nodes with the same roles and GPU presence) and any node's;
 * an estimate takes the median of the narrowest scope that has one.  A step
 * counts at its check time when the node's last run left it as desired, at
 * its check and apply time when it is expected to do work (a new node, a
 * step that failed or changes every time, a later step of such a role, a
 * node that is another machine now); a step expected to do work that no
 * node was ever seen do has no history: it is left out and counted apart,
 * never guessed.  A run is its slowest node (or the nodes' total over the
 * window of forks) plus the time earlier runs like it spent outside the
 * nodes' steps.  The run in progress refines the estimate with what it
 * learns: the machine a node is (eta_machine), the bytes a node lacks
 * (eta_expect).
 *
 * Ownership and threading: eta_load() returns an object the caller frees
 * with eta_free(); it keeps nothing of the state handle.  Main thread only,
 * like the record it reads.  Never fails: with no history the estimate
 * knows nothing (-1).
 */
#ifndef PROVISION_ETA_H
#define PROVISION_ETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "state.h"
#include "util.h"

struct eta;

/*
 * Learn step times from the last runs of `command` ("up"; at most 9: the
 * recent ones follow a machine whose load changes): the median duration of
 * each step per node, and per kind of node.  The nodes of the inventory and
 * their kinds ("control-plane", "worker gpu", any string: nodes with the
 * same string are alike) say which nodes stand for which.  Never fails:
 * with no history the estimate knows nothing.
 */
struct eta *eta_load(struct state *s, const char *command, const char *const *nodes,
		     const char *const *kinds, size_t nr);
void eta_free(struct eta *e);
/*
 * The steps the coming run will run on a node, in run order ("role\tstep":
 * "facts\tgather", then the steps of each role of the run's phases that
 * applies to the node, as role.h lists them).  From this call on the
 * node's estimate is made of these: each role as the node's newest run of
 * it ran it (its files included), else as the newest node of its kind ran
 * it, else these steps; a step the node never ran does work.  Without it a
 * node's estimate is the steps of its newest run, whatever phases that run
 * had (issue 33: after `up --phases prep` the estimate of `up --phases
 * init` was prep's checks, 353 ms for a 66 s init).
 */
void eta_run_steps(struct eta *e, const char *node, const char *const *steps, size_t nr);
/*
 * The coming run's phases as the record's summary writes them ("all",
 * "init", "prep,kube-packages"): the time outside the steps is taken from
 * earlier runs of the same phases when there are any, else from any run.
 */
void eta_phases(struct eta *e, const char *phases);
/*
 * The expected duration of one step (role "facts", step "gather" included)
 * on a node: its own median, else the median on nodes of its kind, else
 * on any node.  -1 when no earlier run ran it.
 */
int64_t eta_step_ms(const struct eta *e, const char *node, const char *role, const char *step);
/*
 * The expected duration of a node's work: the coming run's steps
 * (eta_run_steps), else the steps it ran last time (a new node: those of
 * the newest node of its kind); -1 when unknown, and
 * when one of those steps is expected to do work but no node of the record
 * ever saw it do work (no history: not a tiny number).
 */
int64_t eta_node_ms(const struct eta *e, const char *node);
/*
 * How many steps of these nodes have no history of doing work (the total
 * of eta_total_ms leaves them out: a lower bound then); with what,
 * the first "role › step on NODE", and how many more.
 */
size_t eta_unknown(const struct eta *e, const char *const *nodes, size_t nr, struct strbuf *what);
/*
 * The expected duration of a run on these nodes with at most `forks` at
 * once: the slowest node (or the nodes' total over the window, when that
 * is longer), plus the median time earlier runs spent outside the nodes'
 * steps (connecting, waiting between passes, validation).  -1 when no
 * earlier run is known.
 */
int64_t eta_total_ms(const struct eta *e, const char *const *nodes, size_t nr, int forks);
/*
 * The machine a node is now (its facts' machine_id).  When the record last
 * saw another machine under that name (reinstalled, or replaced by a new PC
 * with the old name and address), every step it ran is expected to do work
 * again, as on a new node: true then, and the estimates above change.
 * False when it is the same machine, or one the record does not know, and
 * for every call after the first for a node (node text: a node that names
 * several machines is not believed twice).
 */
bool eta_machine(struct eta *e, const char *node, const char *machine_id);
/* How many earlier runs the estimate is made of. */
size_t eta_runs(const struct eta *e);

/*
 * The pulls of earlier runs (nodes/NODE/pulls, read with their timings):
 * an image's bytes as last pulled (0: never recorded), and how long a node
 * takes to pull `bytes` at the rate its pull steps had -- bytes over the
 * step's time, so the pulls at once and the step's checks are in it --
 * else its kind's, else any node's (-1: no pull recorded).
 */
uint64_t eta_image_bytes(const struct eta *e, const char *ref);
int64_t eta_pull_ms(const struct eta *e, const char *node, uint64_t bytes);
/*
 * The run now knows what a step of a node will take (its pull step, once
 * it knows which images the node lacks): from now on it counts ms, as
 * work.  False when the record has no such step for the node.
 */
bool eta_expect(struct eta *e, const char *node, const char *role, const char *step, int64_t ms);

#endif
