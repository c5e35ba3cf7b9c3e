/*
 * tui: the live view of a run and the status view (see tui.h).
 *
 * Theory of operation
 * -------------------
 * Who owns what.  The runner's worker threads never see this file: they
 * post events, and the runner's main loop (the thread that called
 * plan_execute()) hands each one to tui_event() and calls tui_tick() about
 * every 100 ms when no event came.  Everything here therefore runs on that
 * one thread: the model (model.c: per-node cells, logs, failures, checks),
 * the drawing, and the terminal, which crt.c alone touches.  The view
 * reads events and nothing else of the run; a later phase that wants to be
 * shown posts events.
 *
 * Never blocking the runner.  tui_event() updates the model (O(columns)
 * work and one allocation per output line) and returns; it draws only
 * when a frame is due.  Frames are throttled to one per TUI_FRAME_MS
 * (100 ms, ~10 a second) whatever the event rate, and keys are read in the
 * same step with a non-blocking getch, so a burst of events from 200 nodes
 * costs one frame per 100 ms, not one per event.  Because the runner calls
 * on_tick only when its queue is empty, frames are also driven from
 * tui_event(): a steady stream of events cannot starve the screen or the
 * keyboard.  A frame draws only the rows that are visible (the grid
 * scrolls), and curses sends only what changed.
 *
 * Quitting.  `q` during a run asks first (the bottom line turns into a
 * question).  `y` calls runner_interrupt() once: no new node or step starts
 * and each node ends after its current step, reported cancelled; the run
 * is reported as interrupted (exit 130).  A second `q` or `y` calls
 * runner_interrupt() again, which cancels the running commands.  ^C works
 * as before: curses is in cbreak mode, so it still raises SIGINT, which the
 * runner's handler counts the same way; crt.c counts the signals that
 * arrive between the runner's passes and the view turns them into the same
 * stop.  When the run is over and a node failed, the view stays on the
 * first failure until `q` (leaving at once on success, so that a
 * successful `provision up` returns by itself).
 *
 * The status view (provision status) is the same screen showing the grid
 * of checks (checks.h) instead of phases; cmd_status.c runs a read-only
 * facts round, fills the checks, and calls tui_status_wait() between
 * rounds.
 */
#include "tui.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../hostlist.h"
#include "../view.h"
#include "crt.h"
#include "layout.h"
#include "model.h"

#define TUI_FRAME_MS 100

enum tui_screen {
	SCREEN_GRID,   /* nodes x phases */
	SCREEN_CHECKS, /* nodes x checks: the validation matrix (v), or status */
	SCREEN_ROLES,  /* nodes x roles: the phases' roles one by one (x) */
	SCREEN_LOG,    /* one node's whole log (Enter) */
};

struct tui {
	struct tui_config cfg;
	struct tui_model m;
	enum tui_screen screen, back; /* back: where Esc from the log returns */
	bool help;
	bool asking;	/* "stop the run?" on the bottom line */
	int stop_level; /* runner_interrupt() calls made: 1 stopping, 2 cancelling */
	bool running;	/* a run (or status round) is going on */
	bool lingering; /* run over, a failure on screen, waiting for q */
	bool quit;	/* leave (status, lingering) */
	bool refresh_now;
	bool show_failure;  /* the pane shows the selected node's failure (f) */
	size_t sel, top;    /* selected node, first row shown */
	size_t col, left;   /* selected column, first column shown (grid) */
	size_t ccol, cleft; /* the same on the checks screen */
	size_t rcol, rleft; /* and on the roles screen (model columns) */
	uint64_t log_top;   /* log screen: first line shown (absolute) */
	bool log_follow;
	size_t log_skip; /* log screen: columns scrolled sideways */
	int log_h;	 /* lines the log screen showed last */
	int grid_h;	 /* rows the grid showed last (for PgUp/PgDn) */
	uint64_t last_frame;
	unsigned signals_seen;
	bool utf8;
	uint64_t round_ms, next_round_ms; /* status: when the last round ended, the next is due */
	unsigned rounds;
};

/* ---- glyphs ---- */

struct glyph {
	const char *utf8, *ascii;
	enum crt_color color;
};

static const struct glyph cell_glyphs[] = {
    [TUI_CELL_NA] = {" ", " ", CRT_NORMAL},
    [TUI_CELL_PENDING] = {"\xc2\xb7", ".", CRT_PENDING},
    [TUI_CELL_RUNNING] = {"\xe2\x96\xb8", ">", CRT_RUNNING},
    [TUI_CELL_UNCHANGED] = {"\xe2\x9c\x93", "=", CRT_OK},
    [TUI_CELL_CHANGED] = {"+", "+", CRT_CHANGED},
    [TUI_CELL_WOULD_CHANGE] = {"~", "~", CRT_WARN},
    [TUI_CELL_WARN] = {"!", "!", CRT_WARN},
    [TUI_CELL_SKIPPED] = {"-", "-", CRT_SKIPPED},
    [TUI_CELL_NOT_REACHED] = {"\xe2\x97\x8b", "o", CRT_DIM},
    [TUI_CELL_FAILED] = {"\xe2\x9c\x97", "X", CRT_FAILED},
};

static const struct glyph check_glyphs[] = {
    [TUI_CHECK_UNKNOWN] = {"\xc2\xb7", ".", CRT_PENDING},
    [TUI_CHECK_OK] = {"\xe2\x9c\x93", "=", CRT_OK},
    [TUI_CHECK_WARN] = {"!", "!", CRT_WARN},
    [TUI_CHECK_FAILED] = {"\xe2\x9c\x97", "X", CRT_FAILED},
    [TUI_CHECK_NA] = {"n/a", "n/a", CRT_DIM},
};

static const char *g(const struct tui *t, const struct glyph *gl)
{
	return t->utf8 ? gl->utf8 : gl->ascii;
}

static const char *sym(const struct tui *t, const char *utf8, const char *ascii)
{
	return t->utf8 ? utf8 : ascii;
}

/* ---- small drawing helpers ---- */

static int put(int y, int x, int w, unsigned attr, const char *s)
{
	return crt_put(y, x, w, attr, s, false);
}

static void putf(int y, int x, int w, unsigned attr, const char *fmt, ...) PRINTF_LIKE(5, 6);
static void putf(int y, int x, int w, unsigned attr, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	crt_put(y, x, w, attr, sb.buf, false);
	strbuf_release(&sb);
}

/* Centre s in a cell of width w. */
static void put_center(int y, int x, int w, unsigned attr, const char *s)
{
	int sw = (int)crt_text_width(s), pad = sw < w ? (w - sw) / 2 : 0;

	crt_fill(y, x, w, attr);
	crt_put(y, x + pad, w - pad, attr, s, false);
}

/* A rule with a title: "── title ─────". */
static void rule(struct tui *t, int y, int cols, const char *title)
{
	const char *line = sym(t, "\xe2\x94\x80", "-");
	struct strbuf sb = STRBUF_INIT;
	int i, used;

	strbuf_addf(&sb, "%s%s %s ", line, line, title);
	used = (int)crt_text_width(sb.buf);
	for (i = used; i < cols; i++)
		strbuf_addstr(&sb, line);
	crt_put(y, 0, cols, CRT_HEADER, sb.buf, true);
	strbuf_release(&sb);
}

static void duration(char *buf, size_t size, uint64_t ms)
{
	view_duration(buf, size, ms);
}

