/*
 * util: memory, growable strings and error reporting shared by every module.
 *
 * Out of memory is fatal in exactly one place (xmalloc and friends): callers
 * never check for NULL from them.  Everything else reports failure with a
 * negative return value and a message in a caller-provided `struct error`.
 *
 * struct strbuf keeps git's invariants: `buf` is never NULL and is always
 * NUL-terminated, `len` excludes the NUL, and strbuf_detach() hands the
 * storage to the caller.  A strbuf may carry a size cap (`max`, 0 = none):
 * appends beyond it are dropped and `truncated` is set, so captured command
 * output cannot grow without bound (curl's dynbuf).
 *
 * Thread safety: all functions are reentrant; a given object must not be
 * used from two threads at once.
 */
#ifndef PROVISION_UTIL_H
#define PROVISION_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

/* Allocation that never returns NULL: on failure the process exits with a message. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
/* xstrndup: copy at most n bytes of s and NUL-terminate. */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Free a NULL-terminated array of strings and each string (NULL: nothing). */
void strv_free(char **v);
/* Grow *ptr (an array of `size`-byte items with capacity *alloc) to hold nr items. */
void *xgrow(void *ptr, size_t nr, size_t *alloc, size_t size);
#define ALLOC_GROW(p, nr, alloc) ((p) = xgrow((p), (nr), &(alloc), sizeof(*(p))))

/* Print "provision: fatal: ..." and exit(3).  For impossible situations only. */
void die(const char *fmt, ...) PRINTF_LIKE(1, 2) NORETURN;

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max;	/* 0: no cap; otherwise len never exceeds max */
	bool truncated; /* set when an append was cut by the cap */
};

#define STRBUF_INIT {.buf = strbuf_empty}
extern char strbuf_empty[];

void strbuf_init(struct strbuf *sb, size_t hint);
/* Free the storage and return to the STRBUF_INIT state (cap is kept). */
void strbuf_release(struct strbuf *sb);
/* Take the storage; sb is left empty.  The caller frees the result. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) PRINTF_LIKE(2, 3);
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);
void strbuf_reset(struct strbuf *sb);
void strbuf_setlen(struct strbuf *sb, size_t len);
/* Append s quoted for a POSIX shell: single quotes, ' as '\''. */
void strbuf_add_sh_quoted(struct strbuf *sb, const char *s);
/* Remove trailing whitespace. */
void strbuf_rtrim(struct strbuf *sb);

/*
 * struct error: what went wrong, for the caller to print.  `msg` follows the
 * house message style: lowercase, the failing thing first, subject quoted,
 * no trailing period.  `hint`, when set, says how to fix it.
 */
struct error {
	int code; /* module-specific negative code, 0 when unset */
	char msg[512];
	char hint[256];
};

/* Set err (when non-NULL) and return `code` (negative), for `return error_set(...)`. */
int error_set(struct error *err, int code, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Set the hint of an error already set. */
void error_hint(struct error *err, const char *fmt, ...) PRINTF_LIKE(2, 3);
void error_clear(struct error *err);

/* Monotonic milliseconds (CLOCK_MONOTONIC). */
uint64_t now_ms(void);
/* Monotonic microseconds. */
uint64_t now_us(void);
/* Wall clock, milliseconds since the epoch. */
uint64_t wall_ms(void);

/*
 * Node text.  Whatever a node prints is data: it must not end a YAML line or
 * comment where a template puts it, nor drive the terminal of whoever reads
 * it.  text_unsafe() finds, in len bytes of s, the first byte of a C0 control
 * other than TAB, DEL, a C1 control (U+0080..U+009F, NEL among them),
 * U+2028/U+2029 (line breaks to YAML and JavaScript) or a byte that is not
 * UTF-8: a pointer into s, or NULL when the text is clean.
 */
const char *text_unsafe(const char *s, size_t len);
/* The length of the UTF-8 sequence at s (n bytes there) and its code point in
 * *cp; 0 when it is not UTF-8 (overlong forms and surrogates included). */
size_t text_utf8(const char *s, size_t n, unsigned *cp);
/*
 * The one filter between node text and a terminal or a log a person will
 * cat (plain view, TUI, logs, show, bundle): out is reset to line with
 * escape sequences (CSI, OSC, ESC x) dropped, a CR-redrawn progress line
 * reduced to what it shows last, TAB expanded to 8 columns, and every other
 * unsafe character (text_unsafe) shown as '?'.  NUL ends the line.
 */
void text_clean_line(struct strbuf *out, const char *line);
/* The same, appended to out, newlines kept (a message of several lines): a CR
 * erases only what this call added to the line it is on (so a node cannot
 * erase the "[node] role › step" a view puts before its text). */
void text_clean_append(struct strbuf *out, const char *line);
/* The same for a text of several lines: each line cleaned, newlines kept. */
void text_clean(struct strbuf *out, const char *text, size_t len);
/*
 * Node text where it enters provision (a step's failure, a validation
 * result, an event's text, a transport error), so that no printer, log,
 * record, JSON or XML writer downstream can forget the filter: each line of
 * sb that holds an unsafe character (text_unsafe; a TAB is safe) is
 * cleaned as text_clean_line() does, in place; the other lines and the
 * newlines between them are left byte for byte, so an honest node's text
 * is unchanged.  Returns whether anything was cleaned.
 */
bool text_make_safe(struct strbuf *sb);
/* The same on a heap string (NULL stays NULL): *s is replaced when cleaned. */
bool text_make_safe_str(char **s);
/* The same on an error's message and hint (text from a node in them). */
void error_make_safe(struct error *err);

/*
 * Read a whole file; returns 0 or -errno.  *out is NUL-terminated.  With a
 * cap on out (out->max), reading stops at the cap and out->truncated is set.
 */
int read_file(const char *path, struct strbuf *out);
/* Write all of buf to fd, retrying on EINTR and short writes; 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);

/*
 * Write data to dir/name atomically (a temporary file renamed), mode 0600,
 * dir made 0700 when missing; 0 or -errno.
 */
int write_private_file(const char *dir, const char *name, const char *data, size_t len);

/* Expand a leading "~/" with $HOME.  The caller frees the result. */
char *expand_home(const char *path);

/* Levenshtein distance, capped: for "did you mean" hints. */
size_t edit_distance(const char *a, const char *b);

#endif
