/* exchange: see exchange.h. */
#include "exchange.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FROM_PROVISION SIZE_MAX

struct entry {
	size_t from;		 /* the sending node, or FROM_PROVISION (exchange_give) */
	const struct role *role; /* NULL: given by provision */
	enum role_hand_to to;
	char *name;   /* without @NODE */
	char *target; /* to: node: the NODE of NAME@NODE */
	char *value;
	size_t value_len;
	bool secret, published;
	size_t given_to; /* FROM_PROVISION: the node it was given to; else SIZE_MAX */
};

struct claim {
	char *name;
	size_t from;
};

struct exchange {
	pthread_mutex_t lock;
	const struct inventory *inv;
	const struct node *const *nodes;
	size_t nr;
	struct secrets *secrets;
	struct entry *entries;
	size_t nr_entries, alloc_entries;
	struct claim *claims;
	size_t nr_claims, alloc_claims;
};

struct exchange *exchange_new(const struct inventory *inv, const struct node *const *nodes,
			      size_t nr, struct secrets *secrets)
{
	struct exchange *x = xcalloc(1, sizeof(*x));

	pthread_mutex_init(&x->lock, NULL);
	x->inv = inv;
	x->nodes = nodes;
	x->nr = nr;
	x->secrets = secrets;
	return x;
}

static void entry_wipe(struct entry *e)
{
	if (e->value)
		explicit_bzero(e->value, e->value_len);
	free(e->value);
	e->value = NULL;
}

void exchange_free(struct exchange *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->nr_entries; i++) {
		entry_wipe(&x->entries[i]);
		free(x->entries[i].name);
		free(x->entries[i].target);
	}
	free(x->entries);
	for (i = 0; i < x->nr_claims; i++)
		free(x->claims[i].name);
	free(x->claims);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* Keep a value (lock held): replaces the same sender's, role's, name's and target's. */
static void keep(struct exchange *x, const struct entry *proto, const char *value, size_t len)
{
	struct entry *e = NULL;
	size_t i;

	for (i = 0; i < x->nr_entries && !e; i++) {
		struct entry *o = &x->entries[i];
		if (o->from == proto->from && o->role == proto->role &&
		    o->given_to == proto->given_to && !strcmp(o->name, proto->name) &&
		    !o->target == !proto->target &&
		    (!o->target || !strcmp(o->target, proto->target)))
			e = o;
	}
	if (!e) {
		ALLOC_GROW(x->entries, x->nr_entries + 1, x->alloc_entries);
		e = &x->entries[x->nr_entries++];
		*e = *proto;
		e->name = xstrdup(proto->name);
		e->target = proto->target ? xstrdup(proto->target) : NULL;
		e->value = NULL;
	}
	entry_wipe(e);
	e->value = xmalloc(len + 1);
	memcpy(e->value, value, len);
	e->value[len] = '\0';
	e->value_len = len;
	e->secret = proto->secret;
}

void exchange_give(struct exchange *x, size_t to, const char *name, const char *value)
{
	struct entry proto = {.from = FROM_PROVISION,
			      .to = ROLE_TO_NODE,
			      .given_to = to,
			      .secret = true,
			      .published = true};

	proto.name = (char *)name;
	pthread_mutex_lock(&x->lock);
	keep(x, &proto, value, strlen(value));
	pthread_mutex_unlock(&x->lock);
}

