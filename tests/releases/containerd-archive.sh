#!/bin/sh
# tests/releases/containerd-archive.sh DIR RUNC: stand-ins for containerd's
# and runc's release downloads, which cannot be had here, made of real
# binaries: DIR/containerd-2.4.1-linux-amd64.tar.gz in the release archive's
# layout (bin/containerd, bin/containerd-shim-runc-v2, bin/ctr) holding
# Debian sid's containerd 2.1 from the releases tier's cached tree
# (rootfs.sh sid; its binaries need glibc 2.34, which Debian 12 and 13
# have), and DIR/runc.amd64, a copy of the runc binary RUNC.  The names are
# those of roles/artifacts.yaml's URLs, so that a test's copy of roles/ can
# pin their SHA-256 (tests/fakes/cluster-testbed.sh test_roles).  Run as
# root; a cold cache costs one debootstrap (README.md).
set -eu
[ $# = 2 ] || {
	echo "usage: containerd-archive.sh DIR RUNC" >&2
	exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
sid=$(sh "$here/rootfs.sh" sid)
work=$(mktemp -d "$1/.containerd-archive.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
for b in containerd containerd-shim-runc-v2 ctr; do
	cp "$sid/usr/bin/$b" "$work/bin/$b"
done
tar -czf "$1/containerd-2.4.1-linux-amd64.tar.gz" -C "$work" bin
cp "$2" "$1/runc.amd64"
chmod 0755 "$1/runc.amd64"
