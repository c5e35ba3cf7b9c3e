/* tui layout: see layout.h. */
#include "layout.h"

#include <string.h>

#define NAME_MAX_W  24
#define ROLES_MAX_W 14
#define GPU_MAX_W   18
#define CELL_MAX_W  14
#define BAR_MIN_W   6
#define BAR_MAX_W   20
#define ETA_W	    7
/* A cell is comfortable at this width; below it, roles and GPU columns go first. */
#define CELL_COMFORT_W 4

static int clamp(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

size_t tui_scroll(size_t top, size_t sel, size_t visible, size_t total)
{
	if (!visible || total <= visible)
		return 0;
	if (sel < top)
		top = sel;
	else if (sel >= top + visible)
		top = sel - visible + 1;
	if (top + visible > total)
		top = total - visible;
	return top;
}

static void vertical(struct tui_layout *l, const struct tui_layout_in *in)
{
	int avail, pane_min, grid;

	l->header_y = 1;
	l->grid_y = 3;
	l->footer_y = in->rows - 1;
	avail = in->rows - 4; /* title, two heading rows, footer */
	if (avail < 1)
		avail = 1;
	/*
	 * The pane gets a third of the rows (at least a separator and 4
	 * lines) when the nodes would take them; with few nodes it gets the
	 * rest.  Too short a screen has no pane.
	 */
	pane_min = avail / 3 > 5 ? avail / 3 : 5;
	if (avail < pane_min + 3) {
		l->grid_h = avail;
		l->pane_y = l->footer_y;
		l->pane_h = 0;
		return;
	}
	grid = (int)(in->nr_nodes < (size_t)(avail - pane_min) ? in->nr_nodes
							       : (size_t)(avail - pane_min));
	if (grid < 1)
		grid = 1;
	l->grid_h = grid;
	l->pane_y = l->grid_y + grid;
	l->pane_h = avail - grid - 1;
}

/* The progress bar and the ETA after the cells shown, the bar as wide as the rest allows. */
static void place_bar(struct tui_layout *l)
{
	int used, spare;

	if (!l->progress)
		return;
	used = l->cells_x + (int)l->cols_visible * l->cell_w + 1;
	spare = l->cols - used - ETA_W - 1;
	l->bar_x = used;
	l->bar_w = clamp(spare, BAR_MIN_W, BAR_MAX_W);
	if (l->bar_x + l->bar_w + 1 + ETA_W > l->cols)
		l->bar_w = l->cols - l->bar_x - 1 - ETA_W;
	if (l->bar_w < 0)
		l->bar_w = 0;
	l->eta_x = l->bar_x + l->bar_w + 1;
	l->eta_w = ETA_W;
}

void tui_layout_compute(struct tui_layout *l, const struct tui_layout_in *in)
{
	int min_cell = in->min_cell > 0 ? in->min_cell : 3;
	int fixed, avail, cw, want_cell, roles_w, gpu_w, ncols = (int)in->nr_cols;

	memset(l, 0, sizeof(*l));
	vertical(l, in);

	l->name_x = 1; /* column 0 holds the selection mark */
	l->name_w = clamp(in->name_w, 4, NAME_MAX_W);
	if (l->name_w > in->cols / 3)
		l->name_w = in->cols / 3 > 4 ? in->cols / 3 : 4;
	roles_w = in->roles_w > 0 ? clamp(in->roles_w, 5, ROLES_MAX_W) : 0;
	gpu_w = in->gpu_w > 0 ? clamp(in->gpu_w, 3, GPU_MAX_W) : 0;

	fixed = l->name_x + l->name_w + 1;
	if (in->progress)
		fixed += BAR_MIN_W + 1 + ETA_W;
	avail = in->cols - fixed;
	if (avail < min_cell)
		avail = min_cell;

	/* Roles and GPU only when the cells keep a comfortable width without them. */
	{
		int comfort = ncols * (min_cell > CELL_COMFORT_W ? min_cell : CELL_COMFORT_W);
		if (roles_w && gpu_w && avail - (roles_w + 1) - (gpu_w + 1) >= comfort) {
			l->roles_w = roles_w;
			l->gpu_w = gpu_w;
		} else if (gpu_w && avail - (gpu_w + 1) >= comfort) {
			l->gpu_w = gpu_w;
		} else if (roles_w && !gpu_w && avail - (roles_w + 1) >= comfort) {
			l->roles_w = roles_w;
		}
	}
	l->roles_x = l->name_x + l->name_w + 1;
	l->gpu_x = l->roles_x + (l->roles_w ? l->roles_w + 1 : 0);
	l->cells_x = l->gpu_x + (l->gpu_w ? l->gpu_w + 1 : 0);
	avail -= (l->roles_w ? l->roles_w + 1 : 0) + (l->gpu_w ? l->gpu_w + 1 : 0);

	want_cell = clamp(in->label_w + 1, min_cell, CELL_MAX_W);
	if (ncols == 0) {
		cw = min_cell;
		l->cols_visible = 0;
	} else if (ncols * want_cell <= avail) {
		cw = want_cell;
		l->cols_visible = in->nr_cols;
	} else if (ncols * min_cell <= avail) {
		/* Labels will alternate rows: a cell needs half of one, no more (no stretched gaps). */
		int half = (in->label_w + 2) / 2;
		cw = avail / ncols;
		if (cw > half && half >= min_cell)
			cw = half;
		l->cols_visible = in->nr_cols;
	} else {
		cw = min_cell;
		l->cols_visible = (size_t)(avail / min_cell);
		if (!l->cols_visible)
			l->cols_visible = 1;
	}
	l->cell_w = cw;
	/* A label gets its cell, or its cell and the next one when they alternate rows. */
	l->stagger = in->label_w > cw - 1 && l->cols_visible > 1;
	l->label_w = l->stagger ? 2 * cw - 1 : cw - 1;
	if (l->label_w < 1)
		l->label_w = 1;

	l->cols = in->cols;
	l->progress = in->progress;
	place_bar(l);
}

void tui_layout_title(const struct tui_layout *l, size_t k, size_t shown, int *y, int *room)
{
	size_t last = shown ? shown - 1 : 0;
	bool upper = l->stagger && (last - k) % 2 == 0;
	int x = l->cells_x + (int)k * l->cell_w;
	int end = upper || !l->bar_w ? l->cols : l->bar_x - 1;

	*y = upper ? l->header_y : l->header_y + 1;
	*room = l->label_w;
	if (!l->stagger && k < last)
		*room = l->cell_w - 1;
	if (x + *room > end || k == last)
		*room = end - x;
}

size_t tui_layout_columns(struct tui_layout *l, const int *narrowest, size_t ncols, size_t left,
			  size_t sel)
{
	size_t vis = l->cols_visible;
	int y, room;

	for (;;) {
		size_t shown;
		left = tui_scroll(left, sel, vis, ncols);
		shown = ncols - left < vis ? ncols - left : vis;
		if (!shown || vis <= 1)
			break;
		tui_layout_title(l, shown - 1, shown, &y, &room);
		if (narrowest[left + shown - 1] <= room)
			break;
		/* One fewer: the title before it has the room to the edge. */
		vis--;
		l->cols_visible = vis;
		l->stagger = l->stagger && vis > 1;
		place_bar(l);
	}
	return left;
}
