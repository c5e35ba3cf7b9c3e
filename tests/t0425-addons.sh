#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 1356 s in CI (beside another; tests/run.sh starts the longest first)
# t0425-addons: `provision up` through the addons phase on a testbed that
# mirrors seed lab B's GPU workers: node-1 the control plane and the NFS
# server, node-2 a GTX 1080 Ti, node-3 an RTX 2080 Ti, node-4 an RTX 3070
# (tests/fakes/nvidia: the fake nvidia-smi, PCI devices in each node's own
# /sys).  Judged by the nodes' and the cluster's real state, read with
# `testbed.sh exec` (helm and kubectl on the control plane, files): Helm
# from the pinned release archive, the two releases as the fake helm
# stored them (Secrets), the values files rendered from the facts
# (driver.enabled false: every GPU node's driver answers; the toolkit's
# containerd drop-in), GPU feature discovery labels and allocatable
# nvidia.com/gpu per node equal to the GPUs of its facts, the operator's
# validator running on each GPU node, StorageClass nfs the only default, the
# trial claim bound and deleted, a claim of our own bound to a folder
# NAMESPACE-CLAIM-VOLUME on the export and archived when deleted.  Then: a
# second up changes nothing, nor does one limited to the control plane
# (the GPU nodes' recorded facts keep the values); with node-4's driver not loaded, plan shows
# the values turning to driver.enabled true, and `up --phases addons` (node-4
# fails its own preflight, the others go on) lets the operator's driver
# container load it; no token, certificate key or
# CA key in any file the runs wrote or the nodes logged.
#
# "A GPU pod sees its GPU" (issue 17; this was t0426, folded in here to
# save CI a cluster): containerd is Debian's real one, the GPU Operator's
# stand-in writes where the pinned toolkit v1.20.0 writes on a GPU node
# (the drop-in of RUNTIME_DROP_IN_CONFIG) what toolkit v1.16.1 wrote there,
# restarting containerd per RUNTIME_RESTART_MODE only
# (tests/fakes/kube/chart_gpu_operator.py) and the kubelet's stand-in gives
# a container its GPUs only under the nvidia runtime of the node's real
# containerd (tests/fakes/kube/kubelet.py).
#   - the validation's gpu-pod check passes on each GPU node with its model
#     listed by nvidia-smi -L; `check --junit` has a testcase per node;
#   - what the stand-ins show of the real cluster: RuntimeClass nvidia
#     (handler nvidia), the operands under it, the toolkit's binaries, its
#     copy of the containerd config written where containerd never reads
#     it, containerd's own config with runc (SystemdCgroup) and nvidia,
#     the CRI plugin ok; a pod naming a missing RuntimeClass is rejected
#     with the API server's message; a pod holding nvidia.com/gpu under
#     plain runc finds no nvidia-smi (issue 17's bug 2);
#   - at the end, the nvidia runtime's binary taken away on node-3: check
#     fails gpu-pod there (the pod never gets a sandbox), node-2 still
#     passes; the old layout (the toolkit editing a drop-in containerd 1.6
#     imports, then its default restart: SIGHUP) on node-3: the real
#     containerd loses its CRI plugin, node-3 turns NotReady ("container
#     runtime is down") and check fails there (issue 17's bug 1).
#
# Helm 3 to Helm 4 (issue 34): on Kubernetes 1.33 (whose Helms are 3.18-3.21
# and 4.0-4.2) the add-ons are installed by Helm 3.18.4 (the inventory's
# `helm: 3`: roles/helm's Helm 3 of 1.30-1.33); then the key goes (Helm
# 4.2.4, the Helm 4 roles/helm pins for 1.33, taken when the key is absent)
# and `up` replaces /usr/local/bin/helm and nothing else: every release's
# history is what Helm 3 left (no reinstall, no new revision), helm 4 reads
# them (client-side apply, as Helm 3 applied them), check is clean; the
# cases after it run on Helm 4, whose first upgrade of the GPU Operator's
# release (the driver container's case) is revision 2 of the same release,
# still client-side.
#
# Helm and the charts are the stand-ins of tests/fakes (kube-debs/build.sh:
# Helm's release archives with the fake helm of each major, chart
# archives), fetched, verified and pushed by provision from the artifact
# manifest of $ROLES.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="gpu-nodes up validation junit stand-ins runc-pod helm values gpu-state storage own-claim second-up drift-none drift-report drift-repair limit helm4 driver-facts driver-container runtime-gone old-layout no-secrets"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.33.9
test_need_cmd nsenter
cluster_testbed 4 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
GPU_NODE=$SRC_ROOT/tests/fakes/nvidia/gpu-node.sh

# node-1 also serves NFS (a container cannot: the nfs roles skip there, and
# the fake kubelet stands a local folder in for the mount, see
# tests/fakes/README.md).
python3 - "$INV" <<'EOF'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("jupyterhub:\n", "storage:\n  nfs:\n    server: node-1\n    path: /nfs\njupyterhub:\n", 1)
# Helm 3 first (Helm 4 takes over below)
s = re.sub(r"(\n  kubernetes_version: .*\n)", r"\1  helm: 3\n", s, count=1)
assert "\n  helm: 3\n" in s, s
s = re.sub(r"(  - name: node-1\n    address: \S+\n    roles: \[)control-plane\]", r"\1control-plane, nfs-server]", s)
open(p, "w").write(s)
EOF
UP="$PROVISION up -i $INV --state $STATE --roles $ROLES --no-tui"
ADDR1=$(awk '$1 == "node-1" { print $2 }' "$TB/nodes.txt")

