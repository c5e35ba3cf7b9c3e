/* images: see images.h. */
#include "images.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include <zlib.h>

#include "artifacts.h"

/* A chart archive is some hundred KiB; its contents a few MiB. */
#define CHART_TGZ_MAX (16u << 20)
#define CHART_TAR_MAX (64u << 20)
/* YAML values: nodes made from one document (aliases can multiply them). */
#define YAML_NODES_MAX 200000
#define YAML_DEPTH_MAX 64

static void strv_push(char ***v, size_t *nr, const char *s)
{
	*v = xrealloc(*v, (*nr + 2) * sizeof(**v));
	(*v)[(*nr)++] = xstrdup(s);
	(*v)[*nr] = NULL;
}

/* ---- references ---- */

static bool ref_component_ok(const char *s, size_t len)
{
	/* [a-z0-9]+ with single ., _ or - (or __) between alphanumerics */
	size_t i;

	if (!len || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[len - 1]))
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (islower(c) || isdigit(c))
			continue;
		if (c == '.' || c == '-' || c == '_') {
			if (!isalnum((unsigned char)s[i + 1]) &&
			    !(c == '_' && s[i + 1] == '_' && i + 2 < len &&
			      isalnum((unsigned char)s[i + 2])) &&
			    !(c == '-' && s[i + 1] == '-'))
				return false;
			continue;
		}
		return false;
	}
	return true;
}

static bool domain_ok(const char *s, size_t len)
{
	size_t i, colon = len;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == ':' && colon == len) {
			colon = i;
			continue;
		}
		if (colon < len) {
			if (!isdigit(c))
				return false;
		} else if (!isalnum(c) && c != '.' && c != '-' && c != '[' && c != ']') {
			return false;
		}
	}
	return colon > 0 && colon != len - 1;
}

int images_normalize(const char *ref, size_t len, struct strbuf *out, struct error *err)
{
	const char *at, *slash, *name, *tag = NULL, *digest = NULL;
	size_t name_len, tag_len = 0, dom_len = 0, i;
	bool has_domain = false;
	size_t start = out->len;

	if (!len || len > IMAGES_REF_MAX)
		return error_set(err, -1, "an image reference is 1 to %d characters",
				 IMAGES_REF_MAX);
	for (i = 0; i < len; i++)
		if ((unsigned char)ref[i] <= ' ' || (unsigned char)ref[i] >= 0x7f)
			return error_set(err, -1,
					 "an image reference has no blanks or control characters");
	at = memchr(ref, '@', len);
	if (at) {
		size_t dl = len - (size_t)(at + 1 - ref);
		digest = at + 1;
		if (dl != 71 || strncmp(digest, "sha256:", 7))
			return error_set(err, -1, "'%.*s': a digest is sha256: and 64 hex digits",
					 (int)len, ref);
		for (i = 7; i < dl; i++)
			if (!isxdigit((unsigned char)digest[i]) ||
			    isupper((unsigned char)digest[i]))
				return error_set(err, -1,
						 "'%.*s': a digest is sha256: and 64 hex digits",
						 (int)len, ref);
		len = (size_t)(at - ref);
	}
	/* the tag: after the last ':' that comes after the last '/' */
	slash = NULL;
	for (i = 0; i < len; i++)
		if (ref[i] == '/')
			slash = ref + i;
	{
		const char *from = slash ? slash : ref;
		const char *colon = memchr(from, ':', len - (size_t)(from - ref));
		if (colon) {
			tag = colon + 1;
			tag_len = len - (size_t)(tag - ref);
			len = (size_t)(colon - ref);
			if (!tag_len || tag_len > 128 ||
			    !(isalnum((unsigned char)tag[0]) || tag[0] == '_'))
				return error_set(err, -1, "'%.*s': a bad tag",
						 (int)(len + 1 + tag_len), ref);
			for (i = 0; i < tag_len; i++)
				if (!isalnum((unsigned char)tag[i]) && !strchr("_.-", tag[i]))
					return error_set(err, -1, "'%.*s': a bad tag",
							 (int)(len + 1 + tag_len), ref);
		}
	}
	/* the domain: a first component with '.' or ':', or localhost */
	slash = memchr(ref, '/', len);
	if (slash) {
		dom_len = (size_t)(slash - ref);
		if (memchr(ref, '.', dom_len) || memchr(ref, ':', dom_len) ||
		    (dom_len == 9 && !memcmp(ref, "localhost", 9)) ||
		    (dom_len && isupper((unsigned char)ref[0])))
			has_domain = true;
	}
	name = has_domain ? slash + 1 : ref;
	name_len = len - (size_t)(name - ref);
	if (has_domain && !domain_ok(ref, dom_len))
		return error_set(err, -1, "'%.*s': a bad registry host", (int)len, ref);
	/* every path component */
	{
		const char *p = name, *end = name + name_len;
		if (!name_len)
			return error_set(err, -1, "'%.*s': no image name", (int)len, ref);
		while (p <= end) {
			const char *q = memchr(p, '/', (size_t)(end - p));
			size_t cl = q ? (size_t)(q - p) : (size_t)(end - p);
			if (!ref_component_ok(p, cl))
				return error_set(
				    err, -1,
				    "'%.*s': a bad image name (lower-case letters, digits, "
				    "'.', '_', '-' between them, '/' between parts)",
				    (int)len, ref);
			if (!q)
				break;
			p = q + 1;
		}
	}
	if (has_domain) {
		if (dom_len == 15 && !memcmp(ref, "index.docker.io", 15))
			strbuf_addstr(out, "docker.io");
		else
			strbuf_add(out, ref, dom_len);
		strbuf_addch(out, '/');
		strbuf_add(out, name, name_len);
	} else {
		strbuf_addstr(out, "docker.io/");
		if (!memchr(name, '/', name_len))
			strbuf_addstr(out, "library/");
		strbuf_add(out, name, name_len);
	}
	if (tag) {
		strbuf_addch(out, ':');
		strbuf_add(out, tag, tag_len);
	} else if (!digest) {
		strbuf_addstr(out, ":latest");
	}
	if (digest) {
		strbuf_addch(out, '@');
		strbuf_add(out, digest, 71);
	}
	if (out->len - start > IMAGES_REF_MAX) {
		strbuf_setlen(out, start);
		return error_set(err, -1, "an image reference is 1 to %d characters",
				 IMAGES_REF_MAX);
	}
	return 0;
}

