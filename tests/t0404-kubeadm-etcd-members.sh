#!/bin/sh
# run.sh: beside others (tests/run.sh: no testbed; two network namespaces of its own, mostly waiting for etcd)
# run.sh: about 30 s in CI (26 s of cases here)
# t0404-kubeadm-etcd-members: the kubeadm stand-in's etcd membership
# (issue 36) against a REAL etcd: Debian's etcd-server of
# PROVISION_TESTBED_SUITE (bookworm 3.4 by default; trixie 3.5), fetched once
# by tests/testbed/etcd-debs.sh, nothing installed here.  Two network
# namespaces joined by a veth pair (198.19.254.1 and .2) stand for two
# control planes; no testbed, no nodes.
#
# The first runs etcd with the flags the stand-in's `kubeadm init` writes
# in its etcd manifest.  The second gets the shared CAs through the
# kubeadm-certs round trip (encrypted with a certificate key), makes its
# own certificates, and the stand-in's join code (etcd_join: member added
# as a learner through the first member's client URL with the
# healthcheck-client certificate, manifest written, learner promoted,
# every member's status answered) runs with the etcd command taken from
# the manifest it wrote (only --data-dir moved into the scratch folder):
# the real etcdctl then lists two started voting members and reads through
# the second what was written through the first.  Reset's removal
# (etcd_remove_self): the second member removed through the first,
# logged at --v=1; the last member left alone; an unreachable etcd is the
# real warning.  A join whose etcd cannot be reached fails with the
# phase's message.  About 30 s (etcd refuses to remove a member connected
# for less than 5 s: the removal is tried again, as kubeadm does).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-etcd.sh
. "$(dirname "$0")/lib-etcd.sh"

test_need_root
test_need_cmd python3 openssl ip apt-get dpkg-deb
etcd_debs
export ETCD

# two namespaces, one link (names unique to this run)
NSA=t0404a$$
NSB=t0404b$$
export NSA NSB
ip netns add "$NSA"
test_at_exit "ip netns del $NSA"
ip netns add "$NSB"
test_at_exit "ip netns del $NSB"
ip link add "v$NSA" netns "$NSA" type veth peer name "v$NSB" netns "$NSB"
ip -n "$NSA" addr add 198.19.254.1/24 dev "v$NSA"
ip -n "$NSB" addr add 198.19.254.2/24 dev "v$NSB"
for ns in "$NSA" "$NSB"; do
	ip -n "$ns" link set lo up
done
ip -n "$NSA" link set "v$NSA" up
ip -n "$NSB" link set "v$NSB" up
# every etcd this script starts, by its pid file
test_at_exit "for f in '$TEST_DIR'/*.pid; do [ -f \"\$f\" ] && kill \$(cat \"\$f\"); done; sleep 0.5"

