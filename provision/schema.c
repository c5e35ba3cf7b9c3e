/*
 * schema: see schema.h.  The only file that parses YAML.
 *
 * Carved out of the inventory's reader: the words of its messages are the
 * inventory's, which tests/inventory/ pins.
 */
#include "schema.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Words people write for one of ours; checked before edit distance. */
struct alias {
	const char *alias, *word;
};

static const struct alias aliases[] = {
    {"host", "address"},
    {"hostname", "address"},
    {"ip", "address"},
    {"addr", "address"},
    {"role", "roles"},
    {"gpu", "gpus"},
    {"gpu_share", "gpu_sharing"},
    {"time_slicing", "gpu_sharing"},
    {"replicas", "gpu_sharing"},
    {"username", "user"},
    {"login", "user"},
    {"key", "identity"},
    {"identity_file", "identity"},
    {"private_key", "identity"},
    {"ssh_key", "identity"},
    {"user_known_hosts_file", "known_hosts"},
    {"strict_host_key_checking", "host_keys"},
    {"proxy_jump", "jump"},
    {"jump_host", "jump"},
    {"bastion", "jump"},
    {"version", "kubernetes_version"},
    {"k8s_version", "kubernetes_version"},
    {"pod_network_cidr", "pod_cidr"},
    {"pod_subnet", "pod_cidr"},
    {"service_subnet", "service_cidr"},
    {"proxy", "http_proxy"},
    {"https_proxy", "http_proxy"},
    {"admins", "admin_users"},
    {"users", "allowed_users"},
    {"chart", "chart_version"},
    {"authenticator", "auth"},
    {"network", "export_network"},
    {"master", "control-plane"},
    {"controlplane", "control-plane"},
    {"nfs", "nfs-server"},
    {"storage", "nfs-server"},
    {"compute", "worker"},
    {"gpu-worker", "worker"},
};

static bool only_digits_differ(const char *a, const char *b)
{
	bool differ = false;

	for (; *a && *b; a++, b++) {
		if (*a == *b)
			continue;
		if (*a < '0' || *a > '9' || *b < '0' || *b > '9')
			return false;
		differ = true;
	}
	return differ && !*a && !*b;
}

/*
 * The word of `words` that `w` most likely meant, or NULL.  Edit distance
 * counts a swap of two letters as two, so short words get one edit and
 * longer ones two.
 */
const char *schema_suggest(const char *w, const char *const *words, size_t nr)
{
	size_t i, j, best_d = (size_t)-1, len = strlen(w);
	size_t limit = len >= 4 ? 2 : 1;
	const char *best = NULL;

	for (i = 0; i < ARRAY_SIZE(aliases); i++)
		if (!strcasecmp(w, aliases[i].alias))
			for (j = 0; j < nr; j++)
				if (!strcmp(words[j], aliases[i].word))
					return words[j];
	for (j = 0; j < nr; j++)
		if (!strcasecmp(w, words[j]))
			return words[j];
	for (j = 0; j < nr; j++) {
		size_t d = edit_distance(w, words[j]);
		if (only_digits_differ(w, words[j]))
			continue; /* "b-5" is not a typo of "b-0" */
		if (d < best_d) {
			best_d = d;
			best = words[j];
		}
	}
	if (best && best_d <= limit && best_d < len && best_d < strlen(best))
		return best;
	return NULL;
}

void schema_join_words(struct strbuf *sb, const char *const *words, size_t nr, const char *last)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		if (i)
			strbuf_addstr(sb, i + 1 == nr ? last : ", ");
		strbuf_addstr(sb, words[i]);
	}
}

struct source_pos schema_pos(const yaml_node_t *n)
{
	return (struct source_pos){(unsigned)n->start_mark.line + 1,
				   (unsigned)n->start_mark.column + 1};
}

void schema_report(struct schema *s, enum diag_level level, struct source_pos pos, const char *hint,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(s->dl, level, s->file, pos.line, pos.col, hint, fmt, ap);
	va_end(ap);
}

void schema_error(struct schema *s, const yaml_node_t *n, const char *hint, const char *fmt, ...)
{
	struct source_pos pos = n ? schema_pos(n) : (struct source_pos){0, 0};
	va_list ap;

	va_start(ap, fmt);
	diag_vadd(s->dl, DIAG_ERROR, s->file, pos.line, pos.col, hint, fmt, ap);
	va_end(ap);
}

yaml_node_t *schema_node(struct schema *s, int id)
{
	return yaml_document_get_node(&s->doc, id);
}

