/* template: see template.h for the language. */
#include "template.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

static struct tval *tval_alloc(enum tval_kind kind)
{
	struct tval *v = xcalloc(1, sizeof(*v));
	v->kind = kind;
	return v;
}

struct tval *tval_new_map(void)
{
	return tval_alloc(TVAL_MAP);
}

struct tval *tval_new_list(void)
{
	return tval_alloc(TVAL_LIST);
}

struct tval *tval_new_str(const char *s)
{
	struct tval *v = tval_alloc(TVAL_STR);
	v->str = xstrdup(s ? s : "");
	return v;
}

void tval_free(struct tval *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->nr; i++) {
		if (v->keys)
			free(v->keys[i]);
		tval_free(v->items[i]);
	}
	free(v->keys);
	free(v->items);
	free(v->str);
	free(v);
}

struct tval *tval_set(struct tval *map, const char *key, struct tval *v)
{
	size_t i, alloc;

	if (map->kind != TVAL_MAP)
		die("tval_set on a value that is not a map");
	for (i = 0; i < map->nr; i++) {
		if (!strcmp(map->keys[i], key)) {
			tval_free(map->items[i]);
			map->items[i] = v;
			return v;
		}
	}
	alloc = map->alloc;
	ALLOC_GROW(map->items, map->nr + 1, map->alloc);
	map->keys = xgrow(map->keys, map->nr + 1, &alloc, sizeof(*map->keys));
	map->keys[map->nr] = xstrdup(key);
	map->items[map->nr++] = v;
	return v;
}

struct tval *tval_set_str(struct tval *map, const char *key, const char *s)
{
	return tval_set(map, key, tval_new_str(s));
}

struct tval *tval_set_strf(struct tval *map, const char *key, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	struct tval *v = tval_alloc(TVAL_STR);
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	v->str = strbuf_detach(&sb, NULL);
	return tval_set(map, key, v);
}

struct tval *tval_map_at(struct tval *map, const char *key)
{
	size_t i;

	for (i = 0; i < map->nr; i++)
		if (!strcmp(map->keys[i], key) && map->items[i]->kind == TVAL_MAP)
			return map->items[i];
	return tval_set(map, key, tval_new_map());
}

struct tval *tval_push(struct tval *list, struct tval *v)
{
	if (list->kind != TVAL_LIST)
		die("tval_push on a value that is not a list");
	ALLOC_GROW(list->items, list->nr + 1, list->alloc);
	list->items[list->nr++] = v;
	return v;
}

static const struct tval *child(const struct tval *v, const char *seg, size_t len)
{
	size_t i;

	if (!v)
		return NULL;
	if (v->kind == TVAL_MAP) {
		for (i = 0; i < v->nr; i++)
			if (strlen(v->keys[i]) == len && !strncmp(v->keys[i], seg, len))
				return v->items[i];
		return NULL;
	}
	if (v->kind == TVAL_LIST) {
		size_t idx = 0;
		if (!len || len > 9)
			return NULL;
		for (i = 0; i < len; i++) {
			if (!isdigit((unsigned char)seg[i]))
				return NULL;
			idx = idx * 10 + (size_t)(seg[i] - '0');
		}
		return idx < v->nr ? v->items[idx] : NULL;
	}
	return NULL;
}

/* Follow the dotted path `rest` below v. */
static const struct tval *walk(const struct tval *v, const char *rest)
{
	while (v && *rest) {
		const char *dot = strchr(rest, '.');
		size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
		v = child(v, rest, len);
		rest += len;
		if (*rest == '.')
			rest++;
	}
	return v;
}

const struct tval *tval_lookup(const struct tval *root, const char *dotted)
{
	return walk(root, dotted);
}

struct tval *tval_copy(const struct tval *v)
{
	struct tval *c;
	size_t i;

	if (!v)
		return NULL;
	if (v->kind == TVAL_STR)
		return tval_new_str(v->str);
	c = tval_alloc(v->kind);
	for (i = 0; i < v->nr; i++) {
		if (v->kind == TVAL_MAP)
			tval_set(c, v->keys[i], tval_copy(v->items[i]));
		else
			tval_push(c, tval_copy(v->items[i]));
	}
	return c;
}

/* ---- syntax tree ---- */

enum tnode_kind { TN_TEXT, TN_VAR, TN_IF, TN_FOR };

