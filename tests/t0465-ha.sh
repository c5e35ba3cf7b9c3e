#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 325 s (240 s as 3+1 beside t0400 on the 2-core machine; 3+2 with the power-on cases: 236 s beside another cluster test, of it 72 s the last three cases; the check cases ~16 s more)
# t0465-ha: `provision up` of three control planes behind a virtual IP and
# two workers (issue 36's 3+2) with NFS storage (node-4) and the hub (by
# default on the second control plane, node-2: the VIP prefers node-1),
# on the cluster testbed with etcd real
# (CLUSTER_ETCD=real: Debian's etcd runs each control plane's etcd member,
# the API servers keep their objects in it) and the VIP real (Debian's
# keepalived and HAProxy from a repository tests/testbed/apt-repo.sh builds,
# served on the testbed bridge as the control planes' Debian mirror, as in
# t0275).
#
# Judged on the nodes, not from provision's report: kubeadm init ran on
# node-1 only with controlPlaneEndpoint VIP:8443, node-2 and node-3 joined
# with --control-plane (their own API server manifests), etcd lists three
# started voting members, every kubeconfig provision and kubeadm wrote
# (the state folder's admin.conf, the worker's kubelet.conf) names the
# VIP, the certificate key is gone from node-1 once all joined, and no
# certificate key or token is in any file the run wrote.  Then the VIP's
# holder is killed (its nspawn machine, unplugged first: testbed.sh
# kill-node --silent): the API through the VIP answers again within 15 s
# (the figure is printed), every Node is still listed through it (etcd
# keeps quorum with two of three), the hub on node-2 still answers
# /hub/health, and `provision check` fails naming the lost node (its
# hub-health passes).  A second `up` before that changes nothing.  Then the
# lost machine is powered on again (testbed.sh start-node: the same
# machine, its files kept; systemd starts what is enabled): its kubelet
# brings back its etcd member and API server by itself (static pods), the
# VIP goes back to node-1 (the highest priority, after keepalived's
# preempt_delay of 30 s) with the API through the VIP polled meanwhile
# (the figure: polls, failures, longest gap); `up` then passes validation
# having changed nothing on any other node (provision's summary, and
# every file under /etc and /var/lib/provision there unchanged), etcd
# lists three started voting members again, and `check` passes.  Last,
# `up` with jupyterhub.node: node-3 fails on node-3 (roles/hub-database:
# the hub's database is on node-2), changing no file on node-2 or node-3,
# and the hub still answers on node-2.
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
	for c in up up-again kubeconfigs etcd check-ok hub secrets vip-lost check boot heal check-again hub-move; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
cluster_testbed 5 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
if [ -z "${ROLES:-}" ] || [ ! -d "$ROLES/helm" ]; then
	skip_all_cases "needs the add-on roles and the fakes' artifacts (helm, charts)"
fi
# keepalived and HAProxy from the control planes' Debian mirror; node-2 and
# node-3 control planes too, behind the VIP (tests/lib-ha.sh)
ha_mirror node-1 node-2 node-3
ha_inventory node-2=control-plane node-3=control-plane "node-4=worker, nfs-server"
# The hub too, with NFS storage on node-4 (a worker): by default on the
# second control plane, node-2 (the first, node-1, is the VIP's preferred
# holder).
HUB_PORT=30124
python3 - "$HA" "$HUB_PORT" <<'PYEOF'
import sys
path, port = sys.argv[1:]
s = open(path).read()
s = s.replace("jupyterhub:\n  enabled: false\n",
              "storage:\n  nfs:\n    server: node-4\n    path: /srv/nfs\n"
              "jupyterhub:\n  node_port: %s\n  admin_users: [lab-admin]\n" % port)
open(path, "w").write(s)
PYEOF
grep -q "^  node_port: $HUB_PORT" "$HA" || { echo "# cannot add the hub to $HA"; exit 1; }
sed "s/^  admin_users: \[lab-admin\]\$/&\n  node: node-3/" "$HA" >"$TEST_DIR/inventory-hub3.yaml"
HA_HUB3=$TEST_DIR/inventory-hub3.yaml
export TESTBED_NODES HUB_PORT HA_HUB3

