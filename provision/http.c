/* http: see http.h.  The only file that includes <curl/curl.h>. */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema.h"
#include "version.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void http_init(void)
{
	pthread_once(&init_once, global_init);
}

/* Settings every request shares. */
static void common_options(CURL *c, const char *url, char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "provision/" PROVISION_VERSION);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Never down from https to http on the way (http.h). */
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
			 strncmp(url, "https://", 8) ? "http,https" : "https");
}

/* curl's result as one of ours, with the message in err. */
static int translate(CURLcode rc, const char *url, const char *errbuf, long status, int stall_s,
		     struct error *err)
{
	const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_HTTP_RETURNED_ERROR:
		return error_set(err, HTTP_ERR_STATUS, "'%s': the server answered HTTP %ld", url,
				 status);
	case CURLE_OPERATION_TIMEDOUT:
		if (stall_s && (strstr(detail, "too slow") || strstr(detail, "slower than")))
			return error_set(err, HTTP_ERR_TIMEOUT,
					 "'%s': the server stopped sending (no data for %d s)", url,
					 stall_s);
		return error_set(err, HTTP_ERR_TIMEOUT, "'%s': timed out: %s", url, detail);
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
		return error_set(err, HTTP_ERR_PARTIAL, "'%s': the connection ended early: %s", url,
				 detail);
	case CURLE_WRITE_ERROR:
		return error_set(err, HTTP_ERR_IO, "'%s': %s", url, detail);
	case CURLE_UNSUPPORTED_PROTOCOL:
		if (!strncmp(url, "https://", 8))
			return error_set(err, HTTP_ERR,
					 "'%s': redirected away from https (refused): %s", url,
					 detail);
		return error_set(err, HTTP_ERR, "'%s': %s", url, detail);
	default:
		return error_set(err, HTTP_ERR, "'%s': %s", url, detail);
	}
}

/* ---- downloads ---- */

struct dl {
	const struct http_download *d;
	CURL *c;
	int fd;
	uint64_t start, have;
	bool checked, too_big;
	int io_errno;
	uint64_t last_ms;
	struct http_download_result *res;
};

static size_t dl_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct dl *dl = ud;
	size_t n = size * nmemb;
	int e;

	if (!dl->checked) {
		long code = 0;
		curl_easy_getinfo(dl->c, CURLINFO_RESPONSE_CODE, &code);
		dl->checked = true;
		if (dl->start && code != 206) {
			/* The server sent the whole body, not the rest: start over. */
			if (ftruncate(dl->fd, 0) < 0 || lseek(dl->fd, 0, SEEK_SET) < 0) {
				dl->io_errno = errno;
				return 0;
			}
			dl->start = dl->have = 0;
			dl->res->resumed_from = 0;
		}
	}
	if (dl->d->max_size && dl->have + n > dl->d->max_size) {
		dl->too_big = true; /* ends the transfer (CURLE_WRITE_ERROR) */
		return 0;
	}
	if ((e = write_all(dl->fd, ptr, n)) < 0) {
		dl->io_errno = -e;
		return 0;
	}
	dl->have += n;
	return n;
}

static int dl_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct dl *dl = ud;
	uint64_t now = now_ms();

	if (dl->d->progress && now - dl->last_ms >= 200) {
		dl->last_ms = now;
		dl->d->progress(dl->d->ctx, dl->start + (uint64_t)dlnow,
				dltotal > 0 ? dl->start + (uint64_t)dltotal : 0);
	}
	return 0;
}