void images_registry(const char *ref, struct strbuf *out)
{
	const char *slash = strchr(ref, '/');
	strbuf_add(out, ref, slash ? (size_t)(slash - ref) : strlen(ref));
}

/* ---- YAML into template values ---- */

struct yconv {
	yaml_document_t *doc;
	size_t made;
	const char *name;
	struct error *err;
};

static bool yaml_is_null(const yaml_node_t *n)
{
	const char *s;

	/* libyaml's loader gives an untagged plain scalar the default (str) tag */
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) &&
	    strcmp((const char *)n->tag, YAML_DEFAULT_SCALAR_TAG) &&
	    strcmp((const char *)n->tag, "?") && strcmp((const char *)n->tag, "!"))
		return false;
	s = (const char *)n->data.scalar.value;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	       !strcmp(s, "NULL");
}

static struct tval *yaml_to_tval(struct yconv *c, const yaml_node_t *n, int depth)
{
	struct tval *v = NULL;

	if (!n)
		return tval_new_str("");
	if (depth > YAML_DEPTH_MAX || ++c->made > YAML_NODES_MAX) {
		error_set(c->err, -1,
			  "%s: nested or repeated too deep (more than %d levels or %d values)",
			  c->name, YAML_DEPTH_MAX, YAML_NODES_MAX);
		return NULL;
	}
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return tval_new_str(yaml_is_null(n) ? "" : (const char *)n->data.scalar.value);
	case YAML_SEQUENCE_NODE: {
		yaml_node_item_t *it;
		v = tval_new_list();
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			struct tval *x =
			    yaml_to_tval(c, yaml_document_get_node(c->doc, *it), depth + 1);
			if (!x) {
				tval_free(v);
				return NULL;
			}
			tval_push(v, x);
		}
		return v;
	}
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *p;
		v = tval_new_map();
		for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
			struct tval *x;
			if (!k || k->type != YAML_SCALAR_NODE)
				continue; /* a complex key: no value path names it */
			x = yaml_to_tval(c, yaml_document_get_node(c->doc, p->value), depth + 1);
			if (!x) {
				tval_free(v);
				return NULL;
			}
			tval_set(v, (const char *)k->data.scalar.value, x);
		}
		return v;
	}
	default:
		return tval_new_str("");
	}
}

