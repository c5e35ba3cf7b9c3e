/* crt: see crt.h.  The only file that includes curses. */
#include "crt.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

static bool active;
static bool colors;
static int utf8_state = -1; /* -1: not looked at yet */
static SCREEN *screen;
static FILE *tty_in;		  /* /dev/tty when stdin is not a terminal */
static int saved_stderr = -1;	  /* the real fd 2 while it is held */
static int held_stderr = -1;	  /* where fd 2 points meanwhile */
static struct termios saved_tios; /* the terminal before curses */
static bool have_tios;
static volatile sig_atomic_t interrupts;
static bool atexit_done;

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
static const int quit_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction old_crash[ARRAY_SIZE(crash_signals)];
static struct sigaction old_quit[ARRAY_SIZE(quit_signals)];

static chtype attrs[CRT_COLOR_COUNT];

bool crt_active(void)
{
	return active;
}

bool crt_utf8(void)
{
	if (utf8_state < 0) {
		const char *cs = nl_langinfo(CODESET);
		utf8_state = cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8"));
	}
	return utf8_state;
}

bool crt_has_colors(void)
{
	return colors;
}

/* ---- giving the terminal back ---- */

/*
 * Put fd 2 back and copy what it held.  Only read/write/lseek/dup2/close:
 * this also runs in a crash handler.
 */
static void release_stderr(void)
{
	char buf[4096];
	ssize_t n;

	if (saved_stderr < 0)
		return;
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
	if (held_stderr < 0)
		return;
	if (lseek(held_stderr, 0, SEEK_SET) == 0)
		while ((n = read(held_stderr, buf, sizeof(buf))) > 0)
			if (write(STDERR_FILENO, buf, (size_t)n) < 0)
				break;
	close(held_stderr);
	held_stderr = -1;
}

static void restore_signals(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(crash_signals); i++)
		sigaction(crash_signals[i], &old_crash[i], NULL);
	for (i = 0; i < ARRAY_SIZE(quit_signals); i++)
		sigaction(quit_signals[i], &old_quit[i], NULL);
}

void crt_done(void)
{
	if (!active)
		return;
	active = false;
	restore_signals();
	curs_set(1);
	endwin();
	/*
	 * endwin() already restored the modes curses changed; the saved
	 * attributes are applied too in case anything else (a child, a
	 * library) changed them meanwhile.
	 */
	if (have_tios)
		tcsetattr(STDOUT_FILENO, TCSADRAIN, &saved_tios);
	delscreen(screen);
	screen = NULL;
	if (tty_in) {
		fclose(tty_in);
		tty_in = NULL;
	}
	fflush(stderr);
	release_stderr();
}

static void on_crash(int sig)
{
	/*
	 * endwin() is not async-signal-safe, but the process is going down and
	 * a terminal left in raw mode with no cursor is worse (htop does the
	 * same).  The saved terminal attributes are put back with tcsetattr(),
	 * which is safe.
	 */
	if (active) {
		active = false;
		endwin();
		if (have_tios)
			tcsetattr(STDOUT_FILENO, TCSADRAIN, &saved_tios);
		release_stderr();
	}
	signal(sig, SIG_DFL);
	raise(sig); /* delivered with the default action when the handler returns */
}

static void on_quit(int sig)
{
	if (++interrupts < 3)
		return;
	/* The third: the program is not listening; restore and die as asked. */
	on_crash(sig);
}

static void at_exit(void)
{
	crt_done();
}

unsigned crt_interrupts(void)
{
	return (unsigned)interrupts;
}

/* ---- taking the terminal ---- */

/* Point fd 2 at an unlinked temporary file until crt_done(). */
static void hold_stderr(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	fflush(stderr);
	fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/provision-stderr-XXXXXX",
			 dir && *dir ? dir : "/tmp");
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
	}
	if (fd < 0)
		return; /* then stderr is not held: better than no view */
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0) {
		close(fd);
		return;
	}
	held_stderr = fd;
	dup2(fd, STDERR_FILENO);
}

