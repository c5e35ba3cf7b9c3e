/*
 * Unit tests for the TUI's parts that need no terminal: the layout
 * arithmetic (tui/layout.c), the model that turns events into cells,
 * progress, ETA, failures and the validation matrix (tui/model.c), the
 * per-node log with its cap, and the checks table (tui/checks.c).  What a
 * person sees on a terminal is tested by tests/t03*-tui-*.sh in tmux.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "tui/checks.h"
#include "tui/crt.h"
#include "tui/layout.h"
#include "tui/model.h"

/* ---- layout ---- */

static void test_layout_80x24_fits(void **state)
{
	struct tui_layout_in in = {.rows = 24,
				   .cols = 80,
				   .name_w = 6,
				   .roles_w = 6,
				   .gpu_w = 6,
				   .nr_cols = 10,
				   .label_w = 13,
				   .min_cell = 3,
				   .progress = true,
				   .nr_nodes = 3};
	struct tui_layout l;

	tui_layout_compute(&l, &in);
	/* Every column visible, and the whole row inside 80 columns. */
	assert_int_equal(l.cols_visible, 10);
	assert_true(l.cell_w >= 3);
	assert_true(l.cells_x + 10 * l.cell_w <= l.bar_x);
	assert_true(l.bar_w >= 6);
	assert_true(l.eta_x + l.eta_w <= 80);
	/* Long labels alternate between the two heading rows. */
	assert_true(l.stagger);
	assert_int_equal(l.label_w, 2 * l.cell_w - 1);
	/* Three nodes: three rows, the rest is the output pane, the footer last. */
	assert_int_equal(l.grid_y, 3);
	assert_int_equal(l.grid_h, 3);
	assert_int_equal(l.pane_y, 6);
	assert_int_equal(l.pane_h, 24 - 4 - 3 - 1);
	assert_int_equal(l.footer_y, 23);
}

static void test_layout_many_nodes_scroll(void **state)
{
	struct tui_layout_in in = {.rows = 24,
				   .cols = 80,
				   .name_w = 8,
				   .roles_w = 6,
				   .gpu_w = 6,
				   .nr_cols = 10,
				   .label_w = 13,
				   .min_cell = 3,
				   .progress = true,
				   .nr_nodes = 200};
	struct tui_layout l;

	tui_layout_compute(&l, &in);
	/* 20 rows between headings and footer: the pane keeps a third (6), the grid 14. */
	assert_int_equal(l.grid_h, 14);
	assert_int_equal(l.pane_y, 3 + 14);
	assert_int_equal(l.pane_h, 5);
	assert_true(l.pane_y + l.pane_h < l.footer_y + 1);
}

static void test_layout_drops_roles_then_gpu(void **state)
{
	struct tui_layout_in in = {.rows = 40,
				   .cols = 80,
				   .name_w = 10,
				   .roles_w = 10,
				   .gpu_w = 14,
				   .nr_cols = 12,
				   .label_w = 10,
				   .min_cell = 3,
				   .progress = true,
				   .nr_nodes = 5};
	struct tui_layout l;

	tui_layout_compute(&l, &in);
	assert_int_equal(l.roles_w, 0); /* roles go first */
	in.nr_cols = 16;
	tui_layout_compute(&l, &in);
	assert_int_equal(l.roles_w, 0);
	assert_int_equal(l.gpu_w, 0); /* then the GPU summary */
	assert_int_equal(l.cols_visible, 16);
	assert_true(l.eta_x + l.eta_w <= 80);
	/* Wide: everything, each label in its own cell. */
	in.cols = 200;
	in.nr_cols = 12;
	tui_layout_compute(&l, &in);
	assert_int_equal(l.roles_w, 10);
	assert_int_equal(l.gpu_w, 14);
	assert_int_equal(l.cell_w, 11);
	assert_false(l.stagger);
}

static void test_layout_too_many_columns_scroll_sideways(void **state)
{
	struct tui_layout_in in = {.rows = 24,
				   .cols = 80,
				   .name_w = 6,
				   .nr_cols = 40,
				   .label_w = 8,
				   .min_cell = 3,
				   .progress = true,
				   .nr_nodes = 3};
	struct tui_layout l;

	tui_layout_compute(&l, &in);
	assert_int_equal(l.cell_w, 3);
	assert_true(l.cols_visible < 40);
	assert_true(l.cols_visible > 10);
	assert_true(l.cells_x + (int)l.cols_visible * 3 <= l.bar_x);
	assert_true(l.eta_x + l.eta_w <= 80);
}

/*
 * The matrix at 80 columns (issue 22): 20 columns whose titles are 7
 * characters at their narrowest (a short form), 4 a cell, staggered.  The
 * last one shown has the room from its cell to the edge; where its title
 * would be cut there ("gpu\u2026", "nfs\u2026" scrolled to the end) the layout
 * shows one column fewer.
 */
static void test_layout_last_title_whole(void **state)
{
	struct tui_layout_in in = {.rows = 24,
				   .cols = 80,
				   .name_w = 6,
				   .nr_cols = 20,
				   .label_w = 22,
				   .min_cell = 4,
				   .nr_nodes = 4};
	int narrowest[20], y, room;
	struct tui_layout l;
	size_t i, left;

	(void)state;
	for (i = 0; i < 20; i++)
		narrowest[i] = 7;
	narrowest[17] = 6; /* gpu-op */
	tui_layout_compute(&l, &in);
	assert_int_equal(l.cell_w, 4);
	assert_int_equal(l.cols_visible, 18);
	assert_true(l.stagger);
	/* The 18th (gpu-op) would have 80 - (8 + 17 * 4) = 4: it goes, helm is last. */
	left = tui_layout_columns(&l, narrowest, 20, 0, 0);
	assert_int_equal(left, 0);
	assert_int_equal(l.cols_visible, 17);
	tui_layout_title(&l, 16, 17, &y, &room);
	assert_int_equal(y, l.header_y); /* the last title is on the upper row */
	assert_int_equal(room, 80 - (l.cells_x + 16 * 4));
	/* the others have a cell and the next one */
	tui_layout_title(&l, 15, 17, &y, &room);
	assert_int_equal(y, l.header_y + 1);
	assert_int_equal(room, 7);
	/* Scrolled to the end: the last column's title whole at the edge. */
	tui_layout_compute(&l, &in);
	left = tui_layout_columns(&l, narrowest, 20, 0, 19);
	assert_int_equal(left + l.cols_visible, 20);
	tui_layout_title(&l, l.cols_visible - 1, l.cols_visible, &y, &room);
	assert_true(room >= 7);
}

