#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 401 s in CI (beside another; tests/run.sh starts the longest first)
# t0400-cluster: `provision up` with every phase on four nspawn testbed nodes
# (node-1 the control plane, node-2..4 workers) turns them into a
# Kubernetes cluster, judged by the cluster's and the nodes' real state, read
# with `testbed.sh exec` on the nodes (kubectl on the control plane, files,
# services), not from provision's report: every node Ready, a pod CIDR
# each, Flannel running on each (the CNI config and subnet.env it writes),
# CoreDNS running, /readyz ok, the kubeadm config as rendered, admin.conf in
# the state folder (0600) and in root's and the login user's
# ~/.kube/config, no bootstrap token left, the node labels.  Then: a second
# up changes nothing; `provision check` passes; no token, certificate key
# or CA private key is in any file the runs wrote (state folder, outputs,
# the nodes' kubelet journals and pod logs).
#
# The Kubernetes tools are the stand-ins of tests/fakes, installed by the
# kube-packages role from a signed apt repository on the testbed bridge
# (tests/fakes/kube-debs/build.sh).  nspawn nodes keep /proc/sys read-only,
# so the kernel role's sysctl step skips there; the test sets
# net.ipv4.ip_forward=1 in each node's network namespace from the host, as
# that step does on a real node (kubeadm's preflight needs it).
#
# The cluster runs the default of roles/kubernetes.yaml (1.37.1: kubeadm's
# v1beta4 API, cgroup v2 nodes) on Debian 13 nodes (the other cluster tests
# run Debian 12 ones: so the roles run on both releases in every test run;
# PROVISION_TESTBED_SUITE=bookworm for Debian 12 here too).
# Near the end the running cluster is moved to `containerd: release`
# (roles/containerd-release) with an archive made of Debian sid's real
# containerd 2.1 (tests/releases/containerd-archive.sh).
# PROVISION_TEST_K8S=X.Y.Z runs the same cases at another version of the
# table (the matrix of doc/provision.1):
#   for v in 1.28.15 1.29.15 ... ; do PROVISION_TEST_K8S=$v sh tests/t0400-cluster.sh; done
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up validation state files tokens labels hostile-labels kubeconfig-login-user second-up check no-secrets"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=${PROVISION_TEST_K8S:-1.37.1}
PROVISION_TESTBED_SUITE=${PROVISION_TESTBED_SUITE:-trixie}
export PROVISION_TESTBED_SUITE
cluster_testbed 4 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
UP="$PROVISION up -i $INV --state $STATE --roles $ROLES --no-tui"

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }

# The fake API server keeps a copy of every bootstrap token it stores, for
# the no-secrets case.
knob node-1 record-tokens

test_case "up: exit 0, every node done, the cluster phases ran on the right nodes" "
	t0=\$(date +%s)
	$UP >up1.out 2>&1 || { run_tail up1.out; false; }
	echo \$((\$(date +%s) - t0)) >up1.seconds
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *[0-9]* changed .* 0 failed\" up1.out; done
	expect_grep '\\[node-1\\] kubeadm-init › 30-init … changed' up1.out
	expect_grep '\\[node-1\\] kubeadm-init › 50-stable … changed' up1.out
	expect_grep '\\[node-1\\] flannel › 10-apply … changed' up1.out
	expect_grep '\\[node-1\\] join-tokens › 20-tokens … changed' up1.out
	for n in node-2 node-3 node-4; do
		expect_grep \"\\\\[\$n\\\\] kubeadm-join › 30-join … changed\" up1.out
		expect_grep \"\\\\[\$n\\\\] kubeadm-join › 40-ready … changed\" up1.out
	done
	expect_grep '\\[node-1\\] join-cleanup › 10-tokens … changed' up1.out
	expect_grep '\\[node-1\\] node-labels › 10-labels … changed' up1.out
	expect_no_grep '\\[node-1\\] kubeadm-join' up1.out
	expect_no_grep '\\[node-[234]\\] kubeadm-init' up1.out
	# the nodes' release, and the containerd it ships (trixie: 1.7, bookworm: 1.6)
	case $PROVISION_TESTBED_SUITE in
	trixie) want_os=13 want_ctr=1.7 ;;
	*) want_os=12 want_ctr=1.6 ;;
	esac
	for n in $TESTBED_NODES; do
		expect_eq \$want_os \"\$(tb \$n sh -c '. /etc/os-release; echo \$VERSION_ID')\" \"\$n: Debian release\"
		tb \$n dpkg-query -W -f '\${Version}' containerd | cut -d . -f 1-2 >ctr
		expect_eq \$want_ctr \"\$(cat ctr)\" \"\$n: containerd\"
	done
