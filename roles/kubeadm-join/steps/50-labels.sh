# kubeadm-join 50-labels: hands the labels this node should carry to the
# control plane, where roles/node-labels applies them with kubectl (a
# kubelet may not set node-role labels on its own Node: the NodeRestriction
# admission plugin refuses them).  Read-only: `check` computes and hands
# them (::set node_labels_NODE), there is nothing to apply.
#
# The labels (documented in roles/node-labels/role.yaml):
#   node-role.kubernetes.io/worker=""        the node runs workloads
#   provision.dev/gpu-count=N                NVIDIA GPUs found on the node
#   provision.dev/gpu-model=MODEL            the first GPU's model as
#       nvidia-smi names it, blanks as "-" (NVIDIA-GeForce-RTX-3070), the way
#       NVIDIA's GPU feature discovery writes nvidia.com/gpu.product; absent
#       without GPUs ("-" at the end of a key in the list removes it)
# and the annotation provision.dev/gpus=MODEL:MIB,MODEL:MIB (every GPU as
# nvidia-smi lists it, handed as ::set node_gpus_NODE): GPU feature
# discovery labels a node with one product only, so a node with two models
# (lab A's RTX 4080 + A2) needs it for the hub's profiles (provision/profiles.c).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# A label value: letters, digits, - _ . only, at most 63, alphanumeric ends.
label_value() {
	printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-' | tr -s '-' | cut -c 1-63 | sed 's/^[^A-Za-z0-9]*//; s/[^A-Za-z0-9]*$//'
}

labels() {
	set -- "node-role.kubernetes.io/worker="
	gpus=${PROVISION_GPUS:-0}
	set -- "$@" "provision.dev/gpu-count=$gpus"
	model=
	if [ "$gpus" -gt 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
		model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) || model=
	fi
	if [ -n "$model" ]; then
		set -- "$@" "provision.dev/gpu-model=$(label_value "$model")"
	else
		set -- "$@" "provision.dev/gpu-model-"
	fi
	echo "$@"
}

case ${1:-} in
check)
	l=$(labels)
	g=$(pv_gpu_list)
	name=$(printf '%s' "$PROVISION_NODE" | tr -c 'A-Za-z0-9_' '_')
	printf '::set node_labels_%s=%s %s\n' "$name" "$PROVISION_NODE" "$l"
	printf '::set node_gpus_%s=%s %s\n' "$name" "$PROVISION_NODE" "$g"
	echo "labels for $PROVISION_NODE: $l"
	echo "GPUs of $PROVISION_NODE: ${g:-none}"
	;;
apply)
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