static int yaml_load(yaml_document_t *doc, const char *name, const char *text, size_t len,
		     struct error *err)
{
	yaml_parser_t parser;

	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, doc)) {
		error_set(err, -1, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
			  parser.problem_mark.column + 1,
			  parser.problem ? parser.problem : "YAML syntax error");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_parser_delete(&parser);
	return 0;
}

/* A YAML document as values: a map (an empty file: an empty map). */
static struct tval *yaml_values(const char *name, const char *text, size_t len, struct error *err)
{
	yaml_document_t doc;
	struct yconv c = {&doc, 0, name, err};
	yaml_node_t *root;
	struct tval *v;

	if (yaml_load(&doc, name, text, len, err) < 0)
		return NULL;
	root = yaml_document_get_root_node(&doc);
	if (!root || yaml_is_null(root)) {
		yaml_document_delete(&doc);
		return tval_new_map();
	}
	if (root->type != YAML_MAPPING_NODE) {
		error_set(err, -1, "%s: values must be a mapping", name);
		yaml_document_delete(&doc);
		return NULL;
	}
	v = yaml_to_tval(&c, root, 0);
	yaml_document_delete(&doc);
	return v;
}

static void tval_remove(struct tval *map, const char *key)
{
	size_t i;

	for (i = 0; i < map->nr; i++)
		if (!strcmp(map->keys[i], key)) {
			free(map->keys[i]);
			tval_free(map->items[i]);
			memmove(map->keys + i, map->keys + i + 1,
				(map->nr - i - 1) * sizeof(char *));
			memmove(map->items + i, map->items + i + 1,
				(map->nr - i - 1) * sizeof(struct tval *));
			map->nr--;
			return;
		}
}

static struct tval *tval_get(struct tval *map, const char *key)
{
	size_t i;

	if (!map || map->kind != TVAL_MAP)
		return NULL;
	for (i = 0; i < map->nr; i++)
		if (!strcmp(map->keys[i], key))
			return map->items[i];
	return NULL;
}

/* Coalesce src over dst (both maps): src wins; maps merge. */
static void merge_tval(struct tval *dst, const struct tval *src)
{
	size_t i;

	for (i = 0; i < src->nr; i++) {
		struct tval *d = tval_get(dst, src->keys[i]);
		if (d && d->kind == TVAL_MAP && src->items[i]->kind == TVAL_MAP)
			merge_tval(d, src->items[i]);
		else
			tval_set(dst, src->keys[i], tval_copy(src->items[i]));
	}
}

static int merge_yaml(struct yconv *c, struct tval *dst, const yaml_node_t *m, int depth)
{
	yaml_node_pair_t *p;

	if (depth > YAML_DEPTH_MAX)
		return error_set(c->err, -1, "%s: nested too deep", c->name);
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
		const char *key;
		struct tval *d, *x;

		if (!k || k->type != YAML_SCALAR_NODE || !v)
			continue;
		key = (const char *)k->data.scalar.value;
		if (yaml_is_null(v)) {
			tval_remove(dst, key);
			continue;
		}
		d = tval_get(dst, key);
		if (d && d->kind == TVAL_MAP && v->type == YAML_MAPPING_NODE) {
			if (merge_yaml(c, d, v, depth + 1) < 0)
				return -1;
			continue;
		}
		x = yaml_to_tval(c, v, depth + 1);
		if (!x)
			return -1;
		tval_set(dst, key, x);
	}
	return 0;
}

int images_values_merge(struct tval *into, const char *name, const char *yaml, size_t len,
			struct error *err)
{
	yaml_document_t doc;
	struct yconv c = {&doc, 0, name, err};
	yaml_node_t *root;
	int rc = 0;

	if (yaml_load(&doc, name, yaml, len, err) < 0)
		return -1;
	root = yaml_document_get_root_node(&doc);
	if (root && root->type == YAML_MAPPING_NODE)
		rc = merge_yaml(&c, into, root, 0);
	else if (root && !yaml_is_null(root))
		rc = error_set(err, -1, "%s: values must be a mapping", name);
	yaml_document_delete(&doc);
	return rc;
}

/* ---- manifests ---- */

