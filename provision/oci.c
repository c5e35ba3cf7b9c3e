/* oci: see oci.h. */
#include "oci.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "transport.h"

static const char accept_manifests[] = "Accept: application/vnd.oci.image.index.v1+json, "
				       "application/vnd.docker.distribution.manifest.list.v2+json, "
				       "application/vnd.oci.image.manifest.v1+json, "
				       "application/vnd.docker.distribution.manifest.v2+json";

/* ---- references ---- */

int oci_ref_parse(struct oci_ref *r, const char *ref, struct error *err)
{
	const char *slash = strchr(ref, '/'), *at, *colon, *last;

	memset(r, 0, sizeof(*r));
	if (!slash || slash == ref || !slash[1])
		return error_set(err, -1, "'%s': not REGISTRY/REPOSITORY[:TAG][@DIGEST]", ref);
	r->registry = xstrndup(ref, (size_t)(slash - ref));
	at = strchr(slash, '@');
	if (at)
		r->digest = xstrdup(at + 1);
	last = strrchr(slash, '/');
	colon = strchr(last, ':');
	if (colon && (!at || colon < at)) {
		r->repository = xstrndup(slash + 1, (size_t)(colon - slash - 1));
		r->tag = at ? xstrndup(colon + 1, (size_t)(at - colon - 1)) : xstrdup(colon + 1);
	} else {
		r->repository =
		    xstrndup(slash + 1, (size_t)((at ? at : slash + strlen(slash)) - slash - 1));
	}
	if (!*r->repository || (!r->tag && !r->digest)) {
		oci_ref_release(r);
		return error_set(err, -1, "'%s': no repository, or neither tag nor digest", ref);
	}
	return 0;
}

void oci_ref_release(struct oci_ref *r)
{
	free(r->registry);
	free(r->repository);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}

static bool digest_ok(const char *d)
{
	size_t i;

	if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71)
		return false;
	for (i = 7; i < 71; i++)
		if (!isxdigit((unsigned char)d[i]) || isupper((unsigned char)d[i]))
			return false;
	return true;
}

/* ---- the cache ---- */

static char *blob_path(const char *cache, const char *digest)
{
	return xasprintf("%s/images/blobs/sha256/%s", cache, digest + 7);
}

static int mkdirs(const char *cache, struct error *err)
{
	static const char *const subs[] = {"", "/images", "/images/blobs", "/images/blobs/sha256",
					   "/images/refs"};
	size_t i;

	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char *d = xasprintf("%s%s", cache, subs[i]);
		int rc = mkdir(d, 0700);
		if (rc < 0 && errno != EEXIST) {
			error_set(err, -1, "cannot create '%s': %s", d, strerror(errno));
			free(d);
			return -1;
		}
		free(d);
	}
	return 0;
}

static char *ref_path(const char *cache, const char *ref, const char *arch)
{
	char hex[65], *key = xasprintf("%s %s", ref, arch), *p;

	transport_sha256_hex(hex, key, strlen(key));
	p = xasprintf("%s/images/refs/%s", cache, hex);
	free(key);
	return p;
}

/* A blob in the cache at its size (blobs are verified before they get their name). */
static bool blob_have(const char *cache, const char *digest, uint64_t size)
{
	char *p = blob_path(cache, digest);
	struct stat st;
	bool ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;

	free(p);
	return ok;
}

/* Write data to path through a temporary file beside it. */
static int write_atomic(const char *path, const void *data, size_t len, struct error *err)
{
	char *tmp = xasprintf("%s.tmp%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e = 0;

	if (fd < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0)
		e = errno ? errno : EIO;
	if (fd >= 0 && close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e) {
		unlink(tmp);
		error_set(err, -1, "cannot write '%s': %s", path, strerror(e));
	}
	free(tmp);
	return e ? -1 : 0;
}

/* ---- requests, with the registry's authentication ---- */

struct session {
	const struct oci_opts *o;
	const struct oci_endpoint *ep;
	const struct oci_ref *ref;
	const char *ref_text;
	char *auth;	     /* "Authorization: ..." once known; a secret */
	struct http_tls tls; /* the endpoint's CA (borrowed) */
};

char *oci_challenge_param(const char *ch, const char *name)
{
	size_t nl = strlen(name);
	const char *p = ch;

	if (!ch)
		return NULL;
	/* after the scheme: name="value", name=value, comma-separated */
	while (*p && !isspace((unsigned char)*p))
		p++;
	while (*p) {
		const char *k, *v, *e;
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		k = p;
		while (*p && *p != '=' && *p != ',')
			p++;
		if (*p != '=')
			continue;
		v = ++p;
		if (*v == '"') {
			v++;
			e = strchr(v, '"');
			if (!e)
				return NULL;
			p = e + 1;
		} else {
			e = v + strcspn(v, ", ");
			p = e;
		}
		if ((size_t)(v - k - 1 - (v[-1] == '"')) == nl && !strncasecmp(k, name, nl))
			return xstrndup(v, (size_t)(e - v));
	}
	return NULL;
}

static void url_escape(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || strchr("-._~", c))
			strbuf_addch(sb, c);
		else
			strbuf_addf(sb, "%%%02X", c);
	}
}

