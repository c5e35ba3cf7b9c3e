# upgrade-control-plane 30-kubelet: this node's kubelet and kubectl are the
# target version and the node is Ready with it: drained first, packages
# upgraded (unhold, install, hold), kubelet restarted, uncordoned.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"
V=$PROVISION_K8S_VERSION
N=$PROVISION_NODE

kubelet_version() {
	$KC get node "$N" -o 'jsonpath={.status.nodeInfo.kubeletVersion}' 2>/dev/null || true
}

case ${1:-} in
check)
	rc=0
	pv_kube_at "$V" kubelet kubectl || rc=1
	k=$(kubelet_version)
	echo "$N: kubelet ${k:-unknown}, $($KC get node "$N" -o 'jsonpath={.spec.unschedulable}' 2>/dev/null | sed 's/true/cordoned/')"
	[ "$k" = "v$V" ] || rc=1
	[ "$($KC get node "$N" -o 'jsonpath={.spec.unschedulable}' 2>/dev/null)" != true ] || rc=1
	exit $rc
	;;
apply)
	echo "kubectl drain $N"
	$KC drain "$N" --ignore-daemonsets --delete-emptydir-data --timeout=300s 2>&1
	pv_kube_install "$V" kubelet kubectl
	systemctl daemon-reload
	echo "systemctl restart kubelet"
	systemctl restart kubelet
	i=0
	until [ "$(kubelet_version)" = "v$V" ] &&
		[ "$($KC get node "$N" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; do
		i=$((i + 1))
		if [ "$i" -gt 120 ]; then
			echo "$N is not Ready with kubelet v$V after 2 minutes (kubelet $(kubelet_version))"
			pv_hint "journalctl -u kubelet on $N; the node stays cordoned until this step passes"
			exit 1
		fi
		sleep 1
	done
	$KC uncordon "$N"
	echo "versions after: $N kubelet $(kubelet_version)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
