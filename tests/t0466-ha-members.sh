#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 250 s (175 s alone, 246 s beside t0465 on the 2-core machine)
# t0466-ha-members: the members of several control planes (issue 36) on
# three control planes behind a VIP, etcd real (CLUSTER_ETCD=real) and the
# VIP real (Debian's keepalived and HAProxy, as in t0465); node-1 also
# takes pods (no worker: the three control planes are the whole cluster).
#
# Judged from etcd's own member list and the nodes: `remove-node node-3`
# removes its etcd member before its reset (3 -> 2 members; the member
# gone from the others' list; the API through the VIP answers); removing
# node-2 then is refused (it would leave 1 of 2), exit 2, nothing touched;
# the first control plane and a part of the control planes for reset are
# refused (exit 2); `add-node node-3` joins it again as a control plane
# (2 -> 3 started voting members; keepalived and HAProxy on every control
# plane name it); node-3's machine killed, `remove-node --force node-3`
# removes its member from node-1 (3 -> 2); `reset` takes the cluster down
# one control plane at a time, the first last (the dead node-3 fails, the
# rest goes on: exit 1), node-1 and node-2 verified clean, the lab's own
# files untouched.
#
# Test bodies are single-quoted on purpose: test_case evaluates them later.
# shellcheck disable=SC2016
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakes/cluster-testbed.sh"
# shellcheck source=tests/lib-ha.sh
. "$(dirname "$0")/lib-ha.sh"

