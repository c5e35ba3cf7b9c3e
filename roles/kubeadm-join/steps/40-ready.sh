# kubeadm-join 40-ready: this Node is Ready.
#
# After a join the kubelet reports NotReady until the node's Flannel pod
# (a DaemonSet pod, started there as soon as the Node exists) has written
# the CNI config.  `apply` waits for Ready, at most TIMEOUT=180 s, asking
# with the node's own credentials (kubelet.conf), and then says what the
# kubelet reports and where to look.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KUBELET_CONF=/etc/kubernetes/kubelet.conf
TIMEOUT=180

# "STATUS|REASON|MESSAGE" of the Node's Ready condition.
ready() {
	kubectl --kubeconfig="$KUBELET_CONF" --request-timeout=15s get node "$PROVISION_NODE" \
		-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}{"|"}{.status.conditions[?(@.type=="Ready")].reason}{"|"}{.status.conditions[?(@.type=="Ready")].message}' 2>&1 | head -n 1
}

case ${1:-} in
check)
	r=$(ready)
	case $r in
	True\|*)
		echo "$PROVISION_NODE: Ready"
		;;
	*)
		echo "$PROVISION_NODE: $(pv_ready_text "$r")"
		exit 1
		;;
	esac
	;;
apply)
	start=$(date +%s)
	while :; do
		r=$(ready)
		case $r in
		True\|*)
			echo "$PROVISION_NODE: Ready after $(($(date +%s) - start))s"
			exit 0
			;;
		esac
		if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
			echo "$PROVISION_NODE: not Ready after ${TIMEOUT}s: $(pv_ready_text "$r")"
			pv_hint "on the control plane: kubectl -n kube-flannel get pods -o wide (the Flannel pod of $PROVISION_NODE writes the CNI config); on $PROVISION_NODE: journalctl -u kubelet"
			exit 1
		fi
		sleep 3
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
