# gpu-operator 20-validated: every GPU node (facts) has allocatable
# nvidia.com/gpu and a running nvidia-operator-validator pod, whose init
# containers (driver, toolkit, cuda and plugin validation) completed.
# A node whose GPUs the inventory shares (gpu_sharing: N, in
# PROVISION_GPU_SHARING as NODE:GPUS:N) must advertise exactly GPUS x N
# nvidia.com/gpu: the device plugin took its time-slicing configuration.
# Nodes being removed (PROVISION_REMOVE_NODES, set by remove-node) are left
# out.  `apply` waits for that, at most TIMEOUT=600 s (the driver container and
# CUDA images are large), then names what is missing on which node.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
TIMEOUT=600

report() {
	alloc=$($KC get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}') || return 2
	pods=$($KC -n gpu-operator get pods -l app=nvidia-operator-validator -o 'jsonpath={range .items[*]}{.spec.nodeName}{"|"}{.status.phase}{"|"}{.status.initContainerStatuses[*].state.terminated.reason}{"|"}{.status.initContainerStatuses[*].state.waiting.reason}{"\n"}{end}') || return 2
	bad=0
	for n in $PROVISION_GPU_NODES; do
		# Nodes that `provision remove-node` is taking out of the cluster
		# (its profile-regeneration run) have no device plugin to wait for.
		case " ${PROVISION_REMOVE_NODES:-} " in *" $n "*) continue ;; esac
		g=$(printf '%s\n' "$alloc" | awk -F '|' -v n="$n" '$1 == n { print $2 }')
		# what the API says of a node is checked before it is used
		case $g in *[!0-9]*) g= ;; esac
		shared=
		for s in ${PROVISION_GPU_SHARING:-}; do
			case $s in "$n":*) shared=${s#*:} ;; esac
		done
		if [ -z "$g" ] || [ "$g" = 0 ]; then
			echo "$n: no allocatable nvidia.com/gpu (device plugin not registered)"
			bad=1
		elif [ -n "$shared" ] && [ "$g" != $((${shared%%:*} * ${shared#*:})) ]; then
			echo "$n: $g nvidia.com/gpu allocatable, not $((${shared%%:*} * ${shared#*:})) (${shared%%:*} GPU(s) shared by ${shared#*:}): the device plugin has not taken its time-slicing configuration (label nvidia.com/device-plugin.config=shared-${shared#*:})"
			bad=1
			continue
		fi
		p=$(printf '%s\n' "$pods" | awk -F '|' -v n="$n" '$1 == n' | head -n 1)
		if [ -z "$p" ]; then
			echo "$n: no nvidia-operator-validator pod"
			bad=1
			continue
		fi
		IFS="|" read -r _ phase completed waiting <<-EOT
			$p
		EOT
		if [ "$phase" != Running ]; then
			echo "$n: validator $phase (validations done: ${completed:-none}${waiting:+; waiting: $waiting})"
			bad=1
		else
			if [ -n "$shared" ]; then
				echo "$n: $g nvidia.com/gpu allocatable = ${shared%%:*} GPU(s) x ${shared#*:} (time-slicing), validations complete"
			else
				echo "$n: $g GPU(s) allocatable, validations complete"
			fi
		fi
	done
	return $bad
}

if [ -z "${PROVISION_GPU_NODES:-}" ]; then
	case ${1:-} in
	check) pv_skip "no GPU node in the cluster: nothing to validate" ;;
	esac
	exit 0
fi
# No control plane yet (provision plan before the first up): it would change.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi
case ${1:-} in
check)
	rc=0
	report || rc=$?
	[ "$rc" -le 1 ] || pv_hint "kubectl cannot reach the API server on $PROVISION_NODE"
	exit $rc
	;;
apply)
	start=$(date +%s)
	while :; do
		rc=0
		last=$(report) || rc=$?
		if [ "$rc" = 0 ]; then
			printf '%s\n' "$last"
			echo "validated after $(($(date +%s) - start))s"
			exit 0
		fi
		if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
			printf '%s\n' "$last"
			pv_hint "kubectl -n gpu-operator get pods -o wide; kubectl -n gpu-operator logs POD -c driver-validation (or toolkit-, cuda-, plugin-validation) on $PROVISION_NODE"
			exit 1
		fi
		sleep 5
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
