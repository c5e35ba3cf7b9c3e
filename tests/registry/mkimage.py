#!/usr/bin/env python3
"""tests/registry/mkimage.py: container images made here, pushed to a registry.

    mkimage.py push URL REPO:TAG [--layer SIZE]... [--index] [--user USER --password-file F]
                [--cacert FILE] [--seed TEXT]

makes an OCI image (one gzip layer per --layer, each a tar with one file of
SIZE bytes -- 4k, 20M, 1G -- of pseudo-random data, so that no compression
shrinks it and a pull moves SIZE bytes; its config with the layers'
diff_ids, linux/amd64) and pushes it to the registry at URL (http:// or
https://) through the registry HTTP API V2 (distribution's docs/spec/api.md:
a blob is uploaded with POST /v2/NAME/blobs/uploads/ and a monolithic PUT
?digest=, skipped when HEAD finds it; the manifest with PUT
/v2/NAME/manifests/TAG).  With --index the tag names an OCI image index
(one entry, linux/amd64) in front of the manifest, as multi-platform images
on the public registries are.  Prints "REPO:TAG sha256:DIGEST BYTES" (the
digest of what the tag names, the bytes of its layers).

The same --seed and sizes give the same bytes (the data is SHA-256 in
counter mode of the seed), so images pushed under many names share their
blobs.  Standard library only; basic auth for an htpasswd registry.
"""
import argparse
import base64
import gzip
import hashlib
import http.client
import io
import json
import os
import ssl
import sys
import tarfile
import tempfile
import urllib.parse

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def size_of(text):
    units = {"": 1, "k": 1 << 10, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    num = text.rstrip("kKMG")
    return int(num) * units[text[len(num):]]


class Stream(io.RawIOBase):
    """SIZE pseudo-random bytes: SHA-256 of SEED:COUNTER, block after block."""

    def __init__(self, seed, size):
        self.seed, self.left, self.n, self.buf = seed.encode(), size, 0, b""

    def readable(self):
        return True

    def readinto(self, b):
        want = min(len(b), self.left)
        while len(self.buf) < want:
            chunk = []
            for _ in range(2048):
                chunk.append(hashlib.sha256(self.seed + b":%d" % self.n).digest())
                self.n += 1
            self.buf += b"".join(chunk)
        b[:want] = self.buf[:want]
        self.buf = self.buf[want:]
        self.left -= want
        return want


def make_layer(path, seed, size, index):
    """A gzip'd tar holding /provision-test/layer-INDEX (SIZE bytes); returns (digest, diff_id, bytes)."""
    raw = hashlib.sha256()
    out = hashlib.sha256()

    class Tee(io.RawIOBase):
        def __init__(self, f):
            self.f = f

        def writable(self):
            return True

        def write(self, b):
            out.update(b)
            return self.f.write(b)

    class Raw(io.RawIOBase):
        def __init__(self, gz):
            self.gz = gz

        def writable(self):
            return True

        def write(self, b):
            raw.update(b)
            return self.gz.write(b)

    with open(path, "wb") as f:
        tee = Tee(f)
        # level 1: the data is random, gzip only frames it
        with gzip.GzipFile(fileobj=tee, mode="wb", compresslevel=1, mtime=0) as gz:
            with tarfile.open(fileobj=Raw(gz), mode="w|", format=tarfile.PAX_FORMAT) as tar:
                d = tarfile.TarInfo("provision-test")
                d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, 0
                tar.addfile(d)
                ti = tarfile.TarInfo("provision-test/layer-%d" % index)
                ti.size, ti.mode, ti.mtime = size, 0o644, 0
                tar.addfile(ti, io.BufferedReader(Stream("%s:%d" % (seed, index), size), 1 << 20))
    return "sha256:" + out.hexdigest(), "sha256:" + raw.hexdigest(), os.path.getsize(path)


class Registry:
    def __init__(self, url, user=None, password=None, cacert=None):
        u = urllib.parse.urlsplit(url)
        self.https = u.scheme == "https"
        self.netloc = u.netloc
        self.ctx = ssl.create_default_context(cafile=cacert) if self.https else None
        self.auth = None
        if user:
            self.auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    def request(self, method, path, body=None, headers=None, length=None):
        h = dict(headers or {})
        if self.auth:
            h["Authorization"] = self.auth
        if length is not None:
            h["Content-Length"] = str(length)
        if self.https:
            c = http.client.HTTPSConnection(self.netloc, context=self.ctx, timeout=120)
        else:
            c = http.client.HTTPConnection(self.netloc, timeout=120)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.headers, data

    def push_blob(self, repo, digest, path=None, data=None):
        st, _, _ = self.request("HEAD", "/v2/%s/blobs/%s" % (repo, digest))
        if st == 200:
            return
        st, hd, body = self.request("POST", "/v2/%s/blobs/uploads/" % repo, length=0)
        if st != 202:
            sys.exit("mkimage: POST blobs/uploads/ of %s: HTTP %d %s" % (repo, st, body[:300]))
        loc = hd["Location"]
        u = urllib.parse.urlsplit(loc)
        target = u.path + "?" + (u.query + "&" if u.query else "") + "digest=" + urllib.parse.quote(digest)
        if path:
            with open(path, "rb") as f:
                st, _, body = self.request("PUT", target, body=f, length=os.path.getsize(path),
                                           headers={"Content-Type": "application/octet-stream"})
        else:
            st, _, body = self.request("PUT", target, body=data, length=len(data),
                                       headers={"Content-Type": "application/octet-stream"})
        if st != 201:
            sys.exit("mkimage: PUT blob %s of %s: HTTP %d %s" % (digest, repo, st, body[:300]))

    def push_manifest(self, repo, ref, media, data):
        st, _, body = self.request("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=data,
                                   length=len(data), headers={"Content-Type": media})
        if st != 201:
            sys.exit("mkimage: PUT manifest %s:%s: HTTP %d %s" % (repo, ref, st, body[:300]))


def main():
    ap = argparse.ArgumentParser(prog="mkimage.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("push")
    p.add_argument("url")
    p.add_argument("ref")
    p.add_argument("--layer", action="append", default=[])
    p.add_argument("--index", action="store_true")
    p.add_argument("--seed", default="provision")
    p.add_argument("--user")
    p.add_argument("--password-file")
    p.add_argument("--cacert")
    p.add_argument("--cache", help="folder for the layer files (made once per seed and size)")
    a = ap.parse_args()
    repo, _, tag = a.ref.rpartition(":")
    if not repo or "/" in tag:
        sys.exit("mkimage: REPO:TAG, not %s" % a.ref)
    password = open(a.password_file).read().strip() if a.password_file else None
    reg = Registry(a.url, a.user, password, a.cacert)
    cache = a.cache or tempfile.mkdtemp(prefix="mkimage.")
    os.makedirs(cache, exist_ok=True)
    layers, total = [], 0
    for i, text in enumerate(a.layer or ["4k"]):
        size = size_of(text)
        base = os.path.join(cache, "%s-%d-%d" % (hashlib.sha256(a.seed.encode()).hexdigest()[:12], i, size))
        if os.path.exists(base + ".json"):
            meta = json.load(open(base + ".json"))
        else:
            digest, diff_id, n = make_layer(base + ".tmp", a.seed, size, i)
            os.rename(base + ".tmp", base + ".tgz")
            meta = {"digest": digest, "diff_id": diff_id, "size": n}
            json.dump(meta, open(base + ".json", "w"))
        reg.push_blob(repo, meta["digest"], path=base + ".tgz")
        layers.append(meta)
        total += meta["size"]
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "Cmd": ["/bin/sh"], "Labels": {"dev.provision.test": a.seed}},
        "rootfs": {"type": "layers", "diff_ids": [l["diff_id"] for l in layers]},
        "history": [{"created_by": "tests/registry/mkimage.py"} for _ in layers],
    }, sort_keys=True).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    reg.push_blob(repo, config_digest, data=config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
        "layers": [{"mediaType": OCI_LAYER, "digest": l["digest"], "size": l["size"]} for l in layers],
    }, sort_keys=True).encode()
    mdigest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    if a.index:
        reg.push_manifest(repo, mdigest, OCI_MANIFEST, manifest)
        index = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_INDEX,
            "manifests": [{"mediaType": OCI_MANIFEST, "digest": mdigest, "size": len(manifest),
                           "platform": {"architecture": "amd64", "os": "linux"}}],
        }, sort_keys=True).encode()
        reg.push_manifest(repo, tag, OCI_INDEX, index)
        top = "sha256:" + hashlib.sha256(index).hexdigest()
    else:
        reg.push_manifest(repo, tag, OCI_MANIFEST, manifest)
        top = mdigest
    print("%s %s %d" % (a.ref, top, total))


if __name__ == "__main__":
    main()