/* Every width, every selected column: the last title shown fits whole, inside the screen. */
static void test_layout_last_title_whole_any_width(void **state)
{
	int narrowest[24], y, room, cols;
	size_t i, sel, left;

	(void)state;
	for (i = 0; i < 24; i++)
		narrowest[i] = 3 + (int)(i * 3 % 5); /* 3 to 7 */
	for (cols = 30; cols <= 200; cols++) {
		for (sel = 0; sel < 24; sel++) {
			struct tui_layout_in in = {.rows = 24,
						   .cols = cols,
						   .name_w = 6,
						   .nr_cols = 24,
						   .label_w = 20,
						   .min_cell = 4,
						   .nr_nodes = 4};
			struct tui_layout l;
			size_t shown;
			tui_layout_compute(&l, &in);
			left = tui_layout_columns(&l, narrowest, 24, 0, sel);
			shown = 24 - left < l.cols_visible ? 24 - left : l.cols_visible;
			assert_true(sel >= left && sel < left + shown);
			tui_layout_title(&l, shown - 1, shown, &y, &room);
			if (shown > 1)
				assert_true(narrowest[left + shown - 1] <= room);
			assert_true(l.cells_x + (int)(shown - 1) * l.cell_w + room <= cols);
		}
	}
}

static void test_layout_small_screen_has_no_pane(void **state)
{
	struct tui_layout_in in = {.rows = 8,
				   .cols = 40,
				   .name_w = 6,
				   .nr_cols = 3,
				   .label_w = 5,
				   .min_cell = 3,
				   .progress = true,
				   .nr_nodes = 10};
	struct tui_layout l;

	tui_layout_compute(&l, &in);
	assert_int_equal(l.pane_h, 0);
	assert_int_equal(l.grid_h, 4);
	assert_int_equal(l.footer_y, 7);
}

static void test_scroll(void **state)
{
	assert_int_equal(tui_scroll(0, 0, 10, 5), 0);	      /* all fit */
	assert_int_equal(tui_scroll(0, 9, 10, 200), 0);	      /* visible */
	assert_int_equal(tui_scroll(0, 10, 10, 200), 1);      /* one below: move by one */
	assert_int_equal(tui_scroll(50, 20, 10, 200), 20);    /* above: it becomes the top */
	assert_int_equal(tui_scroll(195, 199, 10, 200), 190); /* never past the end */
	assert_int_equal(tui_scroll(0, 0, 0, 200), 0);
}

/* ---- text ---- */

static void test_split_hint(void **state)
{
	size_t len;
	char *h = tui_split_hint("apply failed (exit 1): no disk (hint: attach it)", &len);

	assert_string_equal(h, "attach it");
	assert_int_equal(len, strlen("apply failed (exit 1): no disk"));
	free(h);
	/* The last one counts: the output itself may say "(hint: ". */
	h = tui_split_hint("x (hint: a) y (hint: b)", &len);
	assert_string_equal(h, "b");
	assert_int_equal(len, strlen("x (hint: a) y"));
	free(h);
	assert_null(tui_split_hint("no hint here", &len));
	assert_int_equal(len, 12);
}

static void test_clean_line(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	text_clean_line(&sb, "\x1b[1;31merror\x1b[0m: bad");
	assert_string_equal(sb.buf, "error: bad");
	text_clean_line(&sb, "10%\r50%\r100% done");
	assert_string_equal(sb.buf, "100% done");
	text_clean_line(&sb, "a\tb");
	assert_string_equal(sb.buf, "a       b");
	text_clean_line(&sb, "bell\x07 and \x1b]0;title\x07gone");
	assert_string_equal(sb.buf, "bell? and gone");
	text_clean_line(&sb, "caf\xc3\xa9 \xe2\x9c\x93");
	assert_string_equal(sb.buf, "caf\xc3\xa9 \xe2\x9c\x93");
	/* C1 controls (8-bit CSI, NEL), U+2028 and bytes that are not UTF-8 */
	text_clean_line(&sb, "a\xc2\x9b" "31mb\xc2\x85" "c\xe2\x80\xa8" "d\x9b" "e\xff");
	assert_string_equal(sb.buf, "a?31mb?c?d?e?");
	text_clean(&sb, "x\x1b]0;t\x07y\nz\x1b[2J\n", 15);
	assert_string_equal(sb.buf, "xy\nz\n");
	assert_null(text_unsafe("RTX 3070\tok \xc3\xa9", 14));
	assert_non_null(text_unsafe("RTX 3070\rdcgm", 13));
	assert_non_null(text_unsafe("a\xc2\x85", 3));
	assert_non_null(text_unsafe("a\xe2\x80\xa9", 4));
	assert_non_null(text_unsafe("a\0b", 3));
	assert_non_null(text_unsafe("\xc0\xaf", 2));
	strbuf_release(&sb);
}

static void test_text_width(void **state)
{
	/* Wide characters take two columns; invalid bytes and controls one. */
	assert_int_equal(crt_text_width("node-1"), 6);
	assert_int_equal(crt_text_width("caf\xc3\xa9"), 4);
	assert_int_equal(crt_text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);
	assert_int_equal(crt_text_width("a\xff"
					"b"),
			 3);
	assert_int_equal(crt_text_width("a\x1b"
					"b"),
			 3);
}

/* ---- the log ---- */

static void test_log_cap(void **state)
{
	struct tui_log log;
	char line[32];
	int i;

	tui_log_init(&log, 4, 1 << 20);
	for (i = 0; i < 10; i++) {
		snprintf(line, sizeof(line), "line %d", i);
		tui_log_add(&log, TUI_LINE_OUT, line);
	}
	assert_int_equal(log.seq, 10);
	assert_int_equal(tui_log_first(&log), 6);
	assert_null(tui_log_get(&log, 5));
	assert_string_equal(tui_log_get(&log, 6)->text, "line 6");
	assert_string_equal(tui_log_get(&log, 9)->text, "line 9");
	assert_null(tui_log_get(&log, 10));
	tui_log_release(&log);

	/* The byte cap drops the oldest too. */
	tui_log_init(&log, 100, 20);
	tui_log_add(&log, TUI_LINE_OUT, "0123456789");
	tui_log_add(&log, TUI_LINE_OUT, "abcdefghij");
	assert_int_equal(tui_log_first(&log), 1);
	assert_string_equal(tui_log_get(&log, 1)->text, "abcdefghij");
	tui_log_release(&log);
}

