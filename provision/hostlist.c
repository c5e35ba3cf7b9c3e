/* hostlist: see hostlist.h. */
#include "hostlist.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Bounds are at most 9 digits: every value fits in an unsigned long. */
#define BOUND_DIGITS 9

static const char range_hint[] =
    "a range is [N-M] or a list like [2-4,7] of decimal numbers, e.g. b-[2-4]";

void hostlist_free(char **list)
{
	char **p;

	if (!list)
		return;
	for (p = list; *p; p++)
		free(*p);
	free(list);
}

/* Parse one decimal bound of len bytes at s; its padding width goes to *width. */
static bool parse_bound(const char *s, size_t len, unsigned long *v, int *width)
{
	size_t i;

	if (len == 0 || len > BOUND_DIGITS)
		return false;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	*width = len > 1 && s[0] == '0' ? (int)len : 0;
	return true;
}

struct range_item {
	unsigned long lo, hi;
	int width;
};

/*
 * Parse the text between the brackets into items; returns the number of
 * names it expands to, or -1 with err set.
 */
static long parse_ranges(const char *body, size_t len, const char *pattern,
			 struct range_item **items, size_t *nr, struct error *err)
{
	size_t alloc = 0, start = 0, i;
	unsigned long total = 0;

	*items = NULL;
	*nr = 0;
	if (len == 0) {
		error_set(err, -1, "empty range '[]' in '%s'", pattern);
		error_hint(err, "%s", range_hint);
		return -1;
	}
	for (i = 0; i <= len; i++) {
		struct range_item it;
		const char *s = body + start, *dash;
		size_t n;
		int wlo, whi;

		if (i < len && body[i] != ',')
			continue;
		n = i - start;
		start = i + 1;
		if (n == 0) {
			error_set(err, -1, "empty item in range '%s'", pattern);
			error_hint(err, "%s", range_hint);
			goto fail;
		}
		dash = memchr(s, '-', n);
		if (!dash) {
			if (!parse_bound(s, n, &it.lo, &it.width))
				goto malformed;
			it.hi = it.lo;
		} else {
			size_t nlo = (size_t)(dash - s);
			if (!parse_bound(s, nlo, &it.lo, &wlo) ||
			    !parse_bound(dash + 1, n - nlo - 1, &it.hi, &whi))
				goto malformed;
			it.width = wlo ? wlo : whi;
			if (it.lo > it.hi) {
				error_set(err, -1, "reversed range '%.*s' in '%s'", (int)n, s,
					  pattern);
				error_hint(err, "write the lower bound first: [%.*s-%.*s]",
					   (int)(n - nlo - 1), dash + 1, (int)nlo, s);
				goto fail;
			}
		}
		total += it.hi - it.lo + 1;
		if (total > HOSTLIST_MAX) {
			error_set(err, -1, "range '%s' expands to more than %d names", pattern,
				  HOSTLIST_MAX);
			error_hint(err, "Kubernetes supports at most %d nodes in one cluster",
				   HOSTLIST_MAX);
			goto fail;
		}
		ALLOC_GROW(*items, *nr + 1, alloc);
		(*items)[(*nr)++] = it;
		continue;
	malformed:
		error_set(err, -1, "malformed range item '%.*s' in '%s'", (int)n, s, pattern);
		error_hint(err, "%s", range_hint);
		goto fail;
	}
	return (long)total;
fail:
	free(*items);
	*items = NULL;
	*nr = 0;
	return -1;
}

int hostlist_expand(char ***out, size_t *nr, const char *pattern, struct error *err)
{
	const char *open = strchr(pattern, '['), *close;
	struct range_item *items = NULL;
	size_t nr_items = 0, i, n = 0;
	char **list = NULL;
	long total;
	int ret = -1;

	*out = NULL;
	*nr = 0;
	if (!open) {
		if (strchr(pattern, ']')) {
			error_set(err, -1, "unmatched ']' in '%s'", pattern);
			error_hint(err, "%s", range_hint);
			goto out;
		}
		list = xcalloc(2, sizeof(*list));
		list[0] = xstrdup(pattern);
		n = 1;
		ret = 0;
		goto out;
	}
	close = strchr(open, ']');
	if (memchr(pattern, ']', (size_t)(open - pattern))) {
		error_set(err, -1, "unmatched ']' in '%s'", pattern);
		error_hint(err, "%s", range_hint);
		goto out;
	}
	if (!close) {
		error_set(err, -1, "missing ']' in '%s'", pattern);
		error_hint(err, "%s", range_hint);
		goto out;
	}
	if (memchr(open + 1, '[', (size_t)(close - open - 1)) || strpbrk(close + 1, "[]")) {
		error_set(err, -1, "more than one bracket group in '%s'", pattern);
		error_hint(err, "only one [..] range per name or address is supported");
		goto out;
	}
	total = parse_ranges(open + 1, (size_t)(close - open - 1), pattern, &items, &nr_items, err);
	if (total < 0)
		goto out;
	list = xcalloc((size_t)total + 1, sizeof(*list));
	for (i = 0; i < nr_items; i++) {
		unsigned long v = items[i].lo;
		for (;;) {
			list[n++] = xasprintf("%.*s%0*lu%s", (int)(open - pattern), pattern,
					      items[i].width, v, close + 1);
			if (v == items[i].hi)
				break;
			v++;
		}
	}
	ret = 0;
out:
	free(items);
	if (ret == 0) {
		*out = list;
		*nr = n;
	}
	return ret;
}

/* Compression ------------------------------------------------------------ */