const char *schema_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

bool schema_is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool schema_is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	size_t i;

	if (n->type != YAML_SCALAR_NODE)
		return false;
	if (n->tag && !strcmp((const char *)n->tag, YAML_NULL_TAG))
		return true;
	if (!schema_is_plain(n))
		return false;
	for (i = 0; i < ARRAY_SIZE(nulls); i++)
		if (!strcmp(schema_scalar(n), nulls[i]))
			return true;
	return false;
}

/* What the value is, for "must be X, not Y" messages. */
const char *schema_describe(const yaml_node_t *n, char *buf, size_t size)
{
	const char *v;
	size_t len;

	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (schema_is_null(n))
		return "empty";
	v = schema_scalar(n);
	len = strcspn(v, "\n");
	if (len > 40)
		snprintf(buf, size, "'%.37s...'", v);
	else
		snprintf(buf, size, "'%.*s'", (int)len, v);
	return buf;
}

bool schema_want_type(struct schema *s, const yaml_node_t *n, const char *key,
		      yaml_node_type_t type, const char *hint)
{
	char buf[64];
	const char *what = type == YAML_MAPPING_NODE	? "a mapping"
			   : type == YAML_SEQUENCE_NODE ? "a list"
							: "a single value";

	if (schema_is_null(n) && type != YAML_SCALAR_NODE) {
		schema_error(s, n, hint, "'%s' has no value; it must be %s", key, what);
		return false;
	}
	if (n->type == type)
		return true;
	if (type == YAML_SEQUENCE_NODE && n->type == YAML_SCALAR_NODE && !hint) {
		char h[160];
		snprintf(h, sizeof(h), "write [%.100s] for a list of one", schema_scalar(n));
		schema_error(s, n, h, "'%s' must be a list, not %s", key,
			     schema_describe(n, buf, sizeof(buf)));
		return false;
	}
	schema_error(s, n, hint, "'%s' must be %s, not %s", key, what,
		     schema_describe(n, buf, sizeof(buf)));
	return false;
}

/*
 * The text of a scalar for a string setting.  NULL (after reporting) when
 * the value is missing, not a scalar, or holds control characters.
 */
const char *schema_text(struct schema *s, const yaml_node_t *n, const char *key)
{
	const char *v;
	size_t i;

	if (!schema_want_type(s, n, key, YAML_SCALAR_NODE, NULL))
		return NULL;
	if (schema_is_null(n)) {
		schema_error(s, n, "remove the key to use the default", "'%s' has no value", key);
		return NULL;
	}
	v = schema_scalar(n);
	if (strlen(v) != n->data.scalar.length) {
		schema_error(s, n, NULL, "'%s' contains a NUL character", key);
		return NULL;
	}
	for (i = 0; v[i]; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			schema_error(s, n, NULL, "'%s' contains a control character", key);
			return NULL;
		}
	return v;
}

bool schema_str(struct schema *s, const yaml_node_t *n, const char *key, char **dst)
{
	const char *v = schema_text(s, n, key);

	if (!v)
		return false;
	free(*dst);
	*dst = xstrdup(v);
	return true;
}

bool schema_parse_decimal(const char *s, long *out)
{
	const char *d = s + (*s == '-' || *s == '+');
	char *end;

	if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 9)
		return false;
	*out = strtol(s, &end, 10);
	return true;
}

bool schema_int(struct schema *s, const yaml_node_t *n, const char *key, int lo, int hi, int *dst)
{
	char buf[64], range[64];
	long v;

	if (lo == 0 && hi == INT_MAX)
		snprintf(range, sizeof(range), "a non-negative integer");
	else if (hi == INT_MAX)
		snprintf(range, sizeof(range), "an integer of at least %d", lo);
	else
		snprintf(range, sizeof(range), "an integer from %d to %d", lo, hi);
	if (n->type != YAML_SCALAR_NODE || schema_is_null(n)) {
		schema_error(s, n, NULL, "'%s' must be %s, not %s", key, range,
			     schema_describe(n, buf, sizeof(buf)));
		return false;
	}
	if (!schema_parse_decimal(schema_scalar(n), &v) || v < lo || v > hi) {
		schema_error(s, n, NULL, "'%s' must be %s, not %s", key, range,
			     schema_describe(n, buf, sizeof(buf)));
		return false;
	}
	if (!schema_is_plain(n)) {
		schema_error(s, n, "remove the quotes: a quoted value is a string in YAML",
			     "'%s' must be %s, not the string %s", key, range,
			     schema_describe(n, buf, sizeof(buf)));
		return false;
	}
	*dst = (int)v;
	return true;
}