/* ---- the model ---- */

static const char inventory_text[] = "cluster:\n"
				     "  name: unit\n"
				     "  kubernetes_version: \"1.30.4\"\n"
				     "ssh:\n"
				     "  user: root\n"
				     "nodes:\n"
				     "  - name: cp\n"
				     "    address: 198.18.0.10\n"
				     "    roles: [control-plane]\n"
				     "    gpus: 2\n"
				     "  - name: w-1\n"
				     "    address: 198.18.0.11\n"
				     "    roles: [worker]\n";

struct fixture {
	struct inventory *inv;
	struct role_set rs;
	const struct node *nodes[2];
	struct tui_model m;
	uint64_t t;
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	struct diag_list dl;

	diag_list_init(&dl);
	if (inventory_load_buffer(&f->inv, "unit.yaml", inventory_text, strlen(inventory_text),
				  &dl) < 0)
		fail_msg("inventory: %s", dl.nr ? dl.items[0].msg : "?");
	if (role_set_load(&f->rs, "tests/unit/data/roles", &dl) < 0)
		fail_msg("roles: %s", dl.nr ? diag_format(&dl.items[0]) : "?");
	diag_list_release(&dl);
	f->nodes[0] = &f->inv->nodes[0];
	f->nodes[1] = &f->inv->nodes[1];
	f->t = 1000;
	tui_model_init(&f->m, f->inv, &f->rs, plan_all_phases(), false, true, f->nodes, 2, f->t);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	tui_model_release(&f->m);
	role_set_release(&f->rs);
	inventory_free(f->inv);
	free(f);
	return 0;
}

static void feed(struct fixture *f, enum event_kind kind, size_t node, const char *role,
		 const char *step, enum step_result result, uint64_t ms, const char *text)
{
	struct event ev = {.kind = kind, .node = node, .result = result, .stream = 1};

	f->t += ms;
	ev.at_ms = f->t;
	ev.duration_ms = ms;
	ev.phase = role && !strcmp(role, "facts") ? PHASE_FACTS : PHASE_PREP;
	ev.role = (char *)role;
	ev.step = (char *)step;
	ev.text = (char *)text;
	tui_model_event(&f->m, &ev);
}

static void feed_state(struct fixture *f, size_t node, enum node_state s, const char *text)
{
	struct event ev = {.kind = EVENT_NODE_STATE, .node = node, .state = s, .at_ms = f->t};

	ev.text = (char *)text;
	tui_model_event(&f->m, &ev);
}

/*
 * A node's facts step as the plan posts it: the output lines (shown in the
 * log), the facts parsed by the plan (EVENT_FACTS; the model parses no
 * line), the step's end.
 */
static void facts_of(struct fixture *f, size_t node, const char *const *lines)
{
	struct strbuf text = STRBUF_INIT;
	struct facts facts;
	struct error err = {0};
	struct event fev = {.kind = EVENT_FACTS, .node = node};

	feed(f, EVENT_STEP_START, node, "facts", "gather", STEP_NONE, 0, NULL);
	for (; *lines; lines++) {
		struct event ev = {.kind = EVENT_LINE, .node = node, .stream = 1, .at_ms = f->t};
		ev.phase = PHASE_FACTS;
		ev.step = (char *)"gather";
		ev.text = (char *)*lines;
		tui_model_event(&f->m, &ev);
		strbuf_addf(&text, "%s\n", *lines);
	}
	assert_int_equal(facts_parse(&facts, text.buf, text.len, &err), 0);
	fev.at_ms = f->t;
	fev.phase = PHASE_FACTS;
	fev.facts = &facts;
	tui_model_event(&f->m, &fev);
	if (f->m.roles) { /* the roles the plan decides from them (EVENT_ROLES) */
		bool roles[16];
		struct event rev = {.kind = EVENT_ROLES, .node = node, .at_ms = f->t};
		assert_true(f->m.roles->nr <= 16);
		plan_node_roles(f->m.roles, f->m.inv, f->m.nodes[node].node, &facts, f->m.phases,
				roles);
		rev.roles = roles;
		rev.nr_roles = f->m.roles->nr;
		tui_model_event(&f->m, &rev);
	}
	facts_release(&facts); /* borrowed by the event: the model keeps none of it */
	strbuf_release(&text);
	feed(f, EVENT_STEP_END, node, "facts", "gather", STEP_OK, 200, NULL);
}

static const char *const facts_gpu[] = {"facts_version=1",
					"os_id=debian",
					"os_version=12",
					"cpus=8",
					"mem_kib=16000000",
					"nvidia_pci=0000:01:00.0 0x2204",
					"nvidia_pci=0000:02:00.0 0x2204",
					"nvidia_smi_rc=0",
					"gpu=NVIDIA GeForce RTX 3090, 24576 MiB, 535.104.05, GPU-1",
					"gpu=NVIDIA GeForce RTX 3090, 24576 MiB, 535.104.05, GPU-2",
					NULL};
static const char *const facts_plain[] = {"facts_version=1", "os_id=debian",	"os_version=12",
					  "cpus=2",	     "mem_kib=4000000", NULL};

static size_t col(struct fixture *f, const char *name)
{
	size_t c;

	for (c = 0; c < f->m.nr_cols; c++)
		if (!strcmp(f->m.cols[c].name, name))
			return c;
	fail_msg("no column '%s'", name);
	return 0;
}

static unsigned cell(struct fixture *f, size_t node, const char *name)
{
	return f->m.nodes[node].cells[col(f, name)].state;
}

