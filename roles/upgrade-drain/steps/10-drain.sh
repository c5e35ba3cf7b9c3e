# upgrade-drain 10-drain: every node of the batch that is not at the target
# kubelet version is cordoned and has no pod left that drain would move
# (DaemonSet pods and mirror pods stay).  A node already at the target
# version is left alone (a rerun after a stop).
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"
V=v$PROVISION_K8S_VERSION

movable() { # NODE: "namespace/name" of the pods drain would move
	$KC get pods -A --field-selector "spec.nodeName=$1" \
		-o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.ownerReferences[0].kind}{"\n"}{end}' |
		awk 'NF && $2 != "DaemonSet" && $2 != "Node" { print $1 }'
}

todo() { # the nodes of the batch not at the target version
	for n in $PROVISION_UPGRADE_NODES; do
		k=$($KC get node "$n" -o 'jsonpath={.status.nodeInfo.kubeletVersion}')
		[ "$k" = "$V" ] || echo "$n"
	done
}

case ${1:-} in
check)
	rc=0
	for n in $(todo); do
		u=$($KC get node "$n" -o 'jsonpath={.spec.unschedulable}')
		m=$(movable "$n" | paste -sd ' ' -)
		echo "$n: $([ "$u" = true ] && echo cordoned || echo schedulable)${m:+, pods to move: $m}"
		if [ "$u" != true ] || [ -n "$m" ]; then
			rc=1
		fi
	done
	exit $rc
	;;
apply)
	for n in $(todo); do
		echo "kubectl drain $n --ignore-daemonsets --delete-emptydir-data --timeout=${PROVISION_DRAIN_TIMEOUT:-300}s"
		rc=0
		out=$($KC drain "$n" --ignore-daemonsets --delete-emptydir-data --timeout="${PROVISION_DRAIN_TIMEOUT:-300}s" 2>&1) || rc=1
		printf '%s\n' "$out"
		if [ "$rc" != 0 ]; then
			# only the pods that really block (drain's refusal), not those it had no turn to evict
			printf '%s\n' "$out" | pv_drain_blockers "$n" "${PROVISION_DRAIN_TIMEOUT:-300}" movable "$n"
			pv_hint "on the control plane, delete or move those pods of $n (kubectl delete pod -n NAMESPACE NAME), or wait for what blocks their eviction (kubectl get pdb -A), then run provision upgrade again; $n stays cordoned and was not upgraded, the workers after it were not touched"
			exit 1
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