bool schema_bool(struct schema *s, const yaml_node_t *n, const char *key, bool *dst)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	char buf[64];
	size_t i;

	if (n->type == YAML_SCALAR_NODE && !schema_is_null(n)) {
		for (i = 0; i < ARRAY_SIZE(yes); i++) {
			bool match =
			    !strcmp(schema_scalar(n), yes[i]) || !strcmp(schema_scalar(n), no[i]);
			if (match && !schema_is_plain(n)) {
				schema_error(
				    s, n, "remove the quotes: a quoted value is a string in YAML",
				    "'%s' must be true or false, not the string %s", key,
				    schema_describe(n, buf, sizeof(buf)));
				return false;
			}
			if (match) {
				*dst = !strcmp(schema_scalar(n), yes[i]);
				return true;
			}
		}
	}
	schema_error(s, n, "write true or false", "'%s' must be true or false, not %s", key,
		     schema_describe(n, buf, sizeof(buf)));
	return false;
}

/* One of `names` (index into *dst); a near miss gets "did you mean". */
bool schema_choice(struct schema *s, const yaml_node_t *n, const char *key,
		   const char *const *names, size_t nr, const char *hint, int *dst)
{
	struct strbuf choices = STRBUF_INIT;
	const char *v = schema_text(s, n, key), *near;
	size_t i;

	if (!v)
		return false;
	for (i = 0; i < nr; i++)
		if (!strcmp(v, names[i])) {
			*dst = (int)i;
			return true;
		}
	schema_join_words(&choices, names, nr, " or ");
	near = schema_suggest(v, names, nr);
	if (near)
		schema_error(s, n, NULL, "'%s' must be %s, not '%s' (did you mean '%s'?)", key,
			     choices.buf, v, near);
	else
		schema_error(s, n, hint, "'%s' must be %s, not '%s'", key, choices.buf, v);
	strbuf_release(&choices);
	return false;
}


/* An item of a list that must be a string; NULL after reporting. */
const char *schema_item_text(struct schema *s, const yaml_node_t *c, const char *key)
{
	char buf[64];

	if (c->type != YAML_SCALAR_NODE) {
		schema_error(s, c, NULL, "items of '%s' must be single values, not %s", key,
			     schema_describe(c, buf, sizeof(buf)));
		return NULL;
	}
	if (schema_is_null(c)) {
		schema_error(s, c, NULL, "an item of '%s' is empty", key);
		return NULL;
	}
	return schema_text(s, c, key);
}

const char *schema_nonempty(struct schema *s, const yaml_node_t *n, const char *key)
{
	char buf[64];
	const char *v = schema_scalar(n);

	if (!v || !*v || schema_is_null(n)) {
		schema_error(s, n, NULL, "'%s' must be a non-empty string, not %s", key,
			     schema_describe(n, buf, sizeof(buf)));
		return NULL;
	}
	if (strlen(v) != n->data.scalar.length) {
		schema_error(s, n, NULL, "'%s' contains a NUL character", key);
		return NULL;
	}
	return v;
}

/* A list of strings (words: of non-empty ones; no items: NULL); duplicates warned, dropped. */
static bool str_list(struct schema *s, const yaml_node_t *n, const char *key, bool words,
		     char ***dst)
{
	char **out = NULL;
	size_t nr = 0, alloc = 0, j;
	yaml_node_item_t *it;
	bool ok = true;

	if (words && (schema_is_null(n) || (n->type == YAML_SCALAR_NODE && !*schema_scalar(n)))) {
		strv_free(*dst); /* `key:` with nothing: no items */
		*dst = NULL;
		return true;
	}
	if (!schema_want_type(s, n, key, YAML_SEQUENCE_NODE, NULL))
		return false;
	ALLOC_GROW(out, 1, alloc);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = schema_node(s, *it);
		const char *v = schema_item_text(s, c, key);

		if (v && words && !*v) {
			schema_error(s, c, NULL, "an item of '%s' is empty", key);
			v = NULL;
		}
		if (!v) {
			ok = false;
			continue;
		}
		for (j = 0; j < nr; j++)
			if (!strcmp(out[j], v))
				break;
		if (j < nr) {
			schema_report(s, DIAG_WARNING, schema_pos(c), NULL,
				      "'%s' is listed twice in '%s'", v, key);
			continue;
		}
		ALLOC_GROW(out, nr + 2, alloc);
		out[nr++] = xstrdup(v);
	}
	out[nr] = NULL;
	if (words && !nr) { /* no names: NULL, as for `key:` */
		free(out);
		out = NULL;
	}
	strv_free(*dst);
	*dst = out;
	return ok;
}