etcd_health() { # NODE: etcdctl endpoint health of its own member
	ec "$1" --command-timeout=2s endpoint health
}
# hub_health NODE: the HTTP status of /hub/health through the NodePort on NODE's address
hub_health() {
	curl --silent --max-time 5 --noproxy '*' -o /dev/null -w '%{http_code}' "http://$(addr "$1"):$HUB_PORT/hub/health" || true
}
holders() {
	for n in node-1 node-2 node-3; do
		grep -qx "$n" "$TEST_DIR/lost" 2>/dev/null && continue
		if x "$n" ip -o -4 addr show | grep -q " $VIP/"; then echo "$n"; fi
	done
}
# snapshot NODE OUT: sha256 of every file under /etc and /var/lib/provision on NODE.
snapshot() {
	x "$1" sh -c "find /etc /var/lib/provision -xdev -type f -print0 2>/dev/null | sort -z | xargs -0 sha256sum" >"$2"
}
: >"$TEST_DIR/lost"
export TEST_DIR STATE
knob node-1 record-tokens

test_case "up of 3 control planes + 2 workers behind the VIP: green" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up.out 2>&1 ||
		{ run_tail up.out; false; }
	echo "# up of 3 control planes + 2 workers (fresh nodes): $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	for n in node-1 node-2 node-3; do
		x "$n" test -f /etc/kubernetes/manifests/kube-apiserver.yaml
		x "$n" test -f /etc/kubernetes/manifests/etcd.yaml
	done
	x node-1 grep -q "^controlPlaneEndpoint: \"$VIP:8443\"" /etc/kubernetes/provision-kubeadm.yaml
	for n in node-2 node-3; do
		x "$n" test ! -e /etc/kubernetes/provision-kubeadm.yaml
		x "$n" test -f /etc/kubernetes/provision-join-control-plane.yaml
	done
	x node-1 test ! -e /var/lib/provision/certificate-key
'

test_case "a second up changes nothing" '
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up2.out 2>&1 ||
		{ run_tail up2.out; false; }
	for n in $TESTBED_NODES; do expect_grep "^$n  *done  *0 changed .* 0 failed" up2.out; done
	expect_grep "^validation: [0-9]* passed, 0 failed" up2.out
'

test_case "kubeconfigs name the VIP, never one control plane: the state folder admin.conf, the worker kubelet.conf" '
	expect_grep "server: https://$VIP:8443" "$STATE/private/admin.conf"
	x node-4 grep -q "server: https://$VIP:8443" /etc/kubernetes/kubelet.conf
	admin_pem
	api /api/v1/nodes >nodes.json
	for n in $TESTBED_NODES; do expect_grep "\"name\": *\"$n\"" nodes.json; done
'

test_case "etcd: three started voting members, one per control plane" '
	etcd_members node-2 >members
	sed "s/^/# etcd member: /" members >>"$TEST_DIR/figures"
	expect_eq 3 "$(grep -c ", started, " members)" "started members"
	for n in node-1 node-2 node-3; do expect_grep ", started, $n, " members; done
	expect_no_grep ", true\$" members
'

test_case "check: three etcd members agreeing, every API server ready, the VIP holder named" '
	expect_status 0 "$PROVISION" check -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >check-ok.out 2>&1 ||
		{ run_tail check-ok.out; false; }
	h=$(holders)
	expect_eq 1 "$(printf "%s\n" "$h" | grep -c .)" "VIP holders"
	grep "^etcd-\|^apiserver-ready\|^vip-holder" check-ok.out | sed "s/^/# check: /" >>"$TEST_DIR/figures"
	expect_grep "^etcd-cluster  *(cluster)  *pass  *3 members: node-1, node-2, node-3; leader node-[1-3]; all started and voting, the same list from each\$" check-ok.out
	for n in node-1 node-2 node-3; do
		expect_grep "^etcd-member  *$n  *pass  *started, voting; leader node-[1-3]\$" check-ok.out
		expect_grep "^apiserver-ready  *$n  *pass  *ok\$" check-ok.out
	done
	expect_grep "^vip-holder  *(cluster)  *pass  *held by $h\$" check-ok.out
'

test_case "the hub on node-2 (the second control plane; the VIP prefers node-1): its database folder there, /hub/health 200 through its NodePort" '
	expect_grep "^\[node-2\] hub-database › 10-folder … changed" up.out
	expect_no_grep "^\[node-[134]\] hub-database" up.out
	expect_grep "^\[node-1\] jupyterhub › 30-install … changed" up.out
	expect_eq "700:1000" "$(x node-2 stat -c %a:%u /var/lib/provision/jupyterhub)" "hub database folder on node-2"
	x node-2 test -s /var/lib/provision/jupyterhub/jupyterhub.sqlite
	x node-1 test ! -e /var/lib/provision/jupyterhub
	x node-1 grep -A1 "^  nodeSelector:" /etc/provision/jupyterhub/values.yaml >selector
	expect_grep "kubernetes.io/hostname: \"node-2\"" selector
	expect_eq 200 "$(hub_health node-2)" "/hub/health on node-2"
	expect_grep "^hub-health  *(cluster)  *pass  *HTTP 200 from http://$(addr node-2):$HUB_PORT/hub/health\$" check-ok.out