static void test_model_columns(void **state)
{
	struct fixture *f = *state;

	/* facts, preflight, the roles of the selected phases in role order, validate. */
	assert_int_equal(f->m.nr_cols, 7);
	assert_string_equal(f->m.cols[0].name, "facts");
	assert_string_equal(f->m.cols[1].name, "preflight");
	assert_string_equal(f->m.cols[2].name, "alpha");
	assert_string_equal(f->m.cols[3].name, "beta");
	assert_string_equal(f->m.cols[4].name, "delta");
	assert_string_equal(f->m.cols[5].name, "gamma");
	assert_string_equal(f->m.cols[6].name, "validate");
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_PENDING);
	/* Steps: facts 1 + alpha 2 + beta (a file and a step) 2 + delta 1 + gamma 1. */
	assert_int_equal(f->m.nodes[0].steps_total, 7);
	/* A column only events know of is added when one names it. */
	feed(f, EVENT_STEP_START, 1, "addons", "10-helm", STEP_NONE, 0, NULL);
	assert_int_equal(f->m.nr_cols, 8);
	assert_int_equal(cell(f, 1, "addons"), TUI_CELL_RUNNING);
	assert_int_equal(cell(f, 0, "addons"), TUI_CELL_NA);
}

/*
 * A command's own question to a node (event.query: upgrade's versions,
 * restore's upload), handed to the view before the node's facts (a query
 * held for the pass): lines of the node's log, no column, no cell, and
 * preflight still waits for the roles (issue 35).
 */
static void test_model_query_step(void **state)
{
	struct fixture *f = *state;
	const struct tui_node *n = &f->m.nodes[0];
	struct event ev = {.kind = EVENT_STEP_START, .node = 0, .phase = PHASE_NONE, .query = true};
	size_t cols = f->m.nr_cols;
	uint64_t first = n->log.seq;

	ev.role = (char *)"upgrade";
	ev.step = (char *)"versions";
	ev.at_ms = f->t;
	tui_model_event(&f->m, &ev);
	ev.kind = EVENT_STEP_END;
	ev.result = STEP_OK;
	ev.duration_ms = 300;
	tui_model_event(&f->m, &ev);
	ev.kind = EVENT_STEP_START;
	ev.step = (char *)"upload";
	tui_model_event(&f->m, &ev);
	ev.kind = EVENT_STEP_END;
	ev.result = STEP_FAILED;
	ev.text = (char *)"lost the connection";
	tui_model_event(&f->m, &ev);
	assert_int_equal(f->m.nr_cols, cols);
	assert_int_equal(n->steps_done, 0);
	assert_int_equal(n->cur_col, -1);
	assert_int_equal(n->log.seq, first + 4);
	assert_string_equal(tui_log_get(&n->log, first)->text, "upgrade \xe2\x80\xba versions");
	assert_int_equal(tui_log_get(&n->log, first)->kind, TUI_LINE_STEP);
	assert_int_equal(tui_log_get(&n->log, first + 1)->kind, TUI_LINE_RESULT);
	assert_non_null(strstr(tui_log_get(&n->log, first + 1)->text, "ok"));
	assert_int_equal(tui_log_get(&n->log, first + 3)->kind, TUI_LINE_FAILED);
	assert_non_null(strstr(tui_log_get(&n->log, first + 3)->text, ": lost the connection"));
	/* the run goes on as without them: preflight is over once a role's step starts */
	feed_state(f, 0, NODE_CONNECTING, NULL);
	facts_of(f, 0, facts_gpu);
	assert_int_equal(cell(f, 0, "preflight"), TUI_CELL_PENDING);
	feed(f, EVENT_STEP_START, 0, "alpha", "10-plain", STEP_NONE, 0, NULL);
	assert_int_equal(cell(f, 0, "preflight"), TUI_CELL_UNCHANGED);
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_RUNNING);
}

static void test_model_a_node_from_start_to_end(void **state)
{
	struct fixture *f = *state;
	const struct tui_node *n = &f->m.nodes[0];
	uint64_t eta;

	feed_state(f, 0, NODE_CONNECTING, NULL);
	facts_of(f, 0, facts_gpu);
	assert_int_equal(cell(f, 0, "facts"), TUI_CELL_UNCHANGED);
	assert_true(n->have_facts);
	assert_string_equal(n->gpu, "2\xc3\x97 RTX 3090");
	/* Preflight is over for everyone once the roles start. */
	assert_int_equal(cell(f, 0, "preflight"), TUI_CELL_PENDING);
	assert_false(tui_model_eta(&f->m, 0, f->t, &eta)); /* no step timed yet */

	feed(f, EVENT_STEP_START, 0, "alpha", "10-plain", STEP_NONE, 0, NULL);
	assert_int_equal(cell(f, 0, "preflight"), TUI_CELL_UNCHANGED);
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_RUNNING);
	assert_string_equal(n->cur_step, "10-plain");
	feed(f, EVENT_STEP_END, 0, "alpha", "10-plain", STEP_UNCHANGED, 100, NULL);
	/* One of two steps: still running. */
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_RUNNING);
	assert_int_equal(tui_model_permille(&f->m, 0), 285); /* 2 of 7 steps */
	/* ETA: 5 steps left x 100 ms mean. */
	assert_true(tui_model_eta(&f->m, 0, f->t, &eta));
	assert_int_equal(eta, 500);

	feed(f, EVENT_STEP_START, 0, "alpha", "20-secret", STEP_NONE, 0, NULL);
	/* 50 ms into the current step: that part of it is no longer ahead. */
	assert_true(tui_model_eta(&f->m, 0, f->t + 50, &eta));
	assert_int_equal(eta, 450);
	feed(f, EVENT_STEP_END, 0, "alpha", "20-secret", STEP_CHANGED, 300, NULL);
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_CHANGED);
	assert_int_equal(tui_model_mean_step(&f->m), 200);

	feed(f, EVENT_STEP_START, 0, "beta", "/etc/hello.conf", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "beta", "/etc/hello.conf", STEP_UNCHANGED, 100, NULL);
	feed(f, EVENT_STEP_START, 0, "beta", "10-maybe-fail", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "beta", "10-maybe-fail", STEP_SKIPPED, 100, "no disk here");
	assert_int_equal(cell(f, 0, "beta"), TUI_CELL_UNCHANGED); /* a skip beside an unchanged */
	feed(f, EVENT_STEP_START, 0, "delta", "10-ordered", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "delta", "10-ordered", STEP_UNCHANGED, 100, NULL);
	feed(f, EVENT_STEP_START, 0, "gamma", "10-after", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "gamma", "10-after", STEP_SKIPPED, 100, "nothing to do");
	assert_int_equal(cell(f, 0, "gamma"), TUI_CELL_SKIPPED);
	assert_true(tui_node_finished(n));
	assert_int_equal(tui_model_permille(&f->m, 0), 1000);
	feed_state(f, 0, NODE_DONE, NULL);
	/* A later pass connecting again does not make the node run again. */
	feed_state(f, 0, NODE_RUNNING, NULL);
	assert_int_equal(n->state, NODE_DONE);
	/* The validate column waits for its checks after the node is done. */
	assert_int_equal(cell(f, 0, "validate"), TUI_CELL_PENDING);
}

