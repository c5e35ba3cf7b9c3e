#!/usr/bin/env python3
"""tools/pins.py: print the rows to add to roles/artifacts.yaml and
roles/kubernetes.yaml from upstream release data handed to it.  A
maintainer's tool, not part of provision: it reads files only (no network)
and prints YAML to paste, each row with the source it came from.

  tools/pins.py kubespray CHECKSUMS_YML COMMIT
      kubeadm_checksums: the newest patch per Kubernetes minor (the
      `patch` column); containerd_archive_checksums, runc_checksums,
      helm_archive_checksums: artifact rows for the newest version.
  tools/pins.py chart INDEX_YAML NAME VERSION SOURCE
      a chart's row from its repository's index.yaml (digest, URL).
  tools/pins.py sums SHA256SUMS_FILE URL_BASE SOURCE
      rows for each `HASH  FILE` line of a release checksum file
      (runc.sha256sum, containerd's .sha256sum, Helm's .sha256sum).
SOURCE is what the row's comment names (repository and commit).
"""
import re
import sys

import yaml


def vkey(v):
    return tuple(int(p) for p in re.findall(r"\d+", str(v)))


def row(name, url, sha, desc, source):
    print("%s:\n  # sha256: %s\n  url: %s\n  sha256: %s\n  description: %s\n" % (name, source, url, sha, desc))


def kubespray(path, commit):
    ks = yaml.safe_load(open(path))
    src = "kubernetes-sigs/kubespray %s roles/kubespray_defaults/vars/main/checksums.yml" % commit
    newest = {}
    for v in ks.get("kubeadm_checksums", {}).get("amd64", {}):
        minor = ".".join(str(v).split(".")[:2])
        if minor not in newest or vkey(v) > vkey(newest[minor]):
            newest[minor] = str(v)
    print("# roles/kubernetes.yaml: patch per minor (%s kubeadm_checksums)" % src)
    for minor in sorted(newest, key=vkey):
        print('  "%s":\n    patch: "%s"' % (minor, newest[minor]))
    print()
    urls = {
        "containerd_archive_checksums": ("containerd-linux-%s", "https://github.com/containerd/containerd/releases/download/v{v}/containerd-{v}-linux-{a}.tar.gz", "containerd {v} release archive for {a} (cluster.containerd release)"),
        "runc_checksums": ("runc-%s", "https://github.com/opencontainers/runc/releases/download/v{v}/runc.{a}", "runc {v} for {a} (with containerd's release archive)"),
        "helm_archive_checksums": ("helm-linux-%s", "https://get.helm.sh/helm-v{v}-linux-{a}.tar.gz", "Helm v{v} release archive for {a}"),
    }
    for key, (name, url, desc) in urls.items():
        for arch in ("amd64", "arm64"):
            table = ks.get(key, {}).get(arch, {})
            if not table:
                continue
            v = max(table, key=vkey)
            sha = str(table[v]).split(":")[-1]
            if not re.fullmatch("[0-9a-f]{64}", sha):
                continue
            row(name % arch, url.format(v=v, a=arch), sha, desc.format(v=v, a=arch), "%s %s %s %s" % (src, key, arch, v))


def chart(path, name, version, source):
    idx = yaml.safe_load(open(path))
    for e in idx["entries"].get(name, []):
        if str(e["version"]) == version:
            row("%s-chart" % name, e["urls"][0], e["digest"], "%s chart %s" % (name, version),
                "%s index.yaml entries.%s %s digest" % (source, name, version))
            return
    sys.exit("%s: no %s %s" % (path, name, version))


def sums(path, base, source):
    for ln in open(path):
        m = re.match(r"^([0-9a-f]{64})\s+\*?(\S+)$", ln.strip())
        if m:
            row(m.group(2), base.rstrip("/") + "/" + m.group(2), m.group(1), m.group(2), "%s %s" % (source, path.rsplit("/", 1)[-1]))


def main(argv):
    if len(argv) == 4 and argv[1] == "kubespray":
        kubespray(argv[2], argv[3])
    elif len(argv) == 6 and argv[1] == "chart":
        chart(*argv[2:6])
    elif len(argv) == 5 and argv[1] == "sums":
        sums(*argv[2:5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
