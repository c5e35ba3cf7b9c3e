# kubeadm-join-control-plane 20-kubelet: the kubelet service starts at boot.
#
# The kubeadm install guide enables it (`systemctl enable --now kubelet`)
# and kubeadm's preflight warns "[WARNING Service-Kubelet]: kubelet service
# is not enabled" otherwise; the packages do not enable it.  It is not
# started here: until `kubeadm join` writes its configuration the kubelet
# only restarts every 10 s; kubeadm starts it.
set -eu

case ${1:-} in
check)
	if [ ! -d /run/systemd/system ]; then
		pv_skip "systemd is not running on this node (PID 1 is $(cat /proc/1/comm)): the kubelet service cannot be managed here"
		exit 0
	fi
	state=$(systemctl is-enabled kubelet 2>/dev/null || true)
	echo "kubelet.service: ${state:-not found}"
	case $state in
	enabled) exit 0 ;;
	"")
		echo "the kubelet package is not installed yet (roles/kube-packages)"
		exit 1
		;;
	*) exit 1 ;;
	esac
	;;
apply)
	systemctl enable kubelet
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
