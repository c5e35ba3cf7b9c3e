#!/bin/sh
# tests/demo.sh: provision on a local testbed that mirrors seed lab B
# (REFERENCE.md §1), as a lab admin would use it.  `make demo` builds first;
# run as root on Debian 12.
#
#   lab B       here     role                     GPU (tests/fakes/nvidia)
#   b-0         node-1   control plane            -
#   b-1         node-2   NFS server               -
#   b-2         node-3   worker                   GeForce GTX 1080 Ti
#   b-3         node-4   worker                   GeForce RTX 2080 Ti
#   b-4         node-5   worker, shared by 4      GeForce RTX 3070
#   (new)       node-6   worker, added later      GeForce RTX 4080
#
# Each node is a systemd-nspawn container with its own address on a private
# bridge (198.18.0.0/15) and its own OpenSSH sshd (tests/testbed).  There is
# no GPU and no Kubernetes on this machine: nvidia-smi, kubeadm, kubelet,
# kubectl, helm and the charts are the stand-ins of tests/fakes, installed
# by provision's own roles from a local apt repository and artifact server
# exactly as the real ones would be; the hub is Debian's real jupyterhub.
#
# Shown: `provision inventory`, `provision up` through every phase (the live
# view on a terminal, plain lines otherwise), `provision check` (every
# validation, the hub's /hub/health over HTTP included), the hub's profiles
# generated from the cluster's capacity (node-5's RTX 3070 shared by 4
# notebooks: gpu_sharing, the GPU Operator's time-slicing, a profile that
# says what one share gives), a second `up` that changes nothing,
# `provision add-node` of the RTX 4080 worker (only it and the control plane
# are touched; its profile appears), then the nodes are removed.
#
# DEMO_RESET=1 (`make demo-reset`): before the nodes are removed, `provision
# reset` of the whole cluster (all six nodes, the hub's control plane
# included), then each node is checked from this machine, apart from
# reset's own verification: nothing under /root/.kube, /etc/provision and
# /var/lib/provision; no file under /etc/kubernetes; /var/lib/kubelet,
# /var/lib/etcd and /var/lib/cni gone or empty; no Flannel file in
# /etc/cni/net.d; no cni0 or flannel.1; kubelet.service not active; none of
# the ports 6443 2379 2380 10250 10256 10257 10259 listening; the demo
# fails on a node that is not clean.  About 15 s more (reset took 6 s).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
K8S=${DEMO_K8S:-1.37.1}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (the test nodes need network namespaces)" >&2
	exit 2
fi

# The test harness gives the scratch folder (tests/.work/demo.PID) and the
# cleanup at exit (test_at_exit: the testbed goes down however this ends)
# that the testbed helpers of the cluster tests use.
# shellcheck source=tests/lib.sh
. "$top/tests/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$top/tests/fakes/cluster-testbed.sh"

step "test nodes: lab B on this machine (6 systemd-nspawn nodes, own sshd each)"
# the notebook image lab B's hub names (below) is in the testbed's registry too
CLUSTER_MORE_IMAGES=quay.io/jupyter/pytorch-notebook:cuda12-python-3.11
if ! cluster_testbed 6 "$K8S"; then
	echo "demo: $CLUSTER_SKIP" >&2
	exit 1
fi
for spec in node-3:gtx1080ti node-4:rtx2080ti node-5:rtx3070 node-6:rtx4080; do
	"$top/tests/fakes/nvidia/gpu-node.sh" "$TB" "${spec%:*}" "${spec#*:}" --packages >/dev/null
done
addr() { awk -v n="$1" '$1 == n { print $2 }' "$TB/nodes.txt"; }
inv=$TEST_DIR/lab-b.yaml
sed -n '/^jupyterhub:/q;p' "$INV" >"$inv"
cat >>"$inv" <<EOF
storage:
  nfs:
    server: node-2
    path: /nfs
jupyterhub:
  node_port: 30080
  image: quay.io/jupyter/pytorch-notebook:cuda12-python-3.11
  storage: 10Gi
  admin_users: [lab-admin]
  auth:
    type: native