enum cmp_op { CMP_NONE, CMP_EQ, CMP_NE };

struct expr {
	char *name;
	bool negate;
	enum cmp_op op;
	char *literal;
	unsigned line, col;
};

struct tnode;

struct tnode_list {
	struct tnode **items;
	size_t nr, alloc;
};

struct branch {
	bool is_else;
	struct expr cond;
	struct tnode_list body;
};

struct tnode {
	enum tnode_kind kind;
	unsigned line, col;
	/* TN_TEXT */
	const char *text;
	size_t len;
	/* TN_VAR */
	struct expr e;
	char **filters;
	size_t nr_filters;
	/* TN_IF */
	struct branch *branches;
	size_t nr_branches;
	/* TN_FOR */
	char *var;
	struct tnode_list body;
};

struct template {
	char *name;
	char *text; /* a private copy: TN_TEXT nodes point into it */
	struct tnode_list root;
};

static void expr_release(struct expr *e)
{
	free(e->name);
	free(e->literal);
}

static void list_release(struct tnode_list *l);

static void tnode_free(struct tnode *n)
{
	size_t i;

	if (!n)
		return;
	expr_release(&n->e);
	for (i = 0; i < n->nr_filters; i++)
		free(n->filters[i]);
	free(n->filters);
	for (i = 0; i < n->nr_branches; i++) {
		expr_release(&n->branches[i].cond);
		list_release(&n->branches[i].body);
	}
	free(n->branches);
	free(n->var);
	list_release(&n->body);
	free(n);
}

static void list_release(struct tnode_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		tnode_free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->nr = l->alloc = 0;
}

static void list_push(struct tnode_list *l, struct tnode *n)
{
	ALLOC_GROW(l->items, l->nr + 1, l->alloc);
	l->items[l->nr++] = n;
}

void template_free(struct template *t)
{
	if (!t)
		return;
	list_release(&t->root);
	free(t->name);
	free(t->text);
	free(t);
}

/* ---- lexer ---- */

enum tok_kind { TOK_TEXT, TOK_VAR, TOK_STMT, TOK_EOF };

struct tok {
	enum tok_kind kind;
	const char *start; /* TEXT: the text; VAR/STMT: the inside of the tag */
	size_t len;
	unsigned line, col;
};

struct parser {
	const char *name;
	const char *text;
	size_t len, pos;
	struct error *err;
	struct tok *toks;
	size_t nr_toks, alloc_toks, next;
	/* pos_of()'s last answer: tokens come in order, so it walks on from there. */
	size_t mark_off;
	unsigned mark_line, mark_col;
};

/* Line and column (1-based, columns in bytes) of offset off; linear over a whole lex. */
static void pos_of(struct parser *p, size_t off, unsigned *line, unsigned *col)
{
	size_t i = p->mark_off;

	if (off > p->len)
		off = p->len;
	if (!p->mark_line || off < i) {
		i = 0;
		p->mark_line = p->mark_col = 1;
	}
	for (; i < off; i++) {
		if (p->text[i] == '\n') {
			p->mark_line++;
			p->mark_col = 1;
		} else {
			p->mark_col++;
		}
	}
	p->mark_off = off;
	*line = p->mark_line;
	*col = p->mark_col;
}

static int perr(struct parser *p, unsigned line, unsigned col, const char *fmt, ...)
	PRINTF_LIKE(4, 5);
static int perr(struct parser *p, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(p->err, -1, "%s:%u:%u: %s", p->name, line, col, msg);
}

static void add_tok(struct parser *p, enum tok_kind kind, size_t start, size_t len, size_t at)
{
	struct tok *t;

	ALLOC_GROW(p->toks, p->nr_toks + 1, p->alloc_toks);
	t = &p->toks[p->nr_toks++];
	t->kind = kind;
	t->start = p->text + start;
	t->len = len;
	pos_of(p, at, &t->line, &t->col);
}

