/*
 * http-get: GET a path of the API server named by a kubeconfig, with its CA
 * and client certificate, through provision's http module (the check that
 * validation makes of /readyz).  For tests/t0500-artifacts.sh.
 *
 *   http-get KUBECONFIG PATH     prints "STATUS BODY"; exit 1 on failure
 */
#include <stdio.h>
#include <stdlib.h>

#include "http.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct http_tls tls;
	struct strbuf body = STRBUF_INIT;
	struct error err = {0};
	char *server = NULL, *url;
	long status = 0;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: http-get KUBECONFIG PATH\n");
		return 2;
	}
	http_init();
	if (http_tls_from_kubeconfig(argv[1], &server, &tls, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	url = xasprintf("%s%s", server, argv[2]);
	{
		struct http_get g = {.url = url, .tls = &tls, .timeout_ms = 5000};
		rc = http_get(&g, &status, &body, &err);
	}
	if (rc < 0)
		fprintf(stderr, "%s\n", err.msg);
	else
		printf("%ld %s\n", status, body.buf);
	http_tls_release(&tls);
	strbuf_release(&body);
	free(server);
	free(url);
	return rc < 0 ? 1 : 0;
}
