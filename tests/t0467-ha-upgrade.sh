#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 480 s (measured beside another heavy job on the 2-core machine)
# t0467-ha-upgrade: `provision upgrade` and `provision renew-certs` of three
# control planes behind a virtual IP (issue 36), with the API polled through
# the VIP once a second throughout.  The testbed of t0465: etcd real
# (CLUSTER_ETCD=real), keepalived and HAProxy real (Debian's, from
# tests/testbed/apt-repo.sh's repository as the control planes' mirror),
# three control planes and a worker (CoreDNS and Flannel's checks need a
# node without the control planes' taint), at 1.35.8 with 1.36.4's fake
# packages beside (CLUSTER_MORE_VERSIONS).
#
#   - upgrade to 1.36.4 (an etcd backup first, from node-1's member, as
#     upgrade always takes it): the control planes one at a time in inventory
#     order (node-1 `kubeadm upgrade apply`, node-2 and node-3 `kubeadm
#     upgrade node`, each drained, its kubelet and kubectl upgraded,
#     uncordoned), then the worker.  Judged on the nodes: every control
#     plane's own API server answers v1.36.4 on its own address, its
#     manifests name v1.36.4, kubeadm, kubelet and kubectl are 1.36.4 on
#     every node, every Node reports kubelet v1.36.4 and is schedulable.
#   - renew-certs: every control plane's certificates re-signed to end in
#     10 days first (tests/lib-certs.sh); after, each one's serials differ
#     and each ends in more than 300 days, on all three; the state folder's
#     admin.conf is node-1's renewed one and still names the VIP.
#   - during both, a poller GETs /api/v1/nodes through the VIP as the admin
#     once a second: polls, failures and the longest time without an answer
#     are printed.  Bound: at most 3 failed polls and no gap over 8 s.  Why
#     not zero: HAProxy learns that an API server is down from its health
#     check (every 1 s, 2 failures: ~2 s), and a request it already sent to
#     a server that the kubelet then stops fails (HAProxy's redispatch only
#     retries a connection that was refused); one restarting API server can
#     cost a poll or two, never the API (the gap bound: 2 s of checks, the
#     poll's own 2 s timeout, the 1 s interval, and slack for a loaded CI
#     machine).  Measured: see the figures at the end.
#
# Test bodies are single-quoted on purpose: test_case evaluates them later.
# shellcheck disable=SC2016
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakes/cluster-testbed.sh"
# shellcheck source=tests/lib-ha.sh
. "$(dirname "$0")/lib-ha.sh"
# shellcheck source=tests/lib-certs.sh
. "$(dirname "$0")/lib-certs.sh"

