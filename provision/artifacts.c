/* artifacts: see artifacts.h. */
#include "artifacts.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "schema.h"
#include "transport.h"

static bool is_sha256(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return i == 64;
}

static bool valid_name(const char *s)
{
	size_t i;

	if (!*s || !isalnum((unsigned char)s[0]))
		return false;
	for (i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return i <= 64;
}

static const char *scalar(const yaml_node_t *n)
{
	return schema_scalar(n);
}

static void load_entry(struct artifact_manifest *m, struct schema *sc, const yaml_node_t *k,
		       const yaml_node_t *v, struct diag_list *dl)
{
	struct artifact a = {0};
	yaml_node_pair_t *p = NULL;
	yaml_node_t *ek, *ev;
	bool ok = true;
	size_t i;

	a.name = xstrdup(scalar(k) ? scalar(k) : "");
	a.line = (unsigned)k->start_mark.line + 1;
	if (!valid_name(a.name)) {
		diag_add(dl, DIAG_ERROR, m->path, a.line, (unsigned)k->start_mark.column + 1,
			 "names are letters, digits, '.', '_' and '-'", "bad artifact name '%s'",
			 a.name);
		ok = false;
	}
	for (i = 0; i < m->nr; i++)
		if (!strcmp(m->items[i].name, a.name)) {
			diag_add(dl, DIAG_ERROR, m->path, a.line,
				 (unsigned)k->start_mark.column + 1, NULL,
				 "artifact '%s' is declared twice", a.name);
			ok = false;
		}
	if (v->type != YAML_MAPPING_NODE) {
		diag_add(dl, DIAG_ERROR, m->path, (unsigned)v->start_mark.line + 1,
			 (unsigned)v->start_mark.column + 1, "{url: URL, sha256: HEX}",
			 "artifact '%s' must be a mapping", a.name);
		free(a.name);
		return;
	}
	while (schema_next_pair(sc, v, &p, &ek, &ev)) {
		const char *key = scalar(ek) ? scalar(ek) : "", *s = scalar(ev);
		unsigned line = (unsigned)ev->start_mark.line + 1,
			 col = (unsigned)ev->start_mark.column + 1;

		if (!strcmp(key, "url")) {
			if (!s || (strncmp(s, "https://", 8) && strncmp(s, "http://", 7))) {
				diag_add(dl, DIAG_ERROR, m->path, line, col, NULL,
					 "'url' of '%s' must be an http:// or https:// URL",
					 a.name);
				ok = false;
			} else {
				free(a.url);
				a.url = xstrdup(s);
			}
		} else if (!strcmp(key, "sha256")) {
			a.sha_offset = ev->start_mark.index;
			a.sha_len = ev->end_mark.index - ev->start_mark.index;
			if (s && !strcmp(s, "pending")) {
				free(a.sha256);
				a.sha256 = NULL;
			} else if (s && is_sha256(s)) {
				free(a.sha256);
				a.sha256 = xstrdup(s);
			} else {
				diag_add(
				    dl, DIAG_ERROR, m->path, line, col,
				    "64 lowercase hex digits, or `pending` until 'provision fetch "
				    "--record' fills it in",
				    "'sha256' of '%s' is not a SHA-256", a.name);
				ok = false;
			}
		} else if (!strcmp(key, "description")) {
			free(a.description);
			a.description = s ? xstrdup(s) : NULL;
		} else {
			diag_add(dl, DIAG_ERROR, m->path, (unsigned)ek->start_mark.line + 1,
				 (unsigned)ek->start_mark.column + 1,
				 "keys: url, sha256, description",
				 "unknown key '%s' in artifact '%s'", key, a.name);
			ok = false;
		}
	}
	if (!a.url && ok) {
		diag_add(dl, DIAG_ERROR, m->path, a.line, 1, NULL, "artifact '%s' has no 'url'",
			 a.name);
		ok = false;
	}
	if (!a.sha_len && ok) {
		diag_add(dl, DIAG_ERROR, m->path, a.line, 1,
			 "write `sha256: pending` until 'provision fetch --record' fills it in",
			 "artifact '%s' has no 'sha256'", a.name);
		ok = false;
	}
	if (!ok) {
		free(a.name);
		free(a.url);
		free(a.sha256);
		free(a.description);
		return;
	}
	m->items = xrealloc(m->items, (m->nr + 1) * sizeof(*m->items));
	m->items[m->nr++] = a;
}

int artifact_manifest_load(struct artifact_manifest *m, const char *path, struct diag_list *dl)
{
	struct strbuf text = STRBUF_INIT;
	size_t errors = dl->errors;
	struct schema sc;
	yaml_node_t *root;
	yaml_node_pair_t *p;
	int e;

	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path);
	if ((e = read_file(path, &text)) < 0) {
		if (e == -ENOENT)
			return 0;
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL, "cannot read the artifact manifest: %s",
			 strerror(-e));
		return -1;
	}
	if (schema_load(&sc, path, text.buf, text.len, dl) < 0 ||
	    schema_one_document(&sc, "artifact manifest") < 0)
		goto out;
	root = schema_root(&sc);
	if (root && root->type == YAML_MAPPING_NODE) {
		/* Not schema_next_pair: a name given twice has its own words (load_entry). */
		for (p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++)
			load_entry(m, &sc, schema_node(&sc, p->key), schema_node(&sc, p->value),
				   dl);
	} else if (root && !(root->type == YAML_SCALAR_NODE && !*scalar(root))) {
		diag_add(dl, DIAG_ERROR, path, 1, 1, "NAME: {url: URL, sha256: HEX}",
			 "the artifact manifest must be a mapping of names to entries");
	}