static void set_attrs(void)
{
	static const struct {
		short fg, bg;
		chtype extra, mono;
	} def[CRT_COLOR_COUNT] = {
	    [CRT_NORMAL] = {-1, -1, 0, A_NORMAL},
	    [CRT_DIM] = {-1, -1, A_DIM, A_DIM},
	    [CRT_BOLD] = {-1, -1, A_BOLD, A_BOLD},
	    [CRT_TITLE] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
	    [CRT_HEADER] = {COLOR_CYAN, -1, A_BOLD, A_BOLD | A_UNDERLINE},
	    [CRT_PENDING] = {-1, -1, A_DIM, A_DIM},
	    [CRT_RUNNING] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
	    [CRT_OK] = {COLOR_GREEN, -1, 0, A_NORMAL},
	    [CRT_CHANGED] = {COLOR_CYAN, -1, A_BOLD, A_BOLD},
	    [CRT_WARN] = {COLOR_YELLOW, -1, 0, A_UNDERLINE},
	    [CRT_FAILED] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_REVERSE},
	    [CRT_SKIPPED] = {COLOR_MAGENTA, -1, 0, A_DIM},
	    [CRT_BAR] = {COLOR_GREEN, -1, 0, A_NORMAL},
	    [CRT_BAR_FAIL] = {COLOR_RED, -1, 0, A_BOLD},
	    [CRT_PROMPT] = {COLOR_BLACK, COLOR_YELLOW, A_BOLD, A_REVERSE | A_BOLD},
	    [CRT_KEY] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
	};
	const char *no_color = getenv("NO_COLOR");
	int i;

	/* https://no-color.org: set and not empty means no colour. */
	colors = has_colors() && !(no_color && *no_color) && start_color() == OK;
	if (colors)
		use_default_colors();
	for (i = 0; i < CRT_COLOR_COUNT; i++) {
		if (colors && (def[i].fg != -1 || def[i].bg != -1) && i < COLOR_PAIRS) {
			init_pair((short)i, def[i].fg, def[i].bg);
			attrs[i] = COLOR_PAIR(i) | def[i].extra;
		} else {
			attrs[i] = colors ? def[i].extra : def[i].mono;
		}
	}
}

int crt_init(struct error *err)
{
	struct sigaction sa;
	FILE *in = stdin;
	size_t i;

	if (active)
		return 0;
	if (!isatty(STDOUT_FILENO))
		return error_set(err, -1, "standard output is not a terminal");
	if (!isatty(STDIN_FILENO)) {
		tty_in = fopen("/dev/tty", "r");
		if (!tty_in)
			return error_set(err, -1, "no terminal to read keys from");
		in = tty_in;
	}
	setlocale(LC_CTYPE, "");
	utf8_state = -1;
	have_tios = tcgetattr(STDOUT_FILENO, &saved_tios) == 0;
	/* Short, so that Esc answers at once (the default waits a second for a sequence). */
	if (!getenv("ESCDELAY"))
		set_escdelay(25);
	fflush(stdout);
	screen = newterm(NULL, stdout, in);
	if (!screen) {
		if (tty_in) {
			fclose(tty_in);
			tty_in = NULL;
		}
		return error_set(err, -1, "cannot use the terminal '%s'",
				 getenv("TERM") ? getenv("TERM") : "(TERM not set)");
	}
	set_term(screen);
	active = true;
	if (!atexit_done) {
		atexit(at_exit);
		atexit_done = true;
	}
	cbreak(); /* ^C still sends SIGINT: the runner's handler stops the run */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	intrflush(stdscr, FALSE);
	curs_set(0);
	set_attrs();

	interrupts = 0;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_crash;
	for (i = 0; i < ARRAY_SIZE(crash_signals); i++)
		sigaction(crash_signals[i], &sa, &old_crash[i]);
	sa.sa_handler = on_quit;
	for (i = 0; i < ARRAY_SIZE(quit_signals); i++)
		sigaction(quit_signals[i], &sa, &old_quit[i]);
	hold_stderr();
	erase();
	refresh();
	return 0;
}

/* ---- drawing ---- */

void crt_size(int *rows, int *cols)
{
	if (!active) {
		*rows = 24;
		*cols = 80;
		return;
	}
	getmaxyx(stdscr, *rows, *cols);
}

void crt_erase(void)
{
	if (active)
		erase();
}

void crt_invalidate(void)
{
	if (active)
		clearok(curscr, TRUE);
}

void crt_flush(void)
{
	if (active) {
		wnoutrefresh(stdscr);
		doupdate();
	}
}

/*
 * The next character of UTF-8 text: its code point in *wc (U+FFFD for an
 * invalid sequence) and the bytes it took.  Decoding is our own, not
 * mbrtowc(), so that widths do not depend on which locale is set.
 */
static size_t utf8_next(const unsigned char *s, wchar_t *wc)
{
	unsigned c = s[0], need, min, i;
	uint32_t v;

	if (c < 0x80) {
		*wc = (wchar_t)c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		v = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		v = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		v = c & 0x07;
		min = 0x10000;
	} else {
		*wc = 0xfffd;
		return 1;
	}
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*wc = 0xfffd;
			return i;
		}
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		v = 0xfffd;
	*wc = (wchar_t)v;
	return need + 1;
}