/* Word-wrap text into at most max_lines rows of width w starting at (y, x); returns rows used. */
static int wrap(int y, int x, int w, int max_lines, unsigned attr, const char *text)
{
	const char *p = text ? text : "";
	struct strbuf line = STRBUF_INIT;
	int rows = 0;

	while (*p && rows < max_lines) {
		size_t lw = 0;
		strbuf_reset(&line);
		for (;;) {
			const char *sp = strchr(p, ' ');
			size_t len = sp ? (size_t)(sp - p) : strlen(p);
			char *word = xstrndup(p, len);
			size_t ww = crt_text_width(word);
			if (lw && lw + 1 + ww > (size_t)w) {
				free(word);
				break;
			}
			if (lw)
				strbuf_addch(&line, ' ');
			strbuf_addstr(&line, word);
			lw += (lw ? 1 : 0) + ww;
			free(word);
			p += len;
			while (*p == ' ')
				p++;
			if (!*p || lw >= (size_t)w)
				break;
		}
		/* The last row takes what is left, cut with an ellipsis. */
		if (rows == max_lines - 1 && *p) {
			strbuf_addch(&line, ' ');
			strbuf_addstr(&line, p);
		}
		crt_put(y + rows, x, w, attr, line.buf, false);
		rows++;
	}
	strbuf_release(&line);
	return rows;
}

/* ---- the title bar ---- */

static void title_run(struct tui *t, int cols, uint64_t now)
{
	struct tui_counts c;
	struct strbuf sb = STRBUF_INIT;
	char el[32], sl[32];
	uint64_t slow_ms, end = t->m.ended_ms ? t->m.ended_ms : now;
	bool slow_done;
	size_t slow;

	tui_model_counts(&t->m, &c);
	duration(el, sizeof(el), end - t->m.started_ms);
	strbuf_addf(&sb, " provision %s %s %s %s %zu node%s ", t->cfg.command,
		    sym(t, "\xc2\xb7", "-"), t->cfg.inv->cluster.name, sym(t, "\xc2\xb7", "-"),
		    t->m.nr, t->m.nr == 1 ? "" : "s");
	strbuf_addf(&sb, "%s %zu done, %zu failed", sym(t, "\xe2\x94\x82", "|"), c.done, c.failed);
	if (c.running)
		strbuf_addf(&sb, ", %zu running", c.running);
	if (c.pending)
		strbuf_addf(&sb, ", %zu waiting", c.pending);
	if (c.cancelled)
		strbuf_addf(&sb, ", %zu stopped", c.cancelled);
	strbuf_addf(&sb, " %s %s %s", sym(t, "\xe2\x94\x82", "|"),
		    t->m.ended_ms ? "took" : "elapsed", el);
	slow = tui_model_slowest(&t->m, now, &slow_ms, &slow_done);
	if (slow != SIZE_MAX && t->m.nr > 1) {
		duration(sl, sizeof(sl), slow_ms);
		strbuf_addf(&sb, " %s slowest %s (%s%s)", sym(t, "\xe2\x94\x82", "|"),
			    t->m.nodes[slow].node->name, slow_done ? "" : "~", sl);
	}
	crt_put(0, 0, cols, CRT_TITLE, sb.buf, true);
	strbuf_release(&sb);
}

static void title_status(struct tui *t, int cols, uint64_t now)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, k, bad = 0, read = 0;

	for (i = 0; i < t->m.nr; i++) {
		bool b = false;
		for (k = 0; k < t->m.checks.nr; k++)
			b = b || t->m.checks.cols[k].cells[i].state == TUI_CHECK_FAILED;
		bad += b;
		read += tui_node_finished(&t->m.nodes[i]) || t->m.nodes[i].fail_order;
	}
	strbuf_addf(&sb, " provision status %s %s %s %zu node%s", sym(t, "\xc2\xb7", "-"),
		    t->cfg.inv->cluster.name, sym(t, "\xe2\x94\x82", "|"), t->m.nr,
		    t->m.nr == 1 ? "" : "s");
	if (t->rounds)
		strbuf_addf(&sb, ": %zu ok, %zu with problems", t->m.nr - bad, bad);
	strbuf_addf(&sb, " %s ", sym(t, "\xe2\x94\x82", "|"));
	if (t->running)
		strbuf_addf(&sb, "reading: %zu/%zu", read, t->m.nr);
	else if (t->rounds)
		strbuf_addf(&sb, "read %llus ago, again in %llus",
			    (unsigned long long)((now - t->round_ms) / 1000),
			    (unsigned long long)(t->next_round_ms > now
						     ? (t->next_round_ms - now + 999) / 1000
						     : 0));
	crt_put(0, 0, cols, CRT_TITLE, sb.buf, true);
	strbuf_release(&sb);
}

/* ---- the grid (phases, checks or roles) ---- */

struct grid {
	struct tui_layout l;
	size_t ncols;
	enum tui_screen mode;	    /* SCREEN_GRID: phases; SCREEN_CHECKS; SCREEN_ROLES */
	int phases[TUI_MAX_PHASES]; /* SCREEN_GRID: the phases (model.h) */
};

static const struct tui_checks *checks_of(const struct tui *t)
{
	return &t->m.checks;
}

/* A column's title, whole. */
static const char *col_label(const struct tui *t, const struct grid *gr, size_t c)
{
	switch (gr->mode) {
	case SCREEN_CHECKS:
		return checks_of(t)->cols[c].label;
	case SCREEN_ROLES:
		return t->m.cols[c].name;
	default:
		return tui_phase_label(gr->phases[c], false);
	}
}

/* Its short form (provision(1) lists them), or NULL. */
static const char *col_short(const struct tui *t, const struct grid *gr, size_t c)
{
	switch (gr->mode) {
	case SCREEN_CHECKS:
		return tui_checks_short(checks_of(t)->cols[c].id);
	case SCREEN_ROLES:
		return tui_checks_short(t->m.cols[c].name);
	default:
		return tui_phase_label(gr->phases[c], true);
	}
}

/* The screen's selected column and first column shown. */
static size_t *sel_col_of(struct tui *t, enum tui_screen mode)
{
	return mode == SCREEN_CHECKS ? &t->ccol : mode == SCREEN_ROLES ? &t->rcol : &t->col;
}

static size_t *left_of(struct tui *t, enum tui_screen mode)
{
	return mode == SCREEN_CHECKS ? &t->cleft : mode == SCREEN_ROLES ? &t->rleft : &t->left;
}

static void grid_layout(struct tui *t, struct grid *gr, int rows, int cols, enum tui_screen mode)
{
	struct tui_layout_in in = {.rows = rows, .cols = cols};
	size_t i;

	gr->mode = mode;
	gr->ncols = mode == SCREEN_CHECKS  ? checks_of(t)->nr
		    : mode == SCREEN_ROLES ? t->m.nr_cols
					   : tui_model_phases(&t->m, gr->phases);
	for (i = 0; i < t->m.nr; i++) {
		const struct tui_node *n = &t->m.nodes[i];
		int w = (int)crt_text_width(n->node->name);
		if (w > in.name_w)
			in.name_w = w;
		w = (int)strlen(n->roles);
		if (w > in.roles_w)
			in.roles_w = w;
		w = (int)crt_text_width(n->gpu);
		if (w > in.gpu_w)
			in.gpu_w = w;
	}
	/* Room for the GPU summary before the facts are in, so the grid does not shift then. */
	if (in.gpu_w < 6 && (t->m.nr_cols > 0 && !t->m.ended_ms))
		in.gpu_w = 6;
	for (i = 0; i < gr->ncols; i++) {
		int w = (int)crt_text_width(col_label(t, gr, i));
		if (w > in.label_w)
			in.label_w = w;
	}
	in.nr_cols = gr->ncols;
	/* a phase's or role's cell: its glyph and the count of changed steps ("+12") */
	in.min_cell = 4;
	in.progress = mode == SCREEN_GRID;
	in.nr_nodes = t->m.nr;
	tui_layout_compute(&gr->l, &in);
}

/*
 * The first column to show; the layout shows one column fewer when the
 * last one's title would be cut at the right edge (tui_layout_columns()).
 */