"

test_case "validation at the end of up: every check passes" "
	expect_grep '^validation: [0-9]* passed, 0 failed' up1.out
	expect_no_grep ' fail  ' up1.out
"

test_case "the cluster: every node Ready with its own pod CIDR, Flannel and CoreDNS running, /readyz ok" "
	kc get nodes -o json >nodes.json
	python3 - nodes.json <<-'EOF'
		import json, sys
		d = json.load(open(sys.argv[1]))
		assert d['kind'] == 'List' and d['apiVersion'] == 'v1', d['kind']
		names = sorted(n['metadata']['name'] for n in d['items'])
		assert names == ['node-1', 'node-2', 'node-3', 'node-4'], names
		cidrs = set()
		for n in d['items']:
		    ready = [c for c in n['status']['conditions'] if c['type'] == 'Ready'][0]
		    assert ready['status'] == 'True', (n['metadata']['name'], ready)
		    ip = [a['address'] for a in n['status']['addresses'] if a['type'] == 'InternalIP'][0]
		    assert ip.startswith('198.18.'), ip
		    assert n['status']['nodeInfo']['kubeletVersion'] == 'v$K8S'
		    assert int(n['status']['allocatable']['pods']) == 110
		    cidrs.add(n['spec']['podCIDR'])
		assert len(cidrs) == 4 and all(c.startswith('10.244.') and c.endswith('/24') for c in cidrs), cidrs
	EOF
	kc get pods -A -o json >pods.json
	python3 - pods.json <<-'EOF'
		import json, sys
		d = json.load(open(sys.argv[1]))
		def running(p):
		    return p['status']['phase'] == 'Running' and all(c['ready'] for c in p['status']['containerStatuses'])
		fl = {p['spec']['nodeName']: p for p in d['items'] if p['metadata']['namespace'] == 'kube-flannel'}
		assert sorted(fl) == ['node-1', 'node-2', 'node-3', 'node-4'], sorted(fl)
		assert all(running(p) for p in fl.values()), [p['status'] for p in fl.values() if not running(p)]
		dns = [p for p in d['items'] if p['metadata'].get('labels', {}).get('k8s-app') == 'kube-dns']
		assert len(dns) == 2 and all(running(p) for p in dns), [p['status'] for p in dns]
		cp = {p['metadata']['name'] for p in d['items'] if p['metadata']['namespace'] == 'kube-system'}
		for want in ('kube-apiserver-node-1', 'etcd-node-1', 'kube-controller-manager-node-1', 'kube-scheduler-node-1'):
		    assert want in cp, (want, cp)
	EOF
	expect_eq ok \"\$(kc get --raw /readyz)\" '/readyz'
	for n in $TESTBED_NODES; do
		expect_eq 'active enabled' \"\$(tb \$n systemctl is-active kubelet) \$(tb \$n systemctl is-enabled kubelet)\" \"\$n: kubelet\"
		tb \$n cat /etc/cni/net.d/10-flannel.conflist >conflist
		expect_grep '\"type\": \"flannel\"' conflist
		tb \$n cat /run/flannel/subnet.env >subnet.env
		expect_grep '^FLANNEL_NETWORK=10.244.0.0/16\$' subnet.env
		cidr=\$(kc get node \$n -o 'jsonpath={.spec.podCIDR}')
		expect_grep \"^FLANNEL_SUBNET=\${cidr%.0/24}.1/24\$\" subnet.env
		addr=\$(awk -v n=\$n '\$1 == n { print \$2 }' '$TB/nodes.txt')
		expect_eq \"\$addr\" \"\$(kc get node \$n -o 'jsonpath={.metadata.annotations.flannel\\.alpha\\.coreos\\.com/public-ip}')\" \"\$n: Flannel's interface address\"
	done
"