out:
	schema_release(&sc);
	strbuf_release(&text);
	return dl->errors > errors ? -1 : 0;
}

void artifact_manifest_release(struct artifact_manifest *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->items[i].name);
		free(m->items[i].url);
		free(m->items[i].sha256);
		free(m->items[i].description);
	}
	free(m->items);
	free(m->path);
	memset(m, 0, sizeof(*m));
}

const struct artifact *artifact_find(const struct artifact_manifest *m, const char *name)
{
	size_t i;

	for (i = 0; m && i < m->nr; i++)
		if (!strcmp(m->items[i].name, name))
			return &m->items[i];
	return NULL;
}

char *artifact_cache_dir(const char *opt)
{
	const char *env = getenv("PROVISION_CACHE"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (opt)
		return xstrdup(opt);
	if (env && *env)
		return xstrdup(env);
	if (xdg && *xdg == '/')
		return xasprintf("%s/provision/artifacts", xdg);
	if (home && *home == '/')
		return xasprintf("%s/.cache/provision/artifacts", home);
	return geteuid() == 0 ? xstrdup("/var/cache/provision/artifacts") : NULL;
}

char *artifact_cache_path(const char *cache, const char *sha256)
{
	return xasprintf("%s/sha256/%s", cache, sha256);
}

static int mkdir_p(const char *dir)
{
	char *copy = xstrdup(dir), *p;
	int rc = 0;

	for (p = copy + 1;; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			*p = '\0';
			if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
				rc = -errno;
				break;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(copy);
	return rc;
}

/*
 * SHA-256 of a file, read in pieces (an artifact may be large): into keep
 * too when given (what artifact_read hands on), else never whole in memory.
 */
static int hash_file(const char *path, char out[65], uint64_t *size, struct strbuf *keep)
{
	struct transport_sha256 c;
	unsigned char buf[65536], md[32];
	uint64_t total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (keep)
		strbuf_reset(keep);
	transport_sha256_init(&c);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = -errno;
			break;
		}
		transport_sha256_update(&c, buf, (size_t)n);
		if (keep)
			strbuf_add(keep, buf, (size_t)n);
		total += (uint64_t)n;
	}
	close(fd);
	if (e < 0) {
		if (keep)
			strbuf_release(keep);
		return e;
	}
	transport_sha256_final(&c, md);
	transport_hex32(out, md);
	if (size)
		*size = total;
	return 0;
}

int artifact_read(const char *cache, const struct artifact *a, struct strbuf *out,
		  struct error *err)
{
	char *path, got[65];
	int e;