static void basic_header(struct strbuf *sb, const char *user, const char *pass)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct strbuf raw = STRBUF_INIT;
	size_t i;

	strbuf_addf(&raw, "%s:%s", user, pass);
	strbuf_addstr(sb, "Authorization: Basic ");
	for (i = 0; i < raw.len; i += 3) {
		unsigned v = (unsigned char)raw.buf[i] << 16;
		if (i + 1 < raw.len)
			v |= (unsigned char)raw.buf[i + 1] << 8;
		if (i + 2 < raw.len)
			v |= (unsigned char)raw.buf[i + 2];
		strbuf_addch(sb, b64[(v >> 18) & 63]);
		strbuf_addch(sb, b64[(v >> 12) & 63]);
		strbuf_addch(sb, i + 1 < raw.len ? b64[(v >> 6) & 63] : '=');
		strbuf_addch(sb, i + 2 < raw.len ? b64[v & 63] : '=');
	}
	explicit_bzero(raw.buf, raw.len);
	strbuf_release(&raw);
}

static void request_init(struct http_request *rq, const struct session *s, const char *url)
{
	memset(rq, 0, sizeof(*rq));
	rq->url = url;
	rq->fd = -1;
	rq->tls = &s->tls;
	rq->connect_timeout_ms = s->o->connect_timeout_ms;
	rq->stall_timeout_s = s->o->stall_timeout_s;
	rq->insecure = s->ep->insecure;
}

/*
 * After a 401: the credentials the challenge asks for.  Bearer: a token
 * from its realm (with the endpoint's user and password when it has
 * them, anonymous otherwise); Basic: the user and password.  0 when there
 * is something new to try, -1 when not.
 */
static int authenticate(struct session *s, const char *challenge, struct error *err)
{
	struct strbuf url = STRBUF_INIT, hdr = STRBUF_INIT;
	struct http_request rq;
	struct http_response res;
	const char *hdrs[2] = {NULL, NULL};
	char *realm = NULL, *service = NULL, *scope = NULL;
	json_t *j = NULL;
	const char *tok;
	int rc = -1;

	if (!challenge)
		return error_set(err, -1,
				 "unauthorized (HTTP 401) without a WWW-Authenticate challenge");
	if (!strncasecmp(challenge, "Basic", 5)) {
		if (!s->ep->username || s->auth)
			return error_set(err, -1, "unauthorized (HTTP 401): %s",
					 s->ep->username ? "the registry refused the credentials"
							 : "the registry wants credentials");
		basic_header(&hdr, s->ep->username, s->ep->password ? s->ep->password : "");
		s->auth = strbuf_detach(&hdr, NULL);
		return 0;
	}
	if (strncasecmp(challenge, "Bearer", 6) || s->auth)
		return error_set(
		    err, -1, "unauthorized (HTTP 401)%s",
		    s->auth ? ": the registry refused its own token (credentials needed?)" : "");
	realm = oci_challenge_param(challenge, "realm");
	service = oci_challenge_param(challenge, "service");
	scope = oci_challenge_param(challenge, "scope");
	if (!realm || (strncmp(realm, "https://", 8) && strncmp(realm, "http://", 7))) {
		error_set(err, -1, "unauthorized (HTTP 401): a Bearer challenge without a realm");
		goto out;
	}
	if (!strncmp(s->ep->url, "https://", 8) && strncmp(realm, "https://", 8)) {
		/* credentials and tokens never go from https down to http (http.h) */
		error_set(err, -1,
			  "unauthorized (HTTP 401): %s sends for its token to a plain http:// "
			  "realm (refused)",
			  s->ep->url);
		goto out;
	}
	strbuf_addf(&url, "%s%s", realm, strchr(realm, '?') ? "&" : "?");
	if (service) {
		strbuf_addstr(&url, "service=");
		url_escape(&url, service);
		strbuf_addch(&url, '&');
	}
	strbuf_addstr(&url, "scope=");
	if (scope) {
		url_escape(&url, scope);
	} else {
		struct strbuf sc = STRBUF_INIT;
		strbuf_addf(&sc, "repository:%s:pull", s->ref->repository);
		url_escape(&url, sc.buf);
		strbuf_release(&sc);
	}
	request_init(&rq, s, url.buf);
	rq.max_body = 64 << 10;
	rq.timeout_s = 60;
	if (s->ep->username) {
		basic_header(&hdr, s->ep->username, s->ep->password ? s->ep->password : "");
		hdrs[0] = hdr.buf;
		rq.headers = hdrs;
	}
	if (http_request(&rq, &res, err) < 0)
		goto out;
	if (res.status != 200) {
		error_set(err, -1, "unauthorized: the token service %s answered HTTP %ld", realm,
			  res.status);
		http_response_release(&res);
		goto out;
	}
	j = json_loadb(res.body.buf, res.body.len, 0, NULL);
	tok = json_string_value(json_object_get(j, "token"));
	if (!tok)
		tok = json_string_value(json_object_get(j, "access_token"));
	if (!tok || !*tok || strlen(tok) > 16384 || strpbrk(tok, " \r\n")) {
		error_set(err, -1, "unauthorized: the token service %s gave no token", realm);
	} else {
		s->auth = xasprintf("Authorization: Bearer %s", tok);
		rc = 0;
	}
	explicit_bzero(res.body.buf, res.body.len);
	http_response_release(&res);
out:
	json_decref(j);
	if (hdr.len)
		explicit_bzero(hdr.buf, hdr.len);
	strbuf_release(&hdr);
	strbuf_release(&url);
	free(realm);
	free(service);
	free(scope);
	return rc;
}