/* A Kubernetes label value: empty, or 1-63 of A-Z a-z 0-9 - _ . with alphanumeric ends. */
static bool label_value(const char *v, size_t n)
{
	size_t i;

	if (!n)
		return true;
	if (n > 63 || !isalnum((unsigned char)v[0]) || !isalnum((unsigned char)v[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("-_.", v[i]))
			return false;
	return true;
}

static bool declared_key(const struct role_hand *h, const char *k, size_t n)
{
	size_t i;

	for (i = 0; h->labels[i]; i++)
		if (strlen(h->labels[i]) == n && !memcmp(h->labels[i], k, n))
			return true;
	return false;
}

/*
 * The words of s (each after one space: " WORD WORD ...") as label changes
 * of h's keys: KEY=VALUE with a label value, or KEY-.  They become
 * arguments of the control plane's `kubectl label` (roles/node-labels):
 * no other key (NodeRestriction's own, node-role.kubernetes.io/control-plane)
 * and no flag (`--profile-output=FILE` would truncate FILE as root).  -1
 * with err naming the first refused word (cleaned, at most 64 bytes shown).
 */
static int check_labels(const struct role_hand *h, const char *name, const char *s, size_t len,
			struct error *err)
{
	const char *p = s, *end = s + len;

	while (p < end) {
		const char *w = p + 1, *we = memchr(w, ' ', (size_t)(end - w)), *eq, *why = NULL;
		size_t wl;

		we = we ? we : end;
		wl = (size_t)(we - w);
		eq = memchr(w, '=', wl);
		if (*p != ' ' || !wl)
			why = "an empty word (two spaces in a row, or one at the end)";
		else if (w[0] == '-')
			why = "a word starting with '-' (a command-line flag)";
		else if (eq && !declared_key(h, w, (size_t)(eq - w)))
			why = "not one of the label keys it may set";
		else if (eq && !label_value(eq + 1, (size_t)(we - eq - 1)))
			why = "not a label value (at most 63 letters, digits, - _ ., alphanumeric "
			      "ends)";
		else if (!eq && (w[wl - 1] != '-' || !declared_key(h, w, wl - 1)))
			why = "neither KEY=VALUE nor KEY- of a label key it may set";
		if (why) {
			struct strbuf word = STRBUF_INIT, clean = STRBUF_INIT;
			struct strbuf keys = STRBUF_INIT;
			size_t i;

			strbuf_add(&word, w, wl > 64 ? 64 : wl);
			text_clean_line(&clean, word.buf);
			for (i = 0; h->labels[i]; i++)
				strbuf_addf(&keys, "%s%s", i ? ", " : "", h->labels[i]);
			error_set(err, -1, "'%s': label '%s%s' refused: %s (keys: %s)", name,
				  clean.buf, wl > 64 ? "…" : "", why, keys.buf);
			strbuf_release(&word);
			strbuf_release(&clean);
			strbuf_release(&keys);
			return -1;
		}
		p = we;
	}
	return 0;
}

int exchange_hand(struct exchange *x, size_t from, const struct role *r, bool secret,
		  const char *key, size_t key_len, const char *value, size_t value_len,
		  struct error *err)
{
	const char *at = memchr(key, '@', key_len);
	size_t name_len = at ? (size_t)(at - key) : key_len;
	const char *sender = x->nodes[from]->name;
	const struct role_hand *h = NULL;
	struct entry proto = {.from = from, .role = r, .given_to = SIZE_MAX};
	char *name = NULL, *target = NULL;
	size_t i;
	int ret = -1;

	if (!r)
		return error_set(err, -1, "'%s' outside a role's step",
				 secret ? "::secret" : "::set");
	for (i = 0; i < r->nr_hands && !h; i++)
		if (role_hand_match(&r->hands[i], key, name_len, sender))
			h = &r->hands[i];
	name = xstrndup(key, name_len);
	if (at)
		target = xstrndup(at + 1, key_len - name_len - 1);
	if (!h) {
		error_set(err, -1, "'%s' is not a value role '%s' hands (role.yaml 'hands')", name,
			  r->name);
		goto out;
	}
	if (memchr(value, '\0', value_len)) {
		/* It could not reach a step's environment whole, nor be redacted whole. */
		error_set(err, -1, "'%s' holds a NUL byte", name);
		goto out;
	}
	if (h->secret != secret) {
		error_set(err, -1,
			  h->secret ? "'%s' is a secret: hand it with ::secret"
				    : "'%s' is not declared secret: hand it with ::set",
			  name);
		goto out;
	}
	if (h->to == ROLE_TO_NODE && !target) {
		error_set(err, -1, "'%s' is for one node: hand it as %s@NODE", name, name);
		goto out;
	}
	if (h->to != ROLE_TO_NODE && target) {
		error_set(err, -1, "'%s' is not handed to one node ('%s@%s')", name, name, target);
		goto out;
	}
	if (target && !inventory_find(x->inv, target)) {
		error_set(err, -1, "'%s@%s': no node '%s' in the inventory", name, target, target);
		goto out;
	}
	if (h->about_self) {
		size_t n = strlen(sender);
		if (value_len < n || memcmp(value, sender, n) ||
		    (value_len > n && value[n] != ' ')) {
			error_set(err, -1,
				  "'%s' from node '%s' must be about '%s' (its first word)", name,
				  sender, sender);
			goto out;
		}
	}
	if (h->labels) {
		/* with about: self the first word is the sender's name; the labels follow */
		size_t skip = h->about_self ? strlen(sender) : 0;
		const char *v = value + skip;
		size_t vl = value_len - skip;
		struct strbuf spaced = STRBUF_INIT;
		int bad;

		if (!h->about_self) { /* " WORD WORD": the same walk */
			strbuf_addch(&spaced, ' ');
			strbuf_add(&spaced, value, value_len);
			v = spaced.buf;
			vl = spaced.len;
		}
		bad = vl && check_labels(h, name, v, vl, err) < 0;
		strbuf_release(&spaced);
		if (bad)
			goto out;
	}
	if (secret) {
		struct error why = {0};
		/* Masked everywhere once registered: a node must not hide words with it. */
		if (secrets_handed_ok(value, value_len, &why) < 0 ||
		    (x->secrets && secrets_add(x->secrets, value, value_len) < 0)) {
			error_set(err, -1, "secret '%s' %s: not registered", name,
				  why.msg[0] ? why.msg : "is too short to redact safely");
			goto out;
		}
	}
	proto.to = h->to;
	proto.name = name;
	proto.target = target;
	proto.secret = secret;
	pthread_mutex_lock(&x->lock);
	keep(x, &proto, value, value_len);
	pthread_mutex_unlock(&x->lock);
	ret = 0;
out:
	free(name);
	free(target);
	return ret;
}

void exchange_role_done(struct exchange *x, size_t from, const struct role *r, bool ok)
{
	size_t i;

	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->nr_entries; i++) {
		struct entry *e = &x->entries[i];
		if (e->role == r && e->from == from) {
			e->published = ok;
			if (!ok)
				entry_wipe(e);
		}
	}
	pthread_mutex_unlock(&x->lock);
}

int exchange_fetch(struct exchange *x, size_t from, const struct role *r, const char *path,
		   size_t path_len, const char *name, size_t name_len, struct error *err)
{
	const struct role_fetch *f = NULL;
	size_t i;
	int ret = 0;

	if (!r)
		return error_set(err, -1, "'::fetch' outside a role's step");
	for (i = 0; i < r->nr_fetches && !f; i++)
		if (strlen(r->fetches[i].name) == name_len &&
		    !memcmp(r->fetches[i].name, name, name_len))
			f = &r->fetches[i];
	if (!f)
		return error_set(err, -1,
				 "'%.*s' is not a file role '%s' fetches (role.yaml 'fetches')",
				 (int)(name_len > 64 ? 64 : name_len), name, r->name);
	if (strlen(f->path) != path_len || memcmp(f->path, path, path_len))
		return error_set(err, -1, "'%s' comes from '%s', not '%.*s'", f->name, f->path,
				 (int)(path_len > 256 ? 256 : path_len), path);
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->nr_claims; i++)
		if (!strcmp(x->claims[i].name, f->name))
			break;
	if (i == x->nr_claims) {
		ALLOC_GROW(x->claims, x->nr_claims + 1, x->alloc_claims);
		x->claims[x->nr_claims].name = xstrdup(f->name);
		x->claims[x->nr_claims++].from = from;
	} else if (x->claims[i].from != from) {
		ret = error_set(err, -1, "'%s' was fetched from node '%s' in this run already",
				f->name, x->nodes[x->claims[i].from]->name);
	}
	pthread_mutex_unlock(&x->lock);
	return ret;
}

/* Whether node `to`, running role r, may read e (lock held). */
static bool visible(const struct exchange *x, const struct entry *e, size_t to,
		    const struct role *r)
{
	if (!e->value)
		return false;
	if (!e->role)
		return e->given_to == to;
	switch (e->to) {
	case ROLE_TO_SELF:
		if (e->from != to)
			return false;
		break;
	case ROLE_TO_CONTROL_PLANE:
		if (!(x->nodes[to]->roles & NODE_ROLE_CONTROL_PLANE))
			return false;
		break;
	case ROLE_TO_NODE:
		if (!e->target || strcmp(e->target, x->nodes[to]->name))
			return false;
		break;
	default:
		return false;
	}
	if (!r)
		return false;
	if (e->role == r)
		return e->from == to;
	return e->published && role_reads_from(r, e->role);
}

void exchange_each(struct exchange *x, size_t to, const struct role *r,
		   void (*fn)(const char *name, const char *value, bool secret, void *data),
		   void *data)
{
	size_t i;

	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->nr_entries; i++)
		if (visible(x, &x->entries[i], to, r))
			fn(x->entries[i].name, x->entries[i].value, x->entries[i].secret, data);
	pthread_mutex_unlock(&x->lock);
}
