# remove-node 10-cordon: no new pod is scheduled on the nodes being removed.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"

present() { # the removed nodes the cluster still has
	for n in $PROVISION_REMOVE_NODES; do
		if $KC get node "$n" -o name >/dev/null 2>&1; then
			echo "$n"
		fi
	done
}

case ${1:-} in
check)
	rc=0
	for n in $(present); do
		u=$($KC get node "$n" -o 'jsonpath={.spec.unschedulable}')
		if [ "$u" = true ]; then
			echo "$n: cordoned"
		else
			echo "$n: schedulable"
			rc=1
		fi
	done
	exit $rc
	;;
apply)
	for n in $(present); do
		$KC cordon "$n"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
