#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 567 s in CI (beside another; tests/run.sh starts the longest first)
# t0410-cluster-failures: what `provision up` does when the cluster phases
# go wrong, on four nspawn testbed nodes with the Kubernetes stand-ins of
# tests/fakes, judged by provision's report and the nodes' real state:
#
#   - the API server crash-loops after kubeadm init (fake kubelet knob
#     crashloop: killed 10 s after each start, back 4 s later): kubeadm init
#     itself succeeds, the stability gate fails with a clear message, and the
#     next up, the loop gone, passes the gate;
#   - containerd loses SystemdCgroup while the kubelet uses the systemd
#     driver: the gate (the kubeadm-init step, run like provision runs it)
#     names the cgroup driver mismatch; `up --phases prep` puts containerd
#     back and the control plane recovers;
#   - node-3 gets a join token that expires before it uses it (knobs:
#     tokens for node-3 live 15 s, node-3's join waits 25 s): node-3 fails
#     alone with the reason and the fix, node-2 and node-4 join and are
#     Ready; the next up joins node-3 and deletes every token;
#   - no token, certificate key or CA private key in any file the runs
#     wrote or the nodes logged.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="prepare flapping-gate gate-after-recovery cgroup-mismatch recovered expired-token next-up-joins no-secrets"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
cluster_testbed 4 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
UP="$PROVISION up -i $INV --state $STATE --roles $ROLES --no-tui"

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
knob node-1 record-tokens

test_case "prepare: prep and kube-packages on every node" "
	$UP --phases prep,kube-packages >prep.out 2>&1 || { run_tail prep.out; false; }
"

