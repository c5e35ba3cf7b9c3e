#!/bin/sh
# tests/bench/eta-demo.sh [ROUNDS]: the estimate of the demo's three runs
# (issue 22) against their real time.  Each round is a whole `sh
# tests/demo.sh` (lab B on six fresh systemd-nspawn nodes: the first `up`,
# the no-change second `up`, `add-node` of node-6), and every round keeps
# the same state folder, so round 2 is estimated from round 1, round 3 from
# rounds 1 and 2.  Each round's nodes are new machines with the old names
# and addresses, as after a lab reinstalls its PCs.  Prints, per round and
# run, the estimate, the actual time and the error; never fails on time.
#
#   DEMO_TOP=DIR    the tree whose demo, roles and build to run (default:
#                   this one; a worktree of an older commit gives "before")
rounds=${1:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
top=${DEMO_TOP:-$here}
# the scratch folder under the tree's tests/.work (lib.sh takes the script's parent)
PROVISION_TEST_WORK=${PROVISION_TEST_WORK:-$here/tests/.work}
# shellcheck source=tests/lib.sh
. "$here/tests/lib.sh"
state=$TEST_DIR/state
printf '%-6s %-9s %9s %9s %7s\n' round run estimate actual error
r=1
while [ "$r" -le "$rounds" ]; do
	log=$TEST_DIR/demo-$r.log
	if ! DEMO_STATE=$state PROVISION="$top/build/provision" sh "$top/tests/demo.sh" \
		</dev/null >"$log" 2>&1; then
		echo "round $r: the demo failed (its output: $log)" >&2
		export PROVISION_TEST_KEEP=1
	fi
	# "up lab-b: took 1m2s, estimated 58.1s (+7%)"; a run with no estimate says
	# "no earlier run to estimate the time from" and gets no such line.
	sed -nE 's/^(up|add-node) [^ ]+: (took [^,]*, estimated [^ ]* \([-+][0-9]+%\)|no earlier run to estimate the time from)$/\1 \2/p' "$log" |
		awk -v r="$r" '
			{ k = $1 == "add-node" ? "add-node" : ++ups == 1 ? "first" : "second" }
			$2 == "took" { sub(/,$/, "", $3); gsub(/[()]/, "", $6); printf "%-6s %-9s %9s %9s %7s\n", r, k, $5, $3, $6; next }
			{ printf "%-6s %-9s %9s %9s %7s\n", r, k, "(none)", "-", "-" }'
	r=$((r + 1))
done
