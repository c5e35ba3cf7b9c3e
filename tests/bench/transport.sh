#!/bin/sh
# tests/bench/transport.sh: what one command costs over an open session.
#
# Starts a real sshd on 127.0.0.1 (tests/lib-sshd.sh) and prints a table:
# connect + authentication with and without TCP_NODELAY, starting the
# agent, and 100 sequential commands over one session for a shell builtin
# (`true`) and a forking command (`grep root /etc/passwd`), through the
# agent and with one channel per command (median and p95).  Prints figures;
# asserts nothing.  Needs root (sshd) and `make tests`.
#
#   sh tests/bench/transport.sh [N_COMMANDS] [N_CONNECTS]
set -u
n=${1:-100}
connects=${2:-20}
SRC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# lib-sshd.sh finds transport-cli under $BUILD (lib.sh sets it for the tests)
BUILD=${BUILD:-${BUILD_DIR:-$SRC_ROOT/build}}
TEST_DIR=${PROVISION_TEST_WORK:-$SRC_ROOT/tests/.work}/bench-transport
rm -rf "$TEST_DIR"
mkdir -p "$TEST_DIR"

# The few lib.sh helpers lib-sshd.sh uses.
bench_cleanup=
test_at_exit() { bench_cleanup="$1; $bench_cleanup"; }
test_skip_all() {
	echo "transport benchmark skipped: $1"
	exit 0
}
test_need_cmd() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || test_skip_all "needs $c"
	done
}
trap 'eval "$bench_cleanup"; rm -rf "$TEST_DIR"' EXIT
trap 'exit 130' INT TERM

# shellcheck source=tests/lib-sshd.sh
. "$SRC_ROOT/tests/lib-sshd.sh"
sshd_need
sshd_start bench >/dev/null || exit 1
sshd_known_hosts bench "$TEST_DIR/known_hosts" || exit 1

# median and p95 of the numbers on stdin (milliseconds)
stats() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-", "-"; exit }
		m = v[int((NR + 1) / 2)]; p = v[int((NR * 95 + 99) / 100)]
		printf "%10.3f %10.3f\n", m, p }'
}

# connect [-N]: connect+auth and agent start of $connects sessions
connect_times() {
	i=0
	while [ "$i" -lt "$connects" ]; do
		tcli bench "$@" 127.0.0.1 stats
		i=$((i + 1))
	done | sed -n 's/.*connect_ms=\([0-9.]*\) agent_ms=\([0-9.]*\).*/\1 \2/p'
}

row() { # LABEL VALUES...
	printf '%-44s %s\n' "$1" "$2"
}

bench_row() { # LABEL FLAGS COMMAND
	# shellcheck disable=SC2086 # $2: zero or more flags
	line=$(tcli bench $2 127.0.0.1 bench "$n" "$3") || {
		row "$1" "failed"
		return
	}
	median=$(echo "$line" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')
	p95=$(echo "$line" | sed -n 's/.*p95_ms=\([0-9.]*\).*/\1/p')
	row "$1" "$(printf '%10.3f %10.3f' "$median" "$p95")"
}

libssh=$(dpkg-query -W -f '${Version}' libssh-4 2>/dev/null || echo '?')
openssh=$("$SSHD_BIN" -V 2>&1 | head -n1 | cut -d, -f1)
echo "transport benchmark: libssh $libssh -> $openssh on 127.0.0.1, $(nproc) CPUs"
echo "per command: $n sequential commands over one session; connect: $connects sessions"
echo
row "what" "$(printf '%10s %10s' 'median ms' 'p95 ms')"
connect_times >"$TEST_DIR/c.nodelay"
connect_times -N >"$TEST_DIR/c.nagle"
row "connect + auth (TCP_NODELAY)" "$(awk '{print $1 - $2}' "$TEST_DIR/c.nodelay" | stats)"
row "connect + auth (Nagle on)" "$(awk '{print $1 - $2}' "$TEST_DIR/c.nagle" | stats)"
row "agent start (channel, sh, script, hello)" "$(awk '{print $2}' "$TEST_DIR/c.nodelay" | stats)"
bench_row "agent: true" "" true
bench_row "agent: grep root /etc/passwd" "" "grep root /etc/passwd"
bench_row "channel per command: true" "-c" true
bench_row "channel per command: grep root /etc/passwd" "-c" "grep root /etc/passwd"
bench_row "agent, Nagle on: true" "-N" true
bench_row "channel per command, Nagle on: true" "-c -N" true
