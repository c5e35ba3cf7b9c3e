#!/bin/sh
# tests/bench/idempotency.sh [ROUNDS]: first `up` on fresh testbed nodes
# against the no-change second `up`, phases prep,kube-packages,nfs (the fake
# Kubernetes packages from a signed repository on the testbed bridge).
# Prints each round, the medians, the ratio, and where the second run's time
# goes.  A benchmark: it prints figures and never fails on time.
#
# Wall time on this 2-core machine follows the other jobs' load, so each run
# also shows the CPU time it cost: provision's own (user+sys) and the
# nodes' (every process the run started on them: the children's times
# their sshd listener collected, from /proc/PID/stat), which the load
# does not change much.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
TESTBED=$top/tests/testbed/testbed.sh
rounds=${1:-3}
work=$(mktemp -d /tmp/provision-idem.XXXXXX)
tb=$work/tb
http_pid=
cleanup() {
	[ -n "$http_pid" ] && kill "$http_pid" 2>/dev/null
	"$TESTBED" down "$tb" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$top/tests/fakes/kube-debs/build.sh" "$work/kube" 1.30.4 >"$work/kube.log" 2>&1
ms() { date +%s%N | cut -b1-13; }
# The testbed nodes' sshd listeners (by the nodes' network namespaces).
listeners() {
	for p in $(pgrep -f 'sshd.*listener'); do
		n=$(ip netns identify "$p" 2>/dev/null) || continue
		if grep -q " $n\$" "$tb/nodes.txt"; then echo "$p"; fi
	done
}
# CPU ms the listeners' reaped children used so far (cutime + cstime).
node_cpu() {
	for p in $listeners; do
		sed 's/^.*) //' "/proc/$p/stat"
	done | awk -v hz="$(getconf CLK_TCK)" '{ t += $14 + $15 } END { print int(t * 1000 / hz) }'
}
# run_cpu LOG ARGS...: provision ARGS > LOG; prints "WALL_MS PROVISION_CPU_MS NODES_CPU_MS".
run_cpu() {
	log=$1
	shift
	c0=$(node_cpu)
	t0=$(ms)
	/usr/bin/time -f '%U %S' -o "$work/time" "$PROVISION" "$@" >"$log" 2>"$log.err" || :
	t1=$(ms)
	sleep 0.3 # the sessions' processes are reaped
	echo "$((t1 - t0)) $(awk '{ print int(($1 + $2) * 1000) }' "$work/time") $(($(node_cpu) - c0))"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

r=0
while [ $r -lt "$rounds" ]; do
	"$TESTBED" up "$tb" --nspawn 1 --chroot 3 >"$work/up.log" 2>&1
	# shellcheck disable=SC1091
	. "$tb/testbed.env"
	if [ -z "$http_pid" ]; then
		timeout 1800 python3 -u -m http.server --bind "$TESTBED_HOST_ADDR" --directory "$work/kube/repo" 0 \
			>"$work/http.log" 2>&1 &
		http_pid=$!
		i=0
		until port=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$work/http.log") && [ -n "$port" ]; do
			i=$((i + 1)); [ $i -lt 50 ] || exit 1; sleep 0.1
		done
	fi
	sed -e "s|^  kubernetes_version: .*|&\n  apt_mirror: http://$TESTBED_HOST_ADDR:$port\n  apt_key_fingerprint: $(cat "$work/kube/key.fpr")|" \
		-e 's/roles: \[control-plane\]/roles: [control-plane, nfs-server]/' "$tb/inventory.yaml" >"$work/inv.yaml"
	printf 'storage:\n  nfs:\n    server: node-1\n    path: /srv/nfs\n' >>"$work/inv.yaml"
	listeners=$(listeners)
	set -- up -i "$work/inv.yaml" --phases prep,kube-packages,nfs --no-tui
	# shellcheck disable=SC2046 # six numbers
	set -- $(run_cpu "$work/first.log" "$@") $(run_cpu "$work/second.json" "$@" -o json -v)
	echo "round $((r + 1)): first $1 ms (CPU: provision $2 ms, nodes $3 ms), second $4 ms (CPU: provision $5 ms, nodes $6 ms); load $(cut -d ' ' -f 1 /proc/loadavg)"
	echo "$1" >>"$work/first"
	echo "$4" >>"$work/second"
	echo $(($2 + $3)) >>"$work/first.cpu"
	echo $(($5 + $6)) >>"$work/second.cpu"
	"$TESTBED" down "$tb" >/dev/null 2>&1
	r=$((r + 1))
done
f=$(median <"$work/first")
s=$(median <"$work/second")
echo "median: first $f ms, no-change second $s ms, ratio $(awk -v a="$s" -v b="$f" 'BEGIN { printf "%.1f%%", 100 * a / b }')"
f=$(median <"$work/first.cpu")
s=$(median <"$work/second.cpu")
echo "CPU (provision + nodes), median: first $f ms, second $s ms, ratio $(awk -v a="$s" -v b="$f" 'BEGIN { printf "%.1f%%", 100 * a / b }')"
echo "second run, slowest steps on one node (ms):"
jq -r 'select(.event == "step_end") | "\(.duration_ms) \(.node) \(.role) \(.step)"' "$work/second.json" |
	sort -rn | head -n 8 | sed 's/^/  /'
