/*
 * crt: the terminal, and the only file that includes curses (htop's CRT.c).
 *
 * crt_init() takes the terminal: ncursesw on standard output, keys from
 * standard input (or /dev/tty when standard input is not a terminal),
 * colours unless NO_COLOR is set or the terminal has none.  From then on
 * crt owns the screen until crt_done() gives it back, on every way out:
 *
 *   - normal end and error paths: crt_done() (idempotent; also atexit, so
 *     die() and exit() restore the terminal too);
 *   - SIGINT, SIGTERM, SIGHUP: counted, not fatal: the view polls
 *     crt_interrupts() and turns them into a stop of the run or a quit
 *     (runner_run() installs its own SIGINT/SIGTERM handlers while a pass
 *     runs, which do the same).  A third one restores the terminal and
 *     dies with the signal's default action, so a wedged program can
 *     always be killed from the keyboard;
 *   - SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL: the terminal is restored
 *     and the held-back stderr written out, then the signal is re-raised
 *     with its default action (core dump and exit status unchanged);
 *   - SIGWINCH: ncurses' own handler; crt_key() returns CRT_KEY_RESIZE.
 *
 * While curses owns the screen, file descriptor 2 points at an unlinked
 * temporary file: a message written to stderr by anything (a library, a
 * die()) would otherwise scribble over the screen.  crt_done() puts fd 2
 * back and copies what was held there to it.
 *
 * Text is UTF-8.  crt_put() clips to a width in display columns (wide
 * characters count 2), replaces control characters and invalid bytes, and
 * pads; nothing it is given can move the cursor or change the terminal.
 *
 * Threading: main thread only (curses is not thread-safe; workers never
 * draw, see runner.h).
 */
#ifndef PROVISION_TUI_CRT_H
#define PROVISION_TUI_CRT_H

#include <stdbool.h>
#include <stddef.h>

#include "../util.h"

/* What a piece of text is; crt maps it to a colour, or to an attribute in monochrome. */
enum crt_color {
	CRT_NORMAL = 0,
	CRT_DIM,
	CRT_BOLD,
	CRT_TITLE,    /* the top bar */
	CRT_HEADER,   /* column headings */
	CRT_PENDING,  /* not started */
	CRT_RUNNING,  /* in progress */
	CRT_OK,	      /* unchanged, passed */
	CRT_CHANGED,  /* changed something */
	CRT_WARN,     /* would change (plan), warnings */
	CRT_FAILED,   /* failed */
	CRT_SKIPPED,  /* skipped, not reached, n/a */
	CRT_BAR,      /* the done part of a progress bar */
	CRT_BAR_FAIL, /* the done part of a failed node's bar */
	CRT_PROMPT,   /* a question on the bottom line */
	CRT_KEY,      /* a key name in the help */
	CRT_COLOR_COUNT
};

/* Flags or-ed with a colour. */
#define CRT_REVERSE    0x100 /* selection */
#define CRT_COLOR_MASK 0xff

/* Keys crt_key() returns besides plain characters (which are returned as themselves). */
enum crt_keys {
	CRT_KEY_NONE = -1,
	CRT_KEY_UP = 0x10000,
	CRT_KEY_DOWN,
	CRT_KEY_LEFT,
	CRT_KEY_RIGHT,
	CRT_KEY_PGUP,
	CRT_KEY_PGDN,
	CRT_KEY_HOME,
	CRT_KEY_END,
	CRT_KEY_ENTER,
	CRT_KEY_ESC,
	CRT_KEY_RESIZE,
	CRT_KEY_BACKSPACE,
};

/*
 * Take the terminal.  Returns 0, or -1 with the reason in err (no
 * terminal, unknown TERM): the caller then uses the plain view.
 */
int crt_init(struct error *err);
/* Give the terminal back, as it was, and print what stderr held.  Safe to call twice. */
void crt_done(void);
bool crt_active(void);

/* The screen's size now. */
void crt_size(int *rows, int *cols);
/* True when glyphs outside ASCII can be drawn (a UTF-8 locale). */
bool crt_utf8(void);
bool crt_has_colors(void);

/* Start a frame: clear the (virtual) screen. */
void crt_erase(void);
/*
 * Draw UTF-8 text at (y, x) in at most `width` display columns, padded with
 * spaces to exactly `width` when pad is set.  Returns the columns used.
 */
int crt_put(int y, int x, int width, unsigned attr, const char *text, bool pad);
/* The same, skipping the first `skip` display columns of the text (horizontal scroll). */
int crt_put_skip(int y, int x, int width, unsigned attr, const char *text, size_t skip, bool pad);
/* Fill `width` columns with spaces in attr. */
void crt_fill(int y, int x, int width, unsigned attr);
/* The next crt_flush() repaints the whole screen (after a resize). */
void crt_invalidate(void);
/* Send the frame to the terminal (only what changed is written). */
void crt_flush(void);

/*
 * A key, waiting at most timeout_ms (0: do not wait).  CRT_KEY_NONE when
 * none came.
 */
int crt_key(int timeout_ms);
/* SIGINT/SIGTERM/SIGHUP received since crt_init(); the view decides what they mean. */
unsigned crt_interrupts(void);

/* Display columns of UTF-8 text as crt_put() would draw it. */
size_t crt_text_width(const char *text);

#endif