static size_t grid_scroll(struct tui *t, struct grid *gr, size_t sel_col, size_t left)
{
	int *narrowest = xcalloc(gr->ncols ? gr->ncols : 1, sizeof(*narrowest));
	size_t c;

	for (c = 0; c < gr->ncols; c++) {
		const char *s = col_short(t, gr, c);
		int w = (int)crt_text_width(col_label(t, gr, c)),
		    sw = s ? (int)crt_text_width(s) : w;
		narrowest[c] = sw < w ? sw : w;
	}
	left = tui_layout_columns(&gr->l, narrowest, gr->ncols, left, sel_col);
	free(narrowest);
	return left;
}

static void grid_header(struct tui *t, const struct grid *gr, size_t sel_col, size_t left)
{
	const struct tui_layout *l = &gr->l;
	size_t c;

	put(l->header_y + 1, l->name_x, l->name_w, CRT_HEADER, "NODE");
	if (l->roles_w)
		put(l->header_y + 1, l->roles_x, l->roles_w, CRT_HEADER, "ROLES");
	if (l->gpu_w)
		put(l->header_y + 1, l->gpu_x, l->gpu_w, CRT_HEADER, "GPU");
	for (c = left; c < gr->ncols && c < left + l->cols_visible; c++) {
		size_t shown =
		    gr->ncols < left + l->cols_visible ? gr->ncols - left : l->cols_visible;
		int x = l->cells_x + (int)(c - left) * l->cell_w, y, room;
		/*
		 * A title that does not fit its room whole is its short form (the
		 * help lists them), never cut into the next; the last one has the
		 * room to the edge (tui_layout_title()).
		 */
		const char *label = col_label(t, gr, c);
		tui_layout_title(l, c - left, shown, &y, &room);
		if ((int)crt_text_width(label) > room) {
			const char *s = col_short(t, gr, c);
			if (s)
				label = s;
		}
		put(y, x, room, CRT_HEADER | (c == sel_col ? CRT_REVERSE : 0), label);
	}
	if (left > 0)
		put(l->header_y + 1, l->cells_x - 1, 1, CRT_BOLD, sym(t, "\xe2\x80\xb9", "<"));
	if (left + l->cols_visible < gr->ncols)
		put(l->header_y + 1, l->cells_x + (int)l->cols_visible * l->cell_w - 1, 1, CRT_BOLD,
		    sym(t, "\xe2\x80\xba", ">"));
	if (l->bar_w)
		put(l->header_y + 1, l->bar_x, l->bar_w, CRT_HEADER,
		    l->bar_w >= 8 ? "PROGRESS" : "PROG");
	if (l->eta_w)
		put(l->header_y + 1, l->eta_x, l->eta_w, CRT_HEADER, "ETA");
}

static void row_head(struct tui *t, const struct tui_layout *l, int y, size_t i)
{
	const struct tui_node *n = &t->m.nodes[i];
	bool sel = i == t->sel;

	if (sel)
		put(y, 0, 1, CRT_BOLD, sym(t, "\xe2\x96\xb6", ">"));
	crt_put(y, l->name_x, l->name_w,
		(n->fail_order ? CRT_FAILED : CRT_BOLD) | (sel ? CRT_REVERSE : 0), n->node->name,
		true);
	if (l->roles_w)
		put(y, l->roles_x, l->roles_w, CRT_DIM, n->roles);
	if (l->gpu_w)
		put(y, l->gpu_x, l->gpu_w, n->have_facts ? CRT_NORMAL : CRT_DIM, n->gpu);
}

static void progress(struct tui *t, const struct tui_layout *l, int y, size_t i, uint64_t now)
{
	const struct tui_node *n = &t->m.nodes[i];
	unsigned pm = tui_model_permille(&t->m, i);
	int filled = (int)((unsigned)l->bar_w * pm / 1000);
	struct strbuf bar = STRBUF_INIT, rest = STRBUF_INIT;
	char eta[32] = "";
	uint64_t ms;
	int k;

	for (k = 0; k < l->bar_w; k++)
		strbuf_addstr(k < filled ? &bar : &rest, k < filled ? sym(t, "\xe2\x96\x88", "#")
								    : sym(t, "\xe2\x96\x91", "."));
	put(y, l->bar_x, filled, n->fail_order ? CRT_BAR_FAIL : CRT_BAR, bar.buf);
	put(y, l->bar_x + filled, l->bar_w - filled, CRT_DIM, rest.buf);
	if (n->state == NODE_UNREACHABLE)
		snprintf(eta, sizeof(eta), "unreach");
	else if (n->fail_order)
		snprintf(eta, sizeof(eta), "failed");
	else if (n->state == NODE_CANCELLED)
		snprintf(eta, sizeof(eta), "stopped");
	else if (tui_node_finished(n) && n->started_ms)
		duration(eta, sizeof(eta), (n->ended_ms ? n->ended_ms : now) - n->started_ms);
	else if (!n->started_ms)
		snprintf(eta, sizeof(eta), "queued");
	else if (tui_model_eta(&t->m, i, now, &ms)) {
		eta[0] = '~';
		duration(eta + 1, sizeof(eta) - 1, ms);
	} else
		snprintf(eta, sizeof(eta), "%s", sym(t, "\xe2\x80\xa6", "..."));
	put(y, l->eta_x, l->eta_w,
	    n->fail_order	   ? CRT_FAILED
	    : tui_node_finished(n) ? CRT_OK
				   : CRT_NORMAL,
	    eta);
	strbuf_release(&bar);
	strbuf_release(&rest);
}

static void grid_rows(struct tui *t, const struct grid *gr, uint64_t now)
{
	const struct tui_layout *l = &gr->l;
	size_t sel_col = *sel_col_of(t, gr->mode), left = *left_of(t, gr->mode);
	const struct tui_checks *ck = checks_of(t);
	int r;

	for (r = 0; r < l->grid_h; r++) {
		size_t i = t->top + (size_t)r, c;
		int y = l->grid_y + r;
		const struct tui_node *n;
		int run_x = -1;

		if (i >= t->m.nr)
			break;
		n = &t->m.nodes[i];
		row_head(t, l, y, i);
		for (c = left; c < gr->ncols && c < left + l->cols_visible; c++) {
			int x = l->cells_x + (int)(c - left) * l->cell_w;
			unsigned flag = i == t->sel && c == sel_col ? CRT_REVERSE : 0;
			const struct glyph *gl;
			if (gr->mode == SCREEN_CHECKS) {
				gl = &check_glyphs[ck->cols[c].cells[i].state];
				put_center(y, x, l->cell_w - 1, gl->color | flag, g(t, gl));
			} else {
				struct tui_cell pc;
				char text[32];
				if (gr->mode == SCREEN_ROLES)
					pc = n->cells[c];
				else
					tui_model_phase_cell(&t->m, i, gr->phases, c, &pc);
				gl = &cell_glyphs[pc.state];
				if (pc.state == TUI_CELL_RUNNING && i == t->sel)
					run_x = x;
				/* the count of changed (or would-change) steps beside the glyph */
				if (pc.changed && pc.state != TUI_CELL_NA)
					snprintf(text, sizeof(text), "%s%u", g(t, gl), pc.changed);
				else
					snprintf(text, sizeof(text), "%s", g(t, gl));
				put_center(y, x, l->cell_w - 1, gl->color | flag, text);
			}
		}
		/* The selected row's running cell names its step, over the cells still to come. */
		if (run_x >= 0 && n->cur_step) {
			int end = l->cells_x + (int)l->cols_visible * l->cell_w - 1;
			struct strbuf sb = STRBUF_INIT;
			strbuf_addf(&sb, "%s%s", g(t, &cell_glyphs[TUI_CELL_RUNNING]), n->cur_step);
			if (end - run_x >= 3)
				crt_put(y, run_x, end - run_x, CRT_RUNNING | CRT_REVERSE, sb.buf,
					false);
			strbuf_release(&sb);
		}
		if (gr->mode == SCREEN_GRID && l->bar_w)
			progress(t, l, y, i, now);
	}
	if (t->m.nr > (size_t)l->grid_h && l->grid_h > 0) {
		/* Where the window is in a long list. */
		char pos[48];
		snprintf(pos, sizeof(pos), "%zu-%zu/%zu", t->top + 1,
			 t->top + (size_t)l->grid_h < t->m.nr ? t->top + (size_t)l->grid_h
							      : t->m.nr,
			 t->m.nr);
		put(l->header_y, l->name_x, l->name_w + 1 + l->roles_w, CRT_DIM, pos);
	}
}

