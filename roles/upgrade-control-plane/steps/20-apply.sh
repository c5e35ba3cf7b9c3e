# upgrade-control-plane 20-apply: this control plane runs the target
# version.  The first control plane: `kubeadm upgrade plan`, then `kubeadm
# upgrade apply vX.Y.Z -y` (the exact version, never "latest"); each other
# control plane (several of them: provision upgrade runs them one at a
# time, after the first): `kubeadm upgrade node`, which upgrades its static
# pods to the version apply stored in the cluster's kubeadm-config.  Judged
# by this node's own API server (its manifest's address and port), not the
# API endpoint, which may answer from another control plane.  The versions
# before and after are printed, so the run record has them.
set -eu
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf"
V=v$PROVISION_K8S_VERSION
MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml

# this node's API server: https://ADDRESS:PORT from its manifest (kubeadm's
# --advertise-address and --secure-port)
local_api() {
	a=$(sed -n 's/^ *- --advertise-address=//p' "$MANIFEST" 2>/dev/null | head -n 1)
	p=$(sed -n 's/^ *- --secure-port=//p' "$MANIFEST" 2>/dev/null | head -n 1)
	echo "https://${a:-$PROVISION_ADDRESS}:${p:-6443}"
}

server() {
	$KC --server="$(local_api)" get --raw /version 2>/dev/null | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | head -n 1
}

# the first control plane of the inventory (PROVISION_CONTROL_PLANES is set
# only with several; with one, this node is the first)
first() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -eq 0 ] || [ "${1%%=*}" = "$PROVISION_NODE" ]
}

case ${1:-} in
check)
	s=$(server)
	echo "control plane $PROVISION_NODE: ${s:-not answering}, want $V"
	[ "$s" = "$V" ]
	;;
apply)
	echo "versions before: control plane $(server) ($PROVISION_NODE)"
	# the node's own kubelet settings (roles/kubeadm-init's kubeadm patch:
	# resolvConf) again: kubeadm rewrites the kubelet's config.yaml
	patches=
	[ ! -d /etc/kubernetes/provision-patches ] || patches=/etc/kubernetes/provision-patches
	if ! first; then
		echo "kubeadm upgrade node${patches:+ --patches $patches}"
		if ! kubeadm upgrade node ${patches:+--patches "$patches"} 2>&1; then
			pv_hint "kubeadm upgrade node failed on control plane $PROVISION_NODE (kubeadm rolls its static pods back itself; the other control planes still answer): its whole output is in 'provision logs $PROVISION_NODE'; fix the cause and run provision upgrade again"
			exit 1
		fi
		s=$(server)
		if [ "$s" != "$V" ]; then
			echo "after kubeadm upgrade node, the API server of $PROVISION_NODE reports ${s:-nothing}, not $V"
			pv_hint "kubeadm upgrade node upgrades to the version in the cluster's kubeadm-config ('kubectl -n kube-system get cm kubeadm-config -o yaml'): did kubeadm upgrade apply $V run on the first control plane?"
			exit 1
		fi
		echo "versions after: control plane $s ($PROVISION_NODE)"
		exit 0
	fi
	echo "kubeadm upgrade plan $V"
	if ! kubeadm upgrade plan "$V" 2>&1; then
		pv_hint "kubeadm upgrade plan on $PROVISION_NODE refused $V (nothing was changed): 'kubeadm upgrade plan $V' there says why (its output: provision logs $PROVISION_NODE)"
		exit 1
	fi
	echo "kubeadm upgrade apply $V -y${patches:+ --patches $patches}"
	if ! kubeadm upgrade apply "$V" -y ${patches:+--patches "$patches"} 2>&1; then
		pv_hint "kubeadm upgrade apply $V failed on $PROVISION_NODE (kubeadm rolls the static pods back itself): its whole output is in 'provision logs $PROVISION_NODE'; fix the cause and run provision upgrade again"
		exit 1
	fi
	echo "versions after: control plane $(server) ($PROVISION_NODE)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