static int scan_images(struct yconv *c, const yaml_node_t *n, int depth, char ***refs, size_t *nr)
{
	if (!n || depth > YAML_DEPTH_MAX || ++c->made > YAML_NODES_MAX)
		return n ? error_set(c->err, -1, "%s: nested or repeated too deep", c->name) : 0;
	if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
			if (scan_images(c, yaml_document_get_node(c->doc, *it), depth + 1, refs,
					nr) < 0)
				return -1;
	} else if (n->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *p;
		for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
			const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
			if (k && k->type == YAML_SCALAR_NODE && v && v->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k->data.scalar.value, "image")) {
				struct strbuf sb = STRBUF_INIT;
				size_t i;
				bool seen = false;
				if (images_normalize((const char *)v->data.scalar.value,
						     v->data.scalar.length, &sb, c->err) < 0) {
					strbuf_release(&sb);
					return -1;
				}
				for (i = 0; i < *nr && !seen; i++)
					seen = !strcmp((*refs)[i], sb.buf);
				if (!seen)
					strv_push(refs, nr, sb.buf);
				strbuf_release(&sb);
			} else if (scan_images(c, v, depth + 1, refs, nr) < 0) {
				return -1;
			}
		}
	}
	return 0;
}

int images_manifest_refs(char ***refs, size_t *nr, const char *name, const char *yaml, size_t len,
			 struct error *err)
{
	yaml_parser_t parser;
	int rc = 0;

	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	for (;;) {
		yaml_document_t doc;
		struct yconv c = {&doc, 0, name, err};
		yaml_node_t *root;
		if (!yaml_parser_load(&parser, &doc)) {
			rc = error_set(err, -1, "%s:%zu:%zu: %s", name,
				       parser.problem_mark.line + 1, parser.problem_mark.column + 1,
				       parser.problem ? parser.problem : "YAML syntax error");
			break;
		}
		root = yaml_document_get_root_node(&doc);
		if (!root) {
			yaml_document_delete(&doc);
			break; /* the end of the stream */
		}
		rc = scan_images(&c, root, 0, refs, nr);
		yaml_document_delete(&doc);
		if (rc < 0)
			break;
	}
	yaml_parser_delete(&parser);
	return rc;
}

/* ---- chart archives ---- */

static int gunzip(const void *in, size_t len, struct strbuf *out, struct error *err)
{
	z_stream z;
	int zr;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return error_set(err, -1, "zlib: cannot start");
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	do {
		strbuf_grow(out, 64 << 10);
		z.next_out = (Bytef *)out->buf + out->len;
		z.avail_out = (uInt)(out->alloc - out->len - 1);
		zr = inflate(&z, Z_NO_FLUSH);
		out->len = (size_t)((char *)z.next_out - out->buf);
		out->buf[out->len] = '\0';
		if (out->len > CHART_TAR_MAX) {
			inflateEnd(&z);
			return error_set(err, -1, "more than %u MiB inside the archive",
					 CHART_TAR_MAX >> 20);
		}
	} while (zr == Z_OK);
	inflateEnd(&z);
	if (zr != Z_STREAM_END)
		return error_set(err, -1, "not a gzip archive (%s)", z.msg ? z.msg : "bad data");
	return 0;
}

static uint64_t tar_octal(const char *p, size_t n)
{
	uint64_t v = 0;
	size_t i = 0;

	if (n && ((unsigned char)p[0] & 0x80)) { /* base-256 */
		for (i = 1; i < n && i < 9; i++)
			v = (v << 8) | (unsigned char)p[i];
		return v;
	}
	while (i < n && (p[i] == ' ' || p[i] == '\0'))
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(p[i] - '0');
	return v;
}

struct tar_member {
	char *name;
	const char *data;
	size_t size;
};

/* The regular files of a tar image (names as written, pax and GNU long names honoured). */
static int tar_members(const char *tar, size_t len, struct tar_member **out, size_t *nr,
		       struct error *err)
{
	size_t off = 0, alloc = 0;
	char *longname = NULL;