test_case "the control plane's files: rendered kubeadm config, PKI, manifests, kubeconfigs" "
	tb node-1 cat /etc/kubernetes/provision-kubeadm.yaml >kubeadm.yaml
	expect_grep '^kubernetesVersion: v$K8S\$' kubeadm.yaml
	# the kubeadm API of the minor (roles/kubernetes.yaml kubeadm_api)
	case $K8S in
	1.2[0-9].* | 1.30.*) api=v1beta3 ;;
	*) api=v1beta4 ;;
	esac
	expect_eq 2 \"\$(grep -c \"^apiVersion: kubeadm.k8s.io/\$api\\\$\" kubeadm.yaml)\" \"InitConfiguration and ClusterConfiguration in \$api\"
	[ \$api = v1beta3 ] || expect_grep '^  - name: node-ip\$' kubeadm.yaml
	# kubeadm read the configs (init's, and the JoinConfiguration the join step writes) without a warning
	for n in node-1 node-2; do
		'$PROVISION' logs -i '$INV' --state '$STATE' \$n >kubeadm-\$n.log 2>&1
		expect_no_grep 'strict decoding error\\|deprecated API spec\\|Ignored YAML document' kubeadm-\$n.log
	done
	expect_grep 'kubeadm join .* (discovery timeout 1m0s)' kubeadm-node-2.log
	expect_grep '^  podSubnet: \"10.244.0.0/16\"\$' kubeadm.yaml
	addr1=\$(awk '\$1 == \"node-1\" { print \$2 }' '$TB/nodes.txt')
	expect_grep \"^  advertiseAddress: \\\"\$addr1\\\"\$\" kubeadm.yaml
	expect_grep \"^controlPlaneEndpoint: \\\"\$addr1:6443\\\"\$\" kubeadm.yaml
	expect_grep '^cgroupDriver: systemd\$' kubeadm.yaml
	expect_eq 600 \"\$(tb node-1 stat -c %a /etc/kubernetes/provision-kubeadm.yaml)\" 'mode of the kubeadm config'
	kc -n kube-system get configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' >cc.yaml
	expect_grep '^  podSubnet: 10.244.0.0/16\$' cc.yaml
	expect_grep '^kubernetesVersion: v$K8S\$' cc.yaml
	for f in etcd kube-apiserver kube-controller-manager kube-scheduler; do tb node-1 test -s /etc/kubernetes/manifests/\$f.yaml; done
	tb node-1 openssl verify -CAfile /etc/kubernetes/pki/ca.crt /etc/kubernetes/pki/apiserver.crt >verify
	expect_grep ': OK\$' verify
	tb node-1 cat /var/lib/kubelet/config.yaml >kubelet.yaml
	expect_grep '^cgroupDriver: systemd\$' kubelet.yaml
	expect_eq '600' \"\$(stat -c %a '$STATE/private/admin.conf')\" 'mode of the fetched admin.conf'
	tb node-1 cat /etc/kubernetes/admin.conf | cmp - '$STATE/private/admin.conf'
	tb node-1 cat /root/.kube/config | cmp - '$STATE/private/admin.conf'
	expect_eq 'root:root:600' \"\$(tb node-1 stat -c %U:%G:%a /root/.kube/config)\" 'owner and mode of ~root/.kube/config'
	tb node-2 cat /etc/kubernetes/kubelet.conf >kubelet.conf
	expect_grep '^    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem' kubelet.conf
	tb node-2 test ! -e /etc/kubernetes/bootstrap-kubelet.conf
	tb node-2 sh -c 'ls /run/provision-join.* 2>/dev/null' >left || true
	expect_eq '' \"\$(cat left)\" 'join configurations left in /run on node-2'
"

test_case "tokens: kubeadm's own and the per-node join tokens are gone; one was made per worker" "
	tb node-1 kubeadm token list >tokens
	expect_eq 1 \"\$(wc -l <tokens | tr -d ' ')\" 'kubeadm token list (header only)'
	expect_eq 4 \"\$(tb node-1 cat /var/lib/fake-kubernetes/tokens.log | wc -l | tr -d ' ')\" 'tokens stored (kubeadm init + 3 workers)'
	kc -n kube-system get secrets -o name >secrets
	expect_no_grep bootstrap-token secrets
"

