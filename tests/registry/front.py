#!/usr/bin/env python3
"""tests/registry/front.py ADDR:PORT STATUS [RETRY_AFTER]: a registry that refuses.

Answers GET /v2/ with 200 and {} (the API version check every client makes
first), and every other request (manifests, blobs) with STATUS and a body
in the registry API's error form (distribution's docs/spec/api.md,
"Errors": {"errors": [{"code": ..., "message": ...}]}):

  429  TOOMANYREQUESTS with a Retry-After header of RETRY_AFTER seconds
       (what a rate-limited registry answers, RFC 6585)
  401  UNAUTHORIZED with WWW-Authenticate: Basic realm="provision-test"
  403  DENIED, 404 MANIFEST_UNKNOWN, 5xx UNAVAILABLE

One log line per request on standard output: "front STATUS METHOD PATH CLIENT".
The real registry (docker-registry) answers 401 and 404 by itself; this
front is for the answers it never gives (429, 5xx).
"""
import http.server
import json
import sys

ADDR, STATUS = sys.argv[1], int(sys.argv[2])
RETRY = sys.argv[3] if len(sys.argv) > 3 else ""
CODES = {429: "TOOMANYREQUESTS", 401: "UNAUTHORIZED", 403: "DENIED", 404: "MANIFEST_UNKNOWN"}


class Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        if self.path.split("?")[0] in ("/v2/", "/v2"):
            status, body, extra = 200, b"{}", {}
        else:
            code = CODES.get(STATUS, "UNAVAILABLE")
            msg = "%s from tests/registry/front.py" % code.lower()
            body = json.dumps({"errors": [{"code": code, "message": msg, "detail": None}]}).encode()
            status, extra = STATUS, {}
            if STATUS == 429 and RETRY:
                extra["Retry-After"] = RETRY
            if STATUS == 401:
                extra["WWW-Authenticate"] = 'Basic realm="provision-test"'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        print("front %d %s %s %s" % (status, self.command, self.path, self.client_address[0]), flush=True)

    do_GET = do_HEAD = answer

    def log_message(self, *args):
        pass


host, port = ADDR.rsplit(":", 1)
http.server.ThreadingHTTPServer((host, int(port)), Front).serve_forever()
