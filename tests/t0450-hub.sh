#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 785 s in CI (beside another; tests/run.sh starts the longest first)
# t0450-hub: JupyterHub on a lab-A-like testbed, and `provision add-node`
# of a GPU model the cluster did not have.
#
# Nodes (nspawn): node-1 control plane + NFS server, node-2 a GTX 1080 Ti,
# node-3 an RTX 3070 (tests/fakes/nvidia), node-4 an RTX 4080 that is not
# in the inventory for the first `up`.  The Kubernetes tools, helm and the
# charts are the stand-ins of tests/fakes; the hub is Debian's real
# jupyterhub, started by the fake kubelet for the chart's hub pod
# (tests/fakes/kube/chart_jupyterhub.py).
#
# Checked, from the nodes' and the cluster's real state:
#   - `up` (every phase) ends with every validation passing, hub-health
#     among them (libcurl through the NodePort);
#   - the hub's values on node-1: NodePort from the inventory, a real
#     authenticator with the admin users, the database not on NFS, the
#     memory-backed /dev/shm, the start timeout, and one profile per GPU
#     model of the testbed (nodeSelector nvidia.com/gpu.product, one
#     nvidia.com/gpu) plus CPU-only, limits at most 1.5x guarantees and
#     within the smallest node's allocatable;
#   - /hub/health answers 200 from this machine through the NodePort, and
#     a wrong password is refused (not the dummy authenticator);
#   - a second `up` changes nothing;
#   - `add-node node-4` touches only node-4 (node-2's and node-3's files
#     under /etc and /var/lib/provision unchanged, no new SSH session on
#     them) and the control plane, adds the RTX 4080 profile and upgrades
#     the release;
#   - no token, certificate key, hub secret or password in any file the
#     runs wrote (state folder, outputs, node logs collected);
#   - remove-node -K node-4 on a terminal (script(1)): its two runs (the
#     removal, then the hub's profiles) ask for the password once and log
#     in to node-1 once (issue 35; before: two prompts, two logins);
#   - after remove-node, `up` with node-3's RTX 3070 shared by 4
#     (gpu_sharing): the GPU Operator's time-slicing values, node-3's
#     nvidia.com/device-plugin.config label, 4 allocatable nvidia.com/gpu
#     there (1 on node-2), the hub's "shared by up to 4" profile in place of
#     the whole RTX 3070 one, and check's gpu-allocatable passing;
#   - ^C in plain output while helm waits for the hub (kept unready by the
#     fakes' slow-start knob): the first ^C says at once that the run stops
#     after jupyterhub › 30-install and what a second does; the second
#     cancels it (exit 130) and helm marks the release failed; the next `up`
#     recovers it and says so; a release left pending-upgrade by a helm
#     that was killed is rolled back to its last deployed revision by the
#     next `up`, which says so (issue 33);
#   - the hub's chart moved by `up` from z2jh 3.3.8 to 4.4.0 (issue 34):
#     a user who kept a file in the home claim of a notebook on 3.3.8
#     logs in on 4.4.0 (JupyterHub 5's allow rules), gets the same pod name,
#     the same claim (uid, NFS path) and, in the notebook, the file; a user
#     new on 4.4.0 gets KubeSpawner 6's names (slug_scheme escape);
#   - `provision reset` of the cluster after the hub: every node verified
#     clean, nothing left under /root/.kube, /etc/provision or
#     /var/lib/provision on any node, the NFS export's folders (users'
#     homes) untouched (issue 33).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up values health second-up add-node add-node-profile no-secrets remove-node gpu-sharing interrupt recover-failed recover-pending hub-home hub-upgrade reset"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
PORT=30123
# the notebook image its inventory sets (below) is in the testbed's registry
# too, and the hub and proxy images of z2jh 4.4.0 (the stand-in chart's; the
# registry's list is made for the default chart, 3.3.8)
CLUSTER_MORE_IMAGES="quay.io/jupyter/pytorch-notebook:cuda12-python-3.11 quay.io/jupyterhub/k8s-hub:4.4.0 quay.io/jupyterhub/configurable-http-proxy:5.2.0"
cluster_testbed 4 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
if [ -z "${ROLES:-}" ] || [ ! -d "$ROLES/helm" ]; then
	skip_all_cases "needs the add-on roles and the fakes' artifacts (helm, charts)"
fi
GPU_NODE=$SRC_ROOT/tests/fakes/nvidia/gpu-node.sh
for spec in node-2:gtx1080ti node-3:rtx3070 node-4:rtx4080; do
	if ! "$GPU_NODE" "$TB" "${spec%:*}" "${spec#*:}" --packages >>"$TEST_DIR/gpu.log" 2>&1; then
		sed 's/^/# /' "$TEST_DIR/gpu.log"
		skip_all_cases "gpu-node.sh failed (see above)"
	fi
done

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
addr() { awk -v n="$1" '$1 == n { print $2 }' "$TB/nodes.txt"; }