/* Why a status is a failure, as a person reads it. */
static int status_error(const struct session *s, const char *what, const struct http_response *res,
			struct error *err)
{
	switch (res->status) {
	case 404:
		return error_set(err, -1, "not found: %s has no %s %s", s->ep->url, what,
				 s->ref_text);
	case 401:
		return error_set(err, -1, "unauthorized (HTTP 401) at %s", s->ep->url);
	case 403:
		return error_set(err, -1, "forbidden (HTTP 403) at %s", s->ep->url);
	case 429:
		return error_set(
		    err, -1, "rate limited (HTTP 429 Too Many Requests) at %s%s%s%s", s->ep->url,
		    res->retry_after ? ", retry after " : "",
		    res->retry_after ? res->retry_after : "",
		    res->retry_after && isdigit((unsigned char)res->retry_after[0]) ? " s" : "");
	default:
		return error_set(err, -1, "%s answered HTTP %ld for the %s of %s", s->ep->url,
				 res->status, what, s->ref_text);
	}
}

/* GET (authenticating once when asked to); res holds the answer. */
static int get(struct session *s, struct http_request *rq, const char *accept,
	       struct http_response *res, struct error *err)
{
	const char *hdrs[3];
	int tries;

	for (tries = 0; tries < 2; tries++) {
		size_t n = 0;
		if (accept)
			hdrs[n++] = accept;
		if (s->auth)
			hdrs[n++] = s->auth;
		hdrs[n] = NULL;
		rq->headers = hdrs;
		if (http_request(rq, res, err) < 0)
			return -1;
		if (res->status != 401 || tries)
			return 0;
		if (authenticate(s, res->www_authenticate, err) < 0) {
			http_response_release(res);
			return -1;
		}
		http_response_release(res);
		if (rq->fd >= 0 && ftruncate(rq->fd, (off_t)rq->resume_from) < 0)
			return error_set(err, -1, "cannot write the blob: %s", strerror(errno));
	}
	return 0;
}

/* A manifest (or index) by tag or digest: its bytes, digest and media type, verified. */
static int get_manifest(struct session *s, const char *reference, const char *want_digest,
			struct strbuf *body, char digest[72], char *media, size_t media_len,
			struct error *err)
{
	struct strbuf url = STRBUF_INIT;
	struct http_request rq;
	struct http_response res;
	char hex[65];
	json_t *j;
	const char *mt;
	int rc = -1;

	strbuf_addf(&url, "%s/v2/%s/manifests/%s", s->ep->url, s->ref->repository, reference);
	request_init(&rq, s, url.buf);
	rq.max_body = OCI_MANIFEST_MAX;
	rq.timeout_s = 120;
	if (get(s, &rq, accept_manifests, &res, err) < 0)
		goto out;
	if (res.status != 200) {
		status_error(s, "manifest", &res, err);
		http_response_release(&res);
		goto out;
	}
	transport_sha256_hex(hex, res.body.buf, res.body.len);
	snprintf(digest, 72, "sha256:%s", hex);
	if (want_digest && strcmp(want_digest, digest)) {
		error_set(err, -1, "%s sent a manifest whose digest is %s, not the %s asked for",
			  s->ep->url, digest, want_digest);
		http_response_release(&res);
		goto out;
	}
	if (res.docker_content_digest && !strncmp(res.docker_content_digest, "sha256:", 7) &&
	    strcmp(res.docker_content_digest, digest)) {
		error_set(err, -1, "%s: the manifest's bytes hash to %s, the registry says %s",
			  s->ep->url, digest, res.docker_content_digest);
		http_response_release(&res);
		goto out;
	}
	j = json_loadb(res.body.buf, res.body.len, 0, NULL);
	mt = json_string_value(json_object_get(j, "mediaType"));
	if (!mt && res.content_type)
		mt = res.content_type;
	snprintf(media, media_len, "%.*s", (int)strcspn(mt ? mt : "", ";"), mt ? mt : "");
	json_decref(j);
	strbuf_reset(body);
	strbuf_add(body, res.body.buf, res.body.len);
	http_response_release(&res);
	rc = 0;
out:
	strbuf_release(&url);
	return rc;
}