'

test_case "no certificate key or token in any file the run wrote" '
	secrets_collected secrets.list
	files_written files.list
	while read -r f; do
		[ -f "$TEST_DIR/$f" ] || continue
		if grep -qF -f secrets.list "$TEST_DIR/$f"; then echo "# a secret in $f"; false; fi
	done <files.list
	expect_no_grep "certificateKey\|certificate-key [0-9a-f]\{64\}" up.out
'

test_case "the VIP holder is killed: the API through the VIP answers again, every Node listed through it" '
	h=$(holders)
	expect_eq node-1 "$h" "the VIP holder (the highest priority)"
	echo "$h" >>"$TEST_DIR/lost"
	echo "# VIP holder: $h"
	t0=$(date +%s%N)
	"$TESTBED" kill-node "$TB" "$h" --silent
	ok=
	while [ $(($(date +%s%N) - t0)) -lt 30000000000 ]; do
		if curl --silent --insecure --max-time 1 "https://$VIP:8443/healthz" | grep -qx ok; then ok=1; break; fi
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# the API through the VIP answered again $ms ms after $h (the VIP holder) was killed; new holder: $(holders)" >>"$TEST_DIR/figures"
	expect_eq 1 "$ok" "API through the VIP within 30 s"
	[ "$ms" -le 15000 ] || { echo "# $ms ms > 15 s"; false; }
	api /api/v1/nodes >nodes2.json
	for n in $TESTBED_NODES; do expect_grep "\"name\": *\"$n\"" nodes2.json; done
	# the hub, on node-2, never left
	hs=$(hub_health node-2)
	echo "# the hub (on node-2) after $h was lost: /hub/health $hs" >>"$TEST_DIR/figures"
	expect_eq 200 "$hs" "/hub/health on node-2 after the VIP holder was lost"
'

test_case "provision check names the lost control plane" '
	lost=$(cat "$TEST_DIR/lost")
	set +e
	"$PROVISION" check -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >check.out 2>&1
	rc=$?
	set -e
	tail -n 8 check.out | sed "s/^/# /"
	expect_eq 1 "$rc" "exit status of check"
	expect_grep "$lost" check.out
	grep "^etcd-\|^apiserver-ready\|^vip-holder" check.out | sed "s/^/# check after the loss: /" >>"$TEST_DIR/figures"
	expect_grep "^etcd-member  *$lost  *fail  *no answer: $lost is unreachable" check.out
	expect_grep "^apiserver-ready  *$lost  *fail  *no answer: $lost is unreachable" check.out
	expect_grep "^etcd-cluster  *(cluster)  *fail  *3 members: node-1, node-2, node-3; leader node-[1-3]; lost: $lost (2 of 3 answer, a majority: writes work)" check.out
	expect_grep "^vip-holder  *(cluster)  *pass  *held by $(holders)\$" check.out
	expect_grep "^hub-health  *(cluster)  *pass  *HTTP 200 from http://$(addr node-2):$HUB_PORT/hub/health\$" check.out
	expect_status 1 "$PROVISION" status -i "$HA" --no-tui >status.out 2>&1
	grep "^VIP \|^$lost: etcd" status.out | sed "s/^/# status after the loss: /" >>"$TEST_DIR/figures"
	expect_grep "^VIP $VIP held by $(holders)\$" status.out
	expect_grep "^$lost: etcd-member failed: expected .*; observed no answer: $lost is unreachable" status.out
'