bool schema_str_list(struct schema *s, const yaml_node_t *n, const char *key, char ***dst)
{
	return str_list(s, n, key, false, dst);
}

bool schema_word_list(struct schema *s, const yaml_node_t *n, const char *key, char ***dst)
{
	return str_list(s, n, key, true, dst);
}

static bool secret_like(const char *key)
{
	static const char *const words[] = {"secret", "password", "passwd", "token"};
	size_t i, len = strlen(key);

	if (len > 5 && !strcmp(key + len - 5, "_file"))
		return false;
	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (strcasestr(key, words[i]))
			return true;
	return false;
}

void schema_map_fields(struct schema *s, const yaml_node_t *map, const char *section,
		       const char *const *keys, size_t nr, struct schema_fields *f)
{
	yaml_node_pair_t *pair = NULL;
	yaml_node_t *k, *v;
	size_t i;

	assert(nr <= SCHEMA_MAX_KEYS);
	*f = (struct schema_fields){0};
	while (schema_next_pair(s, map, &pair, &k, &v)) {
		char buf[64];
		const char *name, *near;

		if (k->type != YAML_SCALAR_NODE || schema_is_null(k)) {
			schema_error(s, k, NULL, "keys in %s must be names, not %s", section,
				     schema_describe(k, buf, sizeof(buf)));
			continue;
		}
		name = schema_scalar(k);
		for (i = 0; i < nr; i++)
			if (!strcmp(name, keys[i]))
				break;
		if (i < nr) {
			f->key[i] = k;
			f->val[i] = v;
			continue;
		}
		if (!strcmp(name, "<<")) {
			schema_error(s, k,
				     "write the keys out, or share a whole value with an alias "
				     "(roles: *workers)",
				     "YAML merge keys ('<<') are not supported");
			f->suggested = ~0u; /* the merge may have held any key */
			continue;
		}
		/* Top-level x-* keys hold anchors for the rest of the file. */
		if (!strncmp(name, "x-", 2) && map == schema_root(s))
			continue;
		if (s->secrets_in && secret_like(name)) {
			char *with_file = xasprintf("%s_file", name);
			char *hint = NULL;
			for (i = 0; i < nr; i++)
				if (!strcmp(with_file, keys[i]))
					break;
			if (i < nr) {
				hint =
				    xasprintf("put the secret in a file only you can read and set "
					      "'%s' to its path",
					      with_file);
				f->suggested |= 1u << i;
			} else {
				hint = xasprintf("keep secrets out of %s: it is recorded with "
						 "every run",
						 s->secrets_in);
			}
			schema_error(s, k, hint, "secret '%s' must not be written in %s", name,
				     s->secrets_in);
			free(hint);
			free(with_file);
			continue;
		}
		near = schema_unknown_key(s, k, section, keys, nr);
		for (i = 0; near && i < nr; i++)
			if (keys[i] == near)
				f->suggested |= 1u << i;
	}
}

const char *schema_unknown_key(struct schema *s, const yaml_node_t *k, const char *section,
			       const char *const *keys, size_t nr)
{
	const char *name = schema_scalar(k) ? schema_scalar(k) : "";
	const char *near = schema_suggest(name, keys, nr);

	if (near) {
		schema_error(s, k, NULL, "unknown key '%s' (did you mean '%s'?)", name, near);
	} else {
		struct strbuf hint = STRBUF_INIT;
		strbuf_addf(&hint, "%s takes ", section);
		schema_join_words(&hint, keys, nr, " and ");
		schema_error(s, k, hint.buf, "unknown key '%s' in %s", name, section);
		strbuf_release(&hint);
	}
	return near;
}

void schema_require(struct schema *s, const struct schema_fields *f, const char *const *keys,
		    size_t idx, struct source_pos where, const char *section)
{
	/* A misspelt key was reported already, with this one as the suggestion. */
	if (f->val[idx] || (f->suggested & (1u << idx)))
		return;
	schema_report(s, DIAG_ERROR, where, NULL, "missing required key '%s' in %s", keys[idx],
		      section);
}

