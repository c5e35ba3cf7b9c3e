/*
 * template: the small template language of templates/ and roles/NAME/templates/.
 * Documented for users in templates/README.md.
 *
 *   {{ cluster.pod_cidr }}            a value (strict: a missing one is an error)
 *   {{ node.name | yaml }}            filters: yaml, toml, json (quoted strings),
 *                                     sh (single-quoted), upper, lower
 *   {% if node.gpu %}..{% elif x == "a" %}..{% else %}..{% endif %}
 *                                     conditions: NAME, not NAME, NAME == "lit",
 *                                     NAME != "lit"; a value is true when it is
 *                                     set and not "", "0", "false" or an empty list
 *   {% for n in nodes %}..{{ n.name }}..{% endfor %}
 *                                     loop.index (from 1), loop.first, loop.last
 *   {# a comment #}
 *
 * A line holding nothing but one {% %} or {# #} tag (and blanks) produces no
 * output line, so templates read like the files they make.
 *
 * Values are a tree of strings, lists and maps (struct tval).  Rendering is
 * a pure function of the text and the values: no I/O, no globals, so it can
 * be fuzzed.  Errors name the template and the 1-based line:col.
 *
 * Ownership: a tval tree is owned by its root; tval_free() frees it all.
 * Parsed templates own their nodes.  Nothing here is shared between threads
 * unless read-only.
 */
#ifndef PROVISION_TEMPLATE_H
#define PROVISION_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

enum tval_kind { TVAL_STR, TVAL_LIST, TVAL_MAP };

struct tval {
	enum tval_kind kind;
	char *str;	     /* TVAL_STR */
	size_t nr, alloc;    /* TVAL_LIST, TVAL_MAP */
	char **keys;	     /* TVAL_MAP */
	struct tval **items; /* TVAL_LIST, TVAL_MAP */
};

struct tval *tval_new_map(void);
struct tval *tval_new_list(void);
struct tval *tval_new_str(const char *s);
void tval_free(struct tval *v);
/* Set key in a map to a copy of s (replacing any value); returns the new value. */
struct tval *tval_set_str(struct tval *map, const char *key, const char *s);
struct tval *tval_set_strf(struct tval *map, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Set key to v (taking ownership); returns v. */
struct tval *tval_set(struct tval *map, const char *key, struct tval *v);
/* Get or create a map under key. */
struct tval *tval_map_at(struct tval *map, const char *key);
/* Append v (taking ownership) to a list; returns v. */
struct tval *tval_push(struct tval *list, struct tval *v);
/* Look a dotted name up ("node.gpus.0.model" indexes lists too); NULL when absent. */
const struct tval *tval_lookup(const struct tval *root, const char *dotted);
/* A deep copy. */
struct tval *tval_copy(const struct tval *v);

struct template;

/*
 * Parse `text` (len bytes) named `name` (for messages).  Returns 0 with *out
 * set, or -1 with "NAME:LINE:COL: message" in err.
 */
int template_parse(struct template **out, const char *name, const char *text, size_t len,
		   struct error *err);
void template_free(struct template *t);

/*
 * Render with `vars` as the root scope, appending to out.  Returns 0, or -1
 * with "NAME:LINE:COL: message" in err (missing value, a list where a string
 * is needed, an unknown filter); out then holds a partial result.
 */
int template_render(const struct template *t, const struct tval *vars, struct strbuf *out,
		    struct error *err);

/*
 * The top-level names the template reads from the root scope (loop
 * variables excluded), for checking a role's declared variables before any
 * node is touched.  Appends NUL-terminated names to *names (NULL-terminated
 * array, caller frees each and the array).
 */
void template_names(const struct template *t, char ***names, size_t *nr);

/* Parse and render in one call. */
int template_render_text(const char *name, const char *text, size_t len, const struct tval *vars,
			 struct strbuf *out, struct error *err);

#endif
