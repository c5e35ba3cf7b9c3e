# jupyterhub 20-capacity: hand provision the cluster's Nodes as the API
# reports them -- allocatable CPU and memory (after the kubelet's reserve),
# labels (GPU feature discovery's nvidia.com/gpu.product, .count, .memory;
# provision's provision.dev/gpu-count), allocatable nvidia.com/gpu, taints,
# readiness -- from which provision computes the hub's profiles
# (provision/profiles.h) before it renders values.yaml for 30-install.
#
# Hand-over: `::set hub_nodes=N`, then `::set hub_node_K=JSON` for K = 1..N,
# each `kubectl get node NAME -o json` on one line (newlines dropped; JSON
# strings never hold a raw newline), one per node so that no line comes near
# provision's 64 KiB line limit however many images a node lists.  A Node
# that is longer than that all the same (a node's kubelet may write its own
# labels and annotations) fails the check, naming the node: provision reads
# no protocol line longer than 64 KiB, and a profile computed without that
# node would be wrong.
#
# `check` fails (1) while a node that provision labelled with GPUs
# (provision.dev/gpu-count > 0) does not advertise them yet as allocatable
# nvidia.com/gpu (the GPU Operator's device plugin starts after the node
# joined: a profile made before would miss that node's GPUs); `apply` waits
# for that, at most WAIT seconds.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
WAIT=600
LINE_MAX=65536 # provision's TRANSPORT_LINE_MAX: a longer protocol line fails the step

# "NODE LABELLED ADVERTISED" per node with provision.dev/gpu-count > 0 whose
# device plugin does not advertise that many GPUs.
missing_gpus() {
	gpus=$($KC get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.labels.provision\.dev/gpu-count}{" "}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}') || return 2
	printf '%s\n' "$gpus" | awk 'NF >= 2 && $2 > 0 && (NF < 3 || $3 + 0 < $2 + 0) { print $1, $2, (NF < 3 ? 0 : $3) }'
}

hand_nodes() {
	names=$($KC get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
	n=0
	for name in $names; do
		n=$((n + 1))
	done
	pv_say_set hub_nodes "$n"
	k=0
	for name in $names; do
		k=$((k + 1))
		node=$($KC get node "$name" -o json | tr -d '\n')
		size=$(printf '::set hub_node_%s=%s' "$k" "$node" | wc -c)
		if [ "$size" -gt "$LINE_MAX" ]; then
			echo "node $name: its Node object is $size bytes on one line, more than the $LINE_MAX a line of a step's output may be: the hub's profiles cannot be computed"
			pv_hint "kubectl get node $name -o json | wc -c: remove what makes that Node so large (labels, annotations its kubelet wrote), or the node (provision remove-node)"
			exit 2
		fi
		pv_say_set "hub_node_$k" "$node"
	done
	echo "handed the capacity of $n node(s): $(printf '%s\n' "$names" | paste -sd ' ' -)"
}

if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	if ! m=$(missing_gpus); then
		pv_hint "kubectl cannot list the nodes on $PROVISION_NODE: is the API server up? kubectl get nodes"
		exit 2
	fi
	if [ -n "$m" ]; then
		printf '%s\n' "$m" | awk '{ print $1 ": " $2 " GPU(s) found, " $3 " advertised (nvidia.com/gpu)" }'
		exit 1
	fi
	hand_nodes
	;;
apply)
	i=0
	while m=$(missing_gpus) && [ -n "$m" ]; do
		i=$((i + 5))
		if [ "$i" -gt "$WAIT" ]; then
			printf '%s\n' "$m" | awk '{ print $1 ": " $2 " GPU(s) found, " $3 " advertised (nvidia.com/gpu)" }'
			pv_hint "the GPU Operator's device plugin does not advertise these GPUs after ${WAIT}s: kubectl -n gpu-operator get pods -o wide"
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