# The fake API server keeps a copy of every bootstrap token it stores, for
# the no-secrets case.
knob node-1 record-tokens

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
CHECK="$PROVISION check -i $INV --state $STATE --roles $ROLES"
TK=/usr/local/nvidia/toolkit

test_case "GPU nodes: node-2 GTX 1080 Ti, node-3 RTX 2080 Ti, node-4 RTX 3070, drivers loaded" "
	'$GPU_NODE' '$TB' node-2 gtx1080ti --packages
	'$GPU_NODE' '$TB' node-3 rtx2080ti --packages
	'$GPU_NODE' '$TB' node-4 rtx3070 --packages
	expect_eq 'NVIDIA GeForce RTX 3070' \"\$(tb node-4 nvidia-smi --query-gpu=name --format=csv,noheader)\"
"

test_case "up: exit 0; helm, the GPU Operator and the NFS provisioner installed on the control plane only" "
	$UP >up1.out 2>&1 || { run_tail up1.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *[0-9]* changed .* 0 failed\" up1.out; done
	expect_grep '\\[node-1\\] helm › 10-install … changed' up1.out
	expect_grep '\\[node-1\\] gpu-operator › 10-release … changed' up1.out
	expect_grep '\\[node-1\\] nfs-provisioner › 10-release … changed' up1.out
	expect_grep '\\[node-1\\] nfs-provisioner › 30-trial-claim … changed' up1.out
	expect_no_grep '\\[node-[234]\\] \\(helm\\|gpu-operator\\|nfs-provisioner\\) ' up1.out
"

test_case "validation: every check passes at the end of up and in check, the add-on checks among them" "
	expect_grep '^validation: [0-9]* passed, 0 failed' up1.out
	expect_no_grep ' fail  ' up1.out
	$CHECK >check.out 2>&1 || { run_tail check.out; false; }
	for n in node-2 node-3 node-4; do
		expect_grep \"^gpu-allocatable  *\$n  *pass  *1\\\$\" check.out
		expect_grep \"^gpu-operator-validated  *\$n  *pass  *Running, driver, toolkit, cuda and plugin validations completed\\\$\" check.out
	done
	expect_no_grep '^gpu-allocatable  *node-1 ' check.out
	expect_grep '^default-storageclass  *(cluster)  *pass  *nfs\$' check.out
	expect_grep '^nfs-claim-binds  *(cluster)  *pass  *trial claim bound in [0-9]*s to pvc-' check.out
	expect_grep '^validation: [0-9]* passed, 0 failed, 0 skipped' check.out
"

test_case "check --junit: gpu-pod passes on each GPU node with its model listed, a testcase per node" "
	kc get pods -A -l provision.dev/check=gpu-pod -o name >left
	expect_eq '' \"\$(cat left)\" 'check pods left behind by up'
	$CHECK --junit junit.xml >check-junit.out 2>&1 || { run_tail check-junit.out; false; }
	expect_grep '^gpu-pod  *node-2  *pass  *1× GeForce GTX 1080 Ti (11 GiB): nvidia-smi -L lists 1× NVIDIA GeForce GTX 1080 Ti; CPU only: no GPU listed (exit 127)\$' check-junit.out
	expect_grep '^gpu-pod  *node-3  *pass  *1× GeForce RTX 2080 Ti (11 GiB): nvidia-smi -L lists 1× NVIDIA GeForce RTX 2080 Ti; CPU only: no GPU listed (exit 127)\$' check-junit.out
	expect_grep '^gpu-pod  *node-4  *pass  *1× GeForce RTX 3070 (8 GiB): nvidia-smi -L lists 1× NVIDIA GeForce RTX 3070; CPU only: no GPU listed (exit 127)\$' check-junit.out
	expect_no_grep '^gpu-pod  *node-1 ' check-junit.out
	grep -o '<testcase [^>]*gpu-pod[^>]*>' junit.xml >cases
	expect_eq 3 \"\$(wc -l <cases)\" 'gpu-pod testcases'
	for n in node-2 node-3 node-4; do expect_grep \$n cases; done
	expect_no_grep '<failure' junit.xml
	kc get pods -A -l provision.dev/check=gpu-pod -o name >left2
	expect_eq '' \"\$(cat left2)\" 'check pods left behind by check'
"

test_case "stand-ins: RuntimeClass nvidia, operands under it, the toolkit's binaries and its own file, containerd's runtimes, CRI ok" "
	expect_eq nvidia \"\$(kc get runtimeclass nvidia -o jsonpath='{.handler}')\" 'RuntimeClass handler'
	expect_eq nvidia \"\$(kc -n gpu-operator get ds nvidia-device-plugin-daemonset -o jsonpath='{.spec.template.spec.runtimeClassName}')\" 'device plugin runtimeClassName'
	for f in nvidia-container-runtime nvidia-container-runtime.cdi nvidia-container-runtime.legacy; do
		tb node-2 test -x $TK/\$f
	done
	tb node-2 cat /var/lib/provision/nvidia-toolkit/conf.d/99-nvidia.toml >toolkit.toml
	tb node-2 test ! -e /etc/containerd/conf.d/99-nvidia.toml
	expect_grep 'BinaryName = \"$TK/nvidia-container-runtime\"' toolkit.toml
	tb node-2 containerd config dump >dump
	python3 - dump <<-'EOF'
		import sys, tomllib
		cri = tomllib.load(open(sys.argv[1], 'rb'))['plugins']['io.containerd.grpc.v1.cri']['containerd']
		rt = cri['runtimes']
		assert rt['runc']['options']['SystemdCgroup'] is True, rt['runc']
		assert rt['nvidia']['options']['BinaryName'] == '/usr/local/nvidia/toolkit/nvidia-container-runtime', rt['nvidia']
		assert cri['default_runtime_name'] == 'nvidia', cri['default_runtime_name']
	EOF
	tb node-2 ctr plugins ls >plugins
	expect_grep '^io.containerd.grpc.v1  *cri  .* ok *\$' plugins
	printf '%s\n' '{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nope\"},\"spec\":{\"runtimeClassName\":\"nope\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}' >nope.json
	if tb node-1 sh -c 'kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f -' <nope.json >nope.out 2>&1; then false; fi
	expect_grep 'pods \"nope\" is forbidden: pod rejected: RuntimeClass \"nope\" not found' nope.out
"

test_case "a pod holding nvidia.com/gpu under plain runc finds no nvidia-smi" "
	printf '%s\n' '{\"apiVersion\":\"node.k8s.io/v1\",\"kind\":\"RuntimeClass\",\"metadata\":{\"name\":\"plain\"},\"handler\":\"runc\"}' >rc.json
	tb node-1 sh -c 'kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f -' <rc.json
	printf '%s\n' '{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"runc-gpu\"},\"spec\":{\"restartPolicy\":\"Never\",\"runtimeClassName\":\"plain\",\"nodeSelector\":{\"kubernetes.io/hostname\":\"node-2\"},\"containers\":[{\"name\":\"cuda\",\"image\":\"nvcr.io/nvidia/cuda:12.5.1-base-ubi8\",\"command\":[\"sh\",\"-c\",\"nvidia-smi -L\"],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}' >pod.json
	tb node-1 sh -c 'kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f -' <pod.json
	i=0
	until [ \"\$(kc get pod runc-gpu -o jsonpath='{.status.phase}')\" = Failed ]; do
		i=\$((i + 1)); [ \$i -lt 30 ] || { kc get pod runc-gpu -o yaml; false; }; sleep 2
	done
	expect_eq 127 \"\$(kc get pod runc-gpu -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')\" 'exit status'
	kc delete pod runc-gpu
	kc delete runtimeclass plain
"

# cuda_pod NAME ENV-JSON: a pod of the CUDA image on node-2, no GPU request,
# under the node's default runtime (nvidia), running nvidia-smi -L; its exit status.
cuda_pod() {
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"restartPolicy":"Never","nodeSelector":{"kubernetes.io/hostname":"node-2"},"containers":[{"name":"cuda","image":"nvcr.io/nvidia/cuda:12.5.1-base-ubi8","command":["sh","-c","nvidia-smi -L"],"env":%s}]}}\n' \
		"$1" "$2" | tb node-1 sh -c 'kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f -' >/dev/null
	i=0
	until ph=$(kc get pod "$1" -o jsonpath='{.status.phase}') && { [ "$ph" = Succeeded ] || [ "$ph" = Failed ]; }; do
		i=$((i + 1))
		[ $i -lt 30 ] || { kc get pod "$1" -o yaml; return 1; }
		sleep 2
	done
	kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'
	kc delete pod "$1" >/dev/null
}