int http_download(const struct http_download *d, struct http_download_result *res,
		  struct error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct dl dl = {.d = d, .fd = -1, .res = res};
	struct stat st;
	CURLcode rc;
	int ret;

	memset(res, 0, sizeof(*res));
	http_init();
	dl.fd = open(d->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (dl.fd < 0)
		return error_set(err, HTTP_ERR_IO, "cannot write '%s': %s", d->path,
				 strerror(errno));
	if (fstat(dl.fd, &st) == 0)
		dl.start = dl.have = (uint64_t)st.st_size;
	res->resumed_from = dl.start;
	dl.c = curl_easy_init();
	if (!dl.c) {
		close(dl.fd);
		return error_set(err, HTTP_ERR, "cannot start an HTTP transfer");
	}
	common_options(dl.c, d->url, errbuf);
	curl_easy_setopt(dl.c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(dl.c, CURLOPT_WRITEFUNCTION, dl_write);
	curl_easy_setopt(dl.c, CURLOPT_WRITEDATA, &dl);
	curl_easy_setopt(dl.c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(dl.c, CURLOPT_XFERINFOFUNCTION, dl_progress);
	curl_easy_setopt(dl.c, CURLOPT_XFERINFODATA, &dl);
	curl_easy_setopt(dl.c, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(d->connect_timeout_ms ? d->connect_timeout_ms : 30000));
	curl_easy_setopt(dl.c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(dl.c, CURLOPT_LOW_SPEED_TIME,
			 (long)(d->stall_timeout_s ? d->stall_timeout_s : 60));
	if (d->timeout_s)
		curl_easy_setopt(dl.c, CURLOPT_TIMEOUT, (long)d->timeout_s);
	/* Refused at once when the server says the size; always counted as it comes (dl_write). */
	if (d->max_size && !dl.start)
		curl_easy_setopt(dl.c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)d->max_size);
	if (dl.start)
		curl_easy_setopt(dl.c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)dl.start);
	rc = curl_easy_perform(dl.c);
	curl_easy_getinfo(dl.c, CURLINFO_RESPONSE_CODE, &res->status);
	if (rc == CURLE_HTTP_RETURNED_ERROR && res->status == 416 && dl.start) {
		/* Nothing after what we have: the file was complete (the caller verifies it). */
		rc = CURLE_OK;
	}
	if (dl.too_big || rc == CURLE_FILESIZE_EXCEEDED || (d->max_size && dl.start > d->max_size))
		ret = error_set(err, HTTP_ERR_TOO_BIG,
				"'%s': larger than %llu bytes, the most provision takes of one "
				"artifact",
				d->url, (unsigned long long)d->max_size);
	else if (dl.io_errno)
		ret = error_set(err, HTTP_ERR_IO, "cannot write '%s': %s", d->path,
				strerror(dl.io_errno));
	else
		ret = translate(rc, d->url, errbuf, res->status,
				d->stall_timeout_s ? d->stall_timeout_s : 60, err);
	if (close(dl.fd) < 0 && !ret)
		ret =
		    error_set(err, HTTP_ERR_IO, "cannot write '%s': %s", d->path, strerror(errno));
	res->size = dl.have;
	if (d->progress && !ret)
		d->progress(d->ctx, dl.have, dl.have);
	curl_easy_cleanup(dl.c);
	return ret;
}

/* ---- requests with headers (the OCI client) ---- */

struct req {
	const struct http_request *r;
	struct http_response *res;
	CURL *c;
	bool too_big, file_too_big, checked;
	int io_errno;
	uint64_t last_ms, file_have; /* with fd: the file's bytes */
};

static char *header_value(const char *line, size_t n, const char *name)
{
	size_t nl = strlen(name);

	if (n <= nl + 1 || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	return xstrndup(line, n > 4096 ? 4096 : n);
}

static size_t req_header(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct req *q = ud;
	struct http_response *res = q->res;
	size_t n = size * nmemb;
	char *v;

	if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
		/* a new response (a redirect's next hop): its own headers only */
		free(res->content_type);
		free(res->www_authenticate);
		free(res->docker_content_digest);
		free(res->retry_after);
		res->content_type = res->www_authenticate = res->docker_content_digest =
		    res->retry_after = NULL;
		res->content_length = -1;
		return n;
	}
	if ((v = header_value(buf, n, "Content-Type"))) {
		free(res->content_type);
		res->content_type = v;
	} else if ((v = header_value(buf, n, "WWW-Authenticate"))) {
		free(res->www_authenticate);
		res->www_authenticate = v;
	} else if ((v = header_value(buf, n, "Docker-Content-Digest"))) {
		free(res->docker_content_digest);
		res->docker_content_digest = v;
	} else if ((v = header_value(buf, n, "Retry-After"))) {
		free(res->retry_after);
		res->retry_after = v;
	} else if ((v = header_value(buf, n, "Content-Length"))) {
		res->content_length = strtoll(v, NULL, 10);
		free(v);
	}
	return n;
}

static size_t req_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct req *q = ud;
	size_t n = size * nmemb;
	long code = 0;
	int e;

	curl_easy_getinfo(q->c, CURLINFO_RESPONSE_CODE, &code);
	if (!q->checked && q->r->fd >= 0 && q->r->resume_from && code == 200) {
		/* the whole body, not the rest: start the file over */
		if (ftruncate(q->r->fd, 0) < 0 || lseek(q->r->fd, 0, SEEK_SET) < 0) {
			q->io_errno = errno;
			return 0;
		}
		q->file_have = 0;
		if (q->r->on_restart)
			q->r->on_restart(q->r->ctx);
	}
	q->checked = true;
	if (q->r->fd >= 0 && code >= 200 && code < 300) {
		if (q->r->max_size && q->file_have + n > q->r->max_size) {
			q->file_too_big = true; /* ends the transfer: no byte past the bound */
			return 0;
		}
		if ((e = write_all(q->r->fd, ptr, n)) < 0) {
			q->io_errno = -e;
			return 0;
		}
		q->file_have += n;
	} else {
		size_t max = q->r->max_body ? q->r->max_body : 4u << 20;
		if (q->res->body.len + n > max) {
			q->too_big = true;
			return 0;
		}
		strbuf_add(&q->res->body, ptr, n);
	}
	if (q->r->on_data && code >= 200 && code < 300)
		q->r->on_data(q->r->ctx, ptr, n);
	q->res->received += n;
	return n;
}

static int req_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			curl_off_t ulnow)
{
	struct req *q = ud;
	uint64_t now = now_ms();

	if (q->r->progress && now - q->last_ms >= 200) {
		q->last_ms = now;
		q->r->progress(q->r->ctx, q->r->resume_from + (uint64_t)dlnow,
			       dltotal > 0 ? q->r->resume_from + (uint64_t)dltotal : 0);
	}
	return 0;
}

