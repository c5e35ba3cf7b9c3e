/* util: see util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char strbuf_empty[1];

void die(const char *fmt, ...)
{
	va_list ap;
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "provision: fatal: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	/* One write: never interleave with another thread's line. */
	(void)write_all(STDERR_FILENO, line, strlen(line));
	exit(3);
}

static void *checked(void *p, size_t size)
{
	if (!p && size)
		die("out of memory allocating %zu bytes", size);
	return p;
}

void *xmalloc(size_t size)
{
	return checked(malloc(size ? size : 1), size);
}

void *xcalloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		die("allocation of %zu x %zu bytes overflows", nmemb, size);
	return checked(calloc(nmemb ? nmemb : 1, size ? size : 1), nmemb * size);
}

void *xrealloc(void *ptr, size_t size)
{
	return checked(realloc(ptr, size ? size : 1), size);
}

char *xstrdup(const char *s)
{
	return checked(strdup(s), strlen(s) + 1);
}

void strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	return strbuf_detach(&sb, NULL);
}

void *xgrow(void *ptr, size_t nr, size_t *alloc, size_t size)
{
	size_t n;

	if (nr <= *alloc)
		return ptr;
	n = *alloc ? *alloc : 8;
	while (n < nr) {
		if (n > SIZE_MAX / 2 / size)
			die("array of %zu items of %zu bytes is too large", nr, size);
		n *= 2;
	}
	*alloc = n;
	return xrealloc(ptr, n * size);
}

void strbuf_init(struct strbuf *sb, size_t hint)
{
	*sb = (struct strbuf){.buf = strbuf_empty};
	if (hint)
		strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
	size_t max = sb->max;

	if (sb->alloc)
		free(sb->buf);
	*sb = (struct strbuf){.buf = strbuf_empty, .max = max};
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *r;

	if (len)
		*len = sb->len;
	r = sb->alloc ? sb->buf : xstrdup("");
	*sb = (struct strbuf){.buf = strbuf_empty, .max = sb->max};
	return r;
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	bool fresh = !sb->alloc;
	size_t need;

	if (extra > SIZE_MAX - sb->len - 1)
		die("string of %zu bytes is too large", sb->len);
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return;
	if (fresh)
		sb->buf = NULL;
	sb->buf = xgrow(sb->buf, need, &sb->alloc, 1);
	if (fresh)
		sb->buf[0] = '\0';
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (sb->max && sb->len + len > sb->max) {
		len = sb->max > sb->len ? sb->max - sb->len : 0;
		sb->truncated = true;
	}
	if (!len)
		return;
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	strbuf_add(sb, &ch, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	char small[256];
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(small, sizeof(small), fmt, cp);
	va_end(cp);
	if (n < 0)
		die("bad format string '%s'", fmt);
	if ((size_t)n < sizeof(small)) {
		strbuf_add(sb, small, (size_t)n);
		return;
	}
	{
		char *big = xmalloc((size_t)n + 1);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		strbuf_add(sb, big, (size_t)n);
		free(big);
	}
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void strbuf_reset(struct strbuf *sb)
{
	strbuf_setlen(sb, 0);
	sb->truncated = false;
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (len > sb->len)
		die("strbuf_setlen beyond end (%zu > %zu)", len, sb->len);
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void strbuf_rtrim(struct strbuf *sb)
{
	while (sb->len && strchr(" \t\r\n", sb->buf[sb->len - 1]))
		sb->len--;
	if (sb->alloc)
		sb->buf[sb->len] = '\0';
}

void strbuf_add_sh_quoted(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			strbuf_addstr(sb, "'\\''");
		else
			strbuf_addch(sb, *s);
	}
	strbuf_addch(sb, '\'');
}

int error_set(struct error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		err->hint[0] = '\0';
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

void error_hint(struct error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof(err->hint), fmt, ap);
	va_end(ap);
}

void error_clear(struct error *err)
{
	if (err)
		*err = (struct error){0};
}

uint64_t now_ms(void)
{
	return now_us() / 1000;
}

uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static size_t utf8_seq(const unsigned char *p, size_t n, unsigned *cp)
{
	size_t k, i;
	unsigned c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		k = 2, c = p[0] & 0x1fu;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		k = 3, c = p[0] & 0x0fu;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		k = 4, c = p[0] & 0x07u;
	else
		return 0;
	if (n < k)
		return 0;
	for (i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3fu);
	}
	/* overlong, surrogates, beyond U+10FFFF */
	if ((k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return k;
}

size_t text_utf8(const char *s, size_t n, unsigned *cp)
{
	return n ? utf8_seq((const unsigned char *)s, n, cp) : 0;
}

static bool unsafe_cp(unsigned c)
{
	return (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029;
}

const char *text_unsafe(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		unsigned c;
		size_t k = utf8_seq(p, (size_t)(end - p), &c);
		if (!k || unsafe_cp(c))
			return (const char *)p;
		p += k;
	}
	return NULL;
}

static void clean(struct strbuf *out, const char *line, bool keep_nl)
{
	const unsigned char *p = (const unsigned char *)line;
	size_t col = 0, start = out->len;

	while (*p) {
		unsigned c;
		size_t k;

		if (*p == 0x1b) {
			/* ESC [ params final (CSI), ESC ] ... BEL/ST (OSC), or ESC and one byte. */
			p++;
			if (*p == '[') {
				p++;
				while (*p && !(*p >= 0x40 && *p <= 0x7e))
					p++;
				if (*p)
					p++;
			} else if (*p == ']') {
				while (*p && *p != 0x07 && !(p[0] == 0x1b && p[1] == '\\'))
					p++;
				if (*p == 0x07)
					p++;
				else if (*p)
					p += 2;
			} else if (*p) {
				p++;
			}
			continue;
		}
		if (*p == '\r') {
			/* A progress meter redraws its line: keep what comes last (unless it is
			 * empty). */
			if (p[1] && p[1] != '\n') {
				strbuf_setlen(out, start);
				col = 0;
			}
			p++;
			continue;
		}
		if (*p == '\n' && keep_nl) {
			strbuf_addch(out, '\n');
			start = out->len;
			col = 0;
			p++;
			continue;
		}
		if (*p == '\t') {
			do {
				strbuf_addch(out, ' ');
				col++;
			} while (col % 8);
			p++;
			continue;
		}
		k = utf8_seq(p, strnlen((const char *)p, 4), &c);
		if (!k || unsafe_cp(c)) {
			strbuf_addch(out, '?');
			col++;
			p += k ? k : 1;
			continue;
		}
		strbuf_add(out, p, k);
		col++;
		p += k;
	}
}

void text_clean_line(struct strbuf *out, const char *line)
{
	strbuf_reset(out);
	clean(out, line, false);
}

void text_clean_append(struct strbuf *out, const char *line)
{
	clean(out, line, true);
}

void text_clean(struct strbuf *out, const char *text, size_t len)
{
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	const char *p = text, *end = text + len;

	strbuf_reset(out);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		strbuf_reset(&line);
		strbuf_add(&line, p, (size_t)(eol - p));
		text_clean_line(&clean, line.buf);
		strbuf_add(out, clean.buf, clean.len);
		if (nl)
			strbuf_addch(out, '\n');
		p = eol + 1;
	}
	strbuf_release(&line);
	strbuf_release(&clean);
}

bool text_make_safe(struct strbuf *sb)
{
	struct strbuf out = STRBUF_INIT, line = STRBUF_INIT, clean = STRBUF_INIT;
	const char *p = sb->buf, *end = sb->buf + sb->len;
	bool changed = false;

	/* The common case: nothing to clean, nothing copied. */
	for (;;) {
		const char *bad = text_unsafe(p, (size_t)(end - p));
		if (!bad)
			return false;
		if (*bad != '\n')
			break;
		p = bad + 1;
	}
	for (p = sb->buf; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		if (text_unsafe(p, (size_t)(eol - p))) {
			/* NUL ends a line for the filter: what follows a NUL is dropped. */
			strbuf_reset(&line);
			strbuf_add(&line, p, (size_t)(eol - p));
			text_clean_line(&clean, line.buf);
			strbuf_add(&out, clean.buf, clean.len);
			changed = true;
		} else {
			strbuf_add(&out, p, (size_t)(eol - p));
		}
		if (nl)
			strbuf_addch(&out, '\n');
		p = eol + 1;
	}
	explicit_bzero(line.buf, line.len);
	strbuf_release(&line);
	strbuf_release(&clean);
	if (sb->len)
		explicit_bzero(sb->buf, sb->len); /* it may have held a secret, split */
	out.max = sb->max;
	out.truncated = sb->truncated;
	strbuf_release(sb);
	*sb = out;
	return changed;
}

bool text_make_safe_str(char **s)
{
	struct strbuf sb = STRBUF_INIT;

	if (!*s)
		return false;
	strbuf_addstr(&sb, *s);
	if (!text_make_safe(&sb)) {
		strbuf_release(&sb);
		return false;
	}
	explicit_bzero(*s, strlen(*s));
	free(*s);
	*s = strbuf_detach(&sb, NULL);
	return true;
}

/* buf (size bytes) cleaned; a cleaned text that no longer fits is cut at a character. */
static void make_safe_buf(char *buf, size_t size)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, buf);
	if (text_make_safe(&sb)) {
		size_t n = sb.len < size ? sb.len : size - 1;
		/* not in the middle of a UTF-8 sequence */
		if (n < sb.len)
			while (n && ((unsigned char)sb.buf[n] & 0xc0) == 0x80)
				n--;
		memcpy(buf, sb.buf, n);
		buf[n] = '\0';
	}
	strbuf_release(&sb);
}