static void sha256_end_hex(struct transport_sha256 *c, char hex[65])
{
	unsigned char md[32];

	transport_sha256_final(c, md);
	transport_hex32(hex, md);
}

struct blob_dl {
	struct transport_sha256 sha;
	const struct oci_opts *o;
	const char *ref, *digest;
	uint64_t total;
};

static void blob_data(void *ctx, const void *p, size_t n)
{
	struct blob_dl *b = ctx;
	transport_sha256_update(&b->sha, p, n);
}

static void blob_restart(void *ctx)
{
	struct blob_dl *b = ctx;
	transport_sha256_init(&b->sha);
}

static void blob_progress(void *ctx, uint64_t have, uint64_t total)
{
	struct blob_dl *b = ctx;
	if (b->o->progress)
		b->o->progress(b->o->ctx, b->ref, b->digest, have, b->total);
}

/* One blob into the cache, verified; a partial one from an earlier attempt is resumed. */
static int get_blob(struct session *s, const char *digest, uint64_t size, struct error *err)
{
	char *path = blob_path(s->o->cache, digest), *part = xasprintf("%s.partial", path);
	struct strbuf url = STRBUF_INIT;
	struct blob_dl b = {.o = s->o, .ref = s->ref_text, .digest = digest, .total = size};
	struct http_request rq;
	struct http_response res;
	struct stat st;
	char hex[65];
	int fd = -1, attempt, rc = -1;

	if (blob_have(s->o->cache, digest, size)) {
		rc = 0;
		goto out;
	}
	if (s->o->max_blob_size && size > s->o->max_blob_size) {
		error_set(err, -1, "%s: blob %s is %llu bytes, more than the %llu allowed (--max-size)",
			  s->ep->url, digest, (unsigned long long)size,
			  (unsigned long long)s->o->max_blob_size);
		goto out;
	}
	strbuf_addf(&url, "%s/v2/%s/blobs/%s", s->ep->url, s->ref->repository, digest);
	for (attempt = 0; attempt < 3; attempt++) {
		uint64_t have = 0;
		fd = open(part, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0) {
			error_set(err, -1, "cannot write '%s': %s", part, strerror(errno));
			goto out;
		}
		transport_sha256_init(&b.sha);
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size <= size) {
			/* what an earlier attempt left: hashed again, then the rest asked for */
			char buf[1 << 16];
			ssize_t n;
			lseek(fd, 0, SEEK_SET);
			while ((n = read(fd, buf, sizeof(buf))) > 0) {
				transport_sha256_update(&b.sha, buf, (size_t)n);
				have += (uint64_t)n;
			}
		} else if (ftruncate(fd, 0) < 0) {
			error_set(err, -1, "cannot write '%s': %s", part, strerror(errno));
			goto out;
		}
		if (have < size) {
			request_init(&rq, s, url.buf);
			rq.fd = fd;
			rq.resume_from = have;
			rq.max_size = size; /* what the manifest says, not a byte more */
			rq.timeout_s = s->o->blob_timeout_s;
			rq.on_data = blob_data;
			rq.on_restart = blob_restart;
			rq.progress = blob_progress;
			rq.ctx = &b;
			if (get(s, &rq, NULL, &res, err) < 0) {
				close(fd);
				fd = -1;
				if (err->code == HTTP_ERR_PARTIAL || err->code == HTTP_ERR_TIMEOUT)
					continue;
				if (err->code == HTTP_ERR_TOO_BIG)
					unlink(part);
				goto out;
			}
			if (res.status != 200 && res.status != 206 &&
			    !(res.status == 416 && have == size)) {
				status_error(s, "blob", &res, err);
				http_response_release(&res);
				goto out;
			}
			http_response_release(&res);
		}
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size) {
			error_set(err, -1, "%s: blob %s is %lld bytes, the manifest says %llu",
				  s->ep->url, digest, (long long)st.st_size,
				  (unsigned long long)size);
			unlink(part);
			goto out;
		}
		sha256_end_hex(&b.sha, hex);
		if (strcmp(hex, digest + 7)) {
			error_set(err, -1, "%s: blob %s: what came hashes to sha256:%s (refused)",
				  s->ep->url, digest, hex);
			unlink(part);
			goto out;
		}
		if (fsync(fd) < 0 || rename(part, path) < 0) {
			error_set(err, -1, "cannot write '%s': %s", path, strerror(errno));
			goto out;
		}
		rc = 0;
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	strbuf_release(&url);
	free(path);
	free(part);
	return rc;
}

