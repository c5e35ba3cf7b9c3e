#!/bin/sh
# run.sh: beside others (tests/run.sh: a testbed of its own, mostly waiting)
# t0461-etcd-cluster: three stacked control planes' etcd, REAL, and the
# stand-in API servers keeping their objects in it (issue 36, "Real in the
# tests").  Three nspawn nodes each get Debian's etcd (etcd-server of the
# node's release, from tests/testbed/etcd-debs.sh: bookworm 3.4, trixie
# 3.5), the stand-in kubelet and the kube-apiserver "image"
# (kube-debs/build.sh --program), a PKI of their own as kubeadm's certs
# phase makes it (openssl: one etcd CA; per node server and peer
# certificates for its name, localhost, its address, 127.0.0.1 and ::1; the
# apiserver-etcd-client certificate), and static pod manifests with
# kubeadm's flags: etcd on all three (--initial-cluster of the three
# members), kube-apiserver on node-1 and node-2 (--etcd-servers of their
# own member, as kubeadm's stacked control plane); node-3's etcd manifest
# in the words kubeadm 1.34+ uses for etcd 3.6 (--feature-gates=
# InitialCorruptCheck=true, --watch-progress-notify-interval), which the
# kubelet translates for Debian's 3.4/3.5.  The kubelet runs the
# etcd static pod as the node's real etcd and reports it started only once
# its startupProbe (/health on the metrics port 2381) answers.
#
# Then: both API servers answer with the same objects (one created through
# node-1 is read through node-2, resourceVersion = etcd's mod_revision, the
# key /registry/configmaps/NS/NAME in etcd); concurrent merge patches
# through both servers all land; node-3 killed (every process, unplugged):
# etcd keeps quorum with two of three, writes through both servers still
# work; node-2 killed too: a write through node-1 is refused as the real
# API server refuses it (500, etcd's "etcdserver: request timed out" after
# etcd's 7 s; "etcdserver: leader changed" while an election runs, as the
# real one answers), and /readyz says "[-]etcd failed"; what was written with
# two of three is in node-1's member (a serializable read).
# 53 s here (2 cores, load 6-7, the two stand-in builds included); on the
# stand-ins before issue 36 every case fails (no etcd process; node-2's
# API server does not see node-1's ConfigMap, 404).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"
# shellcheck source=tests/lib-etcd.sh
. "$(dirname "$0")/lib-etcd.sh"

test_need_root
test_need_cmd openssl apt-get dpkg-deb flock curl systemd-nspawn python3
etcd_debs
K8S=1.30.4
for p in kubelet kube-apiserver; do
	"$SRC_ROOT/tests/fakes/kube-debs/build.sh" --program "$p" "$K8S" "$TEST_DIR/$p" >"$TEST_DIR/build.log" 2>&1 ||
		{ cat "$TEST_DIR/build.log"; exit 1; }
done
tb_up --nspawn 3 --chroot 0
export TB TESTBED
x() { "$TESTBED" exec "$TB" "$@"; }
addr() { awk -v n="$1" '$1 == n { print $2 }' "$TB/nodes.txt"; }
A1=$(addr node-1) A2=$(addr node-2) A3=$(addr node-3)
export A1 A2 A3

# The PKI as kubeadm's certs phase makes it (RSA 2048, CA 10 years); the CAs
# are shared (kubeadm join --control-plane copies them), the leaves each
# node's own.
pki_nodes() {
	pki_leaf admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
	for n in 1 2 3; do
		a=$(eval echo "\$A$n")
		mkdir -p "node-$n/etcd"
		cp ca.crt ca.key "node-$n/"
		cp etcd/ca.crt etcd/ca.key "node-$n/etcd/"
		san="DNS:node-$n,DNS:localhost,IP:$a,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
		pki_leaf "node-$n/etcd/server" etcd/ca "/CN=node-$n" serverAuth,clientAuth "$san"
		pki_leaf "node-$n/etcd/peer" etcd/ca "/CN=node-$n" serverAuth,clientAuth "$san"
		pki_leaf "node-$n/etcd/healthcheck-client" etcd/ca "/CN=kube-etcd-healthcheck-client" clientAuth
		pki_leaf "node-$n/apiserver-etcd-client" etcd/ca "/CN=kube-apiserver-etcd-client" clientAuth
		pki_leaf "node-$n/apiserver" ca "/CN=kube-apiserver" serverAuth "DNS:node-$n,DNS:kubernetes,IP:$a,IP:127.0.0.1"
		pki_leaf "node-$n/kubelet" ca "/O=system:nodes/CN=system:node:node-$n" clientAuth
	done
}
kubeadm_pki "$TEST_DIR/pki" pki_nodes