static int lex(struct parser *p)
{
	size_t text_start = 0, i = 0;

	while (i < p->len) {
		char open = i + 1 < p->len && p->text[i] == '{' ? p->text[i + 1] : 0;
		const char *close;
		size_t tag = i, inner, end, ls, le;
		bool alone;

		if (open != '{' && open != '%' && open != '#') {
			i++;
			continue;
		}
		close = open == '{' ? "}}" : open == '%' ? "%}" : "#}";
		inner = i + 2;
		end = inner;
		while (end + 1 < p->len && !(p->text[end] == close[0] && p->text[end + 1] == close[1]))
			end++;
		if (end + 1 >= p->len) {
			unsigned l, c;
			pos_of(p, tag, &l, &c);
			return perr(p, l, c, "unterminated '{%c': no closing '%s'", open, close);
		}
		/* A statement or comment alone on its line leaves no line behind. */
		ls = tag;
		while (ls > text_start && (p->text[ls - 1] == ' ' || p->text[ls - 1] == '\t'))
			ls--;
		le = end + 2;
		while (le < p->len && (p->text[le] == ' ' || p->text[le] == '\t'))
			le++;
		alone = open != '{' && (ls == 0 || p->text[ls - 1] == '\n') &&
			(le == p->len || p->text[le] == '\n');
		if (!alone) {
			ls = tag;
			le = end + 2;
		} else if (le < p->len) {
			le++; /* the newline */
		}
		if (ls > text_start)
			add_tok(p, TOK_TEXT, text_start, ls - text_start, text_start);
		if (open == '{')
			add_tok(p, TOK_VAR, inner, end - inner, tag);
		else if (open == '%')
			add_tok(p, TOK_STMT, inner, end - inner, tag);
		i = text_start = le;
	}
	if (p->len > text_start)
		add_tok(p, TOK_TEXT, text_start, p->len - text_start, text_start);
	add_tok(p, TOK_EOF, p->len, 0, p->len);
	return 0;
}

/* ---- tag contents ---- */

struct words {
	const char *s;
	size_t len, pos;
};

static void skip_ws(struct words *w)
{
	while (w->pos < w->len && isspace((unsigned char)w->s[w->pos]))
		w->pos++;
}

static bool is_name_char(int c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '-';
}

/* Next bare word (a name or keyword), or NULL. */
static char *next_name(struct words *w)
{
	size_t start;

	skip_ws(w);
	start = w->pos;
	while (w->pos < w->len && is_name_char((unsigned char)w->s[w->pos]))
		w->pos++;
	return w->pos > start ? xstrndup(w->s + start, w->pos - start) : NULL;
}

static bool at_end(struct words *w)
{
	skip_ws(w);
	return w->pos >= w->len;
}

static bool valid_name(const char *n)
{
	if (!n || !*n || n[0] == '.' || n[strlen(n) - 1] == '.' || strstr(n, ".."))
		return false;
	return isalpha((unsigned char)n[0]) || n[0] == '_';
}

static int parse_literal(struct parser *p, const struct tok *t, struct words *w, char **out)
{
	struct strbuf sb = STRBUF_INIT;
	char q;

	skip_ws(w);
	if (w->pos >= w->len || (w->s[w->pos] != '"' && w->s[w->pos] != '\''))
		return perr(p, t->line, t->col, "expected a quoted string after the comparison");
	q = w->s[w->pos++];
	while (w->pos < w->len && w->s[w->pos] != q) {
		if (w->s[w->pos] == '\\' && w->pos + 1 < w->len)
			w->pos++;
		strbuf_addch(&sb, w->s[w->pos++]);
	}
	if (w->pos >= w->len) {
		strbuf_release(&sb);
		return perr(p, t->line, t->col, "unterminated string");
	}
	w->pos++;
	*out = strbuf_detach(&sb, NULL);
	return 0;
}

static int parse_expr(struct parser *p, const struct tok *t, struct words *w, struct expr *e)
{
	char *name = next_name(w);

	e->line = t->line;
	e->col = t->col;
	if (name && !strcmp(name, "not")) {
		e->negate = true;
		free(name);
		name = next_name(w);
	}
	if (!valid_name(name)) {
		free(name);
		return perr(p, t->line, t->col, "expected a value name");
	}
	e->name = name;
	skip_ws(w);
	if (w->pos + 1 < w->len && (w->s[w->pos] == '=' || w->s[w->pos] == '!') &&
	    w->s[w->pos + 1] == '=') {
		e->op = w->s[w->pos] == '=' ? CMP_EQ : CMP_NE;
		w->pos += 2;
		if (e->negate)
			return perr(p, t->line, t->col, "'not' cannot be combined with a comparison");
		if (parse_literal(p, t, w, &e->literal) < 0)
			return -1;
	}
	if (!at_end(w))
		return perr(p, t->line, t->col, "unexpected '%.*s' in condition",
			    (int)(w->len - w->pos), w->s + w->pos);
	return 0;
}