	*out = NULL;
	*nr = 0;
	while (off + 512 <= len) {
		const char *h = tar + off;
		uint64_t size;
		char type = h[156];
		char name[257];
		size_t i;

		for (i = 0; i < 512 && !h[i]; i++)
			;
		if (i == 512)
			break; /* the end blocks */
		size = tar_octal(h + 124, 12);
		if (size > len - off - 512) {
			free(longname);
			return error_set(err, -1, "a tar member runs past the archive's end");
		}
		if (type == 'L' || type == 'x') {
			const char *d = h + 512;
			free(longname);
			longname = NULL;
			if (type == 'L') {
				longname = xstrndup(d, (size_t)size);
			} else { /* pax: "LEN path=NAME\n" records */
				size_t p = 0;
				while (p < size) {
					char *end;
					unsigned long rl = strtoul(d + p, &end, 10);
					const char *kv = end + 1;
					if (!rl || p + rl > size || *end != ' ')
						break;
					if (!strncmp(kv, "path=", 5))
						longname = xstrndup(
						    kv + 5, (size_t)(d + p + rl - 1 - kv - 5));
					p += rl;
				}
			}
		} else if (type == '0' || type == '\0' || type == '7') {
			struct tar_member m;
			if (longname) {
				m.name = longname;
				longname = NULL;
			} else {
				name[0] = '\0';
				if (!memcmp(h + 257, "ustar", 5) && h[345])
					snprintf(name, sizeof(name), "%.155s/%.100s", h + 345, h);
				else
					snprintf(name, sizeof(name), "%.100s", h);
				m.name = xstrdup(name);
			}
			m.data = h + 512;
			m.size = (size_t)size;
			ALLOC_GROW(*out, *nr + 1, alloc);
			(*out)[(*nr)++] = m;
		} else {
			free(longname);
			longname = NULL;
		}
		off += 512 + (size_t)((size + 511) / 512 * 512);
	}
	free(longname);
	return 0;
}

static void members_free(struct tar_member *m, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(m[i].name);
	free(m);
}

static const struct tar_member *member_find(const struct tar_member *m, size_t nr, const char *name)
{
	size_t i;
	const char *n;

	for (i = 0; i < nr; i++) {
		n = m[i].name;
		if (!strncmp(n, "./", 2))
			n += 2;
		if (!strcmp(n, name))
			return &m[i];
	}
	return NULL;
}

static int chart_from_tar(struct tval **out, const char *tar, size_t len, int depth,
			  struct error *err);

/*
 * The chart in the members: TOP/Chart.yaml and TOP/values.yaml, and every
 * subchart in TOP/charts/ (a folder or an archive).
 */
static int chart_from_members(struct tval **out, const struct tar_member *m, size_t nr, int depth,
			      struct error *err)
{
	char top[256], path[512];
	const struct tar_member *cy = NULL, *vy;
	struct tval *v = NULL, *chart = NULL, *values = NULL, *subs;
	size_t i;

	/* the chart's folder: the first component of the Chart.yaml highest up */
	for (i = 0; i < nr; i++) {
		const char *n = m[i].name, *s;
		if (!strncmp(n, "./", 2))
			n += 2;
		s = strchr(n, '/');
		if (s && !strcmp(s, "/Chart.yaml") && (size_t)(s - n) < sizeof(top)) {
			snprintf(top, sizeof(top), "%.*s", (int)(s - n), n);
			cy = &m[i];
			break;
		}
	}
	if (!cy)
		return error_set(err, -1, "no CHART/Chart.yaml in the archive");
	snprintf(path, sizeof(path), "%s/Chart.yaml", top);
	if (!(chart = yaml_values(path, cy->data, cy->size, err)))
		return -1;
	snprintf(path, sizeof(path), "%s/values.yaml", top);
	vy = member_find(m, nr, path);
	values = vy ? yaml_values(path, vy->data, vy->size, err) : tval_new_map();
	if (!values) {
		tval_free(chart);
		return -1;
	}
	v = tval_new_map();
	subs = tval_map_at(v, "subcharts");
	/* subcharts: TOP/charts/NAME/Chart.yaml, or TOP/charts/ARCHIVE.tgz */
	for (i = 0; i < nr && depth < 2; i++) {
		const char *n = m[i].name, *rest;
		struct tval *sub = NULL;
		char prefix[300];
		size_t pl;

		if (!strncmp(n, "./", 2))
			n += 2;
		pl = (size_t)snprintf(prefix, sizeof(prefix), "%s/charts/", top);
		if (strncmp(n, prefix, pl))
			continue;
		rest = n + pl;
		if (strchr(rest, '/')) {
			const char *s = strchr(rest, '/');
			struct tar_member *sm = NULL;
			size_t snr = 0, j;
			int rc;
			if (strcmp(s, "/Chart.yaml"))
				continue;
			/* the members under TOP/charts/NAME/, as a chart of their own */
			for (j = 0; j < nr; j++) {
				const char *jn = m[j].name;
				if (!strncmp(jn, "./", 2))
					jn += 2;
				if (!strncmp(jn, prefix, pl) &&
				    !strncmp(jn + pl, rest, (size_t)(s - rest) + 1)) {
					sm = xrealloc(sm, (snr + 1) * sizeof(*sm));
					sm[snr] = m[j];
					sm[snr].name = xstrdup(jn + pl);
					snr++;
				}
			}
			rc = chart_from_members(&sub, sm, snr, depth + 1, err);
			members_free(sm, snr);
			if (rc < 0)
				goto fail;
		} else if (strlen(rest) > 4 && !strcmp(rest + strlen(rest) - 4, ".tgz")) {
			struct strbuf tar = STRBUF_INIT;
			if (gunzip(m[i].data, m[i].size, &tar, err) < 0 ||
			    chart_from_tar(&sub, tar.buf, tar.len, depth + 1, err) < 0) {
				strbuf_release(&tar);
				goto fail;
			}
			strbuf_release(&tar);
		} else {
			continue;
		}
		{
			const struct tval *name = tval_lookup(sub, "chart.name");
			struct tval *sv = tval_copy(tval_lookup(sub, "values"));
			struct tval *parent = tval_get(values, name ? name->str : "");
			if (!name || name->kind != TVAL_STR || !*name->str) {
				tval_free(sv);
				tval_free(sub);
				error_set(err, -1, "a subchart of %s has no name in its Chart.yaml",
					  top);
				goto fail;
			}
			/* Helm: the parent's values for the subchart over the subchart's own */
			if (parent && parent->kind == TVAL_MAP)
				merge_tval(sv, parent);
			tval_set(values, name->str, sv);
			tval_set(subs, name->str, tval_copy(tval_lookup(sub, "chart")));
			tval_free(sub);
		}
	}
	tval_set(v, "chart", chart);
	tval_set(v, "values", values);
	*out = v;
	return 0;
fail:
	tval_free(v);
	tval_free(chart);
	tval_free(values);
	return -1;
}

