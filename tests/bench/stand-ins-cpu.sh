#!/bin/sh
# tests/bench/stand-ins-cpu.sh [ROUNDS]: what a converged 4-node cluster of
# stand-ins (tests/fakes: API server, controller manager, scheduler,
# kubelets, over the nodes' real containerd and sshd) costs in CPU while
# nothing happens.  CI runs a cluster script beside another on 2 cores, so
# an idle cluster's CPU is taken from the other script.  Builds the
# cluster testbed of the t04xx scripts (root), runs `provision up`, then
# counts the CPU time of every process under the nodes' systemd-nspawn for
# ROUNDS (default 3) windows of 60 s, and prints the busiest processes.
# A benchmark: prints figures, never fails on time.
rounds=${1:-3}
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"
cluster_testbed 4 1.30.4 || { echo "skip: $CLUSTER_SKIP"; exit 0; }
t0=$(date +%s)
$PROVISION up -i "$INV" --state "$STATE" --roles "$ROLES" --no-tui >"$TEST_DIR/up.out" 2>&1
echo "up: exit $? in $(($(date +%s) - t0)) s"
# the node processes: the testbed's systemd-nspawn processes and everything below them
node_pids() {
	roots=$(pgrep -f "systemd-nspawn .* -D $TB/nodes/" | tr '\n' ' ')
	ps -e -o pid=,ppid= | awk -v r="$roots" '
		BEGIN { n = split(r, a, " "); for (i = 1; i <= n; i++) keep[a[i]] = 1 }
		{ par[$1] = $2; pids[NR] = $1 }
		END {
			more = 1
			while (more) {
				more = 0
				for (i in pids) { p = pids[i]; if (!(p in keep) && (par[p] in keep)) { keep[p] = 1; more = 1 } }
			}
			for (p in keep) print p
		}'
}
# utime stime cutime cstime of one process, in clock ticks
ticks_of() { cut -d' ' -f14-17 "/proc/$1/stat" 2>/dev/null | awk '{ print $1 + $2 + $3 + $4 }'; }
cpu_now() {
	t=0
	for p in $(node_pids); do t=$((t + $(ticks_of "$p" || echo 0))); done
	echo "$t"
}
hz=$(getconf CLK_TCK)
echo "node processes: $(node_pids | wc -l); $(uptime)"
r=0
while [ $r -lt "$rounds" ]; do
	a=$(cpu_now)
	sleep 60
	b=$(cpu_now)
	echo "idle 60 s: $((b - a)) ticks ($hz a second): $(((b - a) * 100 / (60 * hz))) % of one core"
	r=$((r + 1))
done
echo "busiest node processes since they started (ticks, command):"
for p in $(node_pids); do
	echo "$(ticks_of "$p" || echo 0) $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-90)"
done | sort -nr | head -12