int http_request(const struct http_request *r, struct http_response *res, struct error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct req q = {.r = r, .res = res, .file_have = r->resume_from};
	struct curl_slist *hdrs = NULL;
	CURLcode rc;
	size_t i;
	int ret;

	memset(res, 0, sizeof(*res));
	strbuf_init(&res->body, 0);
	res->content_length = -1;
	http_init();
	q.c = curl_easy_init();
	if (!q.c)
		return error_set(err, HTTP_ERR, "cannot start an HTTP request");
	common_options(q.c, r->url, errbuf);
	/* a token or password is for the registry, not for where it redirects blobs */
	curl_easy_setopt(q.c, CURLOPT_UNRESTRICTED_AUTH, 0L);
	for (i = 0; r->headers && r->headers[i]; i++)
		hdrs = curl_slist_append(hdrs, r->headers[i]);
	if (hdrs)
		curl_easy_setopt(q.c, CURLOPT_HTTPHEADER, hdrs);
	if (r->head)
		curl_easy_setopt(q.c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(q.c, CURLOPT_HEADERFUNCTION, req_header);
	curl_easy_setopt(q.c, CURLOPT_HEADERDATA, &q);
	curl_easy_setopt(q.c, CURLOPT_WRITEFUNCTION, req_write);
	curl_easy_setopt(q.c, CURLOPT_WRITEDATA, &q);
	curl_easy_setopt(q.c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(q.c, CURLOPT_XFERINFOFUNCTION, req_progress);
	curl_easy_setopt(q.c, CURLOPT_XFERINFODATA, &q);
	curl_easy_setopt(q.c, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(r->connect_timeout_ms ? r->connect_timeout_ms : 30000));
	curl_easy_setopt(q.c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(q.c, CURLOPT_LOW_SPEED_TIME,
			 (long)(r->stall_timeout_s ? r->stall_timeout_s : 60));
	if (r->timeout_s)
		curl_easy_setopt(q.c, CURLOPT_TIMEOUT, (long)r->timeout_s);
	if (r->fd >= 0 && r->resume_from)
		curl_easy_setopt(q.c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)r->resume_from);
	if (r->insecure) {
		curl_easy_setopt(q.c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(q.c, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (r->tls && r->tls->ca_pem) {
		struct curl_blob blob = {r->tls->ca_pem, r->tls->ca_len, CURL_BLOB_COPY};
		curl_easy_setopt(q.c, CURLOPT_CAINFO_BLOB, &blob);
	}
	rc = curl_easy_perform(q.c);
	curl_easy_getinfo(q.c, CURLINFO_RESPONSE_CODE, &res->status);
	if (q.io_errno)
		ret = error_set(err, HTTP_ERR_IO, "'%s': cannot write the body: %s", r->url,
				strerror(q.io_errno));
	else if (q.too_big)
		ret = error_set(err, HTTP_ERR, "'%s': an answer of more than %zu bytes", r->url,
				r->max_body ? r->max_body : (size_t)4 << 20);
	else if (q.file_too_big)
		ret = error_set(err, HTTP_ERR_TOO_BIG, "'%s': more than the %llu bytes expected",
				r->url, (unsigned long long)r->max_size);
	else
		ret = translate(rc, r->url, errbuf, res->status,
				r->stall_timeout_s ? r->stall_timeout_s : 60, err);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(q.c);
	return ret;
}

void http_response_release(struct http_response *res)
{
	free(res->content_type);
	free(res->www_authenticate);
	free(res->docker_content_digest);
	free(res->retry_after);
	strbuf_release(&res->body);
	memset(res, 0, sizeof(*res));
}

/* ---- checks ---- */

struct body {
	struct strbuf *sb;
};

static size_t get_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;

	strbuf_add(b->sb, ptr, size * nmemb); /* the cap drops the excess */
	return size * nmemb;
}

int http_get(const struct http_get *g, long *status, struct strbuf *body, struct error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct body b = {body};
	size_t old_max = body->max;
	CURLcode rc;
	CURL *c;
	int ret;

	*status = 0;
	http_init();
	c = curl_easy_init();
	if (!c)
		return error_set(err, HTTP_ERR, "cannot start an HTTP request");
	common_options(c, g->url, errbuf);
	body->max = body->len + (g->max_body ? g->max_body : 1 << 20);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, get_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(g->timeout_ms ? g->timeout_ms : 10000));
	if (g->tls) {
		struct curl_blob blob;
		if (g->tls->ca_pem) {
			blob = (struct curl_blob){g->tls->ca_pem, g->tls->ca_len, CURL_BLOB_COPY};
			curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
		}
		if (g->tls->cert_pem) {
			blob =
			    (struct curl_blob){g->tls->cert_pem, g->tls->cert_len, CURL_BLOB_COPY};
			curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &blob);
			curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		}
		if (g->tls->key_pem) {
			blob = (struct curl_blob){g->tls->key_pem, g->tls->key_len, CURL_BLOB_COPY};
			curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &blob);
			curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
		}
	}
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	ret = translate(rc, g->url, errbuf, *status, 0, err);
	body->max = old_max;
	curl_easy_cleanup(c);
	return ret;
}

void http_tls_release(struct http_tls *t)
{
	if (t->key_pem)
		explicit_bzero(t->key_pem, t->key_len);
	free(t->ca_pem);
	free(t->cert_pem);
	free(t->key_pem);
	memset(t, 0, sizeof(*t));
}

int http_base64_decode(const char *in, size_t len, struct strbuf *out)
{
	unsigned acc = 0;
	int bits = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		int c = (unsigned char)in[i], v;
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=')
			break;
		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+')
			v = 62;
		else if (c == '/')
			v = 63;
		else
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			strbuf_addch(out, (int)((acc >> bits) & 0xff));
		}
	}
	for (; i < len; i++)
		if (in[i] != '=' && in[i] != '\n' && in[i] != '\r' && in[i] != ' ')
			return -1;
	return 0;
}