/* ---- the pane under the grid ---- */

static unsigned line_attr(enum tui_line_kind k)
{
	switch (k) {
	case TUI_LINE_OUT:
		return CRT_NORMAL;
	case TUI_LINE_ERR:
		return CRT_WARN;
	case TUI_LINE_STEP:
		return CRT_HEADER;
	case TUI_LINE_RESULT:
		return CRT_OK;
	case TUI_LINE_FAILED:
		return CRT_FAILED;
	case TUI_LINE_NOTE:
		return CRT_DIM;
	}
	return CRT_NORMAL;
}

/* Log lines [from, to) of node n, the last ones that fit in h rows at y. */
static void log_tail(struct tui *t, const struct tui_node *n, uint64_t from, uint64_t to, int y,
		     int h, int cols)
{
	uint64_t first = tui_log_first(&n->log), k;
	int r = 0;

	if (from < first)
		from = first;
	if (to > n->log.seq)
		to = n->log.seq;
	if (to > from + (uint64_t)h)
		from = to - (uint64_t)h;
	for (k = from; k < to && r < h; k++, r++) {
		const struct tui_log_line *ln = tui_log_get(&n->log, k);
		bool indent = ln && (ln->kind == TUI_LINE_OUT || ln->kind == TUI_LINE_ERR);
		if (!ln)
			continue;
		put(y + r, indent ? 2 : 0, cols - (indent ? 2 : 0), line_attr(ln->kind), ln->text);
	}
}

/* "prep: facts ✓ preflight ✓ kernel +2 swap-off ▸": the selected phase's roles on the selected node. */
static bool phase_detail(struct tui *t, int y, int cols)
{
	const struct tui_node *n = &t->m.nodes[t->sel];
	int phases[TUI_MAX_PHASES];
	size_t nr = tui_model_phases(&t->m, phases), c;
	struct strbuf sb = STRBUF_INIT;

	if (!nr)
		return false;
	if (t->col >= nr)
		t->col = nr - 1;
	strbuf_addf(&sb, "%s:", tui_phase_label(phases[t->col], false));
	for (c = 0; c < t->m.nr_cols; c++) {
		const struct tui_cell *cell = &n->cells[c];
		if (!tui_model_col_in_phase(&t->m, c, phases, t->col) || cell->state == TUI_CELL_NA)
			continue;
		strbuf_addf(&sb, "  %s %s", t->m.cols[c].name, g(t, &cell_glyphs[cell->state]));
		if (cell->changed)
			strbuf_addf(&sb, "%u", cell->changed);
	}
	put(y, 0, cols, CRT_DIM, sb.buf);
	strbuf_release(&sb);
	return true;
}

/*
 * The nodes pulling images now (EVENT_PROGRESS), one line each under a
 * rule, the selected node first: NODE IMAGE DONE/TOTAL RATE ~LEFT, the
 * image cut at its front so that its name and tag stay.  At most max
 * rows, rule included; returns the rows used (0: nobody pulls).
 */
static int pane_pulls(struct tui *t, int y, int max, int cols, uint64_t now)
{
	struct pull_summary ps;
	size_t i, k, pulling = 0;
	uint64_t rate = 0;
	int rows = 0, name_w = 0;

	for (i = 0; i < t->m.nr; i++)
		if (pulls_node(&t->m.pulls, i, now, &ps) && ps.in_flight) {
			int w = (int)crt_text_width(t->m.nodes[i].node->name);
			pulling++;
			rate += ps.rate;
			name_w = w > name_w ? w : name_w;
		}
	if (!pulling || max < 2)
		return 0;
	{
		char r[32], title[96];
		pulls_bytes(r, sizeof(r), rate);
		snprintf(title, sizeof(title), "pulling images %s %zu node%s %s %s/s",
			 sym(t, "\xc2\xb7", "-"), pulling, pulling == 1 ? "" : "s",
			 sym(t, "\xc2\xb7", "-"), r);
		rule(t, y, cols, title);
		rows++;
	}
	if (name_w > 16)
		name_w = 16;
	/* the selected node first, then the others in order */
	for (k = 0; k <= t->m.nr && rows < max; k++) {
		struct strbuf img = STRBUF_INIT, tail = STRBUF_INIT;
		char d[32], tot[32], r[32], left[32];
		int img_w, tail_w;
		i = k == 0 ? t->sel : k - 1;
		if ((k && i == t->sel) || i >= t->m.nr || !pulls_node(&t->m.pulls, i, now, &ps) ||
		    !ps.in_flight || !ps.image)
			continue;
		pulls_bytes(d, sizeof(d), ps.done);
		pulls_bytes(tot, sizeof(tot), ps.total);
		strbuf_addf(&tail, " %s/%s", d, ps.total_known ? tot : "?");
		if (ps.rate) {
			pulls_bytes(r, sizeof(r), ps.rate);
			strbuf_addf(&tail, " %s/s", r);
		}
		if (ps.eta_ms >= 0) {
			duration(left, sizeof(left), (uint64_t)ps.eta_ms);
			strbuf_addf(&tail, " ~%s", left);
		}
		if (ps.in_flight > 1)
			strbuf_addf(&tail, " +%u", ps.in_flight - 1);
		tail_w = (int)crt_text_width(tail.buf);
		img_w = cols - name_w - 2 - tail_w;
		if (img_w < 8)
			img_w = 8;
		/* the image's end: NAME:TAG says which one */
		if ((int)strlen(ps.image->ref) > img_w) {
			strbuf_addstr(&img, sym(t, "\xe2\x80\xa6", "~"));
			strbuf_addstr(&img,
				      ps.image->ref + strlen(ps.image->ref) - (size_t)(img_w - 1));
		} else {
			strbuf_addstr(&img, ps.image->ref);
		}
		crt_put(y + rows, 0, name_w, CRT_BOLD | (i == t->sel ? CRT_REVERSE : 0),
			t->m.nodes[i].node->name, true);
		put(y + rows, name_w + 1, img_w, CRT_NORMAL, img.buf);
		put(y + rows, cols - tail_w, tail_w, CRT_RUNNING, tail.buf);
		rows++;
		strbuf_release(&img);
		strbuf_release(&tail);
	}
	return rows;
}