# etcd.yaml and kube-apiserver.yaml of node N as kubeadm writes them
# (phases/etcd/local.go, phases/controlplane/manifests.go: the flags, the
# probes, hostPath volumes), the members of a three-node stacked cluster.
manifests() { # manifests N DIR
	python3 - "$1" "$2" "$A1" "$A2" "$A3" <<-'EOF'
		import json, sys
		n, d, addrs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
		a, name, k = addrs[n - 1], "node-%d" % n, "/etc/kubernetes/pki"
		def probe(port, path, scheme, host="127.0.0.1"):
		    p = {"failureThreshold": 8, "httpGet": {"host": host, "path": path, "port": port, "scheme": scheme},
		         "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 15}
		    return p, dict(p, failureThreshold=24)
		def pod(cname, image, cmd, vols, pr):
		    return {"apiVersion": "v1", "kind": "Pod",
		            "metadata": {"labels": {"component": cname, "tier": "control-plane"}, "name": cname, "namespace": "kube-system"},
		            "spec": {"hostNetwork": True, "priorityClassName": "system-node-critical",
		                     "containers": [{"name": cname, "image": image, "command": cmd, "livenessProbe": pr[0], "startupProbe": pr[1],
		                                     "volumeMounts": [{"mountPath": p, "name": v} for v, p in vols]}],
		                     "volumes": [{"name": v, "hostPath": {"path": p, "type": "DirectoryOrCreate"}} for v, p in vols]}}
		etcd = ["etcd", "--advertise-client-urls=https://%s:2379" % a, "--cert-file=%s/etcd/server.crt" % k,
		        "--client-cert-auth=true", "--data-dir=/var/lib/etcd", "--experimental-initial-corrupt-check=true",
		        "--experimental-watch-progress-notify-interval=5s", "--initial-advertise-peer-urls=https://%s:2380" % a,
		        "--initial-cluster=" + ",".join("node-%d=https://%s:2380" % (i + 1, x) for i, x in enumerate(addrs)),
		        "--initial-cluster-state=new", "--key-file=%s/etcd/server.key" % k,
		        "--listen-client-urls=https://127.0.0.1:2379,https://%s:2379" % a, "--listen-metrics-urls=http://127.0.0.1:2381",
		        "--listen-peer-urls=https://%s:2380" % a, "--name=" + name, "--peer-cert-file=%s/etcd/peer.crt" % k,
		        "--peer-client-cert-auth=true", "--peer-key-file=%s/etcd/peer.key" % k,
		        "--peer-trusted-ca-file=%s/etcd/ca.crt" % k, "--snapshot-count=10000", "--trusted-ca-file=%s/etcd/ca.crt" % k]
		if n == 3:
		    # as kubeadm 1.34+ writes it for an etcd 3.6 image (kubernetes#132838)
		    etcd[etcd.index("--experimental-initial-corrupt-check=true")] = "--feature-gates=InitialCorruptCheck=true"
		    etcd[etcd.index("--experimental-watch-progress-notify-interval=5s")] = "--watch-progress-notify-interval=5s"
		json.dump(pod("etcd", "registry.k8s.io/etcd:3.5.15-0", etcd, [("etcd-certs", k + "/etcd"), ("etcd-data", "/var/lib/etcd")],
		              probe(2381, "/health?exclude=NOSPACE&serializable=true", "HTTP")), open(d + "/etcd.yaml", "w"), indent=1)
		if n < 3:
		    api = ["kube-apiserver", "--advertise-address=" + a, "--client-ca-file=%s/ca.crt" % k,
		           "--etcd-cafile=%s/etcd/ca.crt" % k, "--etcd-certfile=%s/apiserver-etcd-client.crt" % k,
		           "--etcd-keyfile=%s/apiserver-etcd-client.key" % k, "--etcd-servers=https://127.0.0.1:2379",
		           "--secure-port=6443", "--tls-cert-file=%s/apiserver.crt" % k, "--tls-private-key-file=%s/apiserver.key" % k]
		    json.dump(pod("kube-apiserver", "registry.k8s.io/kube-apiserver:v1.30.4", api, [("k8s-certs", k)],
		                  probe(6443, "/livez", "HTTPS", a)), open(d + "/kube-apiserver.yaml", "w"), indent=1)
	EOF
}

T0=$(date +%s)
for n in 1 2 3; do
	mkdir -p "$TEST_DIR/node-$n/manifests"
	manifests "$n" "$TEST_DIR/node-$n/manifests"
	# the node's kubelet talks to node-1's API server (node-2's own, to show
	# the two share one state); no API server on node-3
	srv=https://$A1:6443
	[ "$n" != 2 ] || srv=https://$A2:6443
	cat >"$TEST_DIR/node-$n/kubelet.conf" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- cluster:
		    certificate-authority: /etc/kubernetes/pki/ca.crt
		    server: $srv
		  name: kubernetes
		contexts:
		- context:
		    cluster: kubernetes
		    user: system:node:node-$n
		  name: default
		current-context: default
		users:
		- name: system:node:node-$n
		  user:
		    client-certificate: /etc/kubernetes/pki/kubelet.crt
		    client-key: /etc/kubernetes/pki/kubelet.key
	EOF
	printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubernetes/manifests\nfailSwapOn: false\n' \
		>"$TEST_DIR/node-$n/config.yaml"
	for b in etcd etcdctl; do
		x "node-$n" sh -c "cat >/usr/local/bin/$b && chmod 0755 /usr/local/bin/$b" <"$ETCD/bin/$b"
	done
	x "node-$n" sh -c 'cat >/usr/bin/kubelet && chmod 0755 /usr/bin/kubelet' <"$TEST_DIR/kubelet"
	x "node-$n" sh -c 'mkdir -p /usr/lib/fake-kubernetes/images && cat >/usr/lib/fake-kubernetes/images/kube-apiserver' \
		<"$TEST_DIR/kube-apiserver"
	tar -C "$TEST_DIR/pki/node-$n" -cf - . | x "node-$n" sh -c 'mkdir -p /etc/kubernetes/pki && tar -C /etc/kubernetes/pki -xf -'
	tar -C "$TEST_DIR/node-$n" -cf - manifests kubelet.conf config.yaml |
		x "node-$n" sh -c 'tar -C /etc/kubernetes -xf - && mkdir -p /var/lib/kubelet && mv /etc/kubernetes/config.yaml /var/lib/kubelet/'
done
for n in 1 2 3; do
	x "node-$n" systemd-run --unit=kubelet --quiet /usr/bin/kubelet --config=/var/lib/kubelet/config.yaml \
		--kubeconfig=/etc/kubernetes/kubelet.conf --hostname-override="node-$n" --node-ip="$(addr "node-$n")"
done

C=$TEST_DIR/pki
# api N METHOD PATH [BODY]: the API of node-N as kubernetes-admin; prints
# the body, then the HTTP status on a line of its own
api() {
	_n=$1 _m=$2 _p=$3
	shift 3
	_ct=application/json
	[ "$_m" != PATCH ] || _ct=application/merge-patch+json
	curl -sS -m 30 --cacert "$C/ca.crt" --cert "$C/admin.crt" --key "$C/admin.key" -X "$_m" \
		-H "Content-Type: $_ct" ${1:+--data "$1"} -w '\n%{http_code}\n' "https://$(eval echo "\$A$_n"):6443$_p"
}
# ec N ARGS...: etcdctl on node-N against its own member
ec() {
	_n=$1
	shift
	x "node-$_n" env ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt \
		--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key "$@"
}
export C
# until_ok SECONDS CMD...: CMD until it succeeds
until_ok() {
	_t=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$_t" ] || return 1
		sleep 0.5
	done
}
# mirrors_ready: the three etcd mirror pods Ready (the kubelets of all
# three nodes post them, through node-1's and node-2's API servers)
mirrors_ready() {
	api 1 GET /api/v1/namespaces/kube-system/pods >"$TEST_DIR/mirrors"
	[ "$(grep -o "\"etcd-node-[123]\"" "$TEST_DIR/mirrors" | sort -u | wc -l)" = 3 ] &&
		python3 -c "import json,sys
items = json.loads(open(sys.argv[1]).read().rsplit(chr(10), 2)[0])[\"items\"]
ok = [p for p in items if p[\"metadata\"][\"name\"].startswith(\"etcd-\") and
      {\"type\": \"Ready\", \"status\": \"True\"}.items() <= next(c for c in p[\"status\"][\"conditions\"] if c[\"type\"] == \"Ready\").items()]
sys.exit(len(ok) != 3)" "$TEST_DIR/mirrors"
}
no_etcd() { ! x "node-$1" pgrep -x etcd; }
ready_via() { api "$1" GET /readyz | tail -n 1 | grep -qx 200; }
if ! until_ok 90 ready_via 1 || ! until_ok 30 ready_via 2; then
	for n in 1 2 3; do
		echo "# node-$n:"
		x "node-$n" sh -c 'journalctl --no-pager -u kubelet | tail -n 15; tail -n 15 /var/log/pods/*/*/*.log' 2>&1 | sed 's/^/#   /'
	done
	echo "# the API servers did not become ready"
	exit 1
fi
echo "# etcd $SUITE ($(x node-1 etcd --version | head -n 1)) x3 and two API servers ready after $(($(date +%s) - T0)) s"

test_case "the kubelet runs the etcd static pod as the node's real etcd, started once /health on 2381 answers" '
	for n in 1 2 3; do
		x node-$n pgrep -a -x etcd >cmdline
		cat cmdline
		expect_eq 1 "$(wc -l <cmdline)" "etcd processes on node-$n"
		expect_grep "^[0-9]* /usr/local/bin/etcd --advertise-client-urls=https://[0-9.]*:2379 .*--experimental-initial-corrupt-check=true .*--name=node-$n " cmdline
		x node-$n systemctl show -p ControlGroup "$(x node-$n systemctl list-units --plain --no-legend "fake-ctr-kube-system-etcd-node-$n-etcd-*" | cut -d " " -f 1)" >cg
		expect_grep "^ControlGroup=/kubepods.slice/fake-ctr-kube-system-etcd-node-$n-etcd-0.service" cg
	done
	# node-3'"'"'s manifest is in etcd 3.6'"'"'s words: translated for 3.4/3.5
	x node-3 grep -c -e "--feature-gates=InitialCorruptCheck=true" -e "--watch-progress-notify-interval=5s" /etc/kubernetes/manifests/etcd.yaml >n36
	expect_eq 2 "$(cat n36)" "etcd 3.6 flags in node-3'"'"'s manifest"
	expect_grep " --experimental-watch-progress-notify-interval=5s " cmdline
	expect_no_grep "feature-gates" cmdline
	ec 1 member list >members
	cat members
	expect_eq 3 "$(grep -c ", started, node-[123], https://" members)" "started members"
	# the mirror pods (posted through the shared state) say Ready
	until_ok 60 mirrors_ready
	api 2 GET /api/v1/namespaces/kube-system/pods/etcd-node-3 >p3
	python3 -c "import json,sys; p=json.loads(open(sys.argv[1]).read().rsplit(chr(10),2)[0]); print([c[\"type\"]+\"=\"+c[\"status\"] for c in p[\"status\"][\"conditions\"]])" p3 >conds
	cat conds
	expect_grep "Ready=True" conds
'

test_case "two API servers on two nodes: one state in etcd (/registry keys, resourceVersion = mod_revision)" '
	api 1 POST /api/v1/namespaces/default/configmaps "{\"metadata\":{\"name\":\"lab\"},\"data\":{\"a\":\"1\"}}" >c1
	expect_eq 201 "$(tail -n 1 c1)" "create through node-1"
	api 2 GET /api/v1/namespaces/default/configmaps/lab >g2
	cat g2
	expect_eq 200 "$(tail -n 1 g2)" "get through node-2"
	expect_grep "\"a\": \"1\"" g2
	rv=$(sed -n "s/.*\"resourceVersion\": \"\([0-9]*\)\".*/\1/p" g2)
	ec 3 get /registry/configmaps/default/lab -w json >kv
	expect_grep "\"mod_revision\":$rv[,}]" kv
	ec 2 get /registry --prefix --keys-only >keys
	expect_grep "^/registry/namespaces/kube-system\$" keys
	expect_grep "^/registry/minions/node-1\$" keys
	expect_grep "^/registry/services/specs/default/kubernetes\$" keys
'

test_case "concurrent merge patches through both API servers: every one lands" '
	for i in 1 2 3 4 5 6 7 8 9 10; do
		api $((i % 2 + 1)) PATCH /api/v1/namespaces/default/configmaps/lab "{\"data\":{\"k$i\":\"v\"}}" >p.$i &
	done
	wait
	for i in 1 2 3 4 5 6 7 8 9 10; do expect_eq 200 "$(tail -n 1 p.$i)" "patch $i"; done
	api 1 GET /api/v1/namespaces/default/configmaps/lab >g
	expect_eq 11 "$(grep -o "\"k[0-9]*\": \"v\"\|\"a\": \"1\"" g | wc -l)" "keys of the ConfigMap"
'

test_case "etcd.yaml moved out and back (the restart of renew-certs): the kubelet stops and starts etcd while its API server answers 500" '
	x node-1 mv /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/etcd.yaml.held
	until_ok 30 no_etcd 1
	api 1 GET /api/v1/namespaces/default/configmaps/lab >down
	cat down
	expect_eq 500 "$(tail -n 1 down)" "get through node-1 while its etcd is stopped"
	sleep 3 # kubelet ticks with its API answering 500
	x node-1 mv /etc/kubernetes/etcd.yaml.held /etc/kubernetes/manifests/etcd.yaml
	until_ok 60 x node-1 pgrep -x etcd
	until_ok 30 ec 1 endpoint health
	until_ok 30 ready_via 1
	api 1 GET /api/v1/namespaces/default/configmaps/lab >up
	expect_eq 200 "$(tail -n 1 up)" "get through node-1 with its etcd back"
'

test_case "node-3 killed: etcd keeps quorum with two of three, writes through both API servers work" '
	"$TESTBED" kill-node "$TB" node-3 --silent
	t0=$(date +%s)
	# when node-3 led, the two elect a new leader first: a write meanwhile
	# is refused with etcd'"'"'s "leader changed" (500, as the real API server
	# answers; clientv3 does not retry a write), as a client sees it
	i=0
	while api 1 POST /api/v1/namespaces/default/configmaps "{\"metadata\":{\"name\":\"two-of-three\"}}" >c &&
		[ "$(tail -n 1 c)" = 500 ] && grep -q "\"message\": \"etcdserver: leader changed\"" c && [ $i -lt 20 ]; do
		echo "# during the election: $(head -n 1 c)"
		i=$((i + 1))
		sleep 1
	done
	cat c
	expect_eq 201 "$(tail -n 1 c)" "create through node-1"
	api 2 PATCH /api/v1/namespaces/default/configmaps/two-of-three "{\"data\":{\"b\":\"2\"}}" >p
	expect_eq 200 "$(tail -n 1 p)" "patch through node-2"
	api 1 GET /api/v1/namespaces/default/configmaps/two-of-three >g
	expect_grep "\"b\": \"2\"" g
	echo "# writes with 2 of 3 members: $(($(date +%s) - t0)) s"
	api 2 GET "/readyz?verbose" >r
	expect_grep "^\[+\]etcd ok" r
'

test_case "node-2 killed too: writes refused as the real API server refuses them (500, etcd timed out); /readyz: etcd failed" '
	"$TESTBED" kill-node "$TB" node-2 --silent
	t0=$(date +%s)
	i=0
	while api 1 POST /api/v1/namespaces/default/configmaps "{\"metadata\":{\"name\":\"one-of-three\"}}" >c &&
		grep -q "\"message\": \"etcdserver: leader changed\"" c && [ $i -lt 3 ]; do
		i=$((i + 1))
		t0=$(date +%s)
	done
	t=$(($(date +%s) - t0))
	cat c
	expect_eq 500 "$(tail -n 1 c)" "create through node-1"
	# etcd'"'"'s ErrTimeout, or its variants "..., possibly due to previous leader failure"
	expect_grep "\"message\": \"etcdserver: request timed out" c
	expect_no_grep "\"reason\"" c
	echo "# refused after $t s"
	[ "$t" -ge 5 ]
	api 1 GET "/readyz?verbose" >r
	cat r
	expect_eq 500 "$(tail -n 1 r)" "/readyz"
	expect_grep "^\[-\]etcd failed: reason withheld" r
	expect_grep "^readyz check failed" r
	# the member on node-1 holds what was written (a serializable read)
	ec 1 get /registry/configmaps/default/two-of-three --consistency=s --print-value-only >v
	expect_grep "\"b\": \"2\"" v
'

test_done