nodes:
  - name: node-1
    address: $(addr node-1)
    roles: [control-plane]
  - name: node-2
    address: $(addr node-2)
    roles: [nfs-server]
EOF
for n in node-3 node-4 node-5; do
	printf '  - name: %s\n    address: %s\n    roles: [worker]\n    gpus: 1\n' "$n" "$(addr "$n")" >>"$inv"
done
# b-4's RTX 3070 is shared by up to 4 notebooks (time-slicing)
printf '    gpu_sharing: 4\n' >>"$inv"
"$PROVISION" inventory -i "$inv"
# DEMO_STATE: a state folder kept across demos (tests/bench/eta-demo.sh)
state=${DEMO_STATE:-$TEST_DIR/state}
run_opts="--state $state --roles $ROLES"

step "provision up: every phase on the five nodes of lab B"
# shellcheck disable=SC2086 # the options are words
"$PROVISION" up -i "$inv" $run_opts

step "provision check: every validation"
"$PROVISION" check -i "$inv" --state "$state" --roles "$ROLES"

step "node-5's RTX 3070 shared by 4: the GPU Operator's time-slicing values, the nodes' labels, what the device plugin advertises"
"$PROVISION" run -i "$inv" -l node-1 -- "sed -n '/^devicePlugin:/,/^gfd:/p' /etc/provision/helm/gpu-operator.values.yaml | grep -v '^  #'"
jp='{range .items[*]}{.metadata.name}{"  config="}{.metadata.labels.nvidia\.com/device-plugin\.config}{"  product="}{.metadata.labels.nvidia\.com/gpu\.product}{"  replicas="}{.metadata.labels.nvidia\.com/gpu\.replicas}{"  allocatable nvidia.com/gpu="}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}'
"$PROVISION" run -i "$inv" -l node-1 -- "kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes -o 'jsonpath=$jp'"

step "the hub's profiles, generated from what the cluster reports"
"$PROVISION" run -i "$inv" -l node-1 -- "sed -n '/profileList:/,\$p' /etc/provision/jupyterhub/values.yaml | grep -E 'display_name|description|cpu_|mem_|gpu|runtimeClassName|NVIDIA_VISIBLE_DEVICES'"
echo "JupyterHub: http://$(addr node-1):30080/ (users sign up, lab-admin approves them)"

step "provision up again: nothing changes"
# shellcheck disable=SC2086 # the options are words
"$PROVISION" up -i "$inv" $run_opts --no-tui | tail -n 8

step "provision add-node node-6: a fourth GPU worker, an RTX 4080 (the cluster has none yet)"
cat >>"$inv" <<EOF
  - name: node-6
    address: $(addr node-6)
    roles: [worker]
    gpus: 1
EOF
sessions() { for n in node-2 node-3 node-4 node-5; do grep -c 'Accepted publickey' "$TB/nodes/$n/sshd.log"; done | paste -sd ' ' -; }
before=$(sessions)
# shellcheck disable=SC2086 # the options are words
"$PROVISION" add-node -i "$inv" $run_opts node-6
after=$(sessions)
if [ "$before" = "$after" ]; then
	echo "node-2..node-5: no SSH session during add-node (sshd logs: $before accepted logins before and after)"
else
	echo "demo: node-2..node-5 were contacted during add-node (sshd logins $before -> $after)" >&2
	exit 1
fi

step "the hub's profiles now"
"$PROVISION" run -i "$inv" -l node-1 -- "grep display_name /etc/provision/jupyterhub/values.yaml"