# (The hub's CPU-only profile sets void: t0231 and the demo show it; gpu-pod
# above runs its spec on every GPU node.)
test_case "no GPU request on a GPU node: the CUDA image's NVIDIA_VISIBLE_DEVICES=all gets every GPU, the CPU profile's void none" "
	expect_eq 0 \"\$(cuda_pod cuda-all '[]')\" 'nvidia-smi -L without a GPU request (the leak the CPU profile closes)'
	expect_eq 127 \"\$(cuda_pod cuda-void '[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"void\"}]')\" 'nvidia-smi -L with NVIDIA_VISIBLE_DEVICES=void'
"

test_case "helm: the pinned archive's program; both releases deployed, revision 1, as Secrets" "
	tb node-1 /usr/local/bin/helm version --short >hv
	expect_grep '^v3.18.4+g' hv
	tar -xzOf '$TEST_DIR/kube/repo/artifacts/helm-v3.18.4-linux-amd64.tar.gz' linux-amd64/helm | sha256sum | cut -c1-64 >want
	expect_eq \"\$(cat want)\" \"\$(tb node-1 sha256sum /usr/local/bin/helm | cut -c1-64)\" 'helm binary'
	tb node-1 helm --kubeconfig /etc/kubernetes/admin.conf list -A -o json >releases.json
	python3 - releases.json <<-'EOF'
		import json, sys
		rs = {r['name']: r for r in json.load(open(sys.argv[1]))}
		assert sorted(rs) == ['gpu-operator', 'nfs-subdir-external-provisioner'], sorted(rs)
		assert rs['gpu-operator']['chart'] == 'gpu-operator-v26.7.0' and rs['gpu-operator']['namespace'] == 'gpu-operator', rs
		assert rs['nfs-subdir-external-provisioner']['chart'] == 'nfs-subdir-external-provisioner-4.0.18', rs
		assert rs['nfs-subdir-external-provisioner']['namespace'] == 'nfs-provisioner', rs
		assert all(r['status'] == 'deployed' and r['revision'] == '1' for r in rs.values()), rs
	EOF
	kc -n gpu-operator get secrets -o name >sec
	expect_grep '^secret/sh.helm.release.v1.gpu-operator.v1\$' sec
	kc -n nfs-provisioner get secrets -o name >sec
	expect_grep '^secret/sh.helm.release.v1.nfs-subdir-external-provisioner.v1\$' sec