test_need_cmd curl apt-ftparchive
K8S=1.36.4
CLUSTER_ETCD=real
skip_all_cases() {
	for c in up refusals remove refused-quorum add force reset; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
cluster_testbed 3 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
# keepalived and HAProxy from the control planes' Debian mirror; node-1 also
# a worker, node-2 and node-3 control planes too, behind the VIP
# (tests/lib-ha.sh)
ha_mirror node-1 node-2 node-3
for n in node-1 node-2 node-3; do
	# the lab's own data, which no reset may touch
	x "$n" sh -c "mkdir -p /srv/lab && head -c 4096 /dev/urandom >/srv/lab/results.bin && echo 'lab note' >/etc/lab-note"
	x "$n" sha256sum /srv/lab/results.bin /etc/lab-note >"$TEST_DIR/$n.lab"
done

ha_inventory "node-1=control-plane, worker" node-2=control-plane node-3=control-plane
ADDR3=$(addr node-3)
export ADDR3
P="-i $HA --state $STATE --roles $ROLES --no-tui"
export P

members() { # NODE: etcd's member list there, "NAME STATUS LEARNER" sorted
	etcd_members "$1" | awk -F ', ' '{ print $3, $2, $6 }' | sort
}
kc() { x node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
export TEST_DIR STATE

test_case "up of 3 control planes behind the VIP: green, etcd has 3 started voting members" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up $P >up.out 2>&1 || { run_tail up.out; false; }
	echo "# up of 3 control planes: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	members node-1 >m.up
	sed "s/^/# etcd members after up: /" m.up >>"$TEST_DIR/figures"
	expect_eq "node-1 started false
node-2 started false
node-3 started false" "$(cat m.up)" "members"
	admin_pem
'

test_case "refused, exit 2, nothing touched: remove-node of the first control plane; reset -l of a part of the control planes" '
	expect_status 2 "$PROVISION" remove-node $P --yes node-1 >out 2>err
	expect_grep "'"'"'node-1'"'"' is the first control plane: it runs what acts on the whole cluster" err
	expect_status 2 "$PROVISION" reset $P --yes -l node-3 >out 2>err
	expect_grep "reset: -l node-3 takes 1 of the 3 control planes: reset takes every control plane (the whole cluster) or none" err
	members node-1 >m
	expect_eq "$(cat m.up)" "$(cat m)" "members"
	x node-3 test -f /etc/kubernetes/manifests/etcd.yaml
	expect_eq active "$(x node-3 systemctl is-active kubelet)" "kubelet on node-3"
'

test_case "remove-node node-3: its etcd member removed before its reset (3 -> 2), the API through the VIP answers, node-3 verified clean" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" remove-node $P -v --yes node-3 >rm.out 2>&1 || { run_tail rm.out; false; }
	echo "# remove-node of control plane node-3: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	members node-1 >m.rm
	sed "s/^/# etcd members after remove-node node-3: /" m.rm >>"$TEST_DIR/figures"
	expect_eq "node-1 started false
node-2 started false" "$(cat m.rm)" "members"
	members node-2 >m.rm2
	expect_eq "$(cat m.rm)" "$(cat m.rm2)" "members as node-2 lists them"
	# the member went before the machine was reset (the run'"'"'s own order of lines)
	grep -n "40-etcd-member\|reset-cluster.*10-kubeadm" rm.out | sed "s/^/# /"
	a=$(grep -n "^\[node-1\] remove-node › 40-etcd-member .* changed" rm.out | head -n 1 | cut -d: -f1)
	b=$(grep -n "^\[node-3\] reset-cluster › 10-kubeadm .* changed" rm.out | head -n 1 | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] || { echo "# member removal at line ${a:-none}, reset at ${b:-none}"; false; }
	expect_grep "^ *verified: clean .*reachable over SSH" rm.out
	"$PROVISION" logs -i "$HA" --state "$STATE" node-1 >rm-node-1.log 2>&1
	grep "etcdctl member remove\|members left" rm-node-1.log | sed "s/^/# remove-node, node-1: /" >>"$TEST_DIR/figures"
	expect_grep "etcdctl member remove [0-9a-f]* (node-3)" rm-node-1.log
	expect_grep "members left: node-1 node-2" rm-node-1.log
	api /api/v1/nodes >nodes.json
	expect_grep "\"name\": *\"node-2\"" nodes.json
	expect_no_grep "\"name\": *\"node-3\"" nodes.json
	x node-3 test ! -e /var/lib/etcd/member
	x node-3 sha256sum /srv/lab/results.bin /etc/lab-note >lab3.after
	expect_eq "$(cat "$TEST_DIR/node-3.lab")" "$(cat lab3.after)" "node-3: the lab files"
'

test_case "remove-node node-2 then: refused (it would leave 1 of 2), exit 2, nothing touched" '
	expect_status 2 "$PROVISION" remove-node $P --yes node-2 >q.out 2>&1 || { run_tail q.out; false; }
	grep "would leave 1 of 2" q.out | sed "s/^/# the refusal: /" >>"$TEST_DIR/figures"
	expect_grep "would leave 1 of 2, a single member that survives no loss" q.out
	expect_grep "remove-node: refused: removing node-2 .* nothing was changed" q.out
	members node-1 >m
	expect_eq "$(cat m.rm)" "$(cat m)" "members"
	expect_eq "" "$(kc get node node-2 -o "jsonpath={.spec.unschedulable}")" "node-2 not cordoned"
	expect_eq active "$(x node-2 systemctl is-active kubelet)" "kubelet on node-2"
	x node-2 test -f /etc/kubernetes/manifests/etcd.yaml
'

test_case "add-node node-3: a control plane again (2 -> 3 started voting members), keepalived and HAProxy on each name it" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" add-node $P node-3 >add.out 2>&1 || { run_tail add.out; false; }
	echo "# add-node of control plane node-3: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	members node-1 >m.add
	sed "s/^/# etcd members after add-node node-3: /" m.add >>"$TEST_DIR/figures"
	expect_eq "$(cat m.up)" "$(cat m.add)" "members"
	x node-3 test -f /etc/kubernetes/manifests/kube-apiserver.yaml
	for n in node-1 node-2; do
		x "$n" grep -q "^ *$ADDR3\$" /etc/keepalived/keepalived.conf
		x "$n" grep -q "server .* $ADDR3:6443" /etc/haproxy/haproxy.cfg
	done
	api /api/v1/nodes >nodes3.json
	expect_grep "\"name\": *\"node-3\"" nodes3.json
'

test_case "node-3 dead (its machine killed): remove-node --force removes its etcd member from node-1 (3 -> 2), the API through the VIP answers" '
	"$TESTBED" kill-node "$TB" node-3 --silent
	expect_status 0 "$PROVISION" remove-node $P --yes --force node-3 >force.out 2>&1 || { run_tail force.out; false; }
	expect_grep "node-side reset skipped (--force)" force.out
	members node-1 >m.force
	sed "s/^/# etcd members after node-3 died and remove-node --force: /" m.force >>"$TEST_DIR/figures"
	expect_eq "$(cat m.rm)" "$(cat m.force)" "members"
	api /api/v1/nodes >nodes4.json
	expect_no_grep "\"name\": *\"node-3\"" nodes4.json
'

test_case "reset of the cluster: one control plane at a time, the first last, each member leaving; node-3 (dead) fails and the rest goes on; node-1 and node-2 clean, the lab files untouched" '
	t0=$(date +%s)
	expect_status 1 "$PROVISION" reset $P -v --yes >reset.out 2>&1 || { run_tail reset.out; false; }
	expect_grep "^reset: node-3 failed (see above); the reset goes on with the rest of the cluster" reset.out
	echo "# reset of the 3 control planes: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	grep "^reset: control plane\|^reset .*: 1 node, " reset.out | sed "s/^/# /" >>"$TEST_DIR/figures"
	for n in node-2 node-1; do
		"$PROVISION" logs -i "$HA" --state "$STATE" "$n" >"reset-$n.log" 2>&1
		grep "etcd: " "reset-$n.log" | sed "s/^.*etcd: /# $n: etcd: /" >>"$TEST_DIR/figures"
	done
	a=$(grep -n "^reset: control plane node-3" reset.out | cut -d: -f1)
	b=$(grep -n "^reset: control plane node-2" reset.out | cut -d: -f1)
	c=$(grep -n "^reset: control plane node-1, the first, last" reset.out | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] && [ "$a" -lt "$b" ] && [ "$b" -lt "$c" ] ||
		{ echo "# order: node-3 ${a:-none}, node-2 ${b:-none}, node-1 ${c:-none}"; false; }
	expect_grep "etcd: member node-2 ([0-9a-f]*) removed; members left: node-1\$" reset-node-2.log
	expect_grep "etcd: node-1 was its last member" reset-node-1.log
	grep -A1 "^node-3  *removed: " reset.out >report-node-3
	expect_grep "NOT reachable over SSH" report-node-3
	for n in node-1 node-2; do
		grep -A1 "^$n  *removed: " reset.out >"report-$n"
		expect_grep "verified: clean (ports, processes, folders, interfaces, chains, kubelet); reachable over SSH" "report-$n"
		x "$n" sha256sum /srv/lab/results.bin /etc/lab-note >lab.after
		expect_eq "$(cat "$TEST_DIR/$n.lab")" "$(cat lab.after)" "$n: the lab files"
		x "$n" test ! -e /etc/keepalived/keepalived.conf
	done
	[ ! -e "$STATE/private/admin.conf" ]
'

cat "$TEST_DIR/figures" 2>/dev/null || true
test_done
