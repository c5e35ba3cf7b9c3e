# remove-node 30-delete: the cluster has no Node object for the removed
# nodes.  With --force their pods are deleted at once too (the kubelet of a
# dead node never confirms their end, so they would stay Terminating).
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"

present() {
	for n in $PROVISION_REMOVE_NODES; do
		if $KC get node "$n" -o name >/dev/null 2>&1; then
			echo "$n"
		fi
	done
}

case ${1:-} in
check)
	p=$(present | paste -sd ' ' -)
	if [ -z "$p" ]; then
		echo "not in the cluster: $PROVISION_REMOVE_NODES"
		exit 0
	fi
	echo "in the cluster: $p"
	exit 1
	;;
apply)
	for n in $(present); do
		# The Node first: then no DaemonSet makes a new pod for it.
		$KC delete node "$n"
		if [ "${PROVISION_REMOVE_FORCE:-0}" = 1 ]; then
			pods=$($KC get pods -A --field-selector "spec.nodeName=$n" \
				-o 'jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}')
			printf '%s\n' "$pods" | while read -r ns name; do
				[ -n "$name" ] || continue
				$KC -n "$ns" delete pod "$name" --force --grace-period=0 --ignore-not-found 2>&1 | grep -v '^Warning: Immediate deletion' || true
			done
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
