# upgrade-worker 20-node: `kubeadm upgrade node` ran for the target version
# (provision notes the version it ran for in /var/lib/provision).
set -eu
NOTE=$PROVISION_STATE_DIR/kubeadm-upgrade-node

case ${1:-} in
check)
	if [ "$(cat "$NOTE" 2>/dev/null || true)" = "$PROVISION_K8S_VERSION" ]; then
		echo "kubeadm upgrade node: done for $PROVISION_K8S_VERSION"
		exit 0
	fi
	echo "kubeadm upgrade node: not yet for $PROVISION_K8S_VERSION"
	exit 1
	;;
apply)
	# kubeadm upgrade node rewrites /var/lib/kubelet/config.yaml from the
	# cluster's kubelet-config ConfigMap: this node's own settings (the
	# kubeadm patch roles/kubeadm-join uploaded: resolvConf) only survive
	# when it is handed the patches again
	set --
	[ ! -d /etc/kubernetes/provision-patches ] || set -- --patches /etc/kubernetes/provision-patches
	echo "kubeadm upgrade node${1:+ $*}"
	if ! kubeadm upgrade node "$@" 2>&1; then
		pv_hint "kubeadm upgrade node failed on $PROVISION_NODE (it stays cordoned): its whole output is in 'provision logs $PROVISION_NODE'; fix the cause and run provision upgrade again"
		exit 1
	fi
	mkdir -p "$PROVISION_STATE_DIR"
	echo "$PROVISION_K8S_VERSION" >"$NOTE"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
