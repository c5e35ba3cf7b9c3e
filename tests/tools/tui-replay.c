/*
 * tests/tools/tui-replay.c: provision's live view fed a scripted run, for
 * screen tests that need no nodes (t0300 compares its screens at 80x24,
 * 120x40 and 200x60).  The view is the one `provision up` shows (tui.h):
 * the same model, layout and drawing; only the events come from a script.
 *
 *   tui-replay INVENTORY ROLES_DIR SCRIPT
 *
 * SCRIPT, one command a line (fields split on spaces; TEXT is the rest):
 *   start NODE ROLE STEP           a step starts (ROLE facts or preflight: those phases)
 *   line NODE ROLE STEP TEXT       a line of its standard output
 *   end NODE ROLE STEP RESULT [TEXT]   it ends: unchanged, changed, failed, skipped, ok
 *   facts NODE FILE                its facts step, the output a facts.sh output FILE
 *   state NODE STATE               running, done, failed
 *   hold FILE                      draw until FILE exists (the test reads the screen
 *                                  meanwhile), 60 s at most
 *   # ...                          a comment
 * At the end of the script the run ends (the view stays on a failure until q).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "inventory.h"
#include "plan.h"
#include "role.h"
#include "tui/tui.h"
#include "util.h"

static size_t node_index(const struct inventory *inv, const char *name)
{
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++)
		if (!strcmp(inv->nodes[i].name, name))
			return i;
	fprintf(stderr, "tui-replay: no node '%s'\n", name);
	exit(2);
}

static enum step_result result_of(const char *s)
{
	static const char *const names[] = {"none", "unchanged", "changed", "failed", "skipped",
					    "ok"};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], s))
			return (enum step_result)i;
	return STEP_NONE;
}

static void post(struct tui *t, struct event *ev)
{
	ev->at_ms = now_ms();
	tui_event(ev, NULL, t);
	event_free(ev);
}

static struct event *facts_event(enum event_kind k, size_t node)
{
	struct event *ev = event_new(k, node);

	ev->phase = PHASE_FACTS;
	ev->role = xstrdup("facts");
	ev->step = xstrdup("gather");
	return ev;
}

/* The facts step of a node, its output the lines of a facts.sh output file. */
static void replay_facts(struct tui *t, const struct inventory *inv, const struct role_set *rs,
			 size_t node, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	struct event *ev;
	struct strbuf text = STRBUF_INIT;
	struct facts facts;
	struct error err = {0};

	if (!f) {
		perror(path);
		exit(2);
	}
	post(t, facts_event(EVENT_STEP_START, node));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		ev = facts_event(EVENT_LINE, node);
		ev->stream = 1;
		ev->text = xstrdup(line);
		post(t, ev);
		strbuf_addf(&text, "%s\n", line);
	}
	fclose(f);
	/* parsed as the plan parses them, once: the view reads the event */
	if (facts_parse(&facts, text.buf, text.len, &err) == 0) {
		ev = facts_event(EVENT_FACTS, node);
		ev->facts = &facts;
		post(t, ev);
		/* and the roles the plan decides from them */
		ev = facts_event(EVENT_ROLES, node);
		ev->nr_roles = rs->nr;
		ev->roles = xcalloc(rs->nr ? rs->nr : 1, sizeof(*ev->roles));
		plan_node_roles(rs, inv, &inv->nodes[node], &facts, (1u << ROLE_UP_PHASES) - 1,
				ev->roles);
		post(t, ev);
		facts_release(&facts);
	}
	strbuf_release(&text);
	ev = facts_event(EVENT_STEP_END, node);
	ev->result = STEP_OK;
	ev->duration_ms = 900;
	post(t, ev);
}

