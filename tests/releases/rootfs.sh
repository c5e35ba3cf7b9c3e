#!/bin/sh
# tests/releases/rootfs.sh SUITE: build (once) and print the path of the
# cached root file system of Debian SUITE for the releases tier
# (tests/releases/README.md): debootstrap --variant=minbase with the suite's
# own containerd, from the suite's own mirror.  Run as root.
#
# The tree is built under a temporary name and renamed only when complete,
# under an exclusive lock on the cache directory, so two runs at once build
# it once and no run ever uses a half-built tree.  The cache key is
# recipe.sh's SHA-256 plus SUITE.  Knobs: PROVISION_RELEASES_CACHE (default
# /var/cache/provision-releases), PROVISION_RELEASES_MIRROR (default
# http://deb.debian.org/debian).  The build's time goes to standard error.
set -eu
umask 022
here=$(cd "$(dirname "$0")" && pwd)
cache=${PROVISION_RELEASES_CACHE:-/var/cache/provision-releases}
mirror=${PROVISION_RELEASES_MIRROR:-http://deb.debian.org/debian}

# shellcheck source=tests/testbed/lib-cache.sh
. "$here/../testbed/lib-cache.sh"

[ $# = 1 ] || die "usage: rootfs.sh SUITE"
suite=$1
# shellcheck source=recipe.sh
. "$here/recipe.sh"
case " $RELEASE_SUITES " in
*" $suite "*) ;;
*) die "unknown suite $suite (recipe.sh has: $RELEASE_SUITES)" ;;
esac
key=$({
	cat "$here/recipe.sh"
	echo "$suite"
} | sha256sum | cut -c1-16)
dest=$cache/$suite-$key
cache_hit "$dest"
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap)"
command -v debootstrap >/dev/null || die "debootstrap is missing (make deps installs it)"
cache_lock "$dest" "$cache/.lock" 1800
start=$(date +%s)
echo "rootfs.sh: building $dest (debootstrap $suite from $mirror; log: $dest.log)" >&2
if ! timeout 1800 debootstrap --variant="$RELEASE_VARIANT" --include="$RELEASE_PACKAGES" \
	"$suite" "$tmp" "$mirror" >"$dest.log" 2>&1 8>&-; then
	tail -n 20 "$dest.log" >&2
	rm -rf "$tmp"
	die "debootstrap $suite failed (see $dest.log)"
fi
if ! release_customize "$tmp" >>"$dest.log" 2>&1 8>&-; then
	rm -rf "$tmp"
	die "customizing the $suite tree failed (see $dest.log)"
fi
cp "$here/recipe.sh" "$tmp/.recipe"
chroot "$tmp" containerd --version >"$tmp/.containerd-version" 2>>"$dest.log" ||
	{ rm -rf "$tmp"; die "no working containerd in the $suite tree (see $dest.log)"; }
touch "$tmp/.complete"
mv "$tmp" "$dest"
echo "rootfs.sh: $suite built in $(($(date +%s) - start)) s: $dest ($(du -sh "$dest" | cut -f1)), $(cat "$dest/.containerd-version")" >&2
echo "$dest"
