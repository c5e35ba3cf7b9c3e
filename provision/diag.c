/* diag: see diag.h. */
#include "diag.h"

#include <stdlib.h>

#include "util.h"

void diag_list_init(struct diag_list *dl)
{
	*dl = (struct diag_list){0};
}

void diag_list_release(struct diag_list *dl)
{
	size_t i;

	for (i = 0; i < dl->nr; i++) {
		free(dl->items[i].file);
		free(dl->items[i].msg);
		free(dl->items[i].hint);
	}
	free(dl->items);
	diag_list_init(dl);
}

void diag_vadd(struct diag_list *dl, enum diag_level level, const char *file, unsigned line,
	       unsigned col, const char *hint, const char *fmt, va_list ap)
{
	struct strbuf sb = STRBUF_INIT;
	struct diag *d;

	strbuf_vaddf(&sb, fmt, ap);
	ALLOC_GROW(dl->items, dl->nr + 1, dl->alloc);
	d = &dl->items[dl->nr++];
	*d = (struct diag){
	    .level = level,
	    .file = file ? xstrdup(file) : NULL,
	    .line = line,
	    .col = line ? col : 0,
	    .msg = strbuf_detach(&sb, NULL),
	    .hint = hint && *hint ? xstrdup(hint) : NULL,
	};
	if (level == DIAG_ERROR)
		dl->errors++;
}

void diag_add(struct diag_list *dl, enum diag_level level, const char *file, unsigned line,
	      unsigned col, const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(dl, level, file, line, col, hint, fmt, ap);
	va_end(ap);
}

char *diag_format(const struct diag *d)
{
	struct strbuf sb = STRBUF_INIT;

	if (d->file && *d->file)
		strbuf_addstr(&sb, d->file);
	if (d->line)
		strbuf_addf(&sb, "%s%u:%u", sb.len ? ":" : "", d->line, d->col);
	if (sb.len)
		strbuf_addstr(&sb, ": ");
	strbuf_addf(&sb, "%s: %s", d->level == DIAG_ERROR ? "error" : "warning", d->msg);
	if (d->hint)
		strbuf_addf(&sb, "\n  hint: %s", d->hint);
	return strbuf_detach(&sb, NULL);
}

struct diag_seq {
	struct diag d;
	size_t seq;
};

static int cmp_diag(const void *a, const void *b)
{
	const struct diag_seq *x = a, *y = b;

	if (x->d.line != y->d.line)
		return x->d.line < y->d.line ? -1 : 1;
	if (x->d.col != y->d.col)
		return x->d.col < y->d.col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void diag_sort_from(struct diag_list *dl, size_t first)
{
	size_t n = dl->nr - first, i;
	struct diag_seq *tmp;

	if (n < 2)
		return;
	tmp = xcalloc(n, sizeof(*tmp));
	for (i = 0; i < n; i++)
		tmp[i] = (struct diag_seq){dl->items[first + i], i};
	qsort(tmp, n, sizeof(*tmp), cmp_diag);
	for (i = 0; i < n; i++)
		dl->items[first + i] = tmp[i].d;
	free(tmp);
}
