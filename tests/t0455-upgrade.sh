#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 450 s in CI (beside another; tests/run.sh starts the longest first)
# t0455-upgrade: `provision upgrade` from Kubernetes 1.34.11 to 1.37.1 (the
# newest minor of roles/kubernetes.yaml) on a three-node testbed cluster
# (node-1 the control plane, node-2 and node-3 workers), minor by minor
# through the table's patch releases 1.35.8 and 1.36.4 (the kubelet's
# cgroup v1 refusal from 1.35 on the way; kubeadm 1.37 reads v1beta4 only),
# with the fake packages of every one in the apt repository (pkgs.k8s.io's
# layout: core:/stable:/v1.34 ... v1.37), judged by the cluster's and the
# nodes' real state.  Until session 9 from 1.30.4, through six minors; until
# issue 34 from 1.33.9 to 1.36.4 (three stages as now;
# each stage runs the same steps; the v1beta3 -> v1beta4 kubeadm-config of
# 1.31 is in t0400 and t0401):
#   - refusals before anything changes (exit 2, the inventory's
#     file:line:col): 1.40.0 skips minors the table has no patch for,
#     1.29.8 goes down; every node still runs 1.34.11 and nothing was
#     recorded;
#   - a pod without a controller on node-2 stops the upgrade there, in its
#     first stage: the control plane is at 1.35.8, node-2's drain failed
#     (exit 1) and it is not upgraded, node-3 (after it) is untouched
#     (kubelet, kubeadm package, schedulable);
#   - once the pod is gone, the same command (workers two at a time)
#     finishes: every stage listed, the API server and every kubelet report
#     v1.37.1, kubeadm/kubelet/kubectl are 1.37.1 and held on every node,
#     the kubeadm-config ConfigMap says v1.37.1 in kubeadm.k8s.io/v1beta4
#     (the stand-in stores it so from 1.31, like kubeadm), every node is
#     Ready and schedulable;
#   - -K on a terminal (script(1)): one password prompt and one SSH login
#     per node for the whole upgrade (three stages, a run for the control
#     plane and one for the workers each, the versions asked between them:
#     issue 35; before, 10 logins on node-1 and 3 on each worker);
#   - the versions before and after are in the output and in the recorded
#     logs, and upgrade's own question for them (before, between and after
#     the stages) is a step in node-1's logs and the records (issue 35); a
#     second upgrade changes nothing.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up refusals forged-version stopped finished record again"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
CLUSTER_MORE_VERSIONS="1.35.8 1.36.4 1.37.1"
cluster_testbed 3 1.34.11 || skip_all_cases "$CLUSTER_SKIP"
P="--state $STATE --roles $ROLES --no-tui"
# upgrade's --no-backup: the fake cluster runs no etcd (the backup before an
# upgrade, on a real etcd, is t0460's).
NB=--no-backup

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
kubelets() { kc get nodes -o 'jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion}{"\n"}{end}'; }
# with_version V OUT: the inventory with kubernetes_version V
with_version() { sed "s/^  kubernetes_version: .*/  kubernetes_version: \"$1\"/" "$INV" >"$2"; }

test_case "up at 1.34.11" "
	'$PROVISION' up -i '$INV' $P >up.out 2>&1 || { run_tail up.out; false; }
	kubelets >v0
	expect_eq 3 \"\$(grep -c ' v1.34.11\$' v0)\" 'kubelets at v1.34.11'
"

test_case "refusals: a skipped minor and a downgrade, exit 2 naming the inventory line, nothing changed" "
	with_version 1.40.0 skip.yaml
	line=\$(grep -n '^  kubernetes_version:' skip.yaml | cut -d : -f 1)
	'$PROVISION' history -i '$INV' --state '$STATE' >h0
	expect_status 2 '$PROVISION' upgrade -i skip.yaml $P $NB >out 2>err
	cat err
	expect_grep \"^skip.yaml:\$line:[0-9]*: error: kubernetes_version 1.40.0 skips 1.38: the cluster runs 1.34.11, kubeadm upgrades one minor version at a time, and .*kubernetes.yaml names no patch release of 1.38\" err
	with_version 1.29.8 down.yaml
	expect_status 2 '$PROVISION' upgrade -i down.yaml $P $NB >out 2>err
	expect_grep \"^down.yaml:\$line:[0-9]*: error: kubernetes_version 1.29.8 is older than the cluster's 1.34.11: provision does not downgrade\" err
	kubelets >v1
	cmp v0 v1
	expect_eq v1.34.11 \"\$(kc version -o json | sed -n 's/.*\"gitVersion\": *\"\\(v[^\"]*\\)\".*/\\1/p' | tail -n 1)\" 'API server'
	'$PROVISION' history -i '$INV' --state '$STATE' >h1
	cmp h0 h1
