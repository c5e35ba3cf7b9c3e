#!/bin/sh
# t0204-pull-diagnosis: what the roles make of the real tools' words about
# image pulls (issue 32), on this machine, no node: the steps' own shell
# functions (roles/lib.sh, roles/kubeadm-init/steps/30-init.sh) fed the
# lines the real tools print, with the tools they call (kubeadm, kubectl,
# helm, journalctl, systemctl, crictl, ip) as shell functions that print
# those lines.
#
# The lines, and where their form comes from:
#   kubeadm init's preflight (ImagePullCheck: "failed to pull image IMAGE",
#     one [ERROR ImagePull] per image, kubeadm 1.28 with crictl's output
#     inside, then kubeadm's own last line "To see the stack trace of this
#     error execute with --v=5 or higher") -- the run against a real
#     Kubernetes v1.28.7 the issue reports, and published outputs of it;
#   the kubelet's journal ("Failed to pull image" err="..." image="IMAGE",
#     kuberuntime_image.go; the CRI's "failed to pull and unpack image
#     \"IMAGE\"": containerd's cri) -- the same run, and the kubelet
#     stand-in (tests/fakes/kube/kubelet.py) which copies them;
#   kubectl's pods of a release waiting in ErrImagePull / ImagePullBackOff
#     with the CRI's message, and Helm's "Error: context deadline exceeded".
# Every case fails on the code before issue 32 (each says how).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

export SRC_ROOT
FIX=$TEST_DIR/fixtures
mkdir -p "$FIX"

# kubeadm 1.28.7's preflight, offline (two of its images; the others alike)
cat >"$FIX/kubeadm-preflight.txt" <<'EOF'
[init] Using Kubernetes version: v1.28.7
[preflight] Running pre-flight checks
[preflight] Pulling images required for setting up a Kubernetes cluster
[preflight] This might take a minute or two, depending on the speed of your internet connection
[preflight] You can also perform this action in beforehand using 'kubeadm config images pull'
error execution phase preflight: [preflight] Some fatal errors occurred:
	[ERROR ImagePull]: failed to pull image registry.k8s.io/kube-apiserver:v1.28.7: output: E1129 10:00:01.000000   41231 remote_image.go:180] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to resolve reference \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to do request: Head \"https://registry.k8s.io/v2/kube-apiserver/manifests/v1.28.7\": dial tcp: lookup registry.k8s.io on 192.168.10.1:53: no such host" image="registry.k8s.io/kube-apiserver:v1.28.7"
time="2026-11-29T10:00:01Z" level=fatal msg="pulling image: rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to resolve reference \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to do request: Head \"https://registry.k8s.io/v2/kube-apiserver/manifests/v1.28.7\": dial tcp: lookup registry.k8s.io on 192.168.10.1:53: no such host"
, error: exit status 1
	[ERROR ImagePull]: failed to pull image registry.k8s.io/etcd:3.5.9-0: output: E1129 10:00:02.000000   41242 remote_image.go:180] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/etcd:3.5.9-0\": failed to resolve reference \"registry.k8s.io/etcd:3.5.9-0\": failed to do request: Head \"https://registry.k8s.io/v2/etcd/manifests/3.5.9-0\": dial tcp: lookup registry.k8s.io on 192.168.10.1:53: no such host" image="registry.k8s.io/etcd:3.5.9-0"