/* The platform's manifest of an index: its digest, size and media type. */
static int pick_platform(const char *index, size_t len, const char *arch, char digest[72],
			 uint64_t *size, char *media, size_t media_len, struct error *err)
{
	json_t *j = json_loadb(index, len, 0, NULL), *list, *m, *best = NULL;
	size_t i;
	int rc = -1;

	list = json_object_get(j, "manifests");
	if (!json_is_array(list)) {
		error_set(err, -1, "an index without manifests");
		goto out;
	}
	json_array_foreach(list, i, m)
	{
		json_t *p = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(p, "os"));
		const char *a = json_string_value(json_object_get(p, "architecture"));
		const char *v = json_string_value(json_object_get(p, "variant"));
		if (!os || !a || strcmp(os, "linux") || strcmp(a, arch))
			continue;
		/* arm64: v8 (or no variant) is what the nodes run */
		if (!best || (v && !strcmp(v, "v8")))
			best = m;
	}
	if (!best) {
		error_set(err, -1, "no linux/%s image in its index", arch);
		goto out;
	}
	{
		const char *d = json_string_value(json_object_get(best, "digest"));
		const char *mt = json_string_value(json_object_get(best, "mediaType"));
		json_int_t sz = json_integer_value(json_object_get(best, "size"));
		if (!digest_ok(d) || sz <= 0 || (uint64_t)sz > OCI_MANIFEST_MAX) {
			error_set(err, -1, "the index names a bad manifest for linux/%s", arch);
			goto out;
		}
		snprintf(digest, 72, "%s", d);
		*size = (uint64_t)sz;
		snprintf(media, media_len, "%s", mt ? mt : "");
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}

static bool is_index(const char *media, const char *body, size_t len)
{
	json_t *j;
	bool idx;

	if (!strcmp(media, "application/vnd.oci.image.index.v1+json") ||
	    !strcmp(media, "application/vnd.docker.distribution.manifest.list.v2+json"))
		return true;
	if (*media)
		return false;
	j = json_loadb(body, len, 0, NULL);
	idx = json_is_array(json_object_get(j, "manifests"));
	json_decref(j);
	return idx;
}

/* An image's config says which platform it is for: it must be the node's. */
static int check_config(const char *cache, const char *digest, const char *arch, struct error *err)
{
	char *path = blob_path(cache, digest);
	struct strbuf sb = STRBUF_INIT;
	json_t *j;
	const char *os, *a;
	int rc = 0;

	sb.max = OCI_MANIFEST_MAX;
	if (read_file(path, &sb) < 0) {
		free(path);
		return error_set(err, -1, "the bundle lost config %s", digest);
	}
	j = json_loadb(sb.buf, sb.len, 0, NULL);
	os = json_string_value(json_object_get(j, "os"));
	a = json_string_value(json_object_get(j, "architecture"));
	if ((os && strcmp(os, "linux")) || (a && strcmp(a, arch)))
		rc = error_set(err, -1,
			       "the image is for %s/%s, not linux/%s (no index names others)",
			       os ? os : "?", a ? a : "?", arch);
	json_decref(j);
	strbuf_release(&sb);
	free(path);
	return rc;
}

/* From one endpoint: the manifest for arch, then its blobs. */
static int fetch_from(struct session *s, const char *arch, struct oci_image *img, struct error *err)
{
	struct strbuf body = STRBUF_INIT;
	char digest[72], media[96];
	json_t *j = NULL, *layers, *cfg;
	size_t i;
	int rc = -1;

	if (get_manifest(s, s->ref->digest ? s->ref->digest : s->ref->tag, s->ref->digest, &body,
			 digest, media, sizeof(media), err) < 0)
		goto out;
	if (is_index(media, body.buf, body.len)) {
		char want[72];
		uint64_t size;
		if (pick_platform(body.buf, body.len, arch, want, &size, media, sizeof(media),
				  err) < 0)
			goto out;
		if (get_manifest(s, want, want, &body, digest, media, sizeof(media), err) < 0)
			goto out;
		if (body.len != size) {
			error_set(err, -1,
				  "the manifest for linux/%s is %zu bytes, its index says %llu",
				  arch, body.len, (unsigned long long)size);
			goto out;
		}
	}
	j = json_loadb(body.buf, body.len, 0, NULL);
	if (json_integer_value(json_object_get(j, "schemaVersion")) != 2) {
		error_set(err, -1, "a manifest of schema %lld (only schema 2 images are fetched)",
			  (long long)json_integer_value(json_object_get(j, "schemaVersion")));
		goto out;
	}
	cfg = json_object_get(j, "config");
	layers = json_object_get(j, "layers");
	if (!json_is_object(cfg) || !json_is_array(layers) ||
	    json_array_size(layers) > OCI_LAYERS_MAX) {
		error_set(err, -1, "a manifest without a config or with more than %d layers",
			  OCI_LAYERS_MAX);
		goto out;
	}
	memset(img, 0, sizeof(*img));
	snprintf(img->manifest, sizeof(img->manifest), "%s", digest);
	snprintf(img->media_type, sizeof(img->media_type), "%s", media);
	img->manifest_size = body.len;
	for (i = 0; i <= json_array_size(layers); i++) {
		json_t *d = i == 0 ? cfg : json_array_get(layers, i - 1);
		const char *dg = json_string_value(json_object_get(d, "digest"));
		json_int_t sz = json_integer_value(json_object_get(d, "size"));
		bool had;
		if (!digest_ok(dg) || sz < 0 || (uint64_t)sz > OCI_BLOB_MAX) {
			error_set(err, -1, "the manifest names a blob with a bad digest or size");
			goto out;
		}
		had = blob_have(s->o->cache, dg, (uint64_t)sz);
		if (get_blob(s, dg, (uint64_t)sz, err) < 0)
			goto out;
		if (i == 0 && check_config(s->o->cache, dg, arch, err) < 0)
			goto out;
		img->fetched = img->fetched || !had;
		img->bytes += (uint64_t)sz;
		img->blobs++;
	}
	/* the manifest last: a bundle entry whose manifest is there has every blob */
	{
		char *path = blob_path(s->o->cache, digest);
		if (!blob_have(s->o->cache, digest, body.len)) {
			img->fetched = true;
			if (write_atomic(path, body.buf, body.len, err) < 0) {
				free(path);
				goto out;
			}
		}
		free(path);
	}
	rc = 0;
out:
	json_decref(j);
	strbuf_release(&body);
	return rc;
}