/* ---- kubeconfig ---- */

static const char *kc_scalar(struct schema *sc, yaml_node_t *map, const char *key)
{
	return schema_scalar(schema_get(sc, map, key));
}

static yaml_node_t *kc_get(struct schema *sc, yaml_node_t *map, const char *key)
{
	return schema_get(sc, map, key);
}

/* The `field` mapping of the item of list `key` named `name` (the first when name is NULL). */
static yaml_node_t *kc_named(struct schema *sc, yaml_node_t *root, const char *key,
			     const char *name, const char *field)
{
	yaml_node_t *list = kc_get(sc, root, key);
	yaml_node_item_t *it;

	if (!list || list->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *item = schema_node(sc, *it);
		const char *n = kc_scalar(sc, item, "name");
		if (!name || (n && !strcmp(n, name)))
			return kc_get(sc, item, field);
	}
	return NULL;
}

static int kc_pem(const char *b64, char **out, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	if (!b64)
		return 0;
	if (http_base64_decode(b64, strlen(b64), &sb) < 0) {
		strbuf_release(&sb);
		return -1;
	}
	*out = strbuf_detach(&sb, len);
	return 0;
}

int http_tls_from_kubeconfig(const char *path, char **server, struct http_tls *tls,
			     struct error *err)
{
	struct strbuf text = STRBUF_INIT;
	struct diag_list dl;
	struct schema sc;
	yaml_node_t *root, *ctx, *cluster, *user;
	const char *current, *srv;
	int e, ret = HTTP_ERR;