static void test_model_failure(void **state)
{
	struct fixture *f = *state;
	const struct tui_node *n = &f->m.nodes[1];
	struct tui_counts c;
	const struct tui_check *k;
	size_t i;

	facts_of(f, 0, facts_plain);
	facts_of(f, 1, facts_plain);
	feed(f, EVENT_STEP_START, 1, "alpha", "10-plain", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 1, "alpha", "10-plain", STEP_UNCHANGED, 10, NULL);
	feed(f, EVENT_STEP_START, 1, "alpha", "20-secret", STEP_NONE, 0, NULL);
	{
		struct event ev = {.kind = EVENT_LINE, .node = 1, .stream = 2, .at_ms = f->t};
		ev.text = (char *)"error: no disk";
		tui_model_event(&f->m, &ev);
	}
	feed(f, EVENT_STEP_END, 1, "alpha", "20-secret", STEP_FAILED, 10,
	     "apply failed (exit 1): error: no disk (hint: attach the disk)");
	feed_state(f, 1, NODE_FAILED, "alpha › 20-secret: apply failed");
	assert_int_equal(cell(f, 1, "alpha"), TUI_CELL_FAILED);
	assert_int_equal(cell(f, 1, "beta"), TUI_CELL_NOT_REACHED);
	assert_int_equal(cell(f, 1, "gamma"), TUI_CELL_NOT_REACHED);
	assert_int_equal(n->fail_order, 1);
	assert_string_equal(n->fail_where, "alpha \xe2\x80\xba 20-secret");
	assert_string_equal(n->fail_text, "apply failed (exit 1): error: no disk");
	assert_string_equal(n->fail_hint, "attach the disk");
	/* Its output: the step's start, the line, the result. */
	assert_int_equal(n->fail_end - n->fail_first, 3);
	assert_string_equal(tui_log_get(&n->log, n->fail_first + 1)->text, "error: no disk");
	assert_int_equal(tui_log_get(&n->log, n->fail_first + 1)->kind, TUI_LINE_ERR);
	assert_int_equal(tui_model_next_failure(&f->m, SIZE_MAX), 1);
	assert_int_equal(tui_model_next_failure(&f->m, 1), 1); /* the only one: round again */
	tui_model_counts(&f->m, &c);
	assert_int_equal(c.failed, 1);
	/* The matrix: the role's check failed, with what was observed and the fix. */
	i = tui_checks_column(&f->m.checks, "alpha", NULL);
	k = tui_checks_get(&f->m.checks, i, 1);
	assert_int_equal(k->state, TUI_CHECK_FAILED);
	assert_string_equal(k->observed, "apply failed (exit 1): error: no disk");
	assert_string_equal(k->fix, "attach the disk");
	k = tui_checks_get(&f->m.checks, tui_checks_column(&f->m.checks, "beta", NULL), 1);
	assert_int_equal(k->state, TUI_CHECK_NA);
	assert_string_equal(k->observed, "not reached: the node stopped before this role");
}

/*
 * Which roles a node takes part in is the plan's to say (EVENT_ROLES): the
 * model shows what the event says, not what it would decide itself (here
 * the plan leaves alpha out on cp, as add-node leaves the control plane
 * out of the preparation phases).
 */
static void test_model_roles_from_plan(void **state)
{
	struct fixture *f = *state;
	bool roles[16] = {false};
	struct event ev = {.kind = EVENT_ROLES, .node = 0};
	size_t a = 0;

	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_PENDING);
	facts_of(f, 0, facts_plain);
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_PENDING);
	while (strcmp(f->m.roles->roles[a].name, "alpha"))
		a++;
	for (size_t k = 0; k < f->m.roles->nr; k++)
		roles[k] = k != a;
	ev.roles = roles;
	ev.nr_roles = f->m.roles->nr;
	ev.at_ms = f->t;
	tui_model_event(&f->m, &ev);
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_NA);
}

/* issue 36: the control plane that holds the VIP says so in its roles, and the mark moves */
static void test_model_vip_holder(void **state)
{
	static const char yaml[] = "cluster:\n  name: unit\n  kubernetes_version: \"1.30.4\"\n"
				   "  api_endpoint:\n    vip: 198.18.0.50\n"
				   "nodes:\n  - name: cp-[1-3]\n    address: 198.18.0.[11-13]\n"
				   "    roles: [control-plane, worker]\n";
	static const char held[] = "facts_version=1\nvip_held=1\n";
	static const char not_held[] = "facts_version=1\nvip_route=link eth0\n";
	struct inventory *inv = NULL;
	struct diag_list dl;
	const struct node *nodes[3];
	struct tui_model m;
	struct facts facts;
	struct error err = {0};
	size_t i;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(inventory_load_buffer(&inv, "unit.yaml", yaml, strlen(yaml), &dl), 0);
	diag_list_release(&dl);
	for (i = 0; i < 3; i++)
		nodes[i] = &inv->nodes[i];
	tui_model_init(&m, inv, NULL, 0, false, true, nodes, 3, 1000);
	for (i = 0; i < 3; i++) {
		struct event ev = {.kind = EVENT_FACTS, .node = i, .phase = PHASE_FACTS};
		const char *t = i == 1 ? held : not_held;
		assert_int_equal(facts_parse(&facts, t, strlen(t), &err), 0);
		ev.facts = &facts;
		tui_model_event(&m, &ev);
		facts_release(&facts);
	}
	assert_string_equal(m.nodes[0].roles, "cp,worker");
	assert_string_equal(m.nodes[1].roles, "cp,worker,VIP");
	assert_string_equal(m.nodes[2].roles, "cp,worker");
	/* a failover: cp-3 holds it now, cp-2 answers without it */
	for (i = 1; i < 3; i++) {
		struct event ev = {.kind = EVENT_FACTS, .node = i, .phase = PHASE_FACTS};
		const char *t = i == 2 ? held : not_held;
		assert_int_equal(facts_parse(&facts, t, strlen(t), &err), 0);
		ev.facts = &facts;
		tui_model_event(&m, &ev);
		facts_release(&facts);
	}
	assert_string_equal(m.nodes[1].roles, "cp,worker");
	assert_string_equal(m.nodes[2].roles, "cp,worker,VIP");
	tui_model_release(&m);
	inventory_free(inv);
}

