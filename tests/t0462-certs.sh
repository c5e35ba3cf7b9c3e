#!/bin/sh
# run.sh: beside others (tests/run.sh: a testbed of its own, mostly waiting)
# run.sh: about 490 s in CI (beside another; tests/run.sh starts the longest first)
# t0462: certificate expiry and renewal on a testbed cluster (2 nodes):
# check reads kubeadm certs check-expiration (the stand-in's real X.509
# files) and the kubelets' client certificates; certificates re-signed to
# end in 10 days make check warn with the days left per certificate and up
# print one line offering renew-certs; renew-certs renews them and restarts
# the control-plane pods one at a time while /readyz is polled once a second
# from this machine (the longest gap is printed); then check is clean;
# renew-certs again changes nothing; certificates that ended yesterday make
# check fail with a hint naming renew-certs, and renew-certs brings the
# cluster back.  Then the end of provision restore on a reinstalled control
# plane: up runs kubeadm init on the restored PKI and data, and node-2
# reconnects without joining again (the etcd part of restore, with real
# etcd, is t0460's).
. "$(dirname "$0")/lib.sh"

. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"
# shellcheck source=tests/lib-certs.sh
. "$SRC_ROOT/tests/lib-certs.sh"

CASES="up ten-days renew again expired restored"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
cluster_testbed 2 1.36.4 || skip_all_cases "$CLUSTER_SKIP"
P="--state $STATE --roles $ROLES --no-tui"
C="--state $STATE --roles $ROLES --no-tui" # check runs up's roles (drift): the test's roles
tb() { "$TESTBED" exec "$TB" "$@"; }
CP=$(sed -n '/name: node-1/,/address:/s/.*address: *\([0-9.]*\).*/\1/p' "$INV" | head -n 1)

# certs_resign (tests/lib-certs.sh) on node-1
resign() { certs_resign node-1 "$1" "$2"; }
# the longest run of seconds without "ok" in a readyz log ("EPOCH ANSWER" lines)
gap() { awk '$2 != "ok" { if (!s) s = $1; g = $1 - s + 1; if (g > m) m = g; next } { s = 0 } END { print m + 0 }' "$1"; }

test_case "up on two nodes; check clean, the certificate checks among them" "
	'$PROVISION' up -i '$INV' $P >up.out 2>&1 || { run_tail up.out; false; }
	'$PROVISION' check -i '$INV' $C >check.out 2>&1 || { cat check.out; false; }
	expect_grep '^certificates  *node-1  *pass  *11 certificates and 3 CAs; the first to expire: .* (36[45] days left)' check.out
	expect_grep '^kubelet-client-cert  *node-2  *pass  *expires ' check.out
	expect_no_grep 'renew-certs' up.out
"

test_case "certificates ending in 10 days: check warns with the days left of each, JSON and JUnit say so, up offers renew-certs in one line" "
	resign \"\$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)\" \"\$(date -u -d '+10 days +1 hour' +%Y%m%d%H%M%SZ)\"
	'$PROVISION' check -i '$INV' $C --junit junit.xml >warn.out 2>&1 || { cat warn.out; false; }
	cat warn.out | grep -E '^(certificates|validation)'
	expect_grep '^certificates  *node-1  *warn  *less than 30 days: admin.conf 10 days left, apiserver 10 days left, apiserver-etcd-client 10 days left, .*super-admin.conf 10 days left (expected: ' warn.out
	expect_grep \"fix: run 'provision renew-certs\" warn.out
	expect_grep '^validation: [0-9]* passed, 0 failed, 0 skipped, 1 warning' warn.out
	expect_grep '<system-out>warning: less than 30 days: admin.conf 10 days left' junit.xml
	'$PROVISION' check -i '$INV' $C -o json >warn.json 2>&1 || true
	expect_grep '\"step\":\"certificates\",\"result\":\"warning\"' warn.json
	'$PROVISION' up -i '$INV' $P >up2.out 2>&1 || { run_tail up2.out; false; }
	expect_eq 1 \"\$(grep -c \"^certificates: some expire within the warning period; renew them with 'provision renew-certs -i $INV'\\\$\" up2.out)\" 'one line offering renew-certs'
"