static const char *const filter_names[] = {"yaml", "toml", "json", "sh", "upper", "lower", NULL};

static int parse_var(struct parser *p, const struct tok *t, struct tnode *n)
{
	struct words w = {t->start, t->len, 0};
	char *name = next_name(&w);

	if (!valid_name(name)) {
		free(name);
		return perr(p, t->line, t->col, "expected a value name inside '{{ }}'");
	}
	n->e.name = name;
	n->e.line = t->line;
	n->e.col = t->col;
	while (!at_end(&w)) {
		char *f;
		size_t k;

		if (w.s[w.pos] != '|')
			return perr(p, t->line, t->col, "unexpected '%.*s' after '%s' (filters follow '|')",
				    (int)(w.len - w.pos), w.s + w.pos, n->e.name);
		w.pos++;
		f = next_name(&w);
		for (k = 0; f && filter_names[k]; k++)
			if (!strcmp(f, filter_names[k]))
				break;
		if (!f || !filter_names[k]) {
			int r = perr(p, t->line, t->col,
				     "unknown filter '%s' (filters: yaml, toml, json, sh, upper, lower)",
				     f ? f : "");
			free(f);
			return r;
		}
		n->filters = xrealloc(n->filters, (n->nr_filters + 1) * sizeof(*n->filters));
		n->filters[n->nr_filters++] = f;
	}
	return 0;
}

/* The keyword of a statement token ("if", "endfor", ...) into kw (static size). */
static void stmt_keyword(const struct tok *t, char *kw, size_t size, struct words *w)
{
	char *k;

	w->s = t->start;
	w->len = t->len;
	w->pos = 0;
	k = next_name(w);
	snprintf(kw, size, "%s", k ? k : "");
	free(k);
}

/*
 * Parse nodes into `list` until a statement whose keyword is in `stops`
 * (space-separated) or EOF.  *stop receives that keyword ("" at EOF).
 */