static void test_model_gpus_and_preflight_checks(void **state)
{
	struct fixture *f = *state;
	struct event ev = {.kind = EVENT_MESSAGE, .node = 0, .result = STEP_FAILED};
	const struct tui_check *k;

	/* The inventory says 2 GPUs on cp; the facts find none. */
	facts_of(f, 0, facts_plain);
	k = tui_checks_get(&f->m.checks, tui_checks_column(&f->m.checks, "gpus", NULL), 0);
	assert_int_equal(k->state, TUI_CHECK_FAILED);
	assert_string_equal(k->expected,
			    "2 NVIDIA GPUs (the inventory's gpus), each seen by the driver");
	assert_string_equal(k->observed, "0 NVIDIA GPUs found");
	ev.phase = PHASE_PREFLIGHT;
	ev.role = (char *)"preflight";
	ev.step = (char *)"error";
	ev.text = (char *)"the inventory declares 2 GPUs but 0 NVIDIA GPUs were found (hint: fix "
			  "'gpus' in the inventory)";
	ev.at_ms = f->t;
	tui_model_event(&f->m, &ev);
	assert_int_equal(cell(f, 0, "preflight"), TUI_CELL_FAILED);
	k = tui_checks_get(&f->m.checks, tui_checks_column(&f->m.checks, "preflight", NULL), 0);
	assert_int_equal(k->state, TUI_CHECK_FAILED);
	assert_string_equal(k->observed,
			    "the inventory declares 2 GPUs but 0 NVIDIA GPUs were found");
	assert_string_equal(k->fix, "fix 'gpus' in the inventory");
	feed_state(f, 0, NODE_FAILED, "preflight failed");
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_NOT_REACHED);
	assert_int_equal(f->m.nodes[0].fail_order, 1);
}

static void test_model_validation_events(void **state)
{
	struct fixture *f = *state;
	struct event ev = {.kind = EVENT_STEP_END, .node = 1, .result = STEP_FAILED};
	const struct tui_check *k;

	facts_of(f, 1, facts_plain);
	feed_state(f, 1, NODE_DONE, NULL);
	ev.phase = PHASE_VALIDATE;
	ev.role = (char *)"validate";
	ev.step = (char *)"swap-off";
	ev.expected = (char *)"no active swap";
	ev.observed = (char *)"/swapfile";
	ev.text = (char *)"/swapfile (hint: run 'provision up --phases prep')";
	ev.at_ms = f->t;
	tui_model_event(&f->m, &ev);
	assert_int_equal(cell(f, 1, "validate"), TUI_CELL_FAILED);
	k = tui_checks_get(&f->m.checks, tui_checks_column(&f->m.checks, "swap-off", NULL), 1);
	assert_int_equal(k->state, TUI_CHECK_FAILED);
	assert_string_equal(k->expected, "no active swap");
	assert_string_equal(k->observed, "/swapfile");
	assert_string_equal(k->fix, "run 'provision up --phases prep'");
	assert_string_equal(
	    f->m.checks.cols[tui_checks_column(&f->m.checks, "swap-off", NULL)].label, "swap");
	/* A validation failure is the node's failure too (f finds it). */
	assert_int_equal(f->m.nodes[1].fail_order, 1);
	/* Run over: what never came is n/a, not pending. */
	tui_model_end(&f->m, f->t, false);
	assert_int_equal(cell(f, 0, "validate"), TUI_CELL_NA);
}

static void test_model_interrupted(void **state)
{
	struct fixture *f = *state;
	struct tui_counts c;

	facts_of(f, 0, facts_plain);
	facts_of(f, 1, facts_plain);
	feed(f, EVENT_STEP_START, 0, "alpha", "10-plain", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "alpha", "10-plain", STEP_CHANGED, 10, NULL);
	feed_state(f, 0, NODE_CANCELLED, "interrupted before alpha › 20-secret");
	tui_model_end(&f->m, f->t, true);
	/* Half of alpha ran: it shows what it did; the rest was not reached. */
	assert_int_equal(cell(f, 0, "alpha"), TUI_CELL_CHANGED);
	assert_int_equal(cell(f, 0, "beta"), TUI_CELL_NOT_REACHED);
	assert_int_equal(cell(f, 1, "alpha"), TUI_CELL_NOT_REACHED);
	tui_model_counts(&f->m, &c);
	assert_int_equal(c.cancelled, 2);
	assert_int_equal(c.failed, 0);
	assert_true(f->m.interrupted);
}

static void test_model_slowest(void **state)
{
	struct fixture *f = *state;
	uint64_t ms;
	bool done;

	facts_of(f, 0, facts_plain);
	facts_of(f, 1, facts_plain);
	feed(f, EVENT_STEP_START, 0, "alpha", "10-plain", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "alpha", "10-plain", STEP_CHANGED, 100, NULL);
	/* Node 1 has all its steps ahead: it is the slowest. */
	assert_int_equal(tui_model_slowest(&f->m, f->t, &ms, &done), 1);
	assert_false(done);
	assert_int_equal(ms, 600);
}

static void test_model_restart(void **state)
{
	struct fixture *f = *state;

	facts_of(f, 0, facts_gpu);
	feed_state(f, 0, NODE_DONE, NULL);
	tui_model_restart(&f->m, f->t);
	assert_int_equal(f->m.nodes[0].state, NODE_PENDING);
	assert_int_equal(cell(f, 0, "facts"), TUI_CELL_PENDING);
	/* The log stays across rounds. */
	assert_true(f->m.nodes[0].log.seq > 0);
}