if [ "${DEMO_RESET:-0}" = 1 ]; then
	step "provision reset: the whole cluster undone, every node verified clean"
	t0=$(date +%s)
	rc=0
	# shellcheck disable=SC2086 # the options are words
	"$PROVISION" reset -i "$inv" $run_opts --yes --no-tui >"$TEST_DIR/reset.out" 2>&1 || rc=$?
	# its report: per node what was removed and verified
	sed -n '/^node-[0-9]  /,$p' "$TEST_DIR/reset.out"
	echo "provision reset: exit $rc after $(($(date +%s) - t0)) s"
	if [ "$rc" != 0 ]; then
		echo "demo: provision reset failed; its failed steps:" >&2
		grep -E '^\[node-[0-9]\] .*(failed|NOT clean)' "$TEST_DIR/reset.out" >&2 || :
		exit 1
	fi
	step "each node checked from this machine (testbed.sh exec), apart from reset's own verification"
	# one line per item: "clean: ..." or "LEFT: ..."
	# shellcheck disable=SC2016 # expanded on the node
	clean_check='
		left() { find "$1" -mindepth 1 2>/dev/null | head -n 5 | paste -sd " " -; }
		for d in /root/.kube /etc/provision /var/lib/provision; do
			l=$(left "$d")
			if [ -n "$l" ]; then echo "LEFT: under $d: $l"
			elif [ -e "$d" ]; then echo "clean: $d empty"
			else echo "clean: $d absent"; fi
		done
		l=$(find /etc/kubernetes -type f 2>/dev/null | head -n 5 | paste -sd " " -)
		if [ -n "$l" ]; then echo "LEFT: files under /etc/kubernetes: $l"; else echo "clean: no file under /etc/kubernetes"; fi
		l=
		for d in /var/lib/kubelet /var/lib/etcd /var/lib/cni; do [ -z "$(left "$d")" ] || l="$l $d"; done
		if [ -n "$l" ]; then echo "LEFT: not empty:$l"; else echo "clean: /var/lib/kubelet, /var/lib/etcd, /var/lib/cni gone or empty"; fi
		l=$(ls /etc/cni/net.d 2>/dev/null | grep -i flannel | paste -sd " " -)
		if [ -n "$l" ]; then echo "LEFT: /etc/cni/net.d: $l"; else echo "clean: no Flannel file in /etc/cni/net.d"; fi
		l=
		for i in cni0 flannel.1; do ! ip link show dev "$i" >/dev/null 2>&1 || l="$l $i"; done
		if [ -n "$l" ]; then echo "LEFT: interfaces:$l"; else echo "clean: no cni0, flannel.1"; fi
		a=$(systemctl is-active kubelet 2>/dev/null) || :
		case $a in active | activating | reloading) echo "LEFT: kubelet.service $a" ;; *) echo "clean: kubelet.service ${a:-inactive}" ;; esac
		l=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '"'"'$4 == "0A" { split($2, a, ":"); print a[2] }'"'"' |
			while read -r h; do printf "%d\n" "0x$h"; done | grep -xE "6443|2379|2380|10250|10256|10257|10259" | sort -u | paste -sd " " -)
		if [ -n "$l" ]; then echo "LEFT: listening: $l"; else echo "clean: ports 6443 2379 2380 10250 10256 10257 10259 free"; fi
	'
	bad=0
	for n in node-1 node-2 node-3 node-4 node-5 node-6; do
		"$TESTBED" exec "$TB" "$n" sh -c "$clean_check" >"$TEST_DIR/clean.$n" 2>&1 || :
		sed "s/^/$n  /" "$TEST_DIR/clean.$n"
		if grep -q '^LEFT' "$TEST_DIR/clean.$n" || [ "$(grep -c '^clean' "$TEST_DIR/clean.$n")" != 9 ]; then
			bad=$((bad + 1))
		fi
	done
	if [ "$bad" != 0 ]; then
		echo "demo: $bad of 6 nodes not clean after reset (see above)" >&2
		exit 1
	fi
	echo "reset: 6 of 6 nodes clean (9 checks each)"
fi

step "done: the test nodes are removed"
"$TESTBED" down "$TB"
# testbed.sh detaches the nodes' mounts lazily: wait (at most 30 s) until
# none is left under the scratch folder, which the harness then removes.
i=0
while grep -q " $TEST_DIR/" /proc/mounts && [ "$i" -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
echo "testbed down: $(grep -c " $TEST_DIR/" /proc/mounts || true) mounts left"
# The harness's cleanup (tests/lib.sh) runs its hooks best-effort, as in
# the tests: the testbed is down already, so its own `down` may fail.
set +e