static int parse_list(struct parser *p, struct tnode_list *list, const char *stops, char *stop,
		      size_t stop_size)
{
	for (;;) {
		struct tok *t = &p->toks[p->next];
		struct tnode *n;
		char kw[32];
		struct words w;

		if (t->kind == TOK_EOF) {
			stop[0] = '\0';
			return 0;
		}
		p->next++;
		if (t->kind == TOK_TEXT) {
			n = xcalloc(1, sizeof(*n));
			n->kind = TN_TEXT;
			n->text = t->start;
			n->len = t->len;
			n->line = t->line;
			n->col = t->col;
			list_push(list, n);
			continue;
		}
		if (t->kind == TOK_VAR) {
			n = xcalloc(1, sizeof(*n));
			n->kind = TN_VAR;
			n->line = t->line;
			n->col = t->col;
			list_push(list, n);
			if (parse_var(p, t, n) < 0)
				return -1;
			continue;
		}
		stmt_keyword(t, kw, sizeof(kw), &w);
		if (stops) {
			char pad[40];
			snprintf(pad, sizeof(pad), " %s ", kw);
			if (strstr(stops, pad)) {
				snprintf(stop, stop_size, "%s", kw);
				p->next--; /* the caller reads the stop statement */
				return 0;
			}
		}
		if (!strcmp(kw, "if")) {
			char end[32];
			n = xcalloc(1, sizeof(*n));
			n->kind = TN_IF;
			n->line = t->line;
			n->col = t->col;
			list_push(list, n);
			for (;;) {
				struct branch *b;
				n->branches = xrealloc(n->branches,
						       (n->nr_branches + 1) * sizeof(*n->branches));
				b = &n->branches[n->nr_branches++];
				memset(b, 0, sizeof(*b));
				if (!strcmp(kw, "else")) {
					b->is_else = true;
					if (!at_end(&w))
						return perr(p, t->line, t->col,
							    "'else' takes no condition (use 'elif')");
				} else if (parse_expr(p, t, &w, &b->cond) < 0) {
					return -1;
				}
				if (parse_list(p, &b->body, b->is_else ? " endif " : " elif else endif ",
					       end, sizeof(end)) < 0)
					return -1;
				if (!end[0])
					return perr(p, n->line, n->col,
						    "'if' is never closed (expected '{%% endif %%}')");
				t = &p->toks[p->next++];
				stmt_keyword(t, kw, sizeof(kw), &w);
				if (!strcmp(kw, "endif")) {
					if (!at_end(&w))
						return perr(p, t->line, t->col,
							    "'endif' takes nothing after it");
					break;
				}
			}
			continue;
		}
		if (!strcmp(kw, "for")) {
			char end[32], *in;
			n = xcalloc(1, sizeof(*n));
			n->kind = TN_FOR;
			n->line = t->line;
			n->col = t->col;
			list_push(list, n);
			n->var = next_name(&w);
			if (!n->var || strchr(n->var, '.') || !valid_name(n->var))
				return perr(p, t->line, t->col,
					    "expected 'for NAME in LIST' (NAME without dots)");
			if (!strcmp(n->var, "loop"))
				return perr(p, t->line, t->col, "'loop' is reserved; choose another name");
			in = next_name(&w);
			if (!in || strcmp(in, "in")) {
				free(in);
				return perr(p, t->line, t->col, "expected 'in' after 'for %s'", n->var);
			}
			free(in);
			n->e.name = next_name(&w);
			n->e.line = t->line;
			n->e.col = t->col;
			if (!valid_name(n->e.name) || !at_end(&w))
				return perr(p, t->line, t->col, "expected 'for %s in LIST'", n->var);
			if (parse_list(p, &n->body, " endfor ", end, sizeof(end)) < 0)
				return -1;
			if (!end[0])
				return perr(p, n->line, n->col,
					    "'for' is never closed (expected '{%% endfor %%}')");
			t = &p->toks[p->next++];
			stmt_keyword(t, kw, sizeof(kw), &w);
			if (!at_end(&w))
				return perr(p, t->line, t->col, "'endfor' takes nothing after it");
			continue;
		}
		if (!strcmp(kw, "elif") || !strcmp(kw, "else") || !strcmp(kw, "endif") ||
		    !strcmp(kw, "endfor"))
			return perr(p, t->line, t->col, "'%s' without a matching '%s'", kw,
				    strcmp(kw, "endfor") ? "if" : "for");
		return perr(p, t->line, t->col,
			    "unknown statement '%s' (statements: if, elif, else, endif, for, endfor)",
			    kw);
	}
}

int template_parse(struct template **out, const char *name, const char *text, size_t len,
		   struct error *err)
{
	struct template *t = xcalloc(1, sizeof(*t));
	struct parser p = {0};
	char stop[32];
	int r;