	if (!a->sha256)
		return error_set(err, ARTIFACT_ERR_PENDING, "artifact '%s' has no pinned hash",
				 a->name);
	path = artifact_cache_path(cache, a->sha256);
	e = hash_file(path, got, NULL, out);
	if (e < 0) {
		error_set(err, ARTIFACT_ERR, "artifact '%s' is not in the cache '%s'", a->name,
			  cache);
		error_hint(err, "run 'provision fetch' on a machine that can reach %s", a->url);
		free(path);
		return ARTIFACT_ERR;
	}
	if (strcmp(got, a->sha256)) {
		unlink(path);
		strbuf_reset(out);
		error_set(
		    err, ARTIFACT_ERR_CHECKSUM,
		    "cached artifact '%s' changed on disk: expected sha256 %s, found %s (removed)",
		    a->name, a->sha256, got);
		free(path);
		return ARTIFACT_ERR_CHECKSUM;
	}
	free(path);
	return 0;
}

struct fetch_progress {
	const struct artifact_fetch_opts *o;
	const struct artifact *a;
};

static void on_progress(void *ctx, uint64_t have, uint64_t total)
{
	struct fetch_progress *fp = ctx;

	if (fp->o->progress)
		fp->o->progress(fp->o->ctx, fp->a, have, total);
}

int artifact_fetch(const struct artifact *a, const struct artifact_fetch_opts *o,
		   struct artifact_fetch_result *res, struct error *err)
{
	char *final = NULL, *partdir = xasprintf("%s/partial", o->cache);
	char *part = xasprintf("%s/%s", partdir, a->name),
	     *shadir = xasprintf("%s/sha256", o->cache);
	struct fetch_progress fp = {o, a};
	int retries = o->retries > 0 ? o->retries : 3, lock_fd = -1, e, ret = ARTIFACT_ERR;
	int max_time = o->max_time_s > 0 ? o->max_time_s : ARTIFACT_MAX_TIME_S;
	uint64_t max_size = o->max_size ? o->max_size : ARTIFACT_MAX_SIZE;
	uint64_t deadline = now_ms() + (uint64_t)max_time * 1000;
	struct error herr = {0};