/* ---- checks ---- */

/* The grid's columns are the phases; a phase's cell sums up its roles on the node (issue 22). */
static void test_model_phases(void **state)
{
	struct fixture *f = *state;
	int phases[TUI_MAX_PHASES];
	struct tui_cell pc;
	size_t nr = tui_model_phases(&f->m, phases);

	/* alpha, beta: prep (facts and preflight in it); delta, gamma: nfs; validate. */
	assert_int_equal(nr, 3);
	assert_string_equal(tui_phase_label(phases[0], false), "prep");
	assert_string_equal(tui_phase_label(phases[1], false), "nfs");
	assert_string_equal(tui_phase_label(phases[2], false), "validate");
	assert_string_equal(tui_phase_label(phases[2], true), "valid");
	assert_string_equal(tui_phase_label(PHASE_KUBE_PACKAGES, true), "kube");
	assert_string_equal(tui_phase_label(PHASE_PREP, true), "prep");
	assert_true(tui_model_col_in_phase(&f->m, 0, phases, 0)); /* facts */
	assert_true(tui_model_col_in_phase(&f->m, 1, phases, 0)); /* preflight */
	tui_model_phase_cell(&f->m, 0, phases, 0, &pc);
	assert_int_equal(pc.state, TUI_CELL_PENDING);

	facts_of(f, 0, facts_gpu);
	feed(f, EVENT_STEP_START, 0, "alpha", "10-plain", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "alpha", "10-plain", STEP_CHANGED, 100, NULL);
	feed(f, EVENT_STEP_START, 0, "alpha", "20-secret", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "alpha", "20-secret", STEP_CHANGED, 100, NULL);
	/* alpha is done, beta to come: the phase runs, 2 steps changed so far. */
	tui_model_phase_cell(&f->m, 0, phases, 0, &pc);
	assert_int_equal(pc.state, TUI_CELL_RUNNING);
	assert_int_equal(pc.changed, 2);
	feed(f, EVENT_STEP_START, 0, "beta", "10-maybe-fail", STEP_NONE, 0, NULL);
	feed(f, EVENT_STEP_END, 0, "beta", "10-maybe-fail", STEP_FAILED, 100, "no disk");
	feed_state(f, 0, NODE_FAILED, "beta › 10-maybe-fail: no disk");
	tui_model_phase_cell(&f->m, 0, phases, 0, &pc);
	assert_int_equal(pc.state, TUI_CELL_FAILED);
	/* The pane's title names the last step that ended while none runs. */
	assert_int_equal(f->m.nodes[0].last_result, STEP_FAILED);
	assert_string_equal(f->m.nodes[0].last_step, "10-maybe-fail");
	assert_string_equal(f->m.cols[f->m.nodes[0].last_col].name, "beta");

	/* A phase no role of applies to a node: blank.  An event's column of another
	 * phase adds that phase, in up's order. */
	feed(f, EVENT_STEP_START, 1, "addons", "10-helm", STEP_NONE, 0, NULL);
	f->m.cols[f->m.nr_cols - 1].phase = PHASE_ADDONS;
	nr = tui_model_phases(&f->m, phases);
	assert_int_equal(nr, 4);
	assert_string_equal(tui_phase_label(phases[2], false), "addons");
	tui_model_phase_cell(&f->m, 0, phases, 2, &pc);
	assert_int_equal(pc.state, TUI_CELL_NA);
	tui_model_phase_cell(&f->m, 1, phases, 2, &pc);
	assert_int_equal(pc.state, TUI_CELL_RUNNING);
}

static void test_checks_status_and_table(void **state)
{
	struct fixture *f = *state;
	static const char facts_text[] = "facts_version=1\n"
					 "package=kubeadm 1.30.4-1.1\n"
					 "package=kubelet 1.30.4-1.1\n"
					 "package=kubectl 1.30.5-1.1\n"
					 "held=kubeadm\nheld=kubelet\nheld=kubectl\n";
	struct facts facts = {0};
	struct error err = {0};
	struct tui_checks c;
	struct strbuf out = STRBUF_INIT;
	const struct tui_check *k;

	assert_int_equal(facts_parse(&facts, facts_text, strlen(facts_text), &err), 0);
	tui_checks_init(&c, 2);
	c.gen = 1;
	tui_checks_status(&c, 1, f->inv, f->nodes[1], &facts);
	tui_checks_status(&c, 0, f->inv, f->nodes[0], NULL);
	k = tui_checks_get(&c, tui_checks_column(&c, "kube-packages", NULL), 1);
	assert_int_equal(k->state, TUI_CHECK_FAILED);
	assert_string_equal(k->observed,
			    "kubeadm 1.30.4-1.1, kubelet 1.30.4-1.1, kubectl 1.30.5-1.1");
	k = tui_checks_get(&c, tui_checks_column(&c, "kubelet", NULL), 1);
	assert_int_equal(k->state, TUI_CHECK_NA);
	/* The columns come in a fixed order whatever is set first. */
	assert_string_equal(c.cols[0].id, "reachable");
	assert_string_equal(c.cols[6].id, "kube-packages");
	/* What a round did not set is n/a afterwards, not a stale value. */
	tui_checks_expire(&c, 1, "not checked in the last round");
	k = tui_checks_get(&c, tui_checks_column(&c, "swap-off", NULL), 1);
	assert_int_equal(k->state, TUI_CHECK_NA);
	assert_string_equal(k->observed, "not checked in the last round");
	assert_true(tui_checks_failed(&c));
	tui_checks_table(&out, &c, f->nodes, 2);
	assert_non_null(strstr(out.buf, "NODE  REACH  PREFLIGHT  SWAP"));
	assert_non_null(
	    strstr(out.buf, "\nw-1   n/a    n/a        n/a   n/a        n/a         n/a     FAIL"));
	assert_non_null(strstr(out.buf, "w-1: kube-packages failed: expected kubeadm, kubelet, "
					"kubectl 1.30.4, held; observed kubeadm 1.30.4-1.1"));
	assert_non_null(strstr(out.buf, "  fix: provision up --phases kube-packages\n"));
	strbuf_release(&out);
	tui_checks_release(&c);
	facts_release(&facts);
}

