#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 358 s in CI (beside another; tests/run.sh starts the longest first)
# t0412-kubeadm-real: what the real kubeadm, kubelet and kubectl do with the
# roles (issue 18), on two nspawn testbed nodes with the stand-ins of
# tests/fakes taught those behaviours, judged by provision's output, the
# node's log and the nodes' real state:
#   - containerd's sandbox image is kubeadm's pause image of the cluster's
#     minor (roles/kubernetes.yaml), not containerd 1.6's built-in pause:3.6;
#   - etcd slow to pass its startup probe (knob slow-start: 60 s, three
#     times the old bound) and mirror pods posted late: the first up waits
#     for the components in 50-stable, with progress lines, instead of
#     failing 30-init after 20 s;
#   - Flannel on a new cluster: kubectl diff cannot dry-run objects in the
#     missing kube-flannel namespace (NotFound, exit 2); 10-apply says so and
#     apply creates the namespace first;
#   - a Flannel init container whose image cannot be pulled (knob
#     image-pull-fail): 20-running names Init:ImagePullBackOff/ErrImagePull
#     and the image, and its hint is about the pull, naming the node and
#     the image; `check` says the same (issue 33: it said "Pending" and
#     blamed the interface and the pod CIDR);
#   - remove-node whose drain fails (a bare pod): the summary says the reset
#     was skipped, not "removed: nothing (it was clean)" / "NOT clean";
#   - kubeadm init that dies in wait-control-plane because kube-apiserver
#     exits (knob container-fail; knob control-plane-timeout: 40 s instead of
#     4 minutes), with only kubeadm's images pullable (knob registry-offline):
#     the hint names the API server, not the kubelet (which runs);
#   - the next up detects the half-done init, resets it and inits again.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="prepare sandbox-image slow-etcd flannel-namespace flannel-pull up-green drain-fails init-apiserver-down half-done-init"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
cluster_testbed 2 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
UP="$PROVISION up -i $INV --state $STATE --roles $ROLES --no-tui"
LOG=$STATE/logs/node-1.log

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }

test_case "prepare: prep and kube-packages on both nodes" "
	$UP --phases prep,kube-packages >prep.out 2>&1 || { run_tail prep.out; false; }
"

test_case "containerd's sandbox image is kubeadm's of Kubernetes 1.30 (pause:3.9), not its built-in pause:3.6" "
	for n in node-1 node-2; do
		tb \$n containerd config dump >dump-\$n
		grep sandbox_image dump-\$n
		expect_grep '^ *sandbox_image = \"registry.k8s.io/pause:3.9\"' dump-\$n
	done
"

test_case "etcd slow to start (60 s) and mirror pods late: init passes, 50-stable waits for the components with progress" "
	knob node-1 slow-start 'etcd 60'
	$UP --phases init >init.out 2>&1 || { run_tail init.out; false; }
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … changed' init.out
	expect_grep '\\[node-1\\] kubeadm-init › 50-stable … changed' init.out
	expect_grep 'waiting for the control plane.s components ([0-9]*s of at most 250s): not Ready yet: etcd' '$LOG'
	expect_grep 'etcd, kube-controller-manager and kube-scheduler Ready after [0-9]*s' '$LOG'
	grep -E 'waiting for the control plane.s components|Ready after' '$LOG' | sed -n '1p;\$p'
	expect_no_grep 'inconsistent with that used by kubeadm' '$LOG'
"

test_case "Flannel on a new cluster: the missing namespace is said and created first" "
	unknob node-1 slow-start
	knob node-1 image-pull-fail flannel-cni-plugin
	expect_status 1 $UP --phases cni >cni.out 2>&1
	expect_grep '\\[node-1\\] flannel › 10-apply … changed' cni.out
	expect_grep 'namespace kube-flannel does not exist yet: apply creates it' '$LOG'
	expect_grep 'namespace/kube-flannel created' '$LOG'
	grep -E 'kube-flannel does not exist yet|namespace/kube-flannel created' '$LOG'
	tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf diff -f /etc/kubernetes/provision-kube-flannel.yml >/dev/null 2>&1 || rc=\$?
	expect_eq '' \"\${rc:-}\" 'kubectl diff after apply'
"

