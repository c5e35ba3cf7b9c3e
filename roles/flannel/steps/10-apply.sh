# flannel 10-apply: the cluster holds the objects of the rendered
# /etc/kubernetes/provision-kube-flannel.yml.
#
# `kubectl diff` decides (exit 0: the same, 1: different, more: an error),
# `kubectl apply` makes it so; both with the cluster's admin.conf.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MANIFEST=/etc/kubernetes/provision-kube-flannel.yml
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"

# No control plane yet (kubeadm-init has not run): nothing to compare with.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	rc=0
	out=$($KC diff -f "$MANIFEST" 2>&1) || rc=$?
	case $rc in
	0)
		echo "Flannel applied as in $MANIFEST"
		;;
	1)
		printf '%s\n' "$out" | grep -E '^[-+][^-+]' | head -n 20 || true
		echo "the cluster's Flannel objects differ from $MANIFEST"
		exit 1
		;;
	*)
		printf '%s\n' "$out" | tail -n 5
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
		;;
	esac
	;;
apply)
	if ! $KC apply -f "$MANIFEST"; then
		pv_hint "kubectl apply -f $MANIFEST failed on $PROVISION_NODE: see the error above"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