static void pane_run(struct tui *t, const struct tui_layout *l, int cols, uint64_t now)
{
	const struct tui_node *n = &t->m.nodes[t->sel];
	struct strbuf title = STRBUF_INIT;
	char d[32];
	int y = l->pane_y + 1, h = l->pane_h;

	if (t->show_failure && n->fail_order) {
		strbuf_addf(&title, "%s %s failed: %s", n->node->name, sym(t, "\xc2\xb7", "-"),
			    n->fail_where);
		rule(t, l->pane_y, cols, title.buf);
		y += wrap(y, 0, cols, 2, CRT_FAILED, n->fail_text);
		if (n->fail_hint && y < l->pane_y + 1 + h) {
			put(y, 0, 5, CRT_KEY, "fix: ");
			y += wrap(y, 5, cols - 5, 2, CRT_WARN, n->fail_hint);
		}
		if (y < l->pane_y + 1 + h)
			log_tail(t, n, n->fail_first, n->fail_end, y, l->pane_y + 1 + h - y, cols);
		strbuf_release(&title);
		return;
	}
	/*
	 * The title names what the lines under it are: the running step's
	 * output, or the end of the node's log and the step it ends with.
	 */
	strbuf_addstr(&title, n->node->name);
	if (n->cur_col >= 0 && n->cur_step && n->in_step) {
		duration(d, sizeof(d), now - n->step_started_ms);
		strbuf_addf(&title, " %s %s %s %s %s %s", sym(t, "\xc2\xb7", "-"),
			    t->m.cols[n->cur_col].name, sym(t, "\xe2\x80\xba", ">"), n->cur_step,
			    sym(t, "\xc2\xb7", "-"), d);
	} else if (n->last_col >= 0 && n->last_step) {
		strbuf_addf(&title, " %s log, last %s %s %s: %s", sym(t, "\xc2\xb7", "-"),
			    t->m.cols[n->last_col].name, sym(t, "\xe2\x80\xba", ">"), n->last_step,
			    step_result_name(n->last_result));
	} else {
		strbuf_addf(&title, " %s log", sym(t, "\xc2\xb7", "-"));
	}
	if (n->fail_order)
		strbuf_addf(&title, " %s f: why it failed", sym(t, "\xc2\xb7", "-"));
	rule(t, l->pane_y, cols, title.buf);
	/* The selected phase, role by role: the detail the grid's cell sums up. */
	if (h > 1 && phase_detail(t, y, cols)) {
		y++;
		h--;
	}
	/* Image pulls under way: every pulling node's, above the log (at most half of it). */
	{
		int used = pane_pulls(t, y, h > 4 ? h / 2 + 1 : h - 1, cols, now);
		y += used;
		h -= used;
	}
	if (n->cur_col >= 0)
		log_tail(t, n, n->step_first, n->log.seq, y, h, cols);
	else
		log_tail(t, n, 0, n->log.seq, y, h, cols);
	strbuf_release(&title);
}

static void pane_check(struct tui *t, const struct tui_layout *l, int cols)
{
	const struct tui_checks *ck = checks_of(t);
	const struct tui_node *n = &t->m.nodes[t->sel];
	const struct tui_check *k = tui_checks_get(ck, t->ccol, t->sel);
	struct strbuf title = STRBUF_INIT;
	int y = l->pane_y + 1, end = l->pane_y + 1 + l->pane_h;

	if (!k) {
		rule(t, l->pane_y, cols, "no checks yet: they come in as facts and steps finish");
		strbuf_release(&title);
		return;
	}
	strbuf_addf(
	    &title, "%s %s %s: %s", n->node->name, sym(t, "\xc2\xb7", "-"), ck->cols[t->ccol].id,
	    k->state == TUI_CHECK_UNKNOWN ? "not known yet"
					  : tui_check_state_name((enum tui_check_state)k->state));
	rule(t, l->pane_y, cols, title.buf);
	if (y < end) {
		put(y, 0, 10, CRT_KEY, "expected");
		y += wrap(y, 10, cols - 10, end - y > 2 ? 2 : 1, CRT_NORMAL,
			  k->expected ? k->expected : "-");
	}
	if (y < end) {
		put(y, 0, 10, CRT_KEY, "observed");
		y += wrap(y, 10, cols - 10, end - y > 3 ? 3 : 1,
			  k->state == TUI_CHECK_FAILED ? CRT_FAILED
			  : k->state == TUI_CHECK_WARN ? CRT_WARN
						       : CRT_NORMAL,
			  k->observed ? k->observed : "-");
	}
	if (y < end && k->fix) {
		put(y, 0, 10, CRT_KEY, "fix");
		wrap(y, 10, cols - 10, end - y, CRT_NORMAL, k->fix);
	}
	strbuf_release(&title);
}

/* Whether a log line names column `name`: "name › step", "name: message". */
static bool names_col(const char *text, const char *name)
{
	size_t len = strlen(name);

	return !strncmp(text, name, len) &&
	       (!strncmp(text + len, " \xe2\x80\xba ", 5) || !strncmp(text + len, ": ", 2));
}

/*
 * The last h lines of node n's log that are column c's: from a step of it
 * starting to the next step starting, and its results and messages (a
 * validation check's result, preflight's messages) wherever they are.
 * Their numbers go to lines[] (at most h); returns how many.
 */
static size_t col_lines(const struct tui *t, const struct tui_node *n, size_t c, uint64_t *lines,
			size_t h)
{
	const char *name = t->m.cols[c].name;
	uint64_t k;
	size_t nr = 0, i;
	bool cur = false;

	if (!h)
		return 0;
	for (k = tui_log_first(&n->log); k < n->log.seq; k++) {
		const struct tui_log_line *ln = tui_log_get(&n->log, k);
		bool in = cur;
		if (!ln)
			continue;
		if (ln->kind == TUI_LINE_STEP) {
			cur = in = names_col(ln->text, name);
		} else if (ln->kind != TUI_LINE_OUT && ln->kind != TUI_LINE_ERR) {
			for (i = 0; i < t->m.nr_cols; i++)
				if (names_col(ln->text, t->m.cols[i].name))
					break;
			if (i < t->m.nr_cols)
				in = i == c;
		}
		if (!in)
			continue;
		if (nr == h) {
			memmove(lines, lines + 1, (h - 1) * sizeof(*lines));
			nr--;
		}
		lines[nr++] = k;
	}
	return nr;
}

/* The roles screen: the selected role on the selected node, its state, steps and lines. */
static void pane_role(struct tui *t, const struct tui_layout *l, int cols, uint64_t now)
{
	const struct tui_node *n = &t->m.nodes[t->sel];
	const struct tui_cell *cell;
	struct strbuf title = STRBUF_INIT;
	int y = l->pane_y + 1, end = l->pane_y + 1 + l->pane_h;
	uint64_t *lines;
	size_t c = t->rcol, nr, k;
	char d[32];

	if (!t->m.nr_cols) {
		rule(t, l->pane_y, cols, "no roles in this run");
		return;
	}
	cell = &n->cells[c];
	strbuf_addf(&title, "%s %s %s: %s", n->node->name, sym(t, "\xc2\xb7", "-"),
		    t->m.cols[c].name, tui_cell_state_name((enum tui_cell_state)cell->state));
	if (n->cur_col == (int)c && n->cur_step && n->in_step) {
		duration(d, sizeof(d), now - n->step_started_ms);
		strbuf_addf(&title, " %s %s %s", n->cur_step, sym(t, "\xc2\xb7", "-"), d);
	}
	if (cell->state != TUI_CELL_NA && cell->total)
		strbuf_addf(&title, " %s %u of %u step%s done", sym(t, "\xc2\xb7", "-"), cell->done,
			    cell->total, cell->total == 1 ? "" : "s");
	else if (cell->state != TUI_CELL_NA && cell->done)
		strbuf_addf(&title, " %s %u step%s done", sym(t, "\xc2\xb7", "-"), cell->done,
			    cell->done == 1 ? "" : "s");
	if (cell->changed)
		strbuf_addf(&title, ", %u %s", cell->changed,
			    t->m.check_only ? "would change" : "changed");
	rule(t, l->pane_y, cols, title.buf);
	strbuf_release(&title);
	/* The node's failure, when it is this role's: what failed and how to fix it. */
	if (n->fail_order && n->fail_col == (int)c && y < end) {
		y += wrap(y, 0, cols, end - y > 2 ? 2 : 1, CRT_FAILED, n->fail_text);
		if (n->fail_hint && y < end) {
			put(y, 0, 5, CRT_KEY, "fix: ");
			y += wrap(y, 5, cols - 5, 1, CRT_WARN, n->fail_hint);
		}
	}
	if (y >= end)
		return;
	lines = xcalloc((size_t)(end - y), sizeof(*lines));
	nr = col_lines(t, n, c, lines, (size_t)(end - y));
	for (k = 0; k < nr; k++) {
		const struct tui_log_line *ln = tui_log_get(&n->log, lines[k]);
		bool indent = ln->kind == TUI_LINE_OUT || ln->kind == TUI_LINE_ERR;
		put(y + (int)k, indent ? 2 : 0, cols - (indent ? 2 : 0), line_attr(ln->kind),
		    ln->text);
	}
	free(lines);
}