int main(int argc, char **argv)
{
	struct inventory *inv = NULL;
	struct role_set rs;
	struct diag_list dl;
	const struct node **nodes;
	struct tui *t;
	FILE *f;
	char buf[4096];
	size_t i;

	if (argc != 4) {
		fprintf(stderr, "usage: tui-replay INVENTORY ROLES_DIR SCRIPT\n");
		return 2;
	}
	diag_list_init(&dl);
	if (inventory_load(&inv, argv[1], &dl) < 0 || role_set_load(&rs, argv[2], &dl) < 0) {
		fprintf(stderr, "tui-replay: cannot load the inventory or the roles\n");
		return 2;
	}
	diag_list_release(&dl);
	nodes = xcalloc(inv->nr_nodes, sizeof(*nodes));
	for (i = 0; i < inv->nr_nodes; i++)
		nodes[i] = &inv->nodes[i];
	f = fopen(argv[3], "r");
	if (!f) {
		perror(argv[3]);
		return 2;
	}
	struct tui_config tc = {
	    .kind = TUI_RUN,
	    .command = "up",
	    .inv = inv,
	    .roles = &rs,
	    .phases = (1u << ROLE_UP_PHASES) - 1,
	    .validate = true,
	    .nodes = nodes,
	    .nr = inv->nr_nodes,
	};
	t = tui_start(&tc, NULL);
	if (!t) {
		fprintf(stderr, "tui-replay: no terminal\n");
		return 2;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *w[5] = {NULL}, *save = NULL, *rest = NULL;
		struct event *ev = NULL;
		int nw = 0;

		buf[strcspn(buf, "\n")] = 0;
		for (char *p = strtok_r(buf, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
			w[nw++] = p;
			if (nw == 5)
				break;
		}
		rest = save && *save ? save : NULL;
		if (!nw || w[0][0] == '#')
			continue;
		if (!strcmp(w[0], "hold") && nw >= 2) {
			/* bounded: a test that died does not leave this behind */
			uint64_t until = now_ms() + 60000;
			while (access(w[1], F_OK) != 0 && now_ms() < until &&
			       !tui_quit_requested(t)) {
				tui_tick(t);
				usleep(50000);
			}
			continue;
		}
		if (!strcmp(w[0], "facts") && nw >= 3) {
			replay_facts(t, inv, &rs, node_index(inv, w[1]), w[2]);
			continue;
		}
		if (nw < 3)
			continue;
		if (!strcmp(w[0], "state")) {
			ev = event_new(EVENT_NODE_STATE, node_index(inv, w[1]));
			ev->state = !strcmp(w[2], "done")     ? NODE_DONE
				    : !strcmp(w[2], "failed") ? NODE_FAILED
							      : NODE_RUNNING;
		} else if (nw >= 4) {
			const struct role *r = role_set_find(&rs, w[2]);
			enum event_kind k = !strcmp(w[0], "start") ? EVENT_STEP_START
					    : !strcmp(w[0], "end") ? EVENT_STEP_END
								   : EVENT_LINE;
			ev = event_new(k, node_index(inv, w[1]));
			ev->phase = r				      ? r->phase
				    : phase_is(w[2], PHASE_FACTS)     ? PHASE_FACTS
				    : phase_is(w[2], PHASE_PREFLIGHT) ? PHASE_PREFLIGHT
								      : role_phase_index(w[2]);
			ev->role = xstrdup(w[2]);
			ev->step = xstrdup(w[3]);
			if (k == EVENT_STEP_END) {
				ev->result = nw >= 5 ? result_of(w[4]) : STEP_OK;
				ev->duration_ms = 1200;
				if (rest)
					ev->text = xstrdup(rest);
			} else if (k == EVENT_LINE) {
				ev->stream = 1;
				/* the line is the 5th word and the rest */
				ev->text = nw >= 5 ? xasprintf("%s%s%s", w[4], rest ? " " : "",
							       rest ? rest : "")
						   : xstrdup("");
			}
		}
		if (ev) {
			ev->at_ms = now_ms();
			tui_event(ev, NULL, t);
			event_free(ev);
		}
	}
	fclose(f);
	tui_run_end(t, false);
	tui_stop(t);
	tui_free(t);
	free(nodes);
	role_set_release(&rs);
	inventory_free(inv);
	return 0;
}