	memset(res, 0, sizeof(*res));
	if (a->sha256) {
		final = artifact_cache_path(o->cache, a->sha256);
		if (hash_file(final, res->sha256, &res->size, NULL) == 0) {
			if (!strcmp(res->sha256, a->sha256)) {
				res->cached = true;
				ret = 0;
				goto out;
			}
			unlink(final); /* damaged on disk: fetch it again */
		}
	}
	if ((e = mkdir_p(partdir)) < 0 || (e = mkdir_p(shadir)) < 0) {
		error_set(err, ARTIFACT_ERR, "cannot create the artifact cache '%s': %s", o->cache,
			  strerror(-e));
		goto out;
	}
	{
		char *lock = xasprintf("%s.lock", part);
		lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		free(lock);
		if (lock_fd < 0 || flock(lock_fd, LOCK_EX) < 0) {
			error_set(err, ARTIFACT_ERR, "cannot lock '%s': %s", part, strerror(errno));
			goto out;
		}
	}
	for (;;) {
		/* Every attempt within what is left of the whole fetch's time. */
		uint64_t now = now_ms();
		int left = now < deadline ? (int)((deadline - now + 999) / 1000) : 0;
		struct http_download d = {
		    .url = a->url,
		    .path = part,
		    .connect_timeout_ms = o->connect_timeout_ms,
		    .stall_timeout_s = o->stall_timeout_s,
		    .timeout_s = o->timeout_s && o->timeout_s < left ? o->timeout_s : left,
		    .max_size = max_size,
		    .progress = on_progress,
		    .ctx = &fp,
		};
		struct http_download_result dr;
		bool out_of_time;
		res->attempts++;
		e = left ? http_download(&d, &dr, &herr)
			 : error_set(&herr, HTTP_ERR_TIMEOUT, "'%s': no time left", a->url);
		res->resumed_from = left ? dr.resumed_from : 0;
		if (e == 0)
			break;
		out_of_time = now_ms() >= deadline;
		if ((e == HTTP_ERR_PARTIAL || e == HTTP_ERR_TIMEOUT) &&
		    res->attempts <= (unsigned)retries && !out_of_time)
			continue; /* resume from what arrived */
		if (e == HTTP_ERR_STATUS || e == HTTP_ERR_TOO_BIG)
			unlink(part); /* nothing of an error page or of a flood is worth keeping */
		if (out_of_time && (e == HTTP_ERR_PARTIAL || e == HTTP_ERR_TIMEOUT))
			error_set(err, ARTIFACT_ERR_FETCH,
				  "cannot fetch artifact '%s': gave up after %d s (the most one "
				  "fetch may take): %s",
				  a->name, max_time, herr.msg);
		else
			error_set(err, ARTIFACT_ERR_FETCH, "cannot fetch artifact '%s': %s",
				  a->name, herr.msg);
		if (e == HTTP_ERR_PARTIAL || e == HTTP_ERR_TIMEOUT)
			error_hint(err,
				   "%u attempts; what arrived is kept in '%s' and the next fetch "
				   "resumes from it",
				   res->attempts, part);
		else if (e == HTTP_ERR_STATUS)
			error_hint(err, "check the URL in '%s' (line %u)", "the artifact manifest",
				   a->line);
		goto out;
	}
	if ((e = hash_file(part, res->sha256, &res->size, NULL)) < 0) {
		error_set(err, ARTIFACT_ERR, "cannot read '%s': %s", part, strerror(-e));
		goto out;
	}
	if (a->sha256 && strcmp(res->sha256, a->sha256)) {
		unlink(part);
		ret = error_set(err, ARTIFACT_ERR_CHECKSUM,
				"checksum mismatch for '%s': expected sha256 %s, got %s", a->url,
				a->sha256, res->sha256);
		error_hint(err,
			   "the file at the URL is not the one the manifest pins (artifact "
			   "'%s'); nothing was kept",
			   a->name);
		goto out;
	}
	free(final);
	final = artifact_cache_path(o->cache, res->sha256);
	if (rename(part, final) < 0) {
		error_set(err, ARTIFACT_ERR, "cannot store '%s': %s", final, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (lock_fd >= 0) {
		char *lock = xasprintf("%s.lock", part);
		unlink(lock);
		free(lock);
		close(lock_fd);
	}
	free(final);
	free(partdir);
	free(part);
	free(shadir);
	return ret;
}

int artifact_manifest_record(const struct artifact_manifest *m, const struct artifact *a,
			     const char *sha256, struct error *err)
{
	struct artifact_manifest fresh;
	struct diag_list dl;
	struct strbuf text = STRBUF_INIT, out = STRBUF_INIT;
	const struct artifact *f;
	char *tmp = NULL;
	int fd = -1, e, ret = ARTIFACT_ERR;

	/* Offsets of the file as it is now: an earlier record may have moved them. */
	diag_list_init(&dl);
	if (artifact_manifest_load(&fresh, m->path, &dl) < 0 || read_file(m->path, &text) < 0) {
		error_set(err, ARTIFACT_ERR, "cannot read the manifest '%s' again", m->path);
		goto out;
	}
	f = artifact_find(&fresh, a->name);
	if (!f || f->sha_offset + f->sha_len > text.len) {
		error_set(err, ARTIFACT_ERR, "artifact '%s' is no longer in '%s'", a->name,
			  m->path);
		goto out;
	}
	strbuf_add(&out, text.buf, f->sha_offset);
	strbuf_addstr(&out, sha256);
	strbuf_add(&out, text.buf + f->sha_offset + f->sha_len,
		   text.len - f->sha_offset - f->sha_len);
	tmp = xasprintf("%s.tmp", m->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		error_set(err, ARTIFACT_ERR, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	e = write_all(fd, out.buf, out.len);
	if (close(fd) < 0 && !e)
		e = -errno;
	if (!e && rename(tmp, m->path) < 0)
		e = -errno;
	if (e) {
		unlink(tmp);
		error_set(err, ARTIFACT_ERR, "cannot write '%s': %s", m->path, strerror(-e));
		goto out;
	}
	ret = 0;
out:
	artifact_manifest_release(&fresh);
	diag_list_release(&dl);
	strbuf_release(&text);
	strbuf_release(&out);
	free(tmp);
	return ret;
}