int oci_fetch(const struct oci_opts *o, const char *ref, const char *arch, struct oci_image *out,
	      struct error *err)
{
	struct oci_ref r;
	const struct oci_endpoint *eps = NULL;
	struct oci_endpoint def = {0};
	struct strbuf why = STRBUF_INIT;
	size_t nr = 0, i;
	char *url = NULL;
	int rc = -1;

	if (oci_ref_parse(&r, ref, err) < 0)
		return -1;
	if (mkdirs(o->cache, err) < 0)
		goto out;
	if (o->endpoints)
		nr = o->endpoints(o->ctx, r.registry, &eps);
	if (!nr) {
		url = xasprintf("https://%s", !strcmp(r.registry, "docker.io")
						  ? "registry-1.docker.io"
						  : r.registry);
		def.url = url;
		eps = &def;
		nr = 1;
	}
	for (i = 0; i < nr; i++) {
		struct session s = {.o = o, .ep = &eps[i], .ref = &r, .ref_text = ref};
		struct error e = {0};
		s.tls.ca_pem = (char *)eps[i].ca_pem;
		s.tls.ca_len = eps[i].ca_len;
		rc = fetch_from(&s, arch, out, &e);
		if (s.auth) {
			explicit_bzero(s.auth, strlen(s.auth));
			free(s.auth);
		}
		if (rc == 0) {
			snprintf(out->ref, sizeof(out->ref), "%s", ref);
			snprintf(out->arch, sizeof(out->arch), "%s", arch);
			snprintf(out->endpoint, sizeof(out->endpoint), "%s", eps[i].url);
			break;
		}
		/* every endpoint's reason, in the order tried */
		strbuf_addf(&why, "%s%s", why.len ? "; then " : "", e.msg);
	}
	if (rc < 0)
		error_set(err, -1, "%s", why.buf);
	if (rc == 0) {
		struct strbuf sb = STRBUF_INIT;
		char *path = ref_path(o->cache, ref, arch);
		error_clear(err);
		strbuf_addf(
		    &sb, "ref %s\nplatform linux/%s\nmanifest %s %s %llu\nbytes %llu\nblobs %u\n",
		    ref, arch, out->manifest, out->media_type,
		    (unsigned long long)out->manifest_size, (unsigned long long)out->bytes,
		    out->blobs);
		rc = write_atomic(path, sb.buf, sb.len, err);
		strbuf_release(&sb);
		free(path);
	}
out:
	strbuf_release(&why);
	free(url);
	oci_ref_release(&r);
	return rc;
}

/* ---- the bundle, read ---- */

static int read_entry(const char *cache, const char *ref, const char *arch, struct oci_image *img)
{
	char *path = ref_path(cache, ref, arch);
	struct strbuf sb = STRBUF_INIT;
	char r[520], plat[48], dg[72], mt[96];
	unsigned long long msize, bytes;
	unsigned blobs;
	int ok = 0;

	sb.max = 8192;
	if (read_file(path, &sb) == 0 &&
	    sscanf(sb.buf,
		   "ref %519s\nplatform %47s\nmanifest %71s %95s %llu\nbytes %llu\nblobs %u", r,
		   plat, dg, mt, &msize, &bytes, &blobs) == 7 &&
	    !strcmp(r, ref) && !strncmp(plat, "linux/", 6) && !strcmp(plat + 6, arch) &&
	    digest_ok(dg)) {
		memset(img, 0, sizeof(*img));
		snprintf(img->ref, sizeof(img->ref), "%s", ref);
		snprintf(img->arch, sizeof(img->arch), "%s", arch);
		snprintf(img->manifest, sizeof(img->manifest), "%s", dg);
		snprintf(img->media_type, sizeof(img->media_type), "%s", mt);
		img->manifest_size = msize;
		img->bytes = bytes;
		img->blobs = blobs;
		ok = 1;
	}
	strbuf_release(&sb);
	free(path);
	return ok;
}