	*out = NULL;
	t->name = xstrdup(name);
	t->text = xstrndup(text, len);
	p.name = name;
	p.text = t->text;
	p.len = strlen(t->text); /* a NUL inside ends the template */
	p.err = err;
	if (p.len != len) {
		unsigned l, c;
		pos_of(&p, p.len, &l, &c);
		r = perr(&p, l, c, "NUL byte in template");
		goto out;
	}
	r = lex(&p);
	if (r < 0)
		goto out;
	r = parse_list(&p, &t->root, NULL, stop, sizeof(stop));
out:
	free(p.toks);
	if (r < 0) {
		template_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

/* ---- rendering ---- */

struct loop_frame {
	const char *var;
	const struct tval *item;
	size_t index, count;
	struct tval *info; /* loop.index, loop.first, loop.last */
};

struct render {
	const struct template *t;
	const struct tval *root;
	struct loop_frame frames[16];
	size_t depth;
	struct error *err;
	struct strbuf *out;
};

static int rerr(struct render *r, unsigned line, unsigned col, const char *fmt, ...)
	PRINTF_LIKE(4, 5);
static int rerr(struct render *r, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(r->err, -1, "%s:%u:%u: %s", r->t->name, line, col, msg);
}

static const struct tval *resolve(struct render *r, const char *name)
{
	const char *dot = strchr(name, '.');
	size_t len = dot ? (size_t)(dot - name) : strlen(name);
	size_t i;

	for (i = r->depth; i-- > 0;) {
		const struct loop_frame *f = &r->frames[i];
		if (strlen(f->var) == len && !strncmp(f->var, name, len))
			return dot ? walk(f->item, dot + 1) : f->item;
		if (len == 4 && !strncmp(name, "loop", 4) && i == r->depth - 1)
			return dot ? walk(f->info, dot + 1) : f->info;
	}
	return walk(r->root, name);
}

static bool truthy(const struct tval *v)
{
	if (!v)
		return false;
	if (v->kind == TVAL_STR)
		return v->str[0] && strcmp(v->str, "0") && strcmp(v->str, "false");
	return v->nr > 0;
}

static bool eval_cond(struct render *r, const struct expr *e)
{
	const struct tval *v = resolve(r, e->name);
	bool b;

	if (e->op == CMP_NONE)
		b = truthy(v);
	else {
		bool eq = v && v->kind == TVAL_STR && !strcmp(v->str, e->literal);
		b = e->op == CMP_EQ ? eq : !eq;
	}
	return e->negate ? !b : b;
}

static void quote_string(struct strbuf *sb, const char *s, int style)
{
	/* style: 'y' YAML double-quoted, 't' TOML basic, 'j' JSON. */
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"':
			strbuf_addstr(sb, "\\\"");
			break;
		case '\\':
			strbuf_addstr(sb, "\\\\");
			break;
		case '\n':
			strbuf_addstr(sb, "\\n");
			break;
		case '\t':
			strbuf_addstr(sb, "\\t");
			break;
		case '\r':
			strbuf_addstr(sb, "\\r");
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				if (style == 'y')
					strbuf_addf(sb, "\\x%02x", c);
				else
					strbuf_addf(sb, "\\u%04x", c);
			} else if (c >= 0x80) {
				/*
				 * A C1 control (NEL among them), U+2028 or U+2029 is
				 * a line break to a YAML reader: escaped.  A byte that
				 * is not UTF-8 would make the document unreadable: U+FFFD.
				 */
				unsigned cp = 0xfffd;
				size_t k = text_utf8(s, strnlen(s, 4), &cp);
				if (k && !(cp <= 0x9f || cp == 0x2028 || cp == 0x2029)) {
					strbuf_add(sb, s, k);
				} else {
					if (!k)
						cp = 0xfffd;
					if (style == 'y' && cp <= 0xff)
						strbuf_addf(sb, "\\x%02x", cp);
					else
						strbuf_addf(sb, "\\u%04x", cp);
				}
				s += (k ? k : 1) - 1;
			} else {
				strbuf_addch(sb, (char)c);
			}
		}
	}
	strbuf_addch(sb, '"');
}

static void apply_filter(struct strbuf *sb, const char *filter)
{
	struct strbuf o = STRBUF_INIT;
	size_t i;

	if (!strcmp(filter, "yaml"))
		quote_string(&o, sb->buf, 'y');
	else if (!strcmp(filter, "toml"))
		quote_string(&o, sb->buf, 't');
	else if (!strcmp(filter, "json"))
		quote_string(&o, sb->buf, 'j');
	else if (!strcmp(filter, "sh"))
		strbuf_add_sh_quoted(&o, sb->buf);
	else {
		bool up = !strcmp(filter, "upper");
		for (i = 0; i < sb->len; i++)
			strbuf_addch(&o, up ? toupper((unsigned char)sb->buf[i])
					    : tolower((unsigned char)sb->buf[i]));
	}
	strbuf_reset(sb);
	strbuf_add(sb, o.buf, o.len);
	strbuf_release(&o);
}

static int render_list(struct render *r, const struct tnode_list *l);

