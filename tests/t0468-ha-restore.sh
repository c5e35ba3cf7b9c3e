#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 210 s (measured beside another heavy job on the 2-core machine)
# t0468-ha-restore: `provision backup` and `provision restore` of a
# cluster with three control planes behind the lab's own load balancer
# (issue 36: cluster.api_endpoint.address, the form the other HA tests do
# not take; the balancer is tests/tools/tcp-balancer.py on this machine,
# asking each API server's /readyz as kubeadm's ha-considerations
# configures HAProxy; provision installs no keepalived or HAProxy), etcd
# real (CLUSTER_ETCD=real: Debian's etcd is each control plane's stacked
# member, the API servers keep their objects in it).  No worker: the
# control planes are the cluster.
#
# Objects are made through the balancer (a namespace, ConfigMaps and a Secret
# with a random sentinel); their count and a SHA-256 of every one's name,
# uid, resourceVersion and data, read through the balancer, is the cluster's
# content.  node-1's etcd is stopped (its static pod's manifest moved
# away): `backup` takes the snapshot from node-2, the first control plane
# whose member answers, and says so.  `restore` while node-2 and node-3
# still hold their members is refused before anything is uploaded.  Then
# the three machines are "reinstalled" (the testbed keeps the machines:
# their etcd manifest removed first so that the reset leaves no cluster
# behind, `kubeadm reset -f`, provision's node state and files removed; the
# packages stay, as in t0462), `restore` puts the backup onto node-1 (the
# control planes' shared PKI and a one-member etcd), and `up` brings the
# cluster back: kubeadm init on node-1 from the restored data, node-2 and
# node-3 join again with --control-plane.  Judged on the nodes and through
# the balancer: the same count and hash, the sentinel, three started voting etcd
# members each holding every object, `provision check` green.
#
# Test bodies are single-quoted on purpose: test_case evaluates them later.
# shellcheck disable=SC2016
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakes/cluster-testbed.sh"
# shellcheck source=tests/lib-ha.sh
. "$(dirname "$0")/lib-ha.sh"