/* The manifest's blobs (config first), with their sizes. */
static int manifest_blobs(const char *cache, const struct oci_image *img, char (**digests)[72],
			  uint64_t **sizes, size_t *nr, struct error *err)
{
	char *path = blob_path(cache, img->manifest);
	struct strbuf sb = STRBUF_INIT;
	json_t *j = NULL, *layers;
	size_t i;
	int rc = -1;

	*digests = NULL;
	*sizes = NULL;
	*nr = 0;
	sb.max = OCI_MANIFEST_MAX + 1;
	if (read_file(path, &sb) < 0 || sb.len != img->manifest_size) {
		error_set(err, -1, "the bundle lost the manifest of %s (%s)", img->ref, path);
		goto out;
	}
	j = json_loadb(sb.buf, sb.len, 0, NULL);
	layers = json_object_get(j, "layers");
	if (!json_is_array(layers) || json_array_size(layers) > OCI_LAYERS_MAX) {
		error_set(err, -1, "the bundle's manifest of %s is not an image manifest",
			  img->ref);
		goto out;
	}
	*nr = json_array_size(layers) + 1;
	*digests = xcalloc(*nr, sizeof(**digests));
	*sizes = xcalloc(*nr, sizeof(**sizes));
	for (i = 0; i < *nr; i++) {
		json_t *d = i == 0 ? json_object_get(j, "config") : json_array_get(layers, i - 1);
		const char *dg = json_string_value(json_object_get(d, "digest"));
		json_int_t sz = json_integer_value(json_object_get(d, "size"));
		if (!digest_ok(dg) || sz < 0) {
			error_set(err, -1, "the bundle's manifest of %s names a bad blob",
				  img->ref);
			goto out;
		}
		snprintf((*digests)[i], 72, "%s", dg);
		(*sizes)[i] = (uint64_t)sz;
	}
	rc = 0;
out:
	if (rc < 0) {
		free(*digests);
		free(*sizes);
		*digests = NULL;
		*sizes = NULL;
		*nr = 0;
	}
	json_decref(j);
	strbuf_release(&sb);
	free(path);
	return rc;
}

int oci_bundle_find(const char *cache, const char *ref, const char *arch, struct oci_image *out)
{
	char(*digests)[72];
	uint64_t *sizes;
	size_t nr, i;
	struct error err = {0};
	int ok;

	if (!cache || !read_entry(cache, ref, arch, out))
		return 0;
	if (!blob_have(cache, out->manifest, out->manifest_size) ||
	    manifest_blobs(cache, out, &digests, &sizes, &nr, &err) < 0) {
		error_clear(&err);
		return 0;
	}
	ok = 1;
	for (i = 0; i < nr && ok; i++)
		ok = blob_have(cache, digests[i], sizes[i]);
	free(digests);
	free(sizes);
	return ok;
}

/* ---- the archive a node imports ---- */

static void tar_header(char h[512], const char *name, uint64_t size)
{
	unsigned sum = 0;
	size_t i;

	memset(h, 0, 512);
	snprintf(h, 100, "%s", name);
	snprintf(h + 100, 8, "%07o", 0644);
	snprintf(h + 108, 8, "%07o", 0);
	snprintf(h + 116, 8, "%07o", 0);
	snprintf(h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf(h + 136, 12, "%011o", 0);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 7, "%06o", sum);
}

static uint64_t padded(uint64_t n)
{
	return (n + 511) / 512 * 512;
}