test_case "labels: workers are workers, GPU counts from the facts (0 here), no GPU model without GPUs" "
	for n in node-2 node-3 node-4; do
		kc get node \$n -o 'jsonpath={.metadata.labels}' >labels
		expect_grep '\"node-role.kubernetes.io/worker\":\"\"' labels
		expect_grep '\"provision.dev/gpu-count\":\"0\"' labels
		expect_no_grep 'provision.dev/gpu-model' labels
	done
	kc get node node-1 -o 'jsonpath={.metadata.labels}' >labels
	expect_grep '\"node-role.kubernetes.io/control-plane\":\"\"' labels
	expect_grep '\"provision.dev/gpu-count\":\"0\"' labels
	expect_no_grep 'node-role.kubernetes.io/worker' labels
	kc get nodes >table
	expect_grep '^node-2 *Ready *worker ' table
	expect_grep '^node-1 *Ready *control-plane ' table
"

# Issue 31 F1: a worker's handed labels became arguments of the control
# plane's `kubectl --kubeconfig=admin.conf label`.  node-2 (hostile here:
# tests/testbed/hostile-node.sh; a copy of the roles whose kubeadm-join
# 50-labels also prints what it says) hands NodeRestriction's labels and
# kubectl's --profile-output naming the cluster CA's key.  Before: node-2
# finished, the labels were set and ca.key truncated to 0 bytes (the
# stand-in kubectl creates the profile file as the real one does).
# hostile_roles DIR: a copy of the roles whose kubeadm-join 50-labels (check)
# also prints what provision-hostile says on a node that has it.
hostile_roles() {
	cp -r "$ROLES" "$1"
	awk '{ print } /^\techo "GPUs of / { print "\tif command -v provision-hostile >/dev/null; then provision-hostile; fi" }' \
		"$ROLES/kubeadm-join/steps/50-labels.sh" >"$1/kubeadm-join/steps/50-labels.sh"
	grep -q '^	if command -v provision-hostile' "$1/kubeadm-join/steps/50-labels.sh"
}

test_case "a worker handing labels it may not set and kubectl flags: its step fails naming the word, nothing reaches the control plane" "
	hostile_roles hroles
	echo '::set node_labels_node_2=node-2 node-role.kubernetes.io/control-plane= node-restriction.kubernetes.io/x=y --profile=cpu --profile-output=/etc/kubernetes/pki/ca.key' >hostile.lines
	'$SRC_ROOT/tests/testbed/hostile-node.sh' '$TB' node-2 lines hostile.lines
	ca=\$(tb node-1 sha256sum /etc/kubernetes/pki/ca.key)
	expect_status 1 $PROVISION up -i $INV --state $STATE --roles hroles --no-tui -l node-1,node-2 --phases join >hostile.out 2>&1
	cat hostile.out
	expect_grep \"^\\[node-2\\] .*protocol violation by node 'node-2' in kubeadm-join › 50-labels: 'node_labels_node_2': label 'node-role.kubernetes.io/control-plane=' refused\" hostile.out
	expect_grep '^node-1  *done ' hostile.out
	expect_eq \"\$ca\" \"\$(tb node-1 sha256sum /etc/kubernetes/pki/ca.key)\" 'the CA key on node-1'
	expect_eq '' \"\$(tb node-1 sh -c 'ls /profile.pprof /root/profile.pprof 2>/dev/null' || true)\" 'profile files on node-1'
	kc get node node-2 -o 'jsonpath={.metadata.labels}' >labels2
	expect_no_grep 'node-role.kubernetes.io/control-plane' labels2
	expect_no_grep 'node-restriction' labels2
	expect_grep '\"node-role.kubernetes.io/worker\":\"\"' labels2
	tb node-2 rm -f /etc/provision-hostile /etc/provision-hostile.lines /usr/local/bin/provision-hostile
"

test_case "kubeconfig for the login user (admin, through sudo): ~admin/.kube/config, 0600, owned by admin" "
	set -a; . '$TB/sudo.env'; set +a
	$PROVISION up -i $INV_ADMIN --state $STATE --roles $SRC_ROOT/roles --phases init --no-tui >up-admin.out 2>&1 ||
		{ tail -n 30 up-admin.out; false; }
	expect_grep '\\[node-1\\] kubeadm-init › 40-kubeconfig … changed' up-admin.out
	expect_eq 'admin:admin:600' \"\$(tb node-1 stat -c %U:%G:%a /home/admin/.kube/config)\" 'owner and mode'
	tb node-1 cat /home/admin/.kube/config | cmp - '$STATE/private/admin.conf'
	tb node-1 su - admin -c 'kubectl get nodes -o name' >as-admin
	expect_grep '^node/node-4\$' as-admin
