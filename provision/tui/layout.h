/*
 * tui layout: where each part of the grid goes for a screen size.  Pure
 * arithmetic (unit-tested), so the drawing code never computes a position.
 *
 *   row 0            title bar
 *   rows 1-2         column headings (two rows: long labels alternate)
 *   grid rows        one per node, scrolled
 *   separator + pane the selected node's output, or a check's detail
 *   last row         keys, or a question
 *
 * Across, a grid row is: a selection mark, the node's name, its roles and
 * GPU summary (dropped first when space is short), one cell per column,
 * then the progress bar and the ETA.  When the columns do not fit even at
 * their narrowest, only some are shown and the view scrolls sideways.
 */
#ifndef PROVISION_TUI_LAYOUT_H
#define PROVISION_TUI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

struct tui_layout_in {
	int rows, cols;		    /* the screen */
	int name_w, roles_w, gpu_w; /* widest node name, roles and GPU text */
	size_t nr_cols;		    /* phase or check columns */
	int label_w;		    /* widest column label */
	int min_cell;		    /* narrowest a cell may be (a glyph: 3; "n/a": 4) */
	bool progress;		    /* a progress bar and ETA per row */
	size_t nr_nodes;
};

struct tui_layout {
	int name_x, name_w;
	int roles_x, roles_w; /* roles_w 0: not shown */
	int gpu_x, gpu_w;     /* gpu_w 0: not shown */
	int cells_x, cell_w;
	size_t cols_visible; /* how many columns fit */
	bool stagger;	     /* labels longer than a cell: alternate them on the two heading rows */
	int label_w;	     /* room for one label */
	int bar_x, bar_w;    /* bar_w 0: no progress */
	int eta_x, eta_w;
	int header_y;	    /* first of the two heading rows */
	int grid_y, grid_h; /* node rows */
	int pane_y, pane_h; /* the separator row, then pane_h rows; pane_h 0: no pane */
	int footer_y;
	int cols;      /* the screen's width */
	bool progress; /* a progress bar and ETA per row */
};

void tui_layout_compute(struct tui_layout *l, const struct tui_layout_in *in);

/*
 * Where the title of the k-th column shown goes, of `shown` columns: its
 * heading row (*y) and the room it has from its cell's left edge (*room).
 * Staggered, the last shown column's title is on the upper row, which has
 * nothing on its right (the progress heading is on the lower): its room
 * runs to the screen's edge.
 */
void tui_layout_title(const struct tui_layout *l, size_t k, size_t shown, int *y, int *room);

/*
 * Sideways: the first column to show (from `left`, moving as little as
 * possible, so that `sel` is visible), with l->cols_visible lowered until
 * the last shown column's title fits whole: narrowest[c] is the width of
 * column c's title or of its short form, whichever is narrower.  A title
 * that does not fit whole at the right edge shows one column fewer, not a
 * cut title; the progress bar then moves left with the cells.
 */
size_t tui_layout_columns(struct tui_layout *l, const int *narrowest, size_t ncols, size_t left,
			  size_t sel);

/*
 * The first item to show so that `sel` is visible in a window of `visible`
 * items out of `total`, moving as little as possible from `top`.
 */
size_t tui_scroll(size_t top, size_t sel, size_t visible, size_t total);

#endif
