#!/usr/bin/env python3
"""throttle.py LISTEN_ADDR:PORT TARGET_ADDR:PORT BYTES_PER_SECOND

A TCP forwarder whose answers (target to client) share one rate limit, as
the clients of a slow link do: a lab whose registry or mirror is reached
at BYTES_PER_SECOND in all, however many blobs containerd fetches at once.
Requests (client to target) pass unlimited.  Prints "listening" once the
socket is bound, then one line per connection to standard error.  Runs
until killed (the tests start it under `timeout` and kill it at exit).
"""
import socket
import sys
import threading
import time

CHUNK = 16384


class Bucket:
    """One token bucket for every connection: at most `rate` bytes a second."""

    def __init__(self, rate):
        self.rate = float(rate)
        self.lock = threading.Lock()
        self.next = time.monotonic()

    def take(self, n):
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + n / self.rate
            wait = start - now
        if wait > 0:
            time.sleep(wait)


def pipe(src, dst, bucket):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            if bucket:
                bucket.take(len(data))
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def addr(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: throttle.py LISTEN_ADDR:PORT TARGET_ADDR:PORT BYTES_PER_SECOND")
    listen, target, rate = addr(sys.argv[1]), addr(sys.argv[2]), int(sys.argv[3])
    bucket = Bucket(rate)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(listen)
    srv.listen(64)
    print("listening", flush=True)
    while True:
        client, peer = srv.accept()
        try:
            upstream = socket.create_connection(target, timeout=10)
            upstream.settimeout(None)
        except OSError as e:
            print("%s: %s" % (peer[0], e), file=sys.stderr, flush=True)
            client.close()
            continue
        print("%s: connected" % peer[0], file=sys.stderr, flush=True)
        threading.Thread(target=pipe, args=(client, upstream, None), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client, bucket), daemon=True).start()


if __name__ == "__main__":
    main()