static char *index_json(const struct oci_image *img)
{
	json_t *idx = json_object(), *ms = json_array(), *m = json_object(), *ann = json_object(),
	       *plat = json_object();
	char *s;

	json_object_set_new(idx, "schemaVersion", json_integer(2));
	json_object_set_new(m, "mediaType", json_string(img->media_type));
	json_object_set_new(m, "digest", json_string(img->manifest));
	json_object_set_new(m, "size", json_integer((json_int_t)img->manifest_size));
	json_object_set_new(ann, "io.containerd.image.name", json_string(img->ref));
	json_object_set_new(m, "annotations", ann);
	json_object_set_new(plat, "architecture", json_string(img->arch));
	json_object_set_new(plat, "os", json_string("linux"));
	json_object_set_new(m, "platform", plat);
	json_array_append_new(ms, m);
	json_object_set_new(idx, "manifests", ms);
	s = json_dumps(idx, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(idx);
	return s;
}

static const char oci_layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";

int oci_archive_size(const char *cache, const struct oci_image *img, uint64_t *size,
		     struct error *err)
{
	char(*digests)[72];
	uint64_t *sizes;
	size_t nr, i;
	char *idx = index_json(img);

	if (manifest_blobs(cache, img, &digests, &sizes, &nr, err) < 0) {
		free(idx);
		return -1;
	}
	*size = 512 + padded(sizeof(oci_layout) - 1) + 512 + padded(strlen(idx)) + 512 +
		padded(img->manifest_size);
	for (i = 0; i < nr; i++) {
		size_t k;
		bool dup = false;
		for (k = 0; k < i; k++)
			dup = dup || !strcmp(digests[k], digests[i]);
		if (!dup)
			*size += 512 + padded(sizes[i]);
	}
	*size += 1024; /* the end */
	free(digests);
	free(sizes);
	free(idx);
	return 0;
}

struct out {
	char *buf;
	size_t len, chunk;
	int (*write)(void *ctx, const void *p, size_t n);
	void *ctx;
	int rc;
};

static int out_add(struct out *o, const void *p, size_t n)
{
	const char *c = p;

	while (n && !o->rc) {
		size_t k = o->chunk - o->len < n ? o->chunk - o->len : n;
		memcpy(o->buf + o->len, c, k);
		o->len += k, c += k, n -= k;
		if (o->len == o->chunk) {
			o->rc = o->write(o->ctx, o->buf, o->len);
			o->len = 0;
		}
	}
	return o->rc;
}

static int out_pad(struct out *o, uint64_t n)
{
	static const char zeros[512];
	return n % 512 ? out_add(o, zeros, (size_t)(512 - n % 512)) : o->rc;
}

static int out_member(struct out *o, const char *name, const void *data, size_t len)
{
	char h[512];

	tar_header(h, name, len);
	out_add(o, h, 512);
	out_add(o, data, len);
	return out_pad(o, len);
}

/* A blob from the cache into the archive, checked against its digest as it goes. */
static int out_blob(struct out *o, const char *cache, const char *digest, uint64_t size,
		    struct error *err)
{
	char *path = blob_path(cache, digest), name[96], h[512], hex[65], buf[1 << 16];
	struct transport_sha256 sha;
	uint64_t left = size;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		error_set(err, -1, "the bundle lost blob %s: %s", digest, strerror(errno));
		free(path);
		return -1;
	}
	snprintf(name, sizeof(name), "blobs/sha256/%s", digest + 7);
	tar_header(h, name, size);
	out_add(o, h, 512);
	transport_sha256_init(&sha);
	while (left && !o->rc &&
	       (n = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf))) > 0) {
		transport_sha256_update(&sha, buf, (size_t)n);
		out_add(o, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	close(fd);
	free(path);
	if (o->rc)
		return o->rc;
	sha256_end_hex(&sha, hex);
	if (left || strcmp(hex, digest + 7))
		return error_set(
		    err, -1, "the bundle's blob %s changed (it is not what its name says)", digest);
	return out_pad(o, size);
}

int oci_archive_write(const char *cache, const struct oci_image *img, size_t chunk,
		      int (*write)(void *ctx, const void *p, size_t n), void *ctx,
		      struct error *err)
{
	struct out o = {xmalloc(chunk), 0, chunk, write, ctx, 0};
	char(*digests)[72] = NULL, name[96];
	uint64_t *sizes = NULL;
	struct strbuf man = STRBUF_INIT;
	char *idx = index_json(img), *mpath = blob_path(cache, img->manifest);
	static const char zeros[1024];
	size_t nr = 0, i;
	int rc = -1;

	man.max = OCI_MANIFEST_MAX + 1;
	if (manifest_blobs(cache, img, &digests, &sizes, &nr, err) < 0)
		goto out;
	if (read_file(mpath, &man) < 0 || man.len != img->manifest_size) {
		error_set(err, -1, "the bundle lost the manifest of %s", img->ref);
		goto out;
	}
	out_member(&o, "oci-layout", oci_layout, sizeof(oci_layout) - 1);
	out_member(&o, "index.json", idx, strlen(idx));
	snprintf(name, sizeof(name), "blobs/sha256/%s", img->manifest + 7);
	out_member(&o, name, man.buf, man.len);
	for (i = 0; i < nr && !o.rc; i++) {
		/* a config or layer twice in a manifest goes in once */
		size_t k;
		bool dup = false;
		for (k = 0; k < i; k++)
			dup = dup || !strcmp(digests[k], digests[i]);
		if (!dup && out_blob(&o, cache, digests[i], sizes[i], err) < 0 && !o.rc)
			goto out;
	}
	out_add(&o, zeros, sizeof(zeros));
	if (!o.rc && o.len)
		o.rc = write(ctx, o.buf, o.len);
	if (o.rc) {
		rc = o.rc;
		if (!err->msg[0])
			error_set(err, o.rc, "the archive of %s could not be sent", img->ref);
		goto out;
	}
	rc = 0;
out:
	free(o.buf);
	free(digests);
	free(sizes);
	free(idx);
	free(mpath);
	strbuf_release(&man);
	return rc;
}