"$SRC_ROOT/tests/fakes/kube-debs/build.sh" --source kubeadm 1.30.4 "$TEST_DIR/kubeadm.src"
sed 's/^if __name__ == "__main__":$/if False:/' "$TEST_DIR/kubeadm.src" >"$TEST_DIR/kubeadm.lib.py"
export TEST_DIR
# What the cases' python shares (beside tests/lib-kubeadm.py's in-memory
# API for the kubeadm-certs round trip): the two control planes' PKI
# folders a/ and b/, the manifests folder, the etcd endpoints the mirror
# pods would name, and the etcd started from the manifest the join writes
# (in $NSB).
cat >"$TEST_DIR/helpers.py" <<-'EOF'
	import contextlib
	import io
	T = os.environ["TEST_DIR"]
	A, B = T + "/a", T + "/b"
	MANIFESTS = T + "/manifests"
	ETCD_BIN = os.environ["ETCD"] + "/bin/etcd"


	def start_etcd(ns, cmd, name):
	    """etcd as the kubelet runs its static pod: the manifest's command,
	    only --data-dir moved into the scratch folder."""
	    argv = [ETCD_BIN] + ["--data-dir=%s/data-%s" % (T, name) if a.startswith("--data-dir=") else a for a in cmd[1:]]
	    log = open("%s/etcd-%s.log" % (T, name), "w")
	    p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdout=log, stderr=subprocess.STDOUT,
	                         stdin=subprocess.DEVNULL, start_new_session=True)
	    write_file("%s/etcd-%s.pid" % (T, name), "%d\n" % p.pid)


	def reset_view(eps):
	    """the etcd endpoints the etcd mirror pods' annotation names"""
	    global etcd_endpoints_from_pods, api_admin
	    etcd_endpoints_from_pods = lambda c: list(eps)
	    api_admin = lambda path=None: None


	def setup_first():
	    a = ClusterCfg({"controlPlaneEndpoint": "198.19.254.1:6443"}, "cp-1", "198.19.254.1", 6443)
	    a.cert_dir = A
	    with contextlib.redirect_stdout(io.StringIO()):
	        write_pki(a)
	    start_etcd(os.environ["NSA"], etcd_command("cp-1", "198.19.254.1", A), "cp-1")
	    ec = EtcdClient(["https://198.19.254.1:2379"], A)
	    deadline = now() + 30
	    while True:
	        try:
	            ec.members()
	            return
	        except EtcdError:
	            if now() > deadline:
	                raise
	            time.sleep(0.3)


	_write_etcd_manifest = write_etcd_manifest


	def write_etcd_manifest(cfg, initial_cluster=None):
	    _write_etcd_manifest(cfg, initial_cluster)
	    pod = yaml_load(read_file(MANIFESTS + "/etcd.yaml"))
	    start_etcd(os.environ["NSB"], pod["spec"]["containers"][0]["command"], cfg.node_name)


	def second(make=True):
	    b = ClusterCfg({"controlPlaneEndpoint": "198.19.254.1:6443"}, "cp-2", "198.19.254.2", 6443)
	    b.cert_dir = B
	    reset_view(["https://198.19.254.1:2379"])
	    if make:
	        key = new_certificate_key()
	        api = MemAPI()
	        with contextlib.redirect_stdout(io.StringIO()):
	            upload_certs(api, A, key)
	            download_certs(api, B, key)
	            write_pki(b)
	    return b
EOF
# kpy: python code on stdin with the stand-in kubeadm's functions and the
# helpers (tests/lib-kubeadm.py and the above), run in $NSA
kpy() {
	cat "$TEST_DIR/kubeadm.lib.py" "$SRC_ROOT/tests/lib-kubeadm.py" "$TEST_DIR/helpers.py" - >"$TEST_DIR/run.py"
	ip netns exec "$NSA" python3 "$TEST_DIR/run.py"
}
etcdctl() {
	ip netns exec "$NSA" "$ETCD/bin/etcdctl" --endpoints=https://198.19.254.1:2379 \
		--cacert="$TEST_DIR/a/etcd/ca.crt" --cert="$TEST_DIR/a/etcd/healthcheck-client.crt" \
		--key="$TEST_DIR/a/etcd/healthcheck-client.key" "$@"
}