	*server = NULL;
	memset(tls, 0, sizeof(*tls));
	if ((e = read_file(path, &text)) < 0)
		return error_set(err, HTTP_ERR, "cannot read '%s': %s", path, strerror(-e));
	diag_list_init(&dl);
	if (schema_load(&sc, path, text.buf, text.len, &dl) < 0) {
		error_set(err, HTTP_ERR, "'%s' is not a kubeconfig (YAML)", path);
		goto out;
	}
	root = schema_root(&sc);
	/* kc_get takes the first of a key given twice; a client may take the last */
	if (schema_check_duplicates(&sc)) {
		const struct diag *d = &dl.items[0];
		error_set(err, HTTP_ERR, "%s:%u:%u: %s; %s", path, d->line, d->col, d->msg,
			  d->hint);
		goto out;
	}
	current = kc_scalar(&sc, root, "current-context");
	ctx = kc_named(&sc, root, "contexts", current, "context");
	cluster =
	    kc_named(&sc, root, "clusters", ctx ? kc_scalar(&sc, ctx, "cluster") : NULL, "cluster");
	user = kc_named(&sc, root, "users", ctx ? kc_scalar(&sc, ctx, "user") : NULL, "user");
	srv = kc_scalar(&sc, cluster, "server");
	if (!srv) {
		error_set(err, HTTP_ERR, "'%s' names no server for its current context", path);
		goto out;
	}
	if (kc_pem(kc_scalar(&sc, cluster, "certificate-authority-data"), &tls->ca_pem,
		   &tls->ca_len) < 0 ||
	    kc_pem(kc_scalar(&sc, user, "client-certificate-data"), &tls->cert_pem,
		   &tls->cert_len) < 0 ||
	    kc_pem(kc_scalar(&sc, user, "client-key-data"), &tls->key_pem, &tls->key_len) < 0) {
		error_set(err, HTTP_ERR, "'%s': bad base64 in a certificate or key", path);
		http_tls_release(tls);
		goto out;
	}
	*server = xstrdup(srv);
	ret = 0;
out:
	schema_release(&sc);
	diag_list_release(&dl);
	explicit_bzero(text.buf, text.len);
	strbuf_release(&text);
	return ret;
}

/* ---- a fetched kubeconfig: what may be kept (http.h) ---- */

static bool only_keys(struct schema *sc, yaml_node_t *map, const char *const *keys,
		      const char *where, struct error *err)
{
	yaml_node_pair_t *p;

	if (!map || map->type != YAML_MAPPING_NODE)
		return error_set(err, HTTP_ERR, "%s is not a mapping", where), false;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = schema_node(sc, p->key);
		const char *name =
		    k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
		size_t i;
		for (i = 0; keys[i] && strcmp(keys[i], name); i++)
			;
		if (!keys[i]) {
			/* its first line only: node text must not make lines of its own */
			int len = (int)strcspn(name, "\r\n");
			error_set(err, HTTP_ERR, "'%.*s' in %s is not accepted",
				  len < 64 ? len : 64, name, where);
			error_make_safe(err);
			return false;
		}
		/* Twice: which one a client takes is its own choice, not this check's. */
		if (schema_repeat_of(sc, p))
			return error_set(err, HTTP_ERR, "'%s' twice in %s", name, where), false;
	}
	return true;
}

/* Each item of list `key`: a mapping of `name` and `field`, field's keys among `keys`. */
static bool check_list(struct schema *sc, yaml_node_t *root, const char *key, const char *field,
		       const char *const *keys, size_t *count, struct error *err)
{
	static const char *const item_keys[3][3] = {
	    {"name", "cluster", NULL}, {"name", "user", NULL}, {"name", "context", NULL}};
	yaml_node_t *list = kc_get(sc, root, key);
	yaml_node_item_t *it;
	const char *const *ik = !strcmp(field, "cluster") ? item_keys[0]
				: !strcmp(field, "user")  ? item_keys[1]
							  : item_keys[2];

	*count = 0;
	if (!list)
		return true;
	if (list->type != YAML_SEQUENCE_NODE)
		return error_set(err, HTTP_ERR, "'%s' is not a list", key), false;
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *item = schema_node(sc, *it);
		char where[64];
		snprintf(where, sizeof(where), "an item of '%s'", key);
		if (!only_keys(sc, item, ik, where, err))
			return false;
		snprintf(where, sizeof(where), "'%s' of '%s'", field, key);
		if (!only_keys(sc, kc_get(sc, item, field), keys, where, err))
			return false;
		(*count)++;
	}
	return true;
}