# The testbed's inventory with this test's storage, hub and nodes.
HUB_INV=$TEST_DIR/hub.yaml
HUB_INV4=$TEST_DIR/hub4.yaml
sed -n '/^jupyterhub:/q;p' "$INV" >"$HUB_INV"
cat >>"$HUB_INV" <<EOF
storage:
  nfs:
    server: node-1
    path: /srv/nfs
jupyterhub:
  node_port: $PORT
  image: quay.io/jupyter/pytorch-notebook:cuda12-python-3.11
  storage: 5Gi
  shm_size: 2Gi
  start_timeout: 1200
  admin_users: [hubadmin]
  auth:
    type: native
nodes:
  - name: node-1
    address: $(addr node-1)
    roles: [control-plane, nfs-server]
  - name: node-2
    address: $(addr node-2)
    roles: [worker]
    gpus: 1
  - name: node-3
    address: $(addr node-3)
    roles: [worker]
    gpus: 1
EOF
cp "$HUB_INV" "$HUB_INV4"
cat >>"$HUB_INV4" <<EOF
  - name: node-4
    address: $(addr node-4)
    roles: [worker]
    gpus: 1
EOF
UP="$PROVISION up -i $HUB_INV --state $STATE --roles $ROLES --no-tui"
knob node-1 record-tokens
# The hub stand-in (tests/fakes/kube/chart_jupyterhub.py): an API token for
# this test (a service with admin:users and admin:servers), read when the hub
# starts, and NativeAuthenticator's approved users, read at each login.
HUB_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
knob node-1 hub-api-token "$HUB_TOKEN"
knob node-1 hub-native-users "$(printf 'student_1:correct-horse-1\nada.l:correct-horse-2')"

# profiles FILE: the profiles of a values.yaml as "slug|display|gpus|selector|cpu g/l|mem g/l" lines,
# after checking the 1.5x rule and that the values parse.
profiles() {
	python3 - "$1" <<-'EOF'
		import sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		def mib(s):
		    assert s.endswith("M"), s
		    return int(s[:-1])
		for p in v["singleuser"]["profileList"]:
		    o = p["kubespawner_override"]
		    assert 0 < o["cpu_guarantee"] <= o["cpu_limit"] <= 1.5 * o["cpu_guarantee"] + 1e-9, p
		    assert 0 < mib(o["mem_guarantee"]) <= mib(o["mem_limit"]) <= 1.5 * mib(o["mem_guarantee"]), p
		    sel = ",".join("%s=%s" % kv for kv in sorted((o.get("node_selector") or {}).items()))
		    gpus = (o.get("extra_resource_limits") or {}).get("nvidia.com/gpu", "0")
		    print("%s|%s|%s|%s" % (p["slug"], p["display_name"], gpus, sel))
	EOF
}

# fits FILE: every profile's limits fit the allocatable of every node its selector picks.
fits() {
	kc get nodes -o json >nodes-now.json
	python3 - "$1" nodes-now.json <<-'EOF'
		import json, sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		nodes = json.load(open(sys.argv[2]))["items"]
		def cpu(q):
		    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)
		def mem_mib(q):
		    for s, f in (("Ki", 1 / 1024), ("Mi", 1), ("Gi", 1024)):
		        if q.endswith(s):
		            return float(q[:-len(s)]) * f
		    return float(q) / 1048576
		for p in v["singleuser"]["profileList"]:
		    o = p["kubespawner_override"]
		    sel = o.get("node_selector") or {}
		    picked = [n for n in nodes if all(n["metadata"]["labels"].get(k) == x for k, x in sel.items())
		              and "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"]]
		    assert picked, ("no node for", p["slug"])
		    for n in picked:
		        a = n["status"]["allocatable"]
		        assert o["cpu_limit"] <= cpu(a["cpu"]), (p["slug"], n["metadata"]["name"], a)
		        assert int(o["mem_limit"][:-1]) <= mem_mib(a["memory"]), (p["slug"], n["metadata"]["name"], a)
		        g = int((o.get("extra_resource_limits") or {}).get("nvidia.com/gpu", "0"))
		        assert g <= int(a.get("nvidia.com/gpu", "0")), (p["slug"], n["metadata"]["name"], a)
	EOF
}

# snapshot NODE OUT: sha256 of every file under /etc and /var/lib/provision on NODE.
snapshot() {
	tb "$1" sh -c 'find /etc /var/lib/provision -xdev -type f -print0 2>/dev/null | sort -z | xargs -0 sha256sum' >"$2"
}

test_case "up: every phase, exit 0, the hub installed on node-1, every validation passes (hub-health too)" "
	$UP >up1.out 2>&1 || { run_tail up1.out; false; }
	for n in node-1 node-2 node-3; do expect_grep \"^\$n  *done  *[0-9]* changed .* 0 failed\" up1.out; done
	expect_grep '\\[node-1\\] jupyterhub › 10-secrets … changed' up1.out
	expect_grep '\\[node-1\\] jupyterhub › 30-install … changed' up1.out
	expect_no_grep '\\[node-[23]\\] jupyterhub' up1.out
	expect_grep '^validation: [0-9]* passed, 0 failed' up1.out
	expect_no_grep ' fail  ' up1.out
	$PROVISION check -i $HUB_INV --state $STATE --roles $ROLES >check.out 2>&1 || { cat check.out; false; }
	expect_grep '^hub-health  *[^ ]*  *pass  *HTTP 200 from http://$(addr node-1):$PORT/hub/health\$' check.out
	expect_grep '^gpu-allocatable ' check.out
	expect_grep '^default-storageclass ' check.out
	expect_no_grep ' fail ' check.out