/* ---- the bottom line ---- */

static void footer(struct tui *t, int y, int cols)
{
	struct tui_counts c;

	if (t->asking) {
		crt_put(y, 0, cols, CRT_PROMPT,
			" Stop the run? Nodes finish their current step, nothing new starts.  "
			"y: stop   any other key: go on",
			true);
		return;
	}
	if (t->running && t->stop_level == 1) {
		crt_put(y, 0, cols, CRT_PROMPT,
			" Stopping: nodes finish their current step.  q or y again: cancel the "
			"running steps now",
			true);
		return;
	}
	if (t->running && t->stop_level >= 2) {
		crt_put(y, 0, cols, CRT_PROMPT, " Cancelling: the running steps are being stopped",
			true);
		return;
	}
	if (t->lingering) {
		tui_model_counts(&t->m, &c);
		crt_put(y, 0, cols, CRT_PROMPT, "", true);
		putf(y, 0, cols, CRT_PROMPT,
		     " Finished: %zu node%s failed.  f: next failure  Enter: log  v: checks  "
		     "q: leave",
		     c.failed, c.failed == 1 ? "" : "s");
		return;
	}
	if (t->screen == SCREEN_LOG) {
		put(y, 0, cols, CRT_DIM,
		    " \xe2\x86\x91\xe2\x86\x93 PgUp PgDn: scroll  g G: top, end (follow)  "
		    "\xe2\x86\x90\xe2\x86\x92: sideways  Esc: back");
		return;
	}
	if (t->cfg.kind == TUI_STATUS) {
		put(y, 0, cols, CRT_DIM,
		    " \xe2\x86\x91\xe2\x86\x93 node  \xe2\x86\x90\xe2\x86\x92 check  Enter log  "
		    "r refresh  ? help  q quit");
		return;
	}
	put(y, 0, cols, CRT_DIM,
	    t->screen == SCREEN_CHECKS
		? " \xe2\x86\x91\xe2\x86\x93 node  \xe2\x86\x90\xe2\x86\x92 check  v/Esc grid  "
		  "Enter log  f failure  x roles  ? help  q quit"
	    : t->screen == SCREEN_ROLES
		? " \xe2\x86\x91\xe2\x86\x93 node  \xe2\x86\x90\xe2\x86\x92 role  x/Esc grid  "
		  "Enter log  f failure  v checks  ? help  q quit"
		: " \xe2\x86\x91\xe2\x86\x93 node  \xe2\x86\x90\xe2\x86\x92 column  Enter log  "
		  "f failure  v checks  x roles  ? help  q quit");
}

/* ---- the screens ---- */

static void draw_grid(struct tui *t, int rows, int cols, uint64_t now, enum tui_screen mode)
{
	struct grid gr;
	size_t *col = sel_col_of(t, mode), *left = left_of(t, mode);

	grid_layout(t, &gr, rows, cols, mode);
	t->grid_h = gr.l.grid_h;
	if (*col >= gr.ncols && gr.ncols)
		*col = gr.ncols - 1;
	*left = grid_scroll(t, &gr, *col, *left);
	t->top = tui_scroll(t->top, t->sel, (size_t)gr.l.grid_h, t->m.nr);
	if (t->cfg.kind == TUI_STATUS)
		title_status(t, cols, now);
	else
		title_run(t, cols, now);
	grid_header(t, &gr, *col, *left);
	grid_rows(t, &gr, now);
	if (gr.l.pane_h > 0) {
		if (mode == SCREEN_CHECKS)
			pane_check(t, &gr.l, cols);
		else if (mode == SCREEN_ROLES)
			pane_role(t, &gr.l, cols, now);
		else
			pane_run(t, &gr.l, cols, now);
	}
	footer(t, gr.l.footer_y, cols);
}

static void draw_log(struct tui *t, int rows, int cols)
{
	const struct tui_node *n = &t->m.nodes[t->sel];
	uint64_t first = tui_log_first(&n->log), k;
	struct strbuf title = STRBUF_INIT;
	int h = rows - 2, r;

	t->log_h = h;
	if (t->log_follow || t->log_top + (uint64_t)h > n->log.seq)
		t->log_top = n->log.seq > (uint64_t)h ? n->log.seq - (uint64_t)h : 0;
	if (t->log_top < first)
		t->log_top = first;
	strbuf_addf(&title, " log of %s %s lines %llu-%llu of %llu", n->node->name,
		    sym(t, "\xc2\xb7", "-"), (unsigned long long)(n->log.seq ? t->log_top + 1 : 0),
		    (unsigned long long)(t->log_top + (uint64_t)h < n->log.seq
					     ? t->log_top + (uint64_t)h
					     : n->log.seq),
		    (unsigned long long)n->log.seq);
	if (first)
		strbuf_addf(&title, " (the first %llu dropped: memory cap)",
			    (unsigned long long)first);
	if (t->log_follow)
		strbuf_addstr(&title, ", following");
	crt_put(0, 0, cols, CRT_TITLE, title.buf, true);
	for (r = 0, k = t->log_top; r < h && k < n->log.seq; r++, k++) {
		const struct tui_log_line *ln = tui_log_get(&n->log, k);
		bool indent = ln && (ln->kind == TUI_LINE_OUT || ln->kind == TUI_LINE_ERR);
		if (ln)
			crt_put_skip(1 + r, indent ? 2 : 0, cols - (indent ? 2 : 0),
				     line_attr(ln->kind), ln->text, t->log_skip, false);
	}
	footer(t, rows - 1, cols);
	strbuf_release(&title);
}

static void draw_help(struct tui *t, int rows, int cols)
{
	static const char *const keys[][2] = {
	    {"\xe2\x86\x91 \xe2\x86\x93 j k",
	     "select a node; PgUp PgDn Home End: by page, to the ends"},
	    {"\xe2\x86\x90 \xe2\x86\x92 h l",
	     "select a phase: its roles on the selected node under the grid"},
	    {"columns", "phases (facts, preflight: the first); +3: 3 steps changed"},
	    {"", "short: kube kube-packages, addon addons, valid validate"},
	    {"Enter", "the whole log of the selected node; Esc: back"},
	    {"f", "the next failure: its step's output and how to fix it"},
	    {"v", "validation matrix: nodes x checks, expected and observed"},
	    {"x", "roles: nodes x roles, the phases' roles one by one"},
	    {"", "short titles in v and x (init: kubeadm-init): man provision"},
	    {"r", "status: read the nodes again now"},
	    {"q", "stop the run (asks); then q or y again: cancel running steps"},
	    {"^L", "repaint the screen"},
	    {"?", "this help (any key closes it)"},
	};
	static const enum tui_cell_state legend[] = {
	    TUI_CELL_PENDING, TUI_CELL_RUNNING,	     TUI_CELL_UNCHANGED,
	    TUI_CELL_CHANGED, TUI_CELL_WOULD_CHANGE, TUI_CELL_WARN,
	    TUI_CELL_SKIPPED, TUI_CELL_NOT_REACHED,  TUI_CELL_FAILED,
	};
	int w = cols - 4 < 76 ? cols - 4 : 76, h = (int)ARRAY_SIZE(keys) + 8, x, y, r, lx;
	size_t k;

	if (w < 20 || rows < 6)
		return;
	if (h > rows - 2)
		h = rows - 2;
	x = (cols - w) / 2;
	y = (rows - h) / 2;
	for (r = 0; r < h; r++)
		crt_fill(y + r, x, w, CRT_NORMAL | CRT_REVERSE);
	put(y, x + 2, w - 4, CRT_BOLD | CRT_REVERSE, "keys");
	for (k = 0, r = 2; k < ARRAY_SIZE(keys) && r < h - 1; k++, r++) {
		put(y + r, x + 2, 12, CRT_KEY | CRT_REVERSE, keys[k][0]);
		put(y + r, x + 15, w - 17, CRT_NORMAL | CRT_REVERSE, keys[k][1]);
	}
	r++;
	lx = x + 2;
	for (k = 0; k < ARRAY_SIZE(legend) && r < h; k++) {
		const char *name = tui_cell_state_name(legend[k]);
		int need = 3 + (int)strlen(name);
		if (lx + need > x + w - 2) {
			r++;
			lx = x + 2;
			if (r >= h)
				break;
		}
		put(y + r, lx, 1, cell_glyphs[legend[k]].color | CRT_REVERSE,
		    g(t, &cell_glyphs[legend[k]]));
		put(y + r, lx + 2, (int)strlen(name), CRT_NORMAL | CRT_REVERSE, name);
		lx += need;
	}
}

