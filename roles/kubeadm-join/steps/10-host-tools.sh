# 10-host-tools (kubeadm-init, kubeadm-join, kubeadm-join-control-plane:
# one file, linked): the commands kubeadm's preflight insists on
# are installed: ip, iptables, mount, nsenter, and conntrack before
# Kubernetes 1.32 (kubeadm's preflight/checks.go: mandatory InPathChecks;
# from 1.32 kube-proxy no longer needs conntrack).  The kubelet package of
# pkgs.k8s.io only recommends iptables and does not depend on conntrack, so
# a minimal Debian or Ubuntu install fails `kubeadm init` with
# "[ERROR FileExisting-conntrack]: conntrack not found in system path".
# They come from the distribution's own repositories.
#
# Several control planes (cluster.api_endpoint): curl too on each control
# plane.  provision's check asks the control plane's etcd member (its JSON
# gateway) and its API server's /readyz with it (provision/facts.sh);
# roles/api-vip installs it with keepalived for a VIP, and this is where a
# cluster behind the lab's own address gets it (a minimal Debian has
# none).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MINOR=$(printf '%s' "$PROVISION_K8S_VERSION" | cut -d . -f 2)
CMDS="ip iptables mount nsenter"
[ "$MINOR" -ge 32 ] || CMDS="conntrack $CMDS"
case " ${PROVISION_ROLES:-} " in
*" control-plane "*) [ -z "${PROVISION_API_HOST:-}" ] || CMDS="$CMDS curl" ;;
esac

package_of() {
	case $1 in
	ip) echo iproute2 ;;
	nsenter) echo util-linux ;;
	*) echo "$1" ;;
	esac
}

missing() {
	for c in $CMDS; do
		command -v "$c" >/dev/null 2>&1 || echo "$c"
	done
}

case ${1:-} in
check)
	m=$(missing | paste -sd ' ' -)
	if [ -n "$m" ]; then
		echo "missing: $m"
		exit 1
	fi
	echo "present: $CMDS"
	;;
apply)
	set --
	for c in $(missing); do
		set -- "$@" "$(package_of "$c")"
	done
	echo "installing $*"
	if ! pv_apt_get update || ! pv_installing pv_apt_get install -y "$@"; then
		pv_hint "install $* on $PROVISION_NODE (apt-get install $*): the node's apt sources must reach its distribution's mirror, or set cluster.http_proxy"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