"

test_case "values: NodePort, native authenticator, admins, image, storage, DB off NFS, /dev/shm, start timeout, one profile per GPU model" "
	tb node-1 cat /etc/provision/jupyterhub/values.yaml >values1.yaml
	expect_eq 600 \"\$(tb node-1 stat -c %a /etc/provision/jupyterhub/values.yaml)\" 'mode of values.yaml'
	python3 - values1.yaml <<-'EOF'
		import sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		assert v['proxy']['service'] == {'type': 'NodePort', 'nodePorts': {'http': $PORT}}, v['proxy']
		c = v['hub']['config']
		assert c['JupyterHub']['authenticator_class'] == 'nativeauthenticator.NativeAuthenticator', c
		assert c['Authenticator']['admin_users'] == ['hubadmin'], c
		assert c['NativeAuthenticator']['open_signup'] is False, c
		assert v['hub']['db'] == {'type': 'other', 'url': 'sqlite:////srv/jupyterhub/jupyterhub.sqlite'}, v['hub']['db']
		assert v['hub']['extraVolumes'][0]['hostPath']['path'] == '/var/lib/provision/jupyterhub', v['hub']
		assert v['hub']['nodeSelector'] == {'kubernetes.io/hostname': 'node-1'}, v['hub']
		s = v['singleuser']
		assert s['image'] == {'name': 'quay.io/jupyter/pytorch-notebook', 'tag': 'cuda12-python-3.11'}, s['image']
		assert s['startTimeout'] == 1200, s
		assert s['storage']['capacity'] == '5Gi' and s['storage']['dynamic']['storageClass'] == 'nfs', s['storage']
		assert s['storage']['extraVolumes'] == [{'name': 'shm', 'emptyDir': {'medium': 'Memory', 'sizeLimit': '2Gi'}}]
		assert s['storage']['extraVolumeMounts'] == [{'name': 'shm', 'mountPath': '/dev/shm'}]
		assert 'cookieSecret' not in v['hub'] and 'secretToken' not in v['proxy']
	EOF
	profiles values1.yaml >profiles1
	cat profiles1
	expect_eq 3 \"\$(wc -l <profiles1 | tr -d ' ')\" 'profiles'
	expect_grep '^cpu|CPU only|0|\$' profiles1
	expect_grep '^gpu-geforce-gtx-1080-ti-x1|1× GeForce GTX 1080 Ti (11 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-GTX-1080-Ti\$' profiles1
	expect_grep '^gpu-geforce-rtx-3070-x1|1× GeForce RTX 3070 (8 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-RTX-3070\$' profiles1
	fits values1.yaml
	expect_eq 'jhub:deployed' \"\$(tb node-1 helm --kubeconfig=/etc/kubernetes/admin.conf list -n jhub -o json | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r[\"name\"] + \":\" + r[\"status\"])')\" 'release'
	expect_eq '700:1000' \"\$(tb node-1 stat -c %a:%u /var/lib/provision/jupyterhub)\" 'hub database folder'
	tb node-1 test -s /var/lib/provision/jupyterhub/jupyterhub.sqlite
"

test_case "/hub/health answers 200 through the NodePort from this machine; a real authenticator refuses a wrong password" "
	python3 - '$(addr node-1)' $PORT <<-'EOF'
		import json, sys, urllib.error, urllib.parse, urllib.request
		base = 'http://%s:%s' % (sys.argv[1], sys.argv[2])
		op = urllib.request.build_opener(urllib.request.ProxyHandler({}))
		r = op.open(base + '/hub/health', timeout=10)
		assert r.status == 200, r.status
		ver = json.load(op.open(base + '/hub/api', timeout=10))['version']
		assert ver.startswith('3.'), ver
		class NoRedirect(urllib.request.HTTPRedirectHandler):
		    def redirect_request(self, *a):
		        return None
		op = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
		data = urllib.parse.urlencode({'username': 'hubadmin', 'password': 'not-the-password'}).encode()
		try:
		    r = op.open(base + '/hub/login', data=data, timeout=10)
		    code, body = r.status, r.read().decode()
		except urllib.error.HTTPError as e:
		    code, body = e.code, e.read().decode()
		# A login that passes redirects (302) with a session cookie; the
		# dummy authenticator would let any password through.
		assert code in (200, 403) and 'Invalid username or password' in body, ('a wrong password was answered with', code)
		print('health 200, JupyterHub', ver, ', wrong password refused:', code, 'Invalid username or password')
	EOF
"

