#!/usr/bin/env python3
"""artifact-server: a small HTTP server on loopback for the artifact tests.

Serves the files of --dir with the behaviours a download must survive, by
path prefix:

  /NAME          the file; honours "Range: bytes=N-" and "bytes=N-M" (206,
                 Content-Range), as real servers and CDNs do
  /drop/NAME     without a Range header: the headers with the full
                 Content-Length, half the body, then the connection is cut
                 (what a flaky link or a restarted server does); with a
                 Range header: served normally, so a resumed download ends
  /slow/NAME     the body in 4 KiB pieces every 0.1 s (slow but steady)
  /stall/NAME    the headers and 4 KiB, then nothing for 60 s
  anything else  404

With --proxy it is instead a forward HTTP proxy (absolute-URI requests, as
curl sends them to an http_proxy), which logs "PROXY GET URL" and relays the
upstream answer, Range header included.

Every request is logged on stdout as "GET PATH range=VALUE".  The first line
is "port N".  The server exits by itself after --lifetime seconds, so a test
that dies cannot leave it behind.
"""
import argparse
import http.client
import http.server
import os
import socket
import sys
import threading
import time
import urllib.parse


def log(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        log("GET %s range=%s" % (self.path, rng or "-"))
        path = self.path
        mode = ""
        for m in ("/drop/", "/slow/", "/stall/"):
            if path.startswith(m):
                mode = m.strip("/")
                path = "/" + path[len(m):]
        name = os.path.basename(urllib.parse.unquote(path))
        full = os.path.join(self.root, name)
        if not name or not os.path.isfile(full):
            body = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = open(full, "rb").read()
        start, end = 0, len(data) - 1
        status = 200
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a) if a else 0
            end = int(b) if b else len(data) - 1
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        part = data[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(part)))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
        self.end_headers()
        if mode == "drop" and not rng:
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "slow":
            for i in range(0, len(part), 4096):
                self.wfile.write(part[i:i + 4096])
                self.wfile.flush()
                time.sleep(0.1)
            return
        if mode == "stall":
            self.wfile.write(part[:4096])
            self.wfile.flush()
            time.sleep(60)
            self.close_connection = True
            return
        self.wfile.write(part)


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        log("PROXY GET %s" % self.path)
        u = urllib.parse.urlsplit(self.path)
        if u.scheme != "http":
            self.send_error(501, "only http:// through this proxy")
            return
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("proxy-connection", "connection", "host")}
        conn.request("GET", u.path + ("?" + u.query if u.query else ""), headers=headers)
        r = conn.getresponse()
        body = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=".")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--lifetime", type=float, default=300)
    ap.add_argument("--proxy", action="store_true")
    a = ap.parse_args()
    Files.root = a.dir
    srv = http.server.ThreadingHTTPServer((a.bind, 0), Proxy if a.proxy else Files)
    srv.daemon_threads = True
    log("port %d" % srv.server_address[1])
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