static int chart_from_tar(struct tval **out, const char *tar, size_t len, int depth,
			  struct error *err)
{
	struct tar_member *m;
	size_t nr;
	int rc;

	if (tar_members(tar, len, &m, &nr, err) < 0)
		return -1;
	rc = chart_from_members(out, m, nr, depth, err);
	members_free(m, nr);
	return rc;
}

int images_chart_load(struct tval **out, const void *tgz, size_t len, struct error *err)
{
	struct strbuf tar = STRBUF_INIT;
	int rc;

	*out = NULL;
	if (len > CHART_TGZ_MAX)
		return error_set(err, -1, "a chart archive of more than %u MiB",
				 CHART_TGZ_MAX >> 20);
	if (gunzip(tgz, len, &tar, err) < 0) {
		strbuf_release(&tar);
		return -1;
	}
	rc = chart_from_tar(out, tar.buf, tar.len, 0, err);
	strbuf_release(&tar);
	return rc;
}

/* ---- the plan ---- */

static bool on_node(const struct images_input *in, size_t i, unsigned on)
{
	const struct node *n = in->nodes[i];
	bool cp = n->roles & NODE_ROLE_CONTROL_PLANE, worker = n->roles & NODE_ROLE_WORKER;

	if (!cp && !worker)
		return false; /* not a Kubernetes node */
	switch (on) {
	case ROLE_IMAGE_ON_CLUSTER:
		return true;
	case ROLE_IMAGE_ON_CONTROL_PLANE:
		return cp;
	case ROLE_IMAGE_ON_WORKERS:
		return worker;
	case ROLE_IMAGE_ON_GPU:
		return in->gpu && in->gpu[i];
	}
	return false;
}

static void plan_add(struct images_plan *p, const struct role *r, const char *ref, size_t node)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		if (p->items[i].role == r && !strcmp(p->items[i].ref, ref))
			break;
	if (i == p->nr) {
		ALLOC_GROW(p->items, p->nr + 1, p->alloc);
		p->items[i].ref = xstrdup(ref);
		p->items[i].role = r;
		p->items[i].on = xcalloc(p->nr_nodes ? p->nr_nodes : 1, sizeof(bool));
		p->nr++;
	}
	p->items[i].on[node] = true;
}