test_case "a second up changes nothing and validates" "
	$UP >up2.out 2>&1 || { run_tail up2.out; false; }
	for n in node-1 node-2 node-3; do expect_grep \"^\$n  *done  *0 changed .* 0 failed\" up2.out; done
	expect_no_grep ' changed [0-9]' up2.out
	expect_grep '^validation: [0-9]* passed, 0 failed' up2.out
"

test_case "add-node node-4 (RTX 4080): joins; node-2 and node-3 untouched (files, no SSH session)" "
	snapshot node-2 node2.before
	snapshot node-3 node3.before
	s2=\$(grep -c 'Accepted publickey' '$TB/nodes/node-2/sshd.log')
	s3=\$(grep -c 'Accepted publickey' '$TB/nodes/node-3/sshd.log')
	$PROVISION add-node -i $HUB_INV4 --state $STATE --roles $ROLES --no-tui node-4 >add.out 2>&1 || { run_tail add.out; false; }
	expect_grep '^node-4  *done  *[0-9]* changed .* 0 failed' add.out
	expect_grep '\\[node-4\\] kubeadm-join › 30-join … changed' add.out
	expect_grep '\\[node-1\\] jupyterhub › 30-install … changed' add.out
	expect_no_grep '^node-[23] ' add.out
	expect_no_grep '\\[node-[23]\\]' add.out
	expect_grep '^validation: [0-9]* passed, 0 failed' add.out
	snapshot node-2 node2.after
	snapshot node-3 node3.after
	diff node2.before node2.after
	diff node3.before node3.after
	expect_eq \"\$s2\" \"\$(grep -c 'Accepted publickey' '$TB/nodes/node-2/sshd.log')\" 'SSH sessions on node-2'
	expect_eq \"\$s3\" \"\$(grep -c 'Accepted publickey' '$TB/nodes/node-3/sshd.log')\" 'SSH sessions on node-3'
	kc get node node-4 -o 'jsonpath={.metadata.labels.nvidia\\.com/gpu\\.product}' >product4
	expect_eq NVIDIA-GeForce-RTX-4080 \"\$(cat product4)\" 'node-4 GPU label'
"

test_case "add-node: the RTX 4080 profile is added, the others stay, the release upgraded, the hub healthy" "
	tb node-1 cat /etc/provision/jupyterhub/values.yaml >values2.yaml
	profiles values2.yaml >profiles2
	cat profiles2
	expect_eq 4 \"\$(wc -l <profiles2 | tr -d ' ')\" 'profiles'
	expect_grep '^gpu-geforce-rtx-4080-x1|1× GeForce RTX 4080 (16 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4080\$' profiles2
	grep -v 4080 profiles2 | cmp - profiles1
	fits values2.yaml
	expect_eq 2 \"\$(tb node-1 helm --kubeconfig=/etc/kubernetes/admin.conf list -n jhub -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0][\"revision\"])')\" 'release revision'
	python3 -c 'import sys, urllib.request as u; r = u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=10); assert r.status == 200' 'http://$(addr node-1):$PORT/hub/health'
"

test_case "no token, certificate key, hub secret or password in any file the runs wrote or the nodes logged" "
	collect_node_logs collected
	secrets_collected secrets.list
	tb node-1 sed -n 's/^  [a-zA-Z]*: \"\\([0-9a-f]*\\)\"\$/\\1/p' /etc/provision/jupyterhub/secrets.yaml >secrets.list.hub
	expect_eq 2 \"\$(grep -c '^[0-9a-f]\\{64\\}\$' secrets.list.hub)\" 'hub secrets read from node-1'
	cat secrets.list.hub >>secrets.list
	expect_no_grep 'PRIVATE KEY' secrets.list
	files_written files
	expect_grep '^./state/logs/node-1.log\$' files
	expect_grep '^./up1.out\$' files
	expect_grep '^./add.out\$' files
	expect_grep '^./collected/node-1.pods.log\$' files
	found=\$(cd '$TEST_DIR' && tr '\\n' '\\0' <'$TEST_DIR/files' | xargs -0 grep -l -F -f '$TEST_DIR/secrets.list' || true)
	expect_eq '' \"\$found\" 'files holding a secret'
"

test_case "remove-node -K node-4, the only RTX 4080: one password prompt, one SSH login on the control plane for both runs; the profile goes, the others stay, node-2 and node-3 Ready" "
	l1=\$(logins node-1) l4=\$(logins node-4)
	on_tty tty-sudo-password-1 rm.out remove-node -K -i $HUB_INV4 --state $STATE --roles $ROLES --no-tui --yes node-4 || { run_tail rm.out; false; }
	echo \"prompts \$(cat rm.out.prompts), logins node-1 \$((\$(logins node-1) - l1)), node-4 \$((\$(logins node-4) - l4))\"
	expect_eq 1 \"\$(cat rm.out.prompts)\" 'sudo password prompts'
	expect_eq 1 \"\$((\$(logins node-1) - l1))\" 'SSH logins on node-1 (remove, then the hub profiles)'
	# the run's login, then the reset report's proof that a new SSH session still works
	expect_eq 2 \"\$((\$(logins node-4) - l4))\" 'SSH logins on node-4'
	expect_no_grep tty-sudo-password-1 rm.out
	expect_grep 'remove-node: the hub.s profiles, regenerated from the nodes left' rm.out
	expect_no_grep '^node-[23] ' rm.out
	kc get nodes -o name >nodes.left
	expect_no_grep 'node/node-4' nodes.left
	for n in node-2 node-3; do
		expect_eq True \"\$(kc get node \$n -o 'jsonpath={.status.conditions[?(@.type==\"Ready\")].status}')\" \"\$n Ready\"
	done
	tb node-1 cat /etc/provision/jupyterhub/values.yaml >values3.yaml
	profiles values3.yaml >profiles3
	cat profiles3
	expect_no_grep 4080 profiles3
	cmp profiles3 profiles1
	fits values3.yaml
	python3 -c 'import sys, urllib.request as u; r = u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=10); assert r.status == 200' 'http://$(addr node-1):$PORT/hub/health'
