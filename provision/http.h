/*
 * http: the HTTP client (libcurl; this is the only file that includes
 * <curl/curl.h>).  Three uses: downloading artifacts to this machine
 * (resumable, with progress), the HTTP checks of validation (the API's
 * /readyz with the admin client certificate, the hub's /hub/health), and
 * the requests of the OCI distribution client (oci.h: headers in and out,
 * bodies to memory or to a file as they come).
 *
 * Proxies come from the environment as libcurl reads it: http_proxy (lower
 * case only, for plain HTTP), https_proxy / HTTPS_PROXY, all_proxy and
 * no_proxy / NO_PROXY.
 *
 * Redirects: at most 10, and from an https:// URL to https:// only (what
 * came over plain HTTP is not what an https:// URL promises: `fetch
 * --record` would pin it).
 *
 * Threading: any thread; each call uses its own handle.  http_init() must
 * have been called once, on the main thread, before any other thread runs
 * (curl_global_init is not thread-safe); the first call does it otherwise.
 */
#ifndef PROVISION_HTTP_H
#define PROVISION_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum {
	HTTP_ERR = -1,	       /* anything else (message in err) */
	HTTP_ERR_STATUS = -2,  /* the server answered with an error status (>= 400) */
	HTTP_ERR_TIMEOUT = -3, /* no connection, or no data for too long */
	HTTP_ERR_PARTIAL = -4, /* the connection ended before the body did: resume */
	HTTP_ERR_IO = -5,      /* writing the file on this machine */
	HTTP_ERR_TOO_BIG = -6, /* more bytes than max_size (a download, a request's file) */
};

void http_init(void);

struct http_download {
	const char *url;
	/*
	 * The file to write.  When it already holds bytes (an earlier,
	 * interrupted download), they are kept and only the rest is asked for
	 * (a Range request); a server that answers with the whole body
	 * instead is written from the start.
	 */
	const char *path;
	int connect_timeout_ms; /* 0: 30 s */
	int stall_timeout_s;	/* no byte for this long ends the download; 0: 60 s */
	int timeout_s;		/* the whole transfer; 0: none */
	/* The most bytes the file may hold (what was there included); 0: no limit. */
	uint64_t max_size;
	/* Called about every 200 ms and at the end: bytes in the file, the total (0: unknown). */
	void (*progress)(void *ctx, uint64_t have, uint64_t total);
	void *ctx;
};

struct http_download_result {
	long status;	       /* the last HTTP status */
	uint64_t resumed_from; /* bytes that were already there and kept */
	uint64_t size;	       /* bytes in the file at the end */
};

/* Download; 0 when the whole body is in the file, else one of the codes above. */
int http_download(const struct http_download *d, struct http_download_result *res,
		  struct error *err);

/* A client identity and the server's CA, as PEM text (any may be NULL). */
struct http_tls {
	char *ca_pem, *cert_pem, *key_pem;
	size_t ca_len, cert_len, key_len;
};

/* Wipe (the key) and free. */
void http_tls_release(struct http_tls *t);

/*
 * Read a kubeconfig (e.g. STATE/private/admin.conf): the current
 * context's server URL (*server, caller frees) and the embedded
 * certificate-authority-data, client-certificate-data and client-key-data
 * (base64 in the file, PEM in tls).
 */
int http_tls_from_kubeconfig(const char *path, char **server, struct http_tls *tls,
			     struct error *err);

/*
 * Whether a kubeconfig fetched from the control plane (kubeadm's
 * admin.conf) may be kept and used here: the API is this machine's to
 * reach only at https://HOST:PORT (HOST the control plane's inventory
 * address, bracketed when IPv6; PORT the inventory's api_port), with the
 * cluster's CA in the file, as a client certificate and key (or a token)
 * in the file.  Refused: any other server, `exec` and `auth-provider`
 * (commands and plugins the admin's kubectl would run), files named
 * instead of data (client-certificate, certificate-authority, tokenFile),
 * insecure-skip-tls-verify, proxy-url, and every key kubeadm does not
 * write.  0, or -1 with why in err (node text in it cleaned).
 */
int http_kubeconfig_check(const char *text, size_t len, const char *host, int port,
			  struct error *err);

struct http_get {
	const char *url;
	const struct http_tls *tls; /* NULL: the system's CAs, no client certificate */
	int timeout_ms;		    /* 0: 10 s */
	size_t max_body;	    /* 0: 1 MiB */
};

/*
 * GET url.  Returns 0 whenever an HTTP answer came (its status in *status,
 * the body in body, capped), or a negative code when none did.
 */
int http_get(const struct http_get *g, long *status, struct strbuf *body, struct error *err);

/*
 * One request with headers in and out (the OCI distribution API: Accept,
 * Authorization; WWW-Authenticate, Docker-Content-Digest, Retry-After).
 * The body goes to memory (fd < 0, at most max_body bytes; more is an
 * error) or is appended to the open file fd (from resume_from: a Range
 * request), each piece also handed to on_data (a running hash).
 * Redirects are followed (registries send blobs to object storage), but
 * an Authorization header is not sent to another host.
 */
struct http_request {
	const char *url;
	bool head;		    /* HEAD instead of GET */
	const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
	const struct http_tls *tls; /* the server's CA; NULL: the system's */
	bool insecure;		    /* do not verify the server's certificate */
	int connect_timeout_ms;	    /* 0: 30 s */
	int stall_timeout_s;	    /* no byte for this long ends it; 0: 60 s */
	int timeout_s;		    /* the whole request; 0: none */
	size_t max_body;	    /* in memory: 0 means 4 MiB */
	int fd;			    /* >= 0: the body is appended to this file */
	uint64_t resume_from;	    /* with fd: ask for the bytes from here on */
	uint64_t max_size;	    /* with fd: the most the file may hold; 0: no bound */
	void (*on_data)(void *ctx, const void *p, size_t n);
	/* with resume_from: the server sent the whole body, not the rest (the file was emptied) */
	void (*on_restart)(void *ctx);
	void (*progress)(void *ctx, uint64_t have, uint64_t total); /* about every 200 ms */
	void *ctx;
};

struct http_response {
	long status;
	/* the last response's headers (after redirects), NULL when absent */
	char *content_type, *www_authenticate, *docker_content_digest, *retry_after;
	int64_t content_length; /* -1: not said */
	struct strbuf body;	/* in memory (fd < 0) */
	uint64_t received;	/* body bytes received */
};

/*
 * 0 whenever an HTTP answer came, whatever its status (res->status), or a
 * negative code when none did (or the body was cut short, or exceeded
 * max_body: HTTP_ERR; a file past max_size: HTTP_ERR_TOO_BIG).  Release res with http_response_release().
 */
int http_request(const struct http_request *r, struct http_response *res, struct error *err);
void http_response_release(struct http_response *res);

/* Decode base64 (whitespace ignored); -1 on bad input. */
int http_base64_decode(const char *in, size_t len, struct strbuf *out);

#endif