/*
 * Regression (found by t0440 under ASan: provision up crashed with SIGSEGV
 * at the end of validation in the terminal view): tui_checks_set() read
 * c->cols before tui_checks_column() grew and moved it.  Forty new columns,
 * one cell each, every one then read back.
 */
/* The matrix's short forms: 7 columns at most (a title's room at 80 columns),
 * every one different from the others and from every whole title, and the
 * two kubeadm roles told apart (cut, both were "kubead\u2026"). */
static void test_checks_short_forms(void **state)
{
	const char *const(*forms)[2];
	size_t n = tui_checks_short_forms(&forms), i, j;

	(void)state;
	assert_true(n > 10);
	for (i = 0; i < n; i++) {
		assert_true(crt_text_width(forms[i][1]) <= 7);
		/* the title of a role's column is its name, a check's its label */
		assert_true(strlen(forms[i][0]) > 7);
		assert_string_equal(tui_checks_short(forms[i][0]), forms[i][1]);
		for (j = 0; j < n; j++) {
			if (i == j)
				continue;
			assert_string_not_equal(forms[i][1], forms[j][1]);
			assert_string_not_equal(forms[i][1], tui_checks_label(forms[j][0]));
		}
	}
	assert_string_equal(tui_checks_short("kubeadm-init"), "init");
	assert_string_equal(tui_checks_short("kubeadm-join"), "join");
	assert_null(tui_checks_short("flannel"));
	/* provision bench's checks: "bench cpu" (9) would be cut to "bench \u2026" three times */
	assert_string_equal(tui_checks_short("bench-cpu"), "b-cpu");
	assert_string_equal(tui_checks_short("bench-memory"), "b-mem");
	assert_string_equal(tui_checks_short("bench-gpu"), "b-gpu");
}

/*
 * The role view (x) and the matrix have a column per role: at 80 columns
 * every role of roles/ (up's and reset's, upgrade's, ...) has a title of
 * 7 characters at most, its name or its short form.
 */
static void test_role_titles_fit(void **state)
{
	struct role_set rs;
	struct diag_list dl;
	size_t i;

	(void)state;
	diag_list_init(&dl);
	if (role_set_load(&rs, "roles", &dl) < 0)
		fail_msg("roles: %s", dl.nr ? diag_format(&dl.items[0]) : "?");
	diag_list_release(&dl);
	assert_true(rs.nr > 20);
	for (i = 0; i < rs.nr; i++) {
		const char *name = rs.roles[i].name, *s = tui_checks_short(name);
		if (crt_text_width(name) > 7 && !s)
			fail_msg("role %s: no short form, and its name is cut at 80 columns", name);
	}
	assert_string_equal(tui_checks_short("validate"), "valid");
	role_set_release(&rs);
}

/* Each short form is in provision(1) as "short (name)", where THE LIVE VIEW lists them. */
static void test_short_forms_documented(void **state)
{
	const char *const(*forms)[2];
	size_t n = tui_checks_short_forms(&forms), i;
	struct strbuf man = STRBUF_INIT, text = STRBUF_INIT;
	const char *p;

	(void)state;
	if (read_file("doc/provision.1", &man) < 0)
		fail_msg("doc/provision.1: cannot read");
	/* roff's \- is a hyphen; a line break is a space */
	for (p = man.buf; *p; p++) {
		if (p[0] == '\\' && p[1] == '-')
			continue;
		strbuf_addch(&text, *p == '\n' ? ' ' : *p);
	}
	for (i = 0; i < n; i++) {
		char *want = xasprintf("%s (%s)", forms[i][1], forms[i][0]);
		if (!strstr(text.buf, want))
			fail_msg("provision(1) does not list '%s'", want);
		free(want);
	}
	strbuf_release(&man);
	strbuf_release(&text);
}

static void test_checks_set_grows_columns(void **state)
{
	struct tui_checks c;
	char id[32], obs[32];
	const struct tui_check *k;
	size_t i;

	(void)state;
	tui_checks_init(&c, 3);
	for (i = 0; i < 40; i++) {
		snprintf(id, sizeof(id), "check-%zu", i);
		snprintf(obs, sizeof(obs), "seen %zu", i);
		tui_checks_set(&c, id, i % 3, TUI_CHECK_OK, "passes", obs, NULL);
	}
	assert_int_equal(c.nr, 40);
	for (i = 0; i < 40; i++) {
		snprintf(id, sizeof(id), "check-%zu", i);
		snprintf(obs, sizeof(obs), "seen %zu", i);
		k = tui_checks_get(&c, tui_checks_column(&c, id, NULL), i % 3);
		assert_non_null(k);
		assert_int_equal(k->state, TUI_CHECK_OK);
		assert_string_equal(k->observed, obs);
	}
	tui_checks_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_80x24_fits),
	    cmocka_unit_test(test_layout_many_nodes_scroll),
	    cmocka_unit_test(test_layout_drops_roles_then_gpu),
	    cmocka_unit_test(test_layout_too_many_columns_scroll_sideways),
	    cmocka_unit_test(test_layout_last_title_whole),
	    cmocka_unit_test(test_layout_last_title_whole_any_width),
	    cmocka_unit_test(test_layout_small_screen_has_no_pane),
	    cmocka_unit_test(test_scroll),
	    cmocka_unit_test(test_split_hint),
	    cmocka_unit_test(test_clean_line),
	    cmocka_unit_test(test_text_width),
	    cmocka_unit_test(test_log_cap),
	    cmocka_unit_test_setup_teardown(test_model_columns, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_a_node_from_start_to_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_failure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_gpus_and_preflight_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_roles_from_plan, setup, teardown),
	    cmocka_unit_test(test_model_vip_holder),
	    cmocka_unit_test_setup_teardown(test_model_validation_events, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_query_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_interrupted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_slowest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_model_phases, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_checks_status_and_table, setup, teardown),
	    cmocka_unit_test(test_checks_set_grows_columns),
	    cmocka_unit_test(test_checks_short_forms),
	    cmocka_unit_test(test_role_titles_fit),
	    cmocka_unit_test(test_short_forms_documented),
	};

	/* Widths of characters beyond ASCII follow the locale, as on a UTF-8 terminal. */
	setlocale(LC_CTYPE, "C.UTF-8");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