test_case "renew-certs: renewed, pods restarted one at a time with /readyz polled every second, kubeconfigs refreshed; check clean" "
	tb node-1 cat /etc/kubernetes/admin.conf >admin.before
	cp '$STATE/private/admin.conf' local.before
	rm -f stop
	( while [ ! -e stop ]; do printf '%s %s\n' \"\$(date +%s)\" \"\$(curl -sk --max-time 1 https://$CP:6443/readyz || echo down)\"; sleep 1; done ) >readyz.log &
	'$PROVISION' renew-certs -i '$INV' $P >renew.out 2>&1 || { touch stop; cat renew.out; false; }
	touch stop
	wait
	echo \"# /readyz: \$(wc -l <readyz.log) polls, \$(grep -vc ' ok\$' readyz.log) without ok, longest gap \$(gap readyz.log) s\"
	expect_grep 'renew-certs › 10-renew … changed' renew.out
	expect_grep 'renew-certs › 20-restart … changed' renew.out
	tb node-1 cat /etc/kubernetes/admin.conf >admin.after
	! cmp -s admin.before admin.after
	tb node-1 cmp /etc/kubernetes/admin.conf /root/.kube/config
	! cmp -s local.before '$STATE/private/admin.conf'
	tb node-1 cat /etc/kubernetes/admin.conf | cmp - '$STATE/private/admin.conf'
	expect_grep \"^renew-certs: the state folder's private/admin.conf refreshed from node-1\$\" renew.out
	'$PROVISION' check -i '$INV' $C >check2.out 2>&1 || { cat check2.out; false; }
	expect_grep '^certificates  *node-1  *pass  *11 certificates and 3 CAs; the first to expire: .* (36[45] days left)' check2.out
	expect_grep '^validation: [0-9]* passed, 0 failed, 0 skipped\$' check2.out
"

test_case "renew-certs again: nothing due, nothing changed, the cluster answers" "
	'$PROVISION' renew-certs -i '$INV' $P >again.out 2>&1 || { cat again.out; false; }
	expect_no_grep ' … changed' again.out
	expect_grep '^node-1  *done  *0 changed  *3 unchanged' again.out
	tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf get --raw /readyz >r
	expect_eq ok \"\$(cat r)\" '/readyz'
"

test_case "expired certificates: check fails naming renew-certs; renew-certs brings the cluster back" "
	resign \"\$(date -u -d '-400 days' +%Y%m%d%H%M%SZ)\" \"\$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)\"
	expect_status 1 '$PROVISION' check -i '$INV' $C >exp.out 2>&1
	expect_grep '^certificates  *node-1  *fail  *admin.conf expired on .*apiserver expired on ' exp.out
	expect_grep \"fix: run 'provision renew-certs\" exp.out
	'$PROVISION' renew-certs -i '$INV' $P >renew2.out 2>&1 || { cat renew2.out; false; }
	'$PROVISION' check -i '$INV' $C >check3.out 2>&1 || { cat check3.out; false; }
	expect_grep '^certificates  *node-1  *pass' check3.out
"

test_case "a reinstalled control plane with restored PKI and data: up runs kubeadm init on them, node-2 reconnects without a join" "
	# What provision restore leaves on the node (t0460 makes it with real
	# etcd): the PKI and the data folder of before, and etcd-restore's
	# marker.  The stand-ins' API server keeps its objects in /var/lib/etcd;
	# kubeadm reset -f stands for the reinstall (it removes the control
	# plane, its PKI and data; the packages stay).
	tb node-1 sh -eu -c 'tar -C /etc/kubernetes -cf /root/pki.tar pki; tar -C /var/lib -cf /root/etcd.tar etcd'
	tb node-2 cat /etc/kubernetes/kubelet.conf >kubelet2.before
	tb node-1 kubeadm reset -f >reset.out 2>&1 || { cat reset.out; false; }
	tb node-1 sh -eu -c 'tar -C /etc/kubernetes -xf /root/pki.tar; tar -C /var/lib -xf /root/etcd.tar; rm /root/pki.tar /root/etcd.tar
		mkdir -p /var/lib/provision/etcd-restore; : >/var/lib/provision/etcd-restore/20261127T000000Z.restored'
	tb node-1 md5sum /etc/kubernetes/pki/ca.crt >ca.before
	# plan: node-1 waits for kubeadm init; node-2's check cannot reach the
	# API yet, and says so (up reaches its join phase after init)
	expect_status 1 '$PROVISION' plan -i '$INV' $P >plan-restored.out 2>&1
	expect_grep 'backup 20261127T000000Z restored there (provision restore) waits for kubeadm init' plan-restored.out
	expect_grep '\\[node-2\\] kubeadm-join › 30-join … failed .*the API server does not answer node-2' plan-restored.out
	'$PROVISION' up -i '$INV' $P >up-restored.out 2>&1 || { cat up-restored.out; false; }
	'$PROVISION' logs -i '$INV' --state '$STATE' node-1 >init-restored.log 2>&1
	expect_grep 'kubeadm init on its PKI and etcd data' init-restored.log
	expect_grep 'ignore-preflight-errors=DirAvailable--var-lib-etcd' init-restored.log
	expect_grep 'Using existing ca certificate authority' init-restored.log
	expect_grep 'Using existing apiserver certificate and key on disk' init-restored.log
	tb node-1 md5sum /etc/kubernetes/pki/ca.crt >ca.after
	cmp ca.before ca.after
	tb node-1 test -f /var/lib/provision/etcd-restore/20261127T000000Z.initialised
	# node-2: not joined again, its kubelet's credentials unchanged, Ready
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … changed' up-restored.out
	expect_no_grep '\\[node-2\\] kubeadm-join › 30-join … changed' up-restored.out
	tb node-2 cat /etc/kubernetes/kubelet.conf | cmp - kubelet2.before
	'$PROVISION' check -i '$INV' $C >check4.out 2>&1 || { cat check4.out; false; }
	expect_grep '^validation: [0-9]* passed, 0 failed, 0 skipped\$' check4.out
"

test_done