/* 1-based line and column of a byte offset (for reader errors, which have no mark). */
static struct source_pos offset_pos(const char *data, size_t len, size_t off)
{
	struct source_pos pos = {1, 1};
	size_t i;

	for (i = 0; i < off && i < len; i++) {
		if (data[i] == '\n') {
			pos.line++;
			pos.col = 1;
		} else if (((unsigned char)data[i] & 0xc0) != 0x80) {
			pos.col++;
		}
	}
	return pos;
}

static bool line_indented_with_tab(const char *data, size_t len, unsigned line)
{
	size_t i = 0;
	unsigned l = 1;

	while (i < len && l < line)
		if (data[i++] == '\n')
			l++;
	while (i < len && data[i] == ' ')
		i++;
	return i < len && data[i] == '\t';
}

static void report_yaml_error(struct schema *s, const yaml_parser_t *yp, const char *data,
			      size_t len)
{
	struct source_pos pos;
	const char *problem = yp->problem ? yp->problem : "unknown error";

	switch (yp->error) {
	case YAML_MEMORY_ERROR:
		die("out of memory parsing '%s'", s->file);
	case YAML_READER_ERROR: {
		size_t off = yp->problem_offset;
		/* A bad continuation byte: point at the character it was to continue. */
		if (strstr(problem, "trailing")) {
			while (off > 0 && off <= len &&
			       ((unsigned char)data[off - 1] & 0xc0) == 0x80)
				off--;
			if (off > 0 && off <= len && (unsigned char)data[off - 1] >= 0xc0)
				off--;
		}
		pos = offset_pos(data, len, off);
		schema_report(s, DIAG_ERROR, pos, "save the file as UTF-8", "invalid YAML: %s",
			      problem);
		return;
	}
	default:
		break;
	}
	pos = (struct source_pos){(unsigned)yp->problem_mark.line + 1,
				  (unsigned)yp->problem_mark.column + 1};
	if (yp->context)
		schema_report(s, DIAG_ERROR, pos,
			      line_indented_with_tab(data, len, pos.line)
				  ? "indent with spaces: YAML does not allow tabs"
				  : NULL,
			      "invalid YAML: %s (%s at %u:%u)", problem, yp->context,
			      (unsigned)yp->context_mark.line + 1,
			      (unsigned)yp->context_mark.column + 1);
	else
		schema_report(s, DIAG_ERROR, pos,
			      line_indented_with_tab(data, len, pos.line)
				  ? "indent with spaces: YAML does not allow tabs"
				  : NULL,
			      "invalid YAML: %s", problem);
}

/* Repeated keys --------------------------------------------------------------- */

struct key_ref {
	const yaml_node_t *key;	      /* compared by length and bytes: a name may hold a NUL */
	const yaml_node_pair_t *pair; /* pairs of one mapping grow in file order */
};

static int cmp_key_name(const yaml_node_t *x, const yaml_node_t *y)
{
	size_t lx = x->data.scalar.length, ly = y->data.scalar.length;
	int c = memcmp(x->data.scalar.value, y->data.scalar.value, lx < ly ? lx : ly);

	return c ? c : (lx > ly) - (lx < ly);
}

static int cmp_key_ref(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int c = cmp_key_name(x->key, y->key);

	if (c)
		return c;
	return (x->pair > y->pair) - (x->pair < y->pair);
}

static int cmp_repeat(const void *a, const void *b)
{
	const struct schema_repeat *x = a, *y = b;

	return (x->pair > y->pair) - (x->pair < y->pair);
}

/* Find the repeated keys of every mapping of the document (sorted: n log n per mapping). */
static void index_repeated_keys(struct schema *s)
{
	yaml_node_t *n;
	struct key_ref *refs = NULL;
	size_t alloc = 0, alloc_repeats = 0;

	for (n = s->doc.nodes.start; n < s->doc.nodes.top; n++) {
		yaml_node_pair_t *pair;
		size_t nr = 0, i, j;

		if (n->type != YAML_MAPPING_NODE)
			continue;
		for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
			const yaml_node_t *k = schema_node(s, pair->key);
			if (!k || k->type != YAML_SCALAR_NODE || schema_is_null(k))
				continue; /* no name: reported by the walker, not compared */
			ALLOC_GROW(refs, nr + 1, alloc);
			refs[nr++] = (struct key_ref){k, pair};
		}
		if (nr < 2)
			continue;
		qsort(refs, nr, sizeof(*refs), cmp_key_ref);
		for (i = 0; i < nr; i = j)
			for (j = i + 1; j < nr && !cmp_key_name(refs[j].key, refs[i].key); j++) {
				ALLOC_GROW(s->repeats, s->nr_repeats + 1, alloc_repeats);
				s->repeats[s->nr_repeats++] =
				    (struct schema_repeat){refs[j].pair, refs[i].pair->key};
			}
	}
	free(refs);
	if (s->nr_repeats > 1) /* qsort's array must not be NULL, even empty */
		qsort(s->repeats, s->nr_repeats, sizeof(*s->repeats), cmp_repeat);
}