"

# After remove-node: the cluster is node-1..node-3 of HUB_INV.
test_case "gpu_sharing: 4 on node-3 (RTX 3070): time-slicing values, its label, 4 allocatable, a shared profile saying what it gives, check passes" "
	sed 's/^    gpus: 1\$/&\n    GPUS_OF_NODE/' $HUB_INV | awk '/GPUS_OF_NODE/ { if (n == \"node-3\") print \"    gpu_sharing: 4\"; next } /- name:/ { n = \$3 } { print }' >share.yaml
	expect_eq 1 \"\$(grep -c '^    gpu_sharing: 4\$' share.yaml)\" 'gpu_sharing in the inventory'
	$PROVISION up -i share.yaml --state $STATE --roles $ROLES --no-tui >up-share.out 2>&1 || { run_tail up-share.out; false; }
	expect_grep '^validation: [0-9]* passed, 0 failed' up-share.out
	tb node-1 cat /etc/provision/helm/gpu-operator.values.yaml >gpuop.yaml
	python3 - gpuop.yaml <<-'EOF'
		import sys, yaml
		c = yaml.safe_load(open(sys.argv[1]))['devicePlugin']['config']
		assert (c['create'], c['name'], c['default']) == (True, 'provision-device-plugin', 'default'), c
		assert sorted(c['data']) == ['default', 'shared-4'], c
		s = yaml.safe_load(c['data']['shared-4'])
		assert s == {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}, s
	EOF
	expect_eq shared-4 \"\$(kc get node node-3 -o 'jsonpath={.metadata.labels.nvidia\\.com/device-plugin\\.config}')\" 'node-3 config label'
	expect_eq '' \"\$(kc get node node-2 -o 'jsonpath={.metadata.labels.nvidia\\.com/device-plugin\\.config}')\" 'node-2 config label'
	expect_eq 4 \"\$(kc get node node-3 -o 'jsonpath={.status.allocatable.nvidia\\.com/gpu}')\" 'node-3 allocatable'
	expect_eq 1 \"\$(kc get node node-2 -o 'jsonpath={.status.allocatable.nvidia\\.com/gpu}')\" 'node-2 allocatable'
	tb node-1 cat /etc/provision/jupyterhub/values.yaml >values-share.yaml
	profiles values-share.yaml >profiles-share
	cat profiles-share
	expect_eq 3 \"\$(wc -l <profiles-share | tr -d ' ')\" 'profiles'
	expect_grep '^gpu-geforce-rtx-3070-shared-by-4|GeForce RTX 3070 shared by up to 4 (8 GiB, not isolated)|1|nvidia.com/gpu.product=NVIDIA-GeForce-RTX-3070-SHARED\$' profiles-share
	expect_no_grep '^gpu-geforce-rtx-3070-x1' profiles-share
	expect_grep '^gpu-geforce-gtx-1080-ti-x1|' profiles-share
	expect_grep 'description: .*RTX 3070 shared by up to 4 — expect about 1/4 of the GPU when all are busy; GPU memory is not isolated' values-share.yaml
	fits values-share.yaml
	$PROVISION check -i share.yaml --state $STATE --roles $ROLES >check-share.out 2>&1 || { cat check-share.out; false; }
	expect_grep '^gpu-allocatable  *node-3  *pass ' check-share.out
	expect_no_grep ' fail ' check-share.out
"

# ^C while helm waits, the releases an interrupted run leaves, the reset (issue 33).
# The cluster: node-1..node-3 of share.yaml.  A start_timeout of its own makes
# the hub's values differ, so that jupyterhub › 30-install upgrades the release;
# slow-start keeps the new hub pod unready, so that helm waits.
HELM="helm --kubeconfig=/etc/kubernetes/admin.conf"
last_revision() { # "REVISION STATUS DESCRIPTION" of jhub's last revision
	# shellcheck disable=SC2086 # HELM: the command and its flag, two words
	tb node-1 $HELM history jhub -n jhub -o json | python3 -c 'import json, sys; r = json.load(sys.stdin)[-1]; print(r["revision"], r["status"], r["description"])'
}

