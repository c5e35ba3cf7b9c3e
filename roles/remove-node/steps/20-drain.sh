# remove-node 20-drain: no pod that would move is left on the nodes being
# removed (DaemonSet pods and the kubelet's mirror pods, owned by the Node,
# stay with the node).
# `kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout`;
# pods without a controller are not forced out (they would be gone for
# good): the drain fails and names them.  With --force there is no drain.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"

present() {
	for n in $PROVISION_REMOVE_NODES; do
		if $KC get node "$n" -o name >/dev/null 2>&1; then
			echo "$n"
		fi
	done
}

# movable NODE: "namespace/name (kind)" of the pods that drain moves.
movable() {
	$KC get pods -A --field-selector "spec.nodeName=$1" \
		-o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.ownerReferences[0].kind}{"\n"}{end}' |
		awk 'NF && $2 != "DaemonSet" && $2 != "Node" { print $1 " (" (NF == 1 ? "no controller" : $2) ")" }'
}

case ${1:-} in
check)
	if [ "${PROVISION_REMOVE_FORCE:-0}" = 1 ]; then
		echo "--force: no drain (the node is not expected to answer); its pods are deleted with it"
		exit 0
	fi
	rc=0
	for n in $(present); do
		m=$(movable "$n")
		if [ -n "$m" ]; then
			echo "$n: pods to move: $(printf '%s\n' "$m" | paste -sd ' ' -)"
			rc=1
		else
			echo "$n: drained"
		fi
	done
	exit $rc
	;;
apply)
	rc=0
	left=
	for n in $(present); do
		echo "kubectl drain $n --ignore-daemonsets --delete-emptydir-data --timeout=${PROVISION_DRAIN_TIMEOUT}s"
		r=0
		out=$($KC drain "$n" --ignore-daemonsets --delete-emptydir-data --timeout="${PROVISION_DRAIN_TIMEOUT}s" 2>&1) || r=1
		printf '%s\n' "$out"
		if [ "$r" != 0 ]; then
			# only the pods that really block (drain's refusal), not those it had no turn to evict
			printf '%s\n' "$out" | pv_drain_blockers "$n" "$PROVISION_DRAIN_TIMEOUT" movable "$n"
			left="${left:+$left }$n"
			rc=1
		fi
	done
	if [ "$rc" != 0 ]; then
		pv_hint "on the control plane, delete or move those pods of $left (kubectl delete pod -n NAMESPACE NAME: a pod without a controller is not recreated anywhere), or wait for what blocks their eviction (kubectl get pdb -A), then run provision remove-node again; $left was neither deleted nor reset and stays cordoned (kubectl uncordon $left to use it again)"
	fi
	exit $rc
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