const yaml_node_t *schema_repeat_of(struct schema *s, const yaml_node_pair_t *pair)
{
	struct schema_repeat key = {pair, 0}, *r;

	if (!s->nr_repeats)
		return NULL;
	r = bsearch(&key, s->repeats, s->nr_repeats, sizeof(*s->repeats), cmp_repeat);
	return r ? schema_node(s, r->first_key) : NULL;
}

/* Is `pair` a repeat of a key before it in its mapping?  Reported when it is. */
static bool pair_repeated(struct schema *s, const yaml_node_pair_t *pair)
{
	const yaml_node_t *k, *first = schema_repeat_of(s, pair);
	struct source_pos at;

	if (!first)
		return false;
	k = schema_node(s, pair->key);
	at = schema_pos(first);
	schema_error(s, k, "remove one of them", "duplicate key '%s' (first at %u:%u)",
		     schema_scalar(k), at.line, at.col);
	return true;
}

bool schema_next_pair(struct schema *s, const yaml_node_t *map, yaml_node_pair_t **pair,
		      yaml_node_t **k, yaml_node_t **v)
{
	yaml_node_pair_t *p;

	assert(map->type == YAML_MAPPING_NODE);
	for (p = *pair ? *pair + 1 : map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		if (pair_repeated(s, p))
			continue;
		*pair = p;
		*k = schema_node(s, p->key);
		*v = schema_node(s, p->value);
		return true;
	}
	*pair = p;
	return false;
}

yaml_node_t *schema_get(struct schema *s, const yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *p;

	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = schema_scalar(schema_node(s, p->key));
		if (k && !strcmp(k, key))
			return schema_node(s, p->value);
	}
	return NULL;
}

size_t schema_check_duplicates(struct schema *s)
{
	yaml_node_t *n;
	yaml_node_pair_t *pair;
	size_t nr = 0;

	if (!s->nr_repeats)
		return 0;
	for (n = s->doc.nodes.start; n < s->doc.nodes.top; n++)
		if (n->type == YAML_MAPPING_NODE)
			for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top;
			     pair++)
				nr += pair_repeated(s, pair);
	return nr;
}

/* Loading ---------------------------------------------------------------------- */

int schema_load(struct schema *s, const char *file, const char *data, size_t len,
		struct diag_list *dl)
{
	*s = (struct schema){.file = file, .dl = dl};
	if (!yaml_parser_initialize(&s->parser))
		die("out of memory starting the YAML parser");
	s->have_parser = true;
	s->data = data;
	s->len = len;
	yaml_parser_set_input_string(&s->parser, (const unsigned char *)data, len);
	if (!yaml_parser_load(&s->parser, &s->doc)) {
		report_yaml_error(s, &s->parser, data, len);
		return -1;
	}
	s->have_doc = true;
	index_repeated_keys(s);
	return 0;
}

int schema_one_document(struct schema *s, const char *what)
{
	yaml_document_t extra;
	yaml_node_t *root2;
	int ret = 0;

	if (!yaml_parser_load(&s->parser, &extra)) {
		report_yaml_error(s, &s->parser, s->data, s->len);
		return -1;
	}
	root2 = yaml_document_get_root_node(&extra);
	if (root2) {
		char *hint = xasprintf("keep the whole %s in one document", what);
		schema_report(s, DIAG_ERROR, schema_pos(root2), hint,
			      "the %s has a second YAML document", what);
		free(hint);
		ret = 1;
	}
	yaml_document_delete(&extra);
	return ret;
}

void schema_release(struct schema *s)
{
	if (s->have_doc)
		yaml_document_delete(&s->doc);
	if (s->have_parser)
		yaml_parser_delete(&s->parser);
	free(s->repeats);
	s->repeats = NULL;
	s->nr_repeats = 0;
	s->have_doc = s->have_parser = false;
}

yaml_node_t *schema_root(struct schema *s)
{
	return s->have_doc ? yaml_document_get_root_node(&s->doc) : NULL;
}
