/*
 * tui checks: the validation matrix, nodes x checks, each cell with what
 * was expected, what was observed and how to fix it.
 *
 * One table, filled from what the run reports:
 *   - the validation (validate.h), whose results arrive as EVENT_STEP_END
 *     events of phase "validate": step = the check's id, expected and
 *     observed set, result ok/failed/skipped, "(hint: ...)" the fix
 *     (model.c turns each into a cell);
 *   - the live view of `up`/`plan` (model.c): `reachable` and `gpus` from
 *     the facts, `preflight` from preflight's messages, and one check per
 *     role from its steps' results;
 *   - `provision status` adds what the validation has no check for yet
 *     (tui_checks_status()).
 * A later check needs no change here: a new id is a new column.
 *
 * Ownership: the table owns its ids, labels and every cell's strings.
 * Main thread only.
 */
#ifndef PROVISION_TUI_CHECKS_H
#define PROVISION_TUI_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

#include "../facts.h"
#include "../inventory.h"
#include "../util.h"

enum tui_check_state {
	TUI_CHECK_UNKNOWN = 0, /* not known yet */
	TUI_CHECK_OK,
	TUI_CHECK_WARN, /* works now, but not as desired (e.g. swap comes back at boot) */
	TUI_CHECK_FAILED,
	TUI_CHECK_NA, /* not applicable, or not checked by this version */
};

struct tui_check {
	unsigned char state; /* enum tui_check_state */
	unsigned gen;	     /* the round that set it (status) */
	char *expected, *observed, *fix;
};

struct tui_check_col {
	char *id;		 /* "swap", "containerd", "preflight", a role's name */
	char *label;		 /* its heading: short */
	struct tui_check *cells; /* one per node */
};

struct tui_checks {
	size_t nr_nodes;
	struct tui_check_col *cols; /* in order of first appearance */
	size_t nr, alloc;
	unsigned gen; /* the current round: cells set now carry it */
};

void tui_checks_init(struct tui_checks *c, size_t nr_nodes);
void tui_checks_release(struct tui_checks *c);
/* Empty every cell (the columns stay): a new status round. */
void tui_checks_clear(struct tui_checks *c);
/* The column of check `id`, added (with `label`, or id when NULL) when new. */
size_t tui_checks_column(struct tui_checks *c, const char *id, const char *label);
/* Set one cell; strings are copied (NULL: none). */
void tui_checks_set(struct tui_checks *c, const char *id, size_t node, enum tui_check_state state,
		    const char *expected, const char *observed, const char *fix);
const struct tui_check *tui_checks_get(const struct tui_checks *c, size_t col, size_t node);
/* Whether any cell failed. */
bool tui_checks_failed(const struct tui_checks *c);
const char *tui_check_state_name(enum tui_check_state s);

/* A short heading for a check id ("swap-off-at-boot" -> "swap@boot"); the id when none. */
const char *tui_checks_label(const char *id);
/* A column's short form (7 characters at most) when its title does not fit, or NULL. */
const char *tui_checks_short(const char *id);
/* The table of short forms ({id, short} pairs): its size. */
size_t tui_checks_short_forms(const char *const (**forms)[2]);

/*
 * provision status: its columns in a fixed order, so that a failing check
 * does not move the others.
 */
void tui_checks_status_columns(struct tui_checks *c);
/*
 * The checks of node i that the validation (validate.h) has not: kube
 * packages at the inventory's version and held, GPUs found against the
 * inventory; and kubelet, gpu-alloc, last-run as n/a (a later version checks
 * them).  f is NULL when the node gave no facts.
 */
void tui_checks_status(struct tui_checks *c, size_t i, const struct inventory *inv,
		       const struct node *n, const struct facts *f);

/* The `gpus` check (status and the live view): the inventory's gpus against the facts. */
void tui_checks_gpus(struct tui_checks *c, size_t i, const struct node *n, const struct facts *f);

/*
 * End of a round: cells not set in round `gen` (or still unknown) become n/a
 * with `why`, so that nothing from an older round passes for current.
 */
void tui_checks_expire(struct tui_checks *c, unsigned gen, const char *why);

/*
 * The table `provision status` prints when standard output is not a
 * terminal: one row per node, one column per check, then a line per
 * check that is not ok with expected, observed and fix.
 */
void tui_checks_table(struct strbuf *out, const struct tui_checks *c,
		      const struct node *const *nodes, size_t nr);

#endif