"

test_case "a second up changes nothing" "
	$UP >up2.out 2>&1 || { run_tail up2.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *0 changed .* 0 failed\" up2.out; done
	expect_no_grep ' changed [0-9]' up2.out
	expect_grep '^validation: [0-9]* passed, 0 failed' up2.out
"

test_case "provision check passes on its own (exit 0), and says what it checked" "
	$PROVISION check -i $INV --state $STATE --roles $ROLES >check.out 2>&1 || { cat check.out; false; }
	expect_grep 'node-ready' check.out
	expect_grep 'api-readyz' check.out
	expect_no_grep ' fail ' check.out
"

RELEASE_CASE="containerd: release on the running cluster: every node moves to containerd 2 from the archive (config version 3), the cluster stays Ready, check passes, the next up changes nothing"
if [ "${PROVISION_TEST_RELEASES:-1}" = 0 ]; then
	test_skip "$RELEASE_CASE" "PROVISION_TEST_RELEASES=0 (the archive is made of the releases tier's Debian sid tree)"
else
test_case "$RELEASE_CASE" "
	tb node-1 cat /usr/sbin/runc >node-runc
	sh '$SRC_ROOT/tests/releases/containerd-archive.sh' '$TEST_DIR/kube/repo/artifacts' node-runc
	test_roles '$ROLES' 'http://$TESTBED_HOST_ADDR:$port/artifacts' '$TEST_DIR/kube/repo/artifacts'
	sed 's/^  kubernetes_version: .*/&\\n  containerd: release/' '$INV' >inv-release.yaml
	grep -q '^  containerd: release\$' inv-release.yaml
	UPR=\"$PROVISION up -i inv-release.yaml --state $STATE --roles $ROLES --no-tui\"
	\$UPR >up-release.out 2>&1 || { run_tail up-release.out; false; }
	for n in $TESTBED_NODES; do
		expect_grep \"\\\\[\$n\\\\] containerd-release › 20-service … changed\" up-release.out
		expect_eq /usr/local/bin/containerd \"\$(tb \$n sh -c 'readlink /proc/\$(systemctl show -p MainPID --value containerd)/exe')\" \"containerd on \$n\"
		expect_eq 'version = 3' \"\$(tb \$n sed -n '/^version/p' /etc/containerd/config.toml)\" \"config.toml on \$n\"
	done
	kc get nodes --no-headers >nodes
	cat nodes
	expect_eq 4 \"\$(awk '\$2 == \"Ready\"' nodes | wc -l)\" 'Ready nodes'
	$PROVISION check -i inv-release.yaml --state $STATE --roles $ROLES >check-release.out 2>&1 || { cat check-release.out; false; }
	\$UPR >up-release2.out 2>&1 || { run_tail up-release2.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *0 changed\" up-release2.out; done
"
fi

# Every file the runs wrote, and what the nodes logged: no token, no secret
# part of one, no private key material of the cluster's CAs or the
# service-account key.
test_case "no token, certificate key or CA private key in any file the runs wrote or the nodes logged" "
	collect_node_logs collected
	secrets_collected secrets.list
	expect_eq 20 \"\$(grep -c . secrets.list)\" 'secret strings collected (4 tokens x 2, 4 keys x 3 lines)'
	expect_no_grep 'PRIVATE KEY' secrets.list
	files_written files
	expect_grep '^./state/logs/node-1.log\$' files
	expect_grep '^./state/private/admin.conf\$' files
	expect_grep '^./up1.out\$' files
	expect_grep '^./collected/node-2.kubelet.journal\$' files
	found=\$(cd '$TEST_DIR' && tr '\\n' '\\0' <'$TEST_DIR/files' | xargs -0 grep -l -F -f '$TEST_DIR/secrets.list' || true)
	expect_eq '' \"\$found\" 'files holding a secret'
"

# Last (it stores a bootstrap token the secrets case above would collect):
# the kubeadm stand-in's upload-certs through the live stand-in API server,
# and the download a joining control plane makes with a bootstrap token
# (the Role kubeadm:kubeadm-certs lets the token's group read the Secret).
test_case "HA stand-in (issue 36): init prints the control-plane join command (controlPlaneEndpoint set); kubeadm init phase upload-certs on the control plane: kubeadm-certs with the shared files sealed, owned by a 2 h token; a bootstrap token downloads them with the key, a wrong key is refused" "
	# init's closing text in the first up's log (kept by the files case):
	# controlPlaneEndpoint set, no --upload-certs: the control-plane join
	# command for copied certificates, token withheld
	expect_grep 'You can now join any number of control-plane nodes by copying certificate authorities' kubeadm-node-1.log
	expect_grep 'kubeadm join [0-9.]*:6443 --token <value withheld> ' kubeadm-node-1.log
	expect_grep '[-]-control-plane \$' kubeadm-node-1.log
	tb node-1 kubeadm certs certificate-key >key
	expect_grep '^[0-9a-f]\\{64\\}\$' key
	tb node-1 kubeadm init phase upload-certs --upload-certs --certificate-key \$(cat key) --skip-certificate-key-print >uc.out 2>&1 || { cat uc.out; false; }
	expect_eq '[upload-certs] Storing the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace' \"\$(cat uc.out)\" 'its output'
	kc -n kube-system get secret kubeadm-certs -o 'jsonpath={.metadata.ownerReferences[0].name}' >owner
	expect_grep '^bootstrap-token-[a-z0-9]\\{6\\}\$' owner
	tb node-1 kubeadm token list >tokens
	expect_grep \"^\$(sed 's/bootstrap-token-//' owner)\\.[a-z0-9]\\{16\\}  .*  Proxy for managing TTL for the kubeadm-certs secret\" tokens
	tok=\$(tb node-1 kubeadm token create --ttl 10m)
	addr1=\$(awk '\$1 == \"node-1\" { print \$2 }' '$TB/nodes.txt')
	# the stand-in's functions as the node's kubeadm has them (its source)
	'$SRC_ROOT/tests/fakes/kube-debs/build.sh' --source kubeadm $K8S ha.src
	sed 's/^if __name__ == \"__main__\":\$/if False:/' ha.src >ha.py
	cat >>ha.py <<-EOF
		import io, contextlib
		ca = read_file(PKI + '/ca.crt')
		c = Client('https://\$addr1:6443', ca=ca, token='\$tok')
		with contextlib.redirect_stdout(io.StringIO()):
		    download_certs(c, '/tmp/ha-pki', '\$(cat key)')
		for path, _ in SHARED_CERTS:
		    assert read_file(PKI + '/' + path) == read_file('/tmp/ha-pki/' + path), path
		try:
		    with contextlib.redirect_stdout(io.StringIO()):
		        download_certs(c, '/tmp/ha-pki2', new_certificate_key())
		    raise SystemExit('a wrong key was taken')
		except Fail as e:
		    print(e)
		try:
		    with contextlib.redirect_stdout(io.StringIO()):
		        download_certs(Client('https://\$addr1:6443', ca=ca, timeout=10), '/tmp/ha-pki2', '\$(cat key)')
		    raise SystemExit('anonymous read the Secret')
		except Fail as e:
		    print('anonymous:', e)
	EOF
	tb node-1 sh -c 'cat >/tmp/ha.py' <ha.py
	tb node-1 python3 /tmp/ha.py >dl.out 2>&1 || { cat dl.out; false; }
	tb node-1 rm -rf /tmp/ha.py /tmp/ha-pki /tmp/ha-pki2
	expect_grep '^error execution phase control-plane-prepare/download-certs: error downloading certs: error decoding secret data with provided key: cipher: message authentication failed\$' dl.out
	expect_grep '^anonymous: error execution phase control-plane-prepare/download-certs: error downloading certs: error downloading the secret: .*forbidden' dl.out
	kc -n kube-system delete secret kubeadm-certs \$(cat owner) >/dev/null
	tb node-1 kubeadm token delete \${tok%%.*} >/dev/null
"

echo "# 4-node up (every phase, fresh nodes): $(cat "$TEST_DIR/up1.seconds" 2>/dev/null || echo '?') s"
test_done