"

test_case "values files rendered from the facts: driver.enabled false, the toolkit's file outside containerd's imports, the inventory's NFS" "
	tb node-1 cat /etc/provision/helm/gpu-operator.values.yaml >gpu.values
	sed -n '/^driver:/,/^[a-z]/p' gpu.values >driver.part
	expect_grep '^  enabled: false\$' driver.part
	expect_grep '^#   node-2: 1x \"NVIDIA GeForce GTX 1080 Ti\", host driver \"535.154.05\"\$' gpu.values
	expect_grep '^#   node-4: 1x \"NVIDIA GeForce RTX 3070\", host driver \"550.107.02\"\$' gpu.values
	sed -n '/^toolkit:/,/^[a-z]/p' gpu.values >toolkit.part
	expect_grep '^  enabled: true\$' toolkit.part
	expect_grep '^      value: /var/lib/provision/nvidia-toolkit/containerd.toml\$' toolkit.part
	expect_grep '^      value: /var/lib/provision/nvidia-toolkit/conf.d/99-nvidia.toml\$' toolkit.part
	grep -A1 '^    - name: RUNTIME_RESTART_MODE\$' toolkit.part >restart.part
	expect_grep '^      value: none\$' restart.part
	tb node-1 cat /etc/provision/helm/nfs-subdir-external-provisioner.values.yaml >nfs.values
	expect_grep \"^  server: \\\"$ADDR1\\\"\$\" nfs.values
	expect_grep '^  path: \"/nfs\"\$' nfs.values
	expect_grep '^  name: nfs\$' nfs.values
	expect_grep '^  defaultClass: true\$' nfs.values
	tb node-1 helm --kubeconfig /etc/kubernetes/admin.conf status gpu-operator -n gpu-operator -o json >st.json
	python3 -c 'import json,sys; c=json.load(open(\"st.json\"))[\"config\"]; assert c[\"driver\"][\"enabled\"] is False and c[\"toolkit\"][\"enabled\"] is True, c' 
	kc -n gpu-operator get daemonsets -o name >ds
	expect_no_grep nvidia-driver-daemonset ds
	expect_grep nvidia-device-plugin-daemonset ds
"

test_case "GPU nodes: feature discovery labels, allocatable nvidia.com/gpu from nvidia-smi, validator running" "
	kc get nodes -o json >nodes.json
	kc -n gpu-operator get pods -o json >gpu-pods.json
	python3 - nodes.json gpu-pods.json <<-'EOF'
		import json, sys
		nodes = {n['metadata']['name']: n for n in json.load(open(sys.argv[1]))['items']}
		want = {'node-2': ('NVIDIA-GeForce-GTX-1080-Ti', '11264'), 'node-3': ('NVIDIA-GeForce-RTX-2080-Ti', '11264'),
		        'node-4': ('NVIDIA-GeForce-RTX-3070', '8192')}
		for n, (product, mem) in want.items():
		    l = nodes[n]['metadata']['labels']
		    assert l.get('nvidia.com/gpu.product') == product, (n, l)
		    assert l.get('nvidia.com/gpu.count') == '1' and l.get('nvidia.com/gpu.memory') == mem, (n, l)
		    assert l.get('nvidia.com/gpu.present') == 'true', (n, l)
		    assert nodes[n]['status']['allocatable'].get('nvidia.com/gpu') == '1', (n, nodes[n]['status']['allocatable'])
		    assert nodes[n]['status']['capacity'].get('nvidia.com/gpu') == '1', n
		n1 = nodes['node-1']
		assert 'nvidia.com/gpu' not in n1['status']['allocatable'] and 'nvidia.com/gpu.product' not in n1['metadata']['labels'], n1
		# Every GPU as nvidia-smi lists it (roles/node-labels), for the hub's profiles.
		gpus = {'node-2': 'NVIDIA GeForce GTX 1080 Ti:11264', 'node-3': 'NVIDIA GeForce RTX 2080 Ti:11264',
		        'node-4': 'NVIDIA GeForce RTX 3070:8192'}
		for n, v in gpus.items():
		    a = nodes[n]['metadata'].get('annotations') or {}
		    assert a.get('provision.dev/gpus') == v, (n, a)
		assert 'provision.dev/gpus' not in (n1['metadata'].get('annotations') or {}), n1['metadata']
		pods = json.load(open(sys.argv[2]))['items']
		val = {p['spec']['nodeName']: p for p in pods if p['metadata']['labels'].get('app') == 'nvidia-operator-validator'}
		assert sorted(val) == ['node-2', 'node-3', 'node-4'], sorted(val)
		for n, p in val.items():
		    assert p['status']['phase'] == 'Running', (n, p['status'])
		    inits = {c['name']: c['state'] for c in p['status']['initContainerStatuses']}
		    assert sorted(inits) == ['cuda-validation', 'driver-validation', 'plugin-validation', 'toolkit-validation'], inits
		    assert all(s.get('terminated', {}).get('reason') == 'Completed' for s in inits.values()), (n, inits)
	EOF
	for n in node-2 node-3 node-4; do
		tb \$n ls /run/nvidia/validations >v
		for c in driver toolkit cuda plugin; do expect_grep \"^\$c-ready\\\$\" v; done
	done
