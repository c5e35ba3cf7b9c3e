# node-labels 10-labels: every node of this run carries the labels of
# provision's keys it should (roles/node-labels/role.yaml lists them), and a
# control plane that is also a worker has no control-plane NoSchedule taint,
# and every GPU node carries the annotation provision.dev/gpus (its GPUs as
# "MODEL:MIB,MODEL:MIB", for the hub's profiles; see roles/node-labels/role.yaml).
#
# What each node should carry: the workers handed it (PROVISION_SET_
# node_labels_NODE = "NODE KEY=VALUE ... KEY-"), the control plane works out
# its own the same way.  `check` compares with the Node objects
# (kubectl get node -o jsonpath='{.metadata.labels}', a JSON map), `apply`
# runs `kubectl label node NODE ... --overwrite` with what differs.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
TAINT="node-role.kubernetes.io/control-plane"

label_value() {
	printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-' | tr -s '-' | cut -c 1-63 | sed 's/^[^A-Za-z0-9]*//; s/[^A-Za-z0-9]*$//'
}

is_worker() {
	case " $PROVISION_ROLES " in *" worker "*) return 0 ;; esac
	return 1
}

own() {
	set -- "$PROVISION_NODE"
	if is_worker; then
		set -- "$@" "node-role.kubernetes.io/worker="
	fi
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

# The device plugin's configuration for NODE, from the inventory (never from
# the node): shared-N when its GPUs are shared by N (PROVISION_GPU_SHARING,
# "NODE:GPUS:N ..."), else the label removed, so that the node takes the
# default (roles/gpu-operator's values).  provision owns this label.
plugin_config() {
	for s in ${PROVISION_GPU_SHARING:-}; do
		case $s in "$1":*)
			echo "nvidia.com/device-plugin.config=shared-${s##*:}"
			return
			;;
		esac
	done
	echo "nvidia.com/device-plugin.config-"
}

# The GPU Operator's driver container only where the node's own facts say
# its host driver does not answer (PROVISION_GPU_DRIVER_NODES, from
# provision): nvidia.com/gpu.deploy.driver=true there, false on every other
# GPU node (the operator deploys no driver on a node labelled false); a
# node without GPUs is left alone.  provision owns this label on GPU nodes.
driver_label() {
	case " ${PROVISION_GPU_NODES:-} " in *" $1 "*) ;; *) return ;; esac
	case " ${PROVISION_GPU_DRIVER_NODES:-} " in
	*" $1 "*) echo "nvidia.com/gpu.deploy.driver=true" ;;
	*) echo "nvidia.com/gpu.deploy.driver=false" ;;
	esac
}

# "NODE LABEL..." per node to label.
desired() {
	handed=$(env | sed -n 's/^PROVISION_SET_node_labels_[A-Za-z0-9_]*=//p')
	{
		printf '%s\n' "$handed" | grep . || true
		printf '%s\n' "$handed" | awk -v n="$PROVISION_NODE" '$1 == n { f = 1 } END { exit !f }' || own
	} | while read -r node labels; do
		echo "$node $labels $(plugin_config "$node") $(driver_label "$node")"
	done
}

# The changes NODE needs, as kubectl label arguments, from its labels (JSON).
changes() { # NODE LABELS-JSON LABEL...
	node=$1
	cur=$2
	shift 2
	for l in "$@"; do
		case $l in
		nvidia.com/gpu.deploy.driver=true)
			# the operator's driver container found a driver after all
			# and said so: that is in place too
			printf '%s' "$cur" | grep -qE '"nvidia.com/gpu.deploy.driver":"(true|pre-installed)"' || echo "$l"
			;;
		*=*)
			k=${l%%=*}
			printf '%s' "$cur" | grep -qF "\"$k\":\"${l#*=}\"" || echo "$l"
			;;
		*-)
			k=${l%-}
			! printf '%s' "$cur" | grep -qF "\"$k\":" || echo "$l"
			;;
		esac
	done
}

# "NODE CHANGE..." per node that needs changes; exit 2 when a node is missing.
plan() {
	desired | while read -r node labels; do
		if ! cur=$($KC get node "$node" -o 'jsonpath={.metadata.labels}' 2>&1); then
			echo "! $node: $cur"
			continue
		fi
		# shellcheck disable=SC2086 # one label a word
		c=$(changes "$node" "$cur" $labels | paste -sd ' ' -)
		[ -z "$c" ] || echo "$node $c"
	done
}

# "NODE MODEL:MIB,..." per node: the provision.dev/gpus annotation it should
# carry (empty: none), handed by the workers (::set node_gpus_NODE), the
# control plane's own worked out here (pv_gpu_list).
desired_gpus() {
	handed=$(env | sed -n 's/^PROVISION_SET_node_gpus_[A-Za-z0-9_]*=//p')
	printf '%s\n' "$handed" | grep . || true
	printf '%s\n' "$handed" | awk -v n="$PROVISION_NODE" '$1 == n { f = 1 } END { exit !f }' || echo "$PROVISION_NODE $(pv_gpu_list)"
}

# "NODE VALUE" per node whose annotation differs (VALUE empty: remove it).
plan_gpus() {
	desired_gpus | while read -r node want; do
		cur=$($KC get node "$node" -o 'jsonpath={.metadata.annotations}' 2>/dev/null) || continue
		if [ -n "$want" ]; then
			printf '%s' "$cur" | grep -qF "\"provision.dev/gpus\":\"$want\"" || echo "$node $want"
		else
			! printf '%s' "$cur" | grep -qF '"provision.dev/gpus":' || echo "$node"
		fi
	done
}

tainted() {
	is_worker || return 1
	$KC get node "$PROVISION_NODE" -o 'jsonpath={.spec.taints[*].key}' | tr ' ' '\n' | grep -qxF "$TAINT"
}

# No control plane yet (kubeadm-init has not run): nothing to compare with.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	p=$(plan)
	if printf '%s\n' "$p" | grep -q '^! '; then
		printf '%s\n' "$p" | sed -n 's/^! //p'
		pv_hint "kubectl on $PROVISION_NODE cannot read those Nodes: did they join? (kubectl get nodes)"
		exit 2
	fi
	rc=0
	if [ -n "$p" ]; then
		printf '%s\n' "$p" | sed 's/^\([^ ]*\) /\1: /'
		rc=1
	fi
	g=$(plan_gpus)
	if [ -n "$g" ]; then
		printf '%s\n' "$g" | sed 's/^\([^ ]*\) *\(.*\)/\1: provision.dev\/gpus=\2/'
		rc=1
	fi
	if tainted; then
		echo "$PROVISION_NODE is a worker too but has the $TAINT:NoSchedule taint"
		rc=1
	fi
	[ "$rc" = 1 ] || echo "labels in place on $(desired | wc -l) node(s)"
	exit $rc
	;;
apply)
	plan | while read -r node c; do
		# shellcheck disable=SC2086 # one change a word
		# `--`: after it kubectl reads only arguments, never a flag (the
		# workers' labels are checked by provision too: kubeadm-join's role.yaml)
		$KC label node "$node" --overwrite -- $c
	done
	plan_gpus | while read -r node want; do
		if [ -n "$want" ]; then
			$KC annotate node "$node" "provision.dev/gpus=$want" --overwrite
		else
			$KC annotate node "$node" provision.dev/gpus-
		fi
	done
	if tainted; then
		$KC taint node "$PROVISION_NODE" "$TAINT:NoSchedule-"
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