test_case "the lost node powered on again: its kubelet brings back its etcd member and API server, the VIP goes back to node-1, the API through the VIP answering throughout" '
	lost=$(cat "$TEST_DIR/lost")
	# what the other nodes hold now, to show the heal changes nothing there
	for n in $TESTBED_NODES; do
		[ "$n" = "$lost" ] || snapshot "$n" "before.$n"
	done
	echo "$lost" >"$TEST_DIR/back"
	"$TESTBED" start-node "$TB" "$lost"
	: >"$TEST_DIR/lost"
	# The node whole again: its etcd member healthy, its API server
	# answering, and the VIP on node-1 (the highest priority, taken back
	# 30 s after its keepalived started: preempt_delay); meanwhile the API
	# through the VIP is polled (a new connection each time).
	t0=$(date +%s%N)
	last=$t0 gap=0 polls=0 fails=0 whole=
	while [ $(($(date +%s%N) - t0)) -lt 180000000000 ]; do
		polls=$((polls + 1))
		if curl --silent --insecure --max-time 1 "https://$VIP:8443/healthz" | grep -qx ok; then
			now=$(date +%s%N)
			[ $((now - last)) -le "$gap" ] || gap=$((now - last))
			last=$now
		else
			fails=$((fails + 1))
		fi
		if [ "$(holders)" = node-1 ] && x "$lost" curl --silent --insecure --max-time 2 https://127.0.0.1:6443/healthz | grep -qx ok &&
			etcd_health "$lost" >/dev/null 2>&1; then
			whole=$((($(date +%s%N) - t0) / 1000000))
			break
		fi
		sleep 0.2
	done
	now=$(date +%s%N)
	[ $((now - last)) -le "$gap" ] || gap=$((now - last))
	echo "# $lost powered on: whole again (its etcd member healthy, its API server answering, the VIP on node-1) ${whole:-not within 180000} ms after sshd answered; the API through the VIP meanwhile: $polls polls, $fails failed, longest gap $((gap / 1000000)) ms" >>"$TEST_DIR/figures"
	[ -n "$whole" ] || { echo "# $lost not whole again within 180 s; VIP holders: $(holders)"; false; }
	[ "$gap" -le 5000000000 ] || { echo "# the API through the VIP did not answer for $((gap / 1000000)) ms"; false; }
'

test_case "up heals it: green, validation passes, only the powered-on node changed, etcd three started voting members again" '
	lost=$(cat "$TEST_DIR/back")
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up3.out 2>&1 ||
		{ run_tail up3.out; false; }
	echo "# up after $lost came back: $(($(date +%s) - t0)) s; $(sed -n "s/^\(node-[0-9]*\)  *done  *\([0-9]*\) changed.*/\1 \2 changed/p" up3.out | paste -sd ",")" >>"$TEST_DIR/figures"
	grep "^$lost  *done " up3.out | sed "s/^/# /"
	grep "^\[$lost\] .* … changed" up3.out | sed "s/^/# /"
	expect_grep "^validation: [0-9]* passed, 0 failed" up3.out
	expect_grep "^$lost  *done  *[0-9]* changed .* 0 failed" up3.out
	for n in $TESTBED_NODES; do
		[ "$n" = "$lost" ] && continue
		expect_grep "^$n  *done  *0 changed .* 0 failed" up3.out
		snapshot "$n" "after.$n"
		diff "before.$n" "after.$n" || { echo "# files changed on $n"; false; }
	done
	grep -v "^\[$lost\]" up3.out >others.out || true
	expect_no_grep "^\[node-[0-9]*\] .* … changed" others.out
	etcd_members "$lost" >members3
	sed "s/^/# etcd member after the heal: /" members3 >>"$TEST_DIR/figures"
	expect_eq 3 "$(grep -c ", started, " members3)" "started members"
	for n in node-1 node-2 node-3; do expect_grep ", started, $n, " members3; done
	expect_no_grep ", true\$" members3
'

test_case "check passes again" '
	"$PROVISION" check -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >check2.out 2>&1 ||
		{ tail -n 20 check2.out; false; }
	expect_no_grep " fail " check2.out
	api /api/v1/nodes >nodes3.json
	for n in $TESTBED_NODES; do expect_grep "\"name\": *\"$n\"" nodes3.json; done
'

test_case "up with jupyterhub.node: node-3 refuses to move the hub without its database: node-3 fails saying so, the hub stays on node-2" '
	for n in node-2 node-3; do snapshot "$n" "move-before.$n"; done
	expect_status 1 "$PROVISION" up -i "$HA_HUB3" --state "$STATE" --roles "$ROLES" --no-tui >up-move.out 2>&1
	grep "^\[node-3\] hub-database\|the hub runs on\|hint: to keep" up-move.out | sed "s/^/# the move refused: /" >>"$TEST_DIR/figures"
	expect_grep "^\[node-3\] hub-database › 10-folder .*failed" up-move.out
	expect_grep "the hub runs on node-2 with its database there (/var/lib/provision/jupyterhub/jupyterhub.sqlite); the inventory puts it on node-3 (jupyterhub.node, or its default), which has none" up-move.out
	expect_grep "hint: to keep the hub on node-2, set jupyterhub.node: node-2 in the inventory and run provision up; to move it, stop it" up-move.out
	expect_no_grep "^\[node-1\] jupyterhub › 30-install … changed" up-move.out
	x node-3 test ! -e /var/lib/provision/jupyterhub
	for n in node-2 node-3; do snapshot "$n" "move-after.$n"; diff "move-before.$n" "move-after.$n" || { echo "# files changed on $n"; false; }; done
	expect_eq 200 "$(hub_health node-2)" "/hub/health on node-2"
'

cat "$TEST_DIR/figures" 2>/dev/null || true
test_done
