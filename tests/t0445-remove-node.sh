#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 319 s in CI (beside another; tests/run.sh starts the longest first)
# t0445-remove-node: `provision remove-node` on a four-node testbed cluster
# (node-1 the control plane, node-2..4 workers), judged by the cluster's
# and the nodes' real state (kubectl on the control plane, the nodes'
# services and interfaces), not by provision's report:
#   - the control plane cannot be removed, and nothing happens without a
#     terminal or --yes (exit 2);
#   - a pod without a controller on node-3 does not leave: the drain fails
#     naming it with drain's own reason, and only it (not the ReplicaSet's
#     pod beside it, which drain had no turn to evict: issue 33), exit 1,
#     and node-3 stays in the cluster and is not reset;
#   - node-2 is removed: gone from `kubectl get nodes`, no pod bound to it,
#     the others still Ready, node-2 itself reset (kubelet disabled and
#     stopped, no flannel.1, no /etc/kubernetes/kubelet.conf) and verified;
#   - node-4 dies (testbed kill-node): remove-node --force deletes it and
#     its pods without contacting it, and says the node-side reset was
#     skipped;
#   - the runs are recorded.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up refusals stuck-pod remove dead record"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
cluster_testbed 4 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
P="--state $STATE --roles $ROLES --no-tui"

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }

# ready NODE...: each of them is Ready.
ready() {
	for n in "$@"; do
		s=$(kc get node "$n" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')
		[ "$s" = True ] || { echo "$n: Ready=$s"; return 1; }
	done
}

test_case "up: four nodes Ready" "
	'$PROVISION' up -i '$INV' $P >up.out 2>&1 || { run_tail up.out; false; }
	ready node-1 node-2 node-3 node-4
"

test_case "refusals: the control plane (exit 2); no terminal and no --yes (exit 2); nothing changed" "
	expect_status 2 '$PROVISION' remove-node -i '$INV' $P --yes node-1 >out 2>err
	expect_grep \"'node-1' is the control plane\" err
	expect_status 2 '$PROVISION' remove-node -i '$INV' $P node-2 </dev/null >out 2>err
	expect_grep 'not on a terminal' err
	expect_status 2 '$PROVISION' remove-node -i '$INV' $P --yes node-9 >out 2>err
	ready node-1 node-2 node-3 node-4
	expect_eq '' \"\$(kc get node node-2 -o 'jsonpath={.spec.unschedulable}')\" 'node-2 not cordoned'
"

test_case "a pod without a controller on node-3 (a ReplicaSet's pod beside it): drain fails naming only the bare pod, with drain's reason, exit 1, node-3 neither deleted nor reset" "
	printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata:' '  name: lonely' '  namespace: default' 'spec:' \
		'  nodeName: node-3' '  containers:' '  - name: c' '    image: registry.example/lonely:1' |
		tb node-1 sh -c 'cat >/tmp/lonely.yaml && kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f /tmp/lonely.yaml'
	printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata:' '  name: web' '  namespace: default' 'spec:' \
		'  replicas: 1' '  selector:' '    matchLabels: {app: web}' '  template:' '    metadata:' '      labels: {app: web}' \
		'    spec:' '      nodeSelector: {kubernetes.io/hostname: node-3}' '      containers:' '      - name: c' \
		'        image: registry.example/web:1' |
		tb node-1 sh -c 'cat >/tmp/web.yaml && kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f /tmp/web.yaml'
	i=0
	until [ \"\$(kc get pods -n default -l app=web -o 'jsonpath={.items[*].spec.nodeName}')\" = node-3 ]; do
		i=\$((i + 1))
		[ \$i -lt 60 ] || { echo 'the web pod is not on node-3'; kc get pods -A -o wide; false; }
		sleep 1
	done
	expect_status 1 '$PROVISION' remove-node -i '$INV' $P --yes node-3 >stuck.out 2>&1
	expect_grep 'remove-node › 20-drain … failed .*: pods that would not leave node-3: default/lonely (drain: cannot delete Pods that declare no controller (use --force to override)) (hint: ' stuck.out
	expect_no_grep 'would not leave node-3: .*web' stuck.out
	expect_grep 'NOT removed from the cluster' stuck.out
	expect_grep 'reset-cluster .*skipped.*waits for role .remove-node., which failed' stuck.out
	expect_grep '\\[node-3\\] reset-prep › wait … skipped' stuck.out
	expect_no_grep '\\[node-3\\] reset-prep › [0-9]' stuck.out
	expect_no_grep '\\[node-3\\] reset-verify › [0-9]' stuck.out
	expect_grep 'node-side reset skipped: node-3 is still in the cluster, so it was left untouched' stuck.out
	expect_no_grep 'removed: nothing (it was clean)' stuck.out
	expect_no_grep 'verified: NOT clean' stuck.out
	kc get node node-3 -o name | grep -qx node/node-3
	expect_eq 'active enabled' \"\$(tb node-3 systemctl is-active kubelet) \$(tb node-3 systemctl is-enabled kubelet)\" 'node-3 kubelet'
	tb node-3 test -f /etc/kubernetes/kubelet.conf
	kc delete deployment web -n default >/dev/null
"

test_case "remove-node node-2: gone from the cluster, no pod bound to it, the others Ready, node-2 reset and verified" "
	'$PROVISION' remove-node -i '$INV' $P --yes node-2 >rm.out 2>&1 || { run_tail rm.out; false; }
	expect_grep 'node-2 cordoned, drained and deleted from the cluster' rm.out
	expect_grep '^node-2  *removed: kubeadm, kubelet, cni' rm.out
	expect_grep 'verified: clean .*reachable over SSH' rm.out
	expect_grep 'remove node-2 from ' rm.out
	# the testbed's inventory has no hub (jupyterhub.enabled: false)
	expect_grep 'remove-node: no hub in the inventory: no profiles to regenerate' rm.out
	! kc get node node-2 -o name 2>/dev/null
	kc get pods -A -o 'jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' >bound
	expect_no_grep '^node-2\$' bound
	ready node-1 node-3 node-4
	expect_eq inactive \"\$(tb node-2 systemctl is-active kubelet)\" 'node-2 kubelet'
	! tb node-2 dpkg-query -W kubelet >/dev/null 2>&1
	! tb node-2 ip link show dev flannel.1 >/dev/null 2>&1
	! tb node-2 test -e /etc/kubernetes/kubelet.conf
"

test_case "a dead node with --force: deleted with its pods, not contacted, the report says so" "
	'$TESTBED' kill-node '$TB' node-4
	logins=\$(grep -c 'Accepted publickey' '$TB/nodes/node-4/sshd.log' || true)
	'$PROVISION' remove-node -i '$INV' $P --yes --force node-4 >dead.out 2>&1 || { run_tail dead.out; false; }
	expect_grep 'node-4 deleted from the cluster with their pods (--force: not drained)' dead.out
	expect_grep 'node-side reset skipped (--force): it was not contacted' dead.out
	expect_no_grep '\\[node-4\\]' dead.out
	! kc get node node-4 -o name 2>/dev/null
	kc get pods -A -o 'jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' >bound
	expect_no_grep '^node-4\$' bound
	ready node-1 node-3
"

test_case "the remove-node runs are recorded" "
	'$PROVISION' history -i '$INV' --state '$STATE' >history.out
	[ \"\$(grep -c ' remove-node ' history.out)\" -ge 3 ]
"

test_done