static void unresolved(struct images_plan *p, const struct role *r, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
static void unresolved(struct images_plan *p, const struct role *r, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	size_t i;

	strbuf_addf(&sb, "role '%s': ", r->name);
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	for (i = 0; i < p->nr_unresolved; i++)
		if (!strcmp(p->unresolved[i], sb.buf)) {
			strbuf_release(&sb);
			return;
		}
	p->unresolved = xrealloc(p->unresolved, (p->nr_unresolved + 1) * sizeof(char *));
	p->unresolved[p->nr_unresolved++] = strbuf_detach(&sb, NULL);
}

static const struct role_template *role_template_by_src(const struct role *r, const char *src)
{
	size_t i;

	for (i = 0; i < r->nr_templates; i++)
		if (!strcmp(r->templates[i].src, src))
			return &r->templates[i];
	return NULL;
}

/* The control plane's index among the input nodes, else the first Kubernetes node. */
static size_t values_node(const struct images_input *in)
{
	size_t i;

	for (i = 0; i < in->nr; i++)
		if (in->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE)
			return i;
	for (i = 0; i < in->nr; i++)
		if (in->nodes[i]->roles & NODE_ROLE_WORKER)
			return i;
	return in->nr;
}

/* Whether r runs in this cluster: it applies to some node of the inventory. */
static bool role_in_cluster(const struct images_input *in, const struct role *r)
{
	size_t i, j;

	for (i = 0; i < in->inv->nr_nodes; i++) {
		const struct node *n = &in->inv->nodes[i];
		bool gpu = n->gpus > 0;
		for (j = 0; j < in->nr; j++)
			if (in->nodes[j] == n && in->gpu)
				gpu = in->gpu[j];
		if (role_applies(r, in->inv, n, gpu))
			return true;
	}
	return false;
}

/* The chart's values for role r (values, chart, subcharts), or NULL (why in unresolved). */
static struct tval *role_chart(struct images_plan *p, const struct images_input *in,
			       const struct role *r, size_t vn)
{
	const char *name = role_chart_artifact(r, in->inv);
	const struct artifact *a = artifact_find(&in->roles->artifacts, name);
	const struct role_template *t = role_template_by_src(r, r->chart_values);
	struct strbuf tgz = STRBUF_INIT, rendered = STRBUF_INIT;
	struct tval *chart = NULL, *vals = NULL;
	struct error err = {0};

	if (!a || !a->sha256) {
		unresolved(
		    p, r, "chart artifact '%s' has no pinned SHA-256 in %s", name,
		    in->roles->artifacts.path ? in->roles->artifacts.path : "artifacts.yaml");
		goto out;
	}
	if (!in->artifact_cache) {
		unresolved(p, r, "no artifact cache to read chart '%s' from", a->name);
		goto out;
	}
	if (artifact_read(in->artifact_cache, a, &tgz, &err) < 0) {
		unresolved(p, r,
			   "chart '%s' is not in this machine's cache (%s): run provision fetch",
			   a->name, err.msg);
		goto out;
	}
	if (images_chart_load(&chart, tgz.buf, tgz.len, &err) < 0) {
		unresolved(p, r, "chart '%s' (%s): %s", a->name, a->url, err.msg);
		goto out;
	}
	if (t && vn < in->nr) {
		vals = in->values(in->ctx, vn);
		if (template_render(t->tmpl, vals, &rendered, &err) < 0 ||
		    images_values_merge(tval_map_at(chart, "values"), t->src, rendered.buf,
					rendered.len, &err) < 0) {
			unresolved(p, r, "the values it renders (%s): %s", t->src, err.msg);
			tval_free(chart);
			chart = NULL;
		}
	}
out:
	tval_free(vals);
	strbuf_release(&tgz);
	explicit_bzero(rendered.buf, rendered.len);
	strbuf_release(&rendered);
	return chart;
}

static void role_manifest(struct images_plan *p, const struct images_input *in,
			  const struct role *r, const struct role_image *im, size_t vn)
{
	const struct role_template *t = role_template_by_src(r, im->manifest);
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	struct tval *vals;
	char **refs = NULL;
	size_t nr = 0, i, k;

	if (!t || vn >= in->nr)
		return;
	vals = in->values(in->ctx, vn);
	if (template_render(t->tmpl, vals, &out, &err) < 0 ||
	    images_manifest_refs(&refs, &nr, t->src, out.buf, out.len, &err) < 0)
		unresolved(p, r, "%s: %s", t->src, err.msg);
	for (i = 0; i < nr; i++)
		for (k = 0; k < in->nr; k++)
			if (on_node(in, k, im->on))
				plan_add(p, r, refs[i], k);
	for (i = 0; i < nr; i++)
		free(refs[i]);
	free(refs);
	tval_free(vals);
	strbuf_release(&out);
}

int images_plan_make(struct images_plan *p, const struct images_input *in, struct error *err)
{
	size_t ri, k, vn = values_node(in);

	memset(p, 0, sizeof(*p));
	p->nr_nodes = in->nr;
	if (!in->values)
		return error_set(err, -1, "images: no values for the nodes");
	for (ri = 0; ri < in->roles->nr; ri++) {
		const struct role *r = &in->roles->roles[ri];
		struct tval *chart = NULL;
		size_t ii;

		if (!r->nr_images || !role_in_cluster(in, r))
			continue;
		if (r->chart_artifact && !(chart = role_chart(p, in, r, vn)))
			continue;
		for (ii = 0; ii < r->nr_images; ii++) {
			const struct role_image *im = &r->images[ii];
			if (im->manifest) {
				role_manifest(p, in, r, im, vn);
				continue;
			}
			for (k = 0; k < in->nr; k++) {
				struct strbuf out = STRBUF_INIT, norm = STRBUF_INIT;
				struct error e = {0};
				struct tval *v;
				char *s, *end;
				if (!on_node(in, k, im->on))
					continue;
				v = in->values(in->ctx, k);
				if (chart) {
					tval_set(v, "values",
						 tval_copy(tval_lookup(chart, "values")));
					tval_set(v, "chart",
						 tval_copy(tval_lookup(chart, "chart")));
					tval_set(v, "subcharts",
						 tval_copy(tval_lookup(chart, "subcharts")));
				}
				if (template_render(im->tmpl, v, &out, &e) < 0) {
					unresolved(p, r, "role.yaml:%u: %s", im->line, e.msg);
				} else {
					/* zero or more references, blank-separated */
					for (s = out.buf; *s;) {
						while (*s && isspace((unsigned char)*s))
							s++;
						for (end = s; *end && !isspace((unsigned char)*end);
						     end++)
							;
						if (end == s)
							break;
						strbuf_reset(&norm);
						if (images_normalize(s, (size_t)(end - s), &norm,
								     &e) < 0)
							unresolved(p, r, "role.yaml:%u: %s",
								   im->line, e.msg);
						else
							plan_add(p, r, norm.buf, k);
						s = end;
					}
				}
				tval_free(v);
				strbuf_release(&out);
				strbuf_release(&norm);
			}
		}
		tval_free(chart);
	}
	return 0;
}

void images_plan_release(struct images_plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++) {
		free(p->items[i].ref);
		free(p->items[i].on);
	}
	free(p->items);
	for (i = 0; i < p->nr_unresolved; i++)
		free(p->unresolved[i]);
	free(p->unresolved);
	memset(p, 0, sizeof(*p));
}