"

test_case "storage: StorageClass nfs the only default; the trial claim bound and is gone" "
	kc get storageclass -o json >sc.json
	python3 - sc.json <<-'EOF'
		import json, sys
		scs = json.load(open(sys.argv[1]))['items']
		d = [s['metadata']['name'] for s in scs if s['metadata'].get('annotations', {}).get('storageclass.kubernetes.io/is-default-class') == 'true']
		assert d == ['nfs'], d
		nfs = [s for s in scs if s['metadata']['name'] == 'nfs'][0]
		assert nfs['provisioner'] == 'cluster.local/nfs-subdir-external-provisioner', nfs
	EOF
	tb node-1 cat /var/lib/provision/helm/nfs-trial >trial
	expect_grep '^trial claim bound in [0-9]*s to pvc-[0-9a-f-]* (StorageClass nfs), then deleted\$' trial
	kc get pvc -A -o name >pvcs
	expect_no_grep provision-trial-claim pvcs
	kc get pv -o name >pvs
	expect_eq '' \"\$(cat pvs)\" 'PersistentVolumes left'
"

test_case "a claim of our own: Bound to a folder NAMESPACE-CLAIM-VOLUME on the export, archived when deleted" "
	printf 'apiVersion: v1\\nkind: PersistentVolumeClaim\\nmetadata:\\n  name: t0425\\n  namespace: default\\nspec:\\n  accessModes: [ReadWriteOnce]\\n  resources:\\n    requests:\\n      storage: 1Gi\\n' >pvc.yaml
	tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf create -f - <pvc.yaml
	i=0
	until [ \"\$(kc get pvc t0425 -o 'jsonpath={.status.phase}')\" = Bound ]; do
		i=\$((i + 1)); [ \$i -lt 60 ] || { kc get pvc t0425 -o yaml; false; }; sleep 2
	done
	pv=\$(kc get pvc t0425 -o 'jsonpath={.spec.volumeName}')
	expect_eq \"pvc-\$(kc get pvc t0425 -o 'jsonpath={.metadata.uid}')\" \"\$pv\" 'volume name'
	expect_eq nfs \"\$(kc get pvc t0425 -o 'jsonpath={.spec.storageClassName}')\" 'class of a claim without one'
	expect_eq \"$ADDR1 /nfs/default-t0425-\$pv\" \"\$(kc get pv \$pv -o 'jsonpath={.spec.nfs.server} {.spec.nfs.path}')\" 'the volume'
	node=\$(kc -n nfs-provisioner get pods -l app=nfs-subdir-external-provisioner -o 'jsonpath={.items[0].spec.nodeName}')
	dir=/nfs
	[ \"\$node\" = node-1 ] || dir=/var/lib/fake-kubernetes/nfs/$ADDR1/nfs
	tb \$node test -d \$dir/default-t0425-\$pv
	kc delete pvc t0425
	i=0
	until ! kc get pv \$pv >/dev/null 2>&1; do
		i=\$((i + 1)); [ \$i -lt 60 ] || false; sleep 2
	done
	tb \$node test -d \$dir/archived-default-t0425-\$pv
	tb \$node test ! -e \$dir/default-t0425-\$pv
"

test_case "a second up changes nothing; the releases stay at revision 1" "
	$UP >up2.out 2>&1 || { run_tail up2.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *0 changed\" up2.out; done
	tb node-1 helm --kubeconfig /etc/kubernetes/admin.conf list -A -o json >r2.json
	expect_eq 2 \"\$(grep -o '\"revision\":\"1\"' r2.json | wc -l | tr -d ' ')\" 'releases at revision 1'
	expect_grep '^validation: [0-9]* passed, 0 failed' up2.out
"

# Drift (issue 21): what the next up would change on a cluster up left as
# the inventory says, reported by check (a drift row per differing step),
# shown by plan, put back by up.  The GPU nodes' nvidia runtimes are in
# provision's own config.toml (the toolkit writes its drop-in outside
# containerd's imports, conf.d/99-nvidia.toml as v1.20.0 does): never drift.
NFS_REL="nfs-subdir-external-provisioner -n nfs-provisioner"
HELM1="helm --kubeconfig /etc/kubernetes/admin.conf"
test_case "drift: none after up; the GPU nodes' nvidia runtimes and the toolkit's own file are not drift; helm get values as Helm 3 prints it" "
	$CHECK >drift0.out 2>&1 || { run_tail drift0.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^drift  *\$n  *pass  *as provision left it ([0-9]* steps checked)\\\$\" drift0.out; done
	expect_eq 3 \"\$(tb node-2 grep -c '^    BinaryName = \"$TK/' /etc/containerd/config.toml)\" 'nvidia runtimes in node-2 config.toml'
	tb node-2 test -s /var/lib/provision/nvidia-toolkit/conf.d/99-nvidia.toml || { echo 'node-2: no toolkit drop-in'; false; }
	tb node-1 $HELM1 get values $NFS_REL >gv.table
	expect_eq 'USER-SUPPLIED VALUES:' \"\$(head -n 1 gv.table)\" 'table header'
	expect_grep '^  defaultClass: true\$' gv.table
	tb node-1 $HELM1 get values $NFS_REL -o json >gv.json
	python3 -c 'import json,sys; v=json.load(open(\"gv.json\")); assert v[\"storageClass\"][\"name\"] == \"nfs\" and \"replicaCount\" not in v, v'
	tb node-1 $HELM1 get values $NFS_REL --all -o yaml >gv.all
	expect_grep '^replicaCount: ' gv.all
	expect_status 1 tb node-1 $HELM1 get values $NFS_REL --bogus >gv.err 2>&1
	expect_grep '^Error: unknown flag: --bogus\$' gv.err
"

test_case "drift: helm upgrade --set by hand, config.toml edited by hand on node-3, kubelet unheld on node-4: check fails with the keys (secret masked), lines and package" "
	tb node-1 $HELM1 upgrade $NFS_REL /var/lib/provision/charts/nfs-subdir-external-provisioner.tgz \
		--reuse-values --set storageClass.archiveOnDelete=false --set extra.apiToken=t0425-drift-s3cret >hand.out 2>&1 || { cat hand.out; false; }
	tb node-3 sed -i 's|^  sandbox_image = .*|  sandbox_image = \"registry.k8s.io/pause:3.6\"|' /etc/containerd/config.toml
	tb node-4 apt-mark unhold kubelet
	expect_status 1 $CHECK >drift1.out 2>&1
	cat drift1.out
	expect_grep '^drift  *node-1  *fail  *nfs-provisioner › 10-release: .*changed by hand:;   extra.apiToken: (not set) -> (secret);   storageClass.archiveOnDelete: true -> false' drift1.out
	expect_grep '^drift  *node-3  *fail  *containerd › /etc/containerd/config.toml: -  sandbox_image = \"registry.k8s.io/pause:3.6\"; +  sandbox_image = \"registry.k8s.io/pause:3.10\"' drift1.out
	expect_grep '^drift  *node-4  *fail  *kube-packages › 20-packages: .*kubelet: 1.33.9-[^ ]*, not held' drift1.out
	expect_grep '^drift  *node-2  *pass ' drift1.out
	expect_no_grep 't0425-drift-s3cret' drift1.out
"

test_case "drift: plan shows the keys, the lines and the package; up puts all three back; check clean" "
	$PROVISION plan -i $INV --state $STATE --roles $ROLES --no-tui >drift-plan.out 2>&1 || true
	expect_grep '^  ~ nfs-provisioner › 10-release\$' drift-plan.out
	expect_grep '^        storageClass.archiveOnDelete: true -> false\$' drift-plan.out
	expect_grep '^      +  sandbox_image = \"registry.k8s.io/pause:3.10\"\$' drift-plan.out
	expect_grep '^      kubelet: 1.33.9-[^ ]*, not held\$' drift-plan.out
	$UP >drift-up.out 2>&1 || { run_tail drift-up.out; false; }
	expect_grep '\\[node-1\\] nfs-provisioner › 10-release … changed' drift-up.out
	expect_grep '\\[node-3\\] containerd › /etc/containerd/config.toml … changed' drift-up.out
	expect_grep '\\[node-4\\] kube-packages › 20-packages … changed' drift-up.out
	expect_eq hi \"\$(tb node-4 dpkg-query -W -f='\${db:Status-Abbrev}' kubelet | cut -c1-2)\" 'kubelet held again'
	$CHECK >drift2.out 2>&1 || { run_tail drift2.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^drift  *\$n  *pass \" drift2.out; done
	for f in drift0.out drift1.out drift-plan.out drift-up.out drift2.out; do expect_no_grep 't0425-drift-s3cret' \$f; done
"

test_case "up -l node-1 (GPU nodes left out): their recorded facts keep the GPU Operator's values; nothing changes" "
	$UP -l node-1 >up3.out 2>&1 || { run_tail up3.out; false; }
	expect_grep '^node-1  *done  *0 changed' up3.out
	tb node-1 cat /etc/provision/helm/gpu-operator.values.yaml >gpu3.values
	expect_eq \"\$(cat gpu.values)\" \"\$(cat gpu3.values)\" 'values after up -l node-1'
"

# hist: every release's revisions as helm history prints them (revision,
# status, chart, description), both releases
hist() {
	for r in 'gpu-operator -n gpu-operator' 'nfs-subdir-external-provisioner -n nfs-provisioner'; do
		# shellcheck disable=SC2086 # release and namespace: words
		tb node-1 helm --kubeconfig /etc/kubernetes/admin.conf history $r -o json | python3 -c '
import json, sys
for h in json.load(sys.stdin):
    print(sys.argv[1], h["revision"], h["status"], h["chart"], h["description"])' "${r%% *}"
	done
}
test_case "helm 4 takes over: without helm: 3, up replaces /usr/local/bin/helm only; every release's history as Helm 3 left it; helm 4 reads them (client-side apply); check clean" "
	hist >hist3
	expect_grep '^gpu-operator 1 deployed gpu-operator-v26.7.0 Install complete\$' hist3
	expect_grep '^nfs-subdir-external-provisioner 1 superseded nfs-subdir-external-provisioner-4.0.18 Install complete\$' hist3
	expect_grep '^nfs-subdir-external-provisioner [0-9]* deployed nfs-subdir-external-provisioner-4.0.18 Upgrade complete\$' hist3
	sed -i '/^  helm: 3\$/d' '$INV'
	$UP >up-h4.out 2>&1 || { run_tail up-h4.out; false; }
	expect_grep '\\[node-1\\] helm › /var/lib/provision/artifacts/helm-linux.tar.gz … changed' up-h4.out
	expect_grep '\\[node-1\\] helm › 10-install … changed' up-h4.out
	grep '… changed' up-h4.out >changed-h4
	expect_eq 2 \"\$(grep -c . changed-h4)\" 'steps changed (the helm archive and binary only)'
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done \" up-h4.out; done
	tb node-1 /usr/local/bin/helm version --short >hv4
	expect_grep '^v4.2.4+g3900f43\$' hv4
	tar -xzOf '$TEST_DIR/kube/repo/artifacts/helm-v4.2.4-linux-amd64.tar.gz' linux-amd64/helm | sha256sum | cut -c1-64 >want4
	expect_eq \"\$(cat want4)\" \"\$(tb node-1 sha256sum /usr/local/bin/helm | cut -c1-64)\" 'helm 4 binary'
	hist >hist4
	expect_eq \"\$(cat hist3)\" \"\$(cat hist4)\" 'the releases'\\'' history under helm 4 (no new revision, no reinstall)'
	sed 's/^/# helm 4 history: /' hist4 >&3
	tb node-1 $HELM1 get metadata nfs-subdir-external-provisioner -n nfs-provisioner >meta4
	expect_grep '^APPLY_METHOD: client-side apply (defaulted)\$' meta4
	expect_grep '^STATUS: deployed\$' meta4
	$CHECK >check-h4.out 2>&1 || { run_tail check-h4.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^drift  *\$n  *pass  *as provision left it\" check-h4.out; done
	grep '^drift ' check-h4.out | sed 's/^/# /' >&3
" 3>&1

test_case "facts decide: with node-4's driver not loaded, plan shows driver.enabled turning true" "
	'$GPU_NODE' '$TB' node-4 rtx3070 --driver-not-loaded --packages >gpu-node.out 2>&1 || { cat gpu-node.out; false; }
	$PROVISION plan -i $INV --state $STATE --roles $ROLES --phases addons --no-tui -v >plan.out 2>&1 || true
	expect_grep '+  enabled: true\$' plan.out
	expect_grep '+#   node-4: 1x \"NVIDIA PCI device 0x2484\", host driver not working\$' plan.out
"

# check after that up: node-4 validated; and drift, because the next up
# would change two things: the values it would render now (node-4's driver
# works, loaded by the driver container: driver.enabled false again) and
# node-4's new driver packages, which no nvidia role has held yet.
test_case "up --phases addons then: node-4 fails its preflight alone; driver.enabled true, the operator's driver container loads node-4's driver; check: node-4 validated, drift: the values up would render now and node-4's unheld driver packages, nothing else fails" "
	expect_status 1 $UP --phases addons >up4.out 2>&1
	expect_grep '^\\[node-4\\] preflight: error: nvidia-smi fails (exit 9)' up4.out
	expect_grep '\\[node-1\\] gpu-operator › 10-release … changed' up4.out
	for n in node-1 node-2 node-3; do expect_grep \"^\$n  *done \" up4.out; done
	tb node-1 cat /etc/provision/helm/gpu-operator.values.yaml >gpu4.values
	sed -n '/^driver:/,/^[a-z]/p' gpu4.values >driver4.part
	expect_grep '^  enabled: true\$' driver4.part
	kc -n gpu-operator get daemonset nvidia-driver-daemonset -o 'jsonpath={.status.numberReady}' >ready
	expect_eq 3 \"\$(cat ready)\" 'driver pods ready'
	expect_eq 'driver loaded' \"\$(tb node-4 grep '^driver ' /etc/provision-fake-gpu)\" 'node-4 driver state'
	expect_eq 'NVIDIA GeForce RTX 3070' \"\$(tb node-4 nvidia-smi --query-gpu=name --format=csv,noheader)\"
	tb node-1 helm --kubeconfig /etc/kubernetes/admin.conf list -n gpu-operator -o json >r4.json
	expect_grep '\"revision\":\"2\"' r4.json
	# helm 4's first upgrade of the release Helm 3 installed: revision 2 of
	# it, client-side as revision 1 was (--server-side=auto)
	hist >hist5
	expect_grep '^gpu-operator 1 superseded gpu-operator-v26.7.0 Install complete\$' hist5
	expect_grep '^gpu-operator 2 deployed gpu-operator-v26.7.0 Upgrade complete\$' hist5
	tb node-1 $HELM1 get metadata gpu-operator -n gpu-operator >meta5
	expect_grep '^APPLY_METHOD: client-side apply\$' meta5
	expect_status 1 $CHECK >check4.out 2>&1
	expect_grep '^gpu-operator-validated  *node-4  *pass ' check4.out
	# the row is the diff's first 600 characters: node-4's summary line
	# comes first; plan -v shows the whole difference, driver.enabled in it
	expect_grep '^drift  *node-1  *fail  *gpu-operator › /etc/provision/helm/gpu-operator.values.yaml: -#   node-4: 1x .NVIDIA PCI device 0x2484., host driver not working; +#   node-4: 1x .NVIDIA GeForce RTX 3070., host driver .550.107.02.; ' check4.out
	$PROVISION plan -i $INV --state $STATE --roles $ROLES --phases addons --no-tui -v >plan4.out 2>&1 || true
	expect_grep '^ *-  enabled: true\$' plan4.out
	expect_grep '^ *+  enabled: false\$' plan4.out
	expect_grep '^drift  *node-4  *fail  *nvidia › 20-hold: not held: libnvidia-compute-550 nvidia-driver-550 (' check4.out
	expect_eq 2 \"\$(grep -c '^[a-z-]*  *[^ ]*  *fail ' check4.out)\" 'failed checks (the two drifts)'
"

test_case "the nvidia runtime's binary taken away on node-3: gpu-pod fails there, node-2 still passes" "
	tb node-3 mv $TK/nvidia-container-runtime $TK/nvidia-container-runtime.away
	if $CHECK >check5.out 2>&1; then cat check5.out; false; fi
	tb node-3 mv $TK/nvidia-container-runtime.away $TK/nvidia-container-runtime
	expect_grep '^gpu-pod  *node-3  *fail  *1× GeForce RTX 2080 Ti (11 GiB): still Pending after 90s: ContainerCreating' check5.out
	# its CPU-only profile's pod is not started there for another 90 s
	expect_grep '^gpu-pod  *node-3  *fail .*not run: an earlier check pod on node-3 did not start within 90s' check5.out
	expect_grep '^gpu-pod  *node-2  *pass ' check5.out
"

test_case "the old layout (toolkit edits a conf.d drop-in, SIGHUP) breaks node-3: CRI error, NotReady, check fails" "
	tb node-3 env CONTAINERD_CONFIG=/etc/containerd/conf.d/99-nvidia.toml CONTAINERD_SET_AS_DEFAULT=false \
		python3 /usr/lib/fake-kubernetes/images/nvidia-toolkit-containerd setup $TK
	tb node-3 sh -c 'kill -HUP \$(systemctl show -p MainPID --value containerd)'
	i=0
	until tb node-3 ctr plugins ls >plugins3 2>&1 && grep -q '^io.containerd.grpc.v1  *cri  .* error *\$' plugins3; do
		i=\$((i + 1)); [ \$i -lt 30 ] || { cat plugins3; false; }; sleep 1
	done
	tb node-3 containerd config dump >dump3
	expect_no_grep 'SystemdCgroup' dump3
	i=0
	until kc get node node-3 -o json >ready3 && grep -q '\"message\": \"container runtime is down\"' ready3; do
		i=\$((i + 1)); [ \$i -lt 30 ] || { cat ready3; false; }; sleep 2
	done
	if $CHECK >check6.out 2>&1; then cat check6.out; false; fi
	expect_grep '^node-ready  *node-3  *fail ' check6.out
	expect_grep '^gpu-pod  *node-3  *skip  *no GPU profile lands on this node' check6.out
	tb node-3 rm /etc/containerd/conf.d/99-nvidia.toml
	tb node-3 systemctl restart containerd
"

test_case "no token, certificate key or CA private key in any file the runs wrote or the nodes logged" "
	collect_node_logs '$TEST_DIR/collected'
	secrets_collected secrets.list
	expect_eq 20 \"\$(grep -c . secrets.list)\" 'secret strings collected (4 tokens x 2, 4 keys x 3 lines)'
	files_written files
	expect_grep '^./up2.out\$' files
	expect_grep '^./collected/node-3.pods.log\$' files
	found=\$(cd '$TEST_DIR' && tr '\\n' '\\0' <'$TEST_DIR/files' | xargs -0 grep -l -F -f '$TEST_DIR/secrets.list' || true)
	expect_eq '' \"\$found\" 'files holding a secret'
"

test_done
