#!/bin/sh
# tests/testbed/apt-repo.sh ROOTFS PACKAGE...: fetch (once) Debian's real
# packages PACKAGE... with what they need beyond the test nodes' rootfs
# ROOTFS (apt resolves them against ROOTFS's own dpkg status), and print
# the folder of a flat apt repository holding them (Packages, Packages.gz).
# A test serves it on the testbed bridge as the lab's Debian mirror
# (`deb [trusted=yes] http://HOST:PORT/ ./` in a node's sources.list), so
# that a role's own `apt-get install` runs for real: roles/api-vip's
# keepalived and haproxy (t0275).  Downloaded with apt-get into a private
# apt state (its own sources.list, lists and cache): nothing is installed
# on this machine.
#
# Cached in ${PROVISION_TESTBED_CACHE:-/var/cache/provision-testbed}/apt-KEY
# (KEY: SHA-256 of this script, lib-cache.sh, ROOTFS's name and the packages), built as
# .tmp and renamed when complete, under flock.  Mirror:
# PROVISION_TESTBED_MIRROR; suite: ROOTFS's (/etc/os-release).  Root only.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${PROVISION_TESTBED_CACHE:-/var/cache/provision-testbed}
mirror=${PROVISION_TESTBED_MIRROR:-http://deb.debian.org/debian}
# shellcheck source=tests/testbed/lib-cache.sh
. "$here/lib-cache.sh"
[ $# -ge 2 ] || die "usage: apt-repo.sh ROOTFS PACKAGE..."
rootfs=$1
shift
[ -f "$rootfs/var/lib/dpkg/status" ] || die "$rootfs: no dpkg status (not a rootfs)"
suite=$(sed -n 's/^VERSION_CODENAME=//p' "$rootfs/etc/os-release")
[ -n "$suite" ] || die "$rootfs: no VERSION_CODENAME in /etc/os-release"
key=$({
	cat "$0" "$here/lib-cache.sh"
	echo "${rootfs##*/} $suite $*"
} | sha256sum | cut -c1-16)
dest=$cache/apt-$key
cache_hit "$dest"
[ "$(id -u)" = 0 ] || die "must run as root"
command -v apt-ftparchive >/dev/null || die "needs apt-ftparchive (apt-utils)"
cache_lock "$dest" "$cache/.lock-apt-repo" 600
apt_private_init "$mirror" "$suite" "$rootfs/var/lib/dpkg/status"
mkdir -p "$tmp/repo"
if ! (apt_private update && apt_private install --download-only -y --no-install-recommends "$@") \
	>"$tmp/log" 2>&1 8>&-; then
	tail -n 20 "$tmp/log" >&2
	rm -rf "$tmp"
	die "downloading $suite's $* failed"
fi
mv "$tmp"/apt/cache/archives/*.deb "$tmp/repo/"
(cd "$tmp/repo" && apt-ftparchive packages . >Packages && gzip -9k Packages) 2>>"$tmp/log" ||
	die "apt-ftparchive failed"
(cd "$tmp/repo" && ls ./*.deb) >"$tmp/packages"
rm -rf "$tmp/apt" "$tmp/log"
touch "$tmp/.complete"
mv "$tmp" "$dest"
echo "$dest"
