#!/bin/sh
# t0426-gpu-pods: "a GPU pod sees its GPU" (issue 17).  A testbed with
# node-1 the control plane (no GPU), node-2 an RTX 3070 and node-3 a GTX
# 1080 Ti (tests/fakes/nvidia), containerd Debian's real one, the GPU
# Operator's stand-in doing what toolkit v1.16.1 does on a GPU node
# (tests/fakes/kube/chart_gpu_operator.py) and the kubelet's stand-in
# giving a container its GPUs only under the nvidia runtime of the node's
# real containerd (tests/fakes/kube/kubelet.py).
#   - up: exit 0 and the validation's gpu-pod check passes on each GPU
#     node with its model listed by nvidia-smi -L; `check --junit` has a
#     testcase per node;
#   - what the stand-ins show of the real cluster: RuntimeClass nvidia
#     (handler nvidia), the operands under it, the toolkit's binaries, its
#     copy of the containerd config written where containerd never reads
#     it, containerd's own config with runc (SystemdCgroup) and nvidia,
#     the CRI plugin ok; a pod naming a missing RuntimeClass is rejected
#     with the API server's message; a pod holding nvidia.com/gpu under
#     plain runc finds no nvidia-smi (issue 17's bug 2);
#   - the nvidia runtime's binary taken away on node-3: check fails
#     gpu-pod there (the pod never gets a sandbox), node-2 still passes;
#   - the old layout (the toolkit editing a drop-in containerd 1.6
#     imports, then its default restart: SIGHUP) on node-3: the real
#     containerd loses its CRI plugin, node-3 turns NotReady ("container
#     runtime is down") and check fails there (issue 17's bug 1).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="gpu-nodes up junit stand-ins runc-pod runtime-gone old-layout"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
test_need_cmd nsenter
cluster_testbed 3 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
GPU_NODE=$SRC_ROOT/tests/fakes/nvidia/gpu-node.sh
UP="$PROVISION up -i $INV --state $STATE --roles $ROLES --no-tui"
CHECK="$PROVISION check -i $INV --state $STATE"

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
TK=/usr/local/nvidia/toolkit

test_case "GPU nodes: node-2 RTX 3070, node-3 GTX 1080 Ti, drivers loaded" "
	'$GPU_NODE' '$TB' node-2 rtx3070 --packages
	'$GPU_NODE' '$TB' node-3 gtx1080ti --packages
"

test_case "up: exit 0, every validation check passes" "
	$UP >up.out 2>&1 || { tail -n 60 up.out; false; }
	expect_grep '^validation: [0-9]* passed, 0 failed' up.out
	kc get pods -A -l provision.dev/check=gpu-pod -o name >left
	expect_eq '' \"\$(cat left)\" 'check pods left behind'
"

test_case "check --junit: gpu-pod passes on each GPU node with its model listed, a testcase per node" "
	$CHECK --junit junit.xml >check.out 2>&1 || { tail -n 40 check.out; false; }
	expect_grep '^gpu-pod  *node-2  *pass  *1× GeForce RTX 3070 (8 GiB): nvidia-smi -L lists 1× NVIDIA GeForce RTX 3070\$' check.out
	expect_grep '^gpu-pod  *node-3  *pass  *1× GeForce GTX 1080 Ti (11 GiB): nvidia-smi -L lists 1× NVIDIA GeForce GTX 1080 Ti\$' check.out
	expect_no_grep '^gpu-pod  *node-1 ' check.out
	grep -o '<testcase [^>]*gpu-pod[^>]*>' junit.xml >cases
	expect_eq 2 \"\$(wc -l <cases)\" 'gpu-pod testcases'
	expect_grep 'node-2' cases
	expect_grep 'node-3' cases
	expect_no_grep '<failure' junit.xml
"

test_case "stand-ins: RuntimeClass nvidia, operands under it, the toolkit's binaries and its own file, containerd's runtimes, CRI ok" "
	expect_eq nvidia \"\$(kc get runtimeclass nvidia -o jsonpath='{.handler}')\" 'RuntimeClass handler'
	expect_eq nvidia \"\$(kc -n gpu-operator get ds nvidia-device-plugin-daemonset -o jsonpath='{.spec.template.spec.runtimeClassName}')\" 'device plugin runtimeClassName'
	for f in nvidia-container-runtime nvidia-container-runtime.cdi nvidia-container-runtime.legacy; do
		tb node-2 test -x $TK/\$f
	done
	tb node-2 cat /var/lib/provision/nvidia-toolkit/containerd.toml >toolkit.toml
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

test_case "the nvidia runtime's binary taken away on node-3: gpu-pod fails there, node-2 still passes" "
	tb node-3 mv $TK/nvidia-container-runtime $TK/nvidia-container-runtime.away
	if $CHECK >check2.out 2>&1; then cat check2.out; false; fi
	tb node-3 mv $TK/nvidia-container-runtime.away $TK/nvidia-container-runtime
	expect_grep '^gpu-pod  *node-3  *fail  *1× GeForce GTX 1080 Ti (11 GiB): still Pending after 90s: ContainerCreating' check2.out
	expect_grep '^gpu-pod  *node-2  *pass ' check2.out
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
	if $CHECK >check3.out 2>&1; then cat check3.out; false; fi
	expect_grep '^node-ready  *node-3  *fail ' check3.out
	expect_grep '^gpu-pod  *node-3  *skip  *no GPU profile lands on this node' check3.out
	tb node-3 rm /etc/containerd/conf.d/99-nvidia.toml
	tb node-3 systemctl restart containerd
"

test_done