static int render_node(struct render *r, const struct tnode *n)
{
	size_t i;

	switch (n->kind) {
	case TN_TEXT:
		strbuf_add(r->out, n->text, n->len);
		return 0;
	case TN_VAR: {
		const struct tval *v = resolve(r, n->e.name);
		struct strbuf val = STRBUF_INIT;
		if (!v)
			return rerr(r, n->line, n->col, "no value named '%s'", n->e.name);
		if (v->kind != TVAL_STR)
			return rerr(r, n->line, n->col, "'%s' is a %s, not a string (use a for loop)",
				    n->e.name, v->kind == TVAL_LIST ? "list" : "map");
		strbuf_addstr(&val, v->str);
		for (i = 0; i < n->nr_filters; i++)
			apply_filter(&val, n->filters[i]);
		strbuf_add(r->out, val.buf, val.len);
		strbuf_release(&val);
		return 0;
	}
	case TN_IF:
		for (i = 0; i < n->nr_branches; i++)
			if (n->branches[i].is_else || eval_cond(r, &n->branches[i].cond))
				return render_list(r, &n->branches[i].body);
		return 0;
	case TN_FOR: {
		const struct tval *list = resolve(r, n->e.name);
		struct loop_frame *f;
		int rc = 0;
		if (!list)
			return rerr(r, n->line, n->col, "no value named '%s'", n->e.name);
		if (list->kind == TVAL_STR)
			return rerr(r, n->line, n->col, "'%s' is a string, not a list", n->e.name);
		if (r->depth == ARRAY_SIZE(r->frames))
			return rerr(r, n->line, n->col, "loops nested deeper than %zu",
				    ARRAY_SIZE(r->frames));
		f = &r->frames[r->depth++];
		f->var = n->var;
		f->count = list->nr;
		f->info = tval_new_map();
		for (i = 0; i < list->nr && rc == 0; i++) {
			f->index = i;
			f->item = list->items[i];
			tval_set_strf(f->info, "index", "%zu", i + 1);
			tval_set_str(f->info, "first", i == 0 ? "true" : "");
			tval_set_str(f->info, "last", i + 1 == list->nr ? "true" : "");
			if (list->kind == TVAL_MAP)
				tval_set_str(f->info, "key", list->keys[i]);
			rc = render_list(r, &n->body);
		}
		tval_free(f->info);
		r->depth--;
		return rc;
	}
	}
	return 0;
}

static int render_list(struct render *r, const struct tnode_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (render_node(r, l->items[i]) < 0)
			return -1;
	return 0;
}

int template_render(const struct template *t, const struct tval *vars, struct strbuf *out,
		    struct error *err)
{
	struct render r = {.t = t, .root = vars, .err = err, .out = out};

	return render_list(&r, &t->root);
}

int template_render_text(const char *name, const char *text, size_t len, const struct tval *vars,
			 struct strbuf *out, struct error *err)
{
	struct template *t;
	int r;

	if (template_parse(&t, name, text, len, err) < 0)
		return -1;
	r = template_render(t, vars, out, err);
	template_free(t);
	return r;
}

/* ---- names read from the root scope ---- */

static void add_name(char ***names, size_t *nr, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < *nr; i++)
		if (strlen((*names)[i]) == len && !strncmp((*names)[i], name, len))
			return;
	*names = xrealloc(*names, (*nr + 2) * sizeof(**names));
	(*names)[(*nr)++] = xstrndup(name, len);
	(*names)[*nr] = NULL;
}

static void names_expr(const struct expr *e, const char **bound, size_t nb, char ***names,
		       size_t *nr)
{
	const char *dot;
	size_t len, i;

	if (!e->name)
		return;
	dot = strchr(e->name, '.');
	len = dot ? (size_t)(dot - e->name) : strlen(e->name);
	if (len == 4 && !strncmp(e->name, "loop", 4) && nb)
		return;
	for (i = 0; i < nb; i++)
		if (strlen(bound[i]) == len && !strncmp(bound[i], e->name, len))
			return;
	add_name(names, nr, e->name, strlen(e->name));
}

static void names_list(const struct tnode_list *l, const char **bound, size_t nb, char ***names,
		       size_t *nr)
{
	size_t i, j;

	for (i = 0; i < l->nr; i++) {
		const struct tnode *n = l->items[i];
		switch (n->kind) {
		case TN_TEXT:
			break;
		case TN_VAR:
			names_expr(&n->e, bound, nb, names, nr);
			break;
		case TN_IF:
			for (j = 0; j < n->nr_branches; j++) {
				if (!n->branches[j].is_else)
					names_expr(&n->branches[j].cond, bound, nb, names, nr);
				names_list(&n->branches[j].body, bound, nb, names, nr);
			}
			break;
		case TN_FOR: {
			const char *inner[17];
			names_expr(&n->e, bound, nb, names, nr);
			if (nb >= 16)
				break;
			if (nb)
				memcpy(inner, bound, nb * sizeof(*bound));
			inner[nb] = n->var;
			names_list(&n->body, inner, nb + 1, names, nr);
			break;
		}
		}
	}
}

void template_names(const struct template *t, char ***names, size_t *nr)
{
	names_list(&t->root, NULL, 0, names, nr);
}
