#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 135 s in CI (beside another; tests/run.sh starts the longest first)
# t0470-registries: image pulls of a real cluster run through the registry
# access the inventory gives (cluster.http_proxy, cluster.registries), on
# three nspawn nodes whose kubelet stand-in has every image pulled by the
# node's REAL containerd (knob real-pulls, tests/fakes/README.md "Image
# pulls") from REAL registries (tests/registry/README.md):
#
#  1. Behind the proxy only: the cluster's registry (Debian's
#     docker-registry, every image the cluster runs: kubeadm's of the
#     version, Flannel's) listens on this machine's loopback, which no node
#     can reach, under a name only squid's hosts file knows; the inventory
#     routes registry.k8s.io and ghcr.io to it (mirror only, upstream:
#     false) and sets http_proxy.  `up` goes green, squid's access log has
#     each node's requests for its images, and the registry saw no client
#     but squid.
#  2. Mirror, then upstream: the inventory, without the proxy now, gives
#     docker.io a pull-through mirror and, as its upstream, a second
#     registry; `up` removes the proxy drop-in and restarts containerd; a
#     pod's image comes from the mirror; with the mirror stopped, the next
#     pod's image comes from the upstream.  The registries' logs (client:
#     the node, user agent: containerd) and the kubelet's journal say which.
# Before them, on the fresh nodes (issue 32's "offline" must-show):
#  0. Offline: `provision fetch --images` on this machine, the registry
#     (every image routed to it, upstream: false) reachable from here, puts
#     every image of the list into the bundle (this machine's cache), and
#     `fetch --images --list` lists each "in the bundle"; then no registry
#     runs at all (that one stopped, the testbed's stopped, squid not yet
#     started: nothing answers at the one address the nodes' containerd is
#     given) and `up` of the 3 fresh nodes is green, each node importing
#     its share from the bundle; no node pulled (no "pulled" in the pull
#     steps, no "Pulling image" in any kubelet's journal); a second `up`
#     imports nothing.  The images are then removed from every node and the
#     bundle from the cache, so that cases 1 and 2 pull again.
# The pull phase (roles images-init, images-addons) pulls the images the
# cluster runs before kubeadm and says which registry answered ("pulled REF
# from HOST"); the pods' images outside it (phase 2) are the kubelet
# stand-in's, evidenced by its "Successfully pulled image".
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="offline-fetch offline-up offline-again proxy-up proxy-log registry-only-squid mirror-up mirror-pull upstream-pull check"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
# skip_rest REASON: the cases after the offline ones skipped (those ran)
skip_rest() {
	CASES=${CASES#offline-fetch offline-up offline-again }
	skip_all_cases "$1"
}
for c in docker-registry squid curl; do
	command -v $c >/dev/null 2>&1 || skip_all_cases "needs $c (make deps)"
done
K8S=1.30.4
cluster_testbed 3 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
# shellcheck source=tests/registry/lib.sh
. "$SRC_ROOT/tests/registry/lib.sh"
tb() { "$TESTBED" exec "$TB" "$@"; }
# environ NODE: the environment of NODE's running containerd, one variable a line
environ() {
	# shellcheck disable=SC2016 # expanded on the node
	tb "$1" sh -c 'tr "\0" "\n" </proc/$(systemctl show -p MainPID --value containerd)/environ'
}
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
exec 3>&1
note() { awk -v l="$1" '{ print "# " l ": " $0 }' "$2" >&3; }

# The images the cluster runs, from where they are defined (never typed
# here): kubeadm's of the version (etcd, CoreDNS and pause from the row of
# roles/kubernetes.yaml, which the kubeadm stand-in deploys too),
# Flannel's of its manifest.
{
	for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do echo "registry.k8s.io/$c:v$K8S"; done
	sed -n '/^  "1.30":/,/^  "/s/^    \(pause\|etcd\|coredns\)_image: *\(.*\)$/\2/p' "$SRC_ROOT/roles/kubernetes.yaml"
	sed -n 's/^ *image: \(ghcr.io\/[^ ]*\)$/\1/p' "$SRC_ROOT/roles/flannel/templates/kube-flannel.yml.tmpl" | sort -u
	# and what the pull phase pulls (provision fetch --images --list, cluster-testbed.sh)
	cut -f 1 "$TEST_DIR/images.list" | grep -E "^(registry.k8s.io|ghcr.io)/"
} | sort -u >"$TEST_DIR/images"
set --
while read -r ref; do
	# the registry holds each under its path without the registry's host
	set -- "$@" "${ref#*/}=64k,index"
done <"$TEST_DIR/images"
ROOT=$(registry_images "$@" "provision-test/app:1=256k" "provision-test/app:2=256k") ||
	skip_all_cases "the registry's images did not build"
H=$TESTBED_HOST_ADDR
NAME=registry.provision.test
for n in $TESTBED_NODES; do knob "$n" real-pulls; done
# shellcheck disable=SC2034 # used in the test bodies
UP="$PROVISION up --state $STATE --roles $ROLES --no-tui -i"

# Offline: every registry of the list routed to one registry on the
# testbed bridge (upstream: false: containerd is given no other host),
# which runs while fetch does and is stopped before up.
cut -f 1 "$TEST_DIR/images.list" | sed 's|/.*||' | sort -u | awk -v url="http://$H:15473" '
	BEGIN { print "  registries:" }
	{ printf "    %s:\n      mirrors: [{url: \"%s\"}]\n      upstream: false\n", $1, url }
' >"$TEST_DIR/offline-registries.yaml"
sed "/^  kubernetes_version: /r $TEST_DIR/offline-registries.yaml" "$INV_BARE" >"$TEST_DIR/offline.yaml"
registry_start offline "$H:15473" --root "$ROOT" || skip_all_cases "the offline case's registry did not start"
# shellcheck disable=SC2034 # used in the test bodies
FETCH="$PROVISION fetch -i $TEST_DIR/offline.yaml --roles $ROLES --state $STATE --images"

test_case "offline-fetch: fetch --images fills the bundle from the registry; --list says every image is in it" '
	$FETCH >fetch.out 2>&1 || { run_tail fetch.out; false; }
	expect_grep "	fetched from [a-z:/]*$H:15473	" fetch.out
	$FETCH --list >"$TEST_DIR/bundle.list" 2>list.err || { cat list.err; false; }
	test -s "$TEST_DIR/bundle.list"
	expect_no_grep "not in the bundle" "$TEST_DIR/bundle.list"
	for ref in $(grep -E "/(pause|kube-proxy|flannel-io/flannel):" "$TEST_DIR/images"); do
		grep -q "^$ref	linux/amd64	.*node-1,node-2,node-3.*	in the bundle\$" "$TEST_DIR/bundle.list" ||
			{ echo "$ref: not in the bundle for every node"; cat "$TEST_DIR/bundle.list"; exit 1; }
	done
	expect_grep "^registry.k8s.io/kube-apiserver:v$K8S	linux/amd64	node-1	in the bundle\$" "$TEST_DIR/bundle.list"
'
[ -f "$TEST_DIR/bundle.list" ] && note "bundle (fetch --images --list)" "$TEST_DIR/bundle.list"

test_case "offline-up: no registry running, up of the 3 fresh nodes is green, each importing its share from the bundle" '
	registry_stop offline
	registry_stop lab
	for u in "http://$H:15473" "$REGISTRY"; do
		expect_eq 000 "$(curl -s -o /dev/null -w "%{http_code}" -m 5 "$u/v2/")" "HTTP status of $u"
	done
	# fresh nodes: no image in them (no containerd yet, or an empty one)
	for n in $TESTBED_NODES; do
		expect_eq "" "$(tb $n sh -c "ctr -n k8s.io images ls -q 2>/dev/null")" "$n: images before up"
	done
	t0=$(date +%s)
	$UP "$TEST_DIR/offline.yaml" >off1.out 2>&1 || { run_tail off1.out; false; }
	echo "$(($(date +%s) - t0)) s" >"$TEST_DIR/off1.seconds"
	: >"$TEST_DIR/import.lines"
	for n in $TESTBED_NODES; do
		expect_grep "^$n  *done  *[0-9]* changed .* 0 failed" off1.out
		grep "^\[$n\] images-init › import … changed .*imported [0-9]* images\{0,1\} (.*) from this machine.s bundle" off1.out >>"$TEST_DIR/import.lines" ||
			{ echo "$n: no import"; grep "^\[$n\] images-" off1.out; exit 1; }
		$PROVISION logs -i "$TEST_DIR/offline.yaml" --state $STATE $n >logs 2>&1
		expect_no_grep "pulled [^ ]* from " logs
		tb $n journalctl --no-pager -u kubelet >journal
		test -s journal
		expect_no_grep "Pulling image" journal
		tb $n ctr -n k8s.io images ls -q >images.$n
		expect_grep "^registry.k8s.io/kube-proxy:v$K8S\$" images.$n
	done
	grep -c . images.node-1 images.node-2 images.node-3 >"$TEST_DIR/node.images"
'
[ -f "$TEST_DIR/off1.seconds" ] && note "offline up" "$TEST_DIR/off1.seconds"
[ -f "$TEST_DIR/import.lines" ] && note "import" "$TEST_DIR/import.lines"
[ -f "$TEST_DIR/node.images" ] && note "images in each node's containerd" "$TEST_DIR/node.images"

test_case "offline-again: a second up, still without a registry, imports nothing and changes nothing" '
	$UP "$TEST_DIR/offline.yaml" >off2.out 2>&1 || { run_tail off2.out; false; }
	expect_no_grep "imported [0-9]" off2.out
	for n in $TESTBED_NODES; do expect_grep "^$n  *done  *0 changed .* 0 failed" off2.out; done
	grep -E "^node-[0-9]  *done" off2.out >"$TEST_DIR/off2.lines"
'
[ -f "$TEST_DIR/off2.lines" ] && note "second up" "$TEST_DIR/off2.lines"

# The cases below pull again: no image left in the nodes, no bundle here.
for n in $TESTBED_NODES; do
	# shellcheck disable=SC2016 # expanded on the node
	tb "$n" sh -c 'ctr -n k8s.io images rm --sync $(ctr -n k8s.io images ls -q) >/dev/null 2>&1
		ctr -n k8s.io content ls -q | xargs -r ctr -n k8s.io content rm >/dev/null 2>&1; :'
done
rm -rf "$CACHE/images"

echo "127.0.0.1 $NAME" >"$TEST_DIR/squid-hosts"
registry_start behind 127.0.0.1:15470 --root "$ROOT" || skip_rest "the registry did not start"
proxy_start "$H:3128" --hosts "$TEST_DIR/squid-hosts" || skip_rest "squid did not start"

# the proxy phase's inventory
sed "s|^  kubernetes_version: .*|&\\
  http_proxy: http://$H:3128\\
  registries:\\
    registry.k8s.io: {mirrors: [{url: \"http://$NAME:15470\"}], upstream: false}\\
    ghcr.io: {mirrors: [{url: \"http://$NAME:15470\"}], upstream: false}|" "$INV_BARE" >"$TEST_DIR/proxy.yaml"

test_case "proxy-up: behind the proxy only, up of 3 nodes is green (every image pulled by the nodes' containerd)" '
	t0=$(date +%s)
	$UP "$TEST_DIR/proxy.yaml" >up1.out 2>&1 || { run_tail up1.out; false; }
	echo "$(($(date +%s) - t0)) s" >"$TEST_DIR/up1.seconds"
	for n in $TESTBED_NODES; do
		expect_grep "^$n  *done  *[0-9]* changed .* 0 failed" up1.out
		tb $n cat /etc/systemd/system/containerd.service.d/http-proxy.conf >dropin
		expect_grep "HTTP_PROXY=http://$H:3128" dropin
		environ $n >environ
		expect_grep "^HTTP_PROXY=http://$H:3128\$" environ
		tb $n cat /etc/containerd/certs.d/registry.k8s.io/hosts.toml >hosts.toml
		expect_grep "^server = \"http://$NAME:15470\"" hosts.toml
		# the pull phase says which registry answered
		$PROVISION logs -i "$TEST_DIR/proxy.yaml" --state $STATE $n >"$TEST_DIR/$n.logs1" 2>&1
		expect_grep "pulled registry.k8s.io/kube-proxy:v$K8S from $NAME:15470 ([0-9]* bytes)" "$TEST_DIR/$n.logs1"
	done
'
[ -f "$TEST_DIR/up1.seconds" ] && note "up behind the proxy" "$TEST_DIR/up1.seconds"

test_case "proxy-log: squid has each node's requests for the images it runs" '
	log=$(proxy_log)
	for n in $TESTBED_NODES; do
		a=$(awk -v n=$n "\$1 == n { print \$2 }" "$TB/nodes.txt")
		# every node runs the sandbox, kube-proxy and Flannel
		for ref in $(grep -E "/(pause|kube-proxy|flannel-io/flannel):" "$TEST_DIR/images"); do
			path=${ref#*/}
			grep -E " $a TCP_[A-Z_]*/200 .* (HEAD|GET) http://$NAME:15470/v2/${path%:*}/manifests/${path##*:}" "$log" >>"$TEST_DIR/proxy.hits" ||
				{ echo "$n ($a): no request for $ref in the log of squid"; exit 1; }
		done
	done
	a1=$(awk "\$1 == \"node-1\" { print \$2 }" "$TB/nodes.txt")
	for c in kube-apiserver etcd; do
		grep -E " $a1 TCP_[A-Z_]*/200 .* (HEAD|GET) http://$NAME:15470/v2/$c/manifests/" "$log" >/dev/null
	done
'
[ -f "$TEST_DIR/proxy.hits" ] && note "squid access log" "$TEST_DIR/proxy.hits"

test_case "registry-only-squid: no client but squid reached the registry" '
	grep -E "\"(GET|HEAD) /v2/" "$(registry_log behind)" >access
	test -s access
	awk "{ print \$1 }" access | sort -u >clients
	expect_eq 127.0.0.1 "$(cat clients)" "the clients of the registry"
	grep -c . access >"$TEST_DIR/registry.count"
'
[ -f "$TEST_DIR/registry.count" ] && note "registry requests, all from squid (127.0.0.1)" "$TEST_DIR/registry.count"

# Phase 2: docker.io through a pull-through mirror, a second registry as its upstream, no proxy.
registry_start upstream "$H:15471" --root "$ROOT" || skip_rest "the upstream registry did not start"
registry_start mirror "$H:15472" --mirror-of "http://$H:15471" || skip_rest "the mirror did not start"
sed "s|^  kubernetes_version: .*|&\\
  registries:\\
    registry.k8s.io: {mirrors: [{url: \"http://$NAME:15470\"}], upstream: false}\\
    ghcr.io: {mirrors: [{url: \"http://$NAME:15470\"}], upstream: false}\\
    docker.io:\\
      mirrors: [{url: \"http://$H:15472\"}]\\
      server: http://$H:15471|" "$INV_BARE" >"$TEST_DIR/mirror.yaml"

# pod NAME IMAGE: a pod on node-2 (nodeName: no scheduler), Running within 60 s.
pod() {
	cat >pod.yaml <<-EOF
		apiVersion: v1
		kind: Pod
		metadata: {name: $1, namespace: default}
		spec:
		  nodeName: node-2
		  containers: [{name: app, image: $2}]
	EOF
	tb node-1 sh -c "cat >/tmp/$1.yaml" <pod.yaml
	kc apply -f "/tmp/$1.yaml" >/dev/null
	i=0
	until [ "$(kc get pod "$1" -o "jsonpath={.status.phase}")" = Running ]; do
		i=$((i + 1))
		[ $i -lt 60 ] || { kc get pod "$1" -o yaml | tail -n 20; return 1; }
		sleep 1
	done
}

test_case "mirror-up: up with the mirror and without the proxy: the drop-in gone, containerd restarted without it" '
	$UP "$TEST_DIR/mirror.yaml" >up2.out 2>&1 || { run_tail up2.out; false; }
	expect_grep "\\[node-2\\] containerd › 15-registries … changed" up2.out
	for n in $TESTBED_NODES; do
		expect_status 1 tb $n test -e /etc/systemd/system/containerd.service.d/http-proxy.conf
		environ $n >environ
		expect_no_grep "^HTTP_PROXY=" environ
		tb $n cat /etc/containerd/certs.d/docker.io/hosts.toml >hosts.toml
		expect_grep "^server = \"http://$H:15471\"" hosts.toml
		expect_grep "^\\[host.\"http://$H:15472\"\\]" hosts.toml
	done
'

test_case "mirror-pull: with the mirror up, node-2 pulls docker.io/provision-test/app:1 from the mirror" '
	pod app1 provision-test/app:1
	a2=$(awk "\$1 == \"node-2\" { print \$2 }" "$TB/nodes.txt")
	grep -E "^$a2 .*\"(GET|HEAD) /v2/provision-test/app/manifests/1\?ns=docker.io HTTP[^\"]*\" 200 .*\"containerd/" "$(registry_log mirror)" >"$TEST_DIR/mirror.hits"
	expect_no_grep "^$a2 .*/v2/provision-test/app/manifests/1" "$(registry_log upstream)"
	tb node-2 journalctl --no-pager -u kubelet >journal
	grep "Successfully pulled image\" image=\"provision-test/app:1\"" journal >"$TEST_DIR/kubelet1.hits" ||
		{ echo "node-2: no Successfully pulled image for provision-test/app:1; its pull lines:"; grep -i "pull" journal | tail -n 5; false; }
'
[ -f "$TEST_DIR/mirror.hits" ] && note "mirror log" "$TEST_DIR/mirror.hits"
[ -f "$TEST_DIR/kubelet1.hits" ] && note "node-2 kubelet" "$TEST_DIR/kubelet1.hits"

test_case "upstream-pull: the mirror down, node-2 pulls docker.io/provision-test/app:2 from the upstream" '
	registry_stop mirror
	pod app2 provision-test/app:2
	a2=$(awk "\$1 == \"node-2\" { print \$2 }" "$TB/nodes.txt")
	grep -E "^$a2 .*\"(GET|HEAD) /v2/provision-test/app/manifests/2(\?ns=docker.io)? HTTP[^\"]*\" 200 .*\"containerd/" "$(registry_log upstream)" >"$TEST_DIR/upstream.hits"
	tb node-2 journalctl --no-pager -u kubelet >journal
	grep "Successfully pulled image\" image=\"provision-test/app:2\"" journal >"$TEST_DIR/kubelet2.hits" ||
		{ echo "node-2: no Successfully pulled image for provision-test/app:2; its pull lines:"; grep -i "pull" journal | tail -n 5; false; }
'
[ -f "$TEST_DIR/upstream.hits" ] && note "upstream log" "$TEST_DIR/upstream.hits"
[ -f "$TEST_DIR/kubelet2.hits" ] && note "node-2 kubelet" "$TEST_DIR/kubelet2.hits"

test_case "check: provision check passes; a hand-edited hosts.toml and a containerd without its proxy are reported" '
	expect_status 0 $PROVISION check --state $STATE --roles $ROLES --no-tui -i "$TEST_DIR/mirror.yaml" >check1.out 2>&1 ||
		{ tail -n 30 check1.out; false; }
	tb node-3 sh -c "echo \"# by hand\" >>/etc/containerd/certs.d/docker.io/hosts.toml"
	expect_status 1 $PROVISION check --state $STATE --roles $ROLES --no-tui -i "$TEST_DIR/mirror.yaml" >check2.out 2>&1
	expect_grep "docker.io/hosts.toml: not as the inventory says" check2.out
'
test_done