static void draw(struct tui *t, uint64_t now)
{
	int rows, cols;

	crt_size(&rows, &cols);
	crt_erase();
	if (rows < 8 || cols < 30) {
		putf(0, 0, cols, CRT_BOLD, "terminal too small (%dx%d): 30x8 at least", cols, rows);
		crt_flush();
		t->last_frame = now;
		return;
	}
	if (t->screen == SCREEN_LOG)
		draw_log(t, rows, cols);
	else
		draw_grid(t, rows, cols, now, t->screen);
	if (t->help)
		draw_help(t, rows, cols);
	crt_flush();
	t->last_frame = now;
}

/* ---- keys ---- */

static void stop_run(struct tui *t)
{
	if (t->stop_level >= 2)
		return;
	t->stop_level++;
	runner_interrupt();
}

static void quit_key(struct tui *t)
{
	if (t->cfg.kind == TUI_STATUS) {
		/* Nothing to protect in a read-only round: leave at once. */
		t->quit = true;
		while (t->running && t->stop_level < 2)
			stop_run(t);
		return;
	}
	if (!t->running) {
		t->quit = true;
		return;
	}
	if (t->stop_level == 0)
		t->asking = true;
	else
		stop_run(t);
}

static void move_sel(struct tui *t, long delta)
{
	long v = (long)t->sel + delta;

	if (v < 0)
		v = 0;
	if (t->m.nr && v >= (long)t->m.nr)
		v = (long)t->m.nr - 1;
	t->sel = (size_t)v;
	t->show_failure = false;
}

static void move_col(struct tui *t, long delta)
{
	int phases[TUI_MAX_PHASES];
	size_t n = t->screen == SCREEN_CHECKS  ? checks_of(t)->nr
		   : t->screen == SCREEN_ROLES ? t->m.nr_cols
					       : tui_model_phases(&t->m, phases);
	size_t *c = sel_col_of(t, t->screen);
	long v = (long)*c + delta;

	if (!n)
		return;
	if (v < 0)
		v = 0;
	if (v >= (long)n)
		v = (long)n - 1;
	*c = (size_t)v;
}

static void open_log(struct tui *t)
{
	t->back = t->screen;
	t->screen = SCREEN_LOG;
	t->log_follow = true;
	t->log_skip = 0;
}

static void next_failure(struct tui *t)
{
	size_t i = tui_model_next_failure(&t->m, t->show_failure ? t->sel : SIZE_MAX);

	if (i == SIZE_MAX)
		return;
	t->sel = i;
	t->show_failure = true;
	if (t->m.nodes[i].fail_col >= 0) {
		int phases[TUI_MAX_PHASES];
		size_t nr = tui_model_phases(&t->m, phases), k;
		t->rcol = (size_t)t->m.nodes[i].fail_col;
		for (k = 0; k < nr; k++)
			if (tui_model_col_in_phase(&t->m, (size_t)t->m.nodes[i].fail_col, phases, k))
				t->col = k;
	}
	/* On the matrix: the failed check, with its expected and observed values. */
	if (t->screen == SCREEN_CHECKS && t->m.nodes[i].fail_check && *t->m.nodes[i].fail_check) {
		size_t k;
		for (k = 0; k < t->m.checks.nr; k++)
			if (!strcmp(t->m.checks.cols[k].id, t->m.nodes[i].fail_check))
				t->ccol = k;
	} else if (t->cfg.kind == TUI_RUN && t->screen != SCREEN_ROLES) {
		t->screen = SCREEN_GRID;
	}
}

static void log_key(struct tui *t, int k)
{
	const struct tui_node *n = &t->m.nodes[t->sel];
	uint64_t page = t->log_h > 1 ? (uint64_t)t->log_h - 1 : 1;
	uint64_t first = tui_log_first(&n->log);
	uint64_t last_top = n->log.seq > (uint64_t)t->log_h ? n->log.seq - (uint64_t)t->log_h : 0;

	switch (k) {
	case CRT_KEY_UP:
	case 'k':
		t->log_follow = false;
		if (t->log_top > first)
			t->log_top--;
		break;
	case CRT_KEY_DOWN:
	case 'j':
		if (t->log_top < last_top)
			t->log_top++;
		t->log_follow = t->log_top >= last_top;
		break;
	case CRT_KEY_PGUP:
	case 'b':
		t->log_follow = false;
		t->log_top = t->log_top > first + page ? t->log_top - page : first;
		break;
	case CRT_KEY_PGDN:
	case ' ':
		t->log_top = t->log_top + page < last_top ? t->log_top + page : last_top;
		t->log_follow = t->log_top >= last_top;
		break;
	case CRT_KEY_HOME:
	case 'g':
		t->log_follow = false;
		t->log_top = first;
		break;
	case CRT_KEY_END:
	case 'G':
		t->log_follow = true;
		break;
	case CRT_KEY_LEFT:
	case 'h':
		t->log_skip = t->log_skip > 8 ? t->log_skip - 8 : 0;
		break;
	case CRT_KEY_RIGHT:
	case 'l':
		t->log_skip += 8;
		break;
	case CRT_KEY_ESC:
	case CRT_KEY_ENTER:
	case 'q':
		t->screen = t->back;
		break;
	case 'f':
		next_failure(t);
		break;
	default:
		break;
	}
}

static void key(struct tui *t, int k)
{
	long page = t->grid_h > 1 ? t->grid_h - 1 : 1;

	if (k == CRT_KEY_RESIZE || k == 12 /* ^L */) {
		/* Repaint every cell: what the terminal kept of the old size is not trusted. */
		crt_invalidate();
		return;
	}
	if (t->help) {
		t->help = false;
		return;
	}
	if (t->asking) {
		t->asking = false;
		if (k == 'y' || k == 'Y')
			stop_run(t);
		return;
	}
	if (k == '?') {
		t->help = true;
		return;
	}
	if (t->screen == SCREEN_LOG) {
		log_key(t, k);
		return;
	}
	switch (k) {
	case 'q':
	case 'Q':
		quit_key(t);
		break;
	case 'y':
	case 'Y':
		/* Already stopping (the person said yes once): a second yes cancels. */
		if (t->running && t->stop_level == 1)
			stop_run(t);
		break;
	case CRT_KEY_UP:
	case 'k':
		move_sel(t, -1);
		break;
	case CRT_KEY_DOWN:
	case 'j':
		move_sel(t, 1);
		break;
	case CRT_KEY_PGUP:
		move_sel(t, -page);
		break;
	case CRT_KEY_PGDN:
		move_sel(t, page);
		break;
	case CRT_KEY_HOME:
	case 'g':
		move_sel(t, -(long)t->m.nr);
		break;
	case CRT_KEY_END:
	case 'G':
		move_sel(t, (long)t->m.nr);
		break;
	case CRT_KEY_LEFT:
	case 'h':
		move_col(t, -1);
		break;
	case CRT_KEY_RIGHT:
	case 'l':
		move_col(t, 1);
		break;
	case CRT_KEY_ENTER:
		open_log(t);
		break;
	case 'f':
		next_failure(t);
		break;
	case 'v':
		if (t->cfg.kind == TUI_RUN)
			t->screen = t->screen == SCREEN_CHECKS ? SCREEN_GRID : SCREEN_CHECKS;
		break;
	case 'x':
		if (t->cfg.kind == TUI_RUN)
			t->screen = t->screen == SCREEN_ROLES ? SCREEN_GRID : SCREEN_ROLES;
		break;
	case 'r':
		if (t->cfg.kind == TUI_STATUS)
			t->refresh_now = true;
		break;
	case CRT_KEY_ESC:
		if ((t->screen == SCREEN_CHECKS || t->screen == SCREEN_ROLES) &&
		    t->cfg.kind == TUI_RUN)
			t->screen = SCREEN_GRID;
		t->show_failure = false;
		break;
	default:
		break;
	}
}