void error_make_safe(struct error *err)
{
	if (!err)
		return;
	make_safe_buf(err->msg, sizeof(err->msg));
	make_safe_buf(err->hint, sizeof(err->hint));
}

int read_file(const char *path, struct strbuf *out)
{
	char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		strbuf_add(out, buf, (size_t)n);
		if (out->truncated)
			break; /* at the cap: the rest would be dropped anyway */
	}
	close(fd);
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int write_private_file(const char *dir, const char *name, const char *data, size_t len)
{
	char *tmp = xasprintf("%s/.%s.XXXXXX", dir, name), *dst = xasprintf("%s/%s", dir, name);
	int fd, e = 0;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		e = -errno;
	if (!e && (fd = mkstemp(tmp)) < 0)
		e = -errno;
	if (!e) {
		if (fchmod(fd, 0600) < 0 || (e = write_all(fd, data, len)) < 0 || fsync(fd) < 0)
			e = e ? e : -errno;
		close(fd);
		if (!e && rename(tmp, dst) < 0)
			e = -errno;
		if (e)
			unlink(tmp);
	}
	free(tmp);
	free(dst);
	return e;
}

char *expand_home(const char *path)
{
	const char *home;

	if (path[0] != '~' || (path[1] != '/' && path[1] != '\0'))
		return xstrdup(path);
	home = getenv("HOME");
	if (!home || !*home)
		home = "/";
	return xasprintf("%s%s", home, path + 1);
}

size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[65];

	if (la > 64 || lb > 64)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t prev = row[0], tmp;
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = prev + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}