time="2026-11-29T10:00:02Z" level=fatal msg="pulling image: rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/etcd:3.5.9-0\": no such host"
, error: exit status 1
[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`
To see the stack trace of this error execute with --v=5 or higher
EOF

# the kubelet's journal while kubeadm waits for the control plane
cat >"$FIX/kubelet.journal" <<'EOF'
Nov 29 10:05:01 cp kubelet[5120]: I1129 10:05:01.000000    5120 kubelet.go:2405] "SyncLoop ADD" source="file" pods=["kube-system/kube-apiserver-cp"]
Nov 29 10:05:31 cp kubelet[5120]: E1129 10:05:31.000000    5120 remote_image.go:180] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to resolve reference \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to do request: Head \"https://registry.k8s.io/v2/kube-apiserver/manifests/v1.28.7\": dial tcp 34.96.108.209:443: i/o timeout" image="registry.k8s.io/kube-apiserver:v1.28.7"
Nov 29 10:05:31 cp kubelet[5120]: E1129 10:05:31.000100    5120 kuberuntime_image.go:53] "Failed to pull image" err="failed to pull and unpack image \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to resolve reference \"registry.k8s.io/kube-apiserver:v1.28.7\": failed to do request: Head \"https://registry.k8s.io/v2/kube-apiserver/manifests/v1.28.7\": dial tcp 34.96.108.209:443: i/o timeout" image="registry.k8s.io/kube-apiserver:v1.28.7"
Nov 29 10:05:31 cp kubelet[5120]: E1129 10:05:31.000200    5120 pod_workers.go:1300] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"kube-apiserver\" with ErrImagePull: \"failed to pull and unpack image \\\"registry.k8s.io/kube-apiserver:v1.28.7\\\": i/o timeout\"" pod="kube-system/kube-apiserver-cp"
EOF

# a step's function NAME from a step file, to be evaluated here
func_of() { # FILE NAME
	awk -v n="$2" '$0 ~ "^" n "\\(\\) \\{" { p = 1 } p { print } p && /^}/ { exit }' "$1"
}

test_case "kubeadm's [ERROR ImagePull] lines: the hint names each image and the cause (before: \"see kubeadm's [ERROR ImagePull] line above\")" '
	(
		PROVISION_NODE=cp
		. "$SRC_ROOT/roles/lib.sh"
		eval "$(func_of "$SRC_ROOT/roles/kubeadm-init/steps/30-init.sh" preflight_hint)"
		preflight_hint "$FIX/kubeadm-preflight.txt"
	) >hint.txt
	cat hint.txt
	expect_grep "\[ERROR ImagePull\] cp cannot pull registry.k8s.io/kube-apiserver:v1.28.7 registry.k8s.io/etcd:3.5.9-0: the registry.s name does not resolve" hint.txt
	expect_no_grep "line above" hint.txt
'

test_case "kubeadm init's preflight fails: the step's last line names the failed checks, not kubeadm's stack-trace line (the summary shows it)" '
	fixture=$FIX/kubeadm-preflight.txt
	# 30-init apply with kubeadm and ip as functions, state in the test folder
	(
		PROVISION_NODE=cp PROVISION_STATE_DIR=$TEST_DIR/state
		export PROVISION_NODE PROVISION_STATE_DIR
		. "$SRC_ROOT/roles/lib.sh"
		kubeadm() { cat "$fixture"; return 1; }
		ip() { echo "2: eth0    inet /24 brd 192.168.10.255 scope global eth0"; }
		set -- apply
		. "$SRC_ROOT/roles/kubeadm-init/steps/30-init.sh"
	) >out.txt 2>&1 && rc=0 || rc=$?
	tail -n 3 out.txt
	[ "$rc" = 1 ]
	grep -v "^::" out.txt | tail -n 1 >last.txt
	expect_grep "^kubeadm init.s preflight failed on cp: \[ERROR ImagePull\]$" last.txt
	expect_grep "^::hint kubeadm.s preflight failed: \[ERROR ImagePull\] cp cannot pull registry.k8s.io/kube-apiserver:v1.28.7" out.txt
'

test_case "the kubelet cannot pull kube-apiserver during init: its \"Failed to pull image\" lines name the image and the cause (before: \"kube-apiserver: no container (the kubelet did not start it)\")" '
	(
		PROVISION_NODE=cp SINCE=0
		. "$SRC_ROOT/roles/lib.sh"
		systemctl() { echo active; }
		journalctl() { cat "$FIX/kubelet.journal"; }
		crictl() { :; }
		eval "$(func_of "$SRC_ROOT/roles/kubeadm-init/steps/30-init.sh" diagnose)"
		diagnose
	) >diag.txt
	cat diag.txt
	expect_grep "^the kubelet cannot pull: registry.k8s.io/kube-apiserver:v1.28.7 (" diag.txt
	expect_grep "^::hint the kubelet on cp cannot pull registry.k8s.io/kube-apiserver:v1.28.7: the registry cannot be reached" diag.txt
	expect_no_grep "no container" diag.txt
'

test_case "pv_pull_failures: every form of the real tools, one line per image" '
	(
		. "$SRC_ROOT/roles/lib.sh"
		cat "$FIX/kubeadm-preflight.txt" "$FIX/kubelet.journal"
		# the event form and the sandbox form (CreatePodSandbox)
		echo "Warning  Failed  12s  kubelet  Failed to pull image \"quay.io/jupyter/pytorch-notebook:cuda12-python-3.11\": rpc error: code = NotFound desc = failed to pull and unpack image \"quay.io/jupyter/pytorch-notebook:cuda12-python-3.11\": not found"
		echo "E1129 kuberuntime_sandbox.go:45] \"Failed to create sandbox for pod\" err=\"rpc error: code = Unknown desc = failed to get sandbox image \\\"registry.k8s.io/pause:3.6\\\": failed to pull image \\\"registry.k8s.io/pause:3.6\\\": failed to pull and unpack image \\\"registry.k8s.io/pause:3.6\\\": 429 Too Many Requests\""
	) | (. "$SRC_ROOT/roles/lib.sh"; pv_pull_failures) >fail.txt
	cat fail.txt
	[ "$(cut -f 1 fail.txt | tr "\n" " ")" = "registry.k8s.io/kube-apiserver:v1.28.7 registry.k8s.io/etcd:3.5.9-0 quay.io/jupyter/pytorch-notebook:cuda12-python-3.11 registry.k8s.io/pause:3.6 " ]
	grep -q "^quay.io/jupyter/pytorch-notebook:cuda12-python-3.11	.*not found" fail.txt
	grep -q "^registry.k8s.io/pause:3.6	.*429 Too Many Requests" fail.txt
'

test_case "a Helm wait that ends in context deadline exceeded: the hint says which pod on which node cannot pull which image, and why (before: the step's guess, kubectl logs deploy/hub)" '
	(
		PROVISION_NODE=cp PROVISION_STATE_DIR=$TEST_DIR/state
		. "$SRC_ROOT/roles/lib.sh"
		helm() { case "$1" in version) echo v4.2.4 ;; *) echo "Error: context deadline exceeded" >&2; return 1 ;; esac; }
		kubectl() {
			case "$*" in
			*daemonsets,jobs*) printf "DaemonSet/hook-image-puller\tpre-install,pre-upgrade\n" ;;
			*pods*)
				printf "hook-image-puller-x2l9v\tnode-2\tPending\timage-pull-metadata-block|quay.io/jupyterhub/k8s-network-tools:3.3.8|true||;image-pull-singleuser|quay.io/jupyter/pytorch-notebook:cuda12-python-3.11|false|ImagePullBackOff|Back-off pulling image \"quay.io/jupyter/pytorch-notebook:cuda12-python-3.11\";pause|registry.k8s.io/pause:3.9|false|PodInitializing|;\t\n"
				printf "hook-image-awaiter-7qk2c\tnode-3\tRunning\tawaiter|quay.io/jupyterhub/k8s-image-awaiter:3.3.8|true||;\t\n"
				;;
			esac
		}
		: >values.yaml
		pv_helm_install jhub jhub values.yaml values.yaml 20m
	) >helm.txt 2>&1 && rc=0 || rc=$?
	cat helm.txt
	[ "$rc" = 1 ]
	expect_grep "hook-image-puller-x2l9v (node-2), pod of DaemonSet hook-image-puller (Helm hook pre-install,pre-upgrade): container image-pull-singleuser (quay.io/jupyter/pytorch-notebook:cuda12-python-3.11) waits: ImagePullBackOff" helm.txt
	expect_grep "^::hint release jhub in jhub waits for a pod on node-2 that cannot pull quay.io/jupyter/pytorch-notebook:cuda12-python-3.11" helm.txt
	expect_no_grep "awaiter-7qk2c" helm.txt
'

test_case "roles/jupyterhub and nfs-provisioner keep pv_helm_install's hint when the pods said what (before: their own guess replaced it)" '
	for s in jupyterhub/steps/30-install.sh nfs-provisioner/steps/10-release.sh; do
		grep -q "PV_HELM_WHY" "$SRC_ROOT/roles/$s" || { echo "$s replaces the hint"; false; }
	done
'

test_done