test_case "^C in plain output while helm waits: the first says at once what stops and what a second does; the second cancels helm (exit 130), which marks the release failed" "
	sed 's/^  start_timeout: 1200\$/  start_timeout: 1300/' share.yaml >int.yaml
	expect_eq 1 \"\$(grep -c '^  start_timeout: 1300\$' int.yaml)\" 'start_timeout in int.yaml'
	knob node-1 slow-start 'hub 100000'
	$PROVISION up -i int.yaml --state $STATE --roles $ROLES --no-tui >int.out 2>&1 &
	pid=\$!
	echo \$pid >int.pid
	test_at_exit \"kill -KILL \$pid\"
	i=0
	until last_revision | grep -q ' pending-upgrade '; do
		i=\$((i + 1))
		[ \$i -lt 300 ] || { echo 'helm never waited for the hub'; tail -n 40 int.out; false; }
		sleep 1
	done
	sleep 2
	kill -INT \$pid
	i=0
	until grep -q '^^C: stopping' int.out; do
		i=\$((i + 1))
		[ \$i -lt 20 ] || { echo 'nothing said 2 s after the first ^C:'; cat int.out; false; }
		sleep 0.1
	done
	expect_grep '^^C: stopping: no new step starts; the steps running now finish first (.*node-1: jupyterhub › 30-install.*), then the run ends (exit 130).  ^C again stops them at once.\$' int.out
	kill -INT \$pid
	rc=0
	wait \$pid || rc=\$?
	cat int.out
	expect_eq 130 \$rc 'exit status'
	expect_grep '^^C again: cancelling: the commands running now are stopped (.*node-1: jupyterhub › 30-install' int.out
	last_revision >int.rev
	expect_grep '^[0-9]* failed Upgrade \"jhub\" failed: context canceled\$' int.rev
"

# Whatever that case did, its up is over before the next case takes the state
# folder (a ^C that said nothing left it running on main).
if [ -s "$TEST_DIR/int.pid" ]; then
	p=$(cat "$TEST_DIR/int.pid")
	kill -INT "$p" 2>/dev/null && sleep 1 && kill -INT "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 60 ]; do
		i=$((i + 1))
		sleep 1
	done
fi

test_case "the next up recovers the failed release and says so; the hub answers" "
	unknob node-1 slow-start
	$PROVISION up -i int.yaml --state $STATE --roles $ROLES --no-tui >rec1.out 2>&1 || { run_tail rec1.out; false; }
	expect_grep '^\\[node-1\\] jupyterhub › 30-install … changed [^:]*: release jhub (namespace jhub): revision [0-9]* was left failed by an earlier run (interrupted, or helm timed out): upgraded again\$' rec1.out
	expect_grep '^validation: [0-9]* passed, 0 failed' rec1.out
	last_revision >rec1.rev
	expect_grep '^[0-9]* deployed Upgrade complete\$' rec1.rev
"

