# shellcheck shell=sh
# tests/testbed/lib-cache.sh: what the scripts that build a thing once into
# a cache folder share (tests/testbed/apt-repo.sh, etcd-debs.sh,
# tests/releases/rootfs.sh).  A thing is built as DEST.tmp and renamed DEST
# when complete (DEST/.complete), under an exclusive lock on file
# descriptor 8 (run the build's commands with 8>&-): two runs at once build
# it once, and no run uses a half-built one.

# die MESSAGE: "SCRIPT: MESSAGE" on standard error, exit 1.
die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# cache_hit DEST: DEST printed and the script ended (0) when it is complete.
cache_hit() {
	if [ -f "$1/.complete" ]; then
		echo "$1"
		exit 0
	fi
}

# cache_lock DEST LOCKFILE SECONDS: the lock taken (waiting at most SECONDS
# for another run's build), DEST printed and the script ended if that run
# built it, else tmp set to DEST.tmp, not there.
cache_lock() {
	mkdir -p "$(dirname "$2")"
	exec 8>"$2"
	flock -w "$3" 8 || die "timed out ($3 s) waiting for another build"
	cache_hit "$1"
	tmp=$1.tmp
	rm -rf "$tmp"
}

# apt_private_init MIRROR SUITE STATUS: a private apt state in $tmp/apt
# (its own sources.list of MIRROR's SUITE main, lists and cache) for
# apt_private, which resolves against the dpkg status file STATUS.
apt_private_init() {
	mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial"
	echo "deb $1 $2 main" >"$tmp/apt/sources.list"
	apt_status=$3
}

# apt_private ARGS...: apt-get ARGS in the private state (nothing of this
# machine's apt read or changed).
apt_private() {
	apt-get -q -o Dir::Etc::SourceList="$tmp/apt/sources.list" \
		-o Dir::Etc::SourceParts=/nonexistent -o Dir::State="$tmp/apt" \
		-o Dir::State::Lists="$tmp/apt/lists" -o Dir::State::status="$apt_status" \
		-o Dir::Cache="$tmp/apt/cache" -o APT::Sandbox::User=root "$@"
}