test_case "two control planes: init's etcd flags run on $SUITE's etcd; the joining member is added as a learner, started from the manifest the stand-in wrote, promoted; etcdctl lists both, data replicated" '
	export ETCDCTL_API=3
	kpy <<-EOF >join.out 2>join.err || { cat join.out join.err; false; }
		setup_first()
		b = second()
		etcd_join(None, b)
		print("cluster", sorted((m.get("name"), m.get("isLearner", False)) for m in EtcdClient(["https://198.19.254.1:2379"], A).members()))
	EOF
	expect_grep "^\[etcd\] Announced new etcd member joining to the existing etcd cluster\$" join.out
	expect_grep "^\[etcd\] Creating static Pod manifest for \"etcd\"\$" join.out
	expect_grep "^\[etcd\] Waiting for the new etcd member to join the cluster. This can take up to 40s\$" join.out
	expect_grep "^cluster \[(.cp-1., False), (.cp-2., False)\]\$" join.out
	# the manifest of the joining member: existing cluster, both members
	expect_grep "^    - --initial-cluster-state=existing\$" manifests/etcd.yaml
	grep "^    - --initial-cluster=" manifests/etcd.yaml >ic
	expect_grep "cp-1=https://198.19.254.1:2380" ic
	expect_grep "cp-2=https://198.19.254.2:2380" ic
	etcdctl member list >members
	cat members
	expect_eq 2 "$(grep -c ", started, " members)" "started members"
	expect_no_grep ", true\$" members
	etcdctl put /registry/t0404 replicated >/dev/null
	ip netns exec "$NSB" "$ETCD/bin/etcdctl" --endpoints=https://198.19.254.2:2379 --cacert=b/etcd/ca.crt \
		--cert=b/etcd/healthcheck-client.crt --key=b/etcd/healthcheck-client.key \
		get --print-value-only --consistency=s /registry/t0404 >v
	expect_eq replicated "$(cat v)" "read through the second member"
'

test_case "reset of the second control plane removes its member through the first (logged at --v=1 only); the last member is left alone; an unreachable etcd is the real warning" '
	export ETCDCTL_API=3
	kpy <<-EOF >rm.out 2>rm.err || { cat rm.out rm.err; false; }
		reset_view(["https://198.19.254.1:2379", "https://198.19.254.2:2379"])
		etcd_remove_self("/nonexistent", "198.19.254.2", B, True)
	EOF
	cat rm.err
	expect_grep "^I[0-9]\{4\} [0-9:.]* *[0-9]* local.go:1\] \[etcd\] removing etcd member: https://198.19.254.2:2380, id: [0-9]*\$" rm.err
	expect_eq "" "$(cat rm.out)" "standard output"
	etcdctl member list >members
	expect_eq 1 "$(wc -l <members)" "members left"
	expect_grep ", cp-1, https://198.19.254.1:2380," members
	kpy <<-EOF >last.out 2>last.err || { cat last.out last.err; false; }
		reset_view(["https://198.19.254.1:2379"])
		etcd_remove_self("/nonexistent", "198.19.254.1", A, True)
		etcd_remove_self("/nonexistent", "198.19.254.1", A, False)
	EOF
	expect_eq 1 "$(grep -c "This is the only remaining etcd member in the etcd cluster, skip removing it" last.err)" "the last member, at --v=1 only"
	etcdctl member list >members
	expect_eq 1 "$(wc -l <members)" "the last member stays"
	kpy <<-EOF >down.out 2>down.err || { cat down.out down.err; false; }
		reset_view(["https://198.19.254.1:2390"])
		ETCD_RETRY_SECONDS = 1
		etcd_remove_self("/nonexistent", "198.19.254.1", A, False)
	EOF
	expect_grep "^W[0-9]\{4\} [0-9:.]* *[0-9]* removeetcdmember.go:1\] \[reset\] Failed to remove etcd member: error syncing endpoints with etcd: dial https://198.19.254.1:2390: .*, please manually remove this etcd member using etcdctl\$" down.err
'

test_case "a control plane whose etcd cannot be reached does not join: the phase fails with the reason, no manifest written" '
	rm -f manifests/etcd.yaml
	kpy <<-EOF >nojoin.out 2>&1 || { cat nojoin.out; false; }
		b = second(make=False)
		reset_view(["https://198.19.254.1:2390"])
		ETCD_RETRY_SECONDS = 1
		try:
		    etcd_join(None, b)
		    raise SystemExit("joined")
		except Fail as e:
		    print("FAIL", e)
	EOF
	expect_grep "^FAIL error execution phase control-plane-join/etcd: error creating local etcd static pod manifest file: error syncing endpoints with etcd: dial https://198.19.254.1:2390: " nojoin.out
	test ! -e manifests/etcd.yaml
'

test_done