static bool role_listed(const char *const *roles, const struct role *r)
{
	size_t i;

	if (!roles)
		return true;
	for (i = 0; roles[i]; i++)
		if (!strcmp(roles[i], r->name))
			return true;
	return false;
}

size_t images_node_refs(const struct images_plan *p, size_t node, const char *const *roles,
			struct strbuf *out)
{
	size_t i, j, n = 0;

	for (i = 0; i < p->nr; i++) {
		bool dup = false;
		if (node >= p->nr_nodes || !p->items[i].on[node] ||
		    !role_listed(roles, p->items[i].role))
			continue;
		for (j = 0; j < i && !dup; j++)
			dup = p->items[j].on[node] && role_listed(roles, p->items[j].role) &&
			      !strcmp(p->items[j].ref, p->items[i].ref);
		if (dup)
			continue;
		if (out->len && out->buf[out->len - 1] != ' ')
			strbuf_addch(out, ' ');
		strbuf_addstr(out, p->items[i].ref);
		n++;
	}
	return n;
}

bool images_node_needs(const struct images_plan *p, size_t node, const char *const *roles,
		       const char *ref, size_t len)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		if (node < p->nr_nodes && p->items[i].on[node] &&
		    role_listed(roles, p->items[i].role) && strlen(p->items[i].ref) == len &&
		    !memcmp(p->items[i].ref, ref, len))
			return true;
	return false;
}