"

# kubelet_reports NODE TEXT: wait (at most 30 s) until NODE's Node says TEXT as its kubelet version.
kubelet_reports() {
	i=0
	until [ "$(kc get node "$1" -o 'jsonpath={.status.nodeInfo.kubeletVersion}')" = "$2" ]; do
		i=$((i + 1))
		[ $i -le 30 ] || { echo "node $1 does not report '$2'"; return 1; }
		sleep 1
	done
}

# Issue 31 F2: before, upgrade read "NAME VERSION" lines and the first line
# naming a node won: node-2's "v1.34.11<newline>node-3 v1.37.1" made node-3
# look upgraded (never drained nor upgraded) and the run went ahead.
test_case "a worker whose kubelet version speaks for another node: refused naming it, nothing changed, the text not shown" "
	forged=\$(printf 'v1.34.11\\nnode-3 v1.37.1')
	knob node-2 kubelet-version \"\$forged\"
	kubelet_reports node-2 \"\$forged\"
	with_version 1.37.1 new.yaml
	'$PROVISION' history -i '$INV' --state '$STATE' >h3
	expect_status 1 '$PROVISION' upgrade -i new.yaml $P $NB >forged.out 2>&1
	cat forged.out
	expect_grep \"^provision upgrade: node-1: node 'node-2' reports a kubelet version that is not vMAJOR.MINOR.PATCH .*nothing was changed\" forged.out
	expect_no_grep 'node-3 v1.37.1' forged.out
	expect_eq v1.34.11 \"\$(kc version -o json | sed -n 's/.*\"gitVersion\": *\"\\(v[^\"]*\\)\".*/\\1/p' | tail -n 1)\" 'API server'
	'$PROVISION' history -i '$INV' --state '$STATE' >h4
	cmp h3 h4
	unknob node-2 kubelet-version
	kubelet_reports node-2 v1.34.11
"

test_case "a pod without a controller on node-2: control plane upgraded, node-2 stops it (exit 1), node-3 untouched" "
	printf '%s\n' 'apiVersion: v1' 'kind: Pod' 'metadata:' '  name: lonely' '  namespace: default' 'spec:' \
		'  nodeName: node-2' '  containers:' '  - name: c' '    image: registry.example/lonely:1' |
		tb node-1 sh -c 'cat >/tmp/lonely.yaml && kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f /tmp/lonely.yaml'
	with_version 1.37.1 new.yaml
	expect_status 1 '$PROVISION' upgrade -i new.yaml $P $NB >stop.out 2>&1
	expect_grep '^upgrade: 1.34.11 to 1.37.1, one minor at a time: 1.35.8, 1.36.4, 1.37.1\$' stop.out
	expect_grep '^upgrade: worker node-2 to 1.35.8 (1 of 2)' stop.out
	expect_grep 'pods that would not leave node-2: default/lonely' stop.out
	expect_grep '^upgrade: stopped at node-2; not touched: node-3' stop.out
	kubelets >v2
	expect_grep '^node-1 v1.35.8\$' v2
	expect_grep '^node-2 v1.34.11\$' v2
	expect_grep '^node-3 v1.34.11\$' v2
	expect_eq 1.34.11 \"\$(tb node-3 dpkg-query -W -f '\${Version}' kubeadm | cut -d - -f 1)\" 'kubeadm on node-3'
	expect_eq '' \"\$(kc get node node-3 -o 'jsonpath={.spec.unschedulable}')\" 'node-3 schedulable'
"