test_case "a release a killed helm left pending-upgrade (helm refuses it: another operation is in progress) is rolled back to its last deployed revision by the next up, which says so" "
	knob node-1 slow-start 'hub 100000'
	# until the running hub is not Ready either (the kubelet reads the knob at its next sync)
	i=0
	until [ \"\$(kc -n jhub get deployment hub -o 'jsonpath={.status.readyReplicas}')\" = '' ] ||
		[ \"\$(kc -n jhub get deployment hub -o 'jsonpath={.status.readyReplicas}')\" = 0 ]; do
		i=\$((i + 1))
		[ \$i -lt 60 ] || { echo 'the hub stayed Ready'; false; }
		sleep 1
	done
	deployed=\$(last_revision | cut -d ' ' -f 1)
	tb node-1 timeout -s KILL 15 $HELM upgrade --install jhub /var/lib/provision/charts/jupyterhub.tgz -n jhub \\
		--values /etc/provision/jupyterhub/values.yaml --values /etc/provision/jupyterhub/secrets.yaml --wait --timeout 5m >killed.out 2>&1 || true
	last_revision >killed.rev
	expect_grep \"^\$((deployed + 1)) pending-upgrade \" killed.rev
	expect_status 1 tb node-1 $HELM upgrade --install jhub /var/lib/provision/charts/jupyterhub.tgz -n jhub \\
		--values /etc/provision/jupyterhub/values.yaml >refused.out 2>&1
	expect_grep 'UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress' refused.out
	unknob node-1 slow-start
	$PROVISION check -i int.yaml --state $STATE --roles $ROLES >check-pending.out 2>&1 || true
	expect_grep 'release jhub (namespace jhub): pending-upgrade (left by an interrupted or failed run: provision up recovers it)' check-pending.out
	$PROVISION up -i int.yaml --state $STATE --roles $ROLES --no-tui >rec2.out 2>&1 || { run_tail rec2.out; false; }
	expect_grep \"^\\\\[node-1\\\\] jupyterhub › 30-install … changed [^:]*: release jhub (namespace jhub) was left pending-upgrade by an interrupted run: rolled back to revision \$deployed (the last deployed), then upgraded\\\$\" rec2.out
	expect_grep '^validation: [0-9]* passed, 0 failed' rec2.out
	last_revision >rec2.rev
	expect_grep '^[0-9]* deployed Upgrade complete\$' rec2.rev
	python3 -c 'import sys, urllib.request as u; r = u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=10); assert r.status == 200' 'http://$(addr node-1):$PORT/hub/health'
"

# hub login USER PASSWORD: "in" when the hub's login form logs USER in (302
# with the session cookie), else "refused HTTP-STATUS";
# hub start USER [PROFILE]: a server (REST API, the test's token) with that
# profile (default the CPU-only one), ready; hub stop USER.
cat >"$TEST_DIR/hub.py" <<'PY'
import json, sys, time, urllib.error, urllib.parse, urllib.request
base, token, cmd, user = sys.argv[1:5]
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a):
        return None
op = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
def call(method, path, body=None, auth=True):
    req = urllib.request.Request(base + path, method=method, data=body)
    if auth:
        req.add_header("Authorization", "token " + token)
    try:
        r = op.open(req, timeout=30)
        return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
def server():
    st, body = call("GET", "/hub/api/users/" + urllib.parse.quote(user))
    assert st == 200, (st, body)
    return json.loads(body).get("servers", {}).get("")
if cmd == "login":
    st, _ = call("POST", "/hub/login", urllib.parse.urlencode({"username": user, "password": sys.argv[5]}).encode(), False)
    print("in" if st == 302 else "refused %d" % st)
elif cmd == "start":
    profile = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    st, body = call("POST", "/hub/api/users/%s/server" % urllib.parse.quote(user), json.dumps({"profile": profile}).encode())
    assert st in (201, 202), (st, body)
    for _ in range(120):
        s = server()
        if s and s.get("ready"):
            break
        time.sleep(1)
    else:
        sys.exit("the server of %s is not ready: %s" % (user, s))
elif cmd == "stop":
    st, body = call("DELETE", "/hub/api/users/%s/server" % urllib.parse.quote(user))
    assert st in (202, 204), (st, body)
    for _ in range(60):
        if not server():
            break
        time.sleep(1)
    else:
        sys.exit("the server of %s did not stop" % user)
PY
hub() {
	python3 "$TEST_DIR/hub.py" "http://$(addr node-1):$PORT" "$HUB_TOKEN" "$@"
}
# home POD: "POD CLAIM CLAIM-UID FOLDER" of a user's running pod: its home
# claim, that claim's uid, and its volume's NFS path
home() {
	_claim=$(kc -n jhub get pod "$1" -o json | python3 -c 'import json, sys; print(*[v["persistentVolumeClaim"]["claimName"] for v in json.load(sys.stdin)["spec"]["volumes"] if "persistentVolumeClaim" in v])')
	_pv=$(kc -n jhub get pvc "$_claim" -o 'jsonpath={.spec.volumeName}')
	echo "$1 $_claim $(kc -n jhub get pvc "$_claim" -o 'jsonpath={.metadata.uid}') $(kc get pv "$_pv" -o 'jsonpath={.spec.nfs.path}')"
}
# seen NODE POD: what the notebook of POD (on NODE) had in its home when it
# started ("/home/jovyan is FOLDER on this node, holding: NAMES", the
# kubelet's placeholder container: tests/fakes/README.md)
seen() {
	_uid=$(kc -n jhub get pod "$2" -o 'jsonpath={.metadata.uid}')
	tb "$1" sh -c "cat /var/log/pods/jhub_$2_$_uid/notebook/*.log" | sed -n 's|^[^ ]* stdout F /home/jovyan is ||p' | tail -n 1
}
# release_chart: "CHART STATUS" of the release jhub
release_chart() {
	# shellcheck disable=SC2086 # HELM: the command and its flag, two words
	tb node-1 $HELM list -n jhub -o json | python3 -c 'import json, sys; r = json.load(sys.stdin)[0]; print(r["chart"], r["status"])'
}

# The hub of z2jh 3.3.8 (the default), then the same users after `up` to
# 4.4.0 (issue 34).  The cluster: node-1..node-3 of int.yaml.
test_case "z2jh 3.3.8: student_1 logs in, gets a GTX 1080 Ti notebook (node-2) whose home is a claim on NFS (claim-student-5f1, KubeSpawner 6's name), keeps a file there, stops" "
	expect_eq in \"\$(hub login student_1 correct-horse-1)\" 'login of student_1'
	hub start student_1 gpu-geforce-gtx-1080-ti-x1
	expect_eq node-2 \"\$(kc -n jhub get pod jupyter-student-5f1 -o 'jsonpath={.spec.nodeName}')\" 'node of the notebook'
	expect_eq 1 \"\$(kc -n jhub get pod jupyter-student-5f1 -o 'jsonpath={.spec.containers[0].resources.limits.nvidia\\.com/gpu}')\" 'GPU limit'
	home jupyter-student-5f1 >home1
	cat home1
	expect_eq claim-student-5f1 \"\$(cut -d ' ' -f 2 home1)\" 'the home claim'
	case \$(cut -d ' ' -f 4 home1) in /srv/nfs/jhub-claim-student-5f1-pvc-*) ;; *) echo 'not the claim folder of the NFS export'; false ;; esac
	seen node-2 jupyter-student-5f1 >seen1
	cat seen1
	expect_grep 'holding: (nothing)\$' seen1
	# the user's file, where the notebook's home is (the testbed's NFS is each node's own folder)
	tb node-2 sh -c \"echo notebook >\$(sed 's/ on this node, .*//' seen1)/work.ipynb\"
	hub stop student_1
	i=0
	while kc -n jhub get pod jupyter-student-5f1 >/dev/null 2>&1; do
		i=\$((i + 1))
		[ \$i -lt 60 ] || { echo 'the pod jupyter-student-5f1 stayed after the stop'; false; }
		sleep 1
	done
	kc -n jhub get pvc claim-student-5f1 >/dev/null