/* A terminal without UTF-8: the characters provision itself writes, in ASCII. */
static wchar_t ascii_for(wchar_t wc)
{
	static const struct {
		wchar_t from;
		char to;
	} map[] = {
	    {0x203a, '>'}, /* › between a role and its step */
	    {0x2026, '.'}, /* … */
	    {0x00b7, '-'}, /* · */
	    {0x00d7, 'x'}, /* × */
	    {0x2502, '|'}, /* │ */
	    {0x2500, '-'}, /* ─ */
	    {0x2713, '='}, /* ✓ */
	    {0x2717, 'X'}, /* ✗ */
	    {0x25b8, '>'}, /* ▸ */
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (map[i].from == wc)
			return (wchar_t)map[i].to;
	return '?';
}

/* What is drawn for wc, and its width; 0: nothing is drawn. */
static int glyph(wchar_t *wc)
{
	int w;

	if (*wc == '\t') {
		*wc = ' ';
		return 1;
	}
	if (*wc < 0x20 || *wc == 0x7f || (*wc >= 0x80 && *wc < 0xa0)) {
		/* A control character can move the cursor or change modes: never drawn. */
		*wc = crt_utf8() ? 0xfffd : '?';
		return 1;
	}
	if (*wc < 0x80)
		return 1;
	if (!crt_utf8()) {
		*wc = ascii_for(*wc);
		return 1;
	}
	w = wcwidth(*wc);
	if (w < 0) {
		*wc = 0xfffd;
		return 1;
	}
	return w; /* 0 for combining marks: drawn on the character before */
}

size_t crt_text_width(const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t w = 0;
	wchar_t wc;

	while (*p) {
		p += utf8_next(p, &wc);
		w += (size_t)glyph(&wc);
	}
	return w;
}

static chtype attr_of(unsigned attr)
{
	chtype a = attrs[(attr & CRT_COLOR_MASK) < CRT_COLOR_COUNT ? attr & CRT_COLOR_MASK : 0];

	if (attr & CRT_REVERSE)
		a ^= A_REVERSE;
	return a;
}

int crt_put_skip(int y, int x, int width, unsigned attr, const char *text, size_t skip, bool pad)
{
	const unsigned char *p = (const unsigned char *)(text ? text : "");
	wchar_t buf[512];
	unsigned char wid[512];
	size_t n = 0, skipped = 0;
	int used = 0, rows, cols;

	if (!active || width <= 0)
		return 0;
	getmaxyx(stdscr, rows, cols);
	if (y < 0 || y >= rows || x < 0 || x >= cols)
		return 0;
	if (x + width > cols)
		width = cols - x;
	while (*p) {
		wchar_t wc;
		int w;

		p += utf8_next(p, &wc);
		w = glyph(&wc);
		if (skipped < skip) {
			skipped += (size_t)w;
			if (skipped <= skip)
				continue;
			wc = ' '; /* the visible half of a wide character scrolled away */
			w = 1;
		}
		if (w == 0 && n == 0)
			continue;
		if (used + w > width || n + 2 >= ARRAY_SIZE(buf)) {
			/* Cut: the last column says there is more. */
			while (n > 0 && used + 1 > width) {
				n--;
				used -= wid[n];
			}
			if (used + 1 <= width) {
				buf[n] = crt_utf8() ? 0x2026 : '>';
				wid[n++] = 1;
				used++;
			}
			break;
		}
		buf[n] = wc;
		wid[n++] = (unsigned char)w;
		used += w;
	}
	buf[n] = 0;
	attrset(attr_of(attr));
	if (n)
		mvaddnwstr(y, x, buf, (int)n);
	if (pad && used < width)
		mvhline(y, x + used, ' ' | attr_of(attr), width - used);
	attrset(A_NORMAL);
	return pad ? width : used;
}

int crt_put(int y, int x, int width, unsigned attr, const char *text, bool pad)
{
	return crt_put_skip(y, x, width, attr, text, 0, pad);
}

void crt_fill(int y, int x, int width, unsigned attr)
{
	int rows, cols;

	if (!active || width <= 0)
		return;
	getmaxyx(stdscr, rows, cols);
	if (y < 0 || y >= rows || x < 0 || x >= cols)
		return;
	if (x + width > cols)
		width = cols - x;
	mvhline(y, x, ' ' | attr_of(attr), width);
}

/* ---- keys ---- */

int crt_key(int timeout_ms)
{
	int k;

	if (!active)
		return CRT_KEY_NONE;
	timeout(timeout_ms);
	k = getch();
	switch (k) {
	case ERR:
		return CRT_KEY_NONE;
	case KEY_UP:
		return CRT_KEY_UP;
	case KEY_DOWN:
		return CRT_KEY_DOWN;
	case KEY_LEFT:
		return CRT_KEY_LEFT;
	case KEY_RIGHT:
		return CRT_KEY_RIGHT;
	case KEY_PPAGE:
		return CRT_KEY_PGUP;
	case KEY_NPAGE:
		return CRT_KEY_PGDN;
	case KEY_HOME:
		return CRT_KEY_HOME;
	case KEY_END:
		return CRT_KEY_END;
	case KEY_ENTER:
	case '\r':
	case '\n':
		return CRT_KEY_ENTER;
	case 27:
		return CRT_KEY_ESC;
	case KEY_RESIZE:
		return CRT_KEY_RESIZE;
	case KEY_BACKSPACE:
	case 127:
		return CRT_KEY_BACKSPACE;
	default:
		return k >= 0 && k < 256 ? k : CRT_KEY_NONE;
	}
}