test_case "the pod gone, the same command (-K on a terminal: one prompt, one SSH login per node) finishes, minor by minor: every component and package at 1.37.1, held, Ready, schedulable; kubeadm-config in v1beta4" "
	kc delete pod lonely
	l1=\$(logins node-1) l2=\$(logins node-2) l3=\$(logins node-3)
	on_tty tty-sudo-password-1 up2.out upgrade -K -i new.yaml $P $NB --parallel 2 || { run_tail up2.out; false; }
	grep '^upgrade: ' up2.out
	echo \"prompts \$(cat up2.out.prompts), logins node-1 \$((\$(logins node-1) - l1)), node-2 \$((\$(logins node-2) - l2)), node-3 \$((\$(logins node-3) - l3))\"
	# -K: one prompt, and one SSH login per node for the whole command (3 stages, 4 runs)
	expect_eq 1 \"\$(cat up2.out.prompts)\" 'sudo password prompts'
	expect_eq '1 1 1' \"\$((\$(logins node-1) - l1)) \$((\$(logins node-2) - l2)) \$((\$(logins node-3) - l3))\" 'SSH logins on node-1..3'
	expect_no_grep tty-sudo-password-1 up2.out
	kubelets >v3
	expect_eq 3 \"\$(grep -c ' v1.37.1\$' v3)\" 'kubelets at v1.37.1'
	expect_eq v1.37.1 \"\$(kc version -o json | sed -n 's/.*\"gitVersion\": *\"\\(v[^\"]*\\)\".*/\\1/p' | tail -n 1)\" 'API server'
	kc -n kube-system get configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' >cc.yaml
	expect_grep '^kubernetesVersion: v1.37.1' cc.yaml
	expect_grep '^apiVersion: kubeadm.k8s.io/v1beta4' cc.yaml
	for n in node-1 node-2 node-3; do
		for p in kubeadm kubelet kubectl; do
			expect_eq 1.37.1 \"\$(tb \$n dpkg-query -W -f '\${Version}' \$p | cut -d - -f 1)\" \"\$p on \$n\"
		done
		expect_eq 'kubeadm kubectl kubelet' \"\$(tb \$n apt-mark showhold | sort | paste -sd ' ' -)\" \"held on \$n\"
		expect_eq True \"\$(kc get node \$n -o 'jsonpath={.status.conditions[?(@.type==\"Ready\")].status}')\" \"\$n Ready\"
		expect_eq '' \"\$(kc get node \$n -o 'jsonpath={.spec.unschedulable}')\" \"\$n schedulable\"
	done
	# every stage in order, the workers of each after its control plane
	for v in 1.35.8 1.36.4 1.37.1; do
		expect_grep \"^upgrade: the control plane node-1 to \$v\\\$\" up2.out
		expect_grep \"^upgrade: workers node-2 node-3 to \$v (2 of 2)\" up2.out
	done
	grep -o '^upgrade: the control plane node-1 to [0-9.]*' up2.out | awk '{print \$NF}' | paste -sd ' ' - >order
	expect_eq '1.35.8 1.36.4 1.37.1' \"\$(cat order)\" 'stages in order'
	expect_grep 'upgrade: versions after: control plane v1.37.1; kubelets: node-1 v1.37.1, node-2 v1.37.1, node-3 v1.37.1' up2.out
"

test_case "the versions before and after are in the output and in the recorded logs" "
	expect_grep 'upgrade: versions before: control plane v1.34.11; kubelets: node-1 v1.34.11, node-2 v1.34.11, node-3 v1.34.11' stop.out
	'$PROVISION' history -i '$INV' --state '$STATE' >h2
	[ \"\$(grep -c ' upgrade ' h2)\" -ge 4 ]
	for k in \$(seq 0 16); do
		for n in node-1 node-2 node-3; do
			'$PROVISION' logs -i '$INV' --state '$STATE' \$n \"~\$k\" >>recorded.log 2>/dev/null || true
		done
	done
	expect_grep 'versions before: control plane v1.34.11' recorded.log
	expect_grep 'versions after: control plane v1.35.8' recorded.log
	expect_grep 'versions after: control plane v1.37.1' recorded.log
	expect_grep 'versions after: node-3 kubelet v1.37.1' recorded.log
	# upgrade's own question to the control plane (kubectl: the API server's
	# version and the Nodes) is a step of its runs (issue 35): before the
	# first stage, between the stages and after the last; in node-1's logs
	# and the records, 1 of the stopped upgrade + 4 of the finished one (the
	# refused and forged ones recorded nothing)
	: >node-1.log
	for k in \$(seq 0 16); do
		'$PROVISION' logs -i '$INV' --state '$STATE' node-1 \"~\$k\" >>node-1.log 2>/dev/null || true
	done
	expect_eq 5 \"\$(grep -c 'upgrade › versions: ok' node-1.log)\" 'versions steps in node-1 logs'
	for c in \$(git -C '$STATE' log --format=%H -- logs/node-1.log); do
		git -C '$STATE' show \$c:nodes/node-1/timings
	done >timings
	expect_eq 5 \"\$(grep -c '^upgrade	versions	[0-9]*	ok' timings)\" 'versions steps in the records (timings)'
"

test_case "a second upgrade changes nothing" "
	'$PROVISION' upgrade -i new.yaml $P $NB >up3.out 2>&1 || { run_tail up3.out; false; }
	expect_grep 'done: the control plane and 0 workers upgraded to 1.37.1' up3.out
	expect_grep '^upgrade .*: 1 node, 0 changed' up3.out
"

test_done
