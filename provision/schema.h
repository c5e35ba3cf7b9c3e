/*
 * schema: the one YAML reader of the files people write -- the inventory,
 * role.yaml, roles/kubernetes.yaml, roles/artifacts.yaml and a kubeconfig.
 *
 * schema_load() parses the text into one libyaml document (a tree with
 * marks) and reports a syntax error as `file:line:col: invalid YAML: ...`.
 * The walkers of each file then read it with the getters below, which
 * report every mistake to the diag list (diag.h) at the 1-based line and
 * column of the node, in the same words everywhere ("'KEY' must be ...,
 * not ...", "unknown key 'K' (did you mean 'L'?)"), and carry on, so that
 * one run shows every mistake.
 *
 * A key given twice in one mapping is an error wherever it is: the walkers
 * go through a mapping with schema_next_pair(), which reports the second
 * one ("duplicate key 'K' (first at L:C)", hint "remove one of them") and
 * skips it, so the first is the one read and nothing is read twice.  Which
 * keys repeat is found once per document at load (sorted, not pairwise), so
 * a mapping of many keys costs n log n, and each pair a binary search.
 *
 * This is the only module that parses YAML; it includes <yaml.h> for its
 * callers, who read the node types (yaml_node_t) directly.
 *
 * Ownership: struct schema owns the document; schema_release() frees it.
 * Strings returned by the getters point into the document unless said.
 * Threading: one schema belongs to one thread.
 */
#ifndef PROVISION_SCHEMA_H
#define PROVISION_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "diag.h"
#include "util.h"

/* At most this many known keys in one schema_map_fields() call. */
#define SCHEMA_MAX_KEYS 16

struct schema {
	const char *file;     /* the name diagnostics carry */
	struct diag_list *dl; /* where problems go */
	/*
	 * When set, a key that looks like a secret (password, token, ...) is
	 * refused by schema_map_fields() as "secret 'K' must not be written in
	 * <secrets_in>" ("the inventory").
	 */
	const char *secrets_in;
	yaml_parser_t parser;
	yaml_document_t doc;
	bool have_parser, have_doc;
	const char *data; /* the text, for positions of reader errors */
	size_t len;
	/* The pairs whose key an earlier pair of their mapping has, sorted by address. */
	struct schema_repeat {
		const yaml_node_pair_t *pair;
		int first_key; /* the node of the first one */
	} * repeats;
	size_t nr_repeats;
};

/*
 * Parse the first YAML document of data[0..len) into s (which is zeroed
 * first) for `file`, reporting to dl.  Returns 0, or -1 after reporting a
 * syntax error or bad UTF-8 at its position ("invalid YAML: ...").  Call
 * schema_release() either way.
 */
int schema_load(struct schema *s, const char *file, const char *data, size_t len,
		struct diag_list *dl);
/*
 * After schema_load(): report a second document in the text as "the WHAT
 * has a second YAML document" (hint "keep the whole WHAT in one document"),
 * or a syntax error in it.  Returns 0 when there is none, 1 after
 * reporting a second document (the first can still be walked), -1 after
 * a syntax error.
 */
int schema_one_document(struct schema *s, const char *what);
void schema_release(struct schema *s);

/* The root node; NULL for an empty text. */
yaml_node_t *schema_root(struct schema *s);
/* The node of an id of the document (a pair's key or value, a sequence item). */
yaml_node_t *schema_node(struct schema *s, int id);

/*
 * Go through the pairs of mapping `map`: start with *pair NULL; each call
 * sets *pair, *k and *v to the next pair whose key was not given before in
 * the mapping and returns true; false at the end.  A repeated key is
 * reported (see the top) and skipped.
 */
bool schema_next_pair(struct schema *s, const yaml_node_t *map, yaml_node_pair_t **pair,
		      yaml_node_t **k, yaml_node_t **v);
/* The value of `key` in mapping `map` (the first when given twice); NULL when none. */
yaml_node_t *schema_get(struct schema *s, const yaml_node_t *map, const char *key);
/* The first key of the mapping that `pair` repeats, or NULL; reports nothing. */
const yaml_node_t *schema_repeat_of(struct schema *s, const yaml_node_pair_t *pair);
/*
 * Report every repeated key of every mapping in the document at once (for
 * a reader that looks keys up instead of walking).  Returns their number.
 */
size_t schema_check_duplicates(struct schema *s);

/* Position of a node, 1-based. */
struct source_pos schema_pos(const yaml_node_t *n);
void schema_report(struct schema *s, enum diag_level level, struct source_pos pos, const char *hint,
		   const char *fmt, ...) PRINTF_LIKE(5, 6);
