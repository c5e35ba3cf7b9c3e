#!/usr/bin/env python3
"""tcp-balancer: a lab's own TCP load balancer in front of the API servers,
for the tests of cluster.api_endpoint.address (t0468).

    tcp-balancer.py LISTEN-HOST:PORT BACKEND-HOST:PORT... [--seconds N]

Each backend's health is asked once a second as kubeadm's
ha-considerations configures HAProxy for the API servers: HTTPS GET
/readyz, the certificate not verified, healthy while it answers 200 within
1 s.  Each connection goes to the first healthy backend in the order given
(none healthy, as before the first API server answers: the first that
accepts a TCP connection within 1 s), and bytes are copied both ways until
either side closes.  Prints "listening on HOST:PORT" once bound; exits
after --seconds (default 1800), so that a test that dies leaves nothing
running.  Test code.
"""
import asyncio
import ssl
import sys


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main(argv):
    seconds = 1800
    if "--seconds" in argv:
        i = argv.index("--seconds")
        seconds = int(argv[i + 1])
        del argv[i:i + 2]
    listen, backends = hostport(argv[0]), [hostport(b) for b in argv[1:]]
    healthy = {b: False for b in backends}
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE

    async def ready(host, port):
        reader, writer = await asyncio.open_connection(host, port, ssl=tls)
        try:
            writer.write(b"GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n" % host.encode())
            await writer.drain()
            line = await reader.readline()
            return line.split()[1:2] == [b"200"]
        finally:
            writer.close()

    async def check(b):
        while True:
            try:
                healthy[b] = await asyncio.wait_for(ready(*b), 1.0)
            except (OSError, ssl.SSLError, asyncio.TimeoutError, IndexError):
                healthy[b] = False
            await asyncio.sleep(1)

    async def client(creader, cwriter):
        order = [b for b in backends if healthy[b]] or backends
        for host, port in order:
            try:
                breader, bwriter = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
            except (OSError, asyncio.TimeoutError):
                continue
            await asyncio.gather(pipe(creader, bwriter), pipe(breader, cwriter))
            return
        cwriter.close()

    checks = [asyncio.create_task(check(b)) for b in backends]
    server = await asyncio.start_server(client, listen[0], listen[1])
    print("listening on %s:%d" % listen, flush=True)
    async with server:
        try:
            await asyncio.wait_for(server.serve_forever(), seconds)
        except asyncio.TimeoutError:
            pass
    for t in checks:
        t.cancel()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: tcp-balancer.py LISTEN-HOST:PORT BACKEND-HOST:PORT... [--seconds N]")
    asyncio.run(main(sys.argv[1:]))