struct name_parts {
	const char *name;
	size_t pre_len;	 /* bytes before the digits */
	size_t dig_len;	 /* 0: no usable digits, the name stands alone */
	unsigned long v; /* the digits' value */
	int width;	 /* padding width: dig_len when zero-padded, else 0 */
};

struct group {
	const struct name_parts *key; /* first member: prefix, suffix, width */
	int width;
	unsigned long *nums;
	size_t nr, alloc;
};

static void split_name(struct name_parts *np, const char *name)
{
	size_t len = strlen(name), end = len, begin;
	int w;

	*np = (struct name_parts){.name = name};
	while (end > 0 && (name[end - 1] < '0' || name[end - 1] > '9'))
		end--;
	if (!end)
		return;
	begin = end;
	while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9')
		begin--;
	if (!parse_bound(name + begin, end - begin, &np->v, &w))
		return;
	np->pre_len = begin;
	np->dig_len = end - begin;
	np->width = w;
}

static bool same_frame(const struct name_parts *a, const struct name_parts *b)
{
	const char *sa = a->name + a->pre_len + a->dig_len;
	const char *sb = b->name + b->pre_len + b->dig_len;

	return a->pre_len == b->pre_len && !strncmp(a->name, b->name, a->pre_len) &&
	       !strcmp(sa, sb);
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static void emit_group(struct strbuf *sb, struct group *g)
{
	const struct name_parts *k = g->key;
	const char *suffix = k->name + k->pre_len + k->dig_len;
	size_t i, j;

	qsort(g->nums, g->nr, sizeof(*g->nums), cmp_ulong);
	for (i = j = 0; i < g->nr; i++)
		if (!j || g->nums[i] != g->nums[j - 1])
			g->nums[j++] = g->nums[i];
	g->nr = j;
	strbuf_add(sb, k->name, k->pre_len);
	if (g->nr == 1) {
		strbuf_addf(sb, "%0*lu%s", g->width, g->nums[0], suffix);
		return;
	}
	strbuf_addch(sb, '[');
	for (i = 0; i < g->nr; i = j) {
		for (j = i + 1; j < g->nr && g->nums[j] <= g->nums[j - 1] + 1; j++)
			;
		if (i)
			strbuf_addch(sb, ',');
		strbuf_addf(sb, "%0*lu", g->width, g->nums[i]);
		if (g->nums[j - 1] != g->nums[i])
			strbuf_addf(sb, "-%0*lu", g->width, g->nums[j - 1]);
	}
	strbuf_addf(sb, "]%s", suffix);
}

static struct group *find_group(struct group *groups, size_t nr_groups, const struct name_parts *np,
				int width)
{
	size_t j;

	for (j = 0; j < nr_groups; j++)
		if (groups[j].key->dig_len && groups[j].width == width &&
		    same_frame(groups[j].key, np))
			return &groups[j];
	return NULL;
}

char *hostlist_compress(const char *const *names, size_t nr)
{
	struct name_parts *parts = xcalloc(nr ? nr : 1, sizeof(*parts));
	struct group *padded = NULL, *groups = NULL;
	size_t nr_padded = 0, alloc_padded = 0, nr_groups = 0, alloc = 0, i, j;
	struct strbuf sb = STRBUF_INIT;

	/* First the zero-padded frames: "n10" belongs with "n01".."n09". */
	for (i = 0; i < nr; i++) {
		split_name(&parts[i], names[i]);
		if (parts[i].width && !find_group(padded, nr_padded, &parts[i], parts[i].width)) {
			ALLOC_GROW(padded, nr_padded + 1, alloc_padded);
			padded[nr_padded++] =
			    (struct group){.key = &parts[i], .width = parts[i].width};
		}
	}
	for (i = 0; i < nr; i++) {
		const struct name_parts *np = &parts[i];
		struct group *g;
		int width = np->width;

		if (!np->dig_len) {
			/* No digits: the name is a group of its own (once). */
			for (j = 0; j < nr_groups; j++)
				if (!groups[j].key->dig_len &&
				    !strcmp(groups[j].key->name, np->name))
					break;
			if (j == nr_groups) {
				ALLOC_GROW(groups, nr_groups + 1, alloc);
				groups[nr_groups++] = (struct group){.key = np};
			}
			continue;
		}
		if (!width && find_group(padded, nr_padded, np, (int)np->dig_len))
			width = (int)np->dig_len;
		g = find_group(groups, nr_groups, np, width);
		if (!g) {
			ALLOC_GROW(groups, nr_groups + 1, alloc);
			g = &groups[nr_groups++];
			*g = (struct group){.key = np, .width = width};
		}
		ALLOC_GROW(g->nums, g->nr + 1, g->alloc);
		g->nums[g->nr++] = np->v;
	}
	for (i = 0; i < nr_groups; i++) {
		if (i)
			strbuf_addch(&sb, ',');
		if (groups[i].key->dig_len)
			emit_group(&sb, &groups[i]);
		else
			strbuf_addstr(&sb, groups[i].key->name);
		free(groups[i].nums);
	}
	free(groups);
	free(padded);
	free(parts);
	return strbuf_detach(&sb, NULL);
}

char **hostlist_split(const char *list, size_t *nr)
{
	char **out = NULL;
	size_t n = 0, alloc = 0;
	const char *start = list, *p;
	int depth = 0;

	for (p = list;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']' && depth > 0)
			depth--;
		if (*p == '\0' || (*p == ',' && depth == 0)) {
			ALLOC_GROW(out, n + 2, alloc);
			out[n++] = xstrndup(start, (size_t)(p - start));
			start = p + 1;
		}
		if (*p == '\0')
			break;
	}
	out[n] = NULL;
	if (nr)
		*nr = n;
	return out;
}
