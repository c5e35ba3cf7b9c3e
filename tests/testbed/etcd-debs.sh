#!/bin/sh
# tests/testbed/etcd-debs.sh SUITE: fetch (once) Debian SUITE's real etcd
# packages (etcd-server, etcd-client) and print the folder that holds
# their binaries (etcd, etcdctl, and etcdutl where the suite ships it:
# bookworm 3.4 has none, trixie 3.5 does).  The packages are downloaded
# with apt-get into a private apt state (its own sources.list, lists and
# cache under the folder being built) and unpacked with dpkg-deb -x:
# nothing is installed on this machine, whatever the suite; the binaries
# are copied into test nodes only.
#
# Cached in ${PROVISION_TESTBED_CACHE:-/var/cache/provision-testbed}/etcd-SUITE-KEY
# (KEY: SHA-256 of this script, lib-cache.sh and SUITE), built as .tmp and renamed when
# complete, under flock.  Mirror: PROVISION_TESTBED_MIRROR.  Run as root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${PROVISION_TESTBED_CACHE:-/var/cache/provision-testbed}
mirror=${PROVISION_TESTBED_MIRROR:-http://deb.debian.org/debian}
# shellcheck source=tests/testbed/lib-cache.sh
. "$here/lib-cache.sh"
[ $# = 1 ] || die "usage: etcd-debs.sh SUITE"
suite=$1
case $suite in
bookworm | trixie | sid) ;;
*) die "unknown suite '$suite' (bookworm, trixie or sid)" ;;
esac
key=$({
	cat "$0" "$here/lib-cache.sh"
	echo "$suite"
} | sha256sum | cut -c1-16)
dest=$cache/etcd-$suite-$key
cache_hit "$dest"
[ "$(id -u)" = 0 ] || die "must run as root"
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
	die "needs apt-get and dpkg-deb"
fi
cache_lock "$dest" "$cache/.lock-etcd" 600
apt_private_init "$mirror" "$suite" "$tmp/apt/status"
mkdir -p "$tmp/debs" "$tmp/root"
: >"$tmp/apt/status"
if ! (apt_private update && cd "$tmp/debs" && apt_private download etcd-server etcd-client) \
	>"$tmp/log" 2>&1 8>&-; then
	tail -n 20 "$tmp/log" >&2
	rm -rf "$tmp"
	die "downloading $suite's etcd-server and etcd-client failed"
fi
for d in "$tmp"/debs/*.deb; do
	dpkg-deb -x "$d" "$tmp/root"
done
mkdir -p "$tmp/bin"
for b in etcd etcdctl etcdutl; do
	[ -x "$tmp/root/usr/bin/$b" ] && cp "$tmp/root/usr/bin/$b" "$tmp/bin/$b"
done
if [ ! -x "$tmp/bin/etcd" ] || [ ! -x "$tmp/bin/etcdctl" ]; then
	rm -rf "$tmp"
	die "$suite's packages hold no etcd and etcdctl"
fi
(cd "$tmp/debs" && ls) >"$tmp/packages"
rm -rf "$tmp/apt" "$tmp/root" "$tmp/debs" "$tmp/log"
touch "$tmp/.complete"
mv "$tmp" "$dest"
echo "$dest"