test_case "a Flannel init container whose image cannot be pulled: named, with the pull hint" "
	# (on roles that cannot apply Flannel, apply it here to see 20-running's report)
	kc get namespace kube-flannel >/dev/null 2>&1 || kc apply -f /etc/kubernetes/provision-kube-flannel.yml >/dev/null
	i=0
	while :; do
		env PROVISION_K8S_VERSION=$K8S '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-1 flannel 20-running check >fl.out 2>&1 || true
		grep -q 'Init:\\(ImagePullBackOff\\|ErrImagePull\\)' fl.out && break
		i=\$((i + 1))
		[ \$i -lt 15 ] || break
		sleep 2
	done
	cat fl.out
	expect_grep '^node-1: Flannel pod kube-flannel-ds-[a-z0-9]* Init:\\(ImagePullBackOff\\|ErrImagePull\\) (.*flannel-cni-plugin' fl.out
	if grep -q '20-running … failed' cni.out; then
		expect_grep 'an image cannot be pulled (for 60s)' cni.out
		expect_grep \"hint: node-1 cannot pull [^ ]*flannel-cni-plugin[^ ]*: 'crictl pull [^ ]*flannel-cni-plugin[^ ]*' on node-1 shows why\" cni.out
	else
		false
	fi
	expect_status 1 $PROVISION check -i $INV --state $STATE --roles $ROLES >check-pull.out 2>&1
	grep '^flannel ' check-pull.out
	expect_grep '^flannel  *node-1  *fail  *Init:\\(ImagePullBackOff\\|ErrImagePull\\) (.*flannel-cni-plugin' check-pull.out
	expect_grep \"node-1 cannot pull [^ ]*flannel-cni-plugin[^ ]*: 'crictl pull [^ ]*flannel-cni-plugin[^ ]*' on node-1 shows why\" check-pull.out
	expect_no_grep 'pod CIDR must match the inventory' check-pull.out
"

test_case "the next up: green, Flannel running, node-2 joined and Ready" "
	unknob node-1 image-pull-fail
	$UP >up.out 2>&1 || { run_tail up.out; false; }
	expect_grep '^node-1  *done' up.out
	expect_grep '^node-2  *done' up.out
	expect_grep '\\[node-2\\] kubeadm-join › 30-join … changed' up.out
	expect_eq True \"\$(kc get node node-2 -o 'jsonpath={.status.conditions[?(@.type==\"Ready\")].status}')\" 'node-2 Ready'
"

test_case "remove-node whose drain fails: the summary says the reset was skipped" "
	printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata:' '  name: lonely' '  namespace: default' 'spec:' \
		'  nodeName: node-2' '  containers:' '  - name: c' '    image: registry.example/lonely:1' |
		tb node-1 sh -c 'cat >/tmp/lonely.yaml && kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f /tmp/lonely.yaml'
	expect_status 1 '$PROVISION' remove-node -i '$INV' --state '$STATE' --roles '$ROLES' --no-tui --yes node-2 >stuck.out 2>&1
	expect_grep 'NOT removed from the cluster' stuck.out
	expect_grep 'node-side reset skipped: node-2 is still in the cluster, so it was left untouched' stuck.out
	expect_no_grep 'removed: nothing (it was clean)' stuck.out
	expect_no_grep 'verified: NOT clean' stuck.out
	grep -E 'NOT removed|reset skipped' stuck.out
"

test_case "kubeadm init dies in wait-control-plane (kube-apiserver exits): the hint names the API server" "
	tb node-1 kubeadm reset -f >reset.out 2>&1
	knob node-1 container-fail 'kube-apiserver Error: unknown flag: --bogus-flag'
	knob node-1 control-plane-timeout 40
	knob node-1 registry-offline
	expect_status 1 $UP --phases init >fail.out 2>&1
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … failed' fail.out
	expect_grep 'error execution phase wait-control-plane' '$LOG'
	expect_grep 'This error is likely caused by:' '$LOG'
	expect_grep 'kube-apiserver: exited; its last lines' '$LOG'
	expect_grep 'Error: unknown flag: --bogus-flag' '$LOG'
	expect_grep 'hint: the API server did not come up on node-1 (the kubelet runs)' fail.out
	grep -m1 -o 'hint: the API server did not come up.*' fail.out
	expect_no_grep 'hint: the kubelet did not come up' fail.out
	tb node-1 test -f /etc/kubernetes/admin.conf
"

test_case "the next up: the half-done init detected, reset and done again (only kubeadm's images pullable)" "
	unknob node-1 container-fail
	$UP --phases init >redo.out 2>&1 || { run_tail redo.out; false; }
	expect_grep 'node-1 holds a half-done kubeadm init (.*): resetting it (kubeadm reset -f) and running kubeadm init again' '$LOG'
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … changed' redo.out
	expect_grep '\\[node-1\\] kubeadm-init › 50-stable … changed' redo.out
	kc -n kube-system get configmap kubeadm-config -o name >cm
	expect_grep '^configmap/kubeadm-config\$' cm
	expect_eq ok \"\$(kc get --raw /readyz)\" '/readyz'
	grep -h 'half-done' redo.out '$LOG' | head -n 3
"

test_done
