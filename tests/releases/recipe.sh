# shellcheck shell=sh disable=SC2034 # the RELEASE_* variables are read by rootfs.sh
# tests/releases/recipe.sh: what the cached root file system of each Debian
# release of the "releases" tier is (tests/releases/README.md).
#
# Sourced by rootfs.sh.  The cache key of a release's tree is the SHA-256 of
# this file and the release's name: any change here builds new trees next
# to the old ones.  The mirror is not in the key (it only changes where
# the packages come from).

# suite: the containerd Debian ships in it (measured 2026-11-25)
#   bookworm (Debian 12)  1.6.20   config version 2
#   trixie   (Debian 13)  1.7.24   config version 2
#   sid      (unstable)   2.1.x    config version 3
RELEASE_SUITES="bookworm trixie sid"
RELEASE_VARIANT=minbase
# containerd brings runc and ctr; nothing else is needed to start it and
# ask it (`containerd config dump`, `ctr plugins ls`).  Each tree gets them
# from its own suite only: a bookworm tree never holds a newer binary.
RELEASE_PACKAGES=containerd

# release_customize DIR: trim a fresh debootstrap tree (on the host, touching
# only DIR).  The downloaded .debs are not needed again.
release_customize() {
	rm -f "$1"/var/cache/apt/archives/*.deb
	# Debian's package ships /etc/containerd/config.toml only in some
	# releases; the test always writes the one provision renders.
	rm -f "$1/etc/containerd/config.toml"
}