/* Keys and signals that came since the last frame. */
static bool input(struct tui *t)
{
	unsigned sigs = crt_interrupts();
	bool any = false;
	int k, n = 0;

	while (n++ < 64 && (k = crt_key(0)) != CRT_KEY_NONE) {
		key(t, k);
		any = true;
	}
	/*
	 * ^C during a pass reaches the runner's handler, not crt's: the view
	 * learns it from the runner's count, so the bottom line says the run is
	 * stopping as after q then y.
	 */
	if (t->running && t->cfg.kind == TUI_RUN && runner_interrupts() > (unsigned)t->stop_level) {
		t->stop_level = runner_interrupts() >= 2 ? 2 : (int)runner_interrupts();
		t->asking = false;
		any = true;
	}
	if (sigs != t->signals_seen) {
		/* ^C between the runner's passes, or while nothing runs. */
		t->signals_seen = sigs;
		if (t->running && t->cfg.kind == TUI_RUN)
			stop_run(t);
		else
			t->quit = true;
		any = true;
	}
	return any;
}

/* One step of the loop: keys, then a frame when one is due. */
static void pump(struct tui *t, bool force)
{
	uint64_t now = now_ms();

	if (!force && now - t->last_frame < TUI_FRAME_MS)
		return;
	input(t);
	draw(t, now);
}

/* ---- the interface ---- */

struct tui *tui_start(const struct tui_config *cfg, struct error *err)
{
	struct tui *t;

	if (crt_init(err) < 0)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	t->cfg = *cfg;
	t->utf8 = crt_utf8();
	tui_model_init(&t->m, cfg->inv, cfg->roles, cfg->phases, cfg->check_only, cfg->validate,
		       cfg->nodes, cfg->nr, now_ms());
	if (cfg->eta_hist_ms) {
		size_t k;
		for (k = 0; k < cfg->nr; k++)
			tui_model_set_history(&t->m, k, cfg->eta_hist_ms[k]);
	}
	if (cfg->kind == TUI_STATUS)
		tui_checks_status_columns(&t->m.checks);
	t->screen = cfg->kind == TUI_STATUS || cfg->checks_first ? SCREEN_CHECKS : SCREEN_GRID;
	t->back = t->screen;
	t->running = true;
	t->signals_seen = crt_interrupts();
	pump(t, true);
	return t;
}

void tui_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct tui *t = data;

	tui_model_event(&t->m, ev);
	pump(t, false);
}

void tui_tick(void *data)
{
	pump(data, false);
}

void tui_node_eta(size_t i, int64_t ms, void *data)
{
	struct tui *t = data;

	tui_model_set_history(&t->m, i, ms);
}

void tui_run_end(struct tui *t, bool interrupted)
{
	tui_model_end(&t->m, now_ms(), interrupted || t->stop_level > 0);
	t->running = false;
	t->asking = false;
	if (!interrupted && !t->stop_level && !t->quit && t->m.failures && crt_active()) {
		/* Stay on the first failure: the reason a person would look. */
		t->lingering = true;
		t->show_failure = false;
		next_failure(t);
		while (!t->quit) {
			int k = crt_key(TUI_FRAME_MS);
			if (k != CRT_KEY_NONE)
				key(t, k);
			input(t);
			draw(t, now_ms());
		}
		t->lingering = false;
	}
	pump(t, true);
}

void tui_stop(struct tui *t)
{
	if (t)
		crt_done();
}

void tui_print_summary(struct tui *t, int exit_status)
{
	struct strbuf out = STRBUF_INIT;
	const char **changed = xcalloc(t->m.nr ? t->m.nr : 1, sizeof(*changed));
	size_t i, c, nr_changed = 0;
	const char *why;

	for (i = 0; i < t->m.nr; i++) {
		const struct tui_node *n = &t->m.nodes[i];
		bool any = false;
		for (c = 2; c < t->m.nr_cols; c++)
			any = any || n->cells[c].changed;
		if (any)
			changed[nr_changed++] = n->node->name;
	}
	if (nr_changed) {
		char *list = hostlist_compress(changed, nr_changed);
		strbuf_addf(&out, "%s on %zu node%s: %s\n",
			    t->cfg.check_only ? "would change" : "changed", nr_changed,
			    nr_changed == 1 ? "" : "s", list);
		free(list);
	}
	for (c = 1; c <= t->m.failures; c++) {
		for (i = 0; i < t->m.nr; i++) {
			const struct tui_node *n = &t->m.nodes[i];
			if (n->fail_order != c)
				continue;
			strbuf_addf(&out, "failed: %s: %s: %s\n", n->node->name, n->fail_where,
				    n->fail_text);
			if (n->fail_hint)
				strbuf_addf(&out, "  fix: %s\n", n->fail_hint);
		}
	}
	switch (exit_status) {
	case 0:
		why = "every node ok";
		break;
	case 1:
		why = "some node failed";
		break;
	case 130:
		why = "interrupted";
		break;
	default:
		why = "error";
		break;
	}
	strbuf_addf(&out, "exit status %d: %s\n", exit_status, why);
	(void)write_all(1, out.buf, out.len);
	strbuf_release(&out);
	free(changed);
}

void tui_free(struct tui *t)
{
	if (!t)
		return;
	tui_stop(t);
	tui_model_release(&t->m);
	free(t);
}

/* ---- provision status ---- */

struct tui_checks *tui_status_checks(struct tui *t)
{
	return &t->m.checks;
}

void tui_status_round(struct tui *t)
{
	tui_model_restart(&t->m, now_ms());
	t->m.checks.gen++;
	t->running = true;
	t->refresh_now = false;
	t->stop_level = 0;
	pump(t, true);
}

void tui_status_done(struct tui *t)
{
	uint64_t now = now_ms();

	tui_checks_expire(&t->m.checks, t->m.checks.gen, "not checked in the last round");
	tui_model_end(&t->m, now, false);
	t->running = false;
	t->rounds++;
	t->round_ms = now;
	t->next_round_ms = now + (uint64_t)(t->cfg.refresh_s > 0 ? t->cfg.refresh_s : 5) * 1000;
	pump(t, true);
}

bool tui_status_wait(struct tui *t)
{
	while (!t->quit && !t->refresh_now && now_ms() < t->next_round_ms) {
		int k = crt_key(TUI_FRAME_MS);
		if (k != CRT_KEY_NONE)
			key(t, k);
		input(t);
		draw(t, now_ms());
	}
	return t->quit;
}

bool tui_quit_requested(const struct tui *t)
{
	return t->quit;
}
