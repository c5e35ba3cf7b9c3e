# reset-cluster 20-kubelet: the kubelet service is stopped and does not
# start at boot (roles/kubeadm-init and kubeadm-join enabled it).
set -eu

case ${1:-} in
check)
	if [ ! -d /run/systemd/system ]; then
		pv_skip "systemd is not running on this node: there is no kubelet service to stop"
		exit 0
	fi
	enabled=$(systemctl is-enabled kubelet 2>/dev/null || true)
	active=$(systemctl is-active kubelet 2>/dev/null || true)
	if [ -z "$enabled" ] || [ "$enabled" = not-found ]; then
		echo "kubelet.service: not installed"
		exit 0
	fi
	echo "kubelet.service: $enabled, $active"
	case $enabled:$active in
	disabled:inactive | disabled:failed | masked:inactive | masked:failed) exit 0 ;;
	*) exit 1 ;;
	esac
	;;
apply)
	echo "systemctl disable --now kubelet"
	systemctl disable --now kubelet
	systemctl reset-failed kubelet 2>/dev/null || true
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