"

test_case "up to z2jh 4.4.0 (chart_version: 4.4.0): the release upgraded in place; student_1 logs in (JupyterHub 5's rules), gets the same pod name and the same claim, with the file; a user new on 4.4.0 gets KubeSpawner 6's names too" "
	sed 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/' int.yaml >up4.yaml
	expect_eq 1 \"\$(grep -c '^  chart_version: 4.4.0\$' up4.yaml)\" 'chart_version in up4.yaml'
	$PROVISION up -i up4.yaml --state $STATE --roles $ROLES --no-tui >up4.out 2>&1 || { run_tail up4.out; false; }
	expect_grep '^\\[node-1\\] jupyterhub › 30-install … changed' up4.out
	expect_grep '^validation: [0-9]* passed, 0 failed' up4.out
	expect_eq 'jupyterhub-4.4.0 deployed' \"\$(release_chart)\" 'release'
	tb node-1 cat /etc/provision/jupyterhub/values.yaml >values4.yaml
	python3 - values4.yaml <<-'EOF'
		import sys, yaml
		c = yaml.safe_load(open(sys.argv[1]))['hub']['config']
		assert c['KubeSpawner'] == {'slug_scheme': 'escape'}, c
		assert c['Authenticator'].get('allow_all') is True and 'allowed_users' not in c['Authenticator'], c
	EOF
	expect_eq in \"\$(hub login student_1 correct-horse-1)\" 'login of student_1 on 4.4.0'
	hub login student_1 wrong-password-1 | grep '^refused '
	hub login mallory correct-horse-1 | grep '^refused '
	hub start student_1 gpu-geforce-gtx-1080-ti-x1
	home jupyter-student-5f1 >home2
	cat home2
	expect_eq \"\$(cut -d ' ' -f 2- home1)\" \"\$(cut -d ' ' -f 2- home2)\" 'claim, its uid and NFS path after the upgrade'
	seen node-2 jupyter-student-5f1 >seen2
	cat seen2
	expect_eq \"\$(sed 's/ on this node, .*//' seen1) on this node, holding: work.ipynb\" \"\$(cat seen2)\" 'the home of the notebook after the upgrade'
	expect_eq 1 \"\$(kc -n jhub get pvc -o name | grep -c student)\" 'claims of student_1'
	expect_eq in \"\$(hub login ada.l correct-horse-2)\" 'login of ada.l'
	hub start ada.l
	home jupyter-ada-2el >home3
	cat home3
	expect_eq claim-ada-2el \"\$(cut -d ' ' -f 2 home3)\" 'the home claim of a user new on 4.4.0'
	hub stop ada.l
	hub stop student_1
"

test_case "reset after the hub: every node verified clean; nothing left under /root/.kube, /etc/provision, /var/lib/provision; the NFS export's folders kept" "
	for n in node-1 node-2 node-3; do tb \$n test -d /root/.kube/cache; done
	tb node-1 test -d /var/lib/provision/jupyterhub
	tb node-1 test -d /etc/provision/jupyterhub
	tb node-1 sh -c 'mkdir -p /srv/nfs/jhub-claim-hubadmin && echo notebook >/srv/nfs/jhub-claim-hubadmin/work.ipynb'
	tb node-1 sh -c 'cd /srv/nfs && find . | sort' >nfs.before
	$PROVISION reset -i int.yaml --state $STATE --roles $ROLES --no-tui --yes >reset.out 2>&1 || { run_tail reset.out; false; }
	expect_grep '^reset .*: 3 nodes, .* 0 failed, 0 unreachable' reset.out
	expect_eq 3 \"\$(grep -c 'verified: clean (ports, processes, folders, interfaces, chains, kubelet); reachable over SSH' reset.out)\" 'nodes verified clean'
	for n in node-1 node-2 node-3; do
		left=\$(tb \$n sh -c 'for d in /root/.kube /etc/provision /var/lib/provision; do [ ! -e \$d ] || find \$d; done')
		expect_eq '' \"\$left\" \"what is left on \$n\"
	done
	tb node-1 sh -c 'cd /srv/nfs && find . | sort' >nfs.after
	diff nfs.before nfs.after
	expect_eq notebook \"\$(tb node-1 cat /srv/nfs/jhub-claim-hubadmin/work.ipynb)\" 'a user file on the export'
"

test_done