test_need_cmd curl apt-ftparchive
FROM=1.35.8
TO=1.36.4
CLUSTER_ETCD=real
CLUSTER_MORE_VERSIONS=$TO
skip_all_cases() {
	for c in up upgrade upgraded renew-certs; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
cluster_testbed 4 "$FROM" || skip_all_cases "$CLUSTER_SKIP"
# keepalived and HAProxy from the control planes' Debian mirror; node-2 and
# node-3 control planes too, behind the VIP (tests/lib-ha.sh)
ha_mirror node-1 node-2 node-3
ha_inventory node-2=control-plane node-3=control-plane
HA2=$TEST_DIR/inventory-ha-$TO.yaml
sed "s/^  kubernetes_version: .*/  kubernetes_version: \"$TO\"/" "$HA" >"$HA2"
export HA2 FROM TO
export TEST_DIR STATE

# poll_start NAME: GET /api/v1/nodes through the VIP as the state folder's
# admin once a second, one "EPOCH-MS ok|fail" line each into NAME.polls,
# until poll_stop NAME.
poll_start() {
	admin_pem
	: >"$TEST_DIR/$1.polls"
	(
		while [ ! -e "$TEST_DIR/$1.stop" ]; do
			t=$(($(date +%s%N) / 1000000))
			if curl --silent --fail --max-time 2 --cacert "$TEST_DIR/certificate-authority-data.pem" \
				--cert "$TEST_DIR/client-certificate-data.pem" --key "$TEST_DIR/client-key-data.pem" \
				"https://$VIP:8443/api/v1/nodes" 2>/dev/null | grep -q '"kind": *"NodeList"'; then
				echo "$t ok"
			else
				echo "$t fail"
			fi >>"$TEST_DIR/$1.polls"
			sleep 1
		done
	) &
	echo $! >"$TEST_DIR/$1.pid"
	test_at_exit "kill $(cat "$TEST_DIR/$1.pid") 2>/dev/null"
}
# poll_stop NAME: stop the poller; print "POLLS FAILURES GAP-MS", the gap
# being the longest time between two answered polls (or the start/end).
poll_stop() {
	touch "$TEST_DIR/$1.stop"
	i=0
	while kill -0 "$(cat "$TEST_DIR/$1.pid")" 2>/dev/null && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	awk 'NR == 1 { last = $1 } { n++ } $2 != "ok" { f++; next } { if ($1 - last > g) g = $1 - last; last = $1 }
		END { print n + 0, f + 0, g + 0 }' "$TEST_DIR/$1.polls"
}
# judge NAME WHAT: the figures into the test output, then the bounds
judge() {
	# shellcheck disable=SC2046 # three numbers
	set -- "$1" "$2" $(poll_stop "$1")
	echo "# $2: API through the VIP polled once a second: $3 polls, $4 failed, longest gap $5 ms" >>"$TEST_DIR/figures"
	tail -n 1 "$TEST_DIR/figures"
	[ "$3" -ge 10 ] || { echo "# only $3 polls"; false; }
	[ "$4" -le 3 ] || { echo "# $4 polls failed (at most 3)"; grep fail "$TEST_DIR/$1.polls"; false; }
	[ "$5" -le 8000 ] || { echo "# a gap of $5 ms (at most 8000)"; false; }
}
# local_version NODE: the gitVersion of NODE's own API server (its address, 6443)
local_version() {
	curl --silent --insecure --max-time 5 "https://$(addr "$1"):6443/version" | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p'
}
# serials NODE: "FILE SERIAL NOTAFTER" of its kubeadm leaf certificates
serials() {
	x "$1" sh -c 'cd /etc/kubernetes/pki && for c in apiserver.crt apiserver-etcd-client.crt etcd/server.crt etcd/peer.crt; do
		echo "$c $(openssl x509 -noout -serial -in $c | cut -d= -f2) $(openssl x509 -noout -enddate -in $c | cut -d= -f2 | tr " " _)"; done
		sed -n "s/^ *client-certificate-data: *//p" /etc/kubernetes/admin.conf | base64 -d >/tmp/admin.crt
		echo "admin.conf $(openssl x509 -noout -serial -in /tmp/admin.crt | cut -d= -f2) $(openssl x509 -noout -enddate -in /tmp/admin.crt | cut -d= -f2 | tr " " _)"'
}

test_case "up of 3 control planes + 1 worker behind the VIP at $FROM: green" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up.out 2>&1 ||
		{ run_tail up.out; false; }
	echo "# up of 3 control planes + 1 worker: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	for n in node-1 node-2 node-3; do expect_eq "v$FROM" "$(local_version $n)" "$n API server"; done
'

test_case "upgrade to $TO: control planes one at a time (apply, then upgrade node), then the worker; the API answers throughout" '
	poll_start upgrade
	t0=$(date +%s)
	rc=0
	"$PROVISION" upgrade -i "$HA2" --state "$STATE" --roles "$ROLES" --no-tui >upgrade.out 2>&1 || rc=$?
	echo "# upgrade $FROM -> $TO of 3 control planes + 1 worker: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	judge upgrade "upgrade"
	[ "$rc" = 0 ] || { run_tail upgrade.out; false; }
	grep "^upgrade: control plane\|^upgrade: worker" upgrade.out >order
	cat order
	printf "%s\n" "upgrade: control plane node-1 to $TO (1 of 3: kubeadm upgrade apply)" \
		"upgrade: control plane node-2 to $TO (2 of 3: kubeadm upgrade node)" \
		"upgrade: control plane node-3 to $TO (3 of 3: kubeadm upgrade node)" \
		"upgrade: worker node-4 to $TO (1 of 1)" >order.want
	cmp order.want order
	expect_grep "^upgrade: an etcd backup first" upgrade.out
	ls "$STATE"/private/backups/*/snapshot.db >/dev/null
	expect_grep "^upgrade: versions after: control plane v$TO; kubelets: node-1 v$TO, node-2 v$TO, node-3 v$TO, node-4 v$TO" upgrade.out
	expect_grep "^upgrade testbed: done: the 3 control planes and 1 worker upgraded to $TO\$" upgrade.out
'

test_case "after the upgrade, on the nodes: every API server, manifest and package at $TO, every Node schedulable" '
	for n in node-1 node-2 node-3; do
		expect_eq "v$TO" "$(local_version $n)" "$n API server"
		x $n grep -q "kube-apiserver:v$TO\$" /etc/kubernetes/manifests/kube-apiserver.yaml
		x $n grep -q "kube-scheduler:v$TO\$" /etc/kubernetes/manifests/kube-scheduler.yaml
	done
	x node-1 sh -c "ls -d /etc/kubernetes/tmp/kubeadm-backup-manifests-*" >/dev/null
	for n in node-1 node-2 node-3 node-4; do
		x $n dpkg-query -W -f "\${Package} \${Version}\n" kubeadm kubelet kubectl >pk.$n
		expect_eq 3 "$(grep -c " $TO-" pk.$n)" "$n: kubeadm kubelet kubectl at $TO"
	done
	x node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes \
		-o "jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.spec.unschedulable}{\"\n\"}{end}" >nodes
	cat nodes
	expect_eq 4 "$(grep -c " v$TO \$" nodes)" "Nodes at v$TO and schedulable"
'

test_case "renew-certs of the 3 control planes, one at a time: every one renewed, the API answers throughout" '
	s=$(date -u -d "-1 day" +%Y%m%d%H%M%SZ)
	e=$(date -u -d "+10 days" +%Y%m%d%H%M%SZ)
	for n in node-1 node-2 node-3; do certs_resign $n "$s" "$e"; serials $n >before.$n; done
	cp "$STATE/private/admin.conf" local.before
	poll_start renew
	t0=$(date +%s)
	rc=0
	"$PROVISION" renew-certs -i "$HA2" --state "$STATE" --roles "$ROLES" --no-tui >renew.out 2>&1 || rc=$?
	echo "# renew-certs of 3 control planes: $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	judge renew "renew-certs"
	[ "$rc" = 0 ] || { run_tail renew.out; false; }
	expect_eq 3 "$(grep -c "^renew-certs: control plane node-[123] ([123] of 3)" renew.out)" "runs"
	soon=$(date -u -d "+300 days" +%s)
	for n in node-1 node-2 node-3; do
		serials $n >after.$n
		echo "# $n: $(paste -d " " before.$n after.$n | awk "{ print \$1, \$3, \"->\", \$6 }" | paste -sd ";" -)"
		while read -r f s0 e0; do
			read -r f1 s1 e1 <&3
			[ "$f" = "$f1" ]
			[ "$s0" != "$s1" ] || { echo "# $n $f: serial unchanged"; false; }
			[ "$(date -u -d "$(echo "$e1" | tr _ " ")" +%s)" -gt "$soon" ] || { echo "# $n $f ends $e1"; false; }
		done <before.$n 3<after.$n
	done
	expect_grep "server: https://$VIP:8443" "$STATE/private/admin.conf"
	expect_grep "^renew-certs: the state folder.s private/admin.conf refreshed from node-1\$" renew.out
	! cmp -s local.before "$STATE/private/admin.conf"
	x node-1 cat /etc/kubernetes/admin.conf | cmp - "$STATE/private/admin.conf"
'

cat "$TEST_DIR/figures" 2>/dev/null || true
test_done