test_need_cmd curl apt-ftparchive sha256sum
K8S=1.36.4
CLUSTER_ETCD=real
skip_all_cases() {
	for c in up objects backup refused restore objects-back etcd check; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
cluster_testbed 3 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
# every node a control plane, behind the lab's balancer, with a Debian
# mirror that has curl (kubeadm-init and kubeadm-join-control-plane's
# 10-host-tools install it: provision's check asks etcd and /readyz with
# it; tests/lib-ha.sh)
ha_mirror node-1 node-2 node-3
ha_address_inventory node-1=control-plane node-2=control-plane node-3=control-plane

# admin_pem (tests/lib-ha.sh) again after the restore: kubeadm init makes a
# new admin.conf, signed by the same CA.  api: its own, taking curl's
# arguments (POST too).
api() { # [CURL-ARGS...] URL: as the admin
	curl --silent --show-error --max-time 10 --cacert "$TEST_DIR/certificate-authority-data.pem" \
		--cert "$TEST_DIR/client-certificate-data.pem" --key "$TEST_DIR/client-key-data.pem" \
		-H 'Content-Type: application/json' "$@"
}
post() { # PATH JSON: created (201), else the answer printed and false
	code=$(api -o "$TEST_DIR/post.out" -w '%{http_code}' -X POST --data "$2" "https://$API$1")
	[ "$code" = 201 ] || { echo "# POST $1: $code $(cat "$TEST_DIR/post.out")"; return 1; }
}
# What the cluster holds of namespace lab, through the balancer: "COUNT SHA256"
# of the ConfigMaps' and Secrets' names, uids, resourceVersions and data.
contents() {
	for r in configmaps secrets; do
		api "https://$API/api/v1/namespaces/lab/$r" || return 1
	done | python3 -c '
import hashlib, json, sys
dec = json.JSONDecoder()
s, items, i = sys.stdin.read(), [], 0
while i < len(s):
    if s[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(s, i)
    for it in o.get("items", []):
        m = it["metadata"]
        items.append([o["kind"], m["name"], m.get("uid"), m.get("resourceVersion"), it.get("data")])
items.sort(key=lambda t: (t[0], t[1]))
print(len(items), hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest())'
}
export TEST_DIR STATE
N=40
SENTINEL=sentinel-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
export N SENTINEL

test_case "up of 3 control planes behind the lab balancer (api_endpoint.address): green, no keepalived or HAProxy of provision" '
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up.out 2>&1 ||
		{ run_tail up.out; false; }
	echo "# up of 3 control planes (fresh nodes): $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	for n in node-1 node-2 node-3; do
		x "$n" test -f /etc/kubernetes/manifests/etcd.yaml
		x "$n" test ! -e /etc/keepalived/keepalived.conf
	done
	x node-1 grep -q "^controlPlaneEndpoint: \"$API\"" /etc/kubernetes/provision-kubeadm.yaml
	expect_grep "server: https://$API\$" "$STATE/private/admin.conf"
	expect_no_grep "api-vip" up.out
	for n in node-1 node-2 node-3; do x "$n" test -x /usr/bin/curl; done
	expect_grep "^\\[node-1\\] kubeadm-init › 10-host-tools … changed" up.out
'

test_case "objects made through the balancer: a namespace, $N ConfigMaps, a Secret" '
	admin_pem
	post /api/v1/namespaces "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"lab\"}}"
	i=0
	while [ $i -lt $N ]; do
		v=$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")
		post /api/v1/namespaces/lab/configmaps "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"cm-$i\"}, \"data\": {\"v\": \"$v\"}}"
		i=$((i + 1))
	done
	post /api/v1/namespaces/lab/secrets "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"lab\"}, \"data\": {\"s\": \"$(printf %s "$SENTINEL" | base64 -w 0)\"}}"
	contents >before
	echo "# before the backup: $(cat before) (objects in namespace lab, sha256 of names, uids, resourceVersions, data)" >>"$TEST_DIR/figures"
	expect_eq $((N + 1)) "$(cut -d " " -f 1 before)" "objects in namespace lab"
'

test_case "backup with node-1 etcd stopped: the snapshot comes from node-2, the first member that answers" '
	x node-1 mv /etc/kubernetes/manifests/etcd.yaml /root/etcd.yaml
	i=0
	while ec node-1 --dial-timeout=2s --command-timeout=3s endpoint health >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 120 ] || { echo "# node-1 etcd still answers after 120 tries"; false; }
		sleep 1
	done
	expect_status 0 "$PROVISION" backup -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >b.out 2>&1 ||
		{ cat b.out; false; }
	cat b.out
	expect_grep "^backup: node-1: its etcd member does not answer" b.out
	expect_grep "^backup: 3 control planes: the snapshot is taken from node-2 (its etcd member answers)" b.out
	expect_eq 1 "$(grep -c "^backup: 3 control planes" b.out)" "lines naming the member"
	expect_grep "^backup: [0-9T]*Z: etcd snapshot of node-2, " b.out
	id=$(ls "$STATE/private/backups")
	expect_grep "^node node-2\$" "$STATE/private/backups/$id/manifest"
	tar -tf "$STATE/private/backups/$id/pki.tar" >pki.list
	expect_grep "^pki/etcd/ca.key\$" pki.list
'

test_case "restore while node-2 and node-3 still hold etcd members: refused, nothing uploaded" '
	expect_status 1 "$PROVISION" restore -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui --yes >refused.out 2>&1
	cat refused.out
	expect_grep "node-2 still holds an etcd member of the cluster (/etc/kubernetes/manifests/etcd.yaml /var/lib/etcd/member)" refused.out
	expect_grep "node-3 still holds an etcd member" refused.out
	expect_status 1 x node-1 test -e /var/lib/provision/etcd-restore
'

test_case "the three control planes reinstalled, restore, up: green, kubeadm init on node-1 from the backup, node-2 and node-3 joined again" '
	for n in node-1 node-2 node-3; do
		x "$n" sh -c "rm -f /etc/kubernetes/manifests/etcd.yaml /root/etcd.yaml && kubeadm reset -f >/root/reset.out 2>&1 &&
			rm -rf /var/lib/provision /etc/kubernetes/provision-* /root/.kube" &
	done
	wait
	for n in node-1 node-2 node-3; do
		x "$n" test ! -e /etc/kubernetes/pki/ca.crt
		x "$n" test ! -e /var/lib/etcd/member
	done
	expect_status 0 "$PROVISION" restore -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui --yes >r.out 2>&1 ||
		{ cat r.out; false; }
	cat r.out
	expect_grep "etcd-restore › 10-pki … changed" r.out
	expect_grep "etcd-restore › 20-etcd-data … changed" r.out
	expect_grep "^restore: node-1: the cluster.s CAs and service-account keys and /var/lib/etcd" r.out
	expect_eq 1 "$(grep -c "^restore: backup .* checked here" r.out)" "lines saying the backup was checked"
	x node-1 test -f /etc/kubernetes/pki/ca.key
	x node-1 test ! -e /etc/kubernetes/pki/apiserver.crt
	x node-1 test ! -e /etc/kubernetes/pki/etcd/server.crt
	t0=$(date +%s)
	expect_status 0 "$PROVISION" up -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >up2.out 2>&1 ||
		{ run_tail up2.out; false; }
	echo "# up after the restore (3 reinstalled control planes): $(($(date +%s) - t0)) s" >>"$TEST_DIR/figures"
	"$PROVISION" logs -i "$HA" --state "$STATE" node-1 >init.log 2>&1
	expect_grep "kubeadm init on its PKI and etcd data" init.log
	expect_grep "Using existing ca certificate authority" init.log
	expect_grep "the restored Nodes of the other control planes deleted (node-2 node-3): they join again" init.log
	for n in node-2 node-3; do
		expect_grep "\\[$n\\] kubeadm-join-control-plane › 30-join … changed" up2.out
		x "$n" test -f /etc/kubernetes/manifests/etcd.yaml
	done
'

test_case "every object back through the balancer: the same count and hash, the sentinel" '
	admin_pem
	contents >after
	echo "# before: $(cat before)" >>"$TEST_DIR/figures"
	echo "# after:  $(cat after)" >>"$TEST_DIR/figures"
	expect_eq "$(cat before)" "$(cat after)" "objects in namespace lab (count, sha256)"
	api "https://$API/api/v1/namespaces/lab/secrets/lab" >secret.json
	expect_grep "\"s\": *\"$(printf %s "$SENTINEL" | base64 -w 0)\"" secret.json
'

test_case "etcd: three started voting members, each holding every object of namespace lab" '
	ec node-2 member list -w simple >members
	sed "s/^/# etcd member: /" members >>"$TEST_DIR/figures"
	expect_eq 3 "$(grep -c ", started, " members)" "started members"
	for n in node-1 node-2 node-3; do expect_grep ", started, $n, " members; done
	expect_no_grep ", true\$" members
	for n in node-1 node-2 node-3; do
		c=$(ec "$n" get --consistency=s /registry/configmaps/lab/ --prefix --keys-only | grep -c .)
		s=$(ec "$n" get --consistency=s /registry/secrets/lab/ --prefix --keys-only | grep -c .)
		echo "# $n: $c ConfigMaps, $s Secret(s) of lab in its own member" >>"$TEST_DIR/figures"
		expect_eq "$N 1" "$c $s" "lab objects in $n own member"
	done
'

test_case "provision check: green" '
	"$PROVISION" check -i "$HA" --state "$STATE" --roles "$ROLES" --no-tui >check.out 2>&1 ||
		{ run_tail check.out; false; }
	expect_grep "^validation: [0-9]* passed, 0 failed" check.out
'

cat "$TEST_DIR/figures" 2>/dev/null || true
test_done