/* An error at node n (NULL: no position). */
void schema_error(struct schema *s, const yaml_node_t *n, const char *hint, const char *fmt, ...)
    PRINTF_LIKE(4, 5);

/* The text of a scalar node; NULL for n NULL or not a scalar. */
const char *schema_scalar(const yaml_node_t *n);
bool schema_is_plain(const yaml_node_t *n);
/* A scalar that YAML reads as null: empty, ~, null, or tagged !!null. */
bool schema_is_null(const yaml_node_t *n);
/* What the value is, for "must be X, not Y" messages: "a mapping", "'text'", ... */
const char *schema_describe(const yaml_node_t *n, char *buf, size_t size);

/*
 * Typed getters for the value n of `key`.  Each reports what is wrong
 * ("'key' must be ..., not ...") and returns false (NULL) without touching
 * *dst, or stores the value.  Strings stored are the caller's (freeing the
 * old *dst); schema_text's points into the document.
 */
bool schema_want_type(struct schema *s, const yaml_node_t *n, const char *key,
		      yaml_node_type_t type, const char *hint);
const char *schema_text(struct schema *s, const yaml_node_t *n, const char *key);
bool schema_str(struct schema *s, const yaml_node_t *n, const char *key, char **dst);
bool schema_int(struct schema *s, const yaml_node_t *n, const char *key, int lo, int hi, int *dst);
bool schema_bool(struct schema *s, const yaml_node_t *n, const char *key, bool *dst);
/* One of names[0..nr) (its index in *dst); a near miss gets "did you mean". */
bool schema_choice(struct schema *s, const yaml_node_t *n, const char *key,
		   const char *const *names, size_t nr, const char *hint, int *dst);
/* An item of list `key` that must be a string. */
const char *schema_item_text(struct schema *s, const yaml_node_t *c, const char *key);
/* A list of strings, NULL-terminated; an item listed twice is warned about and dropped. */
bool schema_str_list(struct schema *s, const yaml_node_t *n, const char *key, char ***dst);
/*
 * The same for a list of names (role.yaml's depends_on, applies_to, ...):
 * no items (`[]`, or `key:` with nothing) stores NULL, and an empty item is
 * an error ("an item of 'KEY' is empty").
 */
bool schema_word_list(struct schema *s, const yaml_node_t *n, const char *key, char ***dst);
/*
 * A string that must not be empty (a name, a path, a sentence): its text,
 * or NULL after "'KEY' must be a non-empty string, not X".  Unlike
 * schema_text(), line breaks and tabs are kept (a description may be a
 * folded block).
 */
const char *schema_nonempty(struct schema *s, const yaml_node_t *n, const char *key);

/* A decimal integer of at most 9 digits with an optional sign. */
bool schema_parse_decimal(const char *s, long *out);
/* The word of words[0..nr) that `w` most likely meant (a typo or a known alias), or NULL. */
const char *schema_suggest(const char *w, const char *const *words, size_t nr);
/* "a, b and c" (last: " and " or " or "). */
void schema_join_words(struct strbuf *sb, const char *const *words, size_t nr, const char *last);

/*
 * The known keys of one mapping, read by schema_map_fields(): val[i] is
 * the value of keys[i] (key[i] its key node), NULL when absent.
 */
struct schema_fields {
	yaml_node_t *key[SCHEMA_MAX_KEYS];
	yaml_node_t *val[SCHEMA_MAX_KEYS];
	unsigned suggested; /* bit i: an unknown key was taken for keys[i] */
};

/*
 * Sort the pairs of `map` into f by the names in keys[0..nr).  Reports keys
 * that are not names, repeated keys, YAML merge keys, secrets (see
 * secrets_in) and unknown keys "in SECTION" with a suggestion; `x-` keys of
 * the document's top mapping are skipped (they hold anchors).
 */
void schema_map_fields(struct schema *s, const yaml_node_t *map, const char *section,
		       const char *const *keys, size_t nr, struct schema_fields *f);
/*
 * Report key node k, which is none of keys[0..nr), as schema_map_fields()
 * does: "unknown key 'K' (did you mean 'L'?)", or "unknown key 'K' in
 * SECTION" with the hint "SECTION takes A, B and C".  Returns L or NULL.
 */
const char *schema_unknown_key(struct schema *s, const yaml_node_t *k, const char *section,
			       const char *const *keys, size_t nr);
/* "missing required key 'keys[idx]' in SECTION" at `where`, unless present or misspelt. */
void schema_require(struct schema *s, const struct schema_fields *f, const char *const *keys,
		    size_t idx, struct source_pos where, const char *section);

#endif
