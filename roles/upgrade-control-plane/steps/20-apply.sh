# upgrade-control-plane 20-apply: the control plane runs the target
# version: `kubeadm upgrade plan`, then `kubeadm upgrade apply vX.Y.Z -y`
# (the exact version, never "latest").  The versions before and after are
# printed, so the run record has them.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"
V=v$PROVISION_K8S_VERSION

server() {
	$KC get --raw /version 2>/dev/null | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | head -n 1
}

case ${1:-} in
check)
	s=$(server)
	echo "control plane: ${s:-not answering}, want $V"
	[ "$s" = "$V" ]
	;;
apply)
	echo "versions before: control plane $(server)"
	echo "kubeadm upgrade plan $V"
	if ! kubeadm upgrade plan "$V" 2>&1; then
		pv_hint "kubeadm upgrade plan on $PROVISION_NODE refused $V (nothing was changed): 'kubeadm upgrade plan $V' there says why (its output: provision logs $PROVISION_NODE)"
		exit 1
	fi
	# the node's own kubelet settings (roles/kubeadm-init's kubeadm patch:
	# resolvConf) again: kubeadm rewrites the kubelet's config.yaml
	set --
	[ ! -d /etc/kubernetes/provision-patches ] || set -- --patches /etc/kubernetes/provision-patches
	echo "kubeadm upgrade apply $V -y${1:+ $*}"
	if ! kubeadm upgrade apply "$V" -y "$@" 2>&1; then
		pv_hint "kubeadm upgrade apply $V failed on $PROVISION_NODE (kubeadm rolls the static pods back itself): its whole output is in 'provision logs $PROVISION_NODE'; fix the cause and run provision upgrade again"
		exit 1
	fi
	echo "versions after: control plane $(server)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
