# upgrade-uncordon 10-uncordon: every node of the batch reports the target
# kubelet version, is Ready, and is schedulable again.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"
V=v$PROVISION_K8S_VERSION

state() { # NODE -> "kubelet ready unschedulable"
	printf '%s %s %s\n' "$($KC get node "$1" -o 'jsonpath={.status.nodeInfo.kubeletVersion}')" \
		"$($KC get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" \
		"$($KC get node "$1" -o 'jsonpath={.spec.unschedulable}')"
}

case ${1:-} in
check)
	rc=0
	for n in $PROVISION_UPGRADE_NODES; do
		s=$(state "$n")
		echo "$n: kubelet ${s%% *}, Ready=$(echo "$s" | cut -d ' ' -f 2)$([ "${s##* }" != true ] || echo ', cordoned')"
		[ "$s" = "$V True " ] || rc=1
	done
	exit $rc
	;;
apply)
	for n in $PROVISION_UPGRADE_NODES; do
		i=0
		until s=$(state "$n") && [ "${s% *}" = "$V True" ]; do
			i=$((i + 1))
			if [ "$i" -gt 120 ]; then
				echo "$n: not Ready with kubelet $V after 2 minutes ($s)"
				pv_hint "journalctl -u kubelet on $n; it stays cordoned"
				exit 1
			fi
			sleep 1
		done
		$KC uncordon "$n"
		echo "versions after: $n kubelet $V"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
