#!/bin/sh
# tests/bench/idempotency.sh [ROUNDS]: first `up` on fresh testbed nodes
# against the no-change second `up`, phases prep,kube-packages,nfs (the fake
# Kubernetes packages from a signed repository on the testbed bridge).
# Prints each round, the medians, the ratio, and where the second run's time
# goes.  A benchmark: it prints figures and never fails on time.
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
	sed -e "s|^  kubernetes_version: .*|&\n  apt_mirror: http://$TESTBED_HOST_ADDR:$port|" \
		-e 's/roles: \[control-plane\]/roles: [control-plane, nfs-server]/' "$tb/inventory.yaml" >"$work/inv.yaml"
	printf 'storage:\n  nfs:\n    server: node-1\n    path: /srv/nfs\n' >>"$work/inv.yaml"
	set -- up -i "$work/inv.yaml" --phases prep,kube-packages,nfs --no-tui
	t0=$(ms); "$PROVISION" "$@" >"$work/first.log" 2>&1; t1=$(ms)
	"$PROVISION" "$@" -o json -v >"$work/second.json" 2>&1; t2=$(ms)
	echo "round $((r + 1)): first $((t1 - t0)) ms, second $((t2 - t1)) ms"
	echo $((t1 - t0)) >>"$work/first"
	echo $((t2 - t1)) >>"$work/second"
	"$TESTBED" down "$tb" >/dev/null 2>&1
	r=$((r + 1))
done
f=$(median <"$work/first")
s=$(median <"$work/second")
echo "median: first $f ms, no-change second $s ms, ratio $(awk -v a="$s" -v b="$f" 'BEGIN { printf "%.1f%%", 100 * a / b }')"
echo "second run, slowest steps on one node (ms):"
jq -r 'select(.event == "step_end") | "\(.duration_ms) \(.node) \(.role) \(.step)"' "$work/second.json" |
	sort -rn | head -n 8 | sed 's/^/  /'