static bool base64_ok(const char *b64)
{
	struct strbuf sb = STRBUF_INIT;
	bool ok = b64 && *b64 && http_base64_decode(b64, strlen(b64), &sb) == 0 && sb.len;

	if (sb.len)
		explicit_bzero(sb.buf, sb.len);
	strbuf_release(&sb);
	return ok;
}

int http_kubeconfig_check(const char *text, size_t len, const char *host, int port,
			  struct error *err)
{
	static const char *const top[] = {"apiVersion",	     "kind",	    "clusters", "contexts",
					  "current-context", "preferences", "users",	NULL};
	static const char *const cluster_keys[] = {"server", "certificate-authority-data", NULL};
	static const char *const user_keys[] = {"client-certificate-data", "client-key-data",
						"token", NULL};
	static const char *const context_keys[] = {"cluster", "user", "namespace", NULL};
	static const char *const none[] = {NULL};
	struct diag_list dl;
	struct schema sc;
	yaml_node_t *root, *list, *pref;
	yaml_node_item_t *it;
	size_t n_clusters, n_users, n_contexts;
	char *want = xasprintf(strchr(host, ':') ? "https://[%s]:%d" : "https://%s:%d", host, port);
	int ret = HTTP_ERR;

	diag_list_init(&dl);
	if (schema_load(&sc, "the kubeconfig", text, len, &dl) < 0) {
		error_set(err, HTTP_ERR, "not a kubeconfig (YAML)");
		goto out;
	}
	root = schema_root(&sc);
	if (!root) {
		error_set(err, HTTP_ERR, "an empty file, not a kubeconfig");
		goto out;
	}
	if (!only_keys(&sc, root, top, "the kubeconfig", err))
		goto out;
	/* One document: what follows the first is read by nobody here. */
	if (schema_one_document(&sc, "kubeconfig") != 0) {
		error_set(err, HTTP_ERR, "more than one YAML document");
		goto out;
	}
	if ((pref = kc_get(&sc, root, "preferences")) &&
	    !only_keys(&sc, pref, none, "'preferences'", err))
		goto out;
	if (!check_list(&sc, root, "clusters", "cluster", cluster_keys, &n_clusters, err) ||
	    !check_list(&sc, root, "users", "user", user_keys, &n_users, err) ||
	    !check_list(&sc, root, "contexts", "context", context_keys, &n_contexts, err))
		goto out;
	if (!n_clusters || !n_users || !n_contexts) {
		error_set(err, HTTP_ERR, "a cluster, a user and a context are required");
		goto out;
	}
	list = kc_get(&sc, root, "clusters");
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *c = kc_get(&sc, schema_node(&sc, *it), "cluster");
		const char *srv = kc_scalar(&sc, c, "server");
		if (!srv || strcmp(srv, want)) {
			int n = srv ? (int)strcspn(srv, "\r\n") : 0; /* its first line only */
			error_set(err, HTTP_ERR, "its server is '%.*s', not the control plane's %s",
				  n < 120 ? n : 120, srv ? srv : "", want);
			error_make_safe(err);
			goto out;
		}
		if (!base64_ok(kc_scalar(&sc, c, "certificate-authority-data"))) {
			error_set(err, HTTP_ERR, "no certificate-authority-data for %s", want);
			goto out;
		}
	}
	list = kc_get(&sc, root, "users");
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *u = kc_get(&sc, schema_node(&sc, *it), "user");
		bool cert = base64_ok(kc_scalar(&sc, u, "client-certificate-data")) &&
			    base64_ok(kc_scalar(&sc, u, "client-key-data"));
		const char *token = kc_scalar(&sc, u, "token");
		if (!cert && !(token && *token)) {
			error_set(err, HTTP_ERR,
				  "a user without a client certificate and key (or a token) in the "
				  "file");
			goto out;
		}
	}
	ret = 0;
out:
	schema_release(&sc);
	diag_list_release(&dl);
	free(want);
	return ret;
}
