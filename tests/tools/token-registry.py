#!/usr/bin/env python3
"""tests/tools/token-registry.py ADDR:PORT UPSTREAM [--corrupt] [--lifetime S]
[--tls CERT KEY] [--realm URL]:
a registry's front that asks for a bearer token, as public registries do.

The token flow is the one distribution documents (docs/spec/auth/token.md)
and Docker Hub, ghcr.io, quay.io and registry.k8s.io's backends answer:
a request without "Authorization: Bearer TOKEN" gets 401 with

  WWW-Authenticate: Bearer realm="http://ADDR:PORT/token",service="provision-test",scope="repository:REPO:pull"

and GET /token?service=...&scope=... answers {"token": T, "access_token": T,
"expires_in": 300} (anonymously: a public repository).  With the token,
every request is passed to the real registry at UPSTREAM (docker-registry)
and its answer back.  --corrupt flips a byte in every blob's body (the
client must refuse it: the digest no longer matches), and sends 4096 bytes
more than the blob for a repository whose name ends in "-long" (the client
must stop at the manifest's size).  --tls serves HTTPS with CERT and KEY;
--realm names another token service in the challenge (an https front with
an http:// realm: the client must not send credentials down to http).
One log line per
request on standard output: "token-front STATUS METHOD PATH AUTH" (AUTH
"bearer", "none", or "token-request"; never the token).
"""
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.parse

ADDR = sys.argv[1]
UPSTREAM = urllib.parse.urlparse(sys.argv[2])
CORRUPT = "--corrupt" in sys.argv
LIFETIME = int(sys.argv[sys.argv.index("--lifetime") + 1]) if "--lifetime" in sys.argv else 600
TLS = sys.argv[sys.argv.index("--tls") + 1 : sys.argv.index("--tls") + 3] if "--tls" in sys.argv else None
REALM = sys.argv[sys.argv.index("--realm") + 1] if "--realm" in sys.argv else "http://%s/token" % ADDR
TOKEN = "provision-test-token-4f1d0b"


class Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def say(self, status, auth):
        print("token-front %d %s %s %s" % (status, self.command, self.path.split("?")[0], auth), flush=True)

    def send(self, status, body, headers):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer(self):
        path = self.path.split("?")[0]
        if path == "/token":
            body = json.dumps({"token": TOKEN, "access_token": TOKEN, "expires_in": 300}).encode()
            self.say(200, "token-request")
            self.send(200, body, {"Content-Type": "application/json"})
            return
        if self.headers.get("Authorization") != "Bearer " + TOKEN and path not in ("/v2/", "/v2"):
            repo = path[4:].split("/manifests/")[0].split("/blobs/")[0]
            challenge = 'Bearer realm="%s",service="provision-test",scope="repository:%s:pull"' % (REALM, repo)
            body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}).encode()
            self.say(401, "none")
            self.send(401, body, {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
            return
        conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("accept", "range")}
        conn.request(self.command, self.path, headers=headers)
        r = conn.getresponse()
        body = r.read()
        if CORRUPT and "/blobs/" in path and body:
            if path.split("/blobs/")[0].endswith("-long"):
                body += bytes(4096)
            else:
                body = bytes([body[0] ^ 0xFF]) + body[1:]
        hdrs = {k: v for k, v in r.getheaders() if k.lower() in ("content-type", "docker-content-digest", "location")}
        self.say(r.status, "bearer")
        self.send(r.status, body, hdrs)

    do_GET = answer
    do_HEAD = answer


host, port = ADDR.rsplit(":", 1)
srv = http.server.ThreadingHTTPServer((host, int(port)), Front)
if TLS:
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(TLS[0], TLS[1])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
threading.Timer(LIFETIME, srv.shutdown).start()
print("token-front listening on %s" % ADDR, flush=True)
srv.serve_forever()
