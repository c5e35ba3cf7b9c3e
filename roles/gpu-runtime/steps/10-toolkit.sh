# gpu-runtime 10-toolkit: the GPU Operator's container toolkit has installed
# its runtime (/usr/local/nvidia/toolkit/nvidia-container-runtime) on this
# node; then hands containerd_major and containerd_nvidia (= default) for the
# containerd role's config template, as that role's 10-install does.
#
# `apply` waits for the toolkit's pod to install it, TIMEOUT=300 s at most
# (gpu-operator's 20-validated has already seen the operator's validator
# pass on this node, which needs the toolkit, so this is normally at once).
set -eu
TIMEOUT=300

hand() {
	pkg=$(pv_containerd_package) || {
		echo "containerd is not installed (roles/containerd installs it)"
		exit 2
	}
	v=$(pv_containerd_version "$pkg")
	pv_say_set containerd_major "${v%%.*}"
	pv_say_set containerd_nvidia "$(pv_nvidia_runtime)"
}

case ${1:-} in
check)
	if [ "$(pv_nvidia_runtime)" = none ]; then
		pv_skip "not a GPU node of this cluster (PROVISION_GPU_NODES)"
		exit 0
	fi
	if [ ! -x "$PV_NVIDIA_RUNTIME" ]; then
		echo "$PV_NVIDIA_RUNTIME is not installed yet (the GPU Operator's container toolkit installs it)"
		exit 1
	fi
	echo "$PV_NVIDIA_RUNTIME is installed"
	hand
	exit 0
	;;
apply)
	start=$(date +%s)
	until [ -x "$PV_NVIDIA_RUNTIME" ]; do
		if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
			echo "no $PV_NVIDIA_RUNTIME after ${TIMEOUT}s"
			pv_hint "on the control plane: kubectl -n gpu-operator get pods -o wide --field-selector spec.nodeName=$PROVISION_NODE (the nvidia-container-toolkit-daemonset pod installs it; see its logs)"
			exit 1
		fi
		sleep 2
	done
	echo "installed after $(($(date +%s) - start))s"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