test_case "a flapping /readyz: kubeadm init succeeds, the stability gate fails and says why" "
	knob node-1 crashloop 'kube-apiserver 10 4'
	expect_status 1 $UP --phases init >flap.out 2>&1
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … changed' flap.out
	expect_grep '\\[node-1\\] kubeadm-init › 50-stable … failed' flap.out
	expect_grep 'the control plane is not stable: /readyz went from ok to failing 3 times' flap.out
	expect_grep 'likely cause: a crash loop of kube-apiserver or etcd (the cgroup drivers agree: systemd)' flap.out
	expect_grep \"hint: look at 'crictl ps -a'\" flap.out
	expect_grep '^node-1  *failed' flap.out
	tb node-1 test -f /var/lib/provision/kubeadm-init.gate
	tb node-1 crictl ps -a --name kube-apiserver >crictl
	attempts=\$(awk 'NR > 1 { print \$(NF - 2) }' crictl | sort -n | tail -n 1)
	[ \"\$attempts\" -ge 3 ] || { cat crictl; echo 'kube-apiserver restarted fewer than 3 times'; false; }
"

test_case "the crash loop over, the next up passes the gate; the control plane and Flannel come up" "
	unknob node-1 crashloop
	$UP --phases init,cni >init2.out 2>&1 || { run_tail init2.out; false; }
	expect_grep '\\[node-1\\] kubeadm-init › 50-stable … changed' init2.out
	expect_no_grep '30-init … changed' init2.out
	tb node-1 test ! -e /var/lib/provision/kubeadm-init.gate
	expect_grep '\\[node-1\\] flannel › 20-running … changed' init2.out
	expect_eq ok \"\$(kc get --raw /readyz)\" '/readyz'
"

test_case "containerd without SystemdCgroup under a systemd kubelet: the gate names the cgroup driver mismatch" "
	tb node-1 sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' /etc/containerd/config.toml
	tb node-1 systemctl restart containerd
	expect_status 1 env PROVISION_K8S_VERSION=$K8S '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-1 kubeadm-init 50-stable apply >gate.out 2>&1
	expect_grep 'the control plane is not stable' gate.out
	expect_grep 'likely cause: a cgroup driver mismatch -- the kubelet uses systemd, containerd.s runc uses cgroupfs' gate.out
	expect_eq 'the control plane is not stable' \"\$(grep -v '^::' gate.out | tail -n 1 | cut -d : -f 1)\" 'the last line: what failed and why'
	expect_grep '^::hint give containerd SystemdCgroup = true' gate.out
	tb node-1 journalctl --no-pager -u kubelet >journal
	expect_grep 'Pod sandbox changed, it will be killed and re-created' journal
"

test_case "up --phases prep puts containerd back; the control plane recovers" "
	$UP --phases prep,init >recover.out 2>&1 || { run_tail recover.out; false; }
	expect_grep '\\[node-1\\] containerd › /etc/containerd/config.toml … changed' recover.out
	expect_grep '\\[node-1\\] containerd › 20-service … changed' recover.out
	tb node-1 containerd config dump >dump
	expect_grep 'SystemdCgroup = true' dump
	expect_eq ok \"\$(kc get --raw /readyz)\" '/readyz'
"

test_case "a worker whose join token expired fails alone, with the reason and the fix" "
	knob node-1 token-ttl '15 node-3'
	knob node-3 join-delay 25
	expect_status 1 $UP >join1.out 2>&1
	expect_grep '^node-3  *failed' join1.out
	expect_grep 'the join token of node-3 is not valid: it expired or was deleted before this node used it' join1.out
	expect_grep 'hint: run provision up again: it makes a new token for every worker that has not joined' join1.out
	tb node-3 journalctl --no-pager -u kubelet >/dev/null 2>&1 || true
	for n in node-1 node-2 node-4; do expect_grep \"^\$n  *done  *[0-9]* changed .* 0 failed\" join1.out; done
	expect_eq 'node-1 node-2 node-4' \"\$(kc get nodes -o 'jsonpath={.items[*].metadata.name}')\" 'the cluster s nodes'
	for n in node-2 node-4; do
		expect_eq True \"\$(kc get node \$n -o 'jsonpath={.status.conditions[?(@.type==\"Ready\")].status}')\" \"\$n Ready\"
	done
	tb node-3 test ! -e /etc/kubernetes/kubelet.conf
	# join-cleanup and node-labels come after kubeadm-join (order only): node-3's
	# failure stops neither; the tokens are gone, the joined workers labelled.
	expect_no_grep 'skipped.*waits for role .kubeadm-join.' join1.out
	expect_grep '\\[node-1\\] join-cleanup › 10-tokens … changed' join1.out
	expect_grep '\\[node-1\\] node-labels › 10-labels … changed' join1.out
	tb node-1 kubeadm token list >tokens1
	expect_eq 1 \"\$(wc -l <tokens1 | tr -d ' ')\" 'kubeadm token list after the failed join (header only)'
	for n in node-2 node-4; do
		kc get node \$n -o 'jsonpath={.metadata.labels}' >labels-\$n
		expect_grep '\"node-role.kubernetes.io/worker\":\"\"' labels-\$n
	done
"

test_case "the next up joins node-3 and deletes every join token" "
	unknob node-1 token-ttl
	unknob node-3 join-delay
	$UP >join2.out 2>&1 || { run_tail join2.out; false; }
	expect_grep '\\[node-3\\] kubeadm-join › 30-join … changed' join2.out
	expect_grep '\\[node-1\\] join-cleanup › 10-tokens … changed' join2.out
	expect_grep '^validation: [0-9]* passed, 0 failed' join2.out
	expect_eq True \"\$(kc get node node-3 -o 'jsonpath={.status.conditions[?(@.type==\"Ready\")].status}')\" 'node-3 Ready'
	tb node-1 kubeadm token list >tokens
	expect_eq 1 \"\$(wc -l <tokens | tr -d ' ')\" 'kubeadm token list (header only)'
	kc get node node-3 -o 'jsonpath={.metadata.labels}' >labels
	expect_grep '\"node-role.kubernetes.io/worker\":\"\"' labels
"

test_case "no token, certificate key or CA private key in any file the runs wrote or the nodes logged" "
	collect_node_logs collected
	secrets_collected secrets.list
	n=\$(grep -c . secrets.list)
	[ \"\$n\" -ge 22 ] || { echo \"only \$n secret strings collected\"; false; }
	expect_no_grep 'PRIVATE KEY' secrets.list
	files_written files
	expect_grep '^./state/logs/node-3.log\$' files
	expect_grep '^./join1.out\$' files
	found=\$(cd '$TEST_DIR' && tr '\\n' '\\0' <'$TEST_DIR/files' | xargs -0 grep -l -F -f '$TEST_DIR/secrets.list' || true)
	expect_eq '' \"\$found\" 'files holding a secret'
"

test_done
